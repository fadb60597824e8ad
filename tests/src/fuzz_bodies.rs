//! The bodies of the fuzz targets in `fuzz/fuzz_targets/`, kept here so that `cargo test`
//! compiles them and `tests/fuzz_corpus.rs` runs them over the committed corpus
//! (`tests/fuzz/corpus/<target>/`). Each body must never panic for any input, except where it
//! asserts an invariant (a failed assertion is a bug found).
//!
//! Enabled by the `fuzzing` feature (the crate's own dev-dependency turns it on for its tests).

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use a2at_core::a2a::grpc::{
    CancelTaskRequest, GetTaskRequest, GrpcMessage, GrpcResponseDecoder, ListTasksRequest,
    ListTasksResponse, SendMessageResponse, SubscribeToTaskRequest, status_from_trailers,
};
use a2at_core::a2a::{
    Binding, CallKind, DecodeLimits, Message, ResponseDecoder, ResponseItem, SendMessageRequest,
    SseDecoder, StreamResponse, Task,
};
use a2at_core::a2at::{NEGOTIATION_T_URI, Performative};
use a2at_core::host::{
    HostError, HostReply, HostRequest, MessageContent, NegotiationReply, RouteDecision, TaskResult,
};
use a2at_core::io::{HttpRequest, Input, Output, TransportError, TransportErrorKind};
use a2at_core::run::{Run, RunConfig, RunStart};
use a2at_core::trace::{parse_trace, replay};
use a2at_core::workflow::{ValidatedWorkflow, Workflow, parse_and_validate};
use a2at_core::{CallId, OpId, Timestamp};

use crate::agent::{AgentReply, AgentRequest, Negotiation};
use crate::sim::header_fields;
use crate::{Plan, ScriptedAgent, directory};

/// The SSE decoder never panics, whatever the bytes and however they are split.
pub fn sse_decoder(data: &[u8]) {
    let split = data.first().map_or(1, |b| usize::from(*b).max(1));
    let mut decoder = SseDecoder::new(4096);
    let mut out = Vec::new();
    for chunk in data.chunks(split) {
        let _ = decoder.push(chunk, &mut out);
    }
    let _ = decoder.finish(&mut out);
}

/// The response decoder never panics and always ends with exactly one `End` item; a plain 2xx
/// REST payload decodes exactly as its `serde_json::Value` form does.
pub fn response_decoder(data: &[u8]) {
    let Some((&selector, body)) = data.split_first() else {
        return;
    };
    let binding = if selector & 1 == 0 {
        Binding::JsonRpc
    } else {
        Binding::HttpJson
    };
    let kind = match (selector >> 1) % 5 {
        0 => CallKind::SendMessage,
        1 => CallKind::SendStreamingMessage,
        2 => CallKind::GetTask,
        3 => CallKind::CancelTask,
        _ => CallKind::SubscribeToTask,
    };
    let content_type = if selector & 0x40 == 0 {
        "application/json"
    } else {
        "text/event-stream"
    };
    let status = if selector & 0x80 == 0 { 200 } else { 400 };
    let limits = DecodeLimits {
        max_event_bytes: 4096,
        max_body_bytes: 65536,
    };
    let mut decoder = ResponseDecoder::new(binding, kind, "1", limits);
    decoder.on_head(status, &[("content-type", content_type)]);
    let mut out = Vec::new();
    for chunk in body.chunks(7) {
        decoder.on_body(chunk, &mut out);
    }
    decoder.on_end(&mut out);
    let ends = out
        .iter()
        .filter(|i| matches!(i, ResponseItem::End { .. }))
        .count();
    assert_eq!(ends, 1);
    assert!(matches!(out.last(), Some(ResponseItem::End { .. })));
    let plain_unary = status == 200
        && content_type == "application/json"
        && binding == Binding::HttpJson
        && matches!(kind, CallKind::SendMessage | CallKind::GetTask);
    if plain_unary && body.len() <= limits.max_body_bytes {
        if let Some(want) = payload_read_as_value(kind, body) {
            let got = match &out[0] {
                ResponseItem::Event(sr) => Ok(sr.clone()),
                ResponseItem::Malformed(e) => Err(e.message.clone()),
                other => panic!("a plain payload gave {other:?}"),
            };
            assert_eq!(got, want, "the decoder disagrees with the Value reading");
        }
    }
}

