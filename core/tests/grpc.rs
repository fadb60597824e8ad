//! The gRPC binding codec: protobuf messages, framing, status projection, request encoding and
//! incremental response decoding (a2a.proto `lf.a2a.v1`, a2a-wire §7.2).

mod common;
use common::{object, proto_round_trip};

use a2at_core::a2a::grpc::{
    CancelTaskRequest, GetTaskRequest, GrpcCode, GrpcMessage, GrpcResponseDecoder,
    ListTasksRequest, ListTasksResponse, MAX_STRUCT_DEPTH, SendMessageResponse,
    SubscribeToTaskRequest, WireError, encode_frame, encode_grpc_call, format_timestamp,
    grpc_timeout, parse_timestamp, status_error, status_from_trailers,
};
use a2at_core::a2a::protojson::encode_base64;
use a2at_core::a2a::{
    A2aCall, Artifact, CallKind, DecodeLimits, Message, Part, ProtocolError, RemoteTaskStatus,
    ResponseItem, Role, SendMessageConfiguration, SendMessageRequest, StreamResponse, Task,
    TaskArtifactUpdateEvent, TaskState, TaskStatusUpdateEvent,
};
use core::time::Duration;
use serde_json::{Map, Value, json};

/// Every kind of part, metadata with every Value kind (numbers as doubles: that is all a
/// `google.protobuf.Value` can hold).
fn rich_message(role: Role) -> Message {
    let mut raw = Part::raw(
        vec![0u8, 1, 2, 255],
        Some("application/octet-stream".into()),
    );
    raw.filename = Some("b.bin".into());
    let mut data = Part::data(json!({"cells": [1.0, 2.5], "ok": true, "none": null, "s": ""}));
    data.metadata = Some(object(json!({"k": "v"})));
    Message {
        message_id: "m-1".into(),
        context_id: Some("ctx-1".into()),
        task_id: Some("task-1".into()),
        role,
        parts: vec![
            Part::text("héllo"),
            raw,
            Part::url(
                "https://files.example/y.pdf",
                Some("application/pdf".into()),
            ),
            data,
            Part::data(json!("bare string")),
        ],
        metadata: Some(object(json!({
            "https://ext/Negotiation-T/v1": "## Propose",
            "negotiationContext": {"id": "n1", "round": 1.0, "maxRounds": 3.0},
            "list": [[], {}, -0.5, false],
        }))),
        extensions: vec!["https://ext/Negotiation-T/v1".into(), "x".into()],
        reference_task_ids: vec!["r1".into()],
    }
}

fn rich_task() -> Task {
    Task {
        id: "task-1".into(),
        context_id: Some("ctx-1".into()),
        status: RemoteTaskStatus {
            state: TaskState::InputRequired,
            message: Some(rich_message(Role::Agent)),
            timestamp: Some("2026-12-02T10:39:06.479244Z".into()),
        },
        artifacts: vec![Artifact {
            artifact_id: "a1".into(),
            name: Some("report".into()),
            description: Some("the report".into()),
            parts: vec![Part::text("chunk1 "), Part::text("chunk2")],
            metadata: Some(Map::new()),
            extensions: vec!["https://ext/Task-T/v1".into()],
        }],
        history: vec![rich_message(Role::User), Message::default()],
        metadata: Some(object(json!({"t": 2.0}))),
    }
}

#[test]
fn every_message_round_trips() {
    let task = rich_task();
    proto_round_trip(&rich_message(Role::User));
    proto_round_trip(&task.status);
    proto_round_trip(&task.artifacts[0]);
    proto_round_trip(&task);
    proto_round_trip(&Task::default());
    let status_update = TaskStatusUpdateEvent {
        task_id: "task-1".into(),
        context_id: Some("ctx-1".into()),
        status: RemoteTaskStatus {
            state: TaskState::Completed,
            message: None,
            timestamp: Some("2026-12-02T10:39:28Z".into()),
        },
        metadata: Some(object(json!({"a": "b"}))),
    };
    let artifact_update = TaskArtifactUpdateEvent {
        task_id: "task-1".into(),
        context_id: Some("ctx-1".into()),
        artifact: task.artifacts[0].clone(),
        append: true,
        last_chunk: true,
        metadata: None,
    };
    proto_round_trip(&status_update);
    proto_round_trip(&artifact_update);
    for s in [
        StreamResponse::Task(task.clone()),
        StreamResponse::Message(rich_message(Role::Agent)),
        StreamResponse::StatusUpdate(status_update),
        StreamResponse::ArtifactUpdate(artifact_update),
    ] {
        proto_round_trip(&s);
    }
    proto_round_trip(&SendMessageResponse::Task(task.clone()));
    proto_round_trip(&SendMessageResponse::Message(rich_message(Role::Agent)));
    let config = SendMessageConfiguration {
        accepted_output_modes: vec!["text/plain".into(), "application/json".into()],
        history_length: Some(0),
        return_immediately: true,
    };
    proto_round_trip(&config);
    proto_round_trip(&SendMessageRequest {
        tenant: Some("tenant-a".into()),
        message: rich_message(Role::User),
        configuration: Some(config),
        metadata: Some(object(json!({"req": 1.5}))),
    });
    proto_round_trip(&GetTaskRequest {
        tenant: Some("t".into()),
        id: "task-1".into(),
        history_length: Some(0),
    });
    proto_round_trip(&GetTaskRequest {
        tenant: None,
        id: "task-1".into(),
        history_length: None,
    });
    proto_round_trip(&CancelTaskRequest {
        tenant: None,
        id: "task-1".into(),
        metadata: Some(object(json!({"why": "stop"}))),
    });
    proto_round_trip(&SubscribeToTaskRequest {
        tenant: Some("t".into()),
        id: "task-1".into(),
    });
    proto_round_trip(&ListTasksRequest {
        tenant: Some("t".into()),
        context_id: Some("ctx-1".into()),
        status: TaskState::Working,
        page_size: Some(100),
        page_token: Some("next".into()),
        history_length: Some(0),
        status_timestamp_after: Some("2026-01-01T00:00:00.500Z".into()),
        include_artifacts: Some(false),
    });
    proto_round_trip(&ListTasksResponse {
        tasks: vec![task, Task::default()],
        next_page_token: "p2".into(),
        page_size: 2,
        total_size: 7,
    });
}

