//! The response decoder reads bytes into its own borrowed JSON tree, and the types write
//! themselves straight to bytes. Both must agree exactly with the `serde_json::Value` forms the
//! public API offers (`from_json`, `to_json`): the same types, the same errors with the same
//! paths, the same bytes.

mod common;

use a2at_core::a2a::{
    Binding, CallKind, ResponseItem, SendMessageConfiguration, SendMessageRequest, StreamResponse,
    Task,
};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// What the decoder must answer for a 2xx body, computed the slow way: bytes to `Value`, then
/// the public `from_json` of the payload. `None` when the body is not a plain payload (not
/// JSON, not an object, or an `error` envelope), which other tests cover.
fn expected(kind: CallKind, payload: &Value) -> Option<Result<StreamResponse, String>> {
    let obj = payload.as_object()?;
    if obj.contains_key("error") {
        return None;
    }
    let decoded = match kind {
        CallKind::GetTask if !obj.contains_key("task") => {
            Task::from_json(payload).map(StreamResponse::Task)
        }
        _ => StreamResponse::from_json(payload),
    };
    Some(decoded.map_err(|e| format!("invalid A2A payload at {e}")))
}

/// A REST `SendMessage` answer with a 200 status, fed in chunks of `chunk` bytes.
fn send_message_rest(headers: &[(String, String)], body: &[u8], chunk: usize) -> Vec<ResponseItem> {
    common::decode_with(
        Binding::HttpJson,
        CallKind::SendMessage,
        "7",
        200,
        headers,
        body,
        chunk,
    )
}

/// The first item the decoder produced, as the same `Result` shape.
fn first(items: &[ResponseItem]) -> Result<StreamResponse, String> {
    match items.first() {
        Some(ResponseItem::Event(sr)) => Ok(sr.clone()),
        Some(ResponseItem::Malformed(e)) => Err(e.message.clone()),
        other => panic!("unexpected first item {other:?}"),
    }
}

