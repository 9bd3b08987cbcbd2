//! The SQL of runs, their stream events and thread records (schema
//! versions 4, 5 and 9), for both SQL backends: one text per statement, the two databases
//! differing only in the row lock a claim or a transition takes
//! (PostgreSQL's `FOR UPDATE`; SQLite's `BEGIN IMMEDIATE` has the whole
//! database already) and in `NOTIFY`. The methods that run them are in
//! `sql_run_methods.rs`.
//!
//! A transaction that changes both a thread record and runs locks the
//! record first (PostgreSQL), so two of them never wait for each other in
//! a cycle; a claim locks only its run.
//!
//! Times are microseconds since the Unix epoch, JSON is stored as text,
//! statuses by their lowercase names.

/// The thread records' table, `$create` (its `CREATE TABLE` and name)
/// followed by `$options`: version 4's, and SQLite's rebuild of it at
/// version 10 (`WITHOUT ROWID`), from one list of columns.
macro_rules! thread_records_table {
    ($create:literal, $options:literal) => {
        concat!(
            $create,
            " (
        thread_id TEXT PRIMARY KEY,
        metadata TEXT NOT NULL,
        status TEXT NOT NULL,
        owner TEXT,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL
    )",
            $options
        )
    };
}
pub(crate) use thread_records_table;

/// The tables and indexes of version 4, the same in both databases.
pub(crate) const RUN_TABLES: [&str; 7] = [
    "CREATE TABLE IF NOT EXISTS state_store_runs (
        run_id TEXT PRIMARY KEY,
        thread_id TEXT,
        assistant_id TEXT NOT NULL,
        status TEXT NOT NULL,
        metadata TEXT NOT NULL,
        kwargs TEXT NOT NULL,
        multitask_strategy TEXT NOT NULL,
        attempt BIGINT NOT NULL,
        available_at BIGINT NOT NULL,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        owner TEXT,
        lease_owner TEXT,
        lease_expires_at BIGINT,
        cancel_action TEXT,
        last_seq BIGINT NOT NULL
    )",
    // The rule "one running run per thread" held by the database itself:
    // two claims racing for one thread's runs cannot both commit.
    // (Stateless runs have no thread: NULLs are distinct.)
    "CREATE UNIQUE INDEX IF NOT EXISTS state_store_runs_one_running \
     ON state_store_runs (thread_id) WHERE status = 'running'",
    "CREATE INDEX IF NOT EXISTS state_store_runs_by_thread \
     ON state_store_runs (thread_id, created_at)",
    "CREATE INDEX IF NOT EXISTS state_store_runs_due \
     ON state_store_runs (status, available_at)",
    "CREATE TABLE IF NOT EXISTS state_store_run_events (
        run_id TEXT NOT NULL,
        seq BIGINT NOT NULL,
        event TEXT NOT NULL,
        data TEXT NOT NULL,
        recorded_at BIGINT NOT NULL,
        PRIMARY KEY (run_id, seq)
    )",
    thread_records_table!("CREATE TABLE IF NOT EXISTS state_store_thread_records", ""),
    "CREATE INDEX IF NOT EXISTS state_store_thread_records_by_status \
     ON state_store_thread_records (status)",
];

/// Version 5: a run keeps its thread's head at its first claim, so that a
/// worker taking it over knows whether it wrote steps. (PostgreSQL can
/// say `IF NOT EXISTS`, for a database whose recorded version was set
/// back; SQLite cannot.)
#[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
pub(crate) const SQLITE_RUN_BASE: [&str; 1] =
    ["ALTER TABLE state_store_runs ADD COLUMN base_seq BIGINT"];
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) const POSTGRES_RUN_BASE: [&str; 1] =
    ["ALTER TABLE state_store_runs ADD COLUMN IF NOT EXISTS base_seq BIGINT"];

