//! Protocol log entries with mandatory redaction.
//!
//! Every function here returns a `String` that a runtime hands to `tracing` at DEBUG under
//! [`TARGET`]; the runtime formats entries only when that level is enabled and drops an entry
//! it cannot produce rather than affect delivery. Redaction cannot be turned off:
//!
//! * header names and JSON keys containing `authorization`, `cookie`, `token`, `secret` or
//!   `password` (any case), or equal to `pwd`, `passwd`, `accesssession`, `x-api-key`,
//!   `api-key`, `apikey`, have their values replaced by `***`; URI-shaped keys (containing
//!   `://`, e.g. extension URIs) are exempt ([`is_secret_name`]);
//! * form-encoded and query-string values of `password`, `passwd`, `pwd`, `*token`, `*secret`,
//!   `accessSession`, `api-key`/`api_key`/`apikey` (and every name [`is_secret_name`] accepts)
//!   are masked ([`redact_form`], [`redact_url`]);
//! * `Bearer …` / `Basic …` credentials are masked anywhere;
//! * JSON is redacted **on the wire text** ([`redact_json_text`]): the text is scanned, not
//!   parsed and reserialised, so key order, escapes and number spelling stay as sent; a secret
//!   value cut off by the end of the text is masked to the end;
//! * login request bodies are credential material: every field value is masked.
//!
//! Bodies are capped at [`LogConfig::max_body_chars`] characters (default 100 000, minimum
//! 256) after redaction, labelled `body truncated`; binary bodies are omitted. Pretty display
//! reindents valid JSON without changing its tokens: escaped newlines stay escaped and
//! invalid JSON stays raw.
//!
//! Correlation fields come from [`HttpRequest::correlation`] and are local log fields,
//! never wire metadata.

use crate::auth::LoginRequest;
use crate::io::{Correlation, HttpRequest, OpPurpose, field_value, media_type};
use crate::redact::{is_ws, redact_json_with, string_end};
use crate::urlenc::is_form_content_type;
use std::fmt::Write as _;
use std::sync::Arc;

pub use crate::redact::{
    MASK, is_secret_form_name, is_secret_name, mask_credentials, redact_form, redact_header,
    redact_json_text, redact_url,
};

/// The `tracing` target of protocol entries.
pub const TARGET: &str = "a2at::protocol";
/// The smallest body cap.
pub const MIN_BODY_CHARS: usize = 256;
/// The default body cap.
pub const DEFAULT_BODY_CHARS: usize = 100_000;

/// Protocol log knobs. Redaction is not a knob.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogConfig {
    /// Include bodies (default true); off, entries say `body=disabled`.
    pub include_body: bool,
    /// Character cap of a logged body (default 100 000; values under 256 count as 256).
    pub max_body_chars: usize,
    /// Pretty display (default true): one header per line, indented JSON.
    pub pretty: bool,
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            include_body: true,
            max_body_chars: DEFAULT_BODY_CHARS,
            pretty: true,
        }
    }
}

/// The environment variable of [`LogConfig::include_body`].
pub const ENV_INCLUDE_BODY: &str = "WORKFLOW_ENGINE_PROTOCOL_INCLUDE_BODY";
/// The environment variable of [`LogConfig::max_body_chars`].
pub const ENV_MAX_BODY_CHARS: &str = "WORKFLOW_ENGINE_PROTOCOL_MAX_BODY_CHARS";
/// The environment variable of [`LogConfig::pretty`].
pub const ENV_PRETTY: &str = "WORKFLOW_ENGINE_PROTOCOL_PRETTY";

/// A protocol log knob with a value that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name}={value:?} is not {expected}")]
pub struct LogConfigError {
    /// The variable.
    pub name: &'static str,
    /// Its value.
    pub value: String,
    /// What it should be.
    pub expected: &'static str,
}

fn parse_flag(name: &'static str, value: &str) -> Result<bool, LogConfigError> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Ok(true),
        "false" | "0" | "no" | "off" => Ok(false),
        _ => Err(LogConfigError {
            name,
            value: value.to_owned(),
            expected: "a boolean (true/false, 1/0, yes/no, on/off)",
        }),
    }
}

