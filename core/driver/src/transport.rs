//! The exchange task that turns an [`HttpRequest`] into response inputs, and the engine-wide
//! concurrency limits.

use std::collections::BTreeMap;
use std::ops::Deref;
use std::sync::Arc;

use a2at_core::OpId;
use a2at_core::auth::AuthMaterial;
use a2at_core::io::{
    HeaderField, HttpRequest, Input, OpPurpose, TransportError, TransportErrorKind,
};
use a2at_core::protolog::{self, Channel, LogConfig, LogContext};
use async_lock::{Semaphore, SemaphoreGuardArc};
use http_body_util::BodyExt;

use crate::auth::Authenticator;
use crate::completions;
use crate::http::{
    Failure, HttpClient, build_request_owning, build_request_to, describe, header_pairs,
    header_text, http_method,
};
use crate::runtime::Runtime;
use crate::telemetry;
use a2at_core::a2a::Binding;
use tracing::{Instrument, Span};

/// Produces extra request headers (authentication) for one exchange, or a message saying why it
/// cannot; a failure is reported to the core as a [`TransportErrorKind::Auth`] failure.
///
/// This is the hook for the authentication issue; the engine calls it just before sending.
pub type AuthHook =
    Arc<dyn Fn(&HttpRequest) -> Result<Vec<(String, String)>, String> + Send + Sync>;

/// The engine-wide concurrency limits: overall and per agent.
#[derive(Debug)]
pub(crate) struct Limits {
    overall: Arc<Semaphore>,
    per_agent_slots: usize,
    /// One semaphore per agent name, made the first time the agent is used: cards added to a
    /// live engine get the same bound as those it was built with.
    per_agent: std::sync::Mutex<BTreeMap<String, Arc<Semaphore>>>,
}

/// The two slots an exchange holds while it runs; dropping it frees both.
struct Permits {
    _agent: SemaphoreGuardArc,
    _overall: SemaphoreGuardArc,
}

impl Limits {
    pub(crate) fn new<'a>(
        agents: impl Iterator<Item = &'a str>,
        per_agent: usize,
        overall: usize,
    ) -> Limits {
        Limits {
            overall: Arc::new(Semaphore::new(overall)),
            per_agent_slots: per_agent,
            per_agent: std::sync::Mutex::new(
                agents
                    .map(|a| (a.to_owned(), Arc::new(Semaphore::new(per_agent))))
                    .collect(),
            ),
        }
    }

    fn agent_slots(&self, agent: &str) -> Arc<Semaphore> {
        // A poisoned map only means another thread panicked between two map operations, which
        // leave it consistent; the limits must keep working.
        let mut slots = self
            .per_agent
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(entry) = slots.get(agent) {
            return entry.clone();
        }
        let entry = Arc::new(Semaphore::new(self.per_agent_slots));
        slots.insert(agent.to_owned(), entry.clone());
        entry
    }

    /// Waits for a slot for `agent`, then for an overall slot (in that order, so exchanges
    /// queued behind a busy agent never hold overall slots).
    async fn acquire(&self, agent: &str) -> Permits {
        let agent = self.agent_slots(agent).acquire_arc().await;
        let overall = self.overall.acquire_arc().await;
        Permits {
            _agent: agent,
            _overall: overall,
        }
    }
}

fn protocol_log_enabled() -> bool {
    tracing::enabled!(target: "a2at::protocol", tracing::Level::DEBUG)
}

/// A request ready for the client, with its protocol log context when that log is on (boxed:
/// the log is rarely on, and every exchange's future would carry the context).
type Outgoing = (
    http::Request<crate::http::RequestBody>,
    Option<Box<LogContext>>,
);

/// What an exchange task needs from the engine.
pub(crate) struct Transport<R> {
    pub(crate) client: HttpClient<R>,
    pub(crate) limits: Limits,
    pub(crate) auth: Option<AuthHook>,
    pub(crate) credentials: Authenticator,
    /// Protocol log knobs, fixed when the engine was built.
    pub(crate) log: LogConfig,
}

impl<R: Runtime> Transport<R> {
    /// Carries out one exchange in its own span (a child of the current span), feeding head,
    /// body frames, trailers (when the response has any) and end (or a failure) to `tx`.
    /// HTTP/2 when the request asks for it (gRPC). The engine's loops open the span
    /// themselves ([`Transport::exchange_in`]); the transport's own tests use this.
    #[cfg(test)]
    pub(crate) async fn exchange(&self, req: HttpRequest, tx: completions::Sender<Input>) {
        let span = telemetry::exchange_span(&req, None);
        Self::exchange_in(self, req, tx, span, None).await;
    }

