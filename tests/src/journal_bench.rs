//! The cost of durable runs, shared by `cargo bench -p a2at-tokio --bench journal` and
//! `-p a2at-smol --bench journal`: wall time of the same workflows with no journal and with a
//! SQLite journal (both durability levels) against loopback agents that take 50 ms per task,
//! the store's append rate, and the time to resume a 1,000-step run from its journal.
//!
//! It prints markdown tables and asserts nothing about time. Modes run interleaved, one
//! iteration each in turn, so machine noise spreads over all of them alike.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use a2at_core::host::MessageContent;
use a2at_core::workflow::{ValidatedWorkflow, parse_and_validate};
use a2at_driver::{
    BuiltControlPoint, ControlPointBuilder, Durability, Engine, JournalError, JournalStore,
    RunSummary, SqliteJournal, StoredRun,
};
use serde_json::Value;

use crate::loopback::LoopbackServer;
use crate::runtime::TestRuntime;
use crate::workloads::{chain, fan_out_join};
use crate::{Plan, ScriptedAgent};

const AGENT_LATENCY: Duration = Duration::from_millis(50);

fn workflow(v: Value) -> Arc<ValidatedWorkflow> {
    Arc::new(parse_and_validate(&v.to_string()).expect("a valid bench workflow"))
}

fn host() -> Arc<BuiltControlPoint> {
    Arc::new(
        ControlPointBuilder::new()
            .on_task(|req| async move { Ok(MessageContent::text(&req.instruction)) })
            .on_self_task(|req| async move {
                Ok(a2at_core::host::TaskResult::success(vec![Value::String(
                    req.instruction.to_string(),
                )]))
            })
            .build(),
    )
}

fn agent(latency: Duration) -> ScriptedAgent {
    let completed = Plan::States(vec!["TASK_STATE_COMPLETED"]);
    let plan = if latency.is_zero() {
        completed
    } else {
        Plan::Delayed(latency, Box::new(completed))
    };
    ScriptedAgent::new("agent").by_default(plan)
}

/// Opens an empty store for the `n`-th run under a scratch directory.
pub type OpenStore = Box<dyn Fn(&std::path::Path, usize) -> Arc<dyn JournalStore>>;

/// A store to journal into: a name for the table and how to open a fresh one.
pub struct StoreKind {
    /// The table's label.
    pub label: String,
    /// Opens an empty store for the `n`-th run.
    pub open: OpenStore,
}

fn sqlite(durability: Durability) -> StoreKind {
    StoreKind {
        label: durability_label(durability).into(),
        open: Box::new(move |dir, n| {
            Arc::new(
                SqliteJournal::open_with(dir.join(format!("runs-{n}.db")), durability)
                    .expect("sqlite journal"),
            )
        }),
    }
}

fn durability_label(durability: Durability) -> &'static str {
    match durability {
        Durability::Full => "SQLite, fsync per commit",
        _ => "SQLite, WAL without fsync",
    }
}

/// A store that counts its commits (appends) and the lines they carried.
struct Counting {
    inner: Arc<dyn JournalStore>,
    commits: AtomicU64,
    lines: AtomicU64,
}

impl JournalStore for Counting {
    fn create_run(&self, run_id: &str, header: &str, at: u64) -> Result<(), JournalError> {
        self.inner.create_run(run_id, header, at)
    }

    fn append(&self, run_id: &str, first: u64, lines: &[String]) -> Result<(), JournalError> {
        self.commits.fetch_add(1, Ordering::Relaxed);
        self.lines.fetch_add(lines.len() as u64, Ordering::Relaxed);
        self.inner.append(run_id, first, lines)
    }

    fn load(&self, run_id: &str) -> Result<StoredRun, JournalError> {
        self.inner.load(run_id)
    }

    fn list(&self) -> Result<Vec<RunSummary>, JournalError> {
        self.inner.list()
    }

