//! Authorization-T and Notification-T: operations independent of any workflow.
//!
//! Two sans-IO machines, with the same contract as [`Run`](crate::Run): feed [`Input`]s with
//! [`handle`](Authorization::handle) and the time they happened, drain outputs with
//! `poll_output`, and call `handle_timeout` when the clock reaches `poll_timeout`. They reuse the
//! protocol codecs ([`encode_call`](crate::a2a::encode_call), [`ResponseDecoder`], [`ResponseAccumulator`]) but never a
//! workflow [`Run`](crate::Run), its transport or its context id: each operation draws its own
//! fresh `contextId` from its own seeded [`IdGenerator`], and its outcome goes only to
//! the caller, never to a workflow, a `ControlPoint` or the workflow event stream.
//!
//! * [`Authorization`]: one blocking `SendMessage` (never streaming), `GetTask` polling while
//!   the task is SUBMITTED/WORKING, one [`AuthorizationResult`].
//! * [`Notification`]: one long-lived `SendStreamingMessage` (a unary `SendMessage` when the
//!   card says `streaming: false`), a real acknowledgement, every event delivered, bounded
//!   reattachment with `SubscribeToTask`.
//!
//! ## Preconditions
//!
//! Both constructors check, before any output exists: the agent is in the directory; the
//! content is valid (at least one part, no blank extension URI); it **activates** the matching
//! extension ([`a2at::activates`]: the URI in `extensions` *and* as a metadata key); the card
//! declares that extension; every extension the content activates is declared by the card; and
//! every extension the card marks `required` is activated. A violation is a
//! [`PreconditionError`], and no machine is built.
//!
//! ## Authorization rules
//!
//! * One `SendMessage` with the host's content, unchanged, on a fresh `contextId`.
//! * While the task is SUBMITTED or WORKING, `GetTask` every [`ExtensionConfig::poll_interval`],
//!   all within [`ExtensionConfig::send_budget`] (one budget for send and waiting).
//! * Success only on COMPLETED or on a bare message.
//! * Failure: FAILED / CANCELED / REJECTED (`remote.task_failed` / `_canceled` / `_rejected`);
//!   INPUT_REQUIRED, AUTH_REQUIRED or an unknown state (`a2a.unsupported_task_state`); a
//!   rejection before the task was created (`a2a.<reason>`, see [`crate::a2a::error`]); bad
//!   bytes (`a2a.invalid_agent_response`, …); a transport failure (`remote.no_response`); a
//!   changed task or context id (`remote.identity_changed`); an answer without state
//!   (`a2a.empty_stream`); budget expiry ([`codes::TIMEOUT`]); [`Input::Cancel`]
//!   ([`codes::CANCELLED`]).
//! * Faults follow [`crate::retry`] with [`ExtensionConfig::retry`], exactly as for a workflow
//!   subtask: a send that provably never reached the agent goes again unchanged (same
//!   `messageId`), a broken `GetTask` is made again, and a send whose answer was lost (bytes
//!   sent, no task id) is looked up with `ListTasks` by the authorization's context id: the
//!   task found there is followed, none fails the authorization with the send's own fault. It
//!   is never resent.
//! * A failure with a known non-final remote task sends one `CancelTask` cleanup, bounded by
//!   [`ExtensionConfig::cancel_budget`]. A send given up on before its task id was known is
//!   still read for that long, so a task the agent creates late is cancelled too. Neither
//!   changes the result; the machine is [done](Authorization::is_done) once both ended.
//! * The budget, polling, retries and cleanup are the workflow subtask's own machinery (one
//!   remote task driven on this machine's private clock and ids), so both follow one set of
//!   rules.
//!
//! ## Notification rules
//!
//! * **Acknowledgement**: the first event carrying a concrete task state (a task snapshot
//!   or a status update whose state is not unspecified/unknown) settles it: FAILED, CANCELED or
//!   REJECTED fail it (`remote.task_*`), any other state confirms it. An artifact update or a bare
//!   message alone does not. [`ExtensionConfig::ack_timeout`] (default 300 s) bounds the
//!   wait for it, across reattachments; it never bounds anything after the acknowledgement.
//!   When it fires, the acknowledgement fails ([`codes::ACK_TIMEOUT`]) and the stream is
//!   closed: never a synthesised success.
//! * A failed acknowledgement by state does **not** close the stream: the event is still
//!   delivered, and the subscription ends when the agent ends the stream or the host closes it.
//! * **Delivery**: every event becomes one [`NotificationOutput::Delivered`] with the
//!   complete [`ReceivedMessage`]: a bare message as itself; a task snapshot, status update (with
//!   its message) or artifact update as the subscription's assembled task view (deltas
//!   merged by artifact id, snapshots authoritative). The accumulator belongs to this
//!   subscription only.
//! * **Terminal states do not close the subscription.** Only the host (close) or the end
//!   of the stream does.
//! * **End of stream**: when the stream ends or drops (transport failure) while the task is
//!   known and not terminal, the machine reattaches with `SubscribeToTask(taskId)` by the
//!   rules of [`crate::retry`] with [`ExtensionConfig::reattach`] (jittered doubling backoff),
//!   at most `reattach.attempts` times in a row (the count restarts when a reattached stream delivers an event; events in
//!   between may be lost). The first event of a reattached stream is preceded by
//!   [`NotificationOutput::Reattached`]. When the attempts are used up, the subscription fails
//!   ([`codes::REATTACH_EXHAUSTED`]). When the task is terminal (or unknown) and the stream
//!   ends, the subscription completes ([`SubscriptionEnd::Completed`]); if it was never
//!   acknowledged, it fails instead ([`codes::NO_ACKNOWLEDGEMENT`], or `a2a.empty_stream` when
//!   the first stream carried no event at all).
//! * Without streaming (`capabilities.streaming` false) the single unary answer is the
//!   acknowledgement and the whole stream; there is no reattachment.
//! * A rejection or malformed bytes on the stream, a changed task/context id, or a transport
//!   failure before a task is known fail the subscription.
//! * **Close**: [`Input::Cancel`] (or [`Notification::close`]) aborts the exchange, fails a
//!   pending acknowledgement ([`codes::CLOSED_BEFORE_ACK`], "closed before acknowledgement")
//!   and ends with [`SubscriptionEnd::Closed`]. It is idempotent. No `CancelTask` is sent: there
//!   is no unsubscribe RPC, dropping the connection is the unsubscription (a2a-wire §8.7).
//!
//! ## After the end
//!
//! Once a machine is done, inputs (late responses, repeated closes) are ignored; only time
//! going backwards is an [`ApiMisuse`].

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use core::time::Duration;

use serde_json::{Value, json};

use crate::a2a::CallKind;
use crate::a2a::{
    A2aCall, DecodeLimits, Message, ReceivedMessage, ResponseAccumulator, ResponseDecoder,
    ResponseItem, Role, SendMessageConfiguration, SendMessageRequest, StreamResponse, TaskState,
    check_required_extensions,
};
use crate::a2at;
use crate::agents::{AgentDirectory, AgentEntry};
use crate::config::RunConfig;
use crate::event::EventSelection;
use crate::exchange::{self, ExchangeSpec};
use crate::host::{self, MessageContent};
use crate::host::{TaskExecutionResult, TaskRequest, TaskStatus, WorkflowInput};
use crate::ids::{IdGenerator, OpId};
use crate::ids::{StepId, TaskKey};
use crate::io::Output;
use crate::io::{ApiMisuse, Correlation, HttpRequest, Input, OpPurpose, TransportError};
use crate::machine::{Ctx, TimerKey};
use crate::remote::{self, Env, Invocation, Routed};
use crate::retry::{Attempts, Fault, RetryAttempt, RetryPolicy};
use crate::time::Timestamp;
use crate::tracectx::TraceContext;
use crate::workflow::BusinessInput;

/// Failure codes of the extension machines (besides the shared `a2a.*` and `remote.*` codes).
pub mod codes {
    /// The authorization's send budget expired.
    pub const TIMEOUT: &str = "extension.timeout";
    /// The caller cancelled the authorization.
    pub const CANCELLED: &str = "extension.cancelled";
    /// No acknowledgement within the ACK timeout.
    pub const ACK_TIMEOUT: &str = "extension.ack_timeout";
    /// The host closed the subscription before it was acknowledged.
    pub const CLOSED_BEFORE_ACK: &str = "extension.closed_before_acknowledgement";
    /// The stream ended without any event carrying a task state.
    pub const NO_ACKNOWLEDGEMENT: &str = "extension.no_acknowledgement";
    /// Reattaching with `SubscribeToTask` failed too many times in a row.
    pub const REATTACH_EXHAUSTED: &str = "extension.reattach_exhausted";
}

/// Budgets and the id seed of one extension operation.
#[derive(Debug, Clone, PartialEq)]
pub struct ExtensionConfig {
    /// Seed of the id generator (context, message and JSON-RPC ids).
    pub seed: u64,
    /// Authorization: one budget for the send and the `GetTask` polling (default 600 s).
    pub send_budget: Duration,
    /// Authorization: delay between `GetTask` observations (default 250 ms).
    pub poll_interval: Duration,
    /// Authorization: budget of the `CancelTask` cleanup (default 5 s).
    pub cancel_budget: Duration,
    /// Notification: wait for the first acknowledgement (default 300 s).
    pub ack_timeout: Duration,
    /// Notification: how a stream that ended or broke before the task was final is found
    /// again with `SubscribeToTask`: attempts in a row and the backoff between them, with the
    /// same jittered doubling delays as [`ExtensionConfig::retry`] (default: 3 attempts,
    /// 1 s doubling to 4 s; `attempts: 0` never reattaches).
    pub reattach: RetryPolicy,
    /// `historyLength` sent with sends and polls (default `Some(0)`).
    pub history_length: Option<i32>,
    /// Size limits for decoding responses.
    pub decode_limits: DecodeLimits,
    /// Authorization: how faults of the network or of an overloaded agent are retried (the
    /// same rules as for workflow subtasks; default: five consecutive attempts).
    pub retry: RetryPolicy,
}

impl Default for ExtensionConfig {
    fn default() -> Self {
        ExtensionConfig {
            seed: 0,
            send_budget: Duration::from_secs(600),
            poll_interval: Duration::from_millis(250),
            cancel_budget: Duration::from_secs(5),
            ack_timeout: Duration::from_secs(300),
            reattach: RetryPolicy {
                attempts: 3,
                base_delay: Duration::from_secs(1),
                max_delay: Duration::from_secs(4),
            },
            history_length: Some(0),
            decode_limits: DecodeLimits::default(),
            retry: RetryPolicy::default(),
        }
    }
}

impl ExtensionConfig {
    /// Checks every setting: the send budget, poll interval, cancel budget and acknowledgement
    /// timeout must be positive, the decode limits at least 1, a history length not negative
    /// and both retry policies usable; the error names the setting.
    pub fn validate(&self) -> Result<(), crate::run::ConfigError> {
        crate::config::check_durations(&[
            ("send_budget", self.send_budget),
            ("poll_interval", self.poll_interval),
            ("cancel_budget", self.cancel_budget),
            ("ack_timeout", self.ack_timeout),
        ])?;
        crate::config::check_limits(&[
            (
                "decode_limits.max_event_bytes",
                self.decode_limits.max_event_bytes,
            ),
            (
                "decode_limits.max_body_bytes",
                self.decode_limits.max_body_bytes,
            ),
        ])?;
        crate::config::check_history(self.history_length)?;
        self.reattach
            .validate()
            .map_err(crate::config::ConfigError::Reattach)?;
        Ok(self.retry.validate()?)
    }
}

