//! Deterministic trace recording and replay: a versioned JSON-lines input log.
//!
//! A [`Run`] is a pure function of its construction (workflow, agent cards, [`RunConfig`],
//! [`RunStart`]) and of the timed inputs fed to it. A trace stores exactly that, one JSON value
//! per line, so an incident or a simulated scenario becomes a reproducer ("inputs only") or a
//! golden regression test ("inputs and outputs"). The core only formats and parses lines; reading
//! and writing files belongs to adapters and tests.
//!
//! # Line kinds
//!
//! 1. **Header** (always line 1, exactly once):
//!    ```json
//!    {"kind":"header","format":"a2at-trace","version":1,"core":"0.1.0","seed":7,
//!     "config":{...},"start":{"runtime_intent":"","language":""},
//!     "workflow":{...},"agents":[{...card...}],"preferred_binding":null,
//!     "outputs":true,"redaction":"none","replayable":true}
//!    ```
//!    * `core` is the crate version that wrote the trace (informational; a newer core may
//!      legitimately produce different outputs, which replay reports as a divergence).
//!    * `commit` (optional string) names the source revision, when the writer knows it.
//!    * `seed` is [`RunConfig::seed`]; `config` is a [`TraceConfig`] (budgets in microseconds).
//!    * `workflow` is [`Workflow::to_json`]; `agents` are [`AgentCard::to_json`] values and
//!      `preferred_binding` (`"JSONRPC"`, `"HTTP+JSON"` or `null`) is the binding passed to
//!      [`AgentDirectory::new`]. Together they rebuild the same [`AgentDirectory`].
//!    * `outputs`: whether the `out` lines are complete. When `true`, every drain is recorded,
//!      so "no `out` line" means "no output" and replay checks that too. When `false`, the file
//!      must contain no `out` line (a pure reproducer). Optional on input: when absent it is
//!      `true` if and only if the file contains an `out` line.
//!    * `redaction` (see [`Redaction`]) and `replayable` (`false` exactly when response bodies
//!      were redacted). Both optional on input, defaulting to `"none"` / `true`.
//! 2. **Input**: `{"t":<micros>,"in":<Input>}`, one per [`Run::handle`] call, with `t` the `now`
//!    passed ([`Timestamp`] microseconds) and the [`Input`] in its serde form.
//! 3. **Timeout**: `{"t":<micros>,"timeout":true}`, one per [`Run::handle_timeout`] call.
//! 4. **Output**: `{"out":<Output>}`, the outputs drained with [`Run::poll_output`] after the
//!    preceding input or timeout line, in drain order. `out` lines directly after the header
//!    are the outputs queued by [`Run::new`]. The value is the serde form of [`Output`], except
//!    that an event is `{"type":"event","event":{"type":"start","data":{...}}}` (see
//!    [`output_to_value`]).
//!
//! Blank lines are ignored (line numbers still count them). Any other shape is a
//! [`TraceError`] naming the 1-based line.
//!
//! # Ordering rules
//!
//! **File order is authoritative**: replay feeds input and timeout lines in file order, whatever
//! their `t`. `t` normally never decreases; a decreasing `t` is replayed as recorded, and the
//! run rejects it ([`ApiMisuse::TimeWentBackwards`]) exactly as it did when recorded, which the
//! [`ReplayReport`] lists. Outputs belong to the nearest input, timeout or header line above
//! them: the driver drains completely after each mutation.
//!
//! # Versioning
//!
//! `version` is bumped whenever the meaning of a line changes (a new required field, a changed
//! unit, a changed serde form of [`Input`] or [`Output`]). Readers reject versions they do not
//! know ([`TraceErrorKind::UnsupportedVersion`]). Adding an optional header field with a default
//! that keeps old files meaning the same does not bump the version.
//!
//! # Redaction
//!
//! [`Redaction`] replaces HTTP bodies by `{"redacted":"fnv64:<16 hex digits>"}`, a stable
//! 64-bit FNV-1a digest of the bytes (not a cryptographic hash: it hides content from casual
//! reading and detects changes, it does not resist a dictionary attack on short bodies).
//!
//! * [`Redaction::RequestBodies`]: only the `body` of `transmit` *outputs* is replaced. Request
//!   bodies are outputs, never fed back, so **replay stays exact**: it redacts the body the run
//!   produces in the same way and compares digests. Correlation (`op`, `agent`, `purpose`, URL,
//!   headers, `correlation`) stays readable.
//! * [`Redaction::AllBodies`]: additionally the `chunk` of `response_body` *inputs* is replaced.
//!   The run needs those bytes to decode responses, so such a trace is an **audit record, not a
//!   reproducer**: the header says `"replayable":false`, and [`replay`] replays (and checks) the
//!   lines up to the first redacted input, then stops with [`ReplayError::NotReplayable`].
//!
//! Host callbacks, events and results are never redacted: they are the host's own data.
//!
//! # Replay
//!
//! [`parse_trace`] checks every line and rebuilds the workflow and the directory; [`replay`]
//! creates a fresh [`Run`], feeds the lines in order, drains after each and compares the drained
//! outputs with the recorded `out` lines. The first difference is a [`Divergence`], the
//! counterpart of Temporal's nondeterminism check. [`replay_outputs`] returns what the run
//! produces now, for blessing golden files with [`rerecord`].

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::a2a::{AgentCard, Binding, DecodeLimits};
use crate::agents::AgentDirectory;
use crate::event::{EventSelection, EventType};
use crate::io::{ApiMisuse, Input, Output};
use crate::result::ExecutionResult;
use crate::retry::{AmbiguousSend, RetryPolicy};
use crate::run::{Run, RunConfig, RunStart};
use crate::time::Timestamp;
use crate::tracectx::TraceParent;
use crate::workflow::{ValidatedWorkflow, Workflow};

