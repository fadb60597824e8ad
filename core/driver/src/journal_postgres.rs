//! [`PostgresJournal`]: the [`JournalStore`] several engine processes share, in PostgreSQL.

use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use postgres::{Client, Config, IsolationLevel, NoTls, Row};

use crate::journal::{JournalError, JournalStore, RunSummary, StoredRun};

/// The tables, created when missing. A run's row is its lease: `owner`, `token` (grows by one
/// with every takeover) and `lease_until`, always computed by the database's clock.
const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS a2at_journal_runs (
    run_id TEXT PRIMARY KEY,
    header TEXT NOT NULL,
    started_at_ms BIGINT NOT NULL,
    finished BOOLEAN NOT NULL DEFAULT FALSE,
    owner TEXT,
    token BIGINT NOT NULL DEFAULT 1,
    lease_until TIMESTAMPTZ
);
CREATE TABLE IF NOT EXISTS a2at_journal_lines (
    run_id TEXT NOT NULL REFERENCES a2at_journal_runs (run_id),
    seq BIGINT NOT NULL,
    line TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);";

/// Serialises schema creation between processes starting at once (`CREATE TABLE IF NOT
/// EXISTS` races on the catalog otherwise).
const SCHEMA_LOCK: i64 = 0x0a2a_7021;

/// The summary columns of a run, `r` being its row.
const SUMMARY: &str = "SELECT r.run_id, r.started_at_ms, r.finished,
        (SELECT COUNT(*) FROM a2at_journal_lines l WHERE l.run_id = r.run_id),
        r.owner, (EXTRACT(EPOCH FROM r.lease_until) * 1000)::BIGINT
    FROM a2at_journal_runs r";

/// The lease length unless set: long enough that a busy database does not lose leases of
/// live processes, short enough that a dead process's runs are taken over soon.
const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(30);

/// A [`JournalStore`] in PostgreSQL, for several engine processes sharing runs.
///
/// Each run is owned through a lease: the store that creates a run, or takes it over with
/// [`JournalStore::acquire`] (which [`Engine::resume`](crate::Engine::resume) calls), holds it
/// until the lease expires by the database's clock, so process clocks do not matter. The store
/// renews its leases on every append and from a background thread every third of the lease
/// time while it lives. Taking a run over increments its fencing token, and every append
/// checks the token in the transaction that writes the lines: a process that lost its lease
/// (it stalled past the expiry and another process took the run over) is refused with
/// [`JournalError::Fenced`] and never appends. A run whose lease is live cannot be taken over
/// ([`JournalError::Leased`]), so two processes never resume one run.
///
/// The blocking client of rust-postgres runs a tokio current-thread runtime internally; the
/// store keeps it on a thread of its own (which also renews the leases), so it can be called
/// and dropped from any thread, an async runtime's included. Connections are plain TCP or Unix
/// sockets (no TLS). A statement waits at most 30 s for a lock or a result.
pub struct PostgresJournal {
    jobs: Option<mpsc::Sender<Job>>,
    worker: Option<JoinHandle<()>>,
    owner: String,
    lease_ttl: Duration,
    target: String,
}

/// How to connect a [`PostgresJournal`]: see [`PostgresJournal::builder`].
pub struct PostgresJournalBuilder {
    url: String,
    owner: Option<String>,
    lease_ttl: Duration,
}

impl std::fmt::Debug for PostgresJournalBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresJournalBuilder")
            .field("url", &redact_url(&self.url))
            .field("owner", &self.owner)
            .field("lease_ttl", &self.lease_ttl)
            .finish()
    }
}

impl std::fmt::Debug for PostgresJournal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresJournal")
            .field("target", &self.target)
            .field("owner", &self.owner)
            .field("lease_ttl", &self.lease_ttl)
            .finish_non_exhaustive()
    }
}

