//! The lifecycle of one dispatched A2A task: content from the host, send, stream or poll,
//! Negotiation-T exchanges, result, and cleanup of a known non-final remote task.
//!
//! One [`Invocation`] exists per remote subtask activation. It has a single budget that
//! covers `on_task`, the send, waiting and negotiation. It uses a fresh A2A context id, keeps
//! the same remote task identity throughout, and decides success only on
//! `TASK_STATE_COMPLETED` or a standalone message.
//!
//! Faults of the network or of an overloaded agent follow [`crate::retry`]: a send that
//! provably never reached the agent is sent again unchanged, a known task whose observation
//! broke is found again with `SubscribeToTask` or `GetTask` (phase `Backoff`, then a new
//! exchange), and a send whose answer was lost is looked up with `ListTasks` by context id.
//!
//! ## Negotiation-T rules
//!
//! * Activation is the host's choice: the first content must list the Negotiation-T URI in
//!   `extensions`. Otherwise any `INPUT_REQUIRED` (or Propose) fails as unsupported.
//! * **In-task mode**: `INPUT_REQUIRED` whose response carries a valid Propose (context parsed
//!   from message, task and artifact metadata layers, identical where repeated; performative
//!   `PROPOSE`; not exhausted; round not regressed; `maxRounds` unchanged) is handed to
//!   `on_negotiation`. The reply is sent on the same `taskId` and `contextId`.
//! * **Pre-task mode** (the seeds leave details open; these are our rules): a bare message (no
//!   task) that carries negotiation metadata is a pre-task Propose. It is correlated by the
//!   invocation's `contextId` (the message must carry it or none) plus the negotiation id; the
//!   reply carries the same `contextId` and **no** `taskId`. Invalid negotiation metadata on a
//!   bare message fails with `negotiation.invalid`. A bare message without negotiation metadata
//!   is an ordinary completion. A pre-task Propose that arrives after the agent created a task
//!   for this invocation is a protocol violation (`negotiation.invalid`): the agent must then
//!   use `INPUT_REQUIRED`.
//! * A repeated event for an already answered `(task or context, negotiation id, round)` does not
//!   call the host again: the engine observes with `GetTask` (or, pre-task, waits).
//! * `max_negotiation_exchanges` bounds local exchanges; exhaustion, timeout, a host failure or
//!   a `Stop` fail locally, generate no Abort, and cancel the known non-final remote task.
//! * After an Abort was sent, `COMPLETED` is still a failure (`negotiation.aborted`).

// A failure is built at most once per task decision, never on a hot path; boxing it would only
// add an allocation.
#![allow(clippy::result_large_err)]

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::SharedStr;
use crate::a2a::{
    A2aCall, CallKind, Message, Part, ProtocolError, ReceivedMessage, RemoteTaskStatus,
    ResponseAccumulator, ResponseItem, Role, SendMessageConfiguration, SendMessageRequest,
    StreamResponse, TaskState, check_required_extensions,
};
use crate::a2at::{self, NegotiationContext, Performative};
use crate::agents::{AgentDirectory, AgentEntry};
use crate::config::RunConfig;
use crate::event::EventType;
use crate::exchange::{self, ExchangeSpec, track_identity};
use crate::host::{
    Exchange, HostError, HostReply, HostRequest, InputDecision, InputRequest, MessageContent,
    NegotiationReply, NegotiationRequest, TaskExecutionResult, TaskRequest, TaskStatus, codes,
};
use crate::ids::{CallId, OpId, TaskKey};
use crate::io::{Correlation, Input, OpPurpose, Output, TransportError, TransportErrorKind};
use crate::machine::{CallOwner, Ctx, OpEntry, TimerKey, emit, emit_deferred};
use crate::retry::{self, AmbiguousSend, Attempts, FailedExchange, Fault, Recovery, RetryAttempt};
use crate::run::ScheduledRetry;
use crate::time::Timestamp;

/// Where an invocation is.
#[derive(Debug, Clone, PartialEq)]
enum Phase {
    /// Waiting for `on_task`.
    Composing(CallId),
    /// An exchange (send, reply or poll) is open.
    Exchanging(OpId),
    /// Waiting for the next poll timer.
    Waiting,
    /// Waiting for the backoff before the next retry.
    Backoff(Recovery),
    /// Waiting for `on_input_required` (a plain INPUT_REQUIRED).
    AnsweringInput(CallId),
    /// Waiting for `on_negotiation`.
    Negotiating {
        call: CallId,
        context: NegotiationContext,
        received: Box<ReceivedMessage>,
    },
    /// Result decided.
    Done,
}

/// The last message sent, kept so that a send that provably never reached the agent can go
/// again unchanged.
#[derive(Debug, Clone)]
struct SentMessage {
    message: Message,
    extensions: Vec<String>,
    purpose: OpPurpose,
}

/// Everything an invocation borrows from its run while it handles one input.
pub(crate) struct Env<'a> {
    pub ctx: &'a mut Ctx,
    pub agents: &'a AgentDirectory,
    pub config: &'a RunConfig,
}

/// A failure decided by the invocation.
#[derive(Debug)]
struct Failure {
    status: TaskStatus,
    code: String,
    message: String,
    details: Option<Value>,
}

impl Failure {
    fn new(code: &str, message: impl Into<String>) -> Self {
        Failure {
            status: TaskStatus::Failed,
            code: code.into(),
            message: message.into(),
            details: None,
        }
    }

    fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }
}

/// The subtask succeeded. Its result is built by [`Invocation::conclude`], after the cleanup,
/// from what the invocation holds.
#[derive(Debug)]
struct Succeeded;

type Step = Result<Option<Succeeded>, Failure>;

/// One remote subtask activation.
#[derive(Debug)]
pub(crate) struct Invocation {
    key: TaskKey,
    /// Shared with the host's `on_task` question and the later negotiation and input questions.
    request: Arc<TaskRequest>,
    context_id: String,
    phase: Phase,
    acc: ResponseAccumulator,
    remote_task_id: Option<String>,
    last_state: Option<TaskState>,
    original: Option<Arc<MessageContent>>,
    deadline: Timestamp,
    /// Driven outside a workflow: no host is asked anything after the content.
    standalone: bool,
    negotiation_active: bool,
    exchanges: Vec<Exchange>,
    /// Follow-ups the host sent on plain INPUT_REQUIRED states.
    input_replies: u32,
    answered: BTreeSet<(String, u32)>,
    last_context: Vec<(String, u32, u32)>,
    aborted: bool,
    pre_task: bool,
    /// What the open exchange is: its call, why it was sent and how many events it delivered.
    exchange_kind: CallKind,
    exchange_purpose: OpPurpose,
    exchange_events: usize,
    last_send: Option<Box<SentMessage>>,
    /// The agent rejected `SubscribeToTask` once: observe with `GetTask` from then on.
    subscribe_unsupported: bool,
    /// Faults retried since the last successful observation, and every retry decision
    /// (reported in the error details when the subtask fails).
    attempts: Attempts,
    /// The failure an unknown-outcome send gives when the task lookup does not find its task.
    lookup_failure: Option<Box<Failure>>,
    /// The pending lookup follows a restart of the engine: finding no task resends the last
    /// message instead of failing (the agent can de-duplicate it by its `messageId`).
    resend_if_not_found: bool,
    /// A send may have been processed without its answer arriving, and no lookup has been
    /// opened for it since: ending now owes the agent a cleanup lookup.
    unconfirmed_send: bool,
}

impl Invocation {
    /// Starts the activation: asks the host for content and arms the budget.
    pub fn start(key: TaskKey, request: TaskRequest, env: &mut Env<'_>) -> Self {
        let mut invocation = Invocation::build(key, request, false, env);
        let call = env.ctx.new_call(CallOwner::Invocation(key));
        env.ctx.push(Output::CallHost {
            call,
            request: HostRequest::Task(Arc::clone(&invocation.request)),
        });
        invocation.phase = Phase::Composing(call);
        invocation
    }

