//! The demo's peers: small A2A v1.0 agents served in-process over real HTTP (hyper) on
//! 127.0.0.1, each on its own OS-chosen port.
//!
//! This file doubles as a picture of what a peer looks like on the wire. Every answer is
//! hand-written JSON (a2a-wire §1–§3, §8–§9):
//!
//! - JSON-RPC agents take `POST /a2a/jsonrpc` with `{"jsonrpc":"2.0","id",…,"method","params"}`
//!   and answer `{"jsonrpc":"2.0","id",…,"result":…}` (or `"error"`);
//! - HTTP+JSON agents take `POST /a2a/rest/message:send`, `POST /a2a/rest/message:stream`,
//!   `GET /a2a/rest/tasks/{id}` and `POST /a2a/rest/tasks/{id}:cancel`, with bare bodies;
//! - streaming answers are SSE: one `data:` line per StreamResponse (wrapped in a JSON-RPC
//!   response for JSON-RPC, bare for HTTP+JSON);
//! - every agent serves its card at `/.well-known/agent-card.json`.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2at_core::a2at::{NEGOTIATION_T_URI, TASK_T_URI};
use bytes::Bytes;
use futures::StreamExt;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpListener;

/// Which A2A binding an agent serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// JSON-RPC 2.0 at `<base>/a2a/jsonrpc`.
    JsonRpc,
    /// HTTP+JSON (REST) under `<base>/a2a/rest`.
    Rest,
}

impl Wire {
    /// The card's `protocolBinding`.
    pub fn binding(self) -> &'static str {
        match self {
            Wire::JsonRpc => "JSONRPC",
            Wire::Rest => "HTTP+JSON",
        }
    }
}

/// How an agent treats the tasks it is given.
#[derive(Debug, Clone)]
pub enum Behaviour {
    /// Completes at once: a report artifact with a text part and a data part (blocking send).
    Report {
        /// The text of the report.
        text: String,
        /// The structured finding.
        data: Value,
    },
    /// Streams the task over SSE: SUBMITTED, WORKING, artifact chunks, COMPLETED.
    Stream {
        /// The artifact's text chunks, sent `gap` apart.
        chunks: Vec<String>,
        /// Delay between events.
        gap: Duration,
    },
    /// Asks for consent with Negotiation-T: one Propose per round (INPUT_REQUIRED), and
    /// completes after the host accepted the last one.
    Negotiate {
        /// The proposal of each round, in order.
        proposals: Vec<String>,
        /// The report once every proposal was accepted.
        done: String,
    },
}

/// One demo agent.
#[derive(Debug, Clone)]
pub struct AgentSpec {
    /// The card name (the workflow's `agent`).
    pub name: &'static str,
    /// What it does, for its card.
    pub description: &'static str,
    /// Its binding.
    pub wire: Wire,
    /// Whether it declares the Task-T extension (Negotiation agents also declare Negotiation-T).
    pub task_t: bool,
    /// What it does with a task.
    pub behaviour: Behaviour,
}

impl AgentSpec {
    /// The card as the agent serves it, with its interface at `base`.
    pub fn card(&self, base: &str) -> Value {
        let url = match self.wire {
            Wire::JsonRpc => format!("{base}/a2a/jsonrpc"),
            Wire::Rest => format!("{base}/a2a/rest"),
        };
        let mut extensions = Vec::new();
        if self.task_t {
            extensions.push(json!({"uri": TASK_T_URI, "description": "Task-T"}));
        }
        if matches!(self.behaviour, Behaviour::Negotiate { .. }) {
            extensions.push(
                json!({"uri": NEGOTIATION_T_URI, "description": "Negotiation-T",
                                   "params": {"maxRounds": 3}}),
            );
        }
        json!({
            "name": self.name,
            "description": self.description,
            "version": "1.0.0",
            "supportedInterfaces": [
                {"url": url, "protocolBinding": self.wire.binding(), "protocolVersion": "1.0"}
            ],
            "capabilities": {
                "streaming": matches!(self.behaviour, Behaviour::Stream { .. }),
                "extensions": extensions
            },
            "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["text/plain", "application/json"],
            "skills": [{"id": self.name, "name": self.name, "description": self.description,
                        "tags": ["spn", "demo"]}]
        })
    }
}

