//! Events of a run: stable type strings with JSON payloads.
//!
//! Typical order: `start`; per step `step_start`; per subtask `task_request`,
//! `task_status_changed{running}`, `agent_request`, `agent_*` traffic, `[negotiation_*]`,
//! `agent_response`, `task_status_changed`, `task_response`; then `step_complete` (or `error`)
//! and `route_decision` once per outgoing edge; finally `workflow_complete`, `complete` or
//! `error`. The runtime adds `close` after the `on_finish` hook.

use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// The stable event types. The three reserved ones are never emitted on the workflow stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum EventType {
    /// The run started: `{workflow, steps, executionId}`.
    Start,
    /// The run succeeded: `{history, step_outputs, executionId}`.
    Complete,
    /// Emitted by the runtime after `on_finish`: `{}`.
    Close,
    /// A step was dispatched: `{step, executionId}`.
    StepStart,
    /// A step finished: `{step, success, results, executionId}`.
    StepComplete,
    /// A subtask was dispatched: `{step, subtask_index, agent, task, task_id, executionId}`.
    TaskRequest,
    /// A subtask finished: `{step, subtask_index, agent, task, outputs, success, taskId, error, errorCode, errorDetails, executionId}`.
    TaskResponse,
    /// A subtask changed status: `{step, subtask_index, agent, status}` (`running`, `success`, `failed`, `cancelled`).
    TaskStatusChanged,
    /// One per outgoing edge after all decisions: `{step, next, condition, conditional, allowed, reason}`.
    RouteDecision,
    /// Scheduling ended: `{success, executionId}`.
    WorkflowComplete,
    /// Content is about to be sent: `{agent, step, subtask_index, content}`.
    AgentRequest,
    /// A remote interaction ended: `{agent, step, subtask_index, response, receivedMessages}`.
    AgentResponse,
    /// A task state was observed: `{agent, taskId, state, is_final, message}`.
    AgentStatusUpdate,
    /// An artifact (delta) arrived: `{agent, taskId, artifact_id, artifact_name, append,
    /// last_chunk, text, metadata, artifact}` (`text`: its text parts, one per line).
    AgentArtifactUpdate,
    /// A bare message arrived: `{agent, role, text, metadata, message}` (`text`: its text parts,
    /// one per line).
    AgentMessageEvent,
    /// A valid Propose reached the host: `{agent, step, subtask_index, exchange, request,
    /// negotiationId, round, maxRounds, mode}` (`request`: the Propose as received; `mode`:
    /// `pre_task` or `in_task`).
    NegotiationRequest,
    /// A reply passed the checks and is sent: `{agent, step, subtask_index, exchange, reply}`.
    NegotiationResolved,
    /// A local negotiation failure: `{agent, step, subtask_index, exchange, errorType, error}`.
    NegotiationFailed,
    /// A fault of the network or the agent is retried: `{agent, step, subtask_index, taskId,
    /// attempt, reason, action, delay_ms}` (`action`: `resend`, `resubscribe`, `get_task` or
    /// `list_tasks`).
    AgentRetry,
    /// A failure: step failure `{step, results, error, errorCode}`, or run failure `{error, errorCode, history, step_outputs}`.
    Error,
    /// Reserved; never emitted on the workflow stream.
    AuthorizationRequest,
    /// Reserved; never emitted on the workflow stream.
    AuthorizationResolved,
    /// Reserved; never emitted on the workflow stream.
    Notification,
    /// An event the host injected through its event hook, with the payload it built; the
    /// engine itself never emits it.
    HostEvent,
}

impl EventType {
    /// The stable string of this type.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Start => "start",
            EventType::Complete => "complete",
            EventType::Close => "close",
            EventType::StepStart => "step_start",
            EventType::StepComplete => "step_complete",
            EventType::TaskRequest => "task_request",
            EventType::TaskResponse => "task_response",
            EventType::TaskStatusChanged => "task_status_changed",
            EventType::RouteDecision => "route_decision",
            EventType::WorkflowComplete => "workflow_complete",
            EventType::AgentRequest => "agent_request",
            EventType::AgentResponse => "agent_response",
            EventType::AgentStatusUpdate => "agent_status_update",
            EventType::AgentArtifactUpdate => "agent_artifact_update",
            EventType::AgentMessageEvent => "agent_message_event",
            EventType::NegotiationRequest => "negotiation_request",
            EventType::NegotiationResolved => "negotiation_resolved",
            EventType::NegotiationFailed => "negotiation_failed",
            EventType::AgentRetry => "agent_retry",
            EventType::Error => "error",
            EventType::AuthorizationRequest => "authorization_request",
            EventType::AuthorizationResolved => "authorization_resolved",
            EventType::Notification => "notification",
            EventType::HostEvent => "host_event",
        }
    }
}

