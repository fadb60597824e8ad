//! The host contract: what the engine asks the host agent, and what the host answers.
//!
//! The engine owns scheduling, envelopes, correlation and waiting; the host owns content and
//! policy. Every decision point of a run is a [`HostRequest`] that the core emits as an output and
//! a [`HostReply`] that the driver feeds back. [`ControlPoint`] is the async trait a host
//! implements; it is defined here, without any runtime, so every runtime shares it.
//!
//! Unimplemented callbacks fail explicitly ([`HostError::missing_handler`]): there is no
//! echo-success, no implicit route approval and no automatic consent.

use core::future::Future;
use core::time::Duration;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::SharedStr;
use crate::a2a::assembly::convenience_text;
use crate::a2a::{Part, ReceivedMessage, RemoteTaskStatus, Task, TaskState};
use crate::a2at::{self, NegotiationContext, NegotiationContextError, Performative};
use crate::workflow::BusinessInput;

/// Final content of one message, produced by the host and sent unchanged by the engine.
///
/// It has no role, message id, task id, context id or auth headers: the engine owns the
/// envelope. A metadata key named `contextId` is business data and never overrides the envelope.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MessageContent {
    /// The parts, in order, with their own metadata.
    pub parts: Vec<Part>,
    /// Message-level metadata (A2A-T content travels here as flat keys).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub metadata: Map<String, Value>,
    /// Extension URIs this content activates; also sent as the `A2A-Extensions` header.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
}

/// Why a [`MessageContent`] cannot be sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ContentError {
    /// A2A requires at least one part.
    #[error("content has no parts (A2A requires at least one)")]
    NoParts,
    /// An extension URI is empty or whitespace.
    #[error("extension URI at position {0} is blank")]
    BlankExtension(usize),
}

impl MessageContent {
    /// One text part.
    pub fn text(text: impl Into<String>) -> Self {
        MessageContent {
            parts: vec![Part::text(text)],
            ..Default::default()
        }
    }

    /// The given parts, no metadata, no extensions.
    pub fn parts(parts: Vec<Part>) -> Self {
        MessageContent {
            parts,
            ..Default::default()
        }
    }

    /// Adds an activated extension URI (kept once, in insertion order).
    pub fn with_extension(mut self, uri: impl Into<String>) -> Self {
        let uri = uri.into();
        if !self.extensions.contains(&uri) {
            self.extensions.push(uri);
        }
        self
    }

    /// Sets one message-level metadata key.
    pub fn with_metadata(mut self, key: impl Into<String>, value: Value) -> Self {
        self.metadata.insert(key.into(), value);
        self
    }

    /// Whether the content lists `uri` among its activated extensions.
    pub fn activates(&self, uri: &str) -> bool {
        self.extensions.iter().any(|e| e == uri)
    }

    /// Checks the shape rules the engine enforces before sending.
    pub fn validate(&self) -> Result<(), ContentError> {
        if self.parts.is_empty() {
            return Err(ContentError::NoParts);
        }
        if let Some(i) = self.extensions.iter().position(|e| e.trim().is_empty()) {
            return Err(ContentError::BlankExtension(i));
        }
        Ok(())
    }

    /// The extensions with duplicates removed, first occurrence kept.
    pub fn unique_extensions(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::with_capacity(self.extensions.len());
        for e in &self.extensions {
            if !out.contains(e) {
                out.push(e.clone());
            }
        }
        out
    }
}

