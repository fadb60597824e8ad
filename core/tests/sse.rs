//! SSE framing (a2a-wire §2.4) and streaming decode through `ResponseDecoder` (§2.3, §3.1).

mod common;

use a2at_core::a2a::{
    Binding, CallKind, DecodeLimits, ResponseDecoder, ResponseItem, SseDecoder, SseError, SseEvent,
};
use common::{decode_with, describe};

fn sse(input: &[&[u8]]) -> (Vec<SseEvent>, Vec<SseError>) {
    let mut d = SseDecoder::new(1024);
    let mut out = Vec::new();
    let mut errs = Vec::new();
    for c in input {
        if let Err(e) = d.push(c, &mut out) {
            errs.push(e);
        }
    }
    if let Err(e) = d.finish(&mut out) {
        errs.push(e);
    }
    (out, errs)
}

fn data(events: &[SseEvent]) -> Vec<&str> {
    events.iter().map(|e| e.data.as_str()).collect()
}

#[test]
fn line_endings_crlf_lf_cr() {
    for body in [
        &b"data: a\r\n\r\ndata: b\r\n\r\n"[..],
        b"data: a\n\ndata: b\n\n",
        b"data: a\r\rdata: b\r\r",
        b"data: a\r\n\ndata: b\r\r\n",
    ] {
        let (ev, errs) = sse(&[body]);
        assert!(errs.is_empty());
        assert_eq!(data(&ev), ["a", "b"], "{:?}", String::from_utf8_lossy(body));
    }
}