/// The `format` value of every trace header.
pub const FORMAT: &str = "a2at-trace";

/// The trace format version this crate reads and writes.
pub const VERSION: u32 = 1;

/// The version of this crate, written as the header's `core`.
pub const CORE_VERSION: &str = env!("CARGO_PKG_VERSION");

/// A serde mirror of [`RunConfig`] without the seed (which the header carries on its own):
/// durations in microseconds, decode limits in bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceConfig {
    /// Execution id; drawn from the seeded generator when `None`.
    #[serde(default)]
    pub execution_id: Option<String>,
    /// [`RunConfig::task_budget`] in microseconds.
    pub task_budget_us: u64,
    /// [`RunConfig::callback_budget`] in microseconds.
    pub callback_budget_us: u64,
    /// [`RunConfig::poll_interval`] in microseconds.
    pub poll_interval_us: u64,
    /// [`RunConfig::cancel_budget`] in microseconds.
    pub cancel_budget_us: u64,
    /// [`RunConfig::max_negotiation_exchanges`].
    pub max_negotiation_exchanges: u32,
    /// [`RunConfig::max_input_replies`] (absent in traces of runs that did not allow them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_input_replies: Option<u32>,
    /// [`RunConfig::history_length`].
    pub history_length: Option<i32>,
    /// [`DecodeLimits::max_event_bytes`].
    pub max_event_bytes: u64,
    /// [`DecodeLimits::max_body_bytes`].
    pub max_body_bytes: u64,
    /// [`RunConfig::events`]: absent for all events, else the emitted types (`[]` for none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<Vec<EventType>>,
    /// [`RunConfig::retry`]; absent in traces written before retries existed, which replay
    /// without any retry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<TraceRetry>,
    /// [`RunConfig::trace_parent`]; absent when the run started its own trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_parent: Option<TraceParent>,
    /// [`RunConfig::trace_state`]; absent when there was none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_state: Option<String>,
    /// [`RunConfig::ambiguous_send`]; absent for the default (fail).
    #[serde(default, skip_serializing_if = "AmbiguousSend::is_fail")]
    pub ambiguous_send: AmbiguousSend,
}

/// The serde mirror of [`RetryPolicy`]: delays in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceRetry {
    /// [`RetryPolicy::attempts`].
    pub attempts: u32,
    /// [`RetryPolicy::base_delay`] in microseconds.
    pub base_delay_us: u64,
    /// [`RetryPolicy::max_delay`] in microseconds.
    pub max_delay_us: u64,
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

impl TraceConfig {
    /// The mirror of `config` (its seed is not part of it).
    pub fn from_run_config(config: &RunConfig) -> TraceConfig {
        TraceConfig {
            execution_id: config.execution_id.clone(),
            task_budget_us: micros(config.task_budget),
            callback_budget_us: micros(config.callback_budget),
            poll_interval_us: micros(config.poll_interval),
            cancel_budget_us: micros(config.cancel_budget),
            max_negotiation_exchanges: config.max_negotiation_exchanges,
            max_input_replies: config.max_input_replies,
            history_length: config.history_length,
            max_event_bytes: config.decode_limits.max_event_bytes as u64,
            max_body_bytes: config.decode_limits.max_body_bytes as u64,
            events: config.events.to_list(),
            retry: Some(TraceRetry {
                attempts: config.retry.attempts,
                base_delay_us: micros(config.retry.base_delay),
                max_delay_us: micros(config.retry.max_delay),
            }),
            trace_parent: config.trace_parent,
            trace_state: config.trace_state.clone(),
            ambiguous_send: config.ambiguous_send,
        }
    }

    /// The [`RunConfig`] this mirrors, with `seed`. Byte limits beyond the platform's `usize`
    /// saturate.
    pub fn to_run_config(&self, seed: u64) -> RunConfig {
        RunConfig {
            seed,
            execution_id: self.execution_id.clone(),
            task_budget: Duration::from_micros(self.task_budget_us),
            callback_budget: Duration::from_micros(self.callback_budget_us),
            poll_interval: Duration::from_micros(self.poll_interval_us),
            cancel_budget: Duration::from_micros(self.cancel_budget_us),
            max_negotiation_exchanges: self.max_negotiation_exchanges,
            max_input_replies: self.max_input_replies,
            history_length: self.history_length,
            decode_limits: DecodeLimits {
                max_event_bytes: usize::try_from(self.max_event_bytes).unwrap_or(usize::MAX),
                max_body_bytes: usize::try_from(self.max_body_bytes).unwrap_or(usize::MAX),
            },
            events: EventSelection::from_list(self.events.clone()),
            retry: self.retry.map_or(RetryPolicy::FAIL_FAST, |r| RetryPolicy {
                attempts: r.attempts,
                base_delay: Duration::from_micros(r.base_delay_us),
                max_delay: Duration::from_micros(r.max_delay_us),
            }),
            trace_parent: self.trace_parent,
            trace_state: self.trace_state.clone(),
            ambiguous_send: self.ambiguous_send,
        }
    }
}

/// The serde mirror of [`RunStart`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceStart {
    /// [`RunStart::runtime_intent`].
    pub runtime_intent: String,
    /// [`RunStart::language`].
    pub language: String,
}

/// Which HTTP bodies a trace replaces by digests (see the module docs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Redaction {
    /// Bodies are kept as they are.
    #[default]
    None,
    /// Request bodies of `transmit` outputs are digests; replay stays exact.
    RequestBodies,
    /// Request and response bodies are digests; the trace is an audit record, not replayable.
    AllBodies,
}

impl Redaction {
    fn requests(self) -> bool {
        self != Redaction::None
    }

