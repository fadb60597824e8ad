//! The conformance harness: one [`Scenario`] (workflow, scripted agents, scripted host,
//! budgets) runs on every [`Driver`] — the simulator here, the tokio and smol engines over
//! loopback HTTP in `tests/tests/conformance.rs` — and must give the same [`Execution`].
//!
//! Scenario bodies live in [`flows`], [`failures`], [`protocol`] and [`resilience`] as functions generic over
//! the [`Driver`]; [`conformance_suite!`](crate::conformance_suite) turns them into `#[test]`s
//! for one driver ([`SimDriver`], or [`EngineDriver`] over a runtime).
//! [`check`] runs the scenario on `D` and on the simulator and compares what is deterministic
//! across runtimes ([`Execution::comparable`]).

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2at_core::RetryPolicy;
use a2at_core::host::{
    ControlPoint, HostError, HostReply, HostRequest, MessageContent, NegotiationReply,
    NegotiationRequest, RouteDecision, RouteRequest, TaskRequest, TaskResult,
};
use a2at_core::result::ExecutionResult;
use a2at_core::run::{RunConfig, RunStart};
use a2at_core::workflow::{ValidatedWorkflow, parse_and_validate};
use serde_json::{Value, json};

use crate::agent::ScriptedAgent;
use crate::host::ScriptedHost;
use crate::sim::Sim;

mod engine;
// Each public function is one scenario whose name says what it checks.
#[allow(missing_docs)]
pub mod failures;
#[allow(missing_docs)]
pub mod flows;
#[allow(missing_docs)]
pub mod protocol;
#[allow(missing_docs)]
pub mod resilience;

pub use engine::EngineDriver;

