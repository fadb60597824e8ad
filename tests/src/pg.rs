//! A throwaway PostgreSQL server for the durable-run tests: `initdb` and `pg_ctl` in a
//! temporary directory, on a free loopback port, stopped (and its files removed) when the
//! [`PgServer`] is dropped, a failing test's included.
//!
//! PostgreSQL refuses to run as root: as root, the server runs as user `nobody` (through
//! `runuser`), owning the temporary directory; as any other user, it runs as that user.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Set to `1` (CI does) to make a missing PostgreSQL a test failure instead of a skip.
pub const REQUIRE_ENV: &str = "A2AT_REQUIRE_POSTGRES";
/// Set to `1` to skip the PostgreSQL tests (mutation testing does: they test the driver's store,
/// not the core's rules, and would add their servers' start-up to every mutant).
pub const SKIP_ENV: &str = "A2AT_SKIP_POSTGRES";

/// The database user the tests connect as.
pub const USER: &str = "a2at";

/// That user's password: the tests check it never shows in errors or listings.
pub const PASSWORD: &str = "pg-secret-2121";

/// A running throwaway server; dropping it stops it.
pub struct PgServer {
    dir: tempfile::TempDir,
    bin: PathBuf,
    run_as: Option<String>,
    port: u16,
}

/// Where the PostgreSQL server binaries are: on `PATH`, or in Debian's versioned directory.
fn find_bin() -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    dirs.push("/usr/local/bin".into());
    if let Ok(versions) = std::fs::read_dir("/usr/lib/postgresql") {
        let mut versions: Vec<PathBuf> = versions.flatten().map(|e| e.path()).collect();
        versions.sort();
        dirs.extend(versions.into_iter().rev().map(|v| v.join("bin")));
    }
    dirs.into_iter()
        .find(|d| d.join("initdb").is_file() && d.join("pg_ctl").is_file())
}

fn output(cmd: &mut Command) -> Result<String, String> {
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{cmd:?} failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn id(flag: &str, user: &str) -> Result<u32, String> {
    output(Command::new("id").args([flag, user]))?
        .parse()
        .map_err(|e| format!("id {flag} {user}: {e}"))
}

impl PgServer {
    /// Starts a server, or says why it cannot: `Ok(None)` when PostgreSQL is not installed and
    /// [`REQUIRE_ENV`] is not `1` (the reason is printed), a panic when it is required.
    pub fn start_or_skip() -> Option<PgServer> {
        let required = std::env::var(REQUIRE_ENV).is_ok_and(|v| v == "1");
        if !required && std::env::var(SKIP_ENV).is_ok_and(|v| v == "1") {
            eprintln!("SKIPPED: {SKIP_ENV}=1");
            return None;
        }
        let Some(bin) = find_bin() else {
            assert!(
                !required,
                "{REQUIRE_ENV}=1 but initdb/pg_ctl are not installed (on PATH, /usr/local/bin or \
                 /usr/lib/postgresql/*/bin)"
            );
            eprintln!("SKIPPED: initdb/pg_ctl not found; set {REQUIRE_ENV}=1 to make this fail");
            return None;
        };
        Some(PgServer::start(bin).unwrap_or_else(|e| panic!("cannot start PostgreSQL: {e}")))
    }

    fn start(bin: PathBuf) -> Result<PgServer, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let root = output(Command::new("id").arg("-u"))? == "0";
        let run_as = root.then(|| "nobody".to_owned());
        let pwfile = dir.path().join("pw");
        std::fs::write(&pwfile, PASSWORD).map_err(|e| e.to_string())?;
        if let Some(user) = &run_as {
            let (uid, gid) = (id("-u", user)?, id("-g", user)?);
            for path in [dir.path(), pwfile.as_path()] {
                std::os::unix::fs::chown(path, Some(uid), Some(gid))
                    .map_err(|e| format!("chown {}: {e}", path.display()))?;
            }
        }
        // Ask the OS for a free port; the short window before the server binds it is fine
        // for a test machine.
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| e.to_string())?
            .port();
        let server = PgServer {
            dir,
            bin,
            run_as,
            port,
        };
        let data = server.data();
        server.pg(
            "initdb",
            &[
                "-D",
                path_str(&data)?,
                "-U",
                USER,
                "--pwfile",
                path_str(&pwfile)?,
                "--auth=scram-sha-256",
                "--no-sync",
                "-E",
                "UTF8",
            ],
        )?;
        let options = format!(
            "-p {port} -h 127.0.0.1 -k {} -c fsync=off -c max_connections=50",
            path_str(server.dir.path())?
        );
        let log = server.dir.path().join("server.log");
        server.pg(
            "pg_ctl",
            &[
                "-D",
                path_str(&data)?,
                "-o",
                &options,
                "-l",
                path_str(&log)?,
                "-w",
                "-t",
                "60",
                "start",
            ],
        )?;
        Ok(server)
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Runs a PostgreSQL binary as the server's user.
    fn pg(&self, tool: &str, args: &[&str]) -> Result<String, String> {
        let exe = self.bin.join(tool);
        let mut cmd = match &self.run_as {
            Some(user) => {
                let mut cmd = Command::new("runuser");
                cmd.args(["-u", user, "--"]).arg(&exe);
                cmd
            }
            None => Command::new(&exe),
        };
        cmd.args(args).current_dir(self.dir.path());
        output(&mut cmd)
    }

    /// The port the server listens on (127.0.0.1).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// A connection URL to database `postgres` as [`USER`], with the password in it.
    pub fn url(&self) -> String {
        self.url_of("postgres")
    }

    /// The connection URL of database `name` (to be created first), like [`PgServer::url`].
    pub fn url_of(&self, name: &str) -> String {
        format!(
            "postgres://{USER}:{PASSWORD}@127.0.0.1:{}/{name}",
            self.port
        )
    }

    /// The server's log so far, for a failing test's message.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }
}

fn path_str(p: &Path) -> Result<&str, String> {
    p.to_str()
        .ok_or_else(|| format!("not a UTF-8 path: {}", p.display()))
}

impl Drop for PgServer {
    fn drop(&mut self) {
        // Immediate: the data is thrown away anyway, and a test must not wait for clients.
        let stopped = path_str(&self.data())
            .map(str::to_owned)
            .and_then(|data| self.pg("pg_ctl", &["-D", &data, "-m", "immediate", "-w", "stop"]));
        if let Err(e) = stopped {
            eprintln!("stopping the throwaway PostgreSQL failed: {e}");
        }
    }
}
