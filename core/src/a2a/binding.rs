//! The bindings: interface selection (a2a-wire §7.1), request encoding (§2, §3, §5) and
//! incremental response decoding with error projection (§2.3, §3.1, §4) for JSON-RPC and
//! HTTP+JSON (REST); gRPC goes through the same entry points, which delegate to the codec in
//! [`grpc`](super::grpc).
//!
//! Sans-IO: [`encode_call`] returns the bytes and headers to send; the driver feeds the
//! response head, body chunks and trailers into a [`ResponseDecoder`] and acts on the
//! [`ResponseItem`]s it produces.

use super::card::{AgentCard, CardError};
use super::dom::{Dom, DomObject, Json, View};
use super::error::{self, Head, ProtocolError, codes};
use super::grpc::{GrpcEncodeError, GrpcResponseDecoder, encode_grpc_call};
use super::json_text::write_compact;
use super::protojson::{DecodeError, Path, short};
use super::sse::{SseDecoder, SseError, SseEvent};
use super::types::{ListTasksParams, SendMessageRequest, StreamResponse, Task, TaskPage};
use crate::io::HeaderText;
use core::time::Duration;
use serde::ser::Serialize;
use serde_json::{Map, Value};
use std::borrow::Cow;

/// The value of the `A2A-Version` header this client speaks.
pub const A2A_VERSION: &str = "1.0";

/// A protocol binding this client implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Binding {
    /// JSON-RPC 2.0 over HTTP (`JSONRPC`).
    JsonRpc,
    /// HTTP+JSON / REST (`HTTP+JSON`).
    HttpJson,
    /// gRPC over HTTP/2 (`GRPC`), service `lf.a2a.v1.A2AService`.
    Grpc,
}

impl Binding {
    /// The card spelling: `JSONRPC`, `HTTP+JSON` or `GRPC`.
    pub fn as_str(self) -> &'static str {
        match self {
            Binding::JsonRpc => "JSONRPC",
            Binding::HttpJson => "HTTP+JSON",
            Binding::Grpc => "GRPC",
        }
    }

    /// Parses a card `protocolBinding` (case-insensitive); `None` for bindings this client does
    /// not implement.
    pub fn parse(s: &str) -> Option<Binding> {
        let s = s.trim();
        if s.eq_ignore_ascii_case("JSONRPC") {
            Some(Binding::JsonRpc)
        } else if s.eq_ignore_ascii_case("HTTP+JSON") {
            Some(Binding::HttpJson)
        } else if s.eq_ignore_ascii_case("GRPC") {
            Some(Binding::Grpc)
        } else {
            None
        }
    }

    /// Whether requests of this binding travel over HTTP/2 (gRPC) rather than HTTP/1.1.
    pub fn needs_http2(self) -> bool {
        self == Binding::Grpc
    }
}

impl core::fmt::Display for Binding {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The interface chosen for an agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The binding.
    pub binding: Binding,
    /// JSON-RPC endpoint or REST base URL, verbatim from the card; for gRPC the base URL the
    /// method paths are appended to (see [`grpc_base_url`]).
    pub url: String,
    /// The interface's tenant.
    pub tenant: Option<String>,
    /// The interface's `protocolVersion`, verbatim.
    pub protocol_version: String,
}

fn version_rank(v: &str) -> Option<u8> {
    let v = v.trim();
    if v.is_empty() {
        return Some(1);
    }
    let major = v.split('.').next().unwrap_or("").trim();
    match major.parse::<u32>() {
        Ok(1) => Some(0),
        _ => None,
    }
}

/// The base URL of a gRPC interface, from either form of its card `url`:
///
/// * a gRPC target `host:port` (what the Python SDK's servers advertise), optionally written
///   `dns:///host:port`, or `[v6-address]:port`: plaintext HTTP/2, `http://host:port`;
/// * an `http://` or `https://` URL with a host, an optional port and an optional path prefix
///   (kept, without a trailing `/`; the method path `/lf.a2a.v1.A2AService/<Method>` follows
///   it): `https` means TLS with ALPN `h2`, `http` plaintext HTTP/2 with prior knowledge.
///
/// `None` when the value is neither: a bare target needs a port in 1..=65535, a URL may carry
/// no query, fragment or user info, and other schemes are not usable.
pub fn grpc_base_url(url: &str) -> Option<String> {
    let url = url.trim();
    let lower = url.to_ascii_lowercase();
    let scheme_len = if lower.starts_with("http://") {
        Some(7)
    } else if lower.starts_with("https://") {
        Some(8)
    } else {
        None
    };
    let Some(scheme_len) = scheme_len else {
        let target = url.strip_prefix("dns:///").unwrap_or(url);
        let (host, Some(port)) = split_host_port(target)? else {
            return None;
        };
        return Some(format!("http://{host}:{port}"));
    };
    let rest = &url[scheme_len..];
    if rest.contains(['?', '#', '@']) {
        return None;
    }
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], rest[i..].trim_end_matches('/')),
        None => (rest, ""),
    };
    let (host, _port) = split_host_port(authority)?;
    if host.is_empty() || path.contains(char::is_whitespace) {
        return None;
    }
    Some(format!("{}{authority}{path}", &lower[..scheme_len]))
}

