//! Events of a run: stable type strings with JSON payloads.
//!
//! Typical order: `start`; per step `step_start`; per subtask `task_request`,
//! `task_status_changed{running}`, `agent_request`, `agent_*` traffic, `[negotiation_*]`,
//! `agent_response`, `task_status_changed`, `task_response`; then `step_complete` (or `error`)
//! and `route_decision` once per outgoing edge; finally `workflow_complete`, `complete` or
//! `error`. The runtime adds `close` after the `on_finish` hook.

use serde::{Deserialize, Serialize};
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
    pub data: Value,
}

impl Event {
    /// Builds an event.
    pub fn new(kind: EventType, data: Value) -> Self {
        Event { kind, data }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