/// Everything the host needs to produce the content of one task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRequest {
    /// The run's execution id.
    pub execution_id: SharedStr,
    /// Logical task id: stable for `(execution id, step, subtask index)`; not a remote A2A id.
    pub task_id: SharedStr,
    /// The step this subtask belongs to.
    pub step_name: SharedStr,
    /// Index of the subtask within its step.
    pub subtask_index: u32,
    /// The agent the subtask addresses (for SELF_LOOP steps, informational).
    pub agent_name: SharedStr,
    /// The skill named by the workflow (informational).
    pub skill: SharedStr,
    /// The current instruction only (the subtask description); never upstream history.
    pub instruction: SharedStr,
    /// The current business input; `Text(description)` unless the workflow gave one.
    pub input: BusinessInput,
    /// The run's language hint ([`RunStart::language`](crate::run::RunStart::language)); empty
    /// when the host did not set one.
    pub language: SharedStr,
    /// The run's intent and the selected upstream results.
    pub workflow_input: WorkflowInput,
}

/// The run-level input and the upstream window selected by `context_from`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkflowInput {
    /// The runtime intent the host started the run with.
    pub runtime_intent: SharedStr,
    /// Complete results of the selected upstream steps, in selection order.
    pub upstream_results: Vec<UpstreamStepResult>,
}

/// The complete results of one upstream step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UpstreamStepResult {
    /// The upstream step.
    pub step_name: SharedStr,
    /// One entry per subtask, in subtask order. Each result is shared with the run's own
    /// record of it (and with every other request that carries it), so a window costs no copy
    /// of the results.
    pub task_results: Vec<Arc<TaskExecutionResult>>,
}

/// Outcome of one subtask.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Completed successfully.
    Success,
    /// Failed; see the error fields.
    Failed,
    /// Cancelled before it finished (the run was cancelled, or ANY_SUCCESS picked a peer).
    Cancelled,
}

impl TaskStatus {
    /// The stable string used in events and history.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Success => "success",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
        }
    }
}

/// The complete, typed result of one subtask.
///
/// Failures are in `error`, `error_code` and `error_details`, never in `outputs`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskExecutionResult {
    /// The step the subtask belongs to.
    pub step_name: SharedStr,
    /// Index of the subtask within its step.
    pub subtask_index: u32,
    /// The agent addressed.
    pub agent_name: SharedStr,
    /// The skill named by the workflow.
    pub skill: SharedStr,
    /// Logical task id (see [`TaskRequest::task_id`]).
    pub task_id: SharedStr,
    /// The subtask description.
    pub task_description: SharedStr,
    /// Success, failure or cancellation.
    pub status: TaskStatus,
    /// Convenience outputs: text and data from the result, in order, never flattened.
    pub outputs: Vec<Value>,
    /// The complete remote evidence, metadata kept per level. Empty for local results.
    pub received_messages: Vec<ReceivedMessage>,
    /// Human-readable failure message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Stable failure code, e.g. `a2a.task_not_found` or `workflow.timeout`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    /// Structured failure details (redacted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_details: Option<Value>,
    /// The remote A2A task id, when one was created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_task_id: Option<String>,
    /// The A2A context id used for this invocation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
}

impl TaskExecutionResult {
    /// The flat view of this subtask's remote send (see [`SendResult`]), derived from
    /// [`TaskExecutionResult::received_messages`] and the failure fields.
    pub fn send_result(&self) -> SendResult {
        SendResult::of(self)
    }
}

/// The flat per-send view of a remote subtask: the convenience text, the task as last seen,
/// its state, the metadata of every level flattened into one map, the failure and the
/// received messages. `text` and `metadata` are diagnostics: the received messages are the
/// full response and the only source of outputs.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SendResult {
    /// The text parts of the artifacts joined with `\n`; else the status message's text; else
    /// that of the standalone messages.
    pub text: String,
    /// The remote task as last seen (id, context, status with its message, artifacts,
    /// task metadata; no history); `None` when the agent answered with a bare message.
    #[serde(serialize_with = "task_json")]
    pub task: Option<Task>,
    /// The task's last state.
    #[serde(serialize_with = "state_name")]
    pub task_state: Option<TaskState>,
    /// Every metadata level in one map, a later level winning on the same key: task, then
    /// each artifact in order, then the status message, then each standalone message.
    pub metadata: Map<String, Value>,
    /// The stable failure code, when the subtask did not succeed.
    pub failure_code: Option<String>,
    /// The failure message, when the subtask did not succeed.
    pub failure_message: Option<String>,
    /// The complete response, each metadata level kept apart.
    pub received_messages: Vec<ReceivedMessage>,
}

