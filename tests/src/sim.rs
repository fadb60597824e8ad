//! A deterministic simulator: one [`Run`], scripted agents that speak real A2A bytes, a scripted
//! host, and a virtual clock.
//!
//! Every output of the run is carried out in virtual time: a `Transmit` is decoded as an A2A
//! request and handed to the agent's script, whose reply is delivered back as response head,
//! body chunks and end; a `CallHost` goes to the host script, whose answer comes back after the
//! script's delay. `drive()` runs until the run finishes; `drive_bounded(n)` stops after `n`
//! inputs so a livelock shows up as a test failure instead of a hang.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use a2at_core::agents::AgentDirectory;
use a2at_core::host::{HostReply, HostRequest};
use a2at_core::io::{HeaderField, HttpRequest, Input, Output, TransportError, TransportErrorKind};
use a2at_core::result::ExecutionResult;
use a2at_core::run::{Run, RunConfig, RunStart};
use a2at_core::trace::{Redaction, TraceHeader, TraceWriter};
use a2at_core::workflow::ValidatedWorkflow;
use a2at_core::{CallId, OpId, Timestamp};
use serde_json::Value;

use crate::agent::{AgentReply, AgentRequest, ScriptedAgent};
use crate::host::ScriptedHost;

/// One thing the simulator observed, with its virtual time.
#[derive(Debug, Clone, PartialEq)]
pub enum Observed {
    /// An output of the run.
    Output(Output),
    /// An input fed to the run.
    Input(Input),
    /// The clock reached a deadline.
    Timeout,
}

/// The outcome of a simulated run.
#[derive(Debug, Clone)]
pub struct SimOutcome {
    /// The result, if the run finished.
    pub result: Option<ExecutionResult>,
    /// Everything that happened, in order.
    pub log: Vec<(Timestamp, Observed)>,
    /// Virtual time at the end.
    pub end: Timestamp,
    /// How many inputs and timeouts the run handled.
    pub inputs: usize,
    /// Every request each agent received.
    pub requests: BTreeMap<String, Vec<AgentRequest>>,
    /// The agents as they ended (their task tables).
    pub agents: BTreeMap<String, ScriptedAgent>,
    /// The JSON-lines trace (header, inputs, outputs), when recording was asked for with
    /// [`Sim::record`].
    pub trace: Option<String>,
}

impl SimOutcome {
    /// The run's outputs, in order.
    pub fn outputs(&self) -> impl Iterator<Item = &Output> {
        self.log.iter().filter_map(|(_, o)| match o {
            Observed::Output(out) => Some(out),
            _ => None,
        })
    }

    /// Event types in emission order.
    pub fn event_types(&self) -> Vec<&'static str> {
        self.outputs()
            .filter_map(|o| match o {
                Output::Event(e) => Some(e.kind.as_str()),
                _ => None,
            })
            .collect()
    }

    /// Events of one type with their payloads.
    pub fn events(&self, kind: &str) -> Vec<&Value> {
        self.outputs()
            .filter_map(|o| match o {
                Output::Event(e) if e.kind.as_str() == kind => Some(e.data.value()),
                _ => None,
            })
            .collect()
    }

    /// The finished result; panics when the run did not finish.
    pub fn result(&self) -> &ExecutionResult {
        self.result.as_ref().expect("the run did not finish")
    }

    /// Requests received by `agent` with the given A2A method (e.g. `SendMessage`).
    pub fn requests_to(&self, agent: &str, method: &str) -> Vec<&AgentRequest> {
        self.requests
            .get(agent)
            .map(|rs| rs.iter().filter(|r| r.method == method).collect())
            .unwrap_or_default()
    }

    /// The whole output stream serialised, for byte-identity checks.
    pub fn output_bytes(&self) -> Vec<u8> {
        let outs: Vec<&Output> = self.outputs().collect();
        serde_json::to_vec(&outs).expect("outputs serialise")
    }
}

/// Something scheduled to happen in virtual time.
#[derive(Debug, Clone)]
enum Pending {
    Feed(Input),
    /// The host cancels the run.
    Cancel,
}

