//! A real, throwaway PostgreSQL server for the integration tests and benchmarks.
//!
//! The PostgreSQL suite runs against a genuine server, never a mock. This module
//! starts one itself: `initdb` into a fresh temporary directory, `pg_ctl start`
//! on a free loopback port, trust authentication for the superuser `postgres`
//! on `127.0.0.1` only. Nothing needs to be set up by hand beyond installing
//! PostgreSQL (Debian: `apt-get install -y postgresql`); where the binaries are
//! missing, starting a cluster panics with a message that says so. No test
//! skips itself.
//!
//! * [`shared`] gives one cluster per test process (starting one costs a second
//!   or two, and tests run in parallel); each test then takes its own database
//!   with [`TempPostgres::fresh_database`].
//! * [`TempPostgres::start`] gives a private cluster, for tests that stop or
//!   restart the server. Dropping it stops the server and removes its directory.
//!
//! Cleanup does not depend on destructors, which never run for statics nor for
//! killed processes: every cluster has a detached *reaper*, a small `sh`
//! process that waits for end-of-file on a pipe whose only writer is the test
//! process. However the test process ends (normal exit, panic, `SIGKILL`), the
//! kernel closes that pipe, and the reaper stops the server
//! (`pg_ctl stop -m immediate`) and deletes the directory.
//!
//! Running as root: PostgreSQL refuses to run as root, so then every PostgreSQL
//! program (and the reaper) runs as the `postgres` system user, which owns the
//! temporary directory. Otherwise everything runs as the current user.
//!
//! The binaries are looked up in `$STATE_STORE_PG_BIN` when that is set,
//! otherwise on `PATH`, then in the usual install folders
//! (`/usr/lib/postgresql/*/bin` newest version first, `/usr/pgsql-*/bin`,
//! `/usr/local/pgsql/bin`). All three of `initdb`, `pg_ctl` and `psql` must be
//! in one folder; a symlink such as `/usr/local/bin/initdb` is followed to the
//! folder it points into, so Debian's `psql` wrapper in `/usr/bin` is never used.
//!
//! Include it from an integration test through `mod support;` (with
//! `tests/it/support/mod.rs` holding `pub mod postgres;`), or from a benchmark
//! with `#[path = "../tests/it/support/postgres.rs"] mod postgres;`. Unix only.

// Every includer uses only part of this module.
#![allow(dead_code)]

use std::ffi::OsString;
use std::fmt::Write as _;
use std::fs;
use std::io::Read;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Environment variable naming the one folder that holds `initdb`, `pg_ctl` and
/// `psql`. When set (and not empty), no other folder is searched.
pub const BIN_DIR_ENV: &str = "STATE_STORE_PG_BIN";

/// The superuser that `initdb` creates and that every URL connects as (trust
/// authentication, no password).
pub const SUPERUSER: &str = "postgres";

/// The system user that runs the server when the tests run as root.
pub const SYSTEM_USER: &str = "postgres";

/// The loopback address the server listens on; nothing else is ever contacted.
pub const HOST: &str = "127.0.0.1";

/// How to install PostgreSQL; part of every "binaries not found" message.
pub const INSTALL_HINT: &str = "Install PostgreSQL: on Debian or Ubuntu run \
     `apt-get install -y postgresql` as root (or `bash scripts/install/postgres.sh`); \
     on Fedora or RHEL `dnf install -y postgresql-server`; on macOS \
     `brew install postgresql`. Or set STATE_STORE_PG_BIN to the folder that \
     holds initdb, pg_ctl and psql.";

/// The PostgreSQL programs this module runs; all must sit in one folder.
const TOOLS: [&str; 3] = ["initdb", "pg_ctl", "psql"];

/// Install folders searched after `PATH`: `(parent, folder-name prefix)` pairs
/// whose matching subfolders' `bin` are tried, newest version first.
const VERSIONED_ROOTS: [(&str, &str); 2] = [("/usr/lib/postgresql", ""), ("/usr", "pgsql-")];

/// Fixed install folders searched after the versioned ones.
const FIXED_DIRS: [&str; 1] = ["/usr/local/pgsql/bin"];

