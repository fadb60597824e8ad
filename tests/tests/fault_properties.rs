//! Property: transient faults that stay within the retry policy do not change a run's result.
//! Random workflows of agents on both bindings, unary and streaming, meet random schedules of
//! refused sends (503), resets, cut streams and streams that end early; the `ExecutionResult`
//! (success, step statuses, outputs, per-task status and error code) must equal the fault-free
//! run's, no message may reach an agent twice, and no task may be cancelled.

use std::time::Duration;

use a2at_core::RetryPolicy;
use a2at_core::result::ExecutionResult;
use a2at_core::run::{RunConfig, RunStart};
use a2at_core::workflow::parse_and_validate;
use a2at_tests::agent::AgentFault;
use a2at_tests::{Plan, ScriptedAgent, ScriptedHost, Sim, SimOutcome, directory};
use proptest::prelude::*;
use serde_json::{Value, json};

const METHODS: [&str; 5] = [
    "SendMessage",
    "SendStreamingMessage",
    "SubscribeToTask",
    "GetTask",
    "ListTasks",
];

#[derive(Debug, Clone)]
struct AgentSpec {
    streaming: bool,
    rest: bool,
    plan: u8,
    /// (method index, nth, fault kind, parameter)
    faults: Vec<(usize, usize, u8, usize)>,
}

fn agent_spec() -> impl Strategy<Value = AgentSpec> {
    (
        any::<bool>(),
        any::<bool>(),
        0u8..4,
        // At most four faults per agent: always within a policy of five attempts.
        prop::collection::vec((0usize..5, 1usize..4, 0u8..4, 0usize..4), 0..5),
    )
        .prop_map(|(streaming, rest, plan, faults)| AgentSpec {
            streaming,
            rest,
            plan,
            faults,
        })
}

fn agent(name: &str, spec: &AgentSpec, with_faults: bool) -> ScriptedAgent {
    let mut a = ScriptedAgent::new(name);
    if spec.streaming {
        a = a.streaming();
    }
    if spec.rest {
        a = a.rest();
    }
    let states = match spec.plan {
        0 => vec!["TASK_STATE_COMPLETED"],
        1 => vec!["TASK_STATE_WORKING", "TASK_STATE_COMPLETED"],
        2 => vec![
            "TASK_STATE_WORKING",
            "TASK_STATE_WORKING",
            "TASK_STATE_COMPLETED",
        ],
        _ => vec!["TASK_STATE_WORKING", "TASK_STATE_FAILED"],
    };
    a = a.by_default(Plan::States(states));
    if with_faults {
        for &(method, nth, kind, n) in &spec.faults {
            let fault = match kind {
                0 => AgentFault::Unavailable { retry_after: None },
                1 => AgentFault::Reset,
                2 => AgentFault::CutAfter(n),
                _ => AgentFault::EndAfter(n),
            };
            a = a.fault_on(METHODS[method], nth, fault);
        }
    }
    a
}

fn run(specs: &[AgentSpec], with_faults: bool, seed: u64) -> SimOutcome {
    // A chain of steps, one agent each, then a fan-out over all agents.
    let names: Vec<String> = (0..specs.len()).map(|i| format!("a{i}")).collect();
    let mut steps: Vec<Value> = names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let mut step = json!({"name": format!("s{i}"),
                "subtasks": [{"agent": n, "description": format!("task {i}")}]});
            step["next"] = json!([{"step": if i + 1 < names.len() { format!("s{}", i + 1) } else { "fan".into() }}]);
            step
        })
        .collect();
    steps.push(json!({"name": "fan", "subtasks": names.iter().map(|n|
        json!({"agent": n, "description": format!("fan {n}")})).collect::<Vec<_>>()}));
    let wf = parse_and_validate(&json!({ "steps": steps }).to_string()).unwrap();
    let agents: Vec<ScriptedAgent> = names
        .iter()
        .zip(specs)
        .map(|(n, s)| agent(n, s, with_faults))
        .collect();
    let dir = directory(&agents);
    let config = RunConfig {
        seed,
        retry: RetryPolicy {
            attempts: 5,
            base_delay: Duration::from_millis(50),
            max_delay: Duration::from_secs(1),
        },
        ..RunConfig::default()
    };
    Sim::new(
        wf,
        dir,
        agents,
        ScriptedHost::default(),
        config,
        RunStart::default(),
    )
    .drive_bounded(200_000)
}

fn comparable(r: &ExecutionResult) -> Value {
    let mut tasks: Vec<Value> = r
        .history
        .iter()
        .map(|t| {
            json!([
                t.step_name,
                t.subtask_index,
                t.status.as_str(),
                t.error_code,
                t.outputs
            ])
        })
        .collect();
    tasks.sort_by_key(|t| t.to_string());
    json!({
        "success": r.success,
        "error": r.error.as_ref().map(|e| &e.code),
        "steps": r.steps.iter().map(|s| format!("{}:{:?}", s.name, s.status)).collect::<Vec<_>>(),
        "outputs": r.step_outputs,
        "tasks": tasks,
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn transient_faults_within_the_policy_do_not_change_the_result(
        specs in prop::collection::vec(agent_spec(), 1..4),
        seed in any::<u64>(),
    ) {
        let clean = run(&specs, false, seed);
        let faulty = run(&specs, true, seed);
        prop_assert_eq!(comparable(faulty.result()), comparable(clean.result()));
        for i in 0..specs.len() {
            let name = format!("a{i}");
            let mut ids: Vec<String> = ["SendMessage", "SendStreamingMessage"]
                .iter()
                .flat_map(|m| faulty.requests_to(&name, m))
                .filter_map(|r| r.message().and_then(|m| m.get("messageId")).and_then(Value::as_str).map(str::to_owned))
                .collect();
            let sent = ids.len();
            ids.sort();
            ids.dedup();
            let resent = faulty
                .events("agent_retry")
                .iter()
                .filter(|e| e["agent"] == name.as_str() && e["action"] == "resend")
                .count();
            // Every repeated message id is an announced resend of a refused send.
            prop_assert_eq!(sent - ids.len(), resent);
            prop_assert!(faulty.requests_to(&name, "CancelTask").is_empty());
        }
    }
}
