//! Standard A2A error envelopes and their projection to stable `a2a.<reason>` codes
//! (a2a-wire §3.2, §4).
//!
//! Projection rules, in order:
//! 1. the `google.rpc.ErrorInfo` detail (located by `@type` ending in `google.rpc.ErrorInfo`, else
//!    the first detail with a string `reason`) gives the reason;
//! 2. a JSON-RPC error without ErrorInfo takes the reason of its code from the A2A table
//!    (`-32700` → `JSON_PARSE`, the reason Java servers use; unknown codes → `a2a.jsonrpc.<code>`
//!    unless the HTTP status is non-2xx, then `a2a.http.<status>`);
//! 3. no reason → `a2a.http.<status>`; an RFC 9457 problem body → `remote.problem.<status>`.
//!
//! `code` = `a2a.` + the reason lowercased with every run of non-alphanumerics replaced by `_`
//! and `_` trimmed; `INTERNAL` and `INTERNAL_ERROR` both give `a2a.internal_error`.

use super::dom::{Dom, DomObject, View};
use serde_json::{Map, Value};

/// Stable codes produced by this module besides `a2a.<reason>`.
pub mod codes {
    /// The response bytes are not a valid A2A response.
    pub const INVALID_AGENT_RESPONSE: &str = "a2a.invalid_agent_response";
    /// One SSE event exceeded [`DecodeLimits::max_event_bytes`](crate::a2a::DecodeLimits).
    pub const EVENT_TOO_LARGE: &str = "a2a.event_too_large";
    /// A unary body exceeded [`DecodeLimits::max_body_bytes`](crate::a2a::DecodeLimits).
    pub const BODY_TOO_LARGE: &str = "a2a.body_too_large";
    /// A stream that ended without any event (a2a-wire §4.2 item 3, P8): for callers that see
    /// `End { events: 0 }` with nothing rejected.
    pub const EMPTY_STREAM: &str = "a2a.empty_stream";
    /// Internal error reasons (`INTERNAL`, `INTERNAL_ERROR`) normalise to this.
    pub const INTERNAL_ERROR: &str = "a2a.internal_error";
}

/// A rejected or undecodable A2A response, projected to a stable code.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ProtocolError {
    /// Stable code, e.g. `a2a.task_not_found`, `a2a.http.404`, `remote.problem.400`.
    pub code: String,
    /// Human-readable message (redacted).
    pub message: String,
    /// The observed non-2xx HTTP status, else the envelope's status (REST `error.code`, or the
    /// spec status of the JSON-RPC code).
    pub http_status: Option<u16>,
    /// The JSON-RPC error code, when the error came as a JSON-RPC error object.
    pub rpc_code: Option<i64>,
    /// The raw ErrorInfo reason (or the reason derived from the JSON-RPC code).
    pub reason: Option<String>,
    /// The gRPC status name of a REST envelope (`NOT_FOUND`, …).
    pub status: Option<String>,
    /// REST `details` / JSON-RPC `data` / the problem body (redacted); `Null` when absent.
    pub details: Value,
    /// The `Retry-After` response header, verbatim.
    pub retry_after: Option<String>,
    /// The headers of a non-2xx response, in order, with secret values redacted (empty for
    /// an error carried in a 2xx body, and for local failures).
    pub headers: Vec<(String, String)>,
}

impl ProtocolError {
    /// A local decoding failure with the given stable code.
    pub fn malformed(code: &str, message: impl Into<String>) -> ProtocolError {
        ProtocolError {
            code: code.to_owned(),
            message: message.into(),
            http_status: None,
            rpc_code: None,
            reason: None,
            status: None,
            details: Value::Null,
            retry_after: None,
            headers: Vec::new(),
        }
    }

    /// The structured evidence of the error as failure details: HTTP status, JSON-RPC code,
    /// reason, the envelope's details, `Retry-After` as `retryAfter` and the redacted response
    /// headers as an object (a repeated header keeps its last value).
    pub fn evidence(&self) -> Value {
        let headers: Map<String, Value> = self
            .headers
            .iter()
            .map(|(name, value)| (name.to_ascii_lowercase(), Value::String(value.clone())))
            .collect();
        serde_json::json!({
            "httpStatus": self.http_status,
            "rpcCode": self.rpc_code,
            "reason": self.reason,
            "details": self.details,
            "retryAfter": self.retry_after,
            "headers": headers,
        })
    }
}

