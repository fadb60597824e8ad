//! Journals of durable runs on the command line: `--journal sqlite:PATH | postgres://…`,
//! `a2at runs list`. A PostgreSQL URL's password is never printed: every message shows the
//! spec through [`a2at_tokio::redact_url`].

use std::process::ExitCode;
use std::sync::Arc;

use a2at_tokio::{JournalStore, PostgresJournal, SqliteJournal};
use clap::Subcommand;

/// `a2at runs …`.
#[derive(Subcommand)]
pub(crate) enum RunsCommand {
    /// List the runs of a journal: id, start (UTC), journal lines, finished, and the lease
    /// owner and expiry where the store has leases (PostgreSQL).
    List {
        /// The journal: `sqlite:PATH` or a `postgres://` URL.
        #[arg(long)]
        journal: String,
    },
}

/// The journal spec as it may be shown (its password replaced by `***`).
pub(crate) fn shown(spec: &str) -> String {
    a2at_tokio::redact_url(spec)
}

/// Opens the journal named by `spec`; the error never holds the password.
pub(crate) fn open(spec: &str) -> Result<Arc<dyn JournalStore>, String> {
    if let Some(path) = spec.strip_prefix("sqlite:") {
        if path.is_empty() {
            return Err("--journal sqlite: needs a file path (sqlite:PATH)".into());
        }
        let store = SqliteJournal::open(path)
            .map_err(|e| format!("cannot open the journal {}: {e}", shown(spec)))?;
        return Ok(Arc::new(store));
    }
    if spec.starts_with("postgres://") || spec.starts_with("postgresql://") {
        let store = PostgresJournal::connect(spec)
            .map_err(|e| format!("cannot open the journal {}: {e}", shown(spec)))?;
        return Ok(Arc::new(store));
    }
    Err(format!(
        "--journal {}: expected sqlite:PATH or a postgres:// URL",
        shown(spec)
    ))
}

/// Runs `a2at runs …`: exit code 0, or 2 when the journal cannot be read.
pub(crate) fn run(command: RunsCommand) -> ExitCode {
    let RunsCommand::List { journal } = command;
    let runs = open(&journal).and_then(|store| {
        store
            .list()
            .map_err(|e| format!("cannot list {}: {e}", shown(&journal)))
    });
    let runs = match runs {
        Ok(runs) => runs,
        Err(e) => {
            eprintln!("a2at runs: {e}");
            return ExitCode::from(2);
        }
    };
    println!(
        "{:<38} {:<24} {:>6}  {:<8} LEASE",
        "RUN", "STARTED", "LINES", "FINISHED"
    );
    for run in &runs {
        let lease = match (&run.lease_owner, run.lease_until_ms) {
            (Some(owner), Some(until)) => format!("{owner} until {}", utc(until)),
            (Some(owner), None) => owner.clone(),
            _ => "-".into(),
        };
        println!(
            "{:<38} {:<24} {:>6}  {:<8} {lease}",
            run.run_id,
            utc(run.started_at_ms),
            run.lines,
            if run.finished { "yes" } else { "no" },
        );
    }
    println!("{} run(s) in {}", runs.len(), shown(&journal));
    ExitCode::SUCCESS
}

/// Milliseconds since the Unix epoch as an ISO 8601 UTC time (proleptic Gregorian).
fn utc(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Days to a civil date (Howard Hinnant's algorithm), in unsigned arithmetic from 1970.
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        ms % 1000
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_utc_dates() {
        assert_eq!(utc(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(utc(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(utc(1_796_419_205_000), "2026-12-04T21:20:05.000Z");
    }

    #[test]
    fn a_bad_spec_is_refused_without_its_password() {
        let e = open("mysql://ann:s3cret-pw@db/x").err().expect("refused");
        assert!(e.contains("***") && !e.contains("s3cret-pw"), "{e}");
        assert!(open("sqlite:").is_err());
    }
}
