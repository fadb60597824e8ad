//! Rules of the A2A v1.0 data model, stated against the JSON it writes and the values it reads:
//! the exact v1.0 form of parts, messages, artifacts, tasks and both update events (member
//! names, their order, what is left out when absent), the names and numbers of task states and
//! roles, which states are terminal, interrupted or active, the v0.3 shapes still read, and how
//! a stream item is recognised from a wrapper, a `kind` or a bare payload.

use a2at_core::a2a::{
    Artifact, DecodeErrorKind, Message, Part, PartContent, RemoteTaskStatus, Role,
    SendMessageConfiguration, SendMessageRequest, StreamResponse, Task, TaskArtifactUpdateEvent,
    TaskPage, TaskState, TaskStatusUpdateEvent,
};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// Every task state with its proto name, its number and its v0.3 lowercase names.
const STATES: [(TaskState, &str, i64, &[&str]); 9] = [
    (TaskState::Unspecified, "TASK_STATE_UNSPECIFIED", 0, &[]),
    (
        TaskState::Submitted,
        "TASK_STATE_SUBMITTED",
        1,
        &["submitted"],
    ),
    (TaskState::Working, "TASK_STATE_WORKING", 2, &["working"]),
    (
        TaskState::Completed,
        "TASK_STATE_COMPLETED",
        3,
        &["completed"],
    ),
    (TaskState::Failed, "TASK_STATE_FAILED", 4, &["failed"]),
    (
        TaskState::Canceled,
        "TASK_STATE_CANCELED",
        5,
        &["canceled", "cancelled"],
    ),
    (
        TaskState::InputRequired,
        "TASK_STATE_INPUT_REQUIRED",
        6,
        &["input-required"],
    ),
    (TaskState::Rejected, "TASK_STATE_REJECTED", 7, &["rejected"]),
    (
        TaskState::AuthRequired,
        "TASK_STATE_AUTH_REQUIRED",
        8,
        &["auth-required"],
    ),
];

const ALL_STATES: [TaskState; 10] = [
    TaskState::Unspecified,
    TaskState::Submitted,
    TaskState::Working,
    TaskState::Completed,
    TaskState::Failed,
    TaskState::Canceled,
    TaskState::InputRequired,
    TaskState::Rejected,
    TaskState::AuthRequired,
    TaskState::Unrecognized,
];

/// The JSON text as written to a serializer: member order is part of the v1.0 form.
fn text<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap()
}

fn meta(k: &str, v: Value) -> Option<Map<String, Value>> {
    let mut m = Map::new();
    m.insert(k.to_owned(), v);
    Some(m)
}

fn state_of(v: Value) -> TaskState {
    Task::from_json(&json!({"id":"t","status":{"state":v}}))
        .unwrap()
        .status
        .state
}

/// Each state has one proto name and one number, and reading either gives the state back, so
/// a state written by one side is the state the other side acts on. An unspecified state is
/// read from its name as unspecified, not as a state this client does not know.
#[test]
fn every_task_state_is_read_back_from_its_name_and_its_number() {
    for (state, name, number, _) in STATES {
        assert_eq!(state.as_str(), name);
        assert_eq!(state.to_string(), name);
        assert_eq!(TaskState::from_name(name), state, "{name}");
        assert_eq!(TaskState::from_number(number), state, "{number}");
        assert_eq!(state_of(json!(name)), state, "{name}");
        assert_eq!(state_of(json!(number)), state, "{number}");
    }
    assert_eq!(
        TaskState::from_name("TASK_STATE_UNSPECIFIED"),
        TaskState::Unspecified
    );
    assert_eq!(TaskState::Unrecognized.as_str(), "TASK_STATE_UNRECOGNIZED");
    assert_eq!(
        TaskState::Unrecognized.to_string(),
        "TASK_STATE_UNRECOGNIZED"
    );
    assert_eq!(TaskState::default(), TaskState::Unspecified);
}

/// The v0.3 lowercase state names (and the British `cancelled`) read as their v1.0 states, so
/// an older agent's task is followed like a current one; they are never written.
#[test]
fn v03_state_names_read_as_their_v1_states() {
    for (state, _, _, old) in STATES {
        for name in old {
            assert_eq!(TaskState::from_name(name), state, "{name}");
            assert_eq!(state_of(json!(name)), state, "{name}");
        }
    }
    for name in [
        "unknown",
        "",
        "COMPLETED",
        "Completed",
        "task_state_completed",
    ] {
        assert_eq!(
            TaskState::from_name(name),
            TaskState::Unrecognized,
            "{name}"
        );
    }
}

/// A state that is absent reads as unspecified; a number that is not an integer reads as a
/// state this client does not know (the task is not refused); anything but a name or number
/// is a decoding error at the state's path.
#[test]
fn an_absent_state_is_unspecified_and_a_fractional_number_unrecognized() {
    let t = Task::from_json(&json!({"id":"t","status":{}})).unwrap();
    assert_eq!(t.status.state, TaskState::Unspecified);
    let t = Task::from_json(&json!({"id":"t"})).unwrap();
    assert_eq!(t.status, RemoteTaskStatus::default());
    assert_eq!(state_of(json!(2.5)), TaskState::Unrecognized);
    assert_eq!(state_of(json!(-1)), TaskState::Unrecognized);
    assert_eq!(state_of(json!(9)), TaskState::Unrecognized);
    let e = Task::from_json(&json!({"id":"t","status":{"state":true}})).unwrap_err();
    assert_eq!(e.path, "$.status.state");
    assert_eq!(
        e.kind,
        DecodeErrorKind::WrongType {
            expected: "enum name or number",
            found: "boolean"
        }
    );
}