/// Splits `host[:port]` (IPv6 in brackets); the port, when written, must be 1..=65535.
fn split_host_port(s: &str) -> Option<(&str, Option<u16>)> {
    let (host, port) = if let Some(rest) = s.strip_prefix('[') {
        let end = rest.find(']').filter(|e| *e > 0)?;
        let after = &rest[end + 1..];
        let port = match after {
            "" => None,
            p => Some(p.strip_prefix(':')?),
        };
        (&s[..end + 2], port)
    } else {
        match s.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (s, None),
        }
    };
    let valid_host = !host.is_empty()
        && host.bytes().all(|b| {
            b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'[' | b']' | b':')
        });
    // Brackets and colons only belong inside an IPv6 literal (RFC 3986 §3.2.2).
    if !valid_host || (!host.starts_with('[') && host.contains([':', '[', ']'])) {
        return None;
    }
    let port = match port {
        None => None,
        Some(p) if p.bytes().all(|b| b.is_ascii_digit()) => {
            Some(p.parse::<u16>().ok().filter(|n| *n != 0)?)
        }
        Some(_) => return None,
    };
    Some((host, port))
}

/// Chooses the interface to talk to (a2a-wire §7.1): candidates whose binding this client
/// implements (JSONRPC, HTTP+JSON, GRPC; case-insensitive) and whose protocol version has
/// major 1 (0.x and other majors are not usable since v0.3 is not implemented).
///
/// Without a preference the order is: JSON-RPC and HTTP+JSON interfaces first, among them a
/// major-1 version before an empty one and then card order (the agent's preference); gRPC
/// interfaces only after all of those, ranked the same way among themselves. A gRPC interface
/// whose `url` is not usable (see [`grpc_base_url`]) is no candidate.
///
/// With `preferred`, the first candidate of that binding in the same order, or an error: there
/// is no silent fallback.
pub fn select_endpoint(
    card: &AgentCard,
    preferred: Option<Binding>,
) -> Result<Endpoint, CardError> {
    let mut candidates: Vec<(u8, usize, Binding)> = card
        .supported_interfaces
        .iter()
        .enumerate()
        .filter_map(|(i, iface)| {
            let b = Binding::parse(&iface.protocol_binding)?;
            let rank = version_rank(&iface.protocol_version)?;
            let usable = match b {
                Binding::Grpc => grpc_base_url(&iface.url).is_some(),
                _ => !iface.url.trim().is_empty(),
            };
            usable.then_some((rank, i, b))
        })
        .collect();
    candidates.sort_by_key(|(rank, i, b)| (*b == Binding::Grpc, *rank, *i));
    let offered = || {
        let list: Vec<String> = card
            .supported_interfaces
            .iter()
            .map(|i| {
                format!("{} {} {}", i.protocol_binding, i.protocol_version, i.url)
                    .trim()
                    .to_owned()
            })
            .collect();
        if list.is_empty() {
            "none".to_owned()
        } else {
            list.join(", ")
        }
    };
    let chosen = match preferred {
        Some(p) => candidates.iter().find(|(_, _, b)| *b == p).ok_or_else(|| {
            CardError::PreferredBindingUnavailable {
                agent: card.name.clone(),
                preferred: p.as_str().to_owned(),
                offered: offered(),
            }
        })?,
        None => candidates
            .first()
            .ok_or_else(|| CardError::NoUsableInterface {
                agent: card.name.clone(),
                offered: offered(),
            })?,
    };
    let iface = &card.supported_interfaces[chosen.1];
    let url = match chosen.2 {
        Binding::Grpc => grpc_base_url(&iface.url).unwrap_or_default(),
        _ => iface.url.trim().to_owned(),
    };
    Ok(Endpoint {
        binding: chosen.2,
        url,
        tenant: iface.tenant.clone().filter(|t| !t.is_empty()),
        protocol_version: iface.protocol_version.clone(),
    })
}

/// HTTP method of an encoded request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpMethod {
    /// `GET`.
    Get,
    /// `POST`.
    Post,
}

impl HttpMethod {
    /// `GET` or `POST`.
    pub fn as_str(self) -> &'static str {
        match self {
            HttpMethod::Get => "GET",
            HttpMethod::Post => "POST",
        }
    }
}

/// A request ready to be sent by the driver (auth headers are the driver's business).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodedRequest {
    /// Method.
    pub method: HttpMethod,
    /// Full URL.
    pub url: String,
    /// Headers in sending order.
    pub headers: Vec<(HeaderText, HeaderText)>,
    /// Body bytes (empty when there is no body).
    pub body: Vec<u8>,
}