    fn responses(self) -> bool {
        self == Redaction::AllBodies
    }
}

/// The stable digest used by redaction: `fnv64:` and 16 lowercase hex digits of FNV-1a 64.
pub fn digest(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("fnv64:{h:016x}")
}

/// The first line of a trace: everything needed to rebuild the same [`Run`].
#[derive(Debug, Clone, PartialEq)]
pub struct TraceHeader {
    /// Crate version that wrote the trace.
    pub core: String,
    /// Source revision, when known.
    pub commit: Option<String>,
    /// [`RunConfig::seed`].
    pub seed: u64,
    /// The rest of the [`RunConfig`].
    pub config: TraceConfig,
    /// The [`RunStart`].
    pub start: TraceStart,
    /// [`Workflow::to_json`] of the workflow.
    pub workflow: Value,
    /// [`AgentCard::to_json`] of every card, in directory (name) order.
    pub agents: Vec<Value>,
    /// The binding preference the directory was built with.
    pub preferred_binding: Option<Binding>,
    /// Whether the `out` lines are complete (see the module docs).
    pub outputs: bool,
    /// Which bodies are redacted.
    pub redaction: Redaction,
}

impl TraceHeader {
    /// The header for a run built from these parts, recording outputs and redacting nothing.
    ///
    /// The directory does not remember the binding preference it was built with, so this finds
    /// one (none, JSON-RPC, HTTP+JSON) that rebuilds an equal directory from the cards; it fails
    /// with [`TraceErrorKind::Rebuild`] when none does.
    pub fn new(
        workflow: &ValidatedWorkflow,
        agents: &AgentDirectory,
        config: &RunConfig,
        start: &RunStart,
    ) -> Result<TraceHeader, TraceError> {
        Self::build(workflow, agents, config, start)
    }

    // Outside `new`, which cargo-mutants does not mutate.
    fn build(
        workflow: &ValidatedWorkflow,
        agents: &AgentDirectory,
        config: &RunConfig,
        start: &RunStart,
    ) -> Result<TraceHeader, TraceError> {
        let cards: Vec<AgentCard> = agents
            .names()
            .filter_map(|n| agents.get(n))
            .map(|e| e.card.clone())
            .collect();
        let preferred_binding = [None, Some(Binding::JsonRpc), Some(Binding::HttpJson)]
            .into_iter()
            .find(|p| AgentDirectory::new(cards.clone(), *p).as_ref() == Ok(agents))
            .ok_or_else(|| {
                TraceError::new(
                    1,
                    TraceErrorKind::Rebuild(
                        "the directory cannot be rebuilt from its cards".into(),
                    ),
                )
            })?;
        Ok(TraceHeader {
            core: CORE_VERSION.to_owned(),
            commit: None,
            seed: config.seed,
            config: TraceConfig::from_run_config(config),
            start: TraceStart {
                runtime_intent: start.runtime_intent.to_string(),
                language: start.language.to_string(),
            },
            workflow: workflow.workflow().to_json(),
            agents: cards.iter().map(AgentCard::to_json).collect(),
            preferred_binding,
            outputs: true,
            redaction: Redaction::None,
        })
    }

    /// Whether replay can run to the end (response bodies are not redacted).
    pub fn replayable(&self) -> bool {
        !self.redaction.responses()
    }

    fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("kind".into(), json!("header"));
        m.insert("format".into(), json!(FORMAT));
        m.insert("version".into(), json!(VERSION));
        m.insert("core".into(), json!(self.core));
        if let Some(c) = &self.commit {
            m.insert("commit".into(), json!(c));
        }
        m.insert("seed".into(), json!(self.seed));
        m.insert("config".into(), to_value(&self.config));
        m.insert("start".into(), to_value(&self.start));
        m.insert("workflow".into(), self.workflow.clone());
        m.insert("agents".into(), Value::Array(self.agents.clone()));
        m.insert(
            "preferred_binding".into(),
            self.preferred_binding
                .map_or(Value::Null, |b| json!(b.as_str())),
        );
        m.insert("outputs".into(), json!(self.outputs));
        m.insert("redaction".into(), to_value(&self.redaction));
        m.insert("replayable".into(), json!(self.replayable()));
        Value::Object(m)
    }
}

fn to_value<T: Serialize>(v: &T) -> Value {
    // Serialising the trace's own plain data types cannot fail.
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// Builds trace lines (without the trailing newline). Stateless apart from the redaction, so a
/// driver can write each line as it happens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TraceWriter {
    redaction: Redaction,
}

impl TraceWriter {
    /// A writer that redacts nothing.
    pub fn new() -> TraceWriter {
        TraceWriter::default()
    }

    /// A writer applying `redaction` to every line it builds (and recording it in the header).
    pub fn with_redaction(redaction: Redaction) -> TraceWriter {
        TraceWriter { redaction }
    }

    /// The header line; its `redaction` is the writer's.
    pub fn header(&self, header: &TraceHeader) -> String {
        let mut h = header.clone();
        h.redaction = self.redaction;
        h.to_value().to_string()
    }

    /// The line of a [`Run::handle`] call.
    pub fn input(&self, now: Timestamp, input: &Input) -> String {
        let mut v = to_value(input);
        if self.redaction.responses() {
            redact_response_body(&mut v);
        }
        json!({"t": now.as_micros(), "in": v}).to_string()
    }

    /// The line of a [`Run::handle_timeout`] call.
    pub fn timeout(&self, now: Timestamp) -> String {
        json!({"t": now.as_micros(), "timeout": true}).to_string()
    }

    /// The line of one drained output.
    pub fn output(&self, output: &Output) -> String {
        json!({"out": output_value(output, self.redaction)}).to_string()
    }
}

