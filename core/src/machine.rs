//! Bookkeeping shared by the machines of one run: the output queue, the timer table, id
//! allocation and the registries of pending host calls and HTTP exchanges.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

use serde_json::Value;

use crate::SharedStr;
use crate::a2a::ResponseDecoder;
use crate::event::{Event, EventData, EventSelection, EventType};
use crate::ids::{CallId, IdGenerator, OpId, StepId, TaskKey};
use crate::io::{ApiMisuse, Correlation, OpPurpose, Output};
use crate::run::ScheduledRetry;
use crate::time::Timestamp;
use crate::tracectx::TraceContext;

/// Everything a machine can wait for. Ties at one instant fire in this enum's order, then by
/// id, so timer expiry is deterministic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum TimerKey {
    /// The single budget of one task activation or one self-task call.
    TaskDeadline(TaskKey),
    /// Next `GetTask` observation of a waiting remote task.
    Poll(TaskKey),
    /// Budget of one `on_route` call: source step and edge index.
    Route(StepId, u32),
    /// Budget of one `CancelTask` cleanup exchange.
    Cleanup(OpId),
    /// End of the backoff before a remote task's next retry.
    Retry(TaskKey),
}

/// Who waits for a host call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CallOwner {
    /// `on_task` or `on_negotiation` of a remote invocation.
    Invocation(TaskKey),
    /// `on_self_task` of a SELF_LOOP subtask.
    SelfTask(TaskKey),
    /// `on_route` for one edge.
    Route(StepId, u32),
}

/// One HTTP exchange in flight.
#[derive(Debug)]
pub(crate) struct OpEntry {
    pub owner: TaskKey,
    pub purpose: OpPurpose,
    pub decoder: ResponseDecoder,
    /// The agent addressed (for a cleanup `CancelTask` after the owner is gone), shared with
    /// the subtask's request rather than copied.
    pub agent: SharedStr,
    /// Log correlation of the owner, reused by cleanup exchanges.
    pub correlation: Arc<Correlation>,
    /// The owner gave up on this send before learning the remote task id: the exchange is only
    /// read to find a task to cancel (a task id that arrives after the timeout).
    pub orphan: bool,
}

/// Shared mutable state of one run, split from the step table so both can be borrowed at once.
#[derive(Debug)]
pub(crate) struct Ctx {
    pub now: Timestamp,
    pub ids: IdGenerator,
    /// The trace every request of this machine joins (`traceparent`, `tracestate`).
    pub trace: TraceContext,
    /// Shared by the log correlation of every request and by deferred event payloads.
    pub execution_id: SharedStr,
    pub outputs: VecDeque<Output>,
    timers: BTreeSet<(Timestamp, TimerKey)>,
    timer_at: BTreeMap<TimerKey, Timestamp>,
    next_call: u64,
    next_op: u64,
    pub calls: BTreeMap<CallId, CallOwner>,
    /// Boxed: an entry holds a response decoder (hundreds of bytes), and a map node keeps room
    /// for eleven entries for as long as the run lives, even once every exchange has ended.
    pub ops: BTreeMap<OpId, Box<OpEntry>>,
    events: EventSelection,
    /// Every retry scheduled so far, in order (what a driver counts; never read by the run).
    pub retries: Vec<ScheduledRetry>,
}

/// Emits an event if the run's [`EventSelection`] includes it, building the payload only then:
/// `emit!(self.ctx, EventType::StepStart, json!({...}))`.
macro_rules! emit {
    ($ctx:expr, $kind:expr, $data:expr $(,)?) => {{
        let kind = $kind;
        if $ctx.wants(kind) {
            let data = $data;
            $ctx.emit(kind, data);
        }
    }};
}
pub(crate) use emit;

/// Emits an event whose payload is built only when first read, if the run's [`EventSelection`]
/// includes it: `emit_deferred!(self.ctx, kind, { let shared = Arc::clone(&x); move || ... })`.
/// The block runs only for a wanted event, so it can take what the closure owns there.
macro_rules! emit_deferred {
    ($ctx:expr, $kind:expr, $build:expr $(,)?) => {{
        let kind = $kind;
        if $ctx.wants(kind) {
            let data = $crate::event::EventData::deferred($build);
            $ctx.emit(kind, data);
        }
    }};
}
pub(crate) use emit_deferred;

