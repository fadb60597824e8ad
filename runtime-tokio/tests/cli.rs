//! The `a2at` tool's commands, run as a user would run them.

use std::process::Command;

fn a2at(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_a2at"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
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
        "/../tests/fixtures/traces/chain.jsonl"
    ))
    .unwrap();
    let tampered = original.replacen("\"step_start\"", "\"step_complete\"", 1);
    assert_ne!(tampered, original);
    let path = std::env::temp_dir().join(format!("a2at-tampered-{}.jsonl", std::process::id()));
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
        "/../tests/fixtures/traces/fan_out_join_routing.jsonl"
    ))
    .unwrap();
    let header: serde_json::Value = serde_json::from_str(trace.lines().next().unwrap()).unwrap();
    let wf = std::env::temp_dir().join(format!("a2at-graph-wf-{}.json", std::process::id()));
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
