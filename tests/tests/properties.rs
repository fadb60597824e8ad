//! Property tests of the run machine over random DAGs, route answers, host timings and agent
//! behaviours (at least 256 cases each).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use a2at_core::host::{HostError, MessageContent, RouteDecision, TaskResult};
use a2at_core::io::{Input, OpPurpose, Output};
use a2at_core::run::{RunConfig, RunStart};
use a2at_core::workflow::ValidatedWorkflow;
use a2at_tests::{Observed, Plan, ScriptedAgent, ScriptedHost, Sim, SimOutcome, directory};
use proptest::prelude::*;
use serde_json::{Value, json};

#[derive(Debug, Clone)]
struct Scenario {
    steps: Vec<(u8, Vec<u8>)>,
    edges: Vec<(usize, usize, bool)>,
    terminal_edges: Vec<(usize, bool)>,
    plans: Vec<u8>,
    route_seed: u64,
    host_seed: u64,
    cancel_at_ms: Option<u64>,
    streaming: [bool; 3],
    rest: [bool; 3],
    seed: u64,
}

fn scenario() -> impl Strategy<Value = Scenario> {
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

const AGENTS: [&str; 3] = ["a0", "a1", "a2"];

fn build(s: &Scenario) -> Sim {
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
        ..RunConfig::default()
    };
    let mut sim = Sim::new(wf, dir, agents, host, config, RunStart::default());
    if let Some(ms) = s.cancel_at_ms {
        sim = sim.cancel_at(Duration::from_millis(ms));
    }
    sim
}

fn step_of(data: &Value) -> String {
    data["step"].as_str().unwrap_or_default().to_owned()
}

fn check_invariants(s: &Scenario, out: &SimOutcome) -> Result<(), TestCaseError> {
    let result = out
        .result
        .as_ref()
        .ok_or_else(|| TestCaseError::fail("run did not finish"))?;
    // Each step runs at most once.
    let mut starts = BTreeMap::new();
    for d in out.events("step_start") {
        *starts.entry(step_of(d)).or_insert(0) += 1;
    }
    prop_assert!(
        starts.values().all(|n| *n == 1),
        "a step started twice: {starts:?}"
    );

    // No successor before all of its sources' route answers: every predecessor that ran emitted
    // all its route_decision events before the successor's step_start.
    let events: Vec<(usize, &a2at_core::Event)> = out
        .outputs()
        .filter_map(|o| match o {
            Output::Event(e) => Some(e),
            _ => None,
        })
        .enumerate()
        .collect();
    for (pos, e) in &events {
        if e.kind.as_str() != "step_start" {
            continue;
        }
        let target: usize = step_of(&e.data)[1..].parse().unwrap();
        for (from, to, _) in &s.edges {
            if *to != target {
                continue;
            }
            let from_name = format!("s{from}");
            let out_edges = s.edges.iter().filter(|(a, _, _)| a == from).count()
                + usize::from(s.terminal_edges.iter().any(|(a, _)| a == from));
            let decided_before = events
                .iter()
                .filter(|(p, d)| {
                    p < pos && d.kind.as_str() == "route_decision" && step_of(&d.data) == from_name
                })
                .count();
            let ran = starts.contains_key(&from_name);
            prop_assert!(
                !ran || decided_before == out_edges,
                "s{target} started before all route decisions of {from_name} ({decided_before}/{out_edges})"
            );
        }
    }

    // No send after cancellation, and none for a task after its result.
    let mut cancelled = false;
    let mut done_tasks = BTreeSet::new();
    for (_, o) in &out.log {
        match o {
            Observed::Input(Input::Cancel) => cancelled = true,
            Observed::Output(Output::Event(e)) if e.kind.as_str() == "task_response" => {
                done_tasks.insert((step_of(&e.data), e.data["subtask_index"].as_u64().unwrap()));
            }
            Observed::Output(Output::Transmit(r)) if r.purpose != OpPurpose::Cancel => {
                prop_assert!(!cancelled || result.success, "a send after cancellation");
                prop_assert!(
                    !done_tasks.contains(&(
                        r.correlation.step.clone(),
                        u64::from(r.correlation.subtask_index)
                    )),
                    "a send for a finished task"
                );
            }
            _ => {}
        }
    }

    // Every remote task the engine learned of and that is non-final at the end was cancelled.
    let mut known = BTreeSet::new();
    for (_, o) in &out.log {
        if let Observed::Input(Input::ResponseBody { chunk, .. }) = o {
            let text = String::from_utf8_lossy(chunk);
            for name in AGENTS {
                let mut rest: &str = &text;
                while let Some(i) = rest.find(&format!("\"{name}-t")) {
                    let tail = &rest[i + 1..];
                    let end = tail.find('"').unwrap_or(tail.len());
                    let id = &tail[..end];
                    if !id.contains("-a") && !id.contains("-propose") {
                        known.insert((name.to_owned(), id.to_owned()));
                    }
                    rest = &tail[end..];
                }
            }
        }
    }
    for (name, agent) in &out.agents {
        for (id, state) in agent.open_tasks() {
            prop_assert!(
                !known.contains(&(name.clone(), id.clone())),
                "{name} task {id} left in {state} although the engine knew it"
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    #[test]
    fn runs_finish_and_keep_the_scheduling_invariants(s in scenario()) {
        let out = build(&s).drive_bounded(200_000);
        check_invariants(&s, &out)?;
    }

    #[test]
    fn the_same_seed_and_inputs_give_byte_identical_outputs(s in scenario()) {
        let a = build(&s).drive_bounded(200_000);
        let b = build(&s).drive_bounded(200_000);
        prop_assert_eq!(a.output_bytes(), b.output_bytes());
    }
}