/// One A2A operation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum A2aCall<'a> {
    /// Unary `SendMessage`.
    SendMessage(&'a SendMessageRequest),
    /// Streaming `SendStreamingMessage`.
    SendStreamingMessage(&'a SendMessageRequest),
    /// `GetTask`.
    GetTask {
        /// The task id.
        task_id: &'a str,
        /// History to return (`Some(0)` = none).
        history_length: Option<i32>,
    },
    /// `CancelTask`.
    CancelTask {
        /// The task id.
        task_id: &'a str,
    },
    /// Streaming `SubscribeToTask`.
    SubscribeToTask {
        /// The task id.
        task_id: &'a str,
    },
    /// `ListTasks` filtered by context id (first page only; the decoder yields one `Task` event
    /// per listed task).
    ListTasks {
        /// The context id to filter by.
        context_id: &'a str,
        /// Page size (the agent's default when `None`).
        page_size: Option<u32>,
    },
    /// `ListTasks` with the caller's filters and paging, sent as given (no `historyLength`
    /// unless asked for). The decoder yields one `Task` event per listed task and keeps the
    /// page's paging fields ([`ResponseDecoder::task_page`]).
    ListTasksPage(&'a ListTasksParams),
}

/// The kind of an [`A2aCall`], without its data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CallKind {
    /// `SendMessage`.
    SendMessage,
    /// `SendStreamingMessage`.
    SendStreamingMessage,
    /// `GetTask`.
    GetTask,
    /// `CancelTask`.
    CancelTask,
    /// `SubscribeToTask`.
    SubscribeToTask,
    /// `ListTasks`.
    ListTasks,
}

impl CallKind {
    /// Whether the success response is an SSE stream.
    pub fn is_streaming(self) -> bool {
        matches!(
            self,
            CallKind::SendStreamingMessage | CallKind::SubscribeToTask
        )
    }

    /// The JSON-RPC method name.
    pub fn method_name(self) -> &'static str {
        match self {
            CallKind::SendMessage => "SendMessage",
            CallKind::SendStreamingMessage => "SendStreamingMessage",
            CallKind::GetTask => "GetTask",
            CallKind::CancelTask => "CancelTask",
            CallKind::SubscribeToTask => "SubscribeToTask",
            CallKind::ListTasks => "ListTasks",
        }
    }
}

impl A2aCall<'_> {
    /// The call's kind.
    pub fn kind(&self) -> CallKind {
        match self {
            A2aCall::SendMessage(_) => CallKind::SendMessage,
            A2aCall::SendStreamingMessage(_) => CallKind::SendStreamingMessage,
            A2aCall::GetTask { .. } => CallKind::GetTask,
            A2aCall::CancelTask { .. } => CallKind::CancelTask,
            A2aCall::SubscribeToTask { .. } => CallKind::SubscribeToTask,
            A2aCall::ListTasks { .. } | A2aCall::ListTasksPage(_) => CallKind::ListTasks,
        }
    }
}

/// Percent-encodes one path segment (everything but RFC 3986 unreserved characters).
pub fn percent_encode_segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push('%');
            out.push(char::from(b"0123456789ABCDEF"[usize::from(b >> 4)]));
            out.push(char::from(b"0123456789ABCDEF"[usize::from(b & 15)]));
        }
    }
    out
}

/// The `A2A-Extensions` value: trimmed, blank entries dropped, de-duplicated, order kept;
/// `None` when nothing remains.
pub fn extensions_header(extensions: &[String]) -> Option<String> {
    let mut seen: Vec<&str> = Vec::new();
    for e in extensions {
        let e = e.trim();
        if !e.is_empty() && !seen.contains(&e) {
            seen.push(e);
        }
    }
    (!seen.is_empty()).then(|| seen.join(","))
}

fn task_params(tenant: Option<&str>, id: &str, history_length: Option<i32>) -> Value {
    let mut m = Map::new();
    if let Some(t) = tenant {
        m.insert("tenant".to_owned(), Value::String(t.to_owned()));
    }
    m.insert("id".to_owned(), Value::String(id.to_owned()));
    if let Some(h) = history_length {
        m.insert("historyLength".to_owned(), Value::from(h));
    }
    Value::Object(m)
}

/// The `ListTasks` fields that are set, in proto field order, with their ProtoJSON values
/// (camelCase names, the state by its enum name).
fn list_tasks_fields(p: &ListTasksParams) -> Vec<(&'static str, Value)> {
    let mut out = Vec::new();
    if let Some(c) = p.context_id.as_deref().filter(|c| !c.is_empty()) {
        out.push(("contextId", Value::String(c.to_owned())));
    }
    if let Some(s) = p.status {
        out.push(("status", Value::String(s.as_str().to_owned())));
    }
    if let Some(n) = p.page_size {
        out.push(("pageSize", Value::from(n)));
    }
    if let Some(t) = p.page_token.as_deref().filter(|t| !t.is_empty()) {
        out.push(("pageToken", Value::String(t.to_owned())));
    }
    if let Some(h) = p.history_length {
        out.push(("historyLength", Value::from(h)));
    }
    if let Some(t) = p
        .status_timestamp_after
        .as_deref()
        .filter(|t| !t.is_empty())
    {
        out.push(("statusTimestampAfter", Value::String(t.to_owned())));
    }
    if let Some(b) = p.include_artifacts {
        out.push(("includeArtifacts", Value::Bool(b)));
    }
    out
}

