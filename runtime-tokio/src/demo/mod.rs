//! `a2at demo`: runs the bundled workflow against in-process A2A agents and narrates it.
//!
//! Four agents start on 127.0.0.1 (see [`agents`]): two diagnosis agents (one JSON-RPC, one
//! HTTP+JSON), a telemetry agent that streams over SSE, and a tunnel optimiser that asks for
//! consent twice with Negotiation-T. A scripted host (a [`ControlPointBuilder`]) writes Task-T
//! content, aggregates and reports locally (SELF_LOOP), decides the conditional routes and
//! accepts each proposal. The event stream is printed as it happens, then the result.

mod agents;

use std::collections::HashMap;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use a2at_core::a2a::AgentCard;
use a2at_core::a2at::{NEGOTIATION_T_URI, Performative, TASK_T_URI};
use a2at_core::event::EventType;
use a2at_core::host::{
    HostError, MessageContent, NegotiationReply, RouteDecision, TaskExecutionResult, TaskRequest,
    TaskResult,
};
use a2at_core::result::{ExecutionResult, StepStatus};
use a2at_core::workflow::parse_and_validate;
use a2at_tokio::{BuiltControlPoint, ControlPointBuilder, Engine, EventEnvelope};
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::{Value, json};

use agents::{AgentSpec, Behaviour, RunningAgent, Wire};

/// `println!` that ignores a closed stdout (e.g. `a2at demo | head`) instead of panicking.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

/// The bundled workflow: fan-out, a SELF_LOOP aggregation, conditional routes, a negotiation.
const WORKFLOW: &str = include_str!("workflow.json");

/// Runs the demo; exit code 0 when the workflow succeeded, 1 otherwise. With `reject`, the host
/// rejects the second proposal, so the run fails (exit code 1).
pub fn run(reject: bool) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("a2at demo: cannot start the tokio runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let outcome = runtime.block_on(demo(reject));
    // The agents' servers stop with the runtime.
    runtime.shutdown_timeout(Duration::from_millis(100));
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("a2at demo: {e}");
            ExitCode::from(1)
        }
    }
}

fn specs() -> Vec<AgentSpec> {
    vec![
        AgentSpec {
            name: "spn_city1",
            description: "SPN domain agent, city 1: private-line fault diagnosis",
            wire: Wire::JsonRpc,
            task_t: true,
            behaviour: Behaviour::Report {
                text: "city 1: tunnel T-17 latency 38 ms (SLA 10 ms), optical power normal".into(),
                data: json!({"city": "city1", "fault": "tunnel", "tunnel": "T-17", "latencyMs": 38}),
            },
        },
        AgentSpec {
            name: "spn_city2",
            description: "SPN domain agent, city 2: private-line fault diagnosis",
            wire: Wire::Rest,
            task_t: true,
            behaviour: Behaviour::Report {
                text: "city 2: all ports up, tunnel T-17 packet loss 2.1 %".into(),
                data: json!({"city": "city2", "fault": "tunnel", "tunnel": "T-17", "lossPct": 2.1}),
            },
        },
        AgentSpec {
            name: "perf_monitor",
            description: "Performance monitor: streams live tunnel telemetry",
            wire: Wire::Rest,
            task_t: false,
            behaviour: Behaviour::Stream {
                chunks: vec![
                    "T-17 t+0s: 37 ms, loss 2.0 %".into(),
                    "t+1s: 39 ms, loss 2.2 %".into(),
                    "t+2s: 38 ms, loss 2.1 %".into(),
                ],
                gap: Duration::from_millis(15),
            },
        },
        AgentSpec {
            name: "tunnel_optimizer",
            description: "Tunnel optimiser: moves tunnels after the requester's consent",
            wire: Wire::JsonRpc,
            task_t: true,
            behaviour: Behaviour::Negotiate {
                proposals: vec![
                    "## Target negotiation\nMove tunnel T-17 to its backup path in the \
                     02:00-04:00 maintenance window?"
                        .into(),
                    "## Target negotiation\nDuring the switchover the guaranteed bandwidth \
                     drops to 8 Mbps for about 5 minutes. Acceptable?"
                        .into(),
                ],
                done: "T-17 moved to its backup path; latency 6 ms, loss 0 %".into(),
            },
        },
    ]
}

