//! Scenario tests of the run machine in the deterministic simulator (issue: core run machine).

use std::time::Duration;

use a2at_core::SharedStr;
use a2at_core::host::{HostError, HostRequest, MessageContent, RouteDecision, TaskResult, codes};
use a2at_core::io::{Input, OpPurpose, Output};
use a2at_core::result::StepStatus;
use a2at_core::run::{RunConfig, RunStart};
use a2at_core::workflow::{BusinessInput, ValidatedWorkflow, parse_and_validate};
use a2at_tests::host::now;
use a2at_tests::{Plan, ScriptedAgent, ScriptedHost, Sim, SimOutcome, directory};
use serde_json::{Value, json};

fn run_with(
    workflow: Value,
    agents: Vec<ScriptedAgent>,
    host: ScriptedHost,
    config: RunConfig,
) -> SimOutcome {
    let wf = parse_and_validate(&workflow.to_string()).expect("valid workflow");
    run_validated(wf, agents, host, config, RunStart::default())
}

/// A run of a workflow already validated (one the test keeps a clone of, say), started with
/// `start`.
fn run_validated(
    wf: ValidatedWorkflow,
    agents: Vec<ScriptedAgent>,
    host: ScriptedHost,
    config: RunConfig,
    start: RunStart,
) -> SimOutcome {
    let dir = directory(&agents);
    Sim::new(wf, dir, agents, host, config, start).drive_bounded(100_000)
}

fn run(workflow: Value, agents: Vec<ScriptedAgent>, host: ScriptedHost) -> SimOutcome {
    run_with(workflow, agents, host, RunConfig::default())
}

fn step_status(out: &SimOutcome, name: &str) -> StepStatus {
    out.result()
        .steps
        .iter()
        .find(|s| s.name == name)
        .map(|s| s.status)
        .expect("step exists")
}

fn transmits(out: &SimOutcome) -> Vec<&a2at_core::HttpRequest> {
    out.outputs()
        .filter_map(|o| match o {
            Output::Transmit(r) => Some(r),
            _ => None,
        })
        .collect()
}

fn chain3() -> Value {
    json!({"name": "chain", "steps": [
        {"name": "a", "subtasks": [{"agent": "alpha", "description": "first"}], "next": [{"step": "b"}]},
        {"name": "b", "subtasks": [{"agent": "beta", "description": "second"}], "next": [{"step": "c"}]},
        {"name": "c", "subtasks": [{"agent": "alpha", "description": "third"}]}
    ]})
}

/// The names a run hands out are the workflow's own texts, shared and not copied: every host
/// request, exchange and result of the chain holds the very step name, agent name and
/// description of the workflow, one execution id, and each agent's one name.
#[test]
fn requests_exchanges_and_results_share_the_workflows_names() {
    let wf = parse_and_validate(&chain3().to_string()).expect("valid workflow");
    // A clone of a validated workflow shares its texts with the one the run gets.
    let kept = wf.clone();
    let agents = vec![ScriptedAgent::new("alpha"), ScriptedAgent::new("beta")];
    let out = run_validated(
        wf,
        agents,
        ScriptedHost::default(),
        RunConfig::default(),
        RunStart::default(),
    );
    let shared = SharedStr::ptr_eq;
    let subtask = |step: &str, i: u32| {
        let s = kept
            .workflow()
            .steps
            .iter()
            .find(|s| s.name == step)
            .expect("a step of the workflow");
        (&s.name, &s.subtasks[i as usize])
    };
    let mut asked = Vec::new();
    for output in out.outputs() {
        if let Output::CallHost {
            request: HostRequest::Task(r),
            ..
        } = output
        {
            let (name, sub) = subtask(&r.step_name, r.subtask_index);
            assert!(shared(&r.step_name, name), "{}", r.step_name);
            assert!(shared(&r.agent_name, &sub.agent));
            assert!(shared(&r.instruction, &sub.description));
            let BusinessInput::Text(input) = &r.input else {
                panic!("the description is the input")
            };
            assert!(shared(input, &sub.description));
            asked.push(r.clone());
        }
    }
    assert_eq!(asked.len(), 3);
    assert!(
        asked
            .iter()
            .all(|r| shared(&r.execution_id, &asked[0].execution_id))
    );
    let sent = transmits(&out);
    assert_eq!(sent.len(), 3);
    for r in &sent {
        let (name, _) = subtask(&r.correlation.step, r.correlation.subtask_index);
        assert!(shared(&r.correlation.step, name));
        assert!(shared(&r.correlation.execution_id, &asked[0].execution_id));
    }
    // Both exchanges to `alpha` (steps a and c) carry its directory entry's one name.
    assert_eq!((&*sent[0].agent, &*sent[2].agent), ("alpha", "alpha"));
    assert!(shared(&sent[0].agent, &sent[2].agent));
    let result = out.result();
    assert_eq!(result.history.len(), 3);
    for (h, r) in result.history.iter().zip(&asked) {
        let (name, sub) = subtask(&h.step_name, h.subtask_index);
        assert!(shared(&h.step_name, name));
        assert!(shared(&h.agent_name, &sub.agent));
        assert!(shared(&h.task_description, &sub.description));
        assert!(shared(&h.task_id, &r.task_id));
    }
}

#[test]
fn a_chain_of_remote_steps_completes_with_outputs_history_and_ordered_events() {
    let out = run(
        chain3(),
        vec![ScriptedAgent::new("alpha"), ScriptedAgent::new("beta")],
        ScriptedHost::default(),
    );
    let result = out.result();
    assert!(result.success, "{:?}", result.error);
    assert_eq!(result.history.len(), 3);
    let order: Vec<&str> = result
        .history
        .iter()
        .map(|h| h.step_name.as_str())
        .collect();
    assert_eq!(order, ["a", "b", "c"]);
    assert_eq!(
        result.step_outputs()["b"]["second"],
        vec![json!("done: second")]
    );
    let types = out.event_types();
    assert_eq!(types.first(), Some(&"start"));
    assert_eq!(&types[types.len() - 2..], ["workflow_complete", "complete"]);
    let first_step: Vec<&str> = types
        .iter()
        .skip(1)
        .take_while(|t| **t != "step_complete")
        .copied()
        .collect();
    assert_eq!(
        first_step,
        [
            "step_start",
            "task_request",
            "task_status_changed",
            "agent_request",
            "agent_status_update",
            "agent_response",
            "task_status_changed",
            "task_response"
        ]
    );
    assert_eq!(out.events("route_decision").len(), 2);
}