fn redacted(bytes_field: &Value) -> Value {
    let bytes: Vec<u8> = match serde_json::from_value::<BytesRepr>(bytes_field.clone()) {
        Ok(BytesRepr::Text(t)) => t.into_bytes(),
        Ok(BytesRepr::Binary { base64 }) => {
            use base64::Engine as _;
            base64::engine::general_purpose::STANDARD
                .decode(base64)
                .unwrap_or_default()
        }
        Err(_) => return bytes_field.clone(),
    };
    json!({"redacted": digest(&bytes)})
}

/// The serde forms of body bytes in [`Input`] and [`Output`] (UTF-8 text or base64).
#[derive(Deserialize)]
#[serde(untagged)]
enum BytesRepr {
    Text(String),
    Binary { base64: String },
}

fn is_redacted_marker(v: &Value) -> bool {
    v.as_object()
        .is_some_and(|o| o.len() == 1 && o.get("redacted").is_some_and(Value::is_string))
}

fn redact_response_body(v: &mut Value) {
    if v["type"] == "response_body" {
        if let Some(chunk) = v.get_mut("chunk") {
            if !is_redacted_marker(chunk) {
                *chunk = redacted(chunk);
            }
        }
    }
}

/// The trace form of an output: the serde form of [`Output`], except that an event is written
/// as `{"type":"event","event":{"type":…,"data":…}}`. (`Output`'s derived internally tagged
/// form would put the event's own `type` next to the variant tag and cannot be read back.)
pub fn output_to_value(output: &Output) -> Value {
    match output {
        Output::Event(e) => json!({"type": "event", "event": to_value(e)}),
        other => to_value(other),
    }
}

/// Reads the trace form of an output (see [`output_to_value`]).
pub fn output_from_value(value: Value) -> Result<Output, serde_json::Error> {
    if value["type"] == "event" {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct EventLine {
            #[allow(dead_code)]
            r#type: String,
            event: crate::event::Event,
        }
        let line: EventLine = serde_json::from_value(value)?;
        return Ok(Output::Event(line.event));
    }
    serde_json::from_value(value)
}

fn output_value(output: &Output, redaction: Redaction) -> Value {
    let mut v = output_to_value(output);
    if redaction.requests() && v["type"] == "transmit" {
        if let Some(body) = v.get_mut("body") {
            *body = redacted(body);
        }
    }
    v
}

/// What went wrong on one line of a trace.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TraceErrorKind {
    /// The text is empty or has no header.
    #[error("the trace has no header line")]
    MissingHeader,
    /// The line is not JSON.
    #[error("not JSON: {0}")]
    Json(String),
    /// The header's `format` is not `a2at-trace`.
    #[error("format is {0:?}, expected \"a2at-trace\"")]
    WrongFormat(String),
    /// The header's `version` is not one this crate reads.
    #[error("unsupported trace version {0} (this core reads version 1)")]
    UnsupportedVersion(u64),
    /// The header is malformed.
    #[error("bad header: {0}")]
    BadHeader(String),
    /// The workflow or the cards of the header do not rebuild a run.
    #[error("cannot rebuild the run: {0}")]
    Rebuild(String),
    /// A second header.
    #[error("a header after line 1")]
    DuplicateHeader,
    /// The line is none of the known kinds.
    #[error("unknown line kind: {0}")]
    UnknownLine(String),
    /// An `in` value that is not an [`Input`].
    #[error("bad input: {0}")]
    BadInput(String),
    /// An `out` value that is not an [`Output`].
    #[error("bad output: {0}")]
    BadOutput(String),
    /// An `out` line in a trace whose header says outputs are not recorded.
    #[error("an out line although the header says \"outputs\":false")]
    UnexpectedOutput,
}

/// A trace that cannot be parsed, with the 1-based line at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("trace line {line}: {kind}")]
pub struct TraceError {
    /// The 1-based line number.
    pub line: usize,
    /// What is wrong with it.
    pub kind: TraceErrorKind,
}

impl TraceError {
    fn new(line: usize, kind: TraceErrorKind) -> TraceError {
        TraceError { line, kind }
    }
}

/// A recorded input: the [`Input`], or the redacted form of one that cannot be fed.
#[derive(Debug, Clone, PartialEq)]
pub enum RecordedInput {
    /// The input as fed.
    Input(Input),
    /// A `response_body` whose chunk was redacted (the JSON value as written).
    Redacted(Value),
}

/// One line of a trace after the header.
#[derive(Debug, Clone, PartialEq)]
pub enum TraceLine {
    /// `{"t":…,"in":…}`
    Input {
        /// The `now` passed to [`Run::handle`].
        t: Timestamp,
        /// The input.
        input: RecordedInput,
    },
    /// `{"t":…,"timeout":true}`
    Timeout {
        /// The `now` passed to [`Run::handle_timeout`].
        t: Timestamp,
    },
    /// `{"out":…}`: the output's JSON value as written (possibly with a redacted body).
    Output(Value),
}

/// A parsed trace: its header, the rebuilt run parts and the numbered lines.
#[derive(Debug, Clone)]
pub struct Trace {
    /// The header (line 1).
    pub header: TraceHeader,
    /// The lines after the header with their 1-based line numbers, blank lines left out.
    pub lines: Vec<(usize, TraceLine)>,
    workflow: Arc<ValidatedWorkflow>,
    agents: Arc<AgentDirectory>,
}

impl Trace {
    /// A fresh run built from the header, as it was when recording started.
    pub fn new_run(&self) -> Run {
        let start = RunStart {
            runtime_intent: self.header.start.runtime_intent.clone().into(),
            language: self.header.start.language.clone().into(),
        };
        Run::new(
            Arc::clone(&self.workflow),
            Arc::clone(&self.agents),
            self.header.config.to_run_config(self.header.seed),
            start,
        )
    }

