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
