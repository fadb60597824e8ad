//! Negotiation-T scenarios: one test (or more) per NG row of the acceptance checklist.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2at_core::a2at::{NEGOTIATION_T_URI, Performative};
use a2at_core::host::{
    HostError, MessageContent, NegotiationReply, NegotiationRequest, TaskStatus, codes,
};
use a2at_core::io::{OpPurpose, Output};
use a2at_core::run::{RunConfig, RunStart};
use a2at_core::workflow::parse_and_validate;
use a2at_tests::agent::{Negotiation, Propose};
use a2at_tests::host::now;
use a2at_tests::{Observed, Plan, ScriptedAgent, ScriptedHost, Sim, SimOutcome, directory};
use serde_json::{Value, json};

fn one_task() -> Value {
    json!({"steps": [{"name": "s", "subtasks": [{"agent": "neg", "description": "energy saving"}]}]})
}

/// Content that activates Negotiation-T (the host's opt-in, NG-1).
fn negotiable(r: &a2at_core::host::TaskRequest) -> MessageContent {
    MessageContent::text(r.instruction.clone()).with_extension(NEGOTIATION_T_URI)
}

fn accept_all() -> ScriptedHost {
    ScriptedHost::default()
        .on_task(|r| now(Ok(negotiable(r))))
        .on_negotiation(|r| {
            now(Ok(NegotiationReply::Send {
                content: r
                    .reply(Performative::Accept, "Accept; sites: A, B")
                    .unwrap(),
            }))
        })
}

fn go(agent: ScriptedAgent, host: ScriptedHost, config: RunConfig) -> SimOutcome {
    let wf = parse_and_validate(&one_task().to_string()).unwrap();
    let agents = vec![agent];
    let dir = directory(&agents);
    Sim::new(wf, dir, agents, host, config, RunStart::default()).drive_bounded(100_000)
}

fn code(out: &SimOutcome) -> Option<&str> {
    out.result().history[0].error_code.as_deref()
}

fn negotiations(out: &SimOutcome) -> usize {
    out.outputs()
        .filter(|o| {
            matches!(
                o,
                Output::CallHost {
                    request: a2at_core::host::HostRequest::Negotiation(_),
                    ..
                }
            )
        })
        .count()
}

fn sends(out: &SimOutcome) -> Vec<&a2at_tests::AgentRequest> {
    out.requests_to("neg", "SendMessage")
}

#[test]
fn ng1_without_the_hosts_opt_in_a_propose_is_an_unsupported_interaction() {
    let agent = ScriptedAgent::new("neg").by_default(Plan::Negotiate(Negotiation::rounds(1, 3)));
    let host = accept_all().on_task(|r| now(Ok(MessageContent::text(r.instruction.clone()))));
    let out = go(agent, host, RunConfig::default());
    assert_eq!(code(&out), Some(codes::UNSUPPORTED_TASK_STATE));
    assert_eq!(
        negotiations(&out),
        0,
        "the card and the callback do not activate it"
    );
    assert_eq!(
        out.requests_to("neg", "CancelTask").len(),
        1,
        "the INPUT_REQUIRED task is cleaned up"
    );
}

