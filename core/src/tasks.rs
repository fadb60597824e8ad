//! Task management outside any workflow: look at, list, cancel and follow the tasks an agent
//! holds (`GetTask`, `ListTasks`, `CancelTask`, `SubscribeToTask`).
//!
//! One [`TaskOperation`] is one call, a sans-IO machine with the same contract as
//! [`Run`](crate::Run): feed [`Input`]s with [`TaskOperation::handle`] and the time they
//! happened, drain [`TaskOutput`]s with [`TaskOperation::poll_output`], and call
//! [`TaskOperation::handle_timeout`] when the clock reaches [`TaskOperation::poll_timeout`].
//! It addresses the agent through the same [`AgentDirectory`] entry (card, chosen interface,
//! binding, tenant) as a workflow's subtasks, so the driver sends its request with the same
//! authentication, TLS and transport.
//!
//! ## Rules
//!
//! * **Checked before anything is sent**: the agent is in the directory
//!   ([`host::codes::AGENT_NOT_FOUND`]); a task id is not blank; a page size is between 1 and
//!   100; a history length fits the wire's `int32` ([`codes::INVALID_REQUEST`], naming the
//!   field). A violation builds no machine.
//! * **One request, no retry**: the call goes out once; what happens to it is the caller's
//!   answer. A unary call (get, list, cancel) has one deadline, [`TaskOperationConfig::budget`],
//!   for the whole answer ([`host::codes::TIMEOUT`] when it passes); a subscription has none.
//! * **Answers**: get and cancel answer with the task, list with a [`TaskPage`] (its
//!   `next_page_token` is `None` on the last page), a subscription with every stream item as a
//!   [`TaskOutput::Event`] and [`TaskAnswer::StreamEnded`] when the agent ends the stream.
//! * **Errors** are the same typed codes as in workflows: a rejection is its `a2a.<reason>`
//!   with the HTTP status, JSON-RPC code, reason, details and `retryAfter` as details; bad
//!   bytes are `a2a.invalid_agent_response` (or a size-limit code); a transport failure is
//!   `remote.no_response`; a task with another id than the one asked for is
//!   `remote.identity_changed`; a subscription stream that ends without any event is
//!   `a2a.empty_stream`.
//! * **Cancel**: [`Input::Cancel`] drops the exchange; a unary call then fails with
//!   [`host::codes::CANCELLED`], a subscription ends with [`TaskAnswer::Closed`].
//!
//! After [`TaskOutput::Finished`] the machine is [done](TaskOperation::is_done) and ignores
//! every input.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::a2a::{
    A2aCall, DecodeLimits, ListTasksParams, ProtocolError, ResponseDecoder, ResponseItem,
    StreamResponse, Task, TaskPage,
};
use crate::agents::{AgentDirectory, AgentEntry};
use crate::exchange::{self, ExchangeSpec};
use crate::host;
use crate::ids::{IdGenerator, OpId};
use crate::io::{ApiMisuse, Correlation, HttpRequest, Input, OpPurpose};
use crate::time::Timestamp;
use crate::tracectx::TraceContext;

/// Stable codes of this module besides the shared `a2a.*`, `remote.*` and `workflow.*` ones.
pub mod codes {
    /// A task call with an argument the protocol cannot carry (blank task id, page size out
    /// of range, …); nothing was sent.
    pub const INVALID_REQUEST: &str = "task.invalid_request";
}

/// The largest page the protocol allows.
pub const MAX_PAGE_SIZE: u32 = 100;

/// One task-management call.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskCommand {
    /// `GetTask`: the task as the agent holds it now.
    Get {
        /// The agent's task id.
        task_id: String,
        /// History messages to include (`None`: the agent's default).
        history_length: Option<u32>,
    },
    /// `ListTasks`: one page of the agent's tasks.
    List(ListTasksParams),
    /// `CancelTask`: asks the agent to cancel the task; answers with the task after it.
    Cancel {
        /// The agent's task id.
        task_id: String,
    },
    /// `SubscribeToTask`: the task's events from now on, until the agent ends the stream.
    Subscribe {
        /// The agent's task id.
        task_id: String,
    },
}

