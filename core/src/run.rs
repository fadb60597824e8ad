//! The [`Run`] state machine: one workflow execution, inputs in, outputs out.
//!
//! # Method categories and drain order
//!
//! * Getters take `&self`: [`Run::poll_timeout`], [`Run::is_finished`], [`Run::result`].
//! * Mutators take the current time: [`Run::handle`] for inputs, [`Run::handle_timeout`] when the
//!   clock reaches [`Run::poll_timeout`]. Extra `handle_timeout` calls are harmless.
//! * [`Run::poll_output`] drains what the run wants done, in causal order. Drain it completely
//!   after `new`, after every `handle` and after every `handle_timeout`; draining late never
//!   changes what comes out, only when.
//!
//! # Scheduling
//!
//! Readiness is event-driven, not in waves. A step starts the moment every predecessor has
//! *settled* and at least one activated edge reaches it (start steps are activated by the run).
//! A predecessor settles when it finished routing, or when it is itself a dead path (all of its
//! predecessors settled without activating it). Dead paths propagate, so a join never waits for
//! a branch that was not taken, and every step settles in a valid DAG. The deadlock check
//! is kept as a guard and reports the missing predecessors.
//!
//! After a step fails, nothing new is dispatched; steps already running finish, and their
//! routing is skipped. Cancellation cancels every running subtask (and its known
//! non-final remote task) and abandons pending host calls. The run finishes when nothing is in
//! flight, including `CancelTask` cleanup exchanges, which have their own budget.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::SharedStr;
use crate::agents::AgentDirectory;
pub use crate::config::{ConfigError, INVALID_CONFIG, RunConfig};
use crate::event::EventType;
use crate::host::{
    HostReply, HostRequest, RouteDecision, RouteRequest, TaskExecutionResult, TaskRequest,
    TaskResult, TaskStatus, UpstreamStepResult, WorkflowInput, codes,
};
use crate::ids::{CallId, IdGenerator, StepId, TaskKey, task_uuid};
use crate::io::{ApiMisuse, Input, Output};
use crate::machine::{CallOwner, Ctx, TimerKey, emit, emit_deferred, object};
use crate::remote::{self, Env, Invocation, Routed};
use crate::result::{ExecutionResult, RunError, StepReport, StepStatus, task_key};
use crate::time::Timestamp;
use crate::tracectx::TraceContext;
use crate::workflow::{ContextSources, EdgeTarget, StepType, ValidatedWorkflow};

/// One retry a run scheduled after a fault (see [`crate::retry`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduledRetry {
    /// The agent the failed exchange addressed.
    pub agent: String,
    /// How the run recovers: `resend`, `list_tasks`, `resubscribe` (a reattach to the task's
    /// stream) or `get_task`.
    pub action: &'static str,
}

/// What the host starts a run with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunStart {
    /// The runtime intent passed to every task request (default empty).
    pub runtime_intent: SharedStr,
    /// Language hint passed to the host's content generation in every task request. Empty (the
    /// default) means no preference: the host chooses. Set it (`"zh"`, `"en"`, …) when the
    /// host's prompts depend on it.
    pub language: SharedStr,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Pending,
    Running,
    Routing,
    Succeeded,
    Failed,
    Skipped,
    Cancelled,
}

#[derive(Debug)]
struct RoutingState {
    decisions: Vec<Option<RouteDecision>>,
    calls: Vec<(u32, CallId)>,
}

#[derive(Debug)]
struct StepState {
    phase: Phase,
    unsettled_predecessors: usize,
    activated: bool,
    window: WorkflowInput,
    results: Vec<Option<Arc<TaskExecutionResult>>>,
    running: usize,
    winner_found: bool,
    /// Boxed: only a step with conditional edges has one, and every step keeps the field.
    routing: Option<Box<RoutingState>>,
}

#[derive(Debug)]
enum Slot {
    Remote(Box<Invocation>),
    /// A local task: the host's call, and the task id its result carries.
    Local(CallId, SharedStr),
}

/// Where one step is, in a [`RunProgress`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepProgressState {
    /// Not started (its predecessors have not all settled).
    Pending,
    /// Its subtasks (or its route decisions) are under way.
    Running,
    /// Done: succeeded.
    Succeeded,
    /// Done: failed.
    Failed,
    /// Done: cancelled.
    Cancelled,
    /// Never started: on a branch not taken.
    Skipped,
}

impl StepProgressState {
    /// Whether the step is over (succeeded, failed or cancelled).
    pub fn is_done(self) -> bool {
        matches!(
            self,
            StepProgressState::Succeeded | StepProgressState::Failed | StepProgressState::Cancelled
        )
    }
}

/// One step in a [`RunProgress`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepProgress {
    /// The step name.
    pub name: SharedStr,
    /// Where it is.
    pub state: StepProgressState,
}

/// A snapshot of a run taken between two inputs ([`Run::progress`]): all of its parts
/// describe the same moment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunProgress {
    /// The run's execution id.
    pub execution_id: String,
    /// Whether the run has finished.
    pub finished: bool,
    /// Every step in declaration order.
    pub steps: Vec<StepProgress>,
    /// Subtasks under way per agent (by the subtask's agent name; local subtasks included).
    pub in_flight: BTreeMap<String, usize>,
    /// step name → task key → outputs, for the subtasks finished so far (cancelled ones left
    /// out), as in the result.
    pub step_outputs: BTreeMap<String, BTreeMap<String, Vec<Value>>>,
    /// The subtasks finished so far, in the order they finished.
    pub history: Vec<TaskExecutionResult>,
}

impl RunProgress {
    /// How many steps are in `state`.
    pub fn count(&self, state: StepProgressState) -> usize {
        self.steps.iter().filter(|s| s.state == state).count()
    }