impl core::fmt::Display for EventType {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which events a run builds and emits ([`crate::run::RunConfig::events`]).
///
/// Events are JSON payloads assembled per step and per subtask, and on a large workflow they are
/// most of the core's work. A run nobody watches can switch them off and pays nothing for them;
/// the [`crate::io::Output::Finished`] result is complete either way.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum EventSelection {
    /// Every event (the default).
    #[default]
    All,
    /// No event at all.
    None,
    /// Only events of these types, in the usual order.
    Only(Vec<EventType>),
}

impl EventSelection {
    /// Whether events of `kind` are built and emitted.
    pub fn includes(&self, kind: EventType) -> bool {
        match self {
            EventSelection::All => true,
            EventSelection::None => false,
            EventSelection::Only(kinds) => kinds.contains(&kind),
        }
    }

    /// The selection as a trace stores it: `None` for all, else the list of included types.
    pub fn to_list(&self) -> Option<Vec<EventType>> {
        match self {
            EventSelection::All => None,
            EventSelection::None => Some(Vec::new()),
            EventSelection::Only(kinds) => Some(kinds.clone()),
        }
    }

    /// The inverse of [`EventSelection::to_list`].
    pub fn from_list(list: Option<Vec<EventType>>) -> EventSelection {
        match list {
            None => EventSelection::All,
            Some(kinds) if kinds.is_empty() => EventSelection::None,
            Some(kinds) => EventSelection::Only(kinds),
        }
    }
}

/// One event: a stable type and its JSON payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// The event type.
    #[serde(rename = "type")]
    pub kind: EventType,
    /// The payload, shaped per type as documented on [`EventType`].
    pub data: EventData,
}

impl Event {
    /// Builds an event.
    pub fn new(kind: EventType, data: impl Into<EventData>) -> Self {
        Event {
            kind,
            data: data.into(),
        }
    }
}

/// The JSON payload of an event, read as a [`Value`] (it dereferences to one).
///
/// The engine builds the larger payloads (a step's results, a subtask's response, the final
/// history) the first time they are read, from data it shares with the run's result instead of
/// copying, so an event nobody reads costs almost nothing. The JSON is the same either way, and
/// it is built once: later reads and clones share it.
#[derive(Clone)]
pub struct EventData(Repr);

#[derive(Clone)]
enum Repr {
    Built(Value),
    Deferred(Arc<dyn Deferred>),
}

/// A payload built on first read.
trait Deferred: Send + Sync {
    fn value(&self) -> &Value;
}

struct Lazy<F> {
    built: OnceLock<Value>,
    build: F,
}

impl<F: Fn() -> Value + Send + Sync> Deferred for Lazy<F> {
    fn value(&self) -> &Value {
        self.built.get_or_init(&self.build)
    }
}

impl EventData {
    /// A payload that `build` produces when it is first read. `build` must depend only on what
    /// it owns (shared, immutable data), so the JSON is the same whenever it is read.
    pub(crate) fn deferred(build: impl Fn() -> Value + Send + Sync + 'static) -> EventData {
        EventData(Repr::Deferred(Arc::new(Lazy {
            built: OnceLock::new(),
            build,
        })))
    }

    /// The payload as JSON.
    pub fn value(&self) -> &Value {
        match &self.0 {
            Repr::Built(value) => value,
            Repr::Deferred(lazy) => lazy.value(),
        }
    }

    /// The payload as an owned [`Value`] (a copy when the payload is shared).
    pub fn into_value(self) -> Value {
        match self.0 {
            Repr::Built(value) => value,
            Repr::Deferred(lazy) => lazy.value().clone(),
        }
    }
}

