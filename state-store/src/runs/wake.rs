//! Wake-ups for workers ([`RunWakeups`]) and for readers of a run's
//! stream ([`RunWatch`]), from one [`RunHub`] per store (shared by its
//! clones, and on SQLite by the stores of one file in this process).
//!
//! The rows are the truth; notices only wake. A waiter subscribes first,
//! then reads (claims, or reads the run's events), and waits only when it
//! found nothing: a notice sent in between is kept by its channel, so
//! nothing is missed, and a lost notice costs a read at the next wake-up,
//! never a run.
//!
//! Notices come from this store's own writes (every backend: announced
//! after the commit) and, on PostgreSQL, from every process's: each
//! transition sends `NOTIFY state_store_runs` with the run's id inside
//! its transaction (delivered only on commit), and the hub listens on a
//! connection of its own, opened with its first waiter. Notifications
//! sent while that connection is down are lost: each time it listens
//! (again), every waiter is woken to read again.

use crate::backend::Backend;
use crate::error::StoreError;
use crate::items::time::now_micros;
use futures::future::{BoxFuture, Either, select};
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;
use tokio::sync::{oneshot, watch};

/// Starts the task that hears other processes' notices: it announces them
/// to the hub (held weakly) and returns when the receiver fires or the hub
/// is gone.
type StartListener =
    Arc<dyn Fn(Weak<Inner>, oneshot::Receiver<()>) -> BoxFuture<'static, ()> + Send + Sync>;

/// The wake-ups of one store's runs.
#[derive(Clone)]
pub(crate) struct RunHub {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    /// Counts the notices that a run may have become claimable (or a
    /// cancel was requested).
    queue: watch::Sender<u64>,
    /// One channel per watched run, removed with its last watcher.
    runs: Mutex<HashMap<String, watch::Sender<Changes>>>,
    /// Whether other processes are heard (always, without a listener).
    ready: watch::Sender<bool>,
    listener: Mutex<Listener>,
}

/// How often a watched run changed: its row (status, cancel, lease
/// holder, deletion) and its events, counted apart so that a waiter for
/// its status is not woken by each event.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Changes {
    row: u64,
    events: u64,
    /// Of `row`, the changes known to leave the run going: its creation
    /// and its claims in this process. (Waiters for its end or a cancel
    /// need not read the run for them.)
    opened: u64,
    /// The status it ended with, when its end was written here.
    ended: Option<crate::runs::RunStatus>,
}

/// What a notice of a run's row says about the change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RowChange {
    /// Created or claimed here: the run goes on.
    Opened,
    /// Ended here, with this status.
    Ended(crate::runs::RunStatus),
    /// Anything else (or not known: another process's notice).
    Other,
}

enum Listener {
    /// Nobody else writes (memory), or others are not heard (SQLite: its
    /// workers are in the serving process).
    None,
    /// Started with the first waiter.
    Idle(StartListener),
    /// Stops when the sender is dropped (with the hub).
    Running(StartListener, oneshot::Sender<()>),
}

impl fmt::Debug for RunHub {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunHub")
            .field("watched_runs", &self.inner.lock_runs().len())
            .field("ready", &*self.inner.ready.borrow())
            .finish()
    }
}

impl Default for RunHub {
    fn default() -> Self {
        RunHub {
            inner: Arc::new(Inner {
                queue: watch::channel(0).0,
                runs: Mutex::new(HashMap::new()),
                ready: watch::channel(true).0,
                listener: Mutex::new(Listener::None),
            }),
        }
    }
}

impl Inner {
    fn lock_runs(&self) -> MutexGuard<'_, HashMap<String, watch::Sender<Changes>>> {
        // Single inserts and removes under the lock: a panic cannot leave
        // it half-done.
        self.runs.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `change`: `None` for events, else how the row changed.
    fn announce(&self, run: Option<&str>, queue: bool, change: Option<RowChange>) {
        if queue {
            self.queue.send_modify(|n| *n += 1);
        }
        if let Some(run) = run
            && let Some(channel) = self.lock_runs().get(run)
        {
            channel.send_modify(|c| match change {
                None => c.events += 1,
                Some(change) => {
                    c.row += 1;
                    match change {
                        RowChange::Opened => c.opened += 1,
                        RowChange::Ended(status) => c.ended = Some(status),
                        RowChange::Other => {}
                    }
                }
            });
        }
    }

    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    fn wake_all(&self) {
        self.queue.send_modify(|n| *n += 1);
        for channel in self.lock_runs().values() {
            channel.send_modify(|c| {
                c.row += 1;
                c.events += 1;
            });
        }
    }
}

