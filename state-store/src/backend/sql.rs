//! The SQL backends. SQLite and PostgreSQL share one schema and one set of
//! queries (`$N` placeholders work in both); `sql_backend!` stamps the same
//! code out for each driver, so the two cannot drift apart.
//!
//! Every value is bound as a parameter: thread ids, JSON and numbers are
//! data, never SQL.

use super::{
    Appended, ForkRows, LogTail, Removed, Rewinds, Rewound, SnapshotRow, StepRow, Tail, ThreadKey,
    ThreadRow, ThreadsPage,
};
use crate::error::StoreError;

/// The version of the tables below. A database written by a newer version
/// of this crate is refused; an older one is migrated in `init`.
///
/// 1: the log's tables. 2: the same tables; a step may be of kind
/// `"pending"`, which version 1 would read as a corrupt row (so it is told
/// to upgrade instead). 3: long-term memory items (`Store::put_item`), two
/// tables of their own (`sql_items.rs`); and a step may be of kind
/// `"subgraph"`, which version 2 would read as a corrupt row. Each
/// version's statements are in [`migrations`]. 4: the Agent Server's
/// runs, their stream events and thread records (`Store::create_run`),
/// three tables of their own (`sql_runs.rs`); no older table changed.
/// 5: a run's `base_seq` (`Run::base_seq`). 6: created assistants and
/// their versions (`Store::create_assistant`), two tables of their own
/// (`sql_assistants.rs`); no older table changed. 7: a thread row counts
/// its rewinds (`Store::rewind_thread`) and keeps the step of the last
/// one, so a watcher learns of a rewind from the log alone
/// (`REWIND_COLUMNS`); a version 6 program would ignore them and miss
/// rewinds, so it is told to upgrade instead. 8: the Agent Server's
/// crons (`Store::create_cron`), a table of its own (`sql_crons.rs`);
/// no older table changed. 9: fewer pages a run's commits write: the
/// runs' and thread records' status indexes keep only the rows looked up
/// by them (`PARTIAL_INDEXES`). 10: SQLite's threads and thread records
/// are `WITHOUT ROWID` tables (`SQLITE_WITHOUT_ROWID`): one B-tree each,
/// where a table and its key's index made two; PostgreSQL's tables have
/// no rowid (nothing changes). Both read and write the same rows as
/// version 8: an older program refuses the upgraded database all the
/// same, as it refuses any newer one.
pub(crate) const SCHEMA_VERSION: i64 = 10;

/// The version table, created first: it says which migrations to run.
const CREATE_SCHEMA_TABLE: &str = "CREATE TABLE IF NOT EXISTS state_store_schema (
        id INTEGER PRIMARY KEY,
        version BIGINT NOT NULL
    )";

/// The log's tables (version 1). Names are prefixed so they can live in
/// an application's own database.
const LOG_TABLES: [&str; 3] = [
    "CREATE TABLE IF NOT EXISTS state_store_threads (
        thread_id TEXT PRIMARY KEY,
        head BIGINT NOT NULL,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        parent_thread TEXT,
        parent_seq BIGINT
    )",
    "CREATE TABLE IF NOT EXISTS state_store_steps (
        thread_id TEXT NOT NULL,
        seq BIGINT NOT NULL,
        kind TEXT NOT NULL,
        body TEXT NOT NULL,
        metadata TEXT NOT NULL,
        state_version BIGINT NOT NULL,
        recorded_at BIGINT NOT NULL,
        PRIMARY KEY (thread_id, seq)
    )",
    "CREATE TABLE IF NOT EXISTS state_store_snapshots (
        thread_id TEXT NOT NULL,
        seq BIGINT NOT NULL,
        state TEXT NOT NULL,
        state_version BIGINT NOT NULL,
        recorded_at BIGINT NOT NULL,
        PRIMARY KEY (thread_id, seq)
    )",
];

/// Each schema version with the statements that bring a database from the
/// version before it, in order: `init` runs those after the database's
/// version (all of them for a new database). `item_tables` are the
/// backend's (the two databases type them differently).
fn migrations(
    item_tables: &'static [&'static str],
    run_base: &'static [&'static str],
    rewind_columns: &'static [&'static str],
    without_rowid: &'static [&'static str],
) -> [(i64, &'static [&'static str]); 10] {
    // 2 changed no table (see SCHEMA_VERSION).
    [
        (1, &LOG_TABLES),
        (2, &[]),
        (3, item_tables),
        (4, &super::sql_runs::RUN_TABLES),
        (5, run_base),
        (6, &super::sql_assistants::ASSISTANT_TABLES),
        (7, rewind_columns),
        (8, &super::sql_crons::CRON_TABLES),
        (9, &super::sql_runs::PARTIAL_INDEXES),
        (10, without_rowid),
    ]
}

/// Version 10 on SQLite: the threads and the thread records, the tables
/// every run writes by their text key, rebuilt as `WITHOUT ROWID` tables
/// (their rows are small: a head and times; metadata and a status). A
/// rowid table with a `TEXT PRIMARY KEY` is two B-trees, the rows by
/// rowid and an index from the key to the rowid: each write looked the
/// key up in one and changed the other, two pages or more a commit where
/// one does. The rows are copied as they are, in the migration's
/// transaction. (Steps, snapshots, runs and events keep their rowid:
/// their rows can be larger than a `WITHOUT ROWID` page keeps in place.)
#[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
const SQLITE_WITHOUT_ROWID: [&str; 9] = [
    "CREATE TABLE state_store_threads_v10 (
        thread_id TEXT PRIMARY KEY,
        head BIGINT NOT NULL,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        parent_thread TEXT,
        parent_seq BIGINT,
        rewinds BIGINT NOT NULL DEFAULT 0,
        rewound_to BIGINT NOT NULL DEFAULT 0
    ) WITHOUT ROWID",
    "INSERT INTO state_store_threads_v10 \
     SELECT thread_id, head, created_at, updated_at, parent_thread, parent_seq, rewinds, rewound_to \
     FROM state_store_threads",
    "DROP TABLE state_store_threads",
    "ALTER TABLE state_store_threads_v10 RENAME TO state_store_threads",
    super::sql_runs::thread_records_table!(
        "CREATE TABLE state_store_thread_records_v10",
        " WITHOUT ROWID"
    ),
    "INSERT INTO state_store_thread_records_v10 \
     SELECT thread_id, metadata, status, owner, created_at, updated_at \
     FROM state_store_thread_records",
    "DROP TABLE state_store_thread_records",
    "ALTER TABLE state_store_thread_records_v10 RENAME TO state_store_thread_records",
    // Its index went with the table it was on.
    "CREATE INDEX IF NOT EXISTS state_store_thread_records_unsettled \
     ON state_store_thread_records (status) WHERE status <> 'idle'",
];

/// Version 7: a thread's rewinds, counted, and the step of the last one
/// (`Rewinds`). PostgreSQL's skip columns that exist (as version 5's: a
/// concurrent upgrade).
#[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
const SQLITE_REWIND_COLUMNS: [&str; 2] = [
    "ALTER TABLE state_store_threads ADD COLUMN rewinds BIGINT NOT NULL DEFAULT 0",
    "ALTER TABLE state_store_threads ADD COLUMN rewound_to BIGINT NOT NULL DEFAULT 0",
];
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
const POSTGRES_REWIND_COLUMNS: [&str; 2] = [
    "ALTER TABLE state_store_threads ADD COLUMN IF NOT EXISTS rewinds BIGINT NOT NULL DEFAULT 0",
    "ALTER TABLE state_store_threads ADD COLUMN IF NOT EXISTS rewound_to BIGINT NOT NULL DEFAULT 0",
];

const INSERT_SCHEMA_VERSION: &str = "INSERT INTO state_store_schema (id, version) VALUES (1, $1)";
const SELECT_SCHEMA_VERSION: &str = "SELECT version FROM state_store_schema WHERE id = 1";
/// Records an upgrade; a no-op when another worker did it first.
const UPGRADE_SCHEMA_VERSION: &str =
    "UPDATE state_store_schema SET version = $1 WHERE id = 1 AND version < $1";

pub(super) const OPEN_THREAD: &str = "INSERT INTO state_store_threads (thread_id, head, created_at, updated_at) \
     VALUES ($1, 0, $2, $2) ON CONFLICT (thread_id) DO NOTHING";
pub(super) const THREAD_EXISTS: &str = "SELECT head FROM state_store_threads WHERE thread_id = $1";
const SELECT_THREAD: &str = "SELECT thread_id, head, created_at, updated_at, parent_thread, parent_seq \
     FROM state_store_threads WHERE thread_id = $1";
const SELECT_THREADS: &str = "SELECT thread_id, head, created_at, updated_at, parent_thread, parent_seq \
     FROM state_store_threads ORDER BY thread_id";
pub(super) const SELECT_HEAD: &str = "SELECT head FROM state_store_threads WHERE thread_id = $1";
// PostgreSQL runs `MOVE_HEAD_NOTIFY` instead.
#[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
pub(super) const MOVE_HEAD: &str = "UPDATE state_store_threads SET head = $2, updated_at = $3 \
     WHERE thread_id = $1 AND head = $4";
