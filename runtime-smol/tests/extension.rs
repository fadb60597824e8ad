//! The shared ExtensionSender suite on the smol runtime, plus a subscription and an
//! authorization on a plain thread where no tokio runtime exists.

use a2at_smol as rt;

#[path = "../../runtime-tokio/tests/shared/extension_suite.rs"]
mod suite;

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    smol::block_on(future)
}

async fn sleep(d: std::time::Duration) {
    smol::Timer::after(d).await;
}

#[test]
fn extensions_run_on_a_plain_thread_without_any_tokio_runtime() {
    // A fresh std thread has no tokio context: any hidden tokio call in the sender would panic.
    std::thread::spawn(|| {
        suite::ack_then_notifications_then_host_close();
        suite::authorization_success_failure_rejection_and_polling();
    })
    .join()
    .expect("the extension operations completed without panicking");
}