/// One `#[test]` per conformance scenario on the [`Driver`] `$driver`. A new scenario is a
/// `pub fn` in [`flows`], [`failures`], [`protocol`] or [`resilience`] plus its line here.
#[macro_export]
macro_rules! conformance_suite {
    ($driver:ty) => {
        $crate::__conformance_test!($driver, flows::chain);
        $crate::__conformance_test!($driver, flows::fan_out_and_join);
        $crate::__conformance_test!($driver, flows::self_loop_never_touches_the_network);
        $crate::__conformance_test!($driver, flows::conditional_routing_with_a_denied_edge);
        $crate::__conformance_test!(
            $driver,
            flows::streaming_and_blocking_agents_on_both_bindings
        );
        $crate::__conformance_test!($driver, flows::a_working_task_is_polled_until_it_completes);
        $crate::__conformance_test!($driver, failures::all_success_fails_when_one_subtask_fails);
        $crate::__conformance_test!(
            $driver,
            failures::any_success_cancels_the_losers_remote_task
        );
        $crate::__conformance_test!($driver, failures::a_failed_route_callback_fails_the_run);
        $crate::__conformance_test!(
            $driver,
            failures::a_pre_creation_error_envelope_on_both_bindings
        );
        $crate::__conformance_test!($driver, failures::budget_expiry_cancels_the_remote_task);
        $crate::__conformance_test!(
            $driver,
            failures::cancelling_the_run_cancels_every_remote_task
        );
        $crate::__conformance_test!($driver, protocol::negotiation_over_two_rounds);
        $crate::__conformance_test!($driver, protocol::a_bare_message_answer_is_a_success);
        $crate::__conformance_test!(
            $driver,
            resilience::a_stream_reset_after_the_task_is_known_resubscribes_and_succeeds
        );
        $crate::__conformance_test!(
            $driver,
            resilience::a_stream_that_ends_before_a_final_state_resubscribes
        );
        $crate::__conformance_test!(
            $driver,
            resilience::an_agent_that_cannot_resubscribe_is_read_with_get_task
        );
        $crate::__conformance_test!(
            $driver,
            resilience::an_unavailable_resubscription_is_retried
        );
        $crate::__conformance_test!(
            $driver,
            resilience::an_overloaded_agent_gets_the_same_send_again
        );
        $crate::__conformance_test!(
            $driver,
            resilience::a_send_whose_answer_was_lost_is_found_by_its_context
        );
        $crate::__conformance_test!(
            $driver,
            resilience::a_lost_answer_without_list_tasks_fails_as_without_retries
        );
        $crate::__conformance_test!(
            $driver,
            resilience::polling_survives_an_unavailable_get_task
        );
        $crate::__conformance_test!(
            $driver,
            resilience::a_stream_that_breaks_every_time_gives_up_with_every_attempt_listed
        );
        $crate::__conformance_test!(
            $driver,
            resilience::a_resubscription_reset_after_the_task_finished_reads_the_result
        );
        $crate::__conformance_test!($driver, resilience::without_retries_a_reset_fails_at_once);
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_test {
    ($driver:ty, $module:ident :: $test:ident) => {
        #[test]
        fn $test() {
            $crate::conformance::$module::$test::<$driver>();
        }
    };
}

/// Runs a scenario to its end.
pub trait Driver {
    /// A name for messages.
    const NAME: &'static str;

    /// Runs `scenario` on fresh agents and a fresh host.
    fn execute(scenario: &Scenario) -> Execution;
}

/// One workflow with its agents, host and settings; every driver runs it the same way.
#[derive(Clone)]
pub struct Scenario {
    /// The workflow JSON.
    pub workflow: Value,
    /// The agents, each with its plans (cloned fresh for every run).
    pub agents: Vec<ScriptedAgent>,
    /// Makes a fresh host for every run.
    pub host: Arc<dyn Fn() -> ScriptedHost + Send + Sync>,
    /// One budget per task activation.
    pub task_budget: Duration,
    /// Budget of `on_route` / `on_self_task`.
    pub callback_budget: Duration,
    /// `GetTask` interval.
    pub poll_interval: Duration,
    /// Budget of each `CancelTask` cleanup.
    pub cancel_budget: Duration,
    /// The host cancels the run this long after it started.
    pub cancel_after: Option<Duration>,
    /// The id seed.
    pub seed: u64,
    /// How faults are retried.
    pub retry: RetryPolicy,
}

impl Scenario {
    /// A scenario with the default host and short budgets (real runtimes run in real time).
    pub fn new(workflow: Value) -> Scenario {
        Scenario {
            workflow,
            agents: Vec::new(),
            host: Arc::new(ScriptedHost::default),
            task_budget: Duration::from_secs(5),
            callback_budget: Duration::from_secs(5),
            poll_interval: Duration::from_millis(20),
            cancel_budget: Duration::from_secs(2),
            cancel_after: None,
            seed: 7,
            retry: RetryPolicy::default(),
        }
    }

    /// Adds an agent.
    pub fn agent(mut self, agent: ScriptedAgent) -> Scenario {
        self.agents.push(agent);
        self
    }

    /// The host each run gets.
    pub fn host(mut self, host: impl Fn() -> ScriptedHost + Send + Sync + 'static) -> Scenario {
        self.host = Arc::new(host);
        self
    }

    /// Sets the task budget.
    pub fn task_budget(mut self, budget: Duration) -> Scenario {
        self.task_budget = budget;
        self
    }

    /// Sets the polling interval.
    pub fn poll_interval(mut self, interval: Duration) -> Scenario {
        self.poll_interval = interval;
        self
    }

    /// Sets the retry policy.
    pub fn retry(mut self, policy: RetryPolicy) -> Scenario {
        self.retry = policy;
        self
    }

    /// The host cancels the run after `after`.
    pub fn cancel_after(mut self, after: Duration) -> Scenario {
        self.cancel_after = Some(after);
        self
    }

    /// The validated workflow.
    pub fn validated(&self) -> ValidatedWorkflow {
        parse_and_validate(&self.workflow.to_string()).expect("scenario workflow is valid")
    }

    /// The core settings every driver uses.
    pub fn run_config(&self) -> RunConfig {
        RunConfig {
            seed: self.seed,
            task_budget: self.task_budget,
            callback_budget: self.callback_budget,
            poll_interval: self.poll_interval,
            cancel_budget: self.cancel_budget,
            retry: self.retry,
            ..RunConfig::default()
        }
    }
}

/// What a driver observed.
#[derive(Debug, Clone)]
pub struct Execution {
    /// The run's result.
    pub result: ExecutionResult,
    /// Per agent, the A2A method of every request it received, in arrival order.
    pub requests_per_agent: BTreeMap<String, Vec<String>>,
}

impl Execution {
    /// The methods `agent` received, sorted (a multiset).
    pub fn requests(&self, agent: &str) -> Vec<&str> {
        let mut methods: Vec<&str> = self
            .requests_per_agent
            .get(agent)
            .map(|m| m.iter().map(String::as_str).collect())
            .unwrap_or_default();
        methods.sort_unstable();
        methods
    }

    /// What must be equal on every driver: success, run error code, step statuses, step
    /// outputs, per-task status and error code, and the multiset of requests per agent.
    pub fn comparable(&self) -> Value {
        let r = &self.result;
        let mut tasks: Vec<Value> = r
            .history
            .iter()
            .map(|t| {
                json!([
                    t.step_name,
                    t.subtask_index,
                    t.agent_name,
                    t.status.as_str(),
                    t.error_code,
                    t.outputs
                ])
            })
            .collect();
        tasks.sort_by_key(|t| t.to_string());
        let steps: BTreeMap<&str, String> = r
            .steps
            .iter()
            .map(|s| (s.name.as_str(), format!("{:?}", s.status)))
            .collect();
        let requests: BTreeMap<&str, Vec<&str>> = self
            .requests_per_agent
            .keys()
            .map(|a| (a.as_str(), self.requests(a)))
            .filter(|(_, m)| !m.is_empty())
            .collect();
        json!({
            "success": r.success,
            "error": r.error.as_ref().map(|e| &e.code),
            "steps": steps,
            "step_outputs": r.step_outputs(),
            "tasks": tasks,
            "requests": requests,
        })
    }
}

/// Runs `scenario` on `D` and on the simulator, asserts both executions agree, and returns
/// `D`'s.
pub fn check<D: Driver>(scenario: &Scenario) -> Execution {
    let got = D::execute(scenario);
    let reference = SimDriver::execute(scenario);
    assert_eq!(
        got.comparable(),
        reference.comparable(),
        "{} disagrees with the simulator",
        D::NAME
    );
    got
}

/// The deterministic simulator as a driver (virtual time, in-memory agents).
#[derive(Debug)]
pub struct SimDriver;

impl Driver for SimDriver {
    const NAME: &'static str = "sim";

    fn execute(s: &Scenario) -> Execution {
        let mut sim = Sim::new(
            s.validated(),
            crate::directory(&s.agents),
            s.agents.clone(),
            (s.host)(),
            s.run_config(),
            RunStart::default(),
        );
        if let Some(at) = s.cancel_after {
            sim = sim.cancel_at(at);
        }
        let out = sim.drive_bounded(100_000);
        let requests_per_agent = s
            .agents
            .iter()
            .map(|a| {
                let methods = out
                    .requests
                    .get(&a.name)
                    .map(|rs| rs.iter().map(|r| r.method.clone()).collect())
                    .unwrap_or_default();
                (a.name.clone(), methods)
            })
            .collect();
        Execution {
            result: out.result().clone(),
            requests_per_agent,
        }
    }
}

/// Driver `D` with every scripted agent speaking gRPC ([`ScriptedAgent::grpc`]), whatever
/// binding the scenario gave it. [`check`] still compares with the simulator on the scenario as
/// written, so a scenario passing here gives over gRPC what it gives over JSON-RPC or REST.
pub struct OnGrpc<D>(std::marker::PhantomData<D>);

impl<D: Driver> Driver for OnGrpc<D> {
    const NAME: &'static str = D::NAME;

    fn execute(s: &Scenario) -> Execution {
        let mut s = s.clone();
        s.agents = s.agents.into_iter().map(ScriptedAgent::grpc).collect();
        D::execute(&s)
    }
}

/// A boxed sleep of the driver's runtime.
pub type Sleep = fn(Duration) -> Pin<Box<dyn Future<Output = ()> + Send>>;

/// A [`ControlPoint`] that answers from a [`ScriptedHost`], waiting each answer's delay on the
/// runtime's timer; an answer of `None` never comes.
pub struct ScriptedControlPoint {
    host: Mutex<ScriptedHost>,
    sleep: Sleep,
}

impl ScriptedControlPoint {
    /// Wraps `host`; `sleep` is the runtime's timer.
    pub fn new(host: ScriptedHost, sleep: Sleep) -> ScriptedControlPoint {
        ScriptedControlPoint {
            host: Mutex::new(host),
            sleep,
        }
    }

    /// Asks the script now (without holding the lock across an await), answers later.
    fn ask(&self, request: HostRequest) -> impl Future<Output = HostReply> + Send + 'static {
        let (delay, reply) = self
            .host
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .answer(&request);
        let sleep = (self.sleep)(delay);
        async move {
            sleep.await;
            match reply {
                Some(reply) => reply,
                None => std::future::pending().await,
            }
        }
    }
}

impl ControlPoint for ScriptedControlPoint {
    fn on_task(
        &self,
        request: Arc<TaskRequest>,
    ) -> impl Future<Output = Result<MessageContent, HostError>> + Send {
        let reply = self.ask(HostRequest::Task(request));
        async move {
            match reply.await {
                HostReply::Task(r) => r,
                other => unreachable!("the script answered {other:?}"),
            }
        }
    }

    fn on_self_task(
        &self,
        request: TaskRequest,
    ) -> impl Future<Output = Result<TaskResult, HostError>> + Send {
        let reply = self.ask(HostRequest::SelfTask(Box::new(request)));
        async move {
            match reply.await {
                HostReply::SelfTask(r) => r,
                other => unreachable!("the script answered {other:?}"),
            }
        }
    }

    fn on_route(
        &self,
        request: RouteRequest,
    ) -> impl Future<Output = Result<RouteDecision, HostError>> + Send {
        let reply = self.ask(HostRequest::Route(Box::new(request)));
        async move {
            match reply.await {
                HostReply::Route(r) => r,
                other => unreachable!("the script answered {other:?}"),
            }
        }
    }

    fn on_negotiation(
        &self,
        request: NegotiationRequest,
    ) -> impl Future<Output = Result<NegotiationReply, HostError>> + Send {
        let reply = self.ask(HostRequest::Negotiation(Box::new(request)));
        async move {
            match reply.await {
                HostReply::Negotiation(r) => r,
                other => unreachable!("the script answered {other:?}"),
            }
        }
    }
}
