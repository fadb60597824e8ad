//! Request encoding and incremental response decoding for the gRPC binding.

use super::frame::{FrameDecoder, FrameError, encode_frame};
use super::messages::{
    CancelTaskRequest, GetTaskRequest, GrpcMessage, ListTasksRequest, ListTasksResponse,
    SendMessageResponse, SubscribeToTaskRequest, encode_send_request,
};
use super::status::{GrpcStatusError, has_status, status_from_trailers};
use super::wire::WireError;
use crate::a2a::binding::extensions_header;
use crate::a2a::binding::{A2A_VERSION, A2aCall, CallKind, DecodeLimits, ResponseItem};
use crate::a2a::error::{ProtocolError, codes, redact_str};
use crate::a2a::protojson::short;
use crate::a2a::types::{StreamResponse, Task, TaskPage};
use crate::io::{HeaderText, field_value, media_type};
use core::time::Duration;

/// The fully qualified service name.
pub const GRPC_SERVICE: &str = "lf.a2a.v1.A2AService";

/// A gRPC call ready for the driver: an HTTP/2 `POST` of `body` to `path` on the interface's
/// authority, with `headers` (auth metadata is the driver's business).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrpcRequest {
    /// `/lf.a2a.v1.A2AService/<Method>`.
    pub path: String,
    /// Lower-case metadata in sending order.
    pub headers: Vec<(HeaderText, HeaderText)>,
    /// The framed request message.
    pub body: Vec<u8>,
}

/// Why a call could not be encoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GrpcEncodeError {
    /// The request message is 4 GiB or larger: the frame prefix cannot express it.
    #[error("gRPC request message of {0} bytes cannot be framed")]
    TooLarge(usize),
}

/// The `grpc-timeout` value of a remaining budget: the finest unit (`n`, `u`, `m`, `S`, `M`,
/// `H`) whose count fits the 8 digits gRPC allows, rounded up so the server never gives up
/// before the client; a zero budget is `1n` (the count must be positive); budgets beyond
/// 99,999,999 hours are capped there.
pub fn grpc_timeout(budget: Duration) -> String {
    const MAX: u128 = 99_999_999;
    let nanos = budget.as_nanos().max(1);
    for (unit, per) in [
        ('n', 1u128),
        ('u', 1_000),
        ('m', 1_000_000),
        ('S', 1_000_000_000),
        ('M', 60_000_000_000),
        ('H', 3_600_000_000_000),
    ] {
        let n = nanos.div_ceil(per);
        if n <= MAX {
            return format!("{n}{unit}");
        }
    }
    format!("{MAX}H")
}

