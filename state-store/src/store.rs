//! [`Store`]'s methods that open stores and threads, fork them, list and
//! delete them, and watch them. The handle itself, and what a
//! [`Thread`] calls back through it, is in `handle.rs`: this file opens
//! threads (`thread.rs`), and neither of the two uses the other.

use crate::backend::{Backend, ForkRows, Memory, SnapshotRow};
use crate::error::StoreError;
use crate::handle::Store;
use crate::ids::check_id;
use crate::listing::{ListThreads, ThreadInfo};
use crate::migrations::version_of;
use crate::rebuild::{rebuild, rows_upto, state_text};
use crate::snapshot::SnapshotPolicy;
use crate::step::now_millis;
use crate::thread::Thread;
use crate::watch::{Hub, StepStream};
use serde::Serialize;
use state_core::State;

impl Store {
    /// A store in memory: threads live as long as the store (and its
    /// clones). Behaves as the SQL backends do, conflicts included. It
    /// keeps the rows as text, as they do; besides, a thread read with
    /// [`Store::latest`] keeps the state read, decoded (one per thread),
    /// so the next read replays only the steps since.
    pub fn memory() -> Store {
        Store::new(Backend::Memory(Memory::default()), Hub::local())
    }

    /// Opens (or creates) the SQLite database at `path`, in WAL mode with
    /// `synchronous = FULL`: a step whose call returned `Ok` survives a
    /// crash or power loss. Creates the store's tables if missing.
    ///
    /// The writes made for every step and run run on a thread the store
    /// starts (it ends with the store's last clone), on a connection of its
    /// own: the writes ready together commit together, one fsync for all.
    /// That connection checkpoints the WAL every 10,000 pages (SQLite's
    /// default is 1,000): the `-wal` file grows to ~40 MiB.
    /// The reads made for every step and run run on the calling thread, on
    /// read connections of the store's own (microseconds each, from
    /// SQLite's page cache); the rest goes through a sqlx pool.
    #[cfg(feature = "sqlite")]
    pub async fn sqlite(path: impl AsRef<std::path::Path>) -> Result<Store, StoreError> {
        use sqlx::sqlite::{SqliteConnectOptions, SqliteSynchronous};
        let path = path.as_ref();
        // Many workers may share one file: wait for the write lock.
        let patience = std::time::Duration::from_secs(30);
        // No `journal_mode` here: switching to WAL takes a lock SQLite does
        // not wait for, so two processes opening a new file at once would
        // see "database is locked". `enter_wal` switches, and waits.
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .synchronous(SqliteSynchronous::Full)
            .busy_timeout(patience);
        let context = || format!("opening SQLite database {}", path.display());
        let pool = sqlx::sqlite::SqlitePoolOptions::new()
            .test_before_acquire(false)
            .connect_with(options)
            .await
            .map_err(|e| StoreError::backend(context(), e))?;
        crate::backend::enter_wal(&pool, patience)
            .await
            .map_err(|e| StoreError::backend(context(), e))?;
        Store::from_sqlite_pool(pool).await
    }

