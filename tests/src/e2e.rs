//! The end-to-end benchmark of issue #11, written once over a [`BenchRuntime`]; each runtime's
//! `benches/e2e.rs` implements it (with a [`DirectClient`], a minimal client on the runtime's
//! own hyper client stack), installs the counting allocator and calls [`main`].
//!
//! Every workload runs twice: through the engine, and as the same sequence of HTTP requests
//! (same dependency structure, same kind of bodies, same binding) sent by the direct client. The
//! ratio of the two wall times is the engine's overhead over the loopback limit. Timings are
//! printed, never asserted. The workloads use JSON-RPC agents; one row repeats the chain on
//! gRPC agents (HTTP/2, the direct client posting framed protobuf).
//!
//! Each measurement is a job run in its own process (this same binary, started with `A2AT_E2E_JOB`
//! set), so the peak RSS it reports is its own. A job serves the scripted agents of `a2at-tests`
//! ([`LoopbackServer`]) from a child process of its own (started with `A2AT_E2E_AGENT_SERVER` set), so
//! the CPU time and memory read from `/proc` belong to the engine (or the direct client) and the
//! runtime alone, not to the agents.

use std::future::Future;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::ScriptedAgent;
use crate::agent::Plan;
use crate::loopback::LoopbackServer;
use a2at_core::a2a::AgentCard;
use a2at_core::event::EventType;
use a2at_core::host::MessageContent;
use a2at_core::workflow::{ValidatedWorkflow, parse_and_validate};
use futures::future::join_all;
use serde_json::{Value, json};
use stats_alloc::Stats;

use a2at_driver::{BuiltControlPoint, ControlPointBuilder, Engine, Runtime};

/// A runtime as the end-to-end benchmark drives it.
pub trait BenchRuntime: 'static {
    /// The adapter's runtime type.
    type Rt: Runtime;
    /// The direct client the engine is compared with.
    type Client: DirectClient;
    /// The runtime's name and flavour in the tables.
    const LABEL: &'static str;
    /// Runs `future` to its end on the runtime.
    fn block_on<F: Future>(future: F) -> F::Output;
    /// Runs `task` concurrently; the returned future gives its output.
    fn spawn<T: Send + 'static>(
        task: impl Future<Output = T> + Send + 'static,
    ) -> impl Future<Output = T> + Send;
}

/// The runtime's client stack without the engine.
pub trait DirectClient: Clone + Send + Sync + 'static {
    /// A client with its own (empty) connection pool.
    fn new() -> Self;
    /// POSTs a JSON-RPC body with the engine's headers and reads the whole response; returns
    /// the body's length.
    fn post(&self, url: &str, body: String) -> impl Future<Output = usize> + Send;
    /// Sends one unary gRPC call over HTTP/2 (prior knowledge): POSTs the framed `body` with
    /// the engine's metadata, reads the whole response and checks `grpc-status: 0` in its
    /// trailers; returns the body's length.
    fn post_grpc(&self, url: &str, body: Vec<u8>) -> impl Future<Output = usize> + Send;
}

/// The metadata of a unary gRPC call, as the engine sends it.
pub const GRPC_HEADERS: [(&str, &str); 3] = [
    ("content-type", "application/grpc"),
    ("te", "trailers"),
    ("a2a-version", "1.0"),
];

/// Sleeps on `B`'s clock.
async fn sleep<B: BenchRuntime>(d: Duration) {
    <B::Rt as Runtime>::sleep_until(<B::Rt as Runtime>::now() + d).await;
}

/// The runtime's label in the tables, set by [`main`].
static RUNTIME_LABEL: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();

fn runtime_label() -> &'static str {
    RUNTIME_LABEL.get().copied().unwrap_or("unknown runtime")
}

/// The process-wide counters of the bench binary's counting allocator, set by [`main`].
static ALLOCATOR_STATS: std::sync::OnceLock<fn() -> Stats> = std::sync::OnceLock::new();

fn allocator_stats() -> Stats {
    ALLOCATOR_STATS.get().map_or_else(Stats::default, |f| f())
}

/// Set in the environment of the child process that serves the agents.
const SERVER_ENV: &str = "A2AT_E2E_AGENT_SERVER";
/// How long the `held` agent keeps each answer (runs stay in flight meanwhile), unless
/// [`HOLD_ENV`] says otherwise.
const HOLD: Duration = Duration::from_secs(4);
/// Milliseconds the `held` agent keeps each answer instead of [`HOLD`]: a profiler that slows
/// the engine down (valgrind) needs longer to have every run in flight at once.
const HOLD_ENV: &str = "A2AT_E2E_HOLD_MS";

fn hold() -> Duration {
    std::env::var(HOLD_ENV)
        .ok()
        .and_then(|ms| ms.parse().ok())
        .map_or(HOLD, Duration::from_millis)
}
/// How long the `slow` agent takes for each answer.
const SLOW: Duration = Duration::from_millis(50);