    /// How many steps are over (succeeded, failed or cancelled).
    pub fn done(&self) -> usize {
        self.steps.iter().filter(|s| s.state.is_done()).count()
    }
}

/// One workflow execution as a pure state machine. See the module docs for the contract.
#[derive(Debug)]
pub struct Run {
    workflow: Arc<ValidatedWorkflow>,
    agents: Arc<AgentDirectory>,
    config: RunConfig,
    start: RunStart,
    ctx: Ctx,
    steps: Vec<StepState>,
    slots: BTreeMap<TaskKey, Slot>,
    ready: BTreeSet<StepId>,
    /// The order subtasks finished in; their results stay in the step table until the end.
    finish_order: Vec<TaskKey>,
    failure: Option<RunError>,
    cancelled: bool,
    finished: Option<Arc<ExecutionResult>>,
    started: bool,
}

impl Run {
    /// [`Run::new`] after checking `config` ([`RunConfig::validate`]): a zero budget,
    /// interval or limit, a negative history length or a bad retry policy is refused with an
    /// error naming the setting, and no run exists.
    pub fn try_new(
        workflow: Arc<ValidatedWorkflow>,
        agents: Arc<AgentDirectory>,
        config: RunConfig,
        start: RunStart,
    ) -> Result<Run, ConfigError> {
        config.validate()?;
        Ok(Run::new(workflow, agents, config, start))
    }

    /// Creates the run without checking `config` (see [`Run::try_new`]). Nothing happens
    /// until the first [`Run::handle_timeout`] or
    /// [`Run::handle`]; the `start` event and the first dispatches are queued at once.
    pub fn new(
        workflow: Arc<ValidatedWorkflow>,
        agents: Arc<AgentDirectory>,
        config: RunConfig,
        start: RunStart,
    ) -> Run {
        Run::build(workflow, agents, config, start)
    }

    // Outside `new`, which cargo-mutants does not mutate.
    fn build(
        workflow: Arc<ValidatedWorkflow>,
        agents: Arc<AgentDirectory>,
        config: RunConfig,
        start: RunStart,
    ) -> Run {
        let mut ids = IdGenerator::new(config.seed);
        let execution_id = config
            .execution_id
            .clone()
            .unwrap_or_else(|| ids.next_uuid());
        let steps = workflow
            .step_ids()
            .map(|id| StepState {
                phase: Phase::Pending,
                unsettled_predecessors: workflow.predecessors(id).len(),
                activated: false,
                window: WorkflowInput::default(),
                results: Vec::new(),
                running: 0,
                winner_found: false,
                routing: None,
            })
            .collect();
        let events = config.events.clone();
        let trace = TraceContext::new(
            config.seed,
            config.trace_parent.as_ref(),
            config.trace_state.as_deref(),
        );
        let mut run = Run {
            workflow,
            agents,
            config,
            start,
            ctx: Ctx::new(ids, trace, execution_id, events),
            steps,
            slots: BTreeMap::new(),
            ready: BTreeSet::new(),
            finish_order: Vec::new(),
            failure: None,
            cancelled: false,
            finished: None,
            started: false,
        };
        run.begin();
        run
    }

    /// The execution id of this run.
    pub fn execution_id(&self) -> &str {
        &self.ctx.execution_id
    }

    /// The agents this run addresses (its cards as of its start).
    pub fn agents(&self) -> &AgentDirectory {
        &self.agents
    }

    /// Every retry the run scheduled so far, in order: a driver reads the ones past those it
    /// already counted (for metrics); the run never reads them.
    pub fn retries(&self) -> &[ScheduledRetry] {
        &self.ctx.retries
    }

    /// The W3C trace id every request of this run carries (see [`crate::tracectx`]).
    pub fn trace_id(&self) -> u128 {
        self.ctx.trace.trace_id()
    }

    /// The next output, in causal order; `None` when nothing is queued right now.
    pub fn poll_output(&mut self) -> Option<Output> {
        self.ctx.pop_output()
    }

    /// Whether an output is queued: what [`Run::poll_output`] would return is not `None`.
    pub fn has_output(&self) -> bool {
        !self.ctx.outputs.is_empty()
    }

    /// The earliest instant at which [`Run::handle_timeout`] has work to do.
    pub fn poll_timeout(&self) -> Option<Timestamp> {
        if self.finished.is_some() {
            return None;
        }
        self.ctx.next_deadline()
    }

    /// Whether the run has finished (the [`Output::Finished`] was queued).
    pub fn is_finished(&self) -> bool {
        self.finished.is_some()
    }

    /// The result, once finished.
    pub fn result(&self) -> Option<&ExecutionResult> {
        self.finished.as_deref()
    }

    /// A consistent snapshot of the run now: every step's state, the subtasks in flight per
    /// agent, the outputs of the subtasks finished so far per step, and the history so far.
    /// It reads the state and changes nothing. After the end it describes the final state.
    pub fn progress(&self) -> RunProgress {
        let result = self.finished.as_ref();
        let steps = self
            .workflow
            .step_ids()
            .map(|id| {
                let name = self.workflow.step(id).name.clone();
                let state = match self.steps[id.index()].phase {
                    Phase::Pending => StepProgressState::Pending,
                    Phase::Running | Phase::Routing => StepProgressState::Running,
                    Phase::Succeeded => StepProgressState::Succeeded,
                    Phase::Failed => StepProgressState::Failed,
                    Phase::Skipped => StepProgressState::Skipped,
                    Phase::Cancelled => StepProgressState::Cancelled,
                };
                StepProgress { name, state }
            })
            .collect();
        let mut in_flight: BTreeMap<String, usize> = BTreeMap::new();
        if result.is_none() {
            for key in self.slots.keys() {
                let step = self.workflow.step(key.step);
                if let Some(sub) = step.subtasks.get(key.subtask as usize) {
                    *in_flight.entry(sub.agent.to_string()).or_default() += 1;
                }
            }
        }
        let (step_outputs, history) = match result {
            Some(r) => (owned_outputs(r), r.history.clone()),
            None => {
                let outputs = self
                    .workflow
                    .step_ids()
                    .filter_map(|id| {
                        let out = self.outputs_of(id);
                        (!out.is_empty()).then(|| (self.workflow.step(id).name.to_string(), out))
                    })
                    .collect();
                let history = (0..self.finished_count())
                    .filter_map(|i| self.finished_task(i).cloned())
                    .collect();
                (outputs, history)
            }
        };
        RunProgress {
            execution_id: self.ctx.execution_id.to_string(),
            finished: result.is_some(),
            steps,
            in_flight,
            step_outputs,
            history,
        }
    }

