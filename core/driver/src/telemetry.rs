//! Tracing spans of a run, with stable names and attributes.
//!
//! The driver opens these [`tracing`] spans (the core stays free of them; it decides, the
//! driver observes what it decided):
//!
//! | span | parent | opened | closed |
//! |---|---|---|---|
//! | [`RUN_SPAN`] | the host's current span when the run was spawned | at spawn | at the result |
//! | [`STEP_SPAN`] | the run | at the first host call or request of the step | at the end of the run |
//! | [`SUBTASK_SPAN`] | its step | at the first host call or request of the subtask | when the subtask finished |
//! | [`EXCHANGE_SPAN`] | its subtask (or the span current where the exchange was started, for extension and task operations) | when the request is handed to the transport | at the end of the response or its failure |
//!
//! Steps and subtasks are logical: the core decides them and reports no "step started" output
//! the driver could rely on (events may be switched off), so their spans open at the first
//! output that names them. A subtask's span closes when the core reports the subtask finished;
//! a step's span closes at the end of the run (its duration is not the step's).
//!
//! Every exchange is its own span: each attempt of a retried request, each poll, each reattach
//! (`a2a.purpose = resubscribe`), each negotiation round (`a2a.purpose = reply`, with
//! [`A2A_NEGOTIATION_ROUND`]). Its `trace_id` and `span_id` fields are those of the
//! `traceparent` header the request carries (see `a2at_core::tracectx`).
//!
//! Attributes follow OpenTelemetry's HTTP conventions where they exist; the `a2a.*` ones are
//! this crate's. No attribute holds a credential: the URL is recorded before authentication
//! touched it and then redacted (userinfo and secret query parameters masked), and no header,
//! body or message text is recorded.

use std::collections::BTreeMap;

use a2at_core::a2a::Binding;
use a2at_core::host::{HostRequest, TaskRequest};
use a2at_core::io::{HttpRequest, OpPurpose, TransportErrorKind};
use a2at_core::tracectx::{TRACEPARENT, TraceParent};
use tracing::Span;
use tracing::field::Empty;

/// The span of one run.
pub const RUN_SPAN: &str = "a2at_run";
/// The span of one step.
pub const STEP_SPAN: &str = "a2at_step";
/// The span of one subtask (one task invocation of a step).
pub const SUBTASK_SPAN: &str = "a2at_subtask";
/// The span of one HTTP exchange with an agent.
pub const EXCHANGE_SPAN: &str = "a2at_exchange";

/// The HTTP method (`POST`, `GET`).
pub const HTTP_REQUEST_METHOD: &str = "http.request.method";
/// The agent's host name or address.
pub const SERVER_ADDRESS: &str = "server.address";
/// The request URL, redacted (no userinfo, no secret query values).
pub const URL_FULL: &str = "url.full";
/// The response's HTTP status code.
pub const HTTP_RESPONSE_STATUS_CODE: &str = "http.response.status_code";
/// Why the exchange or run failed: the transport failure kind, the HTTP status code, or the
/// run's error code.
pub const ERROR_TYPE: &str = "error.type";
/// `ERROR` on a failed exchange or run (the OpenTelemetry status, as `tracing-opentelemetry`
/// reads it).
pub const OTEL_STATUS_CODE: &str = "otel.status_code";
/// The agent's name (its card's).
pub const A2A_AGENT: &str = "a2a.agent";
/// The protocol binding: `JSONRPC`, `HTTP+JSON` or `GRPC`.
pub const A2A_BINDING: &str = "a2a.binding";
/// The A2A method: `SendMessage`, `SendStreamingMessage`, `GetTask`, `SubscribeToTask`,
/// `ListTasks`, `CancelTask`.
pub const A2A_METHOD: &str = "a2a.method";
/// What the exchange is for: `send`, `reply` (a negotiation round or a follow-up), `poll`,
/// `resubscribe` (a reattach), `lookup`, `cancel`.
pub const A2A_PURPOSE: &str = "a2a.purpose";
/// The remote task id, once known.
pub const A2A_TASK_ID: &str = "a2a.task.id";
/// The A2A context id of the conversation.
pub const A2A_CONTEXT_ID: &str = "a2a.context.id";
/// The final status of a subtask (`success`, `failed` or `cancelled`, as in the result).
pub const A2A_TASK_STATE: &str = "a2a.task.state";
/// The negotiation round a reply answers, and the last round of a subtask.
pub const A2A_NEGOTIATION_ROUND: &str = "a2a.negotiation.round";
/// The step's name.
pub const A2A_STEP: &str = "a2a.step";
/// The subtask's index within its step.
pub const A2A_SUBTASK_INDEX: &str = "a2a.subtask.index";
/// The run's execution id.
pub const A2A_EXECUTION_ID: &str = "a2a.execution.id";
/// How the run ended: `success` or `failure`.
pub const A2A_RUN_OUTCOME: &str = "a2a.run.outcome";
/// The W3C trace id (32 lowercase hex digits) the requests carry.
pub const TRACE_ID: &str = "trace_id";
/// On the run's span, when it joined a host's trace: the host's span id (16 hex digits), the
/// parent the run's span has in that trace.
pub const PARENT_SPAN_ID: &str = "parent_span_id";
/// The W3C span id (16 lowercase hex digits) of an exchange, as sent in `traceparent`.
pub const SPAN_ID: &str = "span_id";

