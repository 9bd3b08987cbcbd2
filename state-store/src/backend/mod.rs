//! Where threads live. Every backend stores the same three things (a thread
//! row with its head, its steps, its snapshots) as text, and answers the
//! same few questions; the thread handle does all decoding and replay, so
//! the backends stay dumb and interchangeable. Long-term memory items
//! (`items.rs`) follow the same rule: rows in, rows out; `crate::items`
//! decodes, filters and ranks them.

mod memory;
mod memory_assistants;
mod memory_crons;
mod memory_items;
mod memory_runs;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
#[macro_use]
mod sql_assistants;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
#[macro_use]
mod sql_crons;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
#[macro_use]
mod sql_item_methods;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
#[macro_use]
mod sql_run_methods;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod hot_path;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod sql;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod sql_items;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod sql_runs;
#[cfg(feature = "sqlite")]
mod sqlite_hot;
#[cfg(feature = "sqlite")]
mod sqlite_readers;
#[cfg(feature = "sqlite")]
mod sqlite_writer;

#[cfg(feature = "sqlite")]
pub(crate) use sqlite_writer::Committing;

/// A write's commit to wait for: only a SQLite file's writer answers
/// before its commit; without SQLite, a type with no values.
#[cfg(not(feature = "sqlite"))]
#[derive(Debug)]
pub(crate) enum Committing {}

#[cfg(not(feature = "sqlite"))]
impl Committing {
    pub(crate) async fn durable(self) -> Result<(), StoreError> {
        match self {}
    }

    pub(crate) fn ended(&mut self) -> Option<Result<(), StoreError>> {
        match *self {}
    }
}

pub(crate) use memory::{Decoded, Latest, Memory};
#[cfg(feature = "postgres")]
pub(crate) use sql::NOTIFY_CHANNEL;
#[cfg(feature = "postgres")]
pub(crate) use sql::Postgres;
#[cfg(feature = "sqlite")]
pub(crate) use sql::Sqlite;
#[cfg(feature = "sqlite")]
pub(crate) use sql::{data_version, database_file, enter_wal, watched_heads};

use crate::error::StoreError;

/// One logged step, as stored.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StepRow {
    pub seq: u64,
    pub kind: String,
    pub body: String,
    pub metadata: String,
    pub state_version: i64,
    pub recorded_at: i64,
}

impl StepRow {
    /// Bytes this step adds to the log.
    pub fn size(&self) -> usize {
        self.body.len() + self.metadata.len()
    }
}

/// A step's write that failed ([`Backend::append`]): why, and the step,
/// which may have landed anyway (the connection broke after its commit).
#[derive(Debug)]
pub(crate) struct AppendFailed {
    pub error: StoreError,
    pub step: StepRow,
}

/// One snapshot, as stored.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SnapshotRow {
    pub seq: u64,
    pub state: String,
    pub state_version: i64,
    pub recorded_at: i64,
}

/// What loading a thread (up to some step) reads: the latest snapshot at or
/// before that step and the steps after it.
#[derive(Debug, Default)]
pub(crate) struct LogTail {
    /// The thread's last committed step.
    pub head: u64,
    pub snapshot: Option<SnapshotRow>,
    pub steps: Vec<StepRow>,
    /// The head's step, when asked for ([`Backend::load_latest`]; `None`
    /// at head 0 or when compaction removed it).
    pub last: Option<StepRow>,
}

/// What a fork starts with: a snapshot, the steps after it (up to the
/// fork's step), or both.
#[derive(Debug, Default)]
pub(crate) struct ForkRows {
    pub snapshot: Option<SnapshotRow>,
    pub steps: Vec<StepRow>,
}

/// What a watcher reads ([`Backend::tail`]): the thread's row and its
/// first stored steps from some step on, read consistently.
#[derive(Debug)]
pub(crate) struct Tail {
    /// The thread's last committed step.
    pub head: u64,
    /// When the thread was created: a thread deleted and created again
    /// has another.
    pub created_at: i64,
    /// Stored steps from the step asked for, in order (gaps are the
    /// caller's to find).
    pub steps: Vec<StepRow>,
    /// How often the thread was rewound, and to which step the last time.
    pub rewinds: Rewinds,
}

/// A thread's rewinds ([`Backend::rewind`]), as its row keeps them: a
/// watcher that sees the count change knows steps it delivered may be
/// gone, even when the head is back where it was.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Rewinds {
    /// Rewinds so far.
    pub count: u64,
    /// The step the last one went back to.
    pub to: u64,
}

/// How a rewind ended ([`Backend::rewind`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rewound {
    /// The head is the step asked for now; this many steps were removed
    /// (none when it was there already: nothing changed).
    Done { steps: u64 },
    /// The thread's head is before the step asked for.
    Ahead { head: u64 },
    /// The state at the step cannot be rebuilt from what is stored (the
    /// steps before it were compacted away, or precede a fork):
    /// `missing` is the first step not stored.
    Unrebuildable { missing: u64 },
    /// No such thread.
    NoThread,
}

/// A thread, as listed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ThreadRow {
    pub id: String,
    pub head: u64,
    pub created_at: i64,
    pub updated_at: i64,
    pub parent: Option<(String, u64)>,
}

