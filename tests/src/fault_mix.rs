//! Random mixes of agents and transient faults, shared by the fault property (simulator) and
//! the fault soak (real runtimes on loopback).

use a2at_core::result::ExecutionResult;
use serde_json::{Value, json};

use a2at_core::run::RunConfig;

use crate::agent::AgentFault;
use crate::{Plan, ScriptedAgent, ScriptedHost, SimOutcome, simulate};

/// The A2A methods faults are injected into.
pub const METHODS: [&str; 5] = [
    "SendMessage",
    "SendStreamingMessage",
    "SubscribeToTask",
    "GetTask",
    "ListTasks",
];

/// One agent of a mix: binding, streaming, what its tasks do, and its faults.
#[derive(Debug, Clone)]
pub struct AgentSpec {
    /// Answers sends with SSE streams.
    pub streaming: bool,
    /// Speaks HTTP+JSON instead of JSON-RPC.
    pub rest: bool,
    /// 0: completes at once; 1 and 2: works for one or two observations, then completes; 3:
    /// works, then fails.
    pub plan: u8,
    /// `(method index into METHODS, nth request, fault kind 0..4, parameter)`; kinds are
    /// 503, reset, cut after `parameter` chunks, end after `parameter` chunks.
    pub faults: Vec<(usize, usize, u8, usize)>,
}

impl AgentSpec {
    /// A random spec from 64 random bits per decision (at most four faults: always within a
    /// retry policy of five attempts).
    pub fn random(mut next: impl FnMut() -> u64) -> AgentSpec {
        let count = (next() % 5) as usize;
        AgentSpec {
            streaming: next() % 2 == 0,
            rest: next() % 2 == 0,
            plan: (next() % 4) as u8,
            faults: (0..count)
                .map(|_| {
                    (
                        (next() % 5) as usize,
                        1 + (next() % 3) as usize,
                        (next() % 4) as u8,
                        (next() % 4) as usize,
                    )
                })
                .collect(),
        }
    }

    /// The scripted agent `name` for this spec, with or without its faults.
    pub fn agent(&self, name: &str, with_faults: bool) -> ScriptedAgent {
        let mut a = ScriptedAgent::new(name);
        if self.streaming {
            a = a.streaming();
        }
        if self.rest {
            a = a.rest();
        }
        let states = match self.plan {
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
            for &(method, nth, kind, n) in &self.faults {
                let fault = match kind {
                    0 => AgentFault::Unavailable { retry_after: None },
                    1 => AgentFault::Reset,
                    2 => AgentFault::CutAfter(n),
                    _ => AgentFault::EndAfter(n),
                };
                a = a.fault_on(METHODS[method % METHODS.len()], nth, fault);
            }
        }
        a
    }
}

/// The agent names of a mix of `n` agents.
pub fn names(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("a{i}")).collect()
}

/// The scripted agents of a mix, named by [`names`].
pub fn agents(specs: &[AgentSpec], with_faults: bool) -> Vec<ScriptedAgent> {
    names(specs.len())
        .iter()
        .zip(specs)
        .map(|(n, s)| s.agent(n, with_faults))
        .collect()
}

/// The mix's [`workflow`] in the simulator, with or without the faults.
pub fn simulate_mix(specs: &[AgentSpec], with_faults: bool, config: RunConfig) -> SimOutcome {
    simulate(
        &workflow(specs.len()),
        agents(specs, with_faults),
        ScriptedHost::default(),
        config,
    )
}

/// A chain of steps, one agent each, then a fan-out over all agents.
pub fn workflow(n: usize) -> Value {
    let names = names(n);
    let mut steps: Vec<Value> = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let next = if i + 1 < n {
                format!("s{}", i + 1)
            } else {
                "fan".to_owned()
            };
            json!({"name": format!("s{i}"), "next": [{"step": next}],
                "subtasks": [{"agent": name, "description": format!("task {i}")}]})
        })
        .collect();
    let fan: Vec<Value> = names
        .iter()
        .map(|name| json!({"agent": name, "description": format!("fan {name}")}))
        .collect();
    steps.push(json!({"name": "fan", "subtasks": fan}));
    json!({ "steps": steps })
}

/// What a fault must not change: success, run error, step statuses, outputs, and per task its
/// status, error code and outputs.
pub fn comparable(r: &ExecutionResult) -> Value {
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
        "outputs": r.step_outputs(),
        "tasks": tasks,
    })
}

/// How many times a message id was sent to an agent beyond its first time, over the message
/// ids in `ids`.
pub fn repeated_message_ids(ids: &[String]) -> usize {
    let mut sorted = ids.to_vec();
    sorted.sort();
    let total = sorted.len();
    sorted.dedup();
    total - sorted.len()
}