/// 32 lowercase hex digits of a trace id.
pub(crate) fn trace_id_hex(trace_id: u128) -> String {
    format!("{trace_id:032x}")
}

/// The span of run `execution_id`: its trace id (the one every `traceparent` of the run
/// carries) and, when the run joined a host's trace, [`PARENT_SPAN_ID`], the host's span the
/// run hangs under. A child of the current span, for hosts that nest with `tracing` itself.
pub(crate) fn run_span(
    execution_id: &str,
    seed: u64,
    trace_id: u128,
    host_parent: Option<TraceParent>,
    resumed: bool,
) -> Span {
    // Recorded at creation (not later): a layer reads the parent when the span opens.
    let parent_span_id = host_parent.map(|p| format!("{:016x}", p.parent_id()));
    tracing::info_span!(
        "a2at_run",
        %execution_id,
        seed,
        "a2a.execution.id" = %execution_id,
        "trace_id" = %trace_id_hex(trace_id),
        "parent_span_id" = parent_span_id.as_deref(),
        "a2a.run.resumed" = resumed,
        "a2a.run.outcome" = Empty,
        "error.type" = Empty,
        "otel.status_code" = Empty,
    )
}

/// The A2A method a request calls, from what the core says it is for.
pub fn a2a_method(purpose: OpPurpose, streaming: bool) -> &'static str {
    match purpose {
        OpPurpose::Send | OpPurpose::Reply if streaming => "SendStreamingMessage",
        OpPurpose::Poll => "GetTask",
        OpPurpose::Resubscribe => "SubscribeToTask",
        OpPurpose::Lookup => "ListTasks",
        OpPurpose::Cancel => "CancelTask",
        _ => "SendMessage",
    }
}

/// The stable name of a purpose (as in traces).
fn purpose_name(purpose: OpPurpose) -> &'static str {
    match purpose {
        OpPurpose::Send => "send",
        OpPurpose::Reply => "reply",
        OpPurpose::Poll => "poll",
        OpPurpose::Resubscribe => "resubscribe",
        OpPurpose::Lookup => "lookup",
        OpPurpose::Cancel => "cancel",
        _ => "other",
    }
}

/// The host of an absolute URL, without userinfo or port.
fn server_address(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if let Some(v6) = host_port.strip_prefix('[') {
        return v6.split(']').next().unwrap_or(v6);
    }
    host_port.split(':').next().unwrap_or(host_port)
}

/// The span of one exchange, a child of the current span. `binding` is the agent's when the
/// caller knows it. Call before authentication changes the request.
pub(crate) fn exchange_span(req: &HttpRequest, binding: Option<Binding>) -> Span {
    if !tracing::enabled!(tracing::Level::INFO) {
        return Span::none();
    }
    let parent = req
        .headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(TRACEPARENT))
        .and_then(|(_, v)| TraceParent::parse(v).ok());
    let span = tracing::info_span!(
        "a2at_exchange",
        "http.request.method" = req.method.as_str(),
        "server.address" = server_address(&req.url),
        "url.full" = %a2at_core::redact::redact_url(&req.url),
        "http.response.status_code" = Empty,
        "a2a.agent" = %req.agent,
        "a2a.binding" = binding.map(Binding::as_str),
        "a2a.method" = a2a_method(req.purpose, req.streaming),
        "a2a.purpose" = purpose_name(req.purpose),
        "a2a.step" = Empty,
        "a2a.task.id" = req.correlation.remote_task_id.as_deref(),
        "a2a.context.id" = Empty,
        "a2a.negotiation.round" = Empty,
        "error.type" = Empty,
        "otel.status_code" = Empty,
        "trace_id" = parent.map(|p| trace_id_hex(p.trace_id())),
        "span_id" = parent.map(|p| format!("{:016x}", p.parent_id())),
    );
    if !req.correlation.context_id.is_empty() {
        span.record("a2a.context.id", req.correlation.context_id.as_str());
    }
    if !req.correlation.step.is_empty() {
        span.record("a2a.step", req.correlation.step.as_str());
    }
    span
}