/// `a2a.` + normalised reason (see the module docs).
pub fn reason_code(reason: &str) -> String {
    let mut out = String::with_capacity(reason.len());
    let mut pending_sep = false;
    for c in reason.chars() {
        if c.is_ascii_alphanumeric() {
            if pending_sep && !out.is_empty() {
                out.push('_');
            }
            pending_sep = false;
            out.push(c.to_ascii_lowercase());
        } else {
            pending_sep = true;
        }
    }
    if out == "internal" {
        out.push_str("_error");
    }
    format!("a2a.{out}")
}

/// The A2A reason for a JSON-RPC error code (a2a-wire §4.1).
pub fn reason_for_rpc_code(code: i64) -> Option<&'static str> {
    Some(match code {
        -32001 => "TASK_NOT_FOUND",
        -32002 => "TASK_NOT_CANCELABLE",
        -32003 => "PUSH_NOTIFICATION_NOT_SUPPORTED",
        -32004 => "UNSUPPORTED_OPERATION",
        -32005 => "CONTENT_TYPE_NOT_SUPPORTED",
        -32006 => "INVALID_AGENT_RESPONSE",
        -32007 => "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
        -32008 => "EXTENSION_SUPPORT_REQUIRED",
        -32009 => "VERSION_NOT_SUPPORTED",
        -32700 => "JSON_PARSE",
        -32600 => "INVALID_REQUEST",
        -32601 => "METHOD_NOT_FOUND",
        -32602 => "INVALID_PARAMS",
        -32603 => "INTERNAL_ERROR",
        _ => return None,
    })
}

/// The spec HTTP status of a JSON-RPC error code (a2a-wire §4.1).
pub fn http_status_for_rpc_code(code: i64) -> Option<u16> {
    Some(match code {
        -32001 | -32601 => 404,
        -32006 | -32603 => 500,
        -32002 | -32003 | -32004 | -32005 | -32007 | -32008 | -32009 | -32700 | -32600 | -32602 => {
            400
        }
        _ => return None,
    })
}

/// Finds the ErrorInfo reason in a list of typed details.
pub fn error_info_reason(details: &Value) -> Option<String> {
    let items = details.as_array()?;
    let by_type = items.iter().find(|d| {
        d.get("@type")
            .and_then(Value::as_str)
            .is_some_and(|t| t.ends_with("google.rpc.ErrorInfo"))
    });
    let info = by_type.or_else(|| {
        items
            .iter()
            .find(|d| d.get("reason").is_some_and(Value::is_string))
    })?;
    info.get("reason")
        .and_then(Value::as_str)
        .filter(|r| !r.trim().is_empty())
        .map(str::to_owned)
}

/// Context of a response, used when projecting an error found in it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Head {
    /// The HTTP status, when known.
    pub status: Option<u16>,
    /// `Retry-After`, verbatim.
    pub retry_after: Option<String>,
    /// The headers of a non-2xx response, secret values redacted.
    pub headers: Vec<(String, String)>,
}

impl Head {
    fn non_2xx(&self) -> Option<u16> {
        self.status.filter(|s| !(200..300).contains(s))
    }
}

/// Response headers as kept in an error: names as sent, secret values masked.
pub(crate) fn redacted_headers<N: AsRef<str>, V: AsRef<str>>(
    headers: &[(N, V)],
) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|(name, value)| {
            let name = name.as_ref();
            (
                name.to_owned(),
                crate::redact::redact_header(name, value.as_ref()),
            )
        })
        .collect()
}

fn message_of(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => redact_str(s),
        Some(Value::Null) | None => String::new(),
        Some(other) => redact_str(&other.to_string()),
    }
}

fn redacted(v: Option<&Value>) -> Value {
    let mut v = v.cloned().unwrap_or(Value::Null);
    redact_json(&mut v);
    v
}

/// Projects a JSON-RPC `error` object.
pub(crate) fn from_jsonrpc_error(err: &Map<String, Value>, head: &Head) -> ProtocolError {
    let rpc_code = err.get("code").and_then(|c| {
        c.as_i64().or_else(|| {
            c.as_f64()
                .filter(|f| f.fract() == 0.0 && f.abs() < 1e15)
                .map(|f| f as i64)
        })
    });
    let data = err.get("data");
    let info_reason = data.and_then(error_info_reason);
    let reason = info_reason.or_else(|| rpc_code.and_then(reason_for_rpc_code).map(str::to_owned));
    let http_status = head
        .non_2xx()
        .or_else(|| rpc_code.and_then(http_status_for_rpc_code));
    let code = match (&reason, head.non_2xx(), rpc_code) {
        (Some(r), _, _) => reason_code(r),
        (None, Some(s), _) => format!("a2a.http.{s}"),
        (None, None, Some(c)) => format!("a2a.jsonrpc.{c}"),
        (None, None, None) => codes::INVALID_AGENT_RESPONSE.to_owned(),
    };
    ProtocolError {
        code,
        message: message_of(err.get("message")),
        http_status,
        rpc_code,
        reason,
        status: None,
        details: redacted(data),
        retry_after: head.retry_after.clone(),
        headers: head.headers.clone(),
    }
}