    /// A store on an existing sqlx SQLite pool (an application's own
    /// database; the store's tables are prefixed `state_store_`). The
    /// durability of a commit is the pool's: use WAL mode with
    /// `synchronous = FULL`, as [`Store::sqlite`] does. On a database
    /// file the store also opens connections of its own to it, as
    /// [`Store::sqlite`] says, with the pool's `synchronous`,
    /// `busy_timeout` and `foreign_keys`.
    #[cfg(feature = "sqlite")]
    pub async fn from_sqlite_pool(pool: sqlx::SqlitePool) -> Result<Store, StoreError> {
        // Stores on one file share their watchers (see `Store::watch`).
        let hub = crate::watch::hub_for(&pool).await;
        Ok(Store::new(
            Backend::Sqlite(crate::backend::Sqlite::new(pool).await?),
            hub,
        ))
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
        let hub = crate::watch::postgres_hub(&pool);
        Ok(Store::new(
            Backend::Postgres(crate::backend::Postgres::new(pool).await?),
            hub,
        ))
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
    ///
    /// A thread that does not exist is created, silently: a misspelt id
    /// opens a new, empty thread. To read one that must exist, use
    /// [`existing_thread`](Store::existing_thread).
    pub async fn thread<S>(&self, id: &str) -> Result<Thread<S>, StoreError>
    where
        S: State + Serialize + Send + 'static,
        S::Delta: Serialize + Send,
    {
        check_id(id)?;
        self.backend.open(id, now_millis()).await?;
        Thread::load(self.clone(), id.to_owned()).await
    }

    /// Opens the thread `id` if it exists, as [`thread`](Store::thread)
    /// does; [`StoreError::ThreadNotFound`] (nothing created) when it does
    /// not.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// # use state_core::{AgentState, State};
    /// # #[derive(AgentState, Debug)]
    /// # struct S { n: u32 }
    /// let store = state_store::Store::memory();
    /// store.thread::<S>("user-42").await?;
    /// assert!(store.existing_thread::<S>("user-42").await.is_ok());
    /// let typo = store.existing_thread::<S>("usr-42").await.unwrap_err();
    /// assert_eq!(typo.to_string(), "thread \"usr-42\" does not exist");
    /// assert!(store.thread_info("usr-42").await.is_err(), "not created");
    /// # Ok(())
    /// # }
    /// ```
    pub async fn existing_thread<S>(&self, id: &str) -> Result<Thread<S>, StoreError>
    where
        S: State + Serialize + Send + 'static,
        S::Delta: Serialize + Send,
    {
        check_id(id)?;
        if self.backend.thread(id).await?.is_none() {
            return Err(StoreError::ThreadNotFound {
                thread: id.to_owned(),
            });
        }
        Thread::load(self.clone(), id.to_owned()).await
    }

    /// A new thread `to` whose state is that of `from` right after step
    /// `seq`; its next step is `seq + 1`. `from` is unchanged. Fails if
    /// `to` exists. The fork keeps a copy of step `seq` itself, and of the
    /// steps before it that change no state (a pause, a subgraph's steps)
    /// back to the last that does: its history starts there, and a graph
    /// run on it goes on from step `seq` as it would have on `from` (time
    /// travel: see state-graph's `continue_thread`).
    pub async fn fork<S>(&self, from: &str, seq: u64, to: &str) -> Result<Thread<S>, StoreError>
    where
        S: State + Serialize + Send + 'static,
        S::Delta: Serialize + Send,
    {
        check_id(from)?;
        check_id(to)?;
        let rebuilt = rebuild::<S>(&self.backend, from, Some(seq)).await?;
        let now = now_millis();
        let snapshot = SnapshotRow {
            seq,
            state: state_text(to, &rebuilt.state)?,
            state_version: version_of::<S>(),
            recorded_at: now,
        };
        let state_len = snapshot.state.len();
        // The step itself comes along (replay starts after the snapshot):
        // what wrote it, a graph run's routes or pause, is the fork's too,
        // so a run on the fork goes on from there. So do the steps before
        // it that change no state (a pause, a subgraph's steps), back to
        // the last that did: where a run paused inside a subgraph stands.
        let steps = self.steps_to_fork(from, seq).await?;
        let fork = ForkRows {
            snapshot: Some(snapshot),
            steps,
        };
        self.create_fork((from, seq), to, &fork, now).await?;
        Ok(Thread::from_snapshot(
            self.clone(),
            to.to_owned(),
            rebuilt.state,
            seq,
            state_len,
        ))
    }

    /// The steps a [`fork`](Store::fork) at `seq` copies: step `seq`, and
    /// before it the steps that change no state, back to the last that does.
    async fn steps_to_fork(
        &self,
        from: &str,
        seq: u64,
    ) -> Result<Vec<crate::backend::StepRow>, StoreError> {
        const CHUNK: u64 = 64;
        let neutral = |row: &crate::backend::StepRow| {
            matches!(
                crate::step::StepKind::parse(&row.kind),
                Some(crate::step::StepKind::Pending | crate::step::StepKind::Subgraph)
            )
        };
        let mut steps = Vec::new();
        let mut to = seq;
        while to > 0 {
            let lo = to.saturating_sub(CHUNK - 1).max(1);
            let mut rows = self.backend.steps(from, lo, to).await?;
            // Newest first, until (and with) the first that changes state.
            rows.reverse();
            let mut reached = false;
            for row in rows {
                let changes_state = !neutral(&row);
                steps.push(row);
                if changes_state {
                    reached = true;
                    break;
                }
            }
            if reached || lo == 1 {
                break;
            }
            to = lo - 1;
        }
        steps.reverse();
        Ok(steps)
    }

    /// [`fork`](Store::fork) without the state type: the new thread `to`
    /// gets a copy of `from`'s stored log up to step `seq` (its latest
    /// snapshot at or before `seq`, and the steps after it), so its state
    /// is that of `from` after `seq`, and its [`history`](Store::history)
    /// shows the steps that led there. What a program that does not know
    /// the state type (the `state-server` binary) forks with. Fails if
    /// `to` exists, or if `from` has no step `seq` (or it was compacted
    /// away).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// # use state_core::{AgentState, State};
    /// # #[derive(AgentState, Debug, PartialEq)]
    /// # struct S { #[reducer(append)] log: Vec<String> }
    /// let store = state_store::Store::memory();
    /// let mut t = store.thread::<S>("main").await?;
    /// t.apply(S::delta().log(vec!["a".into()])).await?;
    /// t.apply(S::delta().log(vec!["b".into()])).await?;
    ///
    /// store.fork_log("main", 1, "retry").await?;
    /// let retry = store.thread::<S>("retry").await?;
    /// assert_eq!((retry.seq(), &retry.state().log), (1, &vec!["a".to_owned()]));
    /// assert_eq!(store.history("retry", 1..=1).await?.len(), 1);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn fork_log(&self, from: &str, seq: u64, to: &str) -> Result<(), StoreError> {
        check_id(from)?;
        check_id(to)?;
        let rows = rows_upto(&self.backend, from, seq).await?;
        self.create_fork((from, seq), to, &rows, now_millis()).await
    }