#[test]
fn ng1_ng2_ng13_an_in_task_propose_reaches_the_host_and_the_reply_goes_out_unchanged() {
    let seen: Arc<Mutex<Vec<NegotiationRequest>>> = Arc::default();
    let seen2 = seen.clone();
    let host = accept_all().on_negotiation(move |r| {
        seen2.lock().unwrap().push(r.clone());
        now(Ok(NegotiationReply::Send {
            content: r
                .reply(Performative::Accept, "Accept; sites: A, B")
                .unwrap(),
        }))
    });
    let agent = ScriptedAgent::new("neg").by_default(Plan::Negotiate(Negotiation::rounds(2, 3)));
    let out = go(agent, host, RunConfig::default());
    assert!(out.result().success, "{:?}", out.result().history);
    let sends = sends(&out);
    assert_eq!(sends.len(), 3, "the task, then one reply per Propose");
    assert!(
        sends[0]
            .header("A2A-Extensions")
            .unwrap()
            .contains(NEGOTIATION_T_URI)
    );
    let first = sends[0].message().unwrap();
    for reply in &sends[1..] {
        let m = reply.message().unwrap();
        assert_eq!(m["taskId"], "neg-t1", "same remote task");
        assert_eq!(m["contextId"], first["contextId"], "same context");
        assert_ne!(m["messageId"], first["messageId"]);
        assert_eq!(m["role"], "ROLE_USER");
        assert_eq!(
            m["metadata"]["negotiationContext"]["performative"],
            "ACCEPT"
        );
        assert_eq!(
            m["metadata"]["templateUri"],
            "Negotiation-T/information-negotiation/accept-reject/v1"
        );
        assert_eq!(reply.header("A2A-Extensions"), Some(NEGOTIATION_T_URI));
    }
    assert_eq!(
        sends[2].message().unwrap()["metadata"]["negotiationContext"]["round"],
        2
    );
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].original_submission.parts, negotiable_parts());
    assert!(seen[0].previous_exchanges.is_empty());
    assert_eq!(
        seen[1].previous_exchanges.len(),
        1,
        "this session's completed exchanges"
    );
    assert_eq!(seen[1].context().unwrap().round, 2);
    assert!(
        seen[0].remaining_wait <= Duration::from_secs(600)
            && seen[0].remaining_wait > Duration::from_secs(590)
    );
    let types = out.event_types();
    assert_eq!(
        types
            .iter()
            .filter(|t| **t == "negotiation_request")
            .count(),
        2
    );
    assert_eq!(
        types
            .iter()
            .filter(|t| **t == "negotiation_resolved")
            .count(),
        2
    );
}

fn negotiable_parts() -> Vec<a2at_core::a2a::Part> {
    vec![a2at_core::a2a::Part::text("energy saving")]
}

#[test]
fn ng23_the_reply_metadata_is_exactly_the_hosts_with_no_private_keys() {
    let agent = ScriptedAgent::new("neg").by_default(Plan::Negotiate(Negotiation::rounds(1, 3)));
    let out = go(agent, accept_all(), RunConfig::default());
    let reply = &sends(&out)[1];
    let meta = reply.message().unwrap()["metadata"]
        .as_object()
        .unwrap()
        .clone();
    let keys: Vec<&str> = meta.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [NEGOTIATION_T_URI, "templateUri", "negotiationContext"]
    );
}

#[test]
fn ng3_ng4_a_pre_task_propose_is_answered_on_the_same_context_without_a_task_id() {
    let agent = ScriptedAgent::new("neg")
        .then(Plan::BarePropose(Propose::round(1, 2)))
        .then(Plan::States(vec!["TASK_STATE_COMPLETED"]));
    let out = go(agent, accept_all(), RunConfig::default());
    assert!(out.result().success, "{:?}", out.result().history[0].error);
    let sends = sends(&out);
    assert_eq!(sends.len(), 2);
    let reply = sends[1].message().unwrap();
    assert!(
        reply.get("taskId").is_none(),
        "pre-task follow-ups carry no taskId"
    );
    assert_eq!(reply["contextId"], sends[0].message().unwrap()["contextId"]);
    assert_eq!(
        reply["metadata"]["negotiationContext"]["performative"],
        "ACCEPT"
    );
    let request = out.events("negotiation_request")[0];
    assert_eq!(request["mode"], "pre_task");
    assert_eq!(request["exchange"], 1);
    // The event carries what the agent asked: its Propose, as received.
    let propose = &request["request"]["message"]["metadata"]["negotiationContext"];
    assert_eq!(propose["performative"], "PROPOSE", "{request}");
    assert_eq!(propose["round"].as_f64(), Some(1.0));
}

