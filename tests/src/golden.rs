//! The scenario definitions behind the golden traces in `tests/fixtures/traces/`.
//!
//! Each [`GoldenScenario`] builds a recording [`Sim`]; its trace is the fixture
//! `<name>.jsonl`. `A2AT_BLESS=1 cargo test -p a2at-tests --test replay` rewrites the fixtures
//! from these definitions, and the replay test replays every fixture.

use std::time::Duration;

use a2at_core::a2at::{NEGOTIATION_T_URI, Performative};
use a2at_core::host::{MessageContent, NegotiationReply, RouteDecision, TaskResult};
use a2at_core::run::{RunConfig, RunStart};
use a2at_core::trace::Redaction;
use a2at_core::workflow::parse_and_validate;
use serde_json::{Value, json};

use crate::agent::{AgentFault, Negotiation};
use crate::host::now;
use crate::{Plan, ScriptedAgent, ScriptedHost, Sim, directory};

/// One golden scenario.
#[derive(Debug, Clone, Copy)]
pub struct GoldenScenario {
    /// The fixture's file stem.
    pub name: &'static str,
    /// What the scenario exercises.
    pub about: &'static str,
    /// Which bodies the fixture redacts.
    pub redaction: Redaction,
    build: fn() -> Sim,
}

impl GoldenScenario {
    /// Runs the scenario in the simulator and returns its JSON-lines trace.
    pub fn record(&self) -> String {
        let out = (self.build)()
            .record_redacted(self.redaction)
            .drive_bounded(100_000);
        assert!(
            out.result.is_some(),
            "golden scenario {} did not finish",
            self.name
        );
        out.trace.expect("recorded")
    }
}

fn sim(workflow: Value, agents: Vec<ScriptedAgent>, host: ScriptedHost, config: RunConfig) -> Sim {
    let wf = parse_and_validate(&workflow.to_string()).expect("valid workflow");
    let dir = directory(&agents);
    Sim::new(wf, dir, agents, host, config, RunStart::default())
}

fn seeded(seed: u64) -> RunConfig {
    RunConfig {
        seed,
        ..RunConfig::default()
    }
}

fn chain() -> Sim {
    let wf = json!({"name": "chain", "steps": [
        {"name": "a", "subtasks": [{"agent": "alpha", "description": "first"}], "next": [{"step": "b"}]},
        {"name": "b", "subtasks": [{"agent": "beta", "description": "second"}], "next": [{"step": "c"}]},
        {"name": "c", "subtasks": [{"agent": "alpha", "description": "third"}]}
    ]});
    let agents = vec![
        ScriptedAgent::new("alpha"),
        ScriptedAgent::new("beta").rest(),
    ];
    sim(wf, agents, ScriptedHost::default(), seeded(1))
}

fn fan_out_join_routing() -> Sim {
    let wf = json!({"name": "fan", "steps": [
        {"name": "decide", "step_type": "SELF_LOOP", "subtasks": [{"agent": "me", "description": "d"}], "next": [
            {"step": "left", "condition": "fault found"},
            {"step": "right", "condition": "customer impact"},
            {"step": "skipped", "condition": "nothing to do"}]},
        {"name": "left", "subtasks": [{"agent": "alpha", "description": "l"}], "next": [{"step": "join"}]},
        {"name": "right", "subtasks": [{"agent": "beta", "description": "r"}], "next": [{"step": "join"}]},
        {"name": "skipped", "step_type": "SELF_LOOP", "subtasks": [{"agent": "me", "description": "s"}], "next": [{"step": "join"}]},
        {"name": "join", "step_type": "ALL_SUCCESS", "subtasks": [
            {"agent": "alpha", "description": "j1"}, {"agent": "beta", "description": "j2"}]}
    ]});
    let agents = vec![
        ScriptedAgent::new("alpha").streaming(),
        ScriptedAgent::new("beta").by_default(Plan::States(vec![
            "TASK_STATE_WORKING",
            "TASK_STATE_COMPLETED",
        ])),
    ];
    let host = ScriptedHost::default()
        .on_route(|r| {
            let allow = r.next_step != "skipped";
            let delay = Duration::from_millis(if r.next_step == "left" { 7 } else { 3 });
            (
                delay,
                Some(Ok(if allow {
                    RouteDecision::allow(None)
                } else {
                    RouteDecision::deny(None)
                })),
            )
        })
        .on_self_task(|r| {
            (
                Duration::from_millis(5),
                Some(Ok(TaskResult::success(vec![json!(r.instruction)]))),
            )
        });
    sim(wf, agents, host, seeded(2))
}