    /// How many subtasks have finished so far (their whole send-and-negotiation cycle is
    /// over); see [`Run::finished_task`].
    pub fn finished_count(&self) -> usize {
        match &self.finished {
            Some(r) => r.history.len(),
            None => self.finish_order.len(),
        }
    }

    /// The `i`-th subtask to finish (0-based, in the order they finished), as it will appear
    /// in the result's history; after the end, the result's history itself.
    pub fn finished_task(&self, i: usize) -> Option<&TaskExecutionResult> {
        if let Some(r) = &self.finished {
            return r.history.get(i);
        }
        let key = self.finish_order.get(i)?;
        self.steps
            .get(key.step.index())?
            .results
            .get(key.subtask as usize)?
            .as_deref()
    }

    /// Feeds one input that happened at `now`.
    pub fn handle(&mut self, input: Input, now: Timestamp) -> Result<(), ApiMisuse> {
        let before = self.ctx.now;
        self.advance_clock(now)?;
        match input {
            Input::HostReply { call, reply } => {
                if let Err(misuse) = self.on_host_reply(call, reply) {
                    self.ctx.now = before;
                    return Err(misuse);
                }
            }
            Input::Cancel => self.cancel(),
            input => self.on_exchange_input(input),
        }
        self.after_input();
        Ok(())
    }

    /// The clock reached a deadline returned by [`Run::poll_timeout`] (or any later instant).
    pub fn handle_timeout(&mut self, now: Timestamp) -> Result<(), ApiMisuse> {
        self.advance_clock(now)?;
        while let Some(key) = self.ctx.pop_due(now) {
            self.on_timer(key);
        }
        self.after_input();
        Ok(())
    }

    fn advance_clock(&mut self, now: Timestamp) -> Result<(), ApiMisuse> {
        if self.finished.is_some() {
            return Err(ApiMisuse::Finished);
        }
        self.ctx.advance_to(now)
    }

    // ----- lifecycle -----

    fn begin(&mut self) {
        if self.started {
            return;
        }
        self.started = true;
        let wf = self.workflow.workflow();
        let names: Vec<&str> = wf.steps.iter().map(|s| s.name.as_str()).collect();
        emit!(
            self.ctx,
            EventType::Start,
            json!({
                "workflow": wf.name,
                "workflowId": wf.id,
                "steps": names,
                "executionId": self.ctx.execution_id,
            }),
        );
        for &id in self.workflow.start_steps() {
            self.steps[id.index()].activated = true;
            self.ready.insert(id);
        }
        self.after_input();
    }

    fn after_input(&mut self) {
        self.dispatch_ready();
        self.maybe_finish();
    }

    fn stopping(&self) -> bool {
        self.failure.is_some() || self.cancelled
    }

    fn dispatch_ready(&mut self) {
        while !self.stopping() {
            let Some(id) = self.ready.pop_first() else {
                break;
            };
            self.dispatch_step(id);
        }
    }

    fn fail_run(&mut self, code: &str, message: String) {
        if self.failure.is_none() {
            self.failure = Some(RunError {
                code: code.into(),
                message,
            });
        }
    }

    fn cancel(&mut self) {
        if self.cancelled {
            return;
        }
        self.cancelled = true;
        self.fail_run(codes::CANCELLED, "Workflow execution cancelled".into());
        let keys: Vec<TaskKey> = self.slots.keys().copied().collect();
        for key in keys {
            self.cancel_task(key, "Workflow execution cancelled");
        }
        for id in 0..self.steps.len() {
            self.abandon_routing(StepId(id as u32));
        }
    }

    /// The names of `id`'s predecessors that have not settled, for the deadlock message.
    fn unsettled_predecessors(&self, id: StepId) -> Vec<&str> {
        self.workflow
            .predecessors(id)
            .iter()
            .filter(|p| !self.is_settled(**p))
            .map(|p| self.workflow.step(*p).name.as_str())
            .collect()
    }

    fn maybe_finish(&mut self) {
        if self.finished.is_some() || !self.ctx.ops.is_empty() || !self.ctx.calls.is_empty() {
            return;
        }
        if !self.slots.is_empty() {
            return;
        }
        // With no subtask slot and no host call pending, no step can still be running or
        // routing: both states always wait on one of those.
        debug_assert!(
            !self
                .steps
                .iter()
                .any(|s| matches!(s.phase, Phase::Running | Phase::Routing))
        );
        if !self.stopping() && !self.ready.is_empty() {
            return;
        }
        if !self.stopping() {
            let stuck: Vec<String> = self
                .workflow
                .step_ids()
                .filter(|id| self.steps[id.index()].phase == Phase::Pending)
                .map(|id| {
                    format!(
                        "{} <- [{}]",
                        self.workflow.step(id).name,
                        self.unsettled_predecessors(id).join(", ")
                    )
                })
                .collect();
            if !stuck.is_empty() {
                let message = format!(
                    "Workflow dependency deadlock; unresolved active predecessors: {}",
                    stuck.join("; ")
                );
                emit!(
                    self.ctx,
                    EventType::Error,
                    json!({ "error": message, "errorCode": codes::DEADLOCK }),
                );
                self.fail_run(codes::DEADLOCK, message);
            }
        }
        self.finish();
    }

