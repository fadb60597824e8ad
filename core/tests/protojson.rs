//! ProtoJSON reading/writing rules (a2a-wire §0, §1.2, §1.7).

use a2at_core::a2a::{
    DecodeErrorKind, Message, Part, PartContent, Role, SendMessageConfiguration, StreamResponse,
    Task, TaskState,
};
use serde_json::{Value, json};

#[test]
fn section_1_2_part_examples_round_trip() {
    let parts = json!([
        {"text":"Reduce energy on site A","mediaType":"text/plain"},
        {"raw":"aGVsbG8=","filename":"h.txt","mediaType":"text/plain"},
        {"url":"https://files.example/y.pdf","filename":"y.pdf","mediaType":"application/pdf"},
        {"data":{"cells":[1,2],"ok":true},"mediaType":"application/json","metadata":{"k":"v"}}
    ]);
    let decoded: Vec<Part> = parts
        .as_array()
        .unwrap()
        .iter()
        .map(|p| Part::from_json(p).unwrap())
        .collect();
    assert_eq!(decoded[0].as_text(), Some("Reduce energy on site A"));
    assert_eq!(decoded[1].content, PartContent::Raw(b"hello".to_vec()));
    assert_eq!(decoded[1].filename.as_deref(), Some("h.txt"));
    assert_eq!(
        decoded[2].content,
        PartContent::Url("https://files.example/y.pdf".to_owned())
    );
    assert_eq!(
        decoded[3].content,
        PartContent::Data(json!({"cells":[1,2],"ok":true}))
    );
    let back: Vec<Value> = decoded.iter().map(Part::to_json).collect();
    assert_eq!(Value::Array(back), parts);
    // serde goes through the same codec.
    let via_serde: Vec<Part> = serde_json::from_value(parts.clone()).unwrap();
    assert_eq!(via_serde, decoded);
    assert_eq!(serde_json::to_value(&via_serde).unwrap(), parts);
}

#[test]
fn raw_accepts_url_safe_and_unpadded_base64_and_writes_standard_padded() {
    let bytes: Vec<u8> = vec![0xfb, 0xff, 0xbf, 0x01];
    for enc in ["+/+/AQ==", "+/+/AQ", "-_-_AQ==", "-_-_AQ", "+/+/\nAQ=="] {
        let p = Part::from_json(&json!({ "raw": enc })).unwrap();
        assert_eq!(p.content, PartContent::Raw(bytes.clone()), "{enc}");
        assert_eq!(p.to_json(), json!({"raw":"+/+/AQ=="}));
    }
    let e = Part::from_json(&json!({"raw":"not base64!"})).unwrap_err();
    assert_eq!(e.kind, DecodeErrorKind::BadBase64);
    assert_eq!(e.path, "$.raw");
}

#[test]
fn two_content_members_or_none_are_rejected() {
    let e = Part::from_json(&json!({"text":"a","data":{}})).unwrap_err();
    assert_eq!(
        e.kind,
        DecodeErrorKind::PartWithTwoContents {
            first: "text",
            second: "data"
        }
    );
    let e = Part::from_json(&json!({"url":"u","raw":"AA=="})).unwrap_err();
    assert!(matches!(
        e.kind,
        DecodeErrorKind::PartWithTwoContents { .. }
    ));
    let e = Part::from_json(&json!({"mediaType":"text/plain"})).unwrap_err();
    assert_eq!(e.kind, DecodeErrorKind::PartWithoutContent);
    // Nested in a message, the path names the part.
    let e = Message::from_json(
        &json!({"messageId":"m","parts":[{"text":"ok"},{"text":"a","url":"b"}]}),
    )
    .unwrap_err();
    assert_eq!(e.path, "$.parts[1]");
    assert!(
        e.to_string().contains("more than one content member"),
        "{e}"
    );
}