#[test]
fn requests_carry_version_role_fresh_context_and_extensions_header() {
    let task_t = "https://projects.tmforum.org/a2aproject/telecommunication/extensions/Task-T/v1";
    let host = ScriptedHost::default().on_task(move |r| {
        now(Ok(MessageContent::text(r.instruction.clone())
            .with_extension(task_t)
            .with_metadata(task_t, json!("## Task\nrendered"))
            .with_metadata(
                "templateUri",
                json!("Task-T/network-layer/x/v1"),
            )))
    });
    let out = run(
        chain3(),
        vec![ScriptedAgent::new("alpha"), ScriptedAgent::new("beta")],
        host,
    );
    assert!(out.result().success);
    let sends: Vec<_> = out
        .requests
        .values()
        .flatten()
        .filter(|r| r.method == "SendMessage")
        .collect();
    assert_eq!(sends.len(), 3);
    let mut contexts = Vec::new();
    for s in &sends {
        assert_eq!(s.header("A2A-Version"), Some("1.0"));
        assert_eq!(s.header("A2A-Extensions"), Some(task_t));
        let m = s.message().unwrap();
        assert_eq!(m["role"], "ROLE_USER");
        assert!(m.get("taskId").is_none());
        assert_eq!(m["extensions"], json!([task_t]));
        assert_eq!(m["metadata"]["templateUri"], "Task-T/network-layer/x/v1");
        contexts.push(m["contextId"].as_str().unwrap().to_owned());
    }
    contexts.sort();
    contexts.dedup();
    assert_eq!(contexts.len(), 3, "each invocation gets a fresh contextId");
}

#[test]
fn fan_out_and_join_run_concurrently_and_the_join_sees_both_branches() {
    let wf = json!({"steps": [
        {"name": "root", "subtasks": [{"agent": "alpha", "description": "r"}], "next": [{"step": "left"}, {"step": "right"}]},
        {"name": "left", "subtasks": [{"agent": "alpha", "description": "l"}], "next": [{"step": "join"}]},
        {"name": "right", "subtasks": [{"agent": "beta", "description": "rr"}], "next": [{"step": "join"}]},
        {"name": "join", "subtasks": [{"agent": "beta", "description": "j"}]}
    ]});
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen2 = seen.clone();
    let host = ScriptedHost::default().on_task(move |r| {
        let names: Vec<String> = r
            .workflow_input
            .upstream_results
            .iter()
            .map(|u| u.step_name.to_string())
            .collect();
        seen2.lock().unwrap().push((r.step_name.clone(), names));
        now(Ok(MessageContent::text(r.instruction.clone())))
    });
    let agents = vec![
        ScriptedAgent::new("alpha").by_default(Plan::Delayed(
            Duration::from_millis(50),
            Box::new(Plan::States(vec!["TASK_STATE_COMPLETED"])),
        )),
        ScriptedAgent::new("beta"),
    ];
    let out = run(wf, agents, host);
    assert!(out.result().success);
    let seen = seen.lock().unwrap();
    let join = seen.iter().find(|(s, _)| s == "join").unwrap();
    assert_eq!(join.1, ["left", "right"]);
    // left and right were both dispatched before either finished.
    let starts: Vec<usize> = out
        .event_types()
        .iter()
        .enumerate()
        .filter(|(_, t)| **t == "step_start")
        .map(|(i, _)| i)
        .collect();
    let completes: Vec<usize> = out
        .event_types()
        .iter()
        .enumerate()
        .filter(|(_, t)| **t == "step_complete")
        .map(|(i, _)| i)
        .collect();
    assert!(
        starts[2] < completes[1],
        "right started before left completed"
    );
}

#[test]
fn self_loop_steps_call_the_host_and_never_touch_the_network() {
    let wf = json!({"steps": [{"name": "local", "type": "SelfLoop",
        "subtasks": [{"agent": "me", "description": "x"}, {"agent": "me", "description": "y"}]}]});
    let host = ScriptedHost::default().on_self_task(|r| {
        now(Ok(TaskResult::success(vec![
            json!({"n": [1, [2, 3]]}),
            json!(r.instruction),
        ])))
    });
    let out = run(wf, vec![], host);
    assert!(out.result().success);
    assert!(transmits(&out).is_empty());
    assert_eq!(
        out.result().step_outputs()["local"]["x"],
        vec![json!({"n": [1, [2, 3]]}), json!("x")]
    );
    assert!(
        out.result()
            .history
            .iter()
            .all(|h| h.received_messages.is_empty())
    );
}

#[test]
fn self_loop_failure_fails_the_step_with_the_hosts_code_not_in_outputs() {
    let wf = json!({"steps": [{"name": "local", "step_type": "SELF_LOOP", "subtasks": [{"agent": "me", "description": "x"}], "next": [{"step": "after"}]},
        {"name": "after", "step_type": "SELF_LOOP", "subtasks": [{"agent": "me", "description": "z"}]}]});
    let host = ScriptedHost::default()
        .on_self_task(|_| now(Ok(TaskResult::failure("biz.bad_input", "no site list"))));
    let out = run(wf, vec![], host);
    let r = out.result();
    assert!(!r.success);
    assert_eq!(r.error.as_ref().unwrap().code, codes::STEP_FAILED);
    assert_eq!(r.history[0].error_code.as_deref(), Some("biz.bad_input"));
    assert!(r.history[0].outputs.is_empty());
    assert_eq!(step_status(&out, "after"), StepStatus::NotRun);
    assert_eq!(out.events("error").len(), 2, "step error and run error");
}

