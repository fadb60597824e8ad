//! Golden replay: every `fixtures/traces/*.jsonl` replays without divergence, and random
//! simulated runs replay to the same outputs and result.
//!
//! Bless mode: `A2AT_BLESS=1 cargo test -p a2at-tests --test replay` rewrites the fixtures of
//! the scenarios in `a2at_tests::golden` from their definitions, and the `out` lines of any other
//! fixture from what the run produces now. Review the JSONL diff.

use std::collections::BTreeSet;

use a2at_core::trace::{
    Redaction, ReplayError, TraceErrorKind, TraceLine, parse_trace, replay, rerecord,
};
use a2at_tests::golden::scenarios;
use a2at_tests::random_scenario::{build, scenario};
use a2at_tests::trace_io::{fixtures_dir, read_trace, save_failure, trace_files, write_trace};
use proptest::prelude::*;

fn blessing() -> bool {
    std::env::var_os("A2AT_BLESS").is_some_and(|v| v != "0" && !v.is_empty())
}

#[test]
fn every_golden_trace_replays_without_divergence() {
    let dir = fixtures_dir();
    if blessing() {
        let known: BTreeSet<String> = scenarios()
            .iter()
            .map(|s| format!("{}.jsonl", s.name))
            .collect();
        for s in scenarios() {
            write_trace(&dir.join(format!("{}.jsonl", s.name)), &s.record());
        }
        for path in trace_files(&dir) {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if !known.contains(&name) {
                let text = rerecord(&read_trace(&path))
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                write_trace(&path, &text);
            }
        }
    }
    let files = trace_files(&dir);
    for s in scenarios() {
        assert!(
            files.iter().any(|f| f.file_stem().unwrap() == s.name),
            "no fixture for golden scenario {} ({}); run with A2AT_BLESS=1",
            s.name,
            s.about
        );
    }
    let mut failures = Vec::new();
    for path in &files {
        let trace = read_trace(path);
        match replay(&trace) {
            Ok(report) => {
                assert!(
                    report.result.is_some(),
                    "{}: the replayed run did not finish",
                    path.display()
                );
                assert_eq!(report.compared, report.outputs, "{}", path.display());
            }
            Err(e) => failures.push(format!("{}: {e}", path.display())),
        }
    }
    assert!(
        failures.is_empty(),
        "golden traces diverged (bless with A2AT_BLESS=1 if the change is intended):\n{}",
        failures.join("\n")
    );
}

#[test]
fn golden_scenarios_still_record_their_fixtures() {
    // The simulator and the core together still produce the committed bytes: catches a changed
    // scenario definition or harness that replay alone (inputs are fixed) would not notice.
    if blessing() {
        return;
    }
    for s in scenarios() {
        let path = fixtures_dir().join(format!("{}.jsonl", s.name));
        let Ok(committed) = std::fs::read_to_string(&path) else {
            continue; // reported by the replay test
        };
        assert!(
            committed == s.record(),
            "{} no longer records the same trace; bless with A2AT_BLESS=1",
            path.display()
        );
    }
}

#[test]
fn redacted_request_bodies_replay_exactly_and_still_catch_a_changed_body() {
    let s = scenarios()
        .into_iter()
        .find(|s| s.redaction == Redaction::RequestBodies)
        .unwrap();
    let text = s.record();
    assert!(text.contains("\"body\":{\"redacted\":\"fnv64:"));
    assert!(
        !text.contains("SendMessage\",\"params"),
        "no request body in clear"
    );
    let trace = parse_trace(&text).unwrap();
    assert!(trace.header.replayable());
    replay(&trace).expect("exact replay by digest");
    // Alter one digest: the replay names that line.
    let at = text
        .lines()
        .position(|l| l.contains("\"redacted\":\"fnv64:"))
        .unwrap();
    let altered: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if i == at {
                l.replacen("\"redacted\":\"fnv64:", "\"redacted\":\"fnv64:0", 1)
            } else {
                l.to_owned()
            }
        })
        .collect();
    match replay(&parse_trace(&altered.join("\n")).unwrap()) {
        Err(ReplayError::Diverged(d)) => assert_eq!(d.line, at + 1),
        other => panic!("{other:?}"),
    }
}

#[test]
fn redacted_response_bodies_make_an_audit_record_that_replays_up_to_the_first_redaction() {
    let out = a2at_tests::random_scenario::build(&chain_like())
        .record_redacted(Redaction::AllBodies)
        .drive_bounded(100_000);
    let text = out.trace.unwrap();
    assert!(
        text.lines()
            .next()
            .unwrap()
            .contains("\"replayable\":false")
    );
    assert!(text.contains("\"chunk\":{\"redacted\":\"fnv64:"));
    let trace = parse_trace(&text).unwrap();
    assert!(!trace.header.replayable());
    let first_redacted = text
        .lines()
        .position(|l| l.contains("\"chunk\":{\"redacted\""))
        .unwrap();
    match replay(&trace) {
        Err(ReplayError::NotReplayable { line }) => assert_eq!(line, first_redacted + 1),
        other => panic!("{other:?}"),
    }
    // A redacted chunk is refused where the header does not announce it.
    let lying = text.replacen(
        "\"redaction\":\"all_bodies\",\"replayable\":false",
        "\"redaction\":\"request_bodies\",\"replayable\":true",
        1,
    );
    let e = parse_trace(&lying).unwrap_err();
    assert_eq!(e.line, first_redacted + 1);
    assert!(matches!(e.kind, TraceErrorKind::BadInput(_)));
}

fn chain_like() -> a2at_tests::random_scenario::Scenario {
    a2at_tests::random_scenario::Scenario {
        steps: vec![(0, vec![0]), (0, vec![1])],
        edges: vec![(0, 1, false)],
        terminal_edges: vec![],
        plans: vec![],
        route_seed: 1,
        host_seed: 1,
        cancel_at_ms: None,
        streaming: [false; 3],
        rest: [false; 3],
        seed: 11,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    /// `replay(record(run)) == run`: the same outputs in the same drains and the same result.
    #[test]
    fn replaying_a_recorded_random_run_reproduces_it(s in scenario()) {
        let out = build(&s).record().drive_bounded(200_000);
        let text = out.trace.clone().expect("recorded");
        let trace = parse_trace(&text).map_err(|e| TestCaseError::fail(e.to_string()))?;
        // The simulator's clock never goes backwards, so neither does `t`.
        let times: Vec<u64> = trace
            .lines
            .iter()
            .filter_map(|(_, l)| match l {
                TraceLine::Input { t, .. } | TraceLine::Timeout { t } => Some(t.as_micros()),
                TraceLine::Output(_) => None,
            })
            .collect();
        prop_assert!(times.windows(2).all(|w| w[0] <= w[1]), "t decreased");
        match replay(&trace) {
            Ok(report) => {
                prop_assert_eq!(report.outputs, out.outputs().count());
                prop_assert_eq!(report.compared, report.outputs);
                prop_assert_eq!(report.result.as_ref(), out.result.as_ref());
                prop_assert!(report.rejected.is_empty());
            }
            Err(e) => {
                let path = save_failure(&format!("replay-seed-{}", s.seed), &text);
                return Err(TestCaseError::fail(format!("{e}\ntrace: {}", path.display())));
            }
        }
        // Bless of an unchanged run is the identity.
        prop_assert_eq!(rerecord(&trace).map_err(|e| TestCaseError::fail(e.to_string()))?, text);
    }
}
