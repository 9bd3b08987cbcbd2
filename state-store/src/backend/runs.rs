//! Runs, their stream events and thread records as the backends store
//! them: rows of text and integers (JSON as text, statuses as their
//! lowercase names, times in microseconds). Unlike the log, a run's
//! transitions are decided inside the backend's transaction (a claim must
//! see and take a row at once), so each backend implements them whole:
//! `memory_runs.rs` under its lock, `sql_run_methods.rs` with the
//! statements of `sql_runs.rs`. `crate::runs` validates what goes in and
//! decodes what comes out.

use super::Backend;
use crate::error::StoreError;

/// A run, as stored (the columns `crate::runs` reads).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RunRow {
    pub run_id: String,
    pub thread_id: Option<String>,
    pub assistant_id: String,
    pub status: String,
    pub metadata: String,
    pub kwargs: String,
    pub multitask_strategy: String,
    pub attempt: i64,
    pub available_at: i64,
    pub created_at: i64,
    pub updated_at: i64,
    pub owner: Option<String>,
    pub cancel_action: Option<String>,
    /// The thread's head when the run was first claimed.
    pub base_seq: Option<i64>,
}

/// Events stored with a claim, in its transaction, made from the run as
/// claimed: (name, data as JSON text). An error rolls the claim back.
/// Shared: SQLite makes them on its writer's thread.
pub(crate) type ClaimEvents =
    std::sync::Arc<dyn Fn(&RunRow) -> Result<Vec<(String, String)>, StoreError> + Send + Sync>;

/// What `create_run` inserts, and how.
#[derive(Debug, Clone)]
pub(crate) struct NewRunRow<'a> {
    pub row: RunRow,
    /// Create the thread record if missing (`if_not_exists = "create"`).
    pub create_thread: bool,
    /// The strategy's action on the thread's runs in flight.
    pub on_inflight: OnInflight,
    /// The time of the insert (`row.created_at`).
    pub now: i64,
    pub owner: Option<&'a str>,
    /// Merged into the thread record's metadata (`NewRun::thread_metadata`).
    pub thread_metadata: Option<&'a serde_json::Map<String, serde_json::Value>>,
    /// Claimed in the same write when it is due at once
    /// (`Store::create_run_claimed`; a SQLite file only).
    #[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
    pub claim: Option<ClaimAtCreation>,
}

/// Who claims a run in the write that creates it, until when, with which
/// events.
#[derive(Clone)]
#[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
pub(crate) struct ClaimAtCreation {
    pub worker: String,
    pub until: i64,
    pub events: ClaimEvents,
}

impl std::fmt::Debug for ClaimAtCreation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClaimAtCreation")
            .field("worker", &self.worker)
            .field("until", &self.until)
            .finish_non_exhaustive()
    }
}

/// Thread `thread`'s record metadata `old` (stored text) with `patch`'s
/// keys set: `None` when that changes nothing (no write needed).
pub(crate) fn merged_metadata(
    thread: &str,
    old: &str,
    patch: &serde_json::Map<String, serde_json::Value>,
) -> Result<Option<String>, StoreError> {
    let mut merged: serde_json::Map<String, serde_json::Value> = serde_json::from_str(old)
        .map_err(|e| StoreError::CorruptRun {
            what: format!("thread record \"{thread}\""),
            column: "metadata",
            detail: format!("not a JSON object: {e}"),
        })?;
    if patch
        .iter()
        .all(|(key, value)| merged.get(key) == Some(value))
    {
        return Ok(None);
    }
    for (key, value) in patch {
        merged.insert(key.clone(), value.clone());
    }
    Ok(Some(serde_json::Value::Object(merged).to_string()))
}

/// What a new run does to the runs in flight on its thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OnInflight {
    /// Nothing: it waits its turn.
    Enqueue,
    /// Refused while any is in flight.
    Reject,
    /// Pending ones are interrupted (`"interrupt"`) or deleted
    /// (`"rollback"`); running ones get this cancel request.
    Cancel(&'static str),
}

/// How `create_run` ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Created {
    /// Inserted; the ids of the runs in flight the strategy touched; the
    /// run as claimed, when it was claimed in the same write.
    Run {
        row: Box<RunRow>,
        touched: Vec<String>,
        claimed: Option<Box<RunRow>>,
    },
    /// `Reject` and the thread has runs in flight.
    ThreadBusy,
    /// No thread record (or another owner's) and no `create_thread`.
    NoThread,
    /// A run with this id exists.
    Exists,
}