fn any_success_cancel() -> Sim {
    let wf = json!({"steps": [{"name": "race", "step_type": "any_success", "subtasks": [
        {"agent": "slow", "description": "s"}, {"agent": "fast", "description": "f"}]}]});
    let agents = vec![
        ScriptedAgent::new("slow").by_default(Plan::States(vec!["TASK_STATE_WORKING"])),
        ScriptedAgent::new("fast").by_default(Plan::Delayed(
            Duration::from_millis(600),
            Box::new(Plan::States(vec!["TASK_STATE_COMPLETED"])),
        )),
    ];
    sim(wf, agents, ScriptedHost::default(), seeded(3))
}

fn negotiation_two_rounds() -> Sim {
    let wf = json!({"steps": [{"name": "s", "subtasks": [{"agent": "neg", "description": "energy saving"}]}]});
    let agents =
        vec![ScriptedAgent::new("neg").by_default(Plan::Negotiate(Negotiation::rounds(2, 3)))];
    let host = ScriptedHost::default()
        .on_task(|r| {
            now(Ok(
                MessageContent::text(r.instruction.clone()).with_extension(NEGOTIATION_T_URI)
            ))
        })
        .on_negotiation(|r| {
            (
                Duration::from_millis(20),
                Some(Ok(NegotiationReply::Send {
                    content: r
                        .reply(Performative::Accept, "Accept; sites: A, B")
                        .expect("a reply can be built"),
                })),
            )
        });
    sim(wf, agents, host, seeded(4))
}

fn timeout_cleanup() -> Sim {
    let wf =
        json!({"steps": [{"name": "s", "subtasks": [{"agent": "stuck", "description": "x"}]}]});
    let agents =
        vec![ScriptedAgent::new("stuck").by_default(Plan::States(vec!["TASK_STATE_WORKING"]))];
    let config = RunConfig {
        task_budget: Duration::from_secs(1),
        poll_interval: Duration::from_millis(300),
        ..seeded(5)
    };
    sim(wf, agents, ScriptedHost::default(), config)
}

fn pre_creation_error() -> Sim {
    let wf =
        json!({"steps": [{"name": "s", "subtasks": [{"agent": "picky", "description": "x"}]}]});
    let agents = vec![ScriptedAgent::new("picky").rest().by_default(Plan::Reject {
        status: 400,
        code: -32602,
        reason: "INVALID_PARAMS",
    })];
    sim(wf, agents, ScriptedHost::default(), seeded(6))
}

fn host_cancel() -> Sim {
    let wf = json!({"steps": [{"name": "s", "step_type": "ALL_SUCCESS", "subtasks": [
        {"agent": "alpha", "description": "a"}, {"agent": "beta", "description": "b"}]}]});
    let agents = vec![
        ScriptedAgent::new("alpha").by_default(Plan::States(vec!["TASK_STATE_WORKING"])),
        ScriptedAgent::new("beta").by_default(Plan::Hang),
    ];
    sim(wf, agents, ScriptedHost::default(), seeded(7)).cancel_at(Duration::from_millis(400))
}

fn chain_request_bodies_redacted() -> Sim {
    chain()
}