    /// The validated workflow rebuilt from the header.
    pub fn workflow(&self) -> &Arc<ValidatedWorkflow> {
        &self.workflow
    }

    /// The agent directory rebuilt from the header.
    pub fn agents(&self) -> &Arc<AgentDirectory> {
        &self.agents
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HeaderRepr {
    kind: String,
    format: String,
    version: u64,
    core: String,
    #[serde(default)]
    commit: Option<String>,
    seed: u64,
    config: TraceConfig,
    start: TraceStart,
    workflow: Value,
    agents: Vec<Value>,
    #[serde(default)]
    preferred_binding: Option<String>,
    #[serde(default)]
    outputs: Option<bool>,
    #[serde(default)]
    redaction: Redaction,
    #[serde(default)]
    replayable: Option<bool>,
}

fn parse_header(line: &str, has_out_lines: bool) -> Result<Trace, TraceError> {
    let err = |kind| TraceError::new(1, kind);
    let v: Value =
        serde_json::from_str(line).map_err(|e| err(TraceErrorKind::Json(e.to_string())))?;
    if v.get("kind") != Some(&json!("header")) {
        return Err(err(TraceErrorKind::MissingHeader));
    }
    if let Some(f) = v.get("format").and_then(Value::as_str) {
        if f != FORMAT {
            return Err(err(TraceErrorKind::WrongFormat(f.to_owned())));
        }
    }
    if let Some(ver) = v.get("version").and_then(Value::as_u64) {
        if ver != u64::from(VERSION) {
            return Err(err(TraceErrorKind::UnsupportedVersion(ver)));
        }
    }
    let h: HeaderRepr =
        serde_json::from_value(v).map_err(|e| err(TraceErrorKind::BadHeader(e.to_string())))?;
    if h.kind != "header" || h.format != FORMAT || h.version != u64::from(VERSION) {
        return Err(err(TraceErrorKind::BadHeader("kind/format/version".into())));
    }
    let preferred_binding = match h.preferred_binding.as_deref() {
        None => None,
        Some(s) => Some(Binding::parse(s).ok_or_else(|| {
            err(TraceErrorKind::BadHeader(format!(
                "unknown preferred_binding {s:?}"
            )))
        })?),
    };
    if let Some(r) = h.replayable {
        if r == h.redaction.responses() {
            return Err(err(TraceErrorKind::BadHeader(
                "replayable contradicts redaction".into(),
            )));
        }
    }
    let wf = Workflow::from_json_value(&h.workflow)
        .map_err(|e| err(TraceErrorKind::Rebuild(format!("workflow: {e}"))))?;
    let wf = ValidatedWorkflow::new(wf)
        .map_err(|e| err(TraceErrorKind::Rebuild(format!("workflow: {e}"))))?;
    let cards = h
        .agents
        .iter()
        .map(AgentCard::from_json_value)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| err(TraceErrorKind::Rebuild(format!("agent card: {e}"))))?;
    let agents = AgentDirectory::new(cards, preferred_binding)
        .map_err(|e| err(TraceErrorKind::Rebuild(format!("agents: {e}"))))?;
    Ok(Trace {
        header: TraceHeader {
            core: h.core,
            commit: h.commit,
            seed: h.seed,
            config: h.config,
            start: h.start,
            workflow: h.workflow,
            agents: h.agents,
            preferred_binding,
            outputs: h.outputs.unwrap_or(has_out_lines),
            redaction: h.redaction,
        },
        lines: Vec::new(),
        workflow: Arc::new(wf),
        agents: Arc::new(agents),
    })
}

fn parse_time(v: &Value, line: usize) -> Result<Timestamp, TraceError> {
    v.as_u64().map(Timestamp::from_micros).ok_or_else(|| {
        TraceError::new(
            line,
            TraceErrorKind::UnknownLine("\"t\" must be a non-negative integer".into()),
        )
    })
}

fn parse_line(
    v: Value,
    line: usize,
    redaction: Redaction,
    outputs: bool,
) -> Result<TraceLine, TraceError> {
    let err = |kind| TraceError::new(line, kind);
    let Value::Object(mut m) = v else {
        return Err(err(TraceErrorKind::UnknownLine("not an object".into())));
    };
    if m.get("kind") == Some(&json!("header")) {
        return Err(err(TraceErrorKind::DuplicateHeader));
    }
    let keys: Vec<&str> = m.keys().map(String::as_str).collect();
    match keys.as_slice() {
        ["t", "in"] | ["in", "t"] => {
            let t = parse_time(&m["t"], line)?;
            let value = m.remove("in").unwrap_or(Value::Null);
            match serde_json::from_value::<Input>(value.clone()) {
                Ok(input) => Ok(TraceLine::Input {
                    t,
                    input: RecordedInput::Input(input),
                }),
                Err(_)
                    if redaction.responses()
                        && value["type"] == "response_body"
                        && is_redacted_marker(&value["chunk"]) =>
                {
                    Ok(TraceLine::Input {
                        t,
                        input: RecordedInput::Redacted(value),
                    })
                }
                Err(e) => Err(err(TraceErrorKind::BadInput(e.to_string()))),
            }
        }
        ["t", "timeout"] | ["timeout", "t"] => {
            if m["timeout"] != Value::Bool(true) {
                return Err(err(TraceErrorKind::UnknownLine(
                    "\"timeout\" must be true".into(),
                )));
            }
            Ok(TraceLine::Timeout {
                t: parse_time(&m["t"], line)?,
            })
        }
        ["out"] => {
            if !outputs {
                return Err(err(TraceErrorKind::UnexpectedOutput));
            }
            let value = m.remove("out").unwrap_or(Value::Null);
            // Check the shape: a redacted request body stands in for bytes.
            let mut probe = value.clone();
            if redaction.requests()
                && probe["type"] == "transmit"
                && is_redacted_marker(&probe["body"])
            {
                probe["body"] = json!("");
            }
            output_from_value(probe).map_err(|e| err(TraceErrorKind::BadOutput(e.to_string())))?;
            Ok(TraceLine::Output(value))
        }
        _ => Err(err(TraceErrorKind::UnknownLine(format!(
            "keys {keys:?}; expected t+in, t+timeout or out"
        )))),
    }
}

/// Parses a whole trace (JSON lines, header first), rebuilding the workflow and the directory.
pub fn parse_trace(text: &str) -> Result<Trace, TraceError> {
    TraceReader::new(text).read()
}

/// Reads a trace line by line; [`parse_trace`] is the one-call form.
#[derive(Debug, Clone)]
pub struct TraceReader<'a> {
    text: &'a str,
}