/// Why an extension operation cannot start (checked before any output).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PreconditionError {
    /// No card for the agent.
    #[error("Agent not found: {0}")]
    AgentNotFound(String),
    /// The content does not activate the operation's extension.
    #[error("the content does not activate {uri}: it must be in extensions and a metadata key")]
    NotActivated {
        /// The extension URI.
        uri: &'static str,
    },
    /// The agent's card does not declare an extension the operation needs or the content
    /// activates.
    #[error("agent {agent} does not declare the extension {uri}")]
    NotDeclared {
        /// The agent.
        agent: String,
        /// The extension URI.
        uri: String,
    },
    /// The content cannot be sent (no parts, blank extension, required extension missing).
    #[error("invalid content: {0}")]
    InvalidContent(String),
}

impl PreconditionError {
    /// The stable code: `workflow.agent_not_found` or `workflow.invalid_content`.
    pub fn code(&self) -> &'static str {
        match self {
            PreconditionError::AgentNotFound(_) => host::codes::AGENT_NOT_FOUND,
            _ => host::codes::INVALID_CONTENT,
        }
    }
}

/// A failure decided by an extension machine.
#[derive(Debug, Clone, PartialEq)]
pub struct ExtensionFailure {
    /// Stable code ([`codes`], `a2a.<reason>`, `remote.*`).
    pub code: String,
    /// Human-readable message.
    pub message: String,
    /// Structured evidence (HTTP status, JSON-RPC code, reason, state), when any.
    pub details: Option<Value>,
}

impl ExtensionFailure {
    fn new(code: &str, message: impl Into<String>) -> Self {
        ExtensionFailure {
            code: code.to_owned(),
            message: message.into(),
            details: None,
        }
    }

    fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }
}

impl core::fmt::Display for ExtensionFailure {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

// ----- shared plumbing -----

/// What one input meant for a machine.
enum Feed {
    Nothing,
    Items(OpId, Vec<ResponseItem>),
    Failed(OpId, TransportError),
    Cancel,
}

/// One operation's link to its agent: its own ids, context id, exchanges and clock.
#[derive(Debug)]
struct Link {
    agent: AgentEntry,
    operation: &'static str,
    context_id: String,
    ids: IdGenerator,
    /// The operation's own trace (from its seed): every exchange is a span of it.
    trace: TraceContext,
    next_op: u64,
    ops: BTreeMap<OpId, ResponseDecoder>,
    now: Timestamp,
    config: ExtensionConfig,
    remote_task_id: Option<String>,
}

impl Link {
    fn build(
        agents: &AgentDirectory,
        agent: &str,
        content: &MessageContent,
        uri: &'static str,
        operation: &'static str,
        config: ExtensionConfig,
    ) -> Result<Link, PreconditionError> {
        let entry = agents
            .get(agent)
            .ok_or_else(|| PreconditionError::AgentNotFound(agent.to_owned()))?;
        check_content(content, entry, uri)?;
        let mut ids = IdGenerator::new(config.seed);
        let context_id = ids.next_uuid();
        Ok(Link {
            agent: entry.clone(),
            operation,
            context_id,
            ids,
            trace: TraceContext::new(config.seed, None, None),
            next_op: 0,
            ops: BTreeMap::new(),
            now: Timestamp::ZERO,
            config,
            remote_task_id: None,
        })
    }

    fn send_request(&mut self, content: &MessageContent) -> SendMessageRequest {
        let message = Message {
            message_id: self.ids.next_uuid(),
            context_id: Some(self.context_id.clone()),
            task_id: None,
            role: Role::User,
            parts: content.parts.clone(),
            metadata: (!content.metadata.is_empty()).then(|| content.metadata.clone()),
            extensions: content.unique_extensions(),
            reference_task_ids: Vec::new(),
        };
        SendMessageRequest {
            tenant: self.agent.endpoint.tenant.clone(),
            message,
            configuration: Some(SendMessageConfiguration {
                accepted_output_modes: Vec::new(),
                history_length: self.config.history_length,
                return_immediately: false,
            }),
            metadata: None,
        }
    }

    /// Encodes `call`, registers its decoder and returns the request to transmit; `timeout` is
    /// the time left for it (gRPC sends it as `grpc-timeout`). A message the binding cannot
    /// carry is an [`host::codes::INVALID_CONTENT`] failure and opens nothing.
    fn open(
        &mut self,
        call: &A2aCall<'_>,
        purpose: OpPurpose,
        extensions: &[String],
        timeout: Option<Duration>,
    ) -> Result<HttpRequest, ExtensionFailure> {
        let rpc_id = self.ids.next_uuid();
        let op = OpId(self.next_op + 1);
        let spec = ExchangeSpec {
            op,
            rpc_id,
            purpose,
            extensions,
            timeout,
            limits: self.config.decode_limits,
            correlation: Arc::new(Correlation {
                execution_id: "".into(),
                step: self.operation.into(),
                subtask_index: 0,
                logical_task_id: "".into(),
                context_id: self.context_id.clone(),
                remote_task_id: self.remote_task_id.clone(),
            }),
            trace: &self.trace,
        };
        let (request, decoder) = exchange::open(&self.agent, call, spec)
            .map_err(|e| ExtensionFailure::new(host::codes::INVALID_CONTENT, e.to_string()))?;
        self.next_op = op.0;
        self.ops.insert(op, decoder);
        Ok(request)
    }

    /// Forgets an exchange; `true` when it was still open (the driver must drop it).
    fn forget(&mut self, op: OpId) -> bool {
        self.ops.remove(&op).is_some()
    }

    fn advance(&mut self, now: Timestamp) -> Result<(), ApiMisuse> {
        if now < self.now {
            return Err(ApiMisuse::TimeWentBackwards {
                last: self.now,
                now,
            });
        }
        self.now = now;
        Ok(())
    }

    /// Runs the input through the exchange's decoder. An exchange whose items include the
    /// final `End` (or that failed) is forgotten here.
    fn feed(&mut self, input: Input) -> Feed {
        if let Some(op) = exchange::response_op(&input) {
            let Some(decoder) = self.ops.get_mut(&op) else {
                return Feed::Nothing;
            };
            let ended = matches!(input, Input::ResponseEnd { .. });
            let items = exchange::decode(decoder, input);
            if ended {
                self.ops.remove(&op);
                return Feed::Items(op, items);
            }
            return if items.is_empty() {
                Feed::Nothing
            } else {
                Feed::Items(op, items)
            };
        }
        match input {
            Input::TransportFailed { op, error } => {
                if self.ops.remove(&op).is_some() {
                    Feed::Failed(op, error)
                } else {
                    Feed::Nothing
                }
            }
            Input::Cancel => Feed::Cancel,
            _ => Feed::Nothing,
        }
    }

    /// Task/context identity checks for one event; records the task id.
    fn check_identity(&mut self, event: &StreamResponse) -> Result<(), ExtensionFailure> {
        exchange::track_identity(event, &self.context_id, &mut self.remote_task_id).map_err(|d| {
            ExtensionFailure::new(
                host::codes::REMOTE_IDENTITY_CHANGED,
                format!("Remote task/context identity changed: {d}"),
            )
        })
    }
}

/// The preconditions of an extension send and the content rules every send follows.
fn check_content(
    content: &MessageContent,
    agent: &AgentEntry,
    uri: &'static str,
) -> Result<(), PreconditionError> {
    content
        .validate()
        .map_err(|e| PreconditionError::InvalidContent(e.to_string()))?;
    if !a2at::activates(&content.extensions, &content.metadata, uri) {
        return Err(PreconditionError::NotActivated { uri });
    }
    let not_declared = |uri: &str| PreconditionError::NotDeclared {
        agent: agent.card.name.clone(),
        uri: uri.to_owned(),
    };
    if !agent.card.declares_extension(uri) {
        return Err(not_declared(uri));
    }
    for e in content.unique_extensions() {
        if !agent.card.declares_extension(&e) {
            return Err(not_declared(&e));
        }
    }
    check_required_extensions(&agent.card, &content.extensions)
        .map_err(|e| PreconditionError::InvalidContent(e.to_string()))
}

fn remote_state_failure(state: TaskState) -> ExtensionFailure {
    let code = match state {
        TaskState::Failed => host::codes::REMOTE_TASK_FAILED,
        TaskState::Canceled => host::codes::REMOTE_TASK_CANCELED,
        _ => host::codes::REMOTE_TASK_REJECTED,
    };
    ExtensionFailure::new(code, format!("Agent returned state={}", state.as_str()))
        .with_details(json!({ "state": state.as_str() }))
}

fn protocol_failure(error: &crate::a2a::ProtocolError) -> ExtensionFailure {
    ExtensionFailure::new(&error.code, error.message.clone()).with_details(error.evidence())
}

fn transport_failure(agent: &str, error: &TransportError) -> ExtensionFailure {
    ExtensionFailure::new(
        host::codes::REMOTE_NO_RESPONSE,
        format!("agent {agent} did not answer: {}", error.message),
    )
    .with_details(json!({ "transport": error.kind, "message": error.message }))
}

fn earliest(times: &[Option<Timestamp>]) -> Option<Timestamp> {
    times.iter().flatten().min().copied()
}

fn due(at: Option<Timestamp>, now: Timestamp) -> bool {
    at.is_some_and(|t| t <= now)
}

// ----- Authorization-T -----

/// The outcome of one Authorization-T send: a `SendMessageResult`-like record that is
/// returned to the caller only.
#[derive(Debug, Clone, PartialEq)]
pub struct AuthorizationResult {
    /// The agent addressed.
    pub agent_name: String,
    /// Whether the agent completed the task (COMPLETED) or answered with a bare message.
    pub success: bool,
    /// The last remote task state seen (`None` for a bare message or no answer).
    pub task_state: Option<TaskState>,
    /// The remote task id, once known.
    pub task_id: Option<String>,
    /// The fresh context id of this authorization.
    pub context_id: String,
    /// Everything received, with every metadata level kept.
    pub received_messages: Vec<ReceivedMessage>,
    /// Text convenience; diagnostics only.
    pub text: String,
    /// Stable failure code when not successful.
    pub failure_code: Option<String>,
    /// Failure message when not successful.
    pub failure_message: Option<String>,
    /// Structured failure evidence, when any.
    pub failure_details: Option<Value>,
}

/// What the [`Authorization`] machine wants done.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
#[allow(clippy::large_enum_variant)] // requests are moved to the driver, never copied
pub enum AuthorizationOutput {
    /// Carry out an HTTP exchange and feed back head, body and end (or a failure).
    Transmit(HttpRequest),
    /// Drop an exchange; anything that still arrives is ignored.
    AbortTransmit {
        /// The exchange.
        op: OpId,
    },
    /// The result (exactly once). A `CancelTask` cleanup may still be in flight: keep driving
    /// until [`Authorization::is_done`].
    Finished(Box<AuthorizationResult>),
}

/// One Authorization-T send: see the [module docs](self) for its rules.
///
/// It drives its remote task with the same machinery as a workflow subtask (one budget,
/// `GetTask` polling, retries, `CancelTask` cleanup of a task it gives up on, reading a send it
/// gave up on for a late task id), on a private clock, id stream and agent view, without a
/// workflow and without asking a host anything after the content.
#[derive(Debug)]
pub struct Authorization {
    ctx: Ctx,
    /// The addressed agent alone, seen as non-streaming: one blocking send, observed with
    /// `GetTask`.
    agents: AgentDirectory,
    config: RunConfig,
    invocation: Invocation,
    outputs: VecDeque<AuthorizationOutput>,
    result: Option<AuthorizationResult>,
}

/// The one remote task of an authorization.
const AUTHORIZATION_TASK: TaskKey = TaskKey {
    step: StepId(0),
    subtask: 0,
};

impl Authorization {
    /// Checks the preconditions and queues the `SendMessage`. Time starts at
    /// [`Timestamp::ZERO`].
    pub fn new(
        agents: &AgentDirectory,
        agent: &str,
        content: &MessageContent,
        config: ExtensionConfig,
    ) -> Result<Authorization, PreconditionError> {
        Self::build(agents, agent, content, config)
    }