impl SendResult {
    fn of(result: &TaskExecutionResult) -> SendResult {
        let received = &result.received_messages;
        let task_entry = received.iter().rev().find(|m| m.task_state.is_some());
        let standalone = received.iter().filter(|m| m.task_state.is_none());
        let mut metadata = Map::new();
        let mut merge = |level: Option<&Map<String, Value>>| {
            for (key, value) in level.into_iter().flatten() {
                metadata.insert(key.clone(), value.clone());
            }
        };
        if let Some(entry) = task_entry {
            merge(entry.task_metadata.as_ref());
            for artifact in &entry.artifacts {
                merge(artifact.metadata.as_ref());
            }
            merge(entry.message.as_ref().and_then(|m| m.metadata.as_ref()));
        }
        for entry in standalone.clone() {
            merge(entry.message.as_ref().and_then(|m| m.metadata.as_ref()));
        }
        let text = convenience_text(
            task_entry.map_or(&[][..], |t| &t.artifacts),
            task_entry.and_then(|t| t.message.as_ref()),
            standalone.filter_map(|m| m.message.as_ref()),
        );
        let task = task_entry.map(|entry| Task {
            id: entry.task_id.clone().unwrap_or_default(),
            context_id: entry.context_id.clone(),
            status: RemoteTaskStatus {
                state: entry.task_state.unwrap_or(TaskState::Unspecified),
                message: entry.message.clone(),
                timestamp: None,
            },
            artifacts: entry.artifacts.clone(),
            history: Vec::new(),
            metadata: entry.task_metadata.clone(),
        });
        SendResult {
            text,
            task_state: task_entry.and_then(|t| t.task_state),
            task,
            metadata,
            failure_code: result.error_code.clone(),
            failure_message: result.error.clone(),
            received_messages: received.clone(),
        }
    }
}

fn task_json<S: serde::Serializer>(task: &Option<Task>, ser: S) -> Result<S::Ok, S::Error> {
    task.as_ref().map(Task::to_json).serialize(ser)
}

fn state_name<S: serde::Serializer>(state: &Option<TaskState>, ser: S) -> Result<S::Ok, S::Error> {
    state.map(TaskState::as_str).serialize(ser)
}

/// The local result of an `on_self_task` call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TaskResult {
    /// Local outputs; an empty list is a valid result.
    Success {
        /// Outputs, nested structure kept.
        outputs: Vec<Value>,
    },
    /// A business failure; its text never mixes into outputs.
    Failure {
        /// Stable failure code chosen by the host.
        code: String,
        /// Human-readable message.
        message: String,
    },
}

impl TaskResult {
    /// A successful local result.
    pub fn success(outputs: Vec<Value>) -> Self {
        TaskResult::Success { outputs }
    }

    /// A failed local result.
    pub fn failure(code: impl Into<String>, message: impl Into<String>) -> Self {
        TaskResult::Failure {
            code: code.into(),
            message: message.into(),
        }
    }
}

/// The question asked for one conditional edge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RouteRequest {
    /// The run's execution id.
    pub execution_id: SharedStr,
    /// The source step of the edge.
    pub step_name: SharedStr,
    /// The target of the edge (a step name or a terminal marker).
    pub next_step: String,
    /// The edge's (non-blank) condition text.
    pub condition: String,
    /// The same upstream window the source step received.
    pub workflow_input: WorkflowInput,
    /// The source step's own results, shared like [`UpstreamStepResult::task_results`].
    pub current_results: Vec<Arc<TaskExecutionResult>>,
}

