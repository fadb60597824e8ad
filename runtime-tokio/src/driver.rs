//! The driver loop: drain the core's outputs, carry them out concurrently, feed completions back
//! with the time they happened. It decides nothing.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use a2at_core::event::{Event, EventType};
use a2at_core::host::{ControlPoint, HostError, HostReply, HostRequest, answer};
use a2at_core::io::{Input, Output};
use a2at_core::result::ExecutionResult;
use a2at_core::{CallId, OpId, Run, Timestamp};
use futures::FutureExt;
use tokio::sync::{mpsc, watch};
use tokio::task::{AbortHandle, JoinSet};
use tokio::time::Instant;

use crate::events::{EventEnvelope, EventSink, OnFinish};
use crate::http::Transport;

/// Completions waiting for the driver; exchange tasks wait when it is full.
const COMPLETION_QUEUE: usize = 1024;

/// Everything one run's driver owns besides the core `Run`.
pub(crate) struct Driver<C> {
    pub(crate) transport: Arc<Transport>,
    pub(crate) control_point: Arc<C>,
    pub(crate) on_finish: Option<OnFinish>,
    pub(crate) sink: Option<EventSink>,
    pub(crate) events_tx: mpsc::UnboundedSender<EventEnvelope>,
}

struct Inflight {
    tasks: JoinSet<()>,
    ops: HashMap<OpId, AbortHandle>,
    calls: HashMap<CallId, AbortHandle>,
}

impl<C: ControlPoint + 'static> Driver<C> {
    /// Drives `run` to its end. `cancel` turning true, or its sender being dropped, cancels it.
    pub(crate) async fn drive(
        self,
        mut run: Run,
        mut cancel: watch::Receiver<bool>,
    ) -> ExecutionResult {
        let epoch = Instant::now();
        let (tx, mut rx) = mpsc::channel::<Input>(COMPLETION_QUEUE);
        let mut inflight = Inflight {
            tasks: JoinSet::new(),
            ops: HashMap::new(),
            calls: HashMap::new(),
        };
        let mut collected: Vec<EventEnvelope> = Vec::new();
        let mut cancel_open = true;
        let far_future = epoch + Duration::from_secs(86_400 * 365);
        let sleep = tokio::time::sleep_until(far_future);
        tokio::pin!(sleep);
        let mut armed: Option<Timestamp> = None;
        loop {
            while let Some(output) = run.poll_output() {
                match output {
                    Output::Transmit(req) => {
                        let op = req.op;
                        let transport = self.transport.clone();
                        let tx = tx.clone();
                        let handle = inflight
                            .tasks
                            .spawn(async move { transport.exchange(req, tx).await });
                        inflight.ops.insert(op, handle);
                    }
                    Output::AbortTransmit { op } => {
                        if let Some(h) = inflight.ops.remove(&op) {
                            h.abort();
                        }
                    }
                    Output::CallHost { call, request } => {
                        let handle = inflight.tasks.spawn(call_host(
                            self.control_point.clone(),
                            call,
                            request,
                            tx.clone(),
                        ));
                        inflight.calls.insert(call, handle);
                    }
                    Output::AbandonHostCall { call } => {
                        if let Some(h) = inflight.calls.remove(&call) {
                            h.abort();
                        }
                    }
                    Output::Event(event) => {
                        let envelope = EventEnvelope::stamp(event);
                        self.deliver(&envelope);
                        collected.push(envelope);
                    }
                    Output::Finished(result) => {
                        inflight.tasks.abort_all();
                        return self.finish(*result, collected).await;
                    }
                    other => tracing::warn!(?other, "output not understood by this runtime"),
                }
            }
            // Reap finished tasks so the set does not grow with the run.
            while inflight.tasks.try_join_next().is_some() {}

            let deadline = run.poll_timeout();
            if deadline != armed {
                armed = deadline;
                if let Some(d) = deadline {
                    let at = epoch
                        .checked_add(Duration::from_micros(d.as_micros()))
                        .unwrap_or(far_future);
                    sleep.as_mut().reset(at);
                }
            }
            let input = tokio::select! {
                biased;
                _ = cancel.wait_for(|c| *c), if cancel_open => {
                    cancel_open = false;
                    Some(Input::Cancel)
                }
                input = rx.recv() => input,
                _ = &mut sleep, if deadline.is_some() => None,
            };
            let now = stamp(epoch);
            if let Some(input) = input {
                match &input {
                    Input::ResponseEnd { op } | Input::TransportFailed { op, .. } => {
                        inflight.ops.remove(op);
                    }
                    Input::HostReply { call, .. } => {
                        inflight.calls.remove(call);
                    }
                    _ => {}
                }
                if let Err(misuse) = run.handle(input, now) {
                    tracing::error!(%misuse, "the core rejected an input (runtime bug)");
                }
            }
            // Expiry is decided by the clock, not by which future woke us.
            if run.poll_timeout().is_some_and(|d| d <= now) {
                if let Err(misuse) = run.handle_timeout(now) {
                    tracing::error!(%misuse, "the core rejected a timeout (runtime bug)");
                }
            }
        }
    }

    fn deliver(&self, envelope: &EventEnvelope) {
        if let Some(sink) = &self.sink {
            if std::panic::catch_unwind(AssertUnwindSafe(|| sink(envelope))).is_err() {
                tracing::warn!(event = envelope.type_str(), "event sink panicked; ignored");
            }
        }
        let _ = self.events_tx.send(envelope.clone());
    }

    async fn finish(
        self,
        result: ExecutionResult,
        collected: Vec<EventEnvelope>,
    ) -> ExecutionResult {
        if let Some(hook) = &self.on_finish {
            let call = AssertUnwindSafe(async { hook(result.clone(), collected).await });
            match call.catch_unwind().await {
                Ok(Ok(())) => {}
                Ok(Err(error)) => tracing::warn!(
                    execution_id = %result.execution_id,
                    %error,
                    "on_finish failed; the result is unchanged"
                ),
                Err(_) => tracing::warn!(
                    execution_id = %result.execution_id,
                    "on_finish panicked; the result is unchanged"
                ),
            }
        }
        let close = EventEnvelope::stamp(Event::new(EventType::Close, serde_json::json!({})));
        self.deliver(&close);
        result
    }
}

/// Microseconds since the run's epoch, read from tokio's clock (pausable in tests).
fn stamp(epoch: Instant) -> Timestamp {
    Timestamp::from_micros(u64::try_from(epoch.elapsed().as_micros()).unwrap_or(u64::MAX))
}

/// Runs one host callback; a panic becomes the callback's failure, never a crash.
async fn call_host<C: ControlPoint + 'static>(
    control_point: Arc<C>,
    call: CallId,
    request: HostRequest,
    tx: mpsc::Sender<Input>,
) {
    let name = request.callback_name();
    let reply = match AssertUnwindSafe(answer(&*control_point, request))
        .catch_unwind()
        .await
    {
        Ok(reply) => reply,
        Err(_) => {
            tracing::warn!(callback = name, %call, "host callback panicked");
            panicked(name)
        }
    };
    let _ = tx.send(Input::HostReply { call, reply }).await;
}

fn panicked(callback: &'static str) -> HostReply {
    let error = HostError::panicked(callback);
    match callback {
        "on_task" => HostReply::Task(Err(error)),
        "on_self_task" => HostReply::SelfTask(Err(error)),
        "on_route" => HostReply::Route(Err(error)),
        _ => HostReply::Negotiation(Err(error)),
    }
}
