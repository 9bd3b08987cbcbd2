//! [`Store::watch`](crate::Store::watch): a thread's steps as a stream, the
//! backlog first, then each step as it is committed.
//!
//! The log is the truth; notices are only hints. A watcher subscribes to
//! its thread's notices first, then reads the log from the step after the
//! last one it delivered, and waits for a notice only when it has read
//! everything: a notice sent while it reads makes it read again, so the
//! switch from backlog to live steps has no gap, and since it always reads
//! from its own position, no duplicate. A lost, late or coalesced notice
//! costs a read, never a step.
//!
//! Notices come from three places, all into one [`Hub`] per store (shared
//! by its clones and its watchers):
//! - this store's own commits (every backend): `Thread::write`,
//!   `Store::delete_thread` and `Store::fork` call [`Hub::announce`] after
//!   the commit, which only flips a `tokio::sync::watch` flag: the writer
//!   never waits for a watcher;
//! - PostgreSQL: one `LISTEN` connection per store, started with its first
//!   watcher and stopped with its last (`postgres.rs`);
//! - SQLite: a poll of `PRAGMA data_version` per database file, every
//!   25 ms while there are watchers (`sqlite.rs`).

#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "sqlite")]
mod sqlite;

#[cfg(feature = "sqlite")]
pub(crate) use sqlite::hub_for;

use crate::backend::Backend;
use crate::error::StoreError;
use crate::step::StepRecord;
use crate::store::check_id;
use futures::Stream;
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::sync::{oneshot, watch};

/// Steps read from the log at once: a watcher far behind holds at most
/// this many in memory; the rest wait in the log.
const BATCH: usize = 256;

/// How long a watcher keeps retrying a database that does not answer
/// (a restart, a lost connection) before it ends with the error.
const OUTAGE_LIMIT: Duration = Duration::from_secs(30);

/// First and longest wait between retries of a failed read.
const RETRY_FIRST: Duration = Duration::from_millis(50);
const RETRY_MAX: Duration = Duration::from_secs(1);

/// The watchers of one store, and where they hear about commits.
pub(crate) struct Hub {
    watchers: Mutex<Watchers>,
    source: Source,
}

/// Who else writes to the store's database, and how to hear of it.
enum Source {
    /// Nobody: only this store's own commits (memory, an in-memory SQLite
    /// database).
    Local,
    /// Other connections to a SQLite file (`sqlite.rs`).
    #[cfg(feature = "sqlite")]
    Sqlite(Arc<sqlx::sqlite::SqliteConnectOptions>),
    /// Other sessions on a PostgreSQL database (`postgres.rs`).
    #[cfg(feature = "postgres")]
    Postgres(Arc<sqlx::postgres::PgConnectOptions>),
}

#[derive(Default)]
struct Watchers {
    /// One channel per watched thread, removed with its last watcher.
    threads: HashMap<String, Channel>,
    /// Live watchers, all threads together.
    count: usize,
    /// Stops the running pump (the task that hears other processes) when
    /// dropped: with the last watcher, or with the hub.
    pump: Option<oneshot::Sender<()>>,
}

struct Channel {
    /// Flipped on every notice; each watcher waits for a flip it has not
    /// seen. Holds no value: the log is read for that.
    flag: watch::Sender<()>,
    /// The highest head announced since it was last reset (0: unknown, or
    /// the thread is gone), to drop the notices that cannot be news: the
    /// PostgreSQL echo of this store's own commits, say.
    known: u64,
}

impl Hub {
    /// A hub for a store nobody else writes to.
    pub(crate) fn local() -> Arc<Hub> {
        Arc::new(Hub::new(Source::Local))
    }

    /// A hub for a PostgreSQL store: it listens while it has watchers.
    #[cfg(feature = "postgres")]
    pub(crate) fn postgres(pool: &sqlx::PgPool) -> Arc<Hub> {
        Arc::new(Hub::new(Source::Postgres(pool.connect_options())))
    }

