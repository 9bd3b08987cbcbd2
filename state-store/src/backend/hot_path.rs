//! The writes and reads a SQL backend makes for every run and step, which
//! it may make on connections of its own instead of through sqlx. SQLite
//! on a file does (`sqlite_hot.rs`: writes on a thread of their own,
//! `sqlite_writer.rs`; reads where they are asked, `sqlite_readers.rs`);
//! PostgreSQL does not ([`NoHotPath`], a type with no values), nor SQLite
//! in memory. `sql_backend!` and `sql_runs!` make each of these there
//! when the backend has such a path, else through sqlx.

use super::runs::{ClaimEvents, Created, Fence, NewRunRow, RunRow, ThreadRecordRow};
use super::{Appended, LogTail, StepRow};
use crate::error::StoreError;

/// A backend's own path for its hottest writes and reads: each method is
/// the backend method of the same name (see `sql_backend!` and
/// `sql_runs!` for what it does). Reads are plain functions: they run on
/// the calling thread.
pub(crate) trait HotPath {
    /// Opens a thread (only reads when it exists).
    async fn open(&self, thread: &str, now: i64) -> Result<(), StoreError>;
    /// A thread's tail (`load`, `load_latest`), unless it is too long to
    /// read on the calling thread.
    fn read_tail(
        &self,
        thread: &str,
        upto: Option<u64>,
        with_last: bool,
    ) -> Result<Tail, StoreError>;
    /// A run.
    fn get_run(&self, run_id: &str) -> Result<Option<RunRow>, StoreError>;
    /// A thread's record.
    fn thread_record(&self, id: &str) -> Result<Option<ThreadRecordRow>, StoreError>;
    /// When the next run is due, after `now`.
    fn next_run_due(&self, now: i64) -> Result<Option<i64>, StoreError>;
    /// Appends a step.
    async fn append(&self, thread: &str, step: &StepRow) -> Result<Appended, StoreError>;
    /// Creates a thread's record.
    async fn insert_thread_record(&self, row: &ThreadRecordRow) -> Result<bool, StoreError>;
    /// Creates a run.
    async fn create_run(&self, new: &NewRunRow<'_>) -> Result<Created, StoreError>;
    /// Claims a run, if one is due: the run, and whether others are due
    /// besides it.
    async fn claim_run(
        &self,
        worker: &str,
        now: i64,
        until: i64,
        events: ClaimEvents,
    ) -> Result<Option<(RunRow, bool)>, StoreError>;
    /// Renews a lease.
    async fn renew_run(
        &self,
        fence: Fence<'_>,
        now: i64,
        until: i64,
    ) -> Result<Option<Option<String>>, StoreError>;
    /// Ends a run.
    async fn finish_run(
        &self,
        fence: Fence<'_>,
        status: &str,
        thread_status: &str,
        now: i64,
        events: Vec<(&str, String)>,
    ) -> Result<Option<bool>, StoreError>;
    /// Appends a run's events.
    async fn append_run_events(
        &self,
        fence: Fence<'_>,
        events: Vec<(&str, String)>,
        now: i64,
    ) -> Result<Option<u64>, StoreError>;
}

/// A hot path's answer to `read_tail`.
#[derive(Debug)]
#[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
pub(crate) enum Tail {
    /// The thread's tail (`None`: no such thread).
    Read(Option<LogTail>),
    /// More steps since the snapshot than a read on the calling thread
    /// may take (it would hold an async runtime's thread while it reads
    /// them all, with snapshots off say): the caller reads through sqlx.
    TooLong,
}

/// No path of its own (PostgreSQL): a type with no values, so an
/// `Option<NoHotPath>` is always `None` and these methods never run.
#[cfg(feature = "postgres")]
#[derive(Debug, Clone, Copy)]
pub(crate) enum NoHotPath {}

#[cfg(feature = "postgres")]
impl HotPath for NoHotPath {
    async fn open(&self, _: &str, _: i64) -> Result<(), StoreError> {
        match *self {}
    }

    fn read_tail(&self, _: &str, _: Option<u64>, _: bool) -> Result<Tail, StoreError> {
        match *self {}
    }

    fn get_run(&self, _: &str) -> Result<Option<RunRow>, StoreError> {
        match *self {}
    }

    fn thread_record(&self, _: &str) -> Result<Option<ThreadRecordRow>, StoreError> {
        match *self {}
    }

    fn next_run_due(&self, _: i64) -> Result<Option<i64>, StoreError> {
        match *self {}
    }

    async fn append(&self, _: &str, _: &StepRow) -> Result<Appended, StoreError> {
        match *self {}
    }

    async fn insert_thread_record(&self, _: &ThreadRecordRow) -> Result<bool, StoreError> {
        match *self {}
    }

    async fn create_run(&self, _: &NewRunRow<'_>) -> Result<Created, StoreError> {
        match *self {}
    }

    async fn claim_run(
        &self,
        _: &str,
        _: i64,
        _: i64,
        _: ClaimEvents,
    ) -> Result<Option<(RunRow, bool)>, StoreError> {
        match *self {}
    }

    async fn renew_run(
        &self,
        _: Fence<'_>,
        _: i64,
        _: i64,
    ) -> Result<Option<Option<String>>, StoreError> {
        match *self {}
    }

    async fn finish_run(
        &self,
        _: Fence<'_>,
        _: &str,
        _: &str,
        _: i64,
        _: Vec<(&str, String)>,
    ) -> Result<Option<bool>, StoreError> {
        match *self {}
    }

    async fn append_run_events(
        &self,
        _: Fence<'_>,
        _: Vec<(&str, String)>,
        _: i64,
    ) -> Result<Option<u64>, StoreError> {
        match *self {}
    }
}