impl LogConfig {
    /// The knobs from variables looked up by name ([`ENV_INCLUDE_BODY`],
    /// [`ENV_MAX_BODY_CHARS`], [`ENV_PRETTY`]); an unset or blank variable keeps the default.
    /// A body cap under [`MIN_BODY_CHARS`] counts as that minimum. A value that cannot be read
    /// is an error naming the variable. Redaction is not a knob.
    pub fn from_lookup(
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<LogConfig, LogConfigError> {
        let get = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
        let mut cfg = LogConfig::default();
        if let Some(v) = get(ENV_INCLUDE_BODY) {
            cfg.include_body = parse_flag(ENV_INCLUDE_BODY, &v)?;
        }
        if let Some(v) = get(ENV_MAX_BODY_CHARS) {
            let n: usize = v.trim().parse().map_err(|_| LogConfigError {
                name: ENV_MAX_BODY_CHARS,
                value: v.clone(),
                expected: "a non-negative whole number",
            })?;
            cfg.max_body_chars = n.max(MIN_BODY_CHARS);
        }
        if let Some(v) = get(ENV_PRETTY) {
            cfg.pretty = parse_flag(ENV_PRETTY, &v)?;
        }
        Ok(cfg)
    }

    /// The cap in force (at least [`MIN_BODY_CHARS`]).
    pub fn body_cap(&self) -> usize {
        self.max_body_chars.max(MIN_BODY_CHARS)
    }
}

// ------------------------------------------------------------------------------------------
// Bodies
// ------------------------------------------------------------------------------------------

fn lower_media_type(content_type: Option<&str>) -> String {
    content_type.map_or("", media_type).to_ascii_lowercase()
}

fn is_binary_type(mt: &str) -> bool {
    mt.starts_with("image/")
        || mt.starts_with("audio/")
        || mt.starts_with("video/")
        || mt.starts_with("font/")
        || matches!(
            mt,
            "application/octet-stream"
                | "application/pdf"
                | "application/zip"
                | "application/gzip"
                | "application/protobuf"
                | "application/x-protobuf"
                | "application/grpc"
        )
}

fn looks_json(text: &str) -> bool {
    matches!(text.trim_start().as_bytes().first(), Some(b'{' | b'['))
}

/// Reindents valid JSON text token by token: strings are copied as they are, so escapes
/// stay escaped. Invalid JSON is returned unchanged.
pub fn pretty_json(text: &str) -> String {
    if serde_json::from_str::<serde::de::IgnoredAny>(text).is_err() {
        return text.to_owned();
    }
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len() * 2);
    let mut depth = 0usize;
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        for _ in 0..depth {
            out.push_str("  ");
        }
    };
    let mut i = 0;
    // Every round consumes at least one byte, so the text's length bounds the rounds: a slip in
    // the scan could print a wrong layout, never loop or grow the output without end.
    for _ in 0..b.len() {
        let Some(&c) = b.get(i) else { break };
        match c {
            b'"' => {
                let e = string_end(b, i).unwrap_or(b.len());
                out.push_str(&text[i..e]);
                i = e;
                continue;
            }
            b'{' | b'[' => {
                if let Some(len) = empty_container_len(b, i) {
                    out.push(c as char);
                    out.push(b[i + len] as char);
                    i += len + 1;
                    continue;
                }
                out.push(c as char);
                depth += 1;
                newline(&mut out, depth);
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(c as char);
            }
            b',' => {
                out.push(',');
                newline(&mut out, depth);
            }
            b':' => out.push_str(": "),
            _ if is_ws(c) => {}
            _ => {
                let e = text[i..]
                    .find(|ch: char| {
                        matches!(ch, ',' | '}' | ']' | ':' | '"') || ch.is_whitespace()
                    })
                    .map_or(b.len(), |p| i + p);
                out.push_str(&text[i..e]);
                i = e;
                continue;
            }
        }
        i += 1;
    }
    out
}

/// How far after `open` the container opened there closes, when only whitespace lies between
/// (`{}`, `[ ]`): such a container is printed on one line. A distance, not an index, so the
/// caller's scan always moves forward.
fn empty_container_len(b: &[u8], open: usize) -> Option<usize> {
    let mut j = open + 1;
    while j < b.len() && is_ws(b[j]) {
        j += 1;
    }
    (j < b.len() && matches!(b[j], b'}' | b']')).then_some(j - open)
}