/// The host's answer for one conditional edge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RouteDecision {
    /// Whether the edge activates.
    pub allowed: bool,
    /// Optional explanation, copied into the `route_decision` event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl RouteDecision {
    /// Activate the edge.
    pub fn allow(reason: Option<String>) -> Self {
        RouteDecision {
            allowed: true,
            reason,
        }
    }

    /// Do not activate the edge.
    pub fn deny(reason: Option<String>) -> Self {
        RouteDecision {
            allowed: false,
            reason,
        }
    }
}

/// One completed negotiation exchange of the current session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Exchange {
    /// What the agent sent (the Propose).
    pub received: ReceivedMessage,
    /// What the host answered and the engine sent.
    pub reply: MessageContent,
}

/// A remote task asks for input without Negotiation-T (a plain `INPUT_REQUIRED`); see
/// [`ControlPoint::on_input_required`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputRequest {
    /// The original task request, shared with the engine's record of the subtask.
    pub task: Arc<TaskRequest>,
    /// The agent's task id.
    pub remote_task_id: String,
    /// The complete current response asking for input (its status message, when any).
    pub received: ReceivedMessage,
    /// How many follow-ups the host already sent on this task.
    pub previous_replies: u32,
    /// Time left in the task's budget.
    pub remaining_wait: Duration,
}

/// The host's decision on a plain `INPUT_REQUIRED`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum InputDecision {
    /// Send this content as a follow-up message on the same task (same `taskId` and
    /// `contextId`), unchanged; the engine then observes the task again.
    Reply {
        /// The follow-up content.
        content: MessageContent,
    },
    /// Do not answer: the task fails with `a2a.unsupported_task_state` and is cancelled.
    Decline,
}

/// A valid Negotiation-T Propose reached the host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NegotiationRequest {
    /// The original task request, shared with the engine's record of the subtask.
    pub task: Arc<TaskRequest>,
    /// The exact content first submitted for this task.
    pub original_submission: MessageContent,
    /// The complete current response carrying the Propose.
    pub received: ReceivedMessage,
    /// This session's completed exchanges, oldest first.
    pub previous_exchanges: Vec<Exchange>,
    /// Time left in the task's budget.
    pub remaining_wait: Duration,
}

impl NegotiationRequest {
    /// The received negotiation context, read across the message, task and artifact metadata
    /// layers. The engine only delivers requests whose context is a valid Propose.
    pub fn context(&self) -> Result<NegotiationContext, NegotiationContextError> {
        a2at::context_of(&self.received)?.ok_or(NegotiationContextError::Absent)
    }

    /// Builds a reply with the same negotiation `id`, `round` and `maxRounds`, the given
    /// terminal performative, `text` as both the text part and the Negotiation-T content, and
    /// the matching template (`Negotiation-T/<type>/accept-reject/v1`, or
    /// `Negotiation-T/common/abort/v1` for an Abort).
    ///
    /// A real host renders the text with its A2A-T client; this helper only assembles the
    /// envelope-independent content so hosts and tests need not repeat the metadata rules.
    pub fn reply(
        &self,
        performative: Performative,
        text: &str,
    ) -> Result<MessageContent, NegotiationContextError> {
        let context = self.context()?.with_performative(performative);
        let template = match performative {
            Performative::Abort => "Negotiation-T/common/abort/v1".to_owned(),
            _ => {
                let kind = received_template(&self.received)
                    .and_then(|t| {
                        let mut parts = t.split('/');
                        (parts.next() == Some("Negotiation-T"))
                            .then(|| parts.next())
                            .flatten()
                            .map(str::to_owned)
                    })
                    .filter(|k| k != "common")
                    .unwrap_or_else(|| "information-negotiation".to_owned());
                format!("Negotiation-T/{kind}/accept-reject/v1")
            }
        };
        Ok(MessageContent::text(text)
            .with_extension(a2at::NEGOTIATION_T_URI)
            .with_metadata(a2at::NEGOTIATION_T_URI, Value::String(text.to_owned()))
            .with_metadata(a2at::TEMPLATE_URI_KEY, Value::String(template))
            .with_metadata(a2at::NEGOTIATION_CONTEXT_KEY, context.to_json()))
    }
}