/// SQLite's whole append in one call to sqlx's worker thread (one round
/// trip instead of four, and the transaction's statements prepared once
/// and cached, where sqlx parses its `BEGIN` and `COMMIT` at every use):
/// the write transaction; `MOVE_HEAD`; the step's row (`$5`..`$8`: kind,
/// body, metadata, state version; recorded at `$3`) inserted only if the
/// head moved (`changes()` counts the rows the `UPDATE` changed); the
/// commit (of nothing, when the head did not move). Run by
/// `sqlite::append_in_one_call`, which reads the rows the `INSERT` added
/// from its own result (1, or 0 when no step was written; a `SELECT
/// changes()` would be one more statement, a `RETURNING` clause twice
/// the cost: SQLite buffers its rows in a temporary table), and rolls
/// the transaction back if the call stops between its ends.
#[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
const APPEND_IN_ONE_CALL: &str = "BEGIN IMMEDIATE; \
     UPDATE state_store_threads SET head = $2, updated_at = $3 \
     WHERE thread_id = $1 AND head = $4; \
     INSERT INTO state_store_steps \
     (thread_id, seq, kind, body, metadata, state_version, recorded_at) \
     SELECT $1, $2, $5, $6, $7, $8, $3 WHERE changes() = 1; \
     COMMIT";
pub(super) const INSERT_STEP: &str = "INSERT INTO state_store_steps \
     (thread_id, seq, kind, body, metadata, state_version, recorded_at) \
     VALUES ($1, $2, $3, $4, $5, $6, $7)";
pub(super) const SELECT_STEP: &str = "SELECT seq, kind, body, metadata, state_version, recorded_at \
     FROM state_store_steps WHERE thread_id = $1 AND seq = $2";
pub(super) const SELECT_STEPS: &str = "SELECT seq, kind, body, metadata, state_version, recorded_at \
     FROM state_store_steps WHERE thread_id = $1 AND seq >= $2 AND seq <= $3 ORDER BY seq";
/// A watcher's read: the thread row with its first stored steps from `$2`
/// on, in one statement (one snapshot of the database, in both SQLite and
/// PostgreSQL): no thread, no row; a thread without such steps, one row
/// whose step columns are NULL.
const SELECT_TAIL: &str = "SELECT t.head, t.created_at, t.rewinds, t.rewound_to, \
     s.seq, s.kind, s.body, s.metadata, s.state_version, s.recorded_at \
     FROM state_store_threads t LEFT JOIN (\
         SELECT thread_id, seq, kind, body, metadata, state_version, recorded_at \
         FROM state_store_steps WHERE thread_id = $1 AND seq >= $2 ORDER BY seq LIMIT $3\
     ) s ON s.thread_id = t.thread_id \
     WHERE t.thread_id = $1 ORDER BY s.seq";
const SELECT_FIRST_STEP: &str = "SELECT MIN(seq) FROM state_store_steps WHERE thread_id = $1";
const INSERT_SNAPSHOT: &str = "INSERT INTO state_store_snapshots \
     (thread_id, seq, state, state_version, recorded_at) VALUES ($1, $2, $3, $4, $5) \
     ON CONFLICT (thread_id, seq) DO NOTHING";
pub(super) const SELECT_SNAPSHOT: &str = "SELECT seq, state, state_version, recorded_at FROM state_store_snapshots \
     WHERE thread_id = $1 AND seq <= $2 ORDER BY seq DESC LIMIT 1";
const SELECT_LATEST_SNAPSHOT_SEQ: &str =
    "SELECT MAX(seq) FROM state_store_snapshots WHERE thread_id = $1";
const DELETE_STEPS_UPTO: &str = "DELETE FROM state_store_steps WHERE thread_id = $1 AND seq <= $2";
const DELETE_SNAPSHOTS_BEFORE: &str =
    "DELETE FROM state_store_snapshots WHERE thread_id = $1 AND seq < $2";
/// A rewind's statements (`rewind_in`): the head, locked where the
/// database can (PostgreSQL: appends wait for the rewind, then conflict);
/// whether the state at `$2` can be rebuilt (the latest snapshot at or
/// before it, the steps stored after that up to it, the first stored
/// after it and the first hole); the head moved back and the rewind
/// counted; the rows after it deleted.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
const SELECT_HEAD_FOR_UPDATE: &str =
    "SELECT head FROM state_store_threads WHERE thread_id = $1 FOR UPDATE";
const SELECT_SNAPSHOT_SEQ_UPTO: &str =
    "SELECT MAX(seq) FROM state_store_snapshots WHERE thread_id = $1 AND seq <= $2";
const COUNT_STEPS_BETWEEN: &str = "SELECT COUNT(*), MIN(seq) FROM state_store_steps \
     WHERE thread_id = $1 AND seq > $2 AND seq <= $3";
const FIRST_HOLE_BETWEEN: &str = "SELECT MIN(s.seq) + 1 FROM state_store_steps s \
     WHERE s.thread_id = $1 AND s.seq > $2 AND s.seq < $3 AND NOT EXISTS \
     (SELECT 1 FROM state_store_steps n WHERE n.thread_id = $1 AND n.seq = s.seq + 1)";
// PostgreSQL runs `REWIND_HEAD_NOTIFY` instead.
#[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
const REWIND_HEAD: &str = "UPDATE state_store_threads SET head = $2, updated_at = $3, \
     rewinds = rewinds + 1, rewound_to = $2 WHERE thread_id = $1 AND head > $2";
const DELETE_AFTER: [&str; 2] = [
    "DELETE FROM state_store_steps WHERE thread_id = $1 AND seq > $2",
    "DELETE FROM state_store_snapshots WHERE thread_id = $1 AND seq > $2",
];
const DELETE_THREAD: [&str; 3] = [
    "DELETE FROM state_store_steps WHERE thread_id = $1",
    "DELETE FROM state_store_snapshots WHERE thread_id = $1",
    "DELETE FROM state_store_threads WHERE thread_id = $1",
];
// PostgreSQL runs `CREATE_FORK_NOTIFY` instead.
#[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
const CREATE_FORK: &str = "INSERT INTO state_store_threads \
     (thread_id, head, created_at, updated_at, parent_thread, parent_seq) \
     VALUES ($1, $2, $3, $3, $4, $5) ON CONFLICT (thread_id) DO NOTHING";

/// The PostgreSQL channel on which every commit that changes a thread's
/// log is announced, for watchers in other processes: `Store::watch`. The
/// payload is `{"thread": id, "seq": head}`, never a step's body: NOTIFY
/// payloads are limited to 8000 bytes and are not replayed, so the log
/// stays the one source of truth. A head of 0 means the thread was
/// deleted.
#[cfg(feature = "postgres")]
pub(crate) const NOTIFY_CHANNEL: &str = "state_store_steps";

// PostgreSQL's `MOVE_HEAD`, `DELETE_THREAD` and `CREATE_FORK`: the same
// statements, announcing the change on `NOTIFY_CHANNEL` through `RETURNING`
// (in the statement the change needs anyway: no round trip of its own;
// delivered only if the transaction commits, and only for the row changed).
// Ids are at most 512 bytes: the payload (6 bytes per escaped control
// character at worst) stays far below NOTIFY's 8000.
#[cfg(feature = "postgres")]
const MOVE_HEAD_NOTIFY: &str = "UPDATE state_store_threads SET head = $2, updated_at = $3 \
     WHERE thread_id = $1 AND head = $4 \
     RETURNING pg_notify('state_store_steps', json_build_object('thread', thread_id, 'seq', head)::text)";
#[cfg(feature = "postgres")]
const DELETE_THREAD_NOTIFY: [&str; 3] = [
    DELETE_THREAD[0],
    DELETE_THREAD[1],
    "DELETE FROM state_store_threads WHERE thread_id = $1 \
     RETURNING pg_notify('state_store_steps', json_build_object('thread', thread_id, 'seq', 0)::text)",
];
/// A rewind's notice says so: the hub wakes the thread's watchers though
/// the head went down (`Hub::rewound`).
#[cfg(feature = "postgres")]
const REWIND_HEAD_NOTIFY: &str = "UPDATE state_store_threads SET head = $2, updated_at = $3, \
     rewinds = rewinds + 1, rewound_to = $2 WHERE thread_id = $1 AND head > $2 \
     RETURNING pg_notify('state_store_steps', json_build_object('thread', thread_id, 'seq', head, 'rewound', true)::text)";
#[cfg(feature = "postgres")]
const CREATE_FORK_NOTIFY: &str = "INSERT INTO state_store_threads \
     (thread_id, head, created_at, updated_at, parent_thread, parent_seq) \
     VALUES ($1, $2, $3, $3, $4, $5) ON CONFLICT (thread_id) DO NOTHING \
     RETURNING pg_notify('state_store_steps', json_build_object('thread', thread_id, 'seq', head)::text)";