impl RunHub {
    /// Hears other processes through what `start` runs (PostgreSQL).
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    fn listening(start: StartListener) -> RunHub {
        let hub = RunHub::default();
        hub.inner.ready.send_replace(false);
        *hub.lock_listener() = Listener::Idle(start);
        hub
    }

    fn lock_listener(&self) -> MutexGuard<'_, Listener> {
        self.inner
            .listener
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Wakes the workers (`queue`) and the watchers of `run`, whose row
    /// changed. Never blocks beyond a short lock.
    pub(crate) fn announce(&self, run: Option<&str>, queue: bool) {
        self.inner.announce(run, queue, Some(RowChange::Other));
    }

    /// [`announce`](Self::announce) of a run created or claimed here: a
    /// change its watchers for a cancel or its end need not read.
    pub(crate) fn announce_opened(&self, run: &str, queue: bool) {
        self.inner
            .announce(Some(run), queue, Some(RowChange::Opened));
    }

    /// [`announce`](Self::announce) of a run that ended here, with
    /// `status`: its waiters need not read it to learn how.
    pub(crate) fn announce_ended(&self, run: &str, status: crate::runs::RunStatus, queue: bool) {
        self.inner
            .announce(Some(run), queue, Some(RowChange::Ended(status)));
    }

    /// Wakes the watchers of `run`'s events (not those waiting for its
    /// status: see [`RunWatch::status_changed`]).
    pub(crate) fn announce_events(&self, run: &str) {
        self.inner.announce(Some(run), false, None);
    }

    /// Starts the listener if there is one to start and none runs (inside
    /// the runtime of the caller).
    fn ensure_listening(&self) {
        let mut listener = self.lock_listener();
        let start = match &*listener {
            Listener::None => return,
            Listener::Idle(start) => Arc::clone(start),
            // A listener whose runtime is gone (its task dropped) is
            // replaced.
            Listener::Running(start, stop) if stop.is_closed() => Arc::clone(start),
            Listener::Running(..) => return,
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (stop, stopped) = oneshot::channel();
        runtime.spawn(start(Arc::downgrade(&self.inner), stopped));
        *listener = Listener::Running(start, stop);
    }

    async fn ready(&self) {
        self.ensure_listening();
        let mut ready = self.inner.ready.subscribe();
        // The sender lives in the hub, which `self` holds.
        let _ = ready.wait_for(|ready| *ready).await;
    }

    pub(crate) fn watch(&self, run_id: &str) -> RunWatch {
        let receiver = {
            let mut runs = self.inner.lock_runs();
            runs.entry(run_id.to_owned())
                .or_insert_with(|| watch::channel(Changes::default()).0)
                .subscribe()
        };
        self.ensure_listening();
        let (rows_seen, others_seen) = {
            let now = receiver.borrow();
            (now.row, now.row - now.opened)
        };
        RunWatch {
            hub: self.clone(),
            run_id: run_id.to_owned(),
            receiver: Some(receiver),
            rows_seen,
            others_seen,
        }
    }
}

/// Why [`RunWakeups::next`] returned. Whatever the reason, the worker
/// tries to claim (until [`Store::claim_run`](crate::Store::claim_run)
/// finds nothing), then waits again.
///
/// ```
/// assert_ne!(state_store::Wake::Start, state_store::Wake::Notified);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Wake {
    /// The first call: claim what is there already.
    Start,
    /// A run was created, released or finished, or a cancel requested
    /// (or, on PostgreSQL, the listener connected again and notices may
    /// have been missed).
    Notified,
    /// A delayed run's `available_at` or a running run's lease expiry
    /// came (since the previous wake-up: maybe while the worker was
    /// busy, then at once).
    Due,
    /// Nothing happened for the fallback period (see
    /// [`RunWakeups::fallback`]).
    Fallback,
}