    fn new(source: Source) -> Hub {
        Hub {
            watchers: Mutex::new(Watchers::default()),
            source,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Watchers> {
        // Every change under the lock is a single insert, remove or
        // counter step: a panic cannot leave it half-done.
        self.watchers.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Thread `thread` now ends at step `head` (0: it is gone). Wakes its
    /// watchers unless they have been woken for this head already. Never
    /// blocks beyond a short lock.
    pub(crate) fn announce(&self, thread: &str, head: u64) {
        let mut watchers = self.lock();
        if let Some(channel) = watchers.threads.get_mut(thread)
            && (head == 0 || head > channel.known)
        {
            channel.known = head;
            channel.flag.send_replace(());
        }
    }

    /// Wakes every watcher: notices may have been missed (a listening
    /// connection was lost), each reads its thread again.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    fn wake_all(&self) {
        for channel in self.lock().threads.values() {
            channel.flag.send_replace(());
        }
    }

    /// The watched threads.
    #[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
    fn watched(&self) -> Vec<String> {
        self.lock().threads.keys().cloned().collect()
    }

    fn subscribe(self: &Arc<Hub>, thread: &str) -> Subscription {
        let mut watchers = self.lock();
        watchers.count += 1;
        let flag = match watchers.threads.get(thread) {
            Some(channel) => channel.flag.subscribe(),
            None => {
                let (flag, receiver) = watch::channel(());
                watchers
                    .threads
                    .insert(thread.to_owned(), Channel { flag, known: 0 });
                receiver
            }
        };
        Subscription {
            hub: Arc::clone(self),
            thread: thread.to_owned(),
            flag: Some(flag),
        }
    }

    /// Starts the task that hears other processes' commits, if the store
    /// has such a source, watchers, and no such task running. Called by
    /// every watcher before each read (inside the runtime that polls it).
    fn ensure_pump(self: &Arc<Hub>) {
        match &self.source {
            Source::Local => {}
            #[cfg(feature = "sqlite")]
            Source::Sqlite(options) => {
                let options = Arc::clone(options);
                self.spawn_pump(|hub, stop| sqlite::pump(hub, options, stop));
            }
            #[cfg(feature = "postgres")]
            Source::Postgres(options) => {
                let options = Arc::clone(options);
                self.spawn_pump(|hub, stop| postgres::pump(hub, options, stop));
            }
        }
    }

    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    fn spawn_pump<F>(
        self: &Arc<Hub>,
        pump: impl FnOnce(std::sync::Weak<Hub>, oneshot::Receiver<()>) -> F,
    ) where
        F: Future<Output = ()> + Send + 'static,
    {
        let mut watchers = self.lock();
        // A pump whose runtime is gone (its task dropped) is replaced.
        let running = watchers.pump.as_ref().is_some_and(|stop| !stop.is_closed());
        if watchers.count == 0 || running {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (stop, stopped) = oneshot::channel();
        watchers.pump = Some(stop);
        // The task holds the hub weakly: it never keeps a store alive.
        runtime.spawn(pump(Arc::downgrade(self), stopped));
    }

    #[cfg(test)]
    fn counts(&self) -> (usize, usize, bool) {
        let watchers = self.lock();
        let running = watchers.pump.as_ref().is_some_and(|stop| !stop.is_closed());
        (watchers.count, watchers.threads.len(), running)
    }
}

impl fmt::Debug for Hub {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let source = match &self.source {
            Source::Local => "this store",
            #[cfg(feature = "sqlite")]
            Source::Sqlite(_) => "SQLite data_version",
            #[cfg(feature = "postgres")]
            Source::Postgres(_) => "PostgreSQL LISTEN",
        };
        f.debug_struct("Hub")
            .field("watchers", &self.lock().count)
            .field("source", &source)
            .finish()
    }
}

/// Runs `work` unless the pump is told to stop first (`None` then).
#[cfg(any(feature = "sqlite", feature = "postgres"))]
async fn unless_stopped<T>(
    stopped: &mut oneshot::Receiver<()>,
    work: impl Future<Output = T>,
) -> Option<T> {
    let work = std::pin::pin!(work);
    match futures::future::select(work, stopped).await {
        futures::future::Either::Left((value, _)) => Some(value),
        futures::future::Either::Right(_) => None,
    }
}

/// One watcher's place in the hub; leaving it (on drop) removes the
/// thread's channel with its last watcher, and stops the pump with the
/// store's last watcher.
struct Subscription {
    hub: Arc<Hub>,
    thread: String,
    /// `Some` until dropped.
    flag: Option<watch::Receiver<()>>,
}

impl Subscription {
    /// Marks every notice so far as seen: call right before reading.
    fn mark_seen(&mut self) {
        if let Some(flag) = &mut self.flag {
            flag.borrow_and_update();
        }
    }

    /// Waits for a notice not yet seen.
    async fn changed(&mut self) {
        if let Some(flag) = &mut self.flag {
            // The sender lives as long as this receiver (the channel is
            // removed only without receivers); an error cannot happen.
            let _ = flag.changed().await;
        }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let mut watchers = self.hub.lock();
        // Dropped under the lock: `subscribe` cannot add a receiver between
        // this drop and the count below.
        drop(self.flag.take());
        if watchers
            .threads
            .get(&self.thread)
            .is_some_and(|channel| channel.flag.receiver_count() == 0)
        {
            watchers.threads.remove(&self.thread);
        }
        watchers.count -= 1;
        if watchers.count == 0 {
            // Dropping the sender stops the pump.
            watchers.pump = None;
        }
    }
}

/// The steps of one thread, as [`Store::watch`](crate::Store::watch)
/// yields them: a [`futures::Stream`] of `Result<StepRecord, StoreError>`,
/// `Send`, `'static` and `Unpin`.
///
/// It never ends by itself while the thread lives; it ends after an error
/// (the thread was deleted, steps it still had to deliver were compacted
/// away, a corrupt row, a database unreachable for 30 seconds). Dropping
/// it releases everything it holds.
#[must_use = "a stream does nothing unless polled"]
pub struct StepStream {
    inner: Pin<Box<dyn Stream<Item = Result<StepRecord, StoreError>> + Send>>,
}

impl Stream for StepStream {
    type Item = Result<StepRecord, StoreError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.inner.as_mut().poll_next(cx)
    }
}

impl fmt::Debug for StepStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StepStream").finish_non_exhaustive()
    }
}

