//! The driver loop: drain the core's outputs, carry them out concurrently, feed completions back
//! with the time they happened. It decides nothing.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use a2at_core::agents::AgentDirectory;
use a2at_core::driver_support::{EventEnvelope, answer_guarded_shared};
use a2at_core::event::{Event, EventType};
use a2at_core::host::{ControlPoint, HostRequest};
use a2at_core::io::{Input, Output};
use a2at_core::result::ExecutionResult;
use a2at_core::run::{RunConfig, RunProgress, RunStart};
use a2at_core::trace::{TraceHeader, TraceWriter};
use a2at_core::workflow::ValidatedWorkflow;
use a2at_core::{CallId, OpId, Run, Timestamp};
use futures::FutureExt;
use futures::channel::oneshot;
use futures::future::{AbortHandle, Abortable};
use std::io::Write;

use crate::completions;
use crate::events::{ConversationClosed, ConversationHook, EventHook, EventSink, OnFinish};
use crate::journal::{Journaling, Resumed};
use crate::lifecycle::RunTicket;
use crate::runtime::{BoxFuture, Runtime, elapsed};
use crate::telemetry::RunSpans;
use crate::transport::Transport;
use a2at_core::io::OpPurpose;
use std::sync::atomic::Ordering;
use tracing::Instrument;

/// Completions waiting for the driver; exchange tasks wait when it is full.
const COMPLETION_QUEUE: usize = 1024;
/// Most inputs one turn of the loop (and one journal commit) takes: the first one and those
/// already waiting behind it.
const INPUTS_PER_TURN: usize = 64;
/// Most turns in a row the loop feeds host answers that were ready at once before it lets the
/// runtime run its other tasks: a host that always answers at once must not hold the thread to
/// the run's end, and a yield on every such turn would cost a task wake-up per request.
const READY_ANSWERS_BEFORE_YIELD: u32 = 8;

/// Everything one run's driver owns besides the core `Run`.
pub(crate) struct Driver<R, C> {
    pub(crate) transport: Arc<Transport<R>>,
    pub(crate) control_point: Arc<C>,
    pub(crate) on_finish: Option<OnFinish>,
    pub(crate) sink: Option<EventSink>,
    /// The bounded event queue: a full queue pauses the run until the consumer reads.
    pub(crate) events_tx: completions::Sender<EventEnvelope>,
    /// Whether the consumer still holds the event stream.
    pub(crate) events_open: bool,
    /// The host's event hook.
    pub(crate) map_events: Option<EventHook>,
    /// Progress requests from the run's handles; `None` once every handle is gone.
    pub(crate) progress_rx: Option<completions::Receiver<oneshot::Sender<RunProgress>>>,
    pub(crate) recorder: Option<Recorder>,
    /// The run's place in the engine's registry (counters for the close report).
    pub(crate) ticket: Option<RunTicket>,
    /// Called once per finished conversation.
    pub(crate) on_conversation_closed: Option<ConversationHook>,
    /// The run's write-ahead journal, when it is durable. Boxed: most runs have none, and a
    /// waiting run keeps the driver whole.
    pub(crate) journal: Option<Box<Journaling>>,
}

/// Writes the run's trace: every input the driver feeds the core and every output it drains.
pub(crate) struct Recorder {
    writer: Box<dyn Write + Send>,
    lines: TraceWriter,
}

impl Recorder {
    /// Writes the header; `None` (logged) when the run cannot be described or written.
    pub(crate) fn start(
        mut writer: Box<dyn Write + Send>,
        workflow: &ValidatedWorkflow,
        agents: &AgentDirectory,
        config: &RunConfig,
        start: &RunStart,
    ) -> Option<Recorder> {
        let lines = TraceWriter::new();
        let header = match TraceHeader::new(workflow, agents, config, start) {
            Ok(h) => h,
            Err(error) => {
                tracing::warn!(%error, "this run cannot be recorded; running without a trace");
                return None;
            }
        };
        if let Err(error) = writeln!(writer, "{}", lines.header(&header)) {
            tracing::warn!(%error, "cannot write the trace; running without it");
            return None;
        }
        Some(Recorder { writer, lines })
    }