/// Upper bound for `pg_ctl start`/`restart` to report readiness (`pg_ctl -t`).
const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);
/// Upper bound for `initdb`.
const INITDB_TIMEOUT: Duration = Duration::from_secs(120);
/// Upper bound for `pg_ctl stop`.
const STOP_TIMEOUT: Duration = Duration::from_secs(30);
/// Upper bound for one `psql` run.
const PSQL_TIMEOUT: Duration = Duration::from_secs(60);
/// Grace period past a program's own timeout before it is killed.
const KILL_GRACE: Duration = Duration::from_secs(15);
/// How many free ports are tried when the chosen one is taken meanwhile.
const PORT_ATTEMPTS: usize = 5;
/// Longest Unix socket path accepted (macOS allows 104 bytes, Linux 108).
const MAX_SOCKET_PATH: usize = 100;
/// Longest PostgreSQL identifier (`NAMEDATALEN - 1`).
const MAX_IDENTIFIER: usize = 63;

/// Numbers the temporary directories and databases made by this process.
static COUNTER: AtomicU64 = AtomicU64::new(0);

/// The cluster shared by every test of this process, started on first use.
///
/// Give each test its own database ([`TempPostgres::fresh_database`]) and leave
/// the server running: stopping or restarting it would break the tests running
/// beside. A test that needs to stop the server starts its own with
/// [`TempPostgres::start`]. The cluster stops, and its directory is removed,
/// when the test process exits.
///
/// # Panics
///
/// If the cluster cannot be started (binaries missing, startup failure); every
/// caller then panics with the same message, and startup is not retried.
pub fn shared() -> &'static TempPostgres {
    static SHARED: OnceLock<Result<TempPostgres, String>> = OnceLock::new();
    match SHARED.get_or_init(TempPostgres::try_start) {
        Ok(cluster) => cluster,
        Err(message) => panic!("{message}"),
    }
}

/// A database made by [`TempPostgres::fresh_database`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestDatabase {
    /// The database name, unique within the cluster.
    pub name: String,
    /// A `postgres://postgres@127.0.0.1:PORT/NAME` URL for sqlx.
    pub url: String,
}

/// A running throwaway PostgreSQL cluster in a temporary directory.
///
/// Dropping it stops the server (`pg_ctl stop -m immediate`) and removes the
/// directory; should the process die first, its reaper does the same.
#[derive(Debug)]
pub struct TempPostgres {
    /// Folder of `initdb`, `pg_ctl` and `psql`.
    bin_dir: PathBuf,
    /// The temporary directory holding everything below; removed at the end.
    root: PathBuf,
    /// The cluster's data directory (`root/data`).
    data_dir: PathBuf,
    /// The Unix socket directory (`root/sock`).
    socket_dir: PathBuf,
    /// The server log (`root/server.log`).
    log_file: PathBuf,
    /// The loopback TCP port the server listens on.
    port: u16,
    /// The system user PostgreSQL runs as when this process is root.
    run_as: Option<SystemUser>,
    /// The detached cleanup process; its stdin is the pipe it waits on.
    reaper: Option<Child>,
}

/// A system user's ids, from `/etc/passwd` or `getent`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SystemUser {
    /// User id.
    uid: u32,
    /// Primary group id.
    gid: u32,
}

impl TempPostgres {
    /// Starts a new private cluster.
    ///
    /// Use it for tests that stop, restart or otherwise disturb the server;
    /// other tests share [`shared`].
    ///
    /// # Panics
    ///
    /// If the PostgreSQL binaries are missing (the message says how to install
    /// them) or the server does not start within 60 seconds (the message holds
    /// the tail of the server log).
    pub fn start() -> TempPostgres {
        Self::try_start().unwrap_or_else(|message| panic!("{message}"))
    }

    /// Starts a new private cluster, or says why it could not.
    pub fn try_start() -> Result<TempPostgres, String> {
        let bin_dir = find_bin_dir()?;
        let (root, run_as) = make_root_dir()?;
        let socket_dir = root.join("sock");
        let mut cluster = TempPostgres {
            data_dir: root.join("data"),
            log_file: root.join("server.log"),
            socket_dir,
            bin_dir,
            root,
            port: 0,
            run_as,
            reaper: None,
        };
        // From here on, dropping `cluster` (also on error) cleans up.
        match cluster.init() {
            Ok(()) => Ok(cluster),
            Err(message) => Err(format!(
                "could not start a throwaway PostgreSQL server in {}: {message}\n\
                 --- last lines of the server log ---\n{}",
                cluster.root.display(),
                cluster.log_tail(40)
            )),
        }
    }

