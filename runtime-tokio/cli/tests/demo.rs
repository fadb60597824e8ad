//! `a2at demo` (and `a2at` with no arguments) run the bundled workflow end to end against the
//! in-process agents.

use std::process::Command;
use std::time::{Duration, Instant};

fn a2at(args: &[&str]) -> (i32, String, Duration) {
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_a2at"))
        .args(args)
        .output()
        .expect("the a2at binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        started.elapsed(),
    )
}

fn assert_demo_ran(code: i32, out: &str, took: Duration) {
    assert_eq!(code, 0, "{out}");
    assert!(took < Duration::from_secs(10), "took {took:?}:\n{out}");
    for needle in [
        // the agents, one per binding / behaviour
        "spn_city1         JSONRPC",
        "spn_city2         HTTP+JSON",
        "(SSE streaming)",
        "(blocking, Task-T, Negotiation-T)",
        // live progress: fan-out, streaming, SELF_LOOP, routes, negotiation
        "step diagnose started (ALL_SUCCESS)",
        "task diagnose#0 → spn_city1 succeeded",
        "task diagnose#1 → spn_city2 succeeded",
        "diagnose#2 ← perf_monitor WORKING",
        "diagnose#2 ← perf_monitor streamed chunk \"t+2s: 38 ms, loss 2.1 %\" (last)",
        "task diagnose#2 → perf_monitor succeeded",
        "step aggregate started (SELF_LOOP)",
        "task aggregate#0 → host succeeded",
        "route aggregate → remediate: allowed",
        "route aggregate → escalate: denied",
        "negotiation round 1 of max 3 with tunnel_optimizer: proposal",
        "negotiation round 1 with tunnel_optimizer: accepted",
        "negotiation round 2 of max 3 with tunnel_optimizer: proposal",
        "negotiation round 2 with tunnel_optimizer: accepted",
        "task remediate#0 → tunnel_optimizer succeeded",
        "step report succeeded",
        // the summary
        "\nresult: success\n",
        "  remediate  succeeded",
        "  escalate   skipped (route not taken)",
        "  report     succeeded",
        "T-17 moved to its backup path",
    ] {
        assert!(out.contains(needle), "missing {needle:?} in:\n{out}");
    }
    assert!(!out.contains("round 3"), "{out}");
    // Progress lines come before the summary, in the order things happened.
    let pos = |s: &str| out.find(s).unwrap_or_else(|| panic!("{s:?} missing"));
    assert!(pos("round 1 with tunnel_optimizer: accepted") < pos("round 2 of max 3"));
    assert!(pos("step diagnose succeeded") < pos("step aggregate started"));
    assert!(pos("step report succeeded") < pos("result: success"));
}

#[test]
fn demo_runs_the_bundled_workflow() {
    let (code, out, took) = a2at(&["demo"]);
    assert_demo_ran(code, &out, took);
}

#[test]
fn no_arguments_runs_the_demo() {
    let (code, out, took) = a2at(&[]);
    assert_demo_ran(code, &out, took);
}

#[test]
fn a_rejected_proposal_fails_the_run_with_exit_code_1() {
    let (code, out, _) = a2at(&["demo", "--reject"]);
    assert_eq!(code, 1, "{out}");
    for needle in [
        "negotiation round 1 with tunnel_optimizer: accepted",
        "negotiation round 2 with tunnel_optimizer: rejected",
        "task remediate#0 → tunnel_optimizer failed (remote.task_failed",
        "step remediate failed (workflow.step_failed)",
        "\nresult: FAILED",
        "  report     not run",
    ] {
        assert!(out.contains(needle), "missing {needle:?} in:\n{out}");
    }
}