/// Which states end a task, wait for the client (input or authentication) and are still
/// running decides what the engine does next: each state is in exactly the classes listed,
/// and in no other.
#[test]
fn each_state_is_terminal_interrupted_or_active_exactly_as_listed() {
    use TaskState::*;
    for (state, terminal, interrupted, active) in [
        (Unspecified, false, false, false),
        (Submitted, false, false, true),
        (Working, false, false, true),
        (Completed, true, false, false),
        (Failed, true, false, false),
        (Canceled, true, false, false),
        (InputRequired, false, true, false),
        (Rejected, true, false, false),
        (AuthRequired, false, true, false),
        (Unrecognized, false, false, false),
    ] {
        assert_eq!(state.is_terminal(), terminal, "{state} terminal");
        assert_eq!(state.is_interrupted(), interrupted, "{state} interrupted");
        assert_eq!(state.is_active(), active, "{state} active");
    }
}

proptest! {
    /// Any name that is not a state name (v1.0 or v0.3) reads as unrecognized, never as a
    /// known state.
    #[test]
    fn any_other_state_name_is_unrecognized(name in "[A-Za-z_-]{0,30}") {
        let known = STATES
            .iter()
            .any(|(_, n, _, old)| *n == name || old.contains(&name.as_str()));
        prop_assume!(!known);
        prop_assert_eq!(TaskState::from_name(&name), TaskState::Unrecognized);
        prop_assert_eq!(state_of(json!(name)), TaskState::Unrecognized);
    }

    /// Any number outside 0..=8 reads as unrecognized.
    #[test]
    fn any_other_state_number_is_unrecognized(n in any::<i32>()) {
        prop_assume!(!(0..=8).contains(&n));
        prop_assert_eq!(TaskState::from_number(i64::from(n)), TaskState::Unrecognized);
        prop_assert_eq!(state_of(json!(n)), TaskState::Unrecognized);
    }

    /// Every state written in a status is read back as the same state (unrecognized is
    /// written under a name no agent knows, so it also reads back as unrecognized).
    #[test]
    fn every_state_round_trips_through_a_status(i in 0usize..10) {
        let state = ALL_STATES[i];
        let status = RemoteTaskStatus { state, ..RemoteTaskStatus::default() };
        prop_assert_eq!(RemoteTaskStatus::from_json(&status.to_json()).unwrap().state, state);
        let back: RemoteTaskStatus = serde_json::from_str(&text(&status)).unwrap();
        prop_assert_eq!(back.state, state);
    }
}

