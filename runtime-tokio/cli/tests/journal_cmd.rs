//! `a2at run --journal`, `a2at resume` and `a2at runs list` against scripted agents on loopback,
//! with SQLite and with a throwaway PostgreSQL (see `a2at_tests::pg`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use a2at_tests::loopback::LoopbackServer;
use a2at_tests::pg::{PASSWORD, PgServer};
use a2at_tests::suites::journal::{
    SEED, agents, baseline, chain, echo_host, engine_for, normalised, without_context_ids,
};
use a2at_tokio::{
    ExecutionResult, JOURNAL_FAILED, JournalError, JournalStore, PostgresJournal, RunSummary,
    SqliteJournal, StoredRun,
};
use serde_json::{Value, json};

a2at_tests::tokio_test_runtime!(OnTokio, multi_thread);

/// The workflow of `a2at_tests::suites::journal::chain`, as a file.
fn chain_json() -> Value {
    json!({"name": "chain", "steps": [
        {"name": "a", "subtasks": [{"agent": "alpha", "description": "first"}],
         "next": [{"step": "b"}]},
        {"name": "b", "subtasks": [
            {"agent": "beta", "description": "second"},
            {"agent": "alpha", "description": "third"}]}
    ]})
}

/// The policy answering as the suite's echo host does.
fn echo_policy() -> Value {
    json!({"content": {"default": {"parts": [{"text": "{description}"}]}}})
}

fn write(dir: &Path, name: &str, value: &Value) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_string_pretty(value).unwrap()).unwrap();
    p
}

async fn cli(args: Vec<String>) -> (i32, String, String) {
    tokio::task::spawn_blocking(move || {
        let out = Command::new(env!("CARGO_BIN_EXE_a2at"))
            .args(&args)
            .output()
            .expect("a2at runs");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    })
    .await
    .unwrap()
}

fn args(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_owned()).collect()
}

fn path(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 path")
}

/// A journal store failing every append from the `at`-th on, as if the process died there.
struct StopAt<S> {
    inner: S,
    at: usize,
    appends: AtomicUsize,
}

impl<S: JournalStore> JournalStore for StopAt<S> {
    fn create_run(&self, run_id: &str, header: &str, at: u64) -> Result<(), JournalError> {
        self.inner.create_run(run_id, header, at)
    }

    fn append(&self, run_id: &str, first: u64, lines: &[String]) -> Result<(), JournalError> {
        if self.appends.fetch_add(1, Ordering::SeqCst) + 1 >= self.at {
            return Err(JournalError::Store("the engine process died".into()));
        }
        self.inner.append(run_id, first, lines)
    }

