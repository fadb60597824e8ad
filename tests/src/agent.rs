//! Scripted A2A agents that read and write real protocol bytes (JSON-RPC, HTTP+JSON or gRPC,
//! unary or streaming), keep their own task table, and follow a plan per task.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use a2at_core::OpId;
use a2at_core::io::{HttpRequest, OpPurpose, TransportErrorKind};
use serde_json::{Value, json};

/// A request as the agent understood it.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentRequest {
    /// The exchange.
    pub op: OpId,
    /// Why the engine sent it.
    pub purpose: OpPurpose,
    /// Canonical A2A method name (`SendMessage`, `SendStreamingMessage`, `GetTask`, `CancelTask`,
    /// `SubscribeToTask`) or `?` when unrecognised.
    pub method: String,
    /// The request parameters (JSON-RPC `params`, or the REST body plus path ids).
    pub params: Value,
    /// The JSON-RPC id, if any.
    pub rpc_id: Option<Value>,
    /// Whether it came over JSON-RPC.
    pub jsonrpc: bool,
    /// Whether it came over gRPC (the parameters are then spelled as in HTTP+JSON).
    pub grpc: bool,
    /// Request headers.
    pub headers: Vec<(String, String)>,
    /// Request URL.
    pub url: String,
}

impl AgentRequest {
    /// Decodes the engine's request bytes.
    pub fn decode(req: &HttpRequest) -> AgentRequest {
        if let Some((method, params)) = crate::agent_grpc::decode_request(&req.url, &req.body) {
            return AgentRequest {
                op: req.op,
                purpose: req.purpose,
                method,
                params,
                rpc_id: None,
                jsonrpc: false,
                grpc: true,
                headers: owned_headers(&req.headers),
                url: req.url.clone(),
            };
        }
        let mut body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
        let (method, params, rpc_id, jsonrpc) = if body.get("jsonrpc").is_some() {
            (
                body.get("method")
                    .and_then(Value::as_str)
                    .unwrap_or("?")
                    .to_owned(),
                // Taken out of the parsed body, not copied: the body is dropped next.
                body.get_mut("params").map_or(Value::Null, Value::take),
                body.get_mut("id").map(Value::take),
                true,
            )
        } else {
            let path = req.url.split('?').next().unwrap_or("");
            let last = path.rsplit('/').next().unwrap_or("");
            let (method, id) = if last == "message:send" {
                ("SendMessage", None)
            } else if last == "message:stream" {
                ("SendStreamingMessage", None)
            } else if let Some(id) = last.strip_suffix(":cancel") {
                ("CancelTask", Some(id))
            } else if let Some(id) = last.strip_suffix(":subscribe") {
                ("SubscribeToTask", Some(id))
            } else if last == "tasks" {
                ("ListTasks", None)
            } else if path.contains("/tasks/") {
                ("GetTask", Some(last))
            } else {
                ("?", None)
            };
            let mut params = if body.is_object() { body } else { json!({}) };
            if let Some(id) = id {
                params["id"] = Value::String(id.to_owned());
            }
            if let Some(query) = req.url.split_once('?').map(|(_, q)| q) {
                for pair in query.split('&') {
                    if let Some((k, v)) = pair.split_once('=') {
                        params[k] = Value::String(a2at_core::auth::url_decode(v));
                    }
                }
            }
            (method.to_owned(), params, None, false)
        };
        AgentRequest {
            op: req.op,
            purpose: req.purpose,
            method,
            params,
            rpc_id,
            jsonrpc,
            grpc: false,
            headers: owned_headers(&req.headers),
            url: req.url.clone(),
        }
    }

    /// The value of a request header (case-insensitive name).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The message of a send, if any.
    pub fn message(&self) -> Option<&Value> {
        self.params.get("message")
    }
}

/// What the simulated network delivers for one request.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentReply {
    /// Never answer.
    Hang,
    /// Send the head and the chunks, then break the connection (no end of body).
    Cut {
        /// Delay before the head.
        delay: Duration,
        /// Response headers.
        headers: Vec<(String, String)>,
        /// Body chunks sent before the cut.
        chunks: Vec<Vec<u8>>,
        /// Gap between chunks (and before the cut).
        chunk_gap: Duration,
    },
    /// Fail at the transport level after `delay`.
    TransportError {
        /// When.
        delay: Duration,
        /// What kind.
        kind: TransportErrorKind,
    },
    /// An HTTP response.
    Http {
        /// Delay before the head.
        delay: Duration,
        /// Status code.
        status: u16,
        /// Response headers.
        headers: Vec<(String, String)>,
        /// Body chunks.
        chunks: Vec<Vec<u8>>,
        /// Gap between chunks.
        chunk_gap: Duration,
        /// Whether the body ends (false: the connection stays open forever).
        end: bool,
    },
    /// A gRPC response (HTTP/2, status 200): head, framed messages, then the trailers.
    Grpc {
        /// Delay before the head.
        delay: Duration,
        /// Response headers (with `grpc-status` for a trailers-only response).
        headers: Vec<(String, String)>,
        /// Framed messages, each sent as its own body chunk.
        frames: Vec<Vec<u8>>,
        /// Gap between frames.
        frame_gap: Duration,
        /// The trailers ending the response (empty: the body just ends); `None`: the stream
        /// stays open forever.
        trailers: Option<Vec<(String, String)>>,
    },
}

/// A fault the agent (or the network in front of it) injects into one reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentFault {
    /// HTTP 503 without processing the request (optionally with `Retry-After: N`).
    Unavailable {
        /// `Retry-After` in seconds.
        retry_after: Option<u64>,
    },
    /// HTTP 429 without processing the request (optionally with `Retry-After: N`).
    TooManyRequests {
        /// `Retry-After` in seconds.
        retry_after: Option<u64>,
    },
    /// Refuse the connection: the request never reaches the agent. In the simulator only; on
    /// loopback an accepted connection cannot be refused (use `fault_proxy` there).
    Refused,
    /// Process the request, then break the connection before any response byte.
    Reset,
    /// The engine restarts while the request is on its way: the agent never sees it, and the
    /// engine reports the exchange as `Restarted`. In the simulator only.
    RestartBefore,
    /// The engine restarts after the agent processed the request, before any response byte:
    /// the exchange is reported as `Restarted`. In the simulator only.
    RestartAfter,
    /// Process the request, send the head and the first `n` body chunks, then break the
    /// connection.
    CutAfter(usize),
    /// Process the request, send the head and the first `n` body chunks, then end the body
    /// cleanly (a stream that ends early).
    EndAfter(usize),
}