/// Records how the run ended on its span.
pub(crate) fn record_outcome(span: &Span, result: &a2at_core::ExecutionResult) {
    if result.success {
        span.record("a2a.run.outcome", "success");
    } else {
        span.record("a2a.run.outcome", "failure");
        span.record("otel.status_code", "ERROR");
        if let Some(e) = &result.error {
            span.record("error.type", e.code.as_str());
        }
    }
}

/// Records the response status on the exchange span; 4xx and 5xx mark it failed.
pub(crate) fn record_status(span: &Span, status: u16) {
    span.record("http.response.status_code", status);
    if status >= 400 {
        // OpenTelemetry's HTTP conventions give the status code as text here.
        span.record("error.type", status.to_string());
        span.record("otel.status_code", "ERROR");
    }
}

/// Records a transport failure on the exchange span.
pub(crate) fn record_failure(span: &Span, kind: TransportErrorKind) {
    span.record("error.type", transport_error_name(kind));
    span.record("otel.status_code", "ERROR");
}

/// The stable name of a transport failure kind.
fn transport_error_name(kind: TransportErrorKind) -> &'static str {
    match kind {
        TransportErrorKind::Connect => "connect",
        TransportErrorKind::Tls => "tls",
        TransportErrorKind::Io => "io",
        TransportErrorKind::Auth => "auth",
        TransportErrorKind::Restarted => "restarted",
        _ => "other",
    }
}

/// Values by subtask (step name, subtask index), looked up by a borrowed step name.
///
/// A map keyed by `(String, u32)` can only be searched with an owned key, so every lookup
/// (one per exchange, host call and finished subtask) would copy the step's name.
struct BySubtask<V>(BTreeMap<String, BTreeMap<u32, V>>);

impl<V> Default for BySubtask<V> {
    fn default() -> Self {
        BySubtask(BTreeMap::new())
    }
}

impl<V> BySubtask<V> {
    fn get(&self, step: &str, index: u32) -> Option<&V> {
        self.0.get(step)?.get(&index)
    }

    fn insert(&mut self, step: &str, index: u32, value: V) {
        match self.0.get_mut(step) {
            Some(of_step) => {
                of_step.insert(index, value);
            }
            None => {
                self.0
                    .insert(step.to_owned(), BTreeMap::from([(index, value)]));
            }
        }
    }

    /// Removes the value, and the step's entry with its last subtask (a long run does not keep
    /// an empty entry per finished step).
    fn remove(&mut self, step: &str, index: u32) -> Option<V> {
        let of_step = self.0.get_mut(step)?;
        let value = of_step.remove(&index);
        if of_step.is_empty() {
            self.0.remove(step);
        }
        value
    }
}

/// The logical spans (steps, subtasks) of one run, kept by the run loop.
#[derive(Default)]
pub(crate) struct RunSpans {
    steps: BTreeMap<String, Span>,
    subtasks: BySubtask<Span>,
    /// The last negotiation round each subtask's host was asked about.
    rounds: BySubtask<u32>,
    /// How many finished subtasks were looked at.
    finished_seen: usize,
}

impl RunSpans {
    /// The spans of a run whose first `finished` subtasks were already reported (a run
    /// resumed after a restart).
    pub(crate) fn starting_at(finished: usize) -> RunSpans {
        RunSpans {
            finished_seen: finished,
            ..RunSpans::default()
        }
    }

