//! [`SqliteJournal`]: the embedded [`JournalStore`], one SQLite file.

use std::path::Path;
use std::sync::{Mutex, MutexGuard};

use rusqlite::{Connection, OptionalExtension, params};

use crate::journal::{JournalError, JournalStore, RunSummary, StoredRun};

/// How much a committed append survives.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Durability {
    /// Every commit is flushed to the disk (`synchronous=FULL`): an append that returned
    /// survives a power loss too, so a sent message is never missing from the journal.
    #[default]
    Full,
    /// Commits go to the write-ahead log without a flush (`synchronous=NORMAL`): an append
    /// survives the engine process dying, the last ones may be lost when the machine does.
    Process,
}

/// A [`JournalStore`] in one SQLite file (WAL mode), for runs of one engine process at a time:
/// it keeps no leases, so every run can be resumed by whoever opens the file.
///
/// Schema: `runs(run_id PRIMARY KEY, header, started_at_ms, finished)` and
/// `lines(run_id, seq, line, PRIMARY KEY (run_id, seq))`, so a duplicate append is refused
/// by the database itself and a gap by the append's check, in the same transaction.
pub struct SqliteJournal {
    // One connection: appends are serialised anyway by SQLite's single writer, and the run
    // loop calls the store from the runtime's blocking pool, never from an executor thread.
    conn: Mutex<Connection>,
}

impl std::fmt::Debug for SqliteJournal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteJournal").finish_non_exhaustive()
    }
}

fn store(e: rusqlite::Error) -> JournalError {
    JournalError::Store(e.to_string())
}

impl SqliteJournal {
    /// Opens (or creates) the journal file at `path` with [`Durability::Full`].
    pub fn open(path: impl AsRef<Path>) -> Result<SqliteJournal, JournalError> {
        SqliteJournal::open_with(path, Durability::Full)
    }