fn cap(text: String, cfg: &LogConfig) -> String {
    let max = cfg.body_cap();
    let total = text.chars().count();
    if total <= max {
        return text;
    }
    let cut: String = text.chars().take(max).collect();
    format!("{cut}\n[body truncated: {max} of {total} chars shown]")
}

/// A body as logged: `body=disabled`, `(empty)`, `binary body omitted (N bytes)`, or the
/// redacted text (form, JSON or plain text by `content_type` and content), prettified when
/// configured and capped.
pub fn render_body(content_type: Option<&str>, body: &[u8], cfg: &LogConfig) -> String {
    if !cfg.include_body {
        return "body=disabled".to_owned();
    }
    if body.is_empty() {
        return "(empty)".to_owned();
    }
    let mt = lower_media_type(content_type);
    let text = match std::str::from_utf8(body) {
        Ok(t) if !is_binary_type(&mt) && !t.contains('\0') => t,
        _ => return format!("binary body omitted ({} bytes)", body.len()),
    };
    let redacted = if is_form_content_type(&mt) {
        redact_form(text)
    } else if mt == "text/event-stream" {
        redact_sse_text(text)
    } else {
        let r = redact_json_text(text);
        if cfg.pretty && (mt.contains("json") || looks_json(text)) {
            pretty_json(&r)
        } else {
            r
        }
    };
    cap(redacted, cfg)
}

/// An event stream body, event by event. An event's `data:` lines are one value joined with
/// `\n`, and a JSON value may continue from one line onto the next: the joined value is redacted
/// and written back one `data:` line per line, where the event's first `data:` line was.
fn redact_sse_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut data: Vec<&str> = Vec::new();
    // Where the event's data block goes: after the lines that came before its first `data:`.
    let mut data_at = None;
    for line in text.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\r', '\n']);
        if let Some(value) = bare.strip_prefix("data:") {
            data_at.get_or_insert(out.len());
            data.push(value.strip_prefix(' ').unwrap_or(value));
            continue;
        }
        if bare.is_empty() {
            write_data_block(&mut out, &mut data, &mut data_at);
        }
        out.push_str(&mask_credentials(line));
    }
    write_data_block(&mut out, &mut data, &mut data_at);
    out
}

/// Writes an event's redacted data block at `at` (if it had `data:` lines) and empties it.
fn write_data_block(out: &mut String, data: &mut Vec<&str>, at: &mut Option<usize>) {
    let Some(at) = at.take() else { return };
    let mut block = String::new();
    for line in redact_json_text(&data.join("\n")).split('\n') {
        block.push_str("data: ");
        block.push_str(line);
        block.push('\n');
    }
    out.insert_str(at, &block);
    data.clear();
}

// ------------------------------------------------------------------------------------------
// Entries
// ------------------------------------------------------------------------------------------

/// What an exchange belongs to (the `channel` log field).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    /// Task traffic (send, reply, poll, resubscribe, cancel).
    Task,
    /// Authorization-T.
    Authorization,
    /// Notification-T.
    Notification,
    /// A credential login.
    Login,
    /// Registry / PSOP discovery.
    Discovery,
}

impl Channel {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Channel::Task => "task",
            Channel::Authorization => "authorization",
            Channel::Notification => "notification",
            Channel::Login => "login",
            Channel::Discovery => "discovery",
        }
    }
}

/// The correlation fields of an entry. Local log fields, never wire metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogContext {
    /// The agent (card name).
    pub agent: String,
    /// The channel.
    pub channel: Channel,
    /// The engine's operation id.
    pub op: Option<u64>,
    /// The purpose of the exchange (`send`, `poll`, …).
    pub purpose: Option<&'static str>,
    /// Execution, step, logical task, context and remote task ids.
    pub correlation: Arc<Correlation>,
}

fn purpose_name(p: OpPurpose) -> &'static str {
    match p {
        OpPurpose::Send => "send",
        OpPurpose::Reply => "reply",
        OpPurpose::Poll => "poll",
        OpPurpose::Resubscribe => "resubscribe",
        OpPurpose::Lookup => "lookup",
        OpPurpose::Cancel => "cancel",
    }
}

impl LogContext {
    /// The context of an engine request.
    pub fn of(req: &HttpRequest, channel: Channel) -> LogContext {
        LogContext {
            agent: req.agent.to_string(),
            channel,
            op: Some(req.op.0),
            purpose: Some(purpose_name(req.purpose)),
            correlation: req.correlation.clone(),
        }
    }

