//! Rules of the bindings (`core/src/a2a/binding.rs`) that the mutation run of that file showed
//! were not yet pinned down, each stated against what a caller sees: the text of a binding, the
//! interface chosen from a card, and the items a [`ResponseDecoder`] yields.

mod common;

use a2at_core::a2a::binding::grpc_base_url;
use a2at_core::a2a::{
    AgentCard, Binding, CallKind, DecodeLimits, ResponseDecoder, ResponseItem, select_endpoint,
};
use common::describe;
use proptest::prelude::*;
use serde_json::json;

fn json_head() -> Vec<(String, String)> {
    vec![("Content-Type".to_owned(), "application/json".to_owned())]
}

/// Decodes one body, fed in one chunk, with the given limits.
fn decode_limited(
    binding: Binding,
    kind: CallKind,
    rpc_id: &str,
    head: &[(String, String)],
    body: &[u8],
    limits: DecodeLimits,
) -> Vec<ResponseItem> {
    let mut d = ResponseDecoder::new(binding, kind, rpc_id, limits);
    let mut out = Vec::new();
    d.on_head(200, head);
    d.on_body(body, &mut out);
    d.on_end(&mut out);
    out
}

// Rule: a binding prints as its card spelling, the text an operator finds in the agent card.
// mutant: replace <impl Display for Binding>::fmt with Ok(Default::default()).
#[test]
fn a_binding_prints_as_its_card_spelling() {
    for (binding, text) in [
        (Binding::JsonRpc, "JSONRPC"),
        (Binding::HttpJson, "HTTP+JSON"),
        (Binding::Grpc, "GRPC"),
    ] {
        assert_eq!(binding.to_string(), text);
        assert_eq!(format!("[{binding}]"), format!("[{text}]"));
        assert_eq!(Binding::parse(&binding.to_string()), Some(binding));
    }
}

// Rule: the body limit is the largest body accepted: a body of exactly that many bytes is
// decoded, one byte more is too large.
// mutant: replace > with >= in ResponseDecoder::on_body.
#[test]
fn a_body_of_exactly_the_limit_is_decoded_and_one_byte_more_is_too_large() {
    let body = br#"{"task":{"id":"t","status":{"state":"TASK_STATE_COMPLETED"}}}"#;
    for (extra, want) in [
        (0, ["task:TASK_STATE_COMPLETED", "end:1"]),
        (1, ["malformed:a2a.body_too_large", "end:0"]),
    ] {
        let limits = DecodeLimits {
            max_body_bytes: body.len() - extra,
            ..DecodeLimits::default()
        };
        let items = decode_limited(
            Binding::HttpJson,
            CallKind::SendMessage,
            "",
            &json_head(),
            body,
            limits,
        );
        assert_eq!(describe(&items), want, "limit {}", limits.max_body_bytes);
    }
}

proptest! {
    // Rule: the body limit is decided on the whole body, however it arrives: cut into any
    // chunks, a body is too large exactly when it is longer than the limit.
    #[test]
    fn the_body_limit_does_not_depend_on_how_the_body_is_cut(
        slack in -3isize..=3,
        chunk in 1usize..80,
    ) {
        let body = br#"{"jsonrpc":"2.0","id":"1","result":{"task":{"id":"t","status":{"state":"TASK_STATE_COMPLETED"}}}}"#;
        let limit = body.len().saturating_add_signed(slack);
        let limits = DecodeLimits { max_body_bytes: limit, ..DecodeLimits::default() };
        let mut d = ResponseDecoder::new(Binding::JsonRpc, CallKind::SendMessage, "1", limits);
        let mut out = Vec::new();
        d.on_head(200, &json_head());
        for c in body.chunks(chunk) {
            d.on_body(c, &mut out);
        }
        d.on_end(&mut out);
        let want = if body.len() > limit {
            ["malformed:a2a.body_too_large", "end:0"]
        } else {
            ["task:TASK_STATE_COMPLETED", "end:1"]
        };
        prop_assert_eq!(describe(&out), want);
    }
}

/// The items of one `SendStreamingMessage` answer on HTTP+JSON carrying these SSE events.
fn rest_stream(rpc_id: &str, events: &[serde_json::Value]) -> Vec<ResponseItem> {
    let body: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
    common::decode_with(
        Binding::HttpJson,
        CallKind::SendStreamingMessage,
        rpc_id,
        200,
        &[("Content-Type".to_owned(), "text/event-stream".to_owned())],
        body.as_bytes(),
        9,
    )
}