/// A worker's wake-ups ([`Store::run_wakeups`](crate::Store::run_wakeups)):
/// [`next`](RunWakeups::next) resolves when a run may have become
/// claimable, with no polling delay: at once for this store's own
/// writes, through `LISTEN/NOTIFY` for other processes' on PostgreSQL;
/// or when the earliest `available_at` or lease expiry after the previous
/// call comes (read from the database when a notice was heard since the
/// last read, at most every 10 ms: a delayed run or a lease that came due
/// meanwhile is seen that much later at most; one that came while the
/// worker was busy returns at once); or after the fallback period (60 s
/// unless set), in case a notice was lost. A notice that arrives while the
/// worker is busy claiming is kept for its next call.
///
/// SQLite and memory hear this process's stores only (stores opened on
/// one SQLite file share them): their workers run in the serving
/// process. A PostgreSQL store listens on one connection of its own,
/// opened with its first waiter and kept while the store lives.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), state_store::StoreError> {
/// use std::time::Duration;
/// use state_store::{NewRun, RunStatus, Store, Wake};
/// let store = Store::memory();
/// let mut wakeups = store.run_wakeups().fallback(Duration::from_secs(5));
/// let worker = {
///     let store = store.clone();
///     tokio::spawn(async move {
///         loop {
///             wakeups.next().await?;
///             while let Some(claim) = store.claim_run("w", Duration::from_secs(30)).await? {
///                 store.finish_run(&claim, RunStatus::Success, None).await?;
///                 return Ok::<_, state_store::StoreError>(claim.run().run_id.clone());
///             }
///         }
///     })
/// };
/// store.create_run(NewRun::new("run-1", "agent")).await?;
/// assert_eq!(worker.await.unwrap()?, "run-1");
/// # Ok(())
/// # }
/// ```
pub struct RunWakeups {
    hub: RunHub,
    backend: Backend,
    queue: watch::Receiver<u64>,
    started: bool,
    /// When the previous call returned (microseconds).
    since: i64,
    fallback: Duration,
    /// The last read of when the next run is due.
    known_due: Option<KnownDue>,
}

/// When the next run was due at a read: kept while nothing was heard since
/// (this store's writes announce every change that can make one due
/// sooner), and for [`REREAD_DUE`] after a notice (a busy server hears one
/// a run: one read a run was a tenth of a SQLite server's CPU).
#[derive(Debug, Clone, Copy)]
struct KnownDue {
    /// When it was read (microseconds).
    read_at: i64,
    /// The notices counted when it was read.
    notices: u64,
    /// The earliest `available_at` or lease end after the `since` it was
    /// read for.
    due: Option<i64>,
}

/// How long a due time read before a notice is used: a delayed run
/// created, or a lease taken, since is seen this much later at most.
const REREAD_DUE: Duration = Duration::from_millis(10);

impl fmt::Debug for RunWakeups {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunWakeups")
            .field("started", &self.started)
            .field("fallback", &self.fallback)
            .finish()
    }
}

impl RunWakeups {
    pub(crate) fn new(hub: RunHub, backend: Backend) -> RunWakeups {
        let queue = hub.inner.queue.subscribe();
        hub.ensure_listening();
        RunWakeups {
            hub,
            backend,
            queue,
            started: false,
            since: now_micros(),
            fallback: Duration::from_secs(60),
            known_due: None,
        }
    }

    /// Wakes after `every` at the latest, even when nothing was heard.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use std::time::Duration;
    /// use state_store::Wake;
    /// let mut wakeups = state_store::Store::memory().run_wakeups().fallback(Duration::from_millis(10));
    /// assert_eq!(wakeups.next().await?, Wake::Start);
    /// assert_eq!(wakeups.next().await?, Wake::Fallback);
    /// # Ok(())
    /// # }
    /// ```
    pub fn fallback(mut self, every: Duration) -> RunWakeups {
        self.fallback = every;
        self
    }