impl<'a> TraceReader<'a> {
    /// A reader over the whole text of a trace.
    pub fn new(text: &'a str) -> TraceReader<'a> {
        TraceReader { text }
    }

    /// Parses every line.
    pub fn read(&self) -> Result<Trace, TraceError> {
        let mut numbered = self
            .text
            .split('\n')
            .enumerate()
            .map(|(i, l)| (i + 1, l.strip_suffix('\r').unwrap_or(l)))
            .filter(|(_, l)| !l.trim().is_empty());
        let Some((first, header_line)) = numbered.next() else {
            return Err(TraceError::new(1, TraceErrorKind::MissingHeader));
        };
        if first != 1 {
            return Err(TraceError::new(1, TraceErrorKind::MissingHeader));
        }
        let mut values = Vec::new();
        for (n, l) in numbered {
            let v: Value = serde_json::from_str(l)
                .map_err(|e| TraceError::new(n, TraceErrorKind::Json(e.to_string())))?;
            values.push((n, v));
        }
        let has_out = values.iter().any(|(_, v)| v.get("out").is_some());
        let mut trace = parse_header(header_line, has_out)?;
        let (redaction, outputs) = (trace.header.redaction, trace.header.outputs);
        for (n, v) in values {
            let line = parse_line(v, n, redaction, outputs)?;
            trace.lines.push((n, line));
        }
        Ok(trace)
    }
}

/// The first point where a replay differs from the recording.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("divergence at trace line {line}:\n  expected: {expected}\n  actual:   {actual}")]
pub struct Divergence {
    /// The 1-based line: the `out` line that differs, or the input, timeout or header line whose
    /// drain produced an output that was not recorded.
    pub line: usize,
    /// The recorded output (JSON), or a description of what was recorded instead.
    pub expected: String,
    /// The output the run produced now (JSON), or `(no output)`.
    pub actual: String,
}

/// Why a replay stopped early.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// The run produced something else than the recording.
    #[error(transparent)]
    Diverged(#[from] Divergence),
    /// The input on this line has a redacted body and cannot be fed (an audit trace).
    #[error("trace line {line}: the response body is redacted; this trace is not replayable")]
    NotReplayable {
        /// The 1-based line of the redacted input.
        line: usize,
    },
}

/// What a replay did.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayReport {
    /// Input lines fed.
    pub inputs: usize,
    /// Timeout lines fed.
    pub timeouts: usize,
    /// Outputs produced.
    pub outputs: usize,
    /// Outputs compared with `out` lines (all of them when the header says `outputs`).
    pub compared: usize,
    /// Lines the run rejected as [`ApiMisuse`] (state unchanged), with the error.
    pub rejected: Vec<(usize, ApiMisuse)>,
    /// The run's result, when it finished.
    pub result: Option<ExecutionResult>,
}

/// The outputs the run produces for each drain of the trace: `(line, outputs)` where `line` is
/// the header (1) for the outputs of [`Run::new`], or the input or timeout line that caused them.
pub type Drains = Vec<(usize, Vec<Output>)>;

fn drain(run: &mut Run) -> Vec<Output> {
    std::iter::from_fn(|| run.poll_output()).collect()
}

/// Feeds the trace to a fresh run and calls `check` after every drain with the outputs and the
/// index (into `trace.lines`) of the first line after the mutation.
fn feed(
    trace: &Trace,
    report: &mut ReplayReport,
    mut check: impl FnMut(usize, usize, &[Output]) -> Result<(), Divergence>,
) -> Result<(), ReplayError> {
    let mut run = trace.new_run();
    let first = drain(&mut run);
    report.outputs += first.len();
    check(1, 0, &first)?;
    for (i, (line, entry)) in trace.lines.iter().enumerate() {
        let result = match entry {
            TraceLine::Output(_) => continue,
            TraceLine::Input { t, input } => {
                report.inputs += 1;
                match input {
                    RecordedInput::Input(input) => run.handle(input.clone(), *t),
                    RecordedInput::Redacted(_) => {
                        return Err(ReplayError::NotReplayable { line: *line });
                    }
                }
            }
            TraceLine::Timeout { t } => {
                report.timeouts += 1;
                run.handle_timeout(*t)
            }
        };
        if let Err(misuse) = result {
            report.rejected.push((*line, misuse));
        }
        let outs = drain(&mut run);
        report.outputs += outs.len();
        check(*line, i + 1, &outs)?;
    }
    report.result = run.result().cloned();
    Ok(())
}

fn empty_report() -> ReplayReport {
    ReplayReport {
        inputs: 0,
        timeouts: 0,
        outputs: 0,
        compared: 0,
        rejected: Vec::new(),
        result: None,
    }
}