/// Each local result carries the logical task id its `on_self_task` request had, whichever
/// way it ended: an answer, a failure, a host error, the callback budget, or a cancel.
#[test]
fn a_local_result_carries_the_task_id_of_its_request() {
    let check = |descriptions: &[&str],
                 config: RunConfig,
                 cancel_at: Duration,
                 code: Option<&str>| {
        let subtasks: Vec<Value> = descriptions
            .iter()
            .map(|d| json!({"agent": "me", "description": d}))
            .collect();
        let wf =
            json!({"steps": [{"name": "local", "step_type": "SELF_LOOP", "subtasks": subtasks}]});
        let host = ScriptedHost::default().on_self_task(|r| match r.instruction.as_str() {
            "ok" => now(Ok(TaskResult::success(vec![]))),
            "fail" => now(Ok(TaskResult::failure("biz.no", "no"))),
            "error" => now(Err(HostError::business("biz.broken", "broken"))),
            _ => (Duration::ZERO, None),
        });
        let wf = parse_and_validate(&wf.to_string()).expect("valid workflow");
        let out = Sim::new(
            wf,
            directory(&[]),
            vec![],
            host,
            config,
            RunStart::default(),
        )
        .cancel_at(cancel_at)
        .drive_bounded(100_000);
        let mut requested: Vec<(u32, String)> = out
            .outputs()
            .filter_map(|o| match o {
                Output::CallHost {
                    request: a2at_core::host::HostRequest::SelfTask(r),
                    ..
                } => Some((r.subtask_index, r.task_id.to_string())),
                _ => None,
            })
            .collect();
        let mut finished: Vec<(u32, String)> = out
            .result()
            .history
            .iter()
            .map(|h| (h.subtask_index, h.task_id.to_string()))
            .collect();
        requested.sort();
        finished.sort();
        assert_eq!(requested.len(), descriptions.len());
        assert_eq!(finished, requested, "{descriptions:?}");
        let last = out.result().history.last().unwrap();
        assert_eq!(last.error_code.as_deref(), code, "{descriptions:?}");
    };
    let quick = RunConfig {
        callback_budget: Duration::from_secs(1),
        ..RunConfig::default()
    };
    let never = Duration::from_secs(3600);
    check(&["ok"], quick.clone(), never, None);
    check(&["fail"], quick.clone(), never, Some("biz.no"));
    check(&["error"], quick.clone(), never, Some("biz.broken"));
    check(&["hang"], quick, never, Some(codes::TIMEOUT));
    check(
        &["hang"],
        RunConfig::default(),
        Duration::from_secs(1),
        Some(codes::CANCELLED),
    );
}

#[test]
fn a_missing_self_task_handler_fails_explicitly() {
    let wf = json!({"steps": [{"name": "local", "step_type": "SELF_LOOP", "subtasks": [{"agent": "me", "description": "x"}]}]});
    let host = ScriptedHost::default()
        .on_self_task(|_| now(Err(HostError::missing_handler("on_self_task"))));
    let out = run(wf, vec![], host);
    assert!(!out.result().success);
    assert_eq!(
        out.result().history[0].error_code.as_deref(),
        Some(codes::HOST_HANDLER_MISSING)
    );
}

#[test]
fn any_success_takes_the_first_success_and_cancels_the_others_remote_tasks() {
    let wf = json!({"steps": [{"name": "race", "step_type": "any_success", "subtasks": [
        {"agent": "slow", "description": "s"}, {"agent": "fast", "description": "f"}]}]});
    let agents = vec![
        ScriptedAgent::new("slow").by_default(Plan::States(vec!["TASK_STATE_WORKING"])),
        ScriptedAgent::new("fast").by_default(Plan::Delayed(
            Duration::from_millis(600),
            Box::new(Plan::States(vec!["TASK_STATE_COMPLETED"])),
        )),
    ];
    let out = run(wf, agents, ScriptedHost::default());
    let r = out.result();
    assert!(r.success, "{:?}", r.error);
    let slow = r.history.iter().find(|h| h.agent_name == "slow").unwrap();
    assert_eq!(slow.status, a2at_core::host::TaskStatus::Cancelled);
    assert_eq!(out.requests_to("slow", "CancelTask").len(), 1);
    assert!(!r.step_outputs()["race"].contains_key("s"));
    assert_eq!(r.step_outputs()["race"]["f"], vec![json!("done: f")]);
}

#[test]
fn any_success_with_zero_subtasks_succeeds_and_all_failures_fail() {
    let out = run(
        json!({"steps": [{"name": "empty", "step_type": "ANY_SUCCESS"}]}),
        vec![],
        ScriptedHost::default(),
    );
    assert!(out.result().success);
    let wf = json!({"steps": [{"name": "race", "step_type": "ANY_SUCCESS", "subtasks": [
        {"agent": "bad", "description": "a"}, {"agent": "bad", "description": "b"}]}]});
    let out = run(
        wf,
        vec![ScriptedAgent::new("bad").by_default(Plan::States(vec!["TASK_STATE_FAILED"]))],
        ScriptedHost::default(),
    );
    assert!(!out.result().success);
    assert_eq!(
        out.result().step_outputs()["race"].len(),
        2,
        "completed failures are kept"
    );
}

#[test]
fn all_success_waits_for_peers_and_fails_if_any_subtask_fails() {
    let wf = json!({"steps": [{"name": "both", "subtasks": [
        {"agent": "bad", "description": "a"}, {"agent": "good", "description": "b"}]}, {"name": "never"}]});
    let agents = vec![
        ScriptedAgent::new("bad").by_default(Plan::States(vec!["TASK_STATE_FAILED"])),
        ScriptedAgent::new("good").by_default(Plan::Delayed(
            Duration::from_secs(1),
            Box::new(Plan::States(vec!["TASK_STATE_COMPLETED"])),
        )),
    ];
    let out = run(wf, agents, ScriptedHost::default());
    let r = out.result();
    assert!(!r.success);
    assert_eq!(r.history.len(), 2, "the peer was not cancelled");
    let bad = r.history.iter().find(|h| h.agent_name == "bad").unwrap();
    assert_eq!(bad.error_code.as_deref(), Some(codes::REMOTE_TASK_FAILED));
    assert_eq!(
        bad.error.as_deref(),
        Some("Agent returned state=TASK_STATE_FAILED")
    );
    assert!(bad.outputs.is_empty());
    assert!(
        !bad.received_messages.is_empty(),
        "the failure evidence is kept"
    );
}