/// What a 2xx REST body decodes to when read the slow way (bytes to `serde_json::Value`, then
/// the public `from_json`); `None` for a body that is not a JSON object or is an `error`
/// envelope.
fn payload_read_as_value(kind: CallKind, body: &[u8]) -> Option<Result<StreamResponse, String>> {
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    let obj = v.as_object()?;
    if obj.contains_key("error") {
        return None;
    }
    let decoded = if kind == CallKind::GetTask && !obj.contains_key("task") {
        Task::from_json(&v).map(StreamResponse::Task)
    } else {
        StreamResponse::from_json(&v)
    };
    Some(decoded.map_err(|e| format!("invalid A2A payload at {e}")))
}

/// The gRPC response decoder and the protobuf message decoders never panic, and their output
/// is bounded by the input: the first byte picks the call kind, the chunk size and how the
/// response ends; the rest is the body, and is also decoded whole as every message type.
pub fn grpc_decoder(data: &[u8]) {
    let Some((&selector, body)) = data.split_first() else {
        return;
    };
    let kind = match selector % 6 {
        0 => CallKind::SendMessage,
        1 => CallKind::SendStreamingMessage,
        2 => CallKind::GetTask,
        3 => CallKind::CancelTask,
        4 => CallKind::SubscribeToTask,
        _ => CallKind::ListTasks,
    };
    let chunk = usize::from(selector >> 5) + 1;
    let limits = DecodeLimits {
        max_event_bytes: 4096,
        max_body_bytes: 8192,
    };
    let pairs = |p: &[(&str, String)]| -> Vec<(String, String)> {
        p.iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect()
    };
    // Whatever the body holds also serves as the status details and message.
    let details = a2at_core::a2a::protojson::encode_base64(body);
    let message = String::from_utf8_lossy(body).into_owned();
    let status = (u32::from(selector) % 18).to_string();
    let error_trailers = pairs(&[
        ("grpc-status", status),
        ("grpc-message", message),
        ("grpc-status-details-bin", details),
    ]);
    let mut decoder = GrpcResponseDecoder::new(kind, limits);
    let mut out = Vec::new();
    match (selector >> 3) % 4 {
        0..=2 => decoder.on_head(200, &pairs(&[("content-type", "application/grpc".into())])),
        _ => decoder.on_head(200, &error_trailers),
    }
    for c in body.chunks(chunk) {
        decoder.on_body(c, &mut out);
    }
    match (selector >> 3) % 4 {
        0 => decoder.on_trailers(&pairs(&[("grpc-status", "0".into())]), &mut out),
        1 => decoder.on_trailers(&error_trailers, &mut out),
        _ => {}
    }
    decoder.on_end(&mut out);
    decoder.on_end(&mut out);
    let ends = out
        .iter()
        .filter(|i| matches!(i, ResponseItem::End { .. }))
        .count();
    assert_eq!(ends, 1);
    assert!(matches!(out.last(), Some(ResponseItem::End { .. })));
    // An event costs at least two body bytes (a listed task is `0a 00`); at most three other
    // items (a framing error, the status, `End`) do not come from a frame.
    assert!(
        out.len() <= body.len() / 2 + 4,
        "{} items from {} bytes",
        out.len(),
        body.len()
    );

    fn again<T: GrpcMessage>(bytes: &[u8]) {
        if let Ok(v) = T::decode_proto(bytes) {
            let encoded = v.encode_proto();
            assert!(
                T::decode_proto(&encoded).is_ok(),
                "a decoded message re-encodes readably"
            );
        }
    }
    again::<StreamResponse>(body);
    again::<SendMessageResponse>(body);
    again::<Task>(body);
    again::<Message>(body);
    again::<ListTasksResponse>(body);
    again::<SendMessageRequest>(body);
    again::<GetTaskRequest>(body);
    again::<CancelTaskRequest>(body);
    again::<SubscribeToTaskRequest>(body);
    again::<ListTasksRequest>(body);
    let _ = status_from_trailers(&error_trailers);
}