    fn write(recorder: &mut Option<Recorder>, line: impl FnOnce(&TraceWriter) -> String) {
        if let Some(r) = recorder {
            let text = line(&r.lines);
            if let Err(error) = writeln!(r.writer, "{text}") {
                tracing::warn!(%error, "trace write failed; the recording stops here");
                *recorder = None;
            }
        }
    }

    fn flush(recorder: &mut Option<Recorder>) {
        if let Some(r) = recorder {
            let _ = r.writer.flush();
        }
    }
}

/// Resolves when any of its receivers resolves (sent or dropped): the host's cancel and the
/// engine's close both cancel a run.
pub(crate) struct Cancel {
    first: oneshot::Receiver<()>,
    second: Option<oneshot::Receiver<()>>,
}

impl Cancel {
    /// Cancelled by either receiver.
    pub(crate) fn either(a: oneshot::Receiver<()>, b: Option<oneshot::Receiver<()>>) -> Cancel {
        Cancel {
            first: a,
            second: b,
        }
    }

    fn poll(&mut self, cx: &mut std::task::Context<'_>) -> Poll<()> {
        if self.first.poll_unpin(cx).is_ready()
            || self
                .second
                .as_mut()
                .is_some_and(|rx| rx.poll_unpin(cx).is_ready())
        {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

impl From<oneshot::Receiver<()>> for Cancel {
    fn from(rx: oneshot::Receiver<()>) -> Cancel {
        Cancel::either(rx, None)
    }
}

/// Why the driver woke up.
enum Wake {
    Cancel,
    Input(Input),
    Timer,
}

/// Waits for whatever comes first: the cancel signal, a completion, or the machine's deadline.
/// Shared by every driver loop (runs and extension operations) so the wake-up rules exist once.
pub(crate) struct Waiter<R> {
    epoch: std::time::Instant,
    /// The machine's time at `epoch` (non-zero for a run resumed from its journal).
    offset: Duration,
    cancel: Option<Cancel>,
    sleep: Option<BoxFuture<()>>,
    armed: Option<Timestamp>,
    runtime: std::marker::PhantomData<fn() -> R>,
}

impl<R: Runtime> Waiter<R> {
    /// Starts the machine's clock now; `cancel` resolving (sent or dropped) means cancel.
    pub(crate) fn new(cancel: impl Into<Cancel>) -> Waiter<R> {
        Waiter::starting_at(cancel, Duration::ZERO)
    }

    /// Like [`Waiter::new`], with the machine's clock reading `offset` now.
    pub(crate) fn starting_at(cancel: impl Into<Cancel>, offset: Duration) -> Waiter<R> {
        Waiter {
            epoch: R::now(),
            offset,
            cancel: Some(cancel.into()),
            sleep: None,
            armed: None,
            runtime: std::marker::PhantomData,
        }
    }

    /// Microseconds since the machine's epoch.
    pub(crate) fn now(&self) -> Timestamp {
        stamp::<R>(self.epoch).saturating_add(self.offset)
    }

    /// Whether the cancel signal has come, looked at without waiting (once it has been
    /// reported, it is not reported again).
    pub(crate) fn cancelled_now(&mut self) -> bool {
        let Some(cancel) = self.cancel.as_mut() else {
            return false;
        };
        let cancelled = std::future::poll_fn(|cx| cancel.poll(cx))
            .now_or_never()
            .is_some();
        if cancelled {
            self.cancel = None;
        }
        cancelled
    }

    /// The next input (`Input::Cancel` for the cancel signal) or `None` when the deadline fired,
    /// with the time it happened.
    ///
    /// The runtime's timer is re-armed only for an earlier deadline. A later deadline (each new
    /// subtask's budget, for one) keeps the timer already armed: arming one costs the reactor a
    /// wake-up and a timer update, once per request otherwise. When that timer fires before the
    /// current deadline, nothing is reported and the wait goes on until the real one.
    pub(crate) async fn next(
        &mut self,
        deadline: Option<Timestamp>,
        rx: &mut completions::Receiver<Input>,
    ) -> (Timestamp, Option<Input>) {
        loop {
            let earlier = match (deadline, self.armed) {
                (Some(d), Some(armed)) => d < armed,
                (Some(_), None) => true,
                (None, _) => false,
            };
            if earlier {
                self.armed = deadline;
                let (epoch, offset) = (self.epoch, self.offset);
                self.sleep = deadline.map(|d| {
                    let after = Duration::from_micros(d.as_micros()).saturating_sub(offset);
                    match epoch.checked_add(after) {
                        Some(at) => R::sleep_until(at),
                        None => std::future::pending().boxed(),
                    }
                });
            }
            let wake = std::future::poll_fn(|cx| {
                if let Some(c) = self.cancel.as_mut() {
                    if c.poll(cx).is_ready() {
                        self.cancel = None;
                        return Poll::Ready(Wake::Cancel);
                    }
                }
                if let Poll::Ready(Some(input)) = rx.poll_recv(cx) {
                    return Poll::Ready(Wake::Input(input));
                }
                if let Some(s) = self.sleep.as_mut() {
                    if s.poll_unpin(cx).is_ready() {
                        return Poll::Ready(Wake::Timer);
                    }
                }
                Poll::Pending
            })
            .await;
            match wake {
                Wake::Cancel => return (self.now(), Some(Input::Cancel)),
                Wake::Input(input) => return (self.now(), Some(input)),
                Wake::Timer => {
                    // A fired timer is not polled again: the next pass arms a new one.
                    self.armed = None;
                    self.sleep = None;
                    let now = self.now();
                    if deadline.is_some_and(|d| now >= d) {
                        return (now, None);
                    }
                }
            }
        }
    }
}

/// An output the run loop awaits (see [`Driver::carry_out`]).
enum Awaited {
    Event(Event),
    Finished(Arc<ExecutionResult>),
}

/// What the run loop has under way: spawned exchanges and host calls by the id the core may
/// abort them with, and host answers that were ready when the call was made, to feed next.
#[derive(Default)]
struct InFlight {
    ops: BTreeMap<OpId, AbortHandle>,
    calls: BTreeMap<CallId, AbortHandle>,
    answered: VecDeque<Input>,
}

impl InFlight {
    /// Stops every spawned exchange and host call.
    fn abort_all(&self) {
        self.ops
            .values()
            .chain(self.calls.values())
            .for_each(AbortHandle::abort);
    }

    /// Queues a host answer that was ready when its call was made. A turn usually makes one
    /// such call, so the queue starts with room for exactly one answer: a run keeps that room
    /// while its exchanges are open, and a queue grown on its own would keep room for four.
    fn answered_at_once(&mut self, answer: Input) {
        if self.answered.capacity() == 0 {
            self.answered.reserve_exact(1);
        }
        self.answered.push_back(answer);
    }

    /// The next input that needs no waiting: a ready host answer first, then a completion
    /// already queued.
    fn next_at_hand(&mut self, rx: &mut completions::Receiver<Input>) -> Option<Input> {
        self.answered.pop_front().or_else(|| rx.try_recv())
    }
}

/// Wraps a core event with the current wall-clock time.
pub(crate) fn stamp_event(event: Event) -> EventEnvelope {
    let timestamp = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    EventEnvelope::at(event, timestamp)
}

impl<R: Runtime, C: ControlPoint + 'static> Driver<R, C> {
    /// Drives `run` to its end. `cancel` resolving (sent or dropped) cancels it.
    ///
    /// Not an `async fn` itself: a wrapper future would hold the driver and the run a second
    /// time beside the inner future that owns them, and a waiting run would carry both.
    pub(crate) fn drive(
        self,
        run: Run,
        cancel: Cancel,
    ) -> impl std::future::Future<Output = ExecutionResult> {
        let resumed = Resumed {
            offset: Duration::ZERO,
            reask: Vec::new(),
            tasks_seen: 0,
        };
        self.drive_from(run, cancel, resumed)
    }

    /// Drives `run` to its end from where `resumed` says it stands: its clock, the host calls
    /// to ask again, the conversations already reported.
    ///
    /// An `async` block rather than an `async fn`: the block uses what it captured in place,
    /// where an `async fn` keeps its arguments and a moved copy of them (the run and the driver
    /// twice) for as long as the run waits.
    #[allow(
        clippy::manual_async_fn,
        reason = "an async fn would hold its arguments twice (see above)"
    )]
    pub(crate) fn drive_from(
        mut self,
        mut run: Run,
        cancel: Cancel,
        resumed: Resumed,
    ) -> impl std::future::Future<Output = ExecutionResult> {
        async move {
            let Resumed {
                offset,
                reask,
                tasks_seen,
            } = resumed;
            let mut reask = Some(reask);
            let mut waiter = Waiter::<R>::starting_at(cancel, offset);
            let (tx, mut rx) = completions::channel::<Input>(COMPLETION_QUEUE);
            let mut in_flight = InFlight::default();
            let mut collected: Vec<EventEnvelope> = Vec::new();
            // Conversations already reported to the close hook, and finished tasks looked at.
            let mut closed_contexts: BTreeSet<String> = BTreeSet::new();
            let mut tasks_seen = tasks_seen;
            // The run's step and subtask spans (children of the run's span, which is current).
            let mut spans = RunSpans::starting_at(tasks_seen);
            // Retries scheduled before a restart were counted by the process that ran them.
            let mut retries_seen = run.retries().len();
            // Turns fed from an answer at hand since the loop last waited or yielded.
            let mut ready_answers_in_a_row = 0;
            loop {
                // Write-ahead: what this turn fed the core is durable before any of its outputs
                // (and the conversation hook they may call) is carried out. A turn without
                // outputs (a response head, say) has nothing to protect: its lines wait for the
                // next commit, and a crash before it only loses what no one has acted on yet.
                // The conversation hook is an effect too: a finished task it has not been told
                // about must not be told before the input that finished it is durable.
                let effects = run.has_output()
                    || reask.is_some()
                    || (self.on_conversation_closed.is_some() && run.finished_count() > tasks_seen);
                if let Some(journal) = self.journal.as_mut().filter(|_| effects) {
                    // Boxed, like the other rare awaits below: the loop's future is as large as the
                    // largest future it awaits, and a waiting run keeps that size all along.
                    if let Err(error) = Box::pin(journal.commit::<R>()).await {
                        tracing::error!(%error, "the run's journal cannot be written: the run stops here");
                        in_flight.abort_all();
                        return Journaling::failed(run.execution_id(), &error);
                    }
                }
                for (call, request) in reask.take().into_iter().flatten() {
                    self.ask_host(&mut spans, &mut in_flight, &tx, call, request);
                }
                self.close_conversations(&run, &mut tasks_seen, &mut closed_contexts);
                spans.close_finished(&run);
                for r in run.retries().get(retries_seen..).unwrap_or_default() {
                    crate::metrics::retry(&r.agent, r.action);
                }
                retries_seen = run.retries().len();
                // Outputs are taken from the run one at a time, as they are carried out: a copy of
                // the queue here would keep a second buffer's capacity for the run's whole life.
                // Only an event and the end are awaited, each taken out of its output first, so
                // the waiting loop keeps no room for a whole output.
                loop {
                    let event = match self.carry_out(&mut run, &mut spans, &mut in_flight, &tx) {
                        None => break,
                        Some(Awaited::Event(event)) => event,
                        Some(Awaited::Finished(result)) => {
                            spans.close_finished(&run);
                            drop(spans);
                            Recorder::flush(&mut self.recorder);
                            in_flight.abort_all();
                            if let Some(journal) = &mut self.journal {
                                Box::pin(journal.finish::<R>()).await;
                            }
                            // The run holds the other reference to the result: without it the
                            // result is taken whole instead of copied.
                            drop(run);
                            let result = Arc::unwrap_or_clone(result);
                            return Box::pin(self.finish(result, collected)).await;
                        }
                    };
                    // Neither the next envelope nor the delivery is kept beside the wait: a
                    // `for` or an `if let` would hold its matched value across it.
                    let mut envelopes = self.map(stamp_event(event)).into_iter();
                    loop {
                        let Some(envelope) = envelopes.next() else {
                            break;
                        };
                        let Some(wait) = self.deliver(envelope, Some(&mut collected)) else {
                            continue;
                        };
                        wait.await;
                    }
                }

                // A progress request is answered between two inputs: the snapshot is consistent
                // and the run goes on. (Waiting is cancel-safe: nothing is lost when a request
                // wins the race.)
                // Nothing in flight and no answer at hand: the run waits for a timer or a cancel,
                // maybe for hours. An emptied map keeps its last node and an emptied queue its
                // buffer; new ones hold nothing (as in the core).
                if in_flight.ops.is_empty()
                    && in_flight.calls.is_empty()
                    && in_flight.answered.is_empty()
                {
                    in_flight = InFlight::default();
                    rx.release_buffer();
                }
                // A host answer at hand is fed without a wait. But a host that always answers at
                // once would then hold the thread to the run's end, its cancel and progress
                // requests never seen, so the loop yields after a few such turns in a row, and
                // looks at both on every one. The answer stays queued during the yield, so the
                // loop keeps no room for an input across it.
                if in_flight.answered.is_empty() {
                    ready_answers_in_a_row = 0;
                } else {
                    ready_answers_in_a_row += 1;
                    if ready_answers_in_a_row >= READY_ANSWERS_BEFORE_YIELD {
                        ready_answers_in_a_row = 0;
                        crate::runtime::yield_now().await;
                    }
                }
                let woke = if let Some(answer) = in_flight.answered.pop_front() {
                    // A cancel goes first; the answer is fed right after it.
                    if let Some(asked) = self.next_progress_request().now_or_never() {
                        self.answer_progress(asked, &run);
                    }
                    let input = if waiter.cancelled_now() {
                        in_flight.answered.push_front(answer);
                        Input::Cancel
                    } else {
                        answer
                    };
                    Some((waiter.now(), Some(input)))
                } else {
                    let deadline = run.poll_timeout();
                    let next = waiter.next(deadline, &mut rx);
                    futures::pin_mut!(next);
                    let asked = self.next_progress_request();
                    // Taken out of the race's result first: the unfinished future left in it
                    // borrows the driver, which answering a progress request needs.
                    let woke = match futures::future::select(next, asked).await {
                        futures::future::Either::Left((woke, _)) => Ok(woke),
                        futures::future::Either::Right((asked, _)) => Err(asked),
                    };
                    match woke {
                        Ok(woke) => Some(woke),
                        Err(asked) => {
                            self.answer_progress(asked, &run);
                            None
                        }
                    }
                };
                let Some((now, input)) = woke else {
                    continue;
                };
                let Some(input) = input else {
                    self.expire(&mut run, now);
                    continue;
                };
                self.feed(&mut run, now, input, &mut in_flight);
                // Inputs that are already waiting (the body and end of a response usually queue
                // right behind its head) join this turn: the loop's round of bookkeeping is paid
                // once for them, and a durable run pays one journal commit instead of one each.
                // Their outputs wait in the core until the turn's end (for a durable run, until
                // the commit, as write-ahead requires). A recorded trace replays input by input,
                // each followed by the outputs it caused, so an input with outputs ends the turn
                // unless only the journal's grouping is at stake.
                let group_commit = self.journal.is_some() && self.recorder.is_none();
                for _ in 1..INPUTS_PER_TURN {
                    if run.has_output() && !group_commit {
                        break;
                    }
                    let Some(next) = in_flight.next_at_hand(&mut rx) else {
                        break;
                    };
                    self.feed(&mut run, now, next, &mut in_flight);
                }
            }
        }
    }

