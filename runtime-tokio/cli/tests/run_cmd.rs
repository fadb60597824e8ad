//! `a2at run` against scripted agents on loopback, driven by a host policy file.

use std::path::PathBuf;
use std::process::Command;

use a2at_tests::agent::Negotiation;
use a2at_tests::loopback::LoopbackServer;
use a2at_tests::{Plan, ScriptedAgent};
use serde_json::{Value, json};

/// A scratch directory, removed when the returned guard drops.
fn scratch(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("a2at-run-{name}-"))
        .tempdir()
        .unwrap()
}

fn write(dir: &std::path::Path, name: &str, value: &Value) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_string_pretty(value).unwrap()).unwrap();
    p
}

const NEG_T: &str =
    "https://projects.tmforum.org/a2aproject/telecommunication/extensions/Negotiation-T/v1";

fn workflow() -> Value {
    json!({"name": "cli", "steps": [
        {"name": "ask", "subtasks": [{"agent": "alpha", "description": "diagnose"}, {"agent": "neg", "description": "agree"}],
         "next": [{"step": "sum"}]},
        {"name": "sum", "step_type": "SELF_LOOP", "subtasks": [{"agent": "me", "description": "sum up"}],
         "next": [{"step": "fix", "condition": "fault"}, {"step": "skip", "condition": "no fault"}]},
        {"name": "fix", "subtasks": [{"agent": "alpha", "description": "fix it"}]},
        {"name": "skip", "subtasks": [{"agent": "alpha", "description": "nothing"}]}
    ]})
}

fn policy() -> Value {
    json!({
        "content": {
            "default": {"parts": [{"text": "{description} ({step}/{agent})"}], "metadata": {"ticket": "T-{step}", "lang": "{language}"}},
            "agents": {"neg": {"parts": [{"text": "{description}"}], "extensions": [NEG_T]}}
        },
        "routes": {"sum -> fix": {"allow": true, "reason": "fault confirmed"}, "sum -> skip": false},
        "self_tasks": {"sum": {"outputs": ["upstream {upstream}"]}},
        "negotiation": {"agents": {"neg": {"reply": "accept", "text": "Accept: {description}"}}}
    })
}

