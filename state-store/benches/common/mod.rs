//! Shared by the state-store benchmarks (`store.rs`, `bytes.rs`): the bench
//! state, its messages, one store per backend on real storage, and the SQL
//! the byte counts read.
//!
//! The workload is BENCHMARKS.md section 7's: a one-node graph that appends
//! one human message per step to a history. The history is prefilled with
//! one big step of N messages (the same messages as state-core's benches
//! and `benches/langgraph`: ids `m{i}`, human and AI alternating); each
//! timed step is one `Thread::apply` of one human message with an id
//! (`step{i}`), under the default `SnapshotPolicy`.

// Each bench uses part of this module.
#![allow(dead_code)]

#[path = "../../tests/it/support/postgres.rs"]
pub mod postgres;

use state_core::{AgentState, Message, Messages, State};
use state_store::{Store, Thread};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The bench state: LangGraph's `MessagesState` (the derive also writes
/// its delta type, `ChatDelta`).
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Chat {
    /// The history.
    #[reducer(add_messages)]
    pub messages: Messages,
}

/// Message `i` of a prefilled history (as state-core's `history_message`
/// and `history()` in `benches/langgraph/bench.py`).
pub fn history_message(i: usize) -> Message {
    if i.is_multiple_of(2) {
        Message::human(format!(
            "question number {i}: what is the status of the beam line?"
        ))
        .with_id(format!("m{i}"))
    } else {
        Message::ai(format!(
            "answer number {i}: the beam line is nominal, current 500 mA."
        ))
        .with_id(format!("m{i}"))
    }
}

/// Numbers step messages and bench threads, unique in this process.
static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A number not handed out before in this process.
pub fn next_number() -> u64 {
    COUNTER.fetch_add(1, Ordering::Relaxed)
}

/// The delta of one timed step: one human message with a fresh id (as
/// `step_message` in `benches/langgraph/saver_bench.py`).
pub fn step_delta() -> ChatDelta {
    let i = next_number();
    Chat::delta().messages(vec![
        Message::human(format!(
            "question number {i}: what is the status of the beam line?"
        ))
        .with_id(format!("step{i}")),
    ])
}

/// `count` step deltas, built before a timed loop.
pub fn step_deltas(count: u64) -> Vec<ChatDelta> {
    (0..count).map(|_| step_delta()).collect()
}

/// Opens thread `id` and, when `n > 0`, writes a history of `n` messages
/// as its first step (one delta). Under the default policy that step is
/// followed by a snapshot when it is at least 16 KiB (n ≥ about 150).
pub async fn prefill(store: &Store, id: &str, n: usize) -> Thread<Chat> {
    let mut thread = store.thread::<Chat>(id).await.expect("open a bench thread");
    if n > 0 {
        let history: Vec<Message> = (0..n).map(history_message).collect();
        thread
            .apply(Chat::delta().messages(history))
            .await
            .expect("prefill a bench thread");
    }
    thread
}

/// Whether criterion runs us as a benchmark (`cargo bench` passes
/// `--bench`); otherwise (`cargo test --all-targets`) every bench runs
/// once, on small data.
pub fn benchmarking() -> bool {
    std::env::args().any(|arg| arg == "--bench")
}

/// A tokio runtime for the benches: multi-threaded, as a server's.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// The backends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Memory,
    Sqlite,
    Postgres,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Memory => "memory",
            Kind::Sqlite => "sqlite",
            Kind::Postgres => "postgres",
        }
    }
}

/// A store on real storage, with what the byte counts need to look at it:
/// a SQLite file in a temporary directory (on disk: the system's temporary
/// directory, or `STATE_STORE_BENCH_DIR`), or a fresh database on the
/// throwaway PostgreSQL cluster of `tests/it/support/postgres.rs` (fsync on).
pub struct BenchStore {
    pub kind: Kind,
    pub store: Store,
    /// The SQLite file.
    pub sqlite_path: Option<PathBuf>,
    /// The PostgreSQL database's URL.
    pub pg_url: Option<String>,
    _dir: Option<tempfile::TempDir>,
}

impl BenchStore {
    pub async fn open(kind: Kind) -> BenchStore {
        match kind {
            Kind::Memory => BenchStore {
                kind,
                store: Store::memory(),
                sqlite_path: None,
                pg_url: None,
                _dir: None,
            },
            Kind::Sqlite => {
                let dir = match std::env::var_os("STATE_STORE_BENCH_DIR") {
                    Some(base) => tempfile::tempdir_in(base),
                    None => tempfile::tempdir(),
                }
                .expect("a temporary directory");
                let path = dir.path().join("bench.db");
                let store = Store::sqlite(&path).await.expect("open the SQLite store");
                BenchStore {
                    kind,
                    store,
                    sqlite_path: Some(path),
                    pg_url: None,
                    _dir: Some(dir),
                }
            }
            Kind::Postgres => {
                let db = postgres::shared().fresh_database("bench");
                let store = Store::postgres(&db.url)
                    .await
                    .expect("connect to PostgreSQL");
                BenchStore {
                    kind,
                    store,
                    sqlite_path: None,
                    pg_url: Some(db.url),
                    _dir: None,
                }
            }
        }
    }