fn routing_wf() -> Value {
    json!({"steps": [
        {"name": "decide", "step_type": "SELF_LOOP", "subtasks": [{"agent": "me", "description": "d"}], "next": [
            {"step": "fix", "condition": "fault found"},
            {"step": "report", "condition": "  "},
            {"step": "end", "condition": "nothing to do"},
            {"step": "notify", "condition": "customer impact"}]},
        {"name": "fix", "step_type": "SELF_LOOP", "subtasks": [{"agent": "me", "description": "f"}]},
        {"name": "report", "step_type": "SELF_LOOP", "subtasks": [{"agent": "me", "description": "r"}]},
        {"name": "notify", "step_type": "SELF_LOOP", "subtasks": [{"agent": "me", "description": "n"}]}
    ]})
}

#[test]
fn each_conditional_edge_is_asked_once_blank_edges_never_and_allowed_targets_fan_out() {
    let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let asked2 = asked.clone();
    let host = ScriptedHost::default().on_route(move |r| {
        asked2.lock().unwrap().push(r.next_step.clone());
        let allow = r.next_step != "notify";
        now(Ok(RouteDecision {
            allowed: allow,
            reason: Some(format!("because {}", r.condition)),
        }))
    });
    let out = run(routing_wf(), vec![], host);
    assert!(out.result().success);
    let mut asked = asked.lock().unwrap().clone();
    asked.sort();
    assert_eq!(asked, ["end", "fix", "notify"]);
    assert_eq!(step_status(&out, "fix"), StepStatus::Succeeded);
    assert_eq!(step_status(&out, "report"), StepStatus::Succeeded);
    assert_eq!(step_status(&out, "notify"), StepStatus::Skipped);
    let decisions = out.events("route_decision");
    assert_eq!(decisions.len(), 4, "one event per outgoing edge");
    assert_eq!(decisions[1]["conditional"], false);
    assert_eq!(decisions[3]["allowed"], false);
}

#[test]
fn all_denied_with_no_unconditional_edge_ends_the_branch_normally() {
    let wf = json!({"steps": [
        {"name": "decide", "step_type": "SELF_LOOP", "subtasks": [{"agent": "me", "description": "d"}], "next": [
            {"step": "fix", "condition": "fault"}]},
        {"name": "fix", "step_type": "SELF_LOOP", "subtasks": [{"agent": "me", "description": "f"}]}]});
    let host = ScriptedHost::default().on_route(|_| now(Ok(RouteDecision::deny(None))));
    let out = run(wf, vec![], host);
    assert!(out.result().success);
    assert_eq!(step_status(&out, "fix"), StepStatus::Skipped);
}

#[test]
fn a_failed_route_callback_fails_the_run_before_any_successor_naming_the_edge() {
    let host = ScriptedHost::default().on_route(|r| {
        if r.next_step == "notify" {
            (
                Duration::from_millis(5),
                Some(Err(HostError::business(
                    "policy.down",
                    "policy service unavailable",
                ))),
            )
        } else {
            (
                Duration::from_millis(1),
                Some(Ok(RouteDecision::allow(None))),
            )
        }
    });
    let out = run(routing_wf(), vec![], host);
    let r = out.result();
    assert!(!r.success);
    let err = r.error.as_ref().unwrap();
    assert_eq!(err.code, codes::ROUTE_FAILED);
    assert!(err.message.contains("decide -> notify"), "{}", err.message);
    assert!(err.message.contains("policy service unavailable"));
    for s in ["fix", "report", "notify"] {
        assert_eq!(step_status(&out, s), StepStatus::NotRun, "{s}");
    }
    assert!(out.events("route_decision").is_empty());
}

#[test]
fn a_route_callback_that_never_answers_fails_at_the_callback_budget() {
    let host = ScriptedHost::default().on_route(|r| {
        if r.next_step == "fix" {
            (Duration::ZERO, None)
        } else {
            now(Ok(RouteDecision::allow(None)))
        }
    });
    let config = RunConfig {
        callback_budget: Duration::from_secs(3),
        ..RunConfig::default()
    };
    let out = run_with(routing_wf(), vec![], host, config);
    assert!(!out.result().success);
    assert_eq!(
        out.result().error.as_ref().unwrap().code,
        codes::ROUTE_FAILED
    );
    assert_eq!(out.end, a2at_core::Timestamp::from_millis(3000));
    assert!(
        out.outputs()
            .any(|o| matches!(o, Output::AbandonHostCall { .. }))
    );
}

#[test]
fn a_join_behind_an_untaken_branch_is_not_blocked_by_the_dead_path() {
    let wf = json!({"steps": [
        {"name": "root", "step_type": "SELF_LOOP", "subtasks": [{"agent": "me", "description": "r"}], "next": [
            {"step": "taken", "condition": "yes"}, {"step": "untaken", "condition": "no"}]},
        {"name": "taken", "step_type": "SELF_LOOP", "subtasks": [{"agent": "me", "description": "t"}], "next": [{"step": "join"}]},
        {"name": "untaken", "step_type": "SELF_LOOP", "subtasks": [{"agent": "me", "description": "u"}], "next": [{"step": "deeper"}]},
        {"name": "deeper", "step_type": "SELF_LOOP", "subtasks": [{"agent": "me", "description": "d"}], "next": [{"step": "join"}]},
        {"name": "join", "step_type": "SELF_LOOP", "context_from": "*", "subtasks": [{"agent": "me", "description": "j"}]}]});
    let host = ScriptedHost::default().on_route(|r| {
        now(Ok(RouteDecision {
            allowed: r.condition == "yes",
            reason: None,
        }))
    });
    let out = run(wf, vec![], host);
    assert!(out.result().success);
    assert_eq!(step_status(&out, "untaken"), StepStatus::Skipped);
    assert_eq!(step_status(&out, "deeper"), StepStatus::Skipped);
    assert_eq!(step_status(&out, "join"), StepStatus::Succeeded);
}

