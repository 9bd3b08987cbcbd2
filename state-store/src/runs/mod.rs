//! Runs of the Agent Server: each run a row, queued pending, claimed by a
//! worker under a lease, finished with a status; its stream events kept
//! beside it, so a client reconnecting to any API process replays what it
//! missed. Thread records (metadata, status, owner) are the Agent
//! Server's view of a thread (`threads.rs`); wake-ups for workers and
//! stream readers are in `wake.rs`.
//!
//! The design (LangGraph's runs lifecycle, with a lease and fencing as
//! in the Rust job queues): a run is `pending` until a worker claims it
//! (oldest due first, one running run per thread, held by a unique index
//! in SQL); the claim sets `running`, `attempt + 1` and a lease; every
//! write of the worker is fenced by (worker, attempt), so when its lease
//! expired and another worker took the run over, the old one's writes
//! change nothing and it learns it must stop.

mod threads;
mod wake;

pub use threads::{IfExists, ThreadRecord, ThreadSearch, ThreadSortBy, ThreadStatus};
pub(crate) use wake::RunHub;
#[cfg(feature = "postgres")]
pub(crate) use wake::postgres_listener;
pub use wake::{RunWakeups, RunWatch, Wake};

use crate::Store;
use crate::backend::{
    Cancelled, ClaimAtCreation, ClaimEvents, Created, Fence, NewRunRow, OnInflight, RolledBack,
    RunRow, RunScan,
};
use crate::error::StoreError;
use crate::ids::check_id;
use crate::items::time::{from_micros, iso, now_micros, to_micros};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime};

/// Where a run is in its life (LangGraph's run statuses). Serializes as
/// its lowercase name, as the Agent Server writes it.
///
/// ```
/// use state_store::RunStatus;
/// assert_eq!(RunStatus::Interrupted.to_string(), "interrupted");
/// assert_eq!("success".parse::<RunStatus>(), Ok(RunStatus::Success));
/// assert_eq!(serde_json::to_value(RunStatus::Pending).unwrap(), "pending");
/// assert!(RunStatus::Error.is_final() && !RunStatus::Running.is_final());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// Waiting for a worker (or for its `available_at`).
    Pending,
    /// Claimed by a worker, under a lease.
    Running,
    /// Finished.
    Success,
    /// Failed.
    Error,
    /// Ran out of time.
    Timeout,
    /// Cancelled, or paused by the graph (an interrupt).
    Interrupted,
}

impl RunStatus {
    /// Its lowercase name: `"pending"`, `"running"`...
    ///
    /// ```
    /// assert_eq!(state_store::RunStatus::Timeout.as_str(), "timeout");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Pending => "pending",
            RunStatus::Running => "running",
            RunStatus::Success => "success",
            RunStatus::Error => "error",
            RunStatus::Timeout => "timeout",
            RunStatus::Interrupted => "interrupted",
        }
    }

    /// True once the run is over (neither pending nor running).
    ///
    /// ```
    /// assert!(state_store::RunStatus::Success.is_final());
    /// ```
    pub fn is_final(self) -> bool {
        !matches!(self, RunStatus::Pending | RunStatus::Running)
    }
}

impl fmt::Display for RunStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for RunStatus {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        Ok(match text {
            "pending" => RunStatus::Pending,
            "running" => RunStatus::Running,
            "success" => RunStatus::Success,
            "error" => RunStatus::Error,
            "timeout" => RunStatus::Timeout,
            "interrupted" => RunStatus::Interrupted,
            _ => return Err(format!("unknown run status {text:?}")),
        })
    }
}

/// What a new run does when its thread already has a run pending or
/// running (LangGraph's `multitask_strategy`; `enqueue` by default).
///
/// ```
/// use state_store::MultitaskStrategy;
/// assert_eq!(MultitaskStrategy::default(), MultitaskStrategy::Enqueue);
/// let s: MultitaskStrategy = serde_json::from_value("rollback".into()).unwrap();
/// assert_eq!(s, MultitaskStrategy::Rollback);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MultitaskStrategy {
    /// Refused: [`StoreError::ThreadBusy`].
    Reject,
    /// Queued behind them.
    #[default]
    Enqueue,
    /// They are cancelled with [`CancelAction::Interrupt`].
    Interrupt,
    /// They are cancelled with [`CancelAction::Rollback`].
    Rollback,
}

impl MultitaskStrategy {
    /// Its lowercase name.
    ///
    /// ```
    /// assert_eq!(state_store::MultitaskStrategy::Reject.as_str(), "reject");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            MultitaskStrategy::Reject => "reject",
            MultitaskStrategy::Enqueue => "enqueue",
            MultitaskStrategy::Interrupt => "interrupt",
            MultitaskStrategy::Rollback => "rollback",
        }
    }
}

/// How a run is cancelled (the Agent Server's `action`): `interrupt`
/// stops it and keeps what it committed; `rollback` also removes the run
/// (a pending one at once; for a running one, its worker rolls the
/// thread back and deletes it).
///
/// ```
/// use state_store::CancelAction;
/// assert_eq!(serde_json::to_value(CancelAction::Rollback).unwrap(), "rollback");
/// assert_eq!(CancelAction::Interrupt.as_str(), "interrupt");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CancelAction {
    /// Stop, keep what was committed.
    Interrupt,
    /// Stop and undo the run.
    Rollback,
}

impl CancelAction {
    /// Its lowercase name.
    ///
    /// ```
    /// assert_eq!(state_store::CancelAction::Rollback.as_str(), "rollback");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            CancelAction::Interrupt => "interrupt",
            CancelAction::Rollback => "rollback",
        }
    }

    fn parse(text: &str) -> Option<CancelAction> {
        match text {
            "interrupt" => Some(CancelAction::Interrupt),
            "rollback" => Some(CancelAction::Rollback),
            _ => None,
        }
    }
}

/// What [`Store::create_run`] does when the run's thread has no record
/// (LangGraph's `if_not_exists`; `reject` by default).
///
/// ```
/// assert_eq!(state_store::IfNotExists::default(), state_store::IfNotExists::Reject);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IfNotExists {
    /// [`StoreError::ThreadNotFound`].
    #[default]
    Reject,
    /// The record is created (empty metadata, owned by the run's owner).
    Create,
}

/// A run to create ([`Store::create_run`]). Fields are public; the
/// builder methods set them one by one.
///
/// ```
/// use serde_json::json;
/// use state_store::{MultitaskStrategy, NewRun};
/// let new = NewRun::new("run-1", "agent")
///     .thread("t-1")
///     .kwargs(json!({"input": {"messages": []}}))
///     .multitask_strategy(MultitaskStrategy::Reject);
/// assert_eq!(new.thread_id.as_deref(), Some("t-1"));
/// assert_eq!(new.metadata, json!({}));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct NewRun {
    /// Its id, minted by the caller (a UUID v7, as the Agent Server's).
    pub run_id: String,
    /// Its thread; `None` for a stateless run.
    pub thread_id: Option<String>,
    /// The assistant it runs.
    pub assistant_id: String,
    /// Its metadata: a JSON object.
    pub metadata: Value,
    /// What the worker needs to run it (input, command, config, stream
    /// modes...): opaque to the store.
    pub kwargs: Value,
    /// What it does to the thread's runs in flight.
    pub multitask_strategy: MultitaskStrategy,
    /// Not claimed before this time (`after_seconds`); `None`: at once.
    pub available_at: Option<SystemTime>,
    /// Who created it (the auth identity); `None`: nobody in particular.
    pub owner: Option<String>,
    /// What to do when the thread has no record.
    pub if_not_exists: IfNotExists,
    /// Keys set in the thread record's metadata as the run is created (a
    /// JSON object); `None`: the record's metadata is left as it is.
    pub thread_metadata: Option<Value>,
}

