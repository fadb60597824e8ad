//! Response assembly (TR-8, TR-9, CX-5).

use a2at_core::a2a::{ResponseAccumulator, StreamResponse, TaskState};
use serde_json::{Value, json};

fn ev(v: Value) -> StreamResponse {
    StreamResponse::from_json(&v).unwrap()
}

fn apply_all(evs: &[Value]) -> ResponseAccumulator {
    let mut acc = ResponseAccumulator::new();
    for e in evs {
        acc.apply(ev(e.clone()));
    }
    acc
}

fn chunk(append: bool, text: &str) -> Value {
    json!({"artifactUpdate":{"taskId":"t","contextId":"c","append":append,
        "artifact":{"artifactId":"a1","parts":[{"text":text}]}}})
}

#[test]
fn append_extends_parts_like_the_python_server() {
    let acc = apply_all(&[chunk(false, "chunk1 "), chunk(true, "chunk2")]);
    assert_eq!(acc.artifacts().len(), 1);
    let parts: Vec<&str> = acc.artifacts()[0]
        .parts
        .iter()
        .filter_map(|p| p.as_text())
        .collect();
    assert_eq!(parts, ["chunk1 ", "chunk2"]);
    assert_eq!(acc.outputs(), vec![json!("chunk1 "), json!("chunk2")]);
}

#[test]
fn non_append_replaces_and_unknown_append_creates() {
    let acc = apply_all(&[chunk(false, "old"), chunk(false, "new")]);
    assert_eq!(acc.outputs(), vec![json!("new")]);
    let acc = apply_all(&[chunk(true, "orphan")]);
    assert_eq!(acc.outputs(), vec![json!("orphan")]);
}

#[test]
fn append_merges_metadata_and_falls_back_for_name() {
    let first = json!({"artifactUpdate":{"taskId":"t","artifact":{"artifactId":"a1","name":"report",
        "description":"d","extensions":["urn:x"],"parts":[{"text":"1"}],"metadata":{"k":"old","keep":1}}}});
    let second = json!({"artifactUpdate":{"taskId":"t","append":true,"artifact":{"artifactId":"a1",
        "parts":[{"data":{"n":2}}],"metadata":{"k":"new","add":true}}}});
    let acc = apply_all(&[first, second]);
    let a = &acc.artifacts()[0];
    assert_eq!(a.name.as_deref(), Some("report"));
    assert_eq!(a.description.as_deref(), Some("d"));
    assert_eq!(a.extensions, vec!["urn:x".to_owned()]);
    assert_eq!(
        Value::Object(a.metadata.clone().unwrap()),
        json!({"k":"new","keep":1,"add":true})
    );
    assert_eq!(acc.outputs(), vec![json!("1"), json!({"n":2})]);
}

#[test]
fn repeated_snapshots_do_not_duplicate() {
    let snap = json!({"task":{"id":"t","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"},
        "artifacts":[{"artifactId":"a1","parts":[{"text":"chunk1 "},{"text":"chunk2"}]}]}});
    let acc = apply_all(&[
        chunk(false, "chunk1 "),
        chunk(true, "chunk2"),
        snap.clone(),
        snap.clone(),
        snap,
    ]);
    assert_eq!(acc.outputs(), vec![json!("chunk1 "), json!("chunk2")]);
    assert_eq!(acc.state(), Some(TaskState::Completed));
}

#[test]
fn artifact_order_is_first_appearance() {
    let mk = |id: &str, append: bool, t: &str| json!({"artifactUpdate":{"taskId":"t","append":append,"artifact":{"artifactId":id,"parts":[{"text":t}]}}});
    let acc = apply_all(&[
        mk("b", false, "b1"),
        mk("a", false, "a1"),
        mk("b", true, "b2"),
        mk("a", false, "a!"),
    ]);
    let ids: Vec<&str> = acc
        .artifacts()
        .iter()
        .map(|a| a.artifact_id.as_str())
        .collect();
    assert_eq!(ids, ["b", "a"]);
    assert_eq!(acc.outputs(), vec![json!("b1"), json!("b2"), json!("a!")]);
}

#[test]
fn outputs_never_flatten_arrays_and_skip_files() {
    let acc = apply_all(&[
        json!({"task":{"id":"t","status":{"state":"TASK_STATE_COMPLETED"},
        "artifacts":[{"artifactId":"a","parts":[
            {"data":[[1,2],[3]]},{"url":"https://x/y"},{"raw":"AA=="},{"text":"t"},{"data":"s"}]}]}}),
    ]);
    assert_eq!(
        acc.outputs(),
        vec![json!([[1, 2], [3]]), json!("t"), json!("s")]
    );
}