impl TaskCommand {
    /// The operation's name (`get_task`, `list_tasks`, `cancel_task`, `subscribe_to_task`).
    pub fn name(&self) -> &'static str {
        match self {
            TaskCommand::Get { .. } => "get_task",
            TaskCommand::List(_) => "list_tasks",
            TaskCommand::Cancel { .. } => "cancel_task",
            TaskCommand::Subscribe { .. } => "subscribe_to_task",
        }
    }

    fn task_id(&self) -> Option<&str> {
        match self {
            TaskCommand::Get { task_id, .. }
            | TaskCommand::Cancel { task_id }
            | TaskCommand::Subscribe { task_id } => Some(task_id),
            TaskCommand::List(_) => None,
        }
    }
}

/// Settings of one [`TaskOperation`].
#[derive(Debug, Clone, PartialEq)]
pub struct TaskOperationConfig {
    /// Seed of the id generator (JSON-RPC ids).
    pub seed: u64,
    /// Deadline of a unary call's whole answer (default 600 s); subscriptions have none.
    pub budget: Duration,
    /// Size limits for decoding responses.
    pub decode_limits: DecodeLimits,
}

impl Default for TaskOperationConfig {
    fn default() -> Self {
        TaskOperationConfig {
            seed: 0,
            budget: Duration::from_secs(600),
            decode_limits: DecodeLimits::default(),
        }
    }
}

/// Why a task call failed: a stable code and evidence.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct TaskError {
    /// Stable code (`a2a.<reason>`, `remote.*`, `workflow.*`, [`codes`]).
    pub code: String,
    /// Human-readable message.
    pub message: String,
    /// Structured evidence (HTTP status, JSON-RPC code, reason, `retryAfter`, transport kind),
    /// when any.
    pub details: Option<Value>,
}

impl TaskError {
    /// An error with this code and message and no details.
    pub fn new(code: &str, message: impl Into<String>) -> TaskError {
        TaskError {
            code: code.to_owned(),
            message: message.into(),
            details: None,
        }
    }

    fn protocol(e: ProtocolError) -> TaskError {
        let details = e.evidence();
        TaskError {
            code: e.code,
            message: e.message,
            details: Some(details),
        }
    }
}

/// The successful end of a task call.
#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::large_enum_variant)] // moved once, at the end
pub enum TaskAnswer {
    /// The task (get, cancel).
    Task(Task),
    /// One page of tasks (list).
    Page(TaskPage),
    /// The agent ended the subscription stream.
    StreamEnded,
    /// The caller closed the subscription.
    Closed,
}

/// Something a [`TaskOperation`] wants done or tells.
#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::large_enum_variant)] // moved, never copied
#[non_exhaustive]
pub enum TaskOutput {
    /// Carry out this HTTP exchange (authentication is the driver's business).
    Transmit(HttpRequest),
    /// Drop this exchange.
    AbortTransmit {
        /// The exchange.
        op: OpId,
    },
    /// One item of a subscription stream, in order.
    Event(StreamResponse),
    /// The call is over; nothing follows.
    Finished(Result<TaskAnswer, TaskError>),
}

/// One task-management call (see the module docs).
#[derive(Debug)]
pub struct TaskOperation {
    command: TaskCommand,
    agent: String,
    op: OpId,
    decoder: Option<ResponseDecoder>,
    outputs: VecDeque<TaskOutput>,
    deadline: Option<Timestamp>,
    now: Timestamp,
    tasks: Vec<Task>,
    done: bool,
}

fn invalid(field: &str, why: &str) -> TaskError {
    TaskError::new(codes::INVALID_REQUEST, format!("{field}: {why}"))
        .with_details(json!({ "field": field }))
}

impl TaskError {
    fn with_details(mut self, details: Value) -> TaskError {
        self.details = Some(details);
        self
    }
}

/// The preconditions of a command: every argument can be carried by the protocol.
fn check(command: &TaskCommand) -> Result<(), TaskError> {
    if let Some(id) = command.task_id() {
        if id.trim().is_empty() {
            return Err(invalid("task_id", "must not be blank"));
        }
    }
    let history = match command {
        TaskCommand::Get { history_length, .. } => *history_length,
        TaskCommand::List(p) => p.history_length,
        _ => None,
    };
    if history.is_some_and(|h| i32::try_from(h).is_err()) {
        return Err(invalid(
            "history_length",
            "must fit a 32-bit signed integer",
        ));
    }
    if let TaskCommand::List(p) = command {
        if let Some(n) = p.page_size {
            if n == 0 || n > MAX_PAGE_SIZE {
                return Err(invalid(
                    "page_size",
                    &format!("must be between 1 and {MAX_PAGE_SIZE}, got {n}"),
                ));
            }
        }
    }
    Ok(())
}

