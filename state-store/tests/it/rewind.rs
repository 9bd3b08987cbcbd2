//! `Store::rewind_thread` and a run's rollback (`Store::roll_back_run`) on
//! every backend: the thread as it was at the step (state, history,
//! pending interrupts, snapshots, what comes next), the refusals that
//! change nothing, and the watchers: one that read a removed step is
//! told, even when it reads again only once the thread has grown past
//! where it was; one that did not goes on.

use crate::on_every_backend;
use crate::support::backends::TestStore;
use crate::support::states::Chat;
use futures::StreamExt;
use serde_json::json;
use state_core::State;
use state_store::{
    CancelAction, IfNotExists, NewRun, RunEventIn, SnapshotPolicy, Store, StoreError, ThreadStatus,
};
use std::num::NonZeroU64;
use std::time::Duration;
use tokio::time::timeout;

const WAIT: Duration = Duration::from_secs(20);

fn say(word: &str) -> <Chat as State>::Delta {
    Chat::delta().transcript(vec![word.to_owned()])
}

async fn transcript(store: &Store, thread: &str) -> Vec<String> {
    store
        .thread::<Chat>(thread)
        .await
        .unwrap()
        .state()
        .transcript
        .clone()
}

/// Steps 1-2 said, step 3 a pause (an interrupt), steps 4-6 said after
/// it; a snapshot every 2 steps.
async fn six_steps(store: &Store) -> Store {
    let store = store
        .clone()
        .with_snapshot_policy(SnapshotPolicy::every(NonZeroU64::new(2).unwrap()));
    let mut t = store.thread::<Chat>("t").await.unwrap();
    t.apply(say("one")).await.unwrap();
    t.apply(say("two")).await.unwrap();
    t.log_pending(json!({"interrupts": [{"value": "go on?"}]}))
        .await
        .unwrap();
    for word in ["four", "five", "six"] {
        t.apply(say(word)).await.unwrap();
    }
    store
}

async fn takes_a_thread_back_to_a_step(backend: TestStore) {
    let store = six_steps(&backend.store).await;
    let before = store.history("t", 1..=3).await.unwrap();
    assert_eq!(
        store.rewind_thread("t", 3).await.unwrap(),
        3,
        "{}",
        backend.name
    );

    // As it was after step 3: head, state, history, the pause last.
    assert_eq!(store.thread_info("t").await.unwrap().seq, 3);
    assert_eq!(transcript(&store, "t").await, ["one", "two"]);
    let history = store.history("t", 1..=10).await.unwrap();
    assert_eq!(history.len(), 3);
    for (now, then) in history.iter().zip(&before) {
        assert_eq!((now.seq, &now.body), (then.seq, &then.body));
    }
    assert_eq!(history[2].body["interrupts"][0]["value"], "go on?");
    let err = store.state_at::<Chat>("t", 4).await.unwrap_err();
    assert!(
        matches!(err, StoreError::NoSuchStep { seq: 4, .. }),
        "{err}"
    );

    // The next step is 4, on the state at 3 (not on a removed snapshot).
    let mut t = store.thread::<Chat>("t").await.unwrap();
    assert_eq!(t.apply(say("again")).await.unwrap(), 4);
    assert_eq!(transcript(&store, "t").await, ["one", "two", "again"]);
    let other = backend.another_worker().await;
    assert_eq!(transcript(&other, "t").await, ["one", "two", "again"]);

    // At the head already: nothing to do.
    assert_eq!(store.rewind_thread("t", 4).await.unwrap(), 0);
    // Back to before the first step.
    assert_eq!(store.rewind_thread("t", 0).await.unwrap(), 4);
    assert_eq!(store.thread_info("t").await.unwrap().seq, 0);
    assert!(transcript(&store, "t").await.is_empty());
}

async fn refusals_change_nothing(backend: TestStore) {
    let store = six_steps(&backend.store).await;
    let err = store.rewind_thread("t", 7).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "thread \"t\" has no step 7: the thread's last step is 6",
        "{}",
        backend.name
    );
    let err = store.rewind_thread("nobody", 0).await.unwrap_err();
    assert!(matches!(err, StoreError::ThreadNotFound { .. }), "{err}");
    assert!(store.rewind_thread("", 0).await.is_err(), "an invalid id");

    // Compacted up to the snapshot at 6: the state at 3 cannot be rebuilt.
    store.compact("t").await.unwrap();
    let err = store.rewind_thread("t", 3).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "thread \"t\" has no step 3: its state cannot be rebuilt: step 1 was compacted away or precedes a fork"
    );
    assert_eq!(store.thread_info("t").await.unwrap().seq, 6);
    assert_eq!(
        transcript(&store, "t").await,
        ["one", "two", "four", "five", "six"]
    );
}

