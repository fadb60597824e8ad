//! Property tests: chunking independence and no panics on arbitrary input.

mod common;

use a2at_core::a2a::{
    AgentCard, Binding, CallKind, DecodeLimits, ResponseAccumulator, ResponseDecoder, ResponseItem,
    SseDecoder, SseEvent,
};
use a2at_core::a2at::NegotiationContext;
use proptest::prelude::*;
use serde_json::{Map, Value, json};

const CASES: u32 = 512;

fn sse_all(chunks: &[&[u8]], max: usize) -> Vec<SseEvent> {
    let mut d = SseDecoder::new(max);
    let mut out = Vec::new();
    for c in chunks {
        let _ = d.push(c, &mut out);
    }
    let _ = d.finish(&mut out);
    out
}

fn line_end() -> impl Strategy<Value = &'static str> {
    prop_oneof![Just("\n"), Just("\r\n"), Just("\r")]
}

/// A syntactically varied SSE stream.
fn sse_stream() -> impl Strategy<Value = Vec<u8>> {
    let field = prop_oneof![
        "[a-zA-Z0-9 {}\":,é协✓]{0,20}".prop_map(|s| format!("data: {s}")),
        "[a-z0-9]{0,5}".prop_map(|s| format!("data:{s}")),
        "[a-z]{0,6}".prop_map(|s| format!("event: {s}")),
        "[0-9]{0,3}".prop_map(|s| format!("id: {s}")),
        "[ -~]{0,10}".prop_map(|s| format!(":{s}")),
        Just(String::new()),
    ];
    (
        proptest::collection::vec((field, line_end()), 0..30),
        any::<bool>(),
    )
        .prop_map(|(lines, bom)| {
            let mut s = if bom {
                "\u{feff}".to_owned()
            } else {
                String::new()
            };
            for (l, e) in lines {
                s.push_str(&l);
                s.push_str(e);
            }
            s.into_bytes()
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    #[test]
    fn sse_events_do_not_depend_on_chunking(stream in sse_stream(), cuts in proptest::collection::vec(any::<usize>(), 0..12), max in prop_oneof![Just(usize::MAX), 8usize..200]) {
        let whole = sse_all(&[&stream], max);
        let chunked = sse_all(&common::split_at_cuts(&stream, &cuts), max);
        prop_assert_eq!(whole, chunked);
    }

    #[test]
    fn sse_arbitrary_bytes_chunking_and_no_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400), cuts in proptest::collection::vec(any::<usize>(), 0..8), max in 1usize..64) {
        let whole = sse_all(&[&bytes], max);
        let chunked = sse_all(&common::split_at_cuts(&bytes, &cuts), max);
        prop_assert_eq!(whole, chunked);
    }

    #[test]
    fn assembly_does_not_depend_on_chunking(
        updates in proptest::collection::vec((0u8..3, any::<bool>(), "[a-z ]{0,6}", any::<bool>()), 1..12),
        snapshot_at in proptest::option::of(0usize..12),
        crlf in any::<bool>(),
        cuts in proptest::collection::vec(any::<usize>(), 0..16),
        binding in prop_oneof![Just(Binding::JsonRpc), Just(Binding::HttpJson)],
    ) {
        let nl = if crlf { "\r\n" } else { "\n" };
        let mut body = String::new();
        for (i, (id, append, text, data)) in updates.iter().enumerate() {
            let part = if *data { json!({"data":[text, [1]]}) } else { json!({"text": text}) };
            let payload = if snapshot_at == Some(i) {
                json!({"task":{"id":"t","status":{"state":"TASK_STATE_WORKING"},
                    "artifacts":[{"artifactId":format!("a{id}"),"parts":[part]}]}})
            } else {
                json!({"artifactUpdate":{"taskId":"t","append":append,
                    "artifact":{"artifactId":format!("a{id}"),"parts":[part],"metadata":{"i":i}}}})
            };
            let data = match binding {
                Binding::JsonRpc => json!({"jsonrpc":"2.0","id":"s","result":payload}),
                Binding::HttpJson | Binding::Grpc => payload,
            };
            body.push_str(&format!("data: {data}{nl}{nl}"));
        }
        let run = |chunks: &[&[u8]]| {
            let mut d = ResponseDecoder::new(binding, CallKind::SendStreamingMessage, "s", DecodeLimits::default());
            let mut items = Vec::new();
            d.on_head(200, &[("content-type", "text/event-stream")]);
            for c in chunks {
                d.on_body(c, &mut items);
            }
            d.on_end(&mut items);
            let mut acc = ResponseAccumulator::new();
            for i in &items {
                if let ResponseItem::Event(e) = i {
                    acc.apply(e.clone());
                }
            }
            (items.len(), acc.artifacts().to_vec(), acc.outputs())
        };
        let whole = run(&[body.as_bytes()]);
        prop_assert_eq!(whole.0, updates.len() + 1);
        let chunked = run(&common::split_at_cuts(body.as_bytes(), &cuts));
        prop_assert_eq!(whole, chunked);
    }

    #[test]
    fn response_decoder_never_panics(
        bytes in proptest::collection::vec(any::<u8>(), 0..600),
        cuts in proptest::collection::vec(any::<usize>(), 0..8),
        status in prop_oneof![Just(200u16), Just(400), Just(404), Just(500), 100u16..600],
        ct in prop_oneof![Just("text/event-stream"), Just("application/json"), Just("application/problem+json"), Just("text/plain"), Just("")],
        jsonrpc in any::<bool>(),
        kind in prop_oneof![Just(CallKind::SendMessage), Just(CallKind::SendStreamingMessage), Just(CallKind::GetTask), Just(CallKind::CancelTask), Just(CallKind::SubscribeToTask)],
        small in any::<bool>(),
    ) {
        let binding = if jsonrpc { Binding::JsonRpc } else { Binding::HttpJson };
        let limits = if small { DecodeLimits { max_event_bytes: 50, max_body_bytes: 300 } } else { DecodeLimits::default() };
        let mut d = ResponseDecoder::new(binding, kind, "1", limits);
        let mut out = Vec::new();
        let headers = if ct.is_empty() { vec![] } else { vec![("Content-Type".to_owned(), ct.to_owned())] };
        d.on_head(status, &headers);
        for c in common::split_at_cuts(&bytes, &cuts) {
            d.on_body(c, &mut out);
        }
        d.on_end(&mut out);
        let ends = out.iter().filter(|i| matches!(i, ResponseItem::End { .. })).count();
        prop_assert_eq!(ends, 1);
        let events = out.iter().filter(|i| matches!(i, ResponseItem::Event(_))).count();
        prop_assert_eq!(out.last(), Some(&ResponseItem::End { events }));
    }

    #[test]
    fn response_decoder_never_panics_on_json_shaped_sse(v in json_value(), jsonrpc in any::<bool>()) {
        let binding = if jsonrpc { Binding::JsonRpc } else { Binding::HttpJson };
        for payload in [v.clone(), json!({"result": v.clone(), "id": "1"}), json!({"task": v.clone()}), json!({"error": v.clone()})] {
            let body = format!("data: {payload}\n\n");
            let items = common::decode_with(binding, CallKind::SubscribeToTask, "1", 200, &[("content-type".into(), "text/event-stream".into())], body.as_bytes(), 7);
            prop_assert!(matches!(items.last(), Some(ResponseItem::End { .. })), "no End");
            let items = common::decode_with(binding, CallKind::SendMessage, "1", 200, &[], payload.to_string().as_bytes(), 7);
            prop_assert!(matches!(items.last(), Some(ResponseItem::End { .. })), "no End");
        }
    }

    #[test]
    fn agent_card_parsing_never_panics(v in json_value(), card in card_like()) {
        let _ = AgentCard::from_json_value(&v);
        if let Ok(c) = AgentCard::from_json_value(&card) {
            // Whatever parses re-encodes and parses again to the same card.
            let again = AgentCard::from_json_value(&c.to_json()).unwrap();
            let _ = a2at_core::a2a::select_endpoint(&c, None);
            prop_assert_eq!(again.supported_interfaces, c.supported_interfaces);
        }
    }

    #[test]
    fn negotiation_context_parsing_never_panics(v in json_value(), ctx in ctx_like()) {
        let _ = NegotiationContext::from_json(&v);
        if let Ok(c) = NegotiationContext::from_json(&ctx) {
            prop_assert!(c.round >= 1 && c.max_rounds >= 1 && !c.id.trim().is_empty());
            prop_assert_eq!(NegotiationContext::from_json(&c.to_json()).unwrap(), c);
        }
    }
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        "[a-zA-Z0-9_ :/.=-]{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::vec((key(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<String, Value>>())),
        ]
    })
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z]{1,8}",
        prop::sample::select(vec![
            "name",
            "url",
            "capabilities",
            "supportedInterfaces",
            "securitySchemes",
            "securityRequirements",
            "security",
            "schemes",
            "list",
            "type",
            "scheme",
            "in",
            "protocolBinding",
            "protocolVersion",
            "preferredTransport",
            "additionalInterfaces",
            "transport",
            "extensions",
            "required",
            "uri",
            "skills",
            "id",
            "round",
            "maxRounds",
            "performative",
            "task",
            "message",
            "status",
            "state",
            "parts",
            "text",
            "raw",
            "data",
            "file",
            "kind",
            "error",
            "result",
            "artifact",
            "taskId",
            "httpAuthSecurityScheme",
            "apiKeySecurityScheme",
            "supportsAuthenticatedExtendedCard",
        ])
        .prop_map(str::to_owned),
    ]
}