    /// [`Transport::exchange`] in `span` (from [`telemetry`]), which it completes with the
    /// response status or the failure. `binding` (the agent's, when the caller knows it)
    /// labels the request's latency.
    ///
    /// `this` is the transport or a pointer to it: an `Arc` gives a future that owns the
    /// transport, which the engine's loops spawn as it is, with no wrapper of their own.
    pub(crate) fn exchange_in<T: Deref<Target = Self>>(
        this: T,
        req: HttpRequest,
        tx: completions::Sender<Input>,
        span: Span,
        binding: Option<Binding>,
    ) -> impl Future<Output = ()> {
        // A plain function, not an `async` one: the exchange's future is the instrumented one
        // itself, without a wrapper that would keep its own copy of the arguments.
        Self::exchange_inner(this, req, tx, span.clone(), binding).instrument(span)
    }

    /// The exchange itself (see [`Transport::exchange_in`]). An `async` block rather than an
    /// `async fn`: the block uses what it captured in place, where an `async fn` keeps a moved
    /// copy of each argument beside it for the exchange's whole life.
    #[allow(
        clippy::manual_async_fn,
        reason = "an async fn would hold its arguments twice (see above)"
    )]
    fn exchange_inner<T: Deref<Target = Self>>(
        this: T,
        mut req: HttpRequest,
        tx: completions::Sender<Input>,
        span: Span,
        binding: Option<Binding>,
    ) -> impl Future<Output = ()> {
        async move {
            let transport: &Self = &this;
            let span = &span;
            let op = req.op;
            let fail = |kind: TransportErrorKind, message: String| {
                telemetry::record_failure(span, kind);
                Input::TransportFailed {
                    op,
                    error: TransportError { kind, message },
                }
            };
            let _permits = transport.limits.acquire(&req.agent).await;
            // Latency counts from here (queueing behind the limits excluded) to the end of the
            // response or the failure, whichever way this function returns.
            let _latency = Latency::<R> {
                agent: req.agent.clone().into(),
                binding,
                purpose: req.purpose,
                streaming: req.streaming,
                start: R::now(),
                runtime: std::marker::PhantomData,
            };
            // The send's result and the response's head are read in blocks of their own: a
            // value moved out of a local still holds its room in the exchange's future for as
            // long as the local is in scope, and the body is read after them.
            let (response, mut lent, log) = {
                // Built-in credentials (AU-4..AU-8) and the host's hook (AU-1) both apply; a
                // conflicting header, a failing hook or missing required credentials block the
                // send (AU-2, AU-3, ER-12): never an unauthenticated request. Any failure up to
                // the response head is reported in one place below.
                let answered: Result<_, Failure> = 'send: {
                    let material = match transport
                        .credentials
                        .material(&req.agent, &transport.client, &transport.log)
                        .await
                    {
                        Ok(m) => m,
                        Err(message) => break 'send Err((TransportErrorKind::Auth, message)),
                    };
                    let (request, log) = match transport.outgoing(&mut req, &material) {
                        Ok(r) => r,
                        Err(failure) => break 'send Err(failure),
                    };
                    // An HTTP/1 connection comes lent: it goes back to the pool here once the body
                    // has been read to the end (an HTTP/2 one is shared by its requests and stays
                    // where it is).
                    let sent = if req.http2 {
                        transport
                            .client
                            .send_http2_prepared(request)
                            .await
                            .map(|r| (r, None))
                    } else {
                        transport
                            .client
                            .send_lending(request)
                            .await
                            .map(|(r, lent)| (r, Some(lent)))
                    };
                    sent.map(|(response, lent)| (response, lent, log))
                };
                match answered {
                    Ok(r) => r,
                    Err((kind, message)) => {
                        let _ = tx.send(fail(kind, message)).await;
                        return;
                    }
                }
            };
            let (status, headers, mut body_log, mut body) = {
                let (parts, body) = response.into_parts();
                let headers = header_pairs(&parts.headers);
                let body_log = log.map(|ctx| {
                    let status = parts.status.as_u16();
                    let head =
                        protolog::format_response_head(&ctx, status, &headers, &transport.log);
                    tracing::debug!(target: "a2at::protocol", "{head}");
                    let content_type = header_text(&parts.headers, http::header::CONTENT_TYPE);
                    Box::new(BodyLog::new(*ctx, content_type, transport.log))
                });
                let status = parts.status.as_u16();
                telemetry::record_status(span, status);
                // hyper's header values share the connection's read buffer: released at the end
                // of this block, the buffer can take the next response in place instead of a
                // fresh block.
                (status, headers, body_log, body)
            };
            // A unary answer is delivered at its end, with its head and body: before the end
            // they complete nothing, and each delivery wakes the run, so the run wakes once per
            // answer instead of once per piece. A body longer than `HELD_BODY_BYTES` goes on in
            // pieces of about that size, so that the core's size limit still sees it grow. A
            // stream holds nothing: its head and every piece go at once.
            let hold_up_to = if req.streaming { 0 } else { HELD_BODY_BYTES };
            let mut held = Held {
                head: Some((status, headers)),
                ..Held::default()
            };
            if req.streaming && !held.deliver(op, &tx).await {
                return;
            }
            loop {
                let input = match body.frame().await {
                    None => {
                        if let Some(l) = body_log.take() {
                            l.finish();
                        }
                        if let Some(lent) = lent.take() {
                            lent.give_back();
                        }
                        Input::ResponseEnd { op }
                    }
                    Some(Err(e)) => {
                        let message = describe(&e);
                        if let Some(l) = body_log.take() {
                            l.interrupted(&message);
                        }
                        fail(TransportErrorKind::Io, message)
                    }
                    Some(Ok(frame)) => match frame.into_data() {
                        Ok(data) if data.is_empty() => continue,
                        Ok(data) => {
                            if let Some(l) = &mut body_log {
                                l.push(&data);
                            }
                            Input::ResponseBody {
                                op,
                                chunk: data.to_vec(),
                            }
                        }
                        Err(frame) => match frame.into_trailers() {
                            Ok(trailers) => Input::ResponseTrailers {
                                op,
                                trailers: header_pairs(&trailers),
                            },
                            Err(_) => continue,
                        },
                    },
                };
                let Some(end) = held.keep(input) else {
                    if held.body.len() >= hold_up_to && !held.deliver(op, &tx).await {
                        return;
                    }
                    continue;
                };
                // The end or a failure: what is held goes first.
                if held.deliver(op, &tx).await {
                    let _ = tx.send(end).await;
                }
                return;
            }
        }
    }

    /// The HTTP request `req` becomes: authenticated with `material` and the headers of the
    /// host's authentication hook, then passed through the host's request hook; with its
    /// protocol log context when that log is on. A plain function: the exchange's future then
    /// never holds the request it hands to the client.
    fn outgoing(
        &self,
        req: &mut HttpRequest,
        material: &AuthMaterial,
    ) -> Result<Outgoing, Failure> {
        let provided = match &self.auth {
            None => Vec::new(),
            Some(hook) => hook(req).map_err(|message| (TransportErrorKind::Auth, message))?,
        };
        // Protocol log at the real boundary (PL-1): the request as sent, auth headers included,
        // always redacted. Built only when the `a2at::protocol` target is enabled at DEBUG; its
        // masking needs the URL as it was before authentication.
        let url_before = protocol_log_enabled().then(|| req.url.clone());
        a2at_core::auth::apply(material, &provided, req)
            .map_err(|e| (TransportErrorKind::Auth, e.to_string()))?;
        let mut shown = url_before.map(|url_before| {
            let mut sent = req.clone();
            a2at_core::auth::mask_applied(&mut sent, material, &provided, &url_before);
            sent
        });
        let request = self
            .client
            .uri_of(&req.url)
            .and_then(|uri| {
                let method = http_method(req.method);
                let body = std::mem::take(&mut req.body);
                // The protocol log compares the request as the engine built it with what went
                // out; without it the headers' texts move into the request.
                if shown.is_none() {
                    build_request_owning(method, uri, std::mem::take(&mut req.headers), body)
                } else {
                    build_request_to(method, uri, &req.headers, body)
                }
            })
            .map_err(|e| {
                (
                    TransportErrorKind::Other,
                    format!("cannot build the HTTP request: {e}"),
                )
            })?;
        // The host's request hook (gateway headers, URI rewrites) runs before the log entry,
        // so the log shows what really went out.
        let request = self.client.prepare(request)?;
        let log = shown.as_mut().map(|sent| {
            if self.client.request_hook().is_some() {
                show_hook_changes(sent, req, &request, !material.query.is_empty());
            }
            tracing::debug!(target: "a2at::protocol", "{}", protolog::format_request(sent, Channel::Task, &self.log));
            Box::new(LogContext::of(sent, Channel::Task))
        });
        Ok((request, log))
    }
}