/// Version 9, the same in both databases: the indexes a run's or a
/// thread's status change moves across, kept to the rows that are looked
/// up by them. A claim looks for pending runs by their time and for
/// running runs by their lease's end, never for ended ones, which
/// version 4's `(status, available_at)` kept too (each run's end moved
/// its entry to the ended runs' end of the index, one more page a
/// commit). Threads are never looked up by an idle status (a search by
/// status reads the records in their order), so only the others are
/// indexed. The claim's and `NEXT_DUE`'s conditions name the statuses as
/// the indexes do, which is what lets both databases use them.
pub(crate) const PARTIAL_INDEXES: [&str; 5] = [
    "DROP INDEX IF EXISTS state_store_runs_due",
    "CREATE INDEX IF NOT EXISTS state_store_runs_pending \
     ON state_store_runs (available_at) WHERE status = 'pending'",
    "CREATE INDEX IF NOT EXISTS state_store_runs_leases \
     ON state_store_runs (lease_expires_at) WHERE status = 'running'",
    "DROP INDEX IF EXISTS state_store_thread_records_by_status",
    "CREATE INDEX IF NOT EXISTS state_store_thread_records_unsettled \
     ON state_store_thread_records (status) WHERE status <> 'idle'",
];

/// The PostgreSQL channel on which run changes are announced, for
/// workers and stream readers in other processes. The payload is
/// `{"run": id or null, "queue": bool}`: ids only (see [`notice`]).
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) const RUNS_CHANNEL: &str = "state_store_runs";

/// A notice's payload: `run`'s row changed (its status, a cancel, its
/// lease's holder), and/or a run may have become claimable (`queue`).
/// Ids are at most 512 bytes: far below NOTIFY's 8000.
pub(crate) fn notice(run: Option<&str>, queue: bool) -> String {
    serde_json::json!({ "run": run, "queue": queue }).to_string()
}

/// A notice that `run`'s events grew (its row did not change otherwise):
/// what wakes stream readers, not those waiting for its status.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) fn events_notice(run: &str) -> String {
    serde_json::json!({ "run": run, "queue": false, "events": true }).to_string()
}

macro_rules! run_columns {
    () => {
        "run_id, thread_id, assistant_id, status, metadata, kwargs, multitask_strategy, \
         attempt, available_at, created_at, updated_at, owner, cancel_action, base_seq"
    };
}

/// The columns of [`RUN_COLUMNS`], as read.
pub(crate) type RunTuple = (
    String,
    Option<String>,
    String,
    String,
    String,
    String,
    String,
    i64,
    i64,
    i64,
    i64,
    Option<String>,
    Option<String>,
    Option<i64>,
);

pub(crate) fn run_row(t: RunTuple) -> super::runs::RunRow {
    super::runs::RunRow {
        run_id: t.0,
        thread_id: t.1,
        assistant_id: t.2,
        status: t.3,
        metadata: t.4,
        kwargs: t.5,
        multitask_strategy: t.6,
        attempt: t.7,
        available_at: t.8,
        created_at: t.9,
        updated_at: t.10,
        owner: t.11,
        cancel_action: t.12,
        base_seq: t.13,
    }
}

pub(crate) const INSERT_RUN: &str = concat!(
    "INSERT INTO state_store_runs (",
    run_columns!(),
    ", last_seq) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, NULL, 0) \
     ON CONFLICT (run_id) DO NOTHING"
);
pub(crate) const SELECT_RUN: &str = concat!(
    "SELECT ",
    run_columns!(),
    " FROM state_store_runs WHERE run_id = $1"
);
/// Whether run `$1` exists (a SQLite file's creation looks before it
/// changes a row).
#[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
pub(crate) const RUN_EXISTS: &str = "SELECT 1 FROM state_store_runs WHERE run_id = $1";
/// The runs of a thread (`$1`), newest first, by status (`$2`) and owner
/// (`$3`) when given; `LIMIT $4 OFFSET $5`.
pub(crate) const LIST_THREAD_RUNS: &str = concat!(
    "SELECT ",
    run_columns!(),
    " FROM state_store_runs WHERE thread_id = $1 AND ($2 IS NULL OR status = $2) \
     AND ($3 IS NULL OR owner = $3) ORDER BY created_at DESC, run_id DESC LIMIT $4 OFFSET $5"
);
/// The same for stateless runs (no thread; `$1` unused but bound, so the
/// placeholders stay those of `LIST_THREAD_RUNS`).
pub(crate) const LIST_STATELESS_RUNS: &str = concat!(
    "SELECT ",
    run_columns!(),
    " FROM state_store_runs WHERE thread_id IS NULL AND ($1 IS NULL OR $1 = '') \
     AND ($2 IS NULL OR status = $2) \
     AND ($3 IS NULL OR owner = $3) ORDER BY created_at DESC, run_id DESC LIMIT $4 OFFSET $5"
);