    /// Starts an activation driven outside a workflow, whose content is already known: it is
    /// sent at once, and no host is asked anything later (Negotiation-T never activates, a
    /// plain `INPUT_REQUIRED` is unsupported). Budget, polling, retries and cleanup follow the
    /// same rules as a workflow subtask. The result is `Some` when the content is refused.
    pub fn start_sending(
        key: TaskKey,
        request: TaskRequest,
        content: MessageContent,
        env: &mut Env<'_>,
    ) -> (Self, Option<Arc<TaskExecutionResult>>) {
        let mut invocation = Invocation::build(key, request, true, env);
        let step = invocation.on_content(Ok(content), env);
        let result = invocation.conclude(step, env);
        (invocation, result)
    }

    /// A fresh context id and the armed budget; the phase is set by the caller.
    fn build(key: TaskKey, request: TaskRequest, standalone: bool, env: &mut Env<'_>) -> Self {
        let context_id = env.ctx.ids.next_uuid();
        let deadline = env.ctx.now.saturating_add(env.config.task_budget);
        env.ctx.set_timer(TimerKey::TaskDeadline(key), deadline);
        Invocation {
            key,
            request: Arc::new(request),
            context_id,
            phase: Phase::Waiting,
            acc: ResponseAccumulator::new(),
            remote_task_id: None,
            last_state: None,
            original: None,
            deadline,
            standalone,
            negotiation_active: false,
            exchanges: Vec::new(),
            input_replies: 0,
            answered: BTreeSet::new(),
            last_context: Vec::new(),
            aborted: false,
            pre_task: false,
            exchange_kind: CallKind::SendMessage,
            exchange_purpose: OpPurpose::Send,
            exchange_events: 0,
            last_send: None,
            subscribe_unsupported: false,
            attempts: Attempts::default(),
            lookup_failure: None,
            resend_if_not_found: false,
            unconfirmed_send: false,
        }
    }

    /// The A2A context id of this activation.
    pub fn context_id(&self) -> &str {
        &self.context_id
    }

    /// The last task state the agent reported.
    pub fn last_state(&self) -> Option<TaskState> {
        self.last_state
    }

    /// The text of the assembled answer so far (diagnostics).
    pub fn text(&self) -> String {
        self.acc.text()
    }