    fn is_settled(&self, id: StepId) -> bool {
        matches!(
            self.steps[id.index()].phase,
            Phase::Succeeded | Phase::Skipped
        ) && self.steps[id.index()].routing.is_none()
    }

    fn finish(&mut self) {
        let success = self.failure.is_none();
        let mut reports = Vec::new();
        for id in self.workflow.step_ids() {
            let step = self.workflow.step(id);
            let state = &self.steps[id.index()];
            let status = match state.phase {
                Phase::Pending => StepStatus::NotRun,
                Phase::Skipped => StepStatus::Skipped,
                Phase::Succeeded | Phase::Routing => StepStatus::Succeeded,
                Phase::Failed => StepStatus::Failed,
                Phase::Cancelled | Phase::Running => StepStatus::Cancelled,
            };
            reports.push(StepReport {
                name: step.name.clone(),
                status,
            });
        }
        let result = ExecutionResult {
            execution_id: self.ctx.execution_id.to_string(),
            success,
            error: self.failure.clone(),
            history: self.take_history(),
            steps: reports,
        };
        emit!(
            self.ctx,
            EventType::WorkflowComplete,
            json!({ "success": success, "executionId": self.ctx.execution_id }),
        );
        let last = if result.error.is_some() {
            EventType::Error
        } else {
            EventType::Complete
        };
        // One result for the output, for `result()` and for the last event's payload: a copy
        // would cost as much as the whole history and double the run's peak memory at its end.
        let result = Arc::new(result);
        emit_deferred!(self.ctx, last, {
            let result = Arc::clone(&result);
            move || {
                let history = serde_json::to_value(&result.history).unwrap_or(Value::Null);
                let outputs = serde_json::to_value(result.step_outputs()).unwrap_or(Value::Null);
                let execution_id = Value::from(result.execution_id.as_str());
                match &result.error {
                    None => object([
                        ("history", history),
                        ("step_outputs", outputs),
                        ("executionId", execution_id),
                    ]),
                    Some(error) => object([
                        ("error", Value::from(error.message.as_str())),
                        ("errorCode", Value::from(error.code.as_str())),
                        ("history", history),
                        ("step_outputs", outputs),
                        ("executionId", execution_id),
                    ]),
                }
            }
        });
        self.ctx.push(Output::Finished(Arc::clone(&result)));
        self.finished = Some(result);
    }

    /// The results in the order they finished, moved out of the step table: the run has ended.
    fn take_history(&mut self) -> Vec<TaskExecutionResult> {
        let order = std::mem::take(&mut self.finish_order);
        // Sized up front: collected through a filter, the list would grow by doubling and keep
        // up to half of its room unused for as long as the result lives.
        let mut history = Vec::with_capacity(order.len());
        history.extend(order.into_iter().filter_map(|key| {
            self.steps[key.step.index()]
                .results
                .get_mut(key.subtask as usize)
                .and_then(Option::take)
                // Requests still held elsewhere (a host that kept one) share it: copy then.
                .map(Arc::unwrap_or_clone)
        }));
        history
    }

    /// A step's outputs so far: task key → outputs; cancelled subtasks are left out.
    fn outputs_of(&self, id: StepId) -> BTreeMap<String, Vec<Value>> {
        let step = self.workflow.step(id);
        let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
        for sub in &step.subtasks {
            *seen.entry(sub.description.as_str()).or_default() += 1;
        }
        let mut out = BTreeMap::new();
        for (i, result) in self.steps[id.index()].results.iter().enumerate() {
            let Some(result) = result else { continue };
            if result.status == TaskStatus::Cancelled {
                continue;
            }
            let sub = &step.subtasks[i];
            let repeated = seen.get(sub.description.as_str()).copied().unwrap_or(0) > 1;
            let key = task_key(&sub.description, &sub.agent, i as u32, repeated);
            out.insert(key.into_owned(), result.outputs.clone());
        }
        out
    }

    // ----- steps -----

    fn window_for(&self, id: StepId) -> WorkflowInput {
        let selected: Vec<StepId> = match self.workflow.context_sources(id) {
            ContextSources::DirectPredecessors => self.workflow.predecessors(id).to_vec(),
            ContextSources::Nothing => Vec::new(),
            ContextSources::AllAncestors => self.workflow.ancestors(id),
            ContextSources::Named(names) => names.clone(),
        };
        let upstream_results = selected
            .into_iter()
            .filter(|s| {
                matches!(
                    self.steps[s.index()].phase,
                    Phase::Succeeded | Phase::Routing
                )
            })
            .map(|s| UpstreamStepResult {
                step_name: self.workflow.step(s).name.clone(),
                task_results: self.steps[s.index()]
                    .results
                    .iter()
                    .flatten()
                    .cloned()
                    .collect(),
            })
            .collect();
        WorkflowInput {
            runtime_intent: self.start.runtime_intent.clone(),
            upstream_results,
        }
    }