/// Records a request's latency when dropped: at every return of an exchange, and when the
/// exchange is aborted (the time until the engine gave up on it).
struct Latency<R: Runtime> {
    agent: Arc<str>,
    binding: Option<Binding>,
    /// The A2A method's name is worked out when the latency is recorded: two bytes held by
    /// every exchange instead of a sixteen-byte name.
    purpose: OpPurpose,
    streaming: bool,
    start: std::time::Instant,
    runtime: std::marker::PhantomData<fn() -> R>,
}

impl<R: Runtime> Drop for Latency<R> {
    fn drop(&mut self) {
        crate::metrics::request_duration(
            &self.agent,
            self.binding,
            telemetry::a2a_method(self.purpose, self.streaming),
            crate::runtime::elapsed::<R>(self.start),
        );
    }
}

/// Carries what the request hook changed into the logged copy `shown` of `before` (the request
/// as the engine built it, unmasked): headers whose values the hook changed or added show its
/// values (the log then masks secret-looking names), headers it removed disappear, the others
/// keep their masked values. A rewritten URI is shown as rewritten, except that a query the
/// hook changed is masked whole when authentication put a credential in it.
pub(crate) fn show_hook_changes(
    shown: &mut HttpRequest,
    before: &HttpRequest,
    after: &http::Request<crate::http::RequestBody>,
    credential_in_query: bool,
) {
    let url = after.uri().to_string();
    if url != before.url {
        let query = |u: &str| u.split_once('?').map(|(_, q)| q.to_owned());
        let base = url.split('?').next().unwrap_or_default().to_owned();
        shown.url = match (query(&url), query(&before.url)) {
            (q, b) if q == b => match query(&shown.url) {
                Some(masked) => format!("{base}?{masked}"),
                None => base,
            },
            (Some(_), _) if credential_in_query => {
                format!("{base}?{}", a2at_core::redact::MASK)
            }
            _ => url,
        };
    }
    let values_before = |name: &str| -> Vec<&str> {
        before
            .headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_ref())
            .collect()
    };
    let mut headers = Vec::new();
    for name in after.headers().keys() {
        let values: Vec<String> = after
            .headers()
            .get_all(name)
            .iter()
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .collect();
        if values_before(name.as_str()) == values {
            headers.extend(
                shown
                    .headers
                    .iter()
                    .filter(|(n, _)| n.eq_ignore_ascii_case(name.as_str()))
                    .cloned(),
            );
        } else {
            headers.extend(
                values
                    .into_iter()
                    .map(|v| (name.as_str().to_owned().into(), v.into())),
            );
        }
    }
    shown.headers = headers;
}