#[test]
fn a_send_message_request_has_the_bytes_the_proto_field_numbers_give() {
    let req = SendMessageRequest {
        tenant: Some("t".into()),
        message: Message {
            message_id: "m1".into(),
            context_id: Some("c1".into()),
            task_id: None,
            role: Role::User,
            parts: vec![Part::text("hi")],
            metadata: None,
            extensions: vec!["x".into()],
            reference_task_ids: vec![],
        },
        configuration: Some(SendMessageConfiguration {
            accepted_output_modes: vec![],
            history_length: Some(0),
            return_immediately: false,
        }),
        metadata: Some(object(json!({"k": "v"}))),
    };
    #[rustfmt::skip]
    let golden: &[u8] = &[
        0x0a, 0x01, b't',                         // 1 tenant "t"
        0x12, 0x13,                               // 2 message, 19 bytes
          0x0a, 0x02, b'm', b'1',                 //   1 message_id "m1"
          0x12, 0x02, b'c', b'1',                 //   2 context_id "c1"
          0x20, 0x01,                             //   4 role ROLE_USER
          0x2a, 0x04, 0x0a, 0x02, b'h', b'i',     //   5 parts [{1 text "hi"}]
          0x3a, 0x01, b'x',                       //   7 extensions ["x"]
        0x1a, 0x02, 0x18, 0x00,                   // 3 configuration {3 history_length 0}
        0x22, 0x0a,                               // 4 metadata Struct, 10 bytes
          0x0a, 0x08,                             //   1 fields entry, 8 bytes
            0x0a, 0x01, b'k',                     //     1 key "k"
            0x12, 0x03, 0x1a, 0x01, b'v',         //     2 value {3 string_value "v"}
    ];
    assert_eq!(req.encode_proto(), golden);
}

#[test]
fn a_task_has_the_bytes_the_proto_field_numbers_give() {
    #[rustfmt::skip]
    let golden: &[u8] = &[
        0x0a, 0x02, b't', b'1',                   // 1 id "t1"
        0x12, 0x02, b'c', b'1',                   // 2 context_id "c1"
        0x1a, 0x0f,                               // 3 status, 15 bytes
          0x08, 0x03,                             //   1 state TASK_STATE_COMPLETED
          0x1a, 0x0b,                             //   3 timestamp, 11 bytes
            0x08, 0xca, 0xea, 0xbf, 0xd8, 0x06,   //     1 seconds 1796207946
            0x10, 0xc0, 0x96, 0xb1, 0x02,         //     2 nanos 5000000
        0x22, 0x10,                               // 4 artifacts[0], 16 bytes
          0x0a, 0x01, b'a',                       //   1 artifact_id "a"
          0x22, 0x0b,                             //   4 parts[0], 11 bytes
            0x22, 0x09,                           //     4 data Value, 9 bytes
              0x11, 0, 0, 0, 0, 0, 0, 0xf8, 0x3f, //       2 number_value 1.5 (fixed64)
        0x32, 0x09,                               // 6 metadata Struct, 9 bytes
          0x0a, 0x07,                             //   1 fields entry
            0x0a, 0x01, b'b',                     //     1 key "b"
            0x12, 0x02, 0x20, 0x01,               //     2 value {4 bool_value true}
    ];
    let task = Task {
        id: "t1".into(),
        context_id: Some("c1".into()),
        status: RemoteTaskStatus {
            state: TaskState::Completed,
            message: None,
            timestamp: Some("2026-12-02T10:39:06.005Z".into()),
        },
        artifacts: vec![Artifact {
            artifact_id: "a".into(),
            parts: vec![Part::data(json!(1.5))],
            ..Artifact::default()
        }],
        history: vec![],
        metadata: Some(object(json!({"b": true}))),
    };
    assert_eq!(Task::decode_proto(golden).unwrap(), task);
    assert_eq!(task.encode_proto(), golden);
}

#[test]
fn unknown_fields_of_every_wire_type_are_skipped() {
    let task = rich_task();
    let mut bytes = task.encode_proto();
    bytes.extend_from_slice(&[0x78, 0x05]); // 15 varint
    bytes.extend_from_slice(&[0x81, 0x01, 1, 2, 3, 4, 5, 6, 7, 8]); // 16 fixed64
    bytes.extend_from_slice(&[0x8a, 0x01, 0x02, 0xff, 0xfe]); // 17 bytes (not UTF-8: unread)
    bytes.extend_from_slice(&[0x95, 0x01, 1, 2, 3, 4]); // 18 fixed32
    assert_eq!(Task::decode_proto(&bytes).unwrap(), task);
}

#[test]
fn proto3_defaults_read_like_the_json_reader() {
    // An empty string is absent; an empty Part text is still a text part.
    let bytes = [0x0a, 0x01, b'i', 0x12, 0x00];
    let t = Task::decode_proto(&bytes).unwrap();
    assert_eq!(t.id, "i");
    assert_eq!(t.context_id, None);
    assert_eq!(t.status.state, TaskState::Unspecified);
    let p = Part::decode_proto(&[0x0a, 0x00]).unwrap();
    assert_eq!(p.as_text(), Some(""));
    // Unknown enum numbers.
    assert_eq!(
        RemoteTaskStatus::decode_proto(&[0x08, 0x2a]).unwrap().state,
        TaskState::Unrecognized
    );
    assert_eq!(
        Message::decode_proto(&[0x20, 0x09]).unwrap().role,
        Role::Unspecified
    );
    // Integers become doubles, as through a Python agent's ProtoJSON.
    let p = Part::data(json!({"round": 1}));
    let back = Part::decode_proto(&p.encode_proto()).unwrap();
    assert_eq!(back, Part::data(json!({"round": 1.0})));
    assert_eq!(
        serde_json::to_string(&back.to_json()).unwrap(),
        r#"{"data":{"round":1.0}}"#
    );
}