    /// Creates `to` forked from `from` at step `seq`, holding `rows`, and
    /// wakes its watchers: what [`fork`](Store::fork) and
    /// [`fork_log`](Store::fork_log) share once they have the rows.
    async fn create_fork(
        &self,
        (from, seq): (&str, u64),
        to: &str,
        rows: &ForkRows,
        now: i64,
    ) -> Result<(), StoreError> {
        if !self.backend.create_from(to, rows, (from, seq), now).await? {
            return Err(StoreError::ThreadExists {
                thread: to.to_owned(),
            });
        }
        self.hub.announce(to, seq);
        Ok(())
    }

    /// The steps of thread `id` numbered above `after`, in order, each
    /// once, then every step as it is committed: by this store, its
    /// clones, or any other process on the same database. A
    /// [`futures::Stream`] of `Result<StepRecord, StoreError>` that is
    /// `Send + 'static` (and `Unpin`); nothing is read until it is polled.
    ///
    /// The stream subscribes to the thread's notices before it reads its
    /// log, and always reads from the step after the last one it
    /// delivered: the switch from the backlog to live steps has no gap and
    /// no duplicate. Notices only wake it; the steps come from the log. So
    /// a slow consumer never slows a writer (a commit only flips a flag)
    /// and never loses a step (it reads them from the log when it gets
    /// there, at most 256 at a time).
    ///
    /// How other processes' steps arrive:
    /// - PostgreSQL: each commit that adds a step sends a `NOTIFY` on the
    ///   channel `state_store_steps` carrying `{"thread": id, "seq": n}`
    ///   (never the step; `"seq": 0` when the thread is deleted). The store's watchers share one `LISTEN`
    ///   connection, opened with the first and closed with the last. When
    ///   it is lost (a server restart) it is opened again and every
    ///   watcher reads the log again from its last step: nothing is lost.
    /// - SQLite: while a store has watchers it polls the file's
    ///   `PRAGMA data_version` every 25 ms (a query that reads no table),
    ///   then reads the heads of the watched threads when the file changed:
    ///   another process's step reaches a watcher within 25 ms of its
    ///   commit, plus the time to read it. Steps committed through any store on the same file in
    ///   this process (stores opened on one file share their watchers)
    ///   arrive at once.
    /// - memory: in this process, at once.
    ///
    /// A thread that does not exist yet is waited for. The stream ends
    /// with an error, after the steps it read before it:
    /// [`StoreError::ThreadDeleted`] when the thread is deleted (or
    /// deleted and created again); [`StoreError::NoSuchStep`], naming the
    /// first missing step, when steps after `after` were compacted away
    /// (or precede a fork) before the stream read them; an invalid `id`;
    /// a corrupt row; a database that stays unreachable for 30 seconds
    /// (until then the stream retries, from its last step). Dropping the
    /// stream releases all it holds.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use futures::StreamExt;
    /// use state_core::{AgentState, State};
    /// use state_store::Store;
    ///
    /// #[derive(AgentState, Debug)]
    /// struct Chat {
    ///     #[reducer(append)]
    ///     log: Vec<String>,
    /// }
    ///
    /// let store = Store::memory();
    /// let mut t = store.thread::<Chat>("user-42").await?;
    /// t.apply(Chat::delta().log(vec!["one".to_string()])).await?;
    /// t.apply(Chat::delta().log(vec!["two".to_string()])).await?;
    ///
    /// // Everything after step 1, then whatever comes.
    /// let mut steps = store.watch("user-42", 1);
    /// let live = tokio::spawn(async move {
    ///     t.apply(Chat::delta().log(vec!["three".to_string()])).await
    /// });
    /// let two = steps.next().await.unwrap()?;
    /// assert_eq!((two.seq, &two.body), (2, &serde_json::json!({"log": ["two"]})));
    /// assert_eq!(steps.next().await.unwrap()?.seq, 3);
    /// live.await.unwrap()?;
    ///
    /// // A deleted thread ends the stream with an error.
    /// store.delete_thread("user-42").await?;
    /// let end = steps.next().await.unwrap().unwrap_err();
    /// assert_eq!(end.to_string(), "thread \"user-42\" was deleted while it was being watched");
    /// assert!(steps.next().await.is_none());
    /// # Ok(())
    /// # }
    /// ```
    pub fn watch(&self, id: &str, after: u64) -> StepStream {
        crate::watch::watch(self.backend.clone(), &self.hub, id, after)
    }