fn received_template(received: &ReceivedMessage) -> Option<&str> {
    let layers = received
        .message
        .iter()
        .filter_map(|m| m.metadata.as_ref())
        .chain(received.task_metadata.iter())
        .chain(
            received
                .artifacts
                .iter()
                .filter_map(|a| a.metadata.as_ref()),
        );
    for layer in layers {
        if let Some(t) = layer.get(a2at::TEMPLATE_URI_KEY).and_then(Value::as_str) {
            return Some(t);
        }
    }
    None
}

/// The host's answer to a Propose.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum NegotiationReply {
    /// Send exactly this content (an Accept, Reject or Abort made by the host).
    Send {
        /// The reply content.
        content: MessageContent,
    },
    /// Stop locally with this code; no Abort content is generated.
    Stop {
        /// Stable failure code (non-blank).
        code: String,
        /// Reason (non-blank).
        reason: String,
    },
}

/// A failed host callback.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("{code}: {message}")]
pub struct HostError {
    /// Stable code: the host's business code, or `host.*` for engine-detected problems.
    pub code: String,
    /// Message safe to log.
    pub message: String,
    /// Optional structured details safe to log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

impl HostError {
    /// A business failure with the host's own code.
    pub fn business(code: impl Into<String>, message: impl Into<String>) -> Self {
        HostError {
            code: code.into(),
            message: message.into(),
            details: None,
        }
    }

    /// The host registered no handler for `callback`.
    pub fn missing_handler(callback: &str) -> Self {
        HostError {
            code: codes::HOST_HANDLER_MISSING.into(),
            message: format!("{callback} handler is required but the host did not provide one"),
            details: None,
        }
    }

    /// The callback panicked; the message carries no payload text so secrets cannot leak.
    pub fn panicked(callback: &str) -> Self {
        HostError {
            code: codes::HOST_CALLBACK_PANICKED.into(),
            message: format!("{callback} callback panicked"),
            details: None,
        }
    }
}

/// A question for the host, emitted as [`Output::CallHost`](crate::Output::CallHost).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "callback", rename_all = "snake_case")]
pub enum HostRequest {
    /// `on_task`: produce the final content of a remote task. The request is shared with the
    /// engine, which keeps it for the subtask's later questions and its result.
    Task(Arc<TaskRequest>),
    /// `on_self_task`: handle a SELF_LOOP subtask locally.
    SelfTask(Box<TaskRequest>),
    /// `on_route`: allow or deny one conditional edge.
    Route(Box<RouteRequest>),
    /// `on_negotiation`: answer a valid Propose.
    Negotiation(Box<NegotiationRequest>),
    /// `on_input_required`: answer or decline a plain `INPUT_REQUIRED`.
    InputRequired(Box<InputRequest>),
}

impl HostRequest {
    /// The callback's name, as used in messages.
    pub fn callback_name(&self) -> &'static str {
        match self {
            HostRequest::Task(_) => "on_task",
            HostRequest::SelfTask(_) => "on_self_task",
            HostRequest::Route(_) => "on_route",
            HostRequest::Negotiation(_) => "on_negotiation",
            HostRequest::InputRequired(_) => "on_input_required",
        }
    }
}

/// The host's answer, fed back as [`Input::HostReply`](crate::Input::HostReply).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "callback", content = "result", rename_all = "snake_case")]
pub enum HostReply {
    /// Answer to `on_task`.
    Task(Result<MessageContent, HostError>),
    /// Answer to `on_self_task`.
    SelfTask(Result<TaskResult, HostError>),
    /// Answer to `on_route`.
    Route(Result<RouteDecision, HostError>),
    /// Answer to `on_negotiation`.
    Negotiation(Result<NegotiationReply, HostError>),
    /// Answer to `on_input_required`.
    InputRequired(Result<InputDecision, HostError>),
}

