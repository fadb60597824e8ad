//! The `a2at` tool against the Python interop agents (ignored unless `tests/run` set them up).

use std::process::Command;

use a2at_core::a2at::NEGOTIATION_T_URI;
use a2at_tests::suites::interop::peers;
use serde_json::{Value, json};

#[test]
#[ignore = "needs the Python interop peers: run tests/run"]
fn the_cli_runs_a_workflow_against_python_agents_from_a_host_policy_file() {
    let scratch = tempfile::Builder::new()
        .prefix("a2at-interop-cli-")
        .tempdir()
        .unwrap();
    let dir = scratch.path();
    let cards: Vec<Value> = peers().cards.iter().map(|c| c.to_json()).collect();
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
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
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