#[test]
fn enums_read_by_name_or_number_and_unknown_states_do_not_fail() {
    for (v, want) in [
        (json!("TASK_STATE_COMPLETED"), TaskState::Completed),
        (json!(3), TaskState::Completed),
        (json!(3.0), TaskState::Completed),
        (json!(6), TaskState::InputRequired),
        (json!("input-required"), TaskState::InputRequired),
        (json!("auth-required"), TaskState::AuthRequired),
        (json!("TASK_STATE_FROM_THE_FUTURE"), TaskState::Unrecognized),
        (json!(42), TaskState::Unrecognized),
        (json!("unknown"), TaskState::Unrecognized),
    ] {
        let t = Task::from_json(&json!({"id":"t","status":{"state":v}})).unwrap();
        assert_eq!(t.status.state, want, "{v}");
    }
    for (v, want) in [
        (json!("ROLE_USER"), Role::User),
        (json!(1), Role::User),
        (json!(2), Role::Agent),
        (json!("agent"), Role::Agent),
        (json!("user"), Role::User),
        (json!("ROLE_MARTIAN"), Role::Unspecified),
    ] {
        let m =
            Message::from_json(&json!({"messageId":"m","role":v,"parts":[{"text":"x"}]})).unwrap();
        assert_eq!(m.role, want, "{v}");
    }
    assert!(TaskState::Completed.is_terminal() && TaskState::Rejected.is_terminal());
    assert!(TaskState::InputRequired.is_interrupted() && TaskState::AuthRequired.is_interrupted());
    assert!(TaskState::Submitted.is_active() && TaskState::Working.is_active());
    assert!(!TaskState::Unrecognized.is_terminal() && !TaskState::Unspecified.is_active());
}

#[test]
fn int32_fields_accept_integral_doubles_and_numeric_strings() {
    for v in [json!(10), json!(10.0), json!("10"), json!(1e1)] {
        let c = SendMessageConfiguration::from_json(&json!({ "historyLength": v })).unwrap();
        assert_eq!(c.history_length, Some(10), "{v}");
    }
    for v in [
        json!(1.5),
        json!("ten"),
        json!(true),
        json!(4_294_967_296_i64),
    ] {
        assert!(
            SendMessageConfiguration::from_json(&json!({ "historyLength": v })).is_err(),
            "{v}"
        );
    }
    // Absent stays absent; 0 is kept (optional int32 has presence).
    let c = SendMessageConfiguration::from_json(&json!({})).unwrap();
    assert_eq!(c.history_length, None);
    let c = SendMessageConfiguration::from_json(&json!({"historyLength":0})).unwrap();
    assert_eq!(c.to_json(), json!({"historyLength":0}));
}

