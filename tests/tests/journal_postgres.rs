//! The PostgreSQL journal store against a throwaway server (see `a2at_tests::pg`): the store's
//! append semantics, leases and fencing between owners, a killed engine process whose run
//! another process takes over once the lease expires, damaged lines, and passwords kept out
//! of messages.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use a2at_core::a2a::AgentCard;
use a2at_driver::{
    JOURNAL_FAILED, JournalError, JournalStore, PostgresJournal, RunSummary, StoredRun,
};
use a2at_tests::loopback::LoopbackServer;
use a2at_tests::pg::{PASSWORD, PgServer};
use a2at_tests::runtime::TestRuntime;
use a2at_tests::store_contract::{check_store_contract, lines};
use a2at_tests::suites::journal::{
    SEED, agents, baseline, chain, echo_host, engine_for, resume_to_expected,
};
use serde_json::{Value, json};

a2at_tests::tokio_test_runtime!(OnTokio, multi_thread);
a2at_tests::smol_test_runtime!(OnSmol);

fn store(pg: &PgServer, owner: &str, ttl: Duration) -> PostgresJournal {
    PostgresJournal::builder(&pg.url())
        .owner(owner)
        .lease_ttl(ttl)
        .connect()
        .unwrap_or_else(|e| panic!("connect: {e}\n{}", pg.log()))
}

/// Creates database `name` on the server and returns its URL.
fn create_database(pg: &PgServer, name: &str) -> String {
    let mut sql = postgres::Client::connect(&pg.url(), postgres::NoTls).expect("connect");
    sql.batch_execute(&format!("CREATE DATABASE {name}"))
        .unwrap_or_else(|e| panic!("CREATE DATABASE {name}: {e}"));
    pg.url_of(name)
}