    fn dispatch_step(&mut self, id: StepId) {
        let window = self.window_for(id);
        let workflow = Arc::clone(&self.workflow);
        let step = workflow.step(id);
        {
            let state = &mut self.steps[id.index()];
            state.phase = Phase::Running;
            state.window = window;
            state.results = vec![None; step.subtasks.len()];
            state.running = step.subtasks.len();
        }
        emit_deferred!(self.ctx, EventType::StepStart, {
            let (workflow, execution_id) = (Arc::clone(&workflow), self.ctx.execution_id.clone());
            move || {
                let step = workflow.step(id);
                json!({ "step": step.name, "step_type": step.step_type.as_str(), "executionId": execution_id })
            }
        });
        let routes_ask_host = workflow.edges(id).iter().any(|e| e.is_conditional());
        for (i, sub) in step.subtasks.iter().enumerate() {
            let key = TaskKey {
                step: id,
                subtask: i as u32,
            };
            let request = TaskRequest {
                execution_id: self.ctx.execution_id.clone(),
                task_id: task_uuid(&self.ctx.execution_id, &step.name, i as u32),
                step_name: step.name.clone(),
                subtask_index: i as u32,
                agent_name: sub.agent.clone(),
                skill: sub.skill.clone(),
                instruction: sub.description.clone(),
                input: sub.effective_input(),
                language: self.start.language.clone(),
                workflow_input: if i + 1 == step.subtasks.len() && !routes_ask_host {
                    // Nothing reads the window after the last request: move it.
                    std::mem::take(&mut self.steps[id.index()].window)
                } else {
                    self.steps[id.index()].window.clone()
                },
            };
            emit_deferred!(self.ctx, EventType::TaskRequest, {
                let workflow = Arc::clone(&workflow);
                let task_id = request.task_id.clone();
                let execution_id = self.ctx.execution_id.clone();
                move || {
                    let step = workflow.step(key.step);
                    let sub = &step.subtasks[key.subtask as usize];
                    json!({
                        "step": step.name,
                        "subtask_index": key.subtask,
                        "agent": sub.agent,
                        "task": sub.description,
                        "task_id": task_id,
                        "executionId": execution_id,
                    })
                }
            });
            emit_deferred!(self.ctx, EventType::TaskStatusChanged, {
                let workflow = Arc::clone(&workflow);
                move || status_changed(&workflow, key, "running")
            });
            if step.step_type == StepType::SelfLoop {
                let call = self.ctx.new_call(CallOwner::SelfTask(key));
                let deadline = self.ctx.now.saturating_add(self.config.callback_budget);
                self.ctx.set_timer(TimerKey::TaskDeadline(key), deadline);
                self.slots
                    .insert(key, Slot::Local(call, request.task_id.clone()));
                self.ctx.push(Output::CallHost {
                    call,
                    request: HostRequest::SelfTask(Box::new(request)),
                });
            } else {
                let mut env = Env {
                    ctx: &mut self.ctx,
                    agents: &self.agents,
                    config: &self.config,
                };
                let invocation = Invocation::start(key, request, &mut env);
                self.slots.insert(key, Slot::Remote(Box::new(invocation)));
            }
        }
        if step.subtasks.is_empty() {
            self.complete_step(id);
        }
    }

    /// The result of a local task; `task_id` is the one its slot kept.
    fn local_result(
        &self,
        key: TaskKey,
        task_id: SharedStr,
        outcome: Result<Vec<Value>, (String, String)>,
        status: TaskStatus,
    ) -> Arc<TaskExecutionResult> {
        let step = self.workflow.step(key.step);
        let sub = &step.subtasks[key.subtask as usize];
        let (outputs, error, error_code) = match outcome {
            Ok(outputs) => (outputs, None, None),
            Err((code, message)) => (Vec::new(), Some(message), Some(code)),
        };
        Arc::new(TaskExecutionResult {
            step_name: step.name.clone(),
            subtask_index: key.subtask,
            agent_name: sub.agent.clone(),
            skill: sub.skill.clone(),
            task_id,
            task_description: sub.description.clone(),
            status,
            outputs,
            received_messages: Vec::new(),
            error,
            error_code,
            error_details: None,
            remote_task_id: None,
            context_id: None,
        })
    }

    fn cancel_task(&mut self, key: TaskKey, reason: &str) {
        let result = match self.slots.get_mut(&key) {
            Some(Slot::Remote(inv)) => {
                let mut env = Env {
                    ctx: &mut self.ctx,
                    agents: &self.agents,
                    config: &self.config,
                };
                inv.cancel(reason, &mut env)
            }
            Some(Slot::Local(call, task_id)) => {
                let (call, task_id) = (*call, std::mem::take(task_id));
                self.ctx.abandon_call(call);
                self.ctx.clear_timer(TimerKey::TaskDeadline(key));
                Some(self.local_result(
                    key,
                    task_id,
                    Err((codes::CANCELLED.into(), reason.into())),
                    TaskStatus::Cancelled,
                ))
            }
            None => None,
        };
        if let Some(result) = result {
            self.task_finished(key, result);
        }
    }