/// The outputs are kept with the task's result for the run's life: each source's list has room
/// for exactly its outputs, files and links not counted.
#[test]
fn outputs_are_kept_in_a_list_of_exactly_their_number() {
    let from_artifacts = apply_all(&[
        json!({"task":{"id":"t","status":{"state":"TASK_STATE_COMPLETED"},
        "artifacts":[{"artifactId":"a","parts":[{"url":"https://x/y"},{"text":"t"},{"raw":"AA=="}]},
                     {"artifactId":"b","parts":[{"data":{"k":1}}]}]}}),
    ]);
    let from_status = apply_all(&[status("TASK_STATE_COMPLETED", "ROLE_AGENT", "done")]);
    let from_message = apply_all(&[json!({"message":{"messageId":"m1","role":"ROLE_AGENT",
        "parts":[{"raw":"AA=="},{"text":"hi"}]}})]);
    for (acc, want) in [
        (&from_artifacts, vec![json!("t"), json!({"k": 1})]),
        (&from_status, vec![json!("done"), json!({"k": 1})]),
        (&from_message, vec![json!("hi")]),
    ] {
        let outputs = acc.outputs();
        assert_eq!(outputs, want);
        assert_eq!(outputs.capacity(), outputs.len(), "{outputs:?}");
    }
}

#[test]
fn standalone_agent_message_gives_outputs_and_its_own_received_message() {
    let m = json!({"message":{"messageId":"m1","contextId":"c","role":"ROLE_AGENT",
        "parts":[{"text":"hi"},{"data":{"a":[1]}}],"metadata":{"layer":"message"}}});
    let acc = apply_all(&[m.clone(), m]);
    assert_eq!(acc.outputs(), vec![json!("hi"), json!({"a":[1]})]);
    let rm = acc.received_messages();
    assert_eq!(rm.len(), 1, "de-duplicated by messageId, no task seen");
    assert_eq!(rm[0].message.as_ref().unwrap().message_id, "m1");
    assert_eq!(rm[0].task_state, None);
    assert_eq!(acc.context_id(), Some("c"));
}

#[test]
fn metadata_layers_stay_separate() {
    let acc = apply_all(&[
        json!({"task":{"id":"t","contextId":"c","status":{"state":"TASK_STATE_SUBMITTED"},
               "metadata":{"layer":"task"}}}),
        json!({"statusUpdate":{"taskId":"t","contextId":"c","metadata":{"layer":"status-event"},
               "status":{"state":"TASK_STATE_INPUT_REQUIRED","message":{"messageId":"p","role":"ROLE_AGENT",
               "parts":[{"text":"propose"}],"metadata":{"layer":"message"}}}}}),
        json!({"artifactUpdate":{"taskId":"t","artifact":{"artifactId":"a","parts":[{"text":"x"}],
               "metadata":{"layer":"artifact"}}}}),
    ]);
    let rm = acc.received_messages();
    assert_eq!(rm.len(), 1);
    let r = &rm[0];
    assert_eq!(r.task_id.as_deref(), Some("t"));
    assert_eq!(r.task_state, Some(TaskState::InputRequired));
    assert_eq!(
        r.message.as_ref().unwrap().metadata.as_ref().unwrap()["layer"],
        "message"
    );
    assert_eq!(r.task_metadata.as_ref().unwrap()["layer"], "status-event");
    assert_eq!(
        r.artifacts[0].metadata.as_ref().unwrap()["layer"],
        "artifact"
    );
    assert_eq!(acc.status_message().unwrap().message_id, "p");
    let ser = serde_json::to_value(r).unwrap();
    assert_eq!(ser["taskState"], "TASK_STATE_INPUT_REQUIRED");
    assert_eq!(ser["taskMetadata"]["layer"], "status-event");
    let back: a2at_core::a2a::ReceivedMessage = serde_json::from_value(ser).unwrap();
    assert_eq!(&back, r);
}

#[test]
fn latest_status_without_message_clears_the_status_message() {
    let acc = apply_all(&[
        json!({"statusUpdate":{"taskId":"t","status":{"state":"TASK_STATE_WORKING",
               "message":{"messageId":"w","role":"ROLE_AGENT","parts":[{"text":"working"}]}}}}),
        json!({"statusUpdate":{"taskId":"t","status":{"state":"TASK_STATE_COMPLETED"}}}),
    ]);
    assert!(acc.status_message().is_none());
    assert_eq!(acc.state(), Some(TaskState::Completed));
    assert_eq!(acc.text(), "");
}

fn status(state: &str, role: &str, text: &str) -> Value {
    json!({"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":state,
        "message":{"messageId":format!("s-{state}"),"role":role,"parts":[{"text":text},{"data":{"k":1}}]}}}})
}