/// The statement of a page of threads (`Backend::threads_page`): after
/// the position `$1, $2` (the time, then the id; the id alone as `$1` in
/// the id order) when `after`, then `LIMIT` and `OFFSET`. `collate` makes
/// PostgreSQL compare ids bytewise, as SQLite and the memory backend do.
/// Nothing but the table's rows is read; a time order sorts them (no
/// index on the times: it would cost every step a page more).
fn threads_page_sql(page: &ThreadsPage<'_>, collate: &str) -> String {
    let column = match page.key {
        ThreadKey::Updated => Some("updated_at"),
        ThreadKey::Created => Some("created_at"),
        ThreadKey::Id => None,
    };
    let (direction, cmp) = match page.descending {
        true => ("DESC", "<"),
        false => ("ASC", ">"),
    };
    let mut sql = String::from(
        "SELECT thread_id, head, created_at, updated_at, parent_thread, parent_seq \
         FROM state_store_threads",
    );
    let mut next = 1;
    if page.after.is_some() {
        match column {
            Some(column) => {
                sql.push_str(&format!(
                    " WHERE ({column}, thread_id{collate}) {cmp} ($1, $2)"
                ));
                next = 3;
            }
            None => {
                sql.push_str(&format!(" WHERE thread_id{collate} {cmp} $1"));
                next = 2;
            }
        }
    }
    sql.push_str(" ORDER BY ");
    if let Some(column) = column {
        sql.push_str(&format!("{column} {direction}, "));
    }
    sql.push_str(&format!(
        "thread_id{collate} {direction} LIMIT ${next} OFFSET ${}",
        next + 1
    ));
    sql
}

/// A sequence number as stored (BIGINT).
pub(super) fn to_db(seq: u64) -> i64 {
    // Sequence numbers count steps one at a time; i64::MAX is unreachable.
    i64::try_from(seq).unwrap_or(i64::MAX)
}

/// A stored sequence number; a negative one is a corrupt row.
pub(super) fn from_db(thread: &str, what: &'static str, seq: i64) -> Result<u64, StoreError> {
    u64::try_from(seq).map_err(|_| {
        StoreError::corrupt(thread, what, 0, format!("negative sequence number {seq}"))
    })
}

/// How a backend's write transaction ends: [`commit`](WriteTx::commit)
/// returns once its writes are durable (dropped without it, they are
/// rolled back).
pub(crate) trait WriteTx {
    /// Commits.
    fn commit(self) -> impl std::future::Future<Output = Result<(), sqlx::Error>> + Send;
}

impl<DB: sqlx::Database> WriteTx for sqlx::Transaction<'static, DB> {
    fn commit(self) -> impl std::future::Future<Output = Result<(), sqlx::Error>> + Send {
        sqlx::Transaction::commit(self)
    }
}

fn db_error(context: String) -> impl FnOnce(sqlx::Error) -> StoreError {
    move |e| StoreError::backend(context, e)
}

/// Begins a read transaction with `statement`, or (`None`) with the
/// driver's own `BEGIN`. SQLite's reads take the latter: sqlx's
/// `begin_with` awaits once more after its `BEGIN` ran, and a task
/// aborted there (a cancelled run's graph, mid load) hands its pooled
/// connection back inside a transaction no one ends: its next users read
/// a stale snapshot, or fail with "non-zero transaction depth". Its plain
/// `begin` cannot be cut between the two. PostgreSQL's, with a
/// statement, begin in a task of their own ([`begin_uncut`]).
async fn begin_read<DB: sqlx::Database>(
    pool: &sqlx::Pool<DB>,
    statement: Option<&'static str>,
) -> Result<sqlx::Transaction<'static, DB>, sqlx::Error> {
    match statement {
        Some(statement) => begin_uncut(pool, statement).await,
        None => pool.begin().await,
    }
}

/// Begins a transaction with `statement` in a task of its own, so that a
/// caller dropped mid-`BEGIN` cannot cut it. sqlx 0.8.6 (and 0.9.0) count
/// a PostgreSQL transaction only once its `BEGIN` has answered
/// (transact-rs/sqlx#4393, fixed upstream but not released): a future
/// dropped in between (a client that went away, a `select!`) handed its
/// connection back to the pool inside a transaction, and that
/// connection's next `BEGIN ISOLATION LEVEL ...` failed with "SET
/// TRANSACTION ISOLATION LEVEL must be called before any query". The
/// spawned begin ends; a transaction no one took rolls back as it drops.
async fn begin_uncut<DB: sqlx::Database>(
    pool: &sqlx::Pool<DB>,
    statement: &'static str,
) -> Result<sqlx::Transaction<'static, DB>, sqlx::Error> {
    let pool = pool.clone();
    tokio::spawn(async move { pool.begin_with(statement).await })
        .await
        .map_err(|_| sqlx::Error::WorkerCrashed)?
}

