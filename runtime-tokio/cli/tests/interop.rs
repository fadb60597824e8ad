//! The `a2at` tool against the Python interop agents (ignored unless `tests/run` set them up).

use std::process::Command;

use a2at_core::a2at::NEGOTIATION_T_URI;
use a2at_tests::suites::interop::peers;
use serde_json::{Value, json};

#[test]
#[ignore = "needs the Python interop peers: run tests/run"]
fn the_cli_runs_a_workflow_against_python_agents_from_a_host_policy_file() {
    let cards: Vec<Value> = peers().cards.iter().map(|c| c.to_json()).collect();
    run_against_peers("default", cards, &[]);
}

#[test]
#[ignore = "needs the Python interop peers: run tests/run"]
fn the_cli_runs_the_workflow_over_grpc_when_asked_or_when_agents_offer_only_grpc() {
    let cards: Vec<Value> = peers().cards.iter().map(|c| c.to_json()).collect();
    // The JSON interfaces point at a closed port: only gRPC can succeed.
    let json_broken: Vec<Value> = cards
        .iter()
        .cloned()
        .map(|mut c| {
            for i in c["supportedInterfaces"].as_array_mut().unwrap() {
                if i["protocolBinding"] != "GRPC" {
                    i["url"] = json!("http://127.0.0.1:9/closed");
                }
            }
            c
        })
        .collect();
    run_against_peers("preferred", json_broken, &["--binding", "grpc"]);
    let grpc_only: Vec<Value> = cards
        .into_iter()
        .map(|mut c| {
            c["supportedInterfaces"]
                .as_array_mut()
                .unwrap()
                .retain(|i| i["protocolBinding"] == "GRPC");
            c
        })
        .collect();
    run_against_peers("grpc-only", grpc_only, &[]);
}

/// Runs the two-step workflow with `a2at run` and checks its outputs.
fn run_against_peers(label: &str, cards: Vec<Value>, args: &[&str]) {
    let scratch = tempfile::Builder::new()
        .prefix(&format!("a2at-interop-cli-{label}-"))
        .tempdir()
        .unwrap();
    let dir = scratch.path();
    let files = [
        ("cards.json", Value::Array(cards)),
        (
            "wf.json",
            json!({"steps": [
                {"name": "ask", "subtasks": [{"agent": "echo", "description": "hello"}, {"agent": "negotiator", "description": "agree"}],
                 "next": [{"step": "sum"}]},
                {"name": "sum", "step_type": "SELF_LOOP", "subtasks": [{"agent": "me", "description": "s"}]}
            ]}),
        ),
        (
            "host.json",
            json!({
                "content": {"default": {"parts": [{"text": "{description}"}]},
                            "agents": {"negotiator": {"parts": [{"text": "{description}"}], "extensions": [NEGOTIATION_T_URI]}}},
                "self_tasks": {"sum": {"outputs": ["{upstream}"]}},
                "negotiation": {"agents": {"negotiator": {"reply": "accept", "text": "Accept: Site1, Site2"}}}
            }),
        ),
    ];
    for (name, value) in &files {
        std::fs::write(dir.join(name), value.to_string()).unwrap();
    }
    let out = Command::new(env!("CARGO_BIN_EXE_a2at"))
        .arg("run")
        .args(["--workflow", dir.join("wf.json").to_str().unwrap()])
        .args(["--cards", dir.join("cards.json").to_str().unwrap()])
        .args(["--host", dir.join("host.json").to_str().unwrap()])
        .args(["--result", dir.join("result.json").to_str().unwrap()])
        .args(args)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{label}: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("result.json")).unwrap()).unwrap();
    assert_eq!(
        result["step_outputs"]["ask"]["hello"],
        json!(["echo: hello"])
    );
    assert_eq!(
        result["step_outputs"]["ask"]["agree"],
        json!(["agreed after 2 rounds"])
    );
}