fn completed() -> Plan {
    Plan::States(vec!["TASK_STATE_COMPLETED"])
}

/// The agents of the child server: `fast` answers at once, `held` after [`hold`], `slow` after
/// [`SLOW`]; `fastgrpc` is `fast` on gRPC; `working` answers at once with a task that stays
/// WORKING. All others are JSON-RPC; all are unary, and all but `working` complete each task in
/// their first answer.
fn scripted_agents() -> Vec<ScriptedAgent> {
    vec![
        ScriptedAgent::new("fast"),
        ScriptedAgent::new("fastgrpc").grpc(),
        ScriptedAgent::new("held").by_default(Plan::Delayed(hold(), Box::new(completed()))),
        ScriptedAgent::new("slow").by_default(Plan::Delayed(SLOW, Box::new(completed()))),
        ScriptedAgent::new("working").by_default(Plan::States(vec!["TASK_STATE_WORKING"])),
    ]
}

/// The child process: serves the agents until its standard input closes.
fn serve_agents() -> ! {
    let server = LoopbackServer::spawn(scripted_agents());
    println!("{}", server.base_url());
    let _ = std::io::stdout().flush();
    let mut rest = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut rest);
    drop(server);
    std::process::exit(0)
}

/// The agent server child process; it exits when this is dropped (its stdin closes).
struct Agents {
    child: Child,
    base: String,
    cards: Vec<AgentCard>,
}

impl Agents {
    fn start() -> Agents {
        // Under valgrind the current executable is the tool, not this binary: a profiling run
        // names the bench binary in `A2AT_E2E_EXE` so the agent server starts natively.
        let exe = std::env::var_os("A2AT_E2E_EXE").map_or_else(
            || std::env::current_exe().expect("the bench binary"),
            std::path::PathBuf::from,
        );
        let mut child = Command::new(exe)
            .env(SERVER_ENV, "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the agent server");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("piped stdout"))
            .read_line(&mut line)
            .expect("the server's base URL");
        let base = line.trim().to_owned();
        let cards = scripted_agents()
            .iter()
            .map(|a| {
                AgentCard::from_json_value(&a.card_at(&format!("{base}/{}", a.name)))
                    .expect("scripted card parses")
            })
            .collect();
        Agents { child, base, cards }
    }

    /// The JSON-RPC endpoint of `agent`.
    fn url(&self, agent: &str) -> String {
        format!("{}/{agent}/a2a/jsonrpc", self.base)
    }

    /// The gRPC `SendMessage` method URL of `agent`.
    fn grpc_url(&self, agent: &str) -> String {
        format!(
            "{}/{agent}/a2a/grpc/lf.a2a.v1.A2AService/SendMessage",
            self.base
        )
    }

    /// An engine whose concurrency limits never queue an exchange (the direct client has none).
    fn engine<R: Runtime>(&self) -> Engine<R> {
        Engine::builder(self.cards.clone())
            .max_in_flight(1_000_000)
            .max_in_flight_per_agent(1_000_000)
            .build()
            .expect("engine")
    }
}

impl Drop for Agents {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

fn host() -> Arc<BuiltControlPoint> {
    Arc::new(
        ControlPointBuilder::new()
            .on_task(|req| async move { Ok(MessageContent::text(&req.instruction)) })
            .build(),
    )
}

fn validated(v: Value) -> Arc<ValidatedWorkflow> {
    Arc::new(parse_and_validate(&v.to_string()).expect("valid workflow"))
}

fn subtask(agent: &str, i: usize) -> Value {
    json!([{"agent": agent, "description": format!("task {i}")}])
}

/// `n` steps in a line, the first on `first`, the others on `rest`.
fn chain(n: usize, first: &str, rest: &str) -> Arc<ValidatedWorkflow> {
    validated(crate::workloads::chain_on(n, first, rest))
}

/// `width` start steps, each leading to one ALL_SUCCESS join step.
fn fan_out(width: usize, agent: &str) -> Arc<ValidatedWorkflow> {
    let mut steps: Vec<Value> = (0..width)
        .map(|i| {
            json!({"name": format!("w{i}"), "subtasks": subtask(agent, i),
                   "next": [{"step": "join"}]})
        })
        .collect();
    steps.push(json!({"name": "join", "step_type": "ALL_SUCCESS",
                      "subtasks": subtask(agent, width)}));
    validated(json!({"name": "fan", "steps": steps}))
}

/// A SendMessage body shaped like the engine's (fresh ids, the task's text).
fn send_body(i: usize) -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(3, Ordering::Relaxed);
    let id = |k: usize| format!("00000000-0000-4000-8000-{:012}", n + k);
    json!({"jsonrpc": "2.0", "id": id(0), "method": "SendMessage", "params": {
        "message": {"messageId": id(1), "contextId": id(2), "role": "ROLE_USER",
                    "parts": [{"text": format!("task {i}")}]},
        "configuration": {"historyLength": 0}}})
    .to_string()
}

