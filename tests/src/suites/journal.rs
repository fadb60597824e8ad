//! Durable runs over real HTTP: a journaled run ends as an unjournaled one, a run whose
//! engine stops at any append resumes to the same result without sending a message twice,
//! and a damaged journal is a typed error.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use a2at_core::RetryPolicy;
use a2at_core::a2a::AgentCard;
use a2at_core::host::MessageContent;
use a2at_core::result::ExecutionResult;
use a2at_core::workflow::{ValidatedWorkflow, parse_and_validate};
use a2at_driver::{
    BuiltControlPoint, ControlPointBuilder, JOURNAL_FAILED, JournalError, JournalStore, RunSummary,
    SqliteJournal, StoredRun,
};
use serde_json::{Value, json};

use crate::loopback::LoopbackServer;
use crate::runtime::TestRuntime;
use crate::{Plan, ScriptedAgent};

type Engine<T> = a2at_driver::Engine<<T as TestRuntime>::Rt>;

/// The seed of every run of the suite.
pub const SEED: u64 = 21;

/// A chain of two steps, the second with two parallel subtasks on two bindings; the agents
/// keep their tasks WORKING for a poll or two, so the journal holds sends, stream events,
/// polls and timer firings.
pub fn chain() -> Arc<ValidatedWorkflow> {
    Arc::new(
        parse_and_validate(
            &json!({"name": "chain", "steps": [
                {"name": "a", "subtasks": [{"agent": "alpha", "description": "first"}],
                 "next": [{"step": "b"}]},
                {"name": "b", "subtasks": [
                    {"agent": "beta", "description": "second"},
                    {"agent": "alpha", "description": "third"}]}
            ]})
            .to_string(),
        )
        .expect("valid workflow"),
    )
}

/// The agents of [`chain`]: `alpha` (JSON-RPC, WORKING then COMPLETED) and `beta` (REST,
/// streaming).
pub fn agents() -> Vec<ScriptedAgent> {
    vec![
        ScriptedAgent::new("alpha").by_default(Plan::States(vec![
            "TASK_STATE_WORKING",
            "TASK_STATE_COMPLETED",
        ])),
        ScriptedAgent::new("beta").rest().streaming(),
    ]
}

/// An echo host that records every instruction it is asked about.
fn counting_host() -> (Arc<BuiltControlPoint>, Arc<std::sync::Mutex<Vec<String>>>) {
    let asked = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = asked.clone();
    let host = ControlPointBuilder::new()
        .on_task(move |req| {
            log.lock().expect("log").push(req.instruction.to_string());
            async move { Ok(MessageContent::text(&req.instruction)) }
        })
        .build();
    (Arc::new(host), asked)
}

/// A host answering every task with its instruction.
pub fn echo_host() -> Arc<BuiltControlPoint> {
    Arc::new(
        ControlPointBuilder::new()
            .on_task(|req| async move { Ok(MessageContent::text(&req.instruction)) })
            .build(),
    )
}

fn engine<T: TestRuntime>(server: &LoopbackServer) -> Engine<T> {
    engine_for::<T>(server.cards())
}

/// An engine on these cards with short polls and retries.
pub fn engine_for<T: TestRuntime>(cards: Vec<AgentCard>) -> Engine<T> {
    Engine::<T>::builder(cards)
        .poll_interval(Duration::from_millis(5))
        .retry(RetryPolicy {
            attempts: 5,
            base_delay: Duration::from_millis(5),
            max_delay: Duration::from_millis(20),
        })
        .build()
        .expect("engine")
}

/// The result with its history in a stable order: parallel subtasks finish in any order.
pub fn normalised(mut result: ExecutionResult) -> ExecutionResult {
    result
        .history
        .sort_by(|a, b| (&a.step_name, a.subtask_index).cmp(&(&b.step_name, b.subtask_index)));
    result
}