/// Stamps out one backend over a sqlx driver. `$write` begins a write
/// transaction, `$read` a read transaction that sees one snapshot of the
/// database, `$lock` (optional) serializes schema creation across workers,
/// `$move_head`, `$delete_thread` and `$create_fork` are `MOVE_HEAD`,
/// `DELETE_THREAD` and `CREATE_FORK`, or versions of them that also tell
/// other processes' watchers; `$queue_writes` queues this process's
/// writers in arrival order, and `$write_pool` gives the pool they write
/// through (made from the store's pool); `$make_hot` makes the
/// backend's own path for its hottest writes and reads, if it has one
/// (`hot_path.rs`: `$hot`), through which its other writes take
/// turns (`$write_tx`); `$append_in_one_call` appends a
/// step in one call where the driver can (`Some` of the rows written),
/// else says `None` and the step is appended in a transaction of its own
/// (`$move_head`, then `INSERT_STEP`);
/// `$lock_head` reads a thread's head for a rewind (PostgreSQL: locking
/// its row) and `$rewind_head` moves it back (PostgreSQL: with a notice);
/// `$collate` follows a thread id
/// where a page of threads compares or orders it; `$item_tables` and `$dialect` are the
/// items' (`sql_items.rs`), whose methods are stamped out here too.
macro_rules! sql_backend {
    (
        $(#[$doc:meta])*
        $name:ident, $db:ty, $pool:ty,
        write = $write:expr, read = $read:expr, lock = $lock:expr,
        queue_writes = $queue:expr, write_pool = $write_pool:path,
        hot = $hot:ty, make_hot = $make_hot:path, write_tx = $write_tx:path,
        collate = $collate:expr,
        append_in_one_call = $append_in_one_call:path,
        move_head = $move_head:expr, delete_thread = $delete_thread:expr, create_fork = $create_fork:expr,
        lock_head = $lock_head:expr, rewind_head = $rewind_head:expr,
        rewind_columns = $rewind_columns:expr, without_rowid = $without_rowid:expr,
        item_tables = $item_tables:expr, run_base = $run_base:expr, dialect = $dialect:expr,
        claim = $claim:expr, run_state = $run_state:expr, record = $record:expr, notify = $notify:expr
    ) => {
        $(#[$doc])*
        #[derive(Debug, Clone)]
        pub(crate) struct $name {
            pool: $pool,
            /// Where this store's writes go (see `write_pool`).
            writes: $pool,
            /// Writers of this process, in arrival order (see `queue_writes`).
            writers: Option<std::sync::Arc<tokio::sync::Mutex<()>>>,
            /// The writer of the writes made for every run and step, on a
            /// connection of its own (SQLite on a file, `sqlite_writer.rs`),
            /// which also gives the other writes their turns.
            pub(super) hot: Option<$hot>,
        }

        impl $name {
            /// Wraps a pool, creating or checking the store's tables.
            pub async fn new(pool: $pool) -> Result<Self, StoreError> {
                let writers = $queue.then(|| std::sync::Arc::new(tokio::sync::Mutex::new(())));
                let writes = $write_pool(&pool).await;
                let mut backend = $name { pool, writes, writers, hot: None };
                backend.init().await?;
                backend.hot = $make_hot(&backend.pool, &backend.writes).await?;
                Ok(backend)
            }

            /// A write transaction of its own, through sqlx: in a turn the
            /// writer gives, where there is one, else after
            /// [`queue`](Self::queue) (which the caller waits for).
            async fn write_tx(&self) -> Result<impl std::ops::DerefMut<Target = <$db as sqlx::Database>::Connection> + WriteTx + Send + 'static, sqlx::Error> {
                $write_tx(&self.writes, self.hot.as_ref(), $write).await
            }

            /// Waits for this process's earlier writers, where the database
            /// would make them poll for its lock instead.
            async fn queue(&self) -> Option<tokio::sync::MutexGuard<'_, ()>> {
                match &self.writers {
                    Some(writers) if self.hot.is_none() => Some(writers.lock().await),
                    _ => None,
                }
            }

            async fn init(&self) -> Result<(), StoreError> {
                let context = || "creating the store's tables".to_owned();
                let mut tx = self.write_tx().await.map_err(db_error(context()))?;
                // Under the write lock (SQLite) or the advisory lock
                // (PostgreSQL), one worker at a time gets past here.
                if let Some(lock) = $lock {
                    sqlx::query(lock).execute(&mut *tx).await.map_err(db_error(context()))?;
                }
                sqlx::query(CREATE_SCHEMA_TABLE).execute(&mut *tx).await.map_err(db_error(context()))?;
                let found: Option<(i64,)> = sqlx::query_as(SELECT_SCHEMA_VERSION)
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(db_error(context()))?;
                let found = found.map(|(version,)| version);
                if let Some(version) = found
                    && version > SCHEMA_VERSION
                {
                    return Err(StoreError::TooNew {
                        what: "the database's state-store tables".to_owned(),
                        found: version,
                        known: SCHEMA_VERSION,
                    });
                }
                let upgrading = || format!("upgrading the store's tables to version {SCHEMA_VERSION}");
                for (version, statements) in migrations(&$item_tables, &$run_base, &$rewind_columns, &$without_rowid) {
                    if found.is_some_and(|found| found >= version) {
                        continue;
                    }
                    for statement in statements {
                        sqlx::query(statement).execute(&mut *tx).await.map_err(db_error(upgrading()))?;
                    }
                }
                let record = match found {
                    None => INSERT_SCHEMA_VERSION,
                    Some(version) if version < SCHEMA_VERSION => UPGRADE_SCHEMA_VERSION,
                    Some(_) => return tx.commit().await.map_err(db_error(context())),
                };
                sqlx::query(record)
                    .bind(SCHEMA_VERSION)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_error(upgrading()))?;
                tx.commit().await.map_err(db_error(context()))
            }

            pub async fn open(&self, thread: &str, now: i64) -> Result<(), StoreError> {
                if let Some(hot) = &self.hot {
                    return $crate::backend::hot_path::HotPath::open(hot, thread, now).await;
                }
                let context = || format!("opening thread \"{thread}\"");
                // A thread that exists is only read: no write, no turn on
                // the write connection (every run's graph opens its thread).
                let found: Vec<(i64,)> = sqlx::query_as(THREAD_EXISTS)
                    .bind(thread)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_error(context()))?;
                if !found.is_empty() {
                    return Ok(());
                }
                let _queued = self.queue().await;
                let mut tx = self.write_tx().await.map_err(db_error(context()))?;
                sqlx::query(OPEN_THREAD)
                    .bind(thread)
                    .bind(now)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_error(context()))?;
                tx.commit().await.map_err(db_error(context()))
            }

            pub async fn load(&self, thread: &str, upto: Option<u64>) -> Result<Option<LogTail>, StoreError> {
                self.read_tail(thread, upto, false).await
            }

            pub async fn load_latest(&self, thread: &str) -> Result<Option<LogTail>, StoreError> {
                self.read_tail(thread, None, true).await
            }

            /// `load`, and with `with_last` the head's step in the same
            /// transaction: among the steps read, or read on its own when
            /// a snapshot is at the head.
            async fn read_tail(&self, thread: &str, upto: Option<u64>, with_last: bool) -> Result<Option<LogTail>, StoreError> {
                if let Some(hot) = &self.hot {
                    use $crate::backend::hot_path::{HotPath, Tail};
                    match HotPath::read_tail(hot, thread, upto, with_last)? {
                        Tail::Read(tail) => return Ok(tail),
                        Tail::TooLong => {}
                    }
                }
                let context = || format!("loading thread \"{thread}\"");
                let mut tx = begin_read(&self.pool, $read).await.map_err(db_error(context()))?;
                let head: Option<(i64,)> = sqlx::query_as(SELECT_HEAD)
                    .bind(thread)
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(db_error(context()))?;
                let Some((head,)) = head else {
                    return Ok(None);
                };
                let head = from_db(thread, "thread head", head)?;
                let upto = upto.unwrap_or(head).min(head);
                let snapshot: Option<(i64, String, i64, i64)> = sqlx::query_as(SELECT_SNAPSHOT)
                    .bind(thread)
                    .bind(to_db(upto))
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(db_error(context()))?;
                let snapshot = snapshot.map(|row| snapshot_row(thread, row)).transpose()?;
                let from = snapshot.as_ref().map_or(1, |s| s.seq + 1);
                let steps = step_rows(thread, fetch_steps(&mut *tx, thread, from, upto).await.map_err(db_error(context()))?)?;
                let last = match steps.last() {
                    _ if !with_last || head == 0 => None,
                    Some(last) if last.seq == head => Some(last.clone()),
                    _ => {
                        let row: Option<StepTuple> = sqlx::query_as(SELECT_STEP)
                            .bind(thread)
                            .bind(to_db(head))
                            .fetch_optional(&mut *tx)
                            .await
                            .map_err(db_error(context()))?;
                        step_rows(thread, row.into_iter().collect())?.pop()
                    }
                };
                tx.commit().await.map_err(db_error(context()))?;
                Ok(Some(LogTail { head, snapshot, steps, last }))
            }

            pub async fn append(&self, thread: &str, step: &StepRow) -> Result<Appended, StoreError> {
                if let Some(hot) = &self.hot {
                    return $crate::backend::hot_path::HotPath::append(hot, thread, step).await;
                }
                let _queued = self.queue().await;
                // The context is written only on an error (it is on every
                // step's path).
                let failed = |e| StoreError::backend(format!("appending step {} to thread \"{thread}\"", step.seq), e);
                // The head moves only from the expected step: a stale writer
                // changes no row and learns the stored head below.
                let one_call = $append_in_one_call(&self.writes, thread, step).await;
                let moved = match one_call {
                    Some(moved) => moved.map_err(failed)?,
                    None => {
                        let mut tx = self.write_tx().await.map_err(failed)?;
                        let moved = sqlx::query($move_head)
                            .bind(thread)
                            .bind(to_db(step.seq))
                            .bind(step.recorded_at)
                            .bind(to_db(step.seq - 1))
                            .execute(&mut *tx)
                            .await
                            .map_err(failed)?
                            .rows_affected();
                        if moved == 1 {
                            insert_step(&mut *tx, thread, step).await.map_err(failed)?;
                            tx.commit().await.map_err(failed)?;
                            return Ok(Appended::Committed);
                        }
                        // Why not, in the same transaction (rolled back when
                        // dropped: it wrote nothing).
                        let head: Option<(i64,)> = sqlx::query_as(SELECT_HEAD)
                            .bind(thread)
                            .fetch_optional(&mut *tx)
                            .await
                            .map_err(failed)?;
                        return Ok(match head {
                            Some((head,)) => Appended::Conflict { stored: from_db(thread, "thread head", head)? },
                            None => Appended::NoThread,
                        });
                    }
                };
                if moved == 1 {
                    return Ok(Appended::Committed);
                }
                // Read after the failed move: a head moved further still, or
                // a thread deleted since, is as much a conflict.
                let head: Option<(i64,)> = sqlx::query_as(SELECT_HEAD)
                    .bind(thread)
                    .fetch_optional(&self.writes)
                    .await
                    .map_err(failed)?;
                Ok(match head {
                    Some((head,)) => Appended::Conflict { stored: from_db(thread, "thread head", head)? },
                    None => Appended::NoThread,
                })
            }

            pub async fn step(&self, thread: &str, seq: u64) -> Result<Option<StepRow>, StoreError> {
                let row: Option<(i64, String, String, String, i64, i64)> = sqlx::query_as(SELECT_STEP)
                    .bind(thread)
                    .bind(to_db(seq))
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_error(format!("reading step {seq} of thread \"{thread}\"")))?
                    .pop();
                Ok(step_rows(thread, row.into_iter().collect())?.pop())
            }

            pub async fn snapshot(&self, thread: &str, snapshot: &SnapshotRow) -> Result<(), StoreError> {
                let _queued = self.queue().await;
                let context = || format!("writing a snapshot of thread \"{thread}\" at step {}", snapshot.seq);
                let mut tx = self.write_tx().await.map_err(db_error(context()))?;
                insert_snapshot(&mut *tx, thread, snapshot).await.map_err(db_error(context()))?;
                tx.commit().await.map_err(db_error(context()))
            }

            pub async fn steps(&self, thread: &str, from: u64, to: u64) -> Result<Vec<StepRow>, StoreError> {
                let mut conn = self.pool.acquire().await.map_err(db_error(format!("reading thread \"{thread}\"")))?;
                let rows = fetch_steps(&mut *conn, thread, from, to)
                    .await
                    .map_err(db_error(format!("reading steps {from}..={to} of thread \"{thread}\"")))?;
                step_rows(thread, rows)
            }

            pub async fn tail(&self, thread: &str, from: u64, limit: usize) -> Result<Option<Tail>, StoreError> {
                let rows: Vec<TailTuple> = sqlx::query_as(SELECT_TAIL)
                    .bind(thread)
                    .bind(to_db(from))
                    .bind(i64::try_from(limit).unwrap_or(i64::MAX))
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_error(format!("reading thread \"{thread}\" from step {from}")))?;
                tail(thread, rows)
            }

            pub async fn first_step(&self, thread: &str) -> Result<Option<u64>, StoreError> {
                let (first,): (Option<i64>,) = sqlx::query_as(SELECT_FIRST_STEP)
                    .bind(thread)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_error(format!("reading thread \"{thread}\"")))?
                    .pop()
                    .unwrap_or((None,));
                first.map(|seq| from_db(thread, "step", seq)).transpose()
            }

            pub async fn threads(&self) -> Result<Vec<ThreadRow>, StoreError> {
                let rows: Vec<ThreadTuple> = sqlx::query_as(SELECT_THREADS)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_error("listing threads".to_owned()))?;
                rows.into_iter().map(thread_row).collect()
            }

            pub async fn threads_page(&self, page: ThreadsPage<'_>) -> Result<Vec<ThreadRow>, StoreError> {
                let sql = threads_page_sql(&page, $collate);
                let mut query = sqlx::query_as::<_, ThreadTuple>(&sql);
                if let Some((time, id)) = page.after {
                    if page.key != ThreadKey::Id {
                        query = query.bind(time);
                    }
                    query = query.bind(id);
                }
                let rows: Vec<ThreadTuple> = query
                    .bind(i64::try_from(page.limit).unwrap_or(i64::MAX))
                    .bind(i64::try_from(page.offset).unwrap_or(i64::MAX))
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_error("listing threads".to_owned()))?;
                rows.into_iter().map(thread_row).collect()
            }

            pub async fn thread(&self, thread: &str) -> Result<Option<ThreadRow>, StoreError> {
                let row: Option<ThreadTuple> = sqlx::query_as(SELECT_THREAD)
                    .bind(thread)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_error(format!("reading thread \"{thread}\"")))?
                    .pop();
                row.map(thread_row).transpose()
            }

            pub async fn delete(&self, thread: &str) -> Result<(bool, Vec<String>), StoreError> {
                let _queued = self.queue().await;
                let context = || format!("deleting thread \"{thread}\"");
                let mut tx = self.write_tx().await.map_err(db_error(context()))?;
                // Its runs in flight: their workers and readers are told.
                let inflight: Vec<(String, String)> = sqlx::query_as(crate::backend::sql_runs::INFLIGHT_RUNS)
                    .bind(thread)
                    .fetch_all(&mut *tx)
                    .await
                    .map_err(db_error(context()))?;
                let inflight: Vec<String> = inflight.into_iter().map(|(id, _)| id).collect();
                let notices: Vec<String> =
                    inflight.iter().map(|id| crate::backend::sql_runs::notice(Some(id), true)).collect();
                Self::notify_runs(&mut *tx, &notices).await.map_err(db_error(context()))?;
                // Its record and its runs (with their events) go with it;
                // the record first, as every run transition locks it.
                let recorded = sqlx::query(crate::backend::sql_runs::DELETE_THREAD_RECORD)
                    .bind(thread)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_error(context()))?
                    .rows_affected()
                    > 0;
                for statement in crate::backend::sql_runs::DELETE_THREAD_RUNS {
                    sqlx::query(statement).bind(thread).execute(&mut *tx).await.map_err(db_error(context()))?;
                }
                let mut existed = false;
                for statement in $delete_thread {
                    let done = sqlx::query(statement)
                        .bind(thread)
                        .execute(&mut *tx)
                        .await
                        .map_err(db_error(context()))?;
                    // The last statement removes the thread row itself.
                    existed = done.rows_affected() > 0;
                }
                tx.commit().await.map_err(db_error(context()))?;
                Ok((existed || recorded, inflight))
            }

            pub async fn create_from(
                &self,
                thread: &str,
                fork: &ForkRows,
                (parent, parent_seq): (&str, u64),
                now: i64,
            ) -> Result<bool, StoreError> {
                let _queued = self.queue().await;
                let context = || format!("forking thread \"{parent}\" at step {parent_seq} into \"{thread}\"");
                let mut tx = self.write_tx().await.map_err(db_error(context()))?;
                let created = sqlx::query($create_fork)
                    .bind(thread)
                    .bind(to_db(parent_seq))
                    .bind(now)
                    .bind(parent)
                    .bind(to_db(parent_seq))
                    .execute(&mut *tx)
                    .await
                    .map_err(db_error(context()))?
                    .rows_affected();
                if created != 1 {
                    return Ok(false);
                }
                if let Some(snapshot) = &fork.snapshot {
                    insert_snapshot(&mut *tx, thread, snapshot).await.map_err(db_error(context()))?;
                }
                for step in &fork.steps {
                    insert_step(&mut *tx, thread, step).await.map_err(db_error(context()))?;
                }
                tx.commit().await.map_err(db_error(context()))?;
                Ok(true)
            }

            pub async fn rewind(&self, thread: &str, seq: u64, now: i64) -> Result<Rewound, StoreError> {
                let _queued = self.queue().await;
                let context = || format!("rewinding thread \"{thread}\" to step {seq}");
                let mut tx = self.write_tx().await.map_err(db_error(context()))?;
                let rewound = Self::rewind_in(&mut *tx, thread, seq, now).await.map_err(db_error(context()))?;
                if matches!(rewound, Rewound::Done { steps } if steps > 0) {
                    tx.commit().await.map_err(db_error(context()))?;
                }
                Ok(rewound)
            }

            /// A rewind (`Backend::rewind`) inside the caller's write
            /// transaction, which it commits when the outcome is
            /// `Done` with steps removed (anything else wrote nothing).
            async fn rewind_in(
                conn: &mut <$db as sqlx::Database>::Connection,
                thread: &str,
                seq: u64,
                now: i64,
            ) -> Result<Rewound, sqlx::Error> {
                let head: Option<(i64,)> = sqlx::query_as($lock_head).bind(thread).fetch_optional(&mut *conn).await?;
                let Some((head,)) = head else {
                    return Ok(Rewound::NoThread);
                };
                let head = u64::try_from(head).unwrap_or(0);
                if head < seq {
                    return Ok(Rewound::Ahead { head });
                }
                if head == seq {
                    return Ok(Rewound::Done { steps: 0 });
                }
                let (base,): (Option<i64>,) = sqlx::query_as(SELECT_SNAPSHOT_SEQ_UPTO)
                    .bind(thread)
                    .bind(to_db(seq))
                    .fetch_one(&mut *conn)
                    .await?;
                let base = base.unwrap_or(0);
                let (count, first): (i64, Option<i64>) = sqlx::query_as(COUNT_STEPS_BETWEEN)
                    .bind(thread)
                    .bind(base)
                    .bind(to_db(seq))
                    .fetch_one(&mut *conn)
                    .await?;
                if count != to_db(seq) - base {
                    let missing = match first {
                        Some(first) if first == base + 1 => {
                            let (hole,): (Option<i64>,) = sqlx::query_as(FIRST_HOLE_BETWEEN)
                                .bind(thread)
                                .bind(base)
                                .bind(to_db(seq))
                                .fetch_one(&mut *conn)
                                .await?;
                            hole.unwrap_or(base + 1)
                        }
                        _ => base + 1,
                    };
                    return Ok(Rewound::Unrebuildable { missing: u64::try_from(missing).unwrap_or(0) });
                }
                sqlx::query($rewind_head)
                    .bind(thread)
                    .bind(to_db(seq))
                    .bind(now)
                    .execute(&mut *conn)
                    .await?;
                let mut steps = 0;
                for (n, statement) in DELETE_AFTER.iter().enumerate() {
                    let done = sqlx::query(statement).bind(thread).bind(to_db(seq)).execute(&mut *conn).await?;
                    if n == 0 {
                        steps = done.rows_affected();
                    }
                }
                Ok(Rewound::Done { steps })
            }

            pub async fn compact(&self, thread: &str) -> Result<Removed, StoreError> {
                let _queued = self.queue().await;
                let context = || format!("compacting thread \"{thread}\"");
                let mut tx = self.write_tx().await.map_err(db_error(context()))?;
                // The thread's row locked (PostgreSQL) as a rewind locks it:
                // the two never interleave (a rewind checks that the state
                // at its step can be rebuilt, which compaction may change).
                let _: Option<(i64,)> = sqlx::query_as($lock_head)
                    .bind(thread)
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(db_error(context()))?;
                let (latest,): (Option<i64>,) = sqlx::query_as(SELECT_LATEST_SNAPSHOT_SEQ)
                    .bind(thread)
                    .fetch_one(&mut *tx)
                    .await
                    .map_err(db_error(context()))?;
                let Some(latest) = latest else {
                    return Ok(Removed::default());
                };
                let steps = sqlx::query(DELETE_STEPS_UPTO)
                    .bind(thread)
                    .bind(latest)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_error(context()))?
                    .rows_affected();
                let snapshots = sqlx::query(DELETE_SNAPSHOTS_BEFORE)
                    .bind(thread)
                    .bind(latest)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_error(context()))?
                    .rows_affected();
                tx.commit().await.map_err(db_error(context()))?;
                Ok(Removed { steps, snapshots })
            }
        }

        sql_items! { $name, $db, write = $write, read = $read, dialect = $dialect }
        sql_runs! {
            $name, $db, write = $write, claim = $claim, run_state = $run_state,
            record = $record, notify = $notify, collate = $collate
        }
        sql_assistants! { $name, $db }
        sql_crons! { $name, $db, collate = $collate }

        impl $name {
            /// The pool, for callers that want to run their own queries.
            #[allow(dead_code)]
            pub fn pool(&self) -> &$pool {
                &self.pool
            }
        }

        // Shared by `append` and `create_from` (each in its transaction).
        async fn insert_step(
            conn: &mut <$db as sqlx::Database>::Connection,
            thread: &str,
            step: &StepRow,
        ) -> Result<(), sqlx::Error> {
            sqlx::query(INSERT_STEP)
                .bind(thread)
                .bind(to_db(step.seq))
                .bind(&step.kind)
                .bind(&step.body)
                .bind(&step.metadata)
                .bind(step.state_version)
                .bind(step.recorded_at)
                .execute(conn)
                .await?;
            Ok(())
        }

        // Shared by `snapshot` (on a pooled connection) and `create_from`
        // (in its transaction). A snapshot already stored at the step stays.
        async fn insert_snapshot(
            conn: &mut <$db as sqlx::Database>::Connection,
            thread: &str,
            snapshot: &SnapshotRow,
        ) -> Result<(), sqlx::Error> {
            sqlx::query(INSERT_SNAPSHOT)
                .bind(thread)
                .bind(to_db(snapshot.seq))
                .bind(&snapshot.state)
                .bind(snapshot.state_version)
                .bind(snapshot.recorded_at)
                .execute(conn)
                .await?;
            Ok(())
        }

        // Shared by `load` (in its transaction) and `steps` (on a pooled
        // connection).
        async fn fetch_steps(
            conn: &mut <$db as sqlx::Database>::Connection,
            thread: &str,
            from: u64,
            to: u64,
        ) -> Result<Vec<StepTuple>, sqlx::Error> {
            if from > to {
                return Ok(Vec::new());
            }
            sqlx::query_as(SELECT_STEPS)
                .bind(thread)
                .bind(to_db(from))
                .bind(to_db(to))
                .fetch_all(conn)
                .await
        }
    };
}