#[test]
fn oneofs_follow_protobuf_last_member_wins_and_empty_is_an_error() {
    // Part: text then url.
    let p = Part::decode_proto(&[0x0a, 0x01, b'a', 0x1a, 0x01, b'u']).unwrap();
    assert_eq!(p, Part::url("u", None));
    assert_eq!(
        Part::decode_proto(&[0x32, 0x01, b'f']),
        Err(WireError::PartWithoutContent)
    );
    assert_eq!(
        StreamResponse::decode_proto(&[]),
        Err(WireError::NoPayload {
            message: "lf.a2a.v1.StreamResponse"
        })
    );
    assert_eq!(
        SendMessageResponse::decode_proto(&[0x1a, 0x00]),
        Err(WireError::NoPayload {
            message: "lf.a2a.v1.SendMessageResponse"
        })
    );
    assert_eq!(
        SendMessageRequest::decode_proto(&[0x0a, 0x01, b't']),
        Err(WireError::Missing {
            message: "lf.a2a.v1.SendMessageRequest",
            field: "message"
        })
    );
}

#[test]
fn hostile_messages_are_typed_errors() {
    // Message.message_id as a varint.
    assert!(matches!(
        Message::decode_proto(&[0x08, 0x01]),
        Err(WireError::WrongWireType {
            message: "lf.a2a.v1.Message",
            field: 1,
            expected: 2,
            found: 0
        })
    ));
    // Invalid UTF-8 in a string field.
    assert!(matches!(
        Message::decode_proto(&[0x0a, 0x01, 0xff]),
        Err(WireError::InvalidUtf8 { field: 1, .. })
    ));
    // A nested length that overflows its parent: Task.status says 100 bytes inside a
    // 4-byte task.
    assert!(matches!(
        Task::decode_proto(&[0x1a, 0x64, 0x08, 0x01]),
        Err(WireError::LengthOverflow {
            field: 3,
            len: 100,
            remaining: 2,
            ..
        })
    ));
    // The inner message is complete for the outer reader but truncated inside.
    assert!(matches!(
        Task::decode_proto(&[0x1a, 0x02, 0x08, 0x80]),
        Err(WireError::TruncatedVarint {
            message: "lf.a2a.v1.RemoteTaskStatus"
        })
    ));
    // A non-finite number has no JSON form.
    let mut nan = vec![0x22, 0x09, 0x11];
    nan.extend_from_slice(&f64::NAN.to_bits().to_le_bytes());
    assert!(matches!(
        Part::decode_proto(&nan),
        Err(WireError::NonFiniteNumber(_))
    ));
    // Timestamps outside 0001..9999.
    assert!(matches!(
        RemoteTaskStatus::decode_proto(&[0x1a, 0x02, 0x10, 0x7f]).map(|_| ()),
        Ok(())
    ));
    let mut seconds = vec![0x08];
    push_len(&mut seconds, 300_000_000_000);
    let mut far = vec![0x1a, seconds.len() as u8];
    far.extend_from_slice(&seconds);
    assert_eq!(
        RemoteTaskStatus::decode_proto(&far),
        Err(WireError::TimestampOutOfRange {
            seconds: 300_000_000_000,
            nanos: 0
        })
    );
}

/// A data part holding `levels` nested lists around a string.
fn nested_lists(levels: usize) -> Vec<u8> {
    let mut value = vec![0x1a, 0x01, b'x'];
    for _ in 0..levels {
        let mut list = vec![0x0a];
        push_len(&mut list, value.len());
        list.extend_from_slice(&value);
        value = vec![0x32];
        push_len(&mut value, list.len());
        value.extend_from_slice(&list);
    }
    let mut part = vec![0x22];
    push_len(&mut part, value.len());
    part.extend_from_slice(&value);
    part
}

fn push_len(out: &mut Vec<u8>, mut n: usize) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

#[test]
fn struct_nesting_is_bounded() {
    let ok = Part::decode_proto(&nested_lists(MAX_STRUCT_DEPTH)).unwrap();
    let mut v = match ok.content {
        a2at_core::a2a::PartContent::Data(v) => v,
        other => panic!("{other:?}"),
    };
    for _ in 0..MAX_STRUCT_DEPTH {
        v = v.as_array().unwrap()[0].clone();
    }
    assert_eq!(v, json!("x"));
    assert_eq!(
        Part::decode_proto(&nested_lists(MAX_STRUCT_DEPTH + 1)),
        Err(WireError::TooDeep {
            limit: MAX_STRUCT_DEPTH
        })
    );
    // Far deeper input fails the same way, without exhausting the stack.
    assert!(Part::decode_proto(&nested_lists(2_000)).is_err());
}

#[test]
fn timestamps_print_like_protojson_and_parse_rfc3339() {
    assert_eq!(format_timestamp(0, 0).unwrap(), "1970-01-01T00:00:00Z");
    assert_eq!(
        format_timestamp(1_796_207_946, 479_244_000).unwrap(),
        "2026-12-02T10:39:06.479244Z"
    );
    assert_eq!(
        format_timestamp(1_796_207_946, 5_000_000).unwrap(),
        "2026-12-02T10:39:06.005Z"
    );
    assert_eq!(
        format_timestamp(-1, 1).unwrap(),
        "1969-12-31T23:59:59.000000001Z"
    );
    assert_eq!(
        format_timestamp(-62_135_596_800, 0).unwrap(),
        "0001-01-01T00:00:00Z"
    );
    assert_eq!(
        format_timestamp(951_782_400, 0).unwrap(),
        "2000-02-29T00:00:00Z"
    );
    assert!(format_timestamp(0, -1).is_err());
    assert!(format_timestamp(253_402_300_800, 0).is_err());
    assert_eq!(
        parse_timestamp("2026-12-02T10:39:06.479244Z"),
        Some((1_796_207_946, 479_244_000))
    );
    assert_eq!(
        parse_timestamp("2026-12-02t12:39:06+02:00"),
        Some((1_796_207_946, 0))
    );
    for bad in [
        "2026-12-02",
        "2026-02-30T00:00:00Z",
        "2026-12-02T10:39:06.Z",
        "2026-12-02T10:39:06.1234567890Z",
        "2026-12-02T24:00:00Z",
        "2026-12-02T10:39:06",
        "2026-12-02T10:39:06Zjunk",
        "not a time",
    ] {
        assert_eq!(parse_timestamp(bad), None, "{bad}");
    }
    // A timestamp the model holds as an unparseable string is not sent.
    let s = RemoteTaskStatus {
        state: TaskState::Working,
        message: None,
        timestamp: Some("yesterday".into()),
    };
    assert_eq!(s.encode_proto(), [0x08, 0x02]);
}