/// The stream behind [`Store::watch`](crate::Store::watch).
pub(crate) fn watch(backend: Backend, hub: &Arc<Hub>, id: &str, after: u64) -> StepStream {
    if let Err(error) = check_id(id) {
        return StepStream {
            inner: Box::pin(futures::stream::iter([Err(error)])),
        };
    }
    // Subscribed now, before the first read: whatever is committed from
    // here on is either in that read or announced after it.
    let watcher = Watcher {
        subscription: hub.subscribe(id),
        backend,
        id: id.to_owned(),
        next: after.saturating_add(1),
        seen: None,
        ready: VecDeque::new(),
        done: false,
        failing_since: None,
        retry: RETRY_FIRST,
    };
    let steps = futures::stream::unfold(watcher, |mut watcher| async move {
        let item = watcher.next().await?;
        Some((item, watcher))
    });
    StepStream {
        inner: Box::pin(steps),
    }
}

struct Watcher {
    subscription: Subscription,
    backend: Backend,
    id: String,
    /// The next step to deliver: everything before it was read.
    next: u64,
    /// The thread's creation time and head, as last read: a thread whose
    /// row is gone, created again, or whose head went back was deleted.
    seen: Option<(i64, u64)>,
    /// Read, not yet yielded; an error comes last and ends the stream.
    ready: VecDeque<Result<StepRecord, StoreError>>,
    done: bool,
    /// Reads have been failing since then (the database is unreachable).
    failing_since: Option<Instant>,
    retry: Duration,
}

impl Watcher {
    async fn next(&mut self) -> Option<Result<StepRecord, StoreError>> {
        loop {
            if let Some(item) = self.ready.pop_front() {
                return Some(item);
            }
            if self.done {
                return None;
            }
            self.subscription.hub.ensure_pump();
            self.subscription.mark_seen();
            match self.read().await {
                Ok(read) => {
                    self.failing_since = None;
                    self.retry = RETRY_FIRST;
                    if !read {
                        self.subscription.changed().await;
                    }
                }
                Err(error @ StoreError::Backend { .. }) => {
                    // The database did not answer: read again from the
                    // same step, for a while.
                    let since = *self.failing_since.get_or_insert_with(Instant::now);
                    if since.elapsed() >= OUTAGE_LIMIT {
                        self.done = true;
                        return Some(Err(error));
                    }
                    pause(self.retry).await;
                    self.retry = (self.retry * 2).min(RETRY_MAX);
                }
                Err(error) => {
                    self.done = true;
                    return Some(Err(error));
                }
            }
        }
    }

    /// Reads the log from `next` into `ready`. False: nothing new.
    async fn read(&mut self) -> Result<bool, StoreError> {
        let Some(tail) = self.backend.tail(&self.id, self.next, BATCH).await? else {
            // Not created yet: wait for it. Seen before: deleted.
            return match self.seen {
                None => Ok(false),
                Some(_) => Err(self.deleted()),
            };
        };
        if let Some((created_at, head)) = self.seen
            && (tail.created_at != created_at || tail.head < head)
        {
            return Err(self.deleted());
        }
        self.seen = Some((tail.created_at, tail.head));
        let mut read = false;
        for row in tail.steps {
            if row.seq != self.next {
                let error = self.gap(Some(row.seq)).await;
                return self.end_with(error);
            }
            match StepRecord::from_row(&self.id, row) {
                Ok(step) => self.ready.push_back(Ok(step)),
                Err(error) => return self.end_with(error),
            }
            self.next += 1;
            read = true;
        }
        if !read && tail.head >= self.next {
            // Committed, but not stored from `next` on.
            let error = self.gap(None).await;
            return self.end_with(error);
        }
        Ok(read)
    }