/// A step's columns, as read (`SELECT_STEP`'s).
pub(super) type StepTuple = (i64, String, String, String, i64, i64);

/// A snapshot's columns, as read (`SELECT_SNAPSHOT`'s).
pub(super) type SnapshotTuple = (i64, String, i64, i64);

/// A snapshot row of thread `thread`, from its columns.
pub(super) fn snapshot_row(
    thread: &str,
    (seq, state, state_version, recorded_at): SnapshotTuple,
) -> Result<SnapshotRow, StoreError> {
    Ok(SnapshotRow {
        seq: from_db(thread, "snapshot", seq)?,
        state,
        state_version,
        recorded_at,
    })
}
type TailTuple = (
    i64,
    i64,
    i64,
    i64,
    Option<i64>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<i64>,
    Option<i64>,
);

/// The rows of `SELECT_TAIL`, as a [`Tail`].
fn tail(thread: &str, rows: Vec<TailTuple>) -> Result<Option<Tail>, StoreError> {
    let Some(&(head, created_at, rewinds, rewound_to, ..)) = rows.first() else {
        return Ok(None);
    };
    // Step columns are all NULL (no step) or all set (NOT NULL columns).
    let steps: Vec<StepTuple> = rows
        .into_iter()
        .filter_map(|(_, _, _, _, seq, kind, body, metadata, version, at)| {
            Some((seq?, kind?, body?, metadata?, version?, at?))
        })
        .collect();
    Ok(Some(Tail {
        head: from_db(thread, "thread head", head)?,
        created_at,
        steps: step_rows(thread, steps)?,
        rewinds: Rewinds {
            count: from_db(thread, "rewind count", rewinds)?,
            to: from_db(thread, "rewind step", rewound_to)?,
        },
    }))
}