async fn a_watcher_past_the_step_is_told(backend: TestStore) {
    // One that read steps 1-2 only (a watcher reads ahead of what it
    // yields: it reads here while the thread ends at step 2).
    let mut t = backend.store.thread::<Chat>("t").await.unwrap();
    t.apply(say("one")).await.unwrap();
    t.apply(say("two")).await.unwrap();
    let mut before = backend.store.watch("t", 0);
    for n in 1..=2 {
        let step = timeout(WAIT, before.next()).await.unwrap().unwrap();
        assert_eq!(step.unwrap().seq, n);
    }
    t.log_pending(json!({"interrupts": [{"value": "go on?"}]}))
        .await
        .unwrap();
    for word in ["four", "five", "six"] {
        t.apply(say(word)).await.unwrap();
    }
    let store = backend.store.clone();
    // Watchers here and, on the databases, in another store (another
    // process's: its own notices).
    let other = backend.another_worker().await;
    let mut past = store.watch("t", 0);
    let mut elsewhere = other.watch("t", 0);
    for n in 1..=6 {
        let step = timeout(WAIT, past.next()).await.unwrap().unwrap().unwrap();
        assert_eq!(step.seq, n);
        let step = timeout(WAIT, elsewhere.next()).await.unwrap().unwrap();
        assert_eq!(step.unwrap().seq, n);
    }

    // Rewound, then grown past where it was before any watcher reads
    // again: the head alone would not tell.
    store.rewind_thread("t", 2).await.unwrap();
    let mut t = store.thread::<Chat>("t").await.unwrap();
    for word in ["x", "y", "z", "w", "v"] {
        t.apply(say(word)).await.unwrap();
    }
    assert_eq!(t.seq(), 7);
    for (name, watcher) in [("here", &mut past), ("elsewhere", &mut elsewhere)] {
        let end = timeout(WAIT, watcher.next()).await.unwrap().unwrap();
        let err = end.unwrap_err();
        assert!(
            matches!(&err, StoreError::ThreadRewound { seq: 2, .. }),
            "{} {name}: {err}",
            backend.name
        );
        assert_eq!(
            err.to_string(),
            "thread \"t\" was rewound to step 2 while it was being watched: steps after it that were delivered no longer exist"
        );
        assert!(watcher.next().await.is_none(), "the stream ends");
    }
    // The one that had read only steps 1-2 goes on, with the new steps.
    let mut bodies = Vec::new();
    for n in 3..=7 {
        let step = timeout(WAIT, before.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(step.seq, n);
        bodies.push(step.body["transcript"][0].as_str().unwrap_or("").to_owned());
    }
    assert_eq!(bodies, ["x", "y", "z", "w", "v"], "{}", backend.name);

    // Rewound twice: told, with step 0 (which rewind went lowest is not
    // kept).
    let mut watcher = store.watch("t", 6);
    let step = timeout(WAIT, watcher.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(step.seq, 7);
    store.rewind_thread("t", 6).await.unwrap();
    store.rewind_thread("t", 5).await.unwrap();
    let err = timeout(WAIT, watcher.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap_err();
    assert!(
        matches!(err, StoreError::ThreadRewound { seq: 0, .. }),
        "{err}"
    );
}

async fn a_run_rolls_back_whole(backend: TestStore) {
    let store = &backend.store;
    let mut t = store.thread::<Chat>("t").await.unwrap();
    t.apply(say("before")).await.unwrap();
    t.log_pending(json!({"interrupts": [{"value": "ok?"}]}))
        .await
        .unwrap();
    let new = NewRun::new("r", "agent")
        .thread("t")
        .if_not_exists(IfNotExists::Create);
    store.create_run(new).await.unwrap();
    let claim = store
        .claim_run("w", Duration::from_secs(30))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(claim.run().base_seq, Some(2));
    // What the run wrote: steps and events.
    let mut t = store.thread::<Chat>("t").await.unwrap();
    t.apply(say("during")).await.unwrap();
    t.apply(say("more")).await.unwrap();
    drop(t);
    let events = [RunEventIn::new("values", json!({"n": 1}))];
    store.append_run_events(&claim, &events).await.unwrap();
    store
        .cancel_run("r", CancelAction::Rollback, None)
        .await
        .unwrap();
    let mut watch = store.watch("t", 3);
    let step = timeout(WAIT, watch.next()).await.unwrap().unwrap().unwrap();
    assert_eq!(step.seq, 4);

    assert!(
        store
            .roll_back_run(&claim, Some(ThreadStatus::Interrupted))
            .await
            .unwrap(),
        "{}",
        backend.name
    );
    assert!(
        store.get_run("r", None).await.unwrap().is_none(),
        "the run is gone"
    );
    assert!(
        store.run_events("r", 0, 10).await.unwrap().is_empty(),
        "its events too"
    );
    assert_eq!(store.thread_info("t").await.unwrap().seq, 2);
    assert_eq!(transcript(store, "t").await, ["before"]);
    let history = store.history("t", 1..=10).await.unwrap();
    assert_eq!(
        history.last().unwrap().body["interrupts"][0]["value"],
        "ok?"
    );
    let record = store.thread_record("t", None).await.unwrap().unwrap();
    assert_eq!(record.status, ThreadStatus::Interrupted);
    // A watcher that had delivered step 4 is told.
    let err = timeout(WAIT, watch.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap_err();
    assert!(
        matches!(err, StoreError::ThreadRewound { seq: 2, .. }),
        "{err}"
    );
    // Once done, the claim is lost: a second rollback changes nothing.
    assert!(!store.roll_back_run(&claim, None).await.unwrap());
    assert_eq!(store.thread_info("t").await.unwrap().seq, 2);
}

async fn a_lost_claim_rolls_nothing_back(backend: TestStore) {
    let store = &backend.store;
    let mut t = store.thread::<Chat>("t").await.unwrap();
    t.apply(say("before")).await.unwrap();
    let new = NewRun::new("r", "agent")
        .thread("t")
        .if_not_exists(IfNotExists::Create);
    store.create_run(new).await.unwrap();
    let claim = store
        .claim_run("w", Duration::from_millis(1))
        .await
        .unwrap()
        .unwrap();
    t.apply(say("during")).await.unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    // Its lease expired: another worker takes the run over.
    let again = store
        .claim_run("w2", Duration::from_secs(30))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(again.attempt(), 2);
    assert!(
        !store.roll_back_run(&claim, None).await.unwrap(),
        "{}",
        backend.name
    );
    assert_eq!(store.thread_info("t").await.unwrap().seq, 2);
    assert!(store.get_run("r", None).await.unwrap().is_some());
    // The holder of the lease can.
    assert!(store.roll_back_run(&again, None).await.unwrap());
    assert_eq!(store.thread_info("t").await.unwrap().seq, 1);
    let record = store.thread_record("t", None).await.unwrap().unwrap();
    assert_eq!(record.status, ThreadStatus::Idle);
}

on_every_backend!(
    takes_a_thread_back_to_a_step,
    refusals_change_nothing,
    a_watcher_past_the_step_is_told,
    a_run_rolls_back_whole,
    a_lost_claim_rolls_nothing_back,
);

/// The database a [`child_rewinder`] works on.
const CHILD_DB: &str = "REWIND_CHILD_DB";

/// As a child (with `CHILD_DB` set): takes thread "t" back to step 2 and
/// grows it back to step 6 at once, in another process than the
/// watcher's. Without it (a normal test run), returns at once.
#[tokio::test]
async fn child_rewinder() {
    let Ok(db) = std::env::var(CHILD_DB) else {
        return;
    };
    let store = match db.starts_with("postgres://") {
        true => Store::postgres(&db).await.unwrap(),
        false => Store::sqlite(&db).await.unwrap(),
    };
    store.rewind_thread("t", 2).await.unwrap();
    let mut t = store.thread::<Chat>("t").await.unwrap();
    for word in ["c", "d", "e", "f"] {
        t.apply(say(word)).await.unwrap();
    }
}

/// A watcher that read steps 1-6 of a thread another process rewinds to
/// step 2 and grows back to step 6 (the head where it was): it is woken
/// and told, with no step after (SQLite: the poll sees the rewind count
/// change; PostgreSQL: the rewind's notice).
async fn another_process_rewinds(backend: TestStore) {
    let store = six_steps(&backend.store).await;
    let mut watcher = store.watch("t", 0);
    for n in 1..=6 {
        let step = timeout(WAIT, watcher.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(step.seq, n);
    }
    let mut child = tokio::process::Command::from(crate::support::child::only(
        module_path!(),
        "child_rewinder",
    ))
    .env(CHILD_DB, &backend.location)
    .stdout(std::process::Stdio::null())
    .kill_on_drop(true)
    .spawn()
    .unwrap();
    let status = timeout(WAIT, child.wait()).await.unwrap().unwrap();
    assert!(status.success(), "the child failed: {status}");
    assert_eq!(store.thread_info("t").await.unwrap().seq, 6);
    let err = timeout(WAIT, watcher.next())
        .await
        .expect("woken with no new step")
        .unwrap()
        .unwrap_err();
    assert!(
        matches!(err, StoreError::ThreadRewound { seq: 2, .. }),
        "{}: {err}",
        backend.name
    );
}

mod another_process_rewinds {
    use crate::support::backends::TestStore;

    #[tokio::test]
    async fn sqlite() {
        super::another_process_rewinds(TestStore::sqlite().await).await;
    }

    #[tokio::test]
    async fn postgres() {
        super::another_process_rewinds(TestStore::postgres().await).await;
    }
}