async fn demo(reject: bool) -> Result<bool, String> {
    let started = Instant::now();
    let mut running: Vec<RunningAgent> = Vec::new();
    for spec in specs() {
        let agent = agents::start(spec)
            .await
            .map_err(|e| format!("cannot start a demo agent: {e}"))?;
        running.push(agent);
    }
    say!(
        "a2at demo: {} A2A agents serving on 127.0.0.1 (in-process, real HTTP); cards discovered \
         at /.well-known/agent-card.json",
        running.len()
    );
    let client = Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();
    let mut cards = Vec::new();
    for a in &running {
        let card = fetch_card(&client, &a.base).await?;
        let interface = &card["supportedInterfaces"][0];
        let mut traits = vec![if card["capabilities"]["streaming"] == json!(true) {
            "SSE streaming"
        } else {
            "blocking"
        }];
        for e in card["capabilities"]["extensions"]
            .as_array()
            .into_iter()
            .flatten()
        {
            traits.extend(e["description"].as_str());
        }
        say!(
            "  {:<17} {:<10} {}  ({})",
            a.spec.name,
            interface["protocolBinding"].as_str().unwrap_or("?"),
            interface["url"].as_str().unwrap_or("?"),
            traits.join(", ")
        );
        cards.push(AgentCard::from_json_value(&card).map_err(|e| format!("demo card: {e}"))?);
    }

    let workflow = parse_and_validate(WORKFLOW).map_err(|e| format!("bundled workflow: {e}"))?;
    say!(
        "workflow: {} ({} steps)\n",
        workflow.workflow().name,
        workflow.len()
    );
    let declared = |uri: &str| -> Vec<String> {
        cards
            .iter()
            .filter(|c| c.declares_extension(uri))
            .map(|c| c.name.clone())
            .collect()
    };
    let host = host(declared(TASK_T_URI), declared(NEGOTIATION_T_URI), reject);
    let engine = Engine::builder(cards)
        .task_budget(Duration::from_secs(10))
        .callback_budget(Duration::from_secs(5))
        .build()
        .map_err(|e| format!("engine: {e}"))?;

    let t0 = Instant::now();
    let narrator = Arc::new(Mutex::new(Narrator::default()));
    let result = engine
        .run(workflow, Arc::new(host))
        .event_sink(move |e| {
            let mut n = narrator.lock().unwrap_or_else(|e| e.into_inner());
            n.print(t0.elapsed(), e);
        })
        .execute()
        .await;
    let run_time = t0.elapsed();
    summary(&result, run_time, started.elapsed(), &engine);
    Ok(result.success)
}

/// GETs an agent's card (a2a-wire §6).
async fn fetch_card(
    client: &Client<HttpConnector, Empty<Bytes>>,
    base: &str,
) -> Result<Value, String> {
    let url = format!("{base}/.well-known/agent-card.json");
    let uri: hyper::Uri = url.parse().map_err(|e| format!("{url}: {e}"))?;
    let response = client.get(uri).await.map_err(|e| format!("{url}: {e}"))?;
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| format!("{url}: {e}"))?
        .to_bytes();
    serde_json::from_slice(&body).map_err(|e| format!("{url}: {e}"))
}

/// The scripted host: content, local steps, routes and consent (`reject`: refuse round 2).
/// `task_t` and `negotiation_t` name the agents whose cards declare those extensions.
fn host(task_t: Vec<String>, negotiation_t: Vec<String>, reject: bool) -> BuiltControlPoint {
    ControlPointBuilder::new()
        .on_task(move |req: TaskRequest| {
            let content = task_content(
                &req,
                task_t.contains(&req.agent_name),
                negotiation_t.contains(&req.agent_name),
            );
            async move { Ok(content) }
        })
        .on_self_task(|req: TaskRequest| async move { Ok(self_task(&req)) })
        .on_route(|req| async move {
            let fault = req
                .current_results
                .iter()
                .flat_map(|r| &r.outputs)
                .find_map(|o| o.get("fault").and_then(Value::as_str))
                .unwrap_or("none")
                .to_owned();
            let c = req.condition.to_lowercase();
            let wanted = if c.contains("tunnel") {
                "tunnel"
            } else if c.contains("fibre") {
                "fibre_cut"
            } else {
                "none"
            };
            let reason = Some(format!("aggregate found fault={fault}"));
            Ok(if fault == wanted {
                RouteDecision::allow(reason)
            } else {
                RouteDecision::deny(reason)
            })
        })
        .on_negotiation(move |req| async move {
            let round = req.context().map(|c| c.round).unwrap_or(0);
            let (performative, text) = if reject && round == 2 {
                (
                    Performative::Reject,
                    "## Conclusion\nReject\n## Reason\n- 8 Mbps is below the contracted 10 Mbps"
                        .to_owned(),
                )
            } else {
                (
                    Performative::Accept,
                    format!("## Conclusion\nAccept\n## Details\n- approved by the demo host in round {round}"),
                )
            };
            let content = req
                .reply(performative, &text)
                .map_err(|e| HostError::business("demo.negotiation", e.to_string()))?;
            Ok(NegotiationReply::Send { content })
        })
        .build()
}