type ThreadTuple = (String, i64, i64, i64, Option<String>, Option<i64>);

pub(super) fn step_rows(thread: &str, rows: Vec<StepTuple>) -> Result<Vec<StepRow>, StoreError> {
    rows.into_iter()
        .map(|(seq, kind, body, metadata, state_version, recorded_at)| {
            Ok(StepRow {
                seq: from_db(thread, "step", seq)?,
                kind,
                body,
                metadata,
                state_version,
                recorded_at,
            })
        })
        .collect()
}

fn thread_row(
    (id, head, created_at, updated_at, parent, parent_seq): ThreadTuple,
) -> Result<ThreadRow, StoreError> {
    let head = from_db(&id, "thread head", head)?;
    let parent = match (parent, parent_seq) {
        (Some(parent), Some(seq)) => Some((parent, from_db(&id, "fork point", seq)?)),
        _ => None,
    };
    Ok(ThreadRow {
        id,
        head,
        created_at,
        updated_at,
        parent,
    })
}

#[cfg(feature = "sqlite")]
mod sqlite {
    use super::*;
    use futures::TryStreamExt;

    impl Sqlite {
        /// `append` answered before its commit, on a file's writer
        /// (`SqliteHot::append_early`); `None` without one (an in-memory
        /// database): the caller appends as usual.
        pub(crate) async fn append_early(
            &self,
            thread: &str,
            step: &StepRow,
            announce: impl FnOnce() -> Box<dyn FnOnce() + Send>,
        ) -> Option<Result<(Appended, crate::backend::Committing), StoreError>> {
            let hot = self.hot.as_ref()?;
            Some(hot.append_early(thread, step, announce()).await)
        }
    }

    sql_backend! {
        /// SQLite through sqlx: one file, WAL mode, `synchronous = FULL`.
        Sqlite, sqlx::Sqlite, sqlx::SqlitePool,
        // IMMEDIATE takes the write lock up front (waiting for it under the
        // busy timeout) instead of failing when a read upgrades to a write.
        // Reads: sqlx's own `BEGIN` (deferred), see `begin_read`.
        write = "BEGIN IMMEDIATE", read = None, lock = None::<&str>,
        // SQLite has one writer at a time, and a writer waiting for the
        // lock sleeps and polls: under contention one can wait seconds
        // while others come and go. Queueing this process's writers keeps
        // the order fair; other processes still wait on the lock.
        queue_writes = true,
        // One connection of its own for the writes: see `write_pool`.
        write_pool = write_pool,
        // The writes of every run and step on a thread of their own, many
        // writers' in one commit: see `sqlite_writer.rs`.
        hot = crate::backend::sqlite_hot::SqliteHot,
        make_hot = make_hot,
        write_tx = write_tx,
        // Ids compare bytewise already (BINARY).
        collate = "",
        // The whole append in one call: see `APPEND_IN_ONE_CALL`.
        append_in_one_call = append_in_one_call,
        // Other processes' watchers poll `PRAGMA data_version` instead
        // (see `watched_heads`).
        move_head = MOVE_HEAD,
        delete_thread = DELETE_THREAD,
        create_fork = CREATE_FORK,
        // BEGIN IMMEDIATE holds the write lock already.
        lock_head = SELECT_HEAD,
        rewind_head = REWIND_HEAD,
        rewind_columns = SQLITE_REWIND_COLUMNS,
        without_rowid = SQLITE_WITHOUT_ROWID,
        item_tables = crate::backend::sql_items::SQLITE_ITEM_TABLES,
        run_base = crate::backend::sql_runs::SQLITE_RUN_BASE,
        dialect = crate::backend::sql_items::Dialect::Sqlite,
        // BEGIN IMMEDIATE serializes claims and transitions already.
        claim = crate::backend::sql_runs::CLAIM_RUN_SQLITE,
        run_state = crate::backend::sql_runs::RUN_STATE_SQLITE,
        record = crate::backend::sql_runs::SELECT_RECORD,
        // Other processes' workers are not woken (the serving process
        // runs its own).
        notify = false
    }

    /// The pool the store writes through: for a database file, a pool of
    /// its own with one connection, opened with `pool`'s options; for an
    /// in-memory database (which no other connection can open), `pool`.
    ///
    /// The store's writes queue anyway (`queue_writes`); on one connection
    /// they also find their pages in its cache. Spread over a pool's
    /// connections (sqlx hands the idle ones out in turn), each write was
    /// on a connection that another had written since it was last used,
    /// which SQLite answers by emptying its page cache and reading the
    /// pages again: a step cost 1.5-1.8x a bare commit of its row, and is
    /// within 1.2x of it on one connection (BENCHMARKS.md, section 7).
    pub(super) async fn write_pool(pool: &sqlx::SqlitePool) -> sqlx::SqlitePool {
        if database_file(pool).await.is_none() {
            return pool.clone();
        }
        sqlx::sqlite::SqlitePoolOptions::new()
            .max_connections(1)
            .min_connections(0)
            // Kept open: a new connection starts with an empty cache.
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_lazy_with((*pool.connect_options()).clone())
    }