/// The fencing token of a claim: only the worker that holds the lease of
/// this attempt may write.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fence<'a> {
    pub run_id: &'a str,
    /// The run's thread (a run never changes thread): what a transition
    /// that also sets the thread's status locks first (in SQL).
    #[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
    pub thread_id: Option<&'a str>,
    pub worker: &'a str,
    pub attempt: i64,
}

/// A cancel request's outcome.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Cancelled {
    /// The run as it is now (`None`: rolled back, deleted).
    Done(Option<Box<RunRow>>),
    /// No such run (or another owner's).
    NotFound,
}

/// How a run's rollback ended (`Backend::roll_back_run`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RolledBack {
    /// The run and its events are deleted, its thread rewound to its base
    /// step (`base_seq`).
    Done {
        /// The run's thread.
        thread: Option<String>,
        /// Its base step.
        base_seq: u64,
        /// The thread's steps removed (none: no log, or nothing after).
        steps: u64,
    },
    /// The claim no longer holds: nothing changed.
    Lost,
    /// The thread cannot be rewound to the run's base step: nothing
    /// changed.
    Refused(super::Rewound),
}

/// A thread record, as stored.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ThreadRecordRow {
    pub thread_id: String,
    pub metadata: String,
    pub status: String,
    pub owner: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// Which thread records a scan reads, in which order (the metadata filter
/// is applied in Rust).
#[derive(Debug, Clone, Copy)]
pub(crate) struct RecordScan<'a> {
    pub status: Option<&'a str>,
    pub owner: Option<&'a str>,
    /// `created_at`, `updated_at` or `thread_id`.
    pub order_by: &'static str,
    pub descending: bool,
}

/// Which runs of a thread `list_runs` reads, newest first.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RunScan<'a> {
    pub thread_id: Option<&'a str>,
    pub status: Option<&'a str>,
    pub owner: Option<&'a str>,
    pub limit: usize,
    pub offset: usize,
}

impl Backend {
    /// Inserts a pending run, applying its strategy to the thread's runs
    /// in flight and marking the thread busy, in one transaction.
    pub async fn create_run(&self, new: &NewRunRow<'_>) -> Result<Created, StoreError> {
        dispatch_split!(self, b => {
            let created = b.runs.create(new)?;
            // The thread's log opened with the run, as the SQL backends do.
            if let (Created::Run { .. }, Some(thread)) = (&created, new.row.thread_id.as_deref()) {
                b.open(thread, new.now / 1000)?;
            }
            Ok(created)
        }, b.create_run(new))
    }

    /// Takes the oldest due run (pending, or running with an expired
    /// lease) whose thread runs nothing else: running, attempt + 1, leased
    /// to `worker` until `until`; its thread busy.
    pub async fn claim_run(
        &self,
        worker: &str,
        now: i64,
        until: i64,
        events: ClaimEvents,
    ) -> Result<Option<(RunRow, bool)>, StoreError> {
        dispatch_split!(self, b => b.runs.claim(worker, now, until, |thread| b.head(thread), events),
            b.claim_run(worker, now, until, events))
    }

    /// Extends the lease. `None`: lost; else the cancel requested, if any.
    pub async fn renew_run(
        &self,
        fence: Fence<'_>,
        now: i64,
        until: i64,
    ) -> Result<Option<Option<String>>, StoreError> {
        dispatch_split!(self, b => b.runs.renew(fence, now, until), b.renew_run(fence, now, until))
    }

    /// Appends `events` (numbered after the run's last), then sets the
    /// run's final status and its thread's (`busy` while other runs are
    /// in flight on it), in one transaction. False: the lease was lost
    /// (nothing written).
    pub async fn finish_run(
        &self,
        fence: Fence<'_>,
        status: &str,
        thread_status: &str,
        now: i64,
        events: Vec<(&str, String)>,
    ) -> Result<Option<bool>, StoreError> {
        dispatch_split!(self, b => b.runs.finish(fence, status, thread_status, now, &events),
            b.finish_run(fence, status, thread_status, now, events))
    }

    /// Rolls the claimed run back, in one transaction: its thread's log
    /// rewound to the run's `base_seq` (`Backend::rewind`, `now_ms` its
    /// time), the run and its events deleted, its thread's record
    /// `thread_status` (`busy` while other runs are in flight on it).
    pub async fn roll_back_run(
        &self,
        fence: Fence<'_>,
        thread_status: &str,
        now: i64,
        now_ms: i64,
    ) -> Result<RolledBack, StoreError> {
        match self {
            Backend::Memory(b) => b.roll_back_run(fence, thread_status, now, now_ms),
            #[cfg(feature = "sqlite")]
            Backend::Sqlite(b) => b.roll_back_run(fence, thread_status, now, now_ms).await,
            #[cfg(feature = "postgres")]
            Backend::Postgres(b) => b.roll_back_run(fence, thread_status, now, now_ms).await,
        }
    }

