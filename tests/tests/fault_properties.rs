//! Property: transient faults that stay within the retry policy do not change a run's result.
//! Random workflows of agents on both bindings, unary and streaming, meet random schedules of
//! refused sends (503), resets, cut streams and streams that end early; the `ExecutionResult`
//! (success, step statuses, outputs, per-task status and error code) must equal the fault-free
//! run's, no message may reach an agent twice unless it was an announced resend of a refused
//! send, and no task may be cancelled.

use std::time::Duration;

use a2at_core::RetryPolicy;
use a2at_core::run::RunConfig;
use a2at_tests::SimOutcome;
use a2at_tests::fault_mix::{AgentSpec, comparable, names, repeated_message_ids, simulate_mix};
use proptest::prelude::*;
use serde_json::Value;

fn agent_spec() -> impl Strategy<Value = AgentSpec> {
    (
        any::<bool>(),
        any::<bool>(),
        0u8..4,
        prop::collection::vec((0usize..5, 1usize..4, 0u8..4, 0usize..4), 0..5),
    )
        .prop_map(|(streaming, rest, plan, faults)| AgentSpec {
            streaming,
            rest,
            plan,
            faults,
        })
}

fn run(specs: &[AgentSpec], with_faults: bool, seed: u64) -> SimOutcome {
    let config = RunConfig {
        seed,
        retry: RetryPolicy {
            attempts: 5,
            base_delay: Duration::from_millis(50),
            max_delay: Duration::from_secs(1),
        },
        ..RunConfig::default()
    };
    simulate_mix(specs, with_faults, config)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn transient_faults_within_the_policy_do_not_change_the_result(
        specs in prop::collection::vec(agent_spec(), 1..4),
        seed in any::<u64>(),
    ) {
        let clean = run(&specs, false, seed);
        let faulty = run(&specs, true, seed);
        prop_assert_eq!(comparable(faulty.result()), comparable(clean.result()));
        for name in names(specs.len()) {
            let ids: Vec<String> = ["SendMessage", "SendStreamingMessage"]
                .iter()
                .flat_map(|m| faulty.requests_to(&name, m))
                .filter_map(|r| r.message().and_then(|m| m.get("messageId")).and_then(Value::as_str).map(str::to_owned))
                .collect();
            let resent = faulty
                .events("agent_retry")
                .iter()
                .filter(|e| e["agent"] == name.as_str() && e["action"] == "resend")
                .count();
            prop_assert_eq!(repeated_message_ids(&ids), resent);
            prop_assert!(faulty.requests_to(&name, "CancelTask").is_empty());
        }
    }
}
