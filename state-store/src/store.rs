//! [`Store`]: a handle on a backend, shared by every thread of a program.

use crate::backend::{Backend, Memory, SnapshotRow};
use crate::error::StoreError;
use crate::snapshot::SnapshotPolicy;
use crate::step::{StepRecord, from_millis, now_millis};
use crate::thread::{self, Thread};
use serde::Serialize;
use state_core::State;
use std::ops::{Bound, RangeBounds};
use std::time::SystemTime;

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
}

/// A thread, as listed by [`Store::threads`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ThreadInfo {
    /// Its id.
    pub id: String,
    /// Its last committed step (0: none yet).
    pub seq: u64,
    /// When it was opened for the first time (or forked).
    pub created_at: SystemTime,
    /// When its last step was committed.
    pub updated_at: SystemTime,
    /// The thread and step it was forked from, if it was.
    pub forked_from: Option<(String, u64)>,
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
    /// A store in memory: threads live as long as the store (and its
    /// clones). Behaves as the SQL backends do, conflicts included.
    pub fn memory() -> Store {
        Store::new(Backend::Memory(Memory::default()))
    }

    /// Opens (or creates) the SQLite database at `path`, in WAL mode with
    /// `synchronous = FULL`: a step whose call returned `Ok` survives a
    /// crash or power loss. Creates the store's tables if missing.
    #[cfg(feature = "sqlite")]
    pub async fn sqlite(path: impl AsRef<std::path::Path>) -> Result<Store, StoreError> {
        use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqliteSynchronous};
        let path = path.as_ref();
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            // Many workers may share one file: wait for the write lock.
            .busy_timeout(std::time::Duration::from_secs(30));
        let pool = sqlx::SqlitePool::connect_with(options).await.map_err(|e| {
            StoreError::backend(format!("opening SQLite database {}", path.display()), e)
        })?;
        Store::from_sqlite_pool(pool).await
    }

    /// A store on an existing sqlx SQLite pool (an application's own
    /// database; the store's tables are prefixed `state_store_`). The
    /// durability of a commit is the pool's: use WAL mode with
    /// `synchronous = FULL`, as [`Store::sqlite`] does.
    #[cfg(feature = "sqlite")]
    pub async fn from_sqlite_pool(pool: sqlx::SqlitePool) -> Result<Store, StoreError> {
        Ok(Store::new(Backend::Sqlite(
            crate::backend::Sqlite::new(pool).await?,
        )))
    }

    /// Connects to PostgreSQL (`postgres://user@host/db`) and creates the
    /// store's tables if missing. Many workers on many machines can share
    /// one database: each step is committed once, and a stale writer gets a
    /// conflict.
    #[cfg(feature = "postgres")]
    pub async fn postgres(url: &str) -> Result<Store, StoreError> {
        // The URL may carry a password: the error names only the host.
        let pool = sqlx::PgPool::connect(url).await.map_err(|e| {
            StoreError::backend(format!("connecting to PostgreSQL at {}", host_of(url)), e)
        })?;
        Store::from_pg_pool(pool).await
    }

    /// A store on an existing sqlx PostgreSQL pool (the store's tables are
    /// prefixed `state_store_`).
    #[cfg(feature = "postgres")]
    pub async fn from_pg_pool(pool: sqlx::PgPool) -> Result<Store, StoreError> {
        Ok(Store::new(Backend::Postgres(
            crate::backend::Postgres::new(pool).await?,
        )))
    }

    fn new(backend: Backend) -> Store {
        Store {
            backend,
            policy: SnapshotPolicy::default(),
        }
    }

    /// This store with another snapshot policy (for the threads opened
    /// through it from now on).
    pub fn with_snapshot_policy(mut self, policy: SnapshotPolicy) -> Store {
        self.policy = policy;
        self
    }

    /// Opens the thread `id`, creating it (with no step) if it does not
    /// exist, and loads its state: the latest snapshot plus a replay of the
    /// steps after it. Safe when many workers open the same new thread at
    /// once.
    pub async fn thread<S>(&self, id: &str) -> Result<Thread<S>, StoreError>
    where
        S: State + Serialize + Send + 'static,
        S::Delta: Serialize + Send,
    {
        thread::check_id(id)?;
        self.backend.open(id, now_millis()).await?;
        Thread::load(self.clone(), id.to_owned()).await
    }

    /// The state of thread `id` right after step `seq` (0: the initial
    /// state), rebuilt from the log: time travel. Fails if the thread never
    /// reached `seq`, or if compaction removed the steps needed.
    pub async fn state_at<S>(&self, id: &str, seq: u64) -> Result<S, StoreError>
    where
        S: State + Serialize + Send + 'static,
        S::Delta: Serialize + Send,
    {
        thread::check_id(id)?;
        Ok(thread::rebuild::<S>(self, id, Some(seq)).await?.state)
    }

    /// A new thread `to` whose state is that of `from` right after step
    /// `seq`; its next step is `seq + 1`. `from` is unchanged. Fails if
    /// `to` exists.
    pub async fn fork<S>(&self, from: &str, seq: u64, to: &str) -> Result<Thread<S>, StoreError>
    where
        S: State + Serialize + Send + 'static,
        S::Delta: Serialize + Send,
    {
        thread::check_id(from)?;
        thread::check_id(to)?;
        let rebuilt = thread::rebuild::<S>(self, from, Some(seq)).await?;
        let snapshot = SnapshotRow {
            seq,
            state: thread::state_text(to, &rebuilt.state)?,
            state_version: thread::version_of::<S>(),
            recorded_at: now_millis(),
        };
        if !self.backend.create_from(to, &snapshot, (from, seq)).await? {
            return Err(StoreError::ThreadExists {
                thread: to.to_owned(),
            });
        }
        Ok(Thread::from_snapshot(
            self.clone(),
            to.to_owned(),
            rebuilt.state,
            seq,
            snapshot.state.len(),
        ))
    }

    /// The logged steps of thread `id` whose numbers fall in `range`, in
    /// order, with their metadata (steps removed by compaction are not
    /// listed).
    pub async fn history(
        &self,
        id: &str,
        range: impl RangeBounds<u64>,
    ) -> Result<Vec<StepRecord>, StoreError> {
        thread::check_id(id)?;
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

    /// Every thread, ordered by id.
    pub async fn threads(&self) -> Result<Vec<ThreadInfo>, StoreError> {
        let rows = self.backend.threads().await?;
        Ok(rows
            .into_iter()
            .map(|row| ThreadInfo {
                id: row.id,
                seq: row.head,
                created_at: from_millis(row.created_at),
                updated_at: from_millis(row.updated_at),
                forked_from: row.parent,
            })
            .collect())
    }

    /// Deletes thread `id` with its whole log. Returns whether it existed.
    /// Handles still open on it fail on their next step.
    pub async fn delete_thread(&self, id: &str) -> Result<bool, StoreError> {
        thread::check_id(id)?;
        self.backend.delete(id).await
    }

    /// Drops the steps of thread `id` at or before its latest snapshot, and
    /// the older snapshots. Loading is unchanged; history and time travel
    /// no longer reach before that snapshot. A thread with no snapshot is
    /// left alone (see [`Thread::compact`], which snapshots first).
    pub async fn compact(&self, id: &str) -> Result<Compaction, StoreError> {
        thread::check_id(id)?;
        let removed = self.backend.compact(id).await?;
        Ok(Compaction {
            steps_removed: removed.steps,
            snapshots_removed: removed.snapshots,
        })
    }
}

/// `host[:port]` of a connection URL, without credentials.
#[cfg(feature = "postgres")]
fn host_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let rest = rest.rsplit_once('@').map_or(rest, |(_, rest)| rest);
    rest.split(['/', '?']).next().unwrap_or(rest)
}

#[cfg(all(test, feature = "postgres"))]
mod tests {
    use super::host_of;

    #[test]
    fn connection_errors_hide_credentials() {
        assert_eq!(host_of("postgres://u:secret@db:5432/app?x=1"), "db:5432");
        assert_eq!(host_of("postgres://localhost/app"), "localhost");
    }
}
