//! Scripted A2A agents that read and write real protocol bytes (JSON-RPC or HTTP+JSON, unary or
//! SSE), keep their own task table, and follow a plan per task.

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
    /// Request headers.
    pub headers: Vec<(String, String)>,
    /// Request URL.
    pub url: String,
}

impl AgentRequest {
    /// Decodes the engine's request bytes.
    pub fn decode(req: &HttpRequest) -> AgentRequest {
        let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
        let (method, params, rpc_id, jsonrpc) = if body.get("jsonrpc").is_some() {
            (
                body.get("method")
                    .and_then(Value::as_str)
                    .unwrap_or("?")
                    .to_owned(),
                body.get("params").cloned().unwrap_or(Value::Null),
                body.get("id").cloned(),
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
            } else if path.contains("/tasks/") {
                ("GetTask", Some(last))
            } else {
                ("?", None)
            };
            let mut params = if body.is_object() { body } else { json!({}) };
            if let Some(id) = id {
                params["id"] = Value::String(id.to_owned());
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
            headers: req.headers.clone(),
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
    /// Answer after a delay.
    Delayed(Duration, Box<Plan>),
    /// Never answer.
    Hang,
    /// Fail at the transport level.
    Unreachable,
    /// Close the stream / body without any event.
    Empty,
    /// Negotiate: INPUT_REQUIRED with a Propose for rounds `1..=rounds` (one per host reply),
    /// then COMPLETED after the last ACCEPT. `max_rounds` is the context's limit.
    Negotiate {
        /// Propose rounds before completing.
        rounds: u32,
        /// The context's maxRounds.
        max_rounds: u32,
        /// Whether to answer replies with WORKING first (an ACK observed by polling).
        ack_first: bool,
    },
}

#[derive(Debug, Clone)]
struct TaskRecord {
    context_id: String,
    plan: Plan,
    step: usize,
    state: &'static str,
    text: String,
    negotiation_id: String,
    round: u32,
}

/// A scripted agent with its own task table.
#[derive(Debug, Clone)]
pub struct ScriptedAgent {
    /// The agent (card) name.
    pub name: String,
    /// Whether it answers sends with SSE streams.
    pub streaming: bool,
    /// Whether it speaks JSON-RPC (else HTTP+JSON).
    pub jsonrpc: bool,
    plans: VecDeque<Plan>,
    default_plan: Plan,
    tasks: BTreeMap<String, TaskRecord>,
    next_task: u64,
    /// Ids of tasks that received a `CancelTask`.
    pub cancelled: Vec<String>,
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
            plans: VecDeque::new(),
            default_plan: Plan::States(vec!["TASK_STATE_COMPLETED"]),
            tasks: BTreeMap::new(),
            next_task: 0,
            cancelled: Vec::new(),
        }
    }

    /// Speak HTTP+JSON instead of JSON-RPC.
    pub fn rest(mut self) -> Self {
        self.jsonrpc = false;
        self
    }

    /// Answer sends with SSE streams.
    pub fn streaming(mut self) -> Self {
        self.streaming = true;
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
        let (url, binding) = if self.jsonrpc {
            (format!("{base_url}/a2a/jsonrpc"), "JSONRPC")
        } else {
            (format!("{base_url}/a2a/rest"), "HTTP+JSON")
        };
        json!({
            "name": self.name,
            "description": format!("scripted agent {}", self.name),
            "version": "1.0.0",
            "supportedInterfaces": [{"url": url, "protocolBinding": binding, "protocolVersion": "1.0"}],
            "capabilities": {
                "streaming": self.streaming,
                "extensions": [
                    {"uri": "https://projects.tmforum.org/a2aproject/telecommunication/extensions/Task-T/v1"},
                    {"uri": NEGOTIATION_T}
                ]
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

    /// Answers one request.
    pub fn handle(&mut self, req: &AgentRequest) -> AgentReply {
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
                advance(task);
                let body = task_json(&id, task);
                self.respond(req, body, false)
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
                let body = task_json(&id, task);
                self.respond(req, body, false)
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
                with_delay(self.respond(req, json!({"message": msg}), true), delay)
            }
            plan @ (Plan::States(_) | Plan::Negotiate { .. }) => {
                self.next_task += 1;
                let id = format!("{}-t{}", self.name, self.next_task);
                let mut record = TaskRecord {
                    context_id,
                    plan,
                    step: 0,
                    state: "TASK_STATE_SUBMITTED",
                    text,
                    negotiation_id: format!("3f6c1e2a-9b7d-4c1e-8a2f-{:012}", self.next_task),
                    round: 0,
                };
                advance(&mut record);
                let body = json!({"task": task_json(&id, &record)});
                self.tasks.insert(id, record);
                with_delay(self.respond(req, body, true), delay)
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
        if let Plan::Negotiate {
            rounds, ack_first, ..
        } = task.plan.clone()
        {
            match performative {
                "ACCEPT" if task.round < rounds => {
                    task.state = if ack_first {
                        "TASK_STATE_WORKING"
                    } else {
                        "TASK_STATE_INPUT_REQUIRED"
                    };
                    if !ack_first {
                        task.round += 1;
                    }
                    task.step = usize::MAX;
                }
                "ACCEPT" => {
                    task.state = if ack_first {
                        "TASK_STATE_WORKING"
                    } else {
                        "TASK_STATE_COMPLETED"
                    };
                    task.step = usize::MAX - 1;
                }
                "ABORT" => {
                    task.state = "TASK_STATE_COMPLETED";
                }
                _ => task.state = "TASK_STATE_REJECTED",
            }
        }
        let body = json!({"task": task_json(&task_id, task)});
        self.respond(req, body, true)
    }

    /// Builds a success response in the agent's binding; `wrapped` results are SendMessage-style
    /// (`{"task":…}`), others are bare (GetTask/CancelTask).
    fn respond(&self, req: &AgentRequest, result: Value, send_like: bool) -> AgentReply {
        let streaming = req.method == "SendStreamingMessage" && send_like;
        if streaming {
            let events = stream_events(&result);
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
        let body = if req.jsonrpc {
            json!({"jsonrpc": "2.0", "id": req.rpc_id, "result": result})
        } else {
            result
        };
        json_reply(200, &body)
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
        other => other,
    }
}

fn json_reply(status: u16, body: &Value) -> AgentReply {
    AgentReply::Http {
        delay: Duration::ZERO,
        status,
        headers: vec![("content-type".into(), "application/json".into())],
        chunks: vec![serde_json::to_vec(body).expect("json")],
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

/// Moves a task to its next planned state (one observation).
fn advance(task: &mut TaskRecord) {
    if is_terminal(task.state) {
        return;
    }
    match &task.plan {
        Plan::States(states) => {
            let i = task.step.min(states.len().saturating_sub(1));
            task.state = states.get(i).copied().unwrap_or("TASK_STATE_COMPLETED");
            task.step += 1;
        }
        Plan::Negotiate { rounds, .. } => match task.step {
            0 => {
                task.round = 1;
                task.state = "TASK_STATE_INPUT_REQUIRED";
                task.step = 1;
            }
            // An ACK that becomes the next Propose (or completion) on the next observation.
            usize::MAX if task.state == "TASK_STATE_WORKING" => {
                task.round += 1;
                task.state = "TASK_STATE_INPUT_REQUIRED";
            }
            s if s == usize::MAX - 1 && task.state == "TASK_STATE_WORKING" => {
                task.state = "TASK_STATE_COMPLETED";
            }
            _ => {
                let _ = rounds;
            }
        },
        _ => {}
    }
}

fn task_json(id: &str, task: &TaskRecord) -> Value {
    let mut status = json!({"state": task.state, "timestamp": "2026-12-02T10:39:06.479244Z"});
    if task.state == "TASK_STATE_INPUT_REQUIRED" {
        if let Plan::Negotiate { max_rounds, .. } = task.plan {
            status["message"] = json!({
                "messageId": format!("{id}-propose-{}", task.round),
                "contextId": task.context_id,
                "taskId": id,
                "role": "ROLE_AGENT",
                "parts": [{"text": format!("Please provide the site list (round {})", task.round)}],
                "extensions": [NEGOTIATION_T],
                "metadata": {
                    NEGOTIATION_T: "## Information negotiation\nPlease provide the site list.",
                    "templateUri": "Negotiation-T/information-negotiation/propose/v1",
                    "negotiationContext": {
                        "id": task.negotiation_id,
                        "round": f64::from(task.round),
                        "maxRounds": f64::from(max_rounds),
                        "performative": "PROPOSE"
                    }
                }
            });
        }
    }
    let mut task_value = json!({"id": id, "contextId": task.context_id, "status": status});
    if task.state == "TASK_STATE_COMPLETED" {
        task_value["artifacts"] = json!([{
            "artifactId": format!("{id}-a1"),
            "name": "result",
            "parts": [{"text": format!("done: {}", task.text)}]
        }]);
    }
    task_value
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
