//! Every recorded response of the a2a-sdk 1.3.0 captures decodes through `ResponseDecoder`
//! with its recorded head and body, and errors project to the expected stable codes.

mod common;

use a2at_core::a2a::{AgentCard, ResponseItem, StreamResponse, select_endpoint};
use common::{all_curl_transcripts, describe, load};
use serde_json::Value;

const SEND_STREAM: [&str; 5] = [
    "task:TASK_STATE_SUBMITTED",
    "statusUpdate:TASK_STATE_WORKING",
    "statusUpdate:TASK_STATE_WORKING",
    "artifactUpdate",
    "statusUpdate:TASK_STATE_COMPLETED",
];

fn expected(name: &str) -> Option<Vec<&'static str>> {
    let one = |s: &'static str| Some(vec![s]);
    match name.trim_end_matches(".txt") {
        "jsonrpc_CancelTask"
        | "jsonrpc_GetTask_after_cancel"
        | "rest_cancel_task"
        | "rest_get_task_after_cancel" => one("task:TASK_STATE_CANCELED"),
        "jsonrpc_GetTask"
        | "jsonrpc_SendMessage"
        | "jsonrpc_SendMessage_followup_completes"
        | "jsonrpc_SendMessage_role_agent_accepted"
        | "rest_get_task"
        | "rest_message_send"
        | "rest_message_send_a2a_json_media_type"
        | "rest_message_send_followup_completes" => one("task:TASK_STATE_COMPLETED"),
        "jsonrpc_SendMessage_input_required" | "rest_message_send_input_required" => {
            one("task:TASK_STATE_INPUT_REQUIRED")
        }
        "jsonrpc_SendMessage_returnImmediately_long"
        | "rest_message_send_returnImmediately_long" => one("task:TASK_STATE_SUBMITTED"),
        "jsonrpc_SendStreamingMessage"
        | "jsonrpc_SendStreamingMessage_rawwire"
        | "rest_message_stream"
        | "rest_message_stream_rawwire" => Some(SEND_STREAM.to_vec()),
        "jsonrpc_SendStreamingMessage_followup_completes" => Some(SEND_STREAM[1..].to_vec()),
        "jsonrpc_SendStreamingMessage_input_required" => Some(vec![
            "task:TASK_STATE_SUBMITTED",
            "statusUpdate:TASK_STATE_WORKING",
            "statusUpdate:TASK_STATE_INPUT_REQUIRED",
        ]),
        "jsonrpc_error_CancelTask_completed_task" | "rest_error_cancel_completed_task" => {
            one("rejected:a2a.task_not_cancelable")
        }
        "jsonrpc_error_CancelTask_unknown_id"
        | "jsonrpc_error_GetTask_unknown_id"
        | "jsonrpc_error_unknown_task_stream"
        | "rest_error_cancel_unknown_id"
        | "rest_error_get_task_unknown_id" => one("rejected:a2a.task_not_found"),
        "jsonrpc_error_invalid_params" => one("rejected:a2a.invalid_params"),
        "jsonrpc_error_malformed_json" => one("rejected:a2a.json_parse"),
        "jsonrpc_error_missing_A2A-Version_header" | "rest_error_missing_A2A-Version_header" => {
            one("rejected:a2a.version_not_supported")
        }
        "jsonrpc_error_not_jsonrpc_envelope"
        | "rest_error_invalid_body"
        | "rest_error_malformed_json"
        | "rest_error_stream_malformed_json" => one("rejected:a2a.invalid_request"),
        "jsonrpc_error_old_v03_method_name" | "jsonrpc_error_unknown_method" => {
            one("rejected:a2a.method_not_found")
        }
        "jsonrpc_error_wrong_http_method_GET" | "rest_error_wrong_http_method_GET_message_send" => {
            one("rejected:a2a.http.405")
        }
        "rest_error_wrong_http_method_DELETE_task" => one("rejected:a2a.http.404"),
        "rest_error_unknown_path" => one("rejected:a2a.http.307"),
        _ => None,
    }
}

#[test]
fn every_transcript_decodes_to_the_expected_items() {
    let names = all_curl_transcripts();
    assert!(names.len() >= 44, "fixtures missing: {}", names.len());
    for name in names {
        if name == "agent_card.txt" {
            continue;
        }
        let t = load(&name);
        let want = expected(&name).unwrap_or_else(|| panic!("no expectation for {name}"));
        let events = want.iter().filter(|w| !w.starts_with("rejected:")).count();
        for chunk in [usize::MAX, 1, 7, 64] {
            let got = describe(&t.decode(chunk));
            let mut want_all: Vec<String> = want.iter().map(|s| s.to_string()).collect();
            want_all.push(format!("end:{events}"));
            assert_eq!(got, want_all, "{name} (chunk size {chunk})");
        }
    }
}

/// The payloads carried by a response body: every SSE `data:` (or the whole body), with the
/// JSON-RPC envelope removed.
fn payloads(body: &[u8]) -> Vec<Value> {
    let text = String::from_utf8_lossy(body);
    let docs: Vec<Value> = if text.trim_start().starts_with("data:") {
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(|d| serde_json::from_str(d.trim()).unwrap())
            .collect()
    } else {
        vec![serde_json::from_str(text.trim()).unwrap()]
    };
    docs.into_iter()
        .map(|d| d.get("result").cloned().unwrap_or(d))
        .collect()
}

