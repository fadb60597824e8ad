//! The smol side of the shared code: tasks on smol's global executor, `std` clock, `async-io`
//! timers. Nothing here needs a tokio runtime.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use tracing::instrument::WithSubscriber;

use crate::shared::Rt;

/// The clock's instants, as public types expose them (e.g. `Heartbeat`).
pub(crate) type Instant = std::time::Instant;

/// The smol runtime, as the shared engine sees it.
pub(crate) struct Runtime;

impl Rt for Runtime {
    type Instant = Instant;

    fn now() -> Instant {
        Instant::now()
    }

    fn elapsed(earlier: Instant) -> Duration {
        earlier.elapsed()
    }

    fn add(at: Instant, d: Duration) -> Option<Instant> {
        at.checked_add(d)
    }

    fn sleep_until(at: Instant) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(async move {
            smol::Timer::at(at).await;
        })
    }

    fn spawn(task: impl Future<Output = ()> + Send + 'static) {
        // Logs of the task go to the subscriber in scope where it was spawned (smol runs
        // it on another thread).
        smol::spawn(task.with_current_subscriber()).detach();
    }
}