/// A request body made by `write`, in room for a typical call (a message with a few short
/// parts is 300 to 500 bytes) at once, where serde_json's own start of 128 bytes grows twice to
/// get there. The ProtoJSON writers and `Value` use string member names only, so writing cannot
/// fail; if it did, the body would be empty.
fn body_written(write: impl FnOnce(&mut Vec<u8>) -> serde_json::Result<()>) -> Vec<u8> {
    let mut out = Vec::with_capacity(512);
    write(&mut out).map(|()| out).unwrap_or_default()
}

fn compact<T: Serialize + ?Sized>(v: &T) -> Vec<u8> {
    body_written(|out| write_compact(out, v))
}

/// A JSON-RPC request body, written straight from its parameters. The envelope around them is
/// fixed text (its member names and the method names need no escaping), so only the id and
/// the parameters go through the serializer; the bytes are the same as serializing the whole
/// envelope as a map.
fn rpc_request<P: Serialize + ?Sized>(rpc_id: &str, kind: CallKind, params: &P) -> Vec<u8> {
    body_written(|out| {
        out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
        write_compact(out, rpc_id)?;
        out.extend_from_slice(br#","method":""#);
        out.extend_from_slice(kind.method_name().as_bytes());
        out.extend_from_slice(br#"","params":"#);
        write_compact(out, params)?;
        out.push(b'}');
        Ok(())
    })
}

/// Encodes one call for the endpoint's binding. `rpc_id` is the JSON-RPC id (ignored by the
/// other bindings); `extensions` become the `A2A-Extensions` header (see
/// [`extensions_header`]); `deadline` is the time left for the call, sent as `grpc-timeout` on
/// gRPC and not sent by the JSON bindings.
///
/// Tenant: the request's own `tenant` if set, else the endpoint's; JSON-RPC puts it into
/// `params.tenant`, REST into the path prefix `{base}/{tenant}/…` and the body, gRPC into the
/// request message's `tenant` field.
///
/// gRPC: a `POST` of the framed message to `{base}/lf.a2a.v1.A2AService/<Method>` with the
/// metadata of [`encode_grpc_call`]; it fails only for a message too large to frame (4 GiB).
/// The JSON bindings never fail.
pub fn encode_call(
    endpoint: &Endpoint,
    call: &A2aCall<'_>,
    rpc_id: &str,
    extensions: &[String],
    deadline: Option<Duration>,
) -> Result<EncodedRequest, GrpcEncodeError> {
    if endpoint.binding == Binding::Grpc {
        let g = encode_grpc_call(call, endpoint.tenant.as_deref(), extensions, deadline)?;
        return Ok(EncodedRequest {
            method: HttpMethod::Post,
            url: format!("{}{}", endpoint.url.trim_end_matches('/'), g.path),
            headers: g.headers,
            body: g.body,
        });
    }
    Ok(encode_json_call(endpoint, call, rpc_id, extensions))
}

fn encode_json_call(
    endpoint: &Endpoint,
    call: &A2aCall<'_>,
    rpc_id: &str,
    extensions: &[String],
) -> EncodedRequest {
    let ep_tenant = endpoint.tenant.as_deref().filter(|t| !t.is_empty());
    let tenant = match call {
        A2aCall::SendMessage(r) | A2aCall::SendStreamingMessage(r) => {
            r.tenant.as_deref().filter(|t| !t.is_empty()).or(ep_tenant)
        }
        _ => ep_tenant,
    };
    let kind = call.kind();
    let (method, url, body): (HttpMethod, String, Option<Vec<u8>>) = match endpoint.binding {
        Binding::JsonRpc | Binding::Grpc => {
            let body = match call {
                A2aCall::SendMessage(r) | A2aCall::SendStreamingMessage(r) => {
                    rpc_request(rpc_id, kind, &r.with_tenant(tenant))
                }
                A2aCall::GetTask {
                    task_id,
                    history_length,
                } => rpc_request(rpc_id, kind, &task_params(tenant, task_id, *history_length)),
                A2aCall::CancelTask { task_id } | A2aCall::SubscribeToTask { task_id } => {
                    rpc_request(rpc_id, kind, &task_params(tenant, task_id, None))
                }
                A2aCall::ListTasks {
                    context_id,
                    page_size,
                } => {
                    let mut m = Map::new();
                    if let Some(t) = tenant {
                        m.insert("tenant".to_owned(), Value::String(t.to_owned()));
                    }
                    m.insert(
                        "contextId".to_owned(),
                        Value::String((*context_id).to_owned()),
                    );
                    if let Some(n) = page_size {
                        m.insert("pageSize".to_owned(), Value::from(*n));
                    }
                    m.insert("historyLength".to_owned(), Value::from(0));
                    rpc_request(rpc_id, kind, &m)
                }
                A2aCall::ListTasksPage(params) => {
                    let mut m = Map::new();
                    if let Some(t) = tenant {
                        m.insert("tenant".to_owned(), Value::String(t.to_owned()));
                    }
                    for (k, v) in list_tasks_fields(params) {
                        m.insert(k.to_owned(), v);
                    }
                    rpc_request(rpc_id, kind, &m)
                }
            };
            (HttpMethod::Post, endpoint.url.clone(), Some(body))
        }
        Binding::HttpJson => {
            let mut base = endpoint.url.trim_end_matches('/').to_owned();
            if let Some(t) = tenant {
                base.push('/');
                base.push_str(&percent_encode_segment(t));
            }
            let tenant_body = || {
                let mut m = Map::new();
                if let Some(t) = tenant {
                    m.insert("tenant".to_owned(), Value::String(t.to_owned()));
                }
                compact(&m)
            };
            match call {
                A2aCall::SendMessage(r) => (
                    HttpMethod::Post,
                    format!("{base}/message:send"),
                    Some(compact(&r.with_tenant(tenant))),
                ),
                A2aCall::SendStreamingMessage(r) => (
                    HttpMethod::Post,
                    format!("{base}/message:stream"),
                    Some(compact(&r.with_tenant(tenant))),
                ),
                A2aCall::GetTask {
                    task_id,
                    history_length,
                } => {
                    let mut url = format!("{base}/tasks/{}", percent_encode_segment(task_id));
                    if let Some(h) = history_length {
                        url.push_str(&format!("?historyLength={h}"));
                    }
                    (HttpMethod::Get, url, None)
                }
                A2aCall::CancelTask { task_id } => (
                    HttpMethod::Post,
                    format!("{base}/tasks/{}:cancel", percent_encode_segment(task_id)),
                    Some(tenant_body()),
                ),
                A2aCall::SubscribeToTask { task_id } => (
                    HttpMethod::Post,
                    format!("{base}/tasks/{}:subscribe", percent_encode_segment(task_id)),
                    None,
                ),
                A2aCall::ListTasks {
                    context_id,
                    page_size,
                } => {
                    let mut url = format!(
                        "{base}/tasks?contextId={}&historyLength=0",
                        percent_encode_segment(context_id)
                    );
                    if let Some(n) = page_size {
                        url.push_str(&format!("&pageSize={n}"));
                    }
                    (HttpMethod::Get, url, None)
                }
                A2aCall::ListTasksPage(params) => {
                    let query: Vec<String> = list_tasks_fields(params)
                        .into_iter()
                        .map(|(k, v)| {
                            let text = match v {
                                Value::String(s) => s,
                                other => other.to_string(),
                            };
                            format!("{k}={}", percent_encode_segment(&text))
                        })
                        .collect();
                    let mut url = format!("{base}/tasks");
                    if !query.is_empty() {
                        url.push('?');
                        url.push_str(&query.join("&"));
                    }
                    (HttpMethod::Get, url, None)
                }
            }
        }
    };
    // Room for the four headers a call can carry here and the two of trace context the
    // exchange adds, so that the list is never grown.
    let mut headers = Vec::with_capacity(6);
    headers.push(("A2A-Version".into(), A2A_VERSION.into()));
    if body.is_some() {
        headers.push(("Content-Type".into(), "application/json".into()));
    }
    let accept = if kind.is_streaming() {
        "text/event-stream"
    } else {
        "application/json"
    };
    headers.push(("Accept".into(), accept.into()));
    if let Some(x) = extensions_header(extensions) {
        headers.push(("A2A-Extensions".into(), x.into()));
    }
    EncodedRequest {
        method,
        url,
        headers,
        body: body.unwrap_or_default(),
    }
}

/// Size limits applied while decoding responses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeLimits {
    /// Largest SSE event, in bytes (default 8 MiB).
    pub max_event_bytes: usize,
    /// Largest unary body, in bytes (default 32 MiB).
    pub max_body_bytes: usize,
}

impl Default for DecodeLimits {
    fn default() -> Self {
        DecodeLimits {
            max_event_bytes: 8 * 1024 * 1024,
            max_body_bytes: 32 * 1024 * 1024,
        }
    }
}

/// What a [`ResponseDecoder`] produced.
#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::large_enum_variant)] // the public shape is fixed; events are moved, not copied
pub enum ResponseItem {
    /// A result or stream event. `SendMessage` results are `Task` or `Message`; `GetTask` and
    /// `CancelTask` results (a bare Task) are `Task`.
    Event(StreamResponse),
    /// A standard error: a JSON-RPC error object (any HTTP status), a REST error envelope, a
    /// non-2xx response with an unknown body, or an error inside an SSE event.
    Rejected(ProtocolError),
    /// Bytes that are not a valid response (bad JSON, wrong shape, oversized event, wrong
    /// JSON-RPC id); code [`codes::INVALID_AGENT_RESPONSE`], [`codes::EVENT_TOO_LARGE`] or
    /// [`codes::BODY_TOO_LARGE`].
    Malformed(ProtocolError),
    /// Always the last item: the number of `Event`s this decoder delivered.
    End {
        /// Number of [`ResponseItem::Event`]s delivered.
        events: usize,
    },
}

#[derive(Debug, Clone)]
enum Mode {
    Undecided,
    /// Boxed: a decoder lives as long as its exchange, and most exchanges are not streams.
    Sse(Box<SseDecoder>),
    Buffer(Vec<u8>),
    Overflowed,
    Ended,
}

/// The media types a JSON binding's response is read differently for (compared without
/// parameters and case).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MediaType {
    EventStream,
    ProblemJson,
    Other,
}

