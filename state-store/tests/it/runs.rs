//! The Agent Server's runs queue on every backend: a run's life (created
//! pending, claimed under a lease, finished), the multitask strategies,
//! one running run per thread under concurrent claimers, lease expiry and
//! fencing, cancels, stream events and their replay, wake-ups (across two
//! PostgreSQL pools, with no polling delay), owners, thread records.

use crate::on_every_backend;
use crate::support::backends::TestStore;
use serde_json::json;
use state_store::{
    CancelAction, IfExists, IfNotExists, LeaseState, MultitaskStrategy, NewRun, RunEventIn,
    RunFilter, RunStatus, Store, StoreError, ThreadSearch, ThreadSortBy, ThreadStatus, Wake,
};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

const LEASE: Duration = Duration::from_secs(30);
/// Longer than any wake-up may take in these tests: a wake-up that comes
/// this late came from a timer, not a notice.
const FALLBACK: Duration = Duration::from_secs(20);

fn on(thread: &str, run: &str) -> NewRun {
    NewRun::new(run, "agent")
        .thread(thread)
        .if_not_exists(IfNotExists::Create)
}

async fn status(store: &Store, run: &str) -> Option<RunStatus> {
    store.get_run(run, None).await.unwrap().map(|r| r.status)
}

async fn thread_status(store: &Store, thread: &str) -> ThreadStatus {
    store
        .thread_record(thread, None)
        .await
        .unwrap()
        .unwrap()
        .status
}

async fn lifecycle(ts: TestStore) {
    let store = &ts.store;
    store
        .create_thread_record("t", json!({"user": "ada"}), None, IfExists::Raise)
        .await
        .unwrap();
    assert_eq!(thread_status(store, "t").await, ThreadStatus::Idle);
    let run = store
        .create_run(
            NewRun::new("run-1", "agent")
                .thread("t")
                .metadata(json!({"m": 1}))
                .kwargs(json!({"input": {"n": 1}, "stream_mode": ["values"]})),
        )
        .await
        .unwrap();
    assert_eq!(
        (run.status, run.attempt, run.cancel),
        (RunStatus::Pending, 0, None)
    );
    assert_eq!(thread_status(store, "t").await, ThreadStatus::Busy);

    let claim = store.claim_run("w1", LEASE).await.unwrap().unwrap();
    assert_eq!(claim.run().run_id, "run-1", "{}", ts.name);
    assert_eq!(claim.attempt(), 1);
    assert_eq!(claim.run().status, RunStatus::Running);
    assert_eq!(claim.run().kwargs["input"]["n"], 1);
    assert!(store.claim_run("w2", LEASE).await.unwrap().is_none());
    assert_eq!(status(store, "run-1").await, Some(RunStatus::Running));

    assert_eq!(
        store.renew_run(&claim, LEASE).await.unwrap(),
        LeaseState::Held
    );
    let events = [
        RunEventIn::new("metadata", json!({"run_id": "run-1", "attempt": 1})),
        RunEventIn::new("values", json!({"n": 1})),
    ];
    assert_eq!(
        store.append_run_events(&claim, &events).await.unwrap(),
        Some(2)
    );
    assert!(
        store
            .finish_run(&claim, RunStatus::Success, None)
            .await
            .unwrap()
    );
    let done = store.get_run("run-1", None).await.unwrap().unwrap();
    assert_eq!((done.status, done.attempt), (RunStatus::Success, 1));
    assert!(done.updated_at >= done.created_at);
    assert_eq!(thread_status(store, "t").await, ThreadStatus::Idle);
    // Finished: its claim writes nothing more.
    assert!(
        !store
            .finish_run(&claim, RunStatus::Error, None)
            .await
            .unwrap()
    );
    assert_eq!(
        store.append_run_events(&claim, &events).await.unwrap(),
        None
    );
    assert!(store.claim_run("w1", LEASE).await.unwrap().is_none());

    // Errors and timeouts leave the thread in error.
    store.create_run(on("t", "run-2")).await.unwrap();
    let claim = store.claim_run("w1", LEASE).await.unwrap().unwrap();
    store
        .finish_run(&claim, RunStatus::Timeout, None)
        .await
        .unwrap();
    assert_eq!(thread_status(store, "t").await, ThreadStatus::Error);
    let runs = store
        .list_runs(Some("t"), RunFilter::default())
        .await
        .unwrap();
    let ids: Vec<&str> = runs.iter().map(|r| r.run_id.as_str()).collect();
    assert_eq!(ids, ["run-2", "run-1"], "newest first");
    let successes = store
        .list_runs(Some("t"), RunFilter::default().status(RunStatus::Success))
        .await
        .unwrap();
    assert_eq!(successes.len(), 1);
    let page = store
        .list_runs(Some("t"), RunFilter::default().limit(1).offset(1))
        .await
        .unwrap();
    assert_eq!(page[0].run_id, "run-1");
    // A run in flight cannot finish as pending or running.
    store.create_run(on("t", "run-3")).await.unwrap();
    let claim = store.claim_run("w1", LEASE).await.unwrap().unwrap();
    assert!(matches!(
        store.finish_run(&claim, RunStatus::Running, None).await,
        Err(StoreError::InvalidRun { .. })
    ));
    // A paused graph: the caller says so.
    store
        .finish_run(
            &claim,
            RunStatus::Interrupted,
            Some(ThreadStatus::Interrupted),
        )
        .await
        .unwrap();
    assert_eq!(thread_status(store, "t").await, ThreadStatus::Interrupted);
}

async fn threads_must_exist_unless_created(ts: TestStore) {
    let store = &ts.store;
    let missing = store
        .create_run(NewRun::new("r", "agent").thread("nope"))
        .await
        .unwrap_err();
    assert!(
        matches!(&missing, StoreError::ThreadNotFound { thread } if thread == "nope"),
        "{missing}"
    );
    assert!(store.get_run("r", None).await.unwrap().is_none());
    store.create_run(on("new", "r").owner("ada")).await.unwrap();
    let record = store.thread_record("new", None).await.unwrap().unwrap();
    assert_eq!(
        (record.owner.as_deref(), record.status),
        (Some("ada"), ThreadStatus::Busy)
    );
    let taken = store.create_run(on("new", "r")).await.unwrap_err();
    assert!(matches!(taken, StoreError::RunExists { .. }), "{taken}");

    // Stateless runs need no thread.
    store
        .create_run(NewRun::new("s", "agent").owner("ada"))
        .await
        .unwrap();
    let stateless = store.list_runs(None, RunFilter::default()).await.unwrap();
    assert_eq!(stateless.len(), 1);
    assert_eq!(stateless[0].thread_id, None);
    // Two stateless runs run at once.
    store.create_run(NewRun::new("s2", "agent")).await.unwrap();
    let a = store.claim_run("w", LEASE).await.unwrap().unwrap();
    let b = store.claim_run("w", LEASE).await.unwrap().unwrap();
    let c = store.claim_run("w", LEASE).await.unwrap();
    let mut ids = vec![a.run().run_id.clone(), b.run().run_id.clone()];
    ids.extend(c.map(|c| c.run().run_id.clone()));
    ids.sort();
    assert_eq!(ids, ["r", "s", "s2"], "{}", ts.name);

    let bad = store
        .create_run(NewRun::new("m", "agent").metadata(json!([1])))
        .await
        .unwrap_err();
    assert!(matches!(bad, StoreError::InvalidRun { .. }), "{bad}");
    assert!(store.create_run(NewRun::new("", "agent")).await.is_err());
}

