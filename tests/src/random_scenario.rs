//! The random-DAG scenario generator of `tests/properties.rs`, shared so other property tests
//! (replay identity) can reuse it. A copy: `properties.rs` keeps its own.

use std::collections::BTreeSet;
use std::time::Duration;

use a2at_core::event::EventSelection;
use a2at_core::host::{HostError, MessageContent, RouteDecision, TaskResult};
use a2at_core::run::{RunConfig, RunStart};
use a2at_core::workflow::ValidatedWorkflow;
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::{Plan, ScriptedAgent, ScriptedHost, Sim, directory};

/// A random scenario: a small DAG, agent plans, host timings and an optional cancellation.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// Generated field `steps`.
    pub steps: Vec<(u8, Vec<u8>)>,
    /// Generated field `edges`.
    pub edges: Vec<(usize, usize, bool)>,
    /// Generated field `terminal_edges`.
    pub terminal_edges: Vec<(usize, bool)>,
    /// Generated field `plans`.
    pub plans: Vec<u8>,
    /// Generated field `route_seed`.
    pub route_seed: u64,
    /// Generated field `host_seed`.
    pub host_seed: u64,
    /// Generated field `cancel_at_ms`.
    pub cancel_at_ms: Option<u64>,
    /// Generated field `streaming`.
    pub streaming: [bool; 3],
    /// Generated field `rest`.
    pub rest: [bool; 3],
    /// Generated field `seed`.
    pub seed: u64,
}

/// The proptest strategy for [`Scenario`]s.
pub fn scenario() -> impl Strategy<Value = Scenario> {
    (1usize..9).prop_flat_map(|n| {
        (
            prop::collection::vec((0u8..3, prop::collection::vec(0u8..4, 0..3)), n),
            prop::collection::vec((0..n, 0..n, any::<bool>()), 0..(2 * n)),
            prop::collection::vec((0..n, any::<bool>()), 0..3),
            prop::collection::vec(0u8..12, 0..24),
            any::<u64>(),
            any::<u64>(),
            prop::option::weighted(0.2, 0u64..3000),
            any::<[bool; 3]>(),
            any::<[bool; 3]>(),
            any::<u64>(),
        )
            .prop_map(
                |(
                    steps,
                    raw_edges,
                    terminal_edges,
                    plans,
                    route_seed,
                    host_seed,
                    cancel_at_ms,
                    streaming,
                    rest,
                    seed,
                )| {
                    let mut seen = BTreeSet::new();
                    let edges = raw_edges
                        .into_iter()
                        .filter_map(|(a, b, c)| {
                            let (lo, hi) = (a.min(b), a.max(b));
                            (lo != hi && seen.insert((lo, hi))).then_some((lo, hi, c))
                        })
                        .collect();
                    Scenario {
                        steps,
                        edges,
                        terminal_edges,
                        plans,
                        route_seed,
                        host_seed,
                        cancel_at_ms,
                        streaming,
                        rest,
                        seed,
                    }
                },
            )
    })
}

fn mix(seed: u64, text: &str) -> u64 {
    let mut h = seed ^ 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h ^ (h >> 29)
}

fn plan(code: u8) -> Plan {
    match code {
        0..=3 => Plan::States(vec!["TASK_STATE_COMPLETED"]),
        4 => Plan::States(vec![
            "TASK_STATE_WORKING",
            "TASK_STATE_WORKING",
            "TASK_STATE_COMPLETED",
        ]),
        5 => Plan::States(vec!["TASK_STATE_FAILED"]),
        6 => Plan::States(vec!["TASK_STATE_WORKING"]),
        7 => Plan::Delayed(
            Duration::from_millis(700),
            Box::new(Plan::States(vec!["TASK_STATE_COMPLETED"])),
        ),
        8 => Plan::Reject {
            status: 400,
            code: -32602,
            reason: "INVALID_PARAMS",
        },
        9 => Plan::BareMessage("hi"),
        10 => Plan::Hang,
        _ => Plan::States(vec!["TASK_STATE_INPUT_REQUIRED"]),
    }
}