/// A running agent. The server stops with the tokio runtime.
#[derive(Debug)]
pub struct RunningAgent {
    /// The spec it runs.
    pub spec: AgentSpec,
    /// `http://127.0.0.1:<port>`; the card is at `<base>/.well-known/agent-card.json`.
    pub base: String,
}

/// Binds 127.0.0.1 on a free port and serves `spec` until the runtime shuts down.
pub async fn start(spec: AgentSpec) -> std::io::Result<RunningAgent> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    let base = format!("http://127.0.0.1:{port}");
    let agent = Arc::new(Agent {
        spec: spec.clone(),
        card: spec.card(&base),
        state: Mutex::new(State {
            prefix: u32::from(port),
            ..State::default()
        }),
    });
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let agent = agent.clone();
            tokio::spawn(async move {
                let service = service_fn(move |req| serve(agent.clone(), req));
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    Ok(RunningAgent { spec, base })
}

type Body = UnsyncBoxBody<Bytes, Infallible>;

struct Agent {
    spec: AgentSpec,
    card: Value,
    state: Mutex<State>,
}

/// The agent's task table.
#[derive(Default)]
struct State {
    /// Makes the agent's ids unique across agents (the port).
    prefix: u32,
    /// Ids handed out so far.
    next_id: u64,
    /// Every task, as its latest JSON snapshot.
    tasks: HashMap<String, Value>,
    /// Negotiating tasks: negotiation id and the round awaiting an answer.
    negotiations: HashMap<String, (String, u32)>,
}

impl State {
    /// A UUID-shaped id (Negotiation-T ids must look like UUIDs).
    fn id(&mut self) -> String {
        self.next_id += 1;
        format!("{:08x}-0000-4000-8000-{:012x}", self.prefix, self.next_id)
    }
}

/// What a handler answers, before the binding's framing.
enum Answer {
    /// One JSON result.
    One(Value),
    /// SSE events (StreamResponse objects), `gap` apart.
    Stream(Vec<Value>, Duration),
    /// An A2A error: ErrorInfo reason, JSON-RPC code, HTTP status, message.
    Error(&'static str, i64, StatusCode, String),
}

async fn serve(agent: Arc<Agent>, req: Request<Incoming>) -> Result<Response<Body>, Infallible> {
    let method = req.method().clone();
    let path = req.uri().path().to_owned();
    if method == Method::GET && path == "/.well-known/agent-card.json" {
        return Ok(json_response(StatusCode::OK, &agent.card));
    }
    let version_ok = req
        .headers()
        .get("A2A-Version")
        .is_some_and(|v| v.as_bytes() == b"1.0");
    let body = match req.into_body().collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => Bytes::new(),
    };
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);

    // Decode the call: (A2A method, params, JSON-RPC id).
    let (call, params, rpc_id) = match agent.spec.wire {
        Wire::JsonRpc if path == "/a2a/jsonrpc" && method == Method::POST => (
            body["method"].as_str().unwrap_or("").to_owned(),
            body["params"].clone(),
            Some(body["id"].clone()),
        ),
        Wire::Rest => {
            let route = path.strip_prefix("/a2a/rest").unwrap_or("");
            let task = route.strip_prefix("/tasks/").unwrap_or("");
            let (call, id) = match (&method, route) {
                (&Method::POST, "/message:send") => ("SendMessage", None),
                (&Method::POST, "/message:stream") => ("SendStreamingMessage", None),
                (&Method::POST, _) if task.ends_with(":cancel") => {
                    ("CancelTask", task.strip_suffix(":cancel"))
                }
                (&Method::GET, _) if !task.is_empty() => ("GetTask", Some(task)),
                _ => return Ok(text_response(StatusCode::NOT_FOUND, "Not Found")),
            };
            let mut params = if body.is_object() { body } else { json!({}) };
            if let Some(id) = id {
                params["id"] = json!(id);
            }
            (call.to_owned(), params, None)
        }
        _ => return Ok(text_response(StatusCode::NOT_FOUND, "Not Found")),
    };

    let answer = if version_ok {
        agent.answer(&call, &params)
    } else {
        Answer::Error(
            "VERSION_NOT_SUPPORTED",
            -32009,
            StatusCode::BAD_REQUEST,
            "A2A version 1.0 is required".into(),
        )
    };
    Ok(frame(agent.spec.wire, rpc_id, answer))
}