/// Roles are written by proto name and read by name, v0.3 lowercase name, capitals or number;
/// an unknown name or number reads as unspecified and an unspecified role is not written.
#[test]
fn roles_are_read_by_name_or_number_and_unspecified_is_not_written() {
    assert_eq!(Role::Unspecified.as_str(), "ROLE_UNSPECIFIED");
    assert_eq!(Role::User.as_str(), "ROLE_USER");
    assert_eq!(Role::Agent.as_str(), "ROLE_AGENT");
    let role = |v: Value| {
        Message::from_json(&json!({"messageId":"m","role":v}))
            .unwrap()
            .role
    };
    for (v, want) in [
        (json!("ROLE_USER"), Role::User),
        (json!("user"), Role::User),
        (json!("USER"), Role::User),
        (json!("ROLE_AGENT"), Role::Agent),
        (json!("agent"), Role::Agent),
        (json!("AGENT"), Role::Agent),
        (json!("ROLE_UNSPECIFIED"), Role::Unspecified),
        (json!("Agent"), Role::Unspecified),
        (json!(0), Role::Unspecified),
        (json!(1), Role::User),
        (json!(2), Role::Agent),
        (json!(3), Role::Unspecified),
        (Value::Null, Role::Unspecified),
    ] {
        assert_eq!(role(v.clone()), want, "{v}");
    }
    let e = Message::from_json(&json!({"messageId":"m","role":1.5})).unwrap_err();
    assert_eq!(e.path, "$.role");
    assert!(matches!(e.kind, DecodeErrorKind::BadInteger(_)), "{e}");
    let e = Message::from_json(&json!({"messageId":"m","role":[]})).unwrap_err();
    assert_eq!(e.path, "$.role");
    assert_eq!(
        e.kind,
        DecodeErrorKind::WrongType {
            expected: "enum name or number",
            found: "array"
        }
    );
    for (r, want) in [
        (Role::Unspecified, r#"{"messageId":"m"}"#),
        (Role::User, r#"{"messageId":"m","role":"ROLE_USER"}"#),
        (Role::Agent, r#"{"messageId":"m","role":"ROLE_AGENT"}"#),
    ] {
        let m = Message {
            message_id: "m".into(),
            role: r,
            ..Message::default()
        };
        assert_eq!(text(&m), want);
    }
}

/// The part constructors make exactly one content member; a URL or raw part keeps the media
/// type it is given (an agent needs it to open a file), and text and data parts carry none.
#[test]
fn constructed_parts_write_their_content_and_keep_their_media_type() {
    let pdf = Some("application/pdf".to_owned());
    assert_eq!(text(&Part::text("hi")), r#"{"text":"hi"}"#);
    assert_eq!(text(&Part::data(json!({"a":[1]}))), r#"{"data":{"a":[1]}}"#);
    let u = Part::url("https://x/y.pdf", pdf.clone());
    assert_eq!(u.content, PartContent::Url("https://x/y.pdf".into()));
    assert_eq!(u.media_type, pdf);
    assert_eq!(
        text(&u),
        r#"{"url":"https://x/y.pdf","mediaType":"application/pdf"}"#
    );
    let r = Part::raw(b"hi".to_vec(), pdf.clone());
    assert_eq!(r.content, PartContent::Raw(b"hi".to_vec()));
    assert_eq!(r.media_type, pdf);
    assert_eq!(text(&r), r#"{"raw":"aGk=","mediaType":"application/pdf"}"#);
    assert_eq!(Part::url("u", None).media_type, None);
    assert_eq!(text(&Part::raw(Vec::new(), None)), r#"{"raw":""}"#);
    for p in [
        Part::text("x"),
        Part::data(json!(1)),
        Part::url("u", pdf.clone()),
        Part::raw(b"x".to_vec(), pdf.clone()),
    ] {
        assert_eq!(p.metadata, None);
        assert_eq!(p.filename, None);
    }
    assert_eq!(Part::text("x").media_type, None);
    assert_eq!(Part::data(json!(1)).media_type, None);
}

/// A part's members are written in proto order: content, metadata, filename, mediaType.
#[test]
fn a_part_writes_content_metadata_filename_then_media_type() {
    let p = Part {
        content: PartContent::Text("t".into()),
        metadata: meta("k", json!("v")),
        filename: Some("a.txt".into()),
        media_type: Some("text/plain".into()),
    };
    assert_eq!(
        text(&p),
        r#"{"text":"t","metadata":{"k":"v"},"filename":"a.txt","mediaType":"text/plain"}"#
    );
    assert_eq!(p.to_json().to_string(), text(&p));
}

/// Only a text part has text; `text_of` joins the text parts one per line, in order, and
/// skips the others, so a reply's readable text is exactly what the agent wrote as text.
#[test]
fn text_of_joins_only_the_text_parts_one_per_line() {
    assert_eq!(Part::text("a b").as_text(), Some("a b"));
    assert_eq!(Part::text("").as_text(), Some(""));
    assert_eq!(Part::data(json!("a")).as_text(), None);
    assert_eq!(Part::url("a", None).as_text(), None);
    assert_eq!(Part::raw(b"a".to_vec(), None).as_text(), None);
    let parts = [
        Part::text("first"),
        Part::data(json!({"x":1})),
        Part::url("https://u", None),
        Part::text("second"),
        Part::raw(b"r".to_vec(), None),
        Part::text("third"),
    ];
    assert_eq!(Part::text_of(&parts), "first\nsecond\nthird");
    assert_eq!(Part::text_of(&[]), "");
    assert_eq!(Part::text_of(&[Part::data(json!(1))]), "");
    assert_eq!(Part::text_of(&[Part::text("only")]), "only");
}

fn opt_text() -> impl Strategy<Value = Option<String>> {
    prop::option::of("[a-z/.]{1,8}")
}

fn arb_content() -> impl Strategy<Value = PartContent> {
    prop_oneof![
        ".{0,12}".prop_map(PartContent::Text),
        prop::collection::vec(any::<u8>(), 0..16).prop_map(PartContent::Raw),
        "[a-z:/.]{0,12}".prop_map(PartContent::Url),
        prop_oneof![
            Just(json!({"a":[1,"b"]})),
            Just(json!("s")),
            Just(json!(true)),
            Just(json!([])),
            any::<i32>().prop_map(|n| json!(n)),
        ]
        .prop_map(PartContent::Data),
    ]
}

fn arb_part() -> impl Strategy<Value = Part> {
    (
        arb_content(),
        prop::option::of("[a-z]{0,4}"),
        opt_text(),
        opt_text(),
    )
        .prop_map(|(content, m, filename, media_type)| Part {
            content,
            metadata: m.map(|k| meta(&k, json!(k)).unwrap()),
            filename,
            media_type,
        })
}

proptest! {
    /// Any part (any content kind, with or without metadata, file name and media type) is read
    /// back from its JSON as the same part, by `from_json` and by serde alike.
    #[test]
    fn a_parts_json_round_trips(p in arb_part()) {
        prop_assert_eq!(Part::from_json(&p.to_json()).unwrap(), p.clone());
        let back: Part = serde_json::from_str(&text(&p)).unwrap();
        prop_assert_eq!(back, p);
    }

    /// Any message round-trips through its JSON, whatever its role and parts.
    #[test]
    fn a_messages_json_round_trips(
        parts in prop::collection::vec(arb_part(), 0..4),
        role in 0usize..3,
        context_id in opt_text(),
        task_id in opt_text(),
        ext in prop::collection::vec("[a-z]{1,4}", 0..3),
    ) {
        let m = Message {
            message_id: "m".into(),
            context_id,
            task_id,
            role: [Role::Unspecified, Role::User, Role::Agent][role],
            parts,
            metadata: None,
            extensions: ext.clone(),
            reference_task_ids: ext,
        };
        prop_assert_eq!(Message::from_json(&m.to_json()).unwrap(), m.clone());
        let back: Message = serde_json::from_str(&text(&m)).unwrap();
        prop_assert_eq!(back, m);
    }
}

/// A content member of the wrong JSON type is refused at its own path, so the agent's error
/// points at the offending member.
#[test]
fn a_content_member_of_the_wrong_type_is_refused_at_its_path() {
    for (part, path) in [
        (json!({"text":1}), "$.text"),
        (json!({"raw":1}), "$.raw"),
        (json!({"url":1}), "$.url"),
        (json!({"file":{"bytes":1}}), "$.file.bytes"),
        (json!({"file":{"uri":1}}), "$.file.uri"),
        (json!({"text":"x","filename":1}), "$.filename"),
        (json!({"text":"x","mediaType":1}), "$.mediaType"),
        (json!({"text":"x","metadata":1}), "$.metadata"),
        (json!({"file":{"uri":"u","mimeType":1}}), "$.file.mimeType"),
        (json!({"file":{"uri":"u","name":1}}), "$.file.name"),
    ] {
        let e = Part::from_json(&part).unwrap_err();
        assert_eq!(e.path, path, "{part}");
        assert!(
            matches!(e.kind, DecodeErrorKind::WrongType { .. }),
            "{part}: {e}"
        );
    }
    let e = Part::from_json(&json!("text")).unwrap_err();
    assert_eq!(e.path, "$");
    let e = Part::from_json(&json!({"file":"x"})).unwrap_err();
    assert_eq!(e.path, "$.file");
    let e = Part::from_json(&json!({"file":{"bytes":"!!"}})).unwrap_err();
    assert_eq!(
        (e.path.as_str(), e.kind),
        ("$.file.bytes", DecodeErrorKind::BadBase64)
    );
    let e = Part::from_json(&json!({"file":{"mimeType":"a/b"}})).unwrap_err();
    assert_eq!(
        (e.path.as_str(), e.kind),
        ("$.file", DecodeErrorKind::FileWithoutContent)
    );
}

/// A `null` content member counts as absent, like every other member; a part needs one
/// content member that is present.
#[test]
fn a_null_content_member_counts_as_absent() {
    let e = Part::from_json(&json!({"data":null})).unwrap_err();
    assert_eq!(e.kind, DecodeErrorKind::PartWithoutContent);
    let p = Part::from_json(&json!({"data":null,"text":"t"})).unwrap();
    assert_eq!(p, Part::text("t"));
    let p = Part::from_json(&json!({"data":false})).unwrap();
    assert_eq!(p, Part::data(json!(false)));
}

/// Two content members are refused, naming both in proto order (text, raw, url, data, then
/// the v0.3 file), so a oneof violation is never half-read.
#[test]
fn two_content_members_are_refused_naming_both_in_order() {
    let names = ["text", "raw", "url", "data", "file"];
    let value = |n: &str| match n {
        "text" | "url" => json!("x"),
        "raw" => json!("AA=="),
        "data" => json!({}),
        _ => json!({"uri":"u"}),
    };
    for (i, first) in names.iter().enumerate() {
        for second in &names[i + 1..] {
            let mut m = Map::new();
            m.insert((*second).to_owned(), value(second));
            m.insert((*first).to_owned(), value(first));
            let e = Part::from_json(&Value::Object(m)).unwrap_err();
            assert_eq!(e.path, "$");
            assert_eq!(
                e.kind,
                DecodeErrorKind::PartWithTwoContents { first, second },
                "{first} {second}"
            );
        }
    }
}

/// A v0.3 file part reads as a raw or URL part; its `mimeType` and `name` are used only when
/// the v1.0 `mediaType` and `filename` are absent, and `bytes` wins over `uri`.
#[test]
fn a_v03_file_part_fills_only_the_missing_media_type_and_file_name() {
    let p = Part::from_json(&json!({"kind":"file","file":{"bytes":"aGk=","uri":"u",
        "mimeType":"text/plain","name":"a.txt"}}))
    .unwrap();
    assert_eq!(p.content, PartContent::Raw(b"hi".to_vec()));
    assert_eq!(p.media_type.as_deref(), Some("text/plain"));
    assert_eq!(p.filename.as_deref(), Some("a.txt"));
    let p = Part::from_json(&json!({"mediaType":"application/pdf","filename":"b.pdf",
        "file":{"uri":"https://u","mimeType":"text/plain","name":"a.txt"}}))
    .unwrap();
    assert_eq!(p.content, PartContent::Url("https://u".into()));
    assert_eq!(p.media_type.as_deref(), Some("application/pdf"));
    assert_eq!(p.filename.as_deref(), Some("b.pdf"));
    assert_eq!(
        text(&p),
        r#"{"url":"https://u","filename":"b.pdf","mediaType":"application/pdf"}"#
    );
    let p = Part::from_json(&json!({"file":{"uri":"u","metadata":{}},"metadata":{"k":1}})).unwrap();
    assert_eq!(p.metadata, meta("k", json!(1)));
    assert_eq!(p.media_type, None);
    assert_eq!(p.filename, None);
}

/// A message is written in proto order: messageId, contextId, taskId, role, parts, metadata,
/// extensions, referenceTaskIds; empty lists and absent members are left out.
#[test]
fn a_message_writes_its_members_in_proto_order() {
    let m = Message {
        message_id: "m1".into(),
        context_id: Some("c1".into()),
        task_id: Some("t1".into()),
        role: Role::Agent,
        parts: vec![Part::text("hi")],
        metadata: meta("k", json!(1)),
        extensions: vec!["urn:e".into()],
        reference_task_ids: vec!["t0".into()],
    };
    let want = r#"{"messageId":"m1","contextId":"c1","taskId":"t1","role":"ROLE_AGENT","parts":[{"text":"hi"}],"metadata":{"k":1},"extensions":["urn:e"],"referenceTaskIds":["t0"]}"#;
    assert_eq!(text(&m), want);
    assert_eq!(m.to_json().to_string(), want);
    assert_eq!(Message::from_json(&m.to_json()).unwrap(), m);
    assert_eq!(text(&Message::default()), "{}");
    let e = Message::from_json(&json!({"messageId":"m","extensions":[1]})).unwrap_err();
    assert_eq!(e.path, "$.extensions[0]");
}

/// An artifact is written as artifactId, name, description, parts, metadata, extensions;
/// every absent or empty member is left out.
#[test]
fn an_artifacts_v1_json_is_exact_and_omits_what_is_absent() {
    let a = Artifact {
        artifact_id: "a1".into(),
        name: Some("report".into()),
        description: Some("the report".into()),
        parts: vec![Part::text("x"), Part::data(json!({"n":1}))],
        metadata: meta("k", json!("v")),
        extensions: vec!["urn:x".into()],
    };
    let want = r#"{"artifactId":"a1","name":"report","description":"the report","parts":[{"text":"x"},{"data":{"n":1}}],"metadata":{"k":"v"},"extensions":["urn:x"]}"#;
    assert_eq!(text(&a), want);
    assert_eq!(a.to_json().to_string(), want);
    assert_eq!(Artifact::from_json(&a.to_json()).unwrap(), a);
    let back: Artifact = serde_json::from_str(want).unwrap();
    assert_eq!(back, a);
    let bare = Artifact {
        artifact_id: "a2".into(),
        ..Artifact::default()
    };
    assert_eq!(text(&bare), r#"{"artifactId":"a2"}"#);
    assert_eq!(bare.to_json(), json!({"artifactId":"a2"}));
    assert_eq!(
        Artifact::from_json(&json!({"artifactId":"a2"})).unwrap(),
        bare
    );
    assert_eq!(text(&Artifact::default()), "{}");
}

/// A status is written as state, message, timestamp; an unspecified state is not written.
#[test]
fn a_status_writes_state_message_timestamp_and_omits_an_unspecified_state() {
    let s = RemoteTaskStatus {
        state: TaskState::InputRequired,
        message: Some(Message {
            message_id: "m".into(),
            ..Message::default()
        }),
        timestamp: Some("2025-01-02T03:04:05Z".into()),
    };
    let want = r#"{"state":"TASK_STATE_INPUT_REQUIRED","message":{"messageId":"m"},"timestamp":"2025-01-02T03:04:05Z"}"#;
    assert_eq!(text(&s), want);
    assert_eq!(s.to_json().to_string(), want);
    assert_eq!(RemoteTaskStatus::from_json(&s.to_json()).unwrap(), s);
    assert_eq!(text(&RemoteTaskStatus::default()), "{}");
    let working = RemoteTaskStatus {
        state: TaskState::Working,
        ..RemoteTaskStatus::default()
    };
    assert_eq!(text(&working), r#"{"state":"TASK_STATE_WORKING"}"#);
    let e = RemoteTaskStatus::from_json(&json!({"message":{"messageId":1}})).unwrap_err();
    assert_eq!(e.path, "$.message.messageId");
}

/// A task is written as id, contextId, status, artifacts, history, metadata.
#[test]
fn a_tasks_v1_json_is_exact() {
    let t = Task {
        id: "t1".into(),
        context_id: Some("c1".into()),
        status: RemoteTaskStatus {
            state: TaskState::Completed,
            ..RemoteTaskStatus::default()
        },
        artifacts: vec![Artifact {
            artifact_id: "a".into(),
            ..Artifact::default()
        }],
        history: vec![Message {
            message_id: "m".into(),
            role: Role::User,
            ..Message::default()
        }],
        metadata: meta("k", json!(true)),
    };
    let want = r#"{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED"},"artifacts":[{"artifactId":"a"}],"history":[{"messageId":"m","role":"ROLE_USER"}],"metadata":{"k":true}}"#;
    assert_eq!(text(&t), want);
    assert_eq!(t.to_json().to_string(), want);
    assert_eq!(Task::from_json(&t.to_json()).unwrap(), t);
    let back: Task = serde_json::from_str(want).unwrap();
    assert_eq!(back, t);
    assert_eq!(text(&Task::default()), r#"{"status":{}}"#);
}

/// A status update is written as taskId, contextId, status, metadata (the v0.3 `final` is
/// neither written nor needed); absent members are left out, and a missing status reads as
/// the default status.
#[test]
fn a_status_updates_v1_json_is_exact_and_omits_what_is_absent() {
    let u = TaskStatusUpdateEvent {
        task_id: "t1".into(),
        context_id: Some("c1".into()),
        status: RemoteTaskStatus {
            state: TaskState::Working,
            timestamp: Some("2025-01-01T00:00:00Z".into()),
            ..RemoteTaskStatus::default()
        },
        metadata: meta("k", json!(2)),
    };
    let want = r#"{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING","timestamp":"2025-01-01T00:00:00Z"},"metadata":{"k":2}}"#;
    assert_eq!(text(&u), want);
    assert_eq!(u.to_json().to_string(), want);
    assert_eq!(TaskStatusUpdateEvent::from_json(&u.to_json()).unwrap(), u);
    let back: TaskStatusUpdateEvent = serde_json::from_str(want).unwrap();
    assert_eq!(back, u);
    let bare = TaskStatusUpdateEvent {
        task_id: "t2".into(),
        ..TaskStatusUpdateEvent::default()
    };
    assert_eq!(text(&bare), r#"{"taskId":"t2","status":{}}"#);
    assert_eq!(
        TaskStatusUpdateEvent::from_json(&json!({"taskId":"t2","final":true})).unwrap(),
        bare
    );
    let e =
        TaskStatusUpdateEvent::from_json(&json!({"taskId":"t","status":{"state":{}}})).unwrap_err();
    assert_eq!(e.path, "$.status.state");
}

/// An artifact update is written as taskId, contextId, artifact, append, lastChunk, metadata;
/// `append` and `lastChunk` are written only when true, and read as false when absent.
#[test]
fn an_artifact_updates_v1_json_is_exact_and_omits_what_is_absent() {
    let u = TaskArtifactUpdateEvent {
        task_id: "t1".into(),
        context_id: Some("c1".into()),
        artifact: Artifact {
            artifact_id: "a1".into(),
            parts: vec![Part::text("chunk")],
            ..Artifact::default()
        },
        append: true,
        last_chunk: true,
        metadata: meta("k", json!("v")),
    };
    let want = r#"{"taskId":"t1","contextId":"c1","artifact":{"artifactId":"a1","parts":[{"text":"chunk"}]},"append":true,"lastChunk":true,"metadata":{"k":"v"}}"#;
    assert_eq!(text(&u), want);
    assert_eq!(u.to_json().to_string(), want);
    assert_eq!(TaskArtifactUpdateEvent::from_json(&u.to_json()).unwrap(), u);
    let back: TaskArtifactUpdateEvent = serde_json::from_str(want).unwrap();
    assert_eq!(back, u);
    for (append, last_chunk, want) in [
        (false, false, r#"{"taskId":"t","artifact":{}}"#),
        (true, false, r#"{"taskId":"t","artifact":{},"append":true}"#),
        (
            false,
            true,
            r#"{"taskId":"t","artifact":{},"lastChunk":true}"#,
        ),
    ] {
        let u = TaskArtifactUpdateEvent {
            task_id: "t".into(),
            append,
            last_chunk,
            ..TaskArtifactUpdateEvent::default()
        };
        assert_eq!(text(&u), want);
        let read = TaskArtifactUpdateEvent::from_json(&serde_json::from_str(want).unwrap());
        assert_eq!(read.unwrap(), u);
    }
    let read = TaskArtifactUpdateEvent::from_json(&json!({"taskId":"t"})).unwrap();
    assert_eq!(read.artifact, Artifact::default());
    let e = TaskArtifactUpdateEvent::from_json(&json!({"taskId":"t","artifact":{"parts":{}}}))
        .unwrap_err();
    assert_eq!(e.path, "$.artifact.parts");
    let e = TaskArtifactUpdateEvent::from_json(&json!({"taskId":"t","append":"yes"})).unwrap_err();
    assert_eq!(e.path, "$.append");
}

fn sample_items() -> [StreamResponse; 4] {
    [
        StreamResponse::Task(Task {
            id: "t".into(),
            ..Task::default()
        }),
        StreamResponse::Message(Message {
            message_id: "m".into(),
            task_id: Some("t".into()),
            ..Message::default()
        }),
        StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: "t".into(),
            ..TaskStatusUpdateEvent::default()
        }),
        StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
            task_id: "t".into(),
            ..TaskArtifactUpdateEvent::default()
        }),
    ]
}

/// A stream item is written in its v1.0 wrapper, one member named for its kind, and read back
/// from that wrapper as the same item.
#[test]
fn stream_items_are_wrapped_in_a_member_named_for_their_kind() {
    let wants = [
        r#"{"task":{"id":"t","status":{}}}"#,
        r#"{"message":{"messageId":"m","taskId":"t"}}"#,
        r#"{"statusUpdate":{"taskId":"t","status":{}}}"#,
        r#"{"artifactUpdate":{"taskId":"t","artifact":{}}}"#,
    ];
    for (item, want) in sample_items().into_iter().zip(wants) {
        assert_eq!(text(&item), want);
        assert_eq!(item.to_json().to_string(), want);
        assert_eq!(StreamResponse::from_json(&item.to_json()).unwrap(), item);
        let back: StreamResponse = serde_json::from_str(want).unwrap();
        assert_eq!(back, item);
        assert_eq!(item.task_id(), Some("t"));
    }
    let standalone = StreamResponse::Message(Message {
        message_id: "m".into(),
        ..Message::default()
    });
    assert_eq!(standalone.task_id(), None);
    let other = StreamResponse::Task(Task {
        id: "x".into(),
        ..Task::default()
    });
    assert_eq!(other.task_id(), Some("x"));
}

/// An error inside a wrapped payload is reported under the wrapper's member.
#[test]
fn an_error_in_a_wrapped_payload_names_the_wrapper_member() {
    for (v, path) in [
        (json!({"task":{"id":1}}), "$.task.id"),
        (json!({"message":{"messageId":1}}), "$.message.messageId"),
        (
            json!({"statusUpdate":{"taskId":1}}),
            "$.statusUpdate.taskId",
        ),
        (
            json!({"artifactUpdate":{"taskId":1}}),
            "$.artifactUpdate.taskId",
        ),
    ] {
        assert_eq!(StreamResponse::from_json(&v).unwrap_err().path, path);
    }
    let e = StreamResponse::from_json(&json!([])).unwrap_err();
    assert_eq!(e.path, "$");
}

/// Two payload members are refused, naming both in the order task, message, statusUpdate,
/// artifactUpdate; a `null` payload member counts as absent.
#[test]
fn two_payload_members_are_refused_naming_both() {
    let keys = ["task", "message", "statusUpdate", "artifactUpdate"];
    for (i, first) in keys.iter().enumerate() {
        for second in &keys[i + 1..] {
            let mut m = Map::new();
            m.insert((*second).to_owned(), json!({}));
            m.insert((*first).to_owned(), json!({}));
            let e = StreamResponse::from_json(&Value::Object(m)).unwrap_err();
            assert_eq!(
                e.kind,
                DecodeErrorKind::TwoPayloads { first, second },
                "{first} {second}"
            );
            assert_eq!(e.path, "$");
        }
    }
    let item = StreamResponse::from_json(&json!({"task":null,"message":{"messageId":"m"}}));
    assert!(matches!(item.unwrap(), StreamResponse::Message(_)));
}

/// A v0.3 bare object is recognised by its `kind`, and an unknown kind is refused by name.
#[test]
fn a_v03_kind_names_the_item() {
    let item = StreamResponse::from_json(&json!({"kind":"message","messageId":"m"})).unwrap();
    assert_eq!(
        item,
        StreamResponse::Message(Message {
            message_id: "m".into(),
            ..Message::default()
        })
    );
    let item = StreamResponse::from_json(&json!({"kind":"task","id":"t"})).unwrap();
    assert!(matches!(item, StreamResponse::Task(t) if t.id == "t"));
    let item = StreamResponse::from_json(&json!({"kind":"status-update","taskId":"t"})).unwrap();
    assert!(matches!(item, StreamResponse::StatusUpdate(_)));
    let item = StreamResponse::from_json(&json!({"kind":"artifact-update","taskId":"t"})).unwrap();
    assert!(matches!(item, StreamResponse::ArtifactUpdate(_)));
    // The kind decides even when the members would suggest another item.
    let item =
        StreamResponse::from_json(&json!({"kind":"message","messageId":"m","id":"t","status":{}}))
            .unwrap();
    assert!(matches!(item, StreamResponse::Message(_)));
    let e = StreamResponse::from_json(&json!({"kind":"statusUpdate","taskId":"t"})).unwrap_err();
    assert_eq!(e.path, "$.kind");
    assert_eq!(e.kind, DecodeErrorKind::UnknownKind("statusUpdate".into()));
}

/// A bare payload is recognised only by both of its members: `id`+`status` a task,
/// `artifact`+`taskId` an artifact update, `status`+`taskId` a status update,
/// `messageId`+`parts` a message. One member alone is no payload.
#[test]
fn a_bare_payload_is_recognised_only_by_both_of_its_members() {
    let kind = |v: Value| match StreamResponse::from_json(&v) {
        Ok(StreamResponse::Task(_)) => "task",
        Ok(StreamResponse::Message(_)) => "message",
        Ok(StreamResponse::StatusUpdate(_)) => "statusUpdate",
        Ok(StreamResponse::ArtifactUpdate(_)) => "artifactUpdate",
        Err(e) if e.kind == DecodeErrorKind::NoPayload => "none",
        Err(e) => panic!("{v}: {e}"),
    };
    for (v, want) in [
        (json!({"id":"t","status":{}}), "task"),
        (json!({"artifact":{},"taskId":"t"}), "artifactUpdate"),
        (json!({"status":{},"taskId":"t"}), "statusUpdate"),
        (json!({"messageId":"m","parts":[]}), "message"),
        // Precedence when the members of two kinds are present.
        (json!({"id":"t","status":{},"taskId":"t"}), "task"),
        (
            json!({"artifact":{},"status":{},"taskId":"t"}),
            "artifactUpdate",
        ),
        (
            json!({"status":{},"taskId":"t","messageId":"m","parts":[]}),
            "statusUpdate",
        ),
        // One member alone, or members of two different kinds.
        (json!({"id":"t"}), "none"),
        (json!({"status":{}}), "none"),
        (json!({"artifact":{}}), "none"),
        (json!({"taskId":"t"}), "none"),
        (json!({"messageId":"m"}), "none"),
        (json!({"parts":[]}), "none"),
        (json!({"id":"t","artifact":{}}), "none"),
        (json!({"id":"t","parts":[]}), "none"),
        (json!({"artifact":{},"messageId":"m"}), "none"),
        (json!({"status":{},"parts":[]}), "none"),
        (json!({"status":{},"messageId":"m"}), "none"),
        (json!({"id":"t","status":null}), "none"),
        (json!({}), "none"),
    ] {
        assert_eq!(kind(v.clone()), want, "{v}");
    }
    let item = StreamResponse::from_json(&json!({"messageId":"m","parts":[{"text":"x"}]}));
    assert_eq!(
        item.unwrap(),
        StreamResponse::Message(Message {
            message_id: "m".into(),
            parts: vec![Part::text("x")],
            ..Message::default()
        })
    );
}

/// `returnImmediately` wins; without it the v0.3 `blocking:false` means return immediately
/// and `blocking:true` (or nothing) means wait; only true is written.
#[test]
fn blocking_false_reads_as_return_immediately() {
    let read = |v: Value| {
        SendMessageConfiguration::from_json(&v)
            .unwrap()
            .return_immediately
    };
    assert!(read(json!({"blocking":false})));
    assert!(!read(json!({"blocking":true})));
    assert!(!read(json!({})));
    assert!(read(json!({"returnImmediately":true,"blocking":true})));
    assert!(!read(json!({"returnImmediately":false,"blocking":false})));
    let c = SendMessageConfiguration {
        accepted_output_modes: vec!["text/plain".into()],
        history_length: Some(3),
        return_immediately: true,
    };
    let want =
        r#"{"acceptedOutputModes":["text/plain"],"historyLength":3,"returnImmediately":true}"#;
    assert_eq!(text(&c), want);
    assert_eq!(c.to_json().to_string(), want);
    assert_eq!(
        SendMessageConfiguration::from_json(&c.to_json()).unwrap(),
        c
    );
    assert_eq!(text(&SendMessageConfiguration::default()), "{}");
}

/// A send request needs a message; its tenant is written first, and `to_json_with_tenant`
/// writes the given tenant in place of its own (or none).
#[test]
fn a_send_request_writes_its_tenant_first_and_needs_a_message() {
    let r = SendMessageRequest {
        tenant: Some("acme".into()),
        message: Message {
            message_id: "m".into(),
            ..Message::default()
        },
        configuration: Some(SendMessageConfiguration {
            return_immediately: true,
            ..SendMessageConfiguration::default()
        }),
        metadata: meta("k", json!(1)),
    };
    let want = r#"{"tenant":"acme","message":{"messageId":"m"},"configuration":{"returnImmediately":true},"metadata":{"k":1}}"#;
    assert_eq!(text(&r), want);
    assert_eq!(r.to_json().to_string(), want);
    assert_eq!(SendMessageRequest::from_json(&r.to_json()).unwrap(), r);
    let back: SendMessageRequest = serde_json::from_str(want).unwrap();
    assert_eq!(back, r);
    assert_eq!(
        r.to_json_with_tenant(Some("other")).to_string(),
        want.replace("acme", "other")
    );
    assert_eq!(
        r.to_json_with_tenant(None).to_string(),
        want.replace(r#""tenant":"acme","#, "")
    );
    let e = SendMessageRequest::from_json(&json!({"tenant":"acme"})).unwrap_err();
    assert_eq!(
        (e.path.as_str(), e.kind),
        ("$.message", DecodeErrorKind::Missing)
    );
    let e = SendMessageRequest::from_json(&json!({"message":{},"configuration":{"blocking":1}}))
        .unwrap_err();
    assert_eq!(e.path, "$.configuration.blocking");
    let r = SendMessageRequest::from_json(&json!({"message":{"messageId":"m"}})).unwrap();
    assert_eq!((r.tenant, r.configuration, r.metadata), (None, None, None));
}

/// A ListTasks page reads its tasks and paging; the printed defaults (`""`, `0`, `[]`) read as
/// absent.
#[test]
fn a_task_page_reads_tasks_and_paging_and_printed_defaults_as_absent() {
    let p = TaskPage::from_json(&json!({"tasks":[{"id":"a"},{"id":"b"}],
        "nextPageToken":"n2","pageSize":2,"totalSize":5}))
    .unwrap();
    assert_eq!(
        p.tasks.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(),
        ["a", "b"]
    );
    assert_eq!(p.next_page_token.as_deref(), Some("n2"));
    assert_eq!((p.page_size, p.total_size), (Some(2), Some(5)));
    let p = TaskPage::from_json(&json!({"tasks":[],"nextPageToken":""})).unwrap();
    assert_eq!(p, TaskPage::default());
    let e = TaskPage::from_json(&json!({"tasks":[{"id":1}]})).unwrap_err();
    assert_eq!(e.path, "$.tasks[0].id");
}