    // Outside `new`, which cargo-mutants does not mutate.
    fn build(
        agents: &AgentDirectory,
        agent: &str,
        content: &MessageContent,
        config: ExtensionConfig,
    ) -> Result<Authorization, PreconditionError> {
        let entry = agents
            .get(agent)
            .ok_or_else(|| PreconditionError::AgentNotFound(agent.to_owned()))?;
        check_content(content, entry, a2at::AUTHORIZATION_T_URI)?;
        let mut entry = entry.clone();
        entry.streaming = false;
        let run_config = RunConfig {
            seed: config.seed,
            execution_id: Some(String::new()),
            task_budget: config.send_budget,
            callback_budget: config.send_budget,
            poll_interval: config.poll_interval,
            cancel_budget: config.cancel_budget,
            max_negotiation_exchanges: 0,
            max_input_replies: None,
            history_length: config.history_length,
            decode_limits: config.decode_limits,
            events: EventSelection::None,
            retry: config.retry,
            trace_parent: None,
            trace_state: None,
            // An authorization is never journaled, so it never resumes with a send open.
            ambiguous_send: crate::retry::AmbiguousSend::Fail,
        };
        let mut ctx = Ctx::new(
            IdGenerator::new(config.seed),
            TraceContext::new(config.seed, None, None),
            String::new(),
            EventSelection::None,
        );
        let agents = AgentDirectory::single(entry);
        let request = TaskRequest {
            execution_id: "".into(),
            task_id: "".into(),
            step_name: "authorization".into(),
            subtask_index: 0,
            agent_name: agent.into(),
            skill: "".into(),
            instruction: "".into(),
            input: BusinessInput::Text("".into()),
            language: "".into(),
            workflow_input: WorkflowInput::default(),
        };
        let mut env = Env {
            ctx: &mut ctx,
            agents: &agents,
            config: &run_config,
        };
        let (invocation, refused) =
            Invocation::start_sending(AUTHORIZATION_TASK, request, content.clone(), &mut env);
        if let Some(refused) = refused {
            return Err(PreconditionError::InvalidContent(
                Arc::unwrap_or_clone(refused).error.unwrap_or_default(),
            ));
        }
        let mut authorization = Authorization {
            ctx,
            agents,
            config: run_config,
            invocation,
            outputs: VecDeque::new(),
            result: None,
        };
        authorization.collect(None);
        Ok(authorization)
    }

    /// The fresh context id of this authorization.
    pub fn context_id(&self) -> &str {
        self.invocation.context_id()
    }

    /// The next output; `None` when nothing is queued right now.
    pub fn poll_output(&mut self) -> Option<AuthorizationOutput> {
        self.outputs.pop_front()
    }

    /// The earliest instant at which [`Authorization::handle_timeout`] has work to do.
    pub fn poll_timeout(&self) -> Option<Timestamp> {
        self.ctx.next_deadline()
    }

    /// The result, once decided.
    pub fn result(&self) -> Option<&AuthorizationResult> {
        self.result.as_ref()
    }

    /// Whether the result was decided and no exchange is left (a `CancelTask` cleanup, or a
    /// send given up on that is still read for a late task id): stop driving.
    pub fn is_done(&self) -> bool {
        self.result.is_some() && self.ctx.ops.is_empty()
    }

    /// Feeds one input that happened at `now`. [`Input::Cancel`] gives the authorization up
    /// ([`codes::CANCELLED`]); host replies are ignored.
    pub fn handle(&mut self, input: Input, now: Timestamp) -> Result<(), ApiMisuse> {
        self.ctx.advance_to(now)?;
        let mut env = Env {
            ctx: &mut self.ctx,
            agents: &self.agents,
            config: &self.config,
        };
        let finished = match input {
            Input::HostReply { .. } => None,
            Input::Cancel => self
                .invocation
                .cancel("the authorization was cancelled", &mut env)
                .map(|r| renamed(r, codes::CANCELLED, None)),
            input => match remote::route_exchange_input(input, &mut env) {
                Routed::Settled => None,
                Routed::Items { op, items, .. } => self.invocation.on_items(op, items, &mut env),
                Routed::Failed { op, error, .. } => {
                    let result = self.invocation.on_transport_failed(op, error, &mut env);
                    remote::forget_exchange(op, env.ctx);
                    result
                }
            },
        };
        self.collect(finished);
        Ok(())
    }

    /// The clock reached [`Authorization::poll_timeout`] (or later).
    pub fn handle_timeout(&mut self, now: Timestamp) -> Result<(), ApiMisuse> {
        self.ctx.advance_to(now)?;
        while let Some(key) = self.ctx.pop_due(now) {
            let mut env = Env {
                ctx: &mut self.ctx,
                agents: &self.agents,
                config: &self.config,
            };
            let finished = match key {
                TimerKey::TaskDeadline(_) => {
                    let message = format!(
                        "authorization budget of {}s expired (send and waiting)",
                        self.config.task_budget.as_secs_f64()
                    );
                    self.invocation
                        .on_deadline(&mut env)
                        .map(|r| renamed(r, codes::TIMEOUT, Some(message)))
                }
                TimerKey::Poll(_) => self.invocation.on_poll_timer(&mut env),
                TimerKey::Retry(_) => self.invocation.on_retry_timer(&mut env),
                TimerKey::Cleanup(op) => {
                    env.ctx.abort_op(op);
                    None
                }
                TimerKey::Route(..) => None,
            };
            self.collect(finished);
        }
        Ok(())
    }

    /// Moves what the shared machinery asked for into this machine's outputs, and the result
    /// once it is decided.
    fn collect(&mut self, finished: Option<Arc<TaskExecutionResult>>) {
        while let Some(output) = self.ctx.outputs.pop_front() {
            match output {
                Output::Transmit(request) => {
                    self.outputs
                        .push_back(AuthorizationOutput::Transmit(request));
                }
                Output::AbortTransmit { op } => {
                    self.outputs
                        .push_back(AuthorizationOutput::AbortTransmit { op });
                }
                // No host is asked anything and no event is selected: an authorization's
                // outcome goes to its caller only.
                Output::CallHost { .. }
                | Output::AbandonHostCall { .. }
                | Output::Event(_)
                | Output::Finished(_) => {}
            }
        }
        let Some(finished) = finished else {
            return;
        };
        // No event shares it (none is selected), so this takes the result without a copy.
        let finished = Arc::unwrap_or_clone(finished);
        let result = AuthorizationResult {
            agent_name: finished.agent_name.to_string(),
            success: finished.status == TaskStatus::Success,
            task_state: self.invocation.last_state(),
            task_id: finished.remote_task_id,
            context_id: self.invocation.context_id().to_owned(),
            received_messages: finished.received_messages,
            text: self.invocation.text(),
            failure_code: finished.error_code,
            failure_message: finished.error,
            failure_details: finished.error_details,
        };
        self.result = Some(result.clone());
        self.outputs
            .push_back(AuthorizationOutput::Finished(Box::new(result)));
    }
}

/// The shared machinery's timeout or cancellation under the authorization's own code.
fn renamed(
    result: Arc<TaskExecutionResult>,
    code: &str,
    message: Option<String>,
) -> Arc<TaskExecutionResult> {
    let mut result = Arc::unwrap_or_clone(result);
    result.error_code = Some(code.to_owned());
    if let Some(message) = message {
        result.error = Some(message);
    }
    Arc::new(result)
}

// ----- Notification-T -----

/// How a subscription ended.
#[derive(Debug, Clone, PartialEq)]
pub enum SubscriptionEnd {
    /// The host closed it.
    Closed,
    /// The agent ended the stream with the task terminal (or with no task), after the
    /// acknowledgement; or the unary answer of a non-streaming agent was read.
    Completed,
    /// It failed: ACK timeout, stream ended before any acknowledgement, protocol error,
    /// reattachment exhausted.
    Failed(ExtensionFailure),
}

/// What the [`Notification`] machine wants done or tells. Per subscription the order is:
/// `Transmit`, then any number of `Delivered` / `Reattached` / exchange outputs, with exactly one
/// of `Acknowledged` / `AcknowledgementFailed` somewhere before `Ended`, and `Ended` last.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
#[allow(clippy::large_enum_variant)] // requests are moved to the driver, never copied
pub enum NotificationOutput {
    /// Carry out an HTTP exchange (a long-lived stream: no read timeout) and feed back head,
    /// body chunks and end (or a failure).
    Transmit(HttpRequest),
    /// Drop an exchange (the connection); anything that still arrives is ignored.
    AbortTransmit {
        /// The exchange.
        op: OpId,
    },
    /// The acknowledgement arrived; emitted just before the `Delivered` of its event.
    Acknowledged,
    /// The acknowledgement failed: first state FAILED/CANCELED/REJECTED, ACK timeout, closed
    /// before acknowledgement, or the subscription ended before one.
    AcknowledgementFailed(ExtensionFailure),
    /// One event, as the complete received message.
    Delivered(Box<ReceivedMessage>),
    /// A `SubscribeToTask` stream delivered its first event (just before its `Delivered`);
    /// events between the drop and now may have been lost.
    Reattached {
        /// Which attempt in a row succeeded (1-based).
        attempt: u32,
        /// The task re-subscribed to.
        task_id: String,
    },
    /// The subscription is over; nothing follows.
    Ended(SubscriptionEnd),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ack {
    Pending,
    Settled,
}

/// One Notification-T subscription: see the [module docs](self) for its rules.
#[derive(Debug)]
pub struct Notification {
    link: Link,
    acc: ResponseAccumulator,
    streaming: bool,
    op: Option<OpId>,
    first_stream: bool,
    ack: Ack,
    ack_at: Option<Timestamp>,
    last_state: Option<TaskState>,
    reattach_at: Option<Timestamp>,
    /// Reattachments since a stream last delivered an event, and every decision (reported in
    /// the failure details when they are used up).
    attempts: Attempts,
    notice_pending: bool,
    outputs: VecDeque<NotificationOutput>,
    end: Option<SubscriptionEnd>,
}

impl Notification {
    /// Checks the preconditions and queues the `SendStreamingMessage` (or the unary
    /// `SendMessage` for a non-streaming agent). Time starts at [`Timestamp::ZERO`].
    pub fn new(
        agents: &AgentDirectory,
        agent: &str,
        content: &MessageContent,
        config: ExtensionConfig,
    ) -> Result<Notification, PreconditionError> {
        Self::build(agents, agent, content, config)
    }