/// Task content: plain text, plus Task-T (metadata key + template + activation) for agents that
/// declare it; activating Negotiation-T allows the agent to ask for consent (a2a-wire §8.4).
fn task_content(req: &TaskRequest, task_t: bool, negotiation_t: bool) -> MessageContent {
    let mut content = MessageContent::text(req.instruction.clone());
    if task_t {
        let prompt = format!(
            "## Task Type\n{}\n## Instruction\n{}\n## Private line\nPL-0042 (tunnel T-17)",
            req.skill, req.instruction
        );
        content = content
            .with_extension(TASK_T_URI)
            .with_metadata(TASK_T_URI, Value::String(prompt))
            .with_metadata(
                "templateUri",
                json!("Task-T/network-layer/private-line-complaint/v1"),
            );
    }
    if negotiation_t {
        content = content.with_extension(NEGOTIATION_T_URI);
    }
    content
}

/// SELF_LOOP steps: `aggregate` merges the diagnoses, `report` summarises every upstream step.
fn self_task(req: &TaskRequest) -> TaskResult {
    let results: Vec<&TaskExecutionResult> = req
        .workflow_input
        .upstream_results
        .iter()
        .flat_map(|s| &s.task_results)
        .collect();
    match req.step_name.as_str() {
        "aggregate" => {
            let faults: Vec<&str> = results
                .iter()
                .flat_map(|r| &r.outputs)
                .filter_map(|o| o.get("fault").and_then(Value::as_str))
                .collect();
            let fault = if faults.is_empty() {
                "none"
            } else if faults.iter().all(|f| *f == faults[0]) {
                faults[0]
            } else {
                "mixed"
            };
            TaskResult::success(vec![json!({
                "fault": fault,
                "summary": format!("{} diagnoses found: {fault} fault on T-17", faults.len()),
                "evidence": results.len(),
            })])
        }
        _ => {
            let mut report = String::from("PL-0042 report:");
            for r in &results {
                let first = r.outputs.iter().find_map(|o| {
                    o.as_str()
                        .or_else(|| o.get("summary").and_then(Value::as_str))
                        .map(str::to_owned)
                });
                report.push_str(&format!(
                    "\n- {} ({}): {}",
                    r.step_name,
                    r.agent_name,
                    first.unwrap_or_default()
                ));
            }
            TaskResult::success(vec![Value::String(report)])
        }
    }
}

/// Prints events as they happen.
#[derive(Default)]
struct Narrator {
    /// Step name → step type, to tell local (SELF_LOOP) tasks from remote ones.
    step_types: HashMap<String, String>,
    /// Agent → its latest dispatched `step#index`, for stream events that only name the agent.
    current: HashMap<String, String>,
    /// Agent → the text of its latest Propose.
    proposals: HashMap<String, String>,
}