/// A framed gRPC `SendMessageRequest` shaped like the engine's.
fn grpc_send_body(i: usize) -> Vec<u8> {
    use a2at_core::a2a::{A2aCall, Message, Part, Role, SendMessageConfiguration};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(2, Ordering::Relaxed);
    let id = |k: usize| format!("00000000-0000-4000-8000-{:012}", n + k);
    let request = a2at_core::a2a::SendMessageRequest {
        tenant: None,
        message: Message {
            message_id: id(0),
            context_id: Some(id(1)),
            task_id: None,
            role: Role::User,
            parts: vec![Part::text(format!("task {i}"))],
            metadata: None,
            extensions: Vec::new(),
            reference_task_ids: Vec::new(),
        },
        configuration: Some(SendMessageConfiguration {
            accepted_output_modes: Vec::new(),
            history_length: Some(0),
            return_immediately: false,
        }),
        metadata: None,
    };
    a2at_core::a2a::grpc::encode_grpc_call(&A2aCall::SendMessage(&request), None, &[], None)
        .expect("a small message")
        .body
}

/// `n` gRPC calls one after the other.
async fn direct_grpc_chain<C: DirectClient>(client: &C, url: &str, n: usize) {
    for i in 0..n {
        client.post_grpc(url, grpc_send_body(i)).await;
    }
}

async fn engine_runs<R: Runtime>(
    engine: &Engine<R>,
    workflow: &Arc<ValidatedWorkflow>,
    host: &Arc<BuiltControlPoint>,
    runs: usize,
) {
    engine_runs_recording(engine, workflow, host, runs, false).await
}

/// `runs` concurrent runs; with `record`, each is recorded as a trace (serialized, then
/// discarded: the cost measured is building and writing the lines, not the disk).
async fn engine_runs_recording<R: Runtime>(
    engine: &Engine<R>,
    workflow: &Arc<ValidatedWorkflow>,
    host: &Arc<BuiltControlPoint>,
    runs: usize,
    record: bool,
) {
    let results = join_all((0..runs).map(|_| {
        let run = engine.run(workflow.clone(), host.clone());
        if record {
            run.record(std::io::sink()).execute()
        } else {
            run.execute()
        }
    }))
    .await;
    for r in results {
        assert!(r.success, "run failed: {:?}", r.error);
    }
}

async fn direct_chain<C: DirectClient>(client: C, url: Arc<str>, first: Arc<str>, n: usize) {
    for i in 0..n {
        let target = if i == 0 { &first } else { &url };
        client.post(target, send_body(i)).await;
    }
}

/// `runs` concurrent chains of `n` requests.
async fn direct_chains<B: BenchRuntime>(
    client: &B::Client,
    first: &str,
    url: &str,
    runs: usize,
    n: usize,
) {
    let (first, url): (Arc<str>, Arc<str>) = (first.into(), url.into());
    join_all(
        (0..runs).map(|_| B::spawn(direct_chain(client.clone(), url.clone(), first.clone(), n))),
    )
    .await;
}

/// `width` concurrent requests, then one.
async fn direct_fan_out<B: BenchRuntime>(client: &B::Client, url: &str, width: usize) {
    let url: Arc<str> = url.into();
    join_all((0..width).map(|i| {
        let (client, url) = (client.clone(), url.clone());
        B::spawn(async move { client.post(&url, send_body(i)).await })
    }))
    .await;
    client.post(&url, send_body(width)).await;
}

// ---- process measurements --------------------------------------------------------------------

/// CPU time of the whole process (user + system, all threads).
fn cpu_time() -> Duration {
    cpu_time::ProcessTime::now().as_duration()
}

/// The number in field `field` of a `/proc/.../status` text (a `kB` unit dropped), 0 if absent.
fn status_field(status: &str, field: &str) -> i64 {
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// A `kB` field of `/proc/self/status` (`VmRSS`, `VmHWM`).
fn status_kb(field: &str) -> i64 {
    status_field(
        &std::fs::read_to_string("/proc/self/status").unwrap_or_default(),
        field,
    )
}

/// Context switches of every thread of the process so far (voluntary and not): each voluntary
/// one is a thread that parked to wait for a wake-up, the count a task hop costs in the kernel.
fn context_switches() -> i64 {
    let Ok(threads) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    threads
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("status")).ok())
        .map(|status| {
            status_field(&status, "voluntary_ctxt_switches")
                + status_field(&status, "nonvoluntary_ctxt_switches")
        })
        .sum()
}

/// Bytes allocated and not yet freed, process-wide.
fn live_heap() -> i64 {
    let s = allocator_stats();
    s.bytes_allocated as i64 - s.bytes_deallocated as i64
}