impl MediaType {
    fn of(content_type: &str) -> Self {
        let media = crate::io::media_type(content_type);
        if media.eq_ignore_ascii_case("text/event-stream") {
            MediaType::EventStream
        } else if media.eq_ignore_ascii_case("application/problem+json") {
            MediaType::ProblemJson
        } else {
            MediaType::Other
        }
    }
}

/// Incremental decoder of one HTTP response to one [`A2aCall`].
///
/// For a gRPC endpoint it is a [`GrpcResponseDecoder`]: the same items, with the status taken
/// from the trailers ([`ResponseDecoder::on_trailers`]); a response that ends without a
/// status is malformed. The JSON bindings ignore trailers.
///
/// SSE versus JSON is decided by the response `Content-Type` (`text/event-stream` ⇒ SSE), not
/// by the call kind: a streaming call may get a plain JSON error. A 2xx response without a
/// `Content-Type` is read as SSE for streaming calls and as JSON otherwise. A non-2xx response
/// is always read as an error body.
#[derive(Debug, Clone)]
pub struct ResponseDecoder {
    binding: Binding,
    kind: CallKind,
    rpc_id: String,
    limits: DecodeLimits,
    status: Option<u16>,
    content_type: Option<MediaType>,
    head: Head,
    mode: Mode,
    events: usize,
    sse_out: Vec<SseEvent>,
    grpc: Option<Box<GrpcResponseDecoder>>,
    /// Boxed: only a `ListTasks` answer has one.
    page: Option<Box<TaskPage>>,
}

