//! Fixed core workloads for instruction counting (`tests/callgrind` runs each one under
//! `valgrind --tool=callgrind` and prints the instructions it executed). Instruction counts do
//! not depend on the machine's load, so a change to the core shows its cost as a stable number
//! where the CPU-time benches (`core`, `core_run`) move by tens of percent between runs.
//!
//! Each workload builds its input first, then calls [`callgrind_measured_region`] once; the
//! script collects only inside that function (`--collect-atstart=no
//! --toggle-collect=*callgrind_measured_region*`), so setup and teardown are not counted. Run
//! without valgrind it just executes the workloads (a smoke test):
//!
//! ```sh
//! cargo bench -p a2at-tests --bench core_instructions -- [workload…] [--steps N]
//! ```

use std::hint::black_box;

use a2at_core::Run;
use a2at_core::event::EventSelection;
use a2at_core::trace::{RecordedInput, TraceLine, parse_trace};
use a2at_core::workflow::{ValidatedWorkflow, parse_and_validate};
use a2at_tests::workloads::{chain, quiet_sim, random_dag};
use a2at_tests::{ScriptedAgent, ScriptedHost};

/// The workloads, by name; `tests/callgrind` runs these in this order.
const WORKLOADS: &[&str] = &[
    "parse_validate_dag",
    "dag_all_events",
    "dag_all_events_read",
    "dag_all_events_replayed",
    "dag_no_events",
    "chain_all_events",
    "chain_all_events_read",
    "chain_no_events",
];

/// The only code the instruction count covers: `f`, with its result returned so that dropping
/// it is not counted. Never inlined, so callgrind can toggle collection on its name.
#[inline(never)]
fn callgrind_measured_region<T>(f: impl FnOnce() -> T) -> T {
    black_box(f())
}

fn validated(text: &str) -> ValidatedWorkflow {
    parse_and_validate(text).expect("the benchmark workflow is valid")
}

/// Runs `wf` to success on the simulator with zero-latency agents and an instant host; only the
/// run (the core plus the scripted agents' HTTP encoding) is measured.
fn run(wf: ValidatedWorkflow, events: EventSelection) {
    run_reading(wf, events, false);
}

/// [`run`], where `read` also reads every event's payload as it is emitted (a consumer that
/// looks at each event; without it the events are dropped unread).
fn run_reading(wf: ValidatedWorkflow, events: EventSelection, read: bool) {
    let mut sim = quiet_sim(
        wf,
        ScriptedAgent::new("agent"),
        ScriptedHost::default(),
        events,
    );
    if read {
        sim = sim.reading_events();
    }
    let out = callgrind_measured_region(|| sim.drive());
    assert!(out.result().success, "{:?}", out.result().error);
}

/// The core alone: a simulated run of `wf` with every event is recorded first (not measured);
/// its inputs and timeouts are then fed to a fresh run, draining and dropping the outputs after
/// each, as the simulator does. Only that second run is measured: no scripted agent encodes
/// an answer inside it.
fn replayed(wf: ValidatedWorkflow) {
    let out = quiet_sim(
        wf,
        ScriptedAgent::new("agent"),
        ScriptedHost::default(),
        EventSelection::All,
    )
    .record()
    .drive();
    let trace = parse_trace(out.trace.as_deref().expect("recorded")).expect("a valid trace");
    // Output lines are left out here: dropping them inside the region would be counted.
    let lines: Vec<TraceLine> = trace
        .lines
        .iter()
        .map(|(_, l)| l.clone())
        .filter(|l| !matches!(l, TraceLine::Output(_)))
        .collect();
    let run = trace.new_run();
    let run = callgrind_measured_region(move || {
        let mut run = run;
        let drain = |run: &mut Run| while run.poll_output().is_some() {};
        drain(&mut run);
        for line in lines {
            match line {
                TraceLine::Input {
                    t,
                    input: RecordedInput::Input(input),
                } => run.handle(input, t).expect("a recorded input"),
                TraceLine::Timeout { t } => run.handle_timeout(t).expect("a recorded timeout"),
                other => panic!("not a replayable line: {other:?}"),
            }
            drain(&mut run);
        }
        run
    });
    assert!(run.result().is_some_and(|r| r.success));
}

fn workload(name: &str, steps: usize) {
    match name {
        "parse_validate_dag" => {
            let text = random_dag(steps, 42).to_string();
            let wf = callgrind_measured_region(|| validated(black_box(&text)));
            drop(wf);
        }
        "dag_all_events" => run(
            validated(&random_dag(steps, 42).to_string()),
            EventSelection::All,
        ),
        "dag_all_events_read" => run_reading(
            validated(&random_dag(steps, 42).to_string()),
            EventSelection::All,
            true,
        ),
        "dag_all_events_replayed" => replayed(validated(&random_dag(steps, 42).to_string())),
        "dag_no_events" => run(
            validated(&random_dag(steps, 42).to_string()),
            EventSelection::None,
        ),
        "chain_all_events" => run(validated(&chain(steps).to_string()), EventSelection::All),
        "chain_all_events_read" => run_reading(
            validated(&chain(steps).to_string()),
            EventSelection::All,
            true,
        ),
        "chain_no_events" => run(validated(&chain(steps).to_string()), EventSelection::None),
        other => panic!("unknown workload {other:?}; known: {WORKLOADS:?}"),
    }
}

fn main() {
    let mut steps = 1_000;
    let mut names = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--steps" => {
                steps = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .expect("--steps takes a number");
            }
            "--list" => {
                for w in WORKLOADS {
                    println!("{w}");
                }
                return;
            }
            // `cargo bench` passes `--bench`; other flags are not ours.
            a if a.starts_with("--") => {}
            a => names.push(a.to_owned()),
        }
    }
    if names.is_empty() {
        names = WORKLOADS.iter().map(|w| (*w).to_owned()).collect();
    }
    for name in &names {
        workload(name, steps);
        println!("{name} ({steps} steps): ran");
    }
}