/// Decodes `body` on every JSON path the decoder has (REST unary, JSON-RPC unary, REST SSE,
/// JSON-RPC SSE) and checks each against the `Value` reading of the same payload.
fn check_all_paths(kind: CallKind, body: &[u8]) -> Result<(), TestCaseError> {
    let Ok(payload) = serde_json::from_slice::<Value>(body) else {
        return Ok(());
    };
    let Some(want) = expected(kind, &payload) else {
        return Ok(());
    };
    let json = [("content-type".to_owned(), "application/json".to_owned())];
    let sse = [("content-type".to_owned(), "text/event-stream".to_owned())];
    let rest = common::decode_with(Binding::HttpJson, kind, "7", 200, &json, body, 5);
    prop_assert_eq!(&first(&rest), &want, "REST unary");

    let text = String::from_utf8_lossy(body);
    let wrapped = format!(r#"{{"jsonrpc":"2.0","id":"7","result":{text}}}"#);
    let rpc = common::decode_with(
        Binding::JsonRpc,
        kind,
        "7",
        200,
        &json,
        wrapped.as_bytes(),
        5,
    );
    prop_assert_eq!(&first(&rpc), &want, "JSON-RPC unary");

    if kind == CallKind::SendStreamingMessage && !text.contains(['\n', '\r']) {
        let event = format!("data: {text}\n\n");
        let rest_sse =
            common::decode_with(Binding::HttpJson, kind, "7", 200, &sse, event.as_bytes(), 5);
        prop_assert_eq!(&first(&rest_sse), &want, "REST SSE");
        let event = format!("data: {wrapped}\n\n");
        let rpc_sse =
            common::decode_with(Binding::JsonRpc, kind, "7", 200, &sse, event.as_bytes(), 5);
        prop_assert_eq!(&first(&rpc_sse), &want, "JSON-RPC SSE");
    }
    Ok(())
}

#[test]
fn repeated_member_names_read_as_the_last_value_like_a_value_map() {
    let bodies: [&[u8]; 5] = [
        br#"{"task":{"id":"a","id":"b","status":{"state":"TASK_STATE_WORKING"}}}"#,
        br#"{"task":{"id":"a"},"task":{"id":"b","status":{"state":3}}}"#,
        br#"{"message":{"messageId":"m","parts":[{"text":"t"}],"metadata":{"a":1,"b":2,"a":{"c":[3]}}}}"#,
        br#"{"task":{"id":"a","status":null,"status":{"state":"TASK_STATE_FAILED"}}}"#,
        br#"{"task":{"id":"a"},"task":null}"#,
    ];
    for body in bodies {
        for kind in [
            CallKind::SendMessage,
            CallKind::SendStreamingMessage,
            CallKind::GetTask,
        ] {
            check_all_paths(kind, body).unwrap();
        }
    }
    // The last `id` wins, and the metadata keeps the first position of a repeated name.
    let items = send_message_rest(&[], bodies[0], 64);
    let Ok(StreamResponse::Task(t)) = first(&items) else {
        panic!("{items:?}")
    };
    assert_eq!(t.id, "b");
    let items = send_message_rest(&[], bodies[2], 64);
    let Ok(StreamResponse::Message(m)) = first(&items) else {
        panic!("{items:?}")
    };
    let meta = m.metadata.unwrap();
    assert_eq!(meta.keys().collect::<Vec<_>>(), ["a", "b"]);
    assert_eq!(meta["a"], json!({"c": [3]}));
}

#[test]
fn escaped_names_and_strings_read_like_plain_ones() {
    let body = br#"{"t\u0061sk":{"id":"x\n\"y\u00e9","contextId":"c","st\u0061tus":{"state":"TASK_STATE_COMPLETED","message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"\ud83d\ude00 ok"}]}}}}"#;
    check_all_paths(CallKind::SendMessage, body).unwrap();
    let items = send_message_rest(&[], body, 3);
    let Ok(StreamResponse::Task(t)) = first(&items) else {
        panic!("{items:?}")
    };
    assert_eq!(t.id, "x\n\"y\u{e9}");
    let status_text = t.status.message.as_ref().map(|m| m.parts[0].as_text());
    assert_eq!(status_text, Some(Some("\u{1f600} ok")));
}

#[test]
fn numbers_read_like_a_value_tree() {
    // u64 beyond i64, integral doubles, numeric strings, and floats JSON cannot keep exactly.
    let bodies: [&[u8]; 5] = [
        br#"{"task":{"id":"a","status":{"state":18446744073709551615}}}"#,
        br#"{"task":{"id":"a","status":{"state":3.0}}}"#,
        br#"{"message":{"messageId":"m","role":"2","parts":[{"data":[1e300,-0.0,12345678901234567890]}]}}"#,
        br#"{"message":{"messageId":"m","role":2.5,"parts":[{"text":"t"}]}}"#,
        br#"{"message":{"messageId":"m","role":1e400,"parts":[{"text":"t"}]}}"#,
    ];
    for body in bodies {
        check_all_paths(CallKind::SendMessage, body).unwrap();
    }
}

#[test]
fn a_body_that_is_not_json_names_the_parse_error() {
    let json = [("content-type".to_owned(), "application/json".to_owned())];
    for (body, parse_error) in [
        (
            &br#"{"task":{"id":"a"}"#[..],
            serde_json::from_slice::<Value>(br#"{"task":{"id":"a"}"#),
        ),
        (
            &br#"{"task":1} x"#[..],
            serde_json::from_slice::<Value>(br#"{"task":1} x"#),
        ),
        (&b"\xff"[..], serde_json::from_slice::<Value>(b"\xff")),
        // Not UTF-8 inside a string: the error names where.
        (
            &b"{\"task\":{\"id\":\"a\xffb\"}}"[..],
            serde_json::from_slice::<Value>(b"{\"task\":{\"id\":\"a\xffb\"}}"),
        ),
    ] {
        let e = parse_error.unwrap_err().to_string();
        let items = send_message_rest(&json, body, 4);
        let Err(message) = first(&items) else {
            panic!("{items:?}")
        };
        assert!(
            message.starts_with(&format!("response body is not JSON ({e})")),
            "{message}"
        );
    }
}

#[test]
fn nesting_beyond_the_parser_limit_is_malformed_not_a_crash() {
    let depth = 10_000;
    let body = format!("{{\"task\":{}{}}}", "[".repeat(depth), "]".repeat(depth));
    let items = send_message_rest(&[], body.as_bytes(), 4096);
    let Err(message) = first(&items) else {
        panic!("{items:?}")
    };
    assert!(message.contains("recursion limit"), "{message}");
}

#[test]
fn written_requests_are_byte_for_byte_their_value_form() {
    let mut request = SendMessageRequest {
        tenant: Some("t1".into()),
        ..SendMessageRequest::default()
    };
    request.message.message_id = "m1".into();
    request.message.parts = vec![
        a2at_core::a2a::Part::text("hi"),
        a2at_core::a2a::Part::raw(vec![0, 1, 2, 255], Some("application/octet-stream".into())),
        a2at_core::a2a::Part::data(json!({"z": 1, "a": [true, null]})),
    ];
    request.message.metadata = Some(Map::new());
    request.configuration = Some(SendMessageConfiguration {
        accepted_output_modes: vec!["text/plain".into()],
        history_length: Some(0),
        return_immediately: true,
    });
    let bytes = serde_json::to_vec(&request).unwrap();
    assert_eq!(bytes, serde_json::to_vec(&request.to_json()).unwrap());
    assert_eq!(
        String::from_utf8(bytes).unwrap(),
        r#"{"tenant":"t1","message":{"messageId":"m1","parts":[{"text":"hi"},{"raw":"AAEC/w==","mediaType":"application/octet-stream"},{"data":{"z":1,"a":[true,null]}}],"metadata":{}},"configuration":{"acceptedOutputModes":["text/plain"],"historyLength":0,"returnImmediately":true}}"#
    );
    assert_eq!(
        SendMessageRequest::from_json(&request.to_json()).unwrap(),
        request
    );
}

/// JSON shaped like A2A payloads: the members the decoders look at, with values of every
/// type, including the spellings ProtoJSON tolerates.
fn a2a_like() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-3i64..12).prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        Just(json!(u64::MAX)),
        Just(json!(3.0)),
        Just(json!(2.5)),
        prop::sample::select(vec![
            "",
            "TASK_STATE_COMPLETED",
            "TASK_STATE_INPUT_REQUIRED",
            "working",
            "ROLE_AGENT",
            "user",
            "3",
            "1.0",
            "aGk=",
            "aGk",
            "a-_b",
            "!!",
            "task",
            "message",
            "status-update",
            "artifact-update",
            "file",
            "x",
        ])
        .prop_map(|s| Value::String(s.to_owned())),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::vec((member_name(), inner), 0..7)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<String, Value>>())),
        ]
    })
}