    fn mark_finished(&self, run_id: &str) -> Result<(), JournalError> {
        self.inner.mark_finished(run_id)
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Runs `wf` once in `mode`: the wall time of the run alone (the store is opened before),
/// and the journal's commits and lines.
async fn one_run<T: TestRuntime>(
    server: &LoopbackServer,
    wf: &Arc<ValidatedWorkflow>,
    kind: Option<&StoreKind>,
    dir: &std::path::Path,
    n: usize,
) -> (Duration, u64, u64) {
    let engine = Engine::<T::Rt>::builder(server.cards())
        .build()
        .expect("engine");
    let mut run = engine.run(wf.clone(), host());
    let mut store = None;
    if let Some(kind) = kind {
        let counting = Arc::new(Counting {
            inner: (kind.open)(dir, n),
            commits: AtomicU64::new(0),
            lines: AtomicU64::new(0),
        });
        run = run.journal(counting.clone());
        store = Some(counting);
    }
    let started = Instant::now();
    let result = run.execute().await;
    let took = started.elapsed();
    assert!(result.success, "{:?}", result.error);
    let (commits, lines) = store.map_or((0, 0), |s| {
        (
            s.commits.load(Ordering::Relaxed),
            s.lines.load(Ordering::Relaxed),
        )
    });
    (took, commits, lines)
}

/// The overhead table: the same workflows with and without a journal.
fn overhead<T: TestRuntime>(iterations: usize, stores: &[StoreKind]) {
    println!(
        "\n### Journal overhead ({}, agents answer after {} ms, median of {iterations})\n",
        T::NAME,
        AGENT_LATENCY.as_millis()
    );
    println!("| workflow | mode | wall per run | ÷ in memory | journal commits (lines) per run |");
    println!("|---|---|---|---|---|");
    let modes: Vec<Option<&StoreKind>> = std::iter::once(None)
        .chain(stores.iter().map(Some))
        .collect();
    for (name, wf) in [
        ("20-step chain", workflow(chain(20))),
        ("1×50 fan-out", workflow(fan_out_join(50))),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let times = T::block_on(async {
            let server = LoopbackServer::start(vec![agent(AGENT_LATENCY)]).await;
            let mut times: Vec<Vec<Duration>> = vec![Vec::new(); modes.len()];
            let mut counts = vec![(0, 0); modes.len()];
            let mut n = 0;
            for _ in 0..iterations {
                for (m, mode) in modes.iter().enumerate() {
                    n += 1;
                    let (took, commits, lines) =
                        one_run::<T>(&server, &wf, *mode, dir.path(), n).await;
                    times[m].push(took);
                    counts[m] = (counts[m].0 + commits, counts[m].1 + lines);
                }
            }
            (times, counts)
        });
        let (times, counts) = times;
        let base = median(times[0].clone()).as_secs_f64();
        for ((mode, t), (commits, lines)) in modes.iter().zip(times).zip(counts) {
            let t = median(t).as_secs_f64();
            let per_run = |x: u64| x as f64 / iterations as f64;
            println!(
                "| {name} | {} | {:.1} ms | {:.3} | {:.0} ({:.0}) |",
                mode.map_or("in memory (no journal)", |k| k.label.as_str()),
                t * 1e3,
                t / base,
                per_run(commits),
                per_run(lines)
            );
        }
    }
}

/// Appends per second straight into the store: one line per commit, and ten.
fn append_rate() {
    println!("\n### SQLite journal appends (one store, no engine)\n");
    println!("| durability | lines per commit | commits/s | lines/s |");
    println!("|---|---|---|---|");
    let line = "{\"t\":1000,\"in\":{\"type\":\"response_end\",\"op\":1}}".to_owned();
    for durability in [Durability::Full, Durability::Process] {
        for per_commit in [1usize, 10] {
            let dir = tempfile::tempdir().expect("tempdir");
            let store = SqliteJournal::open_with(dir.path().join("a.db"), durability)
                .expect("sqlite journal");
            store.create_run("r", "{}", 0).expect("create");
            let lines = vec![line.clone(); per_commit];
            let commits = 400u64;
            let started = Instant::now();
            for c in 0..commits {
                store
                    .append("r", 1 + c * per_commit as u64, &lines)
                    .expect("append");
            }
            let secs = started.elapsed().as_secs_f64();
            println!(
                "| {} | {per_commit} | {:.0} | {:.0} |",
                durability_label(durability),
                commits as f64 / secs,
                (commits * per_commit as u64) as f64 / secs
            );
        }
    }
}

/// Resume time of a 1,000-step chain stopped one input before its end: the replay of the
/// journal into a fresh core (until `resume` returns) and the rest of the run.
fn resume_time<T: TestRuntime>() {
    const STEPS: usize = 1000;
    let wf = workflow(chain(STEPS));
    let dir = tempfile::tempdir().expect("tempdir");
    let (lines, replay, rest) = T::block_on(async {
        let server = LoopbackServer::start(vec![agent(Duration::ZERO)]).await;
        let engine = Engine::<T::Rt>::builder(server.cards())
            .build()
            .expect("engine");
        let full = Arc::new(
            SqliteJournal::open_with(dir.path().join("full.db"), Durability::Process)
                .expect("journal"),
        );
        let result = engine
            .run(wf.clone(), host())
            .journal(full.clone())
            .execute()
            .await;
        assert!(result.success, "{:?}", result.error);
        let stored = full.load(&result.execution_id).expect("load");
        // The same journal without its last input: a run that stopped just before its end.
        let cut = Arc::new(
            SqliteJournal::open_with(dir.path().join("cut.db"), Durability::Process)
                .expect("journal"),
        );
        let id = &stored.run_id;
        cut.create_run(id, &stored.header, stored.started_at_ms)
            .expect("create");
        let kept = &stored.lines[..stored.lines.len() - 1];
        cut.append(id, 1, kept).expect("append");
        let started = Instant::now();
        let handle = engine
            .resume(cut.clone(), id, host())
            .await
            .expect("resume");
        let replay = started.elapsed();
        let resumed = handle.result().await;
        assert!(resumed.success, "{:?}", resumed.error);
        (kept.len(), replay, started.elapsed() - replay)
    });
    println!("\n### Resuming a {STEPS}-step chain ({})\n", T::NAME);
    println!("| journal lines replayed | replay until `resume` returns | rest of the run |");
    println!("|---|---|---|");
    println!(
        "| {lines} | {:.1} ms | {:.1} ms |",
        replay.as_secs_f64() * 1e3,
        rest.as_secs_f64() * 1e3
    );
}

/// The whole bench on the SQLite stores and `more` (e.g. PostgreSQL):
/// `A2AT_BENCH_ITERATIONS` (default 5) runs per store.
pub fn main<T: TestRuntime>(more: Vec<StoreKind>) {
    let iterations = std::env::var("A2AT_BENCH_ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let mut stores = vec![sqlite(Durability::Full), sqlite(Durability::Process)];
    stores.extend(more);
    overhead::<T>(iterations, &stores);
    append_rate();
    resume_time::<T>();
}
