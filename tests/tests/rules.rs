//! Run-machine rules that no other scenario pinned down (each was a surviving mutant).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2at_core::host::{RouteDecision, TaskResult, WorkflowInput};
use a2at_core::io::{OpPurpose, Output};
use a2at_core::run::{Run, RunConfig, RunStart};
use a2at_core::workflow::parse_and_validate;
use a2at_tests::agent::{NotifyEvent, NotifyScript, StreamEnding};
use a2at_tests::host::now;
use a2at_tests::{Observed, Plan, ScriptedAgent, ScriptedHost, Sim, SimOutcome, directory};
use serde_json::{Value, json};

fn sim(
    workflow: Value,
    agents: Vec<ScriptedAgent>,
    host: ScriptedHost,
    config: RunConfig,
    start: RunStart,
) -> SimOutcome {
    let wf = parse_and_validate(&workflow.to_string()).expect("valid workflow");
    let dir = directory(&agents);
    Sim::new(wf, dir, agents, host, config, start).drive_bounded(100_000)
}

/// [`sim`] with the default host, configuration and start.
fn sim_with_defaults(workflow: Value, agents: Vec<ScriptedAgent>) -> SimOutcome {
    sim(
        workflow,
        agents,
        ScriptedHost::default(),
        RunConfig::default(),
        RunStart::default(),
    )
}

/// When the budget ends while the send's stream of a known task is still open, the stream is
/// dropped at that moment (the task is known, so it is cancelled instead of read further).
#[test]
fn a_budget_expiry_drops_the_open_stream_of_a_known_task_at_once_and_cancels_it() {
    let wf = json!({"steps": [{"name": "s", "subtasks": [{"agent": "slow", "description": "x"}]}]});
    let script = NotifyScript::new(
        vec![NotifyEvent::Status("TASK_STATE_WORKING", "busy")],
        StreamEnding::StayOpen,
    );
    let agents = vec![
        ScriptedAgent::new("slow")
            .streaming()
            .by_default(Plan::Notify(script)),
    ];
    let config = RunConfig {
        task_budget: Duration::from_secs(2),
        ..RunConfig::default()
    };
    let out = sim(
        wf,
        agents,
        ScriptedHost::default(),
        config,
        RunStart::default(),
    );
    assert!(!out.result().success);
    let send = out
        .log
        .iter()
        .find_map(|(_, o)| match o {
            Observed::Output(Output::Transmit(r)) if r.purpose == OpPurpose::Send => Some(r.op),
            _ => None,
        })
        .expect("a send");
    let aborted_at = out
        .log
        .iter()
        .find_map(|(at, o)| match o {
            Observed::Output(Output::AbortTransmit { op }) if *op == send => Some(*at),
            _ => None,
        })
        .expect("the open stream is dropped");
    let cancel_at = out
        .log
        .iter()
        .find_map(|(at, o)| match o {
            Observed::Output(Output::Transmit(r)) if r.purpose == OpPurpose::Cancel => Some(*at),
            _ => None,
        })
        .expect("the known task is cancelled");
    assert_eq!(aborted_at, cancel_at, "dropped when the budget ended");
    assert_eq!(out.requests_to("slow", "CancelTask").len(), 1);
}

/// One step whose first two subtasks share a description ("same", on `alpha` then `beta`) and
/// whose third ("other") is unique, run to its end.
fn a_step_repeating_a_description() -> SimOutcome {
    let wf = json!({"steps": [{"name": "s", "subtasks": [
        {"agent": "alpha", "description": "same"},
        {"agent": "beta", "description": "same"},
        {"agent": "alpha", "description": "other"}
    ]}]});
    sim_with_defaults(
        wf,
        vec![ScriptedAgent::new("alpha"), ScriptedAgent::new("beta")],
    )
}

/// Two subtasks of one step with the same description keep both outputs, each under a key
/// that names its agent and index; a unique description is its own key.
#[test]
fn subtasks_sharing_a_description_keep_their_outputs_apart() {
    let out = a_step_repeating_a_description();
    assert!(out.result().success);
    let all = out.result().step_outputs();
    let outputs = &all["s"];
    let keys: Vec<&str> = outputs.keys().map(|key| key.as_ref()).collect();
    assert_eq!(keys, ["other", "same [alpha#0]", "same [beta#1]"]);
    assert!(outputs.values().all(|v| !v.is_empty()));
}