/// How the agent treats one task it is asked to create.
#[derive(Debug, Clone, PartialEq)]
pub enum Plan {
    /// Go through these states, one per observation (send answer, then each `GetTask`); the
    /// last one sticks. A COMPLETED state carries an artifact echoing the request text.
    States(Vec<&'static str>),
    /// Answer the send with a JSON-RPC / REST error carrying this ErrorInfo reason.
    Reject {
        /// HTTP status for REST (JSON-RPC always answers 200).
        status: u16,
        /// JSON-RPC code.
        code: i64,
        /// ErrorInfo reason.
        reason: &'static str,
    },
    /// Answer with a bare message (no task).
    BareMessage(&'static str),
    /// Answer with a bare message carrying a Negotiation-T Propose (pre-task mode).
    BarePropose(Propose),
    /// Answer after a delay.
    Delayed(Duration, Box<Plan>),
    /// Never answer.
    Hang,
    /// Fail at the transport level.
    Unreachable,
    /// Close the stream / body without any event.
    Empty,
    /// Negotiate in-task (see [`Negotiation`]).
    Negotiate(Negotiation),
    /// Complete at once, but with a status message that carries a Propose (must be ignored).
    CompletedWithPropose,
    /// A Notification-T subscription stream (see [`NotifyScript`]). A unary send is answered
    /// with the task in the state of the script's first state event.
    Notify(NotifyScript),
    /// Ask for input without Negotiation-T (INPUT_REQUIRED) this many times in all: each
    /// follow-up on the task is answered with INPUT_REQUIRED again until the last, which
    /// completes it.
    AsksInput(u32),
    /// Stream these raw events verbatim (a misbehaving agent), after replacing the strings
    /// `$TASK` and `$CTX` by the new task's id and the request's context id; the task's state
    /// becomes the last state the events name.
    Events(Vec<Value>),
}

/// One event of a scripted notification stream, for the task the send created.
#[derive(Debug, Clone, PartialEq)]
pub enum NotifyEvent {
    /// A task snapshot in this state.
    Task(&'static str),
    /// A status update in this state, whose status message carries this text and
    /// `{"notification": <text>}` message metadata.
    Status(&'static str, &'static str),
    /// An artifact update of artifact `<task>-n`: replaces it, or appends to it when `true`.
    Artifact(&'static str, bool),
    /// A bare agent message with this text.
    Message(&'static str),
}

/// How a scripted notification stream goes on after its events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamEnding {
    /// Keep the connection open without sending anything more.
    StayOpen,
    /// End the body normally.
    End,
    /// Break the connection (the client sees an I/O failure).
    Drop,
}

/// A notification stream: `events` `gap` apart, then `ending`. Each later `SubscribeToTask` on
/// the task plays the next entry of `resubscribe` (the last one repeats; without any, the
/// current task snapshot and an open stream).
#[derive(Debug, Clone, PartialEq)]
pub struct NotifyScript {
    /// Events of the first stream.
    pub events: Vec<NotifyEvent>,
    /// Gap between events.
    pub gap: Duration,
    /// What happens after the events.
    pub ending: StreamEnding,
    /// Later streams, one per `SubscribeToTask`.
    pub resubscribe: Vec<(Vec<NotifyEvent>, StreamEnding)>,
}

impl NotifyScript {
    /// `events` 2 ms apart, then `ending`; no resubscription script.
    pub fn new(events: Vec<NotifyEvent>, ending: StreamEnding) -> Self {
        NotifyScript {
            events,
            gap: Duration::from_millis(2),
            ending,
            resubscribe: Vec::new(),
        }
    }

    /// Adds the script of the next `SubscribeToTask` stream.
    pub fn then_resubscribe(mut self, events: Vec<NotifyEvent>, ending: StreamEnding) -> Self {
        self.resubscribe.push((events, ending));
        self
    }
}

/// One Propose as the agent sends it; fields are raw JSON so malformed contexts can be scripted.
#[derive(Debug, Clone, PartialEq)]
pub struct Propose {
    /// `negotiationContext.round`.
    pub round: Value,
    /// `negotiationContext.maxRounds`.
    pub max_rounds: Value,
    /// `negotiationContext.performative`.
    pub performative: &'static str,
    /// Suffix of the negotiation id (same suffix = same negotiation).
    pub id: u32,
    /// Whether the Negotiation-T URI key is in the metadata.
    pub with_uri_key: bool,
}

impl Propose {
    /// A valid Propose of negotiation 1 for `round` of `max_rounds`.
    pub fn round(round: u32, max_rounds: u32) -> Propose {
        Propose {
            round: json!(f64::from(round)),
            max_rounds: json!(f64::from(max_rounds)),
            performative: "PROPOSE",
            id: 1,
            with_uri_key: true,
        }
    }

    fn metadata(&self) -> Value {
        let mut meta = json!({
            "templateUri": "Negotiation-T/information-negotiation/propose/v1",
            "negotiationContext": {
                "id": format!("3f6c1e2a-9b7d-4c1e-8a2f-{:012}", self.id),
                "round": self.round,
                "maxRounds": self.max_rounds,
                "performative": self.performative
            }
        });
        if self.with_uri_key {
            meta[NEGOTIATION_T] =
                json!("## Information negotiation\nPlease provide the site list.");
        }
        meta
    }
}

/// An in-task negotiation script: the task starts INPUT_REQUIRED with `proposes[0]`; each ACCEPT
/// reply moves to the next Propose, and after the last one to COMPLETED. REJECT → FAILED,
/// ABORT → `on_abort`.
#[derive(Debug, Clone, PartialEq)]
pub struct Negotiation {
    /// The Proposes in order.
    pub proposes: Vec<Propose>,
    /// Answer each reply with WORKING first (an ACK), revealing the next state on `GetTask`.
    pub ack_first: bool,
    /// Answer every reply with the same Propose again (a repeated event).
    pub repeat_same: bool,
    /// State after an ABORT reply.
    pub on_abort: &'static str,
}

impl Negotiation {
    /// `rounds` valid Proposes of one negotiation with the given maxRounds.
    pub fn rounds(rounds: u32, max_rounds: u32) -> Negotiation {
        Negotiation {
            proposes: (1..=rounds)
                .map(|r| Propose::round(r, max_rounds))
                .collect(),
            ack_first: false,
            repeat_same: false,
            on_abort: "TASK_STATE_COMPLETED",
        }
    }
}

#[derive(Debug, Clone)]
struct TaskRecord {
    context_id: String,
    state: &'static str,
    message: Option<Value>,
    later: VecDeque<(&'static str, Option<Value>)>,
    text: String,
    negotiation: Option<(Negotiation, usize)>,
    notify: Option<(NotifyScript, usize)>,
    /// Follow-ups still answered with INPUT_REQUIRED again (plain questions).
    asks_again: u32,
}

/// A scripted agent with its own task table.
#[derive(Debug, Clone)]
pub struct ScriptedAgent {
    /// The agent (card) name.
    pub name: String,
    /// Whether it answers sends with SSE streams.
    pub streaming: bool,
    /// Whether it speaks JSON-RPC (else HTTP+JSON or gRPC).
    pub jsonrpc: bool,
    /// Whether it speaks gRPC.
    pub grpc: bool,
    plans: VecDeque<Plan>,
    default_plan: Plan,
    tasks: BTreeMap<String, TaskRecord>,
    next_task: u64,
    /// Ids of tasks that received a `CancelTask`.
    pub cancelled: Vec<String>,
    extra_extensions: Vec<String>,
    faults: Vec<(String, usize, AgentFault)>,
    seen: BTreeMap<String, usize>,
    /// Whether it answers `SubscribeToTask` for tasks without a notification script.
    pub resubscribable: bool,
    /// Whether it implements `ListTasks`.
    pub lists_tasks: bool,
    /// Whether `ListTasks` pages (`pageSize`, `pageToken`, `totalSize`); without it every
    /// matching task comes in one page.
    pub pages_tasks: bool,
    /// Whether `ListTasks` ignores its `contextId` filter (a misbehaving agent).
    pub lists_every_context: bool,
}

/// The Negotiation-T URI, as agents emit it.
pub const NEGOTIATION_T: &str =
    "https://projects.tmforum.org/a2aproject/telecommunication/extensions/Negotiation-T/v1";

impl ScriptedAgent {
    /// A JSON-RPC, non-streaming agent that completes every task.
    pub fn new(name: &str) -> Self {
        ScriptedAgent {
            name: name.to_owned(),
            streaming: false,
            jsonrpc: true,
            grpc: false,
            plans: VecDeque::new(),
            default_plan: Plan::States(vec!["TASK_STATE_COMPLETED"]),
            tasks: BTreeMap::new(),
            next_task: 0,
            cancelled: Vec::new(),
            extra_extensions: Vec::new(),
            faults: Vec::new(),
            seen: BTreeMap::new(),
            resubscribable: true,
            lists_tasks: true,
            pages_tasks: false,
            lists_every_context: false,
        }
    }

    /// Injects `fault` into the reply to the `nth` (1-based) request of `method` this agent
    /// receives.
    pub fn fault_on(mut self, method: &str, nth: usize, fault: AgentFault) -> Self {
        self.faults.push((method.to_owned(), nth, fault));
        self
    }

    /// Answer `SubscribeToTask` with `METHOD_NOT_FOUND` unless a notification script covers
    /// the task (an agent without resubscription).
    pub fn without_resubscribe(mut self) -> Self {
        self.resubscribable = false;
        self
    }

    /// Page `ListTasks` answers (`pageSize`, `pageToken` as the index of the page's first task,
    /// `totalSize`).
    pub fn paging(mut self) -> Self {
        self.pages_tasks = true;
        self
    }

    /// Answer `ListTasks` with the tasks of every context, whatever its `contextId` filter.
    pub fn listing_every_context(mut self) -> Self {
        self.lists_every_context = true;
        self
    }

    /// Answer `ListTasks` with `METHOD_NOT_FOUND`.
    pub fn without_list_tasks(mut self) -> Self {
        self.lists_tasks = false;
        self
    }

    /// Speak HTTP+JSON instead of JSON-RPC.
    pub fn rest(mut self) -> Self {
        self.jsonrpc = false;
        self.grpc = false;
        self
    }

    /// Speak gRPC (whatever binding it spoke before): the card offers one `GRPC` interface
    /// at `<base_url>/a2a/grpc`, and answers are carried over into gRPC frames and trailers.
    pub fn grpc(mut self) -> Self {
        self.jsonrpc = false;
        self.grpc = true;
        self
    }

    /// Answer sends with SSE streams.
    pub fn streaming(mut self) -> Self {
        self.streaming = true;
        self
    }

    /// Also declare this extension URI in the card (after Task-T and Negotiation-T).
    pub fn with_extension(mut self, uri: &str) -> Self {
        self.extra_extensions.push(uri.to_owned());
        self
    }

    /// The plan for every task not covered by [`ScriptedAgent::then`].
    pub fn by_default(mut self, plan: Plan) -> Self {
        self.default_plan = plan;
        self
    }

    /// The plan for the next new task (queued in order).
    pub fn then(mut self, plan: Plan) -> Self {
        self.plans.push_back(plan);
        self
    }

    /// The agent card for this agent.
    pub fn card(&self) -> Value {
        self.card_at(&format!("http://{}.test", self.name))
    }

    /// The agent card with its interface under `base_url` (`<base_url>/a2a/jsonrpc` or
    /// `<base_url>/a2a/rest`), e.g. for an agent served on loopback.
    pub fn card_at(&self, base_url: &str) -> Value {
        let base_url = base_url.trim_end_matches('/');
        let (url, binding) = if self.grpc {
            (format!("{base_url}/a2a/grpc"), "GRPC")
        } else if self.jsonrpc {
            (format!("{base_url}/a2a/jsonrpc"), "JSONRPC")
        } else {
            (format!("{base_url}/a2a/rest"), "HTTP+JSON")
        };
        let mut extensions = vec![
            json!({"uri": "https://projects.tmforum.org/a2aproject/telecommunication/extensions/Task-T/v1"}),
            json!({"uri": NEGOTIATION_T}),
        ];
        extensions.extend(self.extra_extensions.iter().map(|u| json!({ "uri": u })));
        json!({
            "name": self.name,
            "description": format!("scripted agent {}", self.name),
            "version": "1.0.0",
            "supportedInterfaces": [{"url": url, "protocolBinding": binding, "protocolVersion": "1.0"}],
            "capabilities": {
                "streaming": self.streaming,
                "extensions": extensions
            },
            "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["text/plain"],
            "skills": [{"id": "s", "name": "s", "description": "s", "tags": []}]
        })
    }

    /// States of the tasks this agent created that are not terminal.
    pub fn open_tasks(&self) -> Vec<(String, &'static str)> {
        self.tasks
            .iter()
            .filter(|(_, t)| !is_terminal(t.state))
            .map(|(id, t)| (id.clone(), t.state))
            .collect()
    }

    /// Answers one request, with the fault planned for it, if any (in the request's binding).
    pub fn handle(&mut self, req: &AgentRequest) -> AgentReply {
        let reply = self.handle_as_json(req);
        if req.grpc {
            crate::agent_grpc::to_grpc(&req.method, reply)
        } else {
            reply
        }
    }

    fn handle_as_json(&mut self, req: &AgentRequest) -> AgentReply {
        let nth = {
            let n = self.seen.entry(req.method.clone()).or_insert(0);
            *n += 1;
            *n
        };
        let fault = self
            .faults
            .iter()
            .find(|(m, n, _)| *m == req.method && *n == nth)
            .map(|(_, _, f)| *f);
        let Some(fault) = fault else {
            return self.answer(req);
        };
        if fault == AgentFault::Refused {
            return AgentReply::TransportError {
                delay: Duration::ZERO,
                kind: TransportErrorKind::Connect,
            };
        }
        if fault == AgentFault::RestartBefore {
            return AgentReply::TransportError {
                delay: Duration::ZERO,
                kind: TransportErrorKind::Restarted,
            };
        }
        let refusal = match fault {
            AgentFault::Unavailable { retry_after } => Some((503, retry_after)),
            AgentFault::TooManyRequests { retry_after } => Some((429, retry_after)),
            _ => None,
        };
        if let Some((status, retry_after)) = refusal {
            let mut headers = vec![("content-type".to_owned(), "text/plain".to_owned())];
            if let Some(secs) = retry_after {
                headers.push(("retry-after".to_owned(), secs.to_string()));
            }
            return AgentReply::Http {
                delay: Duration::ZERO,
                status,
                headers,
                chunks: vec![b"overloaded".to_vec()],
                chunk_gap: Duration::ZERO,
                end: true,
            };
        }
        let reply = self.answer(req);
        let truncate = |n: usize, cut: bool| match reply {
            AgentReply::Http {
                delay,
                status,
                headers,
                chunks,
                chunk_gap,
                ..
            } => {
                let chunks: Vec<Vec<u8>> = chunks.into_iter().take(n).collect();
                if cut {
                    AgentReply::Cut {
                        delay,
                        headers,
                        chunks,
                        chunk_gap,
                    }
                } else {
                    AgentReply::Http {
                        delay,
                        status,
                        headers,
                        chunks,
                        chunk_gap,
                        end: true,
                    }
                }
            }
            AgentReply::Cut {
                delay,
                headers,
                chunks,
                chunk_gap,
            } => AgentReply::Cut {
                delay,
                headers,
                chunks: chunks.into_iter().take(n).collect(),
                chunk_gap,
            },
            other => other,
        };
        match fault {
            AgentFault::Unavailable { .. }
            | AgentFault::TooManyRequests { .. }
            | AgentFault::Refused
            | AgentFault::RestartBefore => unreachable!("answered above"),
            AgentFault::RestartAfter => AgentReply::TransportError {
                delay: Duration::ZERO,
                kind: TransportErrorKind::Restarted,
            },
            AgentFault::Reset => AgentReply::TransportError {
                delay: Duration::ZERO,
                kind: TransportErrorKind::Io,
            },
            AgentFault::CutAfter(n) => truncate(n, true),
            AgentFault::EndAfter(n) => truncate(n, false),
        }
    }

    fn answer(&mut self, req: &AgentRequest) -> AgentReply {
        if req.header("A2A-Version") != Some("1.0") {
            return self.error(
                req,
                400,
                -32009,
                "VERSION_NOT_SUPPORTED",
                "missing A2A-Version",
            );
        }
        match req.method.as_str() {
            "SendMessage" | "SendStreamingMessage" => self.on_send(req),
            "GetTask" => {
                let id = req
                    .params
                    .get("id")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned();
                let Some(task) = self.tasks.get_mut(&id) else {
                    return self.error(req, 404, -32001, "TASK_NOT_FOUND", "Task not found");
                };
                reveal(task);
                let body = task_json(&id, task);
                Self::respond(req, body, false)
            }
            "CancelTask" => {
                let id = req
                    .params
                    .get("id")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned();
                self.cancelled.push(id.clone());
                let Some(task) = self.tasks.get_mut(&id) else {
                    return self.error(req, 404, -32001, "TASK_NOT_FOUND", "Task not found");
                };
                if is_terminal(task.state) {
                    return self.error(
                        req,
                        400,
                        -32002,
                        "TASK_NOT_CANCELABLE",
                        "Task cannot be canceled",
                    );
                }
                task.state = "TASK_STATE_CANCELED";
                task.later.clear();
                let body = task_json(&id, task);
                Self::respond(req, body, false)
            }
            "SubscribeToTask" => {
                let id = req
                    .params
                    .get("id")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned();
                match self.tasks.get_mut(&id) {
                    Some(task) if task.notify.is_some() => {
                        if is_terminal(task.state) {
                            return self.error(
                                req,
                                400,
                                -32004,
                                "UNSUPPORTED_OPERATION",
                                "Task is in terminal state",
                            );
                        }
                        let Some((script, index)) = task.notify.as_mut() else {
                            unreachable!("checked above")
                        };
                        let (events, ending) = match script.resubscribe.get(*index) {
                            Some(next) => next.clone(),
                            None => match script.resubscribe.last() {
                                Some(last) => last.clone(),
                                None => {
                                    (vec![NotifyEvent::Task(task.state)], StreamEnding::StayOpen)
                                }
                            },
                        };
                        *index += 1;
                        let gap = script.gap;
                        if let Some(state) = last_state(&events) {
                            task.state = state;
                        }
                        let ctx = task.context_id.clone();
                        notify_stream(req, &id, &ctx, &events, gap, ending)
                    }
                    Some(task) if self.resubscribable => {
                        if is_terminal(task.state) {
                            return self.error(
                                req,
                                400,
                                -32004,
                                "UNSUPPORTED_OPERATION",
                                "Task is in terminal state",
                            );
                        }
                        let (events, end) = resubscription(&id, task);
                        sse_reply(req, events, end)
                    }
                    None if self.resubscribable => {
                        self.error(req, 404, -32001, "TASK_NOT_FOUND", "Task not found")
                    }
                    _ => self.error(req, 404, -32601, "METHOD_NOT_FOUND", "Method not found"),
                }
            }
            "ListTasks" if self.lists_tasks => {
                let context = req.params.get("contextId").and_then(Value::as_str);
                let status = req.params.get("status").and_then(Value::as_str);
                // Paging: `pageToken` is the index of the page's first task; numbers come as
                // JSON numbers (JSON-RPC) or query strings (REST).
                let number = |key: &str| {
                    let v = req.params.get(key)?;
                    v.as_u64().or_else(|| v.as_str()?.parse().ok())
                };
                let size = number("pageSize").unwrap_or(50) as usize;
                let start = number("pageToken").unwrap_or(0) as usize;
                let matching: Vec<Value> = self
                    .tasks
                    .iter()
                    .filter(|(_, t)| {
                        self.lists_every_context || context.is_none_or(|c| c == t.context_id)
                    })
                    .filter(|(_, t)| status.is_none_or(|s| s == t.state))
                    .map(|(id, t)| task_json(id, t))
                    .collect();
                if !self.pages_tasks {
                    return Self::respond(
                        req,
                        json!({"tasks": matching, "nextPageToken": ""}),
                        false,
                    );
                }
                let total = matching.len();
                let page: Vec<Value> = matching.into_iter().skip(start).take(size).collect();
                let next = if start + size < total {
                    (start + size).to_string()
                } else {
                    String::new()
                };
                let body = json!({"tasks": page, "nextPageToken": next, "pageSize": size, "totalSize": total});
                Self::respond(req, body, false)
            }
            _ => self.error(req, 404, -32601, "METHOD_NOT_FOUND", "Method not found"),
        }
    }

    fn on_send(&mut self, req: &AgentRequest) -> AgentReply {
        let Some(message) = req.message() else {
            return self.error(req, 400, -32602, "INVALID_PARAMS", "message required");
        };
        if message.get("role").and_then(Value::as_str) != Some("ROLE_USER") {
            return self.error(req, 400, -32602, "INVALID_PARAMS", "role must be ROLE_USER");
        }
        let text = message
            .pointer("/parts/0/text")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let context_id = message
            .get("contextId")
            .and_then(Value::as_str)
            .unwrap_or("ctx-none")
            .to_owned();
        if let Some(task_id) = message.get("taskId").and_then(Value::as_str) {
            return self.on_follow_up(req, task_id.to_owned(), message.clone());
        }
        let plan = self
            .plans
            .pop_front()
            .unwrap_or_else(|| self.default_plan.clone());
        self.start_task(req, plan, context_id, text, Duration::ZERO)
    }

    fn start_task(
        &mut self,
        req: &AgentRequest,
        plan: Plan,
        context_id: String,
        text: String,
        delay: Duration,
    ) -> AgentReply {
        match plan {
            Plan::Delayed(d, inner) => self.start_task(req, *inner, context_id, text, delay + d),
            Plan::Hang => AgentReply::Hang,
            Plan::Unreachable => AgentReply::TransportError {
                delay,
                kind: TransportErrorKind::Connect,
            },
            Plan::Reject {
                status,
                code,
                reason,
            } => with_delay(
                self.error(req, status, code, reason, "rejected by script"),
                delay,
            ),
            Plan::Empty => AgentReply::Http {
                delay,
                status: 200,
                headers: vec![(
                    "content-type".into(),
                    if req.method == "SendStreamingMessage" {
                        "text/event-stream".into()
                    } else {
                        "application/json".into()
                    },
                )],
                chunks: vec![],
                chunk_gap: Duration::ZERO,
                end: true,
            },
            Plan::BareMessage(reply) => {
                let msg = json!({
                    "messageId": format!("{}-m{}", self.name, self.next_task),
                    "contextId": context_id,
                    "role": "ROLE_AGENT",
                    "parts": [{"text": reply}]
                });
                self.next_task += 1;
                with_delay(Self::respond(req, json!({"message": msg}), true), delay)
            }
            Plan::BarePropose(propose) => {
                let msg = json!({
                    "messageId": format!("{}-m{}", self.name, self.next_task),
                    "contextId": context_id,
                    "role": "ROLE_AGENT",
                    "parts": [{"text": "Please provide the site list before I create a task"}],
                    "extensions": [NEGOTIATION_T],
                    "metadata": propose.metadata()
                });
                self.next_task += 1;
                with_delay(Self::respond(req, json!({"message": msg}), true), delay)
            }
            Plan::Events(events) => {
                self.next_task += 1;
                let id = format!("{}-t{}", self.name, self.next_task);
                let events: Vec<Value> = events
                    .iter()
                    .map(|e| {
                        serde_json::from_str(
                            &e.to_string()
                                .replace("$TASK", &id)
                                .replace("$CTX", &context_id),
                        )
                        .expect("still JSON")
                    })
                    .collect();
                let state = events
                    .iter()
                    .rev()
                    .find_map(|e| {
                        e.pointer("/statusUpdate/status/state")
                            .or_else(|| e.pointer("/task/status/state"))
                            .and_then(Value::as_str)
                    })
                    .map_or("TASK_STATE_WORKING", |s| match s {
                        "TASK_STATE_COMPLETED" => "TASK_STATE_COMPLETED",
                        "TASK_STATE_FAILED" => "TASK_STATE_FAILED",
                        _ => "TASK_STATE_WORKING",
                    });
                self.tasks.insert(
                    id,
                    TaskRecord {
                        context_id,
                        state,
                        message: None,
                        later: VecDeque::new(),
                        text,
                        negotiation: None,
                        notify: None,
                        asks_again: 0,
                    },
                );
                with_delay(sse_reply(req, events, true), delay)
            }
            plan => {
                self.next_task += 1;
                let id = format!("{}-t{}", self.name, self.next_task);
                let mut record = TaskRecord {
                    context_id,
                    state: "TASK_STATE_SUBMITTED",
                    message: None,
                    later: VecDeque::new(),
                    text,
                    negotiation: None,
                    notify: None,
                    asks_again: 0,
                };
                match plan {
                    Plan::AsksInput(times) => {
                        record.state = "TASK_STATE_INPUT_REQUIRED";
                        record.asks_again = times.saturating_sub(1);
                    }
                    Plan::States(states) => {
                        record.later = states.into_iter().map(|s| (s, None)).collect();
                        reveal(&mut record);
                    }
                    Plan::Negotiate(neg) if neg.proposes.is_empty() => {
                        record.state = "TASK_STATE_COMPLETED";
                    }
                    Plan::Negotiate(neg) => {
                        record.state = "TASK_STATE_INPUT_REQUIRED";
                        record.message =
                            Some(propose_message(&id, &record.context_id, &neg.proposes[0]));
                        record.negotiation = Some((neg, 0));
                    }
                    Plan::CompletedWithPropose => {
                        record.state = "TASK_STATE_COMPLETED";
                        record.message = Some(propose_message(
                            &id,
                            &record.context_id,
                            &Propose::round(1, 3),
                        ));
                    }
                    Plan::Notify(script) => {
                        let first = script
                            .events
                            .iter()
                            .find_map(event_state)
                            .unwrap_or("TASK_STATE_WORKING");
                        record.state = last_state(&script.events).unwrap_or(first);
                        let streaming = req.method == "SendStreamingMessage";
                        let reply = if streaming {
                            notify_stream(
                                req,
                                &id,
                                &record.context_id,
                                &script.events,
                                script.gap,
                                script.ending,
                            )
                        } else {
                            record.state = first;
                            let body = json!({"task": {"id": id, "contextId": record.context_id,
                                "status": {"state": first}}});
                            Self::respond(req, body, true)
                        };
                        record.notify = Some((script, 0));
                        self.tasks.insert(id, record);
                        return with_delay(reply, delay);
                    }
                    _ => unreachable!("handled above"),
                }
                let reply = Self::respond(
                    req,
                    SentTask {
                        task: TaskJson::of(&id, &record),
                    },
                    true,
                );
                self.tasks.insert(id, record);
                with_delay(reply, delay)
            }
        }
    }

    fn on_follow_up(&mut self, req: &AgentRequest, task_id: String, message: Value) -> AgentReply {
        let Some(task) = self.tasks.get_mut(&task_id) else {
            return self.error(req, 404, -32001, "TASK_NOT_FOUND", "Task not found");
        };
        if is_terminal(task.state) {
            return self.error(
                req,
                400,
                -32004,
                "UNSUPPORTED_OPERATION",
                "Task is in terminal state",
            );
        }
        let performative = message
            .pointer("/metadata/negotiationContext/performative")
            .and_then(Value::as_str)
            .unwrap_or("");
        if let Some((neg, index)) = task.negotiation.clone() {
            let next: (&'static str, Option<Value>) = match performative {
                "ACCEPT" if neg.repeat_same => (
                    "TASK_STATE_INPUT_REQUIRED",
                    Some(propose_message(
                        &task_id,
                        &task.context_id,
                        &neg.proposes[index],
                    )),
                ),
                "ACCEPT" if index + 1 < neg.proposes.len() => {
                    task.negotiation = Some((neg.clone(), index + 1));
                    (
                        "TASK_STATE_INPUT_REQUIRED",
                        Some(propose_message(
                            &task_id,
                            &task.context_id,
                            &neg.proposes[index + 1],
                        )),
                    )
                }
                "ACCEPT" => ("TASK_STATE_COMPLETED", None),
                "ABORT" => (neg.on_abort, None),
                _ => ("TASK_STATE_FAILED", None),
            };
            if neg.ack_first {
                task.state = "TASK_STATE_WORKING";
                task.message = None;
                task.later = VecDeque::from([next]);
            } else {
                task.state = next.0;
                task.message = next.1;
            }
        } else if task.asks_again > 0 {
            task.asks_again -= 1;
            task.state = "TASK_STATE_INPUT_REQUIRED";
        } else {
            task.state = "TASK_STATE_COMPLETED";
            task.message = None;
        }
        Self::respond(
            req,
            SentTask {
                task: TaskJson::of(&task_id, task),
            },
            true,
        )
    }

    /// Builds a success response in the agent's binding; `wrapped` results are SendMessage-style
    /// (`{"task":…}`), others are bare (GetTask/CancelTask).
    fn respond<T: serde::Serialize>(req: &AgentRequest, result: T, send_like: bool) -> AgentReply {
        let streaming = req.method == "SendStreamingMessage" && send_like;
        if streaming {
            let events = stream_events(&serde_json::to_value(&result).expect("a result is JSON"));
            let chunks: Vec<Vec<u8>> = events
                .into_iter()
                .map(|ev| {
                    let payload = if req.jsonrpc {
                        json!({"jsonrpc": "2.0", "id": req.rpc_id, "result": ev})
                    } else {
                        ev
                    };
                    format!("data: {payload}\r\n\r\n").into_bytes()
                })
                .collect();
            return AgentReply::Http {
                delay: Duration::ZERO,
                status: 200,
                headers: vec![(
                    "content-type".into(),
                    "text/event-stream; charset=utf-8".into(),
                )],
                chunks,
                chunk_gap: Duration::from_micros(100),
                end: true,
            };
        }
        // The same bytes as `json!({"jsonrpc": …, "id": …, "result": …})`, written without
        // building that object first.
        #[derive(serde::Serialize)]
        struct RpcResult<'a, T> {
            jsonrpc: &'static str,
            id: &'a Option<Value>,
            result: &'a T,
        }
        let body = if req.jsonrpc {
            serde_json::to_vec(&RpcResult {
                jsonrpc: "2.0",
                id: &req.rpc_id,
                result: &result,
            })
        } else {
            serde_json::to_vec(&result)
        };
        json_reply_bytes(200, body.expect("json"))
    }

    fn error(
        &self,
        req: &AgentRequest,
        status: u16,
        code: i64,
        reason: &str,
        message: &str,
    ) -> AgentReply {
        let info = json!({
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": reason,
            "domain": "a2a-protocol.org",
            "metadata": {}
        });
        if req.jsonrpc {
            json_reply(
                200,
                &json!({"jsonrpc": "2.0", "id": req.rpc_id, "error": {"code": code, "message": message, "data": [info]}}),
            )
        } else {
            json_reply(
                status,
                &json!({"error": {"code": status, "status": "FAILED_PRECONDITION", "message": message, "details": [info]}}),
            )
        }
    }
}

fn with_delay(reply: AgentReply, extra: Duration) -> AgentReply {
    match reply {
        AgentReply::Http {
            delay,
            status,
            headers,
            chunks,
            chunk_gap,
            end,
        } => AgentReply::Http {
            delay: delay + extra,
            status,
            headers,
            chunks,
            chunk_gap,
            end,
        },
        AgentReply::Cut {
            delay,
            headers,
            chunks,
            chunk_gap,
        } => AgentReply::Cut {
            delay: delay + extra,
            headers,
            chunks,
            chunk_gap,
        },
        other => other,
    }
}

fn json_reply(status: u16, body: &Value) -> AgentReply {
    json_reply_bytes(status, serde_json::to_vec(body).expect("json"))
}

fn json_reply_bytes(status: u16, body: Vec<u8>) -> AgentReply {
    AgentReply::Http {
        delay: Duration::ZERO,
        status,
        headers: vec![("content-type".into(), "application/json".into())],
        chunks: vec![body],
        chunk_gap: Duration::ZERO,
        end: true,
    }
}

fn is_terminal(state: &str) -> bool {
    matches!(
        state,
        "TASK_STATE_COMPLETED"
            | "TASK_STATE_FAILED"
            | "TASK_STATE_CANCELED"
            | "TASK_STATE_REJECTED"
    )
}

/// Moves a task to its next planned state (one observation); the last planned state sticks.
fn reveal(task: &mut TaskRecord) {
    if is_terminal(task.state) {
        return;
    }
    if let Some((state, message)) = task.later.pop_front() {
        task.state = state;
        task.message = message;
        if task.later.is_empty() {
            task.later.push_back((state, task.message.clone()));
        }
    }
}

fn propose_message(task_id: &str, context_id: &str, propose: &Propose) -> Value {
    json!({
        "messageId": format!("{task_id}-propose-{}", propose.round),
        "contextId": context_id,
        "taskId": task_id,
        "role": "ROLE_AGENT",
        "parts": [{"text": "Please provide the site list"}],
        "extensions": [NEGOTIATION_T],
        "metadata": propose.metadata()
    })
}

fn task_json(id: &str, task: &TaskRecord) -> Value {
    serde_json::to_value(TaskJson::of(id, task)).expect("a task is JSON")
}

/// A scripted task as the agent sends it, written straight to bytes where no `Value` is needed
/// (the member order is the same either way).
#[derive(serde::Serialize)]
struct TaskJson<'a> {
    id: &'a str,
    #[serde(rename = "contextId")]
    context_id: &'a str,
    status: StatusJson<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    artifacts: Option<[ArtifactJson<'a>; 1]>,
}

#[derive(serde::Serialize)]
struct StatusJson<'a> {
    state: &'a str,
    timestamp: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<&'a Value>,
}

#[derive(serde::Serialize)]
struct ArtifactJson<'a> {
    #[serde(rename = "artifactId")]
    artifact_id: String,
    name: &'static str,
    parts: [TextPartJson<'a>; 1],
}

#[derive(serde::Serialize)]
struct TextPartJson<'a> {
    #[serde(serialize_with = "done_text")]
    text: &'a str,
}

fn done_text<S: serde::Serializer>(text: &&str, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(&format_args!("done: {text}"))
}

/// `{"task": …}`, the result of a send.
#[derive(serde::Serialize)]
struct SentTask<'a> {
    task: TaskJson<'a>,
}

impl<'a> TaskJson<'a> {
    fn of(id: &'a str, task: &'a TaskRecord) -> Self {
        TaskJson {
            id,
            context_id: &task.context_id,
            status: StatusJson {
                state: task.state,
                timestamp: "2026-12-02T10:39:06.479244Z",
                message: task.message.as_ref(),
            },
            artifacts: (task.state == "TASK_STATE_COMPLETED").then(|| {
                [ArtifactJson {
                    artifact_id: format!("{id}-a1"),
                    name: "result",
                    parts: [TextPartJson { text: &task.text }],
                }]
            }),
        }
    }
}

/// What `SubscribeToTask` streams for a scripted task: the current snapshot, then every planned
/// state up to a final or interrupted one (the stream then ends) or to a state that sticks (the
/// stream stays open).
fn resubscription(id: &str, task: &mut TaskRecord) -> (Vec<Value>, bool) {
    let ctx = task.context_id.clone();
    let mut snapshot = task_json(id, task);
    if let Some(obj) = snapshot.as_object_mut() {
        obj.remove("artifacts");
    }
    let mut events = vec![json!({ "task": snapshot })];
    let interrupted = |s: &str| {
        is_terminal(s) || s == "TASK_STATE_INPUT_REQUIRED" || s == "TASK_STATE_AUTH_REQUIRED"
    };
    while !interrupted(task.state) {
        let sticks = task.later.len() == 1 && task.later[0].0 == task.state;
        if task.later.is_empty() || sticks {
            return (events, false);
        }
        reveal(task);
        let full = task_json(id, task);
        if let Some(artifacts) = full.get("artifacts").and_then(Value::as_array) {
            for a in artifacts {
                events.push(
                    json!({"artifactUpdate": {"taskId": id, "contextId": ctx, "artifact": a}}),
                );
            }
        }
        events.push(json!({"statusUpdate": {"taskId": id, "contextId": ctx, "status": full["status"].clone()}}));
    }
    (events, true)
}

/// An SSE reply carrying `events` in the request's binding.
fn sse_reply(req: &AgentRequest, events: Vec<Value>, end: bool) -> AgentReply {
    let chunks = events
        .into_iter()
        .map(|ev| {
            let payload = if req.jsonrpc {
                json!({"jsonrpc": "2.0", "id": req.rpc_id, "result": ev})
            } else {
                ev
            };
            format!("data: {payload}\r\n\r\n").into_bytes()
        })
        .collect();
    AgentReply::Http {
        delay: Duration::ZERO,
        status: 200,
        headers: vec![(
            "content-type".into(),
            "text/event-stream; charset=utf-8".into(),
        )],
        chunks,
        chunk_gap: Duration::from_micros(100),
        end,
    }
}

/// A streamed version of a send result: snapshot, then status/artifact deltas.
fn stream_events(result: &Value) -> Vec<Value> {
    let Some(task) = result.get("task") else {
        return vec![result.clone()];
    };
    let id = task["id"].clone();
    let ctx = task["contextId"].clone();
    let mut events = vec![
        json!({"task": {"id": id, "contextId": ctx, "status": {"state": "TASK_STATE_SUBMITTED"}}}),
    ];
    events.push(json!({"statusUpdate": {"taskId": id, "contextId": ctx, "status": {"state": "TASK_STATE_WORKING"}}}));
    if let Some(artifacts) = task.get("artifacts").and_then(Value::as_array) {
        for a in artifacts {
            let parts = a["parts"].as_array().cloned().unwrap_or_default();
            let first: Vec<Value> = parts.iter().take(1).cloned().collect();
            events.push(json!({"artifactUpdate": {"taskId": id, "contextId": ctx, "artifact": {"artifactId": a["artifactId"], "name": a["name"], "parts": first}}}));
            for p in parts.iter().skip(1) {
                events.push(json!({"artifactUpdate": {"taskId": id, "contextId": ctx, "append": true, "artifact": {"artifactId": a["artifactId"], "parts": [p]}}}));
            }
        }
    }
    events.push(
        json!({"statusUpdate": {"taskId": id, "contextId": ctx, "status": task["status"].clone()}}),
    );
    events
}

fn event_state(e: &NotifyEvent) -> Option<&'static str> {
    match e {
        NotifyEvent::Task(s) | NotifyEvent::Status(s, _) => Some(s),
        NotifyEvent::Artifact(..) | NotifyEvent::Message(_) => None,
    }
}