impl Agent {
    fn answer(&self, call: &str, params: &Value) -> Answer {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        match call {
            "SendMessage" | "SendStreamingMessage" => self.send(
                &mut state,
                &params["message"],
                call == "SendStreamingMessage",
            ),
            "GetTask" => match state.tasks.get(params["id"].as_str().unwrap_or("")) {
                Some(task) => Answer::One(task.clone()),
                None => not_found(params),
            },
            "CancelTask" => {
                let Some(task) = state.tasks.get_mut(params["id"].as_str().unwrap_or("")) else {
                    return not_found(params);
                };
                let s = task["status"]["state"].as_str().unwrap_or("");
                if matches!(
                    s,
                    "TASK_STATE_COMPLETED"
                        | "TASK_STATE_FAILED"
                        | "TASK_STATE_CANCELED"
                        | "TASK_STATE_REJECTED"
                ) {
                    return Answer::Error(
                        "TASK_NOT_CANCELABLE",
                        -32002,
                        StatusCode::BAD_REQUEST,
                        "Task cannot be canceled".into(),
                    );
                }
                task["status"] = json!({"state": "TASK_STATE_CANCELED"});
                Answer::One(task.clone())
            }
            _ => Answer::Error(
                "METHOD_NOT_FOUND",
                -32601,
                StatusCode::NOT_FOUND,
                "Method not found".into(),
            ),
        }
    }

    fn send(&self, state: &mut State, message: &Value, streaming: bool) -> Answer {
        let context = message["contextId"]
            .as_str()
            .map(str::to_owned)
            .unwrap_or_else(|| state.id());
        // A message with a `taskId` continues a task: here, a negotiation reply.
        if let Some(task_id) = message["taskId"].as_str() {
            if !state.tasks.contains_key(task_id) {
                return not_found(&json!({"id": task_id}));
            }
            return self.continue_negotiation(state, task_id, message);
        }
        let id = state.id();
        let task = match &self.spec.behaviour {
            Behaviour::Report { text, data } => task(
                &id,
                &context,
                status("TASK_STATE_COMPLETED", None),
                vec![self.artifact(state, "diagnosis report", text, Some(data))],
            ),
            Behaviour::Stream { chunks, gap } => {
                let artifact_id = state.id();
                let done = task(
                    &id,
                    &context,
                    status("TASK_STATE_COMPLETED", None),
                    vec![json!({"artifactId": artifact_id, "name": "telemetry",
                                "parts": chunks.iter().map(|c| json!({"text": c})).collect::<Vec<_>>()})],
                );
                state.tasks.insert(id.clone(), done.clone());
                if !streaming {
                    return Answer::One(json!({"task": done}));
                }
                let mut events = vec![
                    json!({"task": task(&id, &context, status("TASK_STATE_SUBMITTED", None), vec![])}),
                    json!({"statusUpdate": {"taskId": id, "contextId": context,
                                            "status": status("TASK_STATE_WORKING", None)}}),
                ];
                for (i, chunk) in chunks.iter().enumerate() {
                    events.push(json!({"artifactUpdate": {
                        "taskId": id, "contextId": context,
                        "artifact": {"artifactId": artifact_id, "name": "telemetry",
                                     "parts": [{"text": chunk}]},
                        "append": i > 0, "lastChunk": i + 1 == chunks.len()}}));
                }
                events.push(json!({"statusUpdate": {"taskId": id, "contextId": context,
                                                    "status": status("TASK_STATE_COMPLETED", None)}}));
                return Answer::Stream(events, *gap);
            }
            Behaviour::Negotiate { .. } => {
                let activated = message["extensions"]
                    .as_array()
                    .is_some_and(|e| e.iter().any(|u| u == NEGOTIATION_T_URI));
                if activated {
                    let negotiation = state.id();
                    state.negotiations.insert(id.clone(), (negotiation, 1));
                    self.propose(state, &id, &context)
                } else {
                    let reason = self.agent_message(
                        state,
                        &id,
                        &context,
                        "This change needs consent: activate Negotiation-T",
                        None,
                    );
                    task(
                        &id,
                        &context,
                        status("TASK_STATE_REJECTED", Some(reason)),
                        vec![],
                    )
                }
            }
        };
        state.tasks.insert(id, task.clone());
        Answer::One(json!({"task": task}))
    }