impl NewRun {
    /// A stateless run of `assistant_id`, with empty metadata and kwargs,
    /// `enqueue`, available at once, no owner.
    ///
    /// ```
    /// let new = state_store::NewRun::new("run-1", "agent");
    /// assert!(new.thread_id.is_none() && new.owner.is_none());
    /// ```
    pub fn new(run_id: impl Into<String>, assistant_id: impl Into<String>) -> NewRun {
        NewRun {
            run_id: run_id.into(),
            thread_id: None,
            assistant_id: assistant_id.into(),
            metadata: Value::Object(Default::default()),
            kwargs: Value::Object(Default::default()),
            multitask_strategy: MultitaskStrategy::default(),
            available_at: None,
            owner: None,
            if_not_exists: IfNotExists::default(),
            thread_metadata: None,
        }
    }

    /// On thread `id`.
    ///
    /// ```
    /// let new = state_store::NewRun::new("r", "a").thread("t");
    /// assert_eq!(new.thread_id.as_deref(), Some("t"));
    /// ```
    pub fn thread(mut self, id: impl Into<String>) -> NewRun {
        self.thread_id = Some(id.into());
        self
    }

    /// With this metadata (a JSON object).
    ///
    /// ```
    /// let new = state_store::NewRun::new("r", "a").metadata(serde_json::json!({"k": 1}));
    /// assert_eq!(new.metadata["k"], 1);
    /// ```
    pub fn metadata(mut self, metadata: Value) -> NewRun {
        self.metadata = metadata;
        self
    }

    /// With what the worker needs.
    ///
    /// ```
    /// let new = state_store::NewRun::new("r", "a").kwargs(serde_json::json!({"input": 1}));
    /// assert_eq!(new.kwargs["input"], 1);
    /// ```
    pub fn kwargs(mut self, kwargs: Value) -> NewRun {
        self.kwargs = kwargs;
        self
    }

    /// With this strategy.
    ///
    /// ```
    /// use state_store::{MultitaskStrategy, NewRun};
    /// let new = NewRun::new("r", "a").multitask_strategy(MultitaskStrategy::Interrupt);
    /// assert_eq!(new.multitask_strategy, MultitaskStrategy::Interrupt);
    /// ```
    pub fn multitask_strategy(mut self, strategy: MultitaskStrategy) -> NewRun {
        self.multitask_strategy = strategy;
        self
    }

    /// Not claimed before `after` from now (`after_seconds`).
    ///
    /// ```
    /// let new = state_store::NewRun::new("r", "a").after(std::time::Duration::from_secs(5));
    /// assert!(new.available_at.unwrap() > std::time::SystemTime::now());
    /// ```
    pub fn after(mut self, after: Duration) -> NewRun {
        self.available_at = Some(SystemTime::now() + after);
        self
    }

    /// Owned by `owner`: other owners cannot see it.
    ///
    /// ```
    /// let new = state_store::NewRun::new("r", "a").owner("ada");
    /// assert_eq!(new.owner.as_deref(), Some("ada"));
    /// ```
    pub fn owner(mut self, owner: impl Into<String>) -> NewRun {
        self.owner = Some(owner.into());
        self
    }

    /// Creates the thread's record if it has none.
    ///
    /// ```
    /// use state_store::{IfNotExists, NewRun};
    /// let new = NewRun::new("r", "a").thread("t").if_not_exists(IfNotExists::Create);
    /// assert_eq!(new.if_not_exists, IfNotExists::Create);
    /// ```
    pub fn if_not_exists(mut self, what: IfNotExists) -> NewRun {
        self.if_not_exists = what;
        self
    }

    /// Sets these keys (a JSON object) in its thread record's metadata,
    /// in the run's own write (the Agent Server records a thread's graph
    /// and assistant there with each run). Ignored for a stateless run.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use serde_json::json;
    /// use state_store::{IfNotExists, NewRun, Store};
    /// let store = Store::memory();
    /// let new = NewRun::new("r", "a").thread("t").if_not_exists(IfNotExists::Create)
    ///     .thread_metadata(json!({"graph_id": "agent"}));
    /// store.create_run(new).await?;
    /// let record = store.thread_record("t", None).await?.unwrap();
    /// assert_eq!(record.metadata["graph_id"], "agent");
    /// # Ok(())
    /// # }
    /// ```
    pub fn thread_metadata(mut self, metadata: Value) -> NewRun {
        self.thread_metadata = Some(metadata);
        self
    }
}

/// A stored run. Serializes as the Agent Server's `Run` does (times as
/// ISO 8601 with microseconds), plus `attempt` and `cancel`.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), state_store::StoreError> {
/// use state_store::{NewRun, RunStatus, Store};
/// let store = Store::memory();
/// let run = store.create_run(NewRun::new("run-1", "agent")).await?;
/// assert_eq!((run.status, run.attempt), (RunStatus::Pending, 0));
/// let shape = serde_json::to_value(&run).unwrap();
/// assert_eq!(shape["status"], "pending");
/// assert_eq!(shape["multitask_strategy"], "enqueue");
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Run {
    /// Its id.
    pub run_id: String,
    /// Its thread; `None` for a stateless run.
    pub thread_id: Option<String>,
    /// The assistant it runs.
    pub assistant_id: String,
    /// Where it is in its life.
    pub status: RunStatus,
    /// Its metadata (a JSON object).
    pub metadata: Value,
    /// What the worker needs to run it.
    pub kwargs: Value,
    /// Its multitask strategy.
    pub multitask_strategy: MultitaskStrategy,
    /// Claims so far: 0 while never claimed, 1 on the first worker, 2
    /// after a takeover...
    pub attempt: u32,
    /// Not claimed before this time.
    #[serde(with = "iso")]
    pub available_at: SystemTime,
    /// When it was created.
    #[serde(with = "iso")]
    pub created_at: SystemTime,
    /// When it last changed: created, claimed, its lease renewed, a
    /// cancel asked, ended (not when its events are stored).
    #[serde(with = "iso")]
    pub updated_at: SystemTime,
    /// Who created it.
    pub owner: Option<String>,
    /// A cancel requested while it runs, not yet acted on by its worker.
    pub cancel: Option<CancelAction>,
    /// Its thread's last step when it was first claimed (`None` until
    /// then; 0 for a thread with no step, or a stateless run): a worker
    /// that takes the run over tells by it whether the run wrote steps
    /// before its first worker stopped. Not part of the Agent Server's
    /// run JSON.
    #[serde(skip)]
    pub base_seq: Option<u64>,
}

impl Run {
    fn from_row(row: RunRow) -> Result<Run, StoreError> {
        Run::decode(row, None)
    }