    /// A context with only an agent and a channel (logins, discovery).
    pub fn simple(agent: &str, channel: Channel) -> LogContext {
        LogContext {
            agent: agent.to_owned(),
            channel,
            op: None,
            purpose: None,
            correlation: Arc::default(),
        }
    }

    /// `[agent=… channel=… op=… purpose=… execution=… step=… subtask=… task=… context=…
    /// remote_task=…]`, empty fields left out, values redacted.
    pub fn fields(&self) -> String {
        let c = &self.correlation;
        let mut s = format!(
            "[agent={} channel={}",
            mask_credentials(&self.agent),
            self.channel.as_str()
        );
        if let Some(op) = self.op {
            let _ = write!(s, " op={op}");
        }
        if let Some(p) = self.purpose {
            let _ = write!(s, " purpose={p}");
        }
        let mut put = |k: &str, v: &str| {
            if !v.is_empty() {
                let _ = write!(s, " {k}={}", mask_credentials(v));
            }
        };
        put("execution", &c.execution_id);
        put("step", &c.step);
        if !c.step.is_empty() {
            put("subtask", &c.subtask_index.to_string());
        }
        put("task", &c.logical_task_id);
        put("context", &c.context_id);
        put("remote_task", c.remote_task_id.as_deref().unwrap_or(""));
        s.push(']');
        s
    }
}

fn render_headers<N: AsRef<str>, V: AsRef<str>>(
    out: &mut String,
    headers: &[(N, V)],
    cfg: &LogConfig,
) {
    if cfg.pretty {
        for (n, v) in headers {
            let (n, v) = (n.as_ref(), v.as_ref());
            let _ = write!(out, "\n  {n}: {}", redact_header(n, v));
        }
    } else {
        let h: Vec<String> = headers
            .iter()
            .map(|(n, v)| format!("{}: {}", n.as_ref(), redact_header(n.as_ref(), v.as_ref())))
            .collect();
        let _ = write!(out, "\nheaders: {}", h.join(", "));
    }
}

/// A request entry: method, redacted URL, correlation fields, redacted headers and body.
pub fn format_request(req: &HttpRequest, channel: Channel, cfg: &LogConfig) -> String {
    format_raw_request(
        &LogContext::of(req, channel),
        req.method.as_str(),
        &req.url,
        &req.headers,
        &req.body,
        cfg,
    )
}

/// A request entry from its parts (for requests that are not an [`HttpRequest`]).
pub fn format_raw_request<N: AsRef<str>, V: AsRef<str>>(
    ctx: &LogContext,
    method: &str,
    url: &str,
    headers: &[(N, V)],
    body: &[u8],
    cfg: &LogConfig,
) -> String {
    let mut s = format!(">>> REQUEST {method} {} {}", redact_url(url), ctx.fields());
    render_headers(&mut s, headers, cfg);
    let _ = write!(
        s,
        "\nbody: {}",
        render_body(field_value(headers, "content-type"), body, cfg)
    );
    s
}

/// A response head entry: status and redacted headers.
pub fn format_response_head<N: AsRef<str>, V: AsRef<str>>(
    ctx: &LogContext,
    status: u16,
    headers: &[(N, V)],
    cfg: &LogConfig,
) -> String {
    let mut s = format!("<<< RESPONSE {status} {}", ctx.fields());
    render_headers(&mut s, headers, cfg);
    s
}

/// A response body (or an assembled chunk of it) entry.
pub fn format_response_body(
    ctx: &LogContext,
    content_type: Option<&str>,
    body: &[u8],
    cfg: &LogConfig,
) -> String {
    format!(
        "<<< RESPONSE BODY {}\nbody: {}",
        ctx.fields(),
        render_body(content_type, body, cfg)
    )
}