impl TaskOperation {
    /// Checks the command and queues its request to `agent`; `Err` when nothing may be sent.
    pub fn new(
        agents: &AgentDirectory,
        agent: &str,
        command: TaskCommand,
        config: TaskOperationConfig,
    ) -> Result<TaskOperation, TaskError> {
        Self::build(agents, agent, command, config)
    }

    // Outside `new`, which cargo-mutants does not mutate.
    fn build(
        agents: &AgentDirectory,
        agent: &str,
        command: TaskCommand,
        config: TaskOperationConfig,
    ) -> Result<TaskOperation, TaskError> {
        let entry = agents.get(agent).ok_or_else(|| {
            TaskError::new(
                host::codes::AGENT_NOT_FOUND,
                format!("agent {agent:?} is not in the engine's cards"),
            )
        })?;
        check(&command)?;
        let mut ids = IdGenerator::new(config.seed);
        let rpc_id = ids.next_uuid();
        let op = OpId(1);
        let trace = TraceContext::new(config.seed, None, None);
        let streaming = matches!(command, TaskCommand::Subscribe { .. });
        let timeout = (!streaming).then_some(config.budget);
        let (request, decoder) = encode(
            entry,
            &command,
            rpc_id,
            op,
            config.decode_limits,
            timeout,
            &trace,
        )?;
        let deadline = (!streaming).then(|| Timestamp::ZERO.saturating_add(config.budget));
        Ok(TaskOperation {
            command,
            agent: agent.to_owned(),
            op,
            decoder: Some(decoder),
            outputs: VecDeque::from([TaskOutput::Transmit(request)]),
            deadline,
            now: Timestamp::ZERO,
            tasks: Vec::new(),
            done: false,
        })
    }

    /// The command this machine carries out.
    pub fn command(&self) -> &TaskCommand {
        &self.command
    }

    /// The next thing to do or tell, in order.
    pub fn poll_output(&mut self) -> Option<TaskOutput> {
        self.outputs.pop_front()
    }

    /// The deadline of the answer, while one is awaited.
    pub fn poll_timeout(&self) -> Option<Timestamp> {
        if self.done { None } else { self.deadline }
    }