    // Outside `new`, which cargo-mutants does not mutate.
    fn build(
        agents: &AgentDirectory,
        agent: &str,
        content: &MessageContent,
        config: ExtensionConfig,
    ) -> Result<Notification, PreconditionError> {
        let mut link = Link::build(
            agents,
            agent,
            content,
            a2at::NOTIFICATION_T_URI,
            "notification",
            config,
        )?;
        let streaming = link.agent.streaming;
        let request = link.send_request(content);
        let call = if streaming {
            A2aCall::SendStreamingMessage(&request)
        } else {
            A2aCall::SendMessage(&request)
        };
        let req = link
            .open(&call, OpPurpose::Send, &content.unique_extensions(), None)
            .map_err(|e| PreconditionError::InvalidContent(e.message))?;
        let op = req.op;
        let ack_at = Timestamp::ZERO.saturating_add(link.config.ack_timeout);
        Ok(Notification {
            link,
            acc: ResponseAccumulator::new(),
            streaming,
            op: Some(op),
            first_stream: true,
            ack: Ack::Pending,
            ack_at: Some(ack_at),
            last_state: None,
            reattach_at: None,
            attempts: Attempts::default(),
            notice_pending: false,
            outputs: VecDeque::from([NotificationOutput::Transmit(req)]),
            end: None,
        })
    }

    /// The fresh context id of this subscription.
    pub fn context_id(&self) -> &str {
        &self.link.context_id
    }

    /// The agent's card name.
    pub fn agent_name(&self) -> &str {
        &self.link.agent.card.name
    }

    /// The remote task id, once known.
    pub fn task_id(&self) -> Option<&str> {
        self.link.remote_task_id.as_deref()
    }

    /// The next output; `None` when nothing is queued right now.
    pub fn poll_output(&mut self) -> Option<NotificationOutput> {
        self.outputs.pop_front()
    }

    /// The earliest instant at which [`Notification::handle_timeout`] has work to do.
    pub fn poll_timeout(&self) -> Option<Timestamp> {
        earliest(&[self.ack_at, self.reattach_at])
    }

    /// How it ended, once it did.
    pub fn end(&self) -> Option<&SubscriptionEnd> {
        self.end.as_ref()
    }

    /// Whether the subscription is over (the `Ended` output was queued): stop driving.
    pub fn is_done(&self) -> bool {
        self.end.is_some()
    }

    /// Closes the subscription; same as `handle(Input::Cancel, now)`. Idempotent.
    pub fn close(&mut self, now: Timestamp) -> Result<(), ApiMisuse> {
        self.handle(Input::Cancel, now)
    }

    /// Feeds one input that happened at `now`. [`Input::Cancel`] is the host's close; host
    /// replies are ignored.
    pub fn handle(&mut self, input: Input, now: Timestamp) -> Result<(), ApiMisuse> {
        self.link.advance(now)?;
        if self.end.is_some() {
            return Ok(());
        }
        match self.link.feed(input) {
            Feed::Nothing => {}
            Feed::Cancel => {
                let failure = ExtensionFailure::new(
                    codes::CLOSED_BEFORE_ACK,
                    "closed before acknowledgement",
                );
                self.finish(SubscriptionEnd::Closed, Some(failure));
            }
            Feed::Items(op, items) => {
                if self.op == Some(op) {
                    self.on_items(items);
                }
            }
            Feed::Failed(op, error) => {
                if self.op == Some(op) {
                    self.op = None;
                    if self.can_reattach() {
                        self.schedule_reattach(Fault::Transport(error.kind));
                    } else {
                        let failure = transport_failure(&self.link.agent.card.name, &error);
                        self.fail(failure);
                    }
                }
            }
        }
        Ok(())
    }

    /// The clock reached [`Notification::poll_timeout`] (or later).
    pub fn handle_timeout(&mut self, now: Timestamp) -> Result<(), ApiMisuse> {
        self.link.advance(now)?;
        if self.end.is_some() {
            return Ok(());
        }
        if due(self.ack_at, now) && self.ack == Ack::Pending {
            let failure = ExtensionFailure::new(
                codes::ACK_TIMEOUT,
                format!(
                    "no acknowledgement within {}s",
                    self.link.config.ack_timeout.as_secs_f64()
                ),
            );
            self.fail(failure);
            return Ok(());
        }
        if due(self.reattach_at, now) {
            self.reattach_at = None;
            if let Some(task_id) = self.link.remote_task_id.clone() {
                let call = A2aCall::SubscribeToTask { task_id: &task_id };
                match self.link.open(&call, OpPurpose::Resubscribe, &[], None) {
                    Ok(req) => {
                        self.op = Some(req.op);
                        self.first_stream = false;
                        self.notice_pending = true;
                        self.outputs.push_back(NotificationOutput::Transmit(req));
                    }
                    Err(failure) => self.fail(failure),
                }
            }
        }
        Ok(())
    }

    /// Items of the current stream (the caller checked the exchange is `self.op`).
    fn on_items(&mut self, items: Vec<ResponseItem>) {
        for item in items {
            match item {
                ResponseItem::Event(event) => {
                    if let Err(f) = self.on_event(event) {
                        self.fail(f);
                        return;
                    }
                }
                ResponseItem::Rejected(e) | ResponseItem::Malformed(e) => {
                    self.fail(protocol_failure(&e));
                    return;
                }
                ResponseItem::End { events } => {
                    self.op = None;
                    self.on_stream_end(events);
                    return;
                }
            }
        }
    }

    fn on_event(&mut self, event: StreamResponse) -> Result<(), ExtensionFailure> {
        self.link.check_identity(&event)?;
        if self.notice_pending {
            self.notice_pending = false;
            let attempt = self.attempts.consecutive();
            self.attempts.observed();
            self.outputs.push_back(NotificationOutput::Reattached {
                attempt,
                task_id: self.link.remote_task_id.clone().unwrap_or_default(),
            });
        }
        let state = event.state();
        let bare_message = match &event {
            StreamResponse::Message(m) => Some(ReceivedMessage {
                message: Some(m.clone()),
                task_id: m.task_id.clone(),
                context_id: m.context_id.clone(),
                ..ReceivedMessage::default()
            }),
            _ => None,
        };
        self.acc.apply(event);
        if let Some(s) = state {
            self.last_state = Some(s);
        }
        if self.ack == Ack::Pending {
            match state {
                Some(TaskState::Unspecified | TaskState::Unrecognized) | None => {}
                Some(s @ (TaskState::Failed | TaskState::Canceled | TaskState::Rejected)) => {
                    self.settle_ack(Some(remote_state_failure(s)));
                }
                Some(_) => self.settle_ack(None),
            }
        }
        let received = bare_message.unwrap_or_else(|| ReceivedMessage {
            message: self.acc.status_message().cloned(),
            task_id: self.acc.task_id().map(str::to_owned),
            context_id: self.acc.context_id().map(str::to_owned),
            task_state: self.acc.state(),
            task_metadata: self.acc.task_metadata().cloned(),
            artifacts: self.acc.artifacts().to_vec(),
        });
        self.outputs
            .push_back(NotificationOutput::Delivered(Box::new(received)));
        Ok(())
    }

    fn settle_ack(&mut self, failure: Option<ExtensionFailure>) {
        if self.ack == Ack::Settled {
            return;
        }
        self.ack = Ack::Settled;
        self.ack_at = None;
        self.outputs.push_back(match failure {
            None => NotificationOutput::Acknowledged,
            Some(f) => NotificationOutput::AcknowledgementFailed(f),
        });
    }

    fn can_reattach(&self) -> bool {
        self.streaming
            && self.link.remote_task_id.is_some()
            && !self.last_state.is_some_and(TaskState::is_terminal)
    }

    fn on_stream_end(&mut self, events: usize) {
        if self.can_reattach() {
            self.schedule_reattach(Fault::EndedEarly);
            return;
        }
        if self.ack == Ack::Pending {
            let failure = if events == 0 && self.first_stream {
                ExtensionFailure::new(
                    host::codes::EMPTY_STREAM,
                    "the agent closed the stream before any A2A event",
                )
            } else {
                ExtensionFailure::new(
                    codes::NO_ACKNOWLEDGEMENT,
                    "the stream ended without an event carrying a task state",
                )
            };
            self.fail(failure);
            return;
        }
        // The acknowledgement is settled here, so no ACK failure is needed.
        self.finish(SubscriptionEnd::Completed, None);
    }

    /// Arms the next `SubscribeToTask` after the backoff of the reattach policy, or fails the
    /// subscription when the attempts in a row are used up.
    fn schedule_reattach(&mut self, fault: Fault) {
        let attempt = RetryAttempt {
            exchange: if self.first_stream {
                CallKind::SendStreamingMessage.method_name()
            } else {
                CallKind::SubscribeToTask.method_name()
            },
            action: "resubscribe",
            now: self.link.now,
            // A subscription has no budget: only the attempts in a row bound it.
            deadline: Timestamp(u64::MAX),
        };
        let ids = &mut self.link.ids;
        let policy = &self.link.config.reattach;
        let Some(delay) = self
            .attempts
            .next(policy, &fault, &attempt, || ids.next_u64())
        else {
            let mut failure = ExtensionFailure::new(
                codes::REATTACH_EXHAUSTED,
                format!(
                    "the stream of task {} ended {} times in a row without an event",
                    self.link.remote_task_id.as_deref().unwrap_or("?"),
                    self.attempts.consecutive() + 1
                ),
            );
            self.attempts.attach_to(&mut failure.details);
            self.fail(failure);
            return;
        };
        self.notice_pending = false;
        self.reattach_at = Some(self.link.now.saturating_add(delay));
    }

    fn fail(&mut self, failure: ExtensionFailure) {
        self.finish(SubscriptionEnd::Failed(failure.clone()), Some(failure));
    }

