//! The `a2at` tool's commands, run as a user would run them.

use std::process::Command;

fn a2at(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_a2at"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .output()
        .expect("the a2at binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn validate_accepts_a_good_workflow_in_its_envelope() {
    let (code, out, _) = a2at(&["validate", "tests/fixtures/workflows/spn_diagnosis.json"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("4 steps, 5 edges, start steps: diagnose"),
        "{out}"
    );
}

#[test]
fn validate_lists_every_problem_and_fails() {
    let (code, out, _) = a2at(&["validate", "tests/fixtures/workflows/broken.json"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("unknown step type \"sometimes\""), "{out}");
    let (code, out, _) = a2at(&["validate", "tests/fixtures/workflows/broken_graph.json"]);
    assert_eq!(code, 1, "{out}");
    for needle in ["\"end\"", "\"a\" -> \"b\"", "ghost", "cycle", "\"*\""] {
        assert!(out.contains(needle), "missing {needle} in:\n{out}");
    }
}

#[test]
fn validate_reports_a_missing_file_with_exit_code_2() {
    let (code, _, err) = a2at(&["validate", "tests/fixtures/workflows/nope.json"]);
    assert_eq!(code, 2);
    assert!(err.contains("cannot read"), "{err}");
}

#[test]
fn graph_prints_mermaid_and_dot() {
    let (code, out, _) = a2at(&["graph", "tests/fixtures/workflows/spn_diagnosis.json"]);
    assert_eq!(code, 0);
    assert!(out.starts_with("flowchart TD"));
    assert!(
        out.contains("a hardware or tunnel fault was confirmed"),
        "{out}"
    );
    assert!(out.contains("SELF_LOOP"));
    let (code, out, _) = a2at(&[
        "graph",
        "--format",
        "dot",
        "tests/fixtures/workflows/spn_diagnosis.json",
    ]);
    assert_eq!(code, 0);
    assert!(out.starts_with("digraph"));
    assert!(out.contains("shape=doublecircle"));
}

#[test]
fn replay_reproduces_a_golden_trace_and_reports_a_divergence() {
    let (code, out, _) = a2at(&[
        "replay",
        "tests/fixtures/traces/negotiation_two_rounds.jsonl",
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("identical"), "{out}");
    assert!(out.contains("result: success"), "{out}");

    // Change one recorded output: the replay must name the line.
    let original = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/traces/chain.jsonl"
    ))
    .unwrap();
    let tampered = original.replacen("\"step_start\"", "\"step_complete\"", 1);
    assert_ne!(tampered, original);
    let scratch = tempfile::Builder::new()
        .prefix("a2at-tampered-")
        .tempdir()
        .unwrap();
    let path = scratch.path().join("trace.jsonl");
    std::fs::write(&path, tampered).unwrap();
    let (code, out, _) = a2at(&["replay", path.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("diverged") && out.contains("line"), "{out}");
}

#[test]
fn graph_overlays_the_statuses_replayed_from_a_trace() {
    let trace_path = "tests/fixtures/traces/fan_out_join_routing.jsonl";
    let trace = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/traces/fan_out_join_routing.jsonl"
    ))
    .unwrap();
    let header: serde_json::Value = serde_json::from_str(trace.lines().next().unwrap()).unwrap();
    let scratch = tempfile::Builder::new()
        .prefix("a2at-graph-")
        .tempdir()
        .unwrap();
    let wf = scratch.path().join("wf.json");
    std::fs::write(&wf, header["workflow"].to_string()).unwrap();
    let (code, out, err) = a2at(&[
        "graph",
        "--format",
        "dot",
        "--result",
        trace_path,
        wf.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("[succeeded]"), "{out}");
    assert!(
        out.contains("[skipped]"),
        "the denied branch is shown as skipped:\n{out}"
    );
}

/// A fake discovery center answering every request with `reply`; returns its URL and the
/// request lines it saw.
fn fake_center(reply: &'static str) -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut first = String::new();
            let _ = reader.read_line(&mut first);
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0u8; length];
            let _ = reader.read_exact(&mut body);
            record.lock().unwrap().push(first.trim().to_owned());
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{reply}",
                reply.len()
            );
        }
    });
    (url, seen)
}

#[test]
fn registry_and_psop_commands_query_a_center_without_exposing_the_token() {
    let (url, seen) = fake_center(
        r#"{"agentCards": [{"name": "alpha"}], "data": [{"id": "w9", "name": "nine"}]}"#,
    );
    let (code, out, err) = a2at(&["registry", "cards", "--url", &url]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\"name\": \"alpha\""), "{out}");
    let (code, out, err) = a2at(&[
        "registry",
        "cards",
        "--url",
        &url,
        "--name",
        "alpha",
        "--organization",
        "o",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("alpha"), "{out}");

    let out = Command::new(env!("CARGO_BIN_EXE_a2at"))
        .args([
            "psop",
            "search",
            "--url",
            &url,
            "--intent",
            "fix it",
            "--access-token-env",
            "A2AT_TEST_PSOP_TOKEN",
        ])
        .env("A2AT_TEST_PSOP_TOKEN", "cli-secret-token-31")
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("\"workflow_id\": \"w9\""), "{stdout}");
    assert!(!stdout.contains("cli-secret-token-31") && !stderr.contains("cli-secret-token-31"));
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3);
    assert!(seen[1].contains("name=alpha&organization=o"), "{seen:?}");
    assert!(
        seen[2].starts_with("POST /api/v1/orchestrate/search?access_token=cli-secret-token-31 "),
        "{seen:?}"
    );

    // A missing token variable and an unreachable center are errors (exit code 1).
    let (code, _, err) = a2at(&[
        "psop",
        "load",
        "--url",
        &url,
        "--id",
        "x",
        "--access-token-env",
        "A2AT_TEST_UNSET_VAR_1",
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("A2AT_TEST_UNSET_VAR_1"), "{err}");
    let (code, _, err) = a2at(&[
        "registry",
        "cards",
        "--url",
        &url,
        "--ca-certs",
        "/nonexistent/ca.pem",
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("/nonexistent/ca.pem"), "{err}");
}
