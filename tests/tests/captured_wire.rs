//! Replays responses captured from real `a2a-sdk` 1.3.0 agents (tests/interop/record_wire.py)
//! through [`ResponseDecoder`], whole and in small chunks, and checks each file's expectation.
//!
//! Fixture layout (tests/fixtures/wire/, see tests/interop/README.md): `<name>.http` holds the
//! response as received (status line, `name: value` header lines, empty line, transfer-decoded
//! body bytes); `<name>.json` names the binding, call kind and JSON-RPC id and holds `expect`:
//! either `{"rejected": "a2a.<reason>"}` or `{"events": [...], "finalState": ..., "outputs"?,
//! "statusText"?, "proposeRound"?}` where each event is summarised as `task:<STATE>`,
//! `status:<STATE>`, `artifact[+append][+last]` or `message`.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use a2at_core::a2a::{
    Binding, CallKind, DecodeLimits, ResponseAccumulator, ResponseDecoder, ResponseItem,
    StreamResponse,
};
use a2at_core::a2at::{self, NEGOTIATION_T_URI, Performative};
use serde_json::Value;

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/wire")
}

/// One captured exchange.
struct Fixture {
    name: String,
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    binding: Binding,
    kind: CallKind,
    rpc_id: String,
    chunks: Vec<usize>,
    expect: Value,
}

fn parse_kind(s: &str) -> CallKind {
    match s {
        "SendMessage" => CallKind::SendMessage,
        "SendStreamingMessage" => CallKind::SendStreamingMessage,
        "GetTask" => CallKind::GetTask,
        "CancelTask" => CallKind::CancelTask,
        "SubscribeToTask" => CallKind::SubscribeToTask,
        other => panic!("unknown call kind {other:?}"),
    }
}

fn load(http: &Path) -> Fixture {
    let name = http
        .file_stem()
        .and_then(|s| s.to_str())
        .expect("utf-8 file name")
        .to_owned();
    let raw = fs::read(http).expect("read .http");
    let split = raw
        .windows(2)
        .position(|w| w == b"\n\n")
        .unwrap_or_else(|| panic!("{name}: no empty line after the head"));
    let head = std::str::from_utf8(&raw[..split]).expect("ASCII head");
    let body = raw[split + 2..].to_vec();
    let mut lines = head.lines();
    let status_line = lines.next().expect("status line");
    let status: u16 = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{name}: bad status line {status_line:?}"));
    let headers = lines
        .map(|l| {
            let (k, v) = l
                .split_once(':')
                .unwrap_or_else(|| panic!("{name}: bad header {l:?}"));
            (k.trim().to_owned(), v.trim().to_owned())
        })
        .collect();

    let meta: Value = serde_json::from_slice(
        &fs::read(http.with_extension("json"))
            .unwrap_or_else(|e| panic!("{name}: sidecar .json: {e}")),
    )
    .unwrap_or_else(|e| panic!("{name}: sidecar is not JSON: {e}"));
    let text = |k: &str| {
        meta[k]
            .as_str()
            .unwrap_or_else(|| panic!("{name}: sidecar lacks {k:?}"))
            .to_owned()
    };
    let binding =
        Binding::parse(&text("binding")).unwrap_or_else(|| panic!("{name}: unknown binding"));
    let kind = parse_kind(&text("kind"));
    let rpc_id = text("rpcId");
    let chunks = meta["chunks"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|n| n.as_u64().expect("chunk size") as usize)
                .collect()
        })
        .unwrap_or_default();
    let expect = meta["expect"].clone();
    assert!(expect.is_object(), "{name}: sidecar lacks \"expect\"");
    Fixture {
        name,
        status,
        headers,
        body,
        binding,
        kind,
        rpc_id,
        chunks,
        expect,
    }
}

fn all_fixtures() -> Vec<Fixture> {
    let dir = fixture_dir();
    let mut http = Vec::new();
    let mut json = BTreeSet::new();
    for entry in fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("dir entry").path();
        match path.extension().and_then(|e| e.to_str()) {
            Some("http") => http.push(path),
            Some("json") => {
                json.insert(path);
            }
            _ => panic!("unexpected file in fixtures/wire: {}", path.display()),
        }
    }
    http.sort();
    for h in &http {
        assert!(
            json.remove(&h.with_extension("json")),
            "{}: no .json sidecar",
            h.display()
        );
    }
    assert!(json.is_empty(), "sidecars without a .http file: {json:?}");
    http.iter().map(|p| load(p)).collect()
}