    /// Resolves once other processes' notices are heard (PostgreSQL: its
    /// `LISTEN` is in place); at once on the other backends. What a
    /// worker process may wait for before it reports itself ready.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// state_store::Store::memory().run_wakeups().ready().await;
    /// # }
    /// ```
    pub async fn ready(&self) {
        self.hub.ready().await;
    }

    /// Waits for the next reason to claim: see [`RunWakeups`] and
    /// [`Wake`]. The first call returns [`Wake::Start`] at once. Fails
    /// only when reading the next due time fails.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use std::time::Duration;
    /// use state_store::{NewRun, Store, Wake};
    /// let store = Store::memory();
    /// let mut wakeups = store.run_wakeups();
    /// wakeups.next().await?;
    /// store.create_run(NewRun::new("later", "agent").after(Duration::from_millis(20))).await?;
    /// assert_eq!(wakeups.next().await?, Wake::Notified); // created
    /// assert_eq!(wakeups.next().await?, Wake::Due); // available
    /// # Ok(())
    /// # }
    /// ```
    pub async fn next(&mut self) -> Result<Wake, StoreError> {
        let wake = self.wait().await;
        // The worker claims after this: what became due until now, it
        // sees; what becomes due later, the next call waits for.
        self.since = now_micros();
        wake
    }

    async fn wait(&mut self) -> Result<Wake, StoreError> {
        self.hub.ensure_listening();
        if !self.started {
            self.started = true;
            self.queue.borrow_and_update();
            return Ok(Wake::Start);
        }
        if self.queue.has_changed().unwrap_or(false) {
            self.queue.borrow_and_update();
            return Ok(Wake::Notified);
        }
        loop {
            // Due after the previous call returned (the worker's last claim
            // did not see it): maybe already, while the worker was busy.
            let (due, reread_at) = self.due().await?;
            let now = now_micros();
            if due.is_some_and(|at| at <= now) {
                return Ok(Wake::Due);
            }
            let until =
                |at: i64| Duration::from_micros(u64::try_from(at.saturating_sub(now)).unwrap_or(0));
            let wait = due
                .into_iter()
                .chain(reread_at)
                .map(until)
                .fold(self.fallback, Duration::min);
            let notified = {
                let changed = std::pin::pin!(self.queue.changed());
                let sleep = std::pin::pin!(tokio::time::sleep(wait));
                matches!(select(changed, sleep).await, Either::Left(_))
            };
            match notified {
                true => {
                    self.queue.borrow_and_update();
                    return Ok(Wake::Notified);
                }
                false if due.is_some_and(|at| at <= now_micros()) => return Ok(Wake::Due),
                // Time to read the due time again (it may have come sooner).
                false if reread_at.is_some() => {}
                false => return Ok(Wake::Fallback),
            }
        }
    }

    /// When the next run is due after `since`, and when to read it again
    /// (`None`: not before a notice): the last read's, if it was made since
    /// the last notice (nothing can have become due sooner) or less than
    /// [`REREAD_DUE`] before it, and has not passed; else read now.
    async fn due(&mut self) -> Result<(Option<i64>, Option<i64>), StoreError> {
        let notices = *self.queue.borrow();
        if let Some(known) = self.known_due
            && known.due.is_none_or(|at| at > self.since)
        {
            if known.notices == notices {
                return Ok((known.due, None));
            }
            let reread_at = known.read_at + super::micros_of(REREAD_DUE);
            if now_micros() < reread_at {
                return Ok((known.due, Some(reread_at)));
            }
        }
        let read_at = now_micros();
        let due = self.backend.next_run_due(self.since).await?;
        self.known_due = Some(KnownDue {
            read_at,
            notices,
            due,
        });
        Ok((due, None))
    }
}

