//! The shared ExtensionSender suite on the smol runtime, plus a subscription and an
//! authorization on a plain thread where no tokio runtime exists.

use a2at_tests::suites::extension;

a2at_tests::smol_test_runtime!(OnSmol);
a2at_tests::extension_suite!(OnSmol);

#[test]
fn extensions_run_on_a_plain_thread_without_any_tokio_runtime() {
    // A fresh std thread has no tokio context: any hidden tokio call in the sender would panic.
    std::thread::spawn(|| {
        extension::ack_then_notifications_then_host_close::<OnSmol>();
        extension::authorization_success_failure_rejection_and_polling::<OnSmol>();
    })
    .join()
    .expect("the extension operations completed without panicking");
}