#[test]
fn cr_lf_split_across_chunks_is_one_line_ending() {
    // If the CR and LF were two terminators, the LF would be a blank line dispatching "a" early
    // and "b" would then be a separate event.
    let (ev, _) = sse(&[b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n"]);
    assert_eq!(data(&ev), ["a\nb"]);
}

#[test]
fn comments_fields_and_multiline_data() {
    let body = b": ping - 2026-12-02 10:39:48.578100+00:00\r\n\r\nevent: error\r\ndata:first\r\ndata:  two spaces\r\nid: 7\r\nretry: 100\r\nunknown: x\r\n\r\n";
    let (ev, _) = sse(&[body]);
    assert_eq!(
        ev,
        vec![SseEvent {
            event: Some("error".into()),
            data: "first\n two spaces".into(),
            id: Some("7".into())
        }]
    );
}

#[test]
fn java_style_id_after_data_and_empty_events_skipped() {
    let (ev, _) =
        sse(&[b"data: {\"a\":1}\nid: 0\n\ndata:\n\nevent: x\n\ndata: {\"b\":2}\nid: 1\n\n"]);
    assert_eq!(data(&ev), ["{\"a\":1}", "{\"b\":2}"]);
    assert_eq!(ev[0].id.as_deref(), Some("0"));
    assert_eq!(ev[1].event, None);
}

#[test]
fn multibyte_characters_split_across_chunks_survive() {
    let body = "data: 协商结论 ✓\n\n".as_bytes();
    for split in 1..body.len() {
        let (ev, _) = sse(&[&body[..split], &body[split..]]);
        assert_eq!(data(&ev), ["协商结论 ✓"], "split at {split}");
    }
}

#[test]
fn bom_is_dropped_and_unterminated_last_event_is_dispatched() {
    let (ev, _) = sse(&[b"\xEF\xBB", b"\xBFdata: x\n\ndata: y"]);
    assert_eq!(data(&ev), ["x", "y"]);
}

#[test]
fn oversized_event_errors_once_and_recovers_at_next_blank_line() {
    let mut d = SseDecoder::new(32);
    let mut out = Vec::new();
    let big = format!("data: {}\n", "x".repeat(100));
    assert_eq!(d.push(b"data: ok\n\n", &mut out), Ok(()));
    assert_eq!(
        d.push(big.as_bytes(), &mut out),
        Err(SseError::EventTooLarge { limit: 32 })
    );
    assert_eq!(
        d.push(b"data: more of the same event\n", &mut out),
        Ok(()),
        "reported once"
    );
    assert_eq!(d.push(b"\ndata: after\n\n", &mut out), Ok(()));
    d.finish(&mut out).unwrap();
    assert_eq!(data(&out), ["ok", "after"]);
    assert!(
        SseError::EventTooLarge { limit: 32 }
            .to_string()
            .contains("32 bytes")
    );
}

fn sse_head() -> Vec<(String, String)> {
    vec![(
        "content-type".into(),
        "text/event-stream; charset=utf-8".into(),
    )]
}

fn json_head() -> Vec<(String, String)> {
    vec![("Content-Type".into(), "application/json".into())]
}

#[test]
fn events_are_pushed_as_soon_as_complete() {
    let mut d = ResponseDecoder::new(
        Binding::HttpJson,
        CallKind::SendStreamingMessage,
        "x",
        DecodeLimits::default(),
    );
    let mut out = Vec::new();
    d.on_head(200, &sse_head());
    d.on_body(b"data: {\"statusUpdate\":{\"taskId\":\"t\",\"status\":{\"state\":\"TASK_STATE_WORKING\"}}}\n", &mut out);
    assert!(out.is_empty());
    d.on_body(b"\n", &mut out);
    assert_eq!(describe(&out), ["statusUpdate:TASK_STATE_WORKING"]);
    d.on_end(&mut out);
    d.on_end(&mut out);
    assert_eq!(
        describe(&out),
        ["statusUpdate:TASK_STATE_WORKING", "end:1"],
        "End exactly once"
    );
}

#[test]
fn python_mid_stream_error_event_is_rejected() {
    let body = b"data: {\"result\": {\"task\": {\"id\": \"t\", \"status\": {\"state\": \"TASK_STATE_SUBMITTED\"}}}, \"id\": \"e\", \"jsonrpc\": \"2.0\"}\r\n\r\nevent: error\r\ndata: {\"error\": {\"code\": -32006, \"message\": \"Received Message object in task mode.\", \"data\": [{\"@type\": \"type.googleapis.com/google.rpc.ErrorInfo\", \"reason\": \"INVALID_AGENT_RESPONSE\", \"domain\": \"a2a-protocol.org\", \"metadata\": {}}]}, \"id\": \"e\", \"jsonrpc\": \"2.0\"}\r\n\r\n";
    let items = decode_with(
        Binding::JsonRpc,
        CallKind::SendStreamingMessage,
        "e",
        200,
        &sse_head(),
        body,
        5,
    );
    assert_eq!(
        describe(&items),
        [
            "task:TASK_STATE_SUBMITTED",
            "rejected:a2a.invalid_agent_response",
            "end:1"
        ]
    );
    // Uncaught agent exception: no data, code table.
    let body = b"event: error\r\ndata: {\"error\":{\"code\":-32603,\"message\":\"executor crashed\"},\"id\":\"e\",\"jsonrpc\":\"2.0\"}\r\n\r\n";
    let items = decode_with(
        Binding::JsonRpc,
        CallKind::SendStreamingMessage,
        "e",
        200,
        &sse_head(),
        body,
        3,
    );
    assert_eq!(describe(&items), ["rejected:a2a.internal_error", "end:0"]);
}

#[test]
fn java_unnamed_error_event_and_rest_error_envelope_are_rejected() {
    let body = b"data: {\"jsonrpc\":\"2.0\",\"id\":\"j\",\"error\":{\"code\":-32001,\"message\":\"Task not found\"}}\nid: 0\n\n";
    let items = decode_with(
        Binding::JsonRpc,
        CallKind::SubscribeToTask,
        "j",
        200,
        &sse_head(),
        body,
        4,
    );
    assert_eq!(describe(&items), ["rejected:a2a.task_not_found", "end:0"]);

    let body = b"data: {\"task\":{\"id\":\"t\",\"status\":{\"state\":\"TASK_STATE_WORKING\"}}}\n\nevent: error\ndata: {\"error\":{\"code\":500,\"status\":\"INTERNAL\",\"message\":\"boom\",\"details\":[{\"@type\":\"type.googleapis.com/google.rpc.ErrorInfo\",\"reason\":\"INTERNAL\"}]}}\n\n";
    let items = decode_with(
        Binding::HttpJson,
        CallKind::SendStreamingMessage,
        "x",
        200,
        &sse_head(),
        body,
        9,
    );
    assert_eq!(
        describe(&items),
        [
            "task:TASK_STATE_WORKING",
            "rejected:a2a.internal_error",
            "end:1"
        ]
    );
}

#[test]
fn up_front_json_error_on_a_streaming_call_is_rejected() {
    let body = br#"{"error":{"code":-32001,"message":"Task not found","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND"}]},"id":28,"jsonrpc":"2.0"}"#;
    let items = decode_with(
        Binding::JsonRpc,
        CallKind::SubscribeToTask,
        "28",
        200,
        &json_head(),
        body,
        10,
    );
    assert_eq!(describe(&items), ["rejected:a2a.task_not_found", "end:0"]);
    let body = br#"{"error":{"code":400,"status":"INVALID_ARGUMENT","message":"bad","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"INVALID_REQUEST"}]}}"#;
    let items = decode_with(
        Binding::HttpJson,
        CallKind::SendStreamingMessage,
        "",
        400,
        &json_head(),
        body,
        10,
    );
    assert_eq!(describe(&items), ["rejected:a2a.invalid_request", "end:0"]);
}

#[test]
fn wrong_ids_bad_json_and_oversized_events_are_malformed_and_the_stream_goes_on() {
    let body = b"data: {\"result\":{\"task\":{\"id\":\"t\",\"status\":{}}},\"id\":\"other\",\"jsonrpc\":\"2.0\"}\n\ndata: {not json\n\ndata: {\"result\":{\"hello\":1},\"id\":\"me\"}\n\ndata: {\"result\":{\"statusUpdate\":{\"taskId\":\"t\",\"status\":{\"state\":3}}},\"id\":\"me\"}\n\n";
    let items = decode_with(
        Binding::JsonRpc,
        CallKind::SendStreamingMessage,
        "me",
        200,
        &sse_head(),
        body,
        11,
    );
    assert_eq!(
        describe(&items),
        [
            "malformed:a2a.invalid_agent_response",
            "malformed:a2a.invalid_agent_response",
            "malformed:a2a.invalid_agent_response",
            "statusUpdate:TASK_STATE_COMPLETED",
            "end:1"
        ]
    );
    let ResponseItem::Malformed(e) = &items[0] else {
        panic!()
    };
    assert!(
        e.message.contains("does not match request id"),
        "{}",
        e.message
    );

    let limits = DecodeLimits {
        max_event_bytes: 64,
        max_body_bytes: 1024,
    };
    let mut d = ResponseDecoder::new(
        Binding::HttpJson,
        CallKind::SendStreamingMessage,
        "x",
        limits,
    );
    let mut out = Vec::new();
    d.on_head(200, &sse_head());
    let big = format!(
        "data: {{\"message\":{{\"messageId\":\"{}\"}}}}\n\n",
        "m".repeat(200)
    );
    d.on_body(big.as_bytes(), &mut out);
    d.on_body(
        b"data: {\"message\":{\"messageId\":\"m\",\"parts\":[{\"text\":\"x\"}]}}\n\n",
        &mut out,
    );
    d.on_end(&mut out);
    assert_eq!(
        describe(&out),
        ["malformed:a2a.event_too_large", "message", "end:1"]
    );
}

#[test]
fn streaming_call_without_content_type_is_read_as_sse() {
    let body = b"data: {\"task\":{\"id\":\"t\",\"status\":{\"state\":\"TASK_STATE_WORKING\"}}}\n\n";
    let items = decode_with(
        Binding::HttpJson,
        CallKind::SubscribeToTask,
        "",
        200,
        &[],
        body,
        100,
    );
    assert_eq!(describe(&items), ["task:TASK_STATE_WORKING", "end:1"]);
}

#[test]
fn an_event_of_exactly_the_limit_is_decoded_and_one_byte_more_is_not() {
    // The limit counts the event's bytes as sent: its lines with their terminators, the blank
    // line that ends it included.
    let event = b"data: xx\n\n";
    let decode = |limit: usize| {
        let mut d = SseDecoder::new(limit);
        let mut out = Vec::new();
        let r = d.push(event, &mut out);
        (r, out.len())
    };
    assert_eq!(decode(event.len()), (Ok(()), 1));
    assert_eq!(
        decode(event.len() - 1),
        (
            Err(SseError::EventTooLarge {
                limit: event.len() - 1
            }),
            0
        )
    );
}

#[test]
fn an_id_holding_a_null_character_is_ignored() {
    let mut d = SseDecoder::new(1024);
    let mut out = Vec::new();
    d.push(b"id: 7\ndata: a\n\nid: 8\0x\ndata: b\n\n", &mut out)
        .unwrap();
    assert_eq!(out[0].id.as_deref(), Some("7"));
    assert_ne!(out[1].id.as_deref(), Some("8\0x"), "{out:?}");
}
