//! Run-machine rules that need simulated agents and that no other scenario pinned down; each
//! was a surviving mutant of `core/src/run.rs` (the host-only ones are in
//! `core/tests/run_rules.rs`).

use std::time::Duration;

use a2at_core::host::TaskStatus;
use a2at_core::run::RunConfig;
use a2at_tests::{Plan, ScriptedAgent, ScriptedHost, simulate};
use serde_json::json;

fn completes_after(secs: u64) -> Plan {
    Plan::Delayed(
        Duration::from_secs(secs),
        Box::new(Plan::States(vec!["TASK_STATE_COMPLETED"])),
    )
}

/// The winner of an ANY_SUCCESS step cancels its own step's losers, and only them: a step
/// running beside it keeps its subtasks.
#[test]
fn an_any_success_winner_cancels_only_its_own_peers() {
    let wf = json!({"steps": [
        {"name": "race", "step_type": "ANY_SUCCESS", "subtasks": [
            {"agent": "fast", "description": "win"}, {"agent": "slow", "description": "lose"}]},
        {"name": "beside", "subtasks": [{"agent": "steady", "description": "keep going"}]}
    ]});
    let agents = vec![
        ScriptedAgent::new("fast"),
        ScriptedAgent::new("slow").by_default(completes_after(5)),
        ScriptedAgent::new("steady").by_default(completes_after(2)),
    ];
    let out = simulate(&wf, agents, ScriptedHost::default(), RunConfig::default());
    let r = out.result();
    assert!(r.success, "{:?}", r.error);
    let status_of = |agent: &str| {
        r.history
            .iter()
            .find(|h| h.agent_name == agent)
            .map(|h| h.status)
            .unwrap_or_else(|| panic!("no result of {agent}"))
    };
    assert_eq!(status_of("fast"), TaskStatus::Success);
    assert_eq!(status_of("slow"), TaskStatus::Cancelled);
    assert_eq!(status_of("steady"), TaskStatus::Success);
}