/// An event payload object from `(key, value)` pairs, keys in the given order, each value moved
/// in. For fields that already are a `Value` (results, outputs, history): `json!` would copy such
/// a field through the serializer, node by node, which made that copy most of an event's cost.
/// The object built is the same as `json!`'s for the same pairs.
pub(crate) fn object<const N: usize>(fields: [(&str, Value); N]) -> Value {
    Value::Object(fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
}

impl Ctx {
    /// Moves the clock to `now`; an earlier instant than the last one is refused, the clock
    /// unchanged.
    pub fn advance_to(&mut self, now: Timestamp) -> Result<(), ApiMisuse> {
        if now < self.now {
            return Err(ApiMisuse::TimeWentBackwards {
                last: self.now,
                now,
            });
        }
        self.now = now;
        Ok(())
    }

    pub fn new(
        ids: IdGenerator,
        trace: TraceContext,
        execution_id: String,
        events: EventSelection,
    ) -> Self {
        Ctx {
            now: Timestamp::ZERO,
            ids,
            trace,
            execution_id: execution_id.into(),
            outputs: VecDeque::new(),
            timers: BTreeSet::new(),
            timer_at: BTreeMap::new(),
            next_call: 0,
            next_op: 0,
            calls: BTreeMap::new(),
            ops: BTreeMap::new(),
            events,
            retries: Vec::new(),
        }
    }

    /// Whether events of `kind` are emitted at all (see [`emit!`]).
    pub fn wants(&self, kind: EventType) -> bool {
        self.events.includes(kind)
    }

    pub fn emit(&mut self, kind: EventType, data: impl Into<EventData>) {
        self.outputs
            .push_back(Output::Event(Event::new(kind, data)));
    }

    pub fn push(&mut self, output: Output) {
        self.outputs.push_back(output);
    }

    /// The next output. When none is left and nothing is in flight (no exchange open, no host
    /// call pending), the machine is idle until a timer or a cancel: the queue and the emptied
    /// maps give their memory back then, since a run may wait like that for hours. A busy run
    /// keeps them, so the steady state allocates nothing here.
    pub fn pop_output(&mut self) -> Option<Output> {
        let output = self.outputs.pop_front();
        if output.is_none() && self.ops.is_empty() && self.calls.is_empty() {
            // An emptied map keeps its last node (room for eleven entries); a new one has none.
            self.outputs = VecDeque::new();
            self.ops = BTreeMap::new();
            self.calls = BTreeMap::new();
        }
        output
    }

    /// Registers a host call and returns its id; the caller pushes the `CallHost` output.
    pub fn new_call(&mut self, owner: CallOwner) -> CallId {
        self.next_call += 1;
        let id = CallId(self.next_call);
        self.calls.insert(id, owner);
        id
    }

    /// Forgets a call; when it was still pending, tells the driver it may drop it.
    pub fn abandon_call(&mut self, call: CallId) {
        if self.calls.remove(&call).is_some() {
            self.outputs.push_back(Output::AbandonHostCall { call });
        }
    }

    pub fn new_op(&mut self) -> OpId {
        self.next_op += 1;
        OpId(self.next_op)
    }

    /// Forgets an exchange; when it was still open, tells the driver to drop the connection.
    pub fn abort_op(&mut self, op: OpId) {
        if self.ops.remove(&op).is_some() {
            self.outputs.push_back(Output::AbortTransmit { op });
        }
        self.clear_timer(TimerKey::Cleanup(op));
    }

    pub fn set_timer(&mut self, key: TimerKey, at: Timestamp) {
        if let Some(old) = self.timer_at.insert(key, at) {
            self.timers.remove(&(old, key));
        }
        self.timers.insert((at, key));
    }

    /// When the timer `key` is due, if it is set.
    pub fn timer(&self, key: TimerKey) -> Option<Timestamp> {
        self.timer_at.get(&key).copied()
    }

    pub fn clear_timer(&mut self, key: TimerKey) {
        if let Some(old) = self.timer_at.remove(&key) {
            self.timers.remove(&(old, key));
        }
    }

    pub fn next_deadline(&self) -> Option<Timestamp> {
        self.timers.first().map(|(at, _)| *at)
    }

    /// Removes and returns the earliest timer due at `now`, if any.
    pub fn pop_due(&mut self, now: Timestamp) -> Option<TimerKey> {
        let (at, key) = *self.timers.first()?;
        if at > now {
            return None;
        }
        self.timers.remove(&(at, key));
        self.timer_at.remove(&key);
        Some(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> Ctx {
        Ctx::new(
            IdGenerator::new(1),
            TraceContext::new(1, None, None),
            "run".to_owned(),
            EventSelection::All,
        )
    }

    fn drain(ctx: &mut Ctx) -> usize {
        std::iter::from_fn(|| ctx.pop_output()).count()
    }

    #[test]
    fn an_idle_machine_gives_its_output_queue_back_once_drained() {
        let mut ctx = ctx();
        ctx.push(Output::AbortTransmit { op: OpId(1) });
        ctx.push(Output::AbortTransmit { op: OpId(2) });
        assert_eq!(
            drain(&mut ctx),
            2,
            "the queued outputs come out before the queue goes"
        );
        assert_eq!(ctx.outputs.capacity(), 0);
    }

    #[test]
    fn a_machine_with_a_host_call_pending_keeps_its_queue() {
        let mut ctx = ctx();
        let call = ctx.new_call(CallOwner::Route(StepId(0), 0));
        ctx.push(Output::AbandonHostCall { call });
        assert_eq!(drain(&mut ctx), 1);
        assert!(
            ctx.outputs.capacity() > 0,
            "a busy run would allocate it again at once"
        );
        ctx.abandon_call(call);
        assert_eq!(drain(&mut ctx), 1, "the abandon itself is an output");
        assert_eq!(ctx.outputs.capacity(), 0, "no call left: the queue goes");
    }
}