    /// Carries out the run's outputs that need no waiting (requests, host calls and their
    /// aborts) until one that does: an event, or the end of the run. `None` when the run has no
    /// output left.
    fn carry_out(
        &mut self,
        run: &mut Run,
        spans: &mut RunSpans,
        in_flight: &mut InFlight,
        tx: &completions::Sender<Input>,
    ) -> Option<Awaited> {
        while let Some(output) = run.poll_output() {
            Recorder::write(&mut self.recorder, |w| w.output(&output));
            match output {
                Output::Transmit(req) => {
                    if req.purpose == OpPurpose::Cancel {
                        if let Some(t) = &self.ticket {
                            t.stats.cancels_sent.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    let op = req.op;
                    let binding = run.agents().get(&req.agent).map(|a| a.endpoint.binding);
                    let span = spans.exchange(&req, binding);
                    // The exchange's future itself, owning its transport: an `async` block
                    // around it would keep a second copy of the request beside it.
                    let task = Transport::exchange_in(
                        self.transport.clone(),
                        req,
                        tx.clone(),
                        span,
                        binding,
                    );
                    in_flight.ops.insert(op, spawn_abortable::<R>(task));
                }
                Output::AbortTransmit { op } => {
                    if let Some(h) = in_flight.ops.remove(&op) {
                        h.abort();
                    }
                }
                Output::CallHost { call, request } => {
                    if matches!(request, HostRequest::Negotiation(_)) {
                        crate::metrics::negotiation_round();
                    }
                    self.ask_host(spans, in_flight, tx, call, request);
                }
                Output::AbandonHostCall { call } => {
                    // An answer given at once is fed anyway: the core forgot the call before it
                    // said so and ignores replies to calls it does not hold, as it does for an
                    // aborted task's answer already in the channel.
                    if let Some(h) = in_flight.calls.remove(&call) {
                        h.abort();
                    }
                }
                Output::Event(event) => return Some(Awaited::Event(event)),
                Output::Finished(result) => return Some(Awaited::Finished(result)),
                other => tracing::warn!(?other, "output not understood by this runtime"),
            }
        }
        None
    }

    /// Starts host call `call` under its span. The callback's future is polled once here: an
    /// answer it has at once is kept for the loop to feed next, which costs no task and no trip
    /// through the completion channel. A future that is not ready goes on in a task of its
    /// own, abortable by the call's id.
    fn ask_host(
        &self,
        spans: &mut RunSpans,
        in_flight: &mut InFlight,
        tx: &completions::Sender<Input>,
        call: CallId,
        request: HostRequest,
    ) {
        let span = spans.for_host_call(&request);
        // Inside the subtask's span when there is one, so the host's own spans nest under it.
        // Unpin: polled here in place, moved into a task only when it is not ready.
        let mut answer = answer_guarded_shared(self.control_point.clone(), request)
            .instrument(span.unwrap_or_else(tracing::Span::current));
        // The waker given to this first poll is never woken: a callback that is not ready
        // registers the task's own waker when the task polls it.
        match (&mut answer).now_or_never() {
            Some(reply) => in_flight.answered_at_once(Input::HostReply { call, reply }),
            None => {
                let tx = tx.clone();
                let task = async move {
                    let reply = answer.await;
                    let _ = tx.send(Input::HostReply { call, reply }).await;
                };
                in_flight.calls.insert(call, spawn_abortable::<R>(task));
            }
        }
    }

    /// Feeds one input to the core (recorded and journaled first), then any timeout it made due.
    fn feed(&mut self, run: &mut Run, now: Timestamp, input: Input, in_flight: &mut InFlight) {
        match &input {
            Input::ResponseEnd { op } | Input::TransportFailed { op, .. } => {
                in_flight.ops.remove(op);
            }
            Input::HostReply { call, .. } => {
                in_flight.calls.remove(call);
            }
            _ => {}
        }
        Recorder::write(&mut self.recorder, |w| w.input(now, &input));
        if let Some(journal) = &mut self.journal {
            journal.input(now, &input);
        }
        if let Err(misuse) = run.handle(input, now) {
            tracing::error!(%misuse, "the core rejected an input (runtime bug)");
        }
        self.expire(run, now);
    }

    /// Answers a progress request with a snapshot of `run`; `None` means every handle is gone
    /// and nobody asks any more.
    fn answer_progress(&mut self, asked: Option<oneshot::Sender<RunProgress>>, run: &Run) {
        match asked {
            Some(reply) => {
                let _ = reply.send(run.progress());
            }
            None => self.progress_rx = None,
        }
    }

    /// The next progress request; `None` when every handle is gone. Never resolves once that
    /// was seen.
    fn next_progress_request(
        &mut self,
    ) -> impl std::future::Future<Output = Option<oneshot::Sender<RunProgress>>> + '_ {
        std::future::poll_fn(|cx| match &mut self.progress_rx {
            Some(rx) => rx.poll_recv(cx),
            None => Poll::Pending,
        })
    }

    /// Fires the core's timeout when it is due: expiry is decided by the clock, not by which
    /// future woke the loop.
    fn expire(&mut self, run: &mut Run, now: Timestamp) {
        if run.poll_timeout().is_some_and(|d| d <= now) {
            Recorder::write(&mut self.recorder, |w| w.timeout(now));
            if let Some(journal) = &mut self.journal {
                journal.timeout(now);
            }
            if let Err(misuse) = run.handle_timeout(now) {
                tracing::error!(%misuse, "the core rejected a timeout (runtime bug)");
            }
        }
    }

    /// Calls the conversation close hook for every task that finished since the last call,
    /// once per context id.
    fn close_conversations(&self, run: &Run, seen: &mut usize, closed: &mut BTreeSet<String>) {
        let Some(hook) = &self.on_conversation_closed else {
            return;
        };
        while *seen < run.finished_count() {
            let Some(task) = run.finished_task(*seen) else {
                break;
            };
            *seen += 1;
            let Some(context_id) = task.context_id.clone() else {
                continue;
            };
            if !closed.insert(context_id.clone()) {
                continue;
            }
            let conversation = ConversationClosed {
                execution_id: run.execution_id().to_owned(),
                step: task.step_name.to_string(),
                agent: task.agent_name.to_string(),
                context_id,
                remote_task_id: task.remote_task_id.clone(),
            };
            if std::panic::catch_unwind(AssertUnwindSafe(|| hook(&conversation))).is_err() {
                tracing::warn!(agent = %conversation.agent, "conversation close hook panicked; ignored");
            }
        }
    }

    /// The events the host wants instead of `envelope`; the original when the hook panics.
    fn map(&self, envelope: EventEnvelope) -> Vec<EventEnvelope> {
        let Some(hook) = &self.map_events else {
            return vec![envelope];
        };
        match std::panic::catch_unwind(AssertUnwindSafe(|| hook(&envelope))) {
            Ok(mapped) => mapped,
            Err(_) => {
                tracing::warn!(
                    event = envelope.type_str(),
                    "event hook panicked; the original event is delivered"
                );
                vec![envelope]
            }
        }
    }

    /// Hands one event to the sink and the stream, and keeps it in `collected` (if given) when
    /// `on_finish` will read the whole list. The stream's queue is bounded: when it is full the
    /// returned future waits for the consumer (backpressure); once the consumer dropped the
    /// stream, events go to the sink only.
    ///
    /// Not an `async fn`: the run loop awaits a delivery for every event, and a waiting run keeps
    /// room for the largest future the loop awaits. An event the stream takes at once (or does
    /// not want) needs no future; only a full queue or a consumer gone since the last event
    /// boxes one.
    fn deliver<'a>(
        &'a mut self,
        envelope: EventEnvelope,
        collected: Option<&'a mut Vec<EventEnvelope>>,
    ) -> Option<futures::future::BoxFuture<'a, ()>> {
        // Whether a consumer besides the stream has the event: a sink that took it, or
        // `on_finish`, which gets the whole list. An event none of them gets is dropped.
        let mut taken = self.on_finish.is_some();
        if let Some(sink) = &self.sink {
            if std::panic::catch_unwind(AssertUnwindSafe(|| sink(&envelope))).is_err() {
                tracing::warn!(event = envelope.type_str(), "event sink panicked; ignored");
            } else {
                taken = true;
            }
        }
        if !self.events_open {
            if !taken {
                crate::metrics::event_dropped();
            }
            self.keep(envelope, collected);
            return None;
        }
        match self.events_tx.try_send(envelope.clone()) {
            Ok(()) => {
                self.keep(envelope, collected);
                None
            }
            Err(refused) => Some(Box::pin(async move {
                self.send_waiting(refused, taken).await;
                self.keep(envelope, collected);
            })),
        }
    }

    /// Only `on_finish` reads the whole list; without it, keeping every event would make a
    /// run's memory grow with its length.
    fn keep(&self, envelope: EventEnvelope, collected: Option<&mut Vec<EventEnvelope>>) {
        if let Some(collected) = collected.filter(|_| self.on_finish.is_some()) {
            collected.push(envelope);
        }
    }

    /// Sends `envelope` to the stream, waiting while its queue is full; a stream whose consumer
    /// is gone is closed for the rest of the run.
    async fn send_waiting(&mut self, envelope: EventEnvelope, taken: bool) {
        let sent = match &self.ticket {
            // A close that cancels the run stops the wait for a consumer that does not read.
            Some(ticket) => {
                let stats = ticket.stats.clone();
                let send = self.events_tx.send(envelope);
                let closing = stats.closing();
                futures::pin_mut!(send, closing);
                match futures::future::select(send, closing).await {
                    futures::future::Either::Left((sent, _)) => sent.is_ok(),
                    futures::future::Either::Right(_) => {
                        tracing::warn!(
                            "the engine is closing and nobody reads the event stream: its events stop here"
                        );
                        false
                    }
                }
            }
            None => self.events_tx.send(envelope).await.is_ok(),
        };
        if !sent {
            if !taken {
                crate::metrics::event_dropped();
            }
            self.events_open = false;
        }
    }

    async fn finish(
        mut self,
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
        // PL-9 summary lines, after on_finish so they close the run's protocol log.
        if tracing::enabled!(target: "a2at::protocol", tracing::Level::INFO) {
            for line in a2at_core::protolog::summary_lines(&result) {
                tracing::info!(target: "a2at::protocol", "{line}");
            }
        }
        crate::metrics::run_finished(&result);
        let close = stamp_event(Event::new(EventType::Close, serde_json::json!({})));
        // `on_finish` has read the list already: the close event is not kept.
        if let Some(wait) = self.deliver(close, None) {
            wait.await;
        }
        result
    }
}