    fn agent<'a>(&self, env: &Env<'a>) -> Option<&'a AgentEntry> {
        env.agents.get(&self.request.agent_name)
    }

    /// A host call owned by this invocation finished.
    pub fn on_host_reply(
        &mut self,
        call: CallId,
        reply: HostReply,
        env: &mut Env<'_>,
    ) -> Option<Arc<TaskExecutionResult>> {
        let step = match (&self.phase, reply) {
            (Phase::Composing(c), HostReply::Task(answer)) if *c == call => {
                self.on_content(answer, env)
            }
            (Phase::Negotiating { call: c, .. }, HostReply::Negotiation(answer)) if *c == call => {
                self.on_negotiation_reply(answer, env)
            }
            (Phase::AnsweringInput(c), HostReply::InputRequired(answer)) if *c == call => {
                self.on_input_decision(answer, env)
            }
            _ => Ok(None),
        };
        self.conclude(step, env)
    }

    /// Items decoded from one exchange's response.
    pub fn on_items(
        &mut self,
        op: OpId,
        items: Vec<ResponseItem>,
        env: &mut Env<'_>,
    ) -> Option<Arc<TaskExecutionResult>> {
        let step = self.handle_items(op, items, env);
        self.conclude(step, env)
    }

    /// An exchange failed at the transport level.
    pub fn on_transport_failed(
        &mut self,
        op: OpId,
        error: TransportError,
        env: &mut Env<'_>,
    ) -> Option<Arc<TaskExecutionResult>> {
        if self.phase != Phase::Exchanging(op) {
            return None;
        }
        env.ctx.ops.remove(&op);
        let failure = Failure::new(
            codes::REMOTE_NO_RESPONSE,
            format!(
                "agent {} did not answer: {}",
                self.request.agent_name, error.message
            ),
        )
        .with_details(json!({ "transport": error.kind, "message": error.message }));
        let step = self.recover(Fault::Transport(error.kind), failure, env);
        self.conclude(step, env)
    }

    /// The backoff before a retry ended: carry the retry out.
    pub fn on_retry_timer(&mut self, env: &mut Env<'_>) -> Option<Arc<TaskExecutionResult>> {
        let Phase::Backoff(recovery) = self.phase else {
            return None;
        };
        let step = match recovery {
            Recovery::Resend => match self.last_send.clone() {
                Some(sent) => self
                    .send_message(sent.message, &sent.extensions, sent.purpose, env)
                    .map(|_| None),
                None => Err(Failure::new(
                    codes::REMOTE_NO_RESPONSE,
                    "nothing to resend: no message was sent",
                )),
            },
            Recovery::Observe => self.observe_again(env).map(|_| None),
            Recovery::Lookup => {
                let context_id = self.context_id.clone();
                self.transmit(&lookup_call(&context_id), OpPurpose::Lookup, &[], env)
                    .map(|_| None)
            }
        };
        self.conclude(step, env)
    }

    /// Opens the exchange that finds the known task again: `SubscribeToTask` when the agent
    /// streams (and has not refused it), else `GetTask`.
    fn observe_again(&mut self, env: &mut Env<'_>) -> Result<(), Failure> {
        let Some(task_id) = self.remote_task_id.clone() else {
            return Err(Failure::new(
                codes::EMPTY_STREAM,
                "nothing to observe: the agent created no task",
            ));
        };
        if self.resubscribes(env) {
            let call = A2aCall::SubscribeToTask { task_id: &task_id };
            self.transmit(&call, OpPurpose::Resubscribe, &[], env)
        } else {
            let call = A2aCall::GetTask {
                task_id: &task_id,
                history_length: env.config.history_length,
            };
            self.transmit(&call, OpPurpose::Poll, &[], env)
        }
    }

    /// Whether the task is found again by subscribing: the agent streams and has not refused it.
    fn resubscribes(&self, env: &Env<'_>) -> bool {
        self.agent(env).is_some_and(|a| a.streaming) && !self.subscribe_unsupported
    }

    /// Decides whether `fault` on the open exchange is retried (see [`crate::retry`]); returns
    /// `failure` (what the fault gives without a retry policy) when it is not, or when the
    /// policy or the budget is used up.
    fn recover(&mut self, fault: Fault, failure: Failure, env: &mut Env<'_>) -> Step {
        let recovery = self.recovery_for(&fault);
        if recovery == Some(Recovery::Lookup)
            && matches!(self.exchange_purpose, OpPurpose::Send | OpPurpose::Reply)
        {
            self.unconfirmed_send = true;
        }
        let ambiguous = self.ambiguous_after_restart(&failure);
        let failure = self.original_failure(failure);
        let Some(recovery) = recovery else {
            return self.give_up(ambiguous, failure, env);
        };
        if !self.schedule_retry(recovery, &fault, env) {
            return self.give_up(ambiguous, failure, env);
        }
        if recovery == Recovery::Lookup {
            self.lookup_failure = Some(Box::new(failure));
            if matches!(fault, Fault::Transport(TransportErrorKind::Restarted)) {
                self.resend_if_not_found = true;
            }
        }
        Ok(None)
    }

    /// The end of a fault that is not retried: the failure, unless the fault left a send open
    /// at a restart ambiguous and the run's policy is to send the same message again.
    fn give_up(&mut self, ambiguous: Option<Failure>, failure: Failure, env: &mut Env<'_>) -> Step {
        let Some(ambiguous) = ambiguous else {
            return Err(failure);
        };
        match (env.config.ambiguous_send, self.last_send.clone()) {
            (AmbiguousSend::Resend, Some(sent)) => {
                // The policy says the agent de-duplicates by message id: the copy stays
                // resendable if its own outcome is lost too.
                self.send_message(sent.message, &sent.extensions, sent.purpose, env)?;
                Ok(None)
            }
            _ => Err(ambiguous),
        }
    }

    /// What a failed lookup of a send open at a restart gives when it is not retried: after a
    /// restart the send's own fault says nothing, what failed is telling whether the message
    /// was processed, and sending it again could duplicate it.
    fn ambiguous_after_restart(&self, lookup: &Failure) -> Option<Failure> {
        if self.exchange_purpose != OpPurpose::Lookup || !self.resend_if_not_found {
            return None;
        }
        let message = format!(
            "the engine restarted while sending to agent {}, which cannot tell (ListTasks) \
             whether the message became a task: {}",
            self.request.agent_name, lookup.message
        );
        Some(
            Failure::new(codes::RUN_RESUME_AMBIGUOUS, message)
                .with_details(json!({ "lookup": lookup.code, "lookupDetails": lookup.details })),
        )
    }

    /// The failure to report: an unknown-outcome send whose lookup failed reports the send's
    /// own fault, not the lookup's.
    fn original_failure(&mut self, failure: Failure) -> Failure {
        if self.exchange_purpose == OpPurpose::Lookup {
            if let Some(original) = self.lookup_failure.take() {
                return *original;
            }
        }
        failure
    }

    fn recovery_for(&self, fault: &Fault) -> Option<Recovery> {
        let exchange = FailedExchange {
            sending: matches!(self.exchange_purpose, OpPurpose::Send | OpPurpose::Reply),
            untouched: self.exchange_events == 0,
            task_known: self.remote_task_id.is_some(),
            looking_up: self.exchange_purpose == OpPurpose::Lookup,
        };
        retry::recovery_for(fault, &exchange)
    }

    /// Counts one attempt and arms the backoff; `false` gives up: the policy or the budget is
    /// used up.
    fn schedule_retry(&mut self, recovery: Recovery, fault: &Fault, env: &mut Env<'_>) -> bool {
        let action = match recovery {
            Recovery::Resend => "resend",
            Recovery::Lookup => "list_tasks",
            Recovery::Observe if self.resubscribes(env) => "resubscribe",
            Recovery::Observe => "get_task",
        };
        let attempt = RetryAttempt {
            exchange: self.exchange_kind.method_name(),
            action,
            now: env.ctx.now,
            deadline: self.deadline,
        };
        let ids = &mut env.ctx.ids;
        let Some(delay) = self
            .attempts
            .next(&env.config.retry, fault, &attempt, || ids.next_u64())
        else {
            return false;
        };
        let delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
        env.ctx.retries.push(ScheduledRetry {
            agent: self.request.agent_name.to_string(),
            action,
        });
        emit!(
            env.ctx,
            EventType::AgentRetry,
            json!({
                "agent": self.request.agent_name,
                "step": self.request.step_name,
                "subtask_index": self.request.subtask_index,
                "taskId": self.remote_task_id,
                "attempt": self.attempts.consecutive(),
                "reason": fault.reason(),
                "action": action,
                "delay_ms": delay_ms,
            }),
        );
        self.phase = Phase::Backoff(recovery);
        env.ctx
            .set_timer(TimerKey::Retry(self.key), env.ctx.now.saturating_add(delay));
        true
    }

    /// The poll timer fired: observe the task with `GetTask`.
    pub fn on_poll_timer(&mut self, env: &mut Env<'_>) -> Option<Arc<TaskExecutionResult>> {
        if self.phase != Phase::Waiting {
            return None;
        }
        let Some(task_id) = self.remote_task_id.clone() else {
            return self.conclude(
                Err(Failure::new(
                    codes::EMPTY_STREAM,
                    "nothing to observe: the agent created no task",
                )),
                env,
            );
        };
        let call = A2aCall::GetTask {
            task_id: &task_id,
            history_length: env.config.history_length,
        };
        let step = self
            .transmit(&call, OpPurpose::Poll, &[], env)
            .map(|_| None);
        self.conclude(step, env)
    }

    /// The budget expired.
    pub fn on_deadline(&mut self, env: &mut Env<'_>) -> Option<Arc<TaskExecutionResult>> {
        let budget = env.config.task_budget;
        let negotiating =
            !self.exchanges.is_empty() || matches!(self.phase, Phase::Negotiating { .. });
        let failure = Failure::new(
            codes::TIMEOUT,
            format!(
                "task budget of {}s expired (content, send, wait and negotiation)",
                budget.as_secs_f64()
            ),
        );
        if negotiating {
            self.emit_negotiation_failed(codes::TIMEOUT, &failure.message, env);
        }
        self.conclude(Err(failure), env)
    }

    /// The run was cancelled or a peer won an ANY_SUCCESS step.
    pub fn cancel(&mut self, reason: &str, env: &mut Env<'_>) -> Option<Arc<TaskExecutionResult>> {
        let mut failure = Failure::new(codes::CANCELLED, reason);
        failure.status = TaskStatus::Cancelled;
        self.conclude(Err(failure), env)
    }

    // ----- content -----

    fn on_content(&mut self, answer: Result<MessageContent, HostError>, env: &mut Env<'_>) -> Step {
        let content = answer.map_err(host_failure)?;
        let Some(agent) = self.agent(env) else {
            return Err(Failure::new(
                codes::AGENT_NOT_FOUND,
                format!("Agent not found: {}", self.request.agent_name),
            ));
        };
        check_content(&content, agent)?;
        self.negotiation_active = !self.standalone && content.activates(a2at::NEGOTIATION_T_URI);
        let extensions = content.unique_extensions();
        let message = self.message(&content, None, env);
        let content = Arc::new(content);
        emit_deferred!(env.ctx, EventType::AgentRequest, {
            let content = Arc::clone(&content);
            let request = &self.request;
            let (agent, step, subtask_index, task_id) = (
                request.agent_name.clone(),
                request.step_name.clone(),
                request.subtask_index,
                request.task_id.clone(),
            );
            move || {
                json!({
                    "agent": agent,
                    "step": step,
                    "subtask_index": subtask_index,
                    "task_id": task_id,
                    "content": *content,
                })
            }
        });
        self.original = Some(content);
        self.send_message(message, &extensions, OpPurpose::Send, env)?;
        Ok(None)
    }

    fn message(
        &self,
        content: &MessageContent,
        task_id: Option<String>,
        env: &mut Env<'_>,
    ) -> Message {
        Message {
            message_id: env.ctx.ids.next_uuid(),
            context_id: Some(self.context_id.clone()),
            task_id,
            role: Role::User,
            parts: content.parts.clone(),
            metadata: if content.metadata.is_empty() {
                None
            } else {
                Some(content.metadata.clone())
            },
            extensions: content.unique_extensions(),
            reference_task_ids: Vec::new(),
        }
    }

    fn send_message(
        &mut self,
        message: Message,
        extensions: &[String],
        purpose: OpPurpose,
        env: &mut Env<'_>,
    ) -> Result<(), Failure> {
        let streaming = self.agent(env).is_some_and(|a| a.streaming);
        let tenant = self.agent(env).and_then(|a| a.endpoint.tenant.clone());
        let request = SendMessageRequest {
            tenant,
            message,
            configuration: Some(SendMessageConfiguration {
                accepted_output_modes: Vec::new(),
                history_length: env.config.history_length,
                return_immediately: false,
            }),
            metadata: None,
        };
        let call = if streaming {
            A2aCall::SendStreamingMessage(&request)
        } else {
            A2aCall::SendMessage(&request)
        };
        self.transmit(&call, purpose, extensions, env)?;
        self.last_send = Some(Box::new(SentMessage {
            message: request.message,
            extensions: extensions.to_vec(),
            purpose,
        }));
        Ok(())
    }

    fn transmit(
        &mut self,
        call: &A2aCall<'_>,
        purpose: OpPurpose,
        extensions: &[String],
        env: &mut Env<'_>,
    ) -> Result<(), Failure> {
        let target = ExchangeFor {
            owner: self.key,
            agent_name: &self.request.agent_name,
            correlation: self.correlation(env),
            cleanup: false,
        };
        let op = try_open_exchange(env, target, call, purpose, extensions)?;
        if purpose == OpPurpose::Lookup {
            // From here the lookup answers, or is kept reading as a cleanup if the invocation
            // ends first.
            self.unconfirmed_send = false;
        }
        self.phase = Phase::Exchanging(op);
        self.exchange_kind = call.kind();
        self.exchange_purpose = purpose;
        self.exchange_events = 0;
        Ok(())
    }

    /// Opens a cleanup exchange of this finished invocation (see [`open_cleanup_exchange`]).
    fn open_cleanup(&self, call: &A2aCall<'_>, purpose: OpPurpose, env: &mut Env<'_>) {
        let correlation = self.correlation(env);
        open_cleanup_exchange(
            env,
            self.key,
            &self.request.agent_name,
            correlation,
            call,
            purpose,
        );
    }

    fn correlation(&self, env: &Env<'_>) -> Arc<Correlation> {
        Arc::new(Correlation {
            execution_id: env.ctx.execution_id.clone(),
            step: self.request.step_name.clone(),
            subtask_index: self.request.subtask_index,
            logical_task_id: self.request.task_id.clone(),
            context_id: self.context_id.clone(),
            remote_task_id: self.remote_task_id.clone(),
        })
    }

    // ----- responses -----

    fn handle_items(&mut self, op: OpId, items: Vec<ResponseItem>, env: &mut Env<'_>) -> Step {
        if self.phase != Phase::Exchanging(op) {
            return Ok(None);
        }
        let ends_here = items.iter().any(|i| matches!(i, ResponseItem::End { .. }));
        if self.exchange_kind == CallKind::ListTasks {
            return self.on_lookup_items(op, items, env);
        }
        for item in items {
            match item {
                ResponseItem::Event(event) => {
                    self.exchange_events += 1;
                    let observed = match self.exchange_kind {
                        CallKind::GetTask => true,
                        CallKind::SubscribeToTask => self.exchange_events > 1,
                        _ => false,
                    };
                    if observed {
                        self.attempts.observed();
                    }
                    self.observe(&event, env)?;
                    if let Some(step) = self.decide(event, env) {
                        // The decision may have opened a new exchange; this one is finished.
                        if ends_here {
                            env.ctx.ops.remove(&op);
                        } else {
                            env.ctx.abort_op(op);
                        }
                        return step;
                    }
                }
                ResponseItem::Rejected(error) => {
                    return self.on_error_item(op, error, true, ends_here, env);
                }
                ResponseItem::Malformed(error) => {
                    return self.on_error_item(op, error, false, ends_here, env);
                }
                ResponseItem::End { events } => {
                    env.ctx.ops.remove(&op);
                    return self.on_stream_end(events, env);
                }
            }
        }
        Ok(None)
    }

    /// An error response or undecodable bytes ended the exchange.
    fn on_error_item(
        &mut self,
        op: OpId,
        error: ProtocolError,
        rejected: bool,
        ends_here: bool,
        env: &mut Env<'_>,
    ) -> Step {
        env.ctx.ops.remove(&op);
        if !ends_here {
            env.ctx.push(Output::AbortTransmit { op });
        }
        let failure = error_failure(&error);
        let refused_subscription = rejected
            && self.exchange_kind == CallKind::SubscribeToTask
            && !retry::is_transient(error.http_status.unwrap_or(0))
            && !self.subscribe_unsupported;
        if refused_subscription {
            // The agent will not stream this task (it may be final already, or the agent does
            // not implement resubscription): read it with `GetTask` instead.
            self.subscribe_unsupported = true;
            return self.observe_again(env).map(|_| None);
        }
        let fault = if rejected {
            Fault::Rejected(error)
        } else {
            Fault::Malformed(error)
        };
        self.recover(fault, failure, env)
    }

    /// The answer of a `ListTasks` lookup for the task of a send whose outcome is unknown: the
    /// first listed task in this invocation's context is followed; none means the send was not
    /// processed as far as the agent tells.
    fn on_lookup_items(&mut self, op: OpId, items: Vec<ResponseItem>, env: &mut Env<'_>) -> Step {
        for item in items {
            match item {
                ResponseItem::Event(StreamResponse::Task(task)) => {
                    let ours = task.context_id.as_deref() == Some(self.context_id.as_str());
                    if ours && !task.id.trim().is_empty() && self.remote_task_id.is_none() {
                        self.remote_task_id = Some(task.id.clone());
                    }
                }
                ResponseItem::Event(_) => {}
                ResponseItem::Rejected(error) => {
                    return self.on_error_item(op, error, true, true, env);
                }
                ResponseItem::Malformed(error) => {
                    return self.on_error_item(op, error, false, true, env);
                }
                ResponseItem::End { .. } => {
                    env.ctx.ops.remove(&op);
                    let original = self.lookup_failure.take();
                    let resend = std::mem::take(&mut self.resend_if_not_found);
                    if self.remote_task_id.is_none() {
                        if let (true, Some(sent)) = (resend, self.last_send.clone()) {
                            // After a restart, no task means the message never became one.
                            self.send_message(sent.message, &sent.extensions, sent.purpose, env)?;
                            return Ok(None);
                        }
                        let failure = original.map_or_else(
                            || Failure::new(codes::REMOTE_NO_RESPONSE, "no task found"),
                            |f| *f,
                        );
                        return Err(failure);
                    }
                    // Found: the lookup was a successful observation; follow the task.
                    self.attempts.observed();
                    self.observe_again(env)?;
                    return Ok(None);
                }
            }
        }
        Ok(None)
    }

    /// Identity checks, accumulation and traffic events for one stream event.
    fn observe(&mut self, event: &StreamResponse, env: &mut Env<'_>) -> Result<(), Failure> {
        track_identity(event, &self.context_id, &mut self.remote_task_id)
            .map_err(identity_changed)?;
        let agent = &self.request.agent_name;
        match event {
            StreamResponse::Task(t) => {
                self.last_state = Some(t.status.state);
                emit_deferred!(
                    env.ctx,
                    EventType::AgentStatusUpdate,
                    status_update(agent, &t.id, &t.status, true),
                );
            }
            StreamResponse::StatusUpdate(u) => {
                self.last_state = Some(u.status.state);
                emit_deferred!(
                    env.ctx,
                    EventType::AgentStatusUpdate,
                    status_update(agent, &u.task_id, &u.status, false),
                );
            }
            StreamResponse::ArtifactUpdate(u) => emit!(
                env.ctx,
                EventType::AgentArtifactUpdate,
                json!({
                    "agent": agent,
                    "taskId": u.task_id,
                    "artifact_id": u.artifact.artifact_id,
                    "artifact_name": u.artifact.name,
                    "append": u.append,
                    "last_chunk": u.last_chunk,
                    "text": Part::text_of(&u.artifact.parts),
                    "metadata": u.artifact.metadata,
                    "artifact": u.artifact,
                }),
            ),
            StreamResponse::Message(m) => emit!(
                env.ctx,
                EventType::AgentMessageEvent,
                json!({
                    "agent": agent,
                    "role": m.role.as_str(),
                    "text": Part::text_of(&m.parts),
                    "metadata": m.metadata,
                    "message": m,
                }),
            ),
        }
        Ok(())
    }

    /// Folds an event into the task view, then acts on it when it settles the current
    /// exchange; `None` keeps reading.
    fn decide(&mut self, event: StreamResponse, env: &mut Env<'_>) -> Option<Step> {
        if let StreamResponse::Message(m) = &event {
            let message = m.clone();
            self.acc.apply(event);
            return Some(self.on_bare_message(&message, env));
        }
        let state = event.state();
        self.acc.apply(event);
        state.and_then(|state| self.on_state(state, env))
    }

    fn on_state(&mut self, state: TaskState, env: &mut Env<'_>) -> Option<Step> {
        let step = match state {
            TaskState::Submitted | TaskState::Working => return None,
            TaskState::Completed => {
                if self.aborted {
                    Err(Failure::new(
                        codes::NEGOTIATION_ABORTED,
                        "the host sent a Negotiation-T Abort; the agent's COMPLETED is not a task success",
                    ))
                } else {
                    Ok(Some(Succeeded))
                }
            }
            TaskState::Failed => Err(remote_state_failure(codes::REMOTE_TASK_FAILED, state)),
            TaskState::Canceled => Err(remote_state_failure(codes::REMOTE_TASK_CANCELED, state)),
            TaskState::Rejected => Err(remote_state_failure(codes::REMOTE_TASK_REJECTED, state)),
            TaskState::InputRequired => self.on_input_required(env),
            TaskState::AuthRequired | TaskState::Unspecified | TaskState::Unrecognized => {
                Err(Failure::new(
                    codes::UNSUPPORTED_TASK_STATE,
                    format!("Unsupported non-final remote task state {}", state.as_str()),
                ))
            }
        };
        Some(step)
    }

    fn on_stream_end(&mut self, events: usize, env: &mut Env<'_>) -> Step {
        let open_task =
            self.remote_task_id.is_some() && !self.last_state.is_some_and(|s| s.is_terminal());
        let unanswered_send =
            events == 0 && matches!(self.exchange_purpose, OpPurpose::Send | OpPurpose::Reply);
        if self.exchange_kind.is_streaming()
            && (open_task || unanswered_send)
            && env.config.retry.attempts > 0
        {
            // The stream should have lasted until a final or interrupted state; an empty answer
            // to a send leaves its outcome unknown.
            let message = if events == 0 {
                "the agent closed the response before any A2A event"
            } else {
                "the stream ended before a final or interrupted task state"
            };
            let failure = Failure::new(codes::EMPTY_STREAM, message);
            return self.recover(Fault::EndedEarly, failure, env);
        }
        if events == 0 {
            return Err(Failure::new(
                codes::EMPTY_STREAM,
                "the agent closed the response before any A2A event",
            ));
        }
        match self.last_state {
            Some(state) if state.is_active() => {
                // Stream or unary answer left the task waiting: observe without resending.
                self.schedule_poll(env);
                Ok(None)
            }
            _ => Err(Failure::new(
                codes::EMPTY_STREAM,
                "the response ended without a task state or message",
            )),
        }
    }

    fn schedule_poll(&mut self, env: &mut Env<'_>) {
        self.phase = Phase::Waiting;
        let at = env.ctx.now.saturating_add(env.config.poll_interval);
        env.ctx.set_timer(TimerKey::Poll(self.key), at);
    }

    // ----- negotiation -----

    fn on_input_required(&mut self, env: &mut Env<'_>) -> Step {
        // A standalone activation never gets here with follow-ups allowed: its config has none.
        if !self.negotiation_active && env.config.max_input_replies.is_some() {
            return self.ask_for_input(env);
        }
        if !self.negotiation_active {
            return Err(Failure::new(
                codes::UNSUPPORTED_TASK_STATE,
                "Unsupported INPUT_REQUIRED interaction: Negotiation-T was not activated for this task",
            ));
        }
        if self.remote_task_id.is_none() {
            return Err(Failure::new(
                codes::UNSUPPORTED_TASK_STATE,
                "INPUT_REQUIRED without a remote task identity",
            ));
        }
        // From here on replies go to the task, even if the negotiation began pre-task.
        self.pre_task = false;
        let received = self
            .acc
            .received_messages()
            .into_iter()
            .rev()
            .find(|r| r.task_id.is_some())
            .unwrap_or_default();
        self.on_propose(received, env)
    }

    /// A plain INPUT_REQUIRED the run lets the host answer: ask `on_input_required`, within
    /// the follow-up limit.
    fn ask_for_input(&mut self, env: &mut Env<'_>) -> Step {
        let Some(task_id) = self.remote_task_id.clone() else {
            return Err(Failure::new(
                codes::UNSUPPORTED_TASK_STATE,
                "INPUT_REQUIRED without a remote task identity",
            ));
        };
        let limit = env.config.max_input_replies.unwrap_or(0);
        if self.input_replies >= limit {
            return Err(Failure::new(
                codes::UNSUPPORTED_TASK_STATE,
                format!(
                    "INPUT_REQUIRED again after {} follow-up(s): the limit of {limit} is reached",
                    self.input_replies
                ),
            )
            .with_details(json!({ "inputReplies": self.input_replies, "limit": limit })));
        }
        let received = self
            .acc
            .received_messages()
            .into_iter()
            .rev()
            .find(|r| r.task_id.is_some())
            .unwrap_or_default();
        let request = InputRequest {
            task: Arc::clone(&self.request),
            remote_task_id: task_id,
            received,
            previous_replies: self.input_replies,
            remaining_wait: self.deadline.saturating_duration_since(env.ctx.now),
        };
        let call = env.ctx.new_call(CallOwner::Invocation(self.key));
        env.ctx.push(Output::CallHost {
            call,
            request: HostRequest::InputRequired(Box::new(request)),
        });
        self.phase = Phase::AnsweringInput(call);
        Ok(None)
    }

    /// The host's decision on a plain INPUT_REQUIRED.
    fn on_input_decision(
        &mut self,
        answer: Result<InputDecision, HostError>,
        env: &mut Env<'_>,
    ) -> Step {
        self.phase = Phase::Waiting;
        let content = match answer {
            Err(e) => return Err(host_failure(e)),
            Ok(InputDecision::Decline) => {
                return Err(Failure::new(
                    codes::UNSUPPORTED_TASK_STATE,
                    "Unsupported INPUT_REQUIRED interaction: the host declined to answer",
                ));
            }
            Ok(InputDecision::Reply { content }) => content,
        };
        // A follow-up is a send like the first one: the same content rules apply.
        match self.agent(env) {
            Some(agent) => check_content(&content, agent).map_err(|f| {
                Failure::new(
                    codes::INVALID_CONTENT,
                    format!("the follow-up for INPUT_REQUIRED is invalid: {}", f.message),
                )
            })?,
            None => content
                .validate()
                .map_err(|e| Failure::new(codes::INVALID_CONTENT, e.to_string()))?,
        }
        self.input_replies += 1;
        let message = self.message(&content, self.remote_task_id.clone(), env);
        // The last state was the question; the answer starts a fresh observation.
        self.last_state = None;
        self.send_message(message, &content.unique_extensions(), OpPurpose::Reply, env)?;
        Ok(None)
    }

    fn on_bare_message(&mut self, message: &Message, env: &mut Env<'_>) -> Step {
        let meta = message.metadata.clone().unwrap_or_default();
        let carries = meta.contains_key(a2at::NEGOTIATION_CONTEXT_KEY)
            || a2at::metadata_has_negotiation_key(&meta);
        if !carries || self.standalone {
            return Ok(Some(Succeeded));
        }
        if !self.negotiation_active {
            return Err(Failure::new(
                codes::UNSUPPORTED_TASK_STATE,
                "the agent answered with a Negotiation-T Propose but Negotiation-T was not activated for this task",
            ));
        }
        if self.remote_task_id.is_some() {
            return Err(negotiation_invalid(
                "pre-task Propose received after the agent created a task; use INPUT_REQUIRED",
            ));
        }
        self.pre_task = true;
        let received = ReceivedMessage {
            message: Some(message.clone()),
            context_id: message.context_id.clone(),
            ..Default::default()
        };
        self.on_propose(received, env)
    }

    /// A response that should carry a Propose (in-task or pre-task).
    fn on_propose(&mut self, received: ReceivedMessage, env: &mut Env<'_>) -> Step {
        let context = match a2at::context_of(&received) {
            Ok(Some(c)) => c,
            Ok(None) => {
                return Err(Failure::new(
                    codes::UNSUPPORTED_TASK_STATE,
                    "Unsupported INPUT_REQUIRED interaction: no Negotiation-T Propose",
                ));
            }
            Err(e) => {
                return Err(negotiation_invalid(format!(
                    "invalid negotiation context: {e}"
                )));
            }
        };
        if !carries_negotiation_key(&received) {
            return Err(negotiation_invalid(
                "negotiationContext present but no Negotiation-T content key in any metadata layer",
            ));
        }
        if context.performative != Performative::Propose {
            return Err(negotiation_invalid(format!(
                "expected a PROPOSE, the agent sent {:?}",
                context.performative
            )));
        }
        if context.is_exhausted() {
            return Err(negotiation_invalid(format!(
                "Propose round {} exceeds maxRounds {}",
                context.round, context.max_rounds
            )));
        }
        if let Some((_, round, max)) = self
            .last_context
            .iter()
            .find(|(id, _, _)| *id == context.id)
        {
            if context.round < *round || context.max_rounds != *max {
                return Err(negotiation_invalid(format!(
                    "Negotiation round regressed or maxRounds changed (round {} -> {}, maxRounds {} -> {})",
                    round, context.round, max, context.max_rounds
                )));
            }
        }
        // One invocation has at most one remote task and one context, so (negotiation id,
        // round) identifies a Propose; a pre-task Propose repeated in-task is the same one.
        let dedup = (context.id.clone(), context.round);
        if self.answered.contains(&dedup) {
            // Already answered: observe without asking again or resending (NG-15). Without a
            // task there is nothing to observe: a repeated pre-task Propose is an agent error.
            if self.remote_task_id.is_none() {
                return Err(negotiation_invalid(
                    "the agent repeated an already answered pre-task Propose",
                ));
            }
            self.schedule_poll(env);
            return Ok(None);
        }
        if self.exchanges.len() >= env.config.max_negotiation_exchanges as usize {
            let message = "Negotiation exchange budget exhausted; no Abort generated";
            self.emit_negotiation_failed(codes::NEGOTIATION_BUDGET_EXHAUSTED, message, env);
            return Err(Failure::new(codes::NEGOTIATION_BUDGET_EXHAUSTED, message));
        }
        match self
            .last_context
            .iter_mut()
            .find(|(id, _, _)| *id == context.id)
        {
            Some(entry) => *entry = (context.id.clone(), context.round, context.max_rounds),
            None => self
                .last_context
                .push((context.id.clone(), context.round, context.max_rounds)),
        }
        let request = NegotiationRequest {
            task: Arc::clone(&self.request),
            original_submission: self.original.as_deref().cloned().unwrap_or_default(),
            received: received.clone(),
            previous_exchanges: self.exchanges.clone(),
            remaining_wait: self.deadline.saturating_duration_since(env.ctx.now),
        };
        let call = env.ctx.new_call(CallOwner::Invocation(self.key));
        emit!(
            env.ctx,
            EventType::NegotiationRequest,
            json!({
                "agent": self.request.agent_name,
                "step": self.request.step_name,
                "subtask_index": self.request.subtask_index,
                "exchange": self.exchanges.len() + 1,
                "request": received,
                "negotiationId": context.id,
                "round": context.round,
                "maxRounds": context.max_rounds,
                "mode": if self.pre_task { "pre_task" } else { "in_task" },
            }),
        );
        env.ctx.push(Output::CallHost {
            call,
            request: HostRequest::Negotiation(Box::new(request)),
        });
        self.phase = Phase::Negotiating {
            call,
            context,
            received: Box::new(received),
        };
        Ok(None)
    }

    fn on_negotiation_reply(
        &mut self,
        answer: Result<NegotiationReply, HostError>,
        env: &mut Env<'_>,
    ) -> Step {
        let Phase::Negotiating {
            context, received, ..
        } = std::mem::replace(&mut self.phase, Phase::Waiting)
        else {
            return Ok(None);
        };
        let reply = match answer {
            Ok(r) => r,
            Err(e) => {
                self.emit_negotiation_failed(&e.code, &e.message, env);
                return Err(host_failure(e));
            }
        };
        let content = match reply {
            NegotiationReply::Stop { code, reason } => {
                if code.trim().is_empty() || reason.trim().is_empty() {
                    let message = "Stop needs a non-blank code and reason";
                    self.emit_negotiation_failed(codes::NEGOTIATION_INVALID, message, env);
                    return Err(negotiation_invalid(message));
                }
                self.emit_negotiation_failed(&code, &reason, env);
                return Err(Failure::new(&code, reason));
            }
            NegotiationReply::Send { content } => content,
        };
        if let Err(message) = check_reply(&content, &context) {
            self.emit_negotiation_failed(codes::NEGOTIATION_INVALID, &message, env);
            return Err(negotiation_invalid(message));
        }
        let reply_context = a2at::metadata_negotiation(&content.metadata)
            .ok()
            .flatten()
            .unwrap_or_else(|| context.clone());
        if reply_context.performative == Performative::Abort {
            self.aborted = true;
        }
        self.answered.insert((context.id.clone(), context.round));
        self.exchanges.push(Exchange {
            received: *received,
            reply: content.clone(),
        });
        emit!(
            env.ctx,
            EventType::NegotiationResolved,
            json!({
                "agent": self.request.agent_name,
                "step": self.request.step_name,
                "subtask_index": self.request.subtask_index,
                "exchange": self.exchanges.len(),
                "negotiationId": context.id,
                "round": context.round,
                "performative": reply_context.performative.as_str(),
                "reply": content,
            }),
        );
        let task_id = if self.pre_task {
            None
        } else {
            self.remote_task_id.clone()
        };
        let message = self.message(&content, task_id, env);
        // The last state described the Propose; the reply's answer starts a fresh observation.
        self.last_state = None;
        self.send_message(message, &content.unique_extensions(), OpPurpose::Reply, env)?;
        Ok(None)
    }

    fn emit_negotiation_failed(&self, code: &str, message: &str, env: &mut Env<'_>) {
        emit!(
            env.ctx,
            EventType::NegotiationFailed,
            json!({
                "agent": self.request.agent_name,
                "step": self.request.step_name,
                "subtask_index": self.request.subtask_index,
                "exchange": self.exchanges.len(),
                "errorType": code,
                "error": message,
            }),
        );
    }

    // ----- results -----

    /// The final result. A workflow's invocation is dropped with its result, so the content
    /// moves into it; one driven outside a workflow is read again afterwards (its context id
    /// and text) and keeps its own. The names are shared either way.
    fn take_result(&mut self, status: TaskStatus, failure: Option<Failure>) -> TaskExecutionResult {
        let keep = self.standalone;
        let acc = moved_or_copied(keep, &mut self.acc);
        let outputs = if status == TaskStatus::Success {
            acc.outputs()
        } else {
            Vec::new()
        };
        let (error, error_code, error_details) = match failure {
            Some(f) => (Some(f.message), Some(f.code), f.details),
            None => (None, None, None),
        };
        let r = &*self.request;
        TaskExecutionResult {
            step_name: r.step_name.clone(),
            subtask_index: r.subtask_index,
            agent_name: r.agent_name.clone(),
            skill: r.skill.clone(),
            task_id: r.task_id.clone(),
            task_description: r.instruction.clone(),
            status,
            outputs,
            received_messages: acc.into_received_messages(),
            error,
            error_code,
            error_details,
            remote_task_id: moved_or_copied(keep, &mut self.remote_task_id),
            context_id: Some(moved_or_copied(keep, &mut self.context_id)),
        }
    }

    /// Turns the outcome of a handler into a final result, cleaning up when one was decided.
    fn conclude(&mut self, step: Step, env: &mut Env<'_>) -> Option<Arc<TaskExecutionResult>> {
        if self.phase == Phase::Done {
            return None;
        }
        let (status, failure) = match step {
            Ok(None) => return None,
            Ok(Some(Succeeded)) => (TaskStatus::Success, None),
            Err(mut failure) => {
                self.attempts.attach_to(&mut failure.details);
                (failure.status, Some(failure))
            }
        };
        // The cleanup still names the task and its context: it runs before they move out.
        self.finish(env);
        let result = Arc::new(self.take_result(status, failure));
        emit_deferred!(env.ctx, EventType::AgentResponse, {
            let result = Arc::clone(&result);
            move || {
                let text: Vec<&str> = result.outputs.iter().filter_map(Value::as_str).collect();
                json!({
                    "agent": result.agent_name,
                    "step": result.step_name,
                    "subtask_index": result.subtask_index,
                    "response": text.join("\n"),
                    "receivedMessages": result.received_messages,
                })
            }
        });
        Some(result)
    }

    /// Releases everything still pending and cancels a known non-final remote task.
    fn finish(&mut self, env: &mut Env<'_>) {
        match std::mem::replace(&mut self.phase, Phase::Done) {
            Phase::Composing(call)
            | Phase::AnsweringInput(call)
            | Phase::Negotiating { call, .. } => env.ctx.abandon_call(call),
            Phase::Exchanging(op) => {
                let orphan = self.remote_task_id.is_none()
                    && env.ctx.ops.get(&op).is_some_and(|e| {
                        matches!(
                            e.purpose,
                            OpPurpose::Send | OpPurpose::Reply | OpPurpose::Lookup
                        )
                    });
                if orphan {
                    // The agent may still create a task for this send, or the lookup may still
                    // name the one a lost send created: keep reading, so that task is cancelled
                    // instead of left running (TO-3).
                    if let Some(entry) = env.ctx.ops.get_mut(&op) {
                        entry.orphan = true;
                    }
                    let at = env.ctx.now.saturating_add(env.config.cancel_budget);
                    env.ctx.set_timer(TimerKey::Cleanup(op), at);
                } else {
                    env.ctx.abort_op(op);
                }
            }
            Phase::Waiting | Phase::Backoff(_) | Phase::Done => {}
        }
        env.ctx.clear_timer(TimerKey::TaskDeadline(self.key));
        env.ctx.clear_timer(TimerKey::Poll(self.key));
        env.ctx.clear_timer(TimerKey::Retry(self.key));
        let final_state = self.last_state.is_some_and(|s| s.is_terminal());
        match (self.remote_task_id.clone(), final_state) {
            (Some(task_id), false) => {
                self.open_cleanup(
                    &A2aCall::CancelTask { task_id: &task_id },
                    OpPurpose::Cancel,
                    env,
                );
            }
            (None, _) if std::mem::take(&mut self.unconfirmed_send) => {
                // A send the agent may have processed was never looked up: look it up now, so
                // the task it may have created is found and cancelled (TO-3).
                let context_id = self.context_id.clone();
                self.open_cleanup(&lookup_call(&context_id), OpPurpose::Lookup, env);
            }
            _ => {}
        }
    }
}