/// The simulator.
pub struct Sim {
    run: Run,
    /// The result shared with the `Finished` output, once the run finished.
    finished: Option<Arc<ExecutionResult>>,
    agents: BTreeMap<String, ScriptedAgent>,
    host: ScriptedHost,
    now: Timestamp,
    queue: BTreeMap<(Timestamp, u64), (Option<OpId>, Pending)>,
    seq: u64,
    log: Vec<(Timestamp, Observed)>,
    requests: BTreeMap<String, Vec<AgentRequest>>,
    latency: Duration,
    cancel_at: Option<Timestamp>,
    redeliver_duplicates: bool,
    delivered: Vec<(Timestamp, Input)>,
    quiet: bool,
    /// Read every event's payload as it is emitted (a consumer that looks at each event).
    read_events: bool,
    /// Recording: the header of the run as built, and the redaction to apply.
    record: Option<(TraceHeader, Redaction)>,
    parts: (
        Arc<ValidatedWorkflow>,
        Arc<AgentDirectory>,
        RunConfig,
        RunStart,
    ),
}

impl Sim {
    /// A simulator for `workflow` with the given agents, host and run settings.
    pub fn new(
        workflow: ValidatedWorkflow,
        directory: AgentDirectory,
        agents: Vec<ScriptedAgent>,
        host: ScriptedHost,
        config: RunConfig,
        start: RunStart,
    ) -> Sim {
        let (workflow, directory) = (Arc::new(workflow), Arc::new(directory));
        let parts = (
            Arc::clone(&workflow),
            Arc::clone(&directory),
            config.clone(),
            start.clone(),
        );
        let run = Run::new(workflow, directory, config, start);
        Sim {
            run,
            finished: None,
            agents: agents.into_iter().map(|a| (a.name.clone(), a)).collect(),
            host,
            now: Timestamp::ZERO,
            queue: BTreeMap::new(),
            seq: 0,
            log: Vec::new(),
            requests: BTreeMap::new(),
            latency: Duration::from_millis(1),
            cancel_at: None,
            redeliver_duplicates: false,
            delivered: Vec::new(),
            quiet: false,
            read_events: false,
            record: None,
            parts,
        }
    }

    /// Record a JSON-lines trace of the run (header, every input and timeout with its time, every
    /// output) into [`SimOutcome::trace`]. Turns [`Sim::quiet`] off.
    pub fn record(self) -> Self {
        self.record_redacted(Redaction::None)
    }

    /// Like [`Sim::record`], with HTTP bodies redacted as `redaction` says.
    pub fn record_redacted(mut self, redaction: Redaction) -> Self {
        let (wf, dir, config, start) = &self.parts;
        let header = TraceHeader::new(wf, dir, config, start).expect("the run can be rebuilt");
        self.record = Some((header, redaction));
        self.quiet = false;
        self
    }

    /// Network latency of every agent answer (default 1 ms).
    pub fn with_latency(mut self, latency: Duration) -> Self {
        self.latency = latency;
        self
    }

    /// Keep no log and no request record (for benchmarks: measures the core, not the harness).
    pub fn quiet(mut self) -> Self {
        self.quiet = true;
        self
    }

    /// Reads each event's JSON payload as it is emitted and drops it, as a consumer that looks
    /// at every event would (for benchmarks: an event's payload may be built only when read).
    pub fn reading_events(mut self) -> Self {
        self.read_events = true;
        self
    }

    /// The host cancels the run at `at`.
    pub fn cancel_at(mut self, at: Duration) -> Self {
        self.cancel_at = Some(Timestamp::ZERO.saturating_add(at));
        self
    }

    /// After every delivered response input, deliver it a second time later: duplicates and
    /// stale inputs must be ignored.
    pub fn with_duplicate_deliveries(mut self) -> Self {
        self.redeliver_duplicates = true;
        self
    }

    fn schedule(&mut self, at: Timestamp, op: Option<OpId>, what: Pending) {
        self.seq += 1;
        self.queue.insert((at, self.seq), (op, what));
    }

    /// Runs until the run finishes or nothing is left to do.
    pub fn drive(self) -> SimOutcome {
        self.drive_bounded(1_000_000)
    }