    /// Creates the socket directory, the reaper and the cluster, then starts
    /// the server.
    fn init(&mut self) -> Result<(), String> {
        fs::create_dir(&self.socket_dir)
            .map_err(|e| format!("could not create {}: {e}", self.socket_dir.display()))?;
        fs::set_permissions(&self.socket_dir, fs::Permissions::from_mode(0o700))
            .map_err(|e| format!("could not chmod {}: {e}", self.socket_dir.display()))?;
        if let Some(user) = self.run_as {
            std::os::unix::fs::chown(&self.socket_dir, Some(user.uid), Some(user.gid))
                .map_err(|e| format!("could not chown {}: {e}", self.socket_dir.display()))?;
        }
        self.spawn_reaper()?;

        let mut initdb = self.command("initdb");
        initdb
            .arg("-D")
            .arg(&self.data_dir)
            .args(["-U", SUPERUSER, "-A", "trust", "-E", "UTF8", "--no-locale"])
            // Skips only initdb's own final flush of the new files: a
            // throwaway cluster need not survive a power cut during setup.
            // The server itself runs with fsync on.
            .arg("--no-sync");
        let output = run(initdb, INITDB_TIMEOUT)?;
        if !output.status.success() {
            return Err(format!(
                "initdb failed ({}):\n{}",
                output.status,
                output.text()
            ));
        }

        let conf = self.data_dir.join("postgresql.conf");
        let mut text = fs::read_to_string(&conf)
            .map_err(|e| format!("could not read {}: {e}", conf.display()))?;
        text.push_str("\n# Added by the state-store test harness.\ninclude 'harness.conf'\n");
        fs::write(&conf, text).map_err(|e| format!("could not write {}: {e}", conf.display()))?;

        let mut last_error = String::new();
        for _ in 0..PORT_ATTEMPTS {
            self.port = free_port()?;
            self.write_settings()?;
            let log_start = fs::metadata(&self.log_file).map(|m| m.len()).unwrap_or(0);
            match self.pg_ctl_start("start") {
                Ok(()) => return Ok(()),
                Err(message) => {
                    let log = fs::read(&self.log_file).unwrap_or_default();
                    let fresh =
                        String::from_utf8_lossy(&log[(log_start as usize).min(log.len())..])
                            .into_owned();
                    let clash = fresh.contains("could not bind")
                        || fresh.contains("Address already in use")
                        || fresh.contains("could not create any TCP/IP sockets");
                    if !clash {
                        return Err(message);
                    }
                    last_error = message;
                }
            }
        }
        Err(format!(
            "{PORT_ATTEMPTS} ports in a row were taken; last error: {last_error}"
        ))
    }

    /// Writes `harness.conf`, the settings this module adds to `postgresql.conf`.
    fn write_settings(&self) -> Result<(), String> {
        let socket_dir = self.socket_dir.to_str().ok_or_else(|| {
            format!(
                "socket directory {} is not UTF-8",
                self.socket_dir.display()
            )
        })?;
        let settings = format!(
            "# Written by the state-store test harness; read through `include`.\n\
             port = {port}\n\
             listen_addresses = '{HOST}'\n\
             unix_socket_directories = '{socket}'\n\
             max_connections = 200\n\
             shared_buffers = 32MB\n\
             fsync = on\n",
            port = self.port,
            socket = socket_dir.replace('\'', "''"),
        );
        let path = self.data_dir.join("harness.conf");
        fs::write(&path, settings)
            .map_err(|e| format!("could not write {}: {e}", path.display()))?;
        if let Some(user) = self.run_as {
            std::os::unix::fs::chown(&path, Some(user.uid), Some(user.gid))
                .map_err(|e| format!("could not chown {}: {e}", path.display()))?;
        }
        Ok(())
    }

    /// Runs `pg_ctl start` or `pg_ctl restart -m fast`, waiting for readiness,
    /// then checks that the port accepts TCP connections.
    fn pg_ctl_start(&self, action: &str) -> Result<(), String> {
        let mut pg_ctl = self.command("pg_ctl");
        pg_ctl
            .arg("-D")
            .arg(&self.data_dir)
            .arg("-l")
            .arg(&self.log_file)
            .arg("-w")
            .arg("-t")
            .arg(STARTUP_TIMEOUT.as_secs().to_string())
            .arg(action);
        if action == "restart" {
            pg_ctl.args(["-m", "fast"]);
        }
        let output = run(pg_ctl, STARTUP_TIMEOUT + KILL_GRACE)?;
        if !output.status.success() {
            return Err(format!(
                "pg_ctl {action} failed ({}):\n{}",
                output.status,
                output.text()
            ));
        }
        let address = SocketAddr::from((Ipv4Addr::LOCALHOST, self.port));
        TcpStream::connect_timeout(&address, Duration::from_secs(5))
            .map(drop)
            .map_err(|e| format!("pg_ctl {action} succeeded, but {address} refuses TCP: {e}"))
    }