/// Runs `f` `warmup` times, then `iters` timed times; returns the job's figures: wall time of
/// each timed iteration, process CPU time and allocations over them, the process's peak RSS
/// (VmHWM) and its RSS before the warm-up.
async fn measure<F, Fut>(warmup: usize, iters: usize, mut f: F) -> Value
where
    F: FnMut() -> Fut,
    Fut: Future<Output = ()>,
{
    let idle_rss = status_kb("VmRSS");
    for _ in 0..warmup {
        f().await;
    }
    // Read outside the measured window: the reading allocates and costs CPU time itself.
    let switches = context_switches();
    let stats = allocator_stats();
    let cpu = cpu_time();
    let mut walls = Vec::with_capacity(iters);
    for _ in 0..iters {
        let t = Instant::now();
        f().await;
        walls.push(t.elapsed().as_nanos() as u64);
    }
    let cpu = cpu_time().saturating_sub(cpu);
    let after = allocator_stats();
    let switches = (context_switches() - switches).max(0);
    json!({
        "walls_ns": walls,
        "cpu_ns": cpu.as_nanos() as u64,
        "context_switches": switches,
        "idle_rss_kb": idle_rss,
        "peak_rss_kb": status_kb("VmHWM"),
        "allocations": after.allocations - stats.allocations,
        "bytes_allocated": after.bytes_allocated - stats.bytes_allocated,
    })
}

/// Memory of `n` things in flight at once: RSS and live heap once `sent` reached `n` (plus a
/// settle time for the requests to reach the agents), relative to before `go` started.
async fn in_flight_memory<B: BenchRuntime, Fut: Future<Output = ()>>(
    n: usize,
    sent: &AtomicUsize,
    go: Fut,
) -> Value {
    let (rss, heap) = (status_kb("VmRSS"), live_heap());
    let watch = async {
        let deadline = Instant::now() + hold() - Duration::from_millis(1_500);
        while sent.load(Ordering::Relaxed) < n && Instant::now() < deadline {
            sleep::<B>(Duration::from_millis(10)).await;
        }
        sleep::<B>(Duration::from_millis(500)).await;
        json!({
            "rss_kb": status_kb("VmRSS") - rss,
            "heap": live_heap() - heap,
            "in_flight": sent.load(Ordering::Relaxed),
        })
    };
    let (measured, ()) = futures::join!(watch, go);
    measured
}

// ---- jobs: one process each --------------------------------------------------------------------

/// Set in the environment of a job process: `<job>:<engine|direct>`.
const JOB_ENV: &str = "A2AT_E2E_JOB";
/// Runs held in flight at once by the `inflight` job.
const IN_FLIGHT: usize = 1_000;

/// Chain lengths of the step-scaling jobs, with their warm-up and timed iterations.
const STEPS: [(usize, usize, usize); 3] = [(100, 2, 7), (1_000, 1, 3), (10_000, 0, 1)];
/// Concurrent 5-step runs of the run-scaling jobs, with their warm-up and timed iterations.
const RUNS: [(usize, usize, usize); 4] = [(1, 3, 15), (10, 2, 9), (100, 2, 7), (1_000, 1, 3)];

