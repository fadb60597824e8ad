//! Network faults between a runtime and real loopback agents, injected by a TCP proxy: refused
//! connections, streams cut after some SSE events, truncated events. The same tests run on the
//! tokio and the smol engine.

use std::sync::Arc;
use std::time::Duration;

use a2at_core::RetryPolicy;
use a2at_core::host::{TaskStatus, codes};
use a2at_core::result::ExecutionResult;
use a2at_core::workflow::parse_and_validate;
use a2at_driver::{Engine, SeedSource};
use a2at_tests::conformance::ScriptedControlPoint;
use a2at_tests::fault_proxy::{FaultPlan, FaultProxy};
use a2at_tests::loopback::LoopbackServer;
use a2at_tests::runtime::TestRuntime;
use a2at_tests::{Plan, ScriptedAgent, ScriptedHost};

fn slow_streaming() -> ScriptedAgent {
    ScriptedAgent::new("a")
        .streaming()
        .by_default(Plan::States(vec![
            "TASK_STATE_WORKING",
            "TASK_STATE_COMPLETED",
        ]))
}

fn workflow() -> a2at_core::workflow::ValidatedWorkflow {
    parse_and_validate(
        r#"{"steps": [{"name": "s", "subtasks": [{"agent": "a", "description": "x"}]}]}"#,
    )
    .unwrap()
}

fn assert_done(result: &ExecutionResult) {
    assert!(result.success, "{:?}", result.error);
    let t = &result.history[0];
    assert_eq!(t.status, TaskStatus::Success, "{t:?}");
    assert_eq!(t.outputs, vec![serde_json::json!("done: x")]);
}

fn run<T: TestRuntime>(
    server: &LoopbackServer,
    proxy: &FaultProxy,
    retry: RetryPolicy,
) -> ExecutionResult {
    let base = format!("http://{}", proxy.addr());
    let engine = Engine::<T::Rt>::builder(server.cards_at(&base))
        .task_budget(Duration::from_secs(10))
        .poll_interval(Duration::from_millis(20))
        .retry(retry)
        .seed(SeedSource::Fixed(11))
        .build()
        .expect("engine");
    let host = Arc::new(ScriptedControlPoint::new(ScriptedHost::default(), T::sleep));
    T::block_on(engine.execute(workflow(), Default::default(), host))
}

fn refused_connections_are_retried_until_the_agent_listens<T: TestRuntime>() {
    let server = LoopbackServer::spawn(vec![ScriptedAgent::new("a")]);
    let proxy = FaultProxy::start(
        server.addr(),
        FaultPlan {
            refuse_for: Duration::from_millis(250),
            ..FaultPlan::default()
        },
    );
    let result = run::<T>(&server, &proxy, RetryPolicy::default());
    assert_done(&result);
    // Refused sends never reached the agent: it received the message once.
    assert_eq!(server.requests_to("a", "SendMessage").len(), 1);
}

fn a_stream_cut_after_the_task_is_known_ends_in_success_without_a_second_send<T: TestRuntime>() {
    for truncate in [false, true] {
        let server = LoopbackServer::spawn(vec![slow_streaming()]);
        let proxy = FaultProxy::start(
            server.addr(),
            FaultPlan {
                cut_after_events: Some(2),
                cuts: 1,
                truncate,
                ..FaultPlan::default()
            },
        );
        let result = run::<T>(&server, &proxy, RetryPolicy::default());
        assert_done(&result);
        assert_eq!(proxy.cuts_done(), 1);
        assert_eq!(server.requests_to("a", "SendStreamingMessage").len(), 1);
        assert_eq!(server.requests_to("a", "SubscribeToTask").len(), 1);
        assert!(server.requests_to("a", "CancelTask").is_empty());
    }
}

fn a_stream_that_breaks_every_time_fails_within_the_budget_listing_the_attempts<T: TestRuntime>() {
    let server = LoopbackServer::spawn(vec![
        ScriptedAgent::new("a")
            .streaming()
            .by_default(Plan::States(vec!["TASK_STATE_WORKING"])),
    ]);
    let proxy = FaultProxy::start(
        server.addr(),
        FaultPlan {
            cut_after_events: Some(1),
            cuts: usize::MAX,
            ..FaultPlan::default()
        },
    );
    let retry = RetryPolicy {
        attempts: 3,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(50),
    };
    let result = run::<T>(&server, &proxy, retry);
    let t = &result.history[0];
    assert_eq!(
        t.error_code.as_deref(),
        Some(codes::REMOTE_NO_RESPONSE),
        "{t:?}"
    );
    let attempts = t.error_details.as_ref().unwrap()["attempts"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(attempts, 4, "three retries and the give-up: {t:?}");
    assert_eq!(server.requests_to("a", "SendStreamingMessage").len(), 1);
    assert_eq!(server.requests_to("a", "SubscribeToTask").len(), 3);
}

macro_rules! on_runtime {
    ($module:ident, $rt:ty) => {
        mod $module {
    #[test]
    fn refused_connections_are_retried_until_the_agent_listens() {
        super::refused_connections_are_retried_until_the_agent_listens::<$rt>();
    }

    #[test]
    fn a_stream_cut_after_the_task_is_known_ends_in_success_without_a_second_send() {
        super::a_stream_cut_after_the_task_is_known_ends_in_success_without_a_second_send::<$rt>();
    }

    #[test]
    fn a_stream_that_breaks_every_time_fails_within_the_budget_listing_the_attempts() {
        super::a_stream_that_breaks_every_time_fails_within_the_budget_listing_the_attempts::<$rt>();
    }
        }
    };
}

a2at_tests::tokio_test_runtime!(OnTokio, current_thread);
a2at_tests::smol_test_runtime!(OnSmol);
on_runtime!(on_tokio, super::OnTokio);
on_runtime!(on_smol, super::OnSmol);