/// `url` with its password replaced by `***`, fit for logs and messages (URL or key=value form).
pub fn redact_url(url: &str) -> String {
    match password_of(url) {
        Some(password) if !password.is_empty() => url.replace(&password, "***"),
        _ => url.to_owned(),
    }
}

/// The password written in a connection string, as written (still percent-encoded).
fn password_of(url: &str) -> Option<String> {
    if let Some(rest) = url.split_once("://").map(|(_, rest)| rest) {
        let authority = rest.split(['/', '?']).next().unwrap_or("");
        let userinfo = authority.rsplit_once('@').map(|(userinfo, _)| userinfo);
        if let Some((_, password)) = userinfo.and_then(|u| u.split_once(':')) {
            return Some(password.to_owned());
        }
    }
    // `password=…` as a URL query parameter or a key=value pair.
    let at = url.find("password=")? + "password=".len();
    let value = &url[at..];
    let end = match value.strip_prefix('\'') {
        Some(quoted) => {
            return Some(quoted[..quoted.find('\'').unwrap_or(quoted.len())].to_owned());
        }
        None => value.find(['&', ' ']).unwrap_or(value.len()),
    };
    Some(value[..end].to_owned())
}

impl PostgresJournal {
    /// Connects to the database at `url` (`postgres://user:password@host:port/db` or the
    /// key=value form) with a generated owner id and a 30 s lease, creating the tables when
    /// missing.
    pub fn connect(url: &str) -> Result<PostgresJournal, JournalError> {
        PostgresJournal::builder(url).connect()
    }

    /// A store to connect to `url`, with its owner id and lease time to set.
    pub fn builder(url: &str) -> PostgresJournalBuilder {
        PostgresJournalBuilder {
            url: url.to_owned(),
            owner: None,
            lease_ttl: DEFAULT_LEASE_TTL,
        }
    }

    /// The owner id this store's leases carry.
    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// How long a lease lasts without renewal.
    pub fn lease_ttl(&self) -> Duration {
        self.lease_ttl
    }

    /// The unfinished runs nobody holds a live lease on, by id: those a process can take
    /// over with [`Engine::resume`](crate::Engine::resume) now.
    pub fn claimable(&self) -> Result<Vec<RunSummary>, JournalError> {
        self.call(|w| {
            let rows = w
                .client
                .query(
                    &format!(
                        "{SUMMARY} WHERE NOT r.finished
                         AND (r.lease_until IS NULL OR r.lease_until <= now())
                         ORDER BY r.run_id"
                    ),
                    &[],
                )
                .map_err(store)?;
            Ok(rows.iter().map(summary).collect())
        })
    }

    /// Runs `job` on the worker thread and waits for its answer.
    fn call<T: Send + 'static>(
        &self,
        job: impl FnOnce(&mut Worker) -> Result<T, JournalError> + Send + 'static,
    ) -> Result<T, JournalError> {
        let stopped =
            || JournalError::Store("the PostgreSQL journal's worker thread stopped".into());
        let (tx, rx) = mpsc::sync_channel(1);
        let jobs = self.jobs.as_ref().ok_or_else(stopped)?;
        jobs.send(Box::new(move |w: &mut Worker| {
            let result = w.reconnect().and_then(|()| job(w));
            let _ = tx.send(result);
        }))
        .map_err(|_| stopped())?;
        // A job that panicked drops its sender: an error, not a hang.
        rx.recv().map_err(|_| stopped())?
    }
}

impl PostgresJournalBuilder {
    /// The owner id of this store's leases; it must differ between processes (and between
    /// stores of one process). Default: the host name, the process id and the start time.
    pub fn owner(mut self, owner: impl Into<String>) -> Self {
        self.owner = Some(owner.into());
        self
    }

    /// How long a lease lasts without renewal (default 30 s): a run of a process that died is
    /// taken over this long after its last renewal at the latest.
    pub fn lease_ttl(mut self, ttl: Duration) -> Self {
        self.lease_ttl = ttl;
        self
    }

