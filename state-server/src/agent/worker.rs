//! The run workers: tasks of the serving process that claim the store's
//! pending runs (started by the first run created here, or by
//! [`Server::start_workers`](crate::Server::start_workers)), run each on
//! its graph, and store its events and its end, so that every API process
//! reading the same database streams them. With PostgreSQL, worker
//! processes on other machines claim from the same queue; a run whose
//! worker dies (its lease not renewed) is taken over by another, which
//! goes on from the run's last committed step.

use super::assistants::Assistants;
use super::local_results::LocalResults;
use super::run_events::RunContext;
use super::run_options::{breakpoints_of, flag};
use super::served::{RunRequest, Streamed};
use super::stream_mode::{StreamModeField, modes};
use futures::StreamExt;
use serde_json::{Value, json};
use state_store::{
    CancelAction, Claim, Durability, LeaseState, RunEventIn, RunStatus, RunWatch, Store,
    StoreError, ThreadStatus,
};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;

/// How long a claim holds a run without a renewal, unless
/// [`Server::lease`](crate::Server::lease) says otherwise; renewed at a
/// third of it, so a worker that dies frees its runs within this.
pub(crate) const LEASE: Duration = Duration::from_secs(30);

/// How many runs a serving process runs at once, unless
/// [`Server::workers`](crate::Server::workers) says otherwise.
pub(crate) const WORKERS: usize = 8;

/// How many times a run is claimed before it fails: a run whose workers
/// died this often (it may be what kills them) ends in `error`.
const MAX_ATTEMPTS: u32 = 3;

/// Where the workers of a process are in their life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Phase {
    /// Claiming and running runs.
    Working,
    /// Claiming none; finishing those they run.
    Draining,
    /// Handing back those they run, now.
    HandingBack,
}

/// The workers of one server: how many, their lease, started once.
pub(crate) struct WorkerPool {
    count: usize,
    /// The results the waits of this process ask of its workers.
    results: Arc<LocalResults>,
    /// Runs this process claimed as it created them, for its idle workers.
    handed: Arc<Handed>,
    /// Wakes an idle worker: a run is due, or handed to them.
    wake: Arc<Notify>,
    lease: Duration,
    started: OnceLock<()>,
    phase: watch::Sender<Phase>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

impl WorkerPool {
    /// `count` workers (none started yet) holding runs for `lease`.
    pub(crate) fn new(count: usize, lease: Duration) -> WorkerPool {
        WorkerPool {
            count,
            results: Arc::default(),
            handed: Arc::new(Handed {
                runs: Mutex::default(),
                idle: AtomicUsize::new(0),
                worker: format!("{}-handed", uuid::Uuid::new_v4()),
            }),
            wake: Arc::new(Notify::new()),
            lease,
            started: OnceLock::new(),
            phase: watch::Sender::new(Phase::Working),
            tasks: Mutex::new(Vec::new()),
        }
    }

    /// Starts the workers, the first time only (inside a tokio runtime),
    /// the task that hands the store's wake-ups to them, and the one that
    /// starts the crons' runs.
    pub(crate) fn start(&self, app: &crate::routes::App) {
        let (store, assistants) = (&app.store, &app.assistants);
        self.started.get_or_init(|| {
            let mut tasks = self.tasks.lock().unwrap_or_else(|e| e.into_inner());
            if self.count == 0 {
                return;
            }
            let phase = self.phase.subscribe();
            tasks.push(tokio::spawn(super::cron_scheduler::schedule(
                app.clone(),
                async move {
                    let mut phase = phase;
                    while *phase.borrow_and_update() == Phase::Working {
                        if phase.changed().await.is_err() {
                            return;
                        }
                    }
                },
            )));
            let wake = self.wake.clone();
            tasks.push(tokio::spawn(dispatch(
                store.clone(),
                wake.clone(),
                self.phase.subscribe(),
            )));
            for n in 0..self.count {
                let worker = Worker {
                    store: store.clone(),
                    assistants: assistants.clone(),
                    name: format!("{}-{n}", uuid::Uuid::new_v4()),
                    lease: self.lease,
                    phase: self.phase.subscribe(),
                    wake: wake.clone(),
                    results: self.results.clone(),
                    handed: self.handed.clone(),
                };
                tasks.push(tokio::spawn(worker.work()));
            }
        });
    }