    /// Spawns the detached reaper: a shell, in its own process group and deaf
    /// to SIGHUP/SIGINT, that blocks reading a pipe whose write end only this
    /// process holds (close-on-exec, so no other child inherits it). End of
    /// file means this process is gone or dropped the cluster; the reaper then
    /// stops the server and removes the directory.
    fn spawn_reaper(&mut self) -> Result<(), String> {
        const SCRIPT: &str = r#"trap '' HUP INT
cat >/dev/null 2>&1
if [ -f "$2/postmaster.pid" ]; then
  "$1" -D "$2" stop -m immediate -w -t 30 >/dev/null 2>&1
  if [ -f "$2/postmaster.pid" ]; then
    kill -9 "$(head -n 1 "$2/postmaster.pid")" >/dev/null 2>&1
  fi
fi
rm -rf "$3"
"#;
        let mut reaper = Command::new("/bin/sh");
        self.configure(&mut reaper);
        reaper
            .arg("-c")
            .arg(SCRIPT)
            .arg("state-store-pg-reaper")
            .arg(self.bin_dir.join("pg_ctl"))
            .arg(&self.data_dir)
            .arg(&self.root)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0);
        let child = reaper
            .spawn()
            .map_err(|e| format!("could not spawn the cleanup process /bin/sh: {e}"))?;
        self.reaper = Some(child);
        Ok(())
    }

    /// A command for one of the PostgreSQL programs, set up by [`Self::configure`].
    fn command(&self, program: &str) -> Command {
        let mut command = Command::new(self.bin_dir.join(program));
        self.configure(&mut command);
        command
    }

    /// Gives a command a clean environment (no `PG*` variables such as
    /// `PGDATA` or `PGHOST`; `C` locale; `HOME` and working directory in the
    /// temporary directory), no stdin, and the server's user when root.
    fn configure(&self, command: &mut Command) {
        let path = std::env::var_os("PATH").unwrap_or_else(|| OsString::from("/usr/bin:/bin"));
        command
            .env_clear()
            .env("PATH", path)
            .env("HOME", &self.root)
            .env("LC_ALL", "C")
            .env("PGCONNECT_TIMEOUT", "10")
            .current_dir(&self.root)
            .stdin(Stdio::null());
        if let Some(user) = self.run_as {
            // std sets the group first, drops supplementary groups, then the user.
            command.gid(user.gid).uid(user.uid);
        }
    }

    /// The URL of the `postgres` database:
    /// `postgres://postgres@127.0.0.1:PORT/postgres`.
    pub fn url(&self) -> String {
        self.database_url("postgres")
    }

    /// The URL of the database `name` (which must need no percent-encoding, as
    /// every name accepted by [`Self::create_database`]).
    pub fn database_url(&self, name: &str) -> String {
        format!("postgres://{SUPERUSER}@{HOST}:{}/{name}", self.port)
    }

    /// The loopback TCP port of the server.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The temporary directory that holds the cluster; removed at the end.
    pub fn root_dir(&self) -> &Path {
        &self.root
    }

    /// The cluster's data directory.
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// The folder whose `initdb`, `pg_ctl` and `psql` this cluster uses.
    pub fn bin_dir(&self) -> &Path {
        &self.bin_dir
    }

    /// Creates the database `name` and returns its URL.
    ///
    /// # Panics
    ///
    /// If `name` is empty, longer than 63 bytes or holds anything but ASCII
    /// letters, digits, `_` and `-`, or if the database exists already.
    pub fn create_database(&self, name: &str) -> String {
        check_identifier(name);
        self.psql("postgres", &format!("CREATE DATABASE \"{name}\""));
        self.database_url(name)
    }

    /// Creates a database with a name unique in this cluster, made from
    /// `prefix` (sanitised and shortened as needed), the process id and a
    /// counter, and returns its name and URL.
    pub fn fresh_database(&self, prefix: &str) -> TestDatabase {
        let name = unique_database_name(prefix);
        let url = self.create_database(&name);
        TestDatabase { name, url }
    }

    /// Runs `sql` in `database` with the cluster's own `psql` as the
    /// superuser, over TCP, stopping at the first error, and returns the
    /// unaligned, tuples-only output (fields split by `|`, rows by newlines),
    /// trimmed.
    ///
    /// # Panics
    ///
    /// If `psql` fails, with its output.
    pub fn psql(&self, database: &str, sql: &str) -> String {
        self.try_psql(database, sql)
            .unwrap_or_else(|message| panic!("{message}"))
    }

    /// Like [`Self::psql`], but returns an error instead of panicking.
    pub fn try_psql(&self, database: &str, sql: &str) -> Result<String, String> {
        let mut psql = self.command("psql");
        psql.args([
            "-X",
            "-q",
            "-A",
            "-t",
            "-v",
            "ON_ERROR_STOP=1",
            "-h",
            HOST,
            "-U",
            SUPERUSER,
        ])
        .arg("-p")
        .arg(self.port.to_string())
        .arg("-d")
        .arg(database)
        .arg("-c")
        .arg(sql);
        let output = run(psql, PSQL_TIMEOUT)?;
        if output.status.success() {
            Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
        } else {
            Err(format!(
                "psql failed ({}) on database {database:?} running {sql:?}:\n{}",
                output.status,
                output.text()
            ))
        }
    }

    /// Ends every session connected to `database` (other than the one doing
    /// it) with `pg_terminate_backend`, waits up to 10 seconds for those
    /// sessions to be gone, and returns how many there were.
    ///
    /// # Panics
    ///
    /// If `psql` fails.
    pub fn terminate_connections(&self, database: &str) -> usize {
        let literal = database.replace('\'', "''");
        // In the select list, the call runs only for rows that passed WHERE
        // (in WHERE, PostgreSQL may evaluate it before the other conditions).
        let killed = self.psql(
            "postgres",
            &format!(
                "SELECT pid, pg_terminate_backend(pid) FROM pg_stat_activity \
                 WHERE datname = '{literal}' AND pid <> pg_backend_pid()"
            ),
        );
        let pids: Vec<&str> = killed
            .lines()
            .filter_map(|line| line.strip_suffix("|t"))
            .collect();
        if pids.is_empty() {
            return 0;
        }
        let query = format!(
            "SELECT count(*) FROM pg_stat_activity WHERE pid IN ({})",
            pids.join(",")
        );
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.psql("postgres", &query) != "0" && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(20));
        }
        pids.len()
    }

    /// Stops the server (`pg_ctl stop -m fast`, waiting up to 60 seconds);
    /// does nothing if it is not running. [`Self::restart`] starts it again.
    ///
    /// # Panics
    ///
    /// If the server is running and does not stop.
    pub fn stop(&self) {
        if !self.data_dir.join("postmaster.pid").exists() {
            return;
        }
        let mut pg_ctl = self.command("pg_ctl");
        pg_ctl
            .arg("-D")
            .arg(&self.data_dir)
            .args(["-m", "fast", "-w", "-t"])
            .arg(STARTUP_TIMEOUT.as_secs().to_string())
            .arg("stop");
        let result = run(pg_ctl, STARTUP_TIMEOUT + KILL_GRACE);
        match result {
            Ok(output) if output.status.success() => {}
            Ok(_) | Err(_) if !self.data_dir.join("postmaster.pid").exists() => {}
            Ok(output) => panic!(
                "pg_ctl stop failed ({}):\n{}\n--- server log ---\n{}",
                output.status,
                output.text(),
                self.log_tail(40)
            ),
            Err(message) => panic!("{message}\n--- server log ---\n{}", self.log_tail(40)),
        }
    }

    /// Restarts the server on the same port (`pg_ctl restart -m fast`: open
    /// sessions are ended), or starts it if stopped, and waits until it
    /// accepts connections again (at most 60 seconds).
    ///
    /// # Panics
    ///
    /// If the server does not come back, with the server log's tail.
    pub fn restart(&self) {
        if let Err(message) = self.pg_ctl_start("restart") {
            panic!("{message}\n--- server log ---\n{}", self.log_tail(40));
        }
    }

    /// Whether the server accepts TCP connections right now.
    pub fn accepts_connections(&self) -> bool {
        let address = SocketAddr::from((Ipv4Addr::LOCALHOST, self.port));
        TcpStream::connect_timeout(&address, Duration::from_secs(2)).is_ok()
    }

    /// The last `lines` lines of the server log (empty if there is none).
    pub fn log_tail(&self, lines: usize) -> String {
        let log = fs::read(&self.log_file).unwrap_or_default();
        let text = String::from_utf8_lossy(&log);
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }
}

