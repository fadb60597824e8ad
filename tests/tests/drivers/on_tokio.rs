//! The scenarios on `a2at-tokio` over loopback HTTP, on a current-thread tokio runtime.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use a2at_tokio as rt;

const NAME: &str = "tokio";

fn block_on<F: Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
        .block_on(f)
}

fn sleep(d: Duration) -> Pin<Box<dyn Future<Output = ()> + Send>> {
    Box::pin(tokio::time::sleep(d))
}

#[path = "engine.rs"]
mod driver;
type D = driver::EngineDriver;

#[path = "../../conformance/mod.rs"]
mod suite;