/// Decodes the fixture's response with the body cut into `chunks` (sizes, cycled).
fn decode_with(f: &Fixture, rpc_id: &str, chunks: &[usize]) -> Vec<ResponseItem> {
    let mut dec = ResponseDecoder::new(f.binding, f.kind, rpc_id, DecodeLimits::default());
    dec.on_head(f.status, &f.headers);
    let mut out = Vec::new();
    let mut rest = &f.body[..];
    let mut sizes = chunks.iter().copied().filter(|&n| n > 0).cycle();
    while !rest.is_empty() {
        let n = sizes.next().unwrap_or(rest.len()).min(rest.len());
        let (now, later) = rest.split_at(n);
        dec.on_body(now, &mut out);
        rest = later;
    }
    dec.on_end(&mut out);
    // on_end is idempotent.
    let before = out.len();
    dec.on_end(&mut out);
    assert_eq!(out.len(), before, "{}: second on_end pushed items", f.name);
    out
}

fn summary(ev: &StreamResponse) -> String {
    match ev {
        StreamResponse::Task(t) => format!("task:{}", t.status.state.as_str()),
        StreamResponse::StatusUpdate(s) => format!("status:{}", s.status.state.as_str()),
        StreamResponse::ArtifactUpdate(a) => {
            let mut s = "artifact".to_owned();
            if a.append {
                s.push_str("+append");
            }
            if a.last_chunk {
                s.push_str("+last");
            }
            s
        }
        StreamResponse::Message(_) => "message".to_owned(),
    }
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|s| s.as_str().expect("string").to_owned())
        .collect()
}

/// Checks the decoded items against the fixture's expectation.
fn check(f: &Fixture, items: &[ResponseItem]) {
    let name = &f.name;
    let Some(ResponseItem::End { events }) = items.last() else {
        panic!("{name}: last item is not End: {items:?}");
    };
    let malformed: Vec<_> = items
        .iter()
        .filter(|i| matches!(i, ResponseItem::Malformed(_)))
        .collect();
    assert!(
        malformed.is_empty(),
        "{name}: malformed items {malformed:?}"
    );

    if let Some(code) = f.expect.get("rejected").and_then(Value::as_str) {
        let rejected: Vec<_> = items
            .iter()
            .filter_map(|i| match i {
                ResponseItem::Rejected(e) => Some(e),
                _ => None,
            })
            .collect();
        assert_eq!(rejected.len(), 1, "{name}: {items:?}");
        assert_eq!(rejected[0].code, code, "{name}: {:?}", rejected[0]);
        assert!(!rejected[0].message.is_empty(), "{name}: empty message");
        assert_eq!(*events, 0, "{name}: events next to a rejection");
        assert_eq!(items.len(), 2, "{name}: {items:?}");
        return;
    }

    let evs: Vec<&StreamResponse> = items
        .iter()
        .filter_map(|i| match i {
            ResponseItem::Event(e) => Some(e),
            ResponseItem::Rejected(e) => panic!("{name}: rejected {e:?}"),
            _ => None,
        })
        .collect();
    assert_eq!(*events, evs.len(), "{name}: End count");
    let got: Vec<String> = evs.iter().map(|e| summary(e)).collect();
    assert_eq!(got, strings(&f.expect["events"]), "{name}: events");

    // All events of one response concern one task.
    let ids: BTreeSet<&str> = evs.iter().filter_map(|e| e.task_id()).collect();
    assert_eq!(ids.len(), 1, "{name}: task ids {ids:?}");

    let mut acc = ResponseAccumulator::new();
    for e in &evs {
        acc.apply((*e).clone());
    }
    let state = acc.state().map(|s| s.as_str());
    assert_eq!(
        state,
        f.expect["finalState"].as_str(),
        "{name}: final state"
    );
    if let Some(outputs) = f.expect.get("outputs") {
        assert_eq!(&Value::Array(acc.outputs()), outputs, "{name}: outputs");
    }
    if let Some(text) = f.expect.get("statusText").and_then(Value::as_str) {
        let msg = acc
            .status_message()
            .unwrap_or_else(|| panic!("{name}: no status message"));
        assert_eq!(msg.parts.first().and_then(|p| p.as_text()), Some(text));
    }
    if let Some(round) = f.expect.get("proposeRound").and_then(Value::as_u64) {
        let received = acc.received_messages();
        let last = received.last().expect("received message");
        let ctx = a2at::context_of(last)
            .unwrap_or_else(|e| panic!("{name}: negotiation context: {e}"))
            .unwrap_or_else(|| panic!("{name}: no negotiation context"));
        assert_eq!(u64::from(ctx.round), round, "{name}: round");
        assert_eq!(ctx.max_rounds, 3, "{name}: maxRounds");
        assert_eq!(ctx.performative, Performative::Propose, "{name}");
        let msg = last.message.as_ref().expect("status message");
        assert!(
            msg.extensions.iter().any(|e| e == NEGOTIATION_T_URI),
            "{name}: extensions {:?}",
            msg.extensions
        );
        let meta = msg.metadata.as_ref().expect("metadata");
        assert!(a2at::metadata_has_negotiation_key(meta), "{name}");
        assert_eq!(
            meta.get(a2at::TEMPLATE_URI_KEY).and_then(Value::as_str),
            Some("Negotiation-T/information-negotiation/propose/v1"),
            "{name}"
        );
    }
}

