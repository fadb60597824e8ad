//! One workflow suite over real HTTP against scripted agents on loopback, compiled once per
//! runtime: the including test file binds `rt` (the runtime crate) and `block_on`.

use std::sync::Arc;
use std::time::Duration;

use a2at_driver::{BuiltControlPoint, ControlPointBuilder};

use crate::runtime::TestRuntime;

type Engine<T> = a2at_driver::Engine<<T as TestRuntime>::Rt>;
use crate::ScriptedAgent;
use crate::loopback::LoopbackServer;
use a2at_core::host::{MessageContent, RouteDecision};
use a2at_core::result::StepStatus;
use a2at_core::run::RunStart;
use a2at_core::workflow::{ValidatedWorkflow, parse_and_validate};
use serde_json::{Value, json};

fn workflow(v: Value) -> ValidatedWorkflow {
    parse_and_validate(&v.to_string()).expect("valid workflow")
}

/// plan → fan (alpha ∥ beta) → good | bad (routed by the host).
fn fan_out_and_route() -> ValidatedWorkflow {
    workflow(json!({"name": "fan", "steps": [
        {"name": "plan", "subtasks": [{"agent": "alpha", "description": "plan it"}], "next": [{"step": "fan"}]},
        {"name": "fan", "subtasks": [
            {"agent": "alpha", "description": "part one"},
            {"agent": "beta", "description": "part two"}],
         "next": [{"step": "good", "condition": "looks good"}, {"step": "bad", "condition": "looks bad"}]},
        {"name": "good", "subtasks": [{"agent": "beta", "description": "finish"}]},
        {"name": "bad", "subtasks": [{"agent": "alpha", "description": "fix"}]}
    ]}))
}

fn host() -> BuiltControlPoint {
    ControlPointBuilder::new()
        .on_task(|req| async move { Ok(MessageContent::text(&req.instruction)) })
        .on_route(|req| async move {
            Ok(if req.condition == "looks good" {
                RouteDecision::allow(Some("fine".into()))
            } else {
                RouteDecision::deny(None)
            })
        })
        .build()
}

pub async fn run_fan_out<T: TestRuntime>(agents: Vec<ScriptedAgent>) {
    let server = LoopbackServer::start(agents).await;
    let engine = Engine::<T>::builder(server.cards())
        .poll_interval(Duration::from_millis(5))
        .task_budget(Duration::from_secs(10))
        .build()
        .expect("engine");
    let result = engine
        .execute(fan_out_and_route(), RunStart::default(), Arc::new(host()))
        .await;
    assert!(result.success, "{:?}", result.error);
    assert_eq!(result.history.len(), 4);
    assert_eq!(
        result.step_outputs()["fan"]["part two"],
        vec![json!("done: part two")]
    );
    assert_eq!(
        result.step_outputs()["good"]["finish"],
        vec![json!("done: finish")]
    );
    let bad = result.steps.iter().find(|s| s.name == "bad").unwrap();
    assert_eq!(bad.status, StepStatus::Skipped);
    let sends = |a: &str| {
        server
            .requests(a)
            .iter()
            .filter(|r| r.method.starts_with("Send"))
            .count()
    };
    assert_eq!(sends("alpha"), 2);
    assert_eq!(sends("beta"), 2);
    assert_eq!(
        engine.http_client().requests_sent(),
        server.total_requests()
    );
    // Every connection the client opened is counted, HTTP/2 ones for gRPC included, and no
    // request went without one.
    let opened = engine.http_client().connections_opened();
    assert!(
        (1..=server.total_requests()).contains(&opened),
        "{opened} connections for {} requests",
        server.total_requests()
    );
    let grpc = server.requests("alpha").first().is_some_and(|r| r.grpc);
    let http2 = if grpc { server.total_requests() } else { 0 };
    assert_eq!(server.http2_requests(), http2, "HTTP/2 exactly for gRPC");
    for r in server
        .requests("alpha")
        .iter()
        .chain(&server.requests("beta"))
    {
        assert_eq!(r.grpc, grpc, "{r:?}");
        if grpc {
            assert_eq!(r.header("content-type"), Some("application/grpc"));
            assert_eq!(r.header("te"), Some("trailers"));
            assert_eq!(r.header("a2a-version"), Some("1.0"));
            let timeout = r.header("grpc-timeout").expect("a deadline");
            assert!(
                timeout.ends_with('m') || timeout.ends_with('u'),
                "{timeout}"
            );
        }
    }
}

pub fn fan_out_and_routing_complete_over_jsonrpc_unary<T: TestRuntime>() {
    T::block_on(run_fan_out::<T>(vec![
        ScriptedAgent::new("alpha"),
        ScriptedAgent::new("beta"),
    ]));
}

pub fn fan_out_and_routing_complete_over_jsonrpc_streaming<T: TestRuntime>() {
    T::block_on(run_fan_out::<T>(vec![
        ScriptedAgent::new("alpha").streaming(),
        ScriptedAgent::new("beta").streaming(),
    ]));
}

pub fn fan_out_and_routing_complete_over_rest_unary<T: TestRuntime>() {
    T::block_on(run_fan_out::<T>(vec![
        ScriptedAgent::new("alpha").rest(),
        ScriptedAgent::new("beta").rest(),
    ]));
}

pub fn fan_out_and_routing_complete_over_rest_streaming<T: TestRuntime>() {
    T::block_on(run_fan_out::<T>(vec![
        ScriptedAgent::new("alpha").rest().streaming(),
        ScriptedAgent::new("beta").rest().streaming(),
    ]));
}

pub fn fan_out_and_routing_complete_over_grpc_unary<T: TestRuntime>() {
    T::block_on(run_fan_out::<T>(vec![
        ScriptedAgent::new("alpha").grpc(),
        ScriptedAgent::new("beta").grpc(),
    ]));
}

pub fn fan_out_and_routing_complete_over_grpc_streaming<T: TestRuntime>() {
    T::block_on(run_fan_out::<T>(vec![
        ScriptedAgent::new("alpha").grpc().streaming(),
        ScriptedAgent::new("beta").grpc().streaming(),
    ]));
}
