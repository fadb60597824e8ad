//! What a run counts through the `metrics` facade, read back from a recording recorder
//! ([`crate::metrics_capture`]). The recorder is process-global: the suite is one test, alone
//! in its test binary.

use std::sync::Arc;
use std::time::Duration;

use crate::agent::{AgentFault, Negotiation};
use crate::loopback::LoopbackServer;
use crate::metrics_capture;
use crate::{Plan, ScriptedAgent};
use a2at_core::RetryPolicy;
use a2at_core::a2at::{NEGOTIATION_T_URI, Performative};
use a2at_core::host::{MessageContent, NegotiationReply};
use a2at_core::workflow::{ValidatedWorkflow, parse_and_validate};
use a2at_driver::ControlPointBuilder;
use a2at_driver::metrics::{
    EVENTS_DROPPED_TOTAL, NEGOTIATION_ROUNDS_TOTAL, REATTACHES_TOTAL, REQUEST_DURATION_SECONDS,
    RETRIES_TOTAL, RUNS_TOTAL, SUBTASKS_TOTAL,
};
use serde_json::json;

use crate::runtime::TestRuntime;

type Engine<T> = a2at_driver::Engine<<T as TestRuntime>::Rt>;

/// `a` on `alpha` (refused once with 503: one resend), `b` on `beta` (a stream cut after the
/// task is known: one reattach), `c` on `gamma` (two Negotiation-T rounds).
fn three_steps() -> ValidatedWorkflow {
    parse_and_validate(&json!({"steps": [
        {"name": "a", "subtasks": [{"agent": "alpha", "description": "one"}], "next": [{"step": "b"}]},
        {"name": "b", "subtasks": [{"agent": "beta", "description": "two"}], "next": [{"step": "c"}]},
        {"name": "c", "subtasks": [{"agent": "gamma", "description": "three"}]}
    ]}).to_string())
    .unwrap()
}

pub fn a_run_counts_runs_subtasks_requests_retries_reattaches_and_rounds<T: TestRuntime>() {
    let capture = metrics_capture::install();
    a2at_driver::metrics::describe();
    T::block_on(async {
        let server = LoopbackServer::start(vec![
            ScriptedAgent::new("alpha").fault_on(
                "SendMessage",
                1,
                AgentFault::Unavailable { retry_after: None },
            ),
            ScriptedAgent::new("beta")
                .streaming()
                .by_default(Plan::States(vec![
                    "TASK_STATE_WORKING",
                    "TASK_STATE_WORKING",
                    "TASK_STATE_COMPLETED",
                ]))
                .fault_on("SendStreamingMessage", 1, AgentFault::CutAfter(2)),
            ScriptedAgent::new("gamma").by_default(Plan::Negotiate(Negotiation::rounds(2, 3))),
        ])
        .await;
        let engine = Engine::<T>::builder(server.cards())
            .retry(RetryPolicy {
                attempts: 3,
                base_delay: Duration::from_millis(1),
                max_delay: Duration::from_millis(1),
            })
            .build()
            .unwrap();
        let host = Arc::new(
            ControlPointBuilder::new()
                .on_task(|r| async move {
                    let content = MessageContent::text(r.instruction.clone());
                    Ok(if r.agent_name == "gamma" {
                        content.with_extension(NEGOTIATION_T_URI)
                    } else {
                        content
                    })
                })
                .on_negotiation(|r| async move {
                    Ok(NegotiationReply::Send {
                        content: r
                            .reply(Performative::Accept, "Accept")
                            .expect("a valid Propose"),
                    })
                })
                .build(),
        );
        // Spawned and awaited without reading its events: the stream's reader is gone, and
        // no sink or on_finish takes them, so every event is dropped.
        let result = engine
            .run(three_steps(), host.clone())
            .spawn()
            .result()
            .await;
        assert!(result.success, "{:?}", result.history);
        // A run refused at the door.
        let refused = engine
            .run(three_steps(), host)
            .traceparent("malformed")
            .execute()
            .await;
        assert!(!refused.success);
        assert!(server.requests_to("beta", "SubscribeToTask").len() == 1);
    });

    let counters = capture.counters();
    let counter = |key: &str| capture.counter(key);
    assert_eq!(
        counter(&format!("{RUNS_TOTAL}{{outcome=success}}")),
        1,
        "{counters:#?}"
    );
    assert_eq!(counter(&format!("{RUNS_TOTAL}{{outcome=refused}}")), 1);
    assert_eq!(counter(&format!("{RUNS_TOTAL}{{outcome=failure}}")), 0);
    for agent in ["alpha", "beta", "gamma"] {
        assert_eq!(
            counter(&format!(
                "{SUBTASKS_TOTAL}{{agent={agent},outcome=success}}"
            )),
            1,
            "{agent}: {counters:#?}"
        );
    }
    assert_eq!(counter(&format!("{RETRIES_TOTAL}{{agent=alpha}}")), 1);
    assert_eq!(counter(&format!("{RETRIES_TOTAL}{{agent=beta}}")), 1);
    assert_eq!(counter(&format!("{RETRIES_TOTAL}{{agent=gamma}}")), 0);
    assert_eq!(counter(REATTACHES_TOTAL), 1);
    assert_eq!(counter(NEGOTIATION_ROUNDS_TOTAL), 2);
    assert!(counter(EVENTS_DROPPED_TOTAL) > 0, "{counters:#?}");

    let latencies = |agent: &str, binding: &str, method: &str| {
        capture.histogram(&format!(
            "{REQUEST_DURATION_SECONDS}{{agent={agent},binding={binding},method={method}}}"
        ))
    };
    let keys = capture.histogram_keys();
    // The refused send and its resend.
    assert_eq!(
        latencies("alpha", "JSONRPC", "SendMessage").len(),
        2,
        "{keys:#?}"
    );
    assert_eq!(
        latencies("beta", "JSONRPC", "SendStreamingMessage").len(),
        1,
        "{keys:#?}"
    );
    assert_eq!(
        latencies("beta", "JSONRPC", "SubscribeToTask").len(),
        1,
        "{keys:#?}"
    );
    // The send and one reply per round.
    assert_eq!(
        latencies("gamma", "JSONRPC", "SendMessage").len(),
        3,
        "{keys:#?}"
    );
    assert!(
        keys.iter()
            .flat_map(|k| capture.histogram(k))
            .all(|s| s.is_finite() && s >= 0.0)
    );
}