#[test]
fn context_from_selects_direct_none_all_or_named_upstream_results() {
    let wf = json!({"steps": [
        {"name": "a", "step_type": "SELF_LOOP", "subtasks": [{"agent": "me", "description": "a"}], "next": [{"step": "b"}]},
        {"name": "b", "step_type": "SELF_LOOP", "subtasks": [{"agent": "me", "description": "b"}], "next": [{"step": "direct"}, {"step": "none"}, {"step": "all"}, {"step": "named"}]},
        {"name": "direct", "step_type": "SELF_LOOP", "subtasks": [{"agent": "me", "description": "x"}]},
        {"name": "none", "step_type": "SELF_LOOP", "context_from": [], "subtasks": [{"agent": "me", "description": "x"}]},
        {"name": "all", "step_type": "SELF_LOOP", "context_from": ["*"], "subtasks": [{"agent": "me", "description": "x"}]},
        {"name": "named", "step_type": "SELF_LOOP", "context_from": "a", "subtasks": [{"agent": "me", "description": "x"}]}]});
    let seen = std::sync::Arc::new(std::sync::Mutex::new(std::collections::BTreeMap::new()));
    let seen2 = seen.clone();
    let host = ScriptedHost::default().on_self_task(move |r| {
        let names: Vec<String> = r
            .workflow_input
            .upstream_results
            .iter()
            .map(|u| u.step_name.to_string())
            .collect();
        assert_eq!(r.workflow_input.runtime_intent, "");
        seen2.lock().unwrap().insert(r.step_name.clone(), names);
        now(Ok(TaskResult::success(vec![])))
    });
    let out = run(wf, vec![], host);
    assert!(out.result().success);
    let seen = seen.lock().unwrap();
    assert_eq!(seen["direct"], ["b"]);
    assert!(seen["none"].is_empty());
    assert_eq!(seen["all"], ["a", "b"]);
    assert_eq!(seen["named"], ["a"]);
}

#[test]
fn a_working_task_is_observed_with_get_task_every_poll_interval_without_resending() {
    let wf = json!({"steps": [{"name": "s", "subtasks": [{"agent": "slow", "description": "x"}]}]});
    let agents = vec![ScriptedAgent::new("slow").by_default(Plan::States(vec![
        "TASK_STATE_SUBMITTED",
        "TASK_STATE_WORKING",
        "TASK_STATE_WORKING",
        "TASK_STATE_COMPLETED",
    ]))];
    let out = run(wf, agents, ScriptedHost::default());
    assert!(out.result().success);
    assert_eq!(out.requests_to("slow", "SendMessage").len(), 1);
    let polls = out.requests_to("slow", "GetTask");
    assert_eq!(polls.len(), 3);
    assert_eq!(polls[0].params["historyLength"], 0);
    let poll_times: Vec<u64> = out
        .log
        .iter()
        .filter_map(|(t, o)| match o {
            a2at_tests::Observed::Output(Output::Transmit(r)) if r.purpose == OpPurpose::Poll => {
                Some(t.as_micros())
            }
            _ => None,
        })
        .collect();
    assert!(poll_times.windows(2).all(|w| w[1] - w[0] >= 250_000));
}

#[test]
fn a_budget_expiry_fails_the_task_and_cancels_the_known_remote_task() {
    let wf =
        json!({"steps": [{"name": "s", "subtasks": [{"agent": "stuck", "description": "x"}]}]});
    let agents =
        vec![ScriptedAgent::new("stuck").by_default(Plan::States(vec!["TASK_STATE_WORKING"]))];
    let config = RunConfig {
        task_budget: Duration::from_secs(2),
        ..RunConfig::default()
    };
    let out = run_with(wf, agents, ScriptedHost::default(), config);
    let r = out.result();
    assert!(!r.success);
    assert_eq!(r.history[0].error_code.as_deref(), Some(codes::TIMEOUT));
    assert_eq!(out.requests_to("stuck", "CancelTask").len(), 1);
    let cancel_pos = out.log.iter().position(|(_, o)| matches!(o, a2at_tests::Observed::Output(Output::Transmit(r)) if r.purpose == OpPurpose::Cancel)).unwrap();
    let finished_pos = out
        .log
        .iter()
        .position(|(_, o)| matches!(o, a2at_tests::Observed::Output(Output::Finished(_))))
        .unwrap();
    assert!(
        cancel_pos < finished_pos,
        "cleanup ends before the run finishes"
    );
}

#[test]
fn content_that_arrives_after_the_budget_is_never_sent() {
    let wf =
        json!({"steps": [{"name": "s", "subtasks": [{"agent": "alpha", "description": "x"}]}]});
    let host = ScriptedHost::default().on_task(|r| {
        (
            Duration::from_secs(5),
            Some(Ok(MessageContent::text(r.instruction.clone()))),
        )
    });
    let config = RunConfig {
        task_budget: Duration::from_secs(1),
        ..RunConfig::default()
    };
    let out = run_with(wf, vec![ScriptedAgent::new("alpha")], host, config);
    assert!(!out.result().success);
    assert_eq!(
        out.result().history[0].error_code.as_deref(),
        Some(codes::TIMEOUT)
    );
    assert!(transmits(&out).is_empty(), "the late content was dropped");
}