/// A claim (`$1` worker, `$2` now, `$3` lease end): the oldest due run
/// whose thread runs nothing else and which is its thread's oldest
/// pending run (or a running run whose lease ended: it keeps its
/// thread's place), taken in one statement. The second condition keeps a
/// thread's runs in order: a claimer that skips the oldest (locked by
/// another claimer) must not take the next one instead. `{lock}` is
/// PostgreSQL's `FOR UPDATE SKIP LOCKED`: concurrent claimers skip the
/// row another is taking instead of waiting for it. The outer condition
/// checks the row again as it is when updated.
/// Run `r`'s turn on its thread: it has none, or it is the running run
/// (its lease ended: it keeps its place), or its thread runs nothing and
/// no older run of it waits. A claim's condition besides being due.
macro_rules! thread_turn {
    () => {
        "(r.thread_id IS NULL OR r.status = 'running' OR (NOT EXISTS (\
             SELECT 1 FROM state_store_runs o \
             WHERE o.thread_id = r.thread_id AND o.status = 'running') \
         AND NOT EXISTS (\
             SELECT 1 FROM state_store_runs p \
             WHERE p.thread_id = r.thread_id AND p.status = 'pending' \
             AND (p.available_at, p.created_at, p.run_id) \
                 < (r.available_at, r.created_at, r.run_id))))"
    };
}
macro_rules! claim_pick {
    ($now:literal, $lock:literal) => {
        claim_pick!($now, "1", $lock)
    };
    ($now:literal, $limit:literal, $lock:literal) => {
        concat!(
            "SELECT r.run_id FROM state_store_runs r \
                 WHERE ((r.status = 'pending' AND r.available_at <= ",
            $now,
            ") \
                     OR (r.status = 'running' AND r.lease_expires_at <= ",
            $now,
            ")) AND ",
            thread_turn!(),
            " ORDER BY r.available_at, r.created_at, r.run_id LIMIT ",
            $limit,
            $lock
        )
    };
}
/// A claim's `UPDATE` of the run `$run` names (`$1` worker, `$2` now, `$3`
/// lease end): taken, with its lease and its thread's head, if its row is
/// still claimable as it is when updated.
macro_rules! claim_update {
    ($run:expr) => {
        concat!(
            "UPDATE state_store_runs SET status = 'running', attempt = attempt + 1, \
             lease_owner = $1, lease_expires_at = $3, updated_at = $2, \
             base_seq = COALESCE(base_seq, (SELECT t.head FROM state_store_threads t \
                 WHERE t.thread_id = state_store_runs.thread_id), 0) \
             WHERE run_id = ",
            $run,
            " AND ((status = 'pending' AND available_at <= $2) \
                 OR (status = 'running' AND lease_expires_at <= $2)) \
             RETURNING ",
            run_columns!()
        )
    };
}
macro_rules! claim_run {
    ($lock:literal) => {
        claim_update!(concat!("(", claim_pick!("$2", $lock), ")"))
    };
}
/// The runs a claim would pick first, up to two: none, nothing to claim;
/// two, others are due besides the one claimed (their threads differ: a
/// thread's later runs wait for its first). A SQLite file's writer looks
/// in the claim's write, then claims the first with
/// [`CLAIM_PICKED_SQLITE`]; an in-memory SQLite database reads it first,
/// so that a claim finding nothing opens no write.
#[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
pub(crate) const CLAIM_PEEK: &str = claim_pick!("$1", "2", "");
#[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
pub(crate) const CLAIM_RUN_SQLITE: &str = claim_run!("");
/// The claim of run `$4`, which `CLAIM_PEEK` picked in the same write
/// transaction (a SQLite file's writer: nothing else writes between the
/// two, so the pick's conditions still hold; the row's own are checked
/// again all the same). One pick a claim, not two.
#[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
pub(crate) const CLAIM_PICKED_SQLITE: &str = claim_update!("$4");
/// The claim of run `$4`, created in the same write (a SQLite file's
/// writer, `Store::create_run_claimed`), if a claim would pick it: pending
/// and due, and its thread's turn (`thread_turn!`, as `claim_pick!`).
#[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
pub(crate) const CLAIM_CREATED_SQLITE: &str = claim_update!(concat!(
    "(SELECT r.run_id FROM state_store_runs r \
     WHERE r.run_id = $4 AND r.status = 'pending' AND r.available_at <= $2 AND ",
    thread_turn!(),
    ")"
));
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) const CLAIM_RUN_POSTGRES: &str = claim_run!(" FOR UPDATE SKIP LOCKED");

