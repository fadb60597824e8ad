//! Criterion benchmarks of the core on the simulator with zero-latency agents and an instant host
//! (`cargo bench -p a2at-tests --bench core`). Times are per-thread CPU time, not wall time: this
//! machine is shared and noisy, and the core is single-threaded, so CPU time is the cost that
//! matters and the one that stays comparable between runs.

// criterion_group! generates an undocumented function.
#![allow(missing_docs)]

use std::time::Duration;

use a2at_core::a2a::{Binding, CallKind, DecodeLimits, ResponseDecoder, ResponseItem};
use a2at_core::event::EventSelection;
use a2at_core::workflow::{ValidatedWorkflow, Workflow, parse_and_validate};
use a2at_tests::workloads::{
    accepting_host, conditional_edges, every_other_route, fan_out_join, negotiating_agent,
    one_remote_task, quiet_sim, random_dag, sse_stream,
};
use a2at_tests::{ScriptedAgent, ScriptedHost};
use criterion::measurement::{Measurement, ValueFormatter};
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use serde_json::Value;

/// Per-thread CPU time as a criterion measurement.
struct ThreadCpu;

impl Measurement for ThreadCpu {
    type Intermediate = cpu_time::ThreadTime;
    type Value = Duration;

    fn start(&self) -> Self::Intermediate {
        cpu_time::ThreadTime::now()
    }
    fn end(&self, start: Self::Intermediate) -> Self::Value {
        start.elapsed()
    }
    fn add(&self, a: &Self::Value, b: &Self::Value) -> Self::Value {
        *a + *b
    }
    fn zero(&self) -> Self::Value {
        Duration::ZERO
    }
    fn to_f64(&self, value: &Self::Value) -> f64 {
        value.as_nanos() as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        criterion::measurement::WallTime.formatter()
    }
}

fn validated(doc: &Value) -> ValidatedWorkflow {
    parse_and_validate(&doc.to_string()).expect("the benchmark workflow is valid")
}

fn run_to_success(wf: ValidatedWorkflow, agent: ScriptedAgent, host: ScriptedHost) {
    run_selecting(wf, agent, host, EventSelection::All)
}

fn run_selecting(
    wf: ValidatedWorkflow,
    agent: ScriptedAgent,
    host: ScriptedHost,
    events: EventSelection,
) {
    let out = quiet_sim(wf, agent, host, events).drive();
    assert!(out.result().success, "{:?}", out.result().error);
}

fn dag_10k(c: &mut Criterion<ThreadCpu>) {
    let text = random_dag(10_000, 42).to_string();
    let mut g = c.benchmark_group("dag_10k");
    g.sample_size(10);
    g.throughput(Throughput::Elements(10_000));
    g.bench_function("parse", |b| {
        b.iter(|| Workflow::from_json_str(&text).expect("parses"))
    });
    g.bench_function("validate", |b| {
        b.iter_batched(
            || Workflow::from_json_str(&text).expect("parses"),
            |wf| ValidatedWorkflow::new(wf).expect("valid"),
            BatchSize::LargeInput,
        )
    });
    let wf = parse_and_validate(&text).expect("valid");
    g.bench_function("run", |b| {
        b.iter_batched(
            || wf.clone(),
            |wf| run_to_success(wf, ScriptedAgent::new("agent"), ScriptedHost::default()),
            BatchSize::LargeInput,
        )
    });
    g.bench_function("run_without_events", |b| {
        b.iter_batched(
            || wf.clone(),
            |wf| {
                run_selecting(
                    wf,
                    ScriptedAgent::new("agent"),
                    ScriptedHost::default(),
                    EventSelection::None,
                )
            },
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

fn shapes(c: &mut Criterion<ThreadCpu>) {
    let mut g = c.benchmark_group("shapes");
    g.sample_size(20);
    let fan = validated(&fan_out_join(1_000));
    g.throughput(Throughput::Elements(1_002));
    g.bench_function("fan_out_1000_join", |b| {
        b.iter_batched(
            || fan.clone(),
            |wf| run_to_success(wf, ScriptedAgent::new("agent"), ScriptedHost::default()),
            BatchSize::LargeInput,
        )
    });
    let routed = validated(&conditional_edges(100));
    g.throughput(Throughput::Elements(100));
    g.bench_function("conditional_edges_100", |b| {
        b.iter_batched(
            || routed.clone(),
            |wf| run_to_success(wf, ScriptedAgent::new("agent"), every_other_route()),
            BatchSize::SmallInput,
        )
    });
    let one = validated(&one_remote_task());
    g.throughput(Throughput::Elements(3));
    g.bench_function("negotiation_3_rounds", |b| {
        b.iter_batched(
            || one.clone(),
            |wf| run_to_success(wf, negotiating_agent(3), accepting_host()),
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

fn sse(c: &mut Criterion<ThreadCpu>) {
    let stream = sse_stream(20, 20, 400);
    let mut g = c.benchmark_group("sse");
    g.throughput(Throughput::Bytes(stream.len() as u64));
    for chunk in [64usize, 4096] {
        g.bench_function(format!("decode_jsonrpc_stream_chunks_of_{chunk}"), |b| {
            b.iter(|| {
                let mut decoder = ResponseDecoder::new(
                    Binding::JsonRpc,
                    CallKind::SendStreamingMessage,
                    "1",
                    DecodeLimits::default(),
                );
                decoder.on_head(200, &[("content-type", "text/event-stream")]);
                let mut items = Vec::new();
                for piece in stream.chunks(chunk) {
                    decoder.on_body(piece, &mut items);
                }
                decoder.on_end(&mut items);
                assert!(
                    items
                        .iter()
                        .all(|i| matches!(i, ResponseItem::Event(_) | ResponseItem::End { .. })),
                    "{:?}",
                    items.iter().find(|i| !matches!(i, ResponseItem::Event(_)))
                );
                items.len()
            })
        });
    }
    g.finish();
}

fn config() -> Criterion<ThreadCpu> {
    Criterion::default()
        .with_measurement(ThreadCpu)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4))
}

criterion_group! {
    name = benches;
    config = config();
    targets = dag_10k, shapes, sse
}
criterion_main!(benches);