    /// Back to pending, lease cleared. False: the lease was lost.
    pub async fn release_run(&self, fence: Fence<'_>, now: i64) -> Result<bool, StoreError> {
        dispatch_split!(self, b => b.runs.release(fence, now), b.release_run(fence, now))
    }

    pub async fn get_run(&self, run_id: &str) -> Result<Option<RunRow>, StoreError> {
        dispatch_split!(self, b => b.runs.get(run_id), b.get_run(run_id))
    }

    /// Runs newest first (`created_at`, then id, descending).
    pub async fn list_runs(&self, scan: RunScan<'_>) -> Result<Vec<RunRow>, StoreError> {
        dispatch_split!(self, b => b.runs.list(scan), b.list_runs(scan))
    }

    /// A pending run is interrupted (or deleted, for `"rollback"`) at
    /// once; a running one gets the request; a finished one is left.
    pub async fn cancel_run(
        &self,
        run_id: &str,
        action: &'static str,
        owner: Option<&str>,
        now: i64,
    ) -> Result<Cancelled, StoreError> {
        dispatch_split!(self, b => b.runs.cancel(run_id, action, owner, now),
            b.cancel_run(run_id, action, owner, now))
    }

    /// Deletes a run and its events. False: none (or another owner's).
    pub async fn delete_run(
        &self,
        run_id: &str,
        owner: Option<&str>,
        now: i64,
    ) -> Result<bool, StoreError> {
        dispatch_split!(self, b => b.runs.delete(run_id, owner, now), b.delete_run(run_id, owner, now))
    }

    /// Appends events numbered after the run's last. `None`: lease lost.
    pub async fn append_run_events(
        &self,
        fence: Fence<'_>,
        events: Vec<(&str, String)>,
        now: i64,
    ) -> Result<Option<u64>, StoreError> {
        dispatch_split!(self, b => b.runs.append_events(fence, &events, now),
            b.append_run_events(fence, events, now))
    }

    /// Events numbered above `after`, at most `limit`, in order: number,
    /// name, data, time.
    pub async fn run_events(
        &self,
        run_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<(i64, String, String, i64)>, StoreError> {
        dispatch_split!(self, b => b.runs.events(run_id, after, limit), b.run_events(run_id, after, limit))
    }

    /// Deletes the events of the runs that ended before `before`.
    pub async fn prune_run_events(&self, before: i64) -> Result<u64, StoreError> {
        dispatch_split!(self, b => b.runs.prune_events(before), b.prune_run_events(before))
    }

    /// The earliest time after `now` (an instant, not necessarily the
    /// present) a run becomes due (a pending run's `available_at`, a
    /// running run's lease expiry), if any.
    pub async fn next_run_due(&self, now: i64) -> Result<Option<i64>, StoreError> {
        dispatch_split!(self, b => b.runs.next_due(now), b.next_run_due(now))
    }

    /// Inserts a thread record unless one exists. False: one existed.
    pub async fn insert_thread_record(&self, row: &ThreadRecordRow) -> Result<bool, StoreError> {
        dispatch_split!(self, b => b.runs.insert_record(row), b.insert_thread_record(row))
    }

    pub async fn thread_record(&self, id: &str) -> Result<Option<ThreadRecordRow>, StoreError> {
        dispatch_split!(self, b => b.runs.record(id), b.thread_record(id))
    }

    /// Replaces a record's metadata by `merge(old)` in one transaction.
    /// `None`: no record (or another owner's).
    pub async fn update_thread_record(
        &self,
        id: &str,
        owner: Option<&str>,
        merge: &(dyn Fn(&str) -> Result<String, StoreError> + Send + Sync),
        now: i64,
    ) -> Result<Option<ThreadRecordRow>, StoreError> {
        dispatch_split!(self, b => b.runs.update_record(id, owner, merge, now),
            b.update_thread_record(id, owner, merge, now))
    }

    pub async fn set_thread_status(
        &self,
        id: &str,
        status: &str,
        now: i64,
    ) -> Result<bool, StoreError> {
        dispatch_split!(self, b => b.runs.set_status(id, status, now), b.set_thread_status(id, status, now))
    }

    /// The records `scan` selects, in its order.
    pub async fn thread_records(
        &self,
        scan: RecordScan<'_>,
    ) -> Result<Vec<ThreadRecordRow>, StoreError> {
        dispatch_split!(self, b => b.runs.records(scan), b.thread_records(scan))
    }
}