impl HostReply {
    /// The failed answer of the right kind for `request`.
    pub fn failure_for(request: &HostRequest, error: HostError) -> HostReply {
        HostReply::failure_maker(request)(error)
    }

    /// What [`HostReply::failure_for`] does for `request`, kept apart from the request so a
    /// failure can be built later, after the request was moved into the callback.
    pub(crate) fn failure_maker(request: &HostRequest) -> fn(HostError) -> HostReply {
        match request {
            HostRequest::Task(_) => |error| HostReply::Task(Err(error)),
            HostRequest::SelfTask(_) => |error| HostReply::SelfTask(Err(error)),
            HostRequest::Route(_) => |error| HostReply::Route(Err(error)),
            HostRequest::Negotiation(_) => |error| HostReply::Negotiation(Err(error)),
            HostRequest::InputRequired(_) => |error| HostReply::InputRequired(Err(error)),
        }
    }
}

/// The business callbacks of a host agent.
///
/// Callbacks may run concurrently (several edges of one step, several subtasks), so
/// implementations must not keep a shared "current task". Every method has a default that fails
/// with [`HostError::missing_handler`]; implement only what your workflows need.
///
/// The runtimes poll a callback's future once on the run's own task, where the call is made:
/// an answer ready at once costs no task of its own. A future that is not ready goes on in a
/// task of its own. So the first poll should not block its thread or do long work before its
/// first `.await`: until it returns, the run does nothing else (the requests of the same turn
/// are sent after it). Blocking work belongs on a blocking pool, behind an `.await`.
pub trait ControlPoint: Send + Sync {
    /// Produce the final content for a remote subtask. Must not send anything itself.
    ///
    /// The request is shared with the engine (it keeps it for the subtask's later questions),
    /// so the callback reads it in place or keeps it without a copy.
    fn on_task(
        &self,
        request: Arc<TaskRequest>,
    ) -> impl Future<Output = Result<MessageContent, HostError>> + Send {
        let _ = request;
        core::future::ready(Err(HostError::missing_handler("on_task")))
    }

    /// Handle a SELF_LOOP subtask locally.
    fn on_self_task(
        &self,
        request: TaskRequest,
    ) -> impl Future<Output = Result<TaskResult, HostError>> + Send {
        let _ = request;
        core::future::ready(Err(HostError::missing_handler("on_self_task")))
    }

    /// Allow or deny one conditional edge.
    fn on_route(
        &self,
        request: RouteRequest,
    ) -> impl Future<Output = Result<RouteDecision, HostError>> + Send {
        let message = format!(
            "on_route handler is required for edge {} -> {}",
            request.step_name, request.next_step
        );
        core::future::ready(Err(HostError {
            code: codes::HOST_HANDLER_MISSING.into(),
            message,
            details: None,
        }))
    }

    /// Answer a valid Negotiation-T Propose with `Send` or `Stop`.
    fn on_negotiation(
        &self,
        request: NegotiationRequest,
    ) -> impl Future<Output = Result<NegotiationReply, HostError>> + Send {
        let _ = request;
        core::future::ready(Err(HostError::missing_handler("on_negotiation")))
    }

    /// Decide on a plain `INPUT_REQUIRED` (the task asks for input without Negotiation-T):
    /// answer with a follow-up message on the same task, or decline (the default: the task
    /// fails with `a2a.unsupported_task_state`). Only asked when the run allows follow-ups
    /// ([`RunConfig::max_input_replies`](crate::RunConfig::max_input_replies)); each answer
    /// counts against that limit and the task's budget.
    fn on_input_required(
        &self,
        request: InputRequest,
    ) -> impl Future<Output = Result<InputDecision, HostError>> + Send {
        let _ = request;
        core::future::ready(Ok(InputDecision::Decline))
    }
}