/// The `ListTasks` call that finds the task a send of this context created.
fn lookup_call(context_id: &str) -> A2aCall<'_> {
    A2aCall::ListTasks {
        context_id,
        page_size: Some(10),
    }
}

/// Where one exchange input goes once the exchange's own bookkeeping is done.
#[derive(Debug)]
pub(crate) enum Routed {
    /// Nothing for an owner: an unknown or finished exchange, no decoded item yet, or a
    /// cleanup or orphan exchange settled here.
    Settled,
    /// Items for the invocation that owns the exchange.
    Items {
        /// The owner.
        owner: TaskKey,
        /// The exchange.
        op: OpId,
        /// What its bytes decoded to.
        items: Vec<ResponseItem>,
    },
    /// The owner's exchange failed in transport. The caller lets the owner react, then calls
    /// [`forget_exchange`].
    Failed {
        /// The owner.
        owner: TaskKey,
        /// The exchange.
        op: OpId,
        /// What went wrong.
        error: TransportError,
    },
}

/// Decodes one exchange input and settles what no invocation needs to see: a `CancelTask`
/// cleanup only has to end (its answer changes no result, a failed one is best effort), and an
/// orphan send (its invocation gave up before learning the task id) is only read to cancel the
/// task it may still create. Shared by every machine that drives remote tasks, so cleanup rules
/// are written once.
pub(crate) fn route_exchange_input(input: Input, env: &mut Env<'_>) -> Routed {
    if let Input::TransportFailed { op, error } = input {
        let Some(entry) = env.ctx.ops.get(&op) else {
            return Routed::Settled;
        };
        if entry.purpose == OpPurpose::Cancel {
            forget_exchange(op, env.ctx);
            return Routed::Settled;
        }
        return Routed::Failed {
            owner: entry.owner,
            op,
            error,
        };
    }
    let Some(op) = exchange::response_op(&input) else {
        return Routed::Settled;
    };
    let Some(entry) = env.ctx.ops.get_mut(&op) else {
        return Routed::Settled;
    };
    let items = exchange::decode(&mut entry.decoder, input);
    if items.is_empty() {
        return Routed::Settled;
    }
    let (owner, orphan, purpose) = (entry.owner, entry.orphan, entry.purpose);
    if orphan {
        on_orphan_items(op, &items, env);
        return Routed::Settled;
    }
    if purpose == OpPurpose::Cancel {
        if items.iter().any(|i| !matches!(i, ResponseItem::Event(_))) {
            forget_exchange(op, env.ctx);
        }
        return Routed::Settled;
    }
    Routed::Items { owner, op, items }
}