#[test]
fn ng4_invalid_negotiation_metadata_on_a_bare_message_fails_explicitly() {
    let bad = Propose {
        round: json!(1.5),
        ..Propose::round(1, 3)
    };
    let agent = ScriptedAgent::new("neg").by_default(Plan::BarePropose(bad));
    let out = go(agent, accept_all(), RunConfig::default());
    assert_eq!(code(&out), Some(codes::NEGOTIATION_INVALID));
    assert_eq!(negotiations(&out), 0);
}

#[test]
fn ng5_a_terminal_response_never_starts_a_negotiation() {
    let agent = ScriptedAgent::new("neg").by_default(Plan::CompletedWithPropose);
    let out = go(agent, accept_all(), RunConfig::default());
    assert!(out.result().success);
    assert_eq!(negotiations(&out), 0);
}

#[test]
fn ng6_an_ordinary_input_required_fails_as_unsupported() {
    let agent =
        ScriptedAgent::new("neg").by_default(Plan::States(vec!["TASK_STATE_INPUT_REQUIRED"]));
    let out = go(agent, accept_all(), RunConfig::default());
    assert_eq!(code(&out), Some(codes::UNSUPPORTED_TASK_STATE));
    assert!(
        out.result().history[0]
            .error
            .as_deref()
            .unwrap()
            .contains("no Negotiation-T Propose")
    );
    assert_eq!(negotiations(&out), 0);
}

#[test]
fn ng7_ng8_malformed_contexts_fail_and_never_reach_the_host() {
    let cases = [
        Propose {
            round: json!(1.5),
            ..Propose::round(1, 3)
        },
        Propose {
            round: json!("1"),
            ..Propose::round(1, 3)
        },
        Propose {
            max_rounds: json!(0),
            ..Propose::round(1, 3)
        },
        Propose {
            performative: "propose",
            ..Propose::round(1, 3)
        },
        Propose {
            with_uri_key: false,
            ..Propose::round(1, 3)
        },
    ];
    for bad in cases {
        let neg = Negotiation {
            proposes: vec![bad.clone()],
            ..Negotiation::rounds(1, 3)
        };
        let agent = ScriptedAgent::new("neg").by_default(Plan::Negotiate(neg));
        let out = go(agent, accept_all(), RunConfig::default());
        assert_eq!(code(&out), Some(codes::NEGOTIATION_INVALID), "{bad:?}");
        assert_eq!(negotiations(&out), 0, "{bad:?}");
        assert_eq!(out.requests_to("neg", "CancelTask").len(), 1);
    }
}

#[test]
fn ng8_the_round_integral_double_from_python_agents_is_accepted() {
    // Propose::round writes 1.0 / 3.0 as Python agents do.
    let agent = ScriptedAgent::new("neg").by_default(Plan::Negotiate(Negotiation::rounds(1, 3)));
    assert!(
        go(agent, accept_all(), RunConfig::default())
            .result()
            .success
    );
}

#[test]
fn ng9_an_exhausted_context_is_rejected_but_the_last_round_can_be_answered() {
    let last = Negotiation {
        proposes: vec![Propose::round(3, 3)],
        ..Negotiation::rounds(1, 3)
    };
    let agent = ScriptedAgent::new("neg").by_default(Plan::Negotiate(last));
    assert!(
        go(agent, accept_all(), RunConfig::default())
            .result()
            .success
    );
    let over = Negotiation {
        proposes: vec![Propose::round(4, 3)],
        ..Negotiation::rounds(1, 3)
    };
    let agent = ScriptedAgent::new("neg").by_default(Plan::Negotiate(over));
    assert_eq!(
        code(&go(agent, accept_all(), RunConfig::default())),
        Some(codes::NEGOTIATION_INVALID)
    );
}

