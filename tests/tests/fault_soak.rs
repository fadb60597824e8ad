//! Seeded soak: many runs with random transient faults on the tokio and the smol engine over
//! loopback HTTP. Each run's result must equal the fault-free run of the same workflow in the
//! simulator, every subtask must be in the history, no message may reach an agent twice unless
//! it was an announced resend of a refused send, and no task may be cancelled.
//!
//! `A2AT_SOAK_RUNS` sets the runs per runtime (default 25; the long form is 1000 or more, e.g.
//! `A2AT_SOAK_RUNS=1000 cargo test --release -p a2at-tests --test fault_soak`), and
//! `A2AT_SOAK_SEED` the first seed.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2at_core::run::RunConfig;
use a2at_core::workflow::parse_and_validate;
use a2at_core::{IdGenerator, RetryPolicy};
use a2at_driver::{Engine, SeedSource};
use a2at_tests::ScriptedHost;
use a2at_tests::conformance::ScriptedControlPoint;
use a2at_tests::fault_mix::{
    AgentSpec, agents, comparable, names, repeated_message_ids, simulate_mix, workflow,
};
use a2at_tests::loopback::LoopbackServer;
use a2at_tests::runtime::TestRuntime;
use serde_json::Value;

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn retry() -> RetryPolicy {
    RetryPolicy {
        attempts: 5,
        base_delay: Duration::from_millis(5),
        max_delay: Duration::from_millis(50),
    }
}

fn specs(seed: u64) -> Vec<AgentSpec> {
    let mut rng = IdGenerator::new(seed);
    let n = 1 + (rng.next_u64() % 3) as usize;
    (0..n)
        .map(|_| AgentSpec::random(|| rng.next_u64()))
        .collect()
}

fn clean_result(specs: &[AgentSpec], seed: u64) -> Value {
    let config = RunConfig {
        seed,
        retry: retry(),
        ..RunConfig::default()
    };
    comparable(simulate_mix(specs, false, config).result())
}

fn soak<T: TestRuntime>() {
    let runs = env_u64("A2AT_SOAK_RUNS", 25);
    let first = env_u64("A2AT_SOAK_SEED", 1);
    let mut retried = 0usize;
    for seed in first..first + runs {
        let specs = specs(seed);
        let server = LoopbackServer::spawn(agents(&specs, true));
        let engine = Engine::<T::Rt>::builder(server.cards())
            .task_budget(Duration::from_secs(20))
            .poll_interval(Duration::from_millis(5))
            .retry(retry())
            .seed(SeedSource::Fixed(seed))
            .build()
            .expect("engine");
        let host = Arc::new(ScriptedControlPoint::new(ScriptedHost::default(), T::sleep));
        let wf = parse_and_validate(&workflow(specs.len()).to_string()).unwrap();
        let events = Arc::new(Mutex::new(Vec::new()));
        let sink = events.clone();
        let result = T::block_on(
            engine
                .run(wf, host)
                .event_sink(move |e| {
                    if e.type_str() == "agent_retry" {
                        sink.lock().unwrap().push(e.data.clone());
                    }
                })
                .execute(),
        );
        let context = format!("seed {seed}: {specs:?}");
        assert_eq!(comparable(&result), clean_result(&specs, seed), "{context}");
        // Every subtask is accounted for: n chain steps plus the n-way fan-out.
        if result.success {
            assert_eq!(result.history.len(), 2 * specs.len(), "{context}");
        }
        let events = events.lock().unwrap();
        retried += events.len();
        for name in names(specs.len()) {
            let ids: Vec<String> = server
                .requests(&name)
                .iter()
                .filter(|r| r.method == "SendMessage" || r.method == "SendStreamingMessage")
                .filter_map(|r| {
                    r.message()
                        .and_then(|m| m.get("messageId"))
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                })
                .collect();
            let resent = events
                .iter()
                .filter(|e| e["agent"] == name.as_str() && e["action"] == "resend")
                .count();
            assert_eq!(repeated_message_ids(&ids), resent, "{context}");
            assert!(
                server.requests_to(&name, "CancelTask").is_empty(),
                "{context}"
            );
        }
    }
    println!("{}: {runs} runs, {retried} retries", T::NAME);
    // The mix must have exercised the retry rules, or the checks above prove nothing.
    assert!(
        runs == 0 || retried > 0,
        "no fault was retried in {runs} runs"
    );
}

a2at_tests::tokio_test_runtime!(OnTokio, current_thread);
a2at_tests::smol_test_runtime!(OnSmol);

#[test]
fn soak_on_tokio() {
    soak::<OnTokio>();
}

#[test]
fn soak_on_smol() {
    soak::<OnSmol>();
}