/// Spawns `task` on the runtime; aborting the handle drops it (and its connection).
pub(crate) fn spawn_abortable<R: Runtime>(
    task: impl std::future::Future<Output = ()> + Send + 'static,
) -> AbortHandle {
    let (handle, registration) = AbortHandle::new_pair();
    // Boxed once here, the task moves as a pointer through the wrappers and into the
    // runtime's task instead of being copied at each step.
    R::spawn(DroppedInDispatch::new(Abortable::new(
        Box::pin(task),
        registration,
    )));
    handle
}

/// A spawned task that is polled, and dropped, under the tracing dispatcher that was current
/// when it was spawned.
///
/// When a span closes, the subscriber's registry releases the span's hold on its parent
/// through whichever dispatcher is current on that thread, not the span's own. An aborted
/// exchange keeps its future (and the exchange's span) until the task itself is dropped, which
/// the executor does after the last poll, outside any scoped dispatcher: the exchange's span
/// then closed, but its subtask, step and run spans never did, and were never exported, when
/// the host had installed its subscriber with `with_default` rather than globally.
///
/// Spawned where no subscriber is current (none installed globally or in scope), it is bound
/// to none: it is polled and dropped under whichever dispatcher is current then, as any
/// unbound task is.
struct DroppedInDispatch<F: std::future::Future + Unpin> {
    dispatch: Option<tracing::Dispatch>,
    task: Option<F>,
}

