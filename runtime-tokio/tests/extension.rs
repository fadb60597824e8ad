//! The shared ExtensionSender suite on the tokio runtime.

use a2at_tokio as rt;

#[path = "shared/extension_suite.rs"]
mod suite;

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
        .block_on(future)
}

async fn sleep(d: std::time::Duration) {
    tokio::time::sleep(d).await;
}