    /// A second connection to the same database, for the measuring queries
    /// (`None` for memory).
    pub async fn side(&self) -> Option<Side> {
        match self.kind {
            Kind::Memory => None,
            Kind::Sqlite => {
                let path = self.sqlite_path.clone().expect("a SQLite file");
                let options = sqlx::sqlite::SqliteConnectOptions::new()
                    .filename(&path)
                    .busy_timeout(std::time::Duration::from_secs(30));
                let pool = sqlx::sqlite::SqlitePoolOptions::new()
                    .max_connections(1)
                    .connect_with(options)
                    .await
                    .expect("a side connection to the SQLite file");
                Some(Side::Sqlite { pool, path })
            }
            Kind::Postgres => {
                let url = self.pg_url.as_deref().expect("a PostgreSQL URL");
                let pool = sqlx::postgres::PgPoolOptions::new()
                    .max_connections(1)
                    .connect(url)
                    .await
                    .expect("a side connection to PostgreSQL");
                Some(Side::Postgres { pool })
            }
        }
    }
}

/// A connection of our own to a store's database: reads the tables and the
/// storage sizes, never writes a row.
pub enum Side {
    Sqlite {
        pool: sqlx::SqlitePool,
        path: PathBuf,
    },
    Postgres {
        pool: sqlx::PgPool,
    },
}

/// The store's three tables.
const TABLES: [&str; 3] = [
    "state_store_threads",
    "state_store_steps",
    "state_store_snapshots",
];

impl Side {
    /// The step of thread `id`'s latest snapshot, if any.
    pub async fn latest_snapshot(&self, id: &str) -> Option<u64> {
        const SQL: &str = "SELECT MAX(seq) FROM state_store_snapshots WHERE thread_id = $1";
        let (seq,): (Option<i64>,) = match self {
            Side::Sqlite { pool, .. } => sqlx::query_as(SQL).bind(id).fetch_one(pool).await,
            Side::Postgres { pool } => sqlx::query_as(SQL).bind(id).fetch_one(pool).await,
        }
        .expect("read the latest snapshot");
        seq.map(|s| s as u64)
    }

    /// Bytes of the bodies and metadata of steps `from..=to` of `id`, as
    /// stored (the text the store writes, without row overhead).
    pub async fn step_bytes(&self, id: &str, from: u64, to: u64) -> u64 {
        let (bytes,): (i64,) =
            match self {
                Side::Sqlite { pool, .. } => {
                    sqlx::query_as(
                        "SELECT COALESCE(SUM(LENGTH(CAST(body AS BLOB)) + \
                     LENGTH(CAST(metadata AS BLOB))), 0) FROM state_store_steps \
                     WHERE thread_id = $1 AND seq >= $2 AND seq <= $3",
                    )
                    .bind(id)
                    .bind(from as i64)
                    .bind(to as i64)
                    .fetch_one(pool)
                    .await
                }
                Side::Postgres { pool } => sqlx::query_as(
                    "SELECT COALESCE(SUM(octet_length(body) + octet_length(metadata)), 0)::BIGINT \
                     FROM state_store_steps WHERE thread_id = $1 AND seq >= $2 AND seq <= $3",
                )
                .bind(id)
                .bind(from as i64)
                .bind(to as i64)
                .fetch_one(pool)
                .await,
            }
            .expect("sum the step sizes");
        bytes as u64
    }

    /// Bytes of the snapshot of `id` at step `seq` (its JSON text).
    pub async fn snapshot_bytes(&self, id: &str, seq: u64) -> u64 {
        let (bytes,): (i64,) = match self {
            Side::Sqlite { pool, .. } => {
                sqlx::query_as(
                    "SELECT LENGTH(CAST(state AS BLOB)) FROM state_store_snapshots \
                     WHERE thread_id = $1 AND seq = $2",
                )
                .bind(id)
                .bind(seq as i64)
                .fetch_one(pool)
                .await
            }
            Side::Postgres { pool } => {
                sqlx::query_as(
                    "SELECT octet_length(state)::BIGINT FROM state_store_snapshots \
                     WHERE thread_id = $1 AND seq = $2",
                )
                .bind(id)
                .bind(seq as i64)
                .fetch_one(pool)
                .await
            }
        }
        .expect("read a snapshot's size");
        bytes as u64
    }

