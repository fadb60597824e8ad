//! What a run hands back while and after it runs: event envelopes, the `on_finish` hook and the
//! [`RunHandle`].

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{SystemTime, UNIX_EPOCH};

use a2at_core::event::{Event, EventType};
use a2at_core::result::{ExecutionResult, RunError};
use futures::Stream;
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot, watch};

/// One event as the host sees it: `{type, data, timestamp}` (LC-4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventEnvelope {
    /// The stable event type (`start`, `step_start`, …, `close`).
    #[serde(rename = "type")]
    pub kind: EventType,
    /// The payload, shaped per type as documented on [`EventType`].
    pub data: Value,
    /// When the runtime delivered it: seconds since the Unix epoch.
    pub timestamp: f64,
}

impl EventEnvelope {
    /// Wraps a core event with the current wall-clock time.
    pub(crate) fn stamp(event: Event) -> EventEnvelope {
        let timestamp = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0);
        EventEnvelope {
            kind: event.kind,
            data: event.data,
            timestamp,
        }
    }

    /// The stable type string.
    pub fn type_str(&self) -> &'static str {
        self.kind.as_str()
    }
}

/// A synchronous observer of every event. Its panics are caught and ignored: events never affect
/// execution (EV catalogue). It may be called from any thread.
pub type EventSink = Arc<dyn Fn(&EventEnvelope) + Send + Sync>;

/// The error an `on_finish` hook may return; it is logged and never changes the result.
pub type OnFinishError = Box<dyn std::error::Error + Send + Sync>;

/// The `on_finish` hook: gets the result and the events collected so far (everything but
/// `close`), after the run finished and before `close` is emitted (LC-6, LC-7).
pub type OnFinish = Arc<
    dyn Fn(ExecutionResult, Vec<EventEnvelope>) -> BoxFuture<'static, Result<(), OnFinishError>>
        + Send
        + Sync,
>;

/// A running workflow: its events as they happen, cancellation and the final result.
///
/// Dropping the handle (or the future of [`RunHandle::result`]) cancels the run; the run is still
/// driven to the end of its cleanup in the background.
#[derive(Debug)]
pub struct RunHandle {
    pub(crate) execution_id: String,
    pub(crate) seed: u64,
    pub(crate) events: Option<mpsc::UnboundedReceiver<EventEnvelope>>,
    pub(crate) result: oneshot::Receiver<ExecutionResult>,
    pub(crate) cancel: watch::Sender<bool>,
}

impl RunHandle {
    /// The run's execution id.
    pub fn execution_id(&self) -> &str {
        &self.execution_id
    }

    /// The id seed of the run: with [`SeedSource::Fixed`](crate::SeedSource::Fixed) and the same
    /// inputs, a run reproduces its wire ids.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The next event, or `None` after `close` (or when [`RunHandle::events`] took the stream).
    pub async fn next_event(&mut self) -> Option<EventEnvelope> {
        match &mut self.events {
            Some(rx) => rx.recv().await,
            None => None,
        }
    }

    /// The event stream, ending after `close`. It can be taken once; later calls give an empty
    /// stream.
    pub fn events(&mut self) -> EventStream {
        EventStream {
            rx: self.events.take(),
        }
    }

    /// Asks the run to cancel: the core cancels every known non-final remote task and drops late
    /// results. The result (code `workflow.cancelled`) still arrives through
    /// [`RunHandle::result`].
    pub fn cancel(&self) {
        self.cancel.send_replace(true);
    }

    /// Waits for the result. Dropping this future cancels the run.
    pub async fn result(self) -> ExecutionResult {
        let RunHandle {
            execution_id,
            result,
            cancel,
            events,
            ..
        } = self;
        // Nobody reads events any more: stop buffering them.
        drop(events);
        let outcome = result.await;
        drop(cancel);
        outcome.unwrap_or_else(|_| ExecutionResult {
            execution_id,
            success: false,
            error: Some(RunError {
                code: "runtime.driver_failed".into(),
                message: "the run's driver task ended without a result (runtime shut down or \
                          driver bug)"
                    .into(),
            }),
            history: Vec::new(),
            step_outputs: Default::default(),
            steps: Vec::new(),
        })
    }
}

/// The events of one run as a [`Stream`]; it ends after `close`.
#[derive(Debug)]
pub struct EventStream {
    rx: Option<mpsc::UnboundedReceiver<EventEnvelope>>,
}

impl Stream for EventStream {
    type Item = EventEnvelope;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<EventEnvelope>> {
        match &mut self.rx {
            Some(rx) => rx.poll_recv(cx),
            None => Poll::Ready(None),
        }
    }
}
