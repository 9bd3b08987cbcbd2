//! The [`Store`] handle itself: what every clone of a store and every
//! [`Thread`](crate::Thread) it opened share (the backend, the snapshot
//! policy, the watchers' hub, the items' index), and the methods a thread
//! calls back through it: its history, time travel and compaction.
//!
//! The rest of `Store`'s methods (opening stores and threads, forks,
//! listings, watching) are in `store.rs`, which opens threads
//! (`thread.rs`); a thread keeps this handle. Both files use this one and
//! neither uses the other: what they share is here.

use crate::backend::Backend;
use crate::error::StoreError;
use crate::ids::check_id;
use crate::rebuild::rebuild;
use crate::snapshot::SnapshotPolicy;
use crate::step::StepRecord;
use crate::watch::Hub;
use serde::Serialize;
use state_core::State;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

/// Where threads are stored: SQLite, PostgreSQL or memory.
///
/// Cheap to clone (clones share the connection pool); `Send + Sync`, and
/// every future it returns is `Send`, so thread handles can run in
/// `tokio::spawn`.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), state_store::StoreError> {
/// use state_core::{AgentState, Message, Messages, State};
/// use state_store::Store;
///
/// #[derive(AgentState, Debug, Clone, PartialEq)]
/// struct Chat {
///     #[reducer(add_messages)]
///     messages: Messages,
/// }
///
/// let store = Store::memory();
/// let mut t = store.thread::<Chat>("user-42").await?;
/// t.apply(Chat::delta().messages(vec![Message::human("hi")])).await?;
/// assert_eq!(t.seq(), 1);
///
/// // Another handle (another worker, after a restart...) sees the same state.
/// let again = store.thread::<Chat>("user-42").await?;
/// assert_eq!(again.state(), t.state());
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Store {
    pub(crate) backend: Backend,
    pub(crate) policy: SnapshotPolicy,
    /// The watchers of this store (and of its clones), woken by its
    /// commits: see [`Store::watch`].
    pub(crate) hub: Arc<Hub>,
    /// How items are embedded for search by meaning, if they are (see
    /// [`Store::with_index`]).
    pub(crate) index: Option<Arc<crate::items::IndexConfig>>,
}

/// What [`Store::compact`] removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Compaction {
    /// Steps removed (all at or before the kept snapshot).
    pub steps_removed: u64,
    /// Older snapshots removed.
    pub snapshots_removed: u64,
}

impl Store {
    pub(crate) fn new(backend: Backend, hub: Arc<Hub>) -> Store {
        Store {
            backend,
            policy: SnapshotPolicy::default(),
            hub,
            index: None,
        }
    }

    /// The state of thread `id` right after step `seq` (0: the initial
    /// state), rebuilt from the log: time travel. Fails if the thread never
    /// reached `seq`, or if compaction removed the steps needed.
    pub async fn state_at<S>(&self, id: &str, seq: u64) -> Result<S, StoreError>
    where
        S: State + Serialize + Send + 'static,
        S::Delta: Serialize + Send,
    {
        check_id(id)?;
        Ok(rebuild::<S>(&self.backend, id, Some(seq)).await?.state)
    }

    /// The logged steps of thread `id` whose numbers fall in `range`, in
    /// order, with their metadata (steps removed by compaction are not
    /// listed).
    pub async fn history(
        &self,
        id: &str,
        range: impl RangeBounds<u64>,
    ) -> Result<Vec<StepRecord>, StoreError> {
        check_id(id)?;
        let from = match range.start_bound() {
            Bound::Included(&n) => n,
            Bound::Excluded(&n) => n.saturating_add(1),
            Bound::Unbounded => 0,
        };
        let to = match range.end_bound() {
            Bound::Included(&n) => n,
            Bound::Excluded(&0) => return Ok(Vec::new()),
            Bound::Excluded(&n) => n - 1,
            Bound::Unbounded => u64::MAX,
        };
        let Some(info) = self.backend.thread(id).await? else {
            return Err(StoreError::ThreadNotFound {
                thread: id.to_owned(),
            });
        };
        let rows = self
            .backend
            .steps(id, from.max(1), to.min(info.head))
            .await?;
        rows.into_iter()
            .map(|row| StepRecord::from_row(id, row))
            .collect()
    }

    /// Drops the steps of thread `id` at or before its latest snapshot, and
    /// the older snapshots. Loading is unchanged; history and time travel
    /// no longer reach before that snapshot. A thread with no snapshot is
    /// left alone (see [`Thread::compact`](crate::Thread::compact), which snapshots first).
    pub async fn compact(&self, id: &str) -> Result<Compaction, StoreError> {
        check_id(id)?;
        let removed = self.backend.compact(id).await?;
        Ok(Compaction {
            steps_removed: removed.steps,
            snapshots_removed: removed.snapshots,
        })
    }
}