/// One job in this process: `job` through the engine (or the direct client); returns its
/// figures.
async fn run_job<B: BenchRuntime>(job: &str, through_engine: bool) -> Value {
    let agents = Agents::start();
    let engine = agents.engine::<B::Rt>();
    let client = B::Client::new();
    let host = host();
    let (fast, slow) = (agents.url("fast"), agents.url("slow"));
    let (kind, n) = job.split_once('-').unwrap_or((job, "0"));
    let n: usize = n.parse().expect("job size");
    let (workflow, warmup, iters) = match kind {
        "chain" | "record" => (chain(20, "fast", "fast"), 3, 15),
        "chaingrpc" => (chain(20, "fastgrpc", "fastgrpc"), 3, 15),
        "record200" => (chain(5, "fast", "fast"), 2, 7),
        "fan" => (fan_out(50, "fast"), 3, 15),
        "runs200" => (chain(5, "fast", "fast"), 2, 7),
        "latency" => (chain(20, "slow", "slow"), 1, 3),
        "steps" => {
            let &(_, w, i) = STEPS.iter().find(|s| s.0 == n).expect("a step count");
            (chain(n, "fast", "fast"), w, i)
        }
        "runs" => {
            let &(_, w, i) = RUNS.iter().find(|s| s.0 == n).expect("a run count");
            (chain(5, "fast", "fast"), w, i)
        }
        "inflight" => {
            return in_flight_job::<B>(&agents, &engine, &client, through_engine).await;
        }
        "waiting" => return waiting_job::<B>(&agents, &client, n, through_engine).await,
        other => panic!("unknown job {other}"),
    };
    if kind.starts_with("record") {
        let runs = if kind == "record200" { 200 } else { 1 };
        // "engine" mode records; "direct" mode is the same engine run without recording.
        return measure(warmup, iters, || {
            engine_runs_recording(&engine, &workflow, &host, runs, through_engine)
        })
        .await;
    }
    if through_engine {
        let runs = match kind {
            "runs200" => 200,
            "runs" => n,
            _ => 1,
        };
        let mut figures = measure(warmup, iters, || {
            engine_runs(&engine, &workflow, &host, runs)
        })
        .await;
        // Warm-up included: how often the pool had to open a connection.
        figures["connections_opened"] = json!(engine.http_client().connections_opened());
        figures["requests_sent"] = json!(engine.http_client().requests_sent());
        if kind == "steps" {
            // What a finished chain keeps: the live heap while its result is held, over the
            // heap before it started (the workflow is already built and shared).
            let before = live_heap();
            let result = engine.run(workflow.clone(), host.clone()).execute().await;
            figures["retained_heap"] = json!(live_heap() - before);
            assert!(result.success, "{:?}", result.error);
        }
        figures
    } else {
        match kind {
            "chain" => {
                measure(warmup, iters, || {
                    direct_chains::<B>(&client, &fast, &fast, 1, 20)
                })
                .await
            }
            "chaingrpc" => {
                let url = agents.grpc_url("fastgrpc");
                measure(warmup, iters, || direct_grpc_chain(&client, &url, 20)).await
            }
            "fan" => measure(warmup, iters, || direct_fan_out::<B>(&client, &fast, 50)).await,
            "runs200" => {
                measure(warmup, iters, || {
                    direct_chains::<B>(&client, &fast, &fast, 200, 5)
                })
                .await
            }
            "latency" => {
                measure(warmup, iters, || {
                    direct_chains::<B>(&client, &slow, &slow, 1, 20)
                })
                .await
            }
            "steps" => {
                measure(warmup, iters, || {
                    direct_chains::<B>(&client, &fast, &fast, 1, n)
                })
                .await
            }
            _ => {
                measure(warmup, iters, || {
                    direct_chains::<B>(&client, &fast, &fast, n, 5)
                })
                .await
            }
        }
    }
}

/// `n` runs of `workflow`, each counting its events of `kind` into `counter` (without reading
/// their payloads).
fn counted_runs<'a, R: Runtime>(
    engine: &'a Engine<R>,
    workflow: &'a Arc<ValidatedWorkflow>,
    host: &'a Arc<BuiltControlPoint>,
    n: usize,
    kind: EventType,
    counter: &'a Arc<AtomicUsize>,
) -> impl Iterator<Item = impl Future<Output = a2at_core::ExecutionResult>> + 'a {
    (0..n).map(move |_| {
        let counter = counter.clone();
        engine
            .run(workflow.clone(), host.clone())
            .event_sink(move |e| {
                if e.kind == kind {
                    counter.fetch_add(1, Ordering::Relaxed);
                }
            })
            .execute()
    })
}

/// [`IN_FLIGHT`] 5-step runs (or first requests) waiting on the `held` agent at once.
async fn in_flight_job<B: BenchRuntime>(
    agents: &Agents,
    engine: &Engine<B::Rt>,
    client: &B::Client,
    through_engine: bool,
) -> Value {
    let host = host();
    let (held, fast): (Arc<str>, Arc<str>) = (agents.url("held").into(), agents.url("fast").into());
    // Warm the pools and the allocator with a small round first.
    if through_engine {
        engine_runs(engine, &chain(5, "fast", "fast"), &host, 50).await;
    } else {
        direct_chains::<B>(client, &fast, &fast, 50, 5).await;
    }
    let sent = Arc::new(AtomicUsize::new(0));
    if through_engine {
        let wf = chain(5, "held", "fast");
        let go = async {
            let runs = counted_runs(
                engine,
                &wf,
                &host,
                IN_FLIGHT,
                EventType::AgentRequest,
                &sent,
            );
            for r in join_all(runs).await {
                assert!(r.success, "run failed: {:?}", r.error);
            }
        };
        in_flight_memory::<B, _>(IN_FLIGHT, &sent, go).await
    } else {
        let go = async {
            join_all((0..IN_FLIGHT).map(|_| {
                let (client, held, fast, sent) =
                    (client.clone(), held.clone(), fast.clone(), sent.clone());
                B::spawn(async move {
                    sent.fetch_add(1, Ordering::Relaxed);
                    direct_chain(client, fast, held, 5).await;
                })
            }))
            .await;
        };
        in_flight_memory::<B, _>(IN_FLIGHT, &sent, go).await
    }
}

/// How long a waiting run sleeps before it would poll its task again (never reached while the
/// `waiting` job measures).
const WAIT_POLL: Duration = Duration::from_secs(600);
/// Sends in flight at once while the `waiting` job starts its runs: the process may hold only
/// so many sockets, and a waiting run holds none.
const WAIT_SENDS: usize = 64;

