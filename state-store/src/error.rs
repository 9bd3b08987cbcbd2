//! [`StoreError`]: everything that can go wrong between a thread handle and
//! its backend, each variant naming the thread (and the step, where there is
//! one) so a log line is enough to find the row.

use state_core::StateError;
use std::error::Error as StdError;

/// A boxed error from a backend driver (sqlx), kept as a source.
pub type BoxError = Box<dyn StdError + Send + Sync + 'static>;

/// An error from the store.
///
/// [`is_conflict`](StoreError::is_conflict) tells the one error a worker is
/// expected to handle by itself: another writer committed first; call
/// [`Thread::reload`](crate::Thread::reload) and retry the step.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// Another writer appended to the thread first: this handle's state is
    /// stale. Nothing was written; reload and retry.
    #[error(
        "thread \"{thread}\" moved on: this handle is at step {local}, the store is at step {stored}; reload the thread and retry"
    )]
    Conflict {
        /// The thread.
        thread: String,
        /// The last step this handle has seen.
        local: u64,
        /// The last step committed in the store.
        stored: u64,
    },

    /// The reducers refused the step: nothing was logged or applied.
    #[error("thread \"{thread}\": the reducers refused the step")]
    State {
        /// The thread.
        thread: String,
        /// The reducers' error.
        #[source]
        source: StateError,
    },

    /// The thread does not exist (it was deleted, or never created).
    #[error("thread \"{thread}\" does not exist")]
    ThreadNotFound {
        /// The thread.
        thread: String,
    },

    /// A watched thread was deleted: the stream of
    /// [`Store::watch`](crate::Store::watch) ends with this error.
    #[error("thread \"{thread}\" was deleted while it was being watched")]
    ThreadDeleted {
        /// The thread.
        thread: String,
    },

    /// A watched thread was rewound ([`Store::rewind_thread`](crate::Store::rewind_thread),
    /// a run rolled back) below a step the stream had delivered: those
    /// steps no longer exist, and the ones numbered like them now are
    /// others. The stream of [`Store::watch`](crate::Store::watch) ends
    /// with this error; watch again from `seq` (or from an earlier step
    /// you still trust).
    #[error(
        "thread \"{thread}\" was rewound to step {seq} while it was being watched: steps after it that were delivered no longer exist"
    )]
    ThreadRewound {
        /// The thread.
        thread: String,
        /// The step it was taken back to; 0 when it was rewound more than
        /// once since the stream last read it (the store keeps the last
        /// rewind's step only, and an earlier one may have gone lower).
        seq: u64,
    },

    /// The thread already exists (a fork's target, say).
    #[error("thread \"{thread}\" already exists")]
    ThreadExists {
        /// The thread.
        thread: String,
    },

    /// The thread id cannot be stored.
    #[error("invalid thread id {shown}: {reason}")]
    InvalidThreadId {
        /// The id, quoted and shortened for display.
        shown: String,
        /// What is wrong with it.
        reason: &'static str,
    },

    /// A step number outside the thread's log.
    #[error("thread \"{thread}\" has no step {seq}: {reason}")]
    NoSuchStep {
        /// The thread.
        thread: String,
        /// The step asked for.
        seq: u64,
        /// Why it is not there (past the end, compacted away).
        reason: String,
    },

    /// A stored row cannot be read back: bad JSON, an unknown field, a
    /// value of the wrong type, a gap in the log.
    #[error("thread \"{thread}\", {what} {seq}: stored data is corrupt: {detail}")]
    Corrupt {
        /// The thread.
        thread: String,
        /// `step` or `snapshot`.
        what: &'static str,
        /// Its sequence number.
        seq: u64,
        /// What was found.
        detail: String,
    },

    /// Data written by a newer version of the program (or of this crate)
    /// than the one running: refused rather than loaded half-way.
    #[error(
        "{what}: written by version {found}, but this program knows versions up to {known}; upgrade it"
    )]
    TooNew {
        /// What was too new (the store's tables, a thread's state).
        what: String,
        /// The version found.
        found: i64,
        /// The newest version this program knows.
        known: i64,
    },

    /// Stored data of an older schema version could not be migrated: the
    /// state's migration function (or an alias) refused it.
    #[error("thread \"{thread}\", {what} {seq}: cannot migrate stored data: {message}")]
    Migration {
        /// The thread.
        thread: String,
        /// `step` or `snapshot`.
        what: &'static str,
        /// Its sequence number.
        seq: u64,
        /// What the migration said.
        message: String,
    },

    /// Step metadata must be a JSON object.
    #[error("step metadata must be a JSON object, got {got}")]
    Metadata {
        /// What was given.
        got: &'static str,
    },

    /// The body of a pending step ([`Thread::log_pending`](crate::Thread::log_pending))
    /// must be a JSON object. Nothing was logged.
    #[error("thread \"{thread}\": a pending step's body must be a JSON object, got {got}")]
    PendingBody {
        /// The thread.
        thread: String,
        /// What was given.
        got: &'static str,
    },

    /// A delta or state could not be written as JSON.
    #[error("thread \"{thread}\": cannot write the {what} as JSON")]
    Encode {
        /// The thread.
        thread: String,
        /// What was being written.
        what: &'static str,
        /// serde_json's error.
        #[source]
        source: serde_json::Error,
    },

    /// A namespace of long-term memory items that cannot be used: an
    /// empty label, a label with a `.` (labels are joined with `.` when
    /// stored) or a NUL, an empty namespace or the reserved root
    /// `"langgraph"` for a put. As LangGraph's `InvalidNamespaceError`.
    #[error("invalid namespace {namespace}: {reason}")]
    InvalidNamespace {
        /// The namespace, as a list of labels: `["users", "u.7"]`.
        namespace: String,
        /// What is wrong, and what is expected.
        reason: String,
    },

    /// An item, a search filter or a search that cannot be used: a value
    /// that is not a JSON object, a key with a NUL, an unknown filter
    /// operator, a query on a store without an index. Nothing was written.
    #[error("{what}: {reason}")]
    InvalidItem {
        /// The item (its key and namespace), or the search.
        what: String,
        /// What is wrong, and what is expected.
        reason: String,
    },

    /// A stored item cannot be read back: its value is not a JSON object,
    /// its namespace or times are not valid, its vectors do not fit the
    /// index.
    #[error("item {key:?} in namespace {namespace}: stored data is corrupt: {detail}")]
    CorruptItem {
        /// The namespace, as a list of labels.
        namespace: String,
        /// The key.
        key: String,
        /// What was found.
        detail: String,
    },

    /// The embedding function of the store's index failed, or answered
    /// with the wrong number of vectors or the wrong dimensions. Nothing
    /// was written.
    #[error("{what}: {detail}")]
    Embedding {
        /// What was being embedded (an item, a search's query).
        what: String,
        /// What went wrong.
        detail: String,
        /// The embedding function's own error, when it returned one.
        #[source]
        source: Option<BoxError>,
    },

    /// A run was created with `multitask_strategy` reject while its
    /// thread has a run pending or running. The message is LangGraph's
    /// (its Agent Server answers 409 with it). Nothing was written.
    #[error(
        "Thread is already running a task. Wait for it to finish or choose a different multitask strategy."
    )]
    ThreadBusy {
        /// The thread.
        thread: String,
    },

    /// A run with this id exists already. Nothing was written.
    #[error("run \"{run}\" already exists")]
    RunExists {
        /// The run.
        run: String,
    },

    /// An assistant with this id exists already
    /// ([`Store::create_assistant`](crate::Store::create_assistant) with
    /// [`IfExists::Raise`](crate::IfExists::Raise)). Nothing was written.
    #[error("assistant \"{assistant}\" already exists")]
    AssistantExists {
        /// The assistant.
        assistant: String,
    },

    /// A cron with this id exists already
    /// ([`Store::create_cron`](crate::Store::create_cron)). Nothing was
    /// written.
    #[error("cron \"{cron}\" already exists")]
    CronExists {
        /// The cron.
        cron: String,
    },

    /// The assistant has no such version
    /// ([`Store::set_assistant_version`](crate::Store::set_assistant_version)).
    /// Nothing was written.
    #[error("assistant \"{assistant}\" has no version {version}")]
    NoSuchAssistantVersion {
        /// The assistant.
        assistant: String,
        /// The version asked for.
        version: u64,
    },

    /// A run, a thread record, an assistant or a cron that cannot be
    /// stored: metadata that is not a JSON object, an invalid id. Nothing
    /// was written.
    #[error("{what}: {reason}")]
    InvalidRun {
        /// The run or thread.
        what: String,
        /// What is wrong, and what is expected.
        reason: String,
    },

    /// A stored run, run event, thread record, assistant or cron cannot
    /// be read back: an unknown status, JSON that does not parse, a
    /// negative number.
    #[error("{what}, column {column}: stored data is corrupt: {detail}")]
    CorruptRun {
        /// The run (`run "…"`), thread record (`thread record "…"`),
        /// assistant (`assistant "…"`) or cron (`cron "…"`).
        what: String,
        /// The column.
        column: &'static str,
        /// What was found.
        detail: String,
    },

    /// The database failed (I/O, connection, constraint). When a step was
    /// being committed and the outcome could not be determined, the handle
    /// reloads before its next step.
    #[error("{context}")]
    Backend {
        /// What the store was doing.
        context: String,
        /// The driver's error.
        #[source]
        source: BoxError,
    },
}