/// The exchange is over, whoever owned it: nothing is left to abort.
pub(crate) fn forget_exchange(op: OpId, ctx: &mut Ctx) {
    ctx.ops.remove(&op);
    ctx.clear_timer(TimerKey::Cleanup(op));
}

/// An exchange its invocation gave up on before learning the task id: a send, whose first
/// sign of a task names it, or a lookup, whose first listed task of the invocation's context is
/// the one a lost send created. That task gets cancelled unless it is already final; the
/// exchange is then closed.
fn on_orphan_items(op: OpId, items: &[ResponseItem], env: &mut Env<'_>) {
    let Some(entry) = env.ctx.ops.get(&op) else {
        return;
    };
    let (owner, purpose, agent) = (entry.owner, entry.purpose, entry.agent.clone());
    let mut correlation = Correlation::clone(&entry.correlation);
    for item in items {
        let ResponseItem::Event(event) = item else {
            forget_exchange(op, env.ctx);
            return;
        };
        let (task_id, state) = match event {
            StreamResponse::Task(t) => {
                // A lookup lists tasks by context, but an agent may list others too.
                let ours = t.context_id.as_deref() == Some(correlation.context_id.as_str());
                if purpose == OpPurpose::Lookup && !ours {
                    continue;
                }
                (t.id.clone(), Some(t.status.state))
            }
            StreamResponse::StatusUpdate(u) => (u.task_id.clone(), Some(u.status.state)),
            StreamResponse::ArtifactUpdate(u) => (u.task_id.clone(), None),
            StreamResponse::Message(_) => continue,
        };
        env.ctx.abort_op(op);
        if state.is_some_and(|s| s.is_terminal()) || task_id.trim().is_empty() {
            return;
        }
        correlation.remote_task_id = Some(task_id.clone());
        let call = A2aCall::CancelTask { task_id: &task_id };
        open_cleanup_exchange(
            env,
            owner,
            &agent,
            Arc::new(correlation),
            &call,
            OpPurpose::Cancel,
        );
        return;
    }
}