// ---- status ---------------------------------------------------------------------------------

fn trailers(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// A `google.rpc.Status` with one `ErrorInfo` (reason, domain, metadata {k: v}) and one
/// `BadRequest`-typed detail, base64 as in `grpc-status-details-bin`.
fn details_bin(code: u8, message: &str, reason: &str) -> String {
    let mut info = Vec::new();
    info.push(0x0a);
    push_len(&mut info, reason.len());
    info.extend_from_slice(reason.as_bytes());
    info.extend_from_slice(&[0x12, 0x10]);
    info.extend_from_slice(b"a2a-protocol.org");
    info.extend_from_slice(&[0x1a, 0x06, 0x0a, 0x01, b'k', 0x12, 0x01, b'v']);
    let mut any = Vec::new();
    let url = b"type.googleapis.com/google.rpc.ErrorInfo";
    any.push(0x0a);
    push_len(&mut any, url.len());
    any.extend_from_slice(url);
    any.push(0x12);
    push_len(&mut any, info.len());
    any.extend_from_slice(&info);
    let mut other = Vec::new();
    let url = b"type.googleapis.com/google.rpc.BadRequest";
    other.push(0x0a);
    push_len(&mut other, url.len());
    other.extend_from_slice(url);
    other.extend_from_slice(&[0x12, 0x02, 0xab, 0xcd]);
    let mut status = vec![0x08, code, 0x12];
    push_len(&mut status, message.len());
    status.extend_from_slice(message.as_bytes());
    // The BadRequest first: the ErrorInfo is found by its type, not by position.
    status.push(0x1a);
    push_len(&mut status, other.len());
    status.extend_from_slice(&other);
    status.push(0x1a);
    push_len(&mut status, any.len());
    status.extend_from_slice(&any);
    encode_base64(&status).trim_end_matches('=').to_owned()
}

fn status_of(pairs: &[(&str, &str)]) -> ProtocolError {
    status_from_trailers(&trailers(pairs))
        .expect("a status")
        .expect("not OK")
}

#[test]
fn status_codes_without_details_project_like_the_http_bindings() {
    // (grpc-status, code, http_status, status name)
    let table: [(&str, &str, u16, &str); 16] = [
        ("1", "a2a.http.499", 499, "CANCELLED"),
        ("2", "a2a.http.500", 500, "UNKNOWN"),
        ("3", "a2a.http.400", 400, "INVALID_ARGUMENT"),
        ("4", "a2a.http.504", 504, "DEADLINE_EXCEEDED"),
        ("5", "a2a.http.404", 404, "NOT_FOUND"),
        ("6", "a2a.http.409", 409, "ALREADY_EXISTS"),
        ("7", "a2a.http.403", 403, "PERMISSION_DENIED"),
        ("8", "a2a.http.429", 429, "RESOURCE_EXHAUSTED"),
        ("9", "a2a.http.400", 400, "FAILED_PRECONDITION"),
        ("10", "a2a.http.409", 409, "ABORTED"),
        ("11", "a2a.http.400", 400, "OUT_OF_RANGE"),
        ("12", "a2a.method_not_found", 404, "UNIMPLEMENTED"),
        ("13", "a2a.internal_error", 500, "INTERNAL"),
        ("14", "a2a.http.503", 503, "UNAVAILABLE"),
        ("15", "a2a.http.500", 500, "DATA_LOSS"),
        ("16", "a2a.http.401", 401, "UNAUTHENTICATED"),
    ];
    for (n, code, http, name) in table {
        let e = status_of(&[("grpc-status", n), ("grpc-message", "m")]);
        assert_eq!(
            (e.code.as_str(), e.http_status, e.status.as_deref()),
            (code, Some(http), Some(name)),
            "grpc-status {n}"
        );
        assert_eq!(e.message, "m");
        assert_eq!(e.rpc_code, None);
    }
    assert_eq!(
        status_from_trailers(&trailers(&[("grpc-status", "0")])),
        Ok(None)
    );
    assert_eq!(GrpcCode::from_number(99), GrpcCode::Unknown);
    assert_eq!(status_of(&[("Grpc-Status", " 99 ")]).code, "a2a.http.500");
}

#[test]
fn an_error_info_in_the_details_gives_the_reason() {
    let bin = details_bin(5, "Task nope not found", "TASK_NOT_FOUND");
    let e = status_of(&[("grpc-status", "5"), ("grpc-status-details-bin", &bin)]);
    assert_eq!(e.code, "a2a.task_not_found");
    assert_eq!(e.reason.as_deref(), Some("TASK_NOT_FOUND"));
    assert_eq!(e.http_status, Some(404));
    assert_eq!(e.status.as_deref(), Some("NOT_FOUND"));
    // Without grpc-message the Status message is used.
    assert_eq!(e.message, "Task nope not found");
    assert_eq!(
        e.details,
        json!([
            {"@type": "type.googleapis.com/google.rpc.BadRequest", "value": "q80="},
            {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "TASK_NOT_FOUND",
             "domain": "a2a-protocol.org", "metadata": {"k": "v"}}
        ])
    );
    // A Java-style UNIMPLEMENTED + UNSUPPORTED_OPERATION is the permanent 400 of the table,
    // not a retryable 501.
    let bin = details_bin(12, "", "UNSUPPORTED_OPERATION");
    let e = status_of(&[("grpc-status", "12"), ("grpc-status-details-bin", &bin)]);
    assert_eq!(
        (e.code.as_str(), e.http_status),
        ("a2a.unsupported_operation", Some(400))
    );
    // A reason outside the A2A table keeps the gRPC code's HTTP status.
    let bin = details_bin(7, "", "AUTHORIZATION_DENIED");
    let e = status_of(&[("grpc-status", "7"), ("grpc-status-details-bin", &bin)]);
    assert_eq!(
        (e.code.as_str(), e.http_status),
        ("a2a.authorization_denied", Some(403))
    );
    // INTERNAL reason spellings normalise.
    let bin = details_bin(13, "", "INTERNAL");
    let e = status_of(&[("grpc-status", "13"), ("grpc-status-details-bin", &bin)]);
    assert_eq!(
        (e.code.as_str(), e.http_status),
        ("a2a.internal_error", Some(500))
    );
    // Undecodable details leave the status code to speak.
    let e = status_of(&[("grpc-status", "14"), ("grpc-status-details-bin", "!!!")]);
    assert_eq!(
        (e.code.as_str(), e.details.clone()),
        ("a2a.http.503", Value::Null)
    );
}

#[test]
fn grpc_message_is_percent_decoded_redacted_and_may_name_the_error_class() {
    let e = status_of(&[
        ("grpc-status", "12"),
        (
            "grpc-message",
            "TaskNotCancelableError: Task cannot be canceled %E2%9C%93 100%",
        ),
    ]);
    assert_eq!(e.code, "a2a.task_not_cancelable");
    assert_eq!(e.http_status, Some(400));
    assert_eq!(
        e.message,
        "TaskNotCancelableError: Task cannot be canceled ✓ 100%"
    );
    let e = status_of(&[
        ("grpc-status", "2"),
        ("grpc-message", "ValueError: token Bearer%20abc.def"),
    ]);
    assert_eq!(e.code, "a2a.http.500");
    assert_eq!(e.message, "ValueError: token Bearer [REDACTED]");
    let e = status_error(GrpcCode::Internal, Some("JSONParseError: bad"), None);
    assert_eq!(e.code, "a2a.json_parse");
}

#[test]
fn trailers_without_a_usable_status_are_typed_errors() {
    use a2at_core::a2a::grpc::GrpcStatusError;
    assert_eq!(
        status_from_trailers(&trailers(&[("grpc-message", "x")])),
        Err(GrpcStatusError::NoStatus)
    );
    assert_eq!(
        status_from_trailers(&trailers(&[("grpc-status", "five")])),
        Err(GrpcStatusError::BadStatus("five".into()))
    );
}

// ---- request encoding -----------------------------------------------------------------------

#[test]
fn calls_encode_to_the_service_path_metadata_and_one_frame() {
    let req = GetTaskRequest {
        tenant: None,
        id: "t1".into(),
        history_length: Some(0),
    };
    let call = A2aCall::GetTask {
        task_id: "t1",
        history_length: Some(0),
    };
    let r = encode_grpc_call(
        &call,
        None,
        &[
            " https://ext/a ".into(),
            "https://ext/a".into(),
            "https://ext/b".into(),
        ],
        Some(Duration::from_secs(600)),
    )
    .unwrap();
    assert_eq!(r.path, "/lf.a2a.v1.A2AService/GetTask");
    let headers: Vec<(String, String)> = r
        .headers
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
    assert_eq!(
        headers,
        trailers(&[
            ("content-type", "application/grpc"),
            ("te", "trailers"),
            ("a2a-version", "1.0"),
            ("a2a-extensions", "https://ext/a,https://ext/b"),
            ("grpc-timeout", "600000m"),
        ])
    );
    assert_eq!(r.body, [0, 0, 0, 0, 6, 0x12, 0x02, b't', b'1', 0x18, 0x00]);
    assert_eq!(r.body[5..], req.encode_proto());

    let send = SendMessageRequest {
        tenant: None,
        message: rich_message(Role::User),
        configuration: None,
        metadata: None,
    };
    for (call, method) in [
        (A2aCall::SendMessage(&send), "SendMessage"),
        (A2aCall::SendStreamingMessage(&send), "SendStreamingMessage"),
    ] {
        let r = encode_grpc_call(&call, Some("ep"), &[], None).unwrap();
        assert_eq!(r.path, format!("/lf.a2a.v1.A2AService/{method}"));
        assert_eq!(r.headers.len(), 3);
        let back = SendMessageRequest::decode_proto(&r.body[5..]).unwrap();
        assert_eq!(back.tenant.as_deref(), Some("ep"));
        assert_eq!(back.message, send.message);
    }
    let own = SendMessageRequest {
        tenant: Some("own".into()),
        ..send.clone()
    };
    let r = encode_grpc_call(&A2aCall::SendMessage(&own), Some("ep"), &[], None).unwrap();
    assert_eq!(
        SendMessageRequest::decode_proto(&r.body[5..])
            .unwrap()
            .tenant
            .as_deref(),
        Some("own")
    );

    let r = encode_grpc_call(
        &A2aCall::CancelTask { task_id: "t1" },
        Some("ep"),
        &[],
        None,
    )
    .unwrap();
    assert_eq!(r.path, "/lf.a2a.v1.A2AService/CancelTask");
    assert_eq!(
        CancelTaskRequest::decode_proto(&r.body[5..]).unwrap(),
        CancelTaskRequest {
            tenant: Some("ep".into()),
            id: "t1".into(),
            metadata: None
        }
    );
    let r = encode_grpc_call(&A2aCall::SubscribeToTask { task_id: "t1" }, None, &[], None).unwrap();
    assert_eq!(r.path, "/lf.a2a.v1.A2AService/SubscribeToTask");
    assert_eq!(r.body, [0, 0, 0, 0, 4, 0x12, 0x02, b't', b'1']);
    let r = encode_grpc_call(
        &A2aCall::ListTasks {
            context_id: "c",
            page_size: Some(5),
        },
        None,
        &[],
        None,
    )
    .unwrap();
    assert_eq!(r.path, "/lf.a2a.v1.A2AService/ListTasks");
    assert_eq!(
        ListTasksRequest::decode_proto(&r.body[5..]).unwrap(),
        ListTasksRequest {
            context_id: Some("c".into()),
            page_size: Some(5),
            history_length: Some(0),
            ..ListTasksRequest::default()
        }
    );
}

#[test]
fn grpc_timeout_uses_at_most_eight_digits_and_rounds_up() {
    assert_eq!(grpc_timeout(Duration::ZERO), "1n");
    assert_eq!(grpc_timeout(Duration::from_nanos(99_999_999)), "99999999n");
    assert_eq!(grpc_timeout(Duration::from_nanos(100_000_001)), "100001u");
    assert_eq!(grpc_timeout(Duration::from_millis(250)), "250000u");
    assert_eq!(grpc_timeout(Duration::from_secs(5)), "5000000u");
    assert_eq!(grpc_timeout(Duration::from_secs(100_000)), "100000S");
    assert_eq!(grpc_timeout(Duration::from_secs(100_000_000)), "1666667M");
    assert_eq!(grpc_timeout(Duration::MAX), "99999999H");
    for d in [1u64, 7, 999, 123_456_789, 86_400_000_000_000] {
        let t = grpc_timeout(Duration::from_nanos(d));
        assert!(t.len() <= 9, "{t}");
    }
}

// ---- response decoding ----------------------------------------------------------------------

fn limits() -> DecodeLimits {
    DecodeLimits {
        max_event_bytes: 64 * 1024,
        max_body_bytes: 128 * 1024,
    }
}

fn grpc_head() -> Vec<(String, String)> {
    trailers(&[("content-type", "application/grpc")])
}

fn ok_trailers() -> Vec<(String, String)> {
    trailers(&[("grpc-status", "0")])
}

fn stream_events() -> Vec<StreamResponse> {
    let task = Task {
        id: "t1".into(),
        context_id: Some("c1".into()),
        status: RemoteTaskStatus {
            state: TaskState::Submitted,
            ..RemoteTaskStatus::default()
        },
        ..Task::default()
    };
    let update = |state, ts: &str| {
        StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: "t1".into(),
            context_id: Some("c1".into()),
            status: RemoteTaskStatus {
                state,
                message: None,
                timestamp: Some(ts.into()),
            },
            metadata: None,
        })
    };
    vec![
        StreamResponse::Task(task),
        update(TaskState::Working, "2026-12-02T10:39:26.636478Z"),
        StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
            task_id: "t1".into(),
            context_id: Some("c1".into()),
            artifact: Artifact {
                artifact_id: "a1".into(),
                parts: vec![Part::text("chunk1 ")],
                ..Artifact::default()
            },
            ..TaskArtifactUpdateEvent::default()
        }),
        update(TaskState::Completed, "2026-12-02T10:39:28.138751Z"),
    ]
}