    /// Like [`Sim::drive`], but panics after `max_inputs` inputs (livelock guard).
    pub fn drive_bounded(mut self, max_inputs: usize) -> SimOutcome {
        if let Some(at) = self.cancel_at {
            self.schedule(at, None, Pending::Cancel);
        }
        let mut inputs = 0usize;
        loop {
            self.drain();
            if self.run.is_finished() {
                break;
            }
            let next_queue = self.queue.keys().next().map(|(t, _)| *t);
            let next_timer = self.run.poll_timeout();
            let next = match (next_queue, next_timer) {
                (None, None) => break,
                (Some(a), None) => a,
                (None, Some(b)) => b,
                (Some(a), Some(b)) => a.min(b),
            };
            inputs += 1;
            assert!(
                inputs <= max_inputs,
                "livelock: more than {max_inputs} inputs without finishing"
            );
            self.now = self.now.max(next);
            if next_queue == Some(next) {
                let key = *self.queue.keys().next().expect("non-empty");
                let (_, pending) = self.queue.remove(&key).expect("present");
                match pending {
                    Pending::Feed(input) => {
                        if !self.quiet {
                            self.log.push((self.now, Observed::Input(input.clone())));
                        }
                        // Copied only when it is delivered again later.
                        let again = (self.redeliver_duplicates && is_response(&input))
                            .then(|| input.clone());
                        self.run.handle(input, self.now).expect("valid input");
                        if let Some(input) = again {
                            self.delivered.push((self.now, input));
                        }
                    }
                    Pending::Cancel => {
                        self.log.push((self.now, Observed::Input(Input::Cancel)));
                        if !self.run.is_finished() {
                            self.run
                                .handle(Input::Cancel, self.now)
                                .expect("valid input");
                        }
                    }
                }
                if self.redeliver_duplicates && !self.delivered.is_empty() && self.queue.is_empty()
                {
                    // Re-deliver everything once more when the network is otherwise quiet.
                    let dups = std::mem::take(&mut self.delivered);
                    let at = self.now.saturating_add(Duration::from_millis(1));
                    for (_, input) in dups {
                        self.schedule(at, None, Pending::Feed(input));
                    }
                    self.redeliver_duplicates = false;
                }
            } else {
                if !self.quiet {
                    self.log.push((self.now, Observed::Timeout));
                }
                self.run.handle_timeout(self.now).expect("valid timeout");
            }
        }
        let trace = self.record.as_ref().map(|(header, redaction)| {
            let w = TraceWriter::with_redaction(*redaction);
            let mut text = w.header(header);
            text.push('\n');
            for (t, o) in &self.log {
                text.push_str(&match o {
                    Observed::Input(input) => w.input(*t, input),
                    Observed::Timeout => w.timeout(*t),
                    Observed::Output(out) => w.output(out),
                });
                text.push('\n');
            }
            text
        });
        // The run shares its result with the `Finished` output; once the run (and, when quiet,
        // every other copy of that output) is gone, the result is taken whole.
        let finished = self.finished.take();
        drop(self.run);
        SimOutcome {
            result: finished.map(Arc::unwrap_or_clone),
            trace,
            log: self.log,
            end: self.now,
            inputs,
            requests: self.requests,
            agents: self.agents,
        }
    }

    fn drain(&mut self) {
        while let Some(out) = self.run.poll_output() {
            if !self.quiet {
                self.log.push((self.now, Observed::Output(out.clone())));
            }
            match out {
                Output::Transmit(req) => self.transmit(req),
                Output::AbortTransmit { op } => {
                    self.queue.retain(|_, (o, _)| *o != Some(op));
                }
                Output::CallHost { call, request } => self.call_host(call, request),
                Output::Finished(result) => self.finished = Some(result),
                Output::Event(event) if self.read_events => {
                    std::hint::black_box(event.data.value());
                }
                Output::AbandonHostCall { .. } | Output::Event(_) => {}
                _ => {}
            }
        }
    }

    fn call_host(&mut self, call: CallId, request: HostRequest) {
        let (delay, reply): (Duration, Option<HostReply>) = self.host.answer(&request);
        if let Some(reply) = reply {
            let at = self.now.saturating_add(delay);
            self.schedule(at, None, Pending::Feed(Input::HostReply { call, reply }));
        }
    }

