//! Conformance: faults of the network and of overloaded agents. A known task is found again
//! instead of failed, a message is resent only when it provably never reached the agent, and a
//! fault that persists ends within the retry policy with every attempt listed.

use std::time::Duration;

use crate::agent::AgentFault;
use crate::conformance::{Execution, Scenario, check};
use crate::{Plan, ScriptedAgent};
use a2at_core::RetryPolicy;
use a2at_core::host::{TaskStatus, codes};
use serde_json::{Value, json};

use super::Driver;

fn one_task(agent: &str) -> Value {
    json!({"steps": [{"name": "s", "subtasks": [{"agent": agent, "description": "x"}]}]})
}

/// Working first, completed on the next observation.
fn slow(agent: ScriptedAgent) -> ScriptedAgent {
    agent.by_default(Plan::States(vec![
        "TASK_STATE_WORKING",
        "TASK_STATE_COMPLETED",
    ]))
}

fn quick_retries(attempts: u32) -> RetryPolicy {
    RetryPolicy {
        attempts,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(40),
    }
}

fn assert_done(e: &Execution) {
    assert!(e.result.success, "{:?}", e.result.error);
    let t = &e.result.history[0];
    assert_eq!(t.status, TaskStatus::Success, "{t:?}");
    assert_eq!(t.outputs, vec![json!("done: x")]);
}

pub fn a_stream_reset_after_the_task_is_known_resubscribes_and_succeeds<D: Driver>() {
    for agent in [
        ScriptedAgent::new("a").streaming(),
        ScriptedAgent::new("a").streaming().rest(),
    ] {
        // The send's stream: snapshot, WORKING, then the connection breaks.
        let agent = slow(agent).fault_on("SendStreamingMessage", 1, AgentFault::CutAfter(2));
        let s = Scenario::new(one_task("a")).agent(agent);
        let e = check::<D>(&s);
        assert_done(&e);
        assert_eq!(e.requests("a"), ["SendStreamingMessage", "SubscribeToTask"]);
    }
}

pub fn a_stream_that_ends_before_a_final_state_resubscribes<D: Driver>() {
    let agent = slow(ScriptedAgent::new("a").streaming()).fault_on(
        "SendStreamingMessage",
        1,
        AgentFault::EndAfter(2),
    );
    let e = check::<D>(&Scenario::new(one_task("a")).agent(agent));
    assert_done(&e);
    assert_eq!(e.requests("a"), ["SendStreamingMessage", "SubscribeToTask"]);
}

pub fn an_agent_that_cannot_resubscribe_is_read_with_get_task<D: Driver>() {
    let agent = slow(ScriptedAgent::new("a").streaming().without_resubscribe()).fault_on(
        "SendStreamingMessage",
        1,
        AgentFault::CutAfter(2),
    );
    let e = check::<D>(&Scenario::new(one_task("a")).agent(agent));
    assert_done(&e);
    assert_eq!(
        e.requests("a"),
        ["GetTask", "SendStreamingMessage", "SubscribeToTask"]
    );
}

pub fn an_unavailable_resubscription_is_retried<D: Driver>() {
    let agent = slow(ScriptedAgent::new("a").streaming())
        .fault_on("SendStreamingMessage", 1, AgentFault::CutAfter(2))
        .fault_on(
            "SubscribeToTask",
            1,
            AgentFault::Unavailable { retry_after: None },
        );
    let e = check::<D>(&Scenario::new(one_task("a")).agent(agent));
    assert_done(&e);
    assert_eq!(
        e.requests("a"),
        ["SendStreamingMessage", "SubscribeToTask", "SubscribeToTask"]
    );
}

pub fn an_overloaded_agent_gets_the_same_send_again<D: Driver>() {
    for agent in [ScriptedAgent::new("a"), ScriptedAgent::new("a").rest()] {
        let agent = agent.fault_on(
            "SendMessage",
            1,
            AgentFault::Unavailable { retry_after: None },
        );
        let e = check::<D>(&Scenario::new(one_task("a")).agent(agent));
        assert_done(&e);
        assert_eq!(e.requests("a"), ["SendMessage", "SendMessage"]);
    }
}

pub fn a_send_whose_answer_was_lost_is_found_by_its_context<D: Driver>() {
    let agent = ScriptedAgent::new("a").fault_on("SendMessage", 1, AgentFault::Reset);
    let e = check::<D>(&Scenario::new(one_task("a")).agent(agent));
    assert_done(&e);
    // Found with ListTasks and read with GetTask: the message went exactly once.
    assert_eq!(e.requests("a"), ["GetTask", "ListTasks", "SendMessage"]);
}

