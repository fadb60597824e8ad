//! Workflows and wire streams the benchmarks run (`tests/benches`): large random DAGs, long
//! chains, a wide fan-out into one join, a step with many conditional edges, a multi-round
//! negotiation, and a realistic SSE stream. Kept here so the criterion bench, the printed scaling
//! table and the instruction counts measure exactly the same shapes.

use std::time::Duration;

use a2at_core::a2at::{NEGOTIATION_T_URI, Performative};
use a2at_core::event::EventSelection;
use a2at_core::host::{MessageContent, NegotiationReply, RouteDecision};
use a2at_core::run::{RunConfig, RunStart};
use a2at_core::workflow::ValidatedWorkflow;
use serde_json::{Value, json};

use crate::agent::Negotiation;
use crate::host::now;
use crate::{Plan, ScriptedAgent, ScriptedHost, Sim, directory};

/// A random DAG of `n` steps: each step links to 1-2 later steps within a window of 8, a tenth of
/// the edges conditional; a fifth of the steps are remote (agent `agent`), the rest SELF_LOOP.
/// The same `seed` gives the same document.
pub fn random_dag(n: usize, seed: u64) -> Value {
    let mut x = seed;
    let mut next = || {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        x >> 33
    };
    let steps: Vec<Value> = (0..n)
        .map(|i| {
            let mut edges = Vec::new();
            if i + 1 < n {
                let fan = 1 + (next() % 2) as usize;
                let mut targets = Vec::new();
                for _ in 0..fan {
                    let t = i + 1 + (next() as usize % 8).min(n - i - 2);
                    if !targets.contains(&t) {
                        targets.push(t);
                    }
                }
                for t in targets {
                    let cond = if next() % 10 == 0 {
                        json!("maybe")
                    } else {
                        Value::Null
                    };
                    edges.push(json!({"step": format!("s{t}"), "condition": cond}));
                }
            }
            let remote = next() % 5 == 0;
            json!({
                "name": format!("s{i}"),
                "step_type": if remote { "ALL_SUCCESS" } else { "SELF_LOOP" },
                "subtasks": [{"agent": "agent", "description": format!("task {i}")}],
                "next": edges
            })
        })
        .collect();
    json!({"name": "bench", "steps": steps})
}

/// `n` remote steps in a line on agent `agent`, each the only successor of the one before: the
/// core's per-step cost with no fan-out and no local steps to dilute it.
pub fn chain(n: usize) -> Value {
    chain_on(n, "agent", "agent")
}

/// `n` remote steps in a line, the first on agent `first`, the others on `rest`.
pub fn chain_on(n: usize, first: &str, rest: &str) -> Value {
    let steps: Vec<Value> = (0..n)
        .map(|i| {
            let next = if i + 1 < n {
                json!([{"step": format!("s{}", i + 1)}])
            } else {
                json!([])
            };
            let agent = if i == 0 { first } else { rest };
            json!({
                "name": format!("s{i}"),
                "subtasks": [{"agent": agent, "description": format!("task {i}")}],
                "next": next
            })
        })
        .collect();
    json!({"name": "chain", "steps": steps})
}

/// One SELF_LOOP step fanning out to `width` remote steps that all join into one ALL_SUCCESS step.
pub fn fan_out_join(width: usize) -> Value {
    let mut steps = vec![json!({
        "name": "start",
        "step_type": "SELF_LOOP",
        "subtasks": [{"agent": "agent", "description": "plan"}],
        "next": (0..width).map(|i| json!({"step": format!("b{i}")})).collect::<Vec<_>>()
    })];
    for i in 0..width {
        steps.push(json!({
            "name": format!("b{i}"),
            "subtasks": [{"agent": "agent", "description": format!("branch {i}")}],
            "next": [{"step": "join"}]
        }));
    }
    steps.push(json!({
        "name": "join",
        "step_type": "ALL_SUCCESS",
        "subtasks": [{"agent": "agent", "description": "join"}]
    }));
    json!({"name": "fan-out", "steps": steps})
}