/// Workflow parsing and validation never panic, and a valid workflow round-trips.
pub fn workflow_parse(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(wf) = Workflow::from_json_str(text) {
        if let Ok(valid) = ValidatedWorkflow::new(wf.clone()) {
            assert_eq!(valid.topological_order().len(), valid.len());
            let again = Workflow::from_json_value(&wf.to_json()).expect("canonical form parses");
            assert_eq!(again, wf);
        }
    }
}

/// `parse_trace` never panics, and replaying whatever parses never panics either.
pub fn trace_lines(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Ok(trace) = parse_trace(&text) {
        let _ = replay(&trace);
    }
}

/// Reads fuzz bytes; zero once exhausted.
struct Bytes<'a> {
    data: &'a [u8],
}

impl Bytes<'_> {
    fn u8(&mut self) -> u8 {
        match self.data.split_first() {
            Some((b, rest)) => {
                self.data = rest;
                *b
            }
            None => 0,
        }
    }

    fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }

    fn take(&mut self, n: usize) -> &[u8] {
        let n = n.min(self.data.len());
        let (a, b) = self.data.split_at(n);
        self.data = b;
        a
    }

    fn is_empty(&self) -> bool {
        self.data.is_empty()
    }
}

/// An HTTP exchange the run opened, with the scripted agent's answer still to deliver.
struct OpenOp {
    op: OpId,
    genuine: VecDeque<Input>,
}

/// The fixed workflow of [`run_inputs`]: a two-agent ALL_SUCCESS step routing (conditionally)
/// to a SELF_LOOP step and (unconditionally) to an ANY_SUCCESS step.
const RUN_INPUTS_WORKFLOW: &str = r#"{"steps": [
    {"name": "a", "subtasks": [{"agent": "alpha", "description": "x"}, {"agent": "beta", "description": "y"}],
     "next": [{"step": "b", "condition": "go"}, {"step": "c"}]},
    {"name": "b", "step_type": "SELF_LOOP", "subtasks": [{"agent": "me", "description": "z"}]},
    {"name": "c", "step_type": "ANY_SUCCESS", "subtasks": [{"agent": "alpha", "description": "w"}, {"agent": "beta", "description": "v"}]}
]}"#;

fn plan(code: u8) -> Plan {
    match code % 10 {
        0 | 1 => Plan::States(vec!["TASK_STATE_COMPLETED"]),
        2 => Plan::States(vec!["TASK_STATE_WORKING", "TASK_STATE_COMPLETED"]),
        3 => Plan::States(vec!["TASK_STATE_FAILED"]),
        4 => Plan::States(vec!["TASK_STATE_INPUT_REQUIRED"]),
        5 => Plan::Negotiate(Negotiation::rounds(2, 3)),
        6 => Plan::Reject {
            status: 400,
            code: -32602,
            reason: "INVALID_PARAMS",
        },
        7 => Plan::BareMessage("hi"),
        8 => Plan::Empty,
        _ => Plan::States(vec!["TASK_STATE_WORKING"]),
    }
}

fn host_reply(request: &HostRequest, choice: u8) -> HostReply {
    let err = || HostError::business("fuzz.error", "no");
    match request {
        HostRequest::Task(r) => HostReply::Task(match choice % 4 {
            0 => Err(err()),
            1 => Ok(MessageContent::text(r.instruction.clone())),
            _ => Ok(MessageContent::text(r.instruction.clone()).with_extension(NEGOTIATION_T_URI)),
        }),
        HostRequest::SelfTask(r) => HostReply::SelfTask(match choice % 3 {
            0 => Err(err()),
            1 => Ok(TaskResult::failure("fuzz.bad", "no")),
            _ => Ok(TaskResult::success(vec![r.instruction.clone().into()])),
        }),
        HostRequest::Route(_) => HostReply::Route(match choice % 3 {
            0 => Err(err()),
            1 => Ok(RouteDecision::deny(None)),
            _ => Ok(RouteDecision::allow(None)),
        }),
        HostRequest::Negotiation(r) => HostReply::Negotiation(match choice % 4 {
            0 => Err(err()),
            1 => Ok(NegotiationReply::Stop {
                code: "fuzz.stop".into(),
                reason: "enough".into(),
            }),
            2 => r
                .reply(Performative::Reject, "no")
                .map(|content| NegotiationReply::Send { content })
                .map_err(|_| err()),
            _ => r
                .reply(Performative::Accept, "yes")
                .map(|content| NegotiationReply::Send { content })
                .map_err(|_| err()),
        }),
        HostRequest::InputRequired(_) => HostReply::InputRequired(match choice % 3 {
            0 => Err(err()),
            1 => Ok(a2at_core::host::InputDecision::Decline),
            _ => Ok(a2at_core::host::InputDecision::Reply {
                content: MessageContent::text("more input"),
            }),
        }),
    }
}