    fn task_finished(&mut self, key: TaskKey, result: Arc<TaskExecutionResult>) {
        self.slots.remove(&key);
        let step_id = key.step;
        let step_type = self.workflow.step(step_id).step_type;
        emit_deferred!(self.ctx, EventType::TaskStatusChanged, {
            let (workflow, status) = (Arc::clone(&self.workflow), result.status.as_str());
            move || status_changed(&workflow, key, status)
        });
        emit_deferred!(self.ctx, EventType::TaskResponse, {
            let result = Arc::clone(&result);
            let workflow = Arc::clone(&self.workflow);
            let execution_id = self.ctx.execution_id.clone();
            move || {
                json!({
                    "step": workflow.step(key.step).name,
                    "subtask_index": key.subtask,
                    "agent": result.agent_name,
                    "task": result.task_description,
                    "outputs": result.outputs,
                    "success": result.status == TaskStatus::Success,
                    "status": result.status.as_str(),
                    "taskId": result.task_id,
                    "remoteTaskId": result.remote_task_id,
                    "error": result.error,
                    "errorCode": result.error_code,
                    "errorDetails": result.error_details,
                    "executionId": execution_id,
                })
            }
        });
        let won = result.status == TaskStatus::Success;
        self.finish_order.push(key);
        let state = &mut self.steps[step_id.index()];
        state.results[key.subtask as usize] = Some(result);
        state.running -= 1;
        if step_type == StepType::AnySuccess && won && !state.winner_found {
            state.winner_found = true;
            let peers: Vec<TaskKey> = self
                .slots
                .keys()
                .filter(|k| k.step == step_id)
                .copied()
                .collect();
            for peer in peers {
                self.cancel_task(peer, "another subtask of this ANY_SUCCESS step succeeded");
            }
        }
        if self.steps[step_id.index()].running == 0
            && self.steps[step_id.index()].phase == Phase::Running
        {
            self.complete_step(step_id);
        }
    }

    /// What a step's `step_complete` or `error` event is built from: its results, shared with
    /// the run's history rather than copied.
    fn step_event_parts(
        &self,
        id: StepId,
    ) -> (
        Vec<Arc<TaskExecutionResult>>,
        Arc<ValidatedWorkflow>,
        SharedStr,
    ) {
        let results = self.steps[id.index()]
            .results
            .iter()
            .flatten()
            .cloned()
            .collect();
        (
            results,
            Arc::clone(&self.workflow),
            self.ctx.execution_id.clone(),
        )
    }

    fn complete_step(&mut self, id: StepId) {
        let step = self.workflow.step(id);
        let state = &self.steps[id.index()];
        let results: Vec<&TaskExecutionResult> =
            state.results.iter().flatten().map(|r| &**r).collect();
        let succeeded = match step.step_type {
            StepType::AnySuccess => {
                results.is_empty() || results.iter().any(|r| r.status == TaskStatus::Success)
            }
            StepType::AllSuccess | StepType::SelfLoop => {
                results.iter().all(|r| r.status == TaskStatus::Success)
            }
        };
        let failed_detail = results
            .iter()
            .find(|r| r.status != TaskStatus::Success)
            .map(|r| {
                format!(
                    ": subtask {} ({}) failed with {}: {}",
                    r.subtask_index,
                    r.agent_name,
                    r.error_code.as_deref().unwrap_or("?"),
                    r.error.as_deref().unwrap_or("")
                )
            })
            .unwrap_or_default();
        let name = step.name.clone();
        if !succeeded {
            // Only route requests read the window after dispatch, and a failed step routes nowhere.
            self.steps[id.index()].window = WorkflowInput::default();
        }
        if self.cancelled && !succeeded {
            self.steps[id.index()].phase = Phase::Cancelled;
            return;
        }
        if succeeded {
            self.steps[id.index()].phase = Phase::Succeeded;
            emit_deferred!(self.ctx, EventType::StepComplete, {
                let (results, workflow, execution_id) = self.step_event_parts(id);
                move || {
                    object([
                        ("step", Value::from(workflow.step(id).name.as_str())),
                        ("success", Value::Bool(true)),
                        ("results", results_value(&results)),
                        ("executionId", Value::from(&*execution_id)),
                    ])
                }
            });
            if !self.stopping() {
                self.begin_routing(id);
            }
        } else {
            self.steps[id.index()].phase = Phase::Failed;
            emit_deferred!(self.ctx, EventType::Error, {
                let (results, workflow, execution_id) = self.step_event_parts(id);
                move || {
                    object([
                        ("step", Value::from(workflow.step(id).name.as_str())),
                        ("results", results_value(&results)),
                        ("error", Value::from("Step execution failed")),
                        ("errorCode", Value::from(codes::STEP_FAILED)),
                        ("executionId", Value::from(&*execution_id)),
                    ])
                }
            });
            self.fail_run(
                codes::STEP_FAILED,
                format!("Step execution failed: step {name}{failed_detail}"),
            );
        }
    }

    // ----- routing -----

    fn begin_routing(&mut self, id: StepId) {
        let workflow = Arc::clone(&self.workflow);
        let edges = workflow.edges(id);
        let step = workflow.step(id);
        let mut decisions = Vec::with_capacity(edges.len());
        let mut calls = Vec::new();
        // Route requests are the window's last readers: they all go out here.
        let window = std::mem::take(&mut self.steps[id.index()].window);
        let current_results: Vec<Arc<TaskExecutionResult>> =
            if edges.iter().any(|e| e.is_conditional()) {
                self.steps[id.index()]
                    .results
                    .iter()
                    .flatten()
                    .cloned()
                    .collect()
            } else {
                Vec::new()
            };
        for (i, edge) in edges.iter().enumerate() {
            if !edge.is_conditional() {
                decisions.push(Some(RouteDecision::allow(None)));
                continue;
            }
            decisions.push(None);
            let call = self.ctx.new_call(CallOwner::Route(id, i as u32));
            let deadline = self.ctx.now.saturating_add(self.config.callback_budget);
            self.ctx.set_timer(TimerKey::Route(id, i as u32), deadline);
            self.ctx.push(Output::CallHost {
                call,
                request: HostRequest::Route(Box::new(RouteRequest {
                    execution_id: self.ctx.execution_id.clone(),
                    step_name: step.name.clone(),
                    next_step: edge.target_name(&workflow).to_owned(),
                    condition: edge.condition.clone().unwrap_or_default(),
                    workflow_input: window.clone(),
                    current_results: current_results.clone(),
                })),
            });
            calls.push((i as u32, call));
        }
        self.steps[id.index()].phase = Phase::Routing;
        self.steps[id.index()].routing = Some(Box::new(RoutingState { decisions, calls }));
        self.try_finish_routing(id);
    }