/// Replays `trace` on a fresh run and compares every drained output with the recorded `out`
/// lines, stopping at the first [`Divergence`]. With `"outputs":false` nothing is compared.
pub fn replay(trace: &Trace) -> Result<ReplayReport, ReplayError> {
    let mut report = empty_report();
    let mut compared = 0usize;
    let check_outputs = trace.header.outputs;
    let redaction = trace.header.redaction;
    feed(trace, &mut report, |cause, next, outs| {
        if !check_outputs {
            return Ok(());
        }
        let recorded = trace.lines[next..].iter().map_while(|(n, l)| match l {
            TraceLine::Output(v) => Some((*n, v)),
            _ => None,
        });
        let mut actual = outs.iter();
        for (n, expected) in recorded {
            let Some(out) = actual.next() else {
                return Err(Divergence {
                    line: n,
                    expected: expected.to_string(),
                    actual: "(no output)".into(),
                });
            };
            let got = output_value(out, redaction);
            if &got != expected {
                return Err(Divergence {
                    line: n,
                    expected: expected.to_string(),
                    actual: got.to_string(),
                });
            }
            compared += 1;
        }
        if let Some(extra) = actual.next() {
            return Err(Divergence {
                line: cause,
                expected: format!("no further output after line {cause}"),
                actual: output_value(extra, redaction).to_string(),
            });
        }
        Ok(())
    })?;
    report.compared = compared;
    Ok(report)
}

/// Replays `trace` without comparing and returns what the run produces now, drain by drain.
pub fn replay_outputs(trace: &Trace) -> Result<Drains, ReplayError> {
    let mut report = empty_report();
    let mut drains = Vec::new();
    feed(trace, &mut report, |cause, _, outs| {
        drains.push((cause, outs.to_vec()));
        Ok(())
    })?;
    Ok(drains)
}