/// Encodes one call: path, metadata (`content-type: application/grpc`, `te: trailers`,
/// `a2a-version`, `a2a-extensions` when any extension is activated, `grpc-timeout` when a
/// budget is given) and the framed request.
///
/// Tenant: the request's own `tenant` if set, else `endpoint_tenant` (as the JSON bindings
/// do). `ListTasks` asks for `historyLength: 0`, as the JSON bindings do.
pub fn encode_grpc_call(
    call: &A2aCall<'_>,
    endpoint_tenant: Option<&str>,
    extensions: &[String],
    timeout: Option<Duration>,
) -> Result<GrpcRequest, GrpcEncodeError> {
    let ep_tenant = endpoint_tenant.filter(|t| !t.is_empty()).map(str::to_owned);
    let message = match call {
        A2aCall::SendMessage(r) | A2aCall::SendStreamingMessage(r) => {
            let tenant = r.tenant.as_deref().filter(|t| !t.is_empty());
            encode_send_request(r, tenant.or(ep_tenant.as_deref()))
        }
        A2aCall::GetTask {
            task_id,
            history_length,
        } => GetTaskRequest {
            tenant: ep_tenant,
            id: (*task_id).to_owned(),
            history_length: *history_length,
        }
        .encode_proto(),
        A2aCall::CancelTask { task_id } => CancelTaskRequest {
            tenant: ep_tenant,
            id: (*task_id).to_owned(),
            metadata: None,
        }
        .encode_proto(),
        A2aCall::SubscribeToTask { task_id } => SubscribeToTaskRequest {
            tenant: ep_tenant,
            id: (*task_id).to_owned(),
        }
        .encode_proto(),
        A2aCall::ListTasks {
            context_id,
            page_size,
        } => ListTasksRequest {
            tenant: ep_tenant,
            context_id: Some((*context_id).to_owned()),
            page_size: page_size.map(|n| i32::try_from(n).unwrap_or(i32::MAX)),
            history_length: Some(0),
            ..ListTasksRequest::default()
        }
        .encode_proto(),
        A2aCall::ListTasksPage(params) => ListTasksRequest {
            tenant: ep_tenant,
            context_id: params.context_id.clone(),
            status: params.status.unwrap_or_default(),
            page_size: params
                .page_size
                .map(|n| i32::try_from(n).unwrap_or(i32::MAX)),
            page_token: params.page_token.clone(),
            history_length: params
                .history_length
                .map(|n| i32::try_from(n).unwrap_or(i32::MAX)),
            status_timestamp_after: params.status_timestamp_after.clone(),
            include_artifacts: params.include_artifacts,
        }
        .encode_proto(),
    };
    let len = message.len();
    let body = encode_frame(&message).ok_or(GrpcEncodeError::TooLarge(len))?;
    let mut headers = vec![
        ("content-type".into(), "application/grpc".into()),
        ("te".into(), "trailers".into()),
        ("a2a-version".into(), A2A_VERSION.into()),
    ];
    if let Some(x) = extensions_header(extensions) {
        headers.push(("a2a-extensions".into(), x.into()));
    }
    if let Some(t) = timeout {
        headers.push(("grpc-timeout".into(), grpc_timeout(t).into()));
    }
    Ok(GrpcRequest {
        path: format!("/{GRPC_SERVICE}/{}", call.kind().method_name()),
        headers,
        body,
    })
}

/// How the response head classified the response.
#[derive(Debug, Clone)]
enum Mode {
    /// A gRPC response: frames, then trailers.
    Grpc,
    /// A trailers-only response: the status came in the head.
    TrailersOnly(Vec<(String, String)>),
    /// A non-200 HTTP status without `grpc-status` (a proxy or router answered); the body is
    /// kept, capped, for the message.
    Http { status: u16, body: Vec<u8> },
    /// HTTP 200 with a content type that is not `application/grpc`.
    NotGrpc(String),
}

/// Incremental decoder of one gRPC response to one [`A2aCall`], producing the same
/// [`ResponseItem`]s as the JSON bindings' `ResponseDecoder`.
///
/// * Streaming calls: every `StreamResponse` frame becomes an `Event` as soon as its last byte
///   arrives; a frame that does not decode is `Malformed` and the stream goes on.
/// * Unary calls: the single response message is held until the trailers say `OK` (a gRPC
///   result is only valid with an OK status); `ListTasks` gives one `Task` event per listed
///   task; no message, or more than one, is `Malformed`.
/// * A non-OK status is `Rejected` (see [`status`](super::status)); a missing status,
///   truncated frame, compressed frame or non-gRPC content type is `Malformed` with code
///   [`codes::INVALID_AGENT_RESPONSE`]; a message over the limit is `Malformed` with
///   [`codes::EVENT_TOO_LARGE`] (streaming, `max_event_bytes`) or [`codes::BODY_TOO_LARGE`]
///   (unary, `max_body_bytes`).
/// * `End` is pushed once, last, by [`GrpcResponseDecoder::on_end`].
#[derive(Debug, Clone)]
pub struct GrpcResponseDecoder {
    kind: CallKind,
    limit_code: &'static str,
    mode: Mode,
    frames: FrameDecoder,
    frames_failed: bool,
    /// Unary: the decoded result waiting for the status.
    pending: Option<Result<Vec<StreamResponse>, String>>,
    messages: usize,
    status_seen: bool,
    events: usize,
    ended: bool,
    /// `Retry-After` of the head (a proxy's 429/503), verbatim.
    retry_after: Option<String>,
    /// The redacted headers of a response whose HTTP status is not 200.
    headers: Vec<(String, String)>,
    /// The paging fields of a `ListTasks` answer (`tasks` left empty: they are the events).
    page: Option<TaskPage>,
}

const HTTP_BODY_KEPT: usize = 4096;