impl Drop for TempPostgres {
    /// Stops the server at once (`pg_ctl stop -m immediate`), removes the
    /// directory, then releases the reaper and waits briefly for it.
    fn drop(&mut self) {
        if self.data_dir.join("postmaster.pid").exists() {
            let mut pg_ctl = self.command("pg_ctl");
            pg_ctl
                .arg("-D")
                .arg(&self.data_dir)
                .args(["-m", "immediate", "-w", "-t"])
                .arg(STOP_TIMEOUT.as_secs().to_string())
                .arg("stop");
            let _ = run(pg_ctl, STOP_TIMEOUT + KILL_GRACE);
        }
        let _ = fs::remove_dir_all(&self.root);
        if let Some(mut reaper) = self.reaper.take() {
            drop(reaper.stdin.take());
            let deadline = Instant::now() + Duration::from_secs(10);
            loop {
                match reaper.try_wait() {
                    Ok(None) if Instant::now() < deadline => {
                        thread::sleep(Duration::from_millis(10))
                    }
                    Ok(None) => {
                        let _ = reaper.kill();
                        let _ = reaper.wait();
                        break;
                    }
                    Ok(Some(_)) | Err(_) => break,
                }
            }
        }
    }
}

/// Finds the folder holding `initdb`, `pg_ctl` and `psql`: `$STATE_STORE_PG_BIN`
/// if set, else `PATH`, else the usual install folders (see the module docs).
///
/// The error says where it looked and how to install PostgreSQL.
pub fn find_bin_dir() -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os(BIN_DIR_ENV).filter(|dir| !dir.is_empty()) {
        let dir = PathBuf::from(dir);
        return if has_tools(&dir) {
            Ok(dir)
        } else {
            Err(format!(
                "{BIN_DIR_ENV} is set to {}, which lacks initdb, pg_ctl or psql. {INSTALL_HINT}",
                dir.display()
            ))
        };
    }
    let path_dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).collect())
        .unwrap_or_default();
    find_bin_dir_in(&path_dirs, &default_install_dirs())
}

