//! The shared security suite (discovery, login deadline, TLS, configuration, planted secrets) on the tokio runtime.

use a2at_tokio as rt;

#[path = "shared/security_suite.rs"]
mod suite;

/// A current-thread runtime, so that logs of spawned tasks stay on the capturing thread too.
fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
        .block_on(future)
}