#[test]
fn cancelling_a_run_cancels_known_remote_tasks_and_sends_nothing_new() {
    let wf = json!({"steps": [{"name": "s", "subtasks": [{"agent": "slow", "description": "x"}, {"agent": "slow", "description": "y"}], "next": [{"step": "t"}]},
        {"name": "t", "subtasks": [{"agent": "slow", "description": "z"}]}]});
    let agents =
        vec![ScriptedAgent::new("slow").by_default(Plan::States(vec!["TASK_STATE_WORKING"]))];
    let wfv = parse_and_validate(&wf.to_string()).unwrap();
    let dir = directory(&agents);
    let out = Sim::new(
        wfv,
        dir,
        agents,
        ScriptedHost::default(),
        RunConfig::default(),
        RunStart::default(),
    )
    .cancel_at(Duration::from_secs(2))
    .drive_bounded(100_000);
    let r = out.result();
    assert!(!r.success);
    assert_eq!(r.error.as_ref().unwrap().code, codes::CANCELLED);
    assert_eq!(out.requests_to("slow", "CancelTask").len(), 2);
    assert_eq!(step_status(&out, "t"), StepStatus::NotRun);
    let cancel_at = out
        .log
        .iter()
        .position(|(_, o)| matches!(o, a2at_tests::Observed::Input(Input::Cancel)))
        .unwrap();
    let late_sends = out.log[cancel_at..].iter().filter(|(_, o)| matches!(o, a2at_tests::Observed::Output(Output::Transmit(r)) if r.purpose != OpPurpose::Cancel)).count();
    assert_eq!(late_sends, 0);
    assert!(
        r.history
            .iter()
            .all(|h| h.status == a2at_core::host::TaskStatus::Cancelled)
    );
}

#[test]
fn a_pre_creation_rejection_projects_to_a_stable_a2a_code_without_retry() {
    for agent in [
        ScriptedAgent::new("picky"),
        ScriptedAgent::new("picky").rest(),
    ] {
        let agent = agent.by_default(Plan::Reject {
            status: 400,
            code: -32602,
            reason: "INVALID_PARAMS",
        });
        let wf =
            json!({"steps": [{"name": "s", "subtasks": [{"agent": "picky", "description": "x"}]}]});
        let out = run(wf, vec![agent], ScriptedHost::default());
        assert!(!out.result().success);
        assert_eq!(
            out.result().history[0].error_code.as_deref(),
            Some("a2a.invalid_params")
        );
        assert_eq!(
            out.requests_to("picky", "SendMessage").len(),
            1,
            "no automatic retry"
        );
        assert!(
            out.requests_to("picky", "CancelTask").is_empty(),
            "no task was created"
        );
    }
}

#[test]
fn a_response_without_any_event_is_looked_up_once_then_fails() {
    // A stream that closes before any event is an empty stream (ER-7); an empty unary body is
    // not a valid response at all. Either leaves the send's outcome unknown: the engine looks
    // for the task by its context once (none exists here) and fails with that first error.
    // Without retries it fails at once.
    for (agent, code) in [
        (ScriptedAgent::new("mute").streaming(), codes::EMPTY_STREAM),
        (
            ScriptedAgent::new("mute").rest().streaming(),
            codes::EMPTY_STREAM,
        ),
        (ScriptedAgent::new("mute"), "a2a.invalid_agent_response"),
    ] {
        let agent = agent.by_default(Plan::Empty);
        let wf =
            json!({"steps": [{"name": "s", "subtasks": [{"agent": "mute", "description": "x"}]}]});
        let out = run(wf.clone(), vec![agent.clone()], ScriptedHost::default());
        assert_eq!(out.result().history[0].error_code.as_deref(), Some(code));
        assert_eq!(out.requests_to("mute", "ListTasks").len(), 1);
        assert_eq!(
            out.requests_to("mute", "SendMessage").len()
                + out.requests_to("mute", "SendStreamingMessage").len(),
            1
        );
        let fail_fast = RunConfig {
            retry: a2at_core::RetryPolicy::FAIL_FAST,
            ..RunConfig::default()
        };
        let out = run_with(wf, vec![agent], ScriptedHost::default(), fail_fast);
        assert_eq!(out.result().history[0].error_code.as_deref(), Some(code));
        assert!(
            out.end < a2at_core::Timestamp::from_millis(100),
            "no waiting for the budget"
        );
    }
}

#[test]
fn an_unreachable_agent_fails_with_no_response() {
    let wf = json!({"steps": [{"name": "s", "subtasks": [{"agent": "gone", "description": "x"}]}]});
    let out = run(
        wf,
        vec![ScriptedAgent::new("gone").by_default(Plan::Unreachable)],
        ScriptedHost::default(),
    );
    assert_eq!(
        out.result().history[0].error_code.as_deref(),
        Some(codes::REMOTE_NO_RESPONSE)
    );
}

#[test]
fn a_bare_message_answer_is_a_standalone_completion() {
    let wf = json!({"steps": [{"name": "s", "subtasks": [{"agent": "chat", "description": "x"}]}]});
    let out = run(
        wf,
        vec![ScriptedAgent::new("chat").by_default(Plan::BareMessage("hello back"))],
        ScriptedHost::default(),
    );
    assert!(out.result().success);
    assert_eq!(
        out.result().step_outputs()["s"]["x"],
        vec![json!("hello back")]
    );
}

#[test]
fn streaming_and_rest_agents_complete_the_same_way() {
    for agent in [
        ScriptedAgent::new("alpha").streaming(),
        ScriptedAgent::new("alpha").rest(),
        ScriptedAgent::new("alpha").rest().streaming(),
    ] {
        let wf =
            json!({"steps": [{"name": "s", "subtasks": [{"agent": "alpha", "description": "x"}]}]});
        let out = run(wf, vec![agent], ScriptedHost::default());
        assert!(out.result().success, "{:?}", out.result().error);
        assert_eq!(
            out.result().step_outputs()["s"]["x"],
            vec![json!("done: x")]
        );
    }
}

#[test]
fn an_unknown_agent_fails_the_task_naming_it() {
    let wf =
        json!({"steps": [{"name": "s", "subtasks": [{"agent": "nobody", "description": "x"}]}]});
    let out = run(wf, vec![], ScriptedHost::default());
    let h = &out.result().history[0];
    assert_eq!(h.error_code.as_deref(), Some(codes::AGENT_NOT_FOUND));
    assert_eq!(h.error.as_deref(), Some("Agent not found: nobody"));
}

