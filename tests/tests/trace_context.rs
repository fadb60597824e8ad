//! W3C Trace Context in the deterministic simulator: every request of a run carries a
//! `traceparent` of the run's one trace with its own span id, the ids follow from the seed, and a
//! host parent makes the run join the host's trace.

use std::collections::BTreeSet;

use a2at_core::io::Output;
use a2at_core::run::{RunConfig, RunStart};
use a2at_core::tracectx::{TRACEPARENT, TRACESTATE, TraceParent};
use a2at_core::workflow::parse_and_validate;
use a2at_tests::agent::AgentFault;
use a2at_tests::workloads::{accepting_host, chain, negotiating_agent};
use a2at_tests::{ScriptedAgent, ScriptedHost, Sim, SimOutcome, directory};

const HOST_PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

fn drive(config: RunConfig, agent: ScriptedAgent, host: ScriptedHost) -> SimOutcome {
    let wf = parse_and_validate(&chain(2).to_string()).expect("valid workflow");
    let agents = vec![agent];
    let dir = directory(&agents);
    Sim::new(wf, dir, agents, host, config, RunStart::default()).drive_bounded(100_000)
}

/// Every transmitted request's parsed `traceparent` and its `tracestate`, in order; a request
/// without one, or with a second one, fails the test.
fn trace_headers(out: &SimOutcome) -> Vec<(TraceParent, Option<String>)> {
    out.outputs()
        .filter_map(|o| match o {
            Output::Transmit(req) => Some(req),
            _ => None,
        })
        .map(|req| {
            let values: Vec<&str> = req
                .headers
                .iter()
                .filter(|(n, _)| n.eq_ignore_ascii_case(TRACEPARENT))
                .map(|(_, v)| v.as_ref())
                .collect();
            assert_eq!(
                values.len(),
                1,
                "one traceparent on {:?} {}",
                req.method,
                req.url
            );
            let parent = TraceParent::parse(values[0]).expect("a well-formed traceparent");
            let state = req
                .headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(TRACESTATE))
                .map(|(_, v)| v.to_string());
            (parent, state)
        })
        .collect()
}

/// A negotiating agent whose first send is refused once with 503: sends, negotiation rounds and
/// a retried attempt, all in one run.
fn busy_agent() -> ScriptedAgent {
    negotiating_agent(2).fault_on(
        "SendMessage",
        0,
        AgentFault::Unavailable { retry_after: None },
    )
}

fn seeded(seed: u64) -> RunConfig {
    RunConfig {
        seed,
        ..RunConfig::default()
    }
}

#[test]
fn every_request_of_a_run_joins_one_trace_with_its_own_span() {
    let out = drive(seeded(11), busy_agent(), accepting_host());
    assert!(out.result().success, "{:?}", out.result().error);
    let headers = trace_headers(&out);
    // Two steps, each with a retried send and two negotiation rounds: well over four requests.
    assert!(headers.len() >= 6, "only {} requests", headers.len());
    let traces: BTreeSet<u128> = headers.iter().map(|(p, _)| p.trace_id()).collect();
    assert_eq!(traces.len(), 1, "one trace per run");
    assert_ne!(traces.first().copied(), Some(0));
    let spans: BTreeSet<u64> = headers.iter().map(|(p, _)| p.parent_id()).collect();
    assert_eq!(spans.len(), headers.len(), "one span per exchange");
    assert!(headers.iter().all(|(p, s)| p.flags() == 1 && s.is_none()));
}

#[test]
fn the_same_seed_gives_the_same_ids_and_another_seed_another_trace() {
    let ids = |seed| {
        trace_headers(&drive(seeded(seed), busy_agent(), accepting_host()))
            .into_iter()
            .map(|(p, _)| (p.trace_id(), p.parent_id()))
            .collect::<Vec<_>>()
    };
    let first = ids(5);
    assert_eq!(first, ids(5));
    let other = ids(6);
    assert_ne!(first[0].0, other[0].0);
    let spans: BTreeSet<u64> = first.iter().map(|(_, s)| *s).collect();
    assert!(other.iter().all(|(_, s)| !spans.contains(s)));
}

#[test]
fn a_host_parent_makes_the_run_join_the_host_trace() {
    let parent = TraceParent::parse(HOST_PARENT).unwrap();
    let config = RunConfig {
        trace_parent: Some(parent),
        trace_state: Some("congo=t61rcWkgMzE".to_owned()),
        ..seeded(11)
    };
    let headers = trace_headers(&drive(config, busy_agent(), accepting_host()));
    assert!(!headers.is_empty());
    for (p, state) in &headers {
        assert_eq!(p.trace_id(), parent.trace_id());
        assert_ne!(
            p.parent_id(),
            parent.parent_id(),
            "each exchange is its own span"
        );
        assert_eq!(state.as_deref(), Some("congo=t61rcWkgMzE"));
    }
    // The host's parent changes the trace, not the spans the seed gives.
    let own = trace_headers(&drive(seeded(11), busy_agent(), accepting_host()));
    let spans = |h: &[(TraceParent, Option<String>)]| {
        h.iter().map(|(p, _)| p.parent_id()).collect::<Vec<_>>()
    };
    assert_eq!(spans(&headers), spans(&own));
}

#[test]
fn an_unsampled_host_parent_keeps_its_flags_on_every_request() {
    let unsampled = HOST_PARENT.replace("-01", "-00");
    let parent = TraceParent::parse(&unsampled).unwrap();
    assert_eq!(parent.flags(), 0);
    let config = RunConfig {
        trace_parent: Some(parent),
        ..seeded(11)
    };
    let headers = trace_headers(&drive(config, busy_agent(), accepting_host()));
    assert!(!headers.is_empty());
    for (p, _) in &headers {
        assert_eq!(p.flags(), 0, "{p}");
        assert_eq!(p.trace_id(), parent.trace_id());
    }
    assert_eq!(TraceParent::parse(HOST_PARENT).unwrap().flags(), 1);
}

#[test]
fn grpc_requests_carry_the_traceparent_as_metadata() {
    let out = drive(
        seeded(3),
        ScriptedAgent::new("agent").grpc(),
        ScriptedHost::default(),
    );
    assert!(out.result().success, "{:?}", out.result().error);
    let headers = trace_headers(&out);
    assert_eq!(headers.len(), 2, "one unary send per step");
}

#[test]
fn an_unusable_tracestate_is_a_config_error_naming_it() {
    let config = RunConfig {
        trace_state: Some("a=b\r\nInjected: yes".to_owned()),
        ..RunConfig::default()
    };
    let err = config.validate().expect_err("refused");
    assert_eq!(err.field(), "trace_state");
}