    /// SQLite: copies the whole WAL into the database file and makes the
    /// next commit start the WAL over (`wal_checkpoint(RESTART)`, retried
    /// while a reader is in the way). The WAL file keeps its size, as it
    /// does in steady state: SQLite reuses it rather than growing it.
    pub async fn checkpoint(&self) {
        let Side::Sqlite { pool, .. } = self else {
            return;
        };
        for _ in 0..100 {
            let (busy, _, _): (i64, i64, i64) = sqlx::query_as("PRAGMA wal_checkpoint(RESTART)")
                .fetch_one(pool)
                .await
                .expect("checkpoint the WAL");
            if busy == 0 {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        panic!("the WAL checkpoint stayed busy");
    }

    /// The storage the database takes now. SQLite: the database file's
    /// size (call [`Side::checkpoint`] first, so that it holds every
    /// commit; the WAL is then empty, whatever its file's size).
    /// PostgreSQL: `pg_total_relation_size` of the store's three tables
    /// (heap, indexes and TOAST).
    pub async fn storage_bytes(&self) -> u64 {
        match self {
            Side::Sqlite { path, .. } => file_len(path),
            Side::Postgres { pool } => {
                let sql = TABLES
                    .map(|t| format!("pg_total_relation_size('{t}')"))
                    .join(" + ");
                let (bytes,): (i64,) = sqlx::query_as(&format!("SELECT ({sql})::BIGINT"))
                    .fetch_one(pool)
                    .await
                    .expect("read the relation sizes");
                bytes as u64
            }
        }
    }

    /// PostgreSQL: the WAL position (bytes since the start of the WAL).
    pub async fn wal_position(&self) -> Option<u64> {
        let Side::Postgres { pool } = self else {
            return None;
        };
        let (lsn,): (i64,) =
            sqlx::query_as("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::BIGINT")
                .fetch_one(pool)
                .await
                .expect("read the WAL position");
        Some(lsn as u64)
    }
}

fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

/// The step's baseline (`bare_commit` in `store.rs`): a SQLite file of its
/// own beside the store's, opened as `Store::sqlite` opens one (WAL,
/// `synchronous = FULL`), with a table shaped as the store's steps; each
/// commit is one `INSERT` of a step's row (the same columns and bytes as
/// the store writes for a timed step: its thread id, seq, kind, the
/// delta's JSON, `{}`, version and time) in autocommit.
pub struct BareCommit {
    pool: sqlx::SqlitePool,
    seq: i64,
    /// CPU time of the process during the timed commits so far, in ns.
    pub cpu_ns: u64,
    _dir: tempfile::TempDir,
}

impl BareCommit {
    pub async fn open() -> BareCommit {
        use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqliteSynchronous};
        let dir = match std::env::var_os("STATE_STORE_BENCH_DIR") {
            Some(base) => tempfile::tempdir_in(base),
            None => tempfile::tempdir(),
        }
        .expect("a temporary directory");
        let options = SqliteConnectOptions::new()
            .filename(dir.path().join("bare.db"))
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .busy_timeout(std::time::Duration::from_secs(30));
        let pool = sqlx::SqlitePool::connect_with(options)
            .await
            .expect("open the bare SQLite file");
        sqlx::query(
            "CREATE TABLE bare_steps (thread_id TEXT NOT NULL, seq BIGINT NOT NULL, \
             kind TEXT NOT NULL, body TEXT NOT NULL, metadata TEXT NOT NULL, \
             state_version BIGINT NOT NULL, recorded_at BIGINT NOT NULL, \
             PRIMARY KEY (thread_id, seq))",
        )
        .execute(&pool)
        .await
        .expect("create the bare table");
        BareCommit {
            pool,
            seq: 0,
            cpu_ns: 0,
            _dir: dir,
        }
    }

    /// Commits `iters` rows, one each, timing only the commits.
    pub async fn run(&mut self, iters: u64) -> std::time::Duration {
        let bodies: Vec<String> = step_deltas(iters)
            .iter()
            .map(|delta| serde_json::to_string(delta).expect("a delta's JSON"))
            .collect();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        let cpu = process_cpu_ns();
        let start = std::time::Instant::now();
        for body in &bodies {
            self.seq += 1;
            sqlx::query(
                "INSERT INTO bare_steps \
                 (thread_id, seq, kind, body, metadata, state_version, recorded_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7)",
            )
            .bind("bench-0")
            .bind(self.seq)
            .bind("apply")
            .bind(body)
            .bind("{}")
            .bind(0i64)
            .bind(now)
            .execute(&self.pool)
            .await
            .expect("a bare commit");
        }
        let took = start.elapsed();
        self.cpu_ns += process_cpu_ns().saturating_sub(cpu);
        took
    }
}

/// CPU time this process has used so far, in nanoseconds: the sum over
/// its threads of `/proc/self/task/*/schedstat`'s time on a CPU (0 where
/// that is not available).
pub fn process_cpu_ns() -> u64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .filter_map(|task| {
            let stat = std::fs::read_to_string(task.ok()?.path().join("schedstat")).ok()?;
            stat.split_whitespace().next()?.parse::<u64>().ok()
        })
        .sum()
}

/// Bytes this process has passed to `write`/`pwrite` so far (`wchar` of
/// `/proc/self/io`, all threads): SQLite's WAL appends and checkpoints.
pub fn process_wchar() -> Option<u64> {
    let io = std::fs::read_to_string("/proc/self/io").ok()?;
    io.lines()
        .find_map(|line| line.strip_prefix("wchar:"))
        .and_then(|v| v.trim().parse().ok())
}

/// `1234567` as `1,234,567`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
