//! Conformance: successful flows (chain, fan-out/join, SELF_LOOP, routing, bindings, polling).

use crate::conformance::{Scenario, check};
use crate::host::now;
use crate::{Plan, ScriptedAgent, ScriptedHost};
use a2at_core::host::RouteDecision;
use serde_json::json;

use super::Driver;

pub fn chain<D: Driver>() {
    let s = Scenario::new(json!({"name": "chain", "steps": [
        {"name": "a", "subtasks": [{"agent": "alpha", "description": "first"}], "next": [{"step": "b"}]},
        {"name": "b", "subtasks": [{"agent": "beta", "description": "second"}], "next": [{"step": "c"}]},
        {"name": "c", "subtasks": [{"agent": "alpha", "description": "third"}]}
    ]}))
    .agent(ScriptedAgent::new("alpha"))
    .agent(ScriptedAgent::new("beta").rest());
    let e = check::<D>(&s);
    assert!(e.result.success, "{:?}", e.result.error);
    assert_eq!(
        e.result.step_outputs()["c"]["third"],
        vec![json!("done: third")]
    );
    assert_eq!(e.requests("alpha"), ["SendMessage", "SendMessage"]);
}

pub fn fan_out_and_join<D: Driver>() {
    let s = Scenario::new(json!({"steps": [
        {"name": "start", "subtasks": [{"agent": "alpha", "description": "plan"}],
         "next": [{"step": "left"}, {"step": "right"}]},
        {"name": "left", "subtasks": [{"agent": "alpha", "description": "l"}], "next": [{"step": "join"}]},
        {"name": "right", "subtasks": [{"agent": "beta", "description": "r"}], "next": [{"step": "join"}]},
        {"name": "join", "subtasks": [{"agent": "beta", "description": "j"}]}
    ]}))
    .agent(ScriptedAgent::new("alpha").streaming())
    .agent(ScriptedAgent::new("beta"));
    let e = check::<D>(&s);
    assert!(e.result.success, "{:?}", e.result.error);
    assert_eq!(e.result.history.len(), 4);
    assert_eq!(e.requests("alpha"), ["SendStreamingMessage"; 2]);
}

pub fn self_loop_never_touches_the_network<D: Driver>() {
    let s = Scenario::new(json!({"steps": [
        {"name": "local", "step_type": "SELF_LOOP", "subtasks": [{"agent": "me", "description": "sum"}],
         "next": [{"step": "remote"}]},
        {"name": "remote", "subtasks": [{"agent": "alpha", "description": "go"}]}
    ]}))
    .agent(ScriptedAgent::new("alpha"));
    let e = check::<D>(&s);
    assert!(e.result.success, "{:?}", e.result.error);
    assert_eq!(
        e.result.step_outputs()["local"]["sum"],
        vec![json!("local: sum")]
    );
    assert_eq!(e.requests("alpha"), ["SendMessage"]);
}

pub fn conditional_routing_with_a_denied_edge<D: Driver>() {
    let s = Scenario::new(json!({"steps": [
        {"name": "check", "subtasks": [{"agent": "alpha", "description": "look"}],
         "next": [{"step": "good", "condition": "looks good"}, {"step": "bad", "condition": "looks bad"}]},
        {"name": "good", "subtasks": [{"agent": "alpha", "description": "finish"}]},
        {"name": "bad", "subtasks": [{"agent": "alpha", "description": "fix"}]}
    ]}))
    .agent(ScriptedAgent::new("alpha").rest())
    .host(|| {
        ScriptedHost::default().on_route(|r| {
            now(Ok(if r.condition == "looks good" {
                RouteDecision::allow(None)
            } else {
                RouteDecision::deny(Some("no".into()))
            }))
        })
    });
    let e = check::<D>(&s);
    assert!(e.result.success, "{:?}", e.result.error);
    assert!(!e.result.step_outputs().contains_key("bad"));
    assert_eq!(e.requests("alpha"), ["SendMessage"; 2]);
}

pub fn streaming_and_blocking_agents_on_both_bindings<D: Driver>() {
    let s = Scenario::new(json!({"steps": [{"name": "all", "subtasks": [
        {"agent": "rpc", "description": "a"}, {"agent": "rpc_sse", "description": "b"},
        {"agent": "rest", "description": "c"}, {"agent": "rest_sse", "description": "d"}]}]}))
    .agent(ScriptedAgent::new("rpc"))
    .agent(ScriptedAgent::new("rpc_sse").streaming())
    .agent(ScriptedAgent::new("rest").rest())
    .agent(ScriptedAgent::new("rest_sse").rest().streaming());
    let e = check::<D>(&s);
    assert!(e.result.success, "{:?}", e.result.error);
    assert_eq!(e.requests("rest_sse"), ["SendStreamingMessage"]);
    assert_eq!(e.result.step_outputs()["all"]["d"], vec![json!("done: d")]);
}

pub fn a_working_task_is_polled_until_it_completes<D: Driver>() {
    let s = Scenario::new(json!({"steps": [{"name": "w", "subtasks": [
        {"agent": "alpha", "description": "slow"}]}]}))
    .agent(ScriptedAgent::new("alpha").by_default(Plan::States(vec![
        "TASK_STATE_WORKING",
        "TASK_STATE_COMPLETED",
    ])));
    let e = check::<D>(&s);
    assert!(e.result.success, "{:?}", e.result.error);
    assert_eq!(e.requests("alpha"), ["GetTask", "SendMessage"]);
}