/// A remote step with `edges` conditional edges to SELF_LOOP leaves: every edge is one `on_route`
/// call, and [`every_other_route`] allows half of them.
pub fn conditional_edges(edges: usize) -> Value {
    let mut steps = vec![json!({
        "name": "decide",
        "subtasks": [{"agent": "agent", "description": "inspect"}],
        "next": (0..edges)
            .map(|i| json!({"step": format!("t{i}"), "condition": format!("case {i}")}))
            .collect::<Vec<_>>()
    })];
    for i in 0..edges {
        steps.push(json!({
            "name": format!("t{i}"),
            "step_type": "SELF_LOOP",
            "subtasks": [{"agent": "agent", "description": format!("handle {i}")}]
        }));
    }
    json!({"name": "routing", "steps": steps})
}

/// A host that allows edges whose target ends in an even digit and denies the rest.
pub fn every_other_route() -> ScriptedHost {
    ScriptedHost::default().on_route(|r| {
        let even = r
            .next_step
            .bytes()
            .last()
            .is_some_and(|b| b.is_ascii_digit() && (b - b'0') % 2 == 0);
        now(Ok(if even {
            RouteDecision::allow(None)
        } else {
            RouteDecision::deny(None)
        }))
    })
}

/// One remote subtask on agent `agent`.
pub fn one_remote_task() -> Value {
    json!({"steps": [{"name": "s", "subtasks": [{"agent": "agent", "description": "energy saving"}]}]})
}

/// An agent that negotiates `rounds` rounds in-task before completing.
pub fn negotiating_agent(rounds: u32) -> ScriptedAgent {
    ScriptedAgent::new("agent").by_default(Plan::Negotiate(Negotiation::rounds(rounds, rounds + 1)))
}

/// A host that opts in to Negotiation-T and accepts every Propose.
pub fn accepting_host() -> ScriptedHost {
    ScriptedHost::default()
        .on_task(|r| {
            now(Ok(
                MessageContent::text(r.instruction.clone()).with_extension(NEGOTIATION_T_URI)
            ))
        })
        .on_negotiation(
            |r| match r.reply(Performative::Accept, "Accept; sites: A, B") {
                Ok(content) => now(Ok(NegotiationReply::Send { content })),
                Err(e) => panic!("the scripted Propose is answerable: {e:?}"),
            },
        )
}

/// A simulator over `workflow` with zero-latency agents that records nothing (the figure is the
/// core's cost plus the scripted agents' byte encoding), emitting the `events` selected.
pub fn quiet_sim(
    workflow: ValidatedWorkflow,
    agent: ScriptedAgent,
    host: ScriptedHost,
    events: EventSelection,
) -> Sim {
    let agents = vec![agent];
    let dir = directory(&agents);
    Sim::new(
        workflow,
        dir,
        agents,
        host,
        RunConfig {
            events,
            ..RunConfig::default()
        },
        RunStart::default(),
    )
    .with_latency(Duration::ZERO)
    .quiet()
}

/// A JSON-RPC SSE stream as a streaming agent sends it: `tasks` tasks, each with a submitted and
/// a working status update, `chunks` appended artifact chunks of about `chunk_bytes` of text, and
/// a completed status update.
pub fn sse_stream(tasks: usize, chunks: usize, chunk_bytes: usize) -> Vec<u8> {
    let text: String =
        "Energy saving plan for cell site; ".repeat(chunk_bytes / 34 + 1)[..chunk_bytes].to_owned();
    let mut out = String::new();
    let mut push = |result: Value| {
        let frame = json!({"jsonrpc": "2.0", "id": "1", "result": result});
        out.push_str("data: ");
        out.push_str(&frame.to_string());
        out.push_str("\n\n");
    };
    for t in 0..tasks {
        let task_id = format!("0b7e3f2c-5d1a-4f7e-9c2b-{t:012}");
        let context_id = format!("9a1c4e6b-2f3d-4b8a-a7e5-{t:012}");
        for state in ["TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"] {
            push(json!({"statusUpdate": {
                "taskId": task_id, "contextId": context_id,
                "status": {"state": state, "timestamp": "2026-12-02T10:00:00.000Z"}
            }}));
        }
        for c in 0..chunks {
            push(json!({"artifactUpdate": {
                "taskId": task_id, "contextId": context_id,
                "append": c > 0, "lastChunk": c + 1 == chunks,
                "artifact": {"artifactId": "plan", "name": "plan",
                              "parts": [{"text": text}]}
            }}));
        }
        push(json!({"statusUpdate": {
            "taskId": task_id, "contextId": context_id,
            "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-12-02T10:00:01.000Z"}
        }}));
    }
    out.into_bytes()
}