    fn transmit(&mut self, req: HttpRequest) {
        let decoded = AgentRequest::decode(&req);
        if !self.quiet {
            self.requests
                .entry(req.agent.to_string())
                .or_default()
                .push(decoded.clone());
        }
        let Some(agent) = self.agents.get_mut(req.agent.as_str()) else {
            let at = self.now.saturating_add(self.latency);
            self.schedule(
                at,
                Some(req.op),
                Pending::Feed(Input::TransportFailed {
                    op: req.op,
                    error: TransportError {
                        kind: TransportErrorKind::Connect,
                        message: format!("no simulated agent named {}", req.agent),
                    },
                }),
            );
            return;
        };
        let reply = agent.handle(&decoded);
        let op = req.op;
        let base = self.now.saturating_add(self.latency);
        match reply {
            AgentReply::Hang => {}
            AgentReply::TransportError { delay, kind } => {
                self.schedule(
                    base.saturating_add(delay),
                    Some(op),
                    Pending::Feed(Input::TransportFailed {
                        op,
                        error: TransportError {
                            kind,
                            message: "simulated transport failure".into(),
                        },
                    }),
                );
            }
            AgentReply::Http {
                delay,
                status,
                headers,
                chunks,
                chunk_gap,
                end,
            } => {
                let mut at = base.saturating_add(delay);
                self.schedule(
                    at,
                    Some(op),
                    Pending::Feed(Input::ResponseHead {
                        op,
                        status,
                        headers: header_fields(headers),
                    }),
                );
                for chunk in chunks {
                    at = at.saturating_add(chunk_gap);
                    self.schedule(
                        at,
                        Some(op),
                        Pending::Feed(Input::ResponseBody { op, chunk }),
                    );
                }
                if end {
                    self.schedule(at, Some(op), Pending::Feed(Input::ResponseEnd { op }));
                }
            }
            AgentReply::Grpc {
                delay,
                headers,
                frames,
                frame_gap,
                trailers,
            } => {
                let mut at = base.saturating_add(delay);
                self.schedule(
                    at,
                    Some(op),
                    Pending::Feed(Input::ResponseHead {
                        op,
                        status: 200,
                        headers: header_fields(headers),
                    }),
                );
                for chunk in frames {
                    at = at.saturating_add(frame_gap);
                    self.schedule(
                        at,
                        Some(op),
                        Pending::Feed(Input::ResponseBody { op, chunk }),
                    );
                }
                if let Some(trailers) = trailers {
                    if !trailers.is_empty() {
                        self.schedule(
                            at,
                            Some(op),
                            Pending::Feed(Input::ResponseTrailers {
                                op,
                                trailers: header_fields(trailers),
                            }),
                        );
                    }
                    self.schedule(at, Some(op), Pending::Feed(Input::ResponseEnd { op }));
                }
            }
            AgentReply::Cut {
                delay,
                headers,
                chunks,
                chunk_gap,
            } => {
                let mut at = base.saturating_add(delay);
                self.schedule(
                    at,
                    Some(op),
                    Pending::Feed(Input::ResponseHead {
                        op,
                        status: 200,
                        headers: header_fields(headers),
                    }),
                );
                for chunk in chunks {
                    at = at.saturating_add(chunk_gap);
                    self.schedule(
                        at,
                        Some(op),
                        Pending::Feed(Input::ResponseBody { op, chunk }),
                    );
                }
                at = at.saturating_add(chunk_gap);
                self.schedule(
                    at,
                    Some(op),
                    Pending::Feed(Input::TransportFailed {
                        op,
                        error: TransportError {
                            kind: TransportErrorKind::Io,
                            message: "simulated connection cut".into(),
                        },
                    }),
                );
            }
        }
    }
}

fn is_response(input: &Input) -> bool {
    matches!(
        input,
        Input::ResponseHead { .. }
            | Input::ResponseBody { .. }
            | Input::ResponseTrailers { .. }
            | Input::ResponseEnd { .. }
            | Input::TransportFailed { .. }
            | Input::HostReply { .. }
    )
}

/// Header fields as a scripted agent writes them, in the shape the machines read them.
pub fn header_fields(pairs: Vec<(String, String)>) -> Vec<HeaderField> {
    pairs
        .into_iter()
        .map(|(name, value)| (name.into(), value.into()))
        .collect()
}