/// The lease of attempt `$3` held by worker `$2` on run `$1`.
macro_rules! fenced {
    () => {
        " WHERE run_id = $1 AND lease_owner = $2 AND attempt = $3 AND status = 'running'"
    };
}
pub(crate) const RENEW_RUN: &str = concat!(
    "UPDATE state_store_runs SET lease_expires_at = $5, updated_at = $4",
    fenced!(),
    " RETURNING cancel_action"
);
pub(crate) const FINISH_RUN: &str = concat!(
    "UPDATE state_store_runs SET status = $4, updated_at = $5, cancel_action = NULL, \
     lease_owner = NULL, lease_expires_at = NULL",
    fenced!(),
    " RETURNING thread_id"
);
pub(crate) const RELEASE_RUN: &str = concat!(
    "UPDATE state_store_runs SET status = 'pending', updated_at = $4, \
     lease_owner = NULL, lease_expires_at = NULL",
    fenced!()
);
/// The thread and base step of the run whose lease the fence holds, for
/// its rollback (PostgreSQL: `FOR UPDATE`, the run's row locked).
#[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
pub(crate) const FENCED_RUN_BASE: &str = concat!(
    "SELECT thread_id, base_seq FROM state_store_runs",
    fenced!()
);
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) const FENCED_RUN_BASE_FOR_UPDATE: &str = concat!(
    "SELECT thread_id, base_seq FROM state_store_runs",
    fenced!(),
    " FOR UPDATE"
);
/// Reserves `$4` sequence numbers for events; returns the last
/// (PostgreSQL: the run's row locked, so that a worker whose lease was
/// lost and the one that has it now never number two events alike).
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) const RESERVE_EVENTS: &str = concat!(
    "UPDATE state_store_runs SET last_seq = last_seq + $4",
    fenced!(),
    " RETURNING last_seq"
);
/// SQLite's numbering: the run's last event's number (0 before its
/// first), if the fence holds. SQLite's writes are one at a time, so
/// the events are numbered on from the stored ones; the run's row is
/// only read (`RESERVE_EVENTS` rewrote it, its arguments and all, for
/// every batch of events: a sixth of a run's instructions). `last_seq`
/// stays 0 on SQLite. A run's events are deleted only with the run or
/// once it ended, so a number is never given twice.
#[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
pub(crate) const FENCED_LAST_EVENT: &str = concat!(
    "SELECT (SELECT COALESCE(MAX(e.seq), 0) FROM state_store_run_events e \
     WHERE e.run_id = state_store_runs.run_id) FROM state_store_runs",
    fenced!()
);

/// How many events one `INSERT` writes at most (5 parameters each: far
/// below SQLite's and PostgreSQL's limits on parameters).
pub(crate) const EVENTS_PER_INSERT: usize = 200;

/// One `INSERT` of `rows` events (1 to [`EVENTS_PER_INSERT`]): for each,
/// run id, number, name, data and time, numbered `$1` on.
pub(crate) fn insert_events_sql(rows: usize) -> String {
    use std::fmt::Write as _;
    let mut sql = String::with_capacity(96 + rows * 32);
    sql.push_str(
        "INSERT INTO state_store_run_events (run_id, seq, event, data, recorded_at) VALUES ",
    );
    for row in 0..rows {
        let p = row * 5;
        if row > 0 {
            sql.push_str(", ");
        }
        let _ = write!(
            sql,
            "(${}, ${}, ${}, ${}, ${})",
            p + 1,
            p + 2,
            p + 3,
            p + 4,
            p + 5
        );
    }
    sql
}
pub(crate) const SELECT_EVENTS: &str = "SELECT seq, event, data, recorded_at FROM state_store_run_events \
     WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3";

