//! Conformance: protocol exchanges beyond one send (negotiation, bare messages).

use crate::agent::Negotiation;
use crate::conformance::{Scenario, check};
use crate::host::now;
use crate::{Plan, ScriptedAgent, ScriptedHost};
use a2at_core::a2at::{NEGOTIATION_T_URI, Performative};
use a2at_core::host::{MessageContent, NegotiationReply, TaskStatus};
use serde_json::json;

use super::Driver;

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

pub fn negotiation_over_two_rounds<D: Driver>() {
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

pub fn a_bare_message_answer_is_a_success<D: Driver>() {
    let s = Scenario::new(json!({"steps": [{"name": "m", "subtasks": [
        {"agent": "alpha", "description": "hi"}]}]}))
    .agent(
        ScriptedAgent::new("alpha")
            .streaming()
            .by_default(Plan::BareMessage("hello")),
    );
    let e = check::<D>(&s);
    assert_eq!(e.result.history[0].status, TaskStatus::Success);
    assert_eq!(e.result.step_outputs()["m"]["hi"], vec![json!("hello")]);
}
