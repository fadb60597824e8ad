//! A plain `INPUT_REQUIRED` (no Negotiation-T): the host is asked only when the run allows
//! follow-ups, its reply goes to the same task, a decline fails the task, and a task whose
//! negotiation is active stays on the negotiation path.

use a2at_core::a2at::{NEGOTIATION_T_URI, Performative};
use a2at_core::host::{InputDecision, MessageContent, NegotiationReply, codes};
use a2at_core::run::RunConfig;
use a2at_tests::agent::Negotiation;
use a2at_tests::host::now;
use a2at_tests::{Plan, ScriptedAgent, ScriptedHost, SimOutcome, simulate};
use serde_json::json;
use std::sync::{Arc, Mutex};

fn run(agent: ScriptedAgent, host: ScriptedHost, config: RunConfig) -> SimOutcome {
    let wf = json!({"steps": [{"name": "s", "subtasks": [{"agent": "a", "description": "x"}]}]});
    simulate(&wf, vec![agent], host, config)
}

fn allowing(replies: u32) -> RunConfig {
    RunConfig {
        max_input_replies: Some(replies),
        ..RunConfig::default()
    }
}

/// A host that answers every input request with a follow-up and counts the requests.
fn answering(asked: Arc<Mutex<Vec<u32>>>) -> ScriptedHost {
    ScriptedHost::default().on_input_required(move |r| {
        asked.lock().unwrap().push(r.previous_replies);
        now(Ok(InputDecision::Reply {
            content: MessageContent::text(format!("more input {}", r.previous_replies)),
        }))
    })
}

#[test]
fn an_allowed_follow_up_is_sent_on_the_same_task_until_it_completes() {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let agent = ScriptedAgent::new("a").by_default(Plan::AsksInput(2));
    let out = run(agent, answering(asked.clone()), allowing(5));
    let result = &out.result().history[0];
    assert!(out.result().success, "{:?}", result.error);
    assert_eq!(
        *asked.lock().unwrap(),
        [0, 1],
        "asked once per INPUT_REQUIRED"
    );
    let sends = out.requests_to("a", "SendMessage");
    assert_eq!(sends.len(), 3, "the first send and two follow-ups");
    let task_id = result.remote_task_id.as_deref().expect("a remote task");
    for follow_up in &sends[1..] {
        assert_eq!(follow_up.message().unwrap()["taskId"], task_id);
    }
}

#[test]
fn without_allowed_follow_ups_the_host_is_never_asked_and_the_task_fails() {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let agent = ScriptedAgent::new("a").by_default(Plan::AsksInput(1));
    let out = run(agent, answering(asked.clone()), RunConfig::default());
    let result = &out.result().history[0];
    assert_eq!(
        result.error_code.as_deref(),
        Some(codes::UNSUPPORTED_TASK_STATE)
    );
    assert!(asked.lock().unwrap().is_empty());
    assert_eq!(out.requests_to("a", "SendMessage").len(), 1);
}

#[test]
fn a_declined_input_request_fails_the_task_without_a_follow_up() {
    let agent = ScriptedAgent::new("a").by_default(Plan::AsksInput(1));
    let out = run(agent, ScriptedHost::default(), allowing(3));
    assert_eq!(
        out.result().history[0].error_code.as_deref(),
        Some(codes::UNSUPPORTED_TASK_STATE)
    );
    assert_eq!(out.requests_to("a", "SendMessage").len(), 1);
}

#[test]
fn the_follow_ups_stop_at_the_limit() {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let agent = ScriptedAgent::new("a").by_default(Plan::AsksInput(5));
    let out = run(agent, answering(asked.clone()), allowing(2));
    assert!(!out.result().success);
    assert_eq!(*asked.lock().unwrap(), [0, 1], "never past the limit");
    assert_eq!(out.requests_to("a", "SendMessage").len(), 3);
}

#[test]
fn an_active_negotiation_stays_on_the_negotiation_path_when_follow_ups_are_allowed() {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let agent = ScriptedAgent::new("a").by_default(Plan::Negotiate(Negotiation::rounds(1, 3)));
    let host = answering(asked.clone())
        .on_task(|r| {
            now(Ok(
                MessageContent::text(r.instruction.clone()).with_extension(NEGOTIATION_T_URI)
            ))
        })
        .on_negotiation(|r| {
            now(Ok(NegotiationReply::Send {
                content: r.reply(Performative::Accept, "Accept").unwrap(),
            }))
        });
    let out = run(agent, host, allowing(5));
    assert!(out.result().success, "{:?}", out.result().history[0].error);
    assert!(asked.lock().unwrap().is_empty(), "never asked for input");
    assert_eq!(out.events("negotiation_request").len(), 1);
}