/// The result as JSON with every context id blanked. A restart is a fault the core retries,
/// and a retry's jitter is drawn from the run's seeded generator, so the context ids the run
/// draws after a restart differ from the uncrashed run's; everything else must be equal.
pub fn without_context_ids(result: &ExecutionResult) -> Value {
    fn blank(v: &mut Value) {
        match v {
            Value::Object(m) => {
                for (k, v) in m.iter_mut() {
                    if (k == "contextId" || k == "context_id") && v.is_string() {
                        *v = Value::String("<context>".into());
                    } else {
                        blank(v);
                    }
                }
            }
            Value::Array(a) => a.iter_mut().for_each(blank),
            _ => {}
        }
    }
    let mut v = serde_json::to_value(result).expect("a result is JSON");
    blank(&mut v);
    v
}

/// Every `messageId` the agents received in a send, with how often.
pub fn duplicate_sends(server: &LoopbackServer) -> Vec<String> {
    let mut seen = std::collections::BTreeMap::<String, usize>::new();
    for agent in ["alpha", "beta"] {
        for req in server.requests(agent) {
            if !req.method.starts_with("Send") {
                continue;
            }
            if let Some(id) = req
                .message()
                .and_then(|m| m.get("messageId"))
                .and_then(|v| v.as_str())
            {
                *seen.entry(id.to_owned()).or_default() += 1;
            }
        }
    }
    seen.into_iter()
        .filter(|(_, n)| *n > 1)
        .map(|(id, _)| id)
        .collect()
}

/// The SQLite journal, failing every append from the `at`-th on as if the process died
/// there: nothing of that turn is written, and the run loop carries none of it out.
pub struct StopAt {
    inner: SqliteJournal,
    at: usize,
    /// Appends tried so far (the failed ones included).
    pub appends: AtomicUsize,
}

impl JournalStore for StopAt {
    fn create_run(&self, run_id: &str, header: &str, at: u64) -> Result<(), JournalError> {
        self.inner.create_run(run_id, header, at)
    }

    fn append(&self, run_id: &str, first: u64, lines: &[String]) -> Result<(), JournalError> {
        if self.appends.fetch_add(1, Ordering::SeqCst) + 1 >= self.at {
            // Exchanges already under way reach their agents before the process "dies", as
            // they would before a real crash; a run loop that carried out this turn's outputs
            // before journaling them would have sent them too (and send them again on resume).
            std::thread::sleep(Duration::from_millis(30));
            return Err(JournalError::Store("the engine process died".into()));
        }
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

/// The SQLite journal at `path`, stopping the run at its `at`-th append ([`StopAt`]).
pub fn stop_at(path: &Path, at: usize) -> Arc<StopAt> {
    Arc::new(StopAt {
        inner: SqliteJournal::open(path).expect("journal"),
        at,
        appends: AtomicUsize::new(0),
    })
}

/// The chain without a journal, on fresh agents.
pub async fn baseline<T: TestRuntime>() -> ExecutionResult {
    let server = LoopbackServer::start(agents()).await;
    let result = engine::<T>(&server)
        .run(chain(), echo_host())
        .seed(SEED)
        .execute()
        .await;
    assert!(result.success, "{:?}", result.error);
    normalised(result)
}

pub fn a_journaled_run_ends_as_an_unjournaled_one<T: TestRuntime>() {
    T::block_on(async {
        let expected = baseline::<T>().await;
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("runs.db");
        let server = LoopbackServer::start(agents()).await;
        let store = Arc::new(SqliteJournal::open(&path).expect("journal"));
        let result = engine::<T>(&server)
            .run(chain(), echo_host())
            .seed(SEED)
            .journal(store.clone())
            .execute()
            .await;
        assert_eq!(normalised(result), expected);
        // The journal is complete and closed: a header, the inputs, the end.
        let runs = store.list().expect("list");
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].run_id, expected.execution_id);
        assert!(runs[0].finished);
        assert!(runs[0].lines > 6, "{} lines", runs[0].lines);
        let again = engine::<T>(&server)
            .resume(store.clone(), &expected.execution_id, echo_host())
            .await;
        assert!(
            matches!(again, Err(JournalError::Finished { .. })),
            "{:?}",
            again.err()
        );
        // The same execution id cannot be journaled twice: the run stops before any send.
        let sends = server.total_requests();
        let twice = engine::<T>(&server)
            .run(chain(), echo_host())
            .seed(SEED)
            .journal(store)
            .execute()
            .await;
        assert_eq!(twice.error.expect("refused").code, JOURNAL_FAILED);
        assert_eq!(server.total_requests(), sends);
    })
}