#[test]
fn ng10_a_regressed_round_or_changed_max_rounds_fails() {
    for second in [Propose::round(1, 3), Propose::round(2, 4)] {
        let neg = Negotiation {
            proposes: vec![Propose::round(2, 3), second],
            ..Negotiation::rounds(1, 3)
        };
        let agent = ScriptedAgent::new("neg").by_default(Plan::Negotiate(neg));
        let out = go(agent, accept_all(), RunConfig::default());
        assert_eq!(code(&out), Some(codes::NEGOTIATION_INVALID));
        assert!(
            out.result().history[0]
                .error
                .as_deref()
                .unwrap()
                .contains("regressed or maxRounds changed")
        );
        assert_eq!(negotiations(&out), 1);
    }
}

#[test]
fn ng12_a_reply_that_does_not_match_the_context_is_refused_and_not_sent() {
    type Bad = fn(&NegotiationRequest) -> MessageContent;
    let bad_replies: [Bad; 4] = [
        // a new Propose
        |r| r.reply(Performative::Propose, "counter").unwrap(),
        // the wrong round
        |r| {
            let mut c = r.reply(Performative::Accept, "ok").unwrap();
            c.metadata["negotiationContext"]["round"] = json!(2);
            c
        },
        // not activated in extensions
        |r| {
            let mut c = r.reply(Performative::Accept, "ok").unwrap();
            c.extensions.clear();
            c
        },
        // no context at all
        |r| {
            let mut c = r.reply(Performative::Accept, "ok").unwrap();
            c.metadata.remove("negotiationContext");
            c
        },
    ];
    for bad in bad_replies {
        let host = accept_all()
            .on_negotiation(move |r| now(Ok(NegotiationReply::Send { content: bad(r) })));
        let agent =
            ScriptedAgent::new("neg").by_default(Plan::Negotiate(Negotiation::rounds(1, 3)));
        let out = go(agent, host, RunConfig::default());
        assert_eq!(code(&out), Some(codes::NEGOTIATION_INVALID));
        assert_eq!(sends(&out).len(), 1, "the invalid reply was not sent");
        assert_eq!(out.events("negotiation_failed").len(), 1);
        assert_eq!(out.requests_to("neg", "CancelTask").len(), 1);
    }
}

#[test]
fn ng14_stop_fails_with_its_code_sends_no_abort_and_cancels_the_task() {
    let host = accept_all().on_negotiation(|_| {
        now(Ok(NegotiationReply::Stop {
            code: "biz.no_budget".into(),
            reason: "over budget".into(),
        }))
    });
    let agent = ScriptedAgent::new("neg").by_default(Plan::Negotiate(Negotiation::rounds(2, 3)));
    let out = go(agent, host, RunConfig::default());
    assert_eq!(code(&out), Some("biz.no_budget"));
    assert_eq!(
        out.result().history[0].error.as_deref(),
        Some("over budget")
    );
    assert_eq!(sends(&out).len(), 1, "no Abort was generated");
    assert_eq!(out.requests_to("neg", "CancelTask").len(), 1);
    assert_eq!(
        out.events("negotiation_failed")[0]["errorType"],
        "biz.no_budget"
    );
}

#[test]
fn ng15_ng16_a_repeated_propose_is_not_asked_again_and_is_observed_with_get_task() {
    let neg = Negotiation {
        repeat_same: true,
        ..Negotiation::rounds(1, 3)
    };
    let agent = ScriptedAgent::new("neg").by_default(Plan::Negotiate(neg));
    let config = RunConfig {
        task_budget: Duration::from_secs(3),
        ..RunConfig::default()
    };
    let out = go(agent, accept_all(), config);
    assert_eq!(
        negotiations(&out),
        1,
        "one callback per (task, negotiation, round)"
    );
    assert_eq!(sends(&out).len(), 2, "one reply, never resent");
    assert!(
        out.requests_to("neg", "GetTask").len() >= 5,
        "the waiting state is observed by polling"
    );
    assert_eq!(code(&out), Some(codes::TIMEOUT));
}