#[test]
fn empty_strings_are_absent_and_unknown_fields_are_ignored() {
    let m = Message::from_json(&json!({
        "messageId":"m","contextId":"","taskId":"","role":"ROLE_AGENT",
        "parts":[{"text":"x","filename":"","mediaType":""}],
        "extensions":[],"referenceTaskIds":[],"someFutureField":{"a":1},"kind":"message"
    }))
    .unwrap();
    assert_eq!(m.context_id, None);
    assert_eq!(m.task_id, None);
    assert_eq!(m.parts[0].media_type, None);
    assert_eq!(
        m.to_json(),
        json!({"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"x"}]})
    );
}

#[test]
fn defaults_are_omitted_on_output() {
    let c = SendMessageConfiguration::default();
    assert_eq!(
        c.to_json(),
        json!({}),
        "no empty acceptedOutputModes, no false"
    );
    let m = Message {
        message_id: "m".into(),
        parts: vec![Part::text("hi")],
        role: Role::User,
        ..Message::default()
    };
    assert_eq!(
        m.to_json(),
        json!({"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]})
    );
}

#[test]
fn wrong_types_name_the_path() {
    let e = Task::from_json(
        &json!({"id":"t","status":{"state":"TASK_STATE_WORKING","message":{"parts":"x"}}}),
    )
    .unwrap_err();
    assert_eq!(e.path, "$.status.message.parts");
    assert_eq!(
        e.kind,
        DecodeErrorKind::WrongType {
            expected: "array",
            found: "string"
        }
    );
}

#[test]
fn v03_shapes_are_read_and_never_written() {
    let task = json!({"kind":"task","id":"t","contextId":"c","status":{"state":"input-required",
        "message":{"kind":"message","messageId":"m","role":"agent","parts":[
            {"kind":"text","text":"hi"},
            {"kind":"file","file":{"bytes":"aGk=","mimeType":"text/plain","name":"a.txt"}},
            {"kind":"file","file":{"uri":"https://x/y","mimeType":"application/pdf"}},
            {"kind":"data","data":{"a":1}}]}}});
    let StreamResponse::Task(t) = StreamResponse::from_json(&task).unwrap() else {
        panic!()
    };
    assert_eq!(t.status.state, TaskState::InputRequired);
    let m = t.status.message.as_ref().unwrap();
    assert_eq!(m.role, Role::Agent);
    assert_eq!(m.parts[1].content, PartContent::Raw(b"hi".to_vec()));
    assert_eq!(m.parts[1].filename.as_deref(), Some("a.txt"));
    assert_eq!(m.parts[2].content, PartContent::Url("https://x/y".into()));
    assert_eq!(m.parts[2].media_type.as_deref(), Some("application/pdf"));
    let out = serde_json::to_string(&t).unwrap();
    assert!(
        !out.contains("kind") && !out.contains("input-required") && !out.contains("\"agent\""),
        "{out}"
    );
    assert!(out.contains("TASK_STATE_INPUT_REQUIRED") && out.contains("ROLE_AGENT"));

    let su = json!({"kind":"status-update","taskId":"t","contextId":"c","final":true,
                    "status":{"state":"completed"}});
    assert!(
        matches!(StreamResponse::from_json(&su).unwrap(), StreamResponse::StatusUpdate(s) if s.status.state == TaskState::Completed)
    );
    let au = json!({"kind":"artifact-update","taskId":"t","append":false,"lastChunk":true,
                    "artifact":{"artifactId":"a","parts":[{"kind":"text","text":"x"}]}});
    assert!(
        matches!(StreamResponse::from_json(&au).unwrap(), StreamResponse::ArtifactUpdate(a) if a.last_chunk)
    );
    assert!(StreamResponse::from_json(&json!({"kind":"bogus"})).is_err());
}

#[test]
fn tr14_bare_payloads_are_normalised() {
    let bare_task = json!({"id":"t","status":{"state":"TASK_STATE_WORKING"}});
    assert!(matches!(
        StreamResponse::from_json(&bare_task).unwrap(),
        StreamResponse::Task(_)
    ));
    let bare_art = json!({"taskId":"t","artifact":{"artifactId":"a","parts":[{"text":"x"}]}});
    assert!(matches!(
        StreamResponse::from_json(&bare_art).unwrap(),
        StreamResponse::ArtifactUpdate(_)
    ));
    let bare_status = json!({"taskId":"t","status":{"state":"TASK_STATE_COMPLETED"}});
    assert!(matches!(
        StreamResponse::from_json(&bare_status).unwrap(),
        StreamResponse::StatusUpdate(_)
    ));
    let e = StreamResponse::from_json(&json!({"hello":"world"})).unwrap_err();
    assert_eq!(e.kind, DecodeErrorKind::NoPayload);
    let e = StreamResponse::from_json(&json!({"task":{"id":"t"},"message":{"messageId":"m"}}))
        .unwrap_err();
    assert!(matches!(e.kind, DecodeErrorKind::TwoPayloads { .. }));
}

#[test]
fn metadata_numbers_stay_doubles_and_empty_metadata_keeps_presence() {
    let m = Message::from_json(&json!({"messageId":"m","parts":[{"text":"x"}],
        "metadata":{"round":1.0,"list":[1,[2,3]]}}))
    .unwrap();
    assert_eq!(
        m.to_json()["metadata"],
        json!({"round":1.0,"list":[1,[2,3]]})
    );
    assert!(m.to_json()["metadata"]["round"].is_f64());
    let m =
        Message::from_json(&json!({"messageId":"m","parts":[{"text":"x"}],"metadata":{}})).unwrap();
    assert_eq!(m.metadata, Some(serde_json::Map::new()));
    assert_eq!(m.to_json()["metadata"], json!({}));
}