/// An SSE event entry: with `pretty`, JSON data is shown reindented between
/// `=== SSE data(JSON display; not wire text) ===` markers; otherwise (and for invalid JSON)
/// the redacted data as received.
pub fn format_sse_event(
    ctx: &LogContext,
    event: Option<&str>,
    data: &str,
    cfg: &LogConfig,
) -> String {
    let mut s = format!("<<< SSE EVENT {}", ctx.fields());
    if let Some(e) = event {
        let _ = write!(s, " event={}", mask_credentials(e));
    }
    if !cfg.include_body {
        s.push_str("\nbody=disabled");
        return s;
    }
    let redacted = redact_json_text(data);
    if cfg.pretty && serde_json::from_str::<serde::de::IgnoredAny>(&redacted).is_ok() {
        let _ = write!(
            s,
            "\n=== SSE data(JSON display; not wire text) ===\n{}\n=== end SSE data ===",
            cap(pretty_json(&redacted), cfg)
        );
    } else {
        let _ = write!(s, "\ndata: {}", cap(redacted, cfg));
    }
    s
}

/// An SSE frame over the capacity was dropped whole.
pub fn format_sse_dropped(ctx: &LogContext, bytes: usize) -> String {
    format!(
        "<<< SSE EVENT {} body=dropped-capacity ({bytes} bytes)",
        ctx.fields()
    )
}

/// A stream ended before completion.
pub fn format_stream_interrupted(ctx: &LogContext, reason: &str) -> String {
    format!(
        "<<< STREAM {} stream=interrupted: {}",
        ctx.fields(),
        redact_json_text(reason)
    )
}

/// A login request entry: every body field value is masked, whatever its name,
/// because login fields are credential material.
pub fn format_login_request(
    agent: &str,
    scheme: &str,
    req: &LoginRequest,
    cfg: &LogConfig,
) -> String {
    let ctx = LogContext::simple(agent, Channel::Login);
    let mut s = format!(
        ">>> LOGIN {} {} {} scheme={}",
        req.method,
        redact_url(&req.url),
        ctx.fields(),
        mask_credentials(scheme)
    );
    render_headers(&mut s, &req.headers, cfg);
    let body = if !cfg.include_body {
        "body=disabled".to_owned()
    } else if req.body.is_empty() {
        "(empty)".to_owned()
    } else {
        let text = String::from_utf8_lossy(&req.body);
        if is_form_content_type(&req.content_type) {
            text.split('&')
                .map(|p| match p.split_once('=') {
                    Some((k, _)) => format!("{k}={MASK}"),
                    None => MASK.to_owned(),
                })
                .collect::<Vec<_>>()
                .join("&")
        } else {
            redact_json_with(&text, &|_| true)
        }
    };
    let _ = write!(s, "\nbody: {}", cap(body, cfg));
    s
}

/// A login response entry: status, and the body redacted by [`render_body`] (token fields
/// such as `accessSession`, `access_token` and `token` are secret names).
pub fn format_login_response(
    agent: &str,
    scheme: &str,
    status: u16,
    content_type: Option<&str>,
    body: &[u8],
    cfg: &LogConfig,
) -> String {
    let ctx = LogContext::simple(agent, Channel::Login);
    format!(
        "<<< LOGIN RESPONSE {status} {} scheme={}\nbody: {}",
        ctx.fields(),
        mask_credentials(scheme),
        render_body(content_type, body, cfg)
    )
}

/// The login response body with the token masked wherever it appears, before it is rendered for
/// the log. A JSON body is decoded first, so every string equal to the token is masked
/// however it was escaped on the wire, and a body cap cannot cut the token and leave a prefix;
/// any other body has the token's raw text replaced.
pub fn mask_login_token(body: &[u8], token: &str) -> Vec<u8> {
    use serde_json::Value;
    fn walk(v: &mut Value, token: &str) {
        match v {
            Value::String(s) if s == token => *s = MASK.to_owned(),
            Value::Array(items) => items.iter_mut().for_each(|i| walk(i, token)),
            Value::Object(map) => map.values_mut().for_each(|i| walk(i, token)),
            _ => {}
        }
    }
    if token.is_empty() {
        return body.to_vec();
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(mut v) => {
            walk(&mut v, token);
            serde_json::to_vec(&v).unwrap_or_default()
        }
        Err(_) => String::from_utf8_lossy(body)
            .replace(token, MASK)
            .into_bytes(),
    }
}

// ------------------------------------------------------------------------------------------
// Summary lines (PL-9)
// ------------------------------------------------------------------------------------------

/// `A2A_ERROR`: the agent rejected a call.
pub fn a2a_error_line(ctx: &LogContext, code: &str, message: &str) -> String {
    format!(
        "A2A_ERROR {} code={} message={}",
        ctx.fields(),
        mask_credentials(code),
        redact_json_text(message)
    )
}