impl ResponseDecoder {
    /// A decoder for the response to a call of `kind` sent with JSON-RPC id `rpc_id`.
    pub fn new(
        binding: Binding,
        kind: CallKind,
        rpc_id: impl Into<String>,
        limits: DecodeLimits,
    ) -> Self {
        Self::build(binding, kind, rpc_id.into(), limits)
    }

    // Outside `new`, which cargo-mutants does not mutate.
    fn build(binding: Binding, kind: CallKind, rpc_id: String, limits: DecodeLimits) -> Self {
        ResponseDecoder {
            binding,
            kind,
            rpc_id,
            limits,
            status: None,
            content_type: None,
            head: Head::default(),
            mode: Mode::Undecided,
            events: 0,
            sse_out: Vec::new(),
            grpc: (binding == Binding::Grpc)
                .then(|| Box::new(GrpcResponseDecoder::new(kind, limits))),
            page: None,
        }
    }

    /// Feeds the response trailers (gRPC: they carry the call's status); ignored by the JSON
    /// bindings.
    pub fn on_trailers<N: AsRef<str>, V: AsRef<str>>(
        &mut self,
        trailers: &[(N, V)],
        out: &mut Vec<ResponseItem>,
    ) {
        if let Some(g) = &mut self.grpc {
            g.on_trailers(trailers, out);
        }
    }

    /// The paging fields of a decoded `ListTasks` answer (`tasks` left empty: the tasks are
    /// the `Task` events); `None` before the answer was decoded or for other calls.
    pub fn task_page(&self) -> Option<&TaskPage> {
        match &self.grpc {
            Some(g) => g.task_page(),
            None => self.page.as_deref(),
        }
    }

    /// Records the status line and headers (names compared case-insensitively).
    pub fn on_head<N: AsRef<str>, V: AsRef<str>>(&mut self, status: u16, headers: &[(N, V)]) {
        if let Some(g) = &mut self.grpc {
            g.on_head(status, headers);
            return;
        }
        self.status = Some(status);
        self.head.status = Some(status);
        // Kept only where the HTTP layer reports an error: every success would pay for them.
        if !(200..300).contains(&status) {
            self.head.headers = error::redacted_headers(headers);
        }
        for (k, v) in headers {
            let (k, v) = (k.as_ref(), v.as_ref());
            if k.eq_ignore_ascii_case("content-type") {
                self.content_type = Some(MediaType::of(v));
            } else if k.eq_ignore_ascii_case("retry-after") {
                self.head.retry_after = Some(v.trim().to_owned());
            }
        }
    }

    fn is_2xx(&self) -> bool {
        self.status.is_none_or(|s| (200..300).contains(&s))
    }

    fn decide(&mut self) {
        if !matches!(self.mode, Mode::Undecided) {
            return;
        }
        let sse = self.is_2xx()
            && match self.content_type {
                Some(media) => media == MediaType::EventStream,
                None => self.kind.is_streaming(),
            };
        self.mode = if sse {
            Mode::Sse(Box::new(SseDecoder::new(self.limits.max_event_bytes)))
        } else {
            Mode::Buffer(Vec::new())
        };
    }