fn last_state(events: &[NotifyEvent]) -> Option<&'static str> {
    events.iter().rev().find_map(event_state)
}

fn notify_event(id: &str, ctx: &str, n: usize, e: &NotifyEvent) -> Value {
    match e {
        NotifyEvent::Task(state) => {
            json!({"task": {"id": id, "contextId": ctx, "status": {"state": state}}})
        }
        NotifyEvent::Status(state, text) => json!({"statusUpdate": {"taskId": id, "contextId": ctx,
            "status": {"state": state, "message": {"messageId": format!("{id}-s{n}"), "contextId": ctx,
                "taskId": id, "role": "ROLE_AGENT", "parts": [{"text": text}],
                "metadata": {"notification": text}}}}}),
        NotifyEvent::Artifact(text, append) => {
            json!({"artifactUpdate": {"taskId": id, "contextId": ctx,
            "append": append, "artifact": {"artifactId": format!("{id}-n"), "parts": [{"text": text}]}}})
        }
        NotifyEvent::Message(text) => json!({"message": {"messageId": format!("{id}-m{n}"),
            "contextId": ctx, "role": "ROLE_AGENT", "parts": [{"text": text}]}}),
    }
}

/// An SSE stream of notification events for task `id`.
fn notify_stream(
    req: &AgentRequest,
    id: &str,
    ctx: &str,
    events: &[NotifyEvent],
    gap: Duration,
    ending: StreamEnding,
) -> AgentReply {
    let chunks: Vec<Vec<u8>> = events
        .iter()
        .enumerate()
        .map(|(n, e)| {
            let ev = notify_event(id, ctx, n, e);
            let payload = if req.jsonrpc {
                json!({"jsonrpc": "2.0", "id": req.rpc_id, "result": ev})
            } else {
                ev
            };
            format!("data: {payload}\r\n\r\n").into_bytes()
        })
        .collect();
    let headers = vec![("content-type".into(), "text/event-stream".into())];
    match ending {
        StreamEnding::Drop => AgentReply::Cut {
            delay: Duration::ZERO,
            headers,
            chunks,
            chunk_gap: gap,
        },
        StreamEnding::End | StreamEnding::StayOpen => AgentReply::Http {
            delay: Duration::ZERO,
            status: 200,
            headers,
            chunks,
            chunk_gap: gap,
            end: ending == StreamEnding::End,
        },
    }
}

/// A request's headers as the scripted agent records them.
fn owned_headers(
    headers: &[(a2at_core::io::HeaderText, a2at_core::io::HeaderText)],
) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
}