    /// `row` decoded; its metadata and kwargs are `values` when given: the
    /// values its text was just written from (a run created is not parsed
    /// back from what it was written as).
    fn decode(row: RunRow, values: Option<(Value, Value)>) -> Result<Run, StoreError> {
        let corrupt = |column: &'static str, detail: String| StoreError::CorruptRun {
            what: format!("run \"{}\"", row.run_id),
            column,
            detail,
        };
        let status = row
            .status
            .parse()
            .map_err(|e: String| corrupt("status", e))?;
        let multitask_strategy = match row.multitask_strategy.as_str() {
            "reject" => MultitaskStrategy::Reject,
            "enqueue" => MultitaskStrategy::Enqueue,
            "interrupt" => MultitaskStrategy::Interrupt,
            "rollback" => MultitaskStrategy::Rollback,
            other => {
                return Err(corrupt(
                    "multitask_strategy",
                    format!("unknown strategy {other:?}"),
                ));
            }
        };
        let json = |column: &'static str, text: &str| {
            serde_json::from_str::<Value>(text)
                .map_err(|e| corrupt(column, format!("not JSON: {e}")))
        };
        let (metadata, kwargs) = match values {
            Some(values) => values,
            None => (
                json("metadata", &row.metadata)?,
                json("kwargs", &row.kwargs)?,
            ),
        };
        if !metadata.is_object() {
            return Err(corrupt("metadata", "not a JSON object".into()));
        }
        let attempt = u32::try_from(row.attempt)
            .map_err(|_| corrupt("attempt", format!("{} is not an attempt", row.attempt)))?;
        let cancel = match row.cancel_action.as_deref() {
            None => None,
            Some(text) => Some(
                CancelAction::parse(text)
                    .ok_or_else(|| corrupt("cancel_action", format!("unknown action {text:?}")))?,
            ),
        };
        let base_seq = match row.base_seq {
            None => None,
            Some(seq) => Some(
                u64::try_from(seq)
                    .map_err(|_| corrupt("base_seq", format!("{seq} is not a step number")))?,
            ),
        };
        Ok(Run {
            status,
            metadata,
            kwargs,
            multitask_strategy,
            attempt,
            cancel,
            available_at: from_micros(row.available_at),
            created_at: from_micros(row.created_at),
            updated_at: from_micros(row.updated_at),
            run_id: row.run_id,
            thread_id: row.thread_id,
            assistant_id: row.assistant_id,
            owner: row.owner,
            base_seq,
        })
    }
}

/// A claimed run: the run and its lease's fencing token (the worker and
/// the attempt). Every write through it ([`Store::renew_run`],
/// [`Store::finish_run`], [`Store::append_run_events`]) is refused once
/// another worker has taken the run over.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), state_store::StoreError> {
/// use std::time::Duration;
/// use state_store::{NewRun, Store};
/// let store = Store::memory();
/// store.create_run(NewRun::new("run-1", "agent")).await?;
/// let claim = store.claim_run("worker-a", Duration::from_secs(30)).await?.unwrap();
/// assert_eq!((claim.run().run_id.as_str(), claim.worker(), claim.attempt()), ("run-1", "worker-a", 1));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Claim {
    run: Run,
    worker: String,
    others_due: bool,
}

impl Claim {
    /// The run, as claimed.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// # use std::time::Duration;
    /// let store = state_store::Store::memory();
    /// store.create_run(state_store::NewRun::new("run-1", "agent")).await?;
    /// let claim = store.claim_run("w", Duration::from_secs(30)).await?.unwrap();
    /// assert_eq!(claim.run().run_id, "run-1");
    /// # Ok(())
    /// # }
    /// ```
    pub fn run(&self) -> &Run {
        &self.run
    }

    /// The worker holding the lease.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// # use std::time::Duration;
    /// let store = state_store::Store::memory();
    /// store.create_run(state_store::NewRun::new("run-1", "agent")).await?;
    /// let claim = store.claim_run("w", Duration::from_secs(30)).await?.unwrap();
    /// assert_eq!(claim.worker(), "w");
    /// # Ok(())
    /// # }
    /// ```
    pub fn worker(&self) -> &str {
        &self.worker
    }

    /// The attempt the lease is for (the fencing token with the worker).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// # use std::time::Duration;
    /// let store = state_store::Store::memory();
    /// store.create_run(state_store::NewRun::new("run-1", "agent")).await?;
    /// let claim = store.claim_run("w", Duration::from_secs(30)).await?.unwrap();
    /// assert_eq!(claim.attempt(), 1);
    /// # Ok(())
    /// # }
    /// ```
    pub fn attempt(&self) -> u32 {
        self.run.attempt
    }

    /// Whether other runs were due when this one was claimed, as far as
    /// the store knew (`true` where it does not look: PostgreSQL, whose
    /// claim is one statement). A pool of workers wakes another idle one
    /// only then: runs created later wake one themselves.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// # use std::time::Duration;
    /// use state_store::{NewRun, Store};
    /// let store = Store::memory();
    /// store.create_run(NewRun::new("run-1", "agent")).await?;
    /// store.create_run(NewRun::new("run-2", "agent")).await?;
    /// let first = store.claim_run("w", Duration::from_secs(30)).await?.unwrap();
    /// assert!(first.others_due());
    /// let second = store.claim_run("w", Duration::from_secs(30)).await?.unwrap();
    /// assert!(!second.others_due());
    /// # Ok(())
    /// # }
    /// ```
    pub fn others_due(&self) -> bool {
        self.others_due
    }

    fn fence(&self) -> Fence<'_> {
        Fence {
            run_id: &self.run.run_id,
            thread_id: self.run.thread_id.as_deref(),
            worker: &self.worker,
            attempt: i64::from(self.run.attempt),
        }
    }
}

/// What [`Store::renew_run`] found.
///
/// ```
/// use state_store::{CancelAction, LeaseState};
/// assert!(LeaseState::Held.is_held() && LeaseState::Cancel(CancelAction::Interrupt).is_held());
/// assert!(!LeaseState::Lost.is_held());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseState {
    /// Still this worker's, extended.
    Held,
    /// Gone: another worker took the run over, or it was deleted. Stop
    /// writing (nothing more would be stored).
    Lost,
    /// Still this worker's, extended, but a cancel was requested: stop
    /// the run, then finish it (`interrupted`), or for a rollback undo
    /// its steps and delete it.
    Cancel(CancelAction),
}

impl LeaseState {
    /// True unless the lease was lost.
    ///
    /// ```
    /// assert!(state_store::LeaseState::Held.is_held());
    /// ```
    pub fn is_held(self) -> bool {
        self != LeaseState::Lost
    }
}

/// Which runs [`Store::list_runs`] returns: by status, by owner, a page
/// (`limit` 10 and `offset` 0 by default, as the Agent Server's).
///
/// ```
/// use state_store::{RunFilter, RunStatus};
/// let filter = RunFilter::default().status(RunStatus::Success).limit(5).offset(5).owner("ada");
/// assert_eq!((filter.limit, filter.offset), (5, 5));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RunFilter {
    /// Only runs in this status.
    pub status: Option<RunStatus>,
    /// Only runs of this owner (`None`: any).
    pub owner: Option<String>,
    /// At most this many.
    pub limit: usize,
    /// After skipping this many.
    pub offset: usize,
}

impl Default for RunFilter {
    fn default() -> Self {
        RunFilter {
            status: None,
            owner: None,
            limit: 10,
            offset: 0,
        }
    }
}