/// The runs in flight on thread `$1`.
pub(crate) const INFLIGHT_RUNS: &str = "SELECT run_id, status FROM state_store_runs \
     WHERE thread_id = $1 AND status IN ('pending', 'running')";
pub(crate) const INTERRUPT_PENDING: &str = "UPDATE state_store_runs \
     SET status = 'interrupted', updated_at = $2 WHERE run_id = $1 AND status = 'pending'";
pub(crate) const REQUEST_CANCEL: &str = "UPDATE state_store_runs \
     SET cancel_action = $2, updated_at = $3 WHERE run_id = $1 AND status = 'running'";
pub(crate) const DELETE_RUN: [&str; 2] = [
    "DELETE FROM state_store_run_events WHERE run_id = $1",
    "DELETE FROM state_store_runs WHERE run_id = $1",
];
/// A run's status and thread, if `$2` (when not NULL) owns it; `{lock}`
/// as in [`CLAIM_RUN_POSTGRES`], without skipping.
macro_rules! run_state {
    ($lock:literal) => {
        concat!(
            "SELECT status, thread_id FROM state_store_runs \
             WHERE run_id = $1 AND ($2 IS NULL OR owner = $2)",
            $lock
        )
    };
}
#[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
pub(crate) const RUN_STATE_SQLITE: &str = run_state!("");
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) const RUN_STATE_POSTGRES: &str = run_state!(" FOR UPDATE");

/// The events of the runs that ended (neither pending nor running) and
/// last changed before `$1`.
pub(crate) const PRUNE_EVENTS: &str = "DELETE FROM state_store_run_events WHERE run_id IN \
     (SELECT run_id FROM state_store_runs \
      WHERE status NOT IN ('pending', 'running') AND updated_at < $1)";
/// When the next run becomes available and the next lease ends, after
/// `$1`: one statement (one round trip; a worker's dispatcher asks after
/// every wake-up).
pub(crate) const NEXT_DUE: &str = "SELECT \
     (SELECT MIN(available_at) FROM state_store_runs \
      WHERE status = 'pending' AND available_at > $1), \
     (SELECT MIN(lease_expires_at) FROM state_store_runs \
      WHERE status = 'running' AND lease_expires_at > $1)";

/// When the next run is due, from `NEXT_DUE`'s row: the earlier of the
/// next pending run's time and the next lease's end.
pub(crate) fn earliest_due((available, lease_end): (Option<i64>, Option<i64>)) -> Option<i64> {
    available.into_iter().chain(lease_end).min()
}

/// A thread's runs and their events (deleted with the thread).
pub(crate) const DELETE_THREAD_RUNS: [&str; 2] = [
    "DELETE FROM state_store_run_events WHERE run_id IN \
     (SELECT run_id FROM state_store_runs WHERE thread_id = $1)",
    "DELETE FROM state_store_runs WHERE thread_id = $1",
];
pub(crate) const DELETE_THREAD_RECORD: &str =
    "DELETE FROM state_store_thread_records WHERE thread_id = $1";

macro_rules! record_columns {
    () => {
        "thread_id, metadata, status, owner, created_at, updated_at"
    };
}
pub(crate) type RecordTuple = (String, String, String, Option<String>, i64, i64);

pub(crate) fn record_row(t: RecordTuple) -> super::runs::ThreadRecordRow {
    super::runs::ThreadRecordRow {
        thread_id: t.0,
        metadata: t.1,
        status: t.2,
        owner: t.3,
        created_at: t.4,
        updated_at: t.5,
    }
}