impl GrpcResponseDecoder {
    /// A decoder for the response to a call of `kind`.
    pub fn new(kind: CallKind, limits: DecodeLimits) -> Self {
        Self::build(kind, limits)
    }

    // Outside `new`, which cargo-mutants does not mutate.
    fn build(kind: CallKind, limits: DecodeLimits) -> Self {
        let (max, limit_code) = if kind.is_streaming() {
            (limits.max_event_bytes, codes::EVENT_TOO_LARGE)
        } else {
            (limits.max_body_bytes, codes::BODY_TOO_LARGE)
        };
        GrpcResponseDecoder {
            kind,
            limit_code,
            mode: Mode::Grpc,
            frames: FrameDecoder::new(max),
            frames_failed: false,
            pending: None,
            messages: 0,
            status_seen: false,
            events: 0,
            ended: false,
            retry_after: None,
            headers: Vec::new(),
            page: None,
        }
    }

    /// The paging fields of a decoded `ListTasks` answer (`tasks` left empty: the tasks are
    /// the `Task` events); `None` before the answer was decoded or for other calls.
    pub fn task_page(&self) -> Option<&TaskPage> {
        self.page.as_ref()
    }

    /// Records the HTTP status and response headers (names compared case-insensitively). A
    /// `grpc-status` here makes it a trailers-only response; otherwise a status other than 200
    /// is an HTTP error (`a2a.http.<status>`, as in the JSON bindings), and a content type other
    /// than `application/grpc` or `application/grpc+proto` is not gRPC (a missing one is
    /// accepted). `Retry-After` is kept for the errors of this response.
    pub fn on_head<N: AsRef<str>, V: AsRef<str>>(&mut self, status: u16, headers: &[(N, V)]) {
        if status != 200 {
            self.headers = crate::a2a::error::redacted_headers(headers);
        }
        self.retry_after = field_value(headers, "retry-after").map(|v| v.trim().to_owned());
        if has_status(headers) {
            self.mode = Mode::TrailersOnly(
                headers
                    .iter()
                    .map(|(n, v)| (n.as_ref().to_owned(), v.as_ref().to_owned()))
                    .collect(),
            );
            return;
        }
        if status != 200 {
            self.mode = Mode::Http {
                status,
                body: Vec::new(),
            };
            return;
        }
        // Copied only to name a media type that is not gRPC's: every gRPC answer is read here.
        if let Some(media) = field_value(headers, "content-type").map(media_type) {
            let grpc = ["application/grpc", "application/grpc+proto"];
            if !grpc.iter().any(|g| media.eq_ignore_ascii_case(g)) {
                self.mode = Mode::NotGrpc(media.to_ascii_lowercase());
            }
        }
    }

    /// Feeds body bytes; stream events are pushed as soon as their frame is complete.
    pub fn on_body(&mut self, chunk: &[u8], out: &mut Vec<ResponseItem>) {
        match &mut self.mode {
            Mode::Grpc if !self.status_seen && !self.ended => {}
            Mode::Http { body, .. } => {
                let room = HTTP_BODY_KEPT.saturating_sub(body.len());
                body.extend_from_slice(&chunk[..room.min(chunk.len())]);
                return;
            }
            _ => return,
        }
        let mut messages = Vec::new();
        let framed = self.frames.push(chunk, &mut messages);
        for m in messages {
            self.on_message(&m, out);
        }
        if let Err(e) = framed {
            self.frame_error(&e, out);
        }
    }

    fn frame_error(&mut self, e: &FrameError, out: &mut Vec<ResponseItem>) {
        self.frames_failed = true;
        let code = match e {
            FrameError::TooLarge { .. } => self.limit_code,
            _ => codes::INVALID_AGENT_RESPONSE,
        };
        out.push(ResponseItem::Malformed(ProtocolError::malformed(
            code,
            e.to_string(),
        )));
    }

