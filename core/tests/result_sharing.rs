//! The finished result is handed out once, not copied: the `Finished` output and
//! `Run::result` are the same value, and a driver that drops the run owns it alone.

use std::sync::Arc;

use a2at_core::agents::AgentDirectory;
use a2at_core::host::{HostReply, HostRequest, RouteDecision, TaskExecutionResult, TaskResult};
use a2at_core::run::{Run, RunConfig, RunStart};
use a2at_core::workflow::parse_and_validate;
use a2at_core::{ExecutionResult, Input, Output, Timestamp};

/// A run of `workflow` (local steps only: no agent directory is needed).
fn local_run(workflow: &str) -> Run {
    Run::new(
        Arc::new(parse_and_validate(workflow).unwrap()),
        Arc::new(AgentDirectory::default()),
        RunConfig::default(),
        RunStart::default(),
    )
}

/// Drives `run` to its end as a host that answers every self-task with `out of <step>` and
/// allows every conditional edge; `inspect` sees the run and each request before its answer.
/// Returns every host request (kept alive, as a host that stores them would) and the result.
fn drive(
    run: &mut Run,
    mut inspect: impl FnMut(&Run, &HostRequest),
) -> (Vec<HostRequest>, Arc<ExecutionResult>) {
    let mut kept = Vec::new();
    loop {
        match run.poll_output() {
            Some(Output::CallHost { call, request }) => {
                inspect(run, &request);
                let reply = match &request {
                    HostRequest::SelfTask(r) => HostReply::SelfTask(Ok(TaskResult::success(vec![
                        format!("out of {}", r.step_name).into(),
                    ]))),
                    HostRequest::Route(_) => HostReply::Route(Ok(RouteDecision::allow(None))),
                    other => panic!("unexpected request {other:?}"),
                };
                kept.push(request);
                run.handle(Input::HostReply { call, reply }, Timestamp::ZERO)
                    .unwrap();
            }
            Some(Output::Finished(result)) => return (kept, result),
            Some(_) => {}
            None => panic!("self-loop steps and routes need no timers"),
        }
    }
}

fn finished_run() -> (Run, Arc<ExecutionResult>) {
    let mut run = local_run(
        r#"{"steps": [{"name": "local", "step_type": "SELF_LOOP",
            "subtasks": [{"agent": "me", "description": "sum up"}]}]}"#,
    );
    let (_, result) = drive(&mut run, |_, _| {});
    (run, result)
}

#[test]
fn the_finished_output_and_run_result_are_one_value() {
    let (run, result) = finished_run();
    assert!(result.success);
    let kept = run.result().expect("a finished run has its result");
    assert!(
        std::ptr::eq(kept, &*result),
        "Run::result is a second copy of the Finished output's result"
    );
}

#[test]
fn dropping_the_run_leaves_the_output_the_only_owner() {
    let (run, result) = finished_run();
    drop(run);
    let owned =
        Arc::try_unwrap(result).expect("nothing else holds the result once the run is gone");
    assert_eq!(
        owned.step_outputs()["local"]["sum up"],
        vec![serde_json::json!("out of local")]
    );
}

/// `a` feeds `b` (plain edge) and `c` (conditional edge); every host request is kept alive
/// until the end, as a host that stores them would.
fn fan_out_keeping_requests() -> (Vec<HostRequest>, Arc<ExecutionResult>) {
    let mut run = local_run(
        r#"{"steps": [
            {"name": "a", "step_type": "SELF_LOOP",
             "subtasks": [{"agent": "me", "description": "first"}],
             "next": [{"step": "b"}, {"step": "c", "condition": "when it fits"}]},
            {"name": "b", "step_type": "SELF_LOOP", "subtasks": [{"agent": "me", "description": "second"}]},
            {"name": "c", "step_type": "SELF_LOOP", "subtasks": [{"agent": "me", "description": "third"}]}
        ]}"#,
    );
    let (kept, result) = drive(&mut run, |_, _| {});
    drop(run);
    (kept, result)
}