    fn on_route_answer(&mut self, id: StepId, edge: u32, answer: Result<RouteDecision, String>) {
        let Some(routing) = self.steps[id.index()].routing.as_mut() else {
            return;
        };
        routing.calls.retain(|(e, _)| *e != edge);
        self.ctx.clear_timer(TimerKey::Route(id, edge));
        match answer {
            Ok(decision) => {
                routing.decisions[edge as usize] = Some(decision);
                self.try_finish_routing(id);
            }
            Err(cause) => {
                let step = self.workflow.step(id);
                let target = self.workflow.edges(id)[edge as usize].target_name(&self.workflow);
                let message = format!(
                    "onRoute failed for edge {} -> {}: {}",
                    step.name, target, cause
                );
                emit!(
                    self.ctx,
                    EventType::Error,
                    json!({
                        "step": step.name,
                        "next": target,
                        "error": message,
                        "errorCode": codes::ROUTE_FAILED,
                        "executionId": self.ctx.execution_id,
                    }),
                );
                self.fail_run(codes::ROUTE_FAILED, message);
                self.abandon_routing(id);
                self.steps[id.index()].phase = Phase::Succeeded;
            }
        }
    }

    fn abandon_routing(&mut self, id: StepId) {
        if let Some(routing) = self.steps[id.index()].routing.take() {
            for (edge, call) in routing.calls {
                self.ctx.abandon_call(call);
                self.ctx.clear_timer(TimerKey::Route(id, edge));
            }
            self.steps[id.index()].phase = Phase::Succeeded;
        }
    }

    fn try_finish_routing(&mut self, id: StepId) {
        let complete = self.steps[id.index()]
            .routing
            .as_ref()
            .is_some_and(|r| r.decisions.iter().all(Option::is_some));
        if !complete {
            return;
        }
        let routing = self.steps[id.index()]
            .routing
            .take()
            .expect("checked above");
        self.steps[id.index()].phase = Phase::Succeeded;
        let workflow = Arc::clone(&self.workflow);
        let mut activated = Vec::new();
        for (edge_index, (edge, decision)) in
            workflow.edges(id).iter().zip(routing.decisions).enumerate()
        {
            let decision = decision.expect("all decisions present");
            emit_deferred!(self.ctx, EventType::RouteDecision, {
                let workflow = Arc::clone(&workflow);
                let (decision, execution_id) = (decision.clone(), self.ctx.execution_id.clone());
                move || {
                    let edge = &workflow.edges(id)[edge_index];
                    json!({
                        "step": workflow.step(id).name,
                        "next": edge.target_name(&workflow),
                        "condition": edge.condition,
                        "conditional": edge.is_conditional(),
                        "allowed": decision.allowed,
                        "reason": decision.reason,
                        "executionId": execution_id,
                    })
                }
            });
            if let (true, EdgeTarget::Step(target)) = (decision.allowed, &edge.target) {
                activated.push(*target);
            }
        }
        self.settle(id, &activated);
    }

    /// `id` settled: decrement its successors' counters; activate, make ready or mark dead.
    /// A step marked dead settles in turn, activating nothing.
    fn settle(&mut self, id: StepId, activated: &[StepId]) {
        // Stays unallocated unless a step is skipped: settling is on every step's path.
        let mut skipped = Vec::new();
        self.settle_successors(id, activated, &mut skipped);
        while let Some(source) = skipped.pop() {
            self.settle_successors(source, &[], &mut skipped);
        }
    }

    fn settle_successors(
        &mut self,
        source: StepId,
        activated: &[StepId],
        skipped: &mut Vec<StepId>,
    ) {
        for &succ in self.workflow.successors(source) {
            let state = &mut self.steps[succ.index()];
            state.unsettled_predecessors -= 1;
            if activated.contains(&succ) {
                state.activated = true;
            }
            if state.unsettled_predecessors == 0 && state.phase == Phase::Pending {
                if state.activated {
                    self.ready.insert(succ);
                } else {
                    state.phase = Phase::Skipped;
                    skipped.push(succ);
                }
            }
        }
    }

    // ----- inputs -----

    fn on_host_reply(&mut self, call: CallId, reply: HostReply) -> Result<(), ApiMisuse> {
        let Some(owner) = self.ctx.calls.get(&call).copied() else {
            return Ok(());
        };
        let expected = match owner {
            CallOwner::Invocation(_) => None,
            CallOwner::SelfTask(_) => Some("on_self_task"),
            CallOwner::Route(..) => Some("on_route"),
        };
        let got = reply.callback_name();
        let invocation_kinds = ["on_task", "on_negotiation", "on_input_required"];
        let fits = match expected {
            Some(e) => e == got,
            None => invocation_kinds.contains(&got),
        };
        if !fits {
            return Err(ApiMisuse::ReplyKindMismatch {
                call,
                expected: expected.unwrap_or("on_task or on_negotiation"),
                got,
            });
        }
        self.ctx.calls.remove(&call);
        match (owner, reply) {
            (CallOwner::Invocation(key), reply) => {
                if let Some(Slot::Remote(inv)) = self.slots.get_mut(&key) {
                    let mut env = Env {
                        ctx: &mut self.ctx,
                        agents: &self.agents,
                        config: &self.config,
                    };
                    if let Some(result) = inv.on_host_reply(call, reply, &mut env) {
                        self.task_finished(key, result);
                    }
                }
            }
            (CallOwner::SelfTask(key), HostReply::SelfTask(answer)) => {
                self.ctx.clear_timer(TimerKey::TaskDeadline(key));
                // A live call always has its task's slot.
                let Some(Slot::Local(_, task_id)) = self.slots.remove(&key) else {
                    return Ok(());
                };
                let result = match answer {
                    Ok(TaskResult::Success { outputs }) => {
                        self.local_result(key, task_id, Ok(outputs), TaskStatus::Success)
                    }
                    Ok(TaskResult::Failure { code, message }) => {
                        self.local_result(key, task_id, Err((code, message)), TaskStatus::Failed)
                    }
                    Err(e) => {
                        let code = if e.code.trim().is_empty() {
                            codes::EXECUTION_FAILED.to_owned()
                        } else {
                            e.code
                        };
                        self.local_result(key, task_id, Err((code, e.message)), TaskStatus::Failed)
                    }
                };
                self.task_finished(key, result);
            }
            (CallOwner::Route(id, edge), HostReply::Route(answer)) => {
                self.on_route_answer(
                    id,
                    edge,
                    answer.map_err(|e| format!("{}: {}", e.code, e.message)),
                );
            }
            _ => {}
        }
        Ok(())
    }