/// `n` one-step runs whose remote task stays WORKING: each sends once, is answered at once, and
/// then waits for its next poll (no connection is held meanwhile). Measured when all `n` were
/// answered, then the process ends with the runs still waiting. The direct client's "run" is a
/// task that sent the same request and sleeps until its next poll.
async fn waiting_job<B: BenchRuntime>(
    agents: &Agents,
    client: &B::Client,
    n: usize,
    through_engine: bool,
) -> Value {
    let working: Arc<str> = agents.url("working").into();
    let answered = Arc::new(AtomicUsize::new(0));
    let deadline = Duration::from_secs(600);
    if through_engine {
        let engine: Engine<B::Rt> = Engine::builder(agents.cards.clone())
            .max_in_flight(1_000_000)
            .max_in_flight_per_agent(WAIT_SENDS)
            .poll_interval(WAIT_POLL)
            .task_budget(WAIT_POLL * 2)
            .build()
            .expect("engine");
        let (host, wf) = (host(), chain(1, "working", "working"));
        let runs = counted_runs(
            &engine,
            &wf,
            &host,
            n,
            EventType::AgentStatusUpdate,
            &answered,
        );
        let go = async {
            join_all(runs).await;
        };
        waiting_memory::<B, _>(n, &answered, deadline, go).await
    } else {
        let sends = Arc::new(async_lock::Semaphore::new(WAIT_SENDS));
        let runs = (0..n).map(|i| {
            let (client, url, sends, answered) = (
                client.clone(),
                working.clone(),
                sends.clone(),
                answered.clone(),
            );
            async move {
                {
                    let _permit = sends.acquire().await;
                    client.post(&url, send_body(i)).await;
                }
                answered.fetch_add(1, Ordering::Relaxed);
                sleep::<B>(WAIT_POLL).await;
            }
        });
        let go = async {
            join_all(runs).await;
        };
        waiting_memory::<B, _>(n, &answered, deadline, go).await
    }
}

/// Memory after `answered` reached `n` (or `deadline` passed) while `go` runs, then ends
/// without waiting for `go`; also how long it took to get there.
async fn waiting_memory<B: BenchRuntime, Fut: Future<Output = ()>>(
    n: usize,
    answered: &AtomicUsize,
    deadline: Duration,
    go: Fut,
) -> Value {
    let (rss, heap, started) = (status_kb("VmRSS"), live_heap(), Instant::now());
    let watch = async {
        while answered.load(Ordering::Relaxed) < n && started.elapsed() < deadline {
            sleep::<B>(Duration::from_millis(50)).await;
        }
        let ready_ms = started.elapsed().as_millis() as u64;
        sleep::<B>(Duration::from_millis(500)).await;
        json!({
            "rss_kb": status_kb("VmRSS") - rss,
            "heap": live_heap() - heap,
            "in_flight": answered.load(Ordering::Relaxed),
            "ready_ms": ready_ms,
            "peak_rss_kb": status_kb("VmHWM"),
        })
    };
    futures::pin_mut!(watch, go);
    match futures::future::select(watch, go).await {
        futures::future::Either::Left((measured, _)) => measured,
        futures::future::Either::Right(((), watch)) => watch.await,
    }
}

/// Runs `job` in a fresh process of this binary and returns its figures.
fn job(job: &str, through_engine: bool) -> Value {
    let exe = std::env::current_exe().expect("the bench binary");
    let mode = if through_engine { "engine" } else { "direct" };
    let output = Command::new(exe)
        .env(JOB_ENV, format!("{job}:{mode}"))
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .expect("run a job process");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("RESULT "))
        .unwrap_or_else(|| panic!("job {job}:{mode} printed no result ({})", output.status));
    serde_json::from_str(line).expect("job result")
}

// ---- reporting -------------------------------------------------------------------------------

/// The figures of one measured job.
struct Sample(Value);

impl Sample {
    fn iters(&self) -> usize {
        self.0["walls_ns"].as_array().map_or(1, Vec::len).max(1)
    }

    fn median(&self) -> Duration {
        let mut w: Vec<u64> = self.0["walls_ns"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_u64).collect())
            .unwrap_or_default();
        w.sort_unstable();
        Duration::from_nanos(w.get(w.len() / 2).copied().unwrap_or(0))
    }

    fn cpu_per_iter(&self) -> Duration {
        Duration::from_nanos(self.0["cpu_ns"].as_u64().unwrap_or(0) / self.iters() as u64)
    }

    fn allocs_per_iter(&self) -> u64 {
        self.0["allocations"].as_u64().unwrap_or(0) / self.iters() as u64
    }

    fn bytes_per_iter(&self) -> u64 {
        self.0["bytes_allocated"].as_u64().unwrap_or(0) / self.iters() as u64
    }

    fn peak_kb(&self) -> i64 {
        self.0["peak_rss_kb"].as_i64().unwrap_or(0)
    }

    fn growth_kb(&self) -> i64 {
        self.peak_kb() - self.0["idle_rss_kb"].as_i64().unwrap_or(0)
    }
}