fn genuine_answer(agents: &mut [ScriptedAgent], req: &HttpRequest) -> VecDeque<Input> {
    let op = req.op;
    let Some(agent) = agents.iter_mut().find(|a| a.name == req.agent) else {
        return VecDeque::new();
    };
    match agent.handle(&AgentRequest::decode(req)) {
        AgentReply::Hang => VecDeque::new(),
        AgentReply::TransportError { kind, .. } => VecDeque::from([Input::TransportFailed {
            op,
            error: TransportError {
                kind,
                message: "scripted".into(),
            },
        }]),
        AgentReply::Http {
            status,
            headers,
            chunks,
            end,
            ..
        } => {
            let mut inputs = VecDeque::from([Input::ResponseHead {
                op,
                status,
                headers: header_fields(headers),
            }]);
            inputs.extend(
                chunks
                    .into_iter()
                    .map(|chunk| Input::ResponseBody { op, chunk }),
            );
            if end {
                inputs.push_back(Input::ResponseEnd { op });
            }
            inputs
        }
        AgentReply::Grpc {
            headers,
            frames,
            trailers,
            ..
        } => {
            let mut inputs = VecDeque::from([Input::ResponseHead {
                op,
                status: 200,
                headers: header_fields(headers),
            }]);
            inputs.extend(
                frames
                    .into_iter()
                    .map(|chunk| Input::ResponseBody { op, chunk }),
            );
            if let Some(trailers) = trailers {
                if !trailers.is_empty() {
                    inputs.push_back(Input::ResponseTrailers {
                        op,
                        trailers: header_fields(trailers),
                    });
                }
                inputs.push_back(Input::ResponseEnd { op });
            }
            inputs
        }
        AgentReply::Cut {
            headers, chunks, ..
        } => {
            let mut inputs = VecDeque::from([Input::ResponseHead {
                op,
                status: 200,
                headers: header_fields(headers),
            }]);
            inputs.extend(
                chunks
                    .into_iter()
                    .map(|chunk| Input::ResponseBody { op, chunk }),
            );
            inputs.push_back(Input::TransportFailed {
                op,
                error: TransportError {
                    kind: TransportErrorKind::Io,
                    message: "scripted connection cut".into(),
                },
            });
            inputs
        }
    }
}

fn drain(
    run: &mut Run,
    calls: &mut Vec<(CallId, HostRequest)>,
    ops: &mut Vec<OpenOp>,
    agents: &mut [ScriptedAgent],
    finished: &mut usize,
) {
    while let Some(out) = run.poll_output() {
        assert_eq!(*finished, 0, "an output after Finished: {out:?}");
        match out {
            Output::CallHost { call, request } => calls.push((call, request)),
            Output::AbandonHostCall { call } => calls.retain(|(c, _)| *c != call),
            Output::Transmit(req) => {
                let genuine = genuine_answer(agents, &req);
                ops.push(OpenOp {
                    op: req.op,
                    genuine,
                });
            }
            Output::AbortTransmit { op } => ops.retain(|o| o.op != op),
            Output::Finished(_) => *finished += 1,
            _ => {}
        }
    }
}