#[test]
fn decoded_events_reencode_to_the_recorded_json() {
    for name in all_curl_transcripts() {
        if name == "agent_card.txt" || name.contains("_error_") {
            continue;
        }
        let t = load(&name);
        let items = t.decode(usize::MAX);
        let events: Vec<&StreamResponse> = items
            .iter()
            .filter_map(|i| match i {
                ResponseItem::Event(e) => Some(e),
                _ => None,
            })
            .collect();
        let recorded = payloads(&t.body);
        assert_eq!(events.len(), recorded.len(), "{name}");
        for (e, r) in events.iter().zip(&recorded) {
            let encoded = match (e, r.get("task")) {
                // GetTask/CancelTask results are bare tasks.
                (StreamResponse::Task(task), None) => task.to_json(),
                _ => e.to_json(),
            };
            assert_eq!(&encoded, r, "{name}: re-encoding differs");
        }
    }
}

#[test]
fn rejected_errors_keep_message_status_and_details() {
    let t = load("rest_error_get_task_unknown_id.txt");
    let items = t.decode(usize::MAX);
    let ResponseItem::Rejected(e) = &items[0] else {
        panic!("{items:?}")
    };
    assert_eq!(e.code, "a2a.task_not_found");
    assert_eq!(e.http_status, Some(404));
    assert_eq!(e.reason.as_deref(), Some("TASK_NOT_FOUND"));
    assert_eq!(e.status.as_deref(), Some("NOT_FOUND"));
    assert_eq!(e.message, "Task not found");
    assert_eq!(e.details[0]["domain"], "a2a-protocol.org");

    let t = load("jsonrpc_error_missing_A2A-Version_header.txt");
    let items = t.decode(usize::MAX);
    let ResponseItem::Rejected(e) = &items[0] else {
        panic!("{items:?}")
    };
    assert_eq!(e.rpc_code, Some(-32009));
    assert_eq!(e.http_status, Some(400), "spec status of -32009");
    assert!(e.message.contains("not supported"));

    let t = load("jsonrpc_error_invalid_params.txt");
    let items = t.decode(usize::MAX);
    let ResponseItem::Rejected(e) = &items[0] else {
        panic!("{items:?}")
    };
    assert!(
        e.details[0]["metadata"]["parseError"]
            .as_str()
            .unwrap()
            .contains("parts")
    );

    let t = load("rest_error_wrong_http_method_DELETE_task.txt");
    let items = t.decode(usize::MAX);
    let ResponseItem::Rejected(e) = &items[0] else {
        panic!("{items:?}")
    };
    assert_eq!(
        (e.code.as_str(), e.message.as_str()),
        ("a2a.http.404", "Not Found")
    );
}

#[test]
fn recorded_agent_card_parses_and_selects_an_endpoint() {
    let t = load("agent_card.txt");
    let v: Value = serde_json::from_slice(&t.body).unwrap();
    let card = AgentCard::from_json_value(&v).unwrap();
    assert_eq!(card.name, "spike-peer");
    assert!(card.has_capabilities);
    assert_eq!(card.capabilities.streaming, Some(true));
    assert_eq!(card.skills[0].examples, vec!["hello".to_owned()]);
    let ep = select_endpoint(&card, None).unwrap();
    assert_eq!(ep.url, "http://127.0.0.1:18090/");
    assert_eq!(ep.binding.as_str(), "JSONRPC");
    let rest = select_endpoint(&card, Some(a2at_core::a2a::Binding::HttpJson)).unwrap();
    assert_eq!(rest.url, "http://127.0.0.1:18090");
    assert_eq!(card.to_json(), v, "card re-encodes to the served JSON");
}

#[test]
fn engine_tcp_captures_decode_piece_by_piece() {
    use a2at_core::a2a::{Binding, CallKind, DecodeLimits, ResponseDecoder};
    let mut seen = (0, 0);
    for name in [
        "engine_a2at_1.0.1_wire_jsonrpc_then_rest.txt",
        "engine_a2at_1.0.1_wire_streaming_peer.txt",
    ] {
        for x in common::load_tcp(name) {
            let line = x.request_line();
            if line.starts_with("GET /.well-known/agent-card.json") {
                let v: Value = serde_json::from_slice(&x.body_pieces.concat()).unwrap();
                let card = AgentCard::from_json_value(&v).unwrap();
                assert_eq!(card.name, "spike-peer");
                seen.0 += 1;
                continue;
            }
            let req = x.request_json().expect("request body");
            let (binding, kind, id) = if line.starts_with("POST / ") {
                let kind = match req["method"].as_str().unwrap() {
                    "SendStreamingMessage" => CallKind::SendStreamingMessage,
                    "SendMessage" => CallKind::SendMessage,
                    other => panic!("unexpected method {other}"),
                };
                (
                    Binding::JsonRpc,
                    kind,
                    req["id"].as_str().unwrap().to_owned(),
                )
            } else {
                assert!(line.starts_with("POST /message:send"), "{line}");
                (Binding::HttpJson, CallKind::SendMessage, String::new())
            };
            let mut d = ResponseDecoder::new(binding, kind, &id, DecodeLimits::default());
            let mut out = Vec::new();
            d.on_head(x.status, &x.headers);
            let mut incremental = Vec::new();
            for piece in &x.body_pieces {
                d.on_body(piece, &mut out);
                incremental.push(out.len());
            }
            d.on_end(&mut out);
            let got = describe(&out);
            assert!(
                got.iter()
                    .all(|g| !g.starts_with("rejected") && !g.starts_with("malformed")),
                "{name}: {got:?}"
            );
            assert!(out.len() >= 2, "{name}: {got:?}");
            if kind.is_streaming() {
                // Each HTTP chunk carries one complete event: it is delivered right away.
                assert_eq!(
                    incremental,
                    (1..=x.body_pieces.len()).collect::<Vec<_>>(),
                    "{name}"
                );
            }
            seen.1 += 1;
        }
    }
    assert_eq!(
        seen,
        (3, 6),
        "cards and A2A exchanges found in the captures"
    );
}