async fn multitask_strategies(ts: TestStore) {
    let store = &ts.store;
    // enqueue: waits its turn.
    store.create_run(on("t", "a")).await.unwrap();
    store.create_run(on("t", "b")).await.unwrap();
    let a = store.claim_run("w", LEASE).await.unwrap().unwrap();
    assert_eq!(a.run().run_id, "a");
    assert!(
        store.claim_run("w", LEASE).await.unwrap().is_none(),
        "{}: one running run per thread",
        ts.name
    );

    // reject: refused while a or b are in flight, nothing written.
    let reject = store
        .create_run(on("t", "c").multitask_strategy(MultitaskStrategy::Reject))
        .await
        .unwrap_err();
    assert!(matches!(&reject, StoreError::ThreadBusy { thread } if thread == "t"));
    assert_eq!(
        reject.to_string(),
        "Thread is already running a task. Wait for it to finish or choose a different multitask strategy."
    );
    assert!(store.get_run("c", None).await.unwrap().is_none());
    // Refused with a metadata patch, or made again under an id taken with
    // a strategy that cancels: nothing of it written either.
    let before = store.thread_record("t", None).await.unwrap().unwrap();
    let busy = |e: &StoreError| matches!(e, StoreError::ThreadBusy { .. });
    let taken = |e: &StoreError| matches!(e, StoreError::RunExists { .. });
    for (run, strategy, expected) in [
        (
            "c",
            MultitaskStrategy::Reject,
            busy as fn(&StoreError) -> bool,
        ),
        ("b", MultitaskStrategy::Interrupt, taken),
    ] {
        let refused = store
            .create_run(
                on("t", run)
                    .multitask_strategy(strategy)
                    .thread_metadata(json!({"patched": true})),
            )
            .await
            .unwrap_err();
        assert!(expected(&refused), "{run}: {refused}");
    }
    let after = store.thread_record("t", None).await.unwrap().unwrap();
    assert_eq!(after.metadata, before.metadata, "{}", ts.name);
    assert_eq!(status(store, "b").await, Some(RunStatus::Pending));
    let a_now = store.get_run("a", None).await.unwrap().unwrap();
    assert_eq!(a_now.cancel, None, "{}: a not asked to stop", ts.name);

    // interrupt: the pending b is interrupted at once, the running a gets
    // the request.
    let d = store
        .create_run(on("t", "d").multitask_strategy(MultitaskStrategy::Interrupt))
        .await
        .unwrap();
    assert_eq!(d.status, RunStatus::Pending);
    assert_eq!(status(store, "b").await, Some(RunStatus::Interrupted));
    let a_now = store.get_run("a", None).await.unwrap().unwrap();
    assert_eq!(
        (a_now.status, a_now.cancel),
        (RunStatus::Running, Some(CancelAction::Interrupt))
    );
    assert_eq!(
        store.renew_run(&a, LEASE).await.unwrap(),
        LeaseState::Cancel(CancelAction::Interrupt)
    );
    assert!(store.claim_run("w", LEASE).await.unwrap().is_none());
    store
        .finish_run(&a, RunStatus::Interrupted, None)
        .await
        .unwrap();
    assert_eq!(
        store.get_run("a", None).await.unwrap().unwrap().cancel,
        None,
        "acted on"
    );
    assert_eq!(
        thread_status(store, "t").await,
        ThreadStatus::Busy,
        "d is pending"
    );
    let d = store.claim_run("w", LEASE).await.unwrap().unwrap();
    assert_eq!(d.run().run_id, "d");

    // rollback: a pending run is deleted, the running d gets the request.
    store.create_run(on("t", "e")).await.unwrap();
    store
        .create_run(on("t", "f").multitask_strategy(MultitaskStrategy::Rollback))
        .await
        .unwrap();
    assert_eq!(status(store, "e").await, None, "deleted");
    assert_eq!(
        store.renew_run(&d, LEASE).await.unwrap(),
        LeaseState::Cancel(CancelAction::Rollback)
    );
    // The worker rolls back and deletes its run: its lease is gone.
    assert!(store.delete_run("d", None).await.unwrap());
    assert_eq!(store.renew_run(&d, LEASE).await.unwrap(), LeaseState::Lost);
    let f = store.claim_run("w", LEASE).await.unwrap().unwrap();
    assert_eq!(f.run().run_id, "f");
    store
        .finish_run(&f, RunStatus::Success, None)
        .await
        .unwrap();
    assert_eq!(thread_status(store, "t").await, ThreadStatus::Idle);
    // reject on an idle thread is accepted.
    store
        .create_run(on("t", "g").multitask_strategy(MultitaskStrategy::Reject))
        .await
        .unwrap();
}

async fn lease_expiry_is_taken_over_and_fenced(ts: TestStore) {
    use crate::support::states::Chat;
    use state_core::State;
    let store = &ts.store;
    let other = ts.another_worker().await;
    // Two steps before the run, one by it: its base is the thread's head
    // at its first claim, and stays so for the worker taking it over.
    let mut log = store.thread::<Chat>("t").await.unwrap();
    for word in ["a", "b"] {
        log.apply(Chat::delta().transcript(vec![word.into()]))
            .await
            .unwrap();
    }
    store.create_run(on("t", "r")).await.unwrap();
    assert_eq!(
        store.get_run("r", None).await.unwrap().unwrap().base_seq,
        None
    );
    store.create_run(on("t", "queued")).await.unwrap();
    let old = store
        .claim_run("dead", Duration::from_millis(400))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(old.run().base_seq, Some(2), "{}", ts.name);
    log.apply(Chat::delta().transcript(vec!["by the run".into()]))
        .await
        .unwrap();
    store
        .append_run_events(&old, &[RunEventIn::new("values", json!("old"))])
        .await
        .unwrap();
    assert!(
        other.claim_run("live", LEASE).await.unwrap().is_none(),
        "{}: the lease holds, and the thread's next run waits",
        ts.name
    );
    tokio::time::sleep(Duration::from_millis(450)).await;
    let new = other.claim_run("live", LEASE).await.unwrap().unwrap();
    assert_eq!(
        (new.run().run_id.as_str(), new.attempt()),
        ("r", 2),
        "taken over, not the queued run"
    );
    assert_eq!(
        new.run().base_seq,
        Some(2),
        "{}: the first claim's base",
        ts.name
    );
    // The old worker's writes change nothing.
    assert_eq!(
        store.renew_run(&old, LEASE).await.unwrap(),
        LeaseState::Lost
    );
    assert_eq!(
        store
            .append_run_events(&old, &[RunEventIn::new("values", json!("stale"))])
            .await
            .unwrap(),
        None
    );
    assert!(
        !store
            .finish_run(&old, RunStatus::Error, None)
            .await
            .unwrap()
    );
    store.release_run(old).await.unwrap();
    assert_eq!(status(store, "r").await, Some(RunStatus::Running));
    // The new one carries on after the old one's committed events.
    assert_eq!(
        other
            .append_run_events(&new, &[RunEventIn::new("values", json!("new"))])
            .await
            .unwrap(),
        Some(2)
    );
    let events = store.run_events("r", 0, 10).await.unwrap();
    let data: Vec<_> = events.iter().map(|e| e.data.clone()).collect();
    assert_eq!(data, [json!("old"), json!("new")]);
    assert!(
        other
            .finish_run(&new, RunStatus::Success, None)
            .await
            .unwrap()
    );
    assert_eq!(store.get_run("r", None).await.unwrap().unwrap().attempt, 2);
    // Graceful hand-back: pending again, claimed with the next attempt.
    let q = store.claim_run("w", LEASE).await.unwrap().unwrap();
    assert_eq!((q.run().run_id.as_str(), q.attempt()), ("queued", 1));
    store.release_run(q).await.unwrap();
    assert_eq!(status(store, "queued").await, Some(RunStatus::Pending));
    assert_eq!(thread_status(store, "t").await, ThreadStatus::Busy);
    let q = other.claim_run("w2", LEASE).await.unwrap().unwrap();
    assert_eq!((q.run().run_id.as_str(), q.attempt()), ("queued", 2));
}