fn card_like() -> impl Strategy<Value = Value> {
    (
        proptest::option::of("[a-z ]{0,8}"),
        proptest::option::of(json_value()),
        proptest::option::of(json_value()),
        proptest::option::of(json_value()),
        proptest::option::of(json_value()),
        proptest::option::of("[a-z:/.]{0,12}"),
    )
        .prop_map(|(name, ifaces, caps, schemes, reqs, url)| {
            let mut m = Map::new();
            if let Some(n) = name {
                m.insert("name".into(), Value::String(n));
            }
            for (k, v) in [
                ("supportedInterfaces", ifaces),
                ("capabilities", caps),
                ("securitySchemes", schemes),
                ("securityRequirements", reqs),
            ] {
                if let Some(v) = v {
                    m.insert(k.into(), v);
                }
            }
            if let Some(u) = url {
                m.insert("url".into(), Value::String(u));
            }
            Value::Object(m)
        })
}

fn ctx_like() -> impl Strategy<Value = Value> {
    let num = prop_oneof![
        (-3i64..10).prop_map(Value::from),
        (-3.0f64..10.0).prop_map(Value::from),
        (0u32..6).prop_map(|i| Value::from(f64::from(i))),
        "[0-9.]{0,3}".prop_map(Value::String),
        any::<bool>().prop_map(Value::Bool),
    ];
    (
        prop_oneof!["[a-f0-9-]{0,12}".prop_map(Value::String), Just(Value::Null)],
        num.clone(),
        num,
        prop::sample::select(vec!["PROPOSE", "ACCEPT", "REJECT", "ABORT", "propose", ""]),
    )
        .prop_map(|(id, r, m, p)| json!({"id": id, "round": r, "maxRounds": m, "performative": p}))
}
