//! The documented shapes of per-send results and agent events (TR-10, EV-14, EV-15), on the
//! simulator: what a host reads must not drift from what the docs promise.

use a2at_core::a2a::TaskState;
use a2at_core::run::RunConfig;
use a2at_tests::{Plan, ScriptedAgent, ScriptedHost, SimOutcome, simulate};
use serde_json::{Value, json};

fn run(agent: ScriptedAgent) -> SimOutcome {
    let wf = json!({"steps": [{"name": "s", "subtasks": [{"agent": "a", "description": "x"}]}]});
    simulate(
        &wf,
        vec![agent],
        ScriptedHost::default(),
        RunConfig::default(),
    )
}

fn streaming(events: Vec<Value>) -> ScriptedAgent {
    ScriptedAgent::new("a")
        .streaming()
        .by_default(Plan::Events(events))
}

/// A task whose levels each carry metadata, two of them the same key.
fn layered_task() -> Vec<Value> {
    vec![
        json!({"task": {"id": "$TASK", "contextId": "$CTX",
            "status": {"state": "TASK_STATE_WORKING"},
            "metadata": {"level": "task", "taskOnly": 1}}}),
        json!({"artifactUpdate": {"taskId": "$TASK", "contextId": "$CTX", "append": false,
            "artifact": {"artifactId": "r", "name": "report",
                "parts": [{"text": "line one"}, {"data": {"n": 2}}, {"text": "line two"}],
                "metadata": {"level": "artifact", "artifactOnly": true}}}}),
        json!({"statusUpdate": {"taskId": "$TASK", "contextId": "$CTX",
            "status": {"state": "TASK_STATE_COMPLETED", "message": {
                "messageId": "m1", "role": "ROLE_AGENT", "parts": [{"text": "done"}],
                "metadata": {"level": "status"}}}}}),
    ]
}

#[test]
fn an_artifact_update_event_carries_its_text_and_metadata() {
    let out = run(streaming(layered_task()));
    assert!(out.result().success);
    let updates = out.events("agent_artifact_update");
    assert_eq!(updates.len(), 1);
    let update = updates[0];
    assert_eq!(update["agent"], "a");
    assert_eq!(update["artifact_name"], "report");
    assert_eq!(update["artifact_id"], "r");
    assert_eq!(
        update["text"], "line one\nline two",
        "text parts only, in order"
    );
    assert_eq!(update["metadata"]["artifactOnly"], true);
    assert_eq!(update["append"], false);
}

#[test]
fn a_message_event_carries_role_text_and_metadata() {
    let out = run(streaming(vec![json!({"message": {
        "messageId": "m9", "role": "ROLE_AGENT", "taskId": "", "contextId": "$CTX",
        "parts": [{"text": "hello"}, {"text": "there"}],
        "metadata": {"mood": "fine"}}})]));
    assert!(out.result().success);
    let messages = out.events("agent_message_event");
    assert_eq!(messages.len(), 1);
    let m = messages[0];
    assert_eq!(m["agent"], "a");
    assert_eq!(m["role"], "ROLE_AGENT");
    assert_eq!(m["text"], "hello\nthere");
    assert_eq!(m["metadata"], json!({"mood": "fine"}));
}

#[test]
fn the_flat_send_result_derives_text_task_state_and_flattened_metadata() {
    let out = run(streaming(layered_task()));
    let result = &out.result().history[0];
    assert!(result.received_messages.len() == 1);
    let flat = result.send_result();
    assert_eq!(
        flat.text, "line one\nline two",
        "artifacts first, before the status message"
    );
    assert_eq!(flat.task_state, Some(TaskState::Completed));
    let task = flat.task.as_ref().expect("the task as last seen");
    assert_eq!(Some(task.id.as_str()), result.remote_task_id.as_deref());
    assert_eq!(task.status.state, TaskState::Completed);
    assert_eq!(task.artifacts.len(), 1);
    assert_eq!(
        task.status.message.as_ref().map(|m| m.message_id.as_str()),
        Some("m1")
    );
    // Every level in one map; on a shared key the innermost level (the status message) wins.
    assert_eq!(flat.metadata["level"], "status");
    assert_eq!(flat.metadata["taskOnly"], 1);
    assert_eq!(flat.metadata["artifactOnly"], true);
    assert_eq!(flat.failure_code, None);
    assert_eq!(flat.received_messages, result.received_messages);
    let shown = serde_json::to_value(&flat).unwrap();
    assert_eq!(shown["taskState"], "TASK_STATE_COMPLETED");
    assert_eq!(shown["task"]["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(shown["failureCode"], Value::Null);
    assert!(shown["receivedMessages"].is_array());
}

#[test]
fn a_bare_message_gives_no_task_and_its_own_text() {
    let out = run(streaming(vec![json!({"message": {
        "messageId": "m9", "role": "ROLE_AGENT", "contextId": "$CTX",
        "parts": [{"text": "just this"}], "metadata": {"k": "v"}}})]));
    let flat = out.result().history[0].send_result();
    assert_eq!(flat.task, None);
    assert_eq!(flat.task_state, None);
    assert_eq!(flat.text, "just this");
    assert_eq!(flat.metadata["k"], "v");
}

#[test]
fn a_failed_send_shows_its_failure_in_the_flat_result() {
    let out = run(streaming(vec![
        json!({"task": {"id": "$TASK", "contextId": "$CTX", "status": {"state": "TASK_STATE_WORKING"}}}),
        json!({"statusUpdate": {"taskId": "$TASK", "contextId": "$CTX",
            "status": {"state": "TASK_STATE_FAILED"}}}),
    ]));
    let result = &out.result().history[0];
    let flat = result.send_result();
    assert_eq!(flat.task_state, Some(TaskState::Failed));
    assert!(flat.failure_code.is_some());
    assert_eq!(flat.failure_code, result.error_code);
    assert_eq!(flat.failure_message, result.error);
}

#[test]
fn without_artifacts_the_text_is_the_status_messages() {
    let out = run(streaming(vec![
        json!({"task": {"id": "$TASK", "contextId": "$CTX", "status": {"state": "TASK_STATE_WORKING"}}}),
        json!({"statusUpdate": {"taskId": "$TASK", "contextId": "$CTX",
            "status": {"state": "TASK_STATE_COMPLETED", "message": {
                "messageId": "m1", "role": "ROLE_AGENT",
                "parts": [{"text": "answered"}, {"data": {"x": 1}}, {"text": "in the status"}]}}}}),
    ]));
    assert!(out.result().success);
    let flat = out.result().history[0].send_result();
    assert_eq!(flat.text, "answered\nin the status");
    assert_eq!(flat.task.unwrap().artifacts.len(), 0);
}