    /// INPUT_REQUIRED with a Propose for the current round (a2a-wire §8.4, §9 step 2).
    fn propose(&self, state: &mut State, id: &str, context: &str) -> Value {
        let Behaviour::Negotiate { proposals, .. } = &self.spec.behaviour else {
            unreachable!("only negotiating agents propose")
        };
        let (negotiation, round) = state.negotiations[id].clone();
        let text = &proposals[round as usize - 1];
        let metadata = json!({
            NEGOTIATION_T_URI: text,
            "templateUri": "Negotiation-T/target-negotiation/propose/v1",
            "negotiationContext": {"id": negotiation, "round": round, "maxRounds": 3,
                                   "performative": "PROPOSE"}
        });
        let message = self.agent_message(state, id, context, text, Some(metadata));
        task(
            id,
            context,
            status("TASK_STATE_INPUT_REQUIRED", Some(message)),
            vec![],
        )
    }

    /// Reads the host's reply to the Propose of the current round (§9 step 3): ACCEPT moves to
    /// the next round or completes (§9 step 4); REJECT fails, ABORT cancels.
    fn continue_negotiation(&self, state: &mut State, id: &str, message: &Value) -> Answer {
        let context = state.tasks[id]["contextId"]
            .as_str()
            .unwrap_or("")
            .to_owned();
        let Some((negotiation, round)) = state.negotiations.get(id).cloned() else {
            return Answer::Error(
                "UNSUPPORTED_OPERATION",
                -32004,
                StatusCode::BAD_REQUEST,
                format!("Task {id} is not waiting for input"),
            );
        };
        let reply = &message["metadata"]["negotiationContext"];
        let matches = reply["id"] == json!(negotiation) && reply["round"] == json!(round);
        let (state_name, note) = match reply["performative"].as_str() {
            _ if !matches => (
                "TASK_STATE_FAILED",
                "negotiation id or round does not match",
            ),
            Some("ACCEPT") => ("", ""),
            Some("REJECT") => ("TASK_STATE_FAILED", "the proposal was rejected"),
            Some("ABORT") => ("TASK_STATE_CANCELED", "the negotiation was aborted"),
            _ => ("TASK_STATE_FAILED", "not a Negotiation-T reply"),
        };
        let Behaviour::Negotiate { proposals, done } = &self.spec.behaviour else {
            unreachable!("only negotiating agents keep negotiations")
        };
        let task = if !state_name.is_empty() {
            state.negotiations.remove(id);
            let note = self.agent_message(state, id, &context, note, None);
            task(id, &context, status(state_name, Some(note)), vec![])
        } else if (round as usize) < proposals.len() {
            state
                .negotiations
                .insert(id.to_owned(), (negotiation, round + 1));
            self.propose(state, id, &context)
        } else {
            state.negotiations.remove(id);
            let report = self.artifact(state, "remediation report", done, None);
            task(
                id,
                &context,
                status("TASK_STATE_COMPLETED", None),
                vec![report],
            )
        };
        state.tasks.insert(id.to_owned(), task.clone());
        Answer::One(json!({"task": task}))
    }