    /// Connects, creates the tables when missing and starts the thread that renews leases.
    pub fn connect(self) -> Result<PostgresJournal, JournalError> {
        let target = redact_url(&self.url);
        let password = password_of(&self.url).filter(|p| p.len() >= 3);
        // Never let the password reach a message, whatever the driver puts in its errors.
        let scrub = move |message: String| match &password {
            Some(p) => message.replace(p.as_str(), "***"),
            None => message,
        };
        let mut config: Config = self.url.parse().map_err(|e| {
            JournalError::Store(scrub(format!("invalid PostgreSQL connection string: {e}")))
        })?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(10));
        }
        if config.get_application_name().is_none() {
            config.application_name("a2at");
        }
        let ttl_ms = i64::try_from(self.lease_ttl.as_millis())
            .unwrap_or(i64::MAX)
            .max(1);
        let owner = self.owner.unwrap_or_else(default_owner);
        let every = (self.lease_ttl / 3).max(Duration::from_millis(10));
        let (jobs, inbox) = mpsc::channel::<Job>();
        let (ready_tx, ready_rx) = mpsc::sync_channel(1);
        let worker_owner = owner.clone();
        let worker = std::thread::Builder::new()
            .name("a2at-postgres-journal".into())
            .spawn(move || {
                let worker = Worker::connect(config, worker_owner, ttl_ms);
                match worker {
                    Ok(worker) => {
                        let _ = ready_tx.send(Ok(()));
                        serve(worker, &inbox, every);
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                    }
                }
            })
            .map_err(|e| JournalError::Store(format!("cannot start the journal thread: {e}")))?;
        let ready = ready_rx.recv().unwrap_or_else(|_| {
            Err(JournalError::Store(
                "the PostgreSQL journal's worker thread stopped while connecting".into(),
            ))
        });
        if let Err(error) = ready {
            let _ = worker.join();
            return Err(match error {
                JournalError::Store(m) => JournalError::Store(scrub(format!("{target}: {m}"))),
                other => other,
            });
        }
        Ok(PostgresJournal {
            jobs: Some(jobs),
            worker: Some(worker),
            owner,
            lease_ttl: self.lease_ttl,
            target,
        })
    }
}

impl Drop for PostgresJournal {
    fn drop(&mut self) {
        // Closing the queue stops the worker after the job it is on; its leases then expire.
        self.jobs = None;
        if let Some(worker) = self.worker.take() {
            let _ = worker.join();
        }
    }
}

/// An owner id unlikely to repeat: host, process and start time.
fn default_owner() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "a2at".into());
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{host}:{}:{nanos:x}", std::process::id())
}

type Job = Box<dyn FnOnce(&mut Worker) + Send>;

/// The worker thread's side: the connection and the leases this store holds.
struct Worker {
    client: Client,
    config: Config,
    owner: String,
    ttl_ms: i64,
    /// The runs this store owns, with the fencing token of its lease on each.
    held: BTreeMap<String, i64>,
}

fn store(e: postgres::Error) -> JournalError {
    JournalError::Store(format!("PostgreSQL: {e}"))
}