/// Who an exchange is for.
struct ExchangeFor<'a> {
    owner: TaskKey,
    agent_name: &'a SharedStr,
    correlation: Arc<Correlation>,
    /// Opened after its owner finished, to clean up: bounded by the cleanup budget instead of
    /// the owner's task budget, and settled without the owner.
    cleanup: bool,
}

/// Opens a cleanup exchange for `owner`, which has finished: a `CancelTask`, or a lookup read
/// only to cancel the task it finds. It ends at the latest when the cleanup budget runs out.
/// Nothing is opened when the agent has no card or the call cannot be encoded: cleanup is best
/// effort.
pub(crate) fn open_cleanup_exchange(
    env: &mut Env<'_>,
    owner: TaskKey,
    agent_name: &SharedStr,
    correlation: Arc<Correlation>,
    call: &A2aCall<'_>,
    purpose: OpPurpose,
) {
    let target = ExchangeFor {
        owner,
        agent_name,
        correlation,
        cleanup: true,
    };
    if let Ok(op) = try_open_exchange(env, target, call, purpose, &[]) {
        let at = env.ctx.now.saturating_add(env.config.cancel_budget);
        env.ctx.set_timer(TimerKey::Cleanup(op), at);
    }
}

/// Encodes `call` for the agent's endpoint, registers its decoder and asks the driver to
/// transmit it; fails with the reason it opened nothing: no card for the agent
/// (`workflow.agent_not_found`), or a message the binding cannot carry
/// (`workflow.invalid_content`).
///
/// The time left for the exchange travels with it (gRPC sends it as `grpc-timeout`): the
/// cleanup budget for a cleanup exchange, otherwise what is left of the owner's task budget.
fn try_open_exchange(
    env: &mut Env<'_>,
    target: ExchangeFor<'_>,
    call: &A2aCall<'_>,
    purpose: OpPurpose,
    extensions: &[String],
) -> Result<OpId, Failure> {
    let ExchangeFor {
        owner,
        agent_name,
        correlation,
        cleanup,
    } = target;
    let agent = env.agents.get(agent_name).ok_or_else(|| {
        Failure::new(
            codes::AGENT_NOT_FOUND,
            format!("Agent not found: {agent_name}"),
        )
    })?;
    let timeout = if cleanup {
        Some(env.config.cancel_budget)
    } else {
        env.ctx
            .timer(TimerKey::TaskDeadline(owner))
            .map(|at| at.saturating_duration_since(env.ctx.now))
    };
    let rpc_id = env.ctx.ids.next_uuid();
    let op = env.ctx.new_op();
    let spec = ExchangeSpec {
        op,
        rpc_id,
        purpose,
        extensions,
        timeout,
        limits: env.config.decode_limits,
        correlation: Arc::clone(&correlation),
        trace: &env.ctx.trace,
    };
    let (request, decoder) = exchange::open(agent, call, spec)
        .map_err(|e| Failure::new(codes::INVALID_CONTENT, e.to_string()))?;
    env.ctx.ops.insert(
        op,
        Box::new(OpEntry {
            owner,
            purpose,
            decoder,
            agent: agent_name.clone(),
            correlation,
            // A cleanup CancelTask is settled by its purpose; any other cleanup exchange is
            // read only for the task it names.
            orphan: cleanup && purpose != OpPurpose::Cancel,
        }),
    );
    env.ctx.push(Output::Transmit(request));
    Ok(op)
}

