//! The scenarios on `a2at-smol` over loopback HTTP, with `smol::block_on` on the test thread
//! (no tokio runtime exists there).

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use a2at_smol as rt;

const NAME: &str = "smol";

fn block_on<F: Future>(f: F) -> F::Output {
    smol::block_on(f)
}

fn sleep(d: Duration) -> Pin<Box<dyn Future<Output = ()> + Send>> {
    Box::pin(async move {
        smol::Timer::after(d).await;
    })
}

#[path = "engine.rs"]
mod driver;
type D = driver::EngineDriver;

#[path = "../../conformance/mod.rs"]
mod suite;