/// Routes one [`HostRequest`] to the matching [`ControlPoint`] method.
pub async fn answer<C: ControlPoint + ?Sized>(
    control_point: &C,
    request: HostRequest,
) -> HostReply {
    match request {
        HostRequest::Task(r) => HostReply::Task(control_point.on_task(r).await),
        HostRequest::SelfTask(r) => HostReply::SelfTask(control_point.on_self_task(*r).await),
        HostRequest::Route(r) => HostReply::Route(control_point.on_route(*r).await),
        HostRequest::Negotiation(r) => {
            HostReply::Negotiation(control_point.on_negotiation(*r).await)
        }
        HostRequest::InputRequired(r) => {
            HostReply::InputRequired(control_point.on_input_required(*r).await)
        }
    }
}

/// Stable failure codes produced by the engine itself.
///
/// Remote protocol rejections use `a2a.<reason>` (see [`crate::a2a`]); these are the others.
pub mod codes {
    /// A remote task ended FAILED.
    pub const REMOTE_TASK_FAILED: &str = "remote.task_failed";
    /// A remote task ended CANCELED.
    pub const REMOTE_TASK_CANCELED: &str = "remote.task_canceled";
    /// A remote task ended REJECTED.
    pub const REMOTE_TASK_REJECTED: &str = "remote.task_rejected";
    /// The exchange failed at the transport level (connect, TLS, I/O) or the agent never answered.
    pub const REMOTE_NO_RESPONSE: &str = "remote.no_response";
    /// The engine restarted while a message was being sent, and the agent could not be asked
    /// (`ListTasks`) whether it became a task: the message is not sent again blindly.
    pub const RUN_RESUME_AMBIGUOUS: &str = "run.resume_ambiguous";
    /// The remote task or context identity changed between replies.
    pub const REMOTE_IDENTITY_CHANGED: &str = "remote.identity_changed";
    /// A non-final state the engine cannot continue (AUTH_REQUIRED, INPUT_REQUIRED without a Propose).
    pub const UNSUPPORTED_TASK_STATE: &str = "a2a.unsupported_task_state";
    /// A stream closed before any A2A event, or carried no payload.
    pub const EMPTY_STREAM: &str = "a2a.empty_stream";
    /// The task's budget (content, send, wait and negotiation) expired.
    pub const TIMEOUT: &str = "workflow.timeout";
    /// The run was cancelled, or ANY_SUCCESS picked a peer.
    pub const CANCELLED: &str = "workflow.cancelled";
    /// A host callback failed without a business code.
    pub const EXECUTION_FAILED: &str = "workflow.execution_failed";
    /// A step failed; the run stops scheduling.
    pub const STEP_FAILED: &str = "workflow.step_failed";
    /// An `on_route` call failed, timed out or was missing.
    pub const ROUTE_FAILED: &str = "workflow.route_failed";
    /// Steps can never become ready; unreachable for a validated DAG, kept as a guard.
    pub const DEADLOCK: &str = "workflow.deadlock";
    /// A subtask names an agent without a card.
    pub const AGENT_NOT_FOUND: &str = "workflow.agent_not_found";
    /// The host's content cannot be sent (no parts, blank extension, Task-T inconsistency, a
    /// required extension not activated).
    pub const INVALID_CONTENT: &str = "workflow.invalid_content";
    /// The host registered no handler for a callback that was needed.
    pub const HOST_HANDLER_MISSING: &str = "host.handler_missing";
    /// A host callback panicked.
    pub const HOST_CALLBACK_PANICKED: &str = "host.callback_panicked";
    /// The local negotiation exchange budget was exhausted.
    pub const NEGOTIATION_BUDGET_EXHAUSTED: &str = "negotiation.budget_exhausted";
    /// A Propose or its reply broke a Negotiation-T rule.
    pub const NEGOTIATION_INVALID: &str = "negotiation.invalid";
    /// The host sent an Abort; never a task success.
    pub const NEGOTIATION_ABORTED: &str = "negotiation.aborted";
}