/// `TASK_FAILED`: execution, step, task, agent, code and a redacted reason.
pub fn task_failed_line(
    execution_id: &str,
    step: &str,
    task: &str,
    agent: &str,
    code: &str,
    reason: &str,
) -> String {
    format!(
        "TASK_FAILED execution={} step={} task={} agent={} code={} reason={}",
        mask_credentials(execution_id),
        mask_credentials(step),
        mask_credentials(task),
        mask_credentials(agent),
        mask_credentials(code),
        redact_json_text(reason)
    )
}

/// `WORKFLOW_STOPPED`: the steps that were skipped.
pub fn workflow_stopped_line(execution_id: &str, skipped_steps: &[String]) -> String {
    format!(
        "WORKFLOW_STOPPED execution={} skipped=[{}]",
        mask_credentials(execution_id),
        skipped_steps
            .iter()
            .map(|s| mask_credentials(s))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// `WORKFLOW_FINISHED`.
pub fn workflow_finished_line(execution_id: &str, success: bool) -> String {
    format!(
        "WORKFLOW_FINISHED execution={} success={success}",
        mask_credentials(execution_id)
    )
}

/// Every summary line of a finished run, in order: for each failed subtask an `A2A_ERROR` (when
/// the agent rejected a call: an `a2a.*` code) and a `TASK_FAILED`; a `WORKFLOW_STOPPED` naming
/// the steps that never ran when the run failed; then `WORKFLOW_FINISHED`.
pub fn summary_lines(result: &crate::result::ExecutionResult) -> Vec<String> {
    use crate::host::TaskStatus;
    use crate::result::StepStatus;
    let mut lines = Vec::new();
    for task in result
        .history
        .iter()
        .filter(|t| t.status == TaskStatus::Failed)
    {
        let code = task.error_code.as_deref().unwrap_or("");
        let reason = task.error.as_deref().unwrap_or("");
        if code.starts_with("a2a.") {
            let ctx = LogContext {
                agent: task.agent_name.to_string(),
                channel: Channel::Task,
                op: None,
                purpose: None,
                correlation: Arc::new(Correlation {
                    execution_id: result.execution_id.as_str().into(),
                    step: task.step_name.clone(),
                    subtask_index: task.subtask_index,
                    logical_task_id: task.task_id.clone(),
                    context_id: task.context_id.clone().unwrap_or_default(),
                    remote_task_id: task.remote_task_id.clone(),
                }),
            };
            lines.push(a2a_error_line(&ctx, code, reason));
        }
        lines.push(task_failed_line(
            &result.execution_id,
            &task.step_name,
            &task.task_id,
            &task.agent_name,
            code,
            reason,
        ));
    }
    if !result.success {
        let skipped: Vec<String> = result
            .steps
            .iter()
            .filter(|s| matches!(s.status, StepStatus::NotRun | StepStatus::Skipped))
            .map(|s| s.name.to_string())
            .collect();
        lines.push(workflow_stopped_line(&result.execution_id, &skipped));
    }
    lines.push(workflow_finished_line(&result.execution_id, result.success));
    lines
}

/// The protocol log entries of one response body, assembled so that no entry holds a raw
/// network chunk: a secret split across two chunks would otherwise escape redaction. SSE bodies
/// give one entry per complete event (an event larger than the cap is dropped whole and logged
/// as `body=dropped-capacity`; comments and keep-alives give none); other bodies give one entry
/// at the end, capped. Bytes are decoded only after assembly.
#[derive(Debug)]
pub struct ResponseBodyLog {
    ctx: LogContext,
    content_type: Option<String>,
    cfg: LogConfig,
    sse: bool,
    buf: Vec<u8>,
    /// Raw bytes kept at most (the character cap, four bytes a character).
    cap_bytes: usize,
    /// Bytes of the body seen in all (non-SSE).
    total: usize,
    /// Bytes of an oversized SSE event being dropped until its delimiter.
    dropping: Option<usize>,
}

impl ResponseBodyLog {
    /// The log of a response with this `Content-Type`.
    pub fn new(ctx: LogContext, content_type: Option<String>, cfg: LogConfig) -> ResponseBodyLog {
        Self::build(ctx, content_type, cfg)
    }

    // Outside `new`, which cargo-mutants does not mutate.
    fn build(ctx: LogContext, content_type: Option<String>, cfg: LogConfig) -> ResponseBodyLog {
        let sse = content_type
            .as_deref()
            .is_some_and(|c| media_type(c).eq_ignore_ascii_case("text/event-stream"));
        ResponseBodyLog {
            ctx,
            content_type,
            cfg,
            sse,
            buf: Vec::new(),
            cap_bytes: cfg.body_cap().saturating_mul(4),
            total: 0,
            dropping: None,
        }
    }

    /// Takes the next body bytes; returns the entries of the SSE events they completed.
    pub fn push(&mut self, data: &[u8]) -> Vec<String> {
        let mut out = Vec::new();
        self.total += data.len();
        if !self.sse {
            let room = self.cap_bytes.saturating_sub(self.buf.len());
            self.buf.extend_from_slice(&data[..data.len().min(room)]);
            return out;
        }
        self.buf.extend_from_slice(data);
        loop {
            let Some((end, delimiter)) = sse_frame_end(&self.buf) else {
                // Line breaks at the end may begin a delimiter that the next chunk completes:
                // they are not the event's, and dropping them would merge the next event
                // into this one.
                let keep = self
                    .buf
                    .iter()
                    .rev()
                    .take(3)
                    .take_while(|b| matches!(b, b'\r' | b'\n'))
                    .count();
                let cut = self.buf.len() - keep;
                if cut > self.cap_bytes {
                    *self.dropping.get_or_insert(0) += cut;
                    self.buf.drain(..cut);
                }
                return out;
            };
            let frame: Vec<u8> = self.buf.drain(..end + delimiter).collect();
            match self.dropping.take() {
                Some(dropped) => out.push(format_sse_dropped(&self.ctx, dropped + frame.len())),
                None if end > self.cap_bytes => {
                    out.push(format_sse_dropped(&self.ctx, frame.len()))
                }
                None => out.extend(self.event_entry(&frame[..end])),
            }
        }
    }

    fn event_entry(&self, frame: &[u8]) -> Option<String> {
        let text = String::from_utf8_lossy(frame);
        let mut event = None;
        let mut data: Vec<&str> = Vec::new();
        for line in text.lines() {
            if let Some(v) = line.strip_prefix("event:") {
                event = Some(v.trim());
            } else if let Some(v) = line.strip_prefix("data:") {
                data.push(v.strip_prefix(' ').unwrap_or(v));
            }
        }
        if event.is_none() && data.is_empty() {
            return None;
        }
        Some(format_sse_event(
            &self.ctx,
            event,
            &data.join("\n"),
            &self.cfg,
        ))
    }

    /// The body ended: the entries of what is left (the whole body, for a non-SSE response).
    pub fn finish(mut self) -> Vec<String> {
        if self.sse {
            if let Some(dropped) = self.dropping.take() {
                let n = dropped + self.buf.len();
                return vec![format_sse_dropped(&self.ctx, n)];
            }
            if self.buf.is_empty() {
                return Vec::new();
            }
            let rest = std::mem::take(&mut self.buf);
            return self.event_entry(&rest).into_iter().collect();
        }
        if self.total == 0 {
            return Vec::new();
        }
        // A cut inside a multi-byte character would make the text look binary.
        if let Err(e) = std::str::from_utf8(&self.buf) {
            if e.error_len().is_none() {
                self.buf.truncate(e.valid_up_to());
            }
        }
        let mut entry = format_response_body(
            &self.ctx,
            self.content_type.as_deref(),
            &self.buf,
            &self.cfg,
        );
        if self.total > self.buf.len() && self.cfg.include_body {
            entry.push_str(&format!(
                "\n[body truncated: {} of {} bytes kept for the log]",
                self.buf.len(),
                self.total
            ));
        }
        vec![entry]
    }

    /// The body broke off with `reason`.
    pub fn interrupted(self, reason: &str) -> Vec<String> {
        vec![format_stream_interrupted(&self.ctx, reason)]
    }
}

/// The end of the first SSE frame in `buf` and the length of its delimiter.
fn sse_frame_end(buf: &[u8]) -> Option<(usize, usize)> {
    let lf = buf.windows(2).position(|w| w == b"\n\n").map(|i| (i, 2));
    let crlf = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| (i, 4));
    match (lf, crlf) {
        (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
        (a, b) => a.or(b),
    }
}