/// A watcher of one run ([`Store::watch_run`](crate::Store::watch_run)):
/// [`changed`](RunWatch::changed) resolves when the run changed since the
/// previous call (or since the watcher was made): events appended, its
/// status, a cancel requested, deleted; [`status_changed`](RunWatch::status_changed)
/// when its row did, not on its events. In any process on PostgreSQL
/// (through `NOTIFY`), in this one elsewhere. What a stream reader waits
/// on between reads of [`Store::run_events`](crate::Store::run_events),
/// and what a worker races its steps against to see a cancel at once.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), state_store::StoreError> {
/// use std::time::Duration;
/// use serde_json::json;
/// use state_store::{NewRun, RunEventIn, Store};
/// let store = Store::memory();
/// store.create_run(NewRun::new("run-1", "agent")).await?;
/// let mut watch = store.watch_run("run-1"); // first, then read
/// let mut seen = 0;
/// let reader = {
///     let store = store.clone();
///     tokio::spawn(async move {
///         loop {
///             for event in store.run_events("run-1", seen, 100).await? {
///                 seen = event.seq;
///                 if event.event == "end" {
///                     return Ok::<_, state_store::StoreError>(seen);
///                 }
///             }
///             watch.changed().await;
///         }
///     })
/// };
/// let claim = store.claim_run("w", Duration::from_secs(30)).await?.unwrap();
/// store.append_run_events(&claim, &[RunEventIn::new("values", json!(1))]).await?;
/// store.append_run_events(&claim, &[RunEventIn::new("end", json!(null))]).await?;
/// assert_eq!(reader.await.unwrap()?, 2);
/// # Ok(())
/// # }
/// ```
pub struct RunWatch {
    hub: RunHub,
    run_id: String,
    /// `Some` until dropped.
    receiver: Option<watch::Receiver<Changes>>,
    /// The row changes `status_changed` (or `row_changed`) has seen.
    rows_seen: u64,
    /// The row changes other than openings `cancel_or_end` has seen.
    others_seen: u64,
}

impl fmt::Debug for RunWatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunWatch")
            .field("run_id", &self.run_id)
            .finish()
    }
}

impl RunWatch {
    /// The run watched.
    ///
    /// ```
    /// assert_eq!(state_store::Store::memory().watch_run("r").run_id(), "r");
    /// ```
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// Waits for a change not yet seen (see [`RunWatch`]).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use state_store::{NewRun, Store};
    /// let store = Store::memory();
    /// let mut watch = store.watch_run("run-1");
    /// store.create_run(NewRun::new("run-1", "agent")).await?;
    /// watch.changed().await; // the creation
    /// # Ok(())
    /// # }
    /// ```
    pub async fn changed(&mut self) {
        self.hub.ensure_listening();
        if let Some(receiver) = &mut self.receiver {
            // The sender stays in the hub while this receiver lives.
            let _ = receiver.changed().await;
        }
    }