#[test]
fn fixtures_cover_both_bindings_and_all_call_kinds() {
    let fixtures = all_fixtures();
    assert!(fixtures.len() >= 20, "only {} fixtures", fixtures.len());
    for binding in [Binding::JsonRpc, Binding::HttpJson] {
        for kind in [
            CallKind::SendMessage,
            CallKind::SendStreamingMessage,
            CallKind::GetTask,
            CallKind::CancelTask,
        ] {
            assert!(
                fixtures.iter().any(|f| f.binding == binding
                    && f.kind == kind
                    && f.expect["events"].is_array()),
                "no successful {kind:?} fixture for {binding}"
            );
        }
        for code in ["a2a.task_not_found", "a2a.version_not_supported"] {
            assert!(
                fixtures
                    .iter()
                    .any(|f| f.binding == binding && f.expect["rejected"] == code),
                "no {code} fixture for {binding}"
            );
        }
    }
}

#[test]
fn captured_responses_decode_whole() {
    for f in all_fixtures() {
        check(&f, &decode_with(&f, &f.rpc_id, &[]));
    }
}

#[test]
fn captured_responses_decode_identically_in_any_chunking() {
    for f in all_fixtures() {
        let whole = decode_with(&f, &f.rpc_id, &[]);
        let mut plans: Vec<Vec<usize>> = vec![vec![1], vec![2], vec![7], vec![64], vec![3, 1, 13]];
        if !f.chunks.is_empty() {
            plans.push(f.chunks.clone());
        }
        for plan in plans {
            let items = decode_with(&f, &f.rpc_id, &plan);
            assert_eq!(items, whole, "{}: chunks {plan:?} differ", f.name);
        }
    }
}

#[test]
fn streams_deliver_events_before_the_end() {
    // An SSE event must be delivered as soon as its bytes are in, not only at on_end.
    for f in all_fixtures() {
        let sse = f.status == 200
            && f.headers.iter().any(|(k, v)| {
                k.eq_ignore_ascii_case("content-type") && v.starts_with("text/event-stream")
            });
        if !sse {
            continue;
        }
        let mut dec = ResponseDecoder::new(f.binding, f.kind, &f.rpc_id, DecodeLimits::default());
        dec.on_head(f.status, &f.headers);
        let mut out = Vec::new();
        dec.on_body(&f.body, &mut out);
        let expected = f.expect["events"].as_array().map_or(0, Vec::len);
        assert_eq!(out.len(), expected, "{}: events before on_end", f.name);
    }
}

#[test]
fn json_rpc_results_with_another_id_are_malformed() {
    let mut checked = 0;
    for f in all_fixtures() {
        if f.binding != Binding::JsonRpc || !f.expect["events"].is_array() {
            continue;
        }
        let items = decode_with(&f, "not-the-request-id", &[]);
        assert!(
            items.iter().any(|i| matches!(i, ResponseItem::Malformed(e)
                if e.code == "a2a.invalid_agent_response")),
            "{}: {items:?}",
            f.name
        );
        assert!(
            !items.iter().any(|i| matches!(i, ResponseItem::Event(_))),
            "{}",
            f.name
        );
        checked += 1;
    }
    assert!(checked > 0);
}