pub(crate) const INSERT_RECORD: &str = concat!(
    "INSERT INTO state_store_thread_records (",
    record_columns!(),
    ") VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (thread_id) DO NOTHING"
);
macro_rules! select_record {
    ($lock:literal) => {
        concat!(
            "SELECT ",
            record_columns!(),
            " FROM state_store_thread_records WHERE thread_id = $1",
            $lock
        )
    };
}
pub(crate) const SELECT_RECORD: &str = select_record!("");
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) const SELECT_RECORD_FOR_UPDATE: &str = select_record!(" FOR UPDATE");
pub(crate) const UPDATE_RECORD_METADATA: &str =
    "UPDATE state_store_thread_records SET metadata = $2, updated_at = $3 WHERE thread_id = $1";
/// A claimed run's thread is busy (it is already, unless its status was
/// set by hand since its runs were created).
pub(crate) const MARK_THREAD_BUSY: &str = "UPDATE state_store_thread_records \
     SET status = 'busy', updated_at = $2 WHERE thread_id = $1 AND status <> 'busy'";
/// A run's thread, read without a lock (it never changes): what a
/// transition locks first.
pub(crate) const RUN_THREAD: &str = "SELECT thread_id FROM state_store_runs WHERE run_id = $1";
pub(crate) const SET_THREAD_STATUS: &str =
    "UPDATE state_store_thread_records SET status = $2, updated_at = $3 WHERE thread_id = $1";
/// A thread's status once a run on it ended: `busy` while other runs are
/// in flight on it, else `$2` (LangGraph's `set_joint_status`).
pub(crate) const SETTLE_THREAD: &str = "UPDATE state_store_thread_records SET status = \
     CASE WHEN EXISTS (SELECT 1 FROM state_store_runs \
         WHERE thread_id = $1 AND status IN ('pending', 'running')) \
     THEN 'busy' ELSE CAST($2 AS TEXT) END, updated_at = $3 WHERE thread_id = $1 \
     RETURNING status";

/// The records of a scan: by status (`$1`) and owner (`$2`) when given,
/// ordered by `order_by` (one of three fixed column names, never input),
/// then the id (`collate`: bytewise in PostgreSQL, as in SQLite).
pub(crate) fn scan_records_sql(order_by: &str, descending: bool, collate: &str) -> String {
    let direction = if descending { "DESC" } else { "ASC" };
    let first = match order_by {
        "created_at" => "created_at, ",
        "updated_at" => "updated_at, ",
        _ => "",
    };
    let first = match first {
        "" => String::new(),
        column => column.replace(", ", &format!(" {direction}, ")),
    };
    format!(
        concat!(
            "SELECT ",
            record_columns!(),
            " FROM state_store_thread_records WHERE ($1 IS NULL OR status = $1) \
             AND ($2 IS NULL OR owner = $2) ORDER BY {}thread_id{} {}"
        ),
        first, collate, direction
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_differ_only_by_the_row_lock() {
        assert_eq!(
            CLAIM_RUN_POSTGRES,
            CLAIM_RUN_SQLITE.replacen("LIMIT 1", "LIMIT 1 FOR UPDATE SKIP LOCKED", 1)
        );
        assert!(CLAIM_RUN_SQLITE.ends_with("owner, cancel_action, base_seq"));
        // The peek picks as the claim does.
        assert!(
            CLAIM_RUN_SQLITE
                .contains(&CLAIM_PEEK.replace("$1", "$2").replace("LIMIT 2", "LIMIT 1"))
        );
        // The claim of a picked run sets what the claim sets, and checks
        // the row as the claim does, by its id instead of the pick.
        let (set, rest) = CLAIM_RUN_SQLITE.split_once(" WHERE run_id = (").unwrap();
        let check = rest.rsplit_once(") AND ").unwrap().1;
        assert_eq!(
            CLAIM_PICKED_SQLITE,
            format!("{set} WHERE run_id = $4 AND {check}")
        );
    }

    #[test]
    fn an_insert_of_events_numbers_its_parameters() {
        assert!(insert_events_sql(1).ends_with("VALUES ($1, $2, $3, $4, $5)"));
        assert!(insert_events_sql(2).ends_with("($1, $2, $3, $4, $5), ($6, $7, $8, $9, $10)"));
    }
}