    /// Feeds body bytes; SSE events are pushed as soon as they are complete.
    pub fn on_body(&mut self, chunk: &[u8], out: &mut Vec<ResponseItem>) {
        self.on_chunk(Cow::Borrowed(chunk), out);
    }

    /// [`ResponseDecoder::on_body`] taking the chunk itself: the first chunk of a body read
    /// whole becomes its buffer instead of being copied into one.
    pub(crate) fn on_body_owned(&mut self, chunk: Vec<u8>, out: &mut Vec<ResponseItem>) {
        self.on_chunk(Cow::Owned(chunk), out);
    }

    fn on_chunk(&mut self, chunk: Cow<'_, [u8]>, out: &mut Vec<ResponseItem>) {
        if let Some(g) = &mut self.grpc {
            g.on_body(&chunk, out);
            return;
        }
        self.decide();
        match &mut self.mode {
            Mode::Sse(sse) => {
                let r = sse.push(&chunk, &mut self.sse_out);
                self.drain_sse(out);
                if let Err(e) = r {
                    out.push(sse_error(e));
                }
            }
            Mode::Buffer(buf) => {
                if buf.len().saturating_add(chunk.len()) > self.limits.max_body_bytes {
                    self.mode = Mode::Overflowed;
                    out.push(ResponseItem::Malformed(ProtocolError::malformed(
                        codes::BODY_TOO_LARGE,
                        format!(
                            "response body larger than {} bytes",
                            self.limits.max_body_bytes
                        ),
                    )));
                } else if buf.is_empty() {
                    *buf = chunk.into_owned();
                } else {
                    buf.extend_from_slice(&chunk);
                }
            }
            Mode::Overflowed | Mode::Ended | Mode::Undecided => {}
        }
    }

    /// Ends the response; always pushes exactly one [`ResponseItem::End`] last (once).
    pub fn on_end(&mut self, out: &mut Vec<ResponseItem>) {
        if let Some(g) = &mut self.grpc {
            g.on_end(out);
            return;
        }
        self.decide();
        match core::mem::replace(&mut self.mode, Mode::Ended) {
            Mode::Sse(mut sse) => {
                let r = sse.finish(&mut self.sse_out);
                self.drain_sse(out);
                if let Err(e) = r {
                    out.push(sse_error(e));
                }
            }
            Mode::Buffer(buf) => self.finish_unary(&buf, out),
            Mode::Overflowed | Mode::Undecided => {}
            Mode::Ended => return,
        }
        out.push(ResponseItem::End {
            events: self.events,
        });
    }

    fn drain_sse(&mut self, out: &mut Vec<ResponseItem>) {
        let events = core::mem::take(&mut self.sse_out);
        for ev in &events {
            let item = self.sse_item(ev);
            self.push(item, out);
        }
    }

    fn push(&mut self, item: ResponseItem, out: &mut Vec<ResponseItem>) {
        if matches!(item, ResponseItem::Event(_)) {
            self.events += 1;
        }
        out.push(item);
    }

    fn sse_item(&self, ev: &SseEvent) -> ResponseItem {
        let arena = Json::arena_for(ev.data.len());
        let v = match Json::parse_str(&ev.data, &arena) {
            Ok(v) => v,
            Err(e) => {
                return malformed(format!(
                    "SSE event{} is not JSON ({e}): {}",
                    ev.event
                        .as_deref()
                        .map(|n| format!(" {n:?}"))
                        .unwrap_or_default(),
                    short(&ev.data)
                ));
            }
        };
        if let Some(err) = error::find_error_in_2xx(&v, &self.head) {
            return ResponseItem::Rejected(err);
        }
        let View::Object(obj) = v.view() else {
            return malformed(format!(
                "SSE event is not a JSON object: {}",
                short(&ev.data)
            ));
        };
        let payload = match self.binding {
            Binding::JsonRpc => match self.rpc_result(obj) {
                Ok(r) => r,
                Err(why) => return malformed(why),
            },
            Binding::HttpJson | Binding::Grpc => {
                // Tolerate a JSON-RPC-wrapped event on a REST stream.
                if obj.get("jsonrpc").is_some() && obj.get("result").is_some() {
                    match self.rpc_result(obj) {
                        Ok(r) => r,
                        Err(why) => return malformed(why),
                    }
                } else {
                    &v
                }
            }
        };
        match StreamResponse::decode(payload, &Path::Root) {
            Ok(sr) => ResponseItem::Event(sr),
            Err(e) => malformed_decode(&e),
        }
    }