    /// An agent message (status message) in the task's context.
    fn agent_message(
        &self,
        state: &mut State,
        task_id: &str,
        context: &str,
        text: &str,
        metadata: Option<Value>,
    ) -> Value {
        let mut m = json!({"messageId": state.id(), "contextId": context, "taskId": task_id,
                           "role": "ROLE_AGENT", "parts": [{"text": text}]});
        if let Some(metadata) = metadata {
            m["extensions"] = json!([NEGOTIATION_T_URI]);
            m["metadata"] = metadata;
        }
        m
    }

    /// A result artifact; Task-T agents also put the result text in its Task-T metadata key.
    fn artifact(&self, state: &mut State, name: &str, text: &str, data: Option<&Value>) -> Value {
        let mut parts = vec![json!({"text": text})];
        if let Some(data) = data {
            parts.push(json!({"data": data, "mediaType": "application/json"}));
        }
        let mut a = json!({"artifactId": state.id(), "name": name, "parts": parts});
        if self.spec.task_t {
            a["metadata"] = json!({TASK_T_URI: text});
        }
        a
    }
}

fn task(id: &str, context: &str, status: Value, artifacts: Vec<Value>) -> Value {
    let mut t = json!({"id": id, "contextId": context, "status": status});
    if !artifacts.is_empty() {
        t["artifacts"] = Value::Array(artifacts);
    }
    t
}

fn status(state: &str, message: Option<Value>) -> Value {
    let mut s = json!({"state": state});
    if let Some(m) = message {
        s["message"] = m;
    }
    s
}

fn not_found(params: &Value) -> Answer {
    Answer::Error(
        "TASK_NOT_FOUND",
        -32001,
        StatusCode::NOT_FOUND,
        format!("Task {} not found", params["id"].as_str().unwrap_or("?")),
    )
}

/// Frames an answer for the binding: JSON-RPC envelopes or bare REST bodies, SSE for streams.
fn frame(wire: Wire, rpc_id: Option<Value>, answer: Answer) -> Response<Body> {
    let wrap = |result: Value| match (&wire, &rpc_id) {
        (Wire::JsonRpc, Some(id)) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        _ => result,
    };
    match answer {
        Answer::One(result) => json_response(StatusCode::OK, &wrap(result)),
        Answer::Stream(events, gap) => {
            let frames: Vec<Bytes> = events
                .into_iter()
                .map(|e| Bytes::from(format!("data: {}\n\n", wrap(e))))
                .collect();
            let stream = futures::stream::iter(frames)
                .enumerate()
                .then(move |(i, b)| async move {
                    if i > 0 {
                        tokio::time::sleep(gap).await;
                    }
                    Ok::<_, Infallible>(Frame::data(b))
                });
            Response::builder()
                .header("Content-Type", "text/event-stream; charset=utf-8")
                .header("Cache-Control", "no-store")
                .body(BodyExt::boxed_unsync(StreamBody::new(stream)))
                .expect("valid SSE response")
        }
        Answer::Error(reason, code, http_status, message) => {
            let info = json!({"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                              "reason": reason, "domain": "a2a-protocol.org", "metadata": {}});
            match (wire, rpc_id) {
                // JSON-RPC errors travel with HTTP 200; A2A errors carry the ErrorInfo in `data`.
                (Wire::JsonRpc, Some(id)) => {
                    let mut error = json!({"code": code, "message": message});
                    if code != -32601 {
                        error["data"] = json!([info]);
                    }
                    json_response(
                        StatusCode::OK,
                        &json!({"jsonrpc": "2.0", "id": id, "error": error}),
                    )
                }
                _ => json_response(
                    http_status,
                    &json!({"error": {"code": http_status.as_u16(),
                                      "status": if http_status == StatusCode::NOT_FOUND { "NOT_FOUND" } else { "FAILED_PRECONDITION" },
                                      "message": message, "details": [info]}}),
                ),
            }
        }
    }
}

fn json_response(status: StatusCode, body: &Value) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("Content-Type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())).boxed_unsync())
        .expect("valid JSON response")
}

fn text_response(status: StatusCode, text: &'static str) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("Content-Type", "text/plain")
        .body(Full::new(Bytes::from_static(text.as_bytes())).boxed_unsync())
        .expect("valid text response")
}
