//! # a2at-tokio
//!
//! The tokio runtime of the a2at A2A-T workflow engine: the driver (`a2at-driver`) on tokio.
//! Runs are tasks on the current tokio runtime, timers follow tokio's clock (so a paused test
//! clock applies), listener callbacks run on tokio's blocking pool. The same API exists for
//! smol in `a2at-smol`: a host switches runtimes by changing one import. Nothing here decides
//! anything: every rule lives in `a2at-core`, every runtime-independent step in `a2at-driver`.
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
//! use a2at_tokio::{ControlPointBuilder, Engine};
//! use a2at_tokio::MessageContent;
//! use a2at_tokio::RunStart;
//! use a2at_tokio::parse_and_validate;
//!
//! # async fn demo(cards: Vec<a2at_tokio::AgentCard>) {
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
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Instant;

use a2at_driver::{BoxFuture, Runtime};
use futures_io::{AsyncRead, AsyncWrite};

a2at_driver::runtime_api!(Tokio);
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

/// The tokio runtime as the driver sees it: tasks on the current tokio runtime, tokio's
/// (pausable) clock and timers, tokio's blocking pool and TCP. Every call must be made inside
/// a tokio runtime.
#[derive(Debug, Clone, Copy, Default)]
pub struct Tokio;

impl Runtime for Tokio {
    type TcpStream = TcpStream;

    fn now() -> Instant {
        tokio::time::Instant::now().into_std()
    }

    fn sleep_until(at: Instant) -> BoxFuture<()> {
        Box::pin(tokio::time::sleep_until(tokio::time::Instant::from_std(at)))
    }

    fn spawn(task: impl Future<Output = ()> + Send + 'static) {
        tokio::spawn(task);
    }

    fn run_blocking(call: impl FnOnce() + Send + 'static) -> impl Future<Output = ()> + Send {
        let call = tokio::task::spawn_blocking(call);
        async move {
            // An error means the runtime is shutting down: nobody waits for the call then.
            let _ = call.await;
        }
    }

    async fn connect(host: &str, port: u16) -> io::Result<TcpStream> {
        let stream = tokio::net::TcpStream::connect((host, port)).await?;
        stream.set_nodelay(true)?;
        Ok(TcpStream(stream))
    }
}

/// A tokio TCP connection in the `futures` I/O traits, as [`Tokio::connect`] returns it.
#[derive(Debug)]
pub struct TcpStream(tokio::net::TcpStream);

impl AsyncRead for TcpStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        let mut buf = tokio::io::ReadBuf::new(buf);
        ready!(tokio::io::AsyncRead::poll_read(
            Pin::new(&mut self.0),
            cx,
            &mut buf
        ))?;
        Poll::Ready(Ok(buf.filled().len()))
    }
}

impl AsyncWrite for TcpStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        tokio::io::AsyncWrite::poll_write(Pin::new(&mut self.0), cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        tokio::io::AsyncWrite::poll_write_vectored(Pin::new(&mut self.0), cx, bufs)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        tokio::io::AsyncWrite::poll_flush(Pin::new(&mut self.0), cx)
    }

    fn poll_close(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        tokio::io::AsyncWrite::poll_shutdown(Pin::new(&mut self.0), cx)
    }
}