    /// The results the waits of this process ask of its workers.
    pub(crate) fn results(&self) -> &Arc<LocalResults> {
        &self.results
    }

    /// Who claims a run as it is created, and for how long, when a worker
    /// of this process is idle to run it at once (the workers started and
    /// working): the run's creation and claim are then one write, and no
    /// worker looks for it (`Store::create_run_claimed`, then
    /// [`hand`](Self::hand)).
    pub(crate) fn claimant(&self) -> Option<(&str, Duration)> {
        let ready = self.started.get().is_some()
            && self.count > 0
            && *self.phase.borrow() == Phase::Working
            && self.handed.idle.load(Ordering::Relaxed) > 0;
        ready.then_some((self.handed.worker.as_str(), self.lease))
    }

    /// Hands a run claimed at its creation (for [`claimant`](Self::claimant))
    /// to the next idle worker.
    pub(crate) fn hand(&self, claim: Claim, watch: RunWatch) {
        self.handed
            .runs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push_back((claim, watch, Instant::now()));
        self.wake.notify_one();
    }

    /// Stops claiming; lets the runs in hand finish for up to `grace`,
    /// then hands back those still running (pending again: another worker
    /// takes them over at once, from their last committed step); returns
    /// when every worker has stopped.
    pub(crate) async fn shutdown(&self, grace: Duration) {
        self.phase.send_replace(Phase::Draining);
        let tasks = std::mem::take(&mut *self.tasks.lock().unwrap_or_else(|e| e.into_inner()));
        let all = futures::future::join_all(tasks);
        tokio::pin!(all);
        if tokio::time::timeout(grace, &mut all).await.is_err() {
            self.phase.send_replace(Phase::HandingBack);
            all.await;
        }
    }
}

/// The runs claimed as they were created, for whichever worker of this
/// process is idle first.
struct Handed {
    /// Each with when it was handed.
    runs: Mutex<VecDeque<(Claim, RunWatch, Instant)>>,
    /// Workers waiting for a run: a run is claimed at its creation only
    /// when one is.
    idle: AtomicUsize,
    /// The lease holder of those runs (any of the workers runs them).
    worker: String,
}

impl Handed {
    fn take(&self) -> Option<(Claim, RunWatch, Instant)> {
        self.runs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop_front()
    }
}

/// The events a run's claim stores with it: its `metadata` (none for a run
/// whose rollback was asked of a worker that died: rolled back before
/// anything is written).
pub(crate) fn claim_events(run: &state_store::Run) -> Vec<RunEventIn> {
    match run.cancel == Some(CancelAction::Rollback) {
        true => Vec::new(),
        false => vec![RunEventIn::new(
            "metadata",
            json!({"run_id": run.run_id, "attempt": run.attempt}),
        )],
    }
}

/// Hands the store's wake-ups (a run created, handed back or due, a
/// lease expired) to the idle workers, one at a time: a worker that
/// claims a run wakes the next (there may be more), one that finds none
/// sleeps again. (Each worker waiting on the store's wake-ups itself
/// made every new run cost as many claims as there were idle workers: on
/// SQLite, as many write transactions.)
async fn dispatch(store: Store, wake: Arc<Notify>, mut phase: watch::Receiver<Phase>) {
    let mut wakeups = store.run_wakeups();
    while *phase.borrow_and_update() == Phase::Working {
        tokio::select! {
            woken = wakeups.next() => {
                if woken.is_err() {
                    // The database may come back: look again in a second.
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                wake.notify_one();
            }
            _ = phase.changed() => {}
        }
    }
}

/// One worker task.
struct Worker {
    store: Store,
    assistants: Arc<Assistants>,
    name: String,
    lease: Duration,
    phase: watch::Receiver<Phase>,
    /// Woken by `dispatch`, or by another worker that claimed a run.
    wake: Arc<Notify>,
    /// Where a run's result goes when a wait of this process asks for it.
    results: Arc<LocalResults>,
    /// Runs claimed for this process's workers as they were created.
    handed: Arc<Handed>,
}

impl Worker {
    /// Claims and runs runs until shut down; a store error waits a second
    /// and tries again (the database may come back).
    async fn work(mut self) {
        while *self.phase.borrow_and_update() == Phase::Working {
            // A run claimed for this process as it was created comes first.
            if let Some((claim, watch)) = self.take_handed().await {
                self.execute(claim, watch).await;
                continue;
            }
            // The run's `metadata` event is stored with the claim: one
            // write. (None for a run whose rollback was asked of a worker
            // that died: rolled back before anything is written.) The
            // run is watched from inside the claim's transaction: a
            // cancel, which can only come after it, is not missed, and
            // nothing needs reading to look for one.
            let run_watch: Arc<OnceLock<RunWatch>> = Arc::default();
            let (watching, store) = (run_watch.clone(), self.store.clone());
            let claimed = self
                .store
                .claim_run_with_events(&self.name, self.lease, move |run| {
                    let _ = watching.set(store.watch_run(&run.run_id));
                    claim_events(run)
                })
                .await;
            match claimed {
                Ok(Some(claim)) => {
                    // Others were due: another idle worker looks.
                    if claim.others_due() {
                        self.wake.notify_one();
                    }
                    // The watch of the run claimed (one made for a run
                    // whose claim did not commit is another's).
                    let watch = Arc::try_unwrap(run_watch)
                        .ok()
                        .and_then(OnceLock::into_inner)
                        .filter(|watch| watch.run_id() == claim.run().run_id)
                        .unwrap_or_else(|| self.store.watch_run(&claim.run().run_id));
                    self.execute(claim, watch).await;
                    continue;
                }
                Ok(None) => {}
                Err(_) => tokio::time::sleep(Duration::from_secs(1)).await,
            }
            // Idle: a run created now may be claimed for it as it is made.
            self.handed.idle.fetch_add(1, Ordering::Relaxed);
            tokio::select! {
                () = self.wake.notified() => {}
                _ = self.phase.changed() => {}
            }
            self.handed.idle.fetch_sub(1, Ordering::Relaxed);
        }
        // Claimed for this process and not taken yet: run (a shutdown past
        // its grace hands them back).
        while let Some((claim, watch)) = self.take_handed().await {
            self.execute(claim, watch).await;
        }
    }

    /// The next run claimed for this process as it was created, its lease
    /// renewed first if it waited long (every worker was busy when it was
    /// handed): one whose lease is lost (taken over) is another's now.
    async fn take_handed(&self) -> Option<(Claim, RunWatch)> {
        while let Some((claim, watch, handed)) = self.handed.take() {
            if handed.elapsed() < self.lease / 3 {
                return Some((claim, watch));
            }
            match self.store.renew_run(&claim, self.lease).await {
                Ok(LeaseState::Lost) | Err(_) => continue,
                Ok(_) => return Some((claim, watch)),
            }
        }
        None
    }
}

/// What the run asked for, from its stored request.
fn request_of(kwargs: &Value) -> Result<RunRequest, String> {
    let field: Option<StreamModeField> = match kwargs.get("stream_mode") {
        None | Some(Value::Null) => None,
        Some(value) => {
            Some(serde_json::from_value(value.clone()).map_err(|e| format!("stream_mode: {e}"))?)
        }
    };
    Ok(RunRequest {
        input: kwargs.get("input").filter(|v| !v.is_null()).cloned(),
        resume: kwargs
            .get("command")
            .and_then(|c| c.get("resume"))
            .filter(|v| !v.is_null())
            .cloned(),
        modes: modes(field.as_ref()).map_err(|e| e.message().to_owned())?,
        subgraphs: flag(kwargs, "subgraphs", "stream_subgraphs"),
        breakpoints: breakpoints_of(kwargs)?,
        graph_context: kwargs.get("context").and_then(Value::as_object).cloned(),
        checkpoint: kwargs
            .pointer("/config/configurable/checkpoint_id")
            .and_then(Value::as_str)
            .map(|id| {
                super::checkpoint::parse(id)
                    .ok_or_else(|| format!("checkpoint_id: {id} is not one of ours"))
            })
            .transpose()?,
        // LangGraph's `"exit"` writes the checkpoint at the end only; here
        // every superstep is logged, as `"async"` logs it.
        durability: match kwargs.get("durability").and_then(Value::as_str) {
            Some("sync") => Durability::Sync,
            _ => Durability::Async,
        },
        context: RunContext::default(),
        result: false,
    })
}

/// Resolves when the workers are told to hand back their runs.
async fn handing_back(phase: &mut watch::Receiver<Phase>) {
    let _ = phase.wait_for(|phase| *phase == Phase::HandingBack).await;
}

/// How a run taken over stands: what its first worker left in the thread.
enum Takeover {
    /// It wrote no step: run it as asked.
    Fresh,
    /// It wrote steps and stopped mid-graph: go on from the last one.
    GoOn,
    /// It paused at an interrupt, or reached its end, before its worker
    /// could say so: say so now.
    Ended(RunStatus, Option<ThreadStatus>),
}

impl Worker {
    /// How the run stands, when this claim takes it over from another
    /// worker (attempt 2 or later): its thread's head against the head at
    /// its first claim, and the thread's state.
    async fn takeover(
        &self,
        claim: &Claim,
        thread: &str,
        served: &dyn super::served::Served,
    ) -> Result<Takeover, String> {
        let run = claim.run();
        if claim.attempt() < 2 {
            return Ok(Takeover::Fresh);
        }
        let head = match self.store.thread_info(thread).await {
            Ok(info) => info.seq,
            Err(StoreError::ThreadNotFound { .. }) => 0,
            Err(error) => return Err(error.to_string()),
        };
        if head <= run.base_seq.unwrap_or(0) {
            return Ok(Takeover::Fresh);
        }
        let state = served
            .state(thread.to_owned(), None)
            .await
            .map_err(|error| error.message().to_owned())?;
        let paused = state["interrupts"]
            .as_array()
            .is_some_and(|interrupts| !interrupts.is_empty());
        let next = state["next"]
            .as_array()
            .is_some_and(|next| !next.is_empty());
        Ok(if paused {
            Takeover::Ended(RunStatus::Interrupted, Some(ThreadStatus::Interrupted))
        } else if next {
            Takeover::GoOn
        } else {
            Takeover::Ended(RunStatus::Success, None)
        })
    }

    /// Runs one claimed run to its end: the `metadata` event, the graph's
    /// events, then `error` if it failed; the run finished as success,
    /// interrupted or error. A lost lease stops it writing; a shutdown
    /// past its grace hands it back.
    async fn execute(&mut self, claim: Claim, mut watch: RunWatch) {
        let store = self.store.clone();
        let mut phase = self.phase.clone();
        let run = claim.run().clone();
        let thread = run.thread_id.clone().unwrap_or_else(|| run.run_id.clone());
        let fail = |message: String| json!({"error": "Error", "message": message});
        // Taken over with a rollback asked of the worker that died: done
        // now, before anything else is written.
        if run.cancel == Some(CancelAction::Rollback) {
            self.roll_back(&claim, &run, &thread).await;
            return;
        }
        // An interrupt asked of it before it was claimed (of the worker
        // that died): it ends here, as it stands.
        if run.cancel == Some(CancelAction::Interrupt) {
            self.finish(&claim, &run, &thread, RunStatus::Interrupted, None, &[])
                .await;
            return;
        }
        if claim.attempt() > MAX_ATTEMPTS {
            let message = format!(
                "the run was taken over {} times (its workers stopped mid-run); it is not tried again",
                claim.attempt() - 1
            );
            let error = json!({"error": "RunAttemptsExceeded", "message": message});
            let last = [RunEventIn::new("error", error)];
            self.finish(&claim, &run, &thread, RunStatus::Error, None, &last)
                .await;
            return;
        }
        // The events that came with the run's end: stored with it, in
        // the same write.
        let mut last = Vec::new();
        let assistants = self.assistants.clone();
        let assistant = assistants.of_run(&run);
        let (status, thread_status) = match (assistant, request_of(&run.kwargs)) {
            (None, _) => {
                let message = format!("assistant {} is not served here", run.assistant_id);
                last.push(RunEventIn::new("error", fail(message)));
                (RunStatus::Error, None)
            }
            (_, Err(message)) => {
                last.push(RunEventIn::new("error", fail(message)));
                (RunStatus::Error, None)
            }
            (Some(assistant), Ok(mut request)) => {
                request.context = RunContext {
                    run_id: run.run_id.clone(),
                    graph_id: assistant.graph_id.clone(),
                    assistant_id: run.assistant_id.clone(),
                    attempt: claim.attempt(),
                    metadata: run.metadata.clone(),
                    owner: run.owner.clone(),
                };
                request.result = self.results.expected(&run.run_id);
                match self.takeover(&claim, &thread, &*assistant.served).await {
                    Ok(Takeover::Fresh) => {}
                    Ok(Takeover::GoOn) => {
                        // From where the first worker left it: any branch
                        // back to a past step is written already.
                        request.input = None;
                        request.resume = None;
                        request.checkpoint = None;
                    }
                    Ok(Takeover::Ended(status, thread_status)) => {
                        self.finish(&claim, &run, &thread, status, thread_status, &[])
                            .await;
                        return;
                    }
                    Err(message) => {
                        let last = [RunEventIn::new("error", fail(message))];
                        self.finish(&claim, &run, &thread, RunStatus::Error, None, &last)
                            .await;
                        return;
                    }
                }
                // The graph runs in a task of its own: storing an event
                // must not hold up its next step (on SQLite both write).
                let (tx, mut events) = tokio::sync::mpsc::unbounded_channel();
                let mut graph = assistant.served.run(thread.clone(), request);
                let driver = tokio::spawn(async move {
                    while let Some(item) = graph.next().await {
                        if tx.send(item).is_err() {
                            break;
                        }
                    }
                });
                let mut renewal = tokio::time::interval(self.lease / 3);
                renewal.tick().await;
                let mut end = (RunStatus::Error, None);
                // Whether the graph said how it ended (done, paused or
                // failed): what comes from then on is held back for the
                // finish.
                let mut ending = false;
                let mut rollback = false;
                // A cancel is seen at once: the run's watch (made in the
                // claim's transaction) wakes on a change of its row, not
                // on the events stored here nor on the claim.
                loop {
                    let item = tokio::select! {
                        item = events.recv() => match item {
                            Some(item) => item,
                            None => break,
                        },
                        () = watch.cancel_or_end() => {
                            match store.get_run(&run.run_id, None).await {
                                Ok(Some(now)) if now.cancel.is_none() => continue,
                                // Cancelled, or deleted with its thread.
                                now => {
                                    rollback = matches!(&now, Ok(Some(now)) if now.cancel == Some(CancelAction::Rollback));
                                    end = (RunStatus::Interrupted, None);
                                    break;
                                }
                            }
                        }
                        _ = renewal.tick() => {
                            match store.renew_run(&claim, self.lease).await {
                                Ok(LeaseState::Held) => continue,
                                Ok(LeaseState::Cancel(action)) => {
                                    rollback = action == CancelAction::Rollback;
                                    end = (RunStatus::Interrupted, None);
                                    break;
                                }
                                // Another worker has the run now.
                                Ok(LeaseState::Lost) => {
                                    driver.abort();
                                    return;
                                }
                                // The database may come back before the
                                // lease ends: try again at the next tick.
                                Err(_) => continue,
                            }
                        }
                        () = handing_back(&mut phase) => {
                            // Shut down past its grace: pending again, for
                            // another worker to go on from its last step.
                            driver.abort();
                            let _ = store.release_run(claim).await;
                            return;
                        }
                    };
                    // What else is ready goes with it: one write (one
                    // commit) for the events the graph made meanwhile.
                    let mut items = vec![item];
                    while let Ok(more) = events.try_recv() {
                        items.push(more);
                    }
                    let mut batch = std::mem::take(&mut last);
                    for item in items {
                        match item {
                            Ok(Streamed::Event(name, data)) => {
                                batch.push(RunEventIn::new(&name, data));
                            }
                            Ok(Streamed::Result(result)) => {
                                // Before the end is written: the wait wakes
                                // on it.
                                self.results.offer(&run.run_id, result);
                            }
                            Ok(Streamed::Paused) => {
                                end = (RunStatus::Interrupted, Some(ThreadStatus::Interrupted));
                                ending = true;
                            }
                            Ok(Streamed::Done) => {
                                end = (RunStatus::Success, None);
                                ending = true;
                            }
                            Err(error) => {
                                let data =
                                    json!({"error": error.kind(), "message": error.message()});
                                batch.push(RunEventIn::new("error", data));
                                end = (RunStatus::Error, None);
                                ending = true;
                            }
                        }
                    }
                    if ending {
                        // Stored with the run's end (the graph's stream
                        // closes next).
                        last = batch;
                        continue;
                    }
                    if !batch.is_empty() {
                        match store.append_run_events(&claim, &batch).await {
                            Ok(Some(_)) => {}
                            Ok(None) => {
                                // The lease was lost: another worker has it.
                                driver.abort();
                                return;
                            }
                            Err(error) => {
                                last.push(RunEventIn::new("error", fail(error.to_string())));
                                end = (RunStatus::Error, None);
                                break;
                            }
                        }
                    }
                }
                driver.abort();
                if rollback {
                    // The graph must have let go of the thread before it is
                    // rewound: its task dropped, so no step of it commits
                    // after the rewind.
                    let _ = driver.await;
                    self.roll_back(&claim, &run, &thread).await;
                    return;
                }
                end
            }
        };
        self.finish(&claim, &run, &thread, status, thread_status, &last)
            .await;
    }

    /// Rolls the run back (its graph stopped): its thread as it was at the
    /// run's first claim, the run and its events deleted, in one
    /// transaction of the store. The thread's status is the one its state
    /// at that step says (interrupted there, or idle). If the store
    /// refuses (the thread was compacted past that step), the run ends
    /// interrupted, with an `error` event saying why; if the database does
    /// not answer, the run is left to the worker that takes it over when
    /// its lease runs out.
    async fn roll_back(&self, claim: &Claim, run: &state_store::Run, thread: &str) {
        let base = run.base_seq.unwrap_or(0);
        let paused = match self.assistants.find(&run.assistant_id) {
            Some(assistant) => assistant
                .served
                .state(thread.to_owned(), Some(base))
                .await
                .is_ok_and(|state| {
                    state["interrupts"]
                        .as_array()
                        .is_some_and(|interrupts| !interrupts.is_empty())
                }),
            None => false,
        };
        let status = paused.then_some(ThreadStatus::Interrupted);
        match self.store.roll_back_run(claim, status).await {
            Ok(true) => {
                if run.thread_id.is_none() {
                    let _ = self.store.delete_thread(thread).await;
                }
            }
            // Lost: the worker holding it now acts on the request.
            Ok(false) => {}
            // The database did not answer: the lease runs out, and the
            // worker that takes the run over rolls it back (the request
            // stays on the run).
            Err(StoreError::Backend { .. }) => {}
            Err(error) => {
                let data = json!({"error": "RollbackFailed", "message": error.to_string()});
                let last = [RunEventIn::new("error", data)];
                self.finish(claim, run, thread, RunStatus::Interrupted, None, &last)
                    .await;
            }
        }
    }

    /// Records the run's end, with its `last` events (one write); a
    /// stateless run's thread goes with it.
    async fn finish(
        &self,
        claim: &Claim,
        run: &state_store::Run,
        thread: &str,
        status: RunStatus,
        thread_status: Option<ThreadStatus>,
        last: &[RunEventIn],
    ) {
        let _ = self
            .store
            .finish_run_with_events(claim, status, thread_status, last)
            .await;
        if run.thread_id.is_none() {
            // A stateless run's thread is its own, gone with it
            // (LangGraph's `on_completion="delete"`).
            let _ = self.store.delete_thread(thread).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runs_durability_is_langgraphs_async_unless_it_asks_sync() {
        let durability = |kwargs: Value| request_of(&kwargs).unwrap().durability;
        assert_eq!(durability(json!({"durability": "sync"})), Durability::Sync);
        for kwargs in [
            json!({"durability": "async"}),
            json!({"durability": "exit"}),
            json!({"durability": null}),
            json!({}),
        ] {
            assert_eq!(durability(kwargs.clone()), Durability::Async, "{kwargs}");
        }
    }
}