    /// Puts `pool`'s database in WAL mode, trying again for up to
    /// `patience` while another connection holds the lock the switch
    /// needs: SQLite answers "database is locked" at once there, whatever
    /// the busy timeout (two processes opening a new file together). Once
    /// in WAL mode the file stays so, and asking again takes no such lock.
    pub(crate) async fn enter_wal(
        pool: &sqlx::SqlitePool,
        patience: std::time::Duration,
    ) -> Result<(), sqlx::Error> {
        let deadline = tokio::time::Instant::now() + patience;
        let mut pause = std::time::Duration::from_millis(1);
        loop {
            let tried: Result<String, sqlx::Error> =
                sqlx::query_scalar("PRAGMA journal_mode = WAL")
                    .fetch_one(pool)
                    .await;
            match tried {
                Err(sqlx::Error::Database(error))
                    if is_busy(error.as_ref()) && tokio::time::Instant::now() < deadline =>
                {
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(std::time::Duration::from_millis(50));
                }
                other => return other.map(|_mode| ()),
            }
        }
    }

    /// SQLite's `SQLITE_BUSY`, or one of its extended codes.
    fn is_busy(error: &dyn sqlx::error::DatabaseError) -> bool {
        const SQLITE_BUSY: i32 = 5;
        error
            .code()
            .and_then(|code| code.parse::<i32>().ok())
            .is_some_and(|code| code & 0xff == SQLITE_BUSY)
    }

    /// The file behind `pool`'s database; `None` for an in-memory one
    /// (or when it cannot be read).
    pub(crate) async fn database_file(pool: &sqlx::SqlitePool) -> Option<String> {
        let file: Option<String> =
            sqlx::query_scalar("SELECT file FROM pragma_database_list WHERE name = 'main'")
                .fetch_all(pool)
                .await
                .ok()
                .and_then(|mut files| files.pop());
        file.filter(|file| !file.is_empty())
    }

    /// A database file's own connections for the writes and reads of
    /// every run and step (`sqlite_hot.rs`), with the pragmas of `writes`'
    /// connection (the durability of a commit is the pool's); none for an
    /// in-memory database, which no other connection can open.
    pub(super) async fn make_hot(
        pool: &sqlx::SqlitePool,
        writes: &sqlx::SqlitePool,
    ) -> Result<Option<crate::backend::sqlite_hot::SqliteHot>, StoreError> {
        let Some(file) = database_file(pool).await else {
            return Ok(None);
        };
        let (synchronous, busy_timeout, foreign_keys): (i64, i64, bool) = sqlx::query_as(
            "SELECT (SELECT synchronous FROM pragma_synchronous), \
             (SELECT timeout FROM pragma_busy_timeout), \
             (SELECT foreign_keys FROM pragma_foreign_keys)",
        )
        .fetch_one(writes)
        .await
        .map_err(db_error(
            "reading the write connection's pragmas".to_owned(),
        ))?;
        let pragmas = crate::backend::sqlite_writer::Pragmas {
            synchronous,
            // In milliseconds, never negative (SQLite stores it so).
            busy_timeout: std::time::Duration::from_millis(
                u64::try_from(busy_timeout).unwrap_or(0),
            ),
            foreign_keys,
        };
        crate::backend::sqlite_hot::SqliteHot::open(&file, pragmas).map(Some)
    }

    /// A write through sqlx: on a database file, in a turn the writer
    /// gave (its thread waits meanwhile); in memory, a transaction of its
    /// own after this process's earlier writers.
    pub(crate) struct SqliteWrite {
        tx: sqlx::Transaction<'static, sqlx::Sqlite>,
        /// Dropped after `tx` (fields drop in order): the writer goes on
        /// once this write is over.
        _turn: Option<crate::backend::sqlite_writer::Turn>,
    }

    impl std::ops::Deref for SqliteWrite {
        type Target = sqlx::SqliteConnection;

        fn deref(&self) -> &sqlx::SqliteConnection {
            &self.tx
        }
    }

    impl std::ops::DerefMut for SqliteWrite {
        fn deref_mut(&mut self) -> &mut sqlx::SqliteConnection {
            &mut self.tx
        }
    }

    impl WriteTx for SqliteWrite {
        async fn commit(self) -> Result<(), sqlx::Error> {
            let SqliteWrite { tx, _turn } = self;
            tx.commit().await
        }
    }

    /// Begins a write (see [`SqliteWrite`]).
    pub(super) async fn write_tx(
        writes: &sqlx::SqlitePool,
        hot: Option<&crate::backend::sqlite_hot::SqliteHot>,
        begin: &'static str,
    ) -> Result<SqliteWrite, sqlx::Error> {
        let turn = match hot {
            Some(hot) => Some(hot.writer.turn().await?),
            None => None,
        };
        // In a task of its own: `begin_with` cut after its `BEGIN` ran
        // (see `begin_read`) would leave the write connection in a
        // transaction; a spawned begin ends, and a transaction no one
        // took rolls back as it drops.
        let tx = super::begin_uncut(writes, begin).await?;
        Ok(SqliteWrite { tx, _turn: turn })
    }

    /// Appends `step` in one call (`APPEND_IN_ONE_CALL`): `Some` of the
    /// rows it inserted, 1 or 0 (the head was not at `step.seq - 1`).
    pub(super) async fn append_in_one_call(
        writes: &sqlx::SqlitePool,
        thread: &str,
        step: &StepRow,
    ) -> Option<Result<u64, sqlx::Error>> {
        Some(append_once(writes, thread, step).await)
    }

    async fn append_once(
        writes: &sqlx::SqlitePool,
        thread: &str,
        step: &StepRow,
    ) -> Result<u64, sqlx::Error> {
        let mut conn = RollBackUnlessDone(Some(writes.acquire().await?));
        let Some(open) = conn.0.as_mut() else {
            unreachable!("set just above");
        };
        let query = sqlx::query(APPEND_IN_ONE_CALL)
            .bind(thread)
            .bind(to_db(step.seq))
            .bind(step.recorded_at)
            .bind(to_db(step.seq - 1))
            .bind(&step.kind)
            .bind(&step.body)
            .bind(&step.metadata)
            .bind(step.state_version);
        // One result per statement, in order; the `INSERT`'s (the third)
        // counts the rows it added. (`execute` would add up every
        // statement's, and SQLite reports the last `INSERT`'s count again
        // for `BEGIN` and `COMMIT`.)
        let mut results = sqlx::Executor::fetch_many(&mut **open, query);
        let mut inserted = 0;
        let mut statement = 0;
        while let Some(result) = results.try_next().await? {
            if let sqlx::Either::Left(done) = result {
                if statement == 2 {
                    inserted = done.rows_affected();
                }
                statement += 1;
            }
        }
        drop(results);
        if statement != 4 {
            // Not reached: SQLite runs the statements in turn, or errs.
            return Err(sqlx::Error::Protocol(format!(
                "the append ran {statement} of its 4 statements"
            )));
        }
        conn.done();
        Ok(inserted)
    }

    /// A write connection running `APPEND_IN_ONE_CALL`, whose transaction
    /// sqlx does not know of: if the call fails or is dropped (cancelled)
    /// between its `BEGIN` and its `COMMIT`, sqlx's worker stops there and
    /// the transaction stays open, holding the database's write lock.
    /// Unless [`done`](Self::done), dropping this rolls it back before the
    /// connection is used again (a `ROLLBACK` with nothing open fails
    /// harmlessly); without a runtime to run that on, the connection is
    /// closed instead, which rolls back too.
    struct RollBackUnlessDone(Option<sqlx::pool::PoolConnection<sqlx::Sqlite>>);

    impl RollBackUnlessDone {
        /// The transaction ended: the connection goes back as it is.
        fn done(mut self) {
            drop(self.0.take());
        }
    }

    impl Drop for RollBackUnlessDone {
        fn drop(&mut self) {
            let Some(mut conn) = self.0.take() else {
                return;
            };
            match tokio::runtime::Handle::try_current() {
                // The pool gets the connection back after the rollback.
                Ok(runtime) => {
                    runtime.spawn(async move {
                        let _ = sqlx::query("ROLLBACK").execute(&mut *conn).await;
                    });
                }
                Err(_) => conn.close_on_drop(),
            }
        }
    }

    /// Changes to the database committed by any other connection (this
    /// process's pool included) since the last call on `conn`.
    pub(crate) async fn data_version(conn: &mut sqlx::SqliteConnection) -> Result<i64, StoreError> {
        let (version,): (i64,) = sqlx::query_as("PRAGMA data_version")
            .fetch_one(conn)
            .await
            .map_err(db_error("reading the database's data_version".to_owned()))?;
        Ok(version)
    }

    /// The head, creation time and rewind count of each of `threads` that
    /// exists, in one statement.
    pub(crate) async fn watched_heads(
        conn: &mut sqlx::SqliteConnection,
        threads: &[String],
    ) -> Result<Vec<(String, u64, i64, i64)>, StoreError> {
        let ids = serde_json::to_string(threads).unwrap_or_else(|_| "[]".to_owned());
        let rows: Vec<(String, i64, i64, i64)> = sqlx::query_as(
            "SELECT thread_id, head, created_at, rewinds FROM state_store_threads \
             WHERE thread_id IN (SELECT value FROM json_each($1))",
        )
        .bind(ids)
        .fetch_all(conn)
        .await
        .map_err(db_error("reading the heads of watched threads".to_owned()))?;
        rows.into_iter()
            .map(|(id, head, created_at, rewinds)| {
                let head = from_db(&id, "thread head", head)?;
                Ok((id, head, created_at, rewinds))
            })
            .collect()
    }
}