fn run_cli(args: &[String]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_a2at"))
        .args(args)
        .output()
        .expect("a2at runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_file_drives_content_routes_self_tasks_and_negotiation() {
    let server = LoopbackServer::start(vec![
        ScriptedAgent::new("alpha").rest(),
        ScriptedAgent::new("neg").by_default(Plan::Negotiate(Negotiation::rounds(2, 3))),
    ])
    .await;
    let scratch_dir = scratch("ok");
    let dir = scratch_dir.path();
    let cards: Vec<Value> = server.cards().iter().map(|c| c.to_json()).collect();
    let args: Vec<String> = vec![
        "run".into(),
        "--workflow".into(),
        write(dir, "wf.json", &workflow()).display().to_string(),
        "--cards".into(),
        write(dir, "cards.json", &Value::Array(cards))
            .display()
            .to_string(),
        "--host".into(),
        write(dir, "host.json", &policy()).display().to_string(),
        "--events".into(),
        dir.join("events.jsonl").display().to_string(),
        "--result".into(),
        dir.join("result.json").display().to_string(),
        "--trace".into(),
        dir.join("trace.jsonl").display().to_string(),
        "--language".into(),
        "en".into(),
        "--metrics".into(),
    ];
    let (code, out, err) = tokio::task::spawn_blocking(move || run_cli(&args))
        .await
        .unwrap();
    assert_eq!(code, 0, "stdout:\n{out}\nstderr:\n{err}");
    // `--metrics` prints what the engine counted: one successful run, its subtasks by agent
    // (the local one included), the negotiation rounds handed to the host, and request latency
    // by agent.
    let metrics = out
        .split("metrics:\n")
        .nth(1)
        .unwrap_or_else(|| panic!("{out}"));
    for line in [
        "a2at_runs_total{outcome=success} 1",
        "a2at_subtasks_total{agent=alpha,outcome=success} 2",
        "a2at_subtasks_total{agent=me,outcome=success} 1",
        "a2at_subtasks_total{agent=neg,outcome=success} 1",
        "a2at_negotiation_rounds_total 2",
    ] {
        assert!(
            metrics.lines().any(|l| l == line),
            "no {line:?} in:\n{metrics}"
        );
    }
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("a2at_request_duration_seconds{agent=neg,binding=JSONRPC,")),
        "{metrics}"
    );
    // The recorded trace replays identically, offline.
    let trace = dir.join("trace.jsonl").display().to_string();
    let (code, replayed, err) = run_cli(&["replay".into(), trace]);
    assert_eq!(code, 0, "stdout:\n{replayed}\nstderr:\n{err}");
    assert!(
        replayed.contains("identical") && replayed.contains("result: success"),
        "{replayed}"
    );
    assert!(out.contains("result: success"), "{out}");
    assert!(
        out.contains("negotiation round 2 with neg: accepted"),
        "{out}"
    );
    let result: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("result.json")).unwrap()).unwrap();
    assert_eq!(
        result["step_outputs"]["ask"]["diagnose"],
        json!(["done: diagnose (ask/alpha)"])
    );
    let sum = result["step_outputs"]["sum"]["sum up"][0]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(sum.starts_with("upstream {\"ask\":"), "{sum}");
    let statuses: Vec<(String, String)> = result["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_owned(),
                s["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert!(statuses.contains(&("skip".into(), "skipped".into())));
    assert!(statuses.contains(&("fix".into(), "succeeded".into())));
    let events = std::fs::read_to_string(dir.join("events.jsonl")).unwrap();
    let types: Vec<String> = events
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(types.first().map(String::as_str), Some("start"));
    assert_eq!(types.last().map(String::as_str), Some("close"));
    let sent = server.requests_to("alpha", "SendMessage");
    assert_eq!(sent[0].message().unwrap()["metadata"]["ticket"], "T-ask");
    assert_eq!(sent[0].message().unwrap()["metadata"]["lang"], "en");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_the_policy_does_not_cover_fails_explicitly() {
    let server = LoopbackServer::start(vec![
        ScriptedAgent::new("alpha").rest(),
        ScriptedAgent::new("neg"),
    ])
    .await;
    let scratch_dir = scratch("missing");
    let dir = scratch_dir.path();
    let mut p = policy();
    p["routes"] = json!({"sum -> skip": false});
    let cards: Vec<Value> = server.cards().iter().map(|c| c.to_json()).collect();
    let args: Vec<String> = vec![
        "run".into(),
        "--workflow".into(),
        write(dir, "wf.json", &workflow()).display().to_string(),
        "--cards".into(),
        write(dir, "cards.json", &Value::Array(cards))
            .display()
            .to_string(),
        "--host".into(),
        write(dir, "host.json", &p).display().to_string(),
    ];
    let (code, out, _) = tokio::task::spawn_blocking(move || run_cli(&args))
        .await
        .unwrap();
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("workflow.route_failed"), "{out}");
    assert!(out.contains("sum -> fix"), "{out}");
}

#[test]
fn an_unknown_key_in_the_policy_is_a_usage_error() {
    let scratch_dir = scratch("bad");
    let dir = scratch_dir.path();
    let args: Vec<String> = vec![
        "run".into(),
        "--workflow".into(),
        write(dir, "wf.json", &workflow()).display().to_string(),
        "--cards".into(),
        write(dir, "cards.json", &json!([])).display().to_string(),
        "--host".into(),
        write(dir, "host.json", &json!({"rutes": {}}))
            .display()
            .to_string(),
    ];
    let (code, _, err) = run_cli(&args);
    assert_eq!(code, 2);
    assert!(err.contains("rutes"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_flags_set_the_policy_and_bad_values_are_refused() {
    use a2at_tests::agent::AgentFault;
    let scratch_dir = scratch("retry");
    let dir = scratch_dir.path();
    let one =
        json!({"steps": [{"name": "s", "subtasks": [{"agent": "busy", "description": "x"}]}]});
    let host = json!({"content": {"default": {"parts": [{"text": "{description}"}]}}});
    let base_args = |cards: &Value, extra: &[&str]| -> Vec<String> {
        let mut args: Vec<String> = vec![
            "run".into(),
            "--workflow".into(),
            write(dir, "wf.json", &one).display().to_string(),
            "--cards".into(),
            write(dir, "cards.json", cards).display().to_string(),
            "--host".into(),
            write(dir, "host.json", &host).display().to_string(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        args
    };
    let busy = || {
        ScriptedAgent::new("busy").fault_on(
            "SendMessage",
            1,
            AgentFault::Unavailable { retry_after: None },
        )
    };
    // Fail fast: the 503 ends the run.
    let server = LoopbackServer::start(vec![busy()]).await;
    let cards = Value::Array(server.cards().iter().map(|c| c.to_json()).collect());
    let (code, _, _) = run_cli(&base_args(&cards, &["--retry-attempts", "0"]));
    assert_eq!(code, 1);
    assert_eq!(server.requests_to("busy", "SendMessage").len(), 1);
    // Retries on: the message goes again and the run succeeds.
    let server = LoopbackServer::start(vec![busy()]).await;
    let cards = Value::Array(server.cards().iter().map(|c| c.to_json()).collect());
    let (code, out, err) = run_cli(&base_args(
        &cards,
        &[
            "--retry-attempts",
            "2",
            "--retry-base-delay-ms",
            "10",
            "--retry-max-delay-ms",
            "20",
        ],
    ));
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(server.requests_to("busy", "SendMessage").len(), 2);
    // A zero base delay with retries on would spin: refused before anything is sent.
    let (code, _, err) = run_cli(&base_args(&cards, &["--retry-base-delay-ms", "0"]));
    assert_eq!(code, 2);
    assert!(err.contains("retry.base_delay"), "{err}");
    assert_eq!(server.requests_to("busy", "SendMessage").len(), 2);
}