    /// Whether the call is over (its [`TaskOutput::Finished`] was queued).
    pub fn is_done(&self) -> bool {
        self.done
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

    /// The clock reached [`poll_timeout`](Self::poll_timeout): the answer is late.
    pub fn handle_timeout(&mut self, now: Timestamp) -> Result<(), ApiMisuse> {
        self.advance(now)?;
        if !self.done && self.deadline.is_some_and(|d| d <= now) {
            let message = format!(
                "{} on agent {} got no answer in time",
                self.command.name(),
                self.agent
            );
            self.abort();
            self.finish(Err(TaskError::new(host::codes::TIMEOUT, message)));
        }
        Ok(())
    }

    /// Feeds one input; inputs for other exchanges, and everything after the end, are ignored.
    pub fn handle(&mut self, input: Input, now: Timestamp) -> Result<(), ApiMisuse> {
        self.advance(now)?;
        if self.done {
            return Ok(());
        }
        let mut items = Vec::new();
        match input {
            Input::ResponseHead { op, .. }
            | Input::ResponseBody { op, .. }
            | Input::ResponseTrailers { op, .. }
            | Input::ResponseEnd { op }
                if op == self.op =>
            {
                if let Some(d) = self.decoder.as_mut() {
                    items = exchange::decode(d, input);
                }
            }
            Input::TransportFailed { op, error } if op == self.op => {
                self.decoder = None;
                let details = json!({ "transport": error.kind, "message": error.message });
                let message = format!(
                    "agent {} did not answer {}: {}",
                    self.agent,
                    self.command.name(),
                    error.message
                );
                self.finish(Err(TaskError::new(
                    host::codes::REMOTE_NO_RESPONSE,
                    message,
                )
                .with_details(details)));
            }
            Input::Cancel => {
                self.abort();
                let end = match self.command {
                    TaskCommand::Subscribe { .. } => Ok(TaskAnswer::Closed),
                    _ => Err(TaskError::new(
                        host::codes::CANCELLED,
                        format!("{} was cancelled", self.command.name()),
                    )),
                };
                self.finish(end);
            }
            _ => {}
        }
        for item in items {
            if self.done {
                break;
            }
            self.on_item(item);
        }
        Ok(())
    }

    fn on_item(&mut self, item: ResponseItem) {
        match item {
            ResponseItem::Event(event) => self.on_event(event),
            ResponseItem::Rejected(e) | ResponseItem::Malformed(e) => {
                self.abort();
                self.finish(Err(TaskError::protocol(e)));
            }
            ResponseItem::End { events } => {
                let page = self.decoder.take().and_then(|d| d.task_page().cloned());
                let end = match &self.command {
                    TaskCommand::Get { .. } | TaskCommand::Cancel { .. } => {
                        match self.tasks.pop() {
                            Some(task) => Ok(TaskAnswer::Task(task)),
                            None => Err(TaskError::new(
                                crate::a2a::error::codes::INVALID_AGENT_RESPONSE,
                                format!("{} answered without a task", self.command.name()),
                            )),
                        }
                    }
                    TaskCommand::List(_) => {
                        let mut page = page.unwrap_or_default();
                        page.tasks = std::mem::take(&mut self.tasks);
                        Ok(TaskAnswer::Page(page))
                    }
                    TaskCommand::Subscribe { .. } if events == 0 => Err(TaskError::new(
                        host::codes::EMPTY_STREAM,
                        "the subscription stream ended without any event",
                    )),
                    TaskCommand::Subscribe { .. } => Ok(TaskAnswer::StreamEnded),
                };
                self.finish(end);
            }
        }
    }

    fn on_event(&mut self, event: StreamResponse) {
        let asked = self.command.task_id().map(str::to_owned);
        if let (Some(asked), Some(got)) = (asked.as_deref(), event.task_id()) {
            if !got.is_empty() && got != asked {
                self.abort();
                self.finish(Err(TaskError::new(
                    host::codes::REMOTE_IDENTITY_CHANGED,
                    format!("asked about task {asked:?}, the agent answered about {got:?}"),
                )));
                return;
            }
        }
        match (&self.command, event) {
            (TaskCommand::Subscribe { .. }, event) => {
                self.outputs.push_back(TaskOutput::Event(event));
            }
            (_, StreamResponse::Task(task)) => self.tasks.push(task),
            (_, _) => {
                self.abort();
                self.finish(Err(TaskError::new(
                    crate::a2a::error::codes::INVALID_AGENT_RESPONSE,
                    format!(
                        "{} answered with something else than a task",
                        self.command.name()
                    ),
                )));
            }
        }
    }

    fn abort(&mut self) {
        if self.decoder.take().is_some() {
            self.outputs
                .push_back(TaskOutput::AbortTransmit { op: self.op });
        }
    }

    fn finish(&mut self, end: Result<TaskAnswer, TaskError>) {
        self.done = true;
        self.outputs.push_back(TaskOutput::Finished(end));
    }
}

/// The request of `command` to `entry` and the decoder of its answer; `timeout` is the time
/// the answer may take (gRPC sends it as `grpc-timeout`).
fn encode(
    entry: &AgentEntry,
    command: &TaskCommand,
    rpc_id: String,
    op: OpId,
    limits: DecodeLimits,
    timeout: Option<Duration>,
    trace: &TraceContext,
) -> Result<(HttpRequest, ResponseDecoder), TaskError> {
    let history = |h: Option<u32>| h.map(|h| i32::try_from(h).unwrap_or(i32::MAX));
    let (call, purpose) = match command {
        TaskCommand::Get {
            task_id,
            history_length,
        } => (
            A2aCall::GetTask {
                task_id,
                history_length: history(*history_length),
            },
            OpPurpose::Poll,
        ),
        TaskCommand::List(params) => (A2aCall::ListTasksPage(params), OpPurpose::Lookup),
        TaskCommand::Cancel { task_id } => (A2aCall::CancelTask { task_id }, OpPurpose::Cancel),
        TaskCommand::Subscribe { task_id } => {
            (A2aCall::SubscribeToTask { task_id }, OpPurpose::Resubscribe)
        }
    };
    let spec = ExchangeSpec {
        op,
        rpc_id,
        purpose,
        extensions: &[],
        timeout,
        limits,
        correlation: Arc::new(Correlation {
            execution_id: "".into(),
            step: command.name().into(),
            subtask_index: 0,
            logical_task_id: "".into(),
            context_id: String::new(),
            remote_task_id: command.task_id().map(str::to_owned),
        }),
        trace,
    };
    exchange::open(entry, &call, spec).map_err(|e| {
        TaskError::new(
            host::codes::INVALID_CONTENT,
            format!("the {} request cannot be encoded: {e}", command.name()),
        )
    })
}