#[test]
fn ng17_the_exchange_budget_is_local_and_ends_without_an_abort() {
    let agent = ScriptedAgent::new("neg").by_default(Plan::Negotiate(Negotiation::rounds(5, 5)));
    let config = RunConfig {
        max_negotiation_exchanges: 3,
        ..RunConfig::default()
    };
    let out = go(agent, accept_all(), config);
    assert_eq!(code(&out), Some(codes::NEGOTIATION_BUDGET_EXHAUSTED));
    assert_eq!(negotiations(&out), 3);
    assert_eq!(sends(&out).len(), 4, "the task and three replies, no Abort");
    assert_eq!(out.requests_to("neg", "CancelTask").len(), 1);
    let failed = out.events("negotiation_failed");
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["errorType"], codes::NEGOTIATION_BUDGET_EXHAUSTED);
}

#[test]
fn ng18_a_missing_handler_or_a_timeout_fails_locally_without_implicit_accept() {
    let host = ScriptedHost::default().on_task(|r| now(Ok(negotiable(r))));
    let agent = ScriptedAgent::new("neg").by_default(Plan::Negotiate(Negotiation::rounds(1, 3)));
    let out = go(agent, host, RunConfig::default());
    assert_eq!(code(&out), Some(codes::HOST_HANDLER_MISSING));
    assert_eq!(sends(&out).len(), 1);

    let host = accept_all().on_negotiation(|_| (Duration::ZERO, None));
    let agent = ScriptedAgent::new("neg").by_default(Plan::Negotiate(Negotiation::rounds(1, 3)));
    let config = RunConfig {
        task_budget: Duration::from_secs(2),
        ..RunConfig::default()
    };
    let out = go(agent, host, config);
    assert_eq!(code(&out), Some(codes::TIMEOUT));
    assert_eq!(sends(&out).len(), 1);
    assert_eq!(out.events("negotiation_failed").len(), 1);
}

#[test]
fn ng19_an_ack_in_working_stays_pending_and_is_observed_without_resending() {
    let neg = Negotiation {
        ack_first: true,
        ..Negotiation::rounds(2, 3)
    };
    let agent = ScriptedAgent::new("neg").by_default(Plan::Negotiate(neg));
    let out = go(agent, accept_all(), RunConfig::default());
    assert!(out.result().success, "{:?}", out.result().history[0].error);
    assert_eq!(sends(&out).len(), 3);
    assert_eq!(negotiations(&out), 2);
    assert_eq!(
        out.requests_to("neg", "GetTask").len(),
        2,
        "one observation after each ACK"
    );
}

#[test]
fn ng20_an_abort_is_never_success_even_when_the_agent_completes() {
    let host = accept_all().on_negotiation(|r| {
        now(Ok(NegotiationReply::Send {
            content: r.reply(Performative::Abort, "Abort").unwrap(),
        }))
    });
    let agent = ScriptedAgent::new("neg").by_default(Plan::Negotiate(Negotiation::rounds(2, 3)));
    let out = go(agent, host, RunConfig::default());
    assert_eq!(code(&out), Some(codes::NEGOTIATION_ABORTED));
    assert_eq!(out.result().history[0].status, TaskStatus::Failed);
    let abort = &sends(&out)[1];
    assert_eq!(
        abort.message().unwrap()["metadata"]["templateUri"],
        "Negotiation-T/common/abort/v1"
    );
}

#[test]
fn ng22_a_late_negotiation_reply_is_dropped_and_never_sent() {
    let host = accept_all().on_negotiation(|r| {
        (
            Duration::from_secs(10),
            Some(Ok(NegotiationReply::Send {
                content: r.reply(Performative::Accept, "late").unwrap(),
            })),
        )
    });
    let agent = ScriptedAgent::new("neg").by_default(Plan::Negotiate(Negotiation::rounds(1, 3)));
    let config = RunConfig {
        task_budget: Duration::from_secs(2),
        ..RunConfig::default()
    };
    let wf = parse_and_validate(&one_task().to_string()).unwrap();
    let agents = vec![agent];
    let dir = directory(&agents);
    let out = Sim::new(wf, dir, agents, host, config, RunStart::default()).drive_bounded(10_000);
    assert_eq!(code(&out), Some(codes::TIMEOUT));
    let replies = out
        .log
        .iter()
        .filter(|(_, o)| matches!(o, Observed::Output(Output::Transmit(r)) if r.purpose == OpPurpose::Reply))
        .count();
    assert_eq!(replies, 0);
}