/// `value` itself when it is not read again (`keep` false), leaving the default behind; else a copy.
fn moved_or_copied<T: Clone + Default>(keep: bool, value: &mut T) -> T {
    if keep {
        value.clone()
    } else {
        std::mem::take(value)
    }
}

/// The failure an error response gives (without a retry policy).
fn error_failure(error: &ProtocolError) -> Failure {
    let details = error.evidence();
    Failure::new(&error.code, error.message.clone()).with_details(details)
}

fn host_failure(e: HostError) -> Failure {
    let code = if e.code.trim().is_empty() {
        codes::EXECUTION_FAILED.to_owned()
    } else {
        e.code
    };
    Failure {
        status: TaskStatus::Failed,
        code,
        message: e.message,
        details: e.details,
    }
}

fn identity_changed(detail: String) -> Failure {
    Failure::new(
        codes::REMOTE_IDENTITY_CHANGED,
        format!("Remote task/context identity changed: {detail}"),
    )
}

fn negotiation_invalid(message: impl Into<String>) -> Failure {
    Failure::new(codes::NEGOTIATION_INVALID, message)
}

fn remote_state_failure(code: &str, state: TaskState) -> Failure {
    Failure::new(code, format!("Agent returned state={}", state.as_str()))
        .with_details(json!({ "state": state.as_str() }))
}