impl RunFilter {
    /// Only runs in `status`.
    ///
    /// ```
    /// use state_store::{RunFilter, RunStatus};
    /// assert_eq!(RunFilter::default().status(RunStatus::Error).status, Some(RunStatus::Error));
    /// ```
    pub fn status(mut self, status: RunStatus) -> Self {
        self.status = Some(status);
        self
    }

    /// Only runs of `owner`.
    ///
    /// ```
    /// use state_store::{RunFilter, RunStatus};
    /// assert_eq!(RunFilter::default().owner("ada").owner.as_deref(), Some("ada"));
    /// ```
    pub fn owner(mut self, owner: impl Into<String>) -> Self {
        self.owner = Some(owner.into());
        self
    }

    /// At most `limit` runs.
    ///
    /// ```
    /// use state_store::{RunFilter, RunStatus};
    /// assert_eq!(RunFilter::default().limit(3).limit, 3);
    /// ```
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }

    /// Skipping the first `offset`.
    ///
    /// ```
    /// use state_store::{RunFilter, RunStatus};
    /// assert_eq!(RunFilter::default().offset(3).offset, 3);
    /// ```
    pub fn offset(mut self, offset: usize) -> Self {
        self.offset = offset;
        self
    }
}

/// A stream event to store ([`Store::append_run_events`]): its name (the
/// SSE `event:`, a stream mode) and its data.
///
/// ```
/// let event = state_store::RunEventIn::new("values", serde_json::json!({"n": 1}));
/// assert_eq!(event.event, "values");
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RunEventIn {
    /// Its name.
    pub event: String,
    /// Its data.
    pub data: Value,
}

impl RunEventIn {
    /// An event named `event` carrying `data`.
    ///
    /// ```
    /// let event = state_store::RunEventIn::new("custom", serde_json::json!("hi"));
    /// assert_eq!(event.data, "hi");
    /// ```
    pub fn new(event: impl Into<String>, data: Value) -> Self {
        RunEventIn {
            event: event.into(),
            data,
        }
    }
}

/// A stored stream event: its number in the run (1, 2, ...: the SSE id
/// a client resumes after), name and data.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), state_store::StoreError> {
/// use std::time::Duration;
/// use serde_json::json;
/// use state_store::{NewRun, RunEventIn, Store};
/// let store = Store::memory();
/// store.create_run(NewRun::new("run-1", "agent")).await?;
/// let claim = store.claim_run("w", Duration::from_secs(30)).await?.unwrap();
/// let last = store.append_run_events(&claim, &[
///     RunEventIn::new("metadata", json!({"run_id": "run-1", "attempt": 1})),
///     RunEventIn::new("values", json!({"n": 1})),
/// ]).await?;
/// assert_eq!(last, Some(2));
/// let missed = store.run_events("run-1", 1, 100).await?;
/// assert_eq!((missed[0].seq, missed[0].event.as_str()), (2, "values"));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct RunEvent {
    /// Its number in the run, from 1.
    pub seq: u64,
    /// Its name.
    pub event: String,
    /// Its data.
    pub data: Value,
    /// When it was stored (for an SSE id of the Agent Server's form,
    /// `<epoch-ms>-<n>`).
    #[serde(with = "iso")]
    pub recorded_at: SystemTime,
}

/// Checks a run id (the rules of thread ids: not empty, at most 512
/// bytes, no NUL).
fn check_run_id(id: &str) -> Result<(), StoreError> {
    check_id(id).map_err(|e| StoreError::InvalidRun {
        what: "run id".into(),
        reason: e.to_string().replace("thread id", "run id"),
    })
}

fn visible(owner: Option<&str>, row_owner: Option<&str>) -> bool {
    owner.is_none() || owner == row_owner
}

/// A claim's events, made in the claim's transaction from the run as
/// claimed ([`ClaimDecoded::new`]'s closure, which the backends call once,
/// for the run they claim), and the run decoded there kept for the
/// [`Claim`] ([`ClaimDecoded::claim`]), with whether it had events (its
/// followers are woken only then).
struct ClaimDecoded(Arc<OnceLock<(Run, bool)>>);

/// A run being created, claimed as it is: its id, and the metadata and
/// arguments its row's text is written from. A claim changes neither, so
/// the claimed row is decoded with them, not parsed back.
type Creating = (String, Value, Value);

impl ClaimDecoded {
    fn new(
        events: impl Fn(&Run) -> Vec<RunEventIn> + Send + Sync + 'static,
        creating: Option<Creating>,
    ) -> (ClaimDecoded, ClaimEvents) {
        let decoded: Arc<OnceLock<(Run, bool)>> = Arc::default();
        let kept = decoded.clone();
        let creating = std::sync::Mutex::new(creating);
        let made = move |row: &RunRow| -> Result<Vec<(String, String)>, StoreError> {
            let values = match creating.lock().map(|mut c| c.take()) {
                Ok(Some((id, metadata, kwargs))) if id == row.run_id => Some((metadata, kwargs)),
                _ => None,
            };
            let run = Run::decode(row.clone(), values)?;
            let rows: Vec<(String, String)> = events(&run)
                .into_iter()
                .map(|e| (e.event, e.data.to_string()))
                .collect();
            let _ = kept.set((run, !rows.is_empty()));
            Ok(rows)
        };
        (ClaimDecoded(decoded), Arc::new(made))
    }

    /// The claim of `row`, announced: its watchers, and its followers if
    /// events were stored with it.
    fn claim(
        self,
        store: &Store,
        row: RunRow,
        worker: &str,
        others_due: bool,
    ) -> Result<Claim, StoreError> {
        // Alone by now (the backend dropped its events' closure once it ran).
        let decoded = match Arc::try_unwrap(self.0) {
            Ok(decoded) => decoded.into_inner(),
            Err(shared) => shared.get().cloned(),
        };
        let (run, stored) = match decoded {
            Some((run, stored)) if run.run_id == row.run_id => (run, stored),
            _ => (Run::from_row(row)?, false),
        };
        store.hub.runs.announce_opened(&run.run_id, false);
        if stored {
            store.hub.runs.announce_events(&run.run_id);
        }
        Ok(Claim {
            run,
            worker: worker.to_owned(),
            others_due,
        })
    }
}

fn micros_of(d: Duration) -> i64 {
    i64::try_from(d.as_micros()).unwrap_or(i64::MAX)
}