/// Waits (bounded) until `run_id` is claimable: its owner's lease expired.
fn until_claimable(store: &PostgresJournal, run_id: &str) {
    for _ in 0..1200 {
        let claimable = store.claimable().expect("claimable");
        if claimable.iter().any(|r| r.run_id == run_id) {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("run {run_id} never became claimable (its lease never expired)");
}

#[test]
fn appends_in_order_and_refuses_duplicates_gaps_and_unknown_runs() {
    let Some(pg) = PgServer::start_or_skip() else {
        return;
    };
    let j = store(&pg, "A", Duration::from_secs(60));
    let finished = check_store_contract(&j, |open| {
        assert_eq!(open.lease_owner.as_deref(), Some("A"));
        assert!(open.lease_until_ms.is_some());
    });
    assert!(matches!(
        j.acquire("r1"),
        Err(JournalError::Finished { .. })
    ));
    assert_eq!(finished.lease_owner, None);
    // The database is the store: a second connection reads the same journal.
    drop(j);
    let again = store(&pg, "B", Duration::from_secs(60));
    assert_eq!(again.load("r1").expect("load").lines.len(), 3);
    assert!(again.claimable().expect("claimable").is_empty());
}

#[test]
fn a_dead_owners_run_is_taken_over_once_its_lease_expires() {
    let Some(pg) = PgServer::start_or_skip() else {
        return;
    };
    let a = store(&pg, "A", Duration::from_secs(1));
    a.create_run("r", "H", 1).expect("create");
    a.append("r", 1, &lines(&["a1"])).expect("append");
    // A dies: its store is gone (no renewals), its lease runs out, B takes the run over.
    let stale = store(&pg, "A2", Duration::from_secs(1));
    drop(a);
    let b = store(&pg, "B", Duration::from_secs(60));
    until_claimable(&b, "r");
    b.acquire("r").expect("takeover");
    b.append("r", 2, &lines(&["b2"])).expect("B appends");
    let listed = b.list().expect("list");
    assert_eq!(listed[0].lease_owner.as_deref(), Some("B"));
    // A store that never held the run is fenced, naming the holder.
    match stale.append("r", 3, &lines(&["stale"])) {
        Err(JournalError::Fenced { run_id, holder, .. }) => {
            assert_eq!(run_id, "r");
            assert_eq!(holder.as_deref(), Some("B"));
        }
        other => panic!("expected Fenced, got {other:?}"),
    }
    assert_eq!(b.load("r").expect("load").lines, lines(&["a1", "b2"]));
}

#[test]
fn a_store_that_lost_its_lease_is_fenced_and_never_appends() {
    let Some(pg) = PgServer::start_or_skip() else {
        return;
    };
    // A stalls past its lease (simulated below by moving the expiry into the past; A's own
    // renewal is 20 s away, so it cannot renew in between). Nothing A does later counts.
    let a = store(&pg, "A", Duration::from_secs(60));
    a.create_run("r", "H", 1).expect("create");
    a.append("r", 1, &lines(&["a1"])).expect("append");
    let b = store(&pg, "B", Duration::from_secs(60));
    // Make A's lease expire now, as if A stalled past its expiry (the database's clock).
    let mut sql = postgres::Client::connect(&pg.url(), postgres::NoTls).expect("psql");
    sql.execute(
        "UPDATE a2at_journal_runs SET lease_until = now() - interval '1 second' WHERE run_id = 'r'",
        &[],
    )
    .expect("expire");
    b.acquire("r").expect("takeover");
    let token = b.list().expect("list")[0].clone();
    assert_eq!(token.lease_owner.as_deref(), Some("B"));
    b.append("r", 2, &lines(&["b2"])).expect("B appends");
    // A, with the same next line B already wrote and with the next one after it: fenced.
    for first in [2, 3] {
        let refused = a.append("r", first, &lines(&["a-stale"]));
        let shown = refused.as_ref().err().map(ToString::to_string);
        assert_eq!(
            shown.as_deref(),
            Some(r#"journal: run "r" is fenced off: its lease belongs to "B" (token 2)"#)
        );
        match refused {
            Err(JournalError::Fenced {
                run_id,
                holder,
                token,
            }) => {
                assert_eq!(run_id, "r");
                assert_eq!(holder.as_deref(), Some("B"));
                assert_eq!(token, 2, "one takeover");
            }
            other => panic!("expected Fenced at line {first}, got {other:?}"),
        }
    }
    // Nor can A finish the run or take it back while B's lease is live.
    assert!(matches!(
        a.mark_finished("r"),
        Err(JournalError::Fenced { .. })
    ));
    assert!(matches!(a.acquire("r"), Err(JournalError::Leased { .. })));
    assert_eq!(a.load("r").expect("load").lines, lines(&["a1", "b2"]));
    assert!(!a.load("r").expect("load").finished);
}

#[test]
fn a_live_lease_cannot_be_taken_over() {
    let Some(pg) = PgServer::start_or_skip() else {
        return;
    };
    // A lease of 3 s renewed every second by A's background thread: it outlives its ttl.
    let a = store(&pg, "A", Duration::from_secs(3));
    a.create_run("r", "H", 1).expect("create");
    let b = store(&pg, "B", Duration::from_secs(60));
    std::thread::sleep(Duration::from_secs(5));
    match b.acquire("r") {
        Err(JournalError::Leased {
            run_id,
            owner,
            until_ms,
        }) => {
            assert_eq!(run_id, "r");
            assert_eq!(owner, "A");
            assert!(until_ms > 0);
        }
        other => panic!("expected Leased, got {other:?}"),
    }
    assert!(b.claimable().expect("claimable").is_empty());
    // The lease holder may resume its own run (a run it stopped itself).
    a.acquire("r").expect("A still holds it");
    a.append("r", 1, &lines(&["a1"])).expect("A appends");
    // Once A is gone its renewals stop, the lease expires, and B takes the run over.
    drop(a);
    until_claimable(&b, "r");
    b.acquire("r").expect("takeover");
    b.append("r", 2, &lines(&["b2"])).expect("B appends");
    let listed = b.list().expect("list");
    assert_eq!(listed[0].lease_owner.as_deref(), Some("B"));
}

/// The PostgreSQL journal, failing every append from the `at`-th on as if the process died.
struct StopAt {
    inner: PostgresJournal,
    at: usize,
    appends: AtomicUsize,
}

impl JournalStore for StopAt {
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

#[test]
fn a_damaged_line_is_a_typed_error_naming_run_and_line() {
    let Some(pg) = PgServer::start_or_skip() else {
        return;
    };
    let stop = Arc::new(StopAt {
        inner: store(&pg, "A", Duration::from_secs(60)),
        at: 6,
        appends: AtomicUsize::new(0),
    });
    let id = OnTokio::block_on(async {
        let server = LoopbackServer::start(agents()).await;
        let stopped = engine_for::<OnTokio>(server.cards())
            .run(chain(), echo_host())
            .seed(SEED)
            .journal(stop.clone())
            .execute()
            .await;
        assert_eq!(stopped.error.expect("stopped").code, JOURNAL_FAILED);
        stopped.execution_id
    });
    let n = stop.load(&id).expect("load").lines.len();
    assert!(n >= 4, "{n} lines");
    let resume = |store: Arc<StopAt>| {
        let id = id.clone();
        OnTokio::block_on(async move {
            let server = LoopbackServer::start(agents()).await;
            engine_for::<OnTokio>(server.cards())
                .resume(store, &id, echo_host())
                .await
                .err()
        })
    };
    let mut sql = postgres::Client::connect(&pg.url(), postgres::NoTls).expect("connect");
    // Line 2 garbled into JSON that is no input.
    let original: String = sql
        .query_one(
            "SELECT line FROM a2at_journal_lines WHERE run_id = $1 AND seq = 2",
            &[&id],
        )
        .expect("line 2")
        .get(0);
    sql.execute(
        "UPDATE a2at_journal_lines SET line = $2 WHERE run_id = $1 AND seq = 2",
        &[&id, &r#"{"t":5,"in":{"type":"no_such_input"}}"#.to_owned()],
    )
    .expect("garble");
    match resume(stop.clone()) {
        Some(JournalError::Corrupt { run_id, line, .. }) => {
            assert_eq!(run_id, id);
            assert_eq!(line, 2);
        }
        other => panic!("expected a corrupt line 2, got {other:?}"),
    }
    // Line 3 lost: a gap the store itself reports.
    sql.execute(
        "UPDATE a2at_journal_lines SET line = $2 WHERE run_id = $1 AND seq = 2",
        &[&id, &original],
    )
    .expect("restore");
    sql.execute(
        "DELETE FROM a2at_journal_lines WHERE run_id = $1 AND seq = 3",
        &[&id],
    )
    .expect("delete");
    match resume(stop.clone()) {
        Some(JournalError::Corrupt { run_id, line, .. }) => {
            assert_eq!(run_id, id);
            assert_eq!(line, 3);
        }
        other => panic!("expected line 3 missing, got {other:?}"),
    }
}

#[test]
fn the_password_never_shows_in_errors_or_debug_output() {
    let Some(pg) = PgServer::start_or_skip() else {
        return;
    };
    let wrong = format!(
        "postgres://a2at:wrong-pass-777@127.0.0.1:{}/postgres",
        pg.port()
    );
    let error = PostgresJournal::connect(&wrong).expect_err("a wrong password is refused");
    let shown = format!("{error} {error:?}");
    assert!(shown.contains("***"), "{shown}");
    assert!(!shown.contains("wrong-pass-777"), "{shown}");
    let connected = store(&pg, "A", Duration::from_secs(60));
    let shown = format!("{connected:?}");
    assert!(!shown.contains(PASSWORD), "{shown}");
    let builder = format!("{:?}", PostgresJournal::builder(&pg.url()));
    assert!(!builder.contains(PASSWORD), "{builder}");
    // Nothing listening: the connection error names the target without the password.
    drop(connected);
    let port = pg.port();
    drop(pg);
    let error = PostgresJournal::connect(&format!(
        "postgres://a2at:{PASSWORD}@127.0.0.1:{port}/postgres?connect_timeout=5"
    ))
    .expect_err("the server is stopped");
    let shown = format!("{error} {error:?}");
    assert!(!shown.contains(PASSWORD), "{shown}");
}

/// Set in a child process of the killed-process tests: the cards, the database URL and the
/// lease of the run it starts (JSON).
const CHILD_ENV: &str = "A2AT_PG_JOURNAL_CHILD";

/// The child process: runs the chain against the given cards, journaling to PostgreSQL with
/// the given owner and lease, until its parent kills it.
fn child<T: TestRuntime>(spec: &str) {
    let spec: Value = serde_json::from_str(spec).expect("child spec");
    let cards: Vec<AgentCard> = spec["cards"]
        .as_array()
        .expect("cards")
        .iter()
        .map(|c| AgentCard::from_json_value(c).expect("card"))
        .collect();
    let store = Arc::new(
        PostgresJournal::builder(spec["url"].as_str().expect("url"))
            .owner(spec["owner"].as_str().expect("owner"))
            .lease_ttl(Duration::from_millis(spec["ttl_ms"].as_u64().expect("ttl")))
            .connect()
            .expect("journal"),
    );
    let result = T::block_on(async move {
        engine_for::<T>(cards)
            .run(chain(), echo_host())
            .seed(SEED)
            .journal(store)
            .execute()
            .await
    });
    // A run that ends by itself must have succeeded (a journal failure is no crash).
    assert!(result.success, "{:?}", result.error);
}

/// A small seeded generator for the kill points (xorshift64).
fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// Engine process A runs the chain journaling to PostgreSQL and is SIGKILLed once a seeded
/// number of lines is journaled; this process (B, another owner) takes the run over once A's
/// lease expires, finishes it, and gets the uncrashed run's result without a send twice.
fn a_killed_engine_process_is_taken_over_by_another<T: TestRuntime>(test_name: &str) {
    const ROUNDS: usize = 3;
    const TTL_MS: u64 = 1500;
    if let Ok(spec) = std::env::var(CHILD_ENV) {
        return child::<T>(&spec);
    }
    let Some(pg) = PgServer::start_or_skip() else {
        return;
    };
    let exe = std::env::current_exe().expect("the test binary");
    // A database per round: every round's run has the same execution id (the same seed).
    let urls: Vec<String> = (0..ROUNDS)
        .map(|round| create_database(&pg, &format!("round{round}")))
        .collect();
    T::block_on(async {
        let expected = baseline::<T>().await;
        let mut seed = 0x2121_5050_u64 ^ T::NAME.len() as u64;
        let mut killed = 0;
        for (round, url) in urls.iter().enumerate() {
            let kill_at = 1 + next(&mut seed) % 20;
            let server = LoopbackServer::start(agents()).await;
            let owner_a = format!("A{round}");
            let b = Arc::new(
                PostgresJournal::builder(url)
                    .owner(format!("B{round}"))
                    .lease_ttl(Duration::from_secs(60))
                    .connect()
                    .expect("connect"),
            );
            // The single run of this round's database.
            let this_run = || b.list().expect("list").into_iter().next();
            let spec = json!({
                "cards": server.cards().iter().map(AgentCard::to_json).collect::<Vec<_>>(),
                "url": url,
                "owner": owner_a,
                "ttl_ms": TTL_MS,
            });
            // The same test binary, running only this test, in child mode.
            let mut process = std::process::Command::new(&exe)
                .args([test_name, "--exact", "--test-threads=1"])
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
                if this_run().is_some_and(|r| r.lines >= kill_at) {
                    process.kill().expect("SIGKILL");
                    process.wait().expect("reaped");
                    break false;
                }
                T::sleep(Duration::from_millis(1)).await;
            };
            // A kill can land after the child journaled the run's end: nothing to take over.
            let Some(run) = this_run().filter(|r| !r.finished) else {
                // Ended by itself, or killed after its end: the run is there, and finished.
                assert!(
                    this_run().is_some_and(|r| r.finished),
                    "round {round}: the child (killed: {}) left no finished run: {:?}",
                    !exited,
                    this_run()
                );
                continue;
            };
            killed += 1;
            assert_eq!(run.lease_owner.as_deref(), Some(owner_a.as_str()));
            eprintln!("killed after line {} (asked at {kill_at})", run.lines);
            // B takes the run over once A's lease expired by the database's clock.
            let mut polls = 0u32;
            while !b
                .claimable()
                .expect("claimable")
                .iter()
                .any(|r| r.run_id == run.run_id)
            {
                polls += 1;
                assert!(polls < 1200, "A's lease on {} never expired", run.run_id);
                T::sleep(Duration::from_millis(50)).await;
            }
            resume_to_expected::<T>(&server, b.clone(), &run, &expected).await;
            let after = this_run().expect("the run");
            assert!(after.finished, "B finished the run");
            // (No more lines when A died after its last input, before marking the end.)
            assert!(after.lines >= run.lines);
        }
        eprintln!("{killed} of {ROUNDS} engine processes killed mid-run and taken over");
        assert!(killed > 0, "no child was killed mid-run");
    });
}

#[test]
fn a_killed_engine_process_is_taken_over_by_another_on_tokio() {
    a_killed_engine_process_is_taken_over_by_another::<OnTokio>(
        "a_killed_engine_process_is_taken_over_by_another_on_tokio",
    );
}

#[test]
fn a_killed_engine_process_is_taken_over_by_another_on_smol() {
    a_killed_engine_process_is_taken_over_by_another::<OnSmol>(
        "a_killed_engine_process_is_taken_over_by_another_on_smol",
    );
}
