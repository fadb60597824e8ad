//! Prints how the core's cost grows with workflow size: parse, validate and run random DAGs of
//! 100, 1,000 and 10,000 steps on the simulator with zero-latency agents and an instant host
//! (`cargo bench -p a2at-tests --bench core_run`). Figures, not assertions. Times are this
//! thread's CPU time (best of three), because the machines here are shared and wall time is noise;
//! allocations are counted by `stats_alloc` (the crate holds the `unsafe impl GlobalAlloc`).

use std::time::Duration;

use a2at_core::event::EventSelection;
use a2at_core::workflow::{ValidatedWorkflow, Workflow};
use a2at_tests::workloads::{quiet_sim, random_dag};
use a2at_tests::{ScriptedAgent, ScriptedHost};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<std::alloc::System> = &INSTRUMENTED_SYSTEM;

/// Best-of-`runs` thread CPU time of `f`, and the allocations of its last run.
fn measure<T>(runs: usize, mut f: impl FnMut() -> T) -> (Duration, usize, usize) {
    let mut best = Duration::MAX;
    let mut allocs = (0, 0);
    for _ in 0..runs {
        let region = Region::new(GLOBAL);
        let start = cpu_time::ThreadTime::now();
        let out = f();
        let spent = start.elapsed();
        let stats = region.change();
        drop(out);
        best = best.min(spent);
        allocs = (
            stats.allocations + stats.reallocations,
            stats.bytes_allocated,
        );
    }
    (best, allocs.0, allocs.1)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    println!(
        "| steps | tasks | parse | validate | run (all events) | run (no events) | inputs | inputs/s | allocs per task (all / none) | KB allocated per task (all / none) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    // A2AT_BENCH_MAX_STEPS caps the sizes (for a profiler run).
    let max = std::env::var("A2AT_BENCH_MAX_STEPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(usize::MAX);
    for n in [100usize, 1_000, 10_000].into_iter().filter(|n| *n <= max) {
        let text = random_dag(n, 42).to_string();
        let (parse, _, _) = measure(3, || Workflow::from_json_str(&text).expect("parses"));
        let (validate, _, _) = measure(3, || {
            ValidatedWorkflow::new(Workflow::from_json_str(&text).expect("parses")).expect("valid")
        });
        // Validation alone: the parse is measured above and subtracted.
        let validate = validate.saturating_sub(parse);
        let wf =
            ValidatedWorkflow::new(Workflow::from_json_str(&text).expect("parses")).expect("valid");
        let tasks = wf
            .workflow()
            .steps
            .iter()
            .map(|s| s.subtasks.len())
            .sum::<usize>();
        let mut inputs = 0;
        let mut run = |events: EventSelection| {
            measure(3, || {
                let sim = quiet_sim(
                    wf.clone(),
                    ScriptedAgent::new("agent"),
                    ScriptedHost::default(),
                    events.clone(),
                );
                let out = sim.drive();
                assert!(out.result().success, "{:?}", out.result().error);
                inputs = out.inputs;
                out
            })
        };
        let (all, all_allocs, all_bytes) = run(EventSelection::All);
        let (none, none_allocs, none_bytes) = run(EventSelection::None);
        println!(
            "| {n} | {tasks} | {:.1} ms | {:.1} ms | {:.1} ms | {:.1} ms | {inputs} | {:.0} | {} / {} | {:.1} / {:.1} |",
            ms(parse),
            ms(validate),
            ms(all),
            ms(none),
            inputs as f64 / all.as_secs_f64(),
            all_allocs / tasks,
            none_allocs / tasks,
            all_bytes as f64 / tasks as f64 / 1024.0,
            none_bytes as f64 / tasks as f64 / 1024.0,
        );
    }
}