/// Projects a REST `error` envelope (`google.rpc.Status` JSON).
pub(crate) fn from_rest_error(err: &Map<String, Value>, head: &Head) -> ProtocolError {
    let details = err.get("details");
    let reason = details.and_then(error_info_reason);
    let embedded = err
        .get("code")
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| (400..600).contains(c));
    let http_status = head.non_2xx().or(embedded);
    let code = match (&reason, http_status) {
        (Some(r), _) => reason_code(r),
        (None, Some(s)) => format!("a2a.http.{s}"),
        (None, None) => codes::INVALID_AGENT_RESPONSE.to_owned(),
    };
    ProtocolError {
        code,
        message: message_of(err.get("message")),
        http_status,
        rpc_code: None,
        reason,
        status: err.get("status").and_then(Value::as_str).map(str::to_owned),
        details: redacted(details),
        retry_after: head.retry_after.clone(),
        headers: head.headers.clone(),
    }
}

/// Projects an RFC 9457 problem body.
fn from_problem(p: &Map<String, Value>, head: &Head) -> ProtocolError {
    let embedded = p
        .get("status")
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok());
    let status = head.non_2xx().or(embedded);
    let mut message = message_of(p.get("detail"));
    if message.is_empty() {
        message = message_of(p.get("title"));
    }
    ProtocolError {
        code: match status {
            Some(s) => format!("remote.problem.{s}"),
            None => "remote.problem".to_owned(),
        },
        message,
        http_status: status,
        rpc_code: None,
        reason: None,
        status: None,
        details: redacted(Some(&Value::Object(p.clone()))),
        retry_after: head.retry_after.clone(),
        headers: head.headers.clone(),
    }
}

/// `TaskNotFoundError` → `TASK_NOT_FOUND` (legacy Java `{"error":"org.….TaskNotFoundError"}`).
/// A word starts at a capital after a lower-case letter, or at the last capital of an acronym
/// (`JSONParseError` → `JSON_PARSE`, the reason -32700 has on JSON-RPC).
fn legacy_class_reason(class: &str) -> Option<String> {
    let simple = class.rsplit('.').next()?.trim();
    let simple = simple.strip_suffix("Error").unwrap_or(simple);
    if simple.is_empty() || !simple.chars().all(|c| c.is_ascii_alphanumeric()) {
        return None;
    }
    let b = simple.as_bytes();
    let mut out = String::new();
    for (i, &c) in b.iter().enumerate() {
        let word_start = c.is_ascii_uppercase()
            && i > 0
            && (b[i - 1].is_ascii_lowercase() || b.get(i + 1).is_some_and(u8::is_ascii_lowercase));
        if word_start {
            out.push('_');
        }
        out.push(char::from(c.to_ascii_uppercase()));
    }
    Some(out)
}

/// [`find_error`] for a 2xx body parsed into any tree. Behind a 2xx status only an `error`
/// member makes a body an error (a problem document needs a non-2xx status or its media type,
/// which a 2xx JSON or SSE body does not have), so only such a body is copied into a `Value`
/// for the reader.
pub(crate) fn find_error_in_2xx<D: Dom>(body: &D, head: &Head) -> Option<ProtocolError> {
    let View::Object(m) = body.view() else {
        return None;
    };
    m.get("error")?;
    find_error(&body.to_value(), head, false)
}

/// Looks for a standard error in a parsed JSON body; only a top-level `error` member counts.
/// Returns `None` when the body carries no error.
pub(crate) fn find_error(
    body: &Value,
    head: &Head,
    problem_media_type: bool,
) -> Option<ProtocolError> {
    let m = body.as_object()?;
    match m.get("error") {
        Some(Value::Object(e)) => {
            // JSON-RPC errors carry `jsonrpc`/`id` beside `error`, or a negative code; REST
            // envelopes carry an HTTP status as code and/or `status`/`details`.
            let code_negative = e.get("code").and_then(Value::as_i64).is_some_and(|c| c < 0);
            let is_rpc = m.contains_key("jsonrpc") || code_negative || e.contains_key("data");
            let is_rest = e.contains_key("details") || e.contains_key("status");
            Some(if is_rpc && !is_rest {
                from_jsonrpc_error(e, head)
            } else {
                from_rest_error(e, head)
            })
        }
        Some(Value::String(class)) => {
            let reason = legacy_class_reason(class);
            Some(ProtocolError {
                code: match (&reason, head.non_2xx()) {
                    (Some(r), _) => reason_code(r),
                    (None, Some(s)) => format!("a2a.http.{s}"),
                    (None, None) => codes::INVALID_AGENT_RESPONSE.to_owned(),
                },
                message: message_of(m.get("message")),
                http_status: head.non_2xx(),
                rpc_code: None,
                reason,
                status: None,
                details: redacted(Some(body)),
                retry_after: head.retry_after.clone(),
                headers: head.headers.clone(),
            })
        }
        _ => {
            let problem_shape =
                m.contains_key("title") && (m.contains_key("type") || m.contains_key("status"));
            if problem_media_type || (problem_shape && head.non_2xx().is_some()) {
                Some(from_problem(m, head))
            } else {
                None
            }
        }
    }
}