impl<F: std::future::Future + Unpin> DroppedInDispatch<F> {
    fn new(task: F) -> Self {
        DroppedInDispatch {
            dispatch: crate::runtime::dispatch_to_bind(),
            task: Some(task),
        }
    }

    /// Runs `f` under the task's dispatcher, if it has one.
    fn in_dispatch<T>(dispatch: Option<&tracing::Dispatch>, f: impl FnOnce() -> T) -> T {
        match dispatch {
            Some(dispatch) => tracing::dispatcher::with_default(dispatch, f),
            None => f(),
        }
    }
}

impl<F: std::future::Future + Unpin> std::future::Future for DroppedInDispatch<F> {
    type Output = ();

    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<()> {
        let this = &mut *self;
        Self::in_dispatch(this.dispatch.as_ref(), || {
            let Some(task) = this.task.as_mut() else {
                return Poll::Ready(());
            };
            let polled = std::pin::Pin::new(task).poll(cx);
            if polled.is_ready() {
                this.task = None;
            }
            polled.map(drop)
        })
    }
}

impl<F: std::future::Future + Unpin> Drop for DroppedInDispatch<F> {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            Self::in_dispatch(self.dispatch.as_ref(), || drop(task));
        }
    }
}

/// Microseconds since the run's (or operation's) epoch, read from the runtime's clock.
pub(crate) fn stamp<R: Runtime>(epoch: std::time::Instant) -> Timestamp {
    Timestamp::from_micros(u64::try_from(elapsed::<R>(epoch).as_micros()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use a2at_core::host::{HostReply, MessageContent};

    use super::*;

    fn answer(call: u64) -> Input {
        Input::HostReply {
            call: CallId(call),
            reply: HostReply::Task(Ok(MessageContent::text("ok"))),
        }
    }

    #[test]
    fn a_single_ready_answer_is_queued_in_room_for_one_and_more_still_queue_in_order() {
        let mut in_flight = InFlight::default();
        in_flight.answered_at_once(answer(1));
        assert_eq!(in_flight.answered.capacity(), 1);
        in_flight.answered_at_once(answer(2));
        in_flight.answered_at_once(answer(3));
        let calls: Vec<u64> = in_flight
            .answered
            .iter()
            .map(|input| match input {
                Input::HostReply { call, .. } => call.0,
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        assert_eq!(calls, [1, 2, 3]);
    }
}