// Rule: a REST stream unwraps an event only when it is shaped as a JSON-RPC response, with both
// a `jsonrpc` and a `result` member; any other event is its own payload, whatever further
// members it carries.
// mutant: replace && with || in ResponseDecoder::sse_item.
#[test]
fn a_rest_stream_unwraps_only_events_shaped_as_json_rpc_responses() {
    let working = json!({"id": "t", "status": {"state": "TASK_STATE_WORKING"}});
    let done = json!({"id": "t", "status": {"state": "TASK_STATE_COMPLETED"}});
    let items = rest_stream(
        "r",
        &[
            // A `jsonrpc` member alone does not make an envelope.
            json!({"jsonrpc": "2.0", "task": working}),
            // Nor does a `result` member alone, even beside a matching id.
            json!({"task": done, "result": {"task": working}, "id": "r"}),
            // Both together do.
            json!({"jsonrpc": "2.0", "id": "r", "result": {"task": done}}),
        ],
    );
    assert_eq!(
        describe(&items),
        [
            "task:TASK_STATE_WORKING",
            "task:TASK_STATE_COMPLETED",
            "task:TASK_STATE_COMPLETED",
            "end:3"
        ]
    );
}

fn card_with(interfaces: serde_json::Value) -> AgentCard {
    AgentCard::from_json_value(
        &json!({"name": "agent-x", "capabilities": {}, "supportedInterfaces": interfaces}),
    )
    .unwrap()
}

// Rule: square brackets belong only around an IPv6 literal (RFC 3986 §3.2.2): a gRPC target or
// URL whose host holds one anywhere else is no usable interface, so selection passes over it to
// the next gRPC interface instead of handing the driver an address it cannot dial.
#[test]
fn a_bracket_outside_an_ipv6_literal_makes_a_grpc_interface_unusable() {
    for url in [
        "a]b:1",
        "a[b:1",
        "dns:///h]:1",
        "http://a]b:1",
        "https://h[x/p",
    ] {
        assert_eq!(grpc_base_url(url), None, "{url:?}");
        let card = card_with(json!([
            {"url": url, "protocolBinding": "GRPC", "protocolVersion": "1.0"},
            {"url": "g.example:1", "protocolBinding": "GRPC", "protocolVersion": "1.0"}
        ]));
        let chosen = select_endpoint(&card, Some(Binding::Grpc)).unwrap();
        assert_eq!(chosen.url, "http://g.example:1", "{url:?}");
    }
    assert_eq!(grpc_base_url("[::1]:1").as_deref(), Some("http://[::1]:1"));
    assert_eq!(
        grpc_base_url("https://[::1]/p").as_deref(),
        Some("https://[::1]/p")
    );
}

// Rule: a response's media type is read without its parameters and in any case: an answer typed
// `Text/Event-Stream; charset=utf-8` is an event stream as `text/event-stream` is, and a type
// that only begins like it is not one.
#[test]
fn an_event_stream_is_known_by_its_media_type_in_any_case_and_with_parameters() {
    let event = json!({"jsonrpc": "2.0", "id": "r", "result": {"task":
        {"id": "t", "status": {"state": "TASK_STATE_COMPLETED"}}}});
    let body = format!("data: {event}\n\n");
    let read_as = |content_type: &str| {
        describe(&common::decode_with(
            Binding::JsonRpc,
            CallKind::SendStreamingMessage,
            "r",
            200,
            &[("Content-Type".to_owned(), content_type.to_owned())],
            body.as_bytes(),
            7,
        ))
    };
    let stream = read_as("text/event-stream");
    assert!(
        stream
            .iter()
            .any(|item| item == "task:TASK_STATE_COMPLETED"),
        "{stream:?}"
    );
    for content_type in [
        "Text/Event-Stream; charset=utf-8",
        "TEXT/EVENT-STREAM",
        " text/event-stream ;charset=utf-8",
    ] {
        assert_eq!(read_as(content_type), stream, "{content_type}");
    }
    assert_ne!(read_as("text/event-streams"), stream);
}
