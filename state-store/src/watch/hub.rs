//! [`Hub`]: the watchers of one store, by thread, and the notices that
//! wake them. Whatever hears of commits calls [`Hub::announce`]: the
//! store's own writes, and a pump that hears other processes (started by
//! the hub with its first watcher and stopped with its last; the pumps
//! are `sqlite.rs`'s and `postgres.rs`'s, handed to the hub when it is
//! made, so this file names neither).
//!
//! The watchers of one thread share their reads of the log: a notice
//! wakes them all, the first to read keeps what it read beside the
//! thread's channel, and each of the others takes it from there if it was
//! read after the notice that woke it ([`Subscription::read`]). Fifty
//! watchers of a thread cost one read per commit, not fifty.

use crate::backend::{Backend, Tail};
use crate::error::StoreError;
use crate::step::StepRecord;
use futures::future::BoxFuture;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use tokio::sync::{oneshot, watch};

/// The watchers of one store, and where they hear about commits.
pub(crate) struct Hub {
    watchers: Mutex<Watchers>,
    source: Source,
    /// The wake-ups of the store's runs (`crate::runs`): shared as the
    /// hub is, by the stores of one SQLite file in this process.
    pub(crate) runs: crate::runs::RunHub,
}

/// Starts the task that hears other processes' commits: it announces
/// them to the hub (held weakly: it never keeps a store alive), and
/// returns when the receiver fires or the hub is gone.
pub(crate) type StartPump =
    Box<dyn Fn(Weak<Hub>, oneshot::Receiver<()>) -> BoxFuture<'static, ()> + Send + Sync>;

/// Who else writes to the store's database, and how to hear of it.
enum Source {
    /// Nobody: only this store's own commits (memory, an in-memory SQLite
    /// database).
    Local,
    /// Other connections or sessions (a SQLite file's, `sqlite.rs`; a
    /// PostgreSQL database's, `postgres.rs`), heard by the pump that
    /// `start` runs; `name` says how, for `Debug`.
    Others {
        name: &'static str,
        start: StartPump,
    },
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
    /// Counts the notices; each watcher waits for one it has not seen.
    /// The log is read for what they announce; the count tells a watcher
    /// whether a read it did not make is recent enough for it.
    flag: watch::Sender<u64>,
    /// The last read of the thread's log, shared by its watchers.
    feed: Arc<Feed>,
    /// The highest head announced since it was last reset (0: unknown, or
    /// the thread is gone), to drop the notices that cannot be news: the
    /// PostgreSQL echo of this store's own commits, say.
    known: u64,
}

impl Hub {
    /// A hub for a store nobody else writes to.
    pub(crate) fn local() -> Arc<Hub> {
        Arc::new(Hub::new(Source::Local, crate::runs::RunHub::default()))
    }

    /// A hub for a store others write to too: while it has watchers, it
    /// runs the pump `start` makes (`name` says what it polls or hears).
    #[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
    pub(crate) fn hearing_others(
        name: &'static str,
        start: StartPump,
        runs: crate::runs::RunHub,
    ) -> Arc<Hub> {
        Arc::new(Hub::new(Source::Others { name, start }, runs))
    }

    fn new(source: Source, runs: crate::runs::RunHub) -> Hub {
        Hub {
            watchers: Mutex::new(Watchers::default()),
            source,
            runs,
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
            channel.flag.send_modify(|notices| *notices += 1);
        }
    }

    /// Thread `thread` was rewound to step `head`: wakes its watchers
    /// though the head went down, and takes `head` as the last known.
    pub(crate) fn rewound(&self, thread: &str, head: u64) {
        let mut watchers = self.lock();
        if let Some(channel) = watchers.threads.get_mut(thread) {
            channel.known = head;
            channel.flag.send_modify(|notices| *notices += 1);
        }
    }

    /// Wakes every watcher: notices may have been missed (a listening
    /// connection was lost), each reads its thread again.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub(crate) fn wake_all(&self) {
        for channel in self.lock().threads.values() {
            channel.flag.send_modify(|notices| *notices += 1);
        }
    }

    /// The watched threads.
    #[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
    pub(crate) fn watched(&self) -> Vec<String> {
        self.lock().threads.keys().cloned().collect()
    }

    /// A new watcher of `thread`: its place, until dropped.
    pub(crate) fn subscribe(self: &Arc<Hub>, thread: &str) -> Subscription {
        let mut watchers = self.lock();
        watchers.count += 1;
        let (flag, feed) = match watchers.threads.get(thread) {
            Some(channel) => (channel.flag.subscribe(), Arc::clone(&channel.feed)),
            None => {
                let (flag, receiver) = watch::channel(0);
                let feed = Arc::new(Feed::default());
                let channel = Channel {
                    flag,
                    feed: Arc::clone(&feed),
                    known: 0,
                };
                watchers.threads.insert(thread.to_owned(), channel);
                (receiver, feed)
            }
        };
        Subscription {
            hub: Arc::clone(self),
            thread: thread.to_owned(),
            flag: Some(flag),
            feed,
            seen: 0,
        }
    }

    /// Starts the task that hears other processes' commits, if the store
    /// has such a source, watchers, and no such task running. Called by
    /// every watcher before each read (inside the runtime that polls it).
    pub(crate) fn ensure_pump(self: &Arc<Hub>) {
        let Source::Others { start, .. } = &self.source else {
            return;
        };
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
        runtime.spawn(start(Arc::downgrade(self), stopped));
    }

    /// Live watchers, watched threads, and whether a pump runs.
    #[cfg(test)]
    pub(crate) fn counts(&self) -> (usize, usize, bool) {
        let watchers = self.lock();
        let running = watchers.pump.as_ref().is_some_and(|stop| !stop.is_closed());
        (watchers.count, watchers.threads.len(), running)
    }
}