    fn rpc_result<'v, O: DomObject>(&self, obj: &'v O) -> Result<&'v O::Value, String> {
        let Some(result) = obj.get("result") else {
            return Err("JSON-RPC response has neither result nor error".to_owned());
        };
        if !id_matches(obj.get("id"), &self.rpc_id) {
            return Err(format!(
                "JSON-RPC response id {} does not match request id {:?}",
                obj.get("id").map_or_else(
                    || "(absent)".to_owned(),
                    |i| short(&i.to_value().to_string())
                ),
                self.rpc_id
            ));
        }
        Ok(result)
    }

    fn finish_unary(&mut self, body: &[u8], out: &mut Vec<ResponseItem>) {
        let status = self.status;
        if !self.is_2xx() {
            let problem = self.content_type == Some(MediaType::ProblemJson);
            let err = serde_json::from_slice::<Value>(body)
                .ok()
                .and_then(|v| error::find_error(&v, &self.head, problem))
                .unwrap_or_else(|| error::from_http_status(status.unwrap_or(0), body, &self.head));
            out.push(ResponseItem::Rejected(err));
            return;
        }
        let arena = Json::arena_for(body.len());
        let v = match Json::parse(body, &arena) {
            Ok(v) => v,
            Err(e) => {
                let why = if body.iter().all(u8::is_ascii_whitespace) {
                    "response body is empty".to_owned()
                } else {
                    format!(
                        "response body is not JSON ({e}): {}",
                        short(&String::from_utf8_lossy(body))
                    )
                };
                out.push(malformed(why));
                return;
            }
        };
        if let Some(err) = error::find_error_in_2xx(&v, &self.head) {
            out.push(ResponseItem::Rejected(err));
            return;
        }
        let View::Object(obj) = v.view() else {
            out.push(malformed(format!(
                "response is not a JSON object: {}",
                short(&v.to_value().to_string())
            )));
            return;
        };
        let payload = match self.binding {
            Binding::JsonRpc => match self.rpc_result(obj) {
                Ok(r) => r,
                Err(why) => {
                    out.push(malformed(why));
                    return;
                }
            },
            Binding::HttpJson | Binding::Grpc => &v,
        };
        if self.kind == CallKind::ListTasks {
            self.push_listed_tasks(&payload.to_value(), out);
            return;
        }
        let item = match self.decode_result(payload) {
            Ok(sr) => ResponseItem::Event(sr),
            Err(e) => malformed_decode(&e),
        };
        self.push(item, out);
    }

    /// A `ListTasksResponse`: every task becomes one `Task` event, in the listed order; a
    /// response without a `tasks` array, or with an invalid task, is malformed as a whole.
    fn push_listed_tasks(&mut self, payload: &Value, out: &mut Vec<ResponseItem>) {
        let tasks = match payload.get("tasks") {
            None | Some(Value::Null) => &[][..],
            Some(Value::Array(tasks)) => tasks.as_slice(),
            Some(_) => {
                out.push(malformed(
                    "ListTasks response: `tasks` is not an array".to_owned(),
                ));
                return;
            }
        };
        let mut decoded = Vec::with_capacity(tasks.len());
        for (i, t) in tasks.iter().enumerate() {
            match Task::decode(t, &Path::Root) {
                Ok(task) => decoded.push(task),
                Err(e) => {
                    out.push(malformed(format!(
                        "ListTasks response: invalid task {i} at {e}"
                    )));
                    return;
                }
            }
        }
        let paging = TaskPage::from_json(&Value::Object(
            ["nextPageToken", "pageSize", "totalSize"]
                .iter()
                .filter_map(|k| payload.get(*k).map(|v| ((*k).to_owned(), v.clone())))
                .collect(),
        ));
        match paging {
            Ok(page) => self.page = Some(Box::new(page)),
            Err(e) => {
                out.push(malformed(format!(
                    "ListTasks response: invalid paging at {e}"
                )));
                return;
            }
        }
        for task in decoded {
            self.push(ResponseItem::Event(StreamResponse::Task(task)), out);
        }
    }

    fn decode_result<D: Dom>(&self, payload: &D) -> Result<StreamResponse, DecodeError> {
        match self.kind {
            CallKind::GetTask | CallKind::CancelTask => {
                let wrapped = matches!(payload.view(), View::Object(m) if m.get("task").is_some());
                if wrapped {
                    StreamResponse::decode(payload, &Path::Root)
                } else {
                    Task::decode(payload, &Path::Root).map(StreamResponse::Task)
                }
            }
            _ => StreamResponse::decode(payload, &Path::Root),
        }
    }
}

fn id_matches<D: Dom>(id: Option<&D>, rpc_id: &str) -> bool {
    match id.map(Dom::view) {
        Some(View::String(s)) => s == rpc_id,
        Some(View::Number(n)) => n.to_string() == rpc_id,
        _ => false,
    }
}

fn malformed(message: String) -> ResponseItem {
    ResponseItem::Malformed(ProtocolError::malformed(
        codes::INVALID_AGENT_RESPONSE,
        message,
    ))
}

fn malformed_decode(e: &DecodeError) -> ResponseItem {
    malformed(format!("invalid A2A payload at {e}"))
}

fn sse_error(e: SseError) -> ResponseItem {
    match e {
        SseError::EventTooLarge { .. } => ResponseItem::Malformed(ProtocolError::malformed(
            codes::EVENT_TOO_LARGE,
            e.to_string(),
        )),
    }
}