impl Narrator {
    fn print(&mut self, at: Duration, e: &EventEnvelope) {
        let d = &e.data;
        let s = |k: &str| d[k].as_str().unwrap_or("?").to_owned();
        let task = || format!("{}#{}", s("step"), d["subtask_index"]);
        let line = match e.kind {
            EventType::StepStart => {
                self.step_types.insert(s("step"), s("step_type"));
                format!("step {} started ({})", s("step"), s("step_type"))
            }
            EventType::TaskRequest if self.is_self_loop(&s("step")) => {
                format!("  task {} → host (on_self_task)", task())
            }
            EventType::TaskRequest => {
                self.current.insert(s("agent"), task());
                format!("  task {} → {} sent", task(), s("agent"))
            }
            EventType::AgentStatusUpdate => {
                let state = s("state");
                if state == "TASK_STATE_INPUT_REQUIRED" {
                    let text = message_text(&d["message"]);
                    self.proposals.insert(s("agent"), text);
                }
                if d["snapshot"] != json!(false) {
                    return;
                }
                format!(
                    "    {} ← {} {}",
                    self.task_of(&s("agent")),
                    s("agent"),
                    state.trim_start_matches("TASK_STATE_")
                )
            }
            EventType::AgentArtifactUpdate => format!(
                "    {} ← {} streamed chunk {:?}{}",
                self.task_of(&s("agent")),
                s("agent"),
                d["artifact"]["parts"][0]["text"].as_str().unwrap_or(""),
                if d["last_chunk"] == json!(true) {
                    " (last)"
                } else {
                    ""
                }
            ),
            EventType::NegotiationRequest => format!(
                "  negotiation round {} of max {} with {}: proposal {:?}",
                d["round"],
                d["maxRounds"],
                s("agent"),
                self.proposals.get(&s("agent")).map_or("", String::as_str)
            ),
            EventType::NegotiationResolved => {
                let verdict = match s("performative").as_str() {
                    "ACCEPT" => "accepted".to_owned(),
                    "REJECT" => "rejected".to_owned(),
                    "ABORT" => "aborted".to_owned(),
                    other => other.to_owned(),
                };
                format!(
                    "  negotiation round {} with {}: {verdict}",
                    d["round"],
                    s("agent")
                )
            }
            EventType::NegotiationFailed => {
                format!("  negotiation with {} failed: {}", s("agent"), s("error"))
            }
            EventType::TaskResponse => {
                let who = if self.is_self_loop(&s("step")) {
                    "host".to_owned()
                } else {
                    s("agent")
                };
                if d["success"] == json!(true) {
                    format!("  task {} → {who} succeeded", task())
                } else {
                    format!(
                        "  task {} → {who} {} ({}: {})",
                        task(),
                        s("status"),
                        s("errorCode"),
                        s("error")
                    )
                }
            }
            EventType::StepComplete => format!("step {} succeeded", s("step")),
            EventType::Error if d["step"].is_string() => {
                format!("step {} failed ({})", s("step"), s("errorCode"))
            }
            EventType::Error => format!("run failed: {} ({})", s("error"), s("errorCode")),
            EventType::RouteDecision if d["conditional"] != json!(true) => {
                format!("  route {} → {}: unconditional", s("step"), s("next"))
            }
            EventType::RouteDecision => format!(
                "  route {} → {}: {} (\"{}\"; {})",
                s("step"),
                s("next"),
                if d["allowed"] == json!(true) {
                    "allowed"
                } else {
                    "denied"
                },
                s("condition"),
                d["reason"].as_str().unwrap_or("no reason")
            ),
            _ => return,
        };
        say!("[{:>5}ms] {line}", at.as_millis());
    }

    fn is_self_loop(&self, step: &str) -> bool {
        self.step_types.get(step).is_some_and(|t| t == "SELF_LOOP")
    }

    fn task_of(&self, agent: &str) -> String {
        self.current
            .get(agent)
            .cloned()
            .unwrap_or_else(|| "task".to_owned())
    }
}

/// The last line of a message's first text part (skips a `## heading`).
fn message_text(message: &Value) -> String {
    let text = message["parts"][0]["text"].as_str().unwrap_or("");
    text.lines().last().unwrap_or("").to_owned()
}

fn summary(result: &ExecutionResult, run: Duration, total: Duration, engine: &Engine) {
    say!();
    if result.success {
        say!("result: success");
    } else {
        let e = result.error.as_ref();
        say!(
            "result: FAILED — {} ({})",
            e.map_or("no error", |e| e.message.as_str()),
            e.map_or("?", |e| e.code.as_str())
        );
    }
    say!("steps:");
    for step in &result.steps {
        let status = match step.status {
            StepStatus::NotRun => "not run",
            StepStatus::Skipped => "skipped (route not taken)",
            StepStatus::Succeeded => "succeeded",
            StepStatus::Failed => "failed",
            StepStatus::Cancelled => "cancelled",
        };
        let tasks: Vec<String> = result
            .history
            .iter()
            .filter(|t| t.step_name == step.name)
            .map(|t| format!("{} {}", t.agent_name, t.status.as_str()))
            .collect();
        say!("  {:<10} {:<26} {}", step.name, status, tasks.join(", "));
    }
    say!("outputs:");
    for t in &result.history {
        let mut text: Vec<String> = t.outputs.iter().map(short).collect();
        if let Some(code) = &t.error_code {
            text.push(format!(
                "error {code}: {}",
                t.error.as_deref().unwrap_or("")
            ));
        }
        let mut lines = text
            .join(" | ")
            .lines()
            .map(str::to_owned)
            .collect::<Vec<_>>();
        if lines.is_empty() {
            lines.push(String::new());
        }
        say!("  {:<10} {:<17} {}", t.step_name, t.agent_name, lines[0]);
        for line in &lines[1..] {
            say!("  {:<10} {:<17} {line}", "", "");
        }
    }
    say!(
        "time: run {} ms, total {} ms (agents included); {} HTTP requests",
        run.as_millis(),
        total.as_millis(),
        engine.http_client().requests_sent()
    );
}

fn short(v: &Value) -> String {
    let s = match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    if s.chars().count() > 90 && !s.contains('\n') {
        format!("{}…", s.chars().take(90).collect::<String>())
    } else {
        s
    }
}
