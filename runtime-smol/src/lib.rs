//! # a2at-smol
//!
//! The smol runtime of the a2at A2A-T workflow engine: the driver (`a2at-driver`) on smol, with
//! the same public API as `a2at-tokio` (a host switches runtimes by changing one import). Runs
//! execute on smol's global executor with `async-io` timers (a run may be started from any
//! thread, e.g. inside `smol::block_on`), TCP is `async-net`, listener callbacks run on smol's
//! blocking pool. No tokio runtime is needed anywhere. Nothing here decides anything: every
//! rule lives in `a2at-core`, every runtime-independent step in `a2at-driver`.
//!
//! ## Using it
//!
//! 1. Build one [`Engine`] from the AgentCards of the agents your workflows address and an
//!    [`EngineConfig`] (budgets, concurrency limits, seed source) with [`Engine::builder`]. The
//!    engine is cheap to clone and is shared by any number of concurrent runs.
//! 2. Implement [`ControlPoint`] for your host, or register
//!    closures with [`ControlPointBuilder`].
//! 3. Call [`Engine::execute`] for the [`ExecutionResult`], or
//!    [`Engine::run`] and [`RunBuilder::spawn`] for a [`RunHandle`] that streams
//!    [`EventEnvelope`]s as they happen and can cancel the run.
//!
//! ```no_run
//! use std::sync::Arc;
//! use a2at_smol::{ControlPointBuilder, Engine};
//! use a2at_smol::MessageContent;
//! use a2at_smol::RunStart;
//! use a2at_smol::parse_and_validate;
//!
//! # async fn demo(cards: Vec<a2at_smol::AgentCard>) {
//! let engine = Engine::builder(cards).build().expect("valid cards");
//! let host = ControlPointBuilder::new()
//!     .on_task(|req| async move { Ok(MessageContent::text(&req.instruction)) })
//!     .build();
//! let workflow = parse_and_validate(r#"{"steps": [{"name": "ask",
//!     "subtasks": [{"agent": "alpha", "description": "say hello"}]}]}"#).unwrap();
//! let result = engine.execute(workflow, RunStart::default(), Arc::new(host)).await;
//! println!("success: {}", result.success);
//! # }
//! ```
//!
//! ## The rest of the guide
//!
//! Authorization-T and Notification-T, discovery, security configuration, lifecycle and
//! cancellation, and reproducing a run are described once, in the crate docs of
//! [`a2at_driver`]; every type named there is re-exported here under the same name.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

use std::future::Future;
use std::io;
use std::time::Instant;

use a2at_driver::{BoxFuture, Runtime};

a2at_driver::runtime_api!(Smol);
/// Metric names of runs and exchanges (the `metrics` facade).
pub use a2at_driver::metrics;
/// Export of the engine's spans over OTLP/HTTP (feature `otel`): add [`otel::layer`] to the
/// host's subscriber.
#[cfg(feature = "otel")]
pub use a2at_driver::otel;
/// Span names and attribute names of a run's `tracing` spans.
pub use a2at_driver::telemetry;
/// The SQLite journal store of durable runs (feature `sqlite`, on by default).
#[cfg(feature = "sqlite")]
pub use a2at_driver::{Durability, SqliteJournal};
/// The PostgreSQL journal store of durable runs shared by several engine processes (feature
/// `postgres`, off by default).
#[cfg(feature = "postgres")]
pub use a2at_driver::{PostgresJournal, PostgresJournalBuilder, redact_url};

/// The smol runtime as the driver sees it: tasks on smol's global executor, the `std` clock
/// with `async-io` timers, smol's blocking pool and `async-net` TCP. Works from any thread.
#[derive(Debug, Clone, Copy, Default)]
pub struct Smol;

impl Runtime for Smol {
    type TcpStream = smol::net::TcpStream;

    fn now() -> Instant {
        Instant::now()
    }

    fn sleep_until(at: Instant) -> BoxFuture<()> {
        Box::pin(async move {
            smol::Timer::at(at).await;
        })
    }

    fn spawn(task: impl Future<Output = ()> + Send + 'static) {
        smol::spawn(task).detach();
    }

    fn run_blocking(call: impl FnOnce() + Send + 'static) -> impl Future<Output = ()> + Send {
        smol::unblock(call)
    }

    async fn connect(host: &str, port: u16) -> io::Result<smol::net::TcpStream> {
        let stream = smol::net::TcpStream::connect((host, port)).await?;
        stream.set_nodelay(true)?;
        Ok(stream)
    }
}
