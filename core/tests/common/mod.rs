//! Helpers shared by the fixture-based integration tests.
#![allow(dead_code)]

use a2at_core::a2a::{AgentCard, Binding, CallKind, DecodeLimits, ResponseDecoder, ResponseItem};
use a2at_core::agents::AgentDirectory;
use std::path::PathBuf;

/// A recorded HTTP exchange (curl capture) from `tests/fixtures/transcripts`.
pub struct Transcript {
    pub name: String,
    pub request_line: String,
    pub request_body: String,
    pub status: u16,
    pub headers: Vec<(String, String)>,
    /// The response body, de-chunked when the capture was taken with `--raw`.
    pub body: Vec<u8>,
}

pub fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/transcripts")
}

pub fn load(name: &str) -> Transcript {
    let raw = std::fs::read(fixtures_dir().join(name)).expect("fixture readable");
    parse(name, &raw)
}

/// All curl-style transcripts (the `engine_*` captures use another format).
pub fn all_curl_transcripts() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(fixtures_dir())
        .expect("fixtures dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".txt") && !n.starts_with("engine_"))
        .collect();
    names.sort();
    names
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn parse(name: &str, raw: &[u8]) -> Transcript {
    const REQ: &[u8] = b"### ---------------- REQUEST";
    const RESP: &[u8] = b"### ---------------- RESPONSE";
    let req_at = find(raw, REQ).expect("request marker");
    let resp_at = find(raw, RESP).expect("response marker");
    let req = &raw[req_at..resp_at];
    let req = &req[find(req, b"\n").unwrap() + 1..];
    let request_line = String::from_utf8_lossy(&req[..find(req, b"\r\n").unwrap()]).into_owned();
    let request_body = match find(req, b"\r\n\r\n") {
        Some(i) => String::from_utf8_lossy(&req[i + 4..]).trim().to_owned(),
        None => String::new(),
    };
    let resp = &raw[resp_at..];
    let resp = &resp[find(resp, b"\n").unwrap() + 1..];
    let head_end = find(resp, b"\r\n\r\n").unwrap_or(resp.len());
    let head = String::from_utf8_lossy(&resp[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap();
    let status: u16 = status_line.split(' ').nth(1).unwrap().parse().unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let mut body = resp.get(head_end + 4..).unwrap_or(&[]).to_vec();
    let chunked = headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    if chunked && looks_chunked(&body) {
        body = dechunk(&body);
    }
    Transcript {
        name: name.to_owned(),
        request_line,
        request_body,
        status,
        headers,
        body,
    }
}

fn looks_chunked(body: &[u8]) -> bool {
    match find(body, b"\r\n") {
        Some(i) if i > 0 => body[..i].iter().all(u8::is_ascii_hexdigit),
        _ => false,
    }
}

fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(i) = find(b, b"\r\n") {
        let size = usize::from_str_radix(std::str::from_utf8(&b[..i]).unwrap().trim(), 16).unwrap();
        if size == 0 {
            break;
        }
        out.extend_from_slice(&b[i + 2..i + 2 + size]);
        b = &b[i + 2 + size + 2..];
    }
    out
}

impl Transcript {
    pub fn binding(&self) -> Binding {
        if self.name.starts_with("jsonrpc_") {
            Binding::JsonRpc
        } else {
            Binding::HttpJson
        }
    }

    /// The call kind, derived from the recorded request.
    pub fn kind(&self) -> CallKind {
        match self.binding() {
            Binding::JsonRpc => {
                let m = self.request_body.as_str();
                if m.contains("\"SendStreamingMessage\"") {
                    CallKind::SendStreamingMessage
                } else if m.contains("\"GetTask\"") {
                    CallKind::GetTask
                } else if m.contains("\"CancelTask\"") {
                    CallKind::CancelTask
                } else if m.contains("\"SubscribeToTask\"") {
                    CallKind::SubscribeToTask
                } else {
                    CallKind::SendMessage
                }
            }
            Binding::HttpJson | Binding::Grpc => {
                let l = self.request_line.as_str();
                if l.contains(":stream") {
                    CallKind::SendStreamingMessage
                } else if l.contains(":cancel") {
                    CallKind::CancelTask
                } else if l.contains(":subscribe") {
                    CallKind::SubscribeToTask
                } else if l.starts_with("GET /tasks") || l.starts_with("DELETE /tasks") {
                    CallKind::GetTask
                } else {
                    CallKind::SendMessage
                }
            }
        }
    }

    /// The JSON-RPC id of the recorded request (as text).
    pub fn rpc_id(&self) -> String {
        serde_json::from_str::<serde_json::Value>(&self.request_body)
            .ok()
            .and_then(|v| v.get("id").cloned())
            .map(|id| match id {
                serde_json::Value::String(s) => s,
                other => other.to_string(),
            })
            .unwrap_or_default()
    }

    /// Runs the body through a [`ResponseDecoder`] split into chunks of `chunk` bytes.
    pub fn decode(&self, chunk: usize) -> Vec<ResponseItem> {
        decode_with(
            self.binding(),
            self.kind(),
            &self.rpc_id(),
            self.status,
            &self.headers,
            &self.body,
            chunk,
        )
    }
}

pub fn decode_with(
    binding: Binding,
    kind: CallKind,
    rpc_id: &str,
    status: u16,
    headers: &[(String, String)],
    body: &[u8],
    chunk: usize,
) -> Vec<ResponseItem> {
    let mut d = ResponseDecoder::new(binding, kind, rpc_id, DecodeLimits::default());
    let mut out = Vec::new();
    d.on_head(status, headers);
    for c in body.chunks(chunk.max(1)) {
        d.on_body(c, &mut out);
    }
    d.on_end(&mut out);
    out
}

/// Compact description of decoded items, e.g. `task:TASK_STATE_COMPLETED`,
/// `rejected:a2a.task_not_found`, `end:1`.
pub fn describe(items: &[ResponseItem]) -> Vec<String> {
    use a2at_core::a2a::StreamResponse as S;
    items
        .iter()
        .map(|i| match i {
            ResponseItem::Event(S::Task(t)) => format!("task:{}", t.status.state.as_str()),
            ResponseItem::Event(S::Message(_)) => "message".to_owned(),
            ResponseItem::Event(S::StatusUpdate(s)) => {
                format!("statusUpdate:{}", s.status.state.as_str())
            }
            ResponseItem::Event(S::ArtifactUpdate(_)) => "artifactUpdate".to_owned(),
            ResponseItem::Rejected(e) => format!("rejected:{}", e.code),
            ResponseItem::Malformed(e) => format!("malformed:{}", e.code),
            ResponseItem::End { events } => format!("end:{events}"),
        })
        .collect()
}

/// One HTTP exchange of an `engine_*` TCP capture: the request bytes, and the response split
/// into head and the body pieces as they arrived (HTTP chunks de-framed, one piece each).
pub struct TcpExchange {
    pub request: Vec<u8>,
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body_pieces: Vec<Vec<u8>>,
}

impl TcpExchange {
    pub fn request_line(&self) -> String {
        let end = find(&self.request, b"\r\n").unwrap_or(self.request.len());
        String::from_utf8_lossy(&self.request[..end]).into_owned()
    }

    pub fn request_json(&self) -> Option<serde_json::Value> {
        let i = find(&self.request, b"\r\n\r\n")?;
        serde_json::from_slice(&self.request[i + 4..]).ok()
    }
}

/// Parses an `engine_*` capture (`===== conn N dir LEN bytes @ T =====` segments).
pub fn load_tcp(name: &str) -> Vec<TcpExchange> {
    let raw = std::fs::read(fixtures_dir().join(name)).expect("fixture readable");
    let mut segs: Vec<(bool, Vec<u8>)> = Vec::new();
    let mut rest = &raw[..];
    while let Some(i) = find(rest, b"===== conn ") {
        let line_end = i + find(&rest[i..], b"\n").unwrap();
        let header = String::from_utf8_lossy(&rest[i..line_end]).into_owned();
        let words: Vec<&str> = header.split(' ').collect();
        let to_client = words[3] == "server->client";
        let len: usize = words[4].parse().unwrap();
        let start = line_end + 1;
        segs.push((to_client, rest[start..start + len].to_vec()));
        rest = &rest[start + len..];
    }
    let mut out: Vec<TcpExchange> = Vec::new();
    let mut request = Vec::new();
    let mut response: Option<Vec<Vec<u8>>> = None;
    let flush =
        |request: &mut Vec<u8>, response: &mut Option<Vec<Vec<u8>>>, out: &mut Vec<TcpExchange>| {
            if let Some(segs) = response.take() {
                out.push(to_exchange(core::mem::take(request), segs));
            }
        };
    for (to_client, bytes) in segs {
        if to_client {
            response.get_or_insert_with(Vec::new).push(bytes);
        } else {
            flush(&mut request, &mut response, &mut out);
            request.extend_from_slice(&bytes);
        }
    }
    flush(&mut request, &mut response, &mut out);
    out
}

fn to_exchange(request: Vec<u8>, segs: Vec<Vec<u8>>) -> TcpExchange {
    let all: Vec<u8> = segs.concat();
    let head_end = find(&all, b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&all[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let body = &all[head_end + 4..];
    let chunked = headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    let body_pieces = if chunked {
        let mut pieces = Vec::new();
        let mut b = body;
        while let Some(i) = find(b, b"\r\n") {
            let size =
                usize::from_str_radix(std::str::from_utf8(&b[..i]).unwrap().trim(), 16).unwrap();
            if size == 0 {
                break;
            }
            pieces.push(b[i + 2..i + 2 + size].to_vec());
            b = &b[i + 2 + size + 2..];
        }
        pieces
    } else {
        vec![body.to_vec()]
    };
    TcpExchange {
        request,
        status,
        headers,
        body_pieces,
    }
}

/// Splits `bytes` at the given (unsorted, possibly repeated) cut points.
pub fn split_at_cuts<'a>(bytes: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    cuts.sort_unstable();
    let mut out = Vec::new();
    let mut last = 0;
    for c in cuts {
        out.push(&bytes[last..c]);
        last = c;
    }
    out.push(&bytes[last..]);
    out
}

/// `alpha`: one HTTP+JSON interface at `http://alpha.test/a2a/rest`, no streaming, one skill.
pub fn alpha_rest() -> AgentDirectory {
    let card = AgentCard::from_json_value(&serde_json::json!({
        "name": "alpha",
        "description": "the agent",
        "version": "1.0.0",
        "supportedInterfaces": [{"url": "http://alpha.test/a2a/rest",
                                 "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}],
        "capabilities": {"streaming": false},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "s", "name": "s", "description": "s", "tags": []}]
    }))
    .expect("a valid card");
    AgentDirectory::new(vec![card], None).expect("a valid directory")
}

/// A directory with one bare card per `(name, url, binding)`: that one interface, no skill.
pub fn directory_of(agents: &[(&str, &str, &str)]) -> AgentDirectory {
    let cards = agents
        .iter()
        .map(|(name, url, binding)| {
            AgentCard::from_json_value(&serde_json::json!({
                "name": name, "description": "d", "version": "1",
                "supportedInterfaces": [{"url": url, "protocolBinding": binding, "protocolVersion": "1.0"}],
                "capabilities": {}, "defaultInputModes": [], "defaultOutputModes": [], "skills": []
            }))
            .expect("a valid card")
        })
        .collect();
    AgentDirectory::new(cards, None).expect("a valid directory")
}

/// JSON values a `google.protobuf.Value` can hold exactly (numbers are finite doubles), nested
/// at most `depth` arrays/objects deep, each holding at most `width - 1` members (about
/// `8 * width` nodes in all). Object keys and strings are short arbitrary text.
pub fn json_value(
    depth: u32,
    width: u32,
) -> impl proptest::strategy::Strategy<Value = serde_json::Value> {
    use proptest::prelude::*;
    use serde_json::Value;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| serde_json::json!(f)),
        ".{0,12}".prop_map(Value::String),
    ];
    let members = 0..width as usize;
    leaf.prop_recursive(depth, 8 * width, width, move |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), members.clone()).prop_map(Value::Array),
            proptest::collection::vec((".{0,8}", inner), members.clone())
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// The error of a failed host reply, whichever callback it answers.
pub fn host_failure(reply: a2at_core::host::HostReply) -> a2at_core::host::HostError {
    use a2at_core::host::HostReply;
    match reply {
        HostReply::Task(Err(e))
        | HostReply::SelfTask(Err(e))
        | HostReply::Route(Err(e))
        | HostReply::Negotiation(Err(e))
        | HostReply::InputRequired(Err(e)) => e,
        other => panic!("a failure expected, got {other:?}"),
    }
}

/// The members of a JSON object written in a test (metadata, a struct).
pub fn object(value: serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
    match value {
        serde_json::Value::Object(members) => members,
        other => panic!("not an object: {other}"),
    }
}

/// Asserts that `message` decodes from its own protobuf encoding to itself.
pub fn proto_round_trip<T>(message: &T)
where
    T: a2at_core::a2a::grpc::GrpcMessage + PartialEq + core::fmt::Debug,
{
    let bytes = message.encode_proto();
    assert_eq!(&T::decode_proto(&bytes).expect("decodes"), message);
}