impl fmt::Debug for Hub {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let source = match &self.source {
            Source::Local => "this store",
            Source::Others { name, .. } => name,
        };
        f.debug_struct("Hub")
            .field("watchers", &self.lock().count)
            .field("source", &source)
            .finish()
    }
}

/// Runs `work` unless the pump is told to stop first (`None` then).
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) async fn unless_stopped<T>(
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
pub(crate) struct Subscription {
    hub: Arc<Hub>,
    thread: String,
    /// `Some` until dropped.
    flag: Option<watch::Receiver<u64>>,
    /// The thread's shared read.
    feed: Arc<Feed>,
    /// The notices seen at the last [`mark_seen`](Subscription::mark_seen).
    seen: u64,
}

/// The last read of one thread's log, shared by its watchers; locked
/// while one of them reads, so that the others wait for that read instead
/// of making their own.
#[derive(Default)]
struct Feed {
    last: tokio::sync::Mutex<Option<SharedRead>>,
    /// Reads of the log made, for the tests.
    #[cfg(test)]
    reads: std::sync::atomic::AtomicUsize,
}

/// One read of a thread's log: `Backend::tail` from step `from`, at most
/// `limit` steps.
struct SharedRead {
    /// The notices counted before it was made: it holds every step
    /// committed before the last of them.
    notices: u64,
    from: u64,
    limit: usize,
    /// `None`: the thread did not exist.
    tail: Option<Arc<Read>>,
}

/// What a shared read holds: the rows as read, and each step decoded
/// once for all the watchers (`None` where the row is corrupt: each
/// watcher decodes it again for its own error).
pub(crate) struct Read {
    pub tail: Tail,
    pub records: Vec<Option<StepRecord>>,
}

impl SharedRead {
    /// Whether it holds what a read from `from` (of at most `limit` steps)
    /// made after `seen` notices would begin with: made after them, from
    /// that step or an earlier one, and not cut off before it.
    fn serves(&self, from: u64, limit: usize, seen: u64) -> bool {
        if self.notices < seen || self.from > from || self.limit > limit {
            return false;
        }
        match &self.tail {
            None => true,
            Some(read) => {
                let steps = &read.tail.steps;
                steps.len() < self.limit || steps.last().is_some_and(|s| s.seq >= from)
            }
        }
    }
}

impl Subscription {
    /// The hub it belongs to.
    pub(crate) fn hub(&self) -> &Arc<Hub> {
        &self.hub
    }

    /// Marks every notice so far as seen: call right before reading.
    pub(crate) fn mark_seen(&mut self) {
        if let Some(flag) = &mut self.flag {
            self.seen = *flag.borrow_and_update();
        }
    }

    /// The thread's log from step `from` (at most `limit` steps; `None`:
    /// no such thread), as read after the notices marked seen: the read
    /// another watcher of the thread made, if it was made after them and
    /// holds what a read from `from` would, or else a read of its own,
    /// which the others may then take. The steps before `from` are the
    /// caller's to skip.
    pub(crate) async fn read(
        &self,
        backend: &Backend,
        thread: &str,
        from: u64,
        limit: usize,
    ) -> Result<Option<Arc<Read>>, StoreError> {
        let mut last = self.feed.last.lock().await;
        if let Some(read) = &*last
            && read.serves(from, limit, self.seen)
        {
            return Ok(read.tail.clone());
        }
        // Counted before reading: a notice after this may be in the read
        // or not, so the read does not count it.
        let notices = self.flag.as_ref().map_or(0, |flag| *flag.borrow());
        #[cfg(test)]
        self.feed
            .reads
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tail = backend.tail(thread, from, limit).await?.map(|tail| {
            let records = tail
                .steps
                .iter()
                .map(|row| StepRecord::from_row(thread, row.clone()).ok())
                .collect();
            Arc::new(Read { tail, records })
        });
        *last = Some(SharedRead {
            notices,
            from,
            limit,
            tail: tail.clone(),
        });
        Ok(tail)
    }

    /// Reads of the log made by this thread's watchers so far.
    #[cfg(test)]
    pub(crate) fn reads(&self) -> usize {
        self.feed.reads.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Waits for a notice not yet seen.
    pub(crate) async fn changed(&mut self) {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