    /// A response or transport failure of one exchange: cleanup and orphan exchanges are
    /// settled by the shared rules, the rest goes to the invocation that owns it.
    fn on_exchange_input(&mut self, input: Input) {
        let mut env = Env {
            ctx: &mut self.ctx,
            agents: &self.agents,
            config: &self.config,
        };
        match remote::route_exchange_input(input, &mut env) {
            Routed::Settled => {}
            Routed::Items { owner, op, items } => match self.slots.get_mut(&owner) {
                Some(Slot::Remote(inv)) => {
                    if let Some(result) = inv.on_items(op, items, &mut env) {
                        self.task_finished(owner, result);
                    }
                }
                _ => self.ctx.abort_op(op),
            },
            Routed::Failed { owner, op, error } => {
                let result = match self.slots.get_mut(&owner) {
                    Some(Slot::Remote(inv)) => inv.on_transport_failed(op, error, &mut env),
                    _ => None,
                };
                if let Some(result) = result {
                    self.task_finished(owner, result);
                }
                remote::forget_exchange(op, &mut self.ctx);
            }
        }
    }

    fn on_timer(&mut self, key: TimerKey) {
        match key {
            TimerKey::TaskDeadline(task) => match self.slots.get_mut(&task) {
                Some(Slot::Remote(inv)) => {
                    let mut env = Env {
                        ctx: &mut self.ctx,
                        agents: &self.agents,
                        config: &self.config,
                    };
                    if let Some(result) = inv.on_deadline(&mut env) {
                        self.task_finished(task, result);
                    }
                }
                Some(Slot::Local(call, task_id)) => {
                    let (call, task_id) = (*call, std::mem::take(task_id));
                    self.ctx.abandon_call(call);
                    let budget = self.config.callback_budget.as_secs_f64();
                    let result = self.local_result(
                        task,
                        task_id,
                        Err((
                            codes::TIMEOUT.into(),
                            format!("on_self_task did not answer within {budget}s"),
                        )),
                        TaskStatus::Failed,
                    );
                    self.task_finished(task, result);
                }
                None => {}
            },
            TimerKey::Poll(task) => {
                if let Some(Slot::Remote(inv)) = self.slots.get_mut(&task) {
                    let mut env = Env {
                        ctx: &mut self.ctx,
                        agents: &self.agents,
                        config: &self.config,
                    };
                    if let Some(result) = inv.on_poll_timer(&mut env) {
                        self.task_finished(task, result);
                    }
                }
            }
            TimerKey::Route(id, edge) => {
                let call = self.steps[id.index()]
                    .routing
                    .as_ref()
                    .and_then(|r| r.calls.iter().find(|(e, _)| *e == edge).map(|(_, c)| *c));
                if let Some(call) = call {
                    self.ctx.abandon_call(call);
                    let budget = self.config.callback_budget.as_secs_f64();
                    self.on_route_answer(id, edge, Err(format!("no decision within {budget}s")));
                }
            }
            TimerKey::Cleanup(op) => self.ctx.abort_op(op),
            TimerKey::Retry(task) => {
                if let Some(Slot::Remote(inv)) = self.slots.get_mut(&task) {
                    let mut env = Env {
                        ctx: &mut self.ctx,
                        agents: &self.agents,
                        config: &self.config,
                    };
                    if let Some(result) = inv.on_retry_timer(&mut env) {
                        self.task_finished(task, result);
                    }
                }
            }
        }
    }
}

/// The JSON of a step's results, in subtask order, as its `step_complete` or `error` event
/// carries them.
fn results_value(results: &[Arc<TaskExecutionResult>]) -> Value {
    Value::Array(
        results
            .iter()
            .map(|r| serde_json::to_value(&**r).unwrap_or(Value::Null))
            .collect(),
    )
}

/// The payload of a `task_status_changed` event.
/// A finished run's outputs as the progress snapshot holds them: owned, so that the snapshot
/// outlives the result.
fn owned_outputs(result: &ExecutionResult) -> BTreeMap<String, BTreeMap<String, Vec<Value>>> {
    result
        .step_outputs()
        .into_iter()
        .map(|(step, tasks)| {
            let tasks = tasks
                .into_iter()
                .map(|(key, outputs)| (key.into_owned(), outputs.to_vec()))
                .collect();
            (step.to_owned(), tasks)
        })
        .collect()
}

fn status_changed(workflow: &ValidatedWorkflow, key: TaskKey, status: &str) -> Value {
    let step = workflow.step(key.step);
    json!({
        "step": step.name,
        "subtask_index": key.subtask,
        "agent": step.subtasks[key.subtask as usize].agent,
        "status": status,
    })
}
