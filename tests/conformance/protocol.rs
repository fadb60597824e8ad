//! Conformance: protocol exchanges beyond one send (negotiation, bare messages).

use a2at_core::a2at::{NEGOTIATION_T_URI, Performative};
use a2at_core::host::{MessageContent, NegotiationReply, TaskStatus};
use a2at_tests::agent::Negotiation;
use a2at_tests::conformance::{Scenario, check};
use a2at_tests::host::now;
use a2at_tests::{Plan, ScriptedAgent, ScriptedHost};
use serde_json::json;

use super::D;

fn accepting_host() -> ScriptedHost {
    ScriptedHost::default()
        .on_task(|r| {
            now(Ok(
                MessageContent::text(r.instruction.clone()).with_extension(NEGOTIATION_T_URI)
            ))
        })
        .on_negotiation(|r| {
            now(Ok(NegotiationReply::Send {
                content: r
                    .reply(Performative::Accept, "Accept")
                    .expect("valid Propose"),
            }))
        })
}

#[test]
fn negotiation_over_two_rounds() {
    let s = Scenario::new(json!({"steps": [{"name": "n", "subtasks": [
        {"agent": "rpc", "description": "x"}, {"agent": "rest", "description": "y"}]}]}))
    .agent(ScriptedAgent::new("rpc").by_default(Plan::Negotiate(Negotiation::rounds(2, 3))))
    .agent(
        ScriptedAgent::new("rest")
            .rest()
            .streaming()
            .by_default(Plan::Negotiate(Negotiation::rounds(2, 3))),
    )
    .host(accepting_host);
    let e = check::<D>(&s);
    assert!(e.result.success, "{:?}", e.result.error);
    assert_eq!(e.requests("rpc"), ["SendMessage"; 3]);
    assert_eq!(e.requests("rest"), ["SendStreamingMessage"; 3]);
}

#[test]
fn a_bare_message_answer_is_a_success() {
    let s = Scenario::new(json!({"steps": [{"name": "m", "subtasks": [
        {"agent": "alpha", "description": "hi"}]}]}))
    .agent(
        ScriptedAgent::new("alpha")
            .streaming()
            .by_default(Plan::BareMessage("hello")),
    );
    let e = check::<D>(&s);
    assert_eq!(e.result.history[0].status, TaskStatus::Success);
    assert_eq!(e.result.step_outputs["m"]["hi"], vec![json!("hello")]);
}