fn faults_reattach_and_resend() -> Sim {
    let wf = json!({"steps": [{"name": "s", "subtasks": [
        {"agent": "streamer", "description": "cut"}, {"agent": "busy", "description": "busy"},
        {"agent": "lossy", "description": "lost"}]}]});
    let agents = vec![
        ScriptedAgent::new("streamer")
            .streaming()
            .by_default(Plan::States(vec![
                "TASK_STATE_WORKING",
                "TASK_STATE_COMPLETED",
            ]))
            .fault_on("SendStreamingMessage", 1, AgentFault::CutAfter(2)),
        ScriptedAgent::new("busy").fault_on(
            "SendMessage",
            1,
            AgentFault::Unavailable {
                retry_after: Some(1),
            },
        ),
        ScriptedAgent::new("lossy").fault_on("SendMessage", 1, AgentFault::Reset),
    ];
    sim(wf, agents, ScriptedHost::default(), seeded(9))
}

fn grpc_stream_poll_and_rejection() -> Sim {
    let wf = json!({"steps": [
        {"name": "s", "subtasks": [
            {"agent": "streamer", "description": "cut"}, {"agent": "poller", "description": "poll"}],
         "next": [{"step": "t"}]},
        {"name": "t", "subtasks": [{"agent": "picky", "description": "x"}]}]});
    let agents = vec![
        ScriptedAgent::new("streamer")
            .grpc()
            .streaming()
            .by_default(Plan::States(vec![
                "TASK_STATE_WORKING",
                "TASK_STATE_COMPLETED",
            ]))
            .fault_on("SendStreamingMessage", 1, AgentFault::CutAfter(2)),
        ScriptedAgent::new("poller")
            .grpc()
            .by_default(Plan::States(vec![
                "TASK_STATE_WORKING",
                "TASK_STATE_COMPLETED",
            ])),
        ScriptedAgent::new("picky").grpc().by_default(Plan::Reject {
            status: 400,
            code: -32602,
            reason: "INVALID_PARAMS",
        }),
    ];
    sim(wf, agents, ScriptedHost::default(), seeded(12))
}

/// Every golden scenario, in fixture-name order.
pub fn scenarios() -> Vec<GoldenScenario> {
    vec![
        GoldenScenario {
            name: "any_success_cancel",
            about: "ANY_SUCCESS: the first success wins, the loser's remote task is cancelled",
            redaction: Redaction::None,
            build: any_success_cancel,
        },
        GoldenScenario {
            name: "chain",
            about: "three remote steps in a chain (JSON-RPC and HTTP+JSON agents)",
            redaction: Redaction::None,
            build: chain,
        },
        GoldenScenario {
            name: "chain_request_bodies_redacted",
            about: "the chain with request bodies redacted: replay compares their digests",
            redaction: Redaction::RequestBodies,
            build: chain_request_bodies_redacted,
        },
        GoldenScenario {
            name: "fan_out_join_routing",
            about: "conditional routing (one edge denied), fan-out, a streaming agent, polling, a join",
            redaction: Redaction::None,
            build: fan_out_join_routing,
        },
        GoldenScenario {
            name: "faults_reattach_and_resend",
            about: "a cut stream is resubscribed, a 503 send is resent after Retry-After, a lost answer is found with ListTasks",
            redaction: Redaction::None,
            build: faults_reattach_and_resend,
        },
        GoldenScenario {
            name: "grpc_stream_poll_and_rejection",
            about: "gRPC agents: a cut server stream is resubscribed, a WORKING task is polled with GetTask, a send is rejected with an ErrorInfo in the trailers",
            redaction: Redaction::None,
            build: grpc_stream_poll_and_rejection,
        },
        GoldenScenario {
            name: "host_cancel",
            about: "the host cancels the run: known remote tasks are cancelled, hung exchanges aborted",
            redaction: Redaction::None,
            build: host_cancel,
        },
        GoldenScenario {
            name: "negotiation_two_rounds",
            about: "Negotiation-T: two Propose rounds answered by the host, then completion",
            redaction: Redaction::None,
            build: negotiation_two_rounds,
        },
        GoldenScenario {
            name: "pre_creation_error",
            about: "an HTTP+JSON agent rejects the send (400 INVALID_PARAMS) before creating a task",
            redaction: Redaction::None,
            build: pre_creation_error,
        },
        GoldenScenario {
            name: "timeout_cleanup",
            about: "a WORKING task is polled until the task budget expires, then cancelled",
            redaction: Redaction::None,
            build: timeout_cleanup,
        },
    ]
}