    /// Waits for a change of the run's row not yet seen by this method
    /// (or made since the watcher was): claimed, a cancel requested,
    /// ended, handed back, deleted. Events appended do not wake it: what
    /// a worker watching for a cancel, or a client waiting for the run's
    /// end, waits on (each event would cost them a read of the run).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use std::time::Duration;
    /// use serde_json::json;
    /// use state_store::{NewRun, RunEventIn, RunStatus, Store};
    /// let store = Store::memory();
    /// store.create_run(NewRun::new("run-1", "agent")).await?;
    /// let mut watch = store.watch_run("run-1");
    /// let claim = store.claim_run("w", Duration::from_secs(30)).await?.unwrap();
    /// watch.status_changed().await; // claimed
    /// store.append_run_events(&claim, &[RunEventIn::new("values", json!(1))]).await?;
    /// store.finish_run(&claim, RunStatus::Success, None).await?;
    /// watch.status_changed().await; // ended (the event did not count)
    /// let run = store.get_run("run-1", None).await?.unwrap();
    /// assert_eq!(run.status, RunStatus::Success);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn status_changed(&mut self) {
        self.hub.ensure_listening();
        if let Some(receiver) = &mut self.receiver {
            let seen = self.rows_seen;
            // The sender stays in the hub while this receiver lives.
            if let Ok(now) = receiver.wait_for(|c| c.row != seen).await {
                self.rows_seen = now.row;
            }
        }
    }

    /// Waits for a change of the run's row that may be a cancel requested
    /// or its end (or its hand-back, or its deletion), not yet seen by
    /// this method (or made since the watcher was): any change of its row
    /// but its creation and its claims in this process, which leave it
    /// going. What the worker running the run (watching from its claim
    /// on) and a client waiting for its end wait on: neither reads the run
    /// when it was only claimed. (Another process's notice is not known
    /// to be a claim: it counts.)
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use std::time::Duration;
    /// use state_store::{NewRun, RunStatus, Store};
    /// let store = Store::memory();
    /// let mut watch = store.watch_run("run-1"); // before its creation
    /// store.create_run(NewRun::new("run-1", "agent")).await?;
    /// let claim = store.claim_run("w", Duration::from_secs(30)).await?.unwrap();
    /// store.finish_run(&claim, RunStatus::Success, None).await?;
    /// watch.cancel_or_end().await; // the end: the creation and the claim did not count
    /// let run = store.get_run("run-1", None).await?.unwrap();
    /// assert_eq!(run.status, RunStatus::Success);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn cancel_or_end(&mut self) {
        self.hub.ensure_listening();
        if let Some(receiver) = &mut self.receiver {
            let seen = self.others_seen;
            // The sender stays in the hub while this receiver lives.
            if let Ok(now) = receiver.wait_for(|c| c.row - c.opened != seen).await {
                self.others_seen = now.row - now.opened;
            }
        }
    }

    /// Whether the run's row changed (as [`status_changed`](RunWatch::status_changed)
    /// counts changes) since this method or `status_changed` last saw it,
    /// or since the watcher was made; marks it seen, without waiting. A
    /// stream reader woken by [`changed`](RunWatch::changed) reads the
    /// run's row again only when this says so, not at every event.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use std::time::Duration;
    /// use serde_json::json;
    /// use state_store::{NewRun, RunEventIn, RunStatus, Store};
    /// let store = Store::memory();
    /// store.create_run(NewRun::new("run-1", "agent")).await?;
    /// let mut watch = store.watch_run("run-1");
    /// assert!(!watch.row_changed());
    /// let claim = store.claim_run("w", Duration::from_secs(30)).await?.unwrap();
    /// assert!(watch.row_changed(), "claimed");
    /// assert!(!watch.row_changed(), "seen");
    /// store.append_run_events(&claim, &[RunEventIn::new("values", json!(1))]).await?;
    /// assert!(!watch.row_changed(), "an event is not the row");
    /// store.finish_run(&claim, RunStatus::Success, None).await?;
    /// assert!(watch.row_changed());
    /// # Ok(())
    /// # }
    /// ```
    pub fn row_changed(&mut self) -> bool {
        self.hub.ensure_listening();
        let Some(receiver) = &self.receiver else {
            return false;
        };
        let now = receiver.borrow().row;
        let changed = now != self.rows_seen;
        self.rows_seen = now;
        changed
    }

    /// The status the run ended with, when its end was written by this
    /// store (or another store of its SQLite file in this process) while
    /// it was watched; `None` otherwise (going on, or ended by another
    /// process: read the run). What a client waiting for a run's
    /// end reads instead of the run, once [`cancel_or_end`](RunWatch::cancel_or_end)
    /// returns.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use std::time::Duration;
    /// use state_store::{NewRun, RunStatus, Store};
    /// let store = Store::memory();
    /// let mut watch = store.watch_run("run-1");
    /// store.create_run(NewRun::new("run-1", "agent")).await?;
    /// let claim = store.claim_run("w", Duration::from_secs(30)).await?.unwrap();
    /// assert_eq!(watch.ended(), None);
    /// store.finish_run(&claim, RunStatus::Interrupted, None).await?;
    /// watch.cancel_or_end().await;
    /// assert_eq!(watch.ended(), Some(RunStatus::Interrupted));
    /// # Ok(())
    /// # }
    /// ```
    pub fn ended(&self) -> Option<crate::runs::RunStatus> {
        self.receiver.as_ref().and_then(|r| r.borrow().ended)
    }

    /// Resolves once other processes' changes are heard (see
    /// [`RunWakeups::ready`]).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// state_store::Store::memory().watch_run("r").ready().await;
    /// # }
    /// ```
    pub async fn ready(&self) {
        self.hub.ready().await;
    }
}

impl Drop for RunWatch {
    fn drop(&mut self) {
        let mut runs = self.hub.inner.lock_runs();
        // Dropped under the lock: `watch` cannot subscribe in between.
        drop(self.receiver.take());
        if runs
            .get(&self.run_id)
            .is_some_and(|channel| channel.receiver_count() == 0)
        {
            runs.remove(&self.run_id);
        }
    }
}