/// Rewrites `trace` with the outputs the run produces now ("bless"): the same header (with
/// `"outputs":true`) and inputs, old `out` lines replaced. Returns the JSONL text, newline
/// terminated.
pub fn rerecord(trace: &Trace) -> Result<String, ReplayError> {
    let drains = replay_outputs(trace)?;
    let writer = TraceWriter::with_redaction(trace.header.redaction);
    let mut header = trace.header.clone();
    header.outputs = true;
    let mut text = String::new();
    let mut push = |s: String| {
        text.push_str(&s);
        text.push('\n');
    };
    push(writer.header(&header));
    let mut drains = drains.into_iter().peekable();
    let mut emit_drain = |line: usize, push: &mut dyn FnMut(String)| {
        if let Some((_, outs)) = drains.next_if(|(l, _)| *l == line) {
            for o in &outs {
                push(writer.output(o));
            }
        }
    };
    emit_drain(1, &mut push);
    for (line, entry) in &trace.lines {
        match entry {
            TraceLine::Output(_) => continue,
            TraceLine::Input { t, input } => match input {
                RecordedInput::Input(i) => push(writer.input(*t, i)),
                RecordedInput::Redacted(v) => {
                    push(json!({"t": t.as_micros(), "in": v}).to_string())
                }
            },
            TraceLine::Timeout { t } => push(writer.timeout(*t)),
        }
        emit_drain(*line, &mut push);
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::{HostReply, HostRequest, TaskResult};
    use crate::workflow::parse_and_validate;

    fn self_loop() -> (ValidatedWorkflow, AgentDirectory) {
        let wf = parse_and_validate(
            r#"{"steps": [{"name": "local", "step_type": "SELF_LOOP",
                "subtasks": [{"agent": "me", "description": "sum up"}]}]}"#,
        )
        .unwrap();
        (wf, AgentDirectory::default())
    }

    fn record(redaction: Redaction) -> String {
        let (wf, dir) = self_loop();
        let config = RunConfig {
            seed: 9,
            ..RunConfig::default()
        };
        let start = RunStart::default();
        let header = TraceHeader::new(&wf, &dir, &config, &start).unwrap();
        let w = TraceWriter::with_redaction(redaction);
        let mut lines = vec![w.header(&header)];
        let mut run = Run::new(Arc::new(wf), Arc::new(dir), config, start);
        let now = Timestamp::from_millis(3);
        let mut pending = Vec::new();
        while let Some(o) = run.poll_output() {
            if let Output::CallHost {
                call,
                request: HostRequest::SelfTask(_),
            } = &o
            {
                pending.push(*call);
            }
            lines.push(w.output(&o));
        }
        for call in pending {
            let input = Input::HostReply {
                call,
                reply: HostReply::SelfTask(Ok(TaskResult::success(vec!["ok".into()]))),
            };
            lines.push(w.input(now, &input));
            run.handle(input, now).unwrap();
            while let Some(o) = run.poll_output() {
                lines.push(w.output(&o));
            }
        }
        lines.join("\n")
    }

    #[test]
    fn a_recorded_run_replays_without_divergence() {
        let text = record(Redaction::None);
        let trace = parse_trace(&text).unwrap();
        assert!(trace.header.outputs);
        let report = replay(&trace).unwrap();
        assert_eq!(report.inputs, 1);
        assert_eq!(report.compared, report.outputs);
        assert!(report.result.unwrap().success);
        assert_eq!(rerecord(&trace).unwrap(), format!("{text}\n"));
    }

    #[test]
    fn a_changed_output_is_a_divergence_naming_its_line() {
        let text = record(Redaction::None);
        let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
        let at = lines
            .iter()
            .position(|l| l.starts_with("{\"out\"") && l.contains("sum up"))
            .unwrap();
        lines[at] = lines[at].replace("sum up", "SUM UP");
        let d = match replay(&parse_trace(&lines.join("\n")).unwrap()) {
            Err(ReplayError::Diverged(d)) => d,
            other => panic!("{other:?}"),
        };
        assert_eq!(d.line, at + 1);
        assert!(d.expected.contains("SUM UP") && d.actual.contains("sum up"));
    }

    #[test]
    fn a_missing_or_extra_output_is_a_divergence() {
        let text = record(Redaction::None);
        let lines: Vec<&str> = text.lines().collect();
        let mut fewer = lines.clone();
        let removed = fewer.remove(lines.len() - 1);
        let d = replay(&parse_trace(&fewer.join("\n")).unwrap()).unwrap_err();
        assert!(
            matches!(&d, ReplayError::Diverged(d) if d.actual.contains(&removed[7..40])),
            "{d}"
        );
        let mut more = lines.clone();
        more.push(lines[lines.len() - 1]);
        let d = replay(&parse_trace(&more.join("\n")).unwrap()).unwrap_err();
        assert!(
            matches!(&d, ReplayError::Diverged(d) if d.line == lines.len() + 1 && d.actual == "(no output)"),
            "{d}"
        );
    }

    #[test]
    fn inputs_only_is_a_reproducer() {
        let text = record(Redaction::None);
        let inputs: Vec<&str> = text
            .lines()
            .filter(|l| !l.starts_with("{\"out\""))
            .collect();
        let inputs = inputs.join("\n");
        let e = replay(&parse_trace(&inputs).unwrap()).unwrap_err();
        assert!(
            matches!(e, ReplayError::Diverged(Divergence { line: 1, .. })),
            "the header still says the outputs are complete"
        );
        let trace =
            parse_trace(&inputs.replacen("\"outputs\":true", "\"outputs\":false", 1)).unwrap();
        assert!(!trace.header.outputs);
        let report = replay(&trace).unwrap();
        assert_eq!(report.compared, 0);
        assert!(report.result.unwrap().success);
    }

    #[test]
    fn parse_errors_name_the_line() {
        assert_eq!(
            parse_trace("").unwrap_err().kind,
            TraceErrorKind::MissingHeader
        );
        let text = record(Redaction::None);
        let bad = format!("{text}\n\n{{\"t\":1}}");
        let e = parse_trace(&bad).unwrap_err();
        assert_eq!(e.line, text.lines().count() + 2);
        assert!(matches!(e.kind, TraceErrorKind::UnknownLine(_)));
        let v2 = text.replacen("\"version\":1", "\"version\":2", 1);
        assert_eq!(
            parse_trace(&v2).unwrap_err().kind,
            TraceErrorKind::UnsupportedVersion(2)
        );
        let e =
            parse_trace(&format!("{text}\n{{\"t\":5,\"in\":{{\"type\":\"nope\"}}}}")).unwrap_err();
        assert!(matches!(e.kind, TraceErrorKind::BadInput(_)), "{e}");
        let first = text.lines().next().unwrap();
        let e = parse_trace(&format!("{text}\n{first}")).unwrap_err();
        assert_eq!(e.kind, TraceErrorKind::DuplicateHeader);
    }

    #[test]
    fn config_mirror_round_trips() {
        let config = RunConfig {
            seed: 5,
            execution_id: Some("x".into()),
            task_budget: Duration::from_micros(1234567),
            history_length: None,
            ..RunConfig::default()
        };
        let mirror = TraceConfig::from_run_config(&config);
        let back: TraceConfig =
            serde_json::from_value(serde_json::to_value(&mirror).unwrap()).unwrap();
        assert_eq!(back.to_run_config(5), config);
    }

    #[test]
    fn the_ambiguous_send_policy_is_written_only_when_it_is_not_the_default() {
        let default =
            serde_json::to_value(TraceConfig::from_run_config(&RunConfig::default())).unwrap();
        assert!(default.get("ambiguous_send").is_none(), "{default}");
        let resend = RunConfig {
            ambiguous_send: AmbiguousSend::Resend,
            ..RunConfig::default()
        };
        let text = serde_json::to_value(TraceConfig::from_run_config(&resend)).unwrap();
        assert_eq!(text["ambiguous_send"], "resend");
        let back: TraceConfig = serde_json::from_value(text).unwrap();
        assert_eq!(back.to_run_config(0).ambiguous_send, AmbiguousSend::Resend);
        let old: TraceConfig = serde_json::from_value(default).unwrap();
        assert_eq!(old.to_run_config(0).ambiguous_send, AmbiguousSend::Fail);
    }

    #[test]
    fn the_retry_policy_round_trips_and_old_traces_replay_without_retries() {
        let config = RunConfig {
            retry: RetryPolicy {
                attempts: 7,
                base_delay: Duration::from_millis(30),
                max_delay: Duration::from_millis(900),
            },
            ..RunConfig::default()
        };
        let mirror = TraceConfig::from_run_config(&config);
        let text = serde_json::to_value(&mirror).unwrap();
        assert_eq!(
            text["retry"],
            serde_json::json!({"attempts": 7, "base_delay_us": 30000, "max_delay_us": 900000})
        );
        let back: TraceConfig = serde_json::from_value(text.clone()).unwrap();
        assert_eq!(back.to_run_config(0).retry, config.retry);
        // A trace written before retries existed has no `retry`: it ran without any.
        let mut old = text;
        old.as_object_mut().unwrap().remove("retry");
        let old: TraceConfig = serde_json::from_value(old).unwrap();
        assert_eq!(old.to_run_config(0).retry, RetryPolicy::FAIL_FAST);
    }

    #[test]
    fn digests_are_stable() {
        assert_eq!(digest(b""), "fnv64:cbf29ce484222325");
        assert_eq!(digest(b"a"), "fnv64:af63dc4c8601ec8c");
    }
}
