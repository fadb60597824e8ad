//! Runtime-agnostic async code shared by `a2at-tokio` and `a2at-smol`.
//!
//! Both crates compile this directory as their own module with
//! `#[path = "…/runtime-tokio/src/shared/mod.rs"] mod shared;`, so the engine, the driver loop,
//! the run handle, the exchange task and the extension sender exist once. It uses only `futures` channels and abort
//! handles, `async-lock` semaphores and hyper's types. What differs per runtime is supplied by
//! the including crate:
//!
//! * `crate::rt::Runtime`, implementing [`Rt`] (spawn, clock, timer);
//! * `crate::http::Connector`, with `new() -> Result<Connector, EngineError>` and
//!   `async fn request(&self, http::Request<Full<Bytes>>) -> Result<http::Response<Incoming>,
//!   (TransportErrorKind, String)>`.

pub(crate) mod auth;
pub(crate) mod config;
pub(crate) mod discovery;
pub(crate) mod driver;
pub(crate) mod engine;
pub(crate) mod events;
pub(crate) mod extension;
pub(crate) mod tls;
pub(crate) mod transport;

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

/// What the shared code needs from an async runtime.
pub(crate) trait Rt {
    /// A point on the runtime's monotonic clock.
    type Instant: Copy + Send + Sync + 'static;

    /// The runtime's clock (tokio's is pausable in tests).
    fn now() -> Self::Instant;

    /// Time elapsed since `earlier`.
    fn elapsed(earlier: Self::Instant) -> Duration;

    /// `at + d`, or `None` on overflow.
    fn add(at: Self::Instant, d: Duration) -> Option<Self::Instant>;

    /// A future that resolves at `at`.
    fn sleep_until(at: Self::Instant) -> Pin<Box<dyn Future<Output = ()> + Send>>;

    /// Runs `task` in the background, detached.
    fn spawn(task: impl Future<Output = ()> + Send + 'static);
}

/// Runs `future` until it completes or `deadline` has passed on the runtime's clock; `None`
/// when the deadline came first (the future is dropped, which cancels it). A deadline too far
/// away to be represented means no deadline.
pub(crate) async fn within<F: Future>(deadline: Duration, future: F) -> Option<F::Output> {
    use crate::rt::Runtime;
    let Some(at) = Runtime::add(Runtime::now(), deadline) else {
        return Some(future.await);
    };
    let future = std::pin::pin!(future);
    match futures::future::select(future, Runtime::sleep_until(at)).await {
        futures::future::Either::Left((output, _)) => Some(output),
        futures::future::Either::Right(((), _)) => None,
    }
}