/// What a page of threads is ordered by: a time (then the id), or the id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ThreadKey {
    Updated,
    Created,
    Id,
}

/// A page of thread rows ([`Backend::threads_page`]): in the order of
/// `key`, ascending or `descending` (ids compared bytewise, on every
/// backend), after the position `after` (the key's time, 0 for the id
/// order, and the id), skipping `offset` rows, at most `limit`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ThreadsPage<'a> {
    pub key: ThreadKey,
    pub descending: bool,
    pub after: Option<(i64, &'a str)>,
    pub offset: usize,
    pub limit: usize,
}

impl ThreadsPage<'_> {
    /// The position of `row` in this order.
    pub fn position(&self, row: &ThreadRow) -> i64 {
        match self.key {
            ThreadKey::Updated => row.updated_at,
            ThreadKey::Created => row.created_at,
            ThreadKey::Id => 0,
        }
    }
}

/// How an append ended, when the database answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Appended {
    Committed,
    /// The thread's head is not the expected one.
    Conflict {
        stored: u64,
    },
    /// The thread row is gone.
    NoThread,
}

/// What compaction removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Removed {
    pub steps: u64,
    pub snapshots: u64,
}

/// The backends, dispatched by hand: concrete futures stay `Send` without
/// boxing, and each backend's code is ordinary async code.
#[derive(Debug, Clone)]
pub(crate) enum Backend {
    Memory(Memory),
    #[cfg(feature = "sqlite")]
    Sqlite(Sqlite),
    #[cfg(feature = "postgres")]
    Postgres(Postgres),
}

/// A `Backend` method whose memory side is a plain call (`$memory`, on
/// the memory backend's tables) and whose SQL side is awaited (`$sql`):
/// the items', runs', assistants' and crons' methods.
macro_rules! dispatch_split {
    ($self:ident, $b:ident => $memory:expr, $sql:expr) => {
        match $self {
            Backend::Memory($b) => $memory,
            #[cfg(feature = "sqlite")]
            Backend::Sqlite($b) => $sql.await,
            #[cfg(feature = "postgres")]
            Backend::Postgres($b) => $sql.await,
        }
    };
}

// Long-term memory items: their rows, and the `Backend` methods for them.
mod items;
pub(crate) use items::{Cmp, Flow, ItemScan, ItemWrite, PrefixRange, Pushed, ScannedItem, Vectors};

// Created assistants: their rows, and the `Backend` methods for them.
mod assistants;
pub(crate) use assistants::{AssistantRow, Change, Changed};

// The Agent Server's crons: their rows, and the `Backend` methods for them.
mod crons;
pub(crate) use crons::{CronRow, CronScan};

// Runs, their events and thread records: their rows, and the `Backend`
// methods for them.
mod runs;
pub(crate) use runs::{
    Cancelled, ClaimAtCreation, ClaimEvents, Created, Fence, NewRunRow, OnInflight, RecordScan,
    RolledBack, RunRow, RunScan, ThreadRecordRow, merged_metadata,
};
#[cfg(feature = "postgres")]
pub(crate) use sql_runs::RUNS_CHANNEL;

macro_rules! dispatch {
    ($self:ident, $b:ident => $call:expr) => {
        match $self {
            Backend::Memory($b) => $call,
            #[cfg(feature = "sqlite")]
            Backend::Sqlite($b) => $call.await,
            #[cfg(feature = "postgres")]
            Backend::Postgres($b) => $call.await,
        }
    };
}

impl Backend {
    /// Creates the thread row if there is none. Idempotent.
    pub async fn open(&self, thread: &str, now: i64) -> Result<(), StoreError> {
        dispatch!(self, b => b.open(thread, now))
    }

    /// The latest snapshot at or before `upto` (default: the head) and the
    /// steps after it up to `upto`, read consistently. `None`: no thread.
    pub async fn load(
        &self,
        thread: &str,
        upto: Option<u64>,
    ) -> Result<Option<LogTail>, StoreError> {
        dispatch!(self, b => b.load(thread, upto))
    }

    /// What [`load`](Self::load) reads up to the head, and the head's step
    /// ([`LogTail::last`]), read consistently (one read transaction).
    /// `None`: no thread. The memory backend has its own,
    /// [`Memory::load_latest`], which may start from a decoded state.
    pub async fn load_latest(&self, thread: &str) -> Result<Option<LogTail>, StoreError> {
        match self {
            Backend::Memory(b) => {
                let tail = b.load(thread, None)?;
                Ok(tail.map(|mut tail| {
                    tail.last = match tail.steps.last() {
                        Some(last) if last.seq == tail.head => Some(last.clone()),
                        _ => b.step(thread, tail.head).ok().flatten(),
                    };
                    tail
                }))
            }
            #[cfg(feature = "sqlite")]
            Backend::Sqlite(b) => b.load_latest(thread).await,
            #[cfg(feature = "postgres")]
            Backend::Postgres(b) => b.load_latest(thread).await,
        }
    }

