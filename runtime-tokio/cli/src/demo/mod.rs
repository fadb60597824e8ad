//! `a2at demo`: runs the bundled workflow against in-process A2A agents and narrates it.
//!
//! Four agents start on 127.0.0.1 (see [`agents`]): two diagnosis agents (one JSON-RPC, one
//! HTTP+JSON), a telemetry agent that streams over SSE, and a tunnel optimiser that asks for
//! consent twice with Negotiation-T. A scripted host (a [`ControlPointBuilder`]) writes Task-T
//! content, aggregates and reports locally (SELF_LOOP), decides the conditional routes and
//! accepts each proposal. The event stream is printed as it happens, then the result.

mod agents;

use std::path::Path;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use a2at_core::a2a::AgentCard;
use a2at_core::a2at::{NEGOTIATION_T_URI, Performative, TASK_T_URI};
use a2at_core::host::{
    HostError, MessageContent, NegotiationReply, RouteDecision, TaskExecutionResult, TaskRequest,
    TaskResult,
};
use a2at_core::workflow::parse_and_validate;
use a2at_tokio::{BuiltControlPoint, ControlPointBuilder, Engine};
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::{Value, json};

use agents::{AgentSpec, Behaviour, RunningAgent, Wire};

use crate::progress::{Narrator, say, summary};

/// The bundled workflow: fan-out, a SELF_LOOP aggregation, conditional routes, a negotiation.
const WORKFLOW: &str = include_str!("workflow.json");

/// Runs the demo; exit code 0 when the workflow succeeded, 1 otherwise. With `reject`, the host
/// rejects the second proposal, so the run fails (exit code 1). With `report`, the run is
/// recorded and drawn into that HTML file.
pub fn run(reject: bool, report: Option<&Path>) -> ExitCode {
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
    let recording = report.map(|_| TraceBuffer::default());
    let outcome = runtime.block_on(demo(reject, recording.clone()));
    // The agents' servers stop with the runtime.
    runtime.shutdown_timeout(Duration::from_millis(100));
    if let (Some(path), Some(recording)) = (report, recording) {
        let trace = recording.text();
        match crate::report::model_of(&trace, None) {
            Ok(model) => match std::fs::write(path, crate::report::render(&model)) {
                Ok(()) => say!("report: {}", path.display()),
                Err(e) => eprintln!("a2at demo: cannot write {}: {e}", path.display()),
            },
            Err(e) => eprintln!("a2at demo: cannot draw the run: {e}"),
        }
    }
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

/// The run's trace, kept in memory for the report.
#[derive(Clone, Default)]
struct TraceBuffer(Arc<Mutex<Vec<u8>>>);

impl TraceBuffer {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap_or_else(|e| e.into_inner())).into_owned()
    }
}

impl std::io::Write for TraceBuffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

async fn demo(reject: bool, recording: Option<TraceBuffer>) -> Result<bool, String> {
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
    let mut run = engine.run(workflow, Arc::new(host));
    if let Some(recording) = recording {
        run = run.record(recording);
    }
    let result = run
        .event_sink(move |e| {
            let mut n = narrator.lock().unwrap_or_else(|e| e.into_inner());
            n.print(t0.elapsed(), e);
        })
        .execute()
        .await;
    let run_time = t0.elapsed();
    summary(
        &result,
        &format!(
            "time: run {} ms, total {} ms (agents included); {} HTTP requests",
            run_time.as_millis(),
            started.elapsed().as_millis(),
            engine.http_client().requests_sent()
        ),
    );
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
        .on_task(move |req: Arc<TaskRequest>| {
            let content = task_content(
                &req,
                task_t.iter().any(|a| *a == req.agent_name),
                negotiation_t.iter().any(|a| *a == req.agent_name),
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
        .flat_map(|s| s.task_results.iter().map(|r| &**r))
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