fn ms(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1e3;
    if ms >= 100.0 {
        format!("{ms:.0} ms")
    } else if ms >= 10.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{ms:.2} ms")
    }
}

fn mb(kb: i64) -> String {
    format!("{:.1} MB", kb as f64 / 1024.0)
}

/// Peak RSS, and its growth over the idle process (runtime, engine, connections) in brackets.
fn rss(s: &Sample) -> String {
    format!("{} (+{})", mb(s.peak_kb()), mb(s.growth_kb()))
}

fn ratio(e: &Sample, d: &Sample) -> f64 {
    e.median().as_secs_f64() / d.median().as_secs_f64()
}

/// (a), (b), (c): the engine against the direct client.
fn overhead_table() {
    let runtime = runtime_label();
    println!("\n### Overhead against the loopback limit ({runtime})\n");
    println!(
        "| workload | iters | engine wall (median) | direct wall (median) | ratio | engine share \
         of wall | engine CPU/iter | direct CPU/iter | engine peak RSS (growth) | direct peak RSS \
         (growth) | engine allocs / KB per request |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for (name, key, requests) in [
        ("(a) 20-step chain", "chain", 20),
        ("(a′) 20-step chain over gRPC", "chaingrpc", 20),
        ("(b) 1×50 fan-out + ALL_SUCCESS join", "fan", 51),
        ("(c) 200 concurrent 5-step runs", "runs200", 1000),
    ] {
        let (e, d) = (Sample(job(key, true)), Sample(job(key, false)));
        let (em, dm) = (e.median().as_secs_f64(), d.median().as_secs_f64());
        println!(
            "| {name} | {} | {} | {} | {:.2} | {:.0} % | {} | {} | {} | {} | {} / {:.0} |",
            e.iters(),
            ms(e.median()),
            ms(d.median()),
            ratio(&e, &d),
            (em - dm) / em * 100.0,
            ms(e.cpu_per_iter()),
            ms(d.cpu_per_iter()),
            rss(&e),
            rss(&d),
            e.allocs_per_iter() / requests,
            e.bytes_per_iter() as f64 / 1024.0 / requests as f64,
        );
    }
}

/// Trace recording (#9): the same engine runs with and without `RunBuilder::record`.
fn recording_table() {
    let runtime = runtime_label();
    println!("\n### Trace recording overhead ({runtime})\n");
    println!(
        "| workload | iters | wall without | wall with recording | wall ratio | CPU/iter without \
         | CPU/iter with | CPU ratio |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for (name, key) in [
        ("20-step chain", "record"),
        ("200 concurrent 5-step runs", "record200"),
    ] {
        // "engine" mode records; "direct" mode is the same engine run without recording.
        let (with, without) = (Sample(job(key, true)), Sample(job(key, false)));
        println!(
            "| {name} | {} | {} | {} | {:.2} | {} | {} | {:.2} |",
            with.iters(),
            ms(without.median()),
            ms(with.median()),
            ratio(&with, &without),
            ms(without.cpu_per_iter()),
            ms(with.cpu_per_iter()),
            with.cpu_per_iter().as_secs_f64() / without.cpu_per_iter().as_secs_f64(),
        );
    }
}

/// Wall time and memory against the number of steps, then against concurrent runs.
fn scaling_tables() {
    let runtime = runtime_label();
    println!("\n### Scaling with steps: one chain ({runtime})\n");
    println!(
        "| steps | iters | engine wall | direct wall | ratio | engine per step | direct per step \
         | engine CPU/run | engine peak RSS (growth) | engine allocs / KB per step \
         | result kept, heap per step |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for (steps, _, _) in STEPS {
        let key = format!("steps-{steps}");
        let (e, d) = (Sample(job(&key, true)), Sample(job(&key, false)));
        println!(
            "| {steps} | {} | {} | {} | {:.2} | {:.0} µs | {:.0} µs | {} | {} | {} / {:.1} | {:.2} KB |",
            e.iters(),
            ms(e.median()),
            ms(d.median()),
            ratio(&e, &d),
            e.median().as_secs_f64() * 1e6 / steps as f64,
            d.median().as_secs_f64() * 1e6 / steps as f64,
            ms(e.cpu_per_iter()),
            rss(&e),
            e.allocs_per_iter() / steps as u64,
            e.bytes_per_iter() as f64 / 1024.0 / steps as f64,
            e.0["retained_heap"].as_f64().unwrap_or(f64::NAN) / 1024.0 / steps as f64,
        );
    }

    println!("\n### Scaling with concurrent runs of a 5-step chain ({runtime})\n");
    println!(
        "| runs | iters | engine wall | direct wall | ratio | engine wall per run | engine CPU \
         per run | direct CPU per run | engine peak RSS (growth) | direct peak RSS (growth) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for (runs, _, _) in RUNS {
        let key = format!("runs-{runs}");
        let (e, d) = (Sample(job(&key, true)), Sample(job(&key, false)));
        println!(
            "| {runs} | {} | {} | {} | {:.2} | {:.0} µs | {:.0} µs | {:.0} µs | {} | {} |",
            e.iters(),
            ms(e.median()),
            ms(d.median()),
            ratio(&e, &d),
            e.median().as_secs_f64() * 1e6 / runs as f64,
            e.cpu_per_iter().as_secs_f64() * 1e6 / runs as f64,
            d.cpu_per_iter().as_secs_f64() * 1e6 / runs as f64,
            rss(&e),
            rss(&d),
        );
    }
}