#[test]
fn same_seed_gives_byte_identical_outputs_and_another_seed_changes_ids() {
    let go = |seed| {
        let agents = vec![ScriptedAgent::new("alpha"), ScriptedAgent::new("beta")];
        let wf = parse_and_validate(&chain3().to_string()).unwrap();
        let dir = directory(&agents);
        Sim::new(
            wf,
            dir,
            agents,
            ScriptedHost::default(),
            RunConfig {
                seed,
                ..RunConfig::default()
            },
            RunStart::default(),
        )
        .drive()
    };
    assert_eq!(go(7).output_bytes(), go(7).output_bytes());
    assert_ne!(go(7).output_bytes(), go(8).output_bytes());
}

#[test]
fn duplicate_and_late_responses_are_ignored() {
    let agents = vec![ScriptedAgent::new("alpha"), ScriptedAgent::new("beta")];
    let wf = parse_and_validate(&chain3().to_string()).unwrap();
    let dir = directory(&agents);
    let out = Sim::new(
        wf,
        dir,
        agents,
        ScriptedHost::default(),
        RunConfig::default(),
        RunStart::default(),
    )
    .with_duplicate_deliveries()
    .drive();
    assert!(out.result().success);
    assert_eq!(out.result().history.len(), 3);
}

#[test]
fn time_going_backwards_is_an_api_misuse_that_changes_nothing() {
    use std::sync::Arc;
    let wf = parse_and_validate(&json!({"steps": [{"name": "s", "step_type": "SELF_LOOP", "subtasks": [{"agent": "me", "description": "x"}]}]}).to_string()).unwrap();
    let mut run = a2at_core::Run::new(
        Arc::new(wf),
        Arc::new(a2at_core::agents::AgentDirectory::default()),
        RunConfig::default(),
        RunStart::default(),
    );
    run.handle_timeout(a2at_core::Timestamp::from_millis(10))
        .unwrap();
    let err = run
        .handle_timeout(a2at_core::Timestamp::from_millis(5))
        .unwrap_err();
    assert!(matches!(
        err,
        a2at_core::ApiMisuse::TimeWentBackwards { .. }
    ));
    // An answer for an unknown call is ignored, not an error.
    run.handle(
        Input::HostReply {
            call: a2at_core::CallId(999),
            reply: a2at_core::host::HostReply::SelfTask(Ok(TaskResult::success(vec![]))),
        },
        a2at_core::Timestamp::from_millis(10),
    )
    .unwrap();
    assert!(!run.is_finished());
}

#[test]
fn a_stream_that_ends_before_a_final_state_is_followed_by_get_task_polling() {
    for agent in [
        ScriptedAgent::new("alpha").streaming(),
        ScriptedAgent::new("alpha").rest().streaming(),
    ] {
        let agent = agent.by_default(Plan::States(vec![
            "TASK_STATE_WORKING",
            "TASK_STATE_COMPLETED",
        ]));
        let wf =
            json!({"steps": [{"name": "s", "subtasks": [{"agent": "alpha", "description": "x"}]}]});
        // Without retries the task is polled; with them (the default) it is resubscribed.
        let fail_fast = RunConfig {
            retry: a2at_core::RetryPolicy::FAIL_FAST,
            ..RunConfig::default()
        };
        let resubscribed = run(wf.clone(), vec![agent.clone()], ScriptedHost::default());
        assert!(resubscribed.result().success);
        assert_eq!(
            resubscribed.requests_to("alpha", "SubscribeToTask").len(),
            1
        );
        assert_eq!(resubscribed.requests_to("alpha", "GetTask").len(), 0);
        let out = run_with(wf, vec![agent], ScriptedHost::default(), fail_fast);
        assert!(out.result().success, "{:?}", out.result().history[0].error);
        assert_eq!(out.requests_to("alpha", "SendStreamingMessage").len(), 1);
        assert_eq!(out.requests_to("alpha", "GetTask").len(), 1);
        assert_eq!(
            out.result().step_outputs()["s"]["x"],
            vec![json!("done: x")]
        );
        let updates = out.events("agent_status_update");
        assert!(
            updates.len() >= 3,
            "stream events are forwarded as they arrive"
        );
    }
}

#[test]
fn content_rules_are_checked_before_anything_is_sent() {
    type Make = fn(&a2at_core::host::TaskRequest) -> MessageContent;
    let cases: [(Make, &str); 4] = [
        (|_| MessageContent::parts(vec![]), "no parts"),
        (
            |r| {
                MessageContent::text(r.instruction.clone())
                    .with_extension(a2at_core::a2at::TASK_T_URI)
            },
            "Task-T",
        ),
        (
            |r| {
                MessageContent::text(r.instruction.clone())
                    .with_extension("https://example.test/ext/unknown/v1")
            },
            "not declared",
        ),
        (
            |r| MessageContent::text(r.instruction.clone()).with_extension(" "),
            "blank",
        ),
    ];
    for (make, needle) in cases {
        let host = ScriptedHost::default().on_task(move |r| now(Ok(make(r))));
        let wf =
            json!({"steps": [{"name": "s", "subtasks": [{"agent": "alpha", "description": "x"}]}]});
        let out = run(wf, vec![ScriptedAgent::new("alpha")], host);
        let h = &out.result().history[0];
        assert_eq!(
            h.error_code.as_deref(),
            Some(codes::INVALID_CONTENT),
            "{needle}"
        );
        assert!(
            h.error.as_deref().unwrap().contains(needle),
            "{:?} lacks {needle}",
            h.error
        );
        assert!(transmits(&out).is_empty());
    }
}