    /// Takes thread `id` back to step `seq`, as if nothing had been
    /// written after it: its steps and snapshots after `seq` are deleted
    /// and its head is `seq`, in one transaction (one lock, in memory).
    /// Its state, history and pending interrupts are then those it had
    /// after step `seq` (interrupts are steps of the log); its next step
    /// is `seq + 1`. Returns how many steps were removed (0: the head was
    /// `seq` already, and nothing changed). What rolls back a run
    /// ([`CancelAction::Rollback`](crate::CancelAction::Rollback)).
    ///
    /// Who sees it:
    /// - handles ([`Thread`]) opened before it and past `seq` fail their
    ///   next step with [`StoreError::Conflict`] (reload), as long as
    ///   the thread has not grown back to their step meanwhile: a
    ///   handle only compares heads, so drop the handles past `seq`
    ///   before rewinding (as stopping a run does);
    /// - watchers ([`watch`](Store::watch)) that had read a step after
    ///   `seq` end with [`StoreError::ThreadRewound`] (naming `seq`),
    ///   after the steps they had read already (a watcher reads up to 256
    ///   steps ahead of what it yields): steps they yielded after `seq`
    ///   are gone, and new steps reuse their numbers. The thread's row
    ///   counts its rewinds, so a watcher learns of one from the log even
    ///   when it reads again only once the head has grown past where it
    ///   was (in any process; PostgreSQL's notice and SQLite's poll only
    ///   wake it sooner). Watchers that had read no step after `seq` go
    ///   on, with the steps written after the rewind.
    ///
    /// Refused, with nothing changed: [`StoreError::ThreadNotFound`];
    /// [`StoreError::NoSuchStep`] when `seq` is past the head, or when
    /// the state at `seq` could not be rebuilt afterwards (the steps
    /// before it were compacted away, or precede a fork).
    ///
    /// Rewinding a thread a graph is running on makes its runner's next
    /// step conflict; stop the run first (the Agent Server's rollback
    /// does).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// # use state_core::{AgentState, State};
    /// # #[derive(AgentState, Debug)]
    /// # struct S { #[reducer(append)] log: Vec<String> }
    /// let store = state_store::Store::memory();
    /// let mut t = store.thread::<S>("t").await?;
    /// for word in ["a", "b", "c"] {
    ///     t.apply(S::delta().log(vec![word.into()])).await?;
    /// }
    /// assert_eq!(store.rewind_thread("t", 1).await?, 2);
    /// let t = store.thread::<S>("t").await?;
    /// assert_eq!((t.seq(), &t.state().log), (1, &vec!["a".to_owned()]));
    /// assert!(store.rewind_thread("t", 5).await.is_err(), "past the head");
    /// # Ok(())
    /// # }
    /// ```
    pub async fn rewind_thread(&self, id: &str, seq: u64) -> Result<u64, StoreError> {
        check_id(id)?;
        let rewound = self.backend.rewind(id, seq, now_millis()).await?;
        rewind_outcome(&self.hub, id, seq, rewound)
    }