fn to_u64(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn summary(row: &Row) -> RunSummary {
    RunSummary {
        run_id: row.get(0),
        started_at_ms: to_u64(row.get(1)),
        finished: row.get(2),
        lines: to_u64(row.get(3)),
        lease_owner: row.get(4),
        lease_until_ms: row.get::<_, Option<i64>>(5).map(to_u64),
    }
}

/// Runs jobs as they come and renews the held leases every `every`, until the queue closes.
fn serve(mut worker: Worker, inbox: &mpsc::Receiver<Job>, every: Duration) {
    let mut due = Instant::now() + every;
    loop {
        match inbox.recv_timeout(due.saturating_duration_since(Instant::now())) {
            Ok(job) => {
                // A panicking job loses only its own answer; the connection rolls back the
                // transaction it dropped and serves the next job.
                let _ = std::panic::catch_unwind(AssertUnwindSafe(|| job(&mut worker)));
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
        if Instant::now() >= due {
            // A panic in a renewal must not end the thread every call of the store waits on.
            let _ = std::panic::catch_unwind(AssertUnwindSafe(|| worker.renew()));
            due = Instant::now() + every;
        }
    }
}

impl Worker {
    fn connect(config: Config, owner: String, ttl_ms: i64) -> Result<Worker, JournalError> {
        let client = open(&config)?;
        Ok(Worker {
            client,
            config,
            owner,
            ttl_ms,
            held: BTreeMap::new(),
        })
    }

    /// A new connection when the old one closed (a database restart, a dropped socket).
    fn reconnect(&mut self) -> Result<(), JournalError> {
        if self.client.is_closed() {
            self.client = open(&self.config)?;
        }
        Ok(())
    }

    fn renew(&mut self) {
        if self.reconnect().is_err() {
            return;
        }
        let held: Vec<(String, i64)> = self.held.iter().map(|(r, t)| (r.clone(), *t)).collect();
        for (run_id, token) in held {
            let renewed = self.client.execute(
                "UPDATE a2at_journal_runs
                 SET lease_until = now() + $3::BIGINT * interval '1 millisecond'
                 WHERE run_id = $1 AND owner = $2 AND token = $4 AND NOT finished",
                &[&run_id, &self.owner, &self.ttl_ms, &token],
            );
            match renewed {
                Ok(0) => {
                    // Taken over (or finished elsewhere): the next append is fenced.
                    self.held.remove(&run_id);
                    tracing::warn!(%run_id, "the lease on a journaled run was lost");
                }
                Ok(_) => {}
                Err(error) => {
                    tracing::warn!(%run_id, %error, "cannot renew a journal lease; retrying");
                }
            }
        }
    }

    /// Refuses a write to `run_id` unless this store holds its lease with `token`.
    fn check_owner(
        &mut self,
        run_id: &str,
        owner: Option<String>,
        token: i64,
    ) -> Result<(), JournalError> {
        if owner.as_deref() == Some(self.owner.as_str()) && self.held.get(run_id) == Some(&token) {
            return Ok(());
        }
        self.held.remove(run_id);
        Err(JournalError::Fenced {
            run_id: run_id.to_owned(),
            holder: owner,
            token: to_u64(token),
        })
    }
}

fn open(config: &Config) -> Result<Client, JournalError> {
    let mut client = config.connect(NoTls).map_err(store)?;
    client
        .batch_execute("SET statement_timeout = '30s'; SET lock_timeout = '30s'")
        .map_err(store)?;
    let mut tx = client.transaction().map_err(store)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])
        .map_err(store)?;
    tx.batch_execute(SCHEMA).map_err(store)?;
    tx.commit().map_err(store)?;
    Ok(client)
}

/// A run's row as a write sees it.
struct RunRow {
    finished: bool,
    owner: Option<String>,
    token: i64,
    /// The lease's end, in milliseconds since the Unix epoch.
    until_ms: Option<i64>,
    /// Whether the lease is live by the database's clock.
    live: bool,
}

/// The row of `run_id`, locked for this transaction; refused when there is no such run.
fn lock_run(tx: &mut postgres::Transaction<'_>, run_id: &str) -> Result<RunRow, JournalError> {
    let row = tx
        .query_opt(
            "SELECT finished, owner, token, (EXTRACT(EPOCH FROM lease_until) * 1000)::BIGINT,
                    COALESCE(lease_until > now(), FALSE)
             FROM a2at_journal_runs WHERE run_id = $1 FOR UPDATE",
            &[&run_id],
        )
        .map_err(store)?
        .ok_or_else(|| JournalError::UnknownRun {
            run_id: run_id.to_owned(),
        })?;
    Ok(RunRow {
        finished: row.get(0),
        owner: row.get(1),
        token: row.get(2),
        until_ms: row.get(3),
        live: row.get(4),
    })
}

impl JournalStore for PostgresJournal {
    fn create_run(
        &self,
        run_id: &str,
        header: &str,
        started_at_ms: u64,
    ) -> Result<(), JournalError> {
        let (run_id, header) = (run_id.to_owned(), header.to_owned());
        self.call(move |w| {
            let inserted = w
                .client
                .execute(
                    "INSERT INTO a2at_journal_runs
                        (run_id, header, started_at_ms, owner, token, lease_until)
                     VALUES ($1, $2, $3, $4, 1, now() + $5::BIGINT * interval '1 millisecond')
                     ON CONFLICT (run_id) DO NOTHING",
                    &[
                        &run_id,
                        &header,
                        &to_i64(started_at_ms),
                        &w.owner,
                        &w.ttl_ms,
                    ],
                )
                .map_err(store)?;
            if inserted == 0 {
                return Err(JournalError::AlreadyExists { run_id });
            }
            w.held.insert(run_id, 1);
            Ok(())
        })
    }

    fn append(&self, run_id: &str, first: u64, lines: &[String]) -> Result<(), JournalError> {
        let (run_id, lines) = (run_id.to_owned(), lines.to_vec());
        self.call(move |w| {
            let mut tx = w.client.transaction().map_err(store)?;
            let RunRow {
                finished,
                owner,
                token,
                ..
            } = lock_run(&mut tx, &run_id)?;
            if finished {
                return Err(JournalError::Finished { run_id });
            }
            // The token is checked under the row lock a takeover needs too: a takeover either
            // committed before (this append is fenced) or waits for this append to commit.
            let (held, me) = (w.held.get(&run_id) == Some(&token), w.owner.as_str());
            if !(held && owner.as_deref() == Some(me)) {
                drop(tx);
                return w.check_owner(&run_id, owner, token);
            }
            let last: i64 = tx
                .query_one(
                    "SELECT COALESCE(MAX(seq), 0) FROM a2at_journal_lines WHERE run_id = $1",
                    &[&run_id],
                )
                .map_err(store)?
                .get(0);
            let expected = to_u64(last) + 1;
            if first != expected {
                return Err(JournalError::OutOfOrder {
                    run_id,
                    expected,
                    got: first,
                });
            }
            tx.execute(
                "INSERT INTO a2at_journal_lines (run_id, seq, line)
                 SELECT $1, $2::BIGINT + n - 1, l FROM unnest($3::TEXT[]) WITH ORDINALITY AS t (l, n)",
                &[&run_id, &to_i64(first), &lines],
            )
            .map_err(store)?;
            tx.execute(
                "UPDATE a2at_journal_runs
                 SET lease_until = now() + $2::BIGINT * interval '1 millisecond'
                 WHERE run_id = $1",
                &[&run_id, &w.ttl_ms],
            )
            .map_err(store)?;
            tx.commit().map_err(store)
        })
    }

    fn acquire(&self, run_id: &str) -> Result<(), JournalError> {
        let run_id = run_id.to_owned();
        self.call(move |w| {
            let mut tx = w.client.transaction().map_err(store)?;
            let RunRow {
                finished,
                owner,
                token,
                until_ms,
                live,
            } = lock_run(&mut tx, &run_id)?;
            if finished {
                return Err(JournalError::Finished { run_id });
            }
            let mine =
                owner.as_deref() == Some(w.owner.as_str()) && w.held.get(&run_id) == Some(&token);
            let token = if mine {
                token
            } else if live {
                return Err(JournalError::Leased {
                    run_id,
                    owner: owner.unwrap_or_default(),
                    until_ms: until_ms.map_or(0, to_u64),
                });
            } else {
                tx.query_one(
                    "UPDATE a2at_journal_runs SET owner = $2, token = token + 1
                     WHERE run_id = $1 RETURNING token",
                    &[&run_id, &w.owner],
                )
                .map_err(store)?
                .get(0)
            };
            tx.execute(
                "UPDATE a2at_journal_runs
                 SET lease_until = now() + $2::BIGINT * interval '1 millisecond'
                 WHERE run_id = $1",
                &[&run_id, &w.ttl_ms],
            )
            .map_err(store)?;
            tx.commit().map_err(store)?;
            w.held.insert(run_id, token);
            Ok(())
        })
    }

    fn load(&self, run_id: &str) -> Result<StoredRun, JournalError> {
        let run_id = run_id.to_owned();
        self.call(move |w| {
            // One snapshot: the run's row and its lines as of the same moment.
            let mut tx = w
                .client
                .build_transaction()
                .isolation_level(IsolationLevel::RepeatableRead)
                .read_only(true)
                .start()
                .map_err(store)?;
            let Some(row) = tx
                .query_opt(
                    "SELECT header, started_at_ms, finished FROM a2at_journal_runs
                     WHERE run_id = $1",
                    &[&run_id],
                )
                .map_err(store)?
            else {
                return Err(JournalError::UnknownRun { run_id });
            };
            let rows = tx
                .query(
                    "SELECT seq, line FROM a2at_journal_lines WHERE run_id = $1 ORDER BY seq",
                    &[&run_id],
                )
                .map_err(store)?;
            let mut lines = Vec::with_capacity(rows.len());
            for row in &rows {
                let seq: i64 = row.get(0);
                // The primary key forbids duplicates; a gap means lines were lost.
                let expected = lines.len() as u64 + 1;
                if to_u64(seq) != expected {
                    return Err(JournalError::Corrupt {
                        run_id,
                        line: expected,
                        message: format!("line {expected} is missing (next stored line is {seq})"),
                    });
                }
                lines.push(row.get(1));
            }
            tx.commit().map_err(store)?;
            Ok(StoredRun {
                header: row.get(0),
                started_at_ms: to_u64(row.get(1)),
                finished: row.get(2),
                run_id,
                lines,
            })
        })
    }

    fn list(&self) -> Result<Vec<RunSummary>, JournalError> {
        self.call(|w| {
            let rows = w
                .client
                .query(&format!("{SUMMARY} ORDER BY r.run_id"), &[])
                .map_err(store)?;
            Ok(rows.iter().map(summary).collect())
        })
    }

    fn mark_finished(&self, run_id: &str) -> Result<(), JournalError> {
        let run_id = run_id.to_owned();
        self.call(move |w| {
            let mut tx = w.client.transaction().map_err(store)?;
            let RunRow {
                finished,
                owner,
                token,
                ..
            } = lock_run(&mut tx, &run_id)?;
            if finished {
                w.held.remove(&run_id);
                return Ok(());
            }
            let (held, me) = (w.held.get(&run_id) == Some(&token), w.owner.as_str());
            if !(held && owner.as_deref() == Some(me)) {
                drop(tx);
                return w.check_owner(&run_id, owner, token);
            }
            tx.execute(
                "UPDATE a2at_journal_runs SET finished = TRUE, owner = NULL, lease_until = NULL
                 WHERE run_id = $1",
                &[&run_id],
            )
            .map_err(store)?;
            tx.commit().map_err(store)?;
            w.held.remove(&run_id);
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_reach_a_redacted_url() {
        assert_eq!(
            redact_url("postgres://ann:s3cret@db:5432/runs"),
            "postgres://ann:***@db:5432/runs"
        );
        assert_eq!(
            redact_url("postgresql://ann:p%40ss@db/runs?sslmode=disable"),
            "postgresql://ann:***@db/runs?sslmode=disable"
        );
        assert_eq!(
            redact_url("postgres://db/runs?user=ann&password=hunter22&x=1"),
            "postgres://db/runs?user=ann&password=***&x=1"
        );
        assert_eq!(
            redact_url("host=db user=ann password='open sesame' dbname=runs"),
            "host=db user=ann password='***' dbname=runs"
        );
        assert_eq!(
            redact_url("postgres://ann@db/runs"),
            "postgres://ann@db/runs"
        );
    }
}