    /// The span of `step`, opened under the current (run) span the first time.
    fn step(&mut self, step: &str) -> Span {
        if let Some(s) = self.steps.get(step) {
            return s.clone();
        }
        let span = tracing::info_span!("a2at_step", "a2a.step" = step);
        // A span no subscriber records is not kept: when tracing is off, a run (and a
        // waiting one above all) would otherwise hold a map entry per step for nothing.
        if !span.is_disabled() {
            self.steps.insert(step.to_owned(), span.clone());
        }
        span
    }

    /// The span of the subtask `request` asks about.
    fn subtask_of(&mut self, request: &TaskRequest) -> Span {
        self.subtask(
            &request.step_name,
            request.subtask_index,
            &request.agent_name,
        )
    }

    /// The span of subtask `index` of `step`, opened under its step the first time.
    fn subtask(&mut self, step: &str, index: u32, agent: &str) -> Span {
        if let Some(s) = self.subtasks.get(step, index) {
            return s.clone();
        }
        let parent = self.step(step);
        let span = tracing::info_span!(
            parent: &parent,
            "a2at_subtask",
            "a2a.step" = step,
            "a2a.subtask.index" = index,
            "a2a.agent" = agent,
            "a2a.task.id" = Empty,
            "a2a.context.id" = Empty,
            "a2a.task.state" = Empty,
            "a2a.negotiation.round" = Empty,
            "error.type" = Empty,
            "otel.status_code" = Empty,
        );
        if !span.is_disabled() {
            self.subtasks.insert(step, index, span.clone());
        }
        span
    }

    /// The span of exchange `req`, under its subtask's span (or the current span for a
    /// request of no subtask). A reply carries the round the subtask's last `on_negotiation`
    /// call was about, which is the round it answers.
    pub(crate) fn exchange(&mut self, req: &HttpRequest, binding: Option<Binding>) -> Span {
        let c = &req.correlation;
        if c.step.is_empty() {
            return exchange_span(req, binding);
        }
        let parent = self.subtask(&c.step, c.subtask_index, &req.agent);
        let span = parent.in_scope(|| exchange_span(req, binding));
        if req.purpose == OpPurpose::Reply {
            if let Some(round) = self.rounds.get(&c.step, c.subtask_index) {
                span.record("a2a.negotiation.round", round);
            }
        }
        span
    }

    /// The span a host call belongs under (its subtask's or its step's), recording the
    /// negotiation round of an `on_negotiation` call on the subtask.
    pub(crate) fn for_host_call(&mut self, request: &HostRequest) -> Option<Span> {
        match request {
            HostRequest::Task(t) => Some(self.subtask_of(t)),
            HostRequest::SelfTask(t) => Some(self.subtask_of(t)),
            HostRequest::Negotiation(n) => {
                let t = &n.task;
                let span = self.subtask_of(t);
                if let Some(ctx) = n.context().ok().filter(|_| !span.is_disabled()) {
                    span.record("a2a.negotiation.round", ctx.round);
                    self.rounds.insert(&t.step_name, t.subtask_index, ctx.round);
                }
                Some(span)
            }
            HostRequest::InputRequired(r) => Some(self.subtask_of(&r.task)),
            HostRequest::Route(r) => Some(self.step(&r.step_name)),
        }
    }

    /// Closes the spans of the subtasks finished since the last call (of `run`), recording
    /// their final state, remote task id, context id and error code, and counts them
    /// ([`crate::metrics::SUBTASKS_TOTAL`]) under the agent's name.
    pub(crate) fn close_finished(&mut self, run: &a2at_core::Run) {
        while self.finished_seen < run.finished_count() {
            let Some(task) = run.finished_task(self.finished_seen) else {
                break;
            };
            self.finished_seen += 1;
            crate::metrics::subtask_finished(&task.agent_name, task.status);
            self.rounds.remove(&task.step_name, task.subtask_index);
            // A subtask that never reached the host or an agent has no span yet.
            let Some(span) = self.subtasks.remove(&task.step_name, task.subtask_index) else {
                continue;
            };
            span.record("a2a.task.state", task.status.as_str());
            if let Some(id) = &task.remote_task_id {
                span.record("a2a.task.id", id.as_str());
            }
            if let Some(ctx) = &task.context_id {
                span.record("a2a.context.id", ctx.as_str());
            }
            if let Some(code) = &task.error_code {
                span.record("error.type", code.as_str());
                span.record("otel.status_code", "ERROR");
            }
        }
    }
}