    /// Queues `error` after the steps read before it; the stream ends there.
    fn end_with(&mut self, error: StoreError) -> Result<bool, StoreError> {
        self.ready.push_back(Err(error));
        self.done = true;
        Ok(true)
    }

    fn deleted(&self) -> StoreError {
        StoreError::ThreadDeleted {
            thread: self.id.clone(),
        }
    }

    /// Step `next` is committed but not stored; `found` is the next step
    /// that is (`None`: none up to the head).
    async fn gap(&self, found: Option<u64>) -> StoreError {
        // Compaction (and a fork) leave no step before the first stored
        // one; a hole after it is damage.
        let first = self.backend.first_step(&self.id).await;
        let compacted = match (found, first) {
            (Some(found), Ok(Some(first))) => first >= found,
            (None, Ok(Some(_))) => false,
            _ => true,
        };
        if !compacted {
            return StoreError::corrupt(&self.id, "step", self.next, "missing from the log");
        }
        let reason = match found {
            Some(found) => {
                format!("the log before step {found} was compacted away or precedes a fork")
            }
            None => "the log up to the thread's last step was compacted away or precedes a fork"
                .to_owned(),
        };
        StoreError::NoSuchStep {
            thread: self.id.clone(),
            seq: self.next,
            reason,
        }
    }
}

/// Waits before a retry. Only the SQL backends fail that way, and they run
/// on tokio.
async fn pause(duration: Duration) {
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    tokio::time::sleep(duration).await;
    #[cfg(not(any(feature = "sqlite", feature = "postgres")))]
    let _ = duration;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Store;
    use futures::StreamExt;
    use state_core::{AgentState, State};

    #[derive(AgentState, Debug)]
    struct S {
        #[reducer(append)]
        log: Vec<String>,
    }

    fn step(text: &str) -> <S as State>::Delta {
        S::delta().log(vec![text.to_owned()])
    }

    #[tokio::test]
    async fn dropping_watchers_releases_their_place() {
        let store = Store::memory();
        let mut t = store.thread::<S>("t").await.unwrap();
        let mut a = store.watch("t", 0);
        let b = store.watch("t", 0);
        let c = store.watch("u", 0);
        assert_eq!(store.hub.counts(), (3, 2, false), "memory has no pump");
        t.apply(step("one")).await.unwrap();
        assert_eq!(a.next().await.unwrap().unwrap().seq, 1);
        drop(b);
        assert_eq!(store.hub.counts(), (2, 2, false));
        drop(c);
        assert_eq!(store.hub.counts(), (1, 1, false));
        drop(a);
        assert_eq!(store.hub.counts(), (0, 0, false));
    }

    #[tokio::test]
    async fn announcements_wake_only_for_news() {
        let hub = Hub::local();
        let mut sub = hub.subscribe("t");
        sub.mark_seen();
        hub.announce("t", 3);
        assert!(sub.flag.as_mut().unwrap().has_changed().unwrap());
        sub.mark_seen();
        hub.announce("t", 2);
        hub.announce("t", 3);
        hub.announce("other", 9);
        assert!(
            !sub.flag.as_mut().unwrap().has_changed().unwrap(),
            "old news"
        );
        hub.announce("t", 0);
        assert!(sub.flag.as_mut().unwrap().has_changed().unwrap(), "deleted");
        sub.mark_seen();
        hub.announce("t", 1);
        assert!(
            sub.flag.as_mut().unwrap().has_changed().unwrap(),
            "new again"
        );
    }

    #[cfg(feature = "sqlite")]
    #[tokio::test]
    async fn the_pump_runs_only_while_there_are_watchers() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::sqlite(dir.path().join("w.db")).await.unwrap();
        let again = Store::sqlite(dir.path().join("w.db")).await.unwrap();
        assert!(Arc::ptr_eq(&store.hub, &again.hub), "one hub per file");
        let mut t = store.thread::<S>("t").await.unwrap();
        t.apply(step("one")).await.unwrap();
        let mut steps = store.watch("t", 0);
        assert_eq!(steps.next().await.unwrap().unwrap().seq, 1);
        assert_eq!(store.hub.counts(), (1, 1, true));
        drop(steps);
        assert_eq!(store.hub.counts(), (0, 0, false));
    }
}
