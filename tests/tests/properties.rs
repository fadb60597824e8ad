//! Property tests of the run machine over random DAGs, route answers, host timings and agent
//! behaviours (at least 256 cases each).

use std::collections::{BTreeMap, BTreeSet};

use a2at_core::event::{EventSelection, EventType};
use a2at_core::host::TaskStatus;
use a2at_core::io::{Input, OpPurpose, Output};
use a2at_core::result::StepStatus;
use a2at_tests::random_scenario::{AGENTS, Scenario, build, build_selecting, scenario};
use a2at_tests::{Observed, SimOutcome};
use proptest::prelude::*;
use serde_json::Value;

fn step_of(data: &Value) -> String {
    data["step"].as_str().unwrap_or_default().to_owned()
}

fn check_invariants(s: &Scenario, out: &SimOutcome) -> Result<(), TestCaseError> {
    let result = out
        .result
        .as_ref()
        .ok_or_else(|| TestCaseError::fail("run did not finish"))?;
    // Each step runs at most once.
    let mut starts = BTreeMap::new();
    for d in out.events("step_start") {
        *starts.entry(step_of(d)).or_insert(0) += 1;
    }
    prop_assert!(
        starts.values().all(|n| *n == 1),
        "a step started twice: {starts:?}"
    );

    // No successor before all of its sources' route answers: every predecessor that ran emitted
    // all its route_decision events before the successor's step_start.
    let events: Vec<(usize, &a2at_core::Event)> = out
        .outputs()
        .filter_map(|o| match o {
            Output::Event(e) => Some(e),
            _ => None,
        })
        .enumerate()
        .collect();
    for (pos, e) in &events {
        if e.kind.as_str() != "step_start" {
            continue;
        }
        let target: usize = step_of(&e.data)[1..].parse().unwrap();
        for (from, to, _) in &s.edges {
            if *to != target {
                continue;
            }
            let from_name = format!("s{from}");
            let out_edges = s.edges.iter().filter(|(a, _, _)| a == from).count()
                + usize::from(s.terminal_edges.iter().any(|(a, _)| a == from));
            let decided_before = events
                .iter()
                .filter(|(p, d)| {
                    p < pos && d.kind.as_str() == "route_decision" && step_of(&d.data) == from_name
                })
                .count();
            let ran = starts.contains_key(&from_name);
            prop_assert!(
                !ran || decided_before == out_edges,
                "s{target} started before all route decisions of {from_name} ({decided_before}/{out_edges})"
            );
        }
    }

    // A step that ran to its end has a result for each of its subtasks, and its outputs list
    // every one not cancelled; a step that did not (not run, skipped, cancelled) has none.
    let outputs = result.step_outputs();
    for (i, report) in result.steps.iter().enumerate() {
        let ran = matches!(report.status, StepStatus::Succeeded | StepStatus::Failed);
        prop_assert_eq!(
            outputs.contains_key(report.name.as_str()),
            ran,
            "{}",
            report.name
        );
        if !ran {
            continue;
        }
        let results: Vec<_> = result
            .history
            .iter()
            .filter(|r| r.step_name == report.name)
            .collect();
        prop_assert_eq!(results.len(), s.steps[i].1.len(), "{}", report.name);
        let expected: BTreeSet<&str> = results
            .iter()
            .filter(|r| r.status != TaskStatus::Cancelled)
            .map(|r| r.task_description.as_str())
            .collect();
        let keys: BTreeSet<&str> = outputs[report.name.as_str()]
            .keys()
            .map(|key| key.as_ref())
            .collect();
        prop_assert_eq!(keys, expected, "{}", report.name);
    }

    // No send after cancellation, and none for a task after its result.
    let mut cancelled = false;
    let mut done_tasks = BTreeSet::new();
    for (_, o) in &out.log {
        match o {
            Observed::Input(Input::Cancel) => cancelled = true,
            Observed::Output(Output::Event(e)) if e.kind.as_str() == "task_response" => {
                done_tasks.insert((step_of(&e.data), e.data["subtask_index"].as_u64().unwrap()));
            }
            Observed::Output(Output::Transmit(r)) if r.purpose != OpPurpose::Cancel => {
                prop_assert!(!cancelled || result.success, "a send after cancellation");
                prop_assert!(
                    !done_tasks.contains(&(
                        r.correlation.step.to_string(),
                        u64::from(r.correlation.subtask_index)
                    )),
                    "a send for a finished task"
                );
            }
            _ => {}
        }
    }

    // Every remote task the engine learned of and that is non-final at the end was cancelled.
    let mut known = BTreeSet::new();
    for (_, o) in &out.log {
        if let Observed::Input(Input::ResponseBody { chunk, .. }) = o {
            let text = String::from_utf8_lossy(chunk);
            for name in AGENTS {
                let mut rest: &str = &text;
                while let Some(i) = rest.find(&format!("\"{name}-t")) {
                    let tail = &rest[i + 1..];
                    let end = tail.find('"').unwrap_or(tail.len());
                    let id = &tail[..end];
                    if !id.contains("-a") && !id.contains("-propose") {
                        known.insert((name.to_owned(), id.to_owned()));
                    }
                    rest = &tail[end..];
                }
            }
        }
    }
    for (name, agent) in &out.agents {
        for (id, state) in agent.open_tasks() {
            prop_assert!(
                !known.contains(&(name.clone(), id.clone())),
                "{name} task {id} left in {state} although the engine knew it"
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    #[test]
    fn runs_finish_and_keep_the_scheduling_invariants(s in scenario()) {
        let out = build(&s).drive_bounded(200_000);
        check_invariants(&s, &out)?;
    }

    #[test]
    fn the_same_seed_and_inputs_give_byte_identical_outputs(s in scenario()) {
        let a = build(&s).drive_bounded(200_000);
        let b = build(&s).drive_bounded(200_000);
        prop_assert_eq!(a.output_bytes(), b.output_bytes());
    }

    /// Events are observations only: switching some or all of them off changes nothing else,
    /// and the selected ones are exactly those of a run with every event.
    #[test]
    fn the_event_selection_changes_only_which_events_appear(s in scenario(), pick in 0usize..3) {
        let kinds = [EventType::StepStart, EventType::RouteDecision, EventType::Complete];
        let selection = match pick {
            0 => EventSelection::None,
            1 => EventSelection::Only(vec![kinds[0], kinds[1]]),
            _ => EventSelection::Only(vec![kinds[2]]),
        };
        let all = build(&s).drive_bounded(200_000);
        let some = build_selecting(&s, selection.clone()).drive_bounded(200_000);
        let keep = |o: &&Output| match o {
            Output::Event(e) => selection.includes(e.kind),
            _ => true,
        };
        let expected: Vec<&Output> = all.outputs().filter(keep).collect();
        let actual: Vec<&Output> = some.outputs().collect();
        prop_assert_eq!(
            serde_json::to_string(&expected).unwrap(),
            serde_json::to_string(&actual).unwrap()
        );
        prop_assert_eq!(all.result, some.result);
    }
}