impl Store {
    /// Inserts a run, pending. In the same transaction, when its thread
    /// has runs pending or running, by its
    /// [`multitask_strategy`](NewRun::multitask_strategy): `reject` fails
    /// with [`StoreError::ThreadBusy`] (nothing written); `interrupt` and
    /// `rollback` cancel them (pending ones at once: interrupted, or
    /// deleted for a rollback; running ones get the cancel request, see
    /// [`renew_run`](Store::renew_run)); `enqueue` leaves them, and the
    /// new run waits its turn. The thread's record becomes `busy`.
    ///
    /// Fails with [`StoreError::ThreadNotFound`] when the thread has no
    /// record (see [`create_thread_record`](Store::create_thread_record)),
    /// or another owner's, unless [`IfNotExists::Create`];
    /// [`StoreError::RunExists`] for a taken id; [`StoreError::InvalidRun`]
    /// for metadata that is not an object. Wakes the workers.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use state_store::{IfNotExists, MultitaskStrategy, NewRun, RunStatus, Store, StoreError};
    /// let store = Store::memory();
    /// let first = NewRun::new("run-1", "agent").thread("t").if_not_exists(IfNotExists::Create);
    /// assert_eq!(store.create_run(first).await?.status, RunStatus::Pending);
    ///
    /// let second = NewRun::new("run-2", "agent").thread("t")
    ///     .multitask_strategy(MultitaskStrategy::Reject);
    /// let busy = store.create_run(second).await.unwrap_err();
    /// assert!(matches!(busy, StoreError::ThreadBusy { .. }));
    ///
    /// let third = NewRun::new("run-3", "agent").thread("t")
    ///     .multitask_strategy(MultitaskStrategy::Interrupt);
    /// store.create_run(third).await?;
    /// let first = store.get_run("run-1", None).await?.unwrap();
    /// assert_eq!(first.status, RunStatus::Interrupted);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn create_run(&self, new: NewRun) -> Result<Run, StoreError> {
        let (run, _) = self.create(new, None).await?;
        Ok(run)
    }

    /// [`create_run`](Store::create_run), and the run claimed for `worker`
    /// in the same write, when it is due at once (no delay; its thread
    /// runs nothing else and no older run of it waits): as
    /// [`claim_run_with_events`](Store::claim_run_with_events) would claim
    /// it, `events` included, but one commit instead of two. What a server
    /// does for a run it is about to run itself (a worker of its own is
    /// idle). `None`: not claimed, it waits for a claim as any run (and
    /// the workers are woken). Claimed in the same write on a SQLite file;
    /// elsewhere never (`None`).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use std::time::Duration;
    /// use state_store::{IfNotExists, NewRun, RunStatus, Store};
    /// let dir = tempfile::tempdir().unwrap();
    /// let store = Store::sqlite(dir.path().join("runs.db")).await?;
    /// let new = NewRun::new("run-1", "agent").thread("t").if_not_exists(IfNotExists::Create);
    /// let (run, claim) = store
    ///     .create_run_claimed(new, "w", Duration::from_secs(30), |_| Vec::new())
    ///     .await?;
    /// assert_eq!(run.status, RunStatus::Pending); // as created
    /// let claim = claim.expect("due at once: claimed");
    /// assert_eq!((claim.run().status, claim.attempt()), (RunStatus::Running, 1));
    /// // A second run of the thread waits for the first.
    /// let (_, second) = store
    ///     .create_run_claimed(NewRun::new("run-2", "agent").thread("t"), "w", Duration::from_secs(30), |_| Vec::new())
    ///     .await?;
    /// assert!(second.is_none());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn create_run_claimed(
        &self,
        new: NewRun,
        worker: &str,
        lease: Duration,
        events: impl Fn(&Run) -> Vec<RunEventIn> + Send + Sync + 'static,
    ) -> Result<(Run, Option<Claim>), StoreError> {
        let until = now_micros().saturating_add(micros_of(lease));
        let creating = (new.run_id.clone(), new.metadata.clone(), new.kwargs.clone());
        let (decoded, events) = ClaimDecoded::new(events, Some(creating));
        let claim = ClaimAtCreation {
            worker: worker.to_owned(),
            until,
            events,
        };
        let (run, claimed) = self.create(new, Some(claim)).await?;
        let claim = match claimed {
            Some(row) => Some(decoded.claim(self, *row, worker, false)?),
            None => None,
        };
        Ok((run, claim))
    }

    /// Creates a run (claimed as `claim` asks, where the backend can): the
    /// run as created, and as claimed.
    async fn create(
        &self,
        new: NewRun,
        claim: Option<ClaimAtCreation>,
    ) -> Result<(Run, Option<Box<RunRow>>), StoreError> {
        check_run_id(&new.run_id)?;
        if let Some(thread) = &new.thread_id {
            check_id(thread)?;
        }
        if !new.metadata.is_object() {
            return Err(StoreError::InvalidRun {
                what: format!("run \"{}\"", new.run_id),
                reason: "metadata must be a JSON object".into(),
            });
        }
        let thread_metadata = match &new.thread_metadata {
            None => None,
            Some(Value::Object(patch)) => Some(patch),
            Some(_) => {
                return Err(StoreError::InvalidRun {
                    what: format!("run \"{}\"", new.run_id),
                    reason: "thread metadata must be a JSON object".into(),
                });
            }
        };
        let now = now_micros();
        let text = |value: &Value| value.to_string();
        let on_inflight = match new.multitask_strategy {
            MultitaskStrategy::Enqueue => OnInflight::Enqueue,
            MultitaskStrategy::Reject => OnInflight::Reject,
            MultitaskStrategy::Interrupt => OnInflight::Cancel("interrupt"),
            MultitaskStrategy::Rollback => OnInflight::Cancel("rollback"),
        };
        let row = RunRow {
            run_id: new.run_id.clone(),
            thread_id: new.thread_id.clone(),
            assistant_id: new.assistant_id.clone(),
            status: "pending".into(),
            metadata: text(&new.metadata),
            kwargs: text(&new.kwargs),
            multitask_strategy: new.multitask_strategy.as_str().into(),
            attempt: 0,
            available_at: new.available_at.map_or(now, to_micros),
            created_at: now,
            updated_at: now,
            owner: new.owner.clone(),
            cancel_action: None,
            base_seq: None,
        };
        let created = self
            .backend
            .create_run(&NewRunRow {
                row,
                create_thread: new.if_not_exists == IfNotExists::Create,
                on_inflight,
                now,
                owner: new.owner.as_deref(),
                thread_metadata,
                claim,
            })
            .await?;
        match created {
            Created::Run {
                row,
                touched,
                claimed,
            } => {
                // Claimed here, no worker needs waking for it (its claim
                // announces it).
                if claimed.is_none() {
                    self.hub.runs.announce_opened(&row.run_id, true);
                }
                for id in &touched {
                    self.hub.runs.announce(Some(id), true);
                }
                Ok((
                    Run::decode(*row, Some((new.metadata, new.kwargs)))?,
                    claimed,
                ))
            }
            Created::ThreadBusy => Err(StoreError::ThreadBusy {
                thread: new.thread_id.unwrap_or_default(),
            }),
            Created::NoThread => Err(StoreError::ThreadNotFound {
                thread: new.thread_id.unwrap_or_default(),
            }),
            Created::Exists => Err(StoreError::RunExists { run: new.run_id }),
        }
    }

    /// Claims the oldest due run for `worker`: a pending run whose
    /// `available_at` has come and whose thread runs nothing else, or a
    /// running run whose lease expired (its worker died: taken over). The
    /// run becomes running, `attempt + 1`, leased to `worker` for `lease`;
    /// its thread's record `busy`. `None`: nothing to claim.
    ///
    /// PostgreSQL: one `UPDATE … WHERE run_id = (SELECT … FOR UPDATE SKIP
    /// LOCKED) RETURNING`, and a unique index on the running runs' thread:
    /// any number of workers in any number of processes claim at once,
    /// and a thread never has two running runs. SQLite: a write
    /// transaction (`BEGIN IMMEDIATE`). Memory: one lock.
    ///
    /// A run taken over may carry a cancel requested before its worker
    /// died ([`Run::cancel`]): the new worker acts on it at once. The
    /// attempt tells how often the run was tried (LangGraph fails a run
    /// after 3): the store does not limit it.
    ///
    /// A worker renews its lease well before it expires
    /// ([`renew_run`](Store::renew_run)); times are each process's clock,
    /// so machines sharing a database keep their clocks in sync (a lease
    /// of 30 s tolerates seconds of skew).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use std::time::Duration;
    /// use state_store::{NewRun, RunStatus, Store};
    /// let store = Store::memory();
    /// store.create_run(NewRun::new("run-1", "agent")).await?;
    /// let claim = store.claim_run("w", Duration::from_secs(30)).await?.unwrap();
    /// assert_eq!(claim.run().status, RunStatus::Running);
    /// assert!(store.claim_run("w2", Duration::from_secs(30)).await?.is_none());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn claim_run(
        &self,
        worker: &str,
        lease: Duration,
    ) -> Result<Option<Claim>, StoreError> {
        self.claim_run_with_events(worker, lease, |_| Vec::new())
            .await
    }

    /// [`claim_run`](Store::claim_run), and the events `events` makes
    /// from the run as claimed (a worker's first events: its `metadata`)
    /// appended to it in the same transaction: one write where there were
    /// two. They are numbered after the run's last (a run taken over
    /// keeps its first worker's events).
    ///
    /// `events` runs inside the claim's transaction, once for the run
    /// claimed: keep it short. On SQLite it runs on the store's writer
    /// thread, outside any tokio runtime (it cannot spawn tasks, and must
    /// not wait for the store, which would wait for it), and a panic in it
    /// undoes the claim and is raised again here.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use std::time::Duration;
    /// use serde_json::json;
    /// use state_store::{NewRun, RunEventIn, Store};
    /// let store = Store::memory();
    /// store.create_run(NewRun::new("run-1", "agent")).await?;
    /// let claim = store
    ///     .claim_run_with_events("w", Duration::from_secs(30), |run| {
    ///         vec![RunEventIn::new("metadata", json!({"run_id": run.run_id, "attempt": run.attempt}))]
    ///     })
    ///     .await?
    ///     .unwrap();
    /// let events = store.run_events("run-1", 0, 10).await?;
    /// assert_eq!((events[0].seq, events[0].data["attempt"].as_u64()), (1, Some(1)));
    /// assert_eq!(claim.attempt(), 1);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn claim_run_with_events(
        &self,
        worker: &str,
        lease: Duration,
        events: impl Fn(&Run) -> Vec<RunEventIn> + Send + Sync + 'static,
    ) -> Result<Option<Claim>, StoreError> {
        let now = now_micros();
        let until = now.saturating_add(micros_of(lease));
        let (decoded, events) = ClaimDecoded::new(events, None);
        let Some((row, others_due)) = self.backend.claim_run(worker, now, until, events).await?
        else {
            return Ok(None);
        };
        decoded.claim(self, row, worker, others_due).map(Some)
    }

    /// Extends the claim's lease to `lease` from now, if it still holds:
    /// [`LeaseState::Lost`] when another worker took the run over (its
    /// lease had expired) or it was deleted: the caller stops writing.
    /// [`LeaseState::Cancel`] when a cancel was requested.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use std::time::Duration;
    /// use state_store::{CancelAction, LeaseState, NewRun, Store};
    /// let store = Store::memory();
    /// store.create_run(NewRun::new("run-1", "agent")).await?;
    /// let claim = store.claim_run("w", Duration::from_secs(30)).await?.unwrap();
    /// assert_eq!(store.renew_run(&claim, Duration::from_secs(30)).await?, LeaseState::Held);
    /// store.cancel_run("run-1", CancelAction::Interrupt, None).await?;
    /// let state = store.renew_run(&claim, Duration::from_secs(30)).await?;
    /// assert_eq!(state, LeaseState::Cancel(CancelAction::Interrupt));
    /// store.delete_run("run-1", None).await?;
    /// assert_eq!(store.renew_run(&claim, Duration::from_secs(30)).await?, LeaseState::Lost);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn renew_run(
        &self,
        claim: &Claim,
        lease: Duration,
    ) -> Result<LeaseState, StoreError> {
        let now = now_micros();
        let until = now.saturating_add(micros_of(lease));
        Ok(
            match self.backend.renew_run(claim.fence(), now, until).await? {
                None => LeaseState::Lost,
                Some(None) => LeaseState::Held,
                Some(Some(action)) => match CancelAction::parse(&action) {
                    Some(action) => LeaseState::Cancel(action),
                    None => {
                        return Err(StoreError::CorruptRun {
                            what: format!("run \"{}\"", claim.run.run_id),
                            column: "cancel_action",
                            detail: format!("unknown action {action:?}"),
                        });
                    }
                },
            },
        )
    }

    /// Ends the claimed run with `status` (success, error, timeout or
    /// interrupted), if the claim still holds (`false`: lost, nothing
    /// written). Its lease and any cancel request are cleared. Its
    /// thread's record becomes `busy` while other runs are in flight on
    /// it, else `thread_status`, or when `None`: `idle` after success or
    /// interrupted, `error` after error or timeout (LangGraph's
    /// `set_joint_status`; pass [`ThreadStatus::Interrupted`] when the
    /// graph paused at an interrupt). Wakes the workers (the thread's next
    /// run may be claimed) and the run's watchers.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use std::time::Duration;
    /// use state_store::{IfNotExists, NewRun, RunStatus, Store, ThreadStatus};
    /// let store = Store::memory();
    /// store.create_run(NewRun::new("run-1", "agent").thread("t").if_not_exists(IfNotExists::Create)).await?;
    /// let claim = store.claim_run("w", Duration::from_secs(30)).await?.unwrap();
    /// assert!(store.finish_run(&claim, RunStatus::Interrupted, Some(ThreadStatus::Interrupted)).await?);
    /// assert_eq!(store.thread_record("t", None).await?.unwrap().status, ThreadStatus::Interrupted);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn finish_run(
        &self,
        claim: &Claim,
        status: RunStatus,
        thread_status: Option<ThreadStatus>,
    ) -> Result<bool, StoreError> {
        self.finish_run_with_events(claim, status, thread_status, &[])
            .await
    }

    /// [`finish_run`](Store::finish_run), with the run's last events
    /// appended first in the same transaction (numbered after its last):
    /// a worker's events that came with the run's end, and the end, in
    /// one write. False: the lease was lost, nothing written.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use std::time::Duration;
    /// use serde_json::json;
    /// use state_store::{NewRun, RunEventIn, RunStatus, Store};
    /// let store = Store::memory();
    /// store.create_run(NewRun::new("run-1", "agent")).await?;
    /// let claim = store.claim_run("w", Duration::from_secs(30)).await?.unwrap();
    /// let last = [RunEventIn::new("values", json!({"n": 2}))];
    /// assert!(store.finish_run_with_events(&claim, RunStatus::Success, None, &last).await?);
    /// assert_eq!(store.get_run("run-1", None).await?.unwrap().status, RunStatus::Success);
    /// assert_eq!(store.run_events("run-1", 0, 10).await?.len(), 1);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn finish_run_with_events(
        &self,
        claim: &Claim,
        status: RunStatus,
        thread_status: Option<ThreadStatus>,
        events: &[RunEventIn],
    ) -> Result<bool, StoreError> {
        if !status.is_final() {
            return Err(StoreError::InvalidRun {
                what: format!("run \"{}\"", claim.run.run_id),
                reason: format!("a run finishes with a final status, not {status}"),
            });
        }
        let thread_status = thread_status.unwrap_or(match status {
            RunStatus::Error | RunStatus::Timeout => ThreadStatus::Error,
            _ => ThreadStatus::Idle,
        });
        let rows: Vec<(&str, String)> = events
            .iter()
            .map(|e| (e.event.as_str(), e.data.to_string()))
            .collect();
        let finished = self
            .backend
            .finish_run(
                claim.fence(),
                status.as_str(),
                thread_status.as_str(),
                now_micros(),
                rows,
            )
            .await?;
        let Some(waiting) = finished else {
            return Ok(false);
        };
        if !events.is_empty() {
            self.hub.runs.announce_events(&claim.run.run_id);
        }
        // The workers are woken only when runs wait on the thread the
        // run lets go of: nothing else became claimable.
        self.hub
            .runs
            .announce_ended(&claim.run.run_id, status, waiting);
        Ok(true)
    }

    /// Rolls the claimed run back ([`CancelAction::Rollback`]), if the
    /// claim still holds (`false`: lost, nothing changed): in one
    /// transaction, its thread is taken back to the run's
    /// [`base_seq`](Run::base_seq) (as [`rewind_thread`](Store::rewind_thread)
    /// does: the steps and snapshots the run wrote are deleted), and the
    /// run and its events are deleted ([`get_run`](Store::get_run) finds
    /// nothing). Its thread's record becomes `busy` while other runs are
    /// in flight on it, else `thread_status` (`idle` when `None`; pass
    /// [`ThreadStatus::Interrupted`] when the state at the base step
    /// paused at an interrupt). Wakes the workers, the run's watchers
    /// (their run is gone) and the thread's.
    ///
    /// The worker must have stopped writing first: its graph dropped,
    /// nothing of it still committing (a step committed after the rewind
    /// would conflict, except the run's first). Refused with
    /// [`StoreError::NoSuchStep`], nothing changed, when the thread's
    /// state at the base step can no longer be rebuilt (compacted away).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use std::time::Duration;
    /// use state_core::{AgentState, State};
    /// use state_store::{IfNotExists, NewRun, Store};
    /// # #[derive(AgentState, Debug)]
    /// # struct S { n: u32 }
    /// let store = Store::memory();
    /// let mut t = store.thread::<S>("t").await?;
    /// t.apply(S::delta().n(1u32)).await?;
    /// store.create_run(NewRun::new("run-1", "agent").thread("t").if_not_exists(IfNotExists::Create)).await?;
    /// let claim = store.claim_run("w", Duration::from_secs(30)).await?.unwrap();
    /// assert_eq!(claim.run().base_seq, Some(1));
    /// t.apply(S::delta().n(2u32)).await?; // what the run wrote
    /// assert!(store.roll_back_run(&claim, None).await?);
    /// assert!(store.get_run("run-1", None).await?.is_none());
    /// assert_eq!(store.thread::<S>("t").await?.state().n, 1);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn roll_back_run(
        &self,
        claim: &Claim,
        thread_status: Option<ThreadStatus>,
    ) -> Result<bool, StoreError> {
        let thread_status = thread_status.unwrap_or(ThreadStatus::Idle);
        let rolled = self
            .backend
            .roll_back_run(
                claim.fence(),
                thread_status.as_str(),
                now_micros(),
                crate::step::now_millis(),
            )
            .await?;
        match rolled {
            RolledBack::Lost => Ok(false),
            RolledBack::Refused(refused) => {
                let thread = claim.run.thread_id.as_deref().unwrap_or_default();
                let base = claim.run.base_seq.unwrap_or(0);
                crate::store::rewind_outcome(&self.hub, thread, base, refused).map(|_| false)
            }
            RolledBack::Done {
                thread,
                base_seq,
                steps,
            } => {
                if let (Some(thread), true) = (thread, steps > 0) {
                    self.hub.rewound(&thread, base_seq);
                }
                self.hub.runs.announce(Some(&claim.run.run_id), true);
                Ok(true)
            }
        }
    }

    /// Hands the claimed run back (graceful shutdown): pending again, its
    /// lease cleared, its attempt as it is (the next claim counts one
    /// more). The thread stays busy. Does nothing if the claim was lost.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use std::time::Duration;
    /// use state_store::{NewRun, Store};
    /// let store = Store::memory();
    /// store.create_run(NewRun::new("run-1", "agent")).await?;
    /// let claim = store.claim_run("w", Duration::from_secs(30)).await?.unwrap();
    /// store.release_run(claim).await?;
    /// let again = store.claim_run("w2", Duration::from_secs(30)).await?.unwrap();
    /// assert_eq!(again.attempt(), 2);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn release_run(&self, claim: Claim) -> Result<(), StoreError> {
        if self
            .backend
            .release_run(claim.fence(), now_micros())
            .await?
        {
            self.hub.runs.announce(Some(&claim.run.run_id), true);
        }
        Ok(())
    }

    /// Run `run_id`, if it exists and `owner` (when given) owns it: a run
    /// of another owner is not found.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use state_store::{NewRun, Store};
    /// let store = Store::memory();
    /// store.create_run(NewRun::new("run-1", "agent").owner("ada")).await?;
    /// assert!(store.get_run("run-1", Some("ada")).await?.is_some());
    /// assert!(store.get_run("run-1", Some("bob")).await?.is_none());
    /// assert!(store.get_run("run-1", None).await?.is_some(), "no owner: no filter");
    /// # Ok(())
    /// # }
    /// ```
    pub async fn get_run(
        &self,
        run_id: &str,
        owner: Option<&str>,
    ) -> Result<Option<Run>, StoreError> {
        check_run_id(run_id)?;
        match self.backend.get_run(run_id).await? {
            Some(row) if visible(owner, row.owner.as_deref()) => Run::from_row(row).map(Some),
            _ => Ok(None),
        }
    }

    /// The runs of thread `thread_id` (`None`: the stateless runs), newest
    /// first, as `filter` selects them.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use state_store::{IfNotExists, NewRun, RunFilter, Store};
    /// let store = Store::memory();
    /// for id in ["run-1", "run-2"] {
    ///     store.create_run(NewRun::new(id, "agent").thread("t").if_not_exists(IfNotExists::Create)).await?;
    /// }
    /// let runs = store.list_runs(Some("t"), RunFilter::default()).await?;
    /// assert_eq!(runs.iter().map(|r| r.run_id.as_str()).collect::<Vec<_>>(), ["run-2", "run-1"]);
    /// assert!(store.list_runs(None, RunFilter::default()).await?.is_empty());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn list_runs(
        &self,
        thread_id: Option<&str>,
        filter: RunFilter,
    ) -> Result<Vec<Run>, StoreError> {
        if let Some(thread) = thread_id {
            check_id(thread)?;
        }
        let rows = self
            .backend
            .list_runs(RunScan {
                thread_id,
                status: filter.status.map(RunStatus::as_str),
                owner: filter.owner.as_deref(),
                limit: filter.limit,
                offset: filter.offset,
            })
            .await?;
        rows.into_iter().map(Run::from_row).collect()
    }

    /// Requests a cancel of run `run_id` (visible to `owner`). A pending
    /// run is cancelled at once (interrupted; deleted for a rollback, and
    /// `None` is returned); a running one gets
    /// [`cancel`](Run::cancel) set, and its worker is woken (PostgreSQL:
    /// `NOTIFY`, in any process; else in this one) to see it through
    /// [`watch_run`](Store::watch_run) and [`renew_run`](Store::renew_run).
    /// A finished run is left as it is. `Ok(None)` too when no such run.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use state_store::{CancelAction, NewRun, RunStatus, Store};
    /// let store = Store::memory();
    /// store.create_run(NewRun::new("run-1", "agent")).await?;
    /// let run = store.cancel_run("run-1", CancelAction::Interrupt, None).await?.unwrap();
    /// assert_eq!(run.status, RunStatus::Interrupted);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn cancel_run(
        &self,
        run_id: &str,
        action: CancelAction,
        owner: Option<&str>,
    ) -> Result<Option<Run>, StoreError> {
        check_run_id(run_id)?;
        match self
            .backend
            .cancel_run(run_id, action.as_str(), owner, now_micros())
            .await?
        {
            Cancelled::NotFound => Ok(None),
            Cancelled::Done(row) => {
                self.hub.runs.announce(Some(run_id), true);
                row.map(|row| Run::from_row(*row)).transpose()
            }
        }
    }

    /// Deletes run `run_id` (visible to `owner`) with its events. A
    /// running run's worker loses its lease. False: no such run.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use state_store::{NewRun, Store};
    /// let store = Store::memory();
    /// store.create_run(NewRun::new("run-1", "agent").owner("ada")).await?;
    /// assert!(!store.delete_run("run-1", Some("bob")).await?);
    /// assert!(store.delete_run("run-1", Some("ada")).await?);
    /// assert!(store.get_run("run-1", None).await?.is_none());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn delete_run(&self, run_id: &str, owner: Option<&str>) -> Result<bool, StoreError> {
        check_run_id(run_id)?;
        let deleted = self.backend.delete_run(run_id, owner, now_micros()).await?;
        if deleted {
            self.hub.runs.announce(Some(run_id), true);
        }
        Ok(deleted)
    }

    /// Wake-ups for a worker: see [`RunWakeups`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use state_store::{NewRun, Store, Wake};
    /// let store = Store::memory();
    /// let mut wakeups = store.run_wakeups();
    /// assert_eq!(wakeups.next().await?, Wake::Start);
    /// store.create_run(NewRun::new("run-1", "agent")).await?;
    /// assert_eq!(wakeups.next().await?, Wake::Notified);
    /// # Ok(())
    /// # }
    /// ```
    pub fn run_wakeups(&self) -> RunWakeups {
        RunWakeups::new(self.hub.runs.clone(), self.backend.clone())
    }

    /// Appends stream events to the claimed run, in order, numbered after
    /// its last (1, 2, ...: the SSE ids), if the claim still holds:
    /// `Some(last number)`, or `None` when the lease was lost (nothing
    /// written). Wakes the run's watchers, in any process on PostgreSQL.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use std::time::Duration;
    /// use serde_json::json;
    /// use state_store::{NewRun, RunEventIn, Store};
    /// let store = Store::memory();
    /// store.create_run(NewRun::new("run-1", "agent")).await?;
    /// let claim = store.claim_run("w", Duration::from_secs(30)).await?.unwrap();
    /// let first = [RunEventIn::new("values", json!({}))];
    /// assert_eq!(store.append_run_events(&claim, &first).await?, Some(1));
    /// assert_eq!(store.append_run_events(&claim, &first).await?, Some(2));
    /// # Ok(())
    /// # }
    /// ```
    pub async fn append_run_events(
        &self,
        claim: &Claim,
        events: &[RunEventIn],
    ) -> Result<Option<u64>, StoreError> {
        let rows: Vec<(&str, String)> = events
            .iter()
            .map(|e| (e.event.as_str(), e.data.to_string()))
            .collect();
        let last = self
            .backend
            .append_run_events(claim.fence(), rows, now_micros())
            .await?;
        if last.is_some() && !events.is_empty() {
            self.hub.runs.announce_events(&claim.run.run_id);
        }
        Ok(last)
    }

    /// The events of run `run_id` numbered above `after`, at most
    /// `limit`, in order: what a client resuming with `Last-Event-ID:
    /// after` missed. Empty for an unknown run (check it with
    /// [`get_run`](Store::get_run) and its owner first).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// let store = state_store::Store::memory();
    /// assert!(store.run_events("nope", 0, 10).await?.is_empty());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn run_events(
        &self,
        run_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<RunEvent>, StoreError> {
        check_run_id(run_id)?;
        let rows = self.backend.run_events(run_id, after, limit).await?;
        rows.into_iter()
            .map(|(seq, event, data, recorded_at)| {
                let corrupt = |column: &'static str, detail: String| StoreError::CorruptRun {
                    what: format!("run \"{run_id}\", event {seq}"),
                    column,
                    detail,
                };
                Ok(RunEvent {
                    seq: u64::try_from(seq)
                        .map_err(|_| corrupt("seq", format!("negative number {seq}")))?,
                    data: serde_json::from_str(&data)
                        .map_err(|e| corrupt("data", format!("not JSON: {e}")))?,
                    event,
                    recorded_at: from_micros(recorded_at),
                })
            })
            .collect()
    }

    /// Deletes the stream events of the runs that ended (neither pending
    /// nor running) and last changed before `ended_before`; returns how
    /// many. Events are kept so that a client can resume a stream, for a
    /// while after its run ended (LangGraph keeps them 120 s): a server
    /// calls this now and then.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use std::time::{Duration, SystemTime};
    /// use serde_json::json;
    /// use state_store::{NewRun, RunEventIn, RunStatus, Store};
    /// let store = Store::memory();
    /// store.create_run(NewRun::new("run-1", "agent")).await?;
    /// let claim = store.claim_run("w", Duration::from_secs(30)).await?.unwrap();
    /// store.append_run_events(&claim, &[RunEventIn::new("values", json!(1))]).await?;
    /// assert_eq!(store.prune_run_events(SystemTime::now()).await?, 0, "still running");
    /// store.finish_run(&claim, RunStatus::Success, None).await?;
    /// assert_eq!(store.prune_run_events(SystemTime::now() + Duration::from_secs(1)).await?, 1);
    /// assert!(store.run_events("run-1", 0, 10).await?.is_empty());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn prune_run_events(&self, ended_before: SystemTime) -> Result<u64, StoreError> {
        self.backend.prune_run_events(to_micros(ended_before)).await
    }

    /// A watcher of run `run_id`: see [`RunWatch`]. Subscribe before
    /// reading the run or its events, then wait on it when caught up.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use std::time::Duration;
    /// use state_store::{CancelAction, NewRun, Store};
    /// let store = Store::memory();
    /// store.create_run(NewRun::new("run-1", "agent")).await?;
    /// let claim = store.claim_run("w", Duration::from_secs(30)).await?.unwrap();
    /// let mut watch = store.watch_run("run-1");
    /// store.cancel_run("run-1", CancelAction::Interrupt, None).await?;
    /// watch.changed().await; // at once: the cancel was announced
    /// assert!(store.get_run("run-1", None).await?.unwrap().cancel.is_some());
    /// # Ok(())
    /// # }
    /// ```
    pub fn watch_run(&self, run_id: &str) -> RunWatch {
        self.hub.runs.watch(run_id)
    }
}