fn carries_negotiation_key(received: &ReceivedMessage) -> bool {
    let message = received
        .message
        .as_ref()
        .and_then(|m| m.metadata.as_ref())
        .is_some_and(a2at::metadata_has_negotiation_key);
    let task = received
        .task_metadata
        .as_ref()
        .is_some_and(a2at::metadata_has_negotiation_key);
    let artifacts = received
        .artifacts
        .iter()
        .filter_map(|a| a.metadata.as_ref())
        .any(a2at::metadata_has_negotiation_key);
    message || task || artifacts
}

/// Content rules checked before the first send.
fn check_content(content: &MessageContent, agent: &AgentEntry) -> Result<(), Failure> {
    let invalid = |m: String| Failure::new(codes::INVALID_CONTENT, m);
    content.validate().map_err(|e| invalid(e.to_string()))?;
    let in_extensions = content.activates(a2at::TASK_T_URI);
    let in_metadata = content.metadata.contains_key(a2at::TASK_T_URI);
    if in_extensions != in_metadata {
        return Err(invalid(
            "Task-T content must both activate the Task-T extension and carry its metadata key"
                .into(),
        ));
    }
    for uri in content.unique_extensions() {
        if !agent.card.declares_extension(&uri) {
            return Err(invalid(format!(
                "extension {uri} is not declared by agent {}",
                agent.card.name
            )));
        }
    }
    check_required_extensions(&agent.card, &content.extensions).map_err(|e| invalid(e.to_string()))
}

/// A reply carries and activates Negotiation-T with the same id, round and maxRounds,
/// and is not a new Propose.
fn check_reply(content: &MessageContent, received: &NegotiationContext) -> Result<(), String> {
    content.validate().map_err(|e| e.to_string())?;
    let mismatch = "Reply does not match the received negotiation context/round";
    if !a2at::activates(
        &content.extensions,
        &content.metadata,
        a2at::NEGOTIATION_T_URI,
    ) {
        return Err(format!(
            "{mismatch}: the reply must list {} in extensions and carry it as a metadata key",
            a2at::NEGOTIATION_T_URI
        ));
    }
    let reply = match a2at::metadata_negotiation(&content.metadata) {
        Ok(Some(c)) => c,
        Ok(None) => return Err(format!("{mismatch}: no negotiationContext in the reply")),
        Err(e) => return Err(format!("{mismatch}: {e}")),
    };
    if reply.id != received.id
        || reply.round != received.round
        || reply.max_rounds != received.max_rounds
    {
        return Err(format!(
            "{mismatch}: expected id {} round {} maxRounds {}, got id {} round {} maxRounds {}",
            received.id,
            received.round,
            received.max_rounds,
            reply.id,
            reply.round,
            reply.max_rounds
        ));
    }
    if reply.performative == Performative::Propose {
        return Err(format!("{mismatch}: a reply must not be a new PROPOSE"));
    }
    Ok(())
}

/// The payload of an `agent_status_update` event, from copies of what it shows (the stream
/// event itself is not kept).
fn status_update(
    agent: &str,
    task_id: &str,
    status: &RemoteTaskStatus,
    snapshot: bool,
) -> impl Fn() -> Value + Send + Sync + 'static {
    let (agent, task_id, state, message) = (
        agent.to_owned(),
        task_id.to_owned(),
        status.state,
        status.message.clone(),
    );
    move || {
        json!({
            "agent": agent,
            "taskId": task_id,
            "state": state.as_str(),
            "is_final": state.is_terminal(),
            "message": message,
            "snapshot": snapshot,
        })
    }
}