/// The protocol log of one response body: the core assembles the entries, this only emits them.
struct BodyLog(protolog::ResponseBodyLog);

impl BodyLog {
    fn new(ctx: LogContext, content_type: Option<String>, cfg: LogConfig) -> BodyLog {
        BodyLog(protolog::ResponseBodyLog::new(ctx, content_type, cfg))
    }

    fn push(&mut self, data: &[u8]) {
        emit(self.0.push(data));
    }

    fn finish(self) {
        emit(self.0.finish());
    }

    fn interrupted(self, reason: &str) {
        emit(self.0.interrupted(reason));
    }
}

fn emit(entries: Vec<String>) {
    for entry in entries {
        tracing::debug!(target: "a2at::protocol", "{entry}");
    }
}

/// How much of a unary answer's body an exchange keeps before delivering it (a stream's keeps
/// none).
const HELD_BODY_BYTES: usize = 64 * 1024;

/// The pieces of a unary answer read and not yet delivered.
#[derive(Default)]
struct Held {
    head: Option<(u16, Vec<HeaderField>)>,
    body: Vec<u8>,
    trailers: Option<Vec<HeaderField>>,
}

impl Held {
    /// Keeps a body chunk or the trailers; gives any other input (the end or a failure) back.
    fn keep(&mut self, input: Input) -> Option<Input> {
        match input {
            Input::ResponseBody { chunk, .. } if self.body.is_empty() => self.body = chunk,
            Input::ResponseBody { chunk, .. } => self.body.extend_from_slice(&chunk),
            Input::ResponseTrailers { trailers, .. } => self.trailers = Some(trailers),
            other => return Some(other),
        }
        None
    }

    /// Delivers what is kept, in the order it was read, and keeps nothing; false when the run
    /// no longer listens.
    async fn deliver(&mut self, op: OpId, tx: &completions::Sender<Input>) -> bool {
        if let Some((status, headers)) = self.head.take() {
            let head = Input::ResponseHead {
                op,
                status,
                headers,
            };
            if tx.send(head).await.is_err() {
                return false;
            }
        }
        if !self.body.is_empty() {
            let chunk = std::mem::take(&mut self.body);
            if tx.send(Input::ResponseBody { op, chunk }).await.is_err() {
                return false;
            }
        }
        if let Some(trailers) = self.trailers.take() {
            let trailers = Input::ResponseTrailers { op, trailers };
            if tx.send(trailers).await.is_err() {
                return false;
            }
        }
        true
    }
}