fn member_name() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "task",
        "message",
        "statusUpdate",
        "artifactUpdate",
        "kind",
        "id",
        "contextId",
        "taskId",
        "status",
        "state",
        "timestamp",
        "artifacts",
        "artifact",
        "artifactId",
        "history",
        "messageId",
        "role",
        "parts",
        "text",
        "raw",
        "url",
        "data",
        "file",
        "bytes",
        "uri",
        "mimeType",
        "name",
        "filename",
        "mediaType",
        "metadata",
        "extensions",
        "referenceTaskIds",
        "append",
        "lastChunk",
        "description",
        "other",
    ])
    .prop_map(str::to_owned)
}

/// A payload that decodes most of the time: a wrapper around an object with the right shape.
fn payload() -> impl Strategy<Value = Value> {
    let part = (
        a2a_like(),
        prop::sample::select(vec!["text", "raw", "url", "data"]),
    )
        .prop_map(|(v, k)| json!({ k: v }));
    let message = (proptest::collection::vec(part, 0..3), a2a_like(), a2a_like()).prop_map(
        |(parts, role, meta)| json!({"messageId": "m", "role": role, "parts": parts, "metadata": meta}),
    ).boxed();
    let task = (a2a_like(), message.clone(), proptest::collection::vec(a2a_like(), 0..2))
        .prop_map(|(state, m, artifacts)| {
            json!({"id": "t", "status": {"state": state, "message": m}, "artifacts": artifacts})
        })
        .boxed();
    prop_oneof![
        a2a_like(),
        task.clone().prop_map(|t| json!({ "task": t })),
        task,
        message.clone().prop_map(|m| json!({ "message": m })),
        (message, a2a_like()).prop_map(|(m, state)| {
            json!({"statusUpdate": {"taskId": "t", "status": {"state": state, "message": m}}})
        }),
        (a2a_like(), any::<bool>()).prop_map(|(parts, last)| {
            json!({"artifactUpdate": {"taskId": "t", "artifact": {"artifactId": "a", "parts": parts}, "lastChunk": last}})
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(384))]

    #[test]
    fn bytes_decode_exactly_like_their_value_form(
        v in payload(),
        kind in prop_oneof![Just(CallKind::SendMessage), Just(CallKind::SendStreamingMessage), Just(CallKind::GetTask)],
    ) {
        check_all_paths(kind, &serde_json::to_vec(&v).unwrap())?;
    }

    #[test]
    fn whatever_decodes_writes_its_value_form_and_reads_back_the_same(v in payload()) {
        if let Ok(sr) = StreamResponse::from_json(&v) {
            let bytes = serde_json::to_vec(&sr).unwrap();
            prop_assert_eq!(&bytes, &serde_json::to_vec(&sr.to_json()).unwrap());
            let items = send_message_rest(&[], &bytes, 16);
            prop_assert_eq!(first(&items), Ok(sr));
        }
    }
}