impl Deref for EventData {
    type Target = Value;

    fn deref(&self) -> &Value {
        self.value()
    }
}

impl AsRef<Value> for EventData {
    fn as_ref(&self) -> &Value {
        self.value()
    }
}

impl From<Value> for EventData {
    fn from(value: Value) -> EventData {
        EventData(Repr::Built(value))
    }
}

impl From<EventData> for Value {
    fn from(data: EventData) -> Value {
        data.into_value()
    }
}

impl PartialEq for EventData {
    fn eq(&self, other: &EventData) -> bool {
        self.value() == other.value()
    }
}

impl PartialEq<Value> for EventData {
    fn eq(&self, other: &Value) -> bool {
        self.value() == other
    }
}

impl fmt::Debug for EventData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.value(), f)
    }
}

impl Serialize for EventData {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.value().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for EventData {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<EventData, D::Error> {
        Value::deserialize(deserializer).map(EventData::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn selection_round_trips_through_its_trace_list() {
        for selection in [
            EventSelection::All,
            EventSelection::None,
            EventSelection::Only(vec![EventType::Start, EventType::Complete]),
        ] {
            assert_eq!(EventSelection::from_list(selection.to_list()), selection);
        }
        let only = EventSelection::Only(vec![EventType::Error]);
        assert!(only.includes(EventType::Error));
        assert!(!only.includes(EventType::Complete));
        assert!(!EventSelection::None.includes(EventType::Start));
    }

    /// A deferred payload that counts how often it is built.
    fn counted(builds: &Arc<AtomicUsize>) -> EventData {
        let builds = Arc::clone(builds);
        EventData::deferred(move || {
            builds.fetch_add(1, Ordering::SeqCst);
            json!({"step": "a", "n": 1})
        })
    }

    #[test]
    fn a_deferred_payload_is_built_once_when_first_read_and_clones_share_it() {
        let builds = Arc::new(AtomicUsize::new(0));
        let data = counted(&builds);
        let copy = data.clone();
        assert_eq!(
            builds.load(Ordering::SeqCst),
            0,
            "built before anyone read it"
        );
        assert_eq!(data["step"], "a");
        assert_eq!(copy["n"], 1);
        assert_eq!(copy.value(), data.value());
        assert_eq!(builds.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_deferred_payload_reads_serialises_and_compares_as_its_json() {
        let builds = Arc::new(AtomicUsize::new(0));
        let expected = json!({"step": "a", "n": 1});
        let data = counted(&builds);
        assert_eq!(data, expected);
        assert_eq!(data, EventData::from(expected.clone()));
        assert_ne!(data, EventData::from(json!({"step": "b", "n": 1})));
        assert_ne!(data, json!(null));
        assert_eq!(data.as_ref(), &expected);
        assert_eq!(format!("{data:?}"), format!("{expected:?}"));
        assert_eq!(
            serde_json::to_string(&data).unwrap(),
            serde_json::to_string(&expected).unwrap()
        );
        assert_eq!(Value::from(data.clone()), expected);
        assert_eq!(data.into_value(), expected);
        assert_eq!(EventData::from(expected.clone()).into_value(), expected);
    }

    #[test]
    fn an_event_reads_back_from_its_json() {
        let builds = Arc::new(AtomicUsize::new(0));
        let event = Event::new(EventType::StepStart, counted(&builds));
        let text = serde_json::to_string(&event).unwrap();
        assert_eq!(text, r#"{"type":"step_start","data":{"step":"a","n":1}}"#);
        let back: Event = serde_json::from_str(&text).unwrap();
        assert_eq!(back, event);
        assert_eq!(back.data.value(), &json!({"step": "a", "n": 1}));
    }

    #[test]
    fn serialised_type_matches_the_stable_string() {
        for kind in [
            EventType::Start,
            EventType::TaskStatusChanged,
            EventType::AgentArtifactUpdate,
            EventType::NegotiationFailed,
            EventType::WorkflowComplete,
        ] {
            let v = serde_json::to_value(kind).unwrap();
            assert_eq!(v, Value::String(kind.as_str().into()));
        }
    }
}