    fn on_message(&mut self, bytes: &[u8], out: &mut Vec<ResponseItem>) {
        self.messages += 1;
        let what = self.kind.method_name();
        if self.kind.is_streaming() {
            let item = match StreamResponse::decode_proto(bytes) {
                Ok(ev) => ResponseItem::Event(ev),
                Err(e) => malformed(format!("{what} stream message {}: {e}", self.messages)),
            };
            self.push(item, out);
            return;
        }
        if self.messages > 1 {
            self.pending = Some(Err(format!(
                "{what} is unary but the response carries more than one message"
            )));
            return;
        }
        let decoded: Result<Vec<StreamResponse>, WireError> = match self.kind {
            CallKind::GetTask | CallKind::CancelTask => {
                Task::decode_proto(bytes).map(|t| vec![StreamResponse::Task(t)])
            }
            CallKind::ListTasks => ListTasksResponse::decode_proto(bytes).map(|l| {
                self.page = Some(TaskPage {
                    tasks: Vec::new(),
                    next_page_token: Some(l.next_page_token).filter(|t| !t.is_empty()),
                    page_size: Some(l.page_size).filter(|n| *n != 0),
                    total_size: Some(l.total_size).filter(|n| *n != 0),
                });
                l.tasks.into_iter().map(StreamResponse::Task).collect()
            }),
            _ => SendMessageResponse::decode_proto(bytes).map(|r| vec![r.into()]),
        };
        self.pending = Some(decoded.map_err(|e| format!("{what} response: {e}")));
    }

    fn push(&mut self, item: ResponseItem, out: &mut Vec<ResponseItem>) {
        if matches!(item, ResponseItem::Event(_)) {
            self.events += 1;
        }
        out.push(item);
    }

    /// Feeds the trailers; their `grpc-status` settles the call. Only the first call counts.
    pub fn on_trailers<N: AsRef<str>, V: AsRef<str>>(
        &mut self,
        trailers: &[(N, V)],
        out: &mut Vec<ResponseItem>,
    ) {
        if self.status_seen || self.ended || !matches!(self.mode, Mode::Grpc) {
            return;
        }
        self.status_seen = true;
        if !self.frames_failed {
            if let Err(e) = self.frames.finish() {
                self.frame_error(&e, out);
            }
        }
        self.settle(status_from_trailers(trailers), out);
    }

    fn settle(
        &mut self,
        status: Result<Option<ProtocolError>, GrpcStatusError>,
        out: &mut Vec<ResponseItem>,
    ) {
        match status {
            Ok(Some(err)) => out.push(ResponseItem::Rejected(ProtocolError {
                retry_after: self.retry_after.clone(),
                headers: self.headers.clone(),
                ..err
            })),
            Ok(None) if self.kind.is_streaming() || self.frames_failed => {}
            Ok(None) => match self.pending.take() {
                Some(Ok(events)) => {
                    for ev in events {
                        self.push(ResponseItem::Event(ev), out);
                    }
                }
                Some(Err(why)) => out.push(malformed(why)),
                None => out.push(malformed(format!(
                    "{} response ended with status OK but without a message",
                    self.kind.method_name()
                ))),
            },
            Err(e) => out.push(malformed(e.to_string())),
        }
    }

    /// Ends the response; always pushes exactly one [`ResponseItem::End`] last (once).
    pub fn on_end(&mut self, out: &mut Vec<ResponseItem>) {
        if self.ended {
            return;
        }
        match core::mem::replace(&mut self.mode, Mode::Grpc) {
            Mode::TrailersOnly(head) => self.settle(status_from_trailers(&head), out),
            Mode::Http { status, body } => {
                let text = String::from_utf8_lossy(&body);
                out.push(ResponseItem::Rejected(ProtocolError {
                    http_status: Some(status),
                    retry_after: self.retry_after.clone(),
                    headers: self.headers.clone(),
                    ..ProtocolError::malformed(
                        &format!("a2a.http.{status}"),
                        redact_str(&short(text.trim())),
                    )
                }));
            }
            Mode::NotGrpc(ct) => out.push(malformed(format!(
                "response content type {ct:?} is not application/grpc"
            ))),
            Mode::Grpc if !self.status_seen => {
                if !self.frames_failed {
                    if let Err(e) = self.frames.finish() {
                        self.frame_error(&e, out);
                    }
                }
                self.settle(Err(GrpcStatusError::NoTrailers), out);
            }
            Mode::Grpc => {}
        }
        self.ended = true;
        out.push(ResponseItem::End {
            events: self.events,
        });
    }
}

fn malformed(message: String) -> ResponseItem {
    ResponseItem::Malformed(ProtocolError::malformed(
        codes::INVALID_AGENT_RESPONSE,
        message,
    ))
}