#[test]
fn a_reply_of_the_wrong_kind_is_a_misuse_that_leaves_the_run_unchanged() {
    use std::sync::Arc;
    let wf = parse_and_validate(&json!({"steps": [{"name": "s", "step_type": "SELF_LOOP", "subtasks": [{"agent": "me", "description": "x"}]}]}).to_string()).unwrap();
    let mut run = a2at_core::Run::new(
        Arc::new(wf),
        Arc::new(a2at_core::agents::AgentDirectory::default()),
        RunConfig::default(),
        RunStart::default(),
    );
    let call = std::iter::from_fn(|| run.poll_output())
        .find_map(|o| match o {
            Output::CallHost { call, .. } => Some(call),
            _ => None,
        })
        .unwrap();
    let wrong = a2at_core::host::HostReply::Route(Ok(RouteDecision::allow(None)));
    let err = run
        .handle(
            Input::HostReply { call, reply: wrong },
            a2at_core::Timestamp::from_millis(50),
        )
        .unwrap_err();
    assert!(matches!(
        err,
        a2at_core::ApiMisuse::ReplyKindMismatch { .. }
    ));
    // The clock did not move: an earlier time is still accepted, and the right answer finishes.
    let right = a2at_core::host::HostReply::SelfTask(Ok(TaskResult::success(vec![])));
    run.handle(
        Input::HostReply { call, reply: right },
        a2at_core::Timestamp::from_millis(10),
    )
    .unwrap();
    assert!(run.is_finished());
    assert!(run.result().unwrap().success);
}

/// Runs one subtask on `agent` ("late") whose answer arrives after the one-second budget, with
/// five seconds for cleanup; the subtask times out.
fn run_past_the_budget(agent: ScriptedAgent) -> SimOutcome {
    let wf = json!({"steps": [{"name": "s", "subtasks": [{"agent": "late", "description": "x"}]}]});
    let config = RunConfig {
        task_budget: Duration::from_secs(1),
        cancel_budget: Duration::from_secs(5),
        ..RunConfig::default()
    };
    let out = run_with(wf, vec![agent], ScriptedHost::default(), config);
    assert_eq!(
        out.result().history[0].error_code.as_deref(),
        Some(codes::TIMEOUT)
    );
    out
}

/// An agent that answers its send two seconds late with `events`.
fn answering_late(events: Vec<Value>) -> ScriptedAgent {
    ScriptedAgent::new("late").by_default(Plan::Delayed(
        Duration::from_secs(2),
        Box::new(Plan::Events(events)),
    ))
}

#[test]
fn a_task_created_after_the_budget_expired_is_still_cancelled() {
    // The send is in flight when the budget expires; the agent answers later with a task. The
    // engine keeps reading that one answer and cancels the orphaned task (TO-3).
    for agent in [
        ScriptedAgent::new("late"),
        ScriptedAgent::new("late").streaming().rest(),
    ] {
        let agent = agent.by_default(Plan::Delayed(
            Duration::from_secs(2),
            Box::new(Plan::States(vec!["TASK_STATE_WORKING"])),
        ));
        let out = run_past_the_budget(agent);
        assert_eq!(out.requests_to("late", "CancelTask").len(), 1);
        assert!(out.agents["late"].open_tasks().is_empty());
    }
}

#[test]
fn a_late_task_that_is_already_final_or_has_no_id_is_not_cancelled() {
    // The orphaned send is still read; only a task that exists and can still run is worth a
    // CancelTask.
    for (state, id) in [
        ("TASK_STATE_COMPLETED", "$TASK"),
        ("TASK_STATE_FAILED", "$TASK"),
        ("TASK_STATE_WORKING", " "),
    ] {
        let late = json!({"task": {"id": id, "contextId": "$CTX", "status": {"state": state}}});
        let out = run_past_the_budget(answering_late(vec![late]));
        assert_eq!(
            out.requests_to("late", "CancelTask").len(),
            0,
            "{state} {id:?}"
        );
    }
}

#[test]
fn a_late_task_naming_another_context_is_cancelled_all_the_same() {
    // The orphaned send created it, whatever context the agent claims: left alone it would run
    // on with nobody waiting for it.
    let late = json!({"task": {"id": "$TASK", "contextId": "elsewhere",
        "status": {"state": "TASK_STATE_WORKING"}}});
    let out = run_past_the_budget(answering_late(vec![late]));
    assert_eq!(out.requests_to("late", "CancelTask").len(), 1);
    assert_eq!(out.requests_to("late", "ListTasks").len(), 0);
}

#[test]
fn an_orphaned_send_that_never_answers_is_dropped_at_the_cleanup_budget() {
    let agent = ScriptedAgent::new("mute").by_default(Plan::Hang);
    let wf = json!({"steps": [{"name": "s", "subtasks": [{"agent": "mute", "description": "x"}]}]});
    let config = RunConfig {
        task_budget: Duration::from_secs(1),
        cancel_budget: Duration::from_secs(2),
        ..RunConfig::default()
    };
    let out = run_with(wf, vec![agent], ScriptedHost::default(), config);
    assert_eq!(
        out.result().history[0].error_code.as_deref(),
        Some(codes::TIMEOUT)
    );
    assert_eq!(
        out.end,
        a2at_core::Timestamp::from_millis(3000),
        "finished when the cleanup budget ran out"
    );
    assert!(
        out.outputs()
            .any(|o| matches!(o, Output::AbortTransmit { .. }))
    );
}

/// The run's intent and language hint reach every task request unchanged; without one the
/// language is empty (no preference), never a language the host did not choose.
#[test]
fn the_runs_intent_and_language_reach_every_task_request_and_default_to_none() {
    let requests = |start: RunStart| {
        let wf = parse_and_validate(&chain3().to_string()).expect("valid workflow");
        let agents = vec![ScriptedAgent::new("alpha"), ScriptedAgent::new("beta")];
        let out = run_validated(
            wf,
            agents,
            ScriptedHost::default(),
            RunConfig::default(),
            start,
        );
        assert!(out.result().success);
        out.outputs()
            .filter_map(|o| match o {
                Output::CallHost {
                    request: a2at_core::host::HostRequest::Task(r),
                    ..
                } => Some((r.language.clone(), r.workflow_input.runtime_intent.clone())),
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    let defaults = requests(RunStart::default());
    assert_eq!(defaults.len(), 3);
    assert!(
        defaults
            .iter()
            .all(|(lang, intent)| lang.is_empty() && intent.is_empty())
    );
    let chosen = requests(RunStart {
        runtime_intent: "book a trip".into(),
        language: "en".into(),
    });
    assert_eq!(chosen.len(), 3);
    assert!(
        chosen
            .iter()
            .all(|(lang, intent)| lang == "en" && intent == "book a trip")
    );
}
