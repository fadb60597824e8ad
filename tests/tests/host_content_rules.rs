//! Rules of the host's message content (`a2at_core::host::MessageContent`) as the agent
//! receives it, on the simulator.

use a2at_core::a2a::Part;
use a2at_core::host::MessageContent;
use a2at_core::run::RunConfig;
use a2at_tests::host::now;
use a2at_tests::{ScriptedAgent, ScriptedHost, simulate};
use serde_json::json;

#[test]
fn content_built_from_parts_reaches_the_agent_with_those_parts_in_order() {
    let host = ScriptedHost::default().on_task(|_| {
        now(Ok(MessageContent::parts(vec![
            Part::text("first"),
            Part::data(json!({"k": [1, 2]})),
            Part::text("last"),
        ])))
    });
    let wf =
        json!({"steps": [{"name": "s", "subtasks": [{"agent": "alpha", "description": "x"}]}]});
    let out = simulate(
        &wf,
        vec![ScriptedAgent::new("alpha")],
        host,
        RunConfig::default(),
    );
    assert!(out.result().success, "{:?}", out.result().history);
    let sends = out.requests_to("alpha", "SendMessage");
    assert_eq!(sends.len(), 1);
    let message = sends[0].message().expect("a message");
    let parts = message["parts"].as_array().expect("parts");
    assert_eq!(parts.len(), 3, "{message}");
    assert_eq!(parts[0]["text"], "first");
    assert_eq!(parts[1]["data"], json!({"k": [1, 2]}));
    assert_eq!(parts[2]["text"], "last");
    assert!(
        message
            .get("metadata")
            .is_none_or(|m| m.as_object().is_some_and(|m| m.is_empty())),
        "no metadata was set: {message}"
    );
}