#[test]
fn ng21_a_host_failure_is_reported_as_negotiation_failed_with_its_code() {
    let host = accept_all().on_negotiation(|_| {
        now(Err(HostError::business(
            "llm.invocation_failed",
            "model down",
        )))
    });
    let agent = ScriptedAgent::new("neg").by_default(Plan::Negotiate(Negotiation::rounds(1, 3)));
    let out = go(agent, host, RunConfig::default());
    assert_eq!(code(&out), Some("llm.invocation_failed"));
    assert_eq!(
        out.events("negotiation_failed")[0]["errorType"],
        "llm.invocation_failed"
    );
}

#[test]
fn negotiation_works_on_rest_and_streaming_agents_too() {
    for agent in [
        ScriptedAgent::new("neg").rest(),
        ScriptedAgent::new("neg").streaming(),
        ScriptedAgent::new("neg").rest().streaming(),
    ] {
        let agent = agent.by_default(Plan::Negotiate(Negotiation::rounds(2, 3)));
        let out = go(agent, accept_all(), RunConfig::default());
        assert!(out.result().success, "{:?}", out.result().history[0].error);
        assert_eq!(negotiations(&out), 2);
    }
}

#[test]
fn ng3_a_negotiation_that_starts_pre_task_continues_on_the_task_once_it_exists() {
    let agent = ScriptedAgent::new("neg")
        .then(Plan::BarePropose(Propose::round(1, 3)))
        .then(Plan::Negotiate(Negotiation {
            proposes: vec![Propose::round(2, 3)],
            ..Negotiation::rounds(1, 3)
        }));
    let out = go(agent, accept_all(), RunConfig::default());
    assert!(out.result().success, "{:?}", out.result().history[0].error);
    let sends = sends(&out);
    assert_eq!(sends.len(), 3);
    assert!(
        sends[1].message().unwrap().get("taskId").is_none(),
        "pre-task reply"
    );
    let task = out.result().history[0].remote_task_id.clone().unwrap();
    assert_eq!(
        sends[2].message().unwrap()["taskId"],
        task.as_str(),
        "in-task reply"
    );
    let modes: Vec<&str> = out
        .events("negotiation_request")
        .iter()
        .map(|e| e["mode"].as_str().unwrap())
        .collect();
    assert_eq!(modes, ["pre_task", "in_task"]);
}

/// A bare agent message counts as a Propose when it carries either sign of Negotiation-T: the
/// `negotiationContext` key alone, or the extension's URI key alone.
#[test]
fn a_bare_message_with_either_negotiation_key_is_a_propose_not_a_success() {
    for metadata in [
        json!({"negotiationContext": {"negotiationId": "n", "round": 1, "maxRounds": 3,
            "performative": "PROPOSE"}}),
        json!({NEGOTIATION_T_URI: {"note": "uri key only"}}),
    ] {
        let agent = ScriptedAgent::new("neg").by_default(Plan::Events(vec![json!({"message": {
            "messageId": "p1", "role": "ROLE_AGENT", "contextId": "$CTX",
            "parts": [{"text": "please clarify"}], "metadata": metadata}})]));
        // Negotiation-T is not activated: a Propose cannot be answered.
        let out = go(agent, ScriptedHost::default(), RunConfig::default());
        assert_eq!(
            code(&out),
            Some(codes::UNSUPPORTED_TASK_STATE),
            "{metadata}: {:?}",
            out.result().history[0].error
        );
    }
}
