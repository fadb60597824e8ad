//! The [`Runtime`] trait: everything the driver needs from an async runtime.
//!
//! The driver never names tokio or smol. An adapter crate implements [`Runtime`] on a
//! zero-sized type and fixes the driver's generic types to it with type aliases
//! (`pub type Engine = a2at_driver::Engine<MyRuntime>;`).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::time::{Duration, Instant};

use futures::io::{AsyncRead, AsyncWrite};

/// A boxed, sendable future, as [`Runtime::sleep_until`] returns it.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// What the driver needs from an async runtime: a clock and timers, background tasks, outgoing
/// TCP connections and a place for blocking calls.
///
/// All methods are associated functions: a runtime is a type, not a value, so the driver's
/// types carry it as a type parameter and cost nothing at run time. Each method must work
/// from any task the runtime itself runs (the driver calls them from tasks it spawned).
pub trait Runtime: Clone + std::fmt::Debug + Send + Sync + 'static {
    /// A TCP connection as [`Runtime::connect`] returns it, in the `futures` I/O traits (TLS
    /// and HTTP run on top of it).
    type TcpStream: AsyncRead + AsyncWrite + Unpin + Send + 'static;

    /// The runtime's monotonic clock. A runtime with a virtual clock for tests (tokio's paused
    /// clock) returns its virtual time here, so budgets and timers follow it.
    fn now() -> Instant;

    /// A future that resolves once [`Runtime::now`] has reached `at`.
    fn sleep_until(at: Instant) -> BoxFuture<()>;

    /// Runs `task` in the background, detached, as it is. Where any `tracing` subscriber is
    /// installed, the driver has already bound the task to the dispatcher current where it
    /// spawned it (its logs and spans go to that subscriber, whichever thread polls it), so the
    /// runtime adds nothing for that.
    fn spawn(task: impl Future<Output = ()> + Send + 'static);

    /// Runs a blocking call (a host's listener callback) where it cannot stall the runtime's
    /// executor threads, e.g. the runtime's pool of blocking threads; the future resolves when
    /// the call returned. `call` never panics (the driver catches the host's panics) and sets
    /// its own `tracing` subscriber.
    fn run_blocking(call: impl FnOnce() + Send + 'static) -> impl Future<Output = ()> + Send;

    /// Opens a TCP connection to `host:port` with `TCP_NODELAY` set (the engine's requests are
    /// small and latency-bound).
    fn connect(host: &str, port: u16) -> impl Future<Output = io::Result<Self::TcpStream>> + Send;
}

/// Time elapsed since `earlier` on the runtime's clock (zero if `earlier` is in the future).
pub(crate) fn elapsed<R: Runtime>(earlier: Instant) -> Duration {
    R::now().saturating_duration_since(earlier)
}

/// Lets the runtime run its other tasks once before this one goes on: the task wakes itself
/// and returns pending a single time.
pub(crate) async fn yield_now() {
    let mut yielded = false;
    std::future::poll_fn(|cx| {
        if yielded {
            return std::task::Poll::Ready(());
        }
        yielded = true;
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    })
    .await;
}

/// Runs `future` until it completes or `deadline` has passed on the runtime's clock; `None`
/// when the deadline came first (the future is dropped, which cancels it). A deadline too far
/// away to be represented means no deadline.
pub(crate) async fn within<R: Runtime, F: Future>(
    deadline: Duration,
    future: F,
) -> Option<F::Output> {
    let Some(at) = R::now().checked_add(deadline) else {
        return Some(future.await);
    };
    let future = std::pin::pin!(future);
    match futures::future::select(future, R::sleep_until(at)).await {
        futures::future::Either::Left((output, _)) => Some(output),
        futures::future::Either::Right(((), _)) => None,
    }
}

/// Spawns `task` on `R`, bound to the `tracing` dispatcher current here: its logs and spans go
/// to the subscriber in scope where it was spawned, whichever thread the runtime polls it on.
/// Where no subscriber is current, the task is spawned unbound (see [`dispatch_to_bind`]).
pub(crate) fn spawn<R: Runtime>(task: impl Future<Output = ()> + Send + 'static) {
    match dispatch_to_bind() {
        Some(dispatch) => R::spawn(tracing::instrument::WithSubscriber::with_subscriber(
            task, dispatch,
        )),
        None => R::spawn(task),
    }
}

/// The dispatcher current here, for a task spawned from here to be polled under; `None` when
/// no subscriber is current (none installed globally or in scope): binding the task would then
/// only switch dispatchers on each of its polls, and the task logs wherever it is polled, as
/// any task spawned without a binding does.
pub(crate) fn dispatch_to_bind() -> Option<tracing::Dispatch> {
    tracing::dispatcher::get_default(|current| {
        (!current.is::<tracing::subscriber::NoSubscriber>()).then(|| current.clone())
    })
}
