//! What a run hands back while and after it runs: the `on_finish` hook, the event sink and the
//! [`RunHandle`].

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use a2at_core::driver_support::EventEnvelope;
use a2at_core::result::{ExecutionResult, RunError};
use a2at_core::run::RunProgress;
use futures::channel::oneshot;
use futures::future::BoxFuture;
use futures::{FutureExt, Stream, StreamExt};

use crate::completions;

/// A synchronous observer of every event. Its panics are caught and ignored: events never affect
/// execution (EV catalogue). It may be called from any thread.
pub type EventSink = Arc<dyn Fn(&EventEnvelope) + Send + Sync>;

/// The event hook ([`RunBuilder::map_events`](crate::RunBuilder::map_events)): maps each event
/// to what the host wants delivered instead: itself (`vec![event.clone()]`), another event,
/// several (e.g. the event plus business events), or none (`vec![]`). If it panics, the
/// original event is delivered. It runs before the event sink, the event stream and the
/// events handed to `on_finish`; the final `close` event is not passed through it.
pub type EventHook = Arc<dyn Fn(&EventEnvelope) -> Vec<EventEnvelope> + Send + Sync>;

/// The error an `on_finish` hook may return; it is logged and never changes the result.
pub type OnFinishError = Box<dyn std::error::Error + Send + Sync>;

/// The `on_finish` hook: gets the result and the events collected so far (everything but
/// `close`), after the run finished and before `close` is emitted.
pub type OnFinish = Arc<
    dyn Fn(ExecutionResult, Vec<EventEnvelope>) -> BoxFuture<'static, Result<(), OnFinishError>>
        + Send
        + Sync,
>;

/// One conversation that is over: the A2A context of one task activation, after its whole
/// send-plus-negotiation cycle (whatever its outcome).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ConversationClosed {
    /// The run's execution id.
    pub execution_id: String,
    /// The step the task belonged to.
    pub step: String,
    /// The agent (card name).
    pub agent: String,
    /// The conversation's `contextId`.
    pub context_id: String,
    /// The agent's task id, when one was created.
    pub remote_task_id: Option<String>,
}

/// The per-conversation close hook ([`EngineBuilder::on_conversation_closed`]): called once
/// per context, after its last exchange, before the run's result is delivered. Its panics are
/// caught and ignored.
///
/// [`EngineBuilder::on_conversation_closed`]: crate::EngineBuilder::on_conversation_closed
pub type ConversationHook = Arc<dyn Fn(&ConversationClosed) + Send + Sync>;

/// A running workflow: its events as they happen, cancellation and the final result.
///
/// Dropping the handle (or the future of [`RunHandle::result`]) cancels the run; the run is still
/// driven to the end of its cleanup in the background.
#[derive(Debug)]
pub struct RunHandle {
    pub(crate) execution_id: String,
    pub(crate) seed: u64,
    pub(crate) events: Option<completions::Receiver<EventEnvelope>>,
    pub(crate) result: oneshot::Receiver<ExecutionResult>,
    /// Sending or dropping it cancels the run.
    pub(crate) cancel: Mutex<Option<oneshot::Sender<()>>>,
    /// Asks the driver for a progress snapshot.
    pub(crate) progress: completions::Sender<oneshot::Sender<RunProgress>>,
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
            Some(rx) => rx.next().await,
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

    /// A consistent snapshot of the run now (steps done, running, pending and skipped,
    /// subtasks in flight per agent, the outputs and history so far), taken between two
    /// inputs without stopping the run; `None` once the run has ended (see
    /// [`RunHandle::result`]).
    pub async fn progress(&self) -> Option<RunProgress> {
        let (tx, rx) = oneshot::channel();
        self.progress.try_send(tx).ok()?;
        rx.await.ok()
    }

    /// Asks the run to cancel: the core cancels every known non-final remote task and drops late
    /// results. The result (code `workflow.cancelled`) still arrives through
    /// [`RunHandle::result`].
    pub fn cancel(&self) {
        let sender = self.cancel.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(sender) = sender {
            let _ = sender.send(());
        }
    }

    /// Waits for the result. Dropping this future cancels the run.
    ///
    /// The event stream, if not taken, stops buffering at once: nobody reads it any more.
    pub fn result(self) -> impl Future<Output = ExecutionResult> {
        ResultWait::new(self)
    }
}

/// The wait for a run's result, holding only what it needs (a waiting run keeps it).
pub(crate) struct ResultWait {
    execution_id: String,
    result: oneshot::Receiver<ExecutionResult>,
    /// Never sent: dropping the wait before the result drops it, which cancels the run.
    _cancel: Option<oneshot::Sender<()>>,
}

impl ResultWait {
    pub(crate) fn new(handle: RunHandle) -> ResultWait {
        let RunHandle {
            execution_id,
            result,
            cancel,
            ..
        } = handle;
        ResultWait {
            execution_id,
            result,
            _cancel: cancel.into_inner().unwrap_or_else(|e| e.into_inner()),
        }
    }
}

impl Future for ResultWait {
    type Output = ExecutionResult;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<ExecutionResult> {
        let Poll::Ready(outcome) = self.result.poll_unpin(cx) else {
            return Poll::Pending;
        };
        Poll::Ready(outcome.unwrap_or_else(|_| {
            ExecutionResult {
                execution_id: std::mem::take(&mut self.execution_id),
                success: false,
                error: Some(RunError {
                    code: "runtime.driver_failed".into(),
                    message: "the run's driver task ended without a result (runtime shut down or \
                          driver bug)"
                        .into(),
                }),
                history: Vec::new(),
                steps: Vec::new(),
            }
        }))
    }
}

/// The events of one run as a [`Stream`]; it ends after `close`.
#[derive(Debug)]
pub struct EventStream {
    rx: Option<completions::Receiver<EventEnvelope>>,
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
