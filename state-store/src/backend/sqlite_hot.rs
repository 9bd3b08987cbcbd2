//! The writes and reads a SQLite store makes for every run and step
//! (`hot_path.rs`): the same statements, in the same order and with the
//! same outcomes, as the sqlx methods `sql_backend!` and `sql_runs!` stamp
//! out (which PostgreSQL, an in-memory SQLite database, and the rarer
//! writes and reads still run), but for a claim, which picks its run once,
//! inside its write, instead of on a reader and again in the write. Each
//! write is one closure run on the writer's thread (`sqlite_writer.rs`),
//! each read one run where it is asked (`sqlite_readers.rs`), instead of a
//! round trip to sqlx's thread per statement.

use super::hot_path::{HotPath, Tail};
use super::runs::{
    ClaimAtCreation, ClaimEvents, Created, Fence, NewRunRow, OnInflight, RunRow, ThreadRecordRow,
};
use super::sql::{
    INSERT_STEP, MOVE_HEAD, OPEN_THREAD, SELECT_HEAD, SELECT_SNAPSHOT, SELECT_STEP, SELECT_STEPS,
    SnapshotTuple, StepTuple, THREAD_EXISTS, from_db, snapshot_row, step_rows, to_db,
};
use super::sql_runs::*;
use super::sqlite_readers::Readers;
use super::sqlite_writer::{Committing, Pragmas, Writer, Written, bind};
use super::{Appended, LogTail, StepRow};
use crate::error::StoreError;
use rusqlite::{Connection, Row, ToSql};
use std::sync::Arc;

/// The most steps a thread's tail may have to be read on the calling
/// thread (an async runtime's, as a rule): a few milliseconds at most.
/// Under the default snapshot policy a tail is about a snapshot's size;
/// a longer one (snapshots off, or few) is read through sqlx's pool.
pub(super) const MAX_INLINE_STEPS: i64 = 512;

/// A SQLite file's own connections: its writer and its readers.
#[derive(Debug, Clone)]
pub(crate) struct SqliteHot {
    /// Where the writes go; the store's other writes take turns from it.
    pub writer: Writer,
    readers: Arc<Readers>,
}

impl SqliteHot {
    /// Opens the writer of `file` with `pragmas`; readers are opened as
    /// reads come.
    pub(crate) fn open(file: &str, pragmas: Pragmas) -> Result<SqliteHot, StoreError> {
        Ok(SqliteHot {
            writer: Writer::open(file, pragmas)?,
            readers: Arc::new(Readers::new(file, pragmas.busy_timeout)),
        })
    }