/// An error for a non-2xx response whose body is no recognised envelope.
pub(crate) fn from_http_status(status: u16, body: &[u8], head: &Head) -> ProtocolError {
    let text = String::from_utf8_lossy(body);
    let text = super::protojson::short(text.trim());
    ProtocolError {
        code: format!("a2a.http.{status}"),
        message: redact_str(&text),
        http_status: Some(status),
        rpc_code: None,
        reason: None,
        status: None,
        details: Value::Null,
        retry_after: head.retry_after.clone(),
        headers: head.headers.clone(),
    }
}

const SECRET_KEY_PARTS: [&str; 7] = [
    "authorization",
    "cookie",
    "token",
    "secret",
    "password",
    "accesssession",
    "access_session",
];

/// The replacement for redacted values.
pub const REDACTED: &str = "[REDACTED]";

fn is_secret_key(k: &str) -> bool {
    let k = k.to_ascii_lowercase();
    SECRET_KEY_PARTS.iter().any(|p| k.contains(p))
}

/// Redacts secrets in place: values under keys containing authorization/cookie/token/secret/
/// password/accessSession become `"[REDACTED]"`, and `Bearer …`/`Basic …` credentials inside
/// strings are replaced.
pub fn redact_json(v: &mut Value) {
    match v {
        Value::Object(m) => {
            for (k, val) in m.iter_mut() {
                if is_secret_key(k) {
                    *val = Value::String(REDACTED.to_owned());
                } else {
                    redact_json(val);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(redact_json),
        Value::String(s) => {
            let r = redact_str(s);
            if r != *s {
                *s = r;
            }
        }
        _ => {}
    }
}

/// The length of the white space `s` starts with, in bytes: one ASCII white space byte, or a
/// two-byte JSON escape of a tab or line break (the logs mask the JSON text as sent); 0 if none.
fn white_space_len(s: &str) -> usize {
    match s.as_bytes() {
        [b, ..] if b.is_ascii_whitespace() => 1,
        [b'\\', b't' | b'n' | b'r', ..] => 2,
        _ => 0,
    }
}

/// Replaces the credential after every `Bearer` / `Basic` (any case) followed by white space
/// (a space, a tab, a line break, or a JSON text's `\t`, `\n`, `\r` escape) in `s`.
pub fn redact_str(s: &str) -> String {
    let lower = s.to_ascii_lowercase();
    let bytes = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    // Every round moves past at least one byte, so the text's length bounds the rounds: a slip
    // in the scan can give a wrong text but never a scan that turns back and appends forever.
    for _ in 0..s.len() {
        let Some(rest) = lower.get(i..).filter(|rest| !rest.is_empty()) else {
            break;
        };
        // The scheme word and the first white space after it.
        let hit = ["bearer", "basic"].iter().find_map(|p| {
            let space = rest.strip_prefix(*p).map_or(0, white_space_len);
            (space > 0).then_some(p.len() + space)
        });
        let at_word_start = i == 0 || !bytes[i - 1].is_ascii_alphanumeric();
        if let (Some(n), true) = (hit, at_word_start) {
            out.push_str(&s[i..i + n]);
            let mut j = i + n;
            // Every round moves past at least one byte, so the text's length bounds the rounds.
            for _ in 0..s.len() {
                match white_space_len(&s[j..]) {
                    0 => break,
                    len => j += len,
                }
            }
            let end = s[j..]
                .find(|c: char| c.is_whitespace() || c == '"' || c == '\'' || c == ',')
                .map_or(s.len(), |e| j + e);
            if end > j {
                out.push_str(REDACTED);
            }
            i = end;
        } else {
            let c = s[i..].chars().next().unwrap_or(' ');
            out.push(c);
            i += c.len_utf8().max(1);
        }
    }
    out
}