    /// Opens (or creates) the journal file at `path` with the given durability.
    pub fn open_with(
        path: impl AsRef<Path>,
        durability: Durability,
    ) -> Result<SqliteJournal, JournalError> {
        let conn = Connection::open(path).map_err(store)?;
        let synchronous = match durability {
            Durability::Full => "FULL",
            Durability::Process => "NORMAL",
        };
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(store)?;
        conn.pragma_update(None, "synchronous", synchronous)
            .map_err(store)?;
        // Another process (a CLI listing runs) may hold the lock for a moment.
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(store)?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS runs (
                run_id TEXT PRIMARY KEY NOT NULL,
                header TEXT NOT NULL,
                started_at_ms INTEGER NOT NULL,
                finished INTEGER NOT NULL DEFAULT 0
            ) STRICT;
            CREATE TABLE IF NOT EXISTS lines (
                run_id TEXT NOT NULL REFERENCES runs(run_id),
                seq INTEGER NOT NULL,
                line TEXT NOT NULL,
                PRIMARY KEY (run_id, seq)
            ) STRICT, WITHOUT ROWID;",
        )
        .map_err(store)?;
        Ok(SqliteJournal {
            conn: Mutex::new(conn),
        })
    }

    fn conn(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock leaves the connection usable: SQLite rolls back an
        // unfinished transaction when its guard is dropped.
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn to_u64(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

impl JournalStore for SqliteJournal {
    fn create_run(
        &self,
        run_id: &str,
        header: &str,
        started_at_ms: u64,
    ) -> Result<(), JournalError> {
        let conn = self.conn();
        let inserted = conn
            .execute(
                "INSERT INTO runs (run_id, header, started_at_ms) VALUES (?1, ?2, ?3)
                 ON CONFLICT (run_id) DO NOTHING",
                params![run_id, header, to_i64(started_at_ms)],
            )
            .map_err(store)?;
        if inserted == 0 {
            return Err(JournalError::AlreadyExists {
                run_id: run_id.to_owned(),
            });
        }
        Ok(())
    }

    fn append(&self, run_id: &str, first: u64, lines: &[String]) -> Result<(), JournalError> {
        let mut conn = self.conn();
        let tx = conn.transaction().map_err(store)?;
        let finished: Option<i64> = tx
            .query_row(
                "SELECT finished FROM runs WHERE run_id = ?1",
                params![run_id],
                |r| r.get(0),
            )
            .optional()
            .map_err(store)?;
        match finished {
            None => {
                return Err(JournalError::UnknownRun {
                    run_id: run_id.to_owned(),
                });
            }
            Some(f) if f != 0 => {
                return Err(JournalError::Finished {
                    run_id: run_id.to_owned(),
                });
            }
            Some(_) => {}
        }
        let last: i64 = tx
            .query_row(
                "SELECT COALESCE(MAX(seq), 0) FROM lines WHERE run_id = ?1",
                params![run_id],
                |r| r.get(0),
            )
            .map_err(store)?;
        let expected = to_u64(last) + 1;
        if first != expected {
            return Err(JournalError::OutOfOrder {
                run_id: run_id.to_owned(),
                expected,
                got: first,
            });
        }
        {
            let mut insert = tx
                .prepare_cached("INSERT INTO lines (run_id, seq, line) VALUES (?1, ?2, ?3)")
                .map_err(store)?;
            for (i, line) in lines.iter().enumerate() {
                insert
                    .execute(params![run_id, to_i64(first + i as u64), line])
                    .map_err(store)?;
            }
        }
        tx.commit().map_err(store)
    }

    fn load(&self, run_id: &str) -> Result<StoredRun, JournalError> {
        let conn = self.conn();
        let row: Option<(String, i64, i64)> = conn
            .query_row(
                "SELECT header, started_at_ms, finished FROM runs WHERE run_id = ?1",
                params![run_id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()
            .map_err(store)?;
        let Some((header, started_at_ms, finished)) = row else {
            return Err(JournalError::UnknownRun {
                run_id: run_id.to_owned(),
            });
        };
        let mut query = conn
            .prepare_cached("SELECT seq, line FROM lines WHERE run_id = ?1 ORDER BY seq")
            .map_err(store)?;
        let rows = query
            .query_map(params![run_id], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
            })
            .map_err(store)?;
        let mut lines = Vec::new();
        for row in rows {
            let (seq, line) = row.map_err(store)?;
            // The primary key forbids duplicates; a gap means lines were lost.
            let expected = lines.len() as u64 + 1;
            if to_u64(seq) != expected {
                return Err(JournalError::Corrupt {
                    run_id: run_id.to_owned(),
                    line: expected,
                    message: format!("line {expected} is missing (next stored line is {seq})"),
                });
            }
            lines.push(line);
        }
        Ok(StoredRun {
            run_id: run_id.to_owned(),
            header,
            started_at_ms: to_u64(started_at_ms),
            lines,
            finished: finished != 0,
        })
    }

    fn list(&self) -> Result<Vec<RunSummary>, JournalError> {
        let conn = self.conn();
        let mut query = conn
            .prepare_cached(
                "SELECT r.run_id, r.started_at_ms, r.finished,
                        (SELECT COUNT(*) FROM lines l WHERE l.run_id = r.run_id)
                 FROM runs r ORDER BY r.run_id",
            )
            .map_err(store)?;
        let rows = query
            .query_map([], |r| {
                Ok(RunSummary {
                    run_id: r.get(0)?,
                    started_at_ms: to_u64(r.get(1)?),
                    finished: r.get::<_, i64>(2)? != 0,
                    lines: to_u64(r.get(3)?),
                    lease_owner: None,
                    lease_until_ms: None,
                })
            })
            .map_err(store)?;
        rows.collect::<Result<_, _>>().map_err(store)
    }

    fn mark_finished(&self, run_id: &str) -> Result<(), JournalError> {
        let changed = self
            .conn()
            .execute(
                "UPDATE runs SET finished = 1 WHERE run_id = ?1",
                params![run_id],
            )
            .map_err(store)?;
        if changed == 0 {
            return Err(JournalError::UnknownRun {
                run_id: run_id.to_owned(),
            });
        }
        Ok(())
    }
}