/// Memory per in-flight 5-step run.
fn in_flight_table() {
    let runtime = runtime_label();
    let (e, d) = (job("inflight", true), job("inflight", false));
    println!(
        "\n### Memory per in-flight 5-step run: {IN_FLIGHT} runs waiting on their first step \
         ({runtime})\n"
    );
    println!(
        "| measure | engine: total / per run | direct client: total / per request | engine − \
         direct, per run |"
    );
    println!("|---|---|---|---|");
    let per = |v: &Value, key: &str, scale: f64| {
        v[key].as_f64().unwrap_or(0.0) * scale
            / v["in_flight"].as_f64().unwrap_or(1.0).max(1.0)
            / 1024.0
    };
    for (name, key, scale) in [("RSS Δ", "rss_kb", 1024.0), ("live heap Δ", "heap", 1.0)] {
        let total = |v: &Value| v[key].as_f64().unwrap_or(0.0) * scale / 1024.0 / 1024.0;
        println!(
            "| {name} | {:.1} MB / {:.1} KB | {:.1} MB / {:.1} KB | {:.1} KB |",
            total(&e),
            per(&e, key, scale),
            total(&d),
            per(&d, key, scale),
            per(&e, key, scale) - per(&d, key, scale),
        );
    }
    println!(
        "\n(in flight when measured: engine {} runs, direct client {} requests)",
        e["in_flight"], d["in_flight"]
    );
}

/// A latency-bound chain: 20 steps of an agent that takes 50 ms (critical path 1.0 s).
fn latency_table() {
    let runtime = runtime_label();
    let (e, d) = (Sample(job("latency", true)), Sample(job("latency", false)));
    let path = SLOW * 20;
    println!(
        "\n### Latency-bound: 20-step chain of 50 ms agents, critical path {} ({runtime})\n",
        ms(path)
    );
    println!(
        "| | wall (median of {}) | over the critical path | CPU/run | peak RSS (growth) |",
        e.iters()
    );
    println!("|---|---|---|---|---|");
    for (who, s) in [("engine", &e), ("direct client", &d)] {
        let over = s.median().as_secs_f64() / path.as_secs_f64() * 100.0 - 100.0;
        println!(
            "| {who} | {} | +{over:.1} % | {} | {} |",
            ms(s.median()),
            ms(s.cpu_per_iter()),
            rss(s)
        );
    }
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines().find_map(|l| {
                let (key, value) = l.split_once(':')?;
                (key.trim() == "model name").then(|| value.trim().to_owned())
            })
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{cores} cores, {cpu}")
}

/// The benchmark: a child mode (agent server, one job), or every table, each job in its own
/// process so its peak RSS is its own.
///
/// `stats` reads the counters of the bench binary's counting allocator
/// (`stats_alloc::INSTRUMENTED_SYSTEM`, installed as its `#[global_allocator]`).
pub fn main<B: BenchRuntime>(stats: fn() -> Stats) {
    let _ = ALLOCATOR_STATS.set(stats);
    let _ = RUNTIME_LABEL.set(B::LABEL);
    if std::env::var_os(SERVER_ENV).is_some() {
        serve_agents();
    }
    if let Ok(spec) = std::env::var(JOB_ENV) {
        let (name, mode) = spec.split_once(':').expect("<job>:<mode>");
        let result = B::block_on(run_job::<B>(name, mode == "engine"));
        println!("RESULT {result}");
        return;
    }
    let started = Instant::now();
    println!(
        "## a2at end-to-end benchmark: {} ({})",
        runtime_label(),
        machine()
    );
    // A2AT_E2E_TABLES=overhead,recording,scaling,inflight,latency picks tables (default all).
    let wanted = std::env::var("A2AT_E2E_TABLES").unwrap_or_default();
    let want = |t: &str| wanted.is_empty() || wanted.split(',').any(|w| w.trim() == t);
    if want("overhead") {
        overhead_table();
    }
    if want("recording") {
        recording_table();
    }
    if want("scaling") {
        scaling_tables();
    }
    if want("inflight") {
        in_flight_table();
    }
    if want("latency") {
        latency_table();
    }
    println!("\n(total {:.1} s)", started.elapsed().as_secs_f64());
}