    /// Appends `step` if the thread's head is `step.seq - 1`, moving the
    /// head to `step.seq`, atomically. The step is moved in (the memory
    /// store keeps it as it is: no copy on every step's path); a failed
    /// write gives it back, to look whether it landed anyway.
    pub async fn append(&self, thread: &str, step: StepRow) -> Result<Appended, AppendFailed> {
        match self {
            Backend::Memory(b) => Ok(b.append(thread, step)),
            #[cfg(feature = "sqlite")]
            Backend::Sqlite(b) => b
                .append(thread, &step)
                .await
                .map_err(|error| AppendFailed { error, step }),
            #[cfg(feature = "postgres")]
            Backend::Postgres(b) => b
                .append(thread, &step)
                .await
                .map_err(|error| AppendFailed { error, step }),
        }
    }

    /// [`append`](Backend::append), answered before the step is durable
    /// where the backend can (a SQLite file: its writer's open group), with
    /// its commit to wait for ([`Committing`]); `announce` makes what runs
    /// once it is durable. Elsewhere the step is committed when this
    /// answers, and the commit is `None`.
    pub async fn append_early(
        &self,
        thread: &str,
        step: StepRow,
        announce: impl FnOnce() -> Box<dyn FnOnce() + Send>,
    ) -> Result<(Appended, Option<Committing>), AppendFailed> {
        #[cfg(feature = "sqlite")]
        if let Backend::Sqlite(b) = self
            && let Some(early) = b.append_early(thread, &step, announce).await
        {
            return early
                .map(|(appended, committing)| (appended, Some(committing)))
                .map_err(|error| AppendFailed { error, step });
        }
        #[cfg(not(feature = "sqlite"))]
        let _ = announce;
        Ok((self.append(thread, step).await?, None))
    }

    /// The step `seq`, if stored.
    pub async fn step(&self, thread: &str, seq: u64) -> Result<Option<StepRow>, StoreError> {
        dispatch!(self, b => b.step(thread, seq))
    }

    /// Stores a snapshot; one already stored at the same step is kept.
    pub async fn snapshot(&self, thread: &str, snapshot: &SnapshotRow) -> Result<(), StoreError> {
        dispatch!(self, b => b.snapshot(thread, snapshot))
    }

    /// Steps `from..=to` in order (those still stored).
    pub async fn steps(
        &self,
        thread: &str,
        from: u64,
        to: u64,
    ) -> Result<Vec<StepRow>, StoreError> {
        dispatch!(self, b => b.steps(thread, from, to))
    }

    /// The thread's head and creation time with its first `limit` stored
    /// steps numbered `from` or more, in one consistent read. `None`: no
    /// thread.
    pub async fn tail(
        &self,
        thread: &str,
        from: u64,
        limit: usize,
    ) -> Result<Option<Tail>, StoreError> {
        dispatch!(self, b => b.tail(thread, from, limit))
    }

    /// The oldest step still stored, if any.
    pub async fn first_step(&self, thread: &str) -> Result<Option<u64>, StoreError> {
        dispatch!(self, b => b.first_step(thread))
    }

    /// Every thread, by id.
    pub async fn threads(&self) -> Result<Vec<ThreadRow>, StoreError> {
        dispatch!(self, b => b.threads())
    }

    /// A page of thread rows, in order.
    pub async fn threads_page(&self, page: ThreadsPage<'_>) -> Result<Vec<ThreadRow>, StoreError> {
        dispatch!(self, b => b.threads_page(page))
    }

    /// One thread's row.
    pub async fn thread(&self, thread: &str) -> Result<Option<ThreadRow>, StoreError> {
        dispatch!(self, b => b.thread(thread))
    }

    /// Deletes a thread with its steps and snapshots, its record, runs and
    /// their events. False: neither log nor record existed. With the ids
    /// of the runs that were in flight.
    pub async fn delete(&self, thread: &str) -> Result<(bool, Vec<String>), StoreError> {
        dispatch!(self, b => b.delete(thread))
    }

    /// Creates `thread` forked from `parent` at its step `parent.1`, which
    /// becomes the new thread's head: holding `fork`'s snapshot (if any)
    /// and steps, created at `now`. False: the thread exists already.
    pub async fn create_from(
        &self,
        thread: &str,
        fork: &ForkRows,
        parent: (&str, u64),
        now: i64,
    ) -> Result<bool, StoreError> {
        dispatch!(self, b => b.create_from(thread, fork, parent, now))
    }

    /// Takes the thread back to step `seq`, in one transaction: its steps
    /// and snapshots after `seq` deleted, its head `seq`, its rewinds
    /// counted (when a step was removed), its watchers told (PostgreSQL:
    /// `NOTIFY`). Refused when the state at `seq` could not be rebuilt.
    pub async fn rewind(&self, thread: &str, seq: u64, now: i64) -> Result<Rewound, StoreError> {
        dispatch!(self, b => b.rewind(thread, seq, now))
    }

    /// Drops the steps at or before the latest snapshot and the older
    /// snapshots.
    pub async fn compact(&self, thread: &str) -> Result<Removed, StoreError> {
        dispatch!(self, b => b.compact(thread))
    }
}
