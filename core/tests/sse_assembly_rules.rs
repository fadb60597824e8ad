//! Rules of response assembly that no test stated until the whole-file mutation runs of
//! `core/src/a2a/sse.rs` and `core/src/a2a/assembly.rs` (issue #24) left their mutants alive:
//! the public accessors (`task_id`, `messages`, `task_seen`) and the ids a standalone
//! received message carries. The SSE decoder had no survivor.

use a2at_core::a2a::{ResponseAccumulator, StreamResponse};
use serde_json::{Value, json};

fn ev(v: Value) -> StreamResponse {
    StreamResponse::from_json(&v).unwrap()
}

fn apply_all(evs: &[Value]) -> ResponseAccumulator {
    let mut acc = ResponseAccumulator::new();
    for e in evs {
        acc.apply(&ev(e.clone()));
    }
    acc
}

fn message(id: &str, text: &str) -> Value {
    json!({"message":{"messageId":id,"contextId":"c","taskId":"t-of-message","role":"ROLE_AGENT",
        "parts":[{"text":text}]}})
}

fn texts(acc: &ResponseAccumulator) -> Vec<String> {
    acc.messages()
        .iter()
        .map(|m| m.parts.iter().filter_map(|p| p.as_text()).collect())
        .collect()
}

#[test]
fn standalone_messages_keep_first_appearance_order_and_a_repeat_replaces_in_place() {
    let acc = apply_all(&[
        message("m1", "one"),
        message("m2", "two"),
        message("m1", "one, corrected"),
    ]);
    assert_eq!(texts(&acc), ["one, corrected", "two"]);
    // Without a messageId there is nothing to de-duplicate by: every such message is kept.
    let acc = apply_all(&[message("", "first"), message("", "second")]);
    assert_eq!(texts(&acc), ["first", "second"]);
}

#[test]
fn only_task_level_items_mark_the_task_as_seen() {
    let acc = apply_all(&[message("m1", "hi")]);
    assert!(!acc.task_seen());
    assert_eq!(acc.received_messages().len(), 1, "no task entry");
    for item in [
        json!({"task":{"id":"t","status":{"state":"TASK_STATE_WORKING"}}}),
        json!({"statusUpdate":{"taskId":"t","status":{"state":"TASK_STATE_WORKING"}}}),
        json!({"artifactUpdate":{"taskId":"t","artifact":{"artifactId":"a","parts":[]}}}),
    ] {
        let acc = apply_all(&[message("m1", "hi"), item.clone()]);
        assert!(acc.task_seen(), "{item}");
        assert_eq!(acc.received_messages().len(), 2, "{item}");
    }
}

#[test]
fn the_first_known_task_id_stays_until_a_snapshot_names_another() {
    let acc = apply_all(&[
        json!({"statusUpdate":{"taskId":"t1","status":{"state":"TASK_STATE_WORKING"}}}),
        json!({"artifactUpdate":{"taskId":"t2","artifact":{"artifactId":"a","parts":[]}}}),
        json!({"statusUpdate":{"taskId":"t3","status":{"state":"TASK_STATE_WORKING"}}}),
    ]);
    assert_eq!(acc.task_id(), Some("t1"));
    // A snapshot without an id keeps the known one; one with an id is authoritative.
    let acc = apply_all(&[
        json!({"statusUpdate":{"taskId":"t1","status":{"state":"TASK_STATE_WORKING"}}}),
        json!({"task":{"id":"","status":{"state":"TASK_STATE_WORKING"}}}),
    ]);
    assert_eq!(acc.task_id(), Some("t1"));
    let acc = apply_all(&[
        json!({"statusUpdate":{"taskId":"t1","status":{"state":"TASK_STATE_WORKING"}}}),
        json!({"task":{"id":"t9","status":{"state":"TASK_STATE_WORKING"}}}),
    ]);
    assert_eq!(acc.task_id(), Some("t9"));
    // An empty id on an update is no id.
    let acc = apply_all(&[
        json!({"statusUpdate":{"taskId":"","status":{"state":"TASK_STATE_WORKING"}}}),
        json!({"artifactUpdate":{"taskId":"t2","artifact":{"artifactId":"a","parts":[]}}}),
    ]);
    assert_eq!(acc.task_id(), Some("t2"));
}

#[test]
fn a_standalone_received_message_carries_the_ids_the_message_names() {
    let acc = apply_all(&[message("m1", "hi")]);
    let rm = acc.received_messages();
    assert_eq!(rm.len(), 1);
    assert_eq!(rm[0].task_id.as_deref(), Some("t-of-message"));
    assert_eq!(rm[0].context_id.as_deref(), Some("c"));
    assert_eq!(rm[0].task_state, None);
}