    /// Ends the subscription; `ack_failure` settles a still pending acknowledgement.
    fn finish(&mut self, end: SubscriptionEnd, ack_failure: Option<ExtensionFailure>) {
        if self.end.is_some() {
            return;
        }
        if let Some(op) = self.op.take() {
            if self.link.forget(op) {
                self.outputs
                    .push_back(NotificationOutput::AbortTransmit { op });
            }
        }
        self.reattach_at = None;
        if let Some(f) = ack_failure {
            self.settle_ack(Some(f));
        }
        self.ack_at = None;
        self.end = Some(end.clone());
        self.outputs.push_back(NotificationOutput::Ended(end));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::AgentCard;
    use crate::io::TransportErrorKind;

    const AUTH: &str = a2at::AUTHORIZATION_T_URI;
    const NOTI: &str = a2at::NOTIFICATION_T_URI;

    fn directory(streaming: bool, extensions: &[&str]) -> AgentDirectory {
        let exts: Vec<Value> = extensions.iter().map(|u| json!({ "uri": u })).collect();
        let card = json!({
            "name": "agent",
            "description": "test agent",
            "version": "1.0.0",
            "supportedInterfaces": [{"url": "http://agent.test/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
            "capabilities": {"streaming": streaming, "extensions": exts},
            "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["text/plain"],
            "skills": [{"id": "s", "name": "s", "description": "s", "tags": []}]
        });
        AgentDirectory::new(vec![AgentCard::from_json_value(&card).unwrap()], None).unwrap()
    }

    fn both(streaming: bool) -> AgentDirectory {
        directory(streaming, &[AUTH, NOTI])
    }

    fn content(uri: &str) -> MessageContent {
        MessageContent::text("please")
            .with_extension(uri)
            .with_metadata(uri, json!("policy text"))
            .with_metadata(
                "templateUri",
                json!("Authorization-T/authorization-policy-management/v1"),
            )
    }

    fn config() -> ExtensionConfig {
        ExtensionConfig {
            seed: 7,
            send_budget: Duration::from_secs(10),
            poll_interval: Duration::from_millis(100),
            cancel_budget: Duration::from_secs(1),
            ack_timeout: Duration::from_secs(5),
            reattach: RetryPolicy {
                attempts: 2,
                base_delay: Duration::from_millis(50),
                max_delay: Duration::from_millis(50),
            },
            ..ExtensionConfig::default()
        }
    }

    fn ms(n: u64) -> Timestamp {
        Timestamp::from_millis(n)
    }

    fn body(req: &HttpRequest) -> Value {
        serde_json::from_slice(&req.body).unwrap()
    }

    fn rpc_id(req: &HttpRequest) -> Value {
        body(req)["id"].clone()
    }

    /// Feeds a unary JSON-RPC result for `req`.
    fn unary(req: &HttpRequest, result: Value) -> Vec<Input> {
        let payload = json!({"jsonrpc": "2.0", "id": rpc_id(req), "result": result});
        vec![
            Input::ResponseHead {
                op: req.op,
                status: 200,
                headers: vec![("content-type".into(), "application/json".into())],
            },
            Input::ResponseBody {
                op: req.op,
                chunk: serde_json::to_vec(&payload).unwrap(),
            },
            Input::ResponseEnd { op: req.op },
        ]
    }

    fn sse_head(req: &HttpRequest) -> Input {
        Input::ResponseHead {
            op: req.op,
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
        }
    }

    fn sse(req: &HttpRequest, event: Value) -> Input {
        let payload = json!({"jsonrpc": "2.0", "id": rpc_id(req), "result": event});
        Input::ResponseBody {
            op: req.op,
            chunk: format!("data: {payload}\n\n").into_bytes(),
        }
    }

    fn task(id: &str, ctx: &str, state: &str) -> Value {
        json!({"task": {"id": id, "contextId": ctx, "status": {"state": state}}})
    }

    fn status(id: &str, ctx: &str, state: &str, text: &str) -> Value {
        json!({"statusUpdate": {"taskId": id, "contextId": ctx, "status": {"state": state,
            "message": {"messageId": format!("m-{text}"), "role": "ROLE_AGENT", "parts": [{"text": text}],
                        "metadata": {"level": "message"}}},
            "metadata": {"level": "task"}}})
    }

    fn artifact(id: &str, ctx: &str, text: &str, append: bool) -> Value {
        json!({"artifactUpdate": {"taskId": id, "contextId": ctx, "append": append,
            "artifact": {"artifactId": "a1", "parts": [{"text": text}], "metadata": {"level": "artifact"}}}})
    }

    // ----- shared by both machines -----

    fn drain_auth(a: &mut Authorization) -> Vec<AuthorizationOutput> {
        std::iter::from_fn(|| a.poll_output()).collect()
    }

    fn drain_noti(n: &mut Notification) -> Vec<NotificationOutput> {
        std::iter::from_fn(|| n.poll_output()).collect()
    }

    fn transmitted_auth(outs: &[AuthorizationOutput]) -> Vec<HttpRequest> {
        outs.iter()
            .filter_map(|o| match o {
                AuthorizationOutput::Transmit(r) => Some(r.clone()),
                _ => None,
            })
            .collect()
    }

    fn transmitted_noti(outs: &[NotificationOutput]) -> Vec<HttpRequest> {
        outs.iter()
            .filter_map(|o| match o {
                NotificationOutput::Transmit(r) => Some(r.clone()),
                _ => None,
            })
            .collect()
    }

    fn feed_auth(a: &mut Authorization, inputs: Vec<Input>, now: Timestamp) {
        for i in inputs {
            a.handle(i, now).unwrap();
        }
    }

    fn feed_noti(n: &mut Notification, inputs: Vec<Input>, now: Timestamp) {
        for i in inputs {
            n.handle(i, now).unwrap();
        }
    }

    #[test]
    fn preconditions_are_checked_before_any_output() {
        let dir = both(true);
        let cfg = config;
        let missing = Authorization::new(&dir, "nobody", &content(AUTH), cfg()).unwrap_err();
        assert_eq!(missing, PreconditionError::AgentNotFound("nobody".into()));
        assert_eq!(missing.code(), host::codes::AGENT_NOT_FOUND);
        // URI in extensions only, or metadata only: not activated.
        let ext_only = MessageContent::text("x").with_extension(AUTH);
        let meta_only = MessageContent::text("x").with_metadata(AUTH, json!("t"));
        for c in [ext_only, meta_only, content(NOTI)] {
            let e = Authorization::new(&dir, "agent", &c, cfg()).unwrap_err();
            assert_eq!(e, PreconditionError::NotActivated { uri: AUTH });
            assert_eq!(e.code(), host::codes::INVALID_CONTENT);
        }
        let e = Notification::new(&dir, "agent", &content(AUTH), cfg()).unwrap_err();
        assert_eq!(e, PreconditionError::NotActivated { uri: NOTI });
        // The card must declare the extension (XS-10).
        let only_auth = directory(true, &[AUTH]);
        let e = Notification::new(&only_auth, "agent", &content(NOTI), cfg()).unwrap_err();
        assert!(matches!(e, PreconditionError::NotDeclared { ref uri, .. } if uri == NOTI));
        assert!(Authorization::new(&only_auth, "agent", &content(AUTH), cfg()).is_ok());
        // Every activated extension must be declared; parts are required.
        let extra = content(AUTH).with_extension(a2at::TASK_T_URI);
        assert!(matches!(
            Authorization::new(&dir, "agent", &extra, cfg()).unwrap_err(),
            PreconditionError::NotDeclared { .. }
        ));
        let mut empty = content(AUTH);
        empty.parts.clear();
        assert!(matches!(
            Authorization::new(&dir, "agent", &empty, cfg()).unwrap_err(),
            PreconditionError::InvalidContent(_)
        ));
    }

    #[test]
    fn a_failure_reads_as_its_code_then_its_message() {
        let failure = ExtensionFailure::new(codes::ACK_TIMEOUT, "no acknowledgement in 5 s");
        assert_eq!(
            failure.to_string(),
            format!("{}: no acknowledgement in 5 s", codes::ACK_TIMEOUT)
        );
    }

    // ----- Authorization-T -----

    fn start_auth(streaming: bool) -> (Authorization, HttpRequest) {
        start_auth_with(streaming, config())
    }

    fn start_auth_with(streaming: bool, config: ExtensionConfig) -> (Authorization, HttpRequest) {
        let mut a = Authorization::new(&both(streaming), "agent", &content(AUTH), config).unwrap();
        let outs = drain_auth(&mut a);
        assert_eq!(outs.len(), 1);
        let req = transmitted_auth(&outs).remove(0);
        (a, req)
    }

    fn finished(outs: &[AuthorizationOutput]) -> AuthorizationResult {
        outs.iter()
            .find_map(|o| match o {
                AuthorizationOutput::Finished(r) => Some((**r).clone()),
                _ => None,
            })
            .expect("finished")
    }

    #[test]
    fn authorization_is_one_blocking_send_on_a_fresh_context_with_content_unchanged() {
        // Even for a streaming agent: SendMessage, never streaming.
        let (a, req) = start_auth(true);
        let b = body(&req);
        assert_eq!(b["method"], "SendMessage");
        assert!(!req.streaming);
        assert_eq!(req.purpose, OpPurpose::Send);
        let msg = &b["params"]["message"];
        assert_eq!(msg["contextId"], a.context_id());
        assert_eq!(msg["role"], "ROLE_USER");
        assert_eq!(msg["extensions"], json!([AUTH]));
        assert_eq!(msg["metadata"][AUTH], "policy text");
        assert_eq!(
            msg["metadata"]["templateUri"],
            "Authorization-T/authorization-policy-management/v1"
        );
        assert!(msg.get("taskId").is_none());
        let ext = req
            .headers
            .iter()
            .find(|(n, _)| n == "A2A-Extensions")
            .map(|(_, v)| v.as_ref());
        assert_eq!(ext, Some(AUTH));
        // Same seed, same bytes; another seed, another context.
        let (b2, req2) = start_auth(true);
        assert_eq!(req2.body, req.body);
        assert_eq!(b2.context_id(), a.context_id());
        let other = Authorization::new(
            &both(true),
            "agent",
            &content(AUTH),
            ExtensionConfig {
                seed: 8,
                ..config()
            },
        )
        .unwrap();
        assert_ne!(other.context_id(), a.context_id());
    }

    #[test]
    fn authorization_succeeds_on_completed_with_every_metadata_level() {
        let (mut a, req) = start_auth(false);
        let ctx = a.context_id().to_owned();
        let result = json!({"task": {"id": "t1", "contextId": ctx, "metadata": {"level": "task"},
            "status": {"state": "TASK_STATE_COMPLETED", "message": {"messageId": "m1", "role": "ROLE_AGENT",
                "parts": [{"text": "granted"}], "metadata": {"level": "message"}}},
            "artifacts": [{"artifactId": "a1", "parts": [{"text": "policy applied"}], "metadata": {"level": "artifact"}}]}});
        feed_auth(&mut a, unary(&req, result), ms(1));
        let outs = drain_auth(&mut a);
        let r = finished(&outs);
        assert!(r.success, "{r:?}");
        assert_eq!(r.task_state, Some(TaskState::Completed));
        assert_eq!(r.task_id.as_deref(), Some("t1"));
        assert_eq!(r.context_id, ctx);
        assert_eq!(r.text, "policy applied");
        let rm = &r.received_messages[0];
        assert_eq!(rm.task_metadata.as_ref().unwrap()["level"], "task");
        assert_eq!(
            rm.message.as_ref().unwrap().metadata.as_ref().unwrap()["level"],
            "message"
        );
        assert_eq!(
            rm.artifacts[0].metadata.as_ref().unwrap()["level"],
            "artifact"
        );
        assert!(a.is_done());
        assert_eq!(a.poll_timeout(), None);
        assert!(
            transmitted_auth(&outs).is_empty(),
            "no cleanup for a terminal task"
        );
    }

    #[test]
    fn authorization_succeeds_on_a_bare_message() {
        let (mut a, req) = start_auth(false);
        let msg =
            json!({"message": {"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "ok"}]}});
        feed_auth(&mut a, unary(&req, msg), ms(1));
        let r = finished(&drain_auth(&mut a));
        assert!(r.success);
        assert_eq!(r.task_state, None);
        assert_eq!(r.text, "ok");
        assert!(a.is_done());
    }

    #[test]
    fn authorization_polls_get_task_while_working_until_completed() {
        let (mut a, req) = start_auth(false);
        let ctx = a.context_id().to_owned();
        feed_auth(
            &mut a,
            unary(&req, task("t1", &ctx, "TASK_STATE_SUBMITTED")),
            ms(1),
        );
        assert!(drain_auth(&mut a).is_empty());
        assert_eq!(a.poll_timeout(), Some(ms(101)));
        a.handle_timeout(ms(101)).unwrap();
        let poll = transmitted_auth(&drain_auth(&mut a)).remove(0);
        assert_eq!(poll.purpose, OpPurpose::Poll);
        assert_eq!(body(&poll)["method"], "GetTask");
        assert_eq!(body(&poll)["params"]["id"], "t1");
        // GetTask answers a bare Task.
        feed_auth(
            &mut a,
            unary(
                &poll,
                json!({"id": "t1", "contextId": ctx, "status": {"state": "TASK_STATE_WORKING"}}),
            ),
            ms(110),
        );
        assert!(drain_auth(&mut a).is_empty());
        a.handle_timeout(ms(210)).unwrap();
        let poll = transmitted_auth(&drain_auth(&mut a)).remove(0);
        feed_auth(
            &mut a,
            unary(
                &poll,
                json!({"id": "t1", "contextId": ctx, "status": {"state": "TASK_STATE_COMPLETED"}}),
            ),
            ms(220),
        );
        let r = finished(&drain_auth(&mut a));
        assert!(r.success);
        assert!(a.is_done());
    }

    #[test]
    fn authorization_fails_on_failed_rejected_and_canceled_states() {
        for (state, code) in [
            ("TASK_STATE_FAILED", host::codes::REMOTE_TASK_FAILED),
            ("TASK_STATE_REJECTED", host::codes::REMOTE_TASK_REJECTED),
            ("TASK_STATE_CANCELED", host::codes::REMOTE_TASK_CANCELED),
        ] {
            let (mut a, req) = start_auth(false);
            let ctx = a.context_id().to_owned();
            feed_auth(&mut a, unary(&req, task("t1", &ctx, state)), ms(1));
            let outs = drain_auth(&mut a);
            let r = finished(&outs);
            assert!(!r.success);
            assert_eq!(r.failure_code.as_deref(), Some(code));
            assert!(
                transmitted_auth(&outs).is_empty(),
                "terminal: no CancelTask"
            );
            assert!(a.is_done());
        }
    }

    #[test]
    fn authorization_rejected_before_creation_keeps_the_reason_code() {
        let (mut a, req) = start_auth(false);
        let err = json!({"jsonrpc": "2.0", "id": rpc_id(&req), "error": {"code": -32602, "message": "bad policy",
            "data": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "POLICY_DENIED", "domain": "x"}]}});
        feed_auth(
            &mut a,
            vec![
                Input::ResponseHead {
                    op: req.op,
                    status: 200,
                    headers: vec![("content-type".into(), "application/json".into())],
                },
                Input::ResponseBody {
                    op: req.op,
                    chunk: serde_json::to_vec(&err).unwrap(),
                },
                Input::ResponseEnd { op: req.op },
            ],
            ms(1),
        );
        let r = finished(&drain_auth(&mut a));
        assert_eq!(r.failure_code.as_deref(), Some("a2a.policy_denied"));
        assert_eq!(r.task_id, None);
        assert!(a.is_done());
    }

    #[test]
    fn authorization_budget_expiry_cancels_the_known_task_once() {
        let (mut a, req) = start_auth(false);
        let ctx = a.context_id().to_owned();
        feed_auth(
            &mut a,
            unary(&req, task("t1", &ctx, "TASK_STATE_WORKING")),
            ms(1),
        );
        // Poll forever: the GetTask hangs when the budget ends.
        a.handle_timeout(ms(101)).unwrap();
        let poll = transmitted_auth(&drain_auth(&mut a)).remove(0);
        a.handle_timeout(ms(10_000)).unwrap();
        let outs = drain_auth(&mut a);
        assert_eq!(outs[0], AuthorizationOutput::AbortTransmit { op: poll.op });
        let cancel = transmitted_auth(&outs).remove(0);
        assert_eq!(cancel.purpose, OpPurpose::Cancel);
        assert_eq!(body(&cancel)["method"], "CancelTask");
        let r = finished(&outs);
        assert_eq!(r.failure_code.as_deref(), Some(codes::TIMEOUT));
        assert!(!a.is_done(), "the cleanup is still in flight");
        // A cleanup that never answers is dropped at the cancel budget; nothing else happens.
        assert_eq!(a.poll_timeout(), Some(ms(11_000)));
        a.handle_timeout(ms(11_000)).unwrap();
        assert_eq!(
            drain_auth(&mut a),
            vec![AuthorizationOutput::AbortTransmit { op: cancel.op }]
        );
        assert!(a.is_done());
        // A late answer to the aborted poll is ignored.
        feed_auth(
            &mut a,
            unary(
                &poll,
                json!({"id": "t1", "status": {"state": "TASK_STATE_COMPLETED"}}),
            ),
            ms(11_001),
        );
        assert!(drain_auth(&mut a).is_empty());
    }

    #[test]
    fn authorization_cleanup_ends_with_its_answer_and_cancel_is_a_failure() {
        let (mut a, req) = start_auth(false);
        let ctx = a.context_id().to_owned();
        feed_auth(
            &mut a,
            unary(&req, task("t1", &ctx, "TASK_STATE_WORKING")),
            ms(1),
        );
        a.handle(Input::Cancel, ms(2)).unwrap();
        let outs = drain_auth(&mut a);
        let r = finished(&outs);
        assert_eq!(r.failure_code.as_deref(), Some(codes::CANCELLED));
        let cancel = transmitted_auth(&outs).remove(0);
        feed_auth(
            &mut a,
            unary(
                &cancel,
                json!({"id": "t1", "status": {"state": "TASK_STATE_CANCELED"}}),
            ),
            ms(3),
        );
        assert!(a.is_done());
        assert!(
            drain_auth(&mut a).is_empty(),
            "the cleanup changes no result"
        );
        assert_eq!(
            a.result().unwrap().failure_code.as_deref(),
            Some(codes::CANCELLED)
        );
    }

    #[test]
    fn a_cleanup_cancel_that_fails_in_transport_ends_the_cleanup_at_once() {
        let (mut a, req) = start_auth(false);
        let ctx = a.context_id().to_owned();
        feed_auth(
            &mut a,
            unary(&req, task("t1", &ctx, "TASK_STATE_WORKING")),
            ms(1),
        );
        a.handle(Input::Cancel, ms(2)).unwrap();
        let cancel = transmitted_auth(&drain_auth(&mut a)).remove(0);
        assert_eq!(cancel.purpose, OpPurpose::Cancel);
        assert!(!a.is_done(), "the cleanup is still open");
        a.handle(
            Input::TransportFailed {
                op: cancel.op,
                error: TransportError {
                    kind: TransportErrorKind::Connect,
                    message: "refused".into(),
                },
            },
            ms(3),
        )
        .unwrap();
        assert!(a.is_done());
        assert_eq!(a.poll_timeout(), None, "no cleanup timer left");
        assert!(drain_auth(&mut a).is_empty());
        assert_eq!(
            a.result().unwrap().failure_code.as_deref(),
            Some(codes::CANCELLED)
        );
    }

    fn refused(op: OpId) -> Input {
        Input::TransportFailed {
            op,
            error: TransportError {
                kind: TransportErrorKind::Connect,
                message: "refused".into(),
            },
        }
    }

    #[test]
    fn a_refused_send_goes_again_unchanged_after_a_backoff() {
        let (mut a, req) = start_auth(false);
        a.handle(refused(req.op), ms(1)).unwrap();
        assert!(
            drain_auth(&mut a).is_empty(),
            "no result yet: it will retry"
        );
        let at = a.poll_timeout().expect("a retry is due");
        assert!(at > ms(1) && at < ms(10_000), "{at:?}");
        a.handle_timeout(at).unwrap();
        let again = transmitted_auth(&drain_auth(&mut a)).remove(0);
        assert_eq!(again.purpose, OpPurpose::Send);
        assert_ne!(again.op, req.op);
        assert_eq!(
            body(&again)["params"]["message"],
            body(&req)["params"]["message"],
            "the same message, same messageId"
        );
        let ctx = a.context_id().to_owned();
        feed_auth(
            &mut a,
            unary(&again, task("t1", &ctx, "TASK_STATE_COMPLETED")),
            at,
        );
        let r = finished(&drain_auth(&mut a));
        assert!(r.success, "{r:?}");
        assert!(a.is_done());
    }

    #[test]
    fn an_overloaded_poll_is_observed_again_and_the_task_completes() {
        let (mut a, req) = start_auth(false);
        let ctx = a.context_id().to_owned();
        feed_auth(
            &mut a,
            unary(&req, task("t1", &ctx, "TASK_STATE_WORKING")),
            ms(1),
        );
        a.handle_timeout(ms(101)).unwrap();
        let poll = transmitted_auth(&drain_auth(&mut a)).remove(0);
        assert_eq!(body(&poll)["method"], "GetTask");
        feed_auth(
            &mut a,
            vec![
                Input::ResponseHead {
                    op: poll.op,
                    status: 503,
                    headers: vec![("content-type".into(), "text/plain".into())],
                },
                Input::ResponseBody {
                    op: poll.op,
                    chunk: b"busy".to_vec(),
                },
                Input::ResponseEnd { op: poll.op },
            ],
            ms(102),
        );
        assert!(a.result().is_none(), "an overloaded poll is not a failure");
        let at = a.poll_timeout().expect("the task is observed again");
        a.handle_timeout(at).unwrap();
        let again = transmitted_auth(&drain_auth(&mut a)).remove(0);
        assert_eq!(body(&again)["method"], "GetTask");
        feed_auth(
            &mut a,
            unary(
                &again,
                json!({"id": "t1", "contextId": ctx, "status": {"state": "TASK_STATE_COMPLETED"}}),
            ),
            at,
        );
        assert!(finished(&drain_auth(&mut a)).success);
    }

    #[test]
    fn retries_are_bounded_and_every_attempt_is_reported() {
        let two = ExtensionConfig {
            retry: RetryPolicy {
                attempts: 2,
                ..RetryPolicy::default()
            },
            ..config()
        };
        let (mut a, mut req) = start_auth_with(false, two);
        let mut now = ms(1);
        for _ in 0..2 {
            a.handle(refused(req.op), now).unwrap();
            now = a.poll_timeout().unwrap();
            a.handle_timeout(now).unwrap();
            req = transmitted_auth(&drain_auth(&mut a)).remove(0);
        }
        a.handle(refused(req.op), now).unwrap();
        let r = finished(&drain_auth(&mut a));
        assert_eq!(
            r.failure_code.as_deref(),
            Some(host::codes::REMOTE_NO_RESPONSE)
        );
        let attempts = r.failure_details.as_ref().unwrap()["attempts"]
            .as_array()
            .unwrap()
            .clone();
        let next: Vec<&str> = attempts
            .iter()
            .map(|a| a["next"].as_str().unwrap())
            .collect();
        assert_eq!(next, ["resend", "resend", "give_up"]);
        assert!(attempts.iter().all(|a| a["fault"] == "transport.connect"));
    }

    #[test]
    fn a_successful_observation_restarts_the_count_of_faults() {
        let one = ExtensionConfig {
            retry: RetryPolicy {
                attempts: 1,
                ..RetryPolicy::default()
            },
            ..config()
        };
        let (mut a, req) = start_auth_with(false, one);
        let ctx = a.context_id().to_owned();
        feed_auth(
            &mut a,
            unary(&req, task("t1", &ctx, "TASK_STATE_WORKING")),
            ms(1),
        );
        // Twice: a poll breaks, the next one answers WORKING. One retry is allowed in a row,
        // so the second break is retried too.
        for _ in 0..2 {
            let mut now = a.poll_timeout().unwrap();
            a.handle_timeout(now).unwrap();
            let poll = transmitted_auth(&drain_auth(&mut a)).remove(0);
            a.handle(
                Input::TransportFailed {
                    op: poll.op,
                    error: TransportError {
                        kind: TransportErrorKind::Io,
                        message: "reset".into(),
                    },
                },
                now,
            )
            .unwrap();
            assert!(a.result().is_none(), "retried: {:?}", a.result());
            now = a.poll_timeout().unwrap();
            a.handle_timeout(now).unwrap();
            let again = transmitted_auth(&drain_auth(&mut a)).remove(0);
            feed_auth(
                &mut a,
                unary(
                    &again,
                    json!({"id": "t1", "contextId": ctx, "status": {"state": "TASK_STATE_WORKING"}}),
                ),
                now,
            );
        }
        assert!(a.result().is_none());
    }

    /// Breaks the send after its bytes went out: the agent may have the message.
    fn lost_answer(a: &mut Authorization, req: &HttpRequest) -> HttpRequest {
        let lost = Input::TransportFailed {
            op: req.op,
            error: TransportError {
                kind: TransportErrorKind::Io,
                message: "reset".into(),
            },
        };
        a.handle(lost, ms(1)).unwrap();
        let outs = drain_auth(a);
        assert!(
            transmitted_auth(&outs).is_empty(),
            "nothing goes before the backoff"
        );
        assert!(a.result().is_none());
        let at = a.poll_timeout().expect("a backoff before the lookup");
        a.handle_timeout(at).unwrap();
        let lookup = transmitted_auth(&drain_auth(a));
        assert_eq!(lookup.len(), 1);
        let lookup = lookup[0].clone();
        assert_eq!(body(&lookup)["method"], "ListTasks", "never a resend");
        assert_eq!(
            body(&lookup)["params"]["contextId"],
            a.context_id(),
            "looked up by the authorization's own context"
        );
        lookup
    }

    #[test]
    fn an_unknown_outcome_send_is_looked_up_by_its_context_and_followed() {
        let (mut a, req) = start_auth(false);
        let lookup = lost_answer(&mut a, &req);
        let ctx = a.context_id().to_owned();
        let now = a.poll_timeout().unwrap_or(ms(10)).max(ms(10));
        let tasks = json!({"tasks": [
            {"id": "other", "contextId": "someone-else", "status": {"state": "TASK_STATE_WORKING"}},
            {"id": "t1", "contextId": ctx, "status": {"state": "TASK_STATE_WORKING"}},
        ]});
        feed_auth(&mut a, unary(&lookup, tasks), now);
        let get = transmitted_auth(&drain_auth(&mut a));
        assert_eq!(get.len(), 1);
        assert_eq!(body(&get[0])["method"], "GetTask");
        assert_eq!(
            body(&get[0])["params"]["id"],
            "t1",
            "the task in our context"
        );
        feed_auth(
            &mut a,
            unary(
                &get[0],
                task("t1", &ctx, "TASK_STATE_COMPLETED")["task"].clone(),
            ),
            now,
        );
        let r = finished(&drain_auth(&mut a));
        assert!(r.success, "{r:?}");
        assert_eq!(r.task_id.as_deref(), Some("t1"));
    }

    #[test]
    fn an_unknown_outcome_send_not_found_fails_with_its_own_fault_and_is_not_resent() {
        let (mut a, req) = start_auth(false);
        let lookup = lost_answer(&mut a, &req);
        let now = a.poll_timeout().unwrap_or(ms(10)).max(ms(10));
        feed_auth(&mut a, unary(&lookup, json!({"tasks": []})), now);
        let outs = drain_auth(&mut a);
        assert!(transmitted_auth(&outs).is_empty(), "no resend, no cleanup");
        let r = finished(&outs);
        assert_eq!(
            r.failure_code.as_deref(),
            Some(host::codes::REMOTE_NO_RESPONSE),
            "the send's own fault, not the lookup's"
        );
        assert!(a.is_done());
    }

    #[test]
    fn authorization_transport_failure_and_unsupported_states_fail() {
        let fail_fast = ExtensionConfig {
            retry: RetryPolicy::FAIL_FAST,
            ..config()
        };
        let (mut a, req) = start_auth_with(false, fail_fast);
        a.handle(
            Input::TransportFailed {
                op: req.op,
                error: TransportError {
                    kind: TransportErrorKind::Connect,
                    message: "refused".into(),
                },
            },
            ms(1),
        )
        .unwrap();
        assert_eq!(
            finished(&drain_auth(&mut a)).failure_code.as_deref(),
            Some(host::codes::REMOTE_NO_RESPONSE)
        );

        let (mut a, req) = start_auth(false);
        let ctx = a.context_id().to_owned();
        feed_auth(
            &mut a,
            unary(&req, task("t1", &ctx, "TASK_STATE_INPUT_REQUIRED")),
            ms(1),
        );
        let outs = drain_auth(&mut a);
        assert_eq!(
            finished(&outs).failure_code.as_deref(),
            Some(host::codes::UNSUPPORTED_TASK_STATE)
        );
        assert_eq!(
            transmitted_auth(&outs).len(),
            1,
            "non-final task is cancelled"
        );

        let (mut a, req) = start_auth(false);
        feed_auth(
            &mut a,
            unary(&req, task("t1", "someone-else", "TASK_STATE_COMPLETED")),
            ms(1),
        );
        assert_eq!(
            finished(&drain_auth(&mut a)).failure_code.as_deref(),
            Some(host::codes::REMOTE_IDENTITY_CHANGED)
        );
    }

    #[test]
    fn time_going_backwards_is_misuse_and_changes_nothing() {
        let (mut a, req) = start_auth(false);
        a.handle_timeout(ms(5)).unwrap();
        assert!(matches!(
            a.handle(Input::ResponseEnd { op: req.op }, ms(4)),
            Err(ApiMisuse::TimeWentBackwards { .. })
        ));
        assert!(drain_auth(&mut a).is_empty());
        let mut n = Notification::new(&both(true), "agent", &content(NOTI), config()).unwrap();
        n.handle_timeout(ms(5)).unwrap();
        assert!(n.close(ms(1)).is_err());
        assert!(!n.is_done());
    }

    // ----- Notification-T -----

    fn start_noti(streaming: bool) -> (Notification, HttpRequest, String) {
        let mut n = Notification::new(&both(streaming), "agent", &content(NOTI), config()).unwrap();
        let req = transmitted_noti(&drain_noti(&mut n)).remove(0);
        let ctx = n.context_id().to_owned();
        (n, req, ctx)
    }

    fn delivered(outs: &[NotificationOutput]) -> Vec<ReceivedMessage> {
        outs.iter()
            .filter_map(|o| match o {
                NotificationOutput::Delivered(r) => Some((**r).clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn notification_streams_acks_on_first_state_and_delivers_every_event_in_order() {
        let (mut n, req, ctx) = start_noti(true);
        let b = body(&req);
        assert_eq!(b["method"], "SendStreamingMessage");
        assert!(req.streaming);
        assert_eq!(b["params"]["message"]["contextId"], ctx.as_str());
        assert_eq!(n.poll_timeout(), Some(ms(5_000)));
        feed_noti(
            &mut n,
            vec![
                sse_head(&req),
                sse(&req, artifact("t1", &ctx, "early", false)),
            ],
            ms(1),
        );
        let outs = drain_noti(&mut n);
        assert_eq!(outs.len(), 1, "an artifact alone is not an ACK: {outs:?}");
        assert!(matches!(outs[0], NotificationOutput::Delivered(_)));
        feed_noti(
            &mut n,
            vec![sse(&req, task("t1", &ctx, "TASK_STATE_WORKING"))],
            ms(2),
        );
        let outs = drain_noti(&mut n);
        assert_eq!(outs[0], NotificationOutput::Acknowledged);
        assert!(matches!(outs[1], NotificationOutput::Delivered(_)));
        assert_eq!(
            n.poll_timeout(),
            None,
            "the ACK timeout covers only the first ACK"
        );
        feed_noti(
            &mut n,
            vec![
                sse(&req, status("t1", &ctx, "TASK_STATE_WORKING", "alarm 1")),
                sse(&req, artifact("t1", &ctx, "part-1", false)),
                sse(&req, artifact("t1", &ctx, "+part-2", true)),
                sse(
                    &req,
                    json!({"message": {"messageId": "b1", "contextId": ctx, "role": "ROLE_AGENT", "parts": [{"text": "bare"}]}}),
                ),
            ],
            ms(3),
        );
        let got = delivered(&drain_noti(&mut n));
        assert_eq!(got.len(), 4);
        let s = &got[0];
        assert_eq!(s.task_state, Some(TaskState::Working));
        assert_eq!(
            s.message.as_ref().unwrap().parts[0].as_text(),
            Some("alarm 1")
        );
        assert_eq!(
            s.message.as_ref().unwrap().metadata.as_ref().unwrap()["level"],
            "message"
        );
        assert_eq!(s.task_metadata.as_ref().unwrap()["level"], "task");
        // TR-8: the append delta is merged into the same artifact.
        let art = &got[2].artifacts;
        assert_eq!(art.len(), 1);
        let texts: Vec<_> = art[0].parts.iter().filter_map(|p| p.as_text()).collect();
        assert_eq!(texts, ["part-1", "+part-2"]);
        assert_eq!(art[0].metadata.as_ref().unwrap()["level"], "artifact");
        assert_eq!(got[3].message.as_ref().unwrap().message_id, "b1");
        assert_eq!(got[3].task_state, None);
        assert!(!n.is_done());
    }

    #[test]
    fn terminal_states_do_not_close_the_subscription_and_close_is_idempotent() {
        let (mut n, req, ctx) = start_noti(true);
        feed_noti(
            &mut n,
            vec![
                sse_head(&req),
                sse(&req, task("t1", &ctx, "TASK_STATE_WORKING")),
                sse(&req, status("t1", &ctx, "TASK_STATE_COMPLETED", "done")),
                sse(
                    &req,
                    status("t1", &ctx, "TASK_STATE_COMPLETED", "still here"),
                ),
            ],
            ms(1),
        );
        let outs = drain_noti(&mut n);
        assert_eq!(delivered(&outs).len(), 3);
        assert!(!outs.iter().any(|o| matches!(
            o,
            NotificationOutput::AbortTransmit { .. } | NotificationOutput::Ended(_)
        )));
        assert!(!n.is_done());
        n.close(ms(2)).unwrap();
        let outs = drain_noti(&mut n);
        assert_eq!(
            outs,
            vec![
                NotificationOutput::AbortTransmit { op: req.op },
                NotificationOutput::Ended(SubscriptionEnd::Closed)
            ]
        );
        n.close(ms(3)).unwrap();
        feed_noti(
            &mut n,
            vec![sse(&req, task("t1", &ctx, "TASK_STATE_WORKING"))],
            ms(4),
        );
        assert!(
            drain_noti(&mut n).is_empty(),
            "idempotent close; late bytes ignored"
        );
        assert_eq!(n.end(), Some(&SubscriptionEnd::Closed));
    }

    #[test]
    fn close_before_acknowledgement_fails_the_ack() {
        let (mut n, req, _) = start_noti(true);
        n.close(ms(1)).unwrap();
        let outs = drain_noti(&mut n);
        assert_eq!(outs[0], NotificationOutput::AbortTransmit { op: req.op });
        match &outs[1] {
            NotificationOutput::AcknowledgementFailed(f) => {
                assert_eq!(f.code, codes::CLOSED_BEFORE_ACK);
                assert_eq!(f.message, "closed before acknowledgement");
            }
            other => panic!("ACK failure expected, got {other:?}"),
        }
        assert_eq!(outs[2], NotificationOutput::Ended(SubscriptionEnd::Closed));
    }

    #[test]
    fn a_failed_first_state_fails_the_ack_but_keeps_delivering() {
        for (state, code) in [
            ("TASK_STATE_REJECTED", host::codes::REMOTE_TASK_REJECTED),
            ("TASK_STATE_FAILED", host::codes::REMOTE_TASK_FAILED),
            ("TASK_STATE_CANCELED", host::codes::REMOTE_TASK_CANCELED),
        ] {
            let (mut n, req, ctx) = start_noti(true);
            feed_noti(
                &mut n,
                vec![sse_head(&req), sse(&req, task("t1", &ctx, state))],
                ms(1),
            );
            let outs = drain_noti(&mut n);
            assert!(
                matches!(&outs[0], NotificationOutput::AcknowledgementFailed(f) if f.code == code)
            );
            assert_eq!(delivered(&outs).len(), 1);
            assert!(!n.is_done());
            // The agent ends the stream: the task is terminal, so it completes without reattaching.
            feed_noti(&mut n, vec![Input::ResponseEnd { op: req.op }], ms(2));
            assert_eq!(
                drain_noti(&mut n),
                vec![NotificationOutput::Ended(SubscriptionEnd::Completed)]
            );
        }
    }

    #[test]
    fn ack_timeout_fails_the_ack_and_closes_the_stream_never_a_success() {
        let (mut n, req, ctx) = start_noti(true);
        feed_noti(
            &mut n,
            vec![sse_head(&req), sse(&req, artifact("t1", &ctx, "x", false))],
            ms(1),
        );
        drain_noti(&mut n);
        n.handle_timeout(ms(4_999)).unwrap();
        assert!(drain_noti(&mut n).is_empty());
        n.handle_timeout(ms(5_000)).unwrap();
        let outs = drain_noti(&mut n);
        assert_eq!(outs[0], NotificationOutput::AbortTransmit { op: req.op });
        let NotificationOutput::AcknowledgementFailed(f) = &outs[1] else {
            panic!("{outs:?}")
        };
        assert_eq!(f.code, codes::ACK_TIMEOUT);
        assert!(
            matches!(&outs[2], NotificationOutput::Ended(SubscriptionEnd::Failed(f)) if f.code == codes::ACK_TIMEOUT)
        );
        assert!(!outs.contains(&NotificationOutput::Acknowledged));
        assert!(n.is_done());
        assert_eq!(n.poll_timeout(), None);
    }

    #[test]
    fn agent_ending_the_stream_with_a_terminal_task_completes() {
        let (mut n, req, ctx) = start_noti(true);
        feed_noti(
            &mut n,
            vec![
                sse_head(&req),
                sse(&req, task("t1", &ctx, "TASK_STATE_WORKING")),
                sse(&req, status("t1", &ctx, "TASK_STATE_COMPLETED", "bye")),
                Input::ResponseEnd { op: req.op },
            ],
            ms(1),
        );
        let outs = drain_noti(&mut n);
        assert_eq!(
            outs.last(),
            Some(&NotificationOutput::Ended(SubscriptionEnd::Completed))
        );
        assert!(
            !outs
                .iter()
                .any(|o| matches!(o, NotificationOutput::AbortTransmit { .. }))
        );
        assert!(n.is_done());
    }

    #[test]
    fn a_dropped_stream_reattaches_with_subscribe_to_task() {
        let (mut n, req, ctx) = start_noti(true);
        feed_noti(
            &mut n,
            vec![
                sse_head(&req),
                sse(&req, task("t1", &ctx, "TASK_STATE_WORKING")),
            ],
            ms(1),
        );
        drain_noti(&mut n);
        n.handle(
            Input::TransportFailed {
                op: req.op,
                error: TransportError {
                    kind: TransportErrorKind::Io,
                    message: "reset".into(),
                },
            },
            ms(10),
        )
        .unwrap();
        assert!(drain_noti(&mut n).is_empty());
        // The reattach policy's jittered backoff: between half and all of its 50 ms delay.
        let at = n.poll_timeout().expect("a reattach is armed");
        assert!((ms(35)..=ms(60)).contains(&at), "{at:?}");
        n.handle_timeout(at).unwrap();
        let sub = transmitted_noti(&drain_noti(&mut n)).remove(0);
        assert_eq!(sub.purpose, OpPurpose::Resubscribe);
        assert!(sub.streaming);
        assert_eq!(body(&sub)["method"], "SubscribeToTask");
        assert_eq!(body(&sub)["params"]["id"], "t1");
        feed_noti(
            &mut n,
            vec![
                sse_head(&sub),
                sse(&sub, task("t1", &ctx, "TASK_STATE_WORKING")),
            ],
            ms(61),
        );
        let outs = drain_noti(&mut n);
        assert_eq!(
            outs[0],
            NotificationOutput::Reattached {
                attempt: 1,
                task_id: "t1".into()
            }
        );
        assert!(matches!(outs[1], NotificationOutput::Delivered(_)));
        // The stream ends normally while the task is still WORKING: reattach again.
        feed_noti(&mut n, vec![Input::ResponseEnd { op: sub.op }], ms(70));
        let at = n.poll_timeout().expect("a reattach is armed again");
        assert!((ms(95)..=ms(120)).contains(&at), "{at:?}");
        n.handle_timeout(at).unwrap();
        let again = transmitted_noti(&drain_noti(&mut n));
        assert_eq!(again.len(), 1);
        // Every exchange has its own id, so a late chunk of a dropped stream is never taken
        // for the current stream's.
        assert!(req.op != sub.op && sub.op != again[0].op && req.op != again[0].op);
        feed_noti(
            &mut n,
            vec![sse(&req, status("t1", &ctx, "TASK_STATE_WORKING", "late"))],
            ms(121),
        );
        assert!(
            drain_noti(&mut n).is_empty(),
            "a stale exchange delivers nothing"
        );
    }

    #[test]
    fn reattachment_is_bounded_by_attempts_in_a_row() {
        let (mut n, req, ctx) = start_noti(true);
        feed_noti(
            &mut n,
            vec![
                sse_head(&req),
                sse(&req, task("t1", &ctx, "TASK_STATE_WORKING")),
                Input::ResponseEnd { op: req.op },
            ],
            ms(1),
        );
        drain_noti(&mut n);
        for _ in 0..2 {
            let now = n.poll_timeout().expect("a reattach is armed");
            n.handle_timeout(now).unwrap();
            let sub = transmitted_noti(&drain_noti(&mut n)).remove(0);
            // Each attempt's stream ends without any event.
            feed_noti(
                &mut n,
                vec![sse_head(&sub), Input::ResponseEnd { op: sub.op }],
                now,
            );
        }
        let outs = drain_noti(&mut n);
        let Some(NotificationOutput::Ended(SubscriptionEnd::Failed(f))) = outs.last() else {
            panic!("{outs:?}");
        };
        assert_eq!(f.code, codes::REATTACH_EXHAUSTED);
        // Every decision is in the details: two reattachments, then giving up.
        let attempts = f.details.as_ref().unwrap()["attempts"].as_array().unwrap();
        let next: Vec<&str> = attempts
            .iter()
            .map(|a| a["next"].as_str().unwrap())
            .collect();
        assert_eq!(next, ["resubscribe", "resubscribe", "give_up"]);
        assert!(attempts.iter().all(|a| a["fault"] == "stream_ended"));
        assert!(
            !outs
                .iter()
                .any(|o| matches!(o, NotificationOutput::Reattached { .. }))
        );
    }

    #[test]
    fn a_rejected_reattachment_fails_the_subscription() {
        let (mut n, req, ctx) = start_noti(true);
        feed_noti(
            &mut n,
            vec![
                sse_head(&req),
                sse(&req, task("t1", &ctx, "TASK_STATE_WORKING")),
                Input::ResponseEnd { op: req.op },
            ],
            ms(1),
        );
        n.handle_timeout(ms(51)).unwrap();
        let sub = transmitted_noti(&drain_noti(&mut n)).remove(0);
        let err = json!({"jsonrpc": "2.0", "id": rpc_id(&sub), "error": {"code": -32001, "message": "Task not found"}});
        feed_noti(
            &mut n,
            vec![
                Input::ResponseHead {
                    op: sub.op,
                    status: 200,
                    headers: vec![("content-type".into(), "application/json".into())],
                },
                Input::ResponseBody {
                    op: sub.op,
                    chunk: serde_json::to_vec(&err).unwrap(),
                },
                Input::ResponseEnd { op: sub.op },
            ],
            ms(52),
        );
        let outs = drain_noti(&mut n);
        assert!(
            matches!(outs.last(), Some(NotificationOutput::Ended(SubscriptionEnd::Failed(f))) if f.code == "a2a.task_not_found"),
            "{outs:?}"
        );
    }

    #[test]
    fn a_stream_that_ends_before_any_state_fails_and_a_rejected_send_fails() {
        let (mut n, req, _) = start_noti(true);
        feed_noti(
            &mut n,
            vec![sse_head(&req), Input::ResponseEnd { op: req.op }],
            ms(1),
        );
        let outs = drain_noti(&mut n);
        assert!(
            matches!(&outs[0], NotificationOutput::AcknowledgementFailed(f) if f.code == host::codes::EMPTY_STREAM)
        );
        assert!(matches!(
            &outs[1],
            NotificationOutput::Ended(SubscriptionEnd::Failed(_))
        ));

        let (mut n, req, _) = start_noti(true);
        n.handle(
            Input::TransportFailed {
                op: req.op,
                error: TransportError {
                    kind: TransportErrorKind::Connect,
                    message: "refused".into(),
                },
            },
            ms(1),
        )
        .unwrap();
        let outs = drain_noti(&mut n);
        assert!(
            matches!(&outs[1], NotificationOutput::Ended(SubscriptionEnd::Failed(f)) if f.code == host::codes::REMOTE_NO_RESPONSE)
        );

        let (mut n, req, ctx) = start_noti(true);
        let err = json!({"jsonrpc": "2.0", "id": rpc_id(&req), "error": {"code": -32602, "message": "no",
            "data": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "SUBSCRIPTION_DENIED", "domain": "x"}]}});
        feed_noti(
            &mut n,
            vec![
                Input::ResponseHead {
                    op: req.op,
                    status: 200,
                    headers: vec![("content-type".into(), "application/json".into())],
                },
                Input::ResponseBody {
                    op: req.op,
                    chunk: serde_json::to_vec(&err).unwrap(),
                },
                Input::ResponseEnd { op: req.op },
            ],
            ms(1),
        );
        let outs = drain_noti(&mut n);
        assert!(
            matches!(&outs[0], NotificationOutput::AcknowledgementFailed(f) if f.code == "a2a.subscription_denied")
        );
        let _ = ctx;
    }

    #[test]
    fn without_streaming_the_unary_answer_is_the_ack_and_the_whole_stream() {
        let (mut n, req, ctx) = start_noti(false);
        assert_eq!(body(&req)["method"], "SendMessage");
        assert!(!req.streaming);
        feed_noti(
            &mut n,
            unary(&req, task("t1", &ctx, "TASK_STATE_WORKING")),
            ms(1),
        );
        let outs = drain_noti(&mut n);
        assert_eq!(outs[0], NotificationOutput::Acknowledged);
        assert!(matches!(outs[1], NotificationOutput::Delivered(_)));
        assert_eq!(
            outs[2],
            NotificationOutput::Ended(SubscriptionEnd::Completed)
        );
        assert_eq!(outs.len(), 3, "no reattachment without streaming");
    }

    #[test]
    fn a_changed_task_id_fails_the_subscription() {
        let (mut n, req, ctx) = start_noti(true);
        feed_noti(
            &mut n,
            vec![
                sse_head(&req),
                sse(&req, task("t1", &ctx, "TASK_STATE_WORKING")),
                sse(&req, task("t2", &ctx, "TASK_STATE_WORKING")),
            ],
            ms(1),
        );
        let outs = drain_noti(&mut n);
        assert!(
            matches!(outs.last(), Some(NotificationOutput::Ended(SubscriptionEnd::Failed(f))) if f.code == host::codes::REMOTE_IDENTITY_CHANGED)
        );
        assert!(outs.contains(&NotificationOutput::AbortTransmit { op: req.op }));
    }
}