    fn acquire(&self, run_id: &str) -> Result<(), JournalError> {
        self.inner.acquire(run_id)
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

/// Runs the chain in this process journaling to `store`, stopped at its third append.
async fn stopped_run<S: JournalStore>(server: &LoopbackServer, store: S) -> String {
    let stopped = engine_for::<OnTokio>(server.cards())
        .run(chain(), echo_host())
        .seed(SEED)
        .journal(Arc::new(StopAt {
            inner: store,
            at: 3,
            appends: AtomicUsize::new(0),
        }))
        .execute()
        .await;
    assert_eq!(stopped.error.expect("stopped").code, JOURNAL_FAILED);
    stopped.execution_id
}

fn result_file(p: &Path) -> ExecutionResult {
    serde_json::from_str(&std::fs::read_to_string(p).expect("result file")).expect("a result")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sqlite_journaled_run_is_listed_and_a_stopped_one_resumes() {
    let expected = baseline::<OnTokio>().await;
    let server = LoopbackServer::start(agents()).await;
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path();
    let cards: Vec<Value> = server.cards().iter().map(|c| c.to_json()).collect();
    let cards = write(dir, "cards.json", &Value::Array(cards));
    let workflow = write(dir, "wf.json", &chain_json());
    let host = write(dir, "host.json", &echo_policy());
    let db = dir.join("runs.db");
    let journal = format!("sqlite:{}", path(&db));
    let (code, out, err) = cli(args(&[
        "run",
        "--workflow",
        path(&workflow),
        "--cards",
        path(&cards),
        "--host",
        path(&host),
        "--journal",
        &journal,
        "--result",
        path(&dir.join("r1.json")),
    ]))
    .await;
    assert_eq!(code, 0, "stdout:\n{out}\nstderr:\n{err}");
    let first = result_file(&dir.join("r1.json")).execution_id;
    assert!(
        out.contains(&format!("run {first} journaled to {journal}")),
        "{out}"
    );
    // A finished run is listed as such, and refused by resume.
    let (code, listed, err) = cli(args(&["runs", "list", "--journal", &journal])).await;
    assert_eq!(code, 0, "{err}");
    let line = listed
        .lines()
        .find(|l| l.starts_with(&first))
        .unwrap_or_else(|| panic!("{first} not listed:\n{listed}"));
    assert!(line.contains(" yes "), "{line}");
    let (code, out, err) = cli(args(&[
        "resume",
        &first,
        "--journal",
        &journal,
        "--host",
        path(&host),
    ]))
    .await;
    assert_eq!(code, 2, "stdout:\n{out}\nstderr:\n{err}");
    assert!(err.contains("has finished"), "{err}");
    // A run stopped in this process (on fresh agents, whose task ids start again) continues
    // in the CLI to the uncrashed result.
    let server = LoopbackServer::start(agents()).await;
    let stopped = stopped_run(&server, SqliteJournal::open(&db).expect("journal")).await;
    let (_, listed, _) = cli(args(&["runs", "list", "--journal", &journal])).await;
    let line = listed
        .lines()
        .find(|l| l.starts_with(&stopped))
        .unwrap_or_else(|| panic!("{stopped} not listed:\n{listed}"));
    assert!(line.contains(" no "), "{line}");
    assert!(line.ends_with(" -"), "no lease in SQLite: {line}");
    let (code, out, err) = cli(args(&[
        "resume",
        &stopped,
        "--journal",
        &journal,
        "--host",
        path(&host),
        "--result",
        path(&dir.join("r2.json")),
    ]))
    .await;
    assert_eq!(code, 0, "stdout:\n{out}\nstderr:\n{err}");
    assert!(out.contains("resuming run"), "{out}");
    let resumed = result_file(&dir.join("r2.json"));
    assert_eq!(
        without_context_ids(&normalised(resumed)),
        without_context_ids(&expected)
    );
    let (_, listed, _) = cli(args(&["runs", "list", "--journal", &journal])).await;
    let line = listed.lines().find(|l| l.starts_with(&stopped)).unwrap();
    assert!(line.contains(" yes "), "{line}");
    // A spec that is neither store is refused by name.
    let (code, _, err) = cli(args(&["runs", "list", "--journal", "redis://x"])).await;
    assert_eq!(code, 2);
    assert!(err.contains("sqlite:PATH"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_journal_resumes_after_the_lease_and_never_shows_the_password() {
    let Some(pg) = tokio::task::spawn_blocking(PgServer::start_or_skip)
        .await
        .unwrap()
    else {
        return;
    };
    let url = pg.url();
    let expected = baseline::<OnTokio>().await;
    let server = LoopbackServer::start(agents()).await;
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path();
    let cards: Vec<Value> = server.cards().iter().map(|c| c.to_json()).collect();
    let cards = write(dir, "cards.json", &Value::Array(cards));
    let workflow = write(dir, "wf.json", &chain_json());
    let host = write(dir, "host.json", &echo_policy());
    let no_password = |out: &str, err: &str| {
        assert!(
            !out.contains(PASSWORD) && !err.contains(PASSWORD),
            "the password was printed:\n{out}\n{err}"
        );
    };
    // Process A (this one) stops its run; its store lives on and keeps the lease.
    let a = PostgresJournal::builder(&url)
        .owner("A")
        .lease_ttl(Duration::from_secs(2))
        .connect()
        .expect("connect");
    let a = Arc::new(a);
    let stopped = {
        struct Shared(Arc<PostgresJournal>);
        impl JournalStore for Shared {
            fn create_run(&self, r: &str, h: &str, at: u64) -> Result<(), JournalError> {
                self.0.create_run(r, h, at)
            }
            fn append(&self, r: &str, f: u64, l: &[String]) -> Result<(), JournalError> {
                self.0.append(r, f, l)
            }
            fn load(&self, r: &str) -> Result<StoredRun, JournalError> {
                self.0.load(r)
            }
            fn list(&self) -> Result<Vec<RunSummary>, JournalError> {
                self.0.list()
            }
            fn mark_finished(&self, r: &str) -> Result<(), JournalError> {
                self.0.mark_finished(r)
            }
        }
        stopped_run(&server, Shared(a.clone())).await
    };
    let (code, listed, err) = cli(args(&["runs", "list", "--journal", &url])).await;
    assert_eq!(code, 0, "{err}");
    no_password(&listed, &err);
    let line = listed
        .lines()
        .find(|l| l.starts_with(&stopped))
        .unwrap_or_else(|| panic!("{stopped} not listed:\n{listed}"));
    assert!(
        line.contains(" no ") && line.contains(" A until "),
        "{line}"
    );
    assert!(listed.contains("postgres://a2at:***@"), "{listed}");
    // A holds the lease: the CLI (another process) cannot take the run over.
    let resume = args(&[
        "resume",
        &stopped,
        "--journal",
        &url,
        "--host",
        path(&host),
        "--result",
        path(&dir.join("resumed.json")),
    ]);
    let (code, out, err) = cli(resume.clone()).await;
    assert_eq!(code, 2, "stdout:\n{out}\nstderr:\n{err}");
    assert!(err.contains("leased to \"A\""), "{err}");
    no_password(&out, &err);
    // A dies; once its lease expired the CLI takes the run over and finishes it.
    drop(a);
    let claimable = {
        let url = url.clone();
        let stopped = stopped.clone();
        tokio::task::spawn_blocking(move || {
            let b = PostgresJournal::connect(&url).expect("connect");
            (0..600).any(|_| {
                let free = b
                    .claimable()
                    .expect("claimable")
                    .iter()
                    .any(|r| r.run_id == stopped);
                if !free {
                    std::thread::sleep(Duration::from_millis(50));
                }
                free
            })
        })
        .await
        .unwrap()
    };
    assert!(claimable, "A's lease never expired");
    let (code, out, err) = cli(resume).await;
    assert_eq!(code, 0, "stdout:\n{out}\nstderr:\n{err}");
    no_password(&out, &err);
    let resumed = result_file(&dir.join("resumed.json"));
    assert_eq!(
        without_context_ids(&normalised(resumed)),
        without_context_ids(&expected)
    );
    // A new durable run on PostgreSQL from the CLI.
    let (code, out, err) = cli(args(&[
        "run",
        "--workflow",
        path(&workflow),
        "--cards",
        path(&cards),
        "--host",
        path(&host),
        "--journal",
        &url,
    ]))
    .await;
    assert_eq!(code, 0, "stdout:\n{out}\nstderr:\n{err}");
    no_password(&out, &err);
    assert!(out.contains("journaled to postgres://a2at:***@"), "{out}");
    let (_, listed, _) = cli(args(&["runs", "list", "--journal", &url])).await;
    assert_eq!(
        listed.lines().filter(|l| l.contains(" yes ")).count(),
        2,
        "{listed}"
    );
    // A wrong password: refused, and not printed either.
    let wrong = url.replace(PASSWORD, "wrong-pw-4242");
    let (code, out, err) = cli(args(&["runs", "list", "--journal", &wrong])).await;
    assert_eq!(code, 2, "stdout:\n{out}\nstderr:\n{err}");
    assert!(
        !out.contains("wrong-pw-4242") && !err.contains("wrong-pw-4242"),
        "{err}"
    );
    assert!(err.contains("***"), "{err}");
}