// CX-5: an agent that answers with `complete(message)` and no artifact.
#[test]
fn completed_status_message_is_the_output_when_there_is_no_artifact() {
    let acc = apply_all(&[
        json!({"task":{"id":"t","contextId":"c","status":{"state":"TASK_STATE_SUBMITTED"}}}),
        status("TASK_STATE_WORKING", "ROLE_AGENT", "thinking"),
        status("TASK_STATE_COMPLETED", "ROLE_AGENT", "the answer"),
    ]);
    assert_eq!(acc.outputs(), vec![json!("the answer"), json!({"k": 1})]);
    // The same answer as a snapshot (unary SendMessage or GetTask).
    let snapshot = apply_all(&[json!({"task":{"id":"t","contextId":"c",
        "status":{"state":"TASK_STATE_COMPLETED","message":{"messageId":"m","role":"ROLE_AGENT",
        "parts":[{"text":"from the snapshot"}]}}}})]);
    assert_eq!(snapshot.outputs(), vec![json!("from the snapshot")]);
}

#[test]
fn artifacts_win_over_the_completed_status_message() {
    let acc = apply_all(&[
        chunk(false, "artifact text"),
        status("TASK_STATE_COMPLETED", "ROLE_AGENT", "status text"),
    ]);
    assert_eq!(acc.outputs(), vec![json!("artifact text")]);
}

#[test]
fn a_status_message_that_is_not_a_completion_is_no_output() {
    for state in [
        "TASK_STATE_WORKING",
        "TASK_STATE_FAILED",
        "TASK_STATE_INPUT_REQUIRED",
    ] {
        let acc = apply_all(&[status(state, "ROLE_AGENT", "progress")]);
        assert_eq!(acc.outputs(), Vec::<Value>::new(), "{state}");
    }
    // A user-authored status message is an echo, not an answer.
    let echo = apply_all(&[status("TASK_STATE_COMPLETED", "ROLE_USER", "echo")]);
    assert_eq!(echo.outputs(), Vec::<Value>::new());
}

#[test]
fn the_completed_status_message_wins_over_earlier_standalone_messages() {
    let acc = apply_all(&[
        json!({"message":{"messageId":"m1","contextId":"c","role":"ROLE_AGENT","parts":[{"text":"early"}]}}),
        status("TASK_STATE_COMPLETED", "ROLE_AGENT", "final"),
    ]);
    assert_eq!(acc.outputs(), vec![json!("final"), json!({"k": 1})]);
}

#[test]
fn only_the_last_agent_message_counts_among_standalone_messages() {
    let acc = apply_all(&[
        json!({"message":{"messageId":"m1","contextId":"c","role":"ROLE_AGENT","parts":[{"text":"first"}]}}),
        json!({"message":{"messageId":"m2","contextId":"c","role":"ROLE_AGENT","parts":[{"text":"last"}]}}),
        json!({"message":{"messageId":"m3","contextId":"c","role":"ROLE_USER","parts":[{"text":"user"}]}}),
    ]);
    assert_eq!(acc.outputs(), vec![json!("last")]);
}

// Rules no test stated until the whole-file mutation run of `core/src/a2a/assembly.rs`
// (issue #24) left their mutants alive: the public accessors (`task_id`, `messages`,
// `task_seen`) and the ids a standalone received message carries.

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

#[test]
fn the_received_messages_list_is_allocated_to_its_length() {
    // It stays in the run's history for the whole run: spare room would be kept per subtask.
    let task = json!({"task":{"id":"t","status":{"state":"TASK_STATE_COMPLETED"}}});
    for items in [
        vec![task.clone()],
        vec![message("m1", "hi")],
        vec![message("m1", "hi"), task.clone()],
        vec![
            message("m1", "hi"),
            message("m2", "ho"),
            message("m3", "hu"),
            task,
        ],
    ] {
        let received = apply_all(&items).received_messages();
        assert_eq!(received.capacity(), received.len(), "{items:?}");
    }
}

#[test]
fn the_received_artifacts_and_their_parts_are_allocated_to_their_length() {
    // Kept in the run's history for the whole run, like the list itself.
    let snapshot = json!({"task":{"id":"t","status":{"state":"TASK_STATE_COMPLETED"},
        "artifacts":[{"artifactId":"a","parts":[{"text":"x"}]}]}});
    let streamed = [
        chunk(false, "a"),
        chunk(true, "b"),
        chunk(true, "c"),
        json!({"artifactUpdate":{"taskId":"t","artifact":{"artifactId":"a2","parts":[{"text":"d"}]}}}),
        json!({"artifactUpdate":{"taskId":"t","artifact":{"artifactId":"a3","parts":[{"text":"e"}]}}}),
    ];
    for items in [vec![snapshot], streamed.to_vec()] {
        let received = apply_all(&items).into_received_messages();
        let artifacts = &received.last().expect("the task's entry").artifacts;
        assert!(!artifacts.is_empty());
        assert_eq!(artifacts.capacity(), artifacts.len(), "{items:?}");
        for artifact in artifacts {
            assert_eq!(artifact.parts.capacity(), artifact.parts.len(), "{items:?}");
        }
    }
}