/// Finds the folder holding `initdb`, `pg_ctl` and `psql` among `path_dirs`
/// (searched like `PATH`: a folder with `initdb` counts, trying first the folder
/// the `initdb` symlink resolves into) and then `install_dirs` (taken as they
/// are, in order).
///
/// The error names the searched folders and says how to install PostgreSQL.
pub fn find_bin_dir_in(path_dirs: &[PathBuf], install_dirs: &[PathBuf]) -> Result<PathBuf, String> {
    for dir in path_dirs {
        let initdb = dir.join("initdb");
        if !is_executable(&initdb) {
            continue;
        }
        let resolved = fs::canonicalize(&initdb)
            .ok()
            .and_then(|path| path.parent().map(Path::to_path_buf));
        for candidate in resolved.iter().chain(std::iter::once(dir)) {
            if has_tools(candidate) {
                return Ok(candidate.clone());
            }
        }
    }
    if let Some(dir) = install_dirs.iter().find(|dir| has_tools(dir)) {
        return Ok(dir.clone());
    }
    let mut searched = String::new();
    for dir in install_dirs {
        let _ = write!(searched, ", {}", dir.display());
    }
    Err(format!(
        "The PostgreSQL tests start a real throwaway PostgreSQL server, but its \
         programs (initdb, pg_ctl and psql, in one folder) were found neither on \
         PATH nor in /usr/lib/postgresql/*/bin, /usr/pgsql-*/bin or \
         /usr/local/pgsql/bin (searched: PATH{searched}). {INSTALL_HINT}"
    ))
}

/// The install folders searched after `PATH` on this machine, in search order:
/// `/usr/lib/postgresql/*/bin` newest version first, then `/usr/pgsql-*/bin`
/// newest first, then `/usr/local/pgsql/bin`. Only existing folders are listed.
pub fn default_install_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for (parent, prefix) in VERSIONED_ROOTS {
        dirs.extend(versioned_bin_dirs(Path::new(parent), prefix));
    }
    dirs.extend(
        FIXED_DIRS
            .iter()
            .map(PathBuf::from)
            .filter(|dir| dir.is_dir()),
    );
    dirs
}

/// The `bin` folders of `parent`'s subfolders named `prefix` + a version
/// (`15`, `9.6`, …), newest version first.
fn versioned_bin_dirs(parent: &Path, prefix: &str) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(parent) else {
        return Vec::new();
    };
    let mut found: Vec<(Vec<u64>, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            let version = parse_version(name.strip_prefix(prefix)?)?;
            let bin = entry.path().join("bin");
            bin.is_dir().then_some((version, bin))
        })
        .collect();
    found.sort_by(|a, b| b.0.cmp(&a.0));
    found.into_iter().map(|(_, dir)| dir).collect()
}

/// Parses `15`, `9.6` or `16beta1` into comparable numbers; `None` unless it
/// starts with a digit.
fn parse_version(text: &str) -> Option<Vec<u64>> {
    if !text.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    Some(
        text.split('.')
            .map(|part| {
                let digits: String = part.chars().take_while(char::is_ascii_digit).collect();
                digits.parse().unwrap_or(0)
            })
            .collect(),
    )
}