/// A description repeated within a step is counted over all of the step's subtasks, the
/// cancelled ones too: the winner of a race keeps its agent and index in its key even though
/// its twin, cancelled, has no outputs.
#[test]
fn a_repeated_description_keeps_its_suffix_when_its_twin_was_cancelled() {
    let wf = json!({"steps": [{"name": "race", "step_type": "any_success", "subtasks": [
        {"agent": "slow", "description": "same"}, {"agent": "fast", "description": "same"}]}]});
    let agents = vec![
        ScriptedAgent::new("slow").by_default(Plan::States(vec!["TASK_STATE_WORKING"])),
        ScriptedAgent::new("fast").by_default(Plan::Delayed(
            Duration::from_millis(600),
            Box::new(Plan::States(vec!["TASK_STATE_COMPLETED"])),
        )),
    ];
    let out = sim_with_defaults(wf, agents);
    let result = out.result();
    assert!(result.success, "{:?}", result.error);
    assert_eq!(result.history.len(), 2, "the cancelled twin has its result");
    let all = result.step_outputs();
    let keys: Vec<&str> = all["race"].keys().map(|key| key.as_ref()).collect();
    assert_eq!(keys, ["same [fast#1]"]);
}

/// A step that ran to its end has an entry even without subtasks, and a failed step keeps its
/// failures' (empty) outputs.
#[test]
fn a_step_that_ran_has_an_entry_even_when_it_has_no_subtasks_or_failed() {
    let wf = json!({"steps": [
        {"name": "empty", "step_type": "any_success"},
        {"name": "bad", "subtasks": [{"agent": "bad", "description": "b"}]}
    ], "edges": [{"from": "empty", "to": "bad"}]});
    let agents =
        vec![ScriptedAgent::new("bad").by_default(Plan::States(vec!["TASK_STATE_FAILED"]))];
    let out = sim_with_defaults(wf, agents);
    let result = out.result();
    assert!(!result.success);
    let all = result.step_outputs();
    let steps: Vec<&str> = all.keys().copied().collect();
    assert_eq!(steps, ["bad", "empty"]);
    assert!(all["empty"].is_empty());
    assert_eq!(all["bad"]["b"], Vec::<Value>::new());
}

/// A result written as JSON carries its step outputs between the history and the steps, and
/// reads back into the same result.
#[test]
fn a_result_written_as_json_carries_its_step_outputs_and_reads_back_the_same() {
    let out = a_step_repeating_a_description();
    let result = out.result();
    let text = serde_json::to_string(result).expect("a result is JSON");
    let history_at = text.find("\"history\"").expect("history");
    let outputs_at = text.find("\"step_outputs\"").expect("step_outputs");
    let steps_at = text.find("\"steps\"").expect("steps");
    assert!(history_at < outputs_at && outputs_at < steps_at, "{text}");
    let json: Value = serde_json::from_str(&text).expect("valid JSON");
    assert_eq!(
        json["step_outputs"]["s"]["same [beta#1]"],
        json!(["done: same"])
    );
    assert_eq!(json["step_outputs"]["s"]["other"], json!(["done: other"]));
    assert_eq!(
        json["step_outputs"],
        serde_json::to_value(result.step_outputs()).expect("outputs are JSON")
    );
    let back: a2at_core::result::ExecutionResult =
        serde_json::from_str(&text).expect("a result reads back");
    assert_eq!(&back, result);
    assert_eq!(back.step_outputs(), result.step_outputs());
}

/// A run reports the execution id it was configured with.
#[test]
fn a_configured_execution_id_is_the_runs_id() {
    let wf = parse_and_validate(
        &json!({"steps": [{"name": "s", "subtasks": [{"agent": "alpha", "description": "x"}]}]})
            .to_string(),
    )
    .unwrap();
    let agents = vec![ScriptedAgent::new("alpha")];
    let config = RunConfig {
        execution_id: Some("exec-42".into()),
        ..RunConfig::default()
    };
    let run = Run::new(
        Arc::new(wf),
        Arc::new(directory(&agents)),
        config,
        RunStart::default(),
    );
    assert_eq!(run.execution_id(), "exec-42");
}