    /// A page of threads, newest first unless another
    /// [`order`](ListThreads::order) is asked for, when awaited: see
    /// [`ListThreads`]. What lists threads for a person or a client (the
    /// inspector's list, the Agent Server's thread search): each page
    /// reads at most what it returns (plus what a filter refuses).
    pub fn list_threads(&self) -> ListThreads<'_> {
        ListThreads::new(self)
    }

    /// Every thread, ordered by id, in one list: for a program that
    /// needs them all (a migration, a test). It reads every thread's row
    /// at once; to list threads for a person or a client, page through
    /// them with [`list_threads`](Store::list_threads).
    pub async fn threads(&self) -> Result<Vec<ThreadInfo>, StoreError> {
        let rows = self.backend.threads().await?;
        Ok(rows.into_iter().map(ThreadInfo::from_row).collect())
    }

    /// Thread `id`'s row (its last step, times, fork origin), without
    /// opening or creating it: [`StoreError::ThreadNotFound`] when there is
    /// none.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// # use state_core::{AgentState, State};
    /// # #[derive(AgentState, Debug)]
    /// # struct S { n: u32 }
    /// let store = state_store::Store::memory();
    /// assert!(store.thread_info("t").await.is_err());
    /// let mut t = store.thread::<S>("t").await?;
    /// t.apply(S::delta().n(1u32)).await?;
    /// assert_eq!(store.thread_info("t").await?.seq, 1);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn thread_info(&self, id: &str) -> Result<ThreadInfo, StoreError> {
        check_id(id)?;
        match self.backend.thread(id).await? {
            Some(row) => Ok(ThreadInfo::from_row(row)),
            None => Err(StoreError::ThreadNotFound {
                thread: id.to_owned(),
            }),
        }
    }

    /// Deletes thread `id` with its whole log, its record
    /// ([`create_thread_record`](Store::create_thread_record)), its runs
    /// and their events. Returns whether it existed (a log or a record).
    /// Handles still open on it fail on their next step; the workers of
    /// its running runs lose their leases, and the runs' watchers are
    /// woken.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use state_store::{IfNotExists, NewRun, Store};
    /// let store = Store::memory();
    /// store.create_run(NewRun::new("run-1", "agent").thread("t").if_not_exists(IfNotExists::Create)).await?;
    /// assert!(store.delete_thread("t").await?);
    /// assert!(store.get_run("run-1", None).await?.is_none());
    /// assert!(store.thread_record("t", None).await?.is_none());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn delete_thread(&self, id: &str) -> Result<bool, StoreError> {
        check_id(id)?;
        let (existed, runs) = self.backend.delete(id).await?;
        if existed {
            // Its watchers end.
            self.hub.announce(id, 0);
        }
        for run in &runs {
            self.hub.runs.announce(Some(run), true);
        }
        Ok(existed)
    }
}

/// What a rewind of `id` to `seq` (a thread's, or a run's rollback)
/// returns: the steps removed, its watchers told; or why nothing changed.
pub(crate) fn rewind_outcome(
    hub: &Hub,
    id: &str,
    seq: u64,
    rewound: crate::backend::Rewound,
) -> Result<u64, StoreError> {
    use crate::backend::Rewound;
    match rewound {
        Rewound::Done { steps } => {
            if steps > 0 {
                hub.rewound(id, seq);
            }
            Ok(steps)
        }
        Rewound::Ahead { head } => Err(StoreError::NoSuchStep {
            thread: id.to_owned(),
            seq,
            reason: format!("the thread's last step is {head}"),
        }),
        Rewound::Unrebuildable { missing } => Err(StoreError::NoSuchStep {
            thread: id.to_owned(),
            seq,
            reason: format!(
                "its state cannot be rebuilt: step {missing} was compacted away or precedes a fork"
            ),
        }),
        Rewound::NoThread => Err(StoreError::ThreadNotFound {
            thread: id.to_owned(),
        }),
    }
}

/// `host[:port]` of a connection URL, without credentials.
#[cfg(feature = "postgres")]
fn host_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let rest = rest.rsplit_once('@').map_or(rest, |(_, rest)| rest);
    rest.split(['/', '?']).next().unwrap_or(rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "postgres")]
    #[test]
    fn connection_errors_hide_credentials() {
        assert_eq!(host_of("postgres://u:secret@db:5432/app?x=1"), "db:5432");
        assert_eq!(host_of("postgres://localhost/app"), "localhost");
    }
}