/// A durable run that is also recorded keeps its trace replayable: the journal groups the
/// inputs already waiting into one commit, but a recorded trace replays input by input, each
/// followed by the outputs it caused, so the recorder's order wins over the grouping.
pub fn a_journaled_run_records_a_trace_that_replays<T: TestRuntime>() {
    T::block_on(async {
        let expected = baseline::<T>().await;
        let dir = tempfile::tempdir().expect("tempdir");
        let server = LoopbackServer::start(agents()).await;
        let store = Arc::new(SqliteJournal::open(dir.path().join("runs.db")).expect("journal"));
        let trace = crate::capture::SharedBuffer::default();
        let result = engine::<T>(&server)
            .run(chain(), echo_host())
            .seed(SEED)
            .journal(store)
            .record(trace.clone())
            .execute()
            .await;
        assert_eq!(normalised(result), expected);
        crate::trace_io::assert_replays(&trace.text(), "a durable run");
    })
}

/// Group commit: a turn whose input caused nothing to carry out (a response head, a WORKING
/// poll answer that only sets a timer) is not committed on its own; its line goes with the
/// next commit. The run still ends as the unjournaled one, and every line is kept.
pub fn a_journal_commits_only_before_something_is_carried_out<T: TestRuntime>() {
    T::block_on(async {
        let expected = baseline::<T>().await;
        let dir = tempfile::tempdir().expect("tempdir");
        let server = LoopbackServer::start(agents()).await;
        let store = stop_at(&dir.path().join("runs.db"), usize::MAX);
        let result = engine::<T>(&server)
            .run(chain(), echo_host())
            .seed(SEED)
            .journal(store.clone())
            .execute()
            .await;
        assert_eq!(normalised(result), expected);
        let lines = store.list().expect("list")[0].lines;
        let commits = store.appends.load(Ordering::SeqCst) as u64;
        assert!(commits > 0);
        // Every exchange's head and body come in without an effect of their own.
        let exchanges = server.total_requests();
        assert!(
            commits + exchanges <= lines,
            "{commits} commits for {lines} lines of {exchanges} exchanges"
        );
    })
}