#[cfg(feature = "postgres")]
mod postgres {
    use super::*;

    /// PostgreSQL's writes go through the store's pool, many at once.
    async fn same_pool(pool: &sqlx::PgPool) -> sqlx::PgPool {
        pool.clone()
    }

    /// PostgreSQL appends in a transaction: its driver runs several
    /// statements in one call only without parameters.
    async fn no_hot_path(
        _: &sqlx::PgPool,
        _: &sqlx::PgPool,
    ) -> Result<Option<crate::backend::hot_path::NoHotPath>, StoreError> {
        Ok(None)
    }

    /// A write transaction of its own.
    async fn write_tx(
        writes: &sqlx::PgPool,
        _: Option<&crate::backend::hot_path::NoHotPath>,
        begin: &'static str,
    ) -> Result<sqlx::Transaction<'static, sqlx::Postgres>, sqlx::Error> {
        super::begin_uncut(writes, begin).await
    }

    async fn no_one_call(
        _: &sqlx::PgPool,
        _: &str,
        _: &StepRow,
    ) -> Option<Result<u64, sqlx::Error>> {
        None
    }

    sql_backend! {
        /// PostgreSQL through sqlx: many workers, many machines.
        Postgres, sqlx::Postgres, sqlx::PgPool,
        write = "BEGIN",
        // One snapshot for the head, the snapshot row and the steps, so a
        // concurrent compaction cannot remove steps between the reads.
        read = Some("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"),
        // CREATE TABLE IF NOT EXISTS races between sessions in PostgreSQL.
        lock = Some("SELECT pg_advisory_xact_lock(7217347781021533)"),
        // Row locks queue PostgreSQL's writers already.
        queue_writes = false,
        // Writes on the pool, many at once.
        write_pool = same_pool,
        // Each write commits on its own: the server commits many at once.
        hot = crate::backend::hot_path::NoHotPath,
        make_hot = no_hot_path,
        write_tx = write_tx,
        // Ids compared bytewise, as SQLite and the memory backend do,
        // whatever the database's collation.
        collate = " COLLATE \"C\"",
        // `MOVE_HEAD_NOTIFY`, then `INSERT_STEP`, in a transaction.
        append_in_one_call = no_one_call,
        // Other processes' watchers listen on NOTIFY_CHANNEL.
        move_head = MOVE_HEAD_NOTIFY,
        delete_thread = DELETE_THREAD_NOTIFY,
        create_fork = CREATE_FORK_NOTIFY,
        lock_head = SELECT_HEAD_FOR_UPDATE,
        rewind_head = REWIND_HEAD_NOTIFY,
        rewind_columns = POSTGRES_REWIND_COLUMNS,
        // Its tables have no rowid.
        without_rowid = [],
        item_tables = crate::backend::sql_items::POSTGRES_ITEM_TABLES,
        run_base = crate::backend::sql_runs::POSTGRES_RUN_BASE,
        dialect = crate::backend::sql_items::Dialect::Postgres,
        claim = crate::backend::sql_runs::CLAIM_RUN_POSTGRES,
        run_state = crate::backend::sql_runs::RUN_STATE_POSTGRES,
        record = crate::backend::sql_runs::SELECT_RECORD_FOR_UPDATE,
        // Workers and stream readers in other processes listen.
        notify = true
    }
}

#[cfg(feature = "postgres")]
pub(crate) use postgres::Postgres;
#[cfg(feature = "sqlite")]
pub(crate) use sqlite::{Sqlite, data_version, database_file, enter_wal, watched_heads};

#[cfg(all(test, feature = "sqlite"))]
mod sqlite_tests {
    use super::*;
    use crate::backend::sqlite_writer::Written;
    use sqlx::sqlite::{
        SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous,
    };

    /// The writer's connection is as durable as the pool's, and waits for
    /// the lock as long.
    #[tokio::test]
    async fn the_writers_connection_has_the_pools_pragmas() {
        let dir = tempfile::tempdir().unwrap();
        for (synchronous, level, timeout) in [
            (SqliteSynchronous::Full, 2, 1234),
            (SqliteSynchronous::Normal, 1, 50),
        ] {
            let options = SqliteConnectOptions::new()
                .filename(dir.path().join(format!("pragmas-{level}.db")))
                .create_if_missing(true)
                .journal_mode(SqliteJournalMode::Wal)
                .synchronous(synchronous)
                .busy_timeout(std::time::Duration::from_millis(timeout));
            let pool = SqlitePoolOptions::new()
                .connect_with(options)
                .await
                .unwrap();
            let backend = Sqlite::new(pool).await.unwrap();
            let hot = backend.hot.clone().expect("a file has its own connections");
            let read = hot
                .writer
                .write(|conn| {
                    let pragma = |name: &str| -> Result<i64, StoreError> {
                        conn.query_row(&format!("PRAGMA {name}"), [], |row| row.get(0))
                            .map_err(|error| StoreError::backend(name.to_owned(), error))
                    };
                    Ok(Written::Undo((
                        pragma("synchronous")?,
                        pragma("busy_timeout")?,
                        pragma("foreign_keys")?,
                        pragma("wal_autocheckpoint")?,
                    )))
                })
                .await
                .unwrap();
            assert_eq!(read, (level, timeout as i64, 1, 10_000));
        }
    }

    /// A tail longer than a read on the calling thread may take is read
    /// through the pool, whole and in order; a short one on the thread.
    #[tokio::test]
    async fn a_long_tail_is_read_through_the_pool() {
        use crate::backend::hot_path::{HotPath, Tail};
        let dir = tempfile::tempdir().unwrap();
        let options = SqliteConnectOptions::new()
            .filename(dir.path().join("tail.db"))
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal);
        let pool = SqlitePoolOptions::new()
            .connect_with(options)
            .await
            .unwrap();
        let backend = Sqlite::new(pool).await.unwrap();
        let hot = backend.hot.clone().expect("a file has its own connections");
        let steps = super::super::sqlite_hot::MAX_INLINE_STEPS as u64 + 2;
        for thread in ["short", "long"] {
            backend.open(thread, 0).await.unwrap();
        }
        for seq in 1..=steps {
            for thread in ["short", "long"] {
                if thread == "short" && seq > 3 {
                    continue;
                }
                let step = StepRow {
                    seq,
                    kind: "apply".to_owned(),
                    body: format!("{{\"n\": {seq}}}"),
                    metadata: "{}".to_owned(),
                    state_version: 1,
                    recorded_at: 0,
                };
                backend.append(thread, &step).await.unwrap();
            }
        }
        assert!(matches!(
            hot.read_tail("short", None, true).unwrap(),
            Tail::Read(Some(tail)) if tail.steps.len() == 3
        ));
        assert!(matches!(
            hot.read_tail("long", None, true).unwrap(),
            Tail::TooLong
        ));
        // Up to a step near enough the start, on the thread again.
        assert!(matches!(
            hot.read_tail("long", Some(10), false).unwrap(),
            Tail::Read(Some(tail)) if tail.steps.len() == 10
        ));
        let tail = backend
            .load_latest("long")
            .await
            .unwrap()
            .expect("the thread");
        let seqs: Vec<u64> = tail.steps.iter().map(|step| step.seq).collect();
        assert_eq!(seqs, (1..=steps).collect::<Vec<_>>());
        assert_eq!(tail.head, steps);
        assert_eq!(
            tail.last.map(|last| last.body),
            Some(format!("{{\"n\": {steps}}}"))
        );
    }

    /// An in-memory database (no other connection can open it) has none.
    #[tokio::test]
    async fn an_in_memory_database_has_no_connections_of_its_own() {
        let pool = sqlx::SqlitePool::connect("sqlite::memory:").await.unwrap();
        assert!(Sqlite::new(pool).await.unwrap().hot.is_none());
    }
}

#[cfg(all(test, feature = "postgres"))]
mod tests {
    use super::*;

    #[test]
    fn notifying_statements_are_the_shared_ones_plus_the_notice() {
        let notice = |seq: &str| {
            format!(
                " RETURNING pg_notify('{NOTIFY_CHANNEL}', json_build_object('thread', thread_id, 'seq', {seq})::text)"
            )
        };
        assert_eq!(MOVE_HEAD_NOTIFY, format!("{MOVE_HEAD}{}", notice("head")));
        assert_eq!(
            CREATE_FORK_NOTIFY,
            format!("{CREATE_FORK}{}", notice("head"))
        );
        let rewound = " RETURNING pg_notify('state_store_steps', json_build_object('thread', thread_id, 'seq', head, 'rewound', true)::text)";
        assert_eq!(REWIND_HEAD_NOTIFY, format!("{REWIND_HEAD}{rewound}"));
        assert_eq!(DELETE_THREAD_NOTIFY[..2], DELETE_THREAD[..2]);
        assert_eq!(
            DELETE_THREAD_NOTIFY[2],
            format!("{}{}", DELETE_THREAD[2], notice("0"))
        );
    }
}