/// Whether `dir` holds executable `initdb`, `pg_ctl` and `psql`.
fn has_tools(dir: &Path) -> bool {
    TOOLS.iter().all(|tool| is_executable(&dir.join(tool)))
}

/// Whether `path` (symlinks followed) is a file with an execute bit.
fn is_executable(path: &Path) -> bool {
    fs::metadata(path).is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

/// A database name unique in this process's clusters: `prefix` (lowercased,
/// other characters than `[a-z0-9_]` turned into `_`, shortened), the process
/// id and a counter.
pub fn unique_database_name(prefix: &str) -> String {
    let suffix = format!(
        "_{}_{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    let mut name: String = prefix
        .chars()
        .map(|c| match c.to_ascii_lowercase() {
            c @ ('a'..='z' | '0'..='9' | '_') => c,
            _ => '_',
        })
        .take(MAX_IDENTIFIER - suffix.len())
        .collect();
    if name.is_empty() {
        name.push_str("db");
    }
    name + &suffix
}

/// Panics unless `name` is a usable database name (see
/// [`TempPostgres::create_database`]).
fn check_identifier(name: &str) {
    let valid = !name.is_empty()
        && name.len() <= MAX_IDENTIFIER
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    assert!(
        valid,
        "database name {name:?} must be 1 to {MAX_IDENTIFIER} ASCII letters, digits, `_` or `-`"
    );
}

/// Creates a fresh temporary directory for a cluster and, when this process
/// is root, looks up the `postgres` user and hands the directory over to it.
///
/// Tries `std::env::temp_dir()` first, then `/tmp`, skipping a base whose
/// socket path would be too long or that the `postgres` user cannot enter.
fn make_root_dir() -> Result<(PathBuf, Option<SystemUser>), String> {
    let mut bases = vec![std::env::temp_dir()];
    if bases[0] != Path::new("/tmp") {
        bases.push(PathBuf::from("/tmp"));
    }
    let mut problems = Vec::new();
    for base in bases {
        let root = match create_unique_dir(&base) {
            Ok(root) => root,
            Err(message) => {
                problems.push(message);
                continue;
            }
        };
        // The new directory's owner is this process's effective user.
        let euid = fs::metadata(&root).map(|m| m.uid()).unwrap_or(u32::MAX);
        let socket_len = root.join("sock/.s.PGSQL.65535.lock").as_os_str().len();
        if socket_len > MAX_SOCKET_PATH {
            problems.push(format!(
                "{}: path too long for a Unix socket",
                base.display()
            ));
            let _ = fs::remove_dir(&root);
            continue;
        }
        if euid != 0 {
            return Ok((root, None));
        }
        let user = match lookup_user(SYSTEM_USER) {
            Some(user) => user,
            None => {
                let _ = fs::remove_dir(&root);
                return Err(format!(
                    "the tests run as root, which PostgreSQL refuses to run as, and \
                     there is no `{SYSTEM_USER}` system user to run it as instead. \
                     Installing PostgreSQL from your distribution creates it; or \
                     create it with `useradd --system --user-group {SYSTEM_USER}`. \
                     {INSTALL_HINT}"
                ));
            }
        };
        if !traversable_by(&base, user) {
            problems.push(format!(
                "{}: the `{SYSTEM_USER}` user cannot enter it",
                base.display()
            ));
            let _ = fs::remove_dir(&root);
            continue;
        }
        std::os::unix::fs::chown(&root, Some(user.uid), Some(user.gid))
            .map_err(|e| format!("could not chown {}: {e}", root.display()))?;
        return Ok((root, Some(user)));
    }
    Err(format!(
        "found no usable temporary directory: {}",
        problems.join("; ")
    ))
}

/// Creates `base/state-store-pg-PID-N-NANOS` with mode 0700.
fn create_unique_dir(base: &Path) -> Result<PathBuf, String> {
    let mut last_error = None;
    for _ in 0..10 {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let root = base.join(format!(
            "state-store-pg-{}-{}-{nanos:x}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        match fs::create_dir(&root) {
            Ok(()) => {
                fs::set_permissions(&root, fs::Permissions::from_mode(0o700))
                    .map_err(|e| format!("could not chmod {}: {e}", root.display()))?;
                return Ok(root);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last_error = Some(e),
            Err(e) => return Err(format!("could not create {}: {e}", root.display())),
        }
    }
    Err(format!(
        "could not create a unique directory in {}: {last_error:?}",
        base.display()
    ))
}

/// Whether `user` may enter `dir` and every folder above it (owner, primary
/// group and other permission bits; supplementary groups are ignored).
fn traversable_by(dir: &Path, user: SystemUser) -> bool {
    let Ok(dir) = fs::canonicalize(dir) else {
        return false;
    };
    dir.ancestors().all(|folder| {
        fs::metadata(folder).is_ok_and(|meta| {
            let mode = meta.mode();
            if meta.uid() == user.uid {
                mode & 0o100 != 0
            } else if meta.gid() == user.gid {
                mode & 0o010 != 0
            } else {
                mode & 0o001 != 0
            }
        })
    })
}

/// Looks a system user up in `/etc/passwd`, then through `getent passwd`.
fn lookup_user(name: &str) -> Option<SystemUser> {
    let from_file = fs::read_to_string("/etc/passwd")
        .ok()
        .and_then(|passwd| parse_passwd(&passwd, name));
    from_file.or_else(|| {
        let output = Command::new("getent")
            .args(["passwd", name])
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .ok()?;
        parse_passwd(&String::from_utf8_lossy(&output.stdout), name)
    })
}

/// Finds `name`'s uid and gid in passwd-format text.
fn parse_passwd(text: &str, name: &str) -> Option<SystemUser> {
    text.lines().find_map(|line| {
        let mut fields = line.split(':');
        if fields.next()? != name {
            return None;
        }
        let _password = fields.next()?;
        let uid = fields.next()?.parse().ok()?;
        let gid = fields.next()?.parse().ok()?;
        Some(SystemUser { uid, gid })
    })
}

/// A loopback port that was free a moment ago (bound to port 0, then released).
fn free_port() -> Result<u16, String> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .map_err(|e| format!("could not bind {HOST}:0 to find a free port: {e}"))?;
    listener
        .local_addr()
        .map(|address| address.port())
        .map_err(|e| format!("could not read the bound port: {e}"))
}

/// What a finished program printed, and how it ended.
struct Finished {
    /// Exit status.
    status: ExitStatus,
    /// Everything written to stdout.
    stdout: Vec<u8>,
    /// Everything written to stderr.
    stderr: Vec<u8>,
}

impl Finished {
    /// Stdout and stderr together, for error messages.
    fn text(&self) -> String {
        format!(
            "{}{}",
            String::from_utf8_lossy(&self.stdout),
            String::from_utf8_lossy(&self.stderr)
        )
    }
}

/// Runs `command` to completion, capturing its output; kills it and fails
/// after `timeout`.
fn run(mut command: Command, timeout: Duration) -> Result<Finished, String> {
    let description = describe(&command);
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = command
        .spawn()
        .map_err(|e| format!("could not run {description}: {e}"))?;
    let (sender, receiver) = mpsc::channel();
    for (index, stream) in [
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    ]
    .into_iter()
    .enumerate()
    {
        let sender = sender.clone();
        thread::spawn(move || {
            let mut buffer = Vec::new();
            if let Some(mut stream) = stream {
                let _ = stream.read_to_end(&mut buffer);
            }
            let _ = sender.send((index, buffer));
        });
    }
    drop(sender);
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "{description} did not finish within {} s and was killed",
                    timeout.as_secs()
                ));
            }
            Ok(None) => thread::sleep(Duration::from_millis(10)),
            Err(e) => return Err(format!("could not wait for {description}: {e}")),
        }
    };
    // A descendant that kept the pipes open must not block us forever.
    let mut outputs = [Vec::new(), Vec::new()];
    let drain_deadline = Instant::now() + Duration::from_secs(5);
    for _ in 0..2 {
        let left = drain_deadline.saturating_duration_since(Instant::now());
        match receiver.recv_timeout(left) {
            Ok((index, buffer)) => outputs[index] = buffer,
            Err(_) => break,
        }
    }
    let [stdout, stderr] = outputs;
    Ok(Finished {
        status,
        stdout,
        stderr,
    })
}

/// `program arg arg …`, for messages.
fn describe(command: &Command) -> String {
    let mut text = command.get_program().to_string_lossy().into_owned();
    for arg in command.get_args() {
        text.push(' ');
        text.push_str(&arg.to_string_lossy());
    }
    text
}

/// `n` stores opening the database at `url` at once, as workers started
/// together do; each must succeed.
pub async fn open_at_once(url: &str, n: usize) -> Vec<state_store::Store> {
    let opens: Vec<_> = (0..n)
        .map(|_| {
            let url = url.to_owned();
            tokio::spawn(async move { state_store::Store::postgres(&url).await })
        })
        .collect();
    let mut stores = Vec::new();
    for open in opens {
        stores.push(open.await.unwrap().unwrap());
    }
    stores
}