/// Drives a whole [`Run`] of a small fixed workflow with fuzz-chosen steps: time advances, host
/// answers (of the right or a wrong kind) for the k-th outstanding call, the scripted agent's
/// genuine bytes or raw fuzz bytes for the k-th outstanding exchange, transport failures, stale
/// duplicates and cancellation. After each step: no panic, `Finished` at most once and nothing
/// after it. When the bytes run out, the clock runs to the deadlines and the run must finish.
pub fn run_inputs(data: &[u8]) {
    let mut bytes = Bytes { data };
    let wf = parse_and_validate(RUN_INPUTS_WORKFLOW).expect("the fixed workflow is valid");
    let mut agents = vec![
        ScriptedAgent::new("alpha"),
        ScriptedAgent::new("beta").rest().streaming(),
    ];
    for agent in &mut agents {
        for _ in 0..3 {
            *agent = agent.clone().then(plan(bytes.u8()));
        }
    }
    let seed = u64::from(bytes.u16());
    if seed & 1 == 1 {
        // Half of the runs talk gRPC to beta (frames, trailers; a fuzzed end without them).
        agents[1] = agents[1].clone().grpc();
    }
    let dir = directory(&agents);
    let config = RunConfig {
        seed,
        task_budget: Duration::from_secs(2),
        callback_budget: Duration::from_secs(1),
        poll_interval: Duration::from_millis(100),
        cancel_budget: Duration::from_millis(500),
        ..RunConfig::default()
    };
    let mut run = Run::new(Arc::new(wf), Arc::new(dir), config, RunStart::default());
    let mut now = Timestamp::ZERO;
    let mut calls: Vec<(CallId, HostRequest)> = Vec::new();
    let mut ops: Vec<OpenOp> = Vec::new();
    let mut stale: Vec<Input> = Vec::new();
    let mut finished = 0usize;

    drain(&mut run, &mut calls, &mut ops, &mut agents, &mut finished);

    while !bytes.is_empty() && finished == 0 {
        let action = bytes.u8();
        let k = usize::from(bytes.u8());
        let _ = match action % 9 {
            0 => {
                now = now.saturating_add(Duration::from_millis(u64::from(bytes.u16())));
                run.handle_timeout(now)
            }
            1 | 2 if !calls.is_empty() => {
                let (call, request) = calls.remove(k % calls.len());
                let mut reply = host_reply(&request, bytes.u8());
                if action % 9 == 2 && k % 7 == 0 {
                    // An answer of the wrong kind: a misuse that must change nothing.
                    reply = HostReply::Route(Ok(RouteDecision::allow(None)));
                    calls.push((call, request));
                }
                let input = Input::HostReply { call, reply };
                stale.push(input.clone());
                run.handle(input, now)
            }
            3 | 4 if !ops.is_empty() => {
                let i = k % ops.len();
                match ops[i].genuine.pop_front() {
                    Some(input) => {
                        if matches!(
                            input,
                            Input::ResponseEnd { .. } | Input::TransportFailed { .. }
                        ) {
                            ops.remove(i);
                        }
                        stale.push(input.clone());
                        run.handle(input, now)
                    }
                    None => Ok(()),
                }
            }
            5 if !ops.is_empty() => {
                let op = ops[k % ops.len()].op;
                let n = usize::from(bytes.u8() % 64);
                let chunk = bytes.take(n).to_vec();
                run.handle(Input::ResponseBody { op, chunk }, now)
            }
            6 if !ops.is_empty() => {
                let o = ops.remove(k % ops.len());
                let input = if k % 2 == 0 {
                    Input::ResponseEnd { op: o.op }
                } else {
                    Input::TransportFailed {
                        op: o.op,
                        error: TransportError {
                            kind: TransportErrorKind::Io,
                            message: "fuzz".into(),
                        },
                    }
                };
                run.handle(input, now)
            }
            7 if !stale.is_empty() => {
                let input = stale[k % stale.len()].clone();
                run.handle(input, now)
            }
            8 if k % 16 == 0 => run.handle(Input::Cancel, now),
            _ => Ok(()),
        };
        drain(&mut run, &mut calls, &mut ops, &mut agents, &mut finished);
    }

    // Out of bytes: nobody answers any more; every budget expires and the run must finish.
    let mut rounds = 0;
    while finished == 0 {
        rounds += 1;
        assert!(rounds < 10_000, "the run does not finish on its deadlines");
        let Some(deadline) = run.poll_timeout() else {
            panic!("the run waits forever: no deadline and not finished");
        };
        now = now.max(deadline);
        run.handle_timeout(now).expect("time does not go backwards");
        drain(&mut run, &mut calls, &mut ops, &mut agents, &mut finished);
    }
    assert_eq!(finished, 1);
    assert!(run.poll_output().is_none());
}