#[cfg(feature = "postgres")]
pub(crate) use postgres::listener as postgres_listener;

#[cfg(feature = "postgres")]
mod postgres {
    use super::{Inner, RowChange, RunHub};
    use crate::backend::RUNS_CHANNEL;
    use futures::future::{Either, select};
    use serde::Deserialize;
    use sqlx::postgres::{PgConnectOptions, PgListener, PgPoolOptions};
    use std::sync::{Arc, Weak};
    use std::time::Duration;
    use tokio::sync::oneshot;

    const RETRY_FIRST: Duration = Duration::from_millis(100);
    const RETRY_MAX: Duration = Duration::from_secs(2);

    /// A notification's payload (`sql_runs::notice`).
    #[derive(Deserialize)]
    struct Notice {
        run: Option<String>,
        queue: bool,
        /// Only the run's events grew (`sql_runs::events_notice`).
        #[serde(default)]
        events: bool,
    }

    /// The run hub of a PostgreSQL store: it listens on `RUNS_CHANNEL`
    /// from its first waiter on.
    pub(crate) fn listener(pool: &sqlx::PgPool) -> RunHub {
        let options = pool.connect_options();
        RunHub::listening(Arc::new(move |hub, stopped| {
            Box::pin(pump(hub, Arc::clone(&options), stopped))
        }))
    }

    async fn unless_stopped<T>(
        stopped: &mut oneshot::Receiver<()>,
        work: impl Future<Output = T>,
    ) -> Option<T> {
        match select(std::pin::pin!(work), stopped).await {
            Either::Left((value, _)) => Some(value),
            Either::Right(_) => None,
        }
    }

    async fn pump(
        hub: Weak<Inner>,
        options: Arc<PgConnectOptions>,
        mut stopped: oneshot::Receiver<()>,
    ) {
        let mut retry = RETRY_FIRST;
        loop {
            let mut listener = match unless_stopped(&mut stopped, listen(&options)).await {
                None => return,
                Some(Ok(listener)) => listener,
                Some(Err(_)) => {
                    if unless_stopped(&mut stopped, tokio::time::sleep(retry))
                        .await
                        .is_none()
                    {
                        return;
                    }
                    retry = (retry * 2).min(RETRY_MAX);
                    continue;
                }
            };
            retry = RETRY_FIRST;
            {
                let Some(hub) = hub.upgrade() else { return };
                // What committed before the LISTEN was not heard: read
                // again. (Before `ready`: whoever waited for it has been
                // woken by then.)
                hub.wake_all();
                hub.ready.send_replace(true);
            }
            loop {
                match unless_stopped(&mut stopped, listener.try_recv()).await {
                    None => return,
                    Some(Ok(Some(notification))) => {
                        let Some(hub) = hub.upgrade() else { return };
                        // Anything else on the channel is not ours.
                        if let Ok(notice) = serde_json::from_str::<Notice>(notification.payload()) {
                            hub.announce(
                                notice.run.as_deref(),
                                notice.queue,
                                (!notice.events).then_some(RowChange::Other),
                            );
                        }
                    }
                    // Lost and listening again: notices may have been missed.
                    Some(Ok(None)) => {
                        let Some(hub) = hub.upgrade() else { return };
                        hub.wake_all();
                    }
                    Some(Err(_)) => {
                        let Some(hub) = hub.upgrade() else { return };
                        hub.ready.send_replace(false);
                        break;
                    }
                }
            }
        }
    }

    /// A connection listening on the channel, on a pool of its own.
    async fn listen(options: &PgConnectOptions) -> Result<PgListener, sqlx::Error> {
        let pool = PgPoolOptions::new()
            .max_connections(1)
            .min_connections(0)
            .max_lifetime(None)
            .idle_timeout(None)
            .acquire_timeout(Duration::from_secs(5))
            .connect_lazy_with(options.clone());
        let mut listener = PgListener::connect_with(&pool).await?;
        listener.listen(RUNS_CHANNEL).await?;
        Ok(listener)
    }
}