/// The route request of a successful step carries the same upstream window the step's own
/// subtasks received (the run's intent and the selected upstream results).
#[test]
fn route_requests_carry_the_window_the_source_step_received() {
    let wf = json!({"steps": [
        {"name": "first", "step_type": "SELF_LOOP", "subtasks": [{"agent": "me", "description": "f"}],
         "next": [{"step": "decide"}]},
        {"name": "decide", "step_type": "SELF_LOOP", "subtasks": [{"agent": "me", "description": "d"}],
         "next": [{"step": "end", "condition": "done?"}]}
    ]});
    let windows: Arc<Mutex<Vec<(String, WorkflowInput)>>> = Arc::default();
    let (tasks, routes) = (Arc::clone(&windows), Arc::clone(&windows));
    let host = ScriptedHost::default()
        .on_self_task(move |r| {
            tasks
                .lock()
                .unwrap()
                .push((format!("task {}", r.step_name), r.workflow_input.clone()));
            now(Ok(TaskResult::success(vec![json!(r.instruction)])))
        })
        .on_route(move |r| {
            routes
                .lock()
                .unwrap()
                .push((format!("route {}", r.step_name), r.workflow_input.clone()));
            now(Ok(RouteDecision::allow(None)))
        });
    let start = RunStart {
        runtime_intent: "check the line".into(),
        ..RunStart::default()
    };
    let out = sim(wf, vec![], host, RunConfig::default(), start);
    assert!(out.result().success);
    let windows = windows.lock().unwrap();
    let of = |who: &str| {
        windows
            .iter()
            .find(|(w, _)| w == who)
            .map(|(_, input)| input.clone())
            .unwrap_or_else(|| panic!("{who} was asked"))
    };
    let task = of("task decide");
    assert_eq!(task.runtime_intent, "check the line");
    assert_eq!(task.upstream_results.len(), 1);
    assert_eq!(task.upstream_results[0].step_name, "first");
    assert_eq!(of("route decide"), task);
}

/// A cleanup `CancelTask` that the agent answers with an error is over at that answer: it is
/// not kept open until the cleanup budget, and the run ends right away.
#[test]
fn a_cleanup_cancel_answered_with_an_error_ends_at_the_answer() {
    let wf =
        json!({"steps": [{"name": "s", "subtasks": [{"agent": "stuck", "description": "x"}]}]});
    let agents = vec![
        ScriptedAgent::new("stuck")
            .by_default(Plan::States(vec!["TASK_STATE_WORKING"]))
            .fault_on(
                "CancelTask",
                1,
                a2at_tests::agent::AgentFault::Unavailable { retry_after: None },
            ),
    ];
    let config = RunConfig {
        task_budget: Duration::from_secs(2),
        cancel_budget: Duration::from_secs(5),
        ..RunConfig::default()
    };
    let out = sim(
        wf,
        agents,
        ScriptedHost::default(),
        config,
        RunStart::default(),
    );
    assert!(!out.result().success);
    assert_eq!(out.requests_to("stuck", "CancelTask").len(), 1);
    let cancel = out
        .log
        .iter()
        .find_map(|(_, o)| match o {
            Observed::Output(Output::Transmit(r)) if r.purpose == OpPurpose::Cancel => Some(r.op),
            _ => None,
        })
        .expect("a cleanup cancel");
    assert!(
        !out.log.iter().any(
            |(_, o)| matches!(o, Observed::Output(Output::AbortTransmit { op }) if *op == cancel)
        ),
        "the answered cleanup exchange is not dropped later"
    );
    assert!(
        out.end < a2at_core::time::Timestamp::ZERO.saturating_add(Duration::from_secs(4)),
        "the run ended at the cleanup answer, not at the cleanup budget: {:?}",
        out.end
    );
}