    /// Runs `read` (one statement) on a reader, its errors with `context`.
    fn read<T>(
        &self,
        context: impl FnOnce() -> String,
        read: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<T, StoreError> {
        self.readers.read(read).map_err(failed(context))
    }

    /// Runs `read`'s statements on a reader in one snapshot, its errors
    /// with `context`.
    fn read_together<T>(
        &self,
        context: impl FnOnce() -> String,
        read: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<T, StoreError> {
        self.readers.read_together(read).map_err(failed(context))
    }
}

impl SqliteHot {
    /// [`append`](HotPath::append), answered once the step is written in
    /// the writer's open group, before it commits (a thread's
    /// `Durability::Async`): its `Committing` says when it is durable, and
    /// `on_commit` runs then. Undone (a conflict), it commits nothing.
    pub(crate) async fn append_early(
        &self,
        thread: &str,
        step: &StepRow,
        on_commit: Box<dyn FnOnce() + Send>,
    ) -> Result<(Appended, Committing), StoreError> {
        let (thread, step) = (thread.to_owned(), step.clone());
        self.writer
            .write_early(move |conn| append_step(conn, &thread, &step), on_commit)
            .await
    }
}

/// A step appended if the thread's head is the step before it (the head
/// moved to it), else undone with the head found.
fn append_step(
    conn: &Connection,
    thread: &str,
    step: &StepRow,
) -> Result<Written<Appended>, StoreError> {
    let context = || format!("appending step {} to thread \"{thread}\"", step.seq);
    let (seq, before) = (to_db(step.seq), to_db(step.seq - 1));
    let moved = exec(
        conn,
        MOVE_HEAD,
        &[&thread, &seq, &step.recorded_at, &before],
    )
    .map_err(failed(context))?;
    if moved == 1 {
        exec(
            conn,
            INSERT_STEP,
            &[
                &thread,
                &seq,
                &step.kind,
                &step.body,
                &step.metadata,
                &step.state_version,
                &step.recorded_at,
            ],
        )
        .map_err(failed(context))?;
        return Ok(Written::Keep(Appended::Committed));
    }
    let head = first(conn, SELECT_HEAD, &[&thread], |row| row.get::<_, i64>(0))
        .map_err(failed(context))?;
    Ok(Written::Undo(match head {
        Some(head) => Appended::Conflict {
            stored: from_db(thread, "thread head", head)?,
        },
        None => Appended::NoThread,
    }))
}

/// Run `run_id`, just created, claimed for `claim.worker` if it is due (as
/// a claim picks it: its thread's turn), with what a claim writes
/// ([`claimed`]); `None`: it waits.
fn claim_created(
    conn: &Connection,
    run_id: &str,
    claim: &ClaimAtCreation,
    now: i64,
    context: &dyn Fn() -> String,
) -> Result<Option<RunRow>, StoreError> {
    let row = first(
        conn,
        CLAIM_CREATED_SQLITE,
        &[&claim.worker, &now, &claim.until, &run_id],
        run_of,
    )
    .map_err(failed(context))?;
    if let Some(row) = &row {
        claimed(conn, row, &claim.worker, &claim.events, now, context)?;
    }
    Ok(row)
}

/// What a claim writes besides the run's row, in its transaction: the
/// events made from the run as claimed, and its thread marked busy.
fn claimed(
    conn: &Connection,
    row: &RunRow,
    worker: &str,
    events: &ClaimEvents,
    now: i64,
    context: &dyn Fn() -> String,
) -> Result<(), StoreError> {
    let made = events(row)?;
    if !made.is_empty() {
        let fence = OwnedFence {
            run_id: row.run_id.clone(),
            worker: worker.to_owned(),
            attempt: row.attempt,
        };
        insert_events(conn, &fence, &made, now).map_err(failed(context))?;
    }
    if let Some(thread) = row.thread_id.as_deref() {
        exec(conn, MARK_THREAD_BUSY, &[&thread, &now]).map_err(failed(context))?;
    }
    Ok(())
}

/// A row read as the tuple of its columns (`RunTuple`, `StepTuple`, ...).
fn columns<T>(row: &Row<'_>) -> rusqlite::Result<T>
where
    T: for<'a> TryFrom<&'a Row<'a>, Error = rusqlite::Error>,
{
    T::try_from(row)
}

/// A fence, owned (it crosses to the writer's thread).
#[derive(Debug, Clone)]
pub(crate) struct OwnedFence {
    pub run_id: String,
    pub worker: String,
    pub attempt: i64,
}

impl From<super::runs::Fence<'_>> for OwnedFence {
    fn from(fence: super::runs::Fence<'_>) -> Self {
        OwnedFence {
            run_id: fence.run_id.to_owned(),
            worker: fence.worker.to_owned(),
            attempt: fence.attempt,
        }
    }
}

/// Runs `sql` with `values`: the rows it changed.
fn exec(conn: &Connection, sql: &str, values: &[&dyn ToSql]) -> rusqlite::Result<usize> {
    let mut statement = conn.prepare_cached(sql)?;
    bind(&mut statement, values)?;
    statement.raw_execute()
}

/// Runs `sql` with `values`: its first row, read by `read`, if any.
fn first<T>(
    conn: &Connection,
    sql: &str,
    values: &[&dyn ToSql],
    read: impl FnOnce(&Row<'_>) -> rusqlite::Result<T>,
) -> rusqlite::Result<Option<T>> {
    let mut statement = conn.prepare_cached(sql)?;
    bind(&mut statement, values)?;
    let mut rows = statement.raw_query();
    match rows.next()? {
        Some(row) => read(row).map(Some),
        None => Ok(None),
    }
}

/// Runs `sql` with `values`: every row, read by `read`.
fn all<T>(
    conn: &Connection,
    sql: &str,
    values: &[&dyn ToSql],
    mut read: impl FnMut(&Row<'_>) -> rusqlite::Result<T>,
) -> rusqlite::Result<Vec<T>> {
    let mut statement = conn.prepare_cached(sql)?;
    bind(&mut statement, values)?;
    let mut rows = statement.raw_query();
    let mut read_rows = Vec::new();
    while let Some(row) = rows.next()? {
        read_rows.push(read(row)?);
    }
    Ok(read_rows)
}

/// A run's row, as `RUN_COLUMNS` lists its columns.
fn run_of(row: &Row<'_>) -> rusqlite::Result<RunRow> {
    columns::<RunTuple>(row).map(run_row)
}

/// Appends `events` to the run `fence` holds, numbered after its last
/// stored (`FENCED_LAST_EVENT`): the new last number, `None` when the
/// fence no longer holds.
fn insert_events(
    conn: &Connection,
    fence: &OwnedFence,
    events: &[(String, String)],
    now: i64,
) -> rusqlite::Result<Option<i64>> {
    let stored = first(
        conn,
        FENCED_LAST_EVENT,
        &[&fence.run_id, &fence.worker, &fence.attempt],
        |row| row.get::<_, i64>(0),
    )?;
    let Some(mut seq) = stored else {
        return Ok(None);
    };
    for chunk in events.chunks(EVENTS_PER_INSERT) {
        let mut values: Vec<&dyn ToSql> = Vec::with_capacity(chunk.len() * 5);
        let numbers: Vec<i64> = (1..=chunk.len() as i64).map(|k| seq + k).collect();
        for ((event, data), number) in chunk.iter().zip(&numbers) {
            values.extend([&fence.run_id as &dyn ToSql, number, event, data, &now]);
        }
        exec(conn, &insert_events_sql(chunk.len()), &values)?;
        seq += chunk.len() as i64;
    }
    Ok(Some(seq))
}

/// `SETTLE_THREAD`: whether runs are still in flight on `thread` (also
/// when it has no record: not known).
fn settle_thread(
    conn: &Connection,
    thread: &str,
    otherwise: &str,
    now: i64,
) -> rusqlite::Result<bool> {
    let status = first(conn, SETTLE_THREAD, &[&thread, &otherwise, &now], |row| {
        row.get::<_, String>(0)
    })?;
    Ok(status.is_none_or(|status| status == "busy"))
}

/// A closure's error: the driver's, with what the store was doing.
fn failed(context: impl FnOnce() -> String) -> impl FnOnce(rusqlite::Error) -> StoreError {
    move |error| StoreError::backend(context(), error)
}

impl HotPath for SqliteHot {
    async fn open(&self, thread: &str, now: i64) -> Result<(), StoreError> {
        let context = || format!("opening thread \"{thread}\"");
        // A thread that exists is only read (every run's graph opens its
        // thread).
        let found = self.read(context, |conn| {
            first(conn, THREAD_EXISTS, &[&thread], |_| Ok(()))
        })?;
        if found.is_some() {
            return Ok(());
        }
        let thread = thread.to_owned();
        self.writer
            .write(move |conn| {
                exec(conn, OPEN_THREAD, &[&thread, &now])
                    .map_err(failed(|| format!("opening thread \"{thread}\"")))?;
                Ok(Written::Keep(()))
            })
            .await
    }

    fn read_tail(
        &self,
        thread: &str,
        upto: Option<u64>,
        with_last: bool,
    ) -> Result<Tail, StoreError> {
        let context = || format!("loading thread \"{thread}\"");
        // The rows in one snapshot of the database; decoded after.
        let read = self.read_together(context, |conn| {
            let Some(head) = first(conn, SELECT_HEAD, &[&thread], |row| row.get::<_, i64>(0))?
            else {
                return Ok(None);
            };
            let upto = match upto {
                Some(upto) => to_db(upto).min(head),
                None => head,
            };
            let snapshot = first(
                conn,
                SELECT_SNAPSHOT,
                &[&thread, &upto],
                columns::<SnapshotTuple>,
            )?;
            let from = snapshot.as_ref().map_or(1, |snapshot| snapshot.0 + 1);
            // Seqs only grow: at most `upto - from + 1` steps, known
            // before any is read.
            if upto - from >= MAX_INLINE_STEPS {
                return Ok(Some(None));
            }
            let steps = match from > upto {
                true => Vec::new(),
                false => all(
                    conn,
                    SELECT_STEPS,
                    &[&thread, &from, &upto],
                    columns::<StepTuple>,
                )?,
            };
            let last = match steps.last() {
                _ if !with_last || head == 0 => None,
                Some(last) if last.0 == head => None, // among the steps
                _ => first(conn, SELECT_STEP, &[&thread, &head], columns::<StepTuple>)?,
            };
            Ok(Some(Some((head, snapshot, steps, last))))
        })?;
        let (head, snapshot, steps, last) = match read {
            None => return Ok(Tail::Read(None)),
            Some(None) => return Ok(Tail::TooLong),
            Some(Some(read)) => read,
        };
        let head = from_db(thread, "thread head", head)?;
        let snapshot = snapshot.map(|row| snapshot_row(thread, row)).transpose()?;
        let steps = step_rows(thread, steps)?;
        let last = match last {
            Some(last) => step_rows(thread, vec![last])?.pop(),
            None if with_last && head != 0 => steps.last().filter(|step| step.seq == head).cloned(),
            None => None,
        };
        Ok(Tail::Read(Some(LogTail {
            head,
            snapshot,
            steps,
            last,
        })))
    }

    fn get_run(&self, run_id: &str) -> Result<Option<RunRow>, StoreError> {
        self.read(
            || format!("reading run \"{run_id}\""),
            |conn| first(conn, SELECT_RUN, &[&run_id], run_of),
        )
    }

    fn thread_record(&self, id: &str) -> Result<Option<ThreadRecordRow>, StoreError> {
        self.read(
            || format!("reading the record of thread \"{id}\""),
            |conn| {
                first(conn, SELECT_RECORD, &[&id], |row| {
                    columns::<RecordTuple>(row).map(record_row)
                })
            },
        )
    }

    fn next_run_due(&self, now: i64) -> Result<Option<i64>, StoreError> {
        let due = self.read(
            || "reading when the next run is due".to_owned(),
            |conn| {
                first(
                    conn,
                    NEXT_DUE,
                    &[&now],
                    columns::<(Option<i64>, Option<i64>)>,
                )
            },
        )?;
        Ok(due.and_then(earliest_due))
    }

    async fn append(&self, thread: &str, step: &StepRow) -> Result<Appended, StoreError> {
        let (thread, step) = (thread.to_owned(), step.clone());
        self.writer
            .write(move |conn| append_step(conn, &thread, &step))
            .await
    }

    async fn insert_thread_record(&self, row: &ThreadRecordRow) -> Result<bool, StoreError> {
        let row = row.clone();
        self.writer
            .write(move |conn| {
                let inserted = exec(
                    conn,
                    INSERT_RECORD,
                    &[
                        &row.thread_id,
                        &row.metadata,
                        &row.status,
                        &row.owner,
                        &row.created_at,
                        &row.updated_at,
                    ],
                )
                .map_err(failed(|| {
                    format!("creating the record of thread \"{}\"", row.thread_id)
                }))?;
                Ok(Written::Keep(inserted == 1))
            })
            .await
    }

    async fn create_run(&self, new: &NewRunRow<'_>) -> Result<Created, StoreError> {
        let run = new.row.clone();
        let create_thread = new.create_thread;
        let on_inflight = new.on_inflight;
        let now = new.now;
        let owner = new.owner.map(str::to_owned);
        let thread_metadata = new.thread_metadata.cloned();
        let claim = new.claim.clone();
        // Every refusal (the run exists, its thread is missing or busy)
        // comes before the first row changed (see `Writer::write`).
        self.writer
            .write(move |conn| {
                let context = || format!("creating run \"{}\"", run.run_id);
                let found =
                    first(conn, RUN_EXISTS, &[&run.run_id], |_| Ok(())).map_err(failed(context))?;
                if found.is_some() {
                    return Ok(Written::Undo(Created::Exists));
                }
                let mut touched = Vec::new();
                if let Some(thread) = run.thread_id.as_deref() {
                    if create_thread {
                        exec(
                            conn,
                            INSERT_RECORD,
                            &[&thread, &"{}", &"idle", &owner, &now, &now],
                        )
                        .map_err(failed(context))?;
                    }
                    let record = first(conn, SELECT_RECORD, &[&thread], |row| {
                        Ok((row.get::<_, String>(1)?, row.get::<_, Option<String>>(3)?))
                    })
                    .map_err(failed(context))?;
                    let metadata = match record {
                        Some((metadata, record_owner))
                            if owner.is_none() || record_owner == owner =>
                        {
                            metadata
                        }
                        _ => return Ok(Written::Undo(Created::NoThread)),
                    };
                    let inflight = all(conn, INFLIGHT_RUNS, &[&thread], |row| {
                        Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
                    })
                    .map_err(failed(context))?;
                    if on_inflight == OnInflight::Reject && !inflight.is_empty() {
                        return Ok(Written::Undo(Created::ThreadBusy));
                    }
                    // Read before any row changes: a record whose metadata
                    // is corrupt refuses the run with nothing written.
                    let merged = match &thread_metadata {
                        Some(patch) => super::merged_metadata(thread, &metadata, patch)?,
                        None => None,
                    };
                    if let Some(merged) = merged {
                        exec(conn, UPDATE_RECORD_METADATA, &[&thread, &merged, &now])
                            .map_err(failed(context))?;
                    }
                    match on_inflight {
                        OnInflight::Enqueue | OnInflight::Reject => {}
                        OnInflight::Cancel(action) => {
                            for (id, status) in inflight {
                                if status == "pending" && action == "rollback" {
                                    for statement in DELETE_RUN {
                                        exec(conn, statement, &[&id]).map_err(failed(context))?;
                                    }
                                } else if status == "pending" {
                                    exec(conn, INTERRUPT_PENDING, &[&id, &now])
                                        .map_err(failed(context))?;
                                } else {
                                    exec(conn, REQUEST_CANCEL, &[&id, &action, &now])
                                        .map_err(failed(context))?;
                                }
                                touched.push(id);
                            }
                        }
                    }
                    exec(conn, SET_THREAD_STATUS, &[&thread, &"busy", &now])
                        .map_err(failed(context))?;
                    // The thread's log too, for the run's graph: opening it
                    // then only reads.
                    exec(conn, OPEN_THREAD, &[&thread, &(now / 1000)]).map_err(failed(context))?;
                }
                let inserted = exec(
                    conn,
                    INSERT_RUN,
                    &[
                        &run.run_id,
                        &run.thread_id,
                        &run.assistant_id,
                        &run.status,
                        &run.metadata,
                        &run.kwargs,
                        &run.multitask_strategy,
                        &run.attempt,
                        &run.available_at,
                        &run.created_at,
                        &run.updated_at,
                        &run.owner,
                        &run.cancel_action,
                    ],
                );
                match inserted {
                    Ok(1) => {}
                    // Not reached (looked for first, in the same write);
                    // the group fails rather than keep the strategy's
                    // changes.
                    Ok(_) => return Ok(Written::Undo(Created::Exists)),
                    Err(error) => return Err(failed(context)(error)),
                }
                // Claimed at once, when asked and due (its row checked as a
                // claim checks it): one write, one commit, instead of two.
                let claimed = match &claim {
                    Some(claim) => {
                        claim_created(conn, &run.run_id, claim, now, &context)?.map(Box::new)
                    }
                    None => None,
                };
                Ok(Written::Keep(Created::Run {
                    row: Box::new(run),
                    touched,
                    claimed,
                }))
            })
            .await
    }

    async fn claim_run(
        &self,
        worker: &str,
        now: i64,
        until: i64,
        events: ClaimEvents,
    ) -> Result<Option<(RunRow, bool)>, StoreError> {
        let worker = worker.to_owned();
        self.writer
            .write(move |conn| {
                let context = || format!("claiming a run for worker \"{worker}\"");
                // The runs due, up to two, looked for here rather than on a
                // reader first: the writer's pages are current (a reader's
                // are read again after every commit), and a worker is woken
                // when a run is due, so this almost always finds one. None:
                // nothing was written (the write is undone).
                let due = all(conn, CLAIM_PEEK, &[&now], |row| row.get::<_, String>(0))
                    .map_err(failed(context))?;
                let Some(picked) = due.first() else {
                    return Ok(Written::Undo(None));
                };
                let Some(row) = first(
                    conn,
                    CLAIM_PICKED_SQLITE,
                    &[&worker, &now, &until, picked],
                    run_of,
                )
                .map_err(failed(context))?
                else {
                    return Ok(Written::Undo(None));
                };
                // Its events and its thread marked in the claim's own
                // transaction.
                claimed(conn, &row, &worker, &events, now, &context)?;
                Ok(Written::Keep(Some((row, due.len() > 1))))
            })
            .await
    }

    async fn renew_run(
        &self,
        fence: Fence<'_>,
        now: i64,
        until: i64,
    ) -> Result<Option<Option<String>>, StoreError> {
        let fence = OwnedFence::from(fence);
        self.writer
            .write(move |conn| {
                let row = first(
                    conn,
                    RENEW_RUN,
                    &[&fence.run_id, &fence.worker, &fence.attempt, &now, &until],
                    |row| row.get::<_, Option<String>>(0),
                )
                .map_err(failed(|| {
                    format!("renewing the lease of run \"{}\"", fence.run_id)
                }))?;
                Ok(Written::Keep(row))
            })
            .await
    }

    async fn finish_run(
        &self,
        fence: Fence<'_>,
        status: &str,
        thread_status: &str,
        now: i64,
        events: Vec<(&str, String)>,
    ) -> Result<Option<bool>, StoreError> {
        let fence = OwnedFence::from(fence);
        let status = status.to_owned();
        let thread_status = thread_status.to_owned();
        // The data moved, not copied: only the names are.
        let events: Vec<(String, String)> = events
            .into_iter()
            .map(|(event, data)| (event.to_owned(), data))
            .collect();
        self.writer
            .write(move |conn| {
                let context = || format!("finishing run \"{}\"", fence.run_id);
                // The last events first, under the same fence: a lost lease
                // writes neither them nor the end.
                if !events.is_empty()
                    && insert_events(conn, &fence, &events, now)
                        .map_err(failed(context))?
                        .is_none()
                {
                    return Ok(Written::Undo(None));
                }
                let thread = first(
                    conn,
                    FINISH_RUN,
                    &[&fence.run_id, &fence.worker, &fence.attempt, &status, &now],
                    |row| row.get::<_, Option<String>>(0),
                )
                .map_err(failed(context))?;
                // Not after the events: their fence is this one, in the
                // same transaction (a write refusing first).
                let Some(thread) = thread else {
                    return Ok(Written::Undo(None));
                };
                let mut waiting = false;
                if let Some(thread) = thread {
                    waiting = settle_thread(conn, &thread, &thread_status, now)
                        .map_err(failed(context))?;
                }
                Ok(Written::Keep(Some(waiting)))
            })
            .await
    }

    async fn append_run_events(
        &self,
        fence: Fence<'_>,
        events: Vec<(&str, String)>,
        now: i64,
    ) -> Result<Option<u64>, StoreError> {
        let fence = OwnedFence::from(fence);
        // The data moved, not copied: only the names are.
        let events: Vec<(String, String)> = events
            .into_iter()
            .map(|(event, data)| (event.to_owned(), data))
            .collect();
        self.writer
            .write(move |conn| {
                let last = insert_events(conn, &fence, &events, now).map_err(failed(|| {
                    format!("appending events to run \"{}\"", fence.run_id)
                }))?;
                let Some(last) = last else {
                    return Ok(Written::Undo(None));
                };
                let Ok(last_seq) = u64::try_from(last) else {
                    return Err(StoreError::CorruptRun {
                        what: format!("run \"{}\"", fence.run_id),
                        column: "last_seq",
                        detail: format!("negative sequence number {last}"),
                    });
                };
                Ok(Written::Keep(Some(last_seq)))
            })
            .await
    }
}
