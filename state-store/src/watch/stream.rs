//! [`StepStream`]: one watcher of one thread, reading the log from its
//! own position and waiting on the hub (`hub.rs`) when it has read
//! everything.

use super::hub::{Hub, Subscription};
use crate::backend::{Backend, Rewinds};
use crate::error::StoreError;
use crate::ids::check_id;
use crate::missing::{Missing, why_missing};
use crate::step::StepRecord;
use futures::Stream;
use std::collections::VecDeque;
use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// Steps read from the log at once: a watcher far behind holds at most
/// this many in memory; the rest wait in the log.
const BATCH: usize = 256;

/// How long a watcher keeps retrying a database that does not answer
/// (a restart, a lost connection) before it ends with the error.
const OUTAGE_LIMIT: Duration = Duration::from_secs(30);

/// First and longest wait between retries of a failed read.
const RETRY_FIRST: Duration = Duration::from_millis(50);
const RETRY_MAX: Duration = Duration::from_secs(1);

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
    /// The thread's creation time, head and rewinds, as last read: a
    /// thread whose row is gone, created again, or whose head went back
    /// without a rewind was deleted; one rewound below a step delivered
    /// ends the stream too.
    seen: Option<(i64, u64, Rewinds)>,
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
            self.subscription.hub().ensure_pump();
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
        let shared = self
            .subscription
            .read(&self.backend, &self.id, self.next, BATCH)
            .await?;
        let Some(shared) = shared else {
            // Not created yet: wait for it. Seen before: deleted.
            return match self.seen {
                None => Ok(false),
                Some(_) => Err(self.deleted()),
            };
        };
        let tail = &shared.tail;
        if let Some((created_at, head, rewinds)) = self.seen {
            if tail.created_at != created_at {
                return Err(self.deleted());
            }
            if tail.rewinds != rewinds {
                // Rewound since the last read: the steps read stand only
                // if the one rewind there was kept them all.
                let read = self.next - 1;
                let once = tail.rewinds.count == rewinds.count + 1;
                if !once || tail.rewinds.to < read {
                    return Err(StoreError::ThreadRewound {
                        thread: self.id.clone(),
                        seq: if once { tail.rewinds.to } else { 0 },
                    });
                }
            } else if tail.head < head {
                return Err(self.deleted());
            }
        }
        self.seen = Some((tail.created_at, tail.head, tail.rewinds));
        let mut read = false;
        // A read shared with other watchers may begin before `next`.
        let from = self.next;
        let rows = tail.steps.iter().zip(&shared.records);
        for (row, record) in rows.skip_while(|(row, _)| row.seq < from) {
            if row.seq != self.next {
                let error = self.gap(Some(row.seq)).await?;
                return self.end_with(error);
            }
            let record = match record {
                Some(record) => Ok(record.clone()),
                None => StepRecord::from_row(&self.id, row.clone()),
            };
            match record {
                Ok(step) => self.ready.push_back(Ok(step)),
                Err(error) => return self.end_with(error),
            }
            self.next += 1;
            read = true;
        }
        if !read && tail.head >= self.next {
            // Committed, but not stored from `next` on.
            let error = self.gap(None).await?;
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
    /// that is (`None`: none up to the head). Why is decided by the rule
    /// loading uses too (`missing.rs`); `Err` is the database's error when
    /// it cannot tell, which the watcher retries as any other.
    async fn gap(&self, found: Option<u64>) -> Result<StoreError, StoreError> {
        if why_missing(&self.backend, &self.id, self.next).await? == Missing::Hole {
            return Ok(StoreError::corrupt(
                &self.id,
                "step",
                self.next,
                "missing from the log",
            ));
        }
        let reason = match found {
            Some(found) => {
                format!("the log before step {found} was compacted away or precedes a fork")
            }
            None => "the log up to the thread's last step was compacted away or precedes a fork"
                .to_owned(),
        };
        Ok(StoreError::NoSuchStep {
            thread: self.id.clone(),
            seq: self.next,
            reason,
        })
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
    async fn the_watchers_of_a_thread_share_one_read_per_commit() {
        let store = Store::memory();
        let mut t = store.thread::<S>("t").await.unwrap();
        t.apply(step("one")).await.unwrap();
        let mut watchers: Vec<_> = (0..20).map(|_| store.watch("t", 0)).collect();
        let probe = store.hub.subscribe("t");
        for w in &mut watchers {
            assert_eq!(w.next().await.unwrap().unwrap().seq, 1);
        }
        assert_eq!(probe.reads(), 1, "the backlog, read once for twenty");
        for (n, text) in [(2, "two"), (3, "three")] {
            t.apply(step(text)).await.unwrap();
            for w in &mut watchers {
                assert_eq!(w.next().await.unwrap().unwrap().seq, n);
            }
        }
        assert_eq!(probe.reads(), 3, "one read per commit");
        // One that starts behind them reads for itself, then joins them.
        let mut late = store.watch("t", 0);
        for n in 1..=3 {
            assert_eq!(late.next().await.unwrap().unwrap().seq, n);
        }
        t.apply(step("four")).await.unwrap();
        for w in watchers.iter_mut().chain([&mut late]) {
            assert_eq!(w.next().await.unwrap().unwrap().seq, 4);
        }
        assert!(probe.reads() <= 5, "{}", probe.reads());
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
