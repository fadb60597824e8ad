//! Rules of the constructors whose bodies cargo-mutants reaches only outside `new` (the private
//! `build` functions and the validation passes), each pinned against public behaviour.

use std::collections::BTreeSet;
use std::time::Duration;

use a2at_core::a2a::AgentCard;
use a2at_core::agents::AgentDirectory;
use a2at_core::tasks::{TaskCommand, TaskOperation, TaskOperationConfig, TaskOutput};
use a2at_core::tracectx::TraceContext;
use a2at_core::{HttpRequest, OpId};
use serde_json::json;

// Distinct seeds draw distinct trace ids: the seed is mixed into the generator's seed without
// losing any of its bits.
// mutant: replace ^ with | in TraceContext::build
// mutant: replace ^ with & in TraceContext::build
#[test]
fn distinct_seeds_draw_distinct_trace_ids() {
    let ids: BTreeSet<u128> = (0..256u64)
        .map(|seed| TraceContext::new(seed, None, None).trace_id())
        .collect();
    assert_eq!(ids.len(), 256, "two of 256 seeds drew the same trace id");
}

// A drawn trace id uses all 128 bits: its high half is drawn too, not left zero.
// mutant: replace << with >> in TraceContext::build
#[test]
fn drawn_trace_ids_fill_the_high_half() {
    let highs: BTreeSet<u64> = (0..32u64)
        .map(|seed| (TraceContext::new(seed, None, None).trace_id() >> 64) as u64)
        .collect();
    assert!(
        highs.len() > 1 && !highs.contains(&0),
        "the high halves of 32 drawn trace ids: {highs:?}"
    );
    // The traceparent shows the same id: 32 hex digits whose first 16 are not all zero.
    let ctx = TraceContext::new(3, None, None);
    let tp = ctx.traceparent(OpId(1));
    let trace_hex = tp.split('-').nth(1).expect("a trace-id field");
    assert_eq!(trace_hex, format!("{:032x}", ctx.trace_id()));
    assert_ne!(&trace_hex[..16], "0000000000000000", "traceparent {tp}");
}

fn card(name: &str, url: &str, binding: &str) -> AgentCard {
    AgentCard::from_json_value(&json!({
        "name": name, "description": "d", "version": "1",
        "supportedInterfaces": [{"url": url, "protocolBinding": binding, "protocolVersion": "1.0"}],
        "capabilities": {}, "defaultInputModes": [], "defaultOutputModes": [], "skills": []
    }))
    .expect("a valid card")
}

fn first_request(agents: &AgentDirectory, agent: &str, command: TaskCommand) -> HttpRequest {
    let config = TaskOperationConfig {
        budget: Duration::from_secs(5),
        ..TaskOperationConfig::default()
    };
    let mut op = TaskOperation::new(agents, agent, command, config).expect("a valid operation");
    match op.poll_output() {
        Some(TaskOutput::Transmit(r)) => r,
        other => panic!("expected a transmit, got {other:?}"),
    }
}

fn header<'r>(req: &'r HttpRequest, name: &str) -> Option<&'r str> {
    req.headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_ref())
}

// A unary task call over gRPC tells the server its budget in `grpc-timeout`; a subscription,
// which has no deadline, sends none.
// mutant: delete ! in TaskOperation::build (the timeout)
#[test]
fn a_grpc_task_call_sends_its_budget_and_a_subscription_none() {
    let agents = AgentDirectory::new(vec![card("g", "http://g:1", "GRPC")], None)
        .expect("a valid directory");
    let get = first_request(
        &agents,
        "g",
        TaskCommand::Get {
            task_id: "t1".into(),
            history_length: None,
        },
    );
    assert_eq!(header(&get, "grpc-timeout"), Some("5000000u"), "{get:?}");
    let sub = first_request(
        &agents,
        "g",
        TaskCommand::Subscribe {
            task_id: "t1".into(),
        },
    );
    assert!(sub.streaming);
    assert_eq!(header(&sub, "grpc-timeout"), None, "{sub:?}");
}