/// The agents every scenario has.
pub const AGENTS: [&str; 3] = ["a0", "a1", "a2"];

/// The simulator for a scenario (not yet driven).
pub fn build(s: &Scenario) -> Sim {
    build_selecting(s, EventSelection::All)
}

/// Like [`build`], with only the selected events emitted.
pub fn build_selecting(s: &Scenario, events: EventSelection) -> Sim {
    let steps: Vec<Value> = s
        .steps
        .iter()
        .enumerate()
        .map(|(i, (kind, subs))| {
            let kind = ["ALL_SUCCESS", "ANY_SUCCESS", "SELF_LOOP"][*kind as usize];
            let subtasks: Vec<Value> = subs
                .iter()
                .enumerate()
                .map(|(j, a)| json!({"agent": AGENTS[(*a as usize) % 3], "description": format!("s{i}t{j}")}))
                .collect();
            let mut next: Vec<Value> = s
                .edges
                .iter()
                .filter(|(a, _, _)| *a == i)
                .map(|(_, b, c)| json!({"step": format!("s{b}"), "condition": if *c { json!(format!("c{i}{b}")) } else { Value::Null }}))
                .collect();
            for (from, c) in &s.terminal_edges {
                if *from == i && !next.iter().any(|e| e["step"] == "end") {
                    next.push(json!({"step": "end", "condition": if *c { "stop" } else { "" }}));
                }
            }
            json!({"name": format!("s{i}"), "step_type": kind, "subtasks": subtasks, "next": next})
        })
        .collect();
    let wf = ValidatedWorkflow::new(
        a2at_core::workflow::Workflow::from_json_value(&json!({"steps": steps})).expect("parses"),
    )
    .expect("generated DAGs are valid");
    let mut agents = Vec::new();
    for (k, name) in AGENTS.iter().enumerate() {
        let mut a = ScriptedAgent::new(name);
        if s.rest[k] {
            a = a.rest();
        }
        if s.streaming[k] {
            a = a.streaming();
        }
        for (i, p) in s.plans.iter().enumerate() {
            if i % 3 == k {
                a = a.then(plan(*p));
            }
        }
        agents.push(a);
    }
    let dir = directory(&agents);
    let (rs, hs) = (s.route_seed, s.host_seed);
    let host = ScriptedHost::default()
        .on_route(move |r| {
            let h = mix(rs, &format!("{}>{}", r.step_name, r.next_step));
            let delay = Duration::from_millis(h % 50);
            match h % 16 {
                0 => (delay, Some(Err(HostError::business("policy.error", "no")))),
                1 => (Duration::ZERO, None),
                2..=8 => (delay, Some(Ok(RouteDecision::deny(None)))),
                _ => (delay, Some(Ok(RouteDecision::allow(None)))),
            }
        })
        .on_task(move |r| {
            let h = mix(hs, &r.task_id);
            let delay = Duration::from_millis(h % 40);
            match h % 20 {
                0 => (
                    Duration::from_secs(30),
                    Some(Ok(MessageContent::text("late"))),
                ),
                1 => (
                    delay,
                    Some(Err(HostError::business("content.bad", "cannot render"))),
                ),
                _ => (delay, Some(Ok(MessageContent::text(r.instruction.clone())))),
            }
        })
        .on_self_task(move |r| {
            let h = mix(hs ^ 1, &r.task_id);
            match h % 10 {
                0 => (
                    Duration::from_millis(5),
                    Some(Ok(TaskResult::failure("local.bad", "no"))),
                ),
                _ => (
                    Duration::from_millis(h % 30),
                    Some(Ok(TaskResult::success(vec![json!(r.instruction)]))),
                ),
            }
        });
    let config = RunConfig {
        seed: s.seed,
        task_budget: Duration::from_secs(10),
        callback_budget: Duration::from_secs(5),
        events,
        ..RunConfig::default()
    };
    let mut sim = Sim::new(wf, dir, agents, host, config, RunStart::default());
    if let Some(ms) = s.cancel_at_ms {
        sim = sim.cancel_at(Duration::from_millis(ms));
    }
    sim
}
