//! `a2at run --otlp-endpoint`: the run's spans reach an OTLP/HTTP collector (the loopback
//! stand-in), with the trace and exchange ids the agents received; a bad endpoint is a usage
//! error.

use std::path::PathBuf;
use std::process::Command;

use a2at_tests::ScriptedAgent;
use a2at_tests::loopback::LoopbackServer;
use a2at_tests::otlp_collector::OtlpCollector;
use serde_json::{Value, json};

fn write(dir: &std::path::Path, name: &str, value: &Value) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_string_pretty(value).unwrap()).unwrap();
    p
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

fn run_args(dir: &std::path::Path, cards: &[Value], endpoint: &str) -> Vec<String> {
    let workflow = json!({"name": "otel", "steps": [
        {"name": "a", "subtasks": [{"agent": "alpha", "description": "first"}], "next": [{"step": "b"}]},
        {"name": "b", "subtasks": [{"agent": "beta", "description": "second"}]}
    ]});
    let policy = json!({"content": {"default": {"parts": [{"text": "{description}"}]}}});
    vec![
        "run".into(),
        "--workflow".into(),
        write(dir, "wf.json", &workflow).display().to_string(),
        "--cards".into(),
        write(dir, "cards.json", &Value::Array(cards.to_vec()))
            .display()
            .to_string(),
        "--host".into(),
        write(dir, "host.json", &policy).display().to_string(),
        "--otlp-endpoint".into(),
        endpoint.into(),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_with_otlp_endpoint_exports_its_spans_before_exiting() {
    let server = LoopbackServer::start(vec![
        ScriptedAgent::new("alpha"),
        ScriptedAgent::new("beta").rest(),
    ])
    .await;
    let collector = OtlpCollector::start();
    let dir = tempfile::tempdir().unwrap();
    let cards: Vec<Value> = server.cards().iter().map(|c| c.to_json()).collect();
    let args = run_args(dir.path(), &cards, &collector.endpoint());
    let (code, out, err) = tokio::task::spawn_blocking(move || run_cli(&args))
        .await
        .unwrap();
    assert_eq!(code, 0, "stdout:\n{out}\nstderr:\n{err}");
    // The process has exited: whatever it exported was flushed before.
    let spans = collector.spans();
    let received: Vec<String> = ["alpha", "beta"]
        .iter()
        .flat_map(|a| server.requests(a))
        .map(|r| r.header("traceparent").expect("a traceparent").to_owned())
        .collect();
    assert_eq!(received.len(), 2, "{received:?}");
    let count = |name: &str| spans.iter().filter(|s| s.name == name).count();
    assert_eq!(
        [
            count("a2at_run"),
            count("a2at_step"),
            count("a2at_subtask"),
            count("a2at_exchange")
        ],
        [1, 2, 2, 2],
        "{spans:#?}"
    );
    for header in &received {
        // 00-<trace id>-<parent id>-01
        let parts: Vec<&str> = header.split('-').collect();
        assert!(
            spans.iter().all(|s| s.trace_id == parts[1]),
            "{header} {spans:#?}"
        );
        let exchange = spans
            .iter()
            .find(|s| s.span_id == parts[2])
            .unwrap_or_else(|| panic!("no exported span has the id of {header}"));
        assert_eq!(exchange.name, "a2at_exchange");
        assert_eq!(exchange.service_name, "a2at");
        let subtask = spans
            .iter()
            .find(|s| s.span_id == exchange.parent_span_id)
            .expect("the exchange's parent was exported");
        assert_eq!(subtask.name, "a2at_subtask");
    }
}

#[test]
fn a_bad_otlp_endpoint_is_a_usage_error_naming_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let args = run_args(dir.path(), &[], "ftp://collector:4318");
    let (code, out, err) = run_cli(&args);
    assert_eq!(code, 2, "stdout:\n{out}\nstderr:\n{err}");
    assert!(
        err.contains("--otlp-endpoint") && err.contains("http://"),
        "{err}"
    );
}

#[test]
fn an_unreachable_collector_is_reported_and_the_run_still_succeeds() {
    // A port that was free a moment ago: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(LoopbackServer::start(vec![
        ScriptedAgent::new("alpha"),
        ScriptedAgent::new("beta").rest(),
    ]));
    let cards: Vec<Value> = server.cards().iter().map(|c| c.to_json()).collect();
    let args = run_args(
        dir.path(),
        &cards,
        &format!("http://127.0.0.1:{port}/v1/traces?token=PLANTED-OTLP-TOKEN"),
    );
    let (code, out, err) = run_cli(&args);
    assert_eq!(code, 0, "stdout:\n{out}\nstderr:\n{err}");
    assert!(
        err.contains("exporting spans to the OTLP collector failed"),
        "{err}"
    );
    assert!(!err.contains("PLANTED-OTLP-TOKEN"), "{err}");
    drop(server);
}