async fn cancels(ts: TestStore) {
    let store = &ts.store;
    // A pending run is cancelled at once; rollback deletes it.
    store.create_run(on("t", "p1")).await.unwrap();
    let cancelled = store
        .cancel_run("p1", CancelAction::Interrupt, None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(cancelled.status, RunStatus::Interrupted);
    assert_eq!(thread_status(store, "t").await, ThreadStatus::Idle);
    store.create_run(on("t", "p2")).await.unwrap();
    assert_eq!(
        store
            .cancel_run("p2", CancelAction::Rollback, None)
            .await
            .unwrap(),
        None
    );
    assert_eq!(status(store, "p2").await, None);
    assert_eq!(
        store
            .cancel_run("nope", CancelAction::Interrupt, None)
            .await
            .unwrap(),
        None
    );

    // A running run: its waiting watcher wakes at once.
    store.create_run(on("t", "r")).await.unwrap();
    let claim = store.claim_run("w", LEASE).await.unwrap().unwrap();
    let mut watch = store.watch_run("r");
    let waiter = tokio::spawn(async move {
        let start = Instant::now();
        watch.changed().await;
        start.elapsed()
    });
    tokio::time::sleep(Duration::from_millis(20)).await;
    let running = store
        .cancel_run("r", CancelAction::Interrupt, None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (running.status, running.cancel),
        (RunStatus::Running, Some(CancelAction::Interrupt))
    );
    let waited = tokio::time::timeout(Duration::from_secs(5), waiter)
        .await
        .expect("the watcher woke")
        .unwrap();
    assert!(waited < Duration::from_secs(2), "{}: {waited:?}", ts.name);
    assert_eq!(
        store.renew_run(&claim, LEASE).await.unwrap(),
        LeaseState::Cancel(CancelAction::Interrupt)
    );
    // A finished run is left as it is.
    store
        .finish_run(&claim, RunStatus::Interrupted, None)
        .await
        .unwrap();
    let after = store
        .cancel_run("r", CancelAction::Rollback, None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((after.status, after.cancel), (RunStatus::Interrupted, None));
}

async fn events_append_and_replay(ts: TestStore) {
    let store = &ts.store;
    store.create_run(on("t", "r")).await.unwrap();
    let claim = store.claim_run("w", LEASE).await.unwrap().unwrap();
    let batch = |from: i32, n: i32| -> Vec<RunEventIn> {
        (from..from + n)
            .map(|i| RunEventIn::new(if i == 1 { "metadata" } else { "values" }, json!({"i": i})))
            .collect()
    };
    assert_eq!(
        store.append_run_events(&claim, &batch(1, 3)).await.unwrap(),
        Some(3)
    );
    assert_eq!(store.append_run_events(&claim, &[]).await.unwrap(), Some(3));
    assert_eq!(
        store.append_run_events(&claim, &batch(4, 2)).await.unwrap(),
        Some(5)
    );
    let all = store.run_events("r", 0, 100).await.unwrap();
    assert_eq!(
        all.iter().map(|e| e.seq).collect::<Vec<_>>(),
        [1, 2, 3, 4, 5]
    );
    assert_eq!(all[0].event, "metadata");
    assert_eq!(all[4].data, json!({"i": 5}));
    let missed = store.run_events("r", 2, 2).await.unwrap();
    assert_eq!(missed.iter().map(|e| e.seq).collect::<Vec<_>>(), [3, 4]);
    assert!(store.run_events("r", 5, 10).await.unwrap().is_empty());
    // Another process's reader sees the same.
    let other = ts.another_worker().await;
    assert_eq!(other.run_events("r", 4, 10).await.unwrap()[0].seq, 5);
    assert!(all.windows(2).all(|w| w[0].recorded_at <= w[1].recorded_at));
    // Pruned once the run ended, when asked.
    let later = SystemTime::now() + Duration::from_secs(1);
    assert_eq!(store.prune_run_events(later).await.unwrap(), 0, "running");
    store
        .finish_run(&claim, RunStatus::Success, None)
        .await
        .unwrap();
    let earlier = SystemTime::now() - Duration::from_secs(60);
    assert_eq!(store.prune_run_events(earlier).await.unwrap(), 0, "recent");
    assert_eq!(
        store.prune_run_events(later).await.unwrap(),
        5,
        "{}",
        ts.name
    );
    assert!(store.run_events("r", 0, 10).await.unwrap().is_empty());
    // Deleted with the run.
    store.delete_run("r", None).await.unwrap();
    assert!(store.run_events("r", 0, 10).await.unwrap().is_empty());
}

async fn a_reader_follows_the_stream(ts: TestStore) {
    let store = ts.store.clone();
    store.create_run(on("t", "r")).await.unwrap();
    // The reader subscribes first, reads, then waits.
    let reader = {
        let store = ts.another_worker().await;
        let mut watch = store.watch_run("r");
        watch.ready().await;
        tokio::spawn(async move {
            let mut seen = Vec::new();
            loop {
                for event in store.run_events("r", seen.len() as u64, 100).await.unwrap() {
                    seen.push(event.data["i"].as_i64().unwrap());
                }
                if seen.len() == 20 {
                    return seen;
                }
                tokio::time::timeout(FALLBACK, watch.changed())
                    .await
                    .expect("woken by the worker's events, not a timer");
            }
        })
    };
    let claim = store.claim_run("w", LEASE).await.unwrap().unwrap();
    for i in 0..20 {
        store
            .append_run_events(&claim, &[RunEventIn::new("values", json!({"i": i}))])
            .await
            .unwrap();
        if i % 5 == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    let seen = tokio::time::timeout(Duration::from_secs(10), reader)
        .await
        .expect("the reader got everything")
        .unwrap();
    assert_eq!(seen, (0..20).collect::<Vec<_>>(), "{}", ts.name);
}

async fn wakeups(ts: TestStore) {
    let store = &ts.store;
    // Workers on another handle (another process's view on PostgreSQL).
    let worker = ts.another_worker().await;
    let mut wakeups = worker.run_wakeups().fallback(FALLBACK);
    wakeups.ready().await;
    assert_eq!(wakeups.next().await.unwrap(), Wake::Start);
    // A listener that connected after `run_wakeups` wakes once more;
    // that wake-up is not what is measured.
    let _ = tokio::time::timeout(Duration::from_millis(200), wakeups.next()).await;

    let waiter = tokio::spawn(async move {
        let start = Instant::now();
        let wake = wakeups.next().await.unwrap();
        (wake, start.elapsed(), wakeups)
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let created = Instant::now();
    store.create_run(on("t", "r")).await.unwrap();
    let (wake, _, mut wakeups) = tokio::time::timeout(Duration::from_secs(10), waiter)
        .await
        .expect("woken")
        .unwrap();
    let latency = created.elapsed();
    assert_eq!(wake, Wake::Notified, "{}", ts.name);
    assert!(
        latency < Duration::from_secs(2),
        "{}: woken {latency:?} after the create, a notice (the fallback is {FALLBACK:?})",
        ts.name
    );
    let claim = worker.claim_run("w", LEASE).await.unwrap().unwrap();
    // A delayed run: woken when it is due, not before.
    store
        .create_run(on("t2", "later").after(Duration::from_millis(300)))
        .await
        .unwrap();
    assert_eq!(wakeups.next().await.unwrap(), Wake::Notified);
    assert!(worker.claim_run("w", LEASE).await.unwrap().is_none());
    let start = Instant::now();
    // The lease of `r` ends after 30 s: the delayed run comes first.
    assert_eq!(wakeups.next().await.unwrap(), Wake::Due, "{}", ts.name);
    assert!(start.elapsed() >= Duration::from_millis(200));
    assert!(start.elapsed() < Duration::from_secs(5));
    let later = worker.claim_run("w", LEASE).await.unwrap().unwrap();
    assert_eq!(later.run().run_id, "later");
    // Finishing a run wakes the workers when a run waits on its thread
    // (it may run now).
    store
        .create_run(on("t", "next").multitask_strategy(MultitaskStrategy::Enqueue))
        .await
        .unwrap();
    // (PostgreSQL: maybe a late echo of the claim of `later` first.)
    let wake = wakeups.next().await.unwrap();
    assert!(matches!(wake, Wake::Notified | Wake::Due), "{wake:?}");
    assert!(worker.claim_run("w", LEASE).await.unwrap().is_none());
    worker
        .finish_run(&claim, RunStatus::Success, None)
        .await
        .unwrap();
    assert_eq!(wakeups.next().await.unwrap(), Wake::Notified);
    let next = worker.claim_run("w", LEASE).await.unwrap().unwrap();
    assert_eq!(next.run().run_id, "next", "{}", ts.name);
    // A delayed run that came due while the worker was busy: at once.
    store
        .create_run(on("t3", "due-while-busy").after(Duration::from_millis(50)))
        .await
        .unwrap();
    // Woken by the creation; the worker claims, too early (unless this
    // machine is slower than 50 ms), then is busy.
    let first = wakeups.next().await.unwrap();
    assert!(matches!(first, Wake::Notified | Wake::Due), "{first:?}");
    let due = if let Some(claim) = worker.claim_run("w", LEASE).await.unwrap() {
        claim
    } else {
        tokio::time::sleep(Duration::from_millis(150)).await;
        let start = Instant::now();
        // A worker claims after every wake-up (on PostgreSQL its own
        // commits echo back as late notices: the claim after one of them
        // finds the run as well).
        let due = loop {
            let wake = wakeups.next().await.unwrap();
            assert!(matches!(wake, Wake::Notified | Wake::Due), "{wake:?}");
            if let Some(claim) = worker.claim_run("w", LEASE).await.unwrap() {
                break claim;
            }
        };
        assert!(
            start.elapsed() < Duration::from_secs(1),
            "{:?}",
            start.elapsed()
        );
        due
    };
    assert_eq!(due.run().run_id, "due-while-busy");
}

async fn owners_see_only_their_own(ts: TestStore) {
    let store = &ts.store;
    store
        .create_thread_record("t", json!({}), Some("ada"), IfExists::Raise)
        .await
        .unwrap();
    // Bob cannot run on Ada's thread, nor see it.
    let hidden = store
        .create_run(NewRun::new("x", "agent").thread("t").owner("bob"))
        .await
        .unwrap_err();
    assert!(
        matches!(hidden, StoreError::ThreadNotFound { .. }),
        "{hidden}"
    );
    assert!(
        store
            .thread_record("t", Some("bob"))
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        store
            .update_thread_record("t", json!({"x": 1}), Some("bob"))
            .await
            .unwrap()
            .is_none()
    );
    let exists = store
        .create_thread_record("t", json!({}), Some("bob"), IfExists::DoNothing)
        .await
        .unwrap_err();
    assert!(
        matches!(exists, StoreError::ThreadExists { .. }),
        "{exists}"
    );

    store
        .create_run(NewRun::new("r", "agent").thread("t").owner("ada"))
        .await
        .unwrap();
    assert!(store.get_run("r", Some("bob")).await.unwrap().is_none());
    assert!(store.get_run("r", Some("ada")).await.unwrap().is_some());
    let bobs = store
        .list_runs(Some("t"), RunFilter::default().owner("bob"))
        .await
        .unwrap();
    assert!(bobs.is_empty());
    assert_eq!(
        store
            .list_runs(Some("t"), RunFilter::default().owner("ada"))
            .await
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        store
            .cancel_run("r", CancelAction::Interrupt, Some("bob"))
            .await
            .unwrap(),
        None
    );
    assert!(!store.delete_run("r", Some("bob")).await.unwrap());
    assert_eq!(status(store, "r").await, Some(RunStatus::Pending));
    let search = ThreadSearch::default().owner("bob");
    assert_eq!(store.count_thread_records(&search).await.unwrap(), 0);
    assert_eq!(
        store
            .count_thread_records(&ThreadSearch::default().owner("ada"))
            .await
            .unwrap(),
        1
    );
}

async fn thread_records(ts: TestStore) {
    let store = &ts.store;
    for (id, user, n) in [("a", "ada", 1), ("b", "bob", 2), ("c", "ada", 3)] {
        store
            .create_thread_record(id, json!({"user": user, "n": n}), None, IfExists::Raise)
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let raise = store
        .create_thread_record("a", json!({}), None, IfExists::Raise)
        .await
        .unwrap_err();
    assert!(matches!(raise, StoreError::ThreadExists { .. }));
    let kept = store
        .create_thread_record("a", json!({"other": true}), None, IfExists::DoNothing)
        .await
        .unwrap();
    assert_eq!(kept.metadata, json!({"user": "ada", "n": 1}));

    let ids = |records: Vec<state_store::ThreadRecord>| -> Vec<String> {
        records.into_iter().map(|r| r.thread_id).collect()
    };
    let newest = store
        .search_thread_records(&ThreadSearch::default())
        .await
        .unwrap();
    assert_eq!(ids(newest), ["c", "b", "a"], "{}", ts.name);
    let adas = ThreadSearch::default().metadata(json!({"user": "ada"}));
    assert_eq!(
        ids(store.search_thread_records(&adas).await.unwrap()),
        ["c", "a"]
    );
    assert_eq!(store.count_thread_records(&adas).await.unwrap(), 2);
    let page = adas.clone().offset(1).limit(5);
    assert_eq!(
        ids(store.search_thread_records(&page).await.unwrap()),
        ["a"]
    );
    let by_id = ThreadSearch::default().sort_by(ThreadSortBy::ThreadId, false);
    assert_eq!(
        ids(store.search_thread_records(&by_id).await.unwrap()),
        ["a", "b", "c"]
    );
    assert!(
        store
            .search_thread_records(
                &ThreadSearch::default().metadata(json!({"user": "ada", "n": 2}))
            )
            .await
            .unwrap()
            .is_empty()
    );

    let patched = store
        .update_thread_record("b", json!({"n": 20, "tag": "x"}), None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        patched.metadata,
        json!({"user": "bob", "n": 20, "tag": "x"})
    );
    assert!(patched.updated_at > patched.created_at);
    let by_update = ThreadSearch::default().sort_by(ThreadSortBy::UpdatedAt, true);
    assert_eq!(
        ids(store.search_thread_records(&by_update).await.unwrap())[0],
        "b"
    );
    assert!(
        store
            .update_thread_record("zz", json!({}), None)
            .await
            .unwrap()
            .is_none()
    );

    assert!(
        store
            .set_thread_status("c", ThreadStatus::Error)
            .await
            .unwrap()
    );
    let errors = ThreadSearch::default().status(ThreadStatus::Error);
    assert_eq!(
        ids(store.search_thread_records(&errors).await.unwrap()),
        ["c"]
    );
    assert!(
        store
            .create_thread_record("x", json!(1), None, IfExists::Raise)
            .await
            .is_err()
    );
}

async fn deleting_a_thread_deletes_its_runs(ts: TestStore) {
    let store = &ts.store;
    store.create_run(on("t", "r1")).await.unwrap();
    store.create_run(on("t", "r2")).await.unwrap();
    store.create_run(on("u", "other")).await.unwrap();
    let claim = store.claim_run("w", LEASE).await.unwrap().unwrap();
    let on_t = claim.run().thread_id.as_deref() == Some("t");
    store
        .append_run_events(&claim, &[RunEventIn::new("values", json!(1))])
        .await
        .unwrap();
    // The run's worker (in another process, on PostgreSQL) is woken.
    let worker = ts.another_worker().await;
    let mut watch = worker.watch_run(&claim.run().run_id);
    watch.ready().await;
    let _ = tokio::time::timeout(Duration::from_millis(200), watch.changed()).await;
    // A record without a log still counts as a thread.
    assert!(store.delete_thread("t").await.unwrap(), "{}", ts.name);
    if on_t {
        tokio::time::timeout(FALLBACK, watch.changed())
            .await
            .expect("the deleted run's watcher woke");
    }
    assert!(store.thread_record("t", None).await.unwrap().is_none());
    assert_eq!(status(store, "r1").await, None);
    assert_eq!(status(store, "r2").await, None);
    assert!(store.run_events("r1", 0, 10).await.unwrap().is_empty());
    assert_eq!(
        store.renew_run(&claim, LEASE).await.unwrap().is_held(),
        !on_t
    );
    assert!(status(store, "other").await.is_some());
    assert!(!store.delete_thread("t").await.unwrap());
}

/// A run sets keys of its thread record's metadata in its own write;
/// the others stay; a value that is not an object is refused, nothing
/// written; a status watcher is not woken by events.
async fn runs_set_thread_metadata(ts: TestStore) {
    let store = &ts.store;
    store
        .create_thread_record(
            "t",
            json!({"user": "ada", "graph_id": "old"}),
            None,
            IfExists::Raise,
        )
        .await
        .unwrap();
    store
        .create_run(
            on("t", "run-1").thread_metadata(json!({"graph_id": "agent", "assistant_id": "a1"})),
        )
        .await
        .unwrap();
    let record = store.thread_record("t", None).await.unwrap().unwrap();
    assert_eq!(
        record.metadata,
        json!({"user": "ada", "graph_id": "agent", "assistant_id": "a1"}),
        "{}",
        ts.name
    );
    let refused = store
        .create_run(on("t", "run-2").thread_metadata(json!(["not", "an", "object"])))
        .await
        .unwrap_err();
    assert!(
        matches!(refused, StoreError::InvalidRun { .. }),
        "{refused}"
    );
    assert!(store.get_run("run-2", None).await.unwrap().is_none());

    let mut watch = store.watch_run("run-1");
    let claim = store.claim_run("w", LEASE).await.unwrap().unwrap();
    watch.status_changed().await;
    // PostgreSQL hears its own claim again through NOTIFY (a notice only
    // wakes): let that echo come first.
    while tokio::time::timeout(Duration::from_millis(300), watch.status_changed())
        .await
        .is_ok()
    {}
    store
        .append_run_events(&claim, &[RunEventIn::new("values", json!(1))])
        .await
        .unwrap();
    let woken = tokio::time::timeout(Duration::from_millis(200), watch.status_changed()).await;
    assert!(
        woken.is_err(),
        "{}: an event is not a status change",
        ts.name
    );
    store
        .finish_run(&claim, RunStatus::Success, None)
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(5), watch.status_changed())
        .await
        .expect("the end wakes the status watcher");
}

/// The claim with its first events, the finish with the last ones: one
/// write each, numbered after the run's events (a run taken over keeps
/// its first worker's), fenced as the plain ones; a claim that finds
/// nothing; the thread's log opened with the run.
async fn events_with_the_claim_and_the_finish(ts: TestStore) {
    let store = &ts.store;
    let other = ts.another_worker().await;
    let metadata = |run: &state_store::Run| {
        vec![RunEventIn::new(
            "metadata",
            json!({"run_id": run.run_id, "attempt": run.attempt}),
        )]
    };
    assert!(
        store
            .claim_run_with_events("w", LEASE, metadata)
            .await
            .unwrap()
            .is_none(),
        "{}: nothing to claim",
        ts.name
    );
    store.create_run(on("t", "r")).await.unwrap();
    assert_eq!(
        store.thread_info("t").await.unwrap().seq,
        0,
        "{}: the run's thread has its log",
        ts.name
    );
    let claim = store
        .claim_run_with_events("w", LEASE, metadata)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((claim.run().run_id.as_str(), claim.attempt()), ("r", 1));
    let events = store.run_events("r", 0, 10).await.unwrap();
    assert_eq!(events.len(), 1, "{}", ts.name);
    assert_eq!(
        (events[0].seq, events[0].event.as_str(), &events[0].data),
        (1, "metadata", &json!({"run_id": "r", "attempt": 1}))
    );
    // More events than one INSERT writes, numbered on.
    let last: Vec<RunEventIn> = (0..450)
        .map(|n| RunEventIn::new("values", json!({"n": n})))
        .collect();
    assert!(
        store
            .finish_run_with_events(&claim, RunStatus::Success, None, &last)
            .await
            .unwrap()
    );
    let events = store.run_events("r", 0, 1000).await.unwrap();
    assert_eq!(events.len(), 451, "{}", ts.name);
    assert!(
        events
            .iter()
            .enumerate()
            .all(|(i, e)| e.seq == i as u64 + 1 && (i == 0 || e.data["n"] == i - 1)),
        "{}: in order, numbered from 1",
        ts.name
    );
    assert_eq!(status(store, "r").await, Some(RunStatus::Success));
    assert_eq!(thread_status(store, "t").await, ThreadStatus::Idle);

    // Taken over: the new claim's events follow the old worker's.
    store.create_run(on("u", "r2")).await.unwrap();
    let old = store
        .claim_run_with_events("dead", Duration::from_millis(300), metadata)
        .await
        .unwrap()
        .unwrap();
    store
        .append_run_events(&old, &[RunEventIn::new("values", json!("old"))])
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(350)).await;
    let new = other
        .claim_run_with_events("live", LEASE, metadata)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(new.attempt(), 2, "{}", ts.name);
    // The old worker's finish writes nothing: neither its events nor
    // the end.
    let stale = [RunEventIn::new("values", json!("stale"))];
    assert!(
        !store
            .finish_run_with_events(&old, RunStatus::Error, None, &stale)
            .await
            .unwrap()
    );
    let events = store.run_events("r2", 0, 10).await.unwrap();
    let seen: Vec<_> = events.iter().map(|e| (e.seq, e.data.clone())).collect();
    assert_eq!(
        seen,
        [
            (1, json!({"run_id": "r2", "attempt": 1})),
            (2, json!("old")),
            (3, json!({"run_id": "r2", "attempt": 2})),
        ],
        "{}",
        ts.name
    );
    assert_eq!(status(store, "r2").await, Some(RunStatus::Running));
    let paused = [RunEventIn::new("values", json!("paused"))];
    assert!(
        other
            .finish_run_with_events(
                &new,
                RunStatus::Interrupted,
                Some(ThreadStatus::Interrupted),
                &paused
            )
            .await
            .unwrap()
    );
    assert_eq!(store.run_events("r2", 3, 10).await.unwrap()[0].seq, 4);
    assert_eq!(thread_status(store, "u").await, ThreadStatus::Interrupted);
}

/// `cancel_or_end` wakes on a cancel requested and on the run's end,
/// not on its creation nor on its claim in this process (PostgreSQL hears
/// its own claim again through NOTIFY, a notice of unknown kind: it wakes
/// there); events do not wake it either.
async fn a_waiter_for_the_end_is_not_woken_by_the_claim(ts: TestStore) {
    use futures::FutureExt;
    let store = &ts.store;
    let postgres = ts.name == "postgres";
    let mut watch = store.watch_run("r1");
    watch.ready().await;
    store.create_run(NewRun::new("r1", "a")).await.unwrap();
    let claim = store.claim_run("w", LEASE).await.unwrap().unwrap();
    if !postgres {
        assert!(
            watch.cancel_or_end().now_or_never().is_none(),
            "{}: neither the creation nor the claim wakes it",
            ts.name
        );
    }
    // Whatever echo comes first (PostgreSQL), then nothing more.
    while tokio::time::timeout(Duration::from_millis(300), watch.cancel_or_end())
        .await
        .is_ok()
    {}
    store
        .append_run_events(&claim, &[RunEventIn::new("values", json!(1))])
        .await
        .unwrap();
    if !postgres {
        assert!(
            watch.cancel_or_end().now_or_never().is_none(),
            "{}: an event does not wake it",
            ts.name
        );
    }
    store
        .cancel_run("r1", CancelAction::Interrupt, None)
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(5), watch.cancel_or_end())
        .await
        .expect("the cancel wakes it");
    while tokio::time::timeout(Duration::from_millis(300), watch.cancel_or_end())
        .await
        .is_ok()
    {}
    store
        .finish_run(&claim, RunStatus::Interrupted, None)
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(5), watch.cancel_or_end())
        .await
        .expect("the end wakes it");
    let run = store.get_run("r1", None).await.unwrap().unwrap();
    assert_eq!(run.status, RunStatus::Interrupted, "{}", ts.name);
}

/// A claim says whether other runs were due besides it: a run waiting
/// behind its thread's first is not; PostgreSQL does not look (always
/// true). A finish wakes the workers when runs wait on its thread, not
/// otherwise (PostgreSQL hears its own notice again: not checked there).
async fn a_claim_says_whether_others_are_due(ts: TestStore) {
    let store = &ts.store;
    let postgres = ts.name == "postgres";
    for (run, thread) in [("r1", "t"), ("r2", "t"), ("r3", "u")] {
        store
            .create_run(
                NewRun::new(run, "a")
                    .thread(thread)
                    .if_not_exists(IfNotExists::Create)
                    .multitask_strategy(MultitaskStrategy::Enqueue),
            )
            .await
            .unwrap();
    }
    let first = store.claim_run("w", LEASE).await.unwrap().unwrap();
    assert_eq!(first.run().run_id, "r1", "{}", ts.name);
    assert!(first.others_due(), "{}: r3 is due", ts.name);
    let second = store.claim_run("w", LEASE).await.unwrap().unwrap();
    assert_eq!(second.run().run_id, "r3", "{}", ts.name);
    assert_eq!(
        second.others_due(),
        postgres,
        "{}: r2 waits for r1, on its thread",
        ts.name
    );
    assert!(store.claim_run("w", LEASE).await.unwrap().is_none());

    // A finish wakes the workers only when runs wait on its thread.
    let mut wakeups = store.run_wakeups().fallback(Duration::from_secs(3600));
    assert_eq!(wakeups.next().await.unwrap(), Wake::Start);
    store
        .finish_run(&second, RunStatus::Success, None)
        .await
        .unwrap();
    if !postgres {
        let woken = tokio::time::timeout(Duration::from_millis(200), wakeups.next()).await;
        assert!(woken.is_err(), "{}: nothing waits on u", ts.name);
    }
    store
        .finish_run(&first, RunStatus::Success, None)
        .await
        .unwrap();
    let woken = tokio::time::timeout(Duration::from_secs(5), wakeups.next())
        .await
        .expect("r2 waits on t: the workers are woken");
    assert_eq!(woken.unwrap(), Wake::Notified, "{}", ts.name);
    let third = store.claim_run("w", LEASE).await.unwrap().unwrap();
    assert_eq!(third.run().run_id, "r2", "{}", ts.name);
}

/// A delayed run created just after a worker read when the next run is
/// due (none then) is still seen when it comes due: a due time read
/// before a notice is not trusted for long (and never until the
/// fallback).
async fn a_due_time_read_before_a_notice_is_read_again(ts: TestStore) {
    let store = &ts.store;
    let worker = ts.another_worker().await;
    let fallback = Duration::from_secs(30);
    let mut wakeups = worker.run_wakeups().fallback(fallback);
    wakeups.ready().await;
    assert_eq!(wakeups.next().await.unwrap(), Wake::Start);
    let _ = tokio::time::timeout(Duration::from_millis(200), wakeups.next()).await;
    for round in 0..3 {
        // The waiter reads the due time (nothing) and waits; the delayed
        // run is created at once, while that read is fresh.
        let waiter = tokio::spawn(async move {
            let wake = wakeups.next().await.unwrap();
            (wake, wakeups)
        });
        tokio::task::yield_now().await;
        let id = format!("later-{round}");
        store
            .create_run(on(&format!("t-{round}"), &id).after(Duration::from_millis(40)))
            .await
            .unwrap();
        let (wake, back) = tokio::time::timeout(Duration::from_secs(10), waiter)
            .await
            .expect("woken by the creation")
            .unwrap();
        wakeups = back;
        assert!(
            matches!(wake, Wake::Notified | Wake::Due),
            "{}: {wake:?}",
            ts.name
        );
        let start = Instant::now();
        let claim = loop {
            if let Some(claim) = worker.claim_run("w", LEASE).await.unwrap() {
                break claim;
            }
            let wake = tokio::time::timeout(Duration::from_secs(10), wakeups.next())
                .await
                .expect("woken when the run is due, not at the fallback")
                .unwrap();
            assert_ne!(wake, Wake::Fallback, "{}", ts.name);
        };
        assert_eq!(claim.run().run_id, id, "{}", ts.name);
        assert!(start.elapsed() < Duration::from_secs(5), "{}", ts.name);
        worker
            .finish_run(&claim, RunStatus::Success, None)
            .await
            .unwrap();
    }
}

/// `RunWatch::ended`: how a run ended, when its end was written by this
/// store; nothing before.
async fn a_watch_says_how_a_run_ended_here(ts: TestStore) {
    let store = &ts.store;
    let mut watch = store.watch_run("r");
    store.create_run(on("t", "r")).await.unwrap();
    let claim = store.claim_run("w", LEASE).await.unwrap().unwrap();
    assert_eq!(watch.ended(), None, "{}", ts.name);
    store
        .finish_run(&claim, RunStatus::Interrupted, None)
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(10), watch.cancel_or_end())
        .await
        .expect("woken by the end");
    assert_eq!(watch.ended(), Some(RunStatus::Interrupted), "{}", ts.name);
    // A watch made after the end, with the first still watching.
    assert_eq!(store.watch_run("r").ended(), Some(RunStatus::Interrupted));
    drop(watch);
    // Nobody watched it: not known, the run says.
    assert_eq!(store.watch_run("r").ended(), None, "{}", ts.name);
}

on_every_backend!(
    a_run_claimed_as_it_is_created,
    a_due_time_read_before_a_notice_is_read_again,
    a_watch_says_how_a_run_ended_here,
    a_claim_says_whether_others_are_due,
    a_waiter_for_the_end_is_not_woken_by_the_claim,
    events_with_the_claim_and_the_finish,
    lifecycle,
    runs_set_thread_metadata,
    threads_must_exist_unless_created,
    multitask_strategies,
    lease_expiry_is_taken_over_and_fenced,
    cancels,
    events_append_and_replay,
    a_reader_follows_the_stream,
    wakeups,
    owners_see_only_their_own,
    thread_records,
    deleting_a_thread_deletes_its_runs,
);

/// A run claimed in the write that creates it (a SQLite file): claimed
/// when a claim would pick it, with its events and its thread busy, and
/// no other claim finds it; a run that must wait (its thread runs one,
/// or it is delayed) is left pending; a refused one writes nothing.
/// Elsewhere it is never claimed at creation.
async fn a_run_claimed_as_it_is_created(ts: TestStore) {
    let store = &ts.store;
    let events =
        |run: &state_store::Run| vec![RunEventIn::new("metadata", json!({"attempt": run.attempt}))];
    let (metadata, kwargs) = (
        json!({"b": 1, "a": [true, null], "é": "tab\there"}),
        json!({"input": {"messages": [{"type": "human", "content": "hi \"there\""}]}}),
    );
    let first = on("t", "r1")
        .metadata(metadata.clone())
        .kwargs(kwargs.clone());
    let (run, claim) = store
        .create_run_claimed(first, "w", LEASE, events)
        .await
        .unwrap();
    assert_eq!(run.status, RunStatus::Pending);
    if ts.name != "sqlite" {
        assert!(claim.is_none(), "{}: claimed at creation", ts.name);
        return;
    }
    let claim = claim.expect("due at once: claimed");
    assert_eq!(
        (claim.run().status, claim.attempt()),
        (RunStatus::Running, 1)
    );
    // The claimed run carries what the run was created with, as a read
    // of the stored row gives it.
    let read = store.get_run("r1", None).await.unwrap().expect("stored");
    for (what, got) in [("claimed", claim.run()), ("read", &read)] {
        assert_eq!((&got.metadata, &got.kwargs), (&metadata, &kwargs), "{what}");
    }
    assert_eq!(claim.worker(), "w");
    assert_eq!(status(store, "r1").await, Some(RunStatus::Running));
    assert_eq!(thread_status(store, "t").await, ThreadStatus::Busy);
    let stored = store.run_events("r1", 0, 10).await.unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!(
        (stored[0].event.as_str(), &stored[0].data),
        ("metadata", &json!({"attempt": 1}))
    );
    assert!(store.claim_run("other", LEASE).await.unwrap().is_none());
    // Its lease is a claim's: renewed, then the run finished by it.
    assert_eq!(
        store.renew_run(&claim, LEASE).await.unwrap(),
        LeaseState::Held
    );

    // The thread runs r1: r2 waits, pending, for a claim after it.
    let (_, second) = store
        .create_run_claimed(
            on("t", "r2").multitask_strategy(MultitaskStrategy::Enqueue),
            "w",
            LEASE,
            events,
        )
        .await
        .unwrap();
    assert!(second.is_none());
    assert_eq!(status(store, "r2").await, Some(RunStatus::Pending));
    // Delayed: not due yet.
    let later = on("u", "r3").after(Duration::from_secs(3600));
    let (_, delayed) = store
        .create_run_claimed(later, "w", LEASE, events)
        .await
        .unwrap();
    assert!(delayed.is_none());
    assert_eq!(status(store, "r3").await, Some(RunStatus::Pending));
    // Refused (`reject` on a busy thread): nothing written.
    let refused = store
        .create_run_claimed(
            on("t", "r4").multitask_strategy(MultitaskStrategy::Reject),
            "w",
            LEASE,
            events,
        )
        .await
        .unwrap_err();
    assert!(
        matches!(refused, StoreError::ThreadBusy { .. }),
        "{refused}"
    );
    assert_eq!(status(store, "r4").await, None);
    assert!(store.run_events("r4", 0, 10).await.unwrap().is_empty());
}

/// Many claimers at once, each on its own handle (on PostgreSQL its own
/// pool: another process's view), over runs spread on a few threads:
/// every run runs once, and a thread never has two running runs.
async fn one_running_run_per_thread(ts: TestStore, claimers: usize) {
    const THREADS: usize = 4;
    const RUNS_PER_THREAD: usize = 6;
    for t in 0..THREADS {
        for r in 0..RUNS_PER_THREAD {
            ts.store
                .create_run(on(&format!("t{t}"), &format!("t{t}-r{r}")))
                .await
                .unwrap();
        }
    }
    let running: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
    let done: Arc<Mutex<Vec<String>>> = Arc::default();
    let mut tasks = Vec::new();
    for c in 0..claimers {
        let store = ts.another_worker().await;
        let (running, done) = (Arc::clone(&running), Arc::clone(&done));
        tasks.push(tokio::spawn(async move {
            let worker = format!("w{c}");
            let mut idle = 0;
            while idle < 20 {
                let Some(claim) = store.claim_run(&worker, LEASE).await.unwrap() else {
                    idle += 1;
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    continue;
                };
                idle = 0;
                let thread = claim.run().thread_id.clone().unwrap();
                {
                    let mut running = running.lock().unwrap();
                    let n = running.entry(thread.clone()).or_default();
                    *n += 1;
                    assert_eq!(*n, 1, "two running runs on {thread}");
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
                *running.lock().unwrap().get_mut(&thread).unwrap() -= 1;
                assert!(
                    store
                        .finish_run(&claim, RunStatus::Success, None)
                        .await
                        .unwrap()
                );
                done.lock().unwrap().push(claim.run().run_id.clone());
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let mut done = done.lock().unwrap().clone();
    done.sort();
    let mut expected: Vec<String> = (0..THREADS)
        .flat_map(|t| (0..RUNS_PER_THREAD).map(move |r| format!("t{t}-r{r}")))
        .collect();
    expected.sort();
    assert_eq!(done, expected, "{}: every run once", ts.name);
    for t in 0..THREADS {
        let runs = ts
            .store
            .list_runs(Some(&format!("t{t}")), RunFilter::default().limit(100))
            .await
            .unwrap();
        assert!(
            runs.iter()
                .all(|r| r.status == RunStatus::Success && r.attempt == 1)
        );
        // Enqueued runs of a thread ran in the order they were created.
        let mut by_update = runs.clone();
        by_update.sort_by_key(|r| r.updated_at);
        let order: Vec<_> = by_update.iter().map(|r| r.run_id.clone()).collect();
        let created: Vec<_> = (0..RUNS_PER_THREAD).map(|r| format!("t{t}-r{r}")).collect();
        assert_eq!(order, created, "{}", ts.name);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_running_run_per_thread_memory() {
    one_running_run_per_thread(TestStore::memory(), 8).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_running_run_per_thread_sqlite() {
    one_running_run_per_thread(TestStore::sqlite().await, 4).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_running_run_per_thread_postgres() {
    one_running_run_per_thread(TestStore::postgres().await, 16).await;
}

/// A corrupt row is an error naming the run and the column, not a panic.
#[tokio::test]
async fn corrupt_rows_are_named() {
    let ts = TestStore::sqlite().await;
    ts.store.create_run(on("t", "r")).await.unwrap();
    let raw = sqlx::SqlitePool::connect(&format!("sqlite://{}", ts.location))
        .await
        .unwrap();
    for (sql, column) in [
        ("UPDATE state_store_runs SET status = 'exploded'", "status"),
        (
            "UPDATE state_store_runs SET status = 'pending', kwargs = '{'",
            "kwargs",
        ),
        (
            "UPDATE state_store_runs SET kwargs = '{}', attempt = -1",
            "attempt",
        ),
    ] {
        sqlx::query(sql).execute(&raw).await.unwrap();
        let err = ts.store.get_run("r", None).await.unwrap_err();
        assert!(
            matches!(&err, StoreError::CorruptRun { column: c, .. } if *c == column),
            "{err}"
        );
        let text = err.to_string();
        assert!(
            text.contains("run \"r\"") && text.contains(column),
            "{text}"
        );
    }
    sqlx::query("UPDATE state_store_thread_records SET metadata = '[1]'")
        .execute(&raw)
        .await
        .unwrap();
    let err = ts.store.thread_record("t", None).await.unwrap_err();
    assert!(err.to_string().contains("thread record \"t\""), "{err}");
}

/// Across two PostgreSQL pools (two processes' view): a cancel reaches the
/// worker's watcher in the other process through NOTIFY.
#[tokio::test]
async fn a_cancel_reaches_another_process() {
    let ts = TestStore::postgres().await;
    let api = &ts.store;
    let worker = ts.another_worker().await;
    api.create_run(on("t", "r")).await.unwrap();
    let claim = worker.claim_run("w", LEASE).await.unwrap().unwrap();
    let mut watch = worker.watch_run("r");
    watch.ready().await;
    // The listener's first wake-up (it may have connected after the
    // subscription) is not what is measured.
    let _ = tokio::time::timeout(Duration::from_millis(200), watch.changed()).await;
    let waiter = tokio::spawn(async move {
        tokio::time::timeout(FALLBACK, watch.changed())
            .await
            .is_ok()
    });
    tokio::time::sleep(Duration::from_millis(20)).await;
    let sent = Instant::now();
    api.cancel_run("r", CancelAction::Interrupt, None)
        .await
        .unwrap();
    assert!(waiter.await.unwrap(), "woken by NOTIFY");
    assert!(
        sent.elapsed() < Duration::from_secs(2),
        "{:?}",
        sent.elapsed()
    );
    assert_eq!(
        worker.renew_run(&claim, LEASE).await.unwrap(),
        LeaseState::Cancel(CancelAction::Interrupt)
    );
}

/// Creations with every strategy, cancels and deletions racing workers
/// that claim, renew and finish, each on its own handle: no transition
/// fails (on PostgreSQL: no deadlock between a creation holding a thread
/// and a worker holding its run), and the queue drains.
async fn strategies_race_workers(ts: TestStore) {
    const THREADS: usize = 2;
    const RUNS: usize = 40;
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut workers = Vec::new();
    for w in 0..4 {
        let store = ts.another_worker().await;
        let stop = Arc::clone(&stop);
        workers.push(tokio::spawn(async move {
            let worker = format!("w{w}");
            loop {
                let Some(claim) = store.claim_run(&worker, LEASE).await.unwrap() else {
                    if stop.load(std::sync::atomic::Ordering::SeqCst) {
                        return;
                    }
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    continue;
                };
                store
                    .append_run_events(&claim, &[RunEventIn::new("values", json!(w))])
                    .await
                    .unwrap();
                let outcome = match store.renew_run(&claim, LEASE).await.unwrap() {
                    LeaseState::Lost => continue,
                    LeaseState::Cancel(CancelAction::Rollback) => {
                        store.delete_run(&claim.run().run_id, None).await.unwrap();
                        continue;
                    }
                    LeaseState::Cancel(CancelAction::Interrupt) => RunStatus::Interrupted,
                    LeaseState::Held => RunStatus::Success,
                };
                store.finish_run(&claim, outcome, None).await.unwrap();
            }
        }));
    }
    let strategies = [
        MultitaskStrategy::Enqueue,
        MultitaskStrategy::Interrupt,
        MultitaskStrategy::Rollback,
        MultitaskStrategy::Reject,
    ];
    for i in 0..RUNS {
        let thread = format!("t{}", i % THREADS);
        let new = on(&thread, &format!("r{i}")).multitask_strategy(strategies[i % 4]);
        match ts.store.create_run(new).await {
            Ok(_) | Err(StoreError::ThreadBusy { .. }) => {}
            Err(e) => panic!("{}: {e}", ts.name),
        }
        if i % 7 == 0 {
            ts.store
                .cancel_run(&format!("r{}", i / 2), CancelAction::Interrupt, None)
                .await
                .unwrap();
        }
        if i % 11 == 0 {
            ts.store
                .delete_run(&format!("r{}", i / 3), None)
                .await
                .unwrap();
        }
        tokio::task::yield_now().await;
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    for worker in workers {
        worker.await.unwrap();
    }
    // What the workers left when told to stop (a run created as they
    // looked) is claimable, one after the other.
    while let Some(claim) = ts.store.claim_run("drain", LEASE).await.unwrap() {
        let outcome = match claim.run().cancel {
            Some(_) => RunStatus::Interrupted,
            None => RunStatus::Success,
        };
        assert!(ts.store.finish_run(&claim, outcome, None).await.unwrap());
    }
    for t in 0..THREADS {
        let thread = format!("t{t}");
        let runs = ts
            .store
            .list_runs(Some(&thread), RunFilter::default().limit(100))
            .await
            .unwrap();
        assert!(
            runs.iter().all(|r| r.status.is_final()),
            "{}: drained: {:?}",
            ts.name,
            runs.iter()
                .map(|r| (&r.run_id, r.status))
                .collect::<Vec<_>>()
        );
        assert_ne!(thread_status(&ts.store, &thread).await, ThreadStatus::Busy);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn strategies_race_workers_memory() {
    strategies_race_workers(TestStore::memory()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn strategies_race_workers_sqlite() {
    strategies_race_workers(TestStore::sqlite().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn strategies_race_workers_postgres() {
    strategies_race_workers(TestStore::postgres().await).await;
}

/// PostgreSQL: the listener's connection is killed. Notices sent while it
/// is down are lost, so when it listens again every waiter is woken to
/// read again (a worker claims what was created meanwhile), and notices
/// are heard again after that.
#[tokio::test]
async fn waiters_read_again_when_the_listener_reconnects() {
    let cluster = crate::support::postgres::shared();
    let db = cluster.fresh_database("runs_listener");
    let api = Store::postgres(&db.url).await.unwrap();
    let worker = Store::postgres(&db.url).await.unwrap();
    let mut wakeups = worker.run_wakeups().fallback(FALLBACK);
    wakeups.ready().await;
    assert_eq!(wakeups.next().await.unwrap(), Wake::Start);
    api.create_run(on("t", "r")).await.unwrap();
    let mut watch = worker.watch_run("r");

    let name = db.name.clone();
    let killed = tokio::task::spawn_blocking(move || cluster.terminate_connections(&name))
        .await
        .unwrap();
    assert!(killed >= 1, "the listener at least: {killed}");
    // Woken by the reconnection itself, long before the fallback.
    let start = Instant::now();
    assert_eq!(
        tokio::time::timeout(FALLBACK, wakeups.next())
            .await
            .expect("woken")
            .unwrap(),
        Wake::Notified
    );
    tokio::time::timeout(FALLBACK, watch.changed())
        .await
        .expect("the run's watcher too");
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
    let claim = worker.claim_run("w", LEASE).await.unwrap().unwrap();
    assert_eq!(claim.run().run_id, "r");
    // Heard again.
    wakeups.ready().await;
    while tokio::time::timeout(Duration::from_millis(200), wakeups.next())
        .await
        .is_ok()
    {}
    let created = Instant::now();
    api.create_run(on("u", "s")).await.unwrap();
    // Notified, or Due if it looked before the notice came: at once.
    let wake = wakeups.next().await.unwrap();
    assert!(matches!(wake, Wake::Notified | Wake::Due), "{wake:?}");
    assert!(created.elapsed() < Duration::from_secs(2));
}

/// A read leaves its pooled connection free to see later commits: with
/// one connection for every read, a run read, then an event committed
/// (through the store's writer, on a connection of its own), then the run's events
/// read on that same connection shows the event. (Reads are read whole,
/// `fetch_all`: a statement left at a row would keep its connection on an
/// old snapshot of the database until its next use.)
#[tokio::test]
async fn a_read_does_not_pin_its_connection_to_an_old_snapshot() {
    use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions};
    let dir = tempfile::tempdir().unwrap();
    let options = SqliteConnectOptions::new()
        .filename(dir.path().join("one-reader.db"))
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal);
    let pool = SqlitePoolOptions::new()
        .max_connections(1)
        .connect_with(options)
        .await
        .unwrap();
    let store = Store::from_sqlite_pool(pool).await.unwrap();
    store.create_run(NewRun::new("r", "agent")).await.unwrap();
    let claim = store.claim_run("w", LEASE).await.unwrap().unwrap();
    for n in 1..=20 {
        // Every read kind a stream makes between two events.
        assert!(store.get_run("r", None).await.unwrap().is_some());
        assert!(store.thread_record("nope", None).await.unwrap().is_none());
        store
            .append_run_events(&claim, &[RunEventIn::new("values", json!(n))])
            .await
            .unwrap()
            .unwrap();
        let events = store.run_events("r", 0, 100).await.unwrap();
        assert_eq!(events.len(), n, "after event {n}");
    }
}