pub fn a_lost_answer_without_list_tasks_fails_as_without_retries<D: Driver>() {
    let agent =
        ScriptedAgent::new("a")
            .without_list_tasks()
            .fault_on("SendMessage", 1, AgentFault::Reset);
    let e = check::<D>(&Scenario::new(one_task("a")).agent(agent));
    let t = &e.result.history[0];
    assert_eq!(t.error_code.as_deref(), Some(codes::REMOTE_NO_RESPONSE));
    assert_eq!(e.requests("a"), ["ListTasks", "SendMessage"]);
    let attempts = t.error_details.as_ref().unwrap()["attempts"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(attempts.len(), 1, "{attempts:?}");
    assert_eq!(attempts[0]["next"], "list_tasks");
}

pub fn polling_survives_an_unavailable_get_task<D: Driver>() {
    let agent = ScriptedAgent::new("a")
        .rest()
        .by_default(Plan::States(vec![
            "TASK_STATE_WORKING",
            "TASK_STATE_WORKING",
            "TASK_STATE_COMPLETED",
        ]))
        .fault_on("GetTask", 1, AgentFault::Unavailable { retry_after: None });
    let e = check::<D>(&Scenario::new(one_task("a")).agent(agent));
    assert_done(&e);
    assert_eq!(
        e.requests("a"),
        ["GetTask", "GetTask", "GetTask", "SendMessage"]
    );
}

pub fn a_stream_that_breaks_every_time_gives_up_with_every_attempt_listed<D: Driver>() {
    let mut agent = ScriptedAgent::new("a")
        .streaming()
        .by_default(Plan::States(vec!["TASK_STATE_WORKING"]))
        .fault_on("SendStreamingMessage", 1, AgentFault::CutAfter(2));
    for n in 1..=3 {
        agent = agent.fault_on("SubscribeToTask", n, AgentFault::CutAfter(1));
    }
    let s = Scenario::new(one_task("a"))
        .agent(agent)
        .retry(quick_retries(3));
    let e = check::<D>(&s);
    let t = &e.result.history[0];
    assert_eq!(t.error_code.as_deref(), Some(codes::REMOTE_NO_RESPONSE));
    let attempts = t.error_details.as_ref().unwrap()["attempts"]
        .as_array()
        .unwrap()
        .clone();
    let next: Vec<&str> = attempts
        .iter()
        .map(|a| a["next"].as_str().unwrap())
        .collect();
    assert_eq!(
        next,
        ["resubscribe", "resubscribe", "resubscribe", "give_up"]
    );
    assert!(
        attempts.iter().all(|a| a["fault"] == "transport.io"),
        "{attempts:?}"
    );
    assert!(
        attempts.iter().all(|a| a["httpStatus"].is_null()),
        "{attempts:?}"
    );
    // Giving up cleans up like any failure: the known, still running task is cancelled.
    assert_eq!(
        e.requests("a"),
        [
            "CancelTask",
            "SendStreamingMessage",
            "SubscribeToTask",
            "SubscribeToTask",
            "SubscribeToTask"
        ]
    );
}

pub fn a_resubscription_reset_after_the_task_finished_reads_the_result<D: Driver>() {
    // The reset subscription still moved the task on: the next one is refused for a final task
    // and the engine reads it with GetTask.
    let agent = slow(ScriptedAgent::new("a").streaming())
        .fault_on("SendStreamingMessage", 1, AgentFault::CutAfter(2))
        .fault_on("SubscribeToTask", 1, AgentFault::Reset);
    let e = check::<D>(&Scenario::new(one_task("a")).agent(agent));
    assert_done(&e);
    assert_eq!(
        e.requests("a"),
        [
            "GetTask",
            "SendStreamingMessage",
            "SubscribeToTask",
            "SubscribeToTask"
        ]
    );
}

pub fn without_retries_a_reset_fails_at_once<D: Driver>() {
    let agent = slow(ScriptedAgent::new("a").streaming()).fault_on(
        "SendStreamingMessage",
        1,
        AgentFault::CutAfter(2),
    );
    let s = Scenario::new(one_task("a"))
        .agent(agent)
        .retry(RetryPolicy::FAIL_FAST);
    let e = check::<D>(&s);
    let t = &e.result.history[0];
    assert_eq!(t.error_code.as_deref(), Some(codes::REMOTE_NO_RESPONSE));
    assert!(t.error_details.as_ref().unwrap().get("attempts").is_none());
    assert_eq!(e.requests("a"), ["CancelTask", "SendStreamingMessage"]);
}