fn window_entry<'r>(requests: &'r [HostRequest], step: &str) -> &'r Arc<TaskExecutionResult> {
    requests
        .iter()
        .find_map(|r| match r {
            HostRequest::SelfTask(t) if t.step_name == step => {
                Some(&t.workflow_input.upstream_results[0].task_results[0])
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("no request for step {step}"))
}

#[test]
fn every_request_shares_one_copy_of_an_upstream_result() {
    let (requests, result) = fan_out_keeping_requests();
    assert!(result.success, "{:?}", result.error);
    let for_b = window_entry(&requests, "b");
    let for_c = window_entry(&requests, "c");
    let routed = requests
        .iter()
        .find_map(|r| match r {
            HostRequest::Route(route) => Some(&route.current_results[0]),
            _ => None,
        })
        .expect("the conditional edge was asked");
    assert_eq!(for_b.outputs, vec![serde_json::json!("out of a")]);
    assert!(
        Arc::ptr_eq(for_b, for_c),
        "b and c got two copies of a's result"
    );
    assert!(
        Arc::ptr_eq(for_b, routed),
        "the route request got its own copy of a's result"
    );
}

#[test]
fn results_still_held_by_a_host_stay_in_the_history() {
    // The host still holds requests carrying a's result when the run ends: the history must
    // copy it rather than lose it.
    let (requests, result) = fan_out_keeping_requests();
    let history: Vec<(&str, &[serde_json::Value])> = result
        .history
        .iter()
        .map(|r| (r.step_name.as_str(), r.outputs.as_slice()))
        .collect();
    assert_eq!(history.len(), 3, "{history:?}");
    assert_eq!(history[0], ("a", &[serde_json::json!("out of a")][..]));
    assert_eq!(window_entry(&requests, "b").step_name, "a");
}

#[test]
fn a_finished_subtask_is_readable_while_the_run_goes_on_and_after_it_ends() {
    let mut run = local_run(
        r#"{"steps": [
            {"name": "a", "step_type": "SELF_LOOP",
             "subtasks": [{"agent": "me", "description": "first"}], "next": [{"step": "b"}]},
            {"name": "b", "step_type": "SELF_LOOP", "subtasks": [{"agent": "me", "description": "second"}]}
        ]}"#,
    );
    let mut checked_mid_run = false;
    drive(&mut run, |run, request| {
        let HostRequest::SelfTask(r) = request else {
            return;
        };
        if r.step_name == "b" {
            // a has finished and b is waiting for its answer.
            assert_eq!(run.finished_count(), 1);
            let a = run.finished_task(0).expect("a's result, mid-run");
            assert_eq!(
                (a.step_name.as_str(), a.outputs.clone()),
                ("a", vec![serde_json::json!("out of a")])
            );
            assert!(run.finished_task(1).is_none());
            let progress = run.progress();
            assert_eq!(progress.history.len(), 1, "{:?}", progress.history);
            assert_eq!(progress.history[0].step_name, "a");
            checked_mid_run = true;
        }
    });
    assert!(checked_mid_run);
    assert_eq!(run.finished_count(), 2);
    let names: Vec<&str> = (0..2)
        .map(|i| {
            run.finished_task(i)
                .expect("after the end")
                .step_name
                .as_str()
        })
        .collect();
    assert_eq!(names, ["a", "b"]);
}

#[test]
fn the_history_is_allocated_to_its_length() {
    // One step of five subtasks: a list grown one result at a time would have room for eight.
    let subtasks: Vec<String> = (0..5)
        .map(|i| format!(r#"{{"agent": "me", "description": "part {i}"}}"#))
        .collect();
    let mut run = local_run(&format!(
        r#"{{"steps": [{{"name": "wide", "step_type": "SELF_LOOP", "subtasks": [{}]}}]}}"#,
        subtasks.join(",")
    ));
    let (_, result) = drive(&mut run, |_, _| {});
    assert_eq!(result.history.len(), 5);
    assert_eq!(result.history.capacity(), 5, "the result keeps unused room");
}
