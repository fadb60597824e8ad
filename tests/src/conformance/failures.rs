//! Conformance: failures, budgets and cancellation.

use std::time::Duration;

use crate::conformance::{Scenario, check};
use crate::host::now;
use crate::{Plan, ScriptedAgent, ScriptedHost};
use a2at_core::RetryPolicy;
use a2at_core::host::{HostError, TaskStatus, codes};
use serde_json::json;

use super::Driver;

fn working(agent: ScriptedAgent) -> ScriptedAgent {
    agent.by_default(Plan::States(vec!["TASK_STATE_WORKING"]))
}

pub fn all_success_fails_when_one_subtask_fails<D: Driver>() {
    let s = Scenario::new(json!({"steps": [
        {"name": "both", "subtasks": [{"agent": "bad", "description": "x"}, {"agent": "good", "description": "y"}],
         "next": [{"step": "after"}]},
        {"name": "after", "subtasks": [{"agent": "good", "description": "z"}]}
    ]}))
    .agent(ScriptedAgent::new("bad").by_default(Plan::States(vec!["TASK_STATE_FAILED"])))
    .agent(ScriptedAgent::new("good").streaming());
    let e = check::<D>(&s);
    assert_eq!(e.result.error.as_ref().unwrap().code, codes::STEP_FAILED);
    assert_eq!(e.requests("good"), ["SendStreamingMessage"]);
}

pub fn any_success_cancels_the_losers_remote_task<D: Driver>() {
    let s = Scenario::new(
        json!({"steps": [{"name": "race", "step_type": "ANY_SUCCESS", "subtasks": [
        {"agent": "slow", "description": "s"}, {"agent": "fast", "description": "f"}]}]}),
    )
    .agent(working(ScriptedAgent::new("slow")))
    .agent(ScriptedAgent::new("fast").by_default(Plan::Delayed(
        Duration::from_millis(100),
        Box::new(Plan::States(vec!["TASK_STATE_COMPLETED"])),
    )))
    .poll_interval(Duration::from_secs(5));
    let e = check::<D>(&s);
    assert!(e.result.success, "{:?}", e.result.error);
    assert_eq!(e.requests("slow"), ["CancelTask", "SendMessage"]);
    let slow = e.result.history.iter().find(|t| t.agent_name == "slow");
    assert_eq!(slow.unwrap().status, TaskStatus::Cancelled);
}

pub fn a_failed_route_callback_fails_the_run<D: Driver>() {
    let s = Scenario::new(json!({"steps": [
        {"name": "a", "subtasks": [{"agent": "alpha", "description": "x"}],
         "next": [{"step": "b", "condition": "maybe"}]},
        {"name": "b", "subtasks": [{"agent": "alpha", "description": "y"}]}
    ]}))
    .agent(ScriptedAgent::new("alpha"))
    .host(|| {
        ScriptedHost::default().on_route(|_| now(Err(HostError::business("policy.down", "no"))))
    });
    let e = check::<D>(&s);
    assert_eq!(e.result.error.as_ref().unwrap().code, codes::ROUTE_FAILED);
    assert_eq!(e.requests("alpha"), ["SendMessage"]);
}

pub fn a_pre_creation_error_envelope_on_both_bindings<D: Driver>() {
    let reject = Plan::Reject {
        status: 400,
        code: -32602,
        reason: "INVALID_SITE",
    };
    let s = Scenario::new(json!({"steps": [{"name": "a", "subtasks": [
        {"agent": "rpc", "description": "x"}, {"agent": "rest", "description": "y"}]}]}))
    .agent(ScriptedAgent::new("rpc").by_default(reject.clone()))
    .agent(
        ScriptedAgent::new("rest")
            .rest()
            .streaming()
            .by_default(reject),
    );
    let e = check::<D>(&s);
    assert!(!e.result.success);
    for t in &e.result.history {
        assert_eq!(t.error_code.as_deref(), Some("a2a.invalid_site"), "{t:?}");
    }
}

pub fn budget_expiry_cancels_the_remote_task<D: Driver>() {
    let s = Scenario::new(json!({"steps": [{"name": "a", "subtasks": [
        {"agent": "alpha", "description": "x"}]}]}))
    .agent(working(ScriptedAgent::new("alpha").rest()))
    .task_budget(Duration::from_millis(150))
    .poll_interval(Duration::from_secs(5));
    let e = check::<D>(&s);
    assert_eq!(
        e.result.history[0].error_code.as_deref(),
        Some(codes::TIMEOUT)
    );
    assert_eq!(e.requests("alpha"), ["CancelTask", "SendMessage"]);
}

pub fn cancelling_the_run_cancels_every_remote_task<D: Driver>() {
    let s = Scenario::new(json!({"steps": [{"name": "w", "subtasks": [
        {"agent": "alpha", "description": "one"}, {"agent": "beta", "description": "two"}]}]}))
    .agent(working(ScriptedAgent::new("alpha").streaming()))
    .agent(working(ScriptedAgent::new("beta").rest()))
    .poll_interval(Duration::from_secs(5))
    // Without retries the stream that ended at WORKING waits for the (late) poll, so the only
    // traffic after the send is the cleanup.
    .retry(RetryPolicy::FAIL_FAST)
    .cancel_after(Duration::from_millis(150));
    let e = check::<D>(&s);
    assert_eq!(e.result.error.as_ref().unwrap().code, codes::CANCELLED);
    assert_eq!(e.requests("alpha"), ["CancelTask", "SendStreamingMessage"]);
    assert_eq!(e.requests("beta"), ["CancelTask", "SendMessage"]);
}