fn framed(messages: &[Vec<u8>]) -> Vec<u8> {
    messages
        .iter()
        .flat_map(|m| encode_frame(m).unwrap())
        .collect()
}

fn events(items: &[ResponseItem]) -> Vec<StreamResponse> {
    items
        .iter()
        .filter_map(|i| match i {
            ResponseItem::Event(e) => Some(e.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_server_stream_delivers_each_event_when_its_frame_completes() {
    let evs = stream_events();
    let frames: Vec<Vec<u8>> = evs.iter().map(GrpcMessage::encode_proto).collect();
    let ends: Vec<usize> = frames
        .iter()
        .scan(0, |at, f| {
            *at += 5 + f.len();
            Some(*at)
        })
        .collect();
    let body = framed(&frames);
    let mut d = GrpcResponseDecoder::new(CallKind::SendStreamingMessage, limits());
    d.on_head(200, &grpc_head());
    let mut out = Vec::new();
    for (i, b) in body.iter().enumerate() {
        d.on_body(&[*b], &mut out);
        let expected = ends.iter().filter(|e| **e <= i + 1).count();
        assert_eq!(out.len(), expected, "after byte {i}");
    }
    d.on_trailers(&ok_trailers(), &mut out);
    d.on_end(&mut out);
    assert_eq!(events(&out), evs);
    assert_eq!(out.last(), Some(&ResponseItem::End { events: 4 }));
    assert_eq!(out.len(), 5);
}

#[test]
fn every_chunking_of_a_stream_gives_the_same_items() {
    let evs = stream_events();
    let body = framed(
        &evs.iter()
            .map(GrpcMessage::encode_proto)
            .collect::<Vec<_>>(),
    );
    for split in 0..=body.len() {
        let mut d = GrpcResponseDecoder::new(CallKind::SubscribeToTask, limits());
        d.on_head(200, &grpc_head());
        let mut out = Vec::new();
        d.on_body(&body[..split], &mut out);
        d.on_body(&body[split..], &mut out);
        d.on_trailers(&ok_trailers(), &mut out);
        d.on_end(&mut out);
        assert_eq!(events(&out), evs, "split at {split}");
        assert_eq!(out.len(), 5);
    }
}

#[test]
fn a_stream_that_fails_mid_way_keeps_its_events_and_reports_the_status() {
    let evs = stream_events();
    let body = framed(&[
        evs[0].encode_proto(),
        vec![0x2a, 0x00],
        evs[1].encode_proto(),
    ]);
    let mut d = GrpcResponseDecoder::new(CallKind::SendStreamingMessage, limits());
    d.on_head(200, &grpc_head());
    let mut out = Vec::new();
    d.on_body(&body, &mut out);
    let bin = details_bin(9, "", "UNSUPPORTED_OPERATION");
    d.on_trailers(
        &trailers(&[
            ("grpc-status", "9"),
            ("grpc-message", "Task%20is%20in%20terminal%20state"),
            ("grpc-status-details-bin", &bin),
        ]),
        &mut out,
    );
    d.on_end(&mut out);
    assert_eq!(out.len(), 5);
    assert_eq!(out[0], ResponseItem::Event(evs[0].clone()));
    assert!(
        matches!(&out[1], ResponseItem::Malformed(e) if e.code == "a2a.invalid_agent_response"
            && e.message.contains("no payload")),
        "{:?}",
        out[1]
    );
    assert_eq!(out[2], ResponseItem::Event(evs[1].clone()));
    match &out[3] {
        ResponseItem::Rejected(e) => {
            assert_eq!(e.code, "a2a.unsupported_operation");
            assert_eq!(e.message, "Task is in terminal state");
            assert_eq!(e.status.as_deref(), Some("FAILED_PRECONDITION"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(out[4], ResponseItem::End { events: 2 });
}

fn unary(
    kind: CallKind,
    head: (u16, Vec<(String, String)>),
    body: &[u8],
    tr: Option<Vec<(String, String)>>,
) -> Vec<ResponseItem> {
    let mut d = GrpcResponseDecoder::new(kind, limits());
    d.on_head(head.0, &head.1);
    let mut out = Vec::new();
    d.on_body(body, &mut out);
    if let Some(t) = tr {
        d.on_trailers(&t, &mut out);
    }
    d.on_end(&mut out);
    d.on_end(&mut out);
    out
}

#[test]
fn unary_results_wait_for_an_ok_status() {
    let task = rich_task();
    let body = framed(&[SendMessageResponse::Task(task.clone()).encode_proto()]);
    let mut d = GrpcResponseDecoder::new(CallKind::SendMessage, limits());
    d.on_head(200, &grpc_head());
    let mut out = Vec::new();
    d.on_body(&body, &mut out);
    assert!(out.is_empty(), "held until the status: {out:?}");
    d.on_trailers(&ok_trailers(), &mut out);
    d.on_end(&mut out);
    assert_eq!(
        out,
        [
            ResponseItem::Event(StreamResponse::Task(task.clone())),
            ResponseItem::End { events: 1 }
        ]
    );

    let msg = rich_message(Role::Agent);
    let body = framed(&[SendMessageResponse::Message(msg.clone()).encode_proto()]);
    let out = unary(
        CallKind::SendMessage,
        (200, grpc_head()),
        &body,
        Some(ok_trailers()),
    );
    assert_eq!(out[0], ResponseItem::Event(StreamResponse::Message(msg)));

    for kind in [CallKind::GetTask, CallKind::CancelTask] {
        let body = framed(&[task.encode_proto()]);
        let out = unary(kind, (200, grpc_head()), &body, Some(ok_trailers()));
        assert_eq!(
            out,
            [
                ResponseItem::Event(StreamResponse::Task(task.clone())),
                ResponseItem::End { events: 1 }
            ]
        );
    }

    let listed = ListTasksResponse {
        tasks: vec![task.clone(), Task::default()],
        next_page_token: String::new(),
        page_size: 2,
        total_size: 2,
    };
    let out = unary(
        CallKind::ListTasks,
        (200, grpc_head()),
        &framed(&[listed.encode_proto()]),
        Some(ok_trailers()),
    );
    assert_eq!(
        out,
        [
            ResponseItem::Event(StreamResponse::Task(task.clone())),
            ResponseItem::Event(StreamResponse::Task(Task::default())),
            ResponseItem::End { events: 2 }
        ]
    );

    // A message followed by an error status: only the error counts.
    let body = framed(&[task.encode_proto()]);
    let out = unary(
        CallKind::GetTask,
        (200, grpc_head()),
        &body,
        Some(trailers(&[("grpc-status", "14")])),
    );
    assert!(
        matches!(&out[0], ResponseItem::Rejected(e) if e.code == "a2a.http.503" && e.http_status == Some(503))
    );
    assert_eq!(out[1], ResponseItem::End { events: 0 });
}

fn malformed_code(items: &[ResponseItem]) -> (String, String) {
    match &items[0] {
        ResponseItem::Malformed(e) => (e.code.clone(), e.message.clone()),
        other => panic!("not malformed: {other:?}"),
    }
}

#[test]
fn broken_unary_responses_are_malformed() {
    let task = rich_task();
    let two = framed(&[task.encode_proto(), task.encode_proto()]);
    let out = unary(
        CallKind::GetTask,
        (200, grpc_head()),
        &two,
        Some(ok_trailers()),
    );
    assert!(malformed_code(&out).1.contains("more than one message"));
    assert_eq!(out.len(), 2);

    let out = unary(
        CallKind::SendMessage,
        (200, grpc_head()),
        &[],
        Some(ok_trailers()),
    );
    assert!(malformed_code(&out).1.contains("without a message"));

    let out = unary(
        CallKind::SendMessage,
        (200, grpc_head()),
        &framed(&[vec![0x08]]),
        Some(ok_trailers()),
    );
    assert!(
        malformed_code(&out).1.contains("truncated varint"),
        "{out:?}"
    );

    // No trailers at all.
    let body = framed(&[task.encode_proto()]);
    let out = unary(CallKind::GetTask, (200, grpc_head()), &body, None);
    assert_eq!(
        malformed_code(&out),
        (
            "a2a.invalid_agent_response".into(),
            "gRPC response ended without trailers (no grpc-status)".into()
        )
    );
    assert_eq!(out, [out[0].clone(), ResponseItem::End { events: 0 }]);

    // Trailers without grpc-status.
    let out = unary(
        CallKind::GetTask,
        (200, grpc_head()),
        &body,
        Some(trailers(&[("x", "y")])),
    );
    assert_eq!(malformed_code(&out).1, "gRPC trailers carry no grpc-status");

    // A frame cut short by the end of the stream.
    let out = unary(
        CallKind::GetTask,
        (200, grpc_head()),
        &body[..body.len() - 1],
        Some(ok_trailers()),
    );
    assert!(
        malformed_code(&out).1.contains("ended inside a frame"),
        "{out:?}"
    );
    assert_eq!(out.len(), 2);

    // Compressed.
    let mut compressed = body.clone();
    compressed[0] = 1;
    let out = unary(
        CallKind::GetTask,
        (200, grpc_head()),
        &compressed,
        Some(ok_trailers()),
    );
    assert!(malformed_code(&out).1.contains("compressed flag 1"));
    assert_eq!(out.len(), 2);

    // Not gRPC at all.
    let out = unary(
        CallKind::GetTask,
        (
            200,
            trailers(&[("Content-Type", "text/html; charset=utf-8")]),
        ),
        b"<html>",
        None,
    );
    assert!(malformed_code(&out).1.contains("\"text/html\""));
}

#[test]
fn oversized_messages_use_the_json_bindings_limit_codes() {
    let small = DecodeLimits {
        max_event_bytes: 10,
        max_body_bytes: 20,
    };
    let prefix = [0u8, 0, 0, 0, 21];
    let mut d = GrpcResponseDecoder::new(CallKind::GetTask, small);
    d.on_head(200, &grpc_head());
    let mut out = Vec::new();
    d.on_body(&prefix, &mut out);
    assert_eq!(malformed_code(&out).0, "a2a.body_too_large");
    d.on_trailers(&ok_trailers(), &mut out);
    d.on_end(&mut out);
    assert_eq!(out.len(), 2);

    let mut d = GrpcResponseDecoder::new(CallKind::SubscribeToTask, small);
    d.on_head(200, &grpc_head());
    let mut out = Vec::new();
    d.on_body(&[0, 0, 0, 0, 11], &mut out);
    assert_eq!(malformed_code(&out).0, "a2a.event_too_large");
}

#[test]
fn trailers_only_and_plain_http_errors_are_rejected() {
    let bin = details_bin(5, "gone", "TASK_NOT_FOUND");
    let head = trailers(&[
        ("content-type", "application/grpc"),
        ("grpc-status", "5"),
        ("grpc-status-details-bin", &bin),
    ]);
    let out = unary(CallKind::GetTask, (200, head), &[], None);
    assert!(matches!(&out[0], ResponseItem::Rejected(e) if e.code == "a2a.task_not_found"));
    assert_eq!(out[1], ResponseItem::End { events: 0 });

    let out = unary(
        CallKind::SubscribeToTask,
        (200, trailers(&[("grpc-status", "0")])),
        &[],
        None,
    );
    assert_eq!(out, [ResponseItem::End { events: 0 }]);

    let out = unary(
        CallKind::SendMessage,
        (
            503,
            trailers(&[
                ("content-type", "text/plain"),
                ("Retry-After", "7"),
                ("x-api-key", "planted-secret"),
            ]),
        ),
        b"upstream connect error",
        None,
    );
    match &out[0] {
        ResponseItem::Rejected(e) => {
            assert_eq!(e.code, "a2a.http.503");
            assert_eq!(e.http_status, Some(503));
            assert_eq!(e.message, "upstream connect error");
            assert_eq!(e.retry_after.as_deref(), Some("7"));
            // The gateway's headers are evidence, its secrets are not.
            assert_eq!(e.headers.len(), 3);
            assert_eq!(e.evidence()["headers"]["retry-after"], "7");
            assert!(!format!("{:?}", e.evidence()).contains("planted-secret"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(out.len(), 2);
}

#[test]
fn a_trailers_only_error_behind_an_http_error_status_keeps_its_headers() {
    // A gateway answering 503 with a gRPC status in the headers: the status is the error, the
    // HTTP layer's headers are its evidence (secrets masked).
    let head = trailers(&[
        ("content-type", "application/grpc"),
        ("grpc-status", "14"),
        ("grpc-message", "upstream down"),
        ("x-request-id", "r-42"),
        ("authorization", "Bearer planted-secret"),
    ]);
    let out = unary(CallKind::GetTask, (503, head), &[], None);
    let ResponseItem::Rejected(e) = &out[0] else {
        panic!("{out:?}");
    };
    assert_eq!(e.evidence()["headers"]["x-request-id"], "r-42");
    assert!(!e.evidence().to_string().contains("planted-secret"));
    // The same status behind HTTP 200 is a plain gRPC error: no HTTP evidence kept.
    let head = trailers(&[("content-type", "application/grpc"), ("grpc-status", "14")]);
    let out = unary(CallKind::GetTask, (200, head), &[], None);
    let ResponseItem::Rejected(e) = &out[0] else {
        panic!("{out:?}");
    };
    assert!(e.headers.is_empty());
}

// ---- properties -----------------------------------------------------------------------------

mod properties {
    use super::*;
    use common::json_value;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn data_parts_and_metadata_round_trip(v in json_value(6, 6), key in ".{0,8}") {
            let mut p = Part::data(v.clone());
            p.metadata = Some(std::iter::once((key, v)).collect());
            let back = Part::decode_proto(&p.encode_proto()).unwrap();
            prop_assert_eq!(back, p);
        }

        #[test]
        fn stream_items_do_not_depend_on_chunking(
            cuts in proptest::collection::vec(any::<usize>(), 0..10),
            status in prop_oneof![Just("0"), Just("5"), Just("14")],
        ) {
            let evs = stream_events();
            let body = framed(&evs.iter().map(GrpcMessage::encode_proto).collect::<Vec<_>>());
            let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (body.len() + 1)).collect();
            cuts.sort_unstable();
            let mut d = GrpcResponseDecoder::new(CallKind::SendStreamingMessage, limits());
            d.on_head(200, &grpc_head());
            let mut out = Vec::new();
            let mut last = 0;
            for c in cuts.into_iter().chain([body.len()]) {
                d.on_body(&body[last..c], &mut out);
                last = c;
            }
            d.on_trailers(&trailers(&[("grpc-status", status)]), &mut out);
            d.on_end(&mut out);
            prop_assert_eq!(events(&out), evs);
            prop_assert_eq!(out.len(), if status == "0" { 5 } else { 6 });
        }
    }
}

/// A gRPC `ListTasks` answer keeps its paging fields for the caller, as the JSON bindings do;
/// the wire's defaults (`""`, `0`) read as absent.
#[test]
fn list_tasks_paging_fields_survive_the_grpc_decoder() {
    use a2at_core::a2a::{Binding, ResponseDecoder};
    let decode = |listed: ListTasksResponse| {
        let mut d = ResponseDecoder::new(Binding::Grpc, CallKind::ListTasks, "1", limits());
        d.on_head(200, &grpc_head());
        let mut out = Vec::new();
        d.on_body(&framed(&[listed.encode_proto()]), &mut out);
        d.on_trailers(&ok_trailers(), &mut out);
        d.on_end(&mut out);
        assert_eq!(out.last(), Some(&ResponseItem::End { events: 1 }));
        d.task_page().cloned().expect("paging fields")
    };
    let page = decode(ListTasksResponse {
        tasks: vec![rich_task()],
        next_page_token: "page-2".into(),
        page_size: 1,
        total_size: 7,
    });
    assert_eq!(page.next_page_token.as_deref(), Some("page-2"));
    assert_eq!((page.page_size, page.total_size), (Some(1), Some(7)));
    assert!(page.tasks.is_empty(), "the tasks are the events");
    let last = decode(ListTasksResponse {
        tasks: vec![rich_task()],
        ..ListTasksResponse::default()
    });
    assert_eq!(
        (last.next_page_token, last.page_size, last.total_size),
        (None, None, None)
    );
}
