//! Prints how long the core takes to validate and run large random DAGs in the simulator with
//! zero-latency agents and an instant host. Figures, not assertions: compare ratios within one
//! run (`cargo bench -p a2at-tests --bench core_run`).

use std::time::{Duration, Instant};

use a2at_core::run::{RunConfig, RunStart};
use a2at_core::workflow::{ValidatedWorkflow, Workflow};
use a2at_tests::{ScriptedAgent, ScriptedHost, Sim, directory};
use serde_json::{Value, json};

/// A random DAG of `n` steps: each step links to 1-2 later steps within a window, a tenth of the
/// edges conditional; a fifth of the steps are remote, the rest SELF_LOOP.
fn random_dag(n: usize, seed: u64) -> Value {
    let mut x = seed;
    let mut next = || {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        x >> 33
    };
    let steps: Vec<Value> = (0..n)
        .map(|i| {
            let mut edges = Vec::new();
            if i + 1 < n {
                let fan = 1 + (next() % 2) as usize;
                let mut targets = Vec::new();
                for _ in 0..fan {
                    let t = i + 1 + (next() as usize % 8).min(n - i - 2);
                    if !targets.contains(&t) {
                        targets.push(t);
                    }
                }
                for t in targets {
                    let cond = if next() % 10 == 0 {
                        json!("maybe")
                    } else {
                        Value::Null
                    };
                    edges.push(json!({"step": format!("s{t}"), "condition": cond}));
                }
            }
            let remote = next() % 5 == 0;
            json!({
                "name": format!("s{i}"),
                "step_type": if remote { "ALL_SUCCESS" } else { "SELF_LOOP" },
                "subtasks": [{"agent": "agent", "description": format!("task {i}")}],
                "next": edges
            })
        })
        .collect();
    json!({"name": "bench", "steps": steps})
}

/// Counts the inputs of one logged run of the same workflow (outside the timed section).
fn sim_inputs(text: &str) -> usize {
    let wf = ValidatedWorkflow::new(Workflow::from_json_str(text).expect("parses")).expect("valid");
    let agents = vec![ScriptedAgent::new("agent")];
    let dir = directory(&agents);
    let out = Sim::new(
        wf,
        dir,
        agents,
        ScriptedHost::default(),
        RunConfig::default(),
        RunStart::default(),
    )
    .with_latency(Duration::ZERO)
    .drive();
    out.log
        .iter()
        .filter(|(_, o)| !matches!(o, a2at_tests::Observed::Output(_)))
        .count()
}

fn time<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let start = Instant::now();
    let out = f();
    (out, start.elapsed())
}

fn main() {
    println!(
        "{:>8} {:>12} {:>12} {:>12} {:>10} {:>12}",
        "steps", "parse", "validate", "run", "inputs", "inputs/s"
    );
    for n in [100usize, 1_000, 10_000] {
        let doc = random_dag(n, 42);
        let text = doc.to_string();
        let (wf, parse) = time(|| Workflow::from_json_str(&text).expect("parses"));
        let (wf, validate) = time(|| ValidatedWorkflow::new(wf).expect("valid"));
        let agents = vec![ScriptedAgent::new("agent")];
        let dir = directory(&agents);
        let sim = Sim::new(
            wf,
            dir,
            agents,
            ScriptedHost::default(),
            RunConfig::default(),
            RunStart::default(),
        )
        .with_latency(Duration::ZERO)
        .quiet();
        let (out, run) = time(|| sim.drive());
        assert!(out.result().success, "{:?}", out.result().error);
        let inputs = if std::env::var_os("SKIP").is_some() {
            0
        } else {
            sim_inputs(&text)
        };
        println!(
            "{:>8} {:>10.2}ms {:>10.2}ms {:>10.2}ms {:>10} {:>12.0}",
            n,
            parse.as_secs_f64() * 1e3,
            validate.as_secs_f64() * 1e3,
            run.as_secs_f64() * 1e3,
            inputs,
            inputs as f64 / run.as_secs_f64()
        );
    }
}