pub fn a_run_stopped_at_any_append_resumes_to_the_same_result<T: TestRuntime>() {
    T::block_on(async {
        let expected = baseline::<T>().await;
        // How many turns the run journals when nothing stops it.
        let appends = {
            let dir = tempfile::tempdir().expect("tempdir");
            let server = LoopbackServer::start(agents()).await;
            let store = stop_at(&dir.path().join("runs.db"), usize::MAX);
            let result = engine::<T>(&server)
                .run(chain(), echo_host())
                .seed(SEED)
                .journal(store.clone())
                .execute()
                .await;
            assert!(result.success, "{:?}", result.error);
            store.appends.load(Ordering::SeqCst)
        };
        assert!(appends > 5, "{appends} appends");
        let (mut resent, mut stops) = (0, 0);
        for at in 1..=appends {
            let dir = tempfile::tempdir().expect("tempdir");
            let path = dir.path().join("runs.db");
            let server = LoopbackServer::start(agents()).await;
            let stopped = engine::<T>(&server)
                .run(chain(), echo_host())
                .seed(SEED)
                .journal(stop_at(&path, at))
                .execute()
                .await;
            if stopped.success {
                // Turns group inputs as they arrive: this run needed fewer appends.
                assert_eq!(
                    without_context_ids(&normalised(stopped)),
                    without_context_ids(&expected)
                );
                continue;
            }
            assert_eq!(
                stopped.error.as_ref().map(|e| e.code.as_str()),
                Some(JOURNAL_FAILED),
                "stopped at append {at}"
            );
            stops += 1;
            // A new engine, as a new process would build it, continues from the file.
            let store = Arc::new(SqliteJournal::open(&path).expect("journal"));
            // Kept until the end: dropping the last clone of an engine cancels its runs.
            // Host answers already journaled are never asked for again.
            let journaled = store.load(&stopped.execution_id).expect("load").lines;
            let answered = |d: &str| {
                journaled.iter().any(|l| {
                    l.contains(r#""type":"host_reply""#) && l.contains(&format!("\"{d}\""))
                })
            };
            let (host, asked) = counting_host();
            let resumed = engine::<T>(&server);
            let handle = resumed
                .resume(store.clone(), &stopped.execution_id, host)
                .await
                .unwrap_or_else(|e| panic!("resume after append {at}: {e}"));
            let result = normalised(handle.result().await);
            assert_eq!(
                without_context_ids(&result),
                without_context_ids(&expected),
                "stopped at append {at}"
            );
            let duplicates = duplicate_sends(&server);
            assert!(
                duplicates.is_empty(),
                "stopped at append {at}: sent twice: {duplicates:?}"
            );
            let asked = asked.lock().expect("log").clone();
            for d in ["first", "second", "third"] {
                let times = asked.iter().filter(|a| *a == d).count();
                let expected_times = usize::from(!answered(d));
                assert_eq!(
                    times, expected_times,
                    "stopped at append {at}: {d} asked {times} times"
                );
            }
            assert!(store.list().expect("list")[0].finished);
            resent += server
                .requests("alpha")
                .iter()
                .chain(&server.requests("beta"))
                .filter(|r| r.method == "ListTasks")
                .count();
        }
        // Some stop left a send in flight, whose task the resumed run looked up by its context.
        assert!(resent > 0);
        assert!(stops * 2 > appends, "{stops} of {appends} runs stopped");
    })
}

/// A store holding one journal as given, to damage it.
struct Fixed(StoredRun);

impl JournalStore for Fixed {
    fn create_run(&self, _: &str, _: &str, _: u64) -> Result<(), JournalError> {
        Err(JournalError::Store("read-only".into()))
    }

    fn append(&self, _: &str, _: u64, _: &[String]) -> Result<(), JournalError> {
        Err(JournalError::Store("read-only".into()))
    }

    fn load(&self, _: &str) -> Result<StoredRun, JournalError> {
        Ok(self.0.clone())
    }

    fn list(&self) -> Result<Vec<RunSummary>, JournalError> {
        Ok(Vec::new())
    }

    fn mark_finished(&self, _: &str) -> Result<(), JournalError> {
        Ok(())
    }
}

pub fn a_truncated_or_garbled_journal_is_a_typed_error_naming_the_line<T: TestRuntime>() {
    T::block_on(async {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("runs.db");
        let server = LoopbackServer::start(agents()).await;
        let stopped = engine::<T>(&server)
            .run(chain(), echo_host())
            .seed(SEED)
            .journal(stop_at(&path, 6))
            .execute()
            .await;
        let id = stopped.execution_id;
        let journal = SqliteJournal::open(&path)
            .expect("journal")
            .load(&id)
            .expect("load");
        let n = journal.lines.len() as u64;
        // Five turns, each an input and maybe the timeout it made due.
        assert!(n >= 5, "{n} lines");
        let resume = |damaged: StoredRun| {
            let engine = engine::<T>(&server);
            let id = id.clone();
            async move {
                engine
                    .resume(Arc::new(Fixed(damaged)), &id, echo_host())
                    .await
                    .err()
            }
        };
        let corrupt_at = |e: Option<JournalError>| match e {
            Some(JournalError::Corrupt { run_id, line, .. }) => {
                assert_eq!(run_id, id);
                line
            }
            other => panic!("expected a corrupt journal, got {other:?}"),
        };
        // The last line cut in the middle, as a crash during a plain-file write leaves it.
        let mut truncated = journal.clone();
        let last = truncated.lines.last_mut().expect("a line");
        last.truncate(last.len() / 2);
        assert_eq!(corrupt_at(resume(truncated).await), n);
        // A line in the middle garbled into JSON that is no input.
        let mut garbled = journal.clone();
        garbled.lines[2] = r#"{"t":5,"in":{"type":"no_such_input"}}"#.into();
        assert_eq!(corrupt_at(resume(garbled).await), 3);
        // Two lines in one.
        let mut joined = journal.clone();
        joined.lines[1] = format!("{}\n{}", joined.lines[1], joined.lines[1]);
        assert_eq!(corrupt_at(resume(joined).await), 2);
        // A header that does not rebuild the run.
        let mut header = journal.clone();
        header.header = header.header.replacen("\"seed\"", "\"sead\"", 1);
        assert_eq!(corrupt_at(resume(header).await), 0);
        // The undamaged journal resumes.
        let result = resume(journal).await;
        assert!(result.is_none(), "{result:?}");
    })
}

/// Set in a child process of [`a_killed_engine_process_resumes_to_the_same_result`]: the
/// cards and the journal file of the run it starts (JSON).
const CHILD_ENV: &str = "A2AT_JOURNAL_CHILD";

/// The child process: runs the chain against the given cards, journaling to the given file,
/// until its parent kills it.
fn child<T: TestRuntime>(spec: &str) {
    let spec: Value = serde_json::from_str(spec).expect("child spec");
    let cards = spec["cards"]
        .as_array()
        .expect("cards")
        .iter()
        .map(|c| AgentCard::from_json_value(c).expect("card"))
        .collect();
    let path = spec["journal"].as_str().expect("journal path").to_owned();
    T::block_on(async move {
        let store = Arc::new(SqliteJournal::open(&path).expect("journal"));
        engine_for::<T>(cards)
            .run(chain(), echo_host())
            .seed(SEED)
            .journal(store)
            .execute()
            .await;
    });
}

/// A small seeded generator for the kill points (xorshift64).
fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// Resumes the killed run `run` from `store` with a new engine for `server`'s agents, as a new
/// process would, and checks that it ends as the uninterrupted run (`expected`) without any
/// message reaching an agent twice.
pub async fn resume_to_expected<T: TestRuntime>(
    server: &LoopbackServer,
    store: Arc<dyn JournalStore>,
    run: &RunSummary,
    expected: &ExecutionResult,
) {
    let resumed = engine::<T>(server);
    let result = resumed
        .resume(store, &run.run_id, echo_host())
        .await
        .unwrap_or_else(|e| panic!("resume after line {}: {e}", run.lines))
        .result()
        .await;
    assert_eq!(
        without_context_ids(&normalised(result)),
        without_context_ids(expected),
        "killed after line {}",
        run.lines
    );
    let duplicates = duplicate_sends(server);
    assert!(
        duplicates.is_empty(),
        "killed after line {}: sent twice: {duplicates:?}",
        run.lines
    );
}

pub fn a_killed_engine_process_resumes_to_the_same_result<T: TestRuntime>() {
    const ROUNDS: usize = 8;
    if let Ok(spec) = std::env::var(CHILD_ENV) {
        return child::<T>(&spec);
    }
    T::block_on(async {
        let expected = baseline::<T>().await;
        let exe = std::env::current_exe().expect("the test binary");
        let mut seed = 0x2121_2121_u64;
        let mut killed = 0;
        for _ in 0..ROUNDS {
            let kill_at = 1 + next(&mut seed) % 28;
            let dir = tempfile::tempdir().expect("tempdir");
            let path = dir.path().join("runs.db");
            let server = LoopbackServer::start(agents()).await;
            let store = Arc::new(SqliteJournal::open(&path).expect("journal"));
            let spec = json!({
                "cards": server.cards().iter().map(AgentCard::to_json).collect::<Vec<_>>(),
                "journal": path.to_str().expect("a UTF-8 path"),
            });
            // The same test binary, running only this test, in child mode.
            let mut process = std::process::Command::new(&exe)
                .args([
                    "a_killed_engine_process_resumes_to_the_same_result",
                    "--exact",
                    "--test-threads=1",
                ])
                .env(CHILD_ENV, spec.to_string())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("child process");
            // Kill it (SIGKILL: no cleanup of any kind) once `kill_at` lines are journaled.
            let mut polls = 0u32;
            let exited = loop {
                polls += 1;
                if polls > 60_000 {
                    // A child that neither journals nor ends is a hang, not a slow machine.
                    let _ = process.kill();
                    panic!("the child neither journaled {kill_at} lines nor ended");
                }
                if process.try_wait().expect("child status").is_some() {
                    break true;
                }
                let lines = store.list().expect("list").first().map_or(0, |r| r.lines);
                if lines >= kill_at {
                    process.kill().expect("SIGKILL");
                    process.wait().expect("reaped");
                    break false;
                }
                T::sleep(Duration::from_millis(1)).await;
            };
            let run = store.list().expect("list").into_iter().next();
            // A kill can land after the child journaled the run's end but before it exited:
            // a finished run has nothing to resume, whichever way the child ended.
            let Some(run) = run.filter(|r| !r.finished) else {
                assert!(
                    exited || !store.list().expect("list").is_empty(),
                    "killed before the run was journaled"
                );
                continue;
            };
            killed += 1;
            eprintln!("killed after line {} (asked at {kill_at})", run.lines);
            resume_to_expected::<T>(&server, store.clone(), &run, &expected).await;
        }
        eprintln!("{killed} of {ROUNDS} engine processes killed mid-run and resumed");
        assert!(killed > 0, "no child was killed mid-run");
    })
}

/// The SQLite journal of a run that started `shift_ms` earlier than it did.
struct Aged {
    inner: SqliteJournal,
    shift_ms: u64,
}

impl JournalStore for Aged {
    fn create_run(&self, run_id: &str, header: &str, at: u64) -> Result<(), JournalError> {
        self.inner.create_run(run_id, header, at)
    }

    fn append(&self, run_id: &str, first: u64, lines: &[String]) -> Result<(), JournalError> {
        self.inner.append(run_id, first, lines)
    }

    fn load(&self, run_id: &str) -> Result<StoredRun, JournalError> {
        let mut run = self.inner.load(run_id)?;
        run.started_at_ms = run.started_at_ms.saturating_sub(self.shift_ms);
        Ok(run)
    }

    fn list(&self) -> Result<Vec<RunSummary>, JournalError> {
        self.inner.list()
    }

    fn mark_finished(&self, run_id: &str) -> Result<(), JournalError> {
        self.inner.mark_finished(run_id)
    }
}

pub fn time_spent_down_counts_against_the_task_budget<T: TestRuntime>() {
    T::block_on(async {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("runs.db");
        let server = LoopbackServer::start(agents()).await;
        let stopped = engine::<T>(&server)
            .run(chain(), echo_host())
            .seed(SEED)
            .task_budget(Duration::from_secs(600))
            .journal(stop_at(&path, 3))
            .execute()
            .await;
        assert_eq!(stopped.error.expect("stopped").code, JOURNAL_FAILED);
        // The engine was down for a day: the open task's budget of ten minutes is long gone.
        let store = Arc::new(Aged {
            inner: SqliteJournal::open(&path).expect("journal"),
            shift_ms: 24 * 3600 * 1000,
        });
        let resumed = engine::<T>(&server);
        let result = resumed
            .resume(store, &stopped.execution_id, echo_host())
            .await
            .expect("resume")
            .result()
            .await;
        // The send open at the stop is a fault at the run's time a day later, whose retry
        // cannot start inside the budget any more: the subtask gives up without a request.
        assert!(!result.success);
        assert_eq!(result.history.len(), 1, "{:?}", result.history);
        let task = &result.history[0];
        assert_eq!(task.error_code.as_deref(), Some("remote.no_response"));
        let attempt = &task.error_details.as_ref().expect("details")["attempts"][0];
        assert_eq!(attempt["fault"], "transport.restarted");
        assert_eq!(attempt["next"], "give_up", "{attempt}");
        assert!(attempt["atMs"].as_u64().expect("atMs") >= 24 * 3600 * 1000);
    })
}

/// One step at an agent that negotiates two rounds (in-task Negotiation-T) before it completes.
fn negotiation() -> Arc<ValidatedWorkflow> {
    Arc::new(
        parse_and_validate(
            &json!({"name": "consent", "steps": [
                {"name": "n", "subtasks": [{"agent": "neg", "description": "move tunnel"}]}
            ]})
            .to_string(),
        )
        .expect("valid workflow"),
    )
}

/// A host that accepts every proposal and counts the rounds it was asked about.
fn accepting_host() -> (Arc<BuiltControlPoint>, Arc<AtomicUsize>) {
    let asked = Arc::new(AtomicUsize::new(0));
    let count = asked.clone();
    let host = ControlPointBuilder::new()
        .on_task(|req| async move {
            Ok(MessageContent::text(&req.instruction)
                .with_extension(a2at_core::a2at::NEGOTIATION_T_URI))
        })
        .on_negotiation(move |req| {
            count.fetch_add(1, Ordering::SeqCst);
            async move {
                let content = req
                    .reply(a2at_core::a2at::Performative::Accept, "Accept")
                    .map_err(|e| a2at_core::host::HostError::business("test", e.to_string()))?;
                Ok(a2at_core::host::NegotiationReply::Send { content })
            }
        })
        .build();
    (Arc::new(host), asked)
}

/// A run stopped at any append of a two-round negotiation (before a proposal was answered,
/// after the answer was journaled, while the reply was on its way) resumes to the uninterrupted
/// result: no round the journal holds an answer for is asked again, and no reply is sent twice.
pub fn a_run_stopped_mid_negotiation_resumes_without_asking_a_round_twice<T: TestRuntime>() {
    T::block_on(async {
        let agents = || {
            vec![
                ScriptedAgent::new("neg")
                    .by_default(Plan::Negotiate(crate::agent::Negotiation::rounds(2, 3))),
            ]
        };
        let (expected, appends) = {
            let dir = tempfile::tempdir().expect("tempdir");
            let server = LoopbackServer::start(agents()).await;
            let store = stop_at(&dir.path().join("runs.db"), usize::MAX);
            let (host, asked) = accepting_host();
            let result = engine::<T>(&server)
                .run(negotiation(), host)
                .seed(SEED)
                .journal(store.clone())
                .execute()
                .await;
            assert!(result.success, "{:?}", result.error);
            assert_eq!(asked.load(Ordering::SeqCst), 2, "two rounds");
            (normalised(result), store.appends.load(Ordering::SeqCst))
        };
        let mut stops = 0;
        for at in 1..=appends {
            let dir = tempfile::tempdir().expect("tempdir");
            let path = dir.path().join("runs.db");
            let server = LoopbackServer::start(agents()).await;
            let (host, _) = accepting_host();
            let stopped = engine::<T>(&server)
                .run(negotiation(), host)
                .seed(SEED)
                .journal(stop_at(&path, at))
                .execute()
                .await;
            if stopped.success {
                continue;
            }
            stops += 1;
            let store = Arc::new(SqliteJournal::open(&path).expect("journal"));
            let journaled = store.load(&stopped.execution_id).expect("load").lines;
            let answered = journaled
                .iter()
                .filter(|l| l.contains(r#""type":"host_reply""#) && l.contains("negotiation"))
                .count();
            let (host, asked) = accepting_host();
            let resumed = engine::<T>(&server);
            let result = normalised(
                resumed
                    .resume(store, &stopped.execution_id, host)
                    .await
                    .unwrap_or_else(|e| panic!("resume after append {at}: {e}"))
                    .result()
                    .await,
            );
            assert_eq!(
                without_context_ids(&result),
                without_context_ids(&expected),
                "stopped at append {at}"
            );
            assert_eq!(
                asked.load(Ordering::SeqCst),
                2 - answered,
                "stopped at append {at}: {answered} rounds were answered before the stop"
            );
            let replies: Vec<String> = server
                .requests("neg")
                .iter()
                .filter_map(|r| {
                    r.message()
                        .and_then(|m| m.get("messageId"))
                        .and_then(|v| v.as_str())
                        .map(str::to_owned)
                })
                .collect();
            let unique: std::collections::BTreeSet<&String> = replies.iter().collect();
            assert_eq!(
                unique.len(),
                replies.len(),
                "stopped at append {at}: a message went twice: {replies:?}"
            );
        }
        assert!(stops >= 3, "{stops} stops in {appends} appends");
    })
}