impl StoreError {
    /// True when another writer committed to the thread first: reload
    /// ([`Thread::reload`](crate::Thread::reload)) and retry.
    pub fn is_conflict(&self) -> bool {
        matches!(self, StoreError::Conflict { .. })
    }

    /// The reducers' error, when the step was refused by them.
    pub fn state_error(&self) -> Option<&StateError> {
        match self {
            StoreError::State { source, .. } => Some(source),
            _ => None,
        }
    }

    // Only the SQL backends have a driver to fail.
    #[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
    pub(crate) fn backend(context: impl Into<String>, source: impl Into<BoxError>) -> Self {
        StoreError::Backend {
            context: context.into(),
            source: source.into(),
        }
    }

    pub(crate) fn corrupt(
        thread: &str,
        what: &'static str,
        seq: u64,
        detail: impl std::fmt::Display,
    ) -> Self {
        StoreError::Corrupt {
            thread: thread.to_owned(),
            what,
            seq,
            detail: detail.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_error<E: StdError + Send + Sync + 'static>() {}

    #[test]
    fn store_error_is_a_thread_safe_error() {
        assert_error::<StoreError>();
    }

    #[test]
    fn conflict_names_thread_and_both_steps() {
        let e = StoreError::Conflict {
            thread: "user-42".into(),
            local: 7,
            stored: 9,
        };
        assert!(e.is_conflict());
        let text = e.to_string();
        assert!(text.contains("\"user-42\"") && text.contains('7') && text.contains('9'));
    }
}
