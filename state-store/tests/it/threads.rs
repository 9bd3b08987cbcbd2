//! Thread behaviour, identical on every backend: steps are logged and
//! replayed exactly, refused steps leave no trace, stale writers conflict,
//! and history, time travel, forks, deletion and compaction work.

use crate::on_every_backend;
use crate::support::backends::TestStore;
use crate::support::states::{Chat, Progress};
use serde_json::json;
use state_core::{Message, State};
use state_store::{SnapshotPolicy, StepKind, StoreError, ThreadCursor, ThreadOrder};
use std::collections::BTreeMap;
use std::num::NonZeroU64;
use std::sync::Arc;

/// The ids of the store's threads, as listed.
async fn thread_ids(store: &state_store::Store) -> Vec<String> {
    let threads = store.threads().await.unwrap();
    threads.into_iter().map(|t| t.id).collect()
}

/// A few turns of a chat: messages without ids, a superstep, a turn reset,
/// a `set`, a nested group.
async fn run_turns(t: &mut state_store::Thread<Chat>) {
    t.apply(
        Chat::delta()
            .messages(vec![Message::human("hi")])
            .next("agent")
            .progress(Progress::delta().stage("greeting")),
    )
    .await
    .unwrap();
    t.apply_nodes([
        (
            "agent",
            Chat::delta()
                .messages(vec![Message::ai("hello")])
                .transcript(vec!["agent".to_string()])
                .diagnostics(
                    [("latency".to_string(), 0.5)]
                        .into_iter()
                        .collect::<std::collections::BTreeMap<_, _>>(),
                ),
        ),
        (
            "tools",
            Chat::delta()
                .transcript(vec!["tools".to_string()])
                .budget(30)
                .progress(Progress::delta().done(vec!["lookup".to_string()])),
        ),
    ])
    .await
    .unwrap();
    t.begin_turn().await.unwrap();
    t.set("note", json!("remember me")).await.unwrap();
    t.apply(
        Chat::delta()
            .messages(vec![Message::human("again")])
            .budget(20),
    )
    .await
    .unwrap();
}

async fn reload_equals_live_state(ts: TestStore) {
    let mut t = ts.store.thread::<Chat>("user-42").await.unwrap();
    assert_eq!(t.seq(), 0, "{}: a new thread has no step", ts.name);
    run_turns(&mut t).await;
    assert_eq!(t.seq(), 5);
    // Every message got its id before it was logged: the replay has the
    // same ids, so the states are equal.
    assert!(t.state().messages.iter().all(|m| m.id().is_some()));
    assert_eq!(t.state().budget, 50);
    assert_eq!(t.state().next, "supervisor", "begin_turn reset it");
    assert_eq!(t.state().progress.stage, "idle");
    assert_eq!(t.state().note.as_deref(), Some("remember me"));

    let fresh = ts.another_worker().await;
    let again = fresh.thread::<Chat>("user-42").await.unwrap();
    assert_eq!(again.seq(), 5);
    assert_eq!(again.state(), t.state(), "{}: replay equals live", ts.name);
}

async fn steps_are_logged_with_kind_and_metadata(ts: TestStore) {
    let mut t = ts.store.thread::<Chat>("t").await.unwrap();
    run_turns(&mut t).await;
    t.with_metadata(json!({"run": 7}))
        .apply(Chat::delta().next("x"))
        .await
        .unwrap();
    let history = ts.store.history("t", ..).await.unwrap();
    let kinds: Vec<StepKind> = history.iter().map(|s| s.kind).collect();
    assert_eq!(
        kinds,
        [
            StepKind::Apply,
            StepKind::Superstep,
            StepKind::BeginTurn,
            StepKind::Set,
            StepKind::Apply,
            StepKind::Apply
        ]
    );
    assert_eq!(
        history.iter().map(|s| s.seq).collect::<Vec<_>>(),
        [1, 2, 3, 4, 5, 6]
    );
    assert_eq!(history[1].metadata["nodes"], json!(["agent", "tools"]));
    assert_eq!(history[1].body.as_array().map(Vec::len), Some(2));
    assert_eq!(history[2].body, json!(null));
    assert_eq!(
        history[3].body,
        json!({"key": "note", "value": "remember me"})
    );
    assert_eq!(history[5].metadata["run"], 7);
    // The logged delta carries the id the state got.
    let logged_id = &history[0].body["messages"][0]["id"];
    assert_eq!(
        logged_id.as_str(),
        t.state().messages[0].id(),
        "{}: the logged delta is the applied one",
        ts.name
    );
    // A range.
    let middle = t.history(2..4).await.unwrap();
    assert_eq!(middle.iter().map(|s| s.seq).collect::<Vec<_>>(), [2, 3]);
    assert!(t.history(7..).await.unwrap().is_empty());
}

async fn refused_steps_leave_no_trace(ts: TestStore) {
    let mut t = ts.store.thread::<Chat>("t").await.unwrap();
    t.apply(Chat::delta().budget(60)).await.unwrap();
    let before = t.state().clone();

    // The custom reducer refuses.
    let err = t
        .apply(Chat::delta().budget(50).next("x"))
        .await
        .unwrap_err();
    assert!(!err.is_conflict());
    assert_eq!(
        err.to_string(),
        "thread \"t\": the reducers refused the step"
    );
    let refused = err.state_error().expect("the state error is the source");
    assert!(refused.to_string().contains("budget"), "{refused}");
    // add_messages refuses to remove a missing id.
    let err = t
        .apply(Chat::delta().messages(vec![Message::remove("nope")]))
        .await
        .unwrap_err();
    // The reducer's reason is the state error's source.
    let reason = err.state_error().and_then(std::error::Error::source);
    assert!(
        reason.is_some_and(|r| r.to_string().contains("nope")),
        "{err}"
    );
    // Two writes to a replace field in one superstep.
    let err = t
        .apply_all([Chat::delta().next("a"), Chat::delta().next("b")])
        .await
        .unwrap_err();
    let refused = err.state_error().expect("the state error is the source");
    assert!(refused.to_string().contains("next"), "{refused}");
    // `set` of a value of the wrong type, and of an unknown key.
    assert!(t.set("budget", json!("lots")).await.is_err());
    assert!(t.set("nxt", json!("x")).await.is_err());
    // A value JSON cannot hold: serde_json would log `null`, and the
    // step would not replay.
    let err = t
        .apply(Chat::delta().diagnostics(BTreeMap::from([("latency".to_owned(), f64::NAN)])))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Encode { .. }), "{err}");
    assert_eq!(
        err.to_string(),
        "thread \"t\": cannot write the delta as JSON"
    );
    let reason = std::error::Error::source(&err).map(ToString::to_string);
    assert_eq!(
        reason.as_deref(),
        Some("NaN has no JSON form (JSON numbers are finite), at diagnostics.latency")
    );
    // Metadata that is not an object.
    let err = t
        .with_metadata(json!([1]))
        .apply(Chat::delta().next("x"))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Metadata { .. }), "{err}");

    assert_eq!(t.seq(), 1);
    assert_eq!(t.state(), &before);
    assert_eq!(ts.store.history("t", ..).await.unwrap().len(), 1);
    let again = ts.store.thread::<Chat>("t").await.unwrap();
    assert_eq!(again.state(), &before);
    // The thread is not stuck: the next good step goes through.
    assert_eq!(t.apply(Chat::delta().budget(10)).await.unwrap(), 2);
}

async fn stale_writers_conflict_then_reload(ts: TestStore) {
    let other = ts.another_worker().await;
    let mut a = ts.store.thread::<Chat>("shared").await.unwrap();
    let mut b = other.thread::<Chat>("shared").await.unwrap();
    a.apply(Chat::delta().transcript(vec!["a1".into()]))
        .await
        .unwrap();
    a.apply(Chat::delta().transcript(vec!["a2".into()]))
        .await
        .unwrap();

    let err = b
        .apply(Chat::delta().transcript(vec!["b1".into()]))
        .await
        .unwrap_err();
    assert!(err.is_conflict(), "{}: {err}", ts.name);
    assert_eq!(
        err.to_string(),
        "thread \"shared\" moved on: this handle is at step 0, the store is at step 2; reload the thread and retry"
    );
    assert_eq!(b.seq(), 0);
    assert!(b.state().transcript.is_empty());

    b.reload().await.unwrap();
    assert_eq!(b.seq(), 2);
    b.apply(Chat::delta().transcript(vec!["b1".into()]))
        .await
        .unwrap();
    let last = ts.store.thread::<Chat>("shared").await.unwrap();
    assert_eq!(last.state().transcript, ["a1", "a2", "b1"]);
}

async fn time_travel_and_fork(ts: TestStore) {
    let mut t = ts.store.thread::<Chat>("main").await.unwrap();
    for word in ["one", "two", "three"] {
        t.apply(Chat::delta().transcript(vec![word.to_string()]))
            .await
            .unwrap();
    }
    let at_two: Chat = ts.store.state_at("main", 2).await.unwrap();
    assert_eq!(at_two.transcript, ["one", "two"]);
    let at_zero: Chat = t.state_at(0).await.unwrap();
    assert_eq!(at_zero, Chat::default());
    let err = t.state_at(9).await.unwrap_err();
    assert!(
        matches!(err, StoreError::NoSuchStep { seq: 9, .. }),
        "{err}"
    );

    let mut fork = ts.store.fork::<Chat>("main", 2, "alt").await.unwrap();
    assert_eq!(fork.seq(), 2);
    assert_eq!(fork.state().transcript, ["one", "two"]);
    fork.apply(Chat::delta().transcript(vec!["deux".to_string()]))
        .await
        .unwrap();
    let reopened = ts.store.thread::<Chat>("alt").await.unwrap();
    assert_eq!(reopened.state().transcript, ["one", "two", "deux"]);
    assert_eq!(reopened.seq(), 3);
    // The original is untouched.
    let main = ts.store.thread::<Chat>("main").await.unwrap();
    assert_eq!(main.state().transcript, ["one", "two", "three"]);

    let err = ts.store.fork::<Chat>("main", 1, "alt").await.unwrap_err();
    assert!(matches!(err, StoreError::ThreadExists { .. }), "{err}");
    let err = ts.store.fork::<Chat>("nope", 1, "alt2").await.unwrap_err();
    assert!(matches!(err, StoreError::ThreadNotFound { .. }), "{err}");

    let threads = ts.store.threads().await.unwrap();
    let ids: Vec<&str> = threads.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["alt", "main"]);
    assert_eq!(threads[0].forked_from, Some(("main".to_string(), 2)));
    assert_eq!(threads[1].seq, 3);
}

/// `fork_log`: the log copied, no state type needed; the same state as
/// `fork` gives, the history up to the fork, with or without snapshots.
async fn fork_by_copying_the_log(ts: TestStore) {
    let store = ts
        .store
        .clone()
        .with_snapshot_policy(SnapshotPolicy::every(NonZeroU64::new(3).unwrap()));
    let mut t = store.thread::<Chat>("main").await.unwrap();
    run_turns(&mut t).await;
    for word in ["one", "two", "three", "four", "five"] {
        t.apply(Chat::delta().transcript(vec![word.to_string()]))
            .await
            .unwrap();
    }
    let head = t.seq();
    assert!(head > 6, "{head}");
    for seq in [1, 3, 4, head - 1, head] {
        let to = format!("copy-{seq}");
        store.fork_log("main", seq, &to).await.unwrap();
        let copy = store.thread::<Chat>(&to).await.unwrap();
        let expected: Chat = store.state_at("main", seq).await.unwrap();
        assert_eq!((copy.seq(), copy.state()), (seq, &expected), "at {seq}");
        let info = store.thread_info(&to).await.unwrap();
        assert_eq!(info.forked_from, Some(("main".to_string(), seq)));
        // The copied steps are the original's, byte for byte.
        let copied = store.history(&to, ..).await.unwrap();
        let original = store.history("main", ..=seq).await.unwrap();
        assert!(!copied.is_empty() || seq % 3 == 0, "at {seq}");
        assert_eq!(
            copied[..],
            original[original.len() - copied.len()..],
            "at {seq}"
        );
    }
    // A copy goes on by itself; the original is untouched.
    let mut copy = store.thread::<Chat>("copy-4").await.unwrap();
    copy.apply(Chat::delta().next("elsewhere")).await.unwrap();
    assert_eq!(copy.seq(), 5);
    assert_eq!(store.thread_info("main").await.unwrap().seq, head);

    // Refused, with nothing created.
    let before = thread_ids(&store).await;
    let err = store.fork_log("main", 1, "copy-1").await.unwrap_err();
    assert!(matches!(err, StoreError::ThreadExists { .. }), "{err}");
    let err = store.fork_log("main", head + 1, "later").await.unwrap_err();
    assert!(matches!(err, StoreError::NoSuchStep { .. }), "{err}");
    let err = store.fork_log("nope", 1, "x").await.unwrap_err();
    assert!(matches!(err, StoreError::ThreadNotFound { .. }), "{err}");
    let err = store.fork_log("main", 1, "").await.unwrap_err();
    assert!(matches!(err, StoreError::InvalidThreadId { .. }), "{err}");
    // Compacted away: the steps before the latest snapshot are gone.
    store.compact("main").await.unwrap();
    let err = store.fork_log("main", 1, "gone").await.unwrap_err();
    assert!(matches!(err, StoreError::NoSuchStep { .. }), "{err}");
    assert_eq!(thread_ids(&store).await, before);
}

async fn delete_and_list(ts: TestStore) {
    let mut a = ts.store.thread::<Chat>("a").await.unwrap();
    a.apply(Chat::delta().next("x")).await.unwrap();
    ts.store.thread::<Chat>("b").await.unwrap();
    assert_eq!(ts.store.threads().await.unwrap().len(), 2);

    assert!(ts.store.delete_thread("a").await.unwrap());
    assert!(!ts.store.delete_thread("a").await.unwrap());
    let ids: Vec<String> = thread_ids(&ts.store).await;
    assert_eq!(ids, ["b"]);
    // A handle on a deleted thread cannot write to it.
    let err = a.apply(Chat::delta().next("y")).await.unwrap_err();
    assert!(matches!(err, StoreError::ThreadNotFound { .. }), "{err}");
    // Opening it again starts over.
    let fresh = ts.store.thread::<Chat>("a").await.unwrap();
    assert_eq!(fresh.seq(), 0);
    assert!(ts.store.history("a", ..).await.unwrap().is_empty());
}

async fn snapshots_and_compaction(ts: TestStore) {
    let store = ts
        .store
        .clone()
        .with_snapshot_policy(SnapshotPolicy::every(NonZeroU64::new(4).unwrap()));
    let mut t = store.thread::<Chat>("long").await.unwrap();
    for i in 0..10 {
        t.apply(Chat::delta().transcript(vec![format!("step {i}")]))
            .await
            .unwrap();
    }
    // Loading starts from the snapshot at step 8.
    let again = store.thread::<Chat>("long").await.unwrap();
    assert_eq!(again.state(), t.state());

    let removed = store.compact("long").await.unwrap();
    assert_eq!(removed.steps_removed, 8);
    assert_eq!(removed.snapshots_removed, 1, "the snapshot at step 4");
    let after = store.thread::<Chat>("long").await.unwrap();
    assert_eq!(after.state(), t.state());
    assert_eq!(after.seq(), 10);
    let history: Vec<u64> = store
        .history("long", ..)
        .await
        .unwrap()
        .iter()
        .map(|s| s.seq)
        .collect();
    assert_eq!(history, [9, 10]);
    let err = store.state_at::<Chat>("long", 3).await.unwrap_err();
    assert!(
        matches!(err, StoreError::NoSuchStep { seq: 3, .. }),
        "{err}"
    );
    let at_nine: Chat = store.state_at("long", 9).await.unwrap();
    assert_eq!(at_nine.transcript.len(), 9);

    // Thread::compact snapshots first: one snapshot left, no steps.
    t.compact().await.unwrap();
    assert!(store.history("long", ..).await.unwrap().is_empty());
    let last = store.thread::<Chat>("long").await.unwrap();
    assert_eq!(last.state(), t.state());
    t.apply(Chat::delta().transcript(vec!["after".to_string()]))
        .await
        .unwrap();
    assert_eq!(
        store.thread::<Chat>("long").await.unwrap().state(),
        t.state()
    );
}

async fn default_policy_snapshots_by_size(ts: TestStore) {
    let store = ts
        .store
        .clone()
        .with_snapshot_policy(SnapshotPolicy::log_size(0));
    let mut t = store.thread::<Chat>("grow").await.unwrap();
    for i in 0..40 {
        t.apply(Chat::delta().messages(vec![Message::human(format!("message number {i}"))]))
            .await
            .unwrap();
    }
    // With snapshots whenever the log outgrows the last one, compaction
    // finds one, and the log after it is smaller than the state.
    let removed = store.compact("grow").await.unwrap();
    assert!(
        removed.steps_removed > 0,
        "{}: a snapshot was written",
        ts.name
    );
    let kept = store.history("grow", ..).await.unwrap();
    let kept_bytes: usize = kept.iter().map(|s| s.body.to_string().len()).sum();
    let state_bytes = serde_json::to_string(t.state()).unwrap().len();
    assert!(kept_bytes <= state_bytes, "{kept_bytes} > {state_bytes}");
    assert_eq!(
        store.thread::<Chat>("grow").await.unwrap().state(),
        t.state()
    );
}

async fn set_by_path_is_one_step_and_undone_on_failure(ts: TestStore) {
    let mut t = ts.store.thread::<Chat>("paths").await.unwrap();
    t.set("diagnostics.latency", json!(0.25)).await.unwrap();
    t.set("progress.stage", json!("closing")).await.unwrap();
    assert_eq!(t.state().diagnostics["latency"], 0.25);
    assert_eq!(t.state().progress.stage, "closing");
    let again = ts.store.thread::<Chat>("paths").await.unwrap();
    assert_eq!(again.state(), t.state());

    // Another worker moves the thread on: this handle's set conflicts and
    // its state is exactly as before the call.
    let mut other = ts
        .another_worker()
        .await
        .thread::<Chat>("paths")
        .await
        .unwrap();
    other.apply(Chat::delta().next("elsewhere")).await.unwrap();
    let before = t.state().clone();
    let err = t.set("diagnostics.cost", json!(3.0)).await.unwrap_err();
    assert!(err.is_conflict(), "{err}");
    assert_eq!(t.state(), &before);
}

async fn hostile_thread_ids_are_data(ts: TestStore) {
    let ids = [
        "'; DROP TABLE state_store_steps; --",
        "\"quoted\" and 'single'",
        "Robert'); DELETE FROM state_store_threads WHERE ('1'='1",
        "ünïcödé 🧵 \\ % _ $1 ?",
        &"x".repeat(512),
    ];
    for (i, id) in ids.iter().enumerate() {
        let mut t = ts.store.thread::<Chat>(id).await.unwrap();
        t.apply(Chat::delta().transcript(vec![format!("#{i}")]))
            .await
            .unwrap();
    }
    let listed: Vec<String> = thread_ids(&ts.store).await;
    let mut expected: Vec<String> = ids.iter().map(|s| s.to_string()).collect();
    expected.sort();
    assert_eq!(listed, expected, "{}: every id stored as data", ts.name);
    for (i, id) in ids.iter().enumerate() {
        let t = ts.store.thread::<Chat>(id).await.unwrap();
        assert_eq!(t.state().transcript, [format!("#{i}")]);
    }
    for bad in ["", "a\0b", &"y".repeat(513)] {
        let err = ts.store.thread::<Chat>(bad).await.unwrap_err();
        assert!(matches!(err, StoreError::InvalidThreadId { .. }), "{err}");
    }
    assert_eq!(ts.store.threads().await.unwrap().len(), ids.len());
}

async fn concurrent_opens_of_a_new_thread(ts: TestStore) {
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let store = ts.store.clone();
        tasks.push(tokio::spawn(async move {
            store.thread::<Chat>("new").await.map(|t| t.seq())
        }));
    }
    for task in tasks {
        assert_eq!(task.await.unwrap().unwrap(), 0);
    }
    assert_eq!(ts.store.threads().await.unwrap().len(), 1);
    assert!(
        ts.store.history("new", ..).await.unwrap().is_empty(),
        "opening adds no step"
    );
}

async fn shared_state_keeps_the_state_it_was_taken_on(ts: TestStore) {
    let mut t = ts.store.thread::<Chat>("shared").await.unwrap();
    t.apply(Chat::delta().transcript(vec!["one".into()]))
        .await
        .unwrap();

    // A handle, not a copy: the thread's own state.
    let first = t.shared_state();
    assert!(std::ptr::eq(&*first, t.state()), "{}: no copy", ts.name);
    let again = t.shared_state();
    assert!(Arc::ptr_eq(&first, &again));
    drop(again);

    // Every kind of step, with the handle held: the handle keeps the old
    // state, the thread has the new one.
    t.apply(Chat::delta().transcript(vec!["two".into()]))
        .await
        .unwrap();
    assert_eq!(first.transcript, ["one"], "{}", ts.name);
    assert_eq!(t.state().transcript, ["one", "two"]);
    assert!(!std::ptr::eq(&*first, t.state()));

    let second = t.shared_state();
    t.apply_nodes([
        ("agent", Chat::delta().transcript(vec!["three".into()])),
        ("tools", Chat::delta().next("tools")),
    ])
    .await
    .unwrap();
    assert_eq!(second.transcript, ["one", "two"]);
    assert_eq!(second.next, "supervisor");
    assert_eq!(t.state().next, "tools");

    let third = t.shared_state();
    t.begin_turn().await.unwrap();
    assert_eq!(third.next, "tools");
    assert_eq!(t.state().next, "supervisor");

    let fourth = t.shared_state();
    t.set("progress.stage", json!("closing")).await.unwrap();
    assert_eq!(fourth.progress.stage, "idle");
    assert_eq!(t.state().progress.stage, "closing");

    let fifth = t.shared_state();
    t.log_pending(json!({"interrupts": []})).await.unwrap();
    assert!(
        std::ptr::eq(&*fifth, t.state()),
        "a pending step changes nothing: no copy"
    );
    assert_eq!(first.transcript, ["one"], "the oldest handle still holds");

    // Refused steps, with a handle held: neither it nor the thread changes.
    let before = t.state().clone();
    let held = t.shared_state();
    assert!(t.apply(Chat::delta().budget(500)).await.is_err());
    assert!(t.set("budget", json!("lots")).await.is_err());
    assert!(t.set("nxt", json!("x")).await.is_err());
    assert!(t.log_pending(json!("no")).await.is_err());
    assert_eq!(*held, before);
    assert_eq!(t.state(), &before);

    // A set that cannot be committed (another worker moved on) is undone,
    // and the handle never saw it.
    let mut other = ts
        .another_worker()
        .await
        .thread::<Chat>("shared")
        .await
        .unwrap();
    other.apply(Chat::delta().note("elsewhere")).await.unwrap();
    let err = t.set("note", json!("mine")).await.unwrap_err();
    assert!(err.is_conflict(), "{err}");
    assert_eq!(*held, before);
    assert_eq!(t.state(), &before);

    // Reload, with a handle held: the handle keeps the old state.
    t.reload().await.unwrap();
    assert_eq!(t.state().note.as_deref(), Some("elsewhere"));
    assert_eq!(held.note, None);
    drop(held);

    // With no handle held, a step commits in place: the next handle is
    // the same allocation, showing the new state.
    let handle = t.shared_state();
    let address = Arc::as_ptr(&handle);
    drop(handle);
    t.apply(Chat::delta().transcript(vec!["four".into()]))
        .await
        .unwrap();
    let handle = t.shared_state();
    assert_eq!(
        Arc::as_ptr(&handle),
        address,
        "{}: committed in place",
        ts.name
    );
    assert_eq!(handle.transcript, ["one", "two", "three", "four"]);
    drop(handle);
    let address = Arc::as_ptr(&t.shared_state());
    t.set("note", json!("in place")).await.unwrap();
    assert_eq!(Arc::as_ptr(&t.shared_state()), address);

    // What the thread shows is what the log holds.
    let reopened = ts
        .another_worker()
        .await
        .thread::<Chat>("shared")
        .await
        .unwrap();
    assert_eq!(
        reopened.state(),
        t.state(),
        "{}: replay equals live",
        ts.name
    );
    assert_eq!(reopened.seq(), t.seq());

    // into_state, with a handle held (a copy) and without (the state).
    let held = t.shared_state();
    let live = t.state().clone();
    assert_eq!(t.into_state(), live);
    assert_eq!(*held, live);
    drop(held);
    let mut t = ts.store.thread::<Chat>("shared").await.unwrap();
    drop(t.shared_state());
    assert_eq!(t.into_state(), live);
}

async fn pending_steps_change_no_state(ts: TestStore) {
    let mut t = ts.store.thread::<Chat>("paused").await.unwrap();
    t.apply(Chat::delta().transcript(vec!["one".into()]))
        .await
        .unwrap();
    let after_one = t.state().clone();

    let body = json!({
        "writes": {"agent": {"transcript": ["two"]}},
        "interrupts": [{"node": "approve", "value": {"question": "run the plan?"}}],
    });
    assert_eq!(t.log_pending(body.clone()).await.unwrap(), 2);
    assert_eq!(t.state(), &after_one, "{}: no state change", ts.name);
    let seq = t
        .with_metadata(json!({"nodes": ["approve"], "run": 7}))
        .log_pending(json!({"resume": "yes"}))
        .await
        .unwrap();
    assert_eq!(seq, 3);
    assert_eq!(t.state(), &after_one);

    let history = ts.store.history("paused", ..).await.unwrap();
    let kinds: Vec<StepKind> = history.iter().map(|s| s.kind).collect();
    assert_eq!(
        kinds,
        [StepKind::Apply, StepKind::Pending, StepKind::Pending]
    );
    assert_eq!(history[1].body, body, "{}: the body as given", ts.name);
    assert!(history[1].metadata.is_empty());
    assert_eq!(history[2].body, json!({"resume": "yes"}));
    assert_eq!(history[2].metadata["nodes"], json!(["approve"]));
    assert_eq!(history[2].metadata["run"], 7);
    assert_eq!(StepKind::Pending.as_str(), "pending");
    assert_eq!(StepKind::Pending.to_string(), "pending");

    // A body that is not an object is refused; nothing changes.
    for (bad, got) in [
        (json!(["a"]), "an array"),
        (json!("a"), "a string"),
        (json!(null), "null"),
        (json!(1), "a number"),
        (json!(true), "a boolean"),
    ] {
        let err = t.log_pending(bad.clone()).await.unwrap_err();
        assert!(!err.is_conflict());
        assert!(
            matches!(&err, StoreError::PendingBody { thread, got: g } if thread == "paused" && *g == got),
            "{err}"
        );
        assert_eq!(
            err.to_string(),
            format!("thread \"paused\": a pending step's body must be a JSON object, got {got}")
        );
        let err = t
            .with_metadata(json!({"run": 8}))
            .log_pending(bad)
            .await
            .unwrap_err();
        assert!(matches!(err, StoreError::PendingBody { .. }), "{err}");
    }
    // Metadata that is not an object, as for every step.
    let err = t
        .with_metadata(json!("run 9"))
        .log_pending(json!({}))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Metadata { .. }), "{err}");
    assert_eq!(t.seq(), 3);
    assert_eq!(t.state(), &after_one);
    assert_eq!(ts.store.history("paused", ..).await.unwrap().len(), 3);

    // Another worker replays the pending steps as nothing.
    let mut other = ts
        .another_worker()
        .await
        .thread::<Chat>("paused")
        .await
        .unwrap();
    assert_eq!(other.seq(), 3);
    assert_eq!(other.state(), &after_one, "{}: replay", ts.name);
    // A stale pending step conflicts like any other.
    other.log_pending(json!({"by": "other"})).await.unwrap();
    let err = t.log_pending(json!({"by": "me"})).await.unwrap_err();
    assert!(err.is_conflict(), "{err}");
    assert_eq!(t.seq(), 3);
    t.reload().await.unwrap();
    assert_eq!(t.seq(), 4);
    t.apply(Chat::delta().transcript(vec!["two".into()]))
        .await
        .unwrap();
    let after_five = t.state().clone();

    // Time travel: at a pending step, the state before it.
    for seq in [1, 2, 3, 4] {
        let at: Chat = ts.store.state_at("paused", seq).await.unwrap();
        assert_eq!(at, after_one, "{}: state at step {seq}", ts.name);
    }
    let at_five: Chat = t.state_at(5).await.unwrap();
    assert_eq!(at_five, after_five);

    // A fork at a pending step starts from the state before it.
    let mut fork = ts
        .store
        .fork::<Chat>("paused", 3, "paused-fork")
        .await
        .unwrap();
    assert_eq!(fork.seq(), 3);
    assert_eq!(fork.state(), &after_one);
    fork.log_pending(json!({"in": "fork"})).await.unwrap();
    fork.apply(Chat::delta().transcript(vec!["deux".into()]))
        .await
        .unwrap();
    let reopened = ts.store.thread::<Chat>("paused-fork").await.unwrap();
    assert_eq!(reopened.seq(), 5);
    assert_eq!(reopened.state().transcript, ["one", "deux"]);
    let forked: Vec<StepKind> = ts
        .store
        .history("paused-fork", ..)
        .await
        .unwrap()
        .iter()
        .map(|s| s.kind)
        .collect();
    // The step forked at comes along (a run goes on from it), and the
    // steps before it that change no state, back to the one that did (the
    // apply of step 1), then the fork's own two.
    assert_eq!(
        forked,
        [
            StepKind::Apply,
            StepKind::Pending,
            StepKind::Pending,
            StepKind::Pending,
            StepKind::Apply
        ]
    );
    let main = ts.store.thread::<Chat>("paused").await.unwrap();
    assert_eq!(main.state(), &after_five, "the original is untouched");
}

async fn pending_steps_count_toward_snapshots_and_compact(ts: TestStore) {
    let store = ts
        .store
        .clone()
        .with_snapshot_policy(SnapshotPolicy::every(NonZeroU64::new(2).unwrap()));
    let mut t = store.thread::<Chat>("paused").await.unwrap();
    // Steps 1..=5: apply, pending, apply, pending, apply. Snapshots are
    // due after steps 2 and 4, both pending steps.
    for i in 0..5 {
        if i % 2 == 0 {
            t.apply(Chat::delta().transcript(vec![format!("step {i}")]))
                .await
                .unwrap();
        } else {
            t.log_pending(json!({"i": i})).await.unwrap();
        }
    }
    let removed = store.compact("paused").await.unwrap();
    assert_eq!(
        removed.steps_removed, 4,
        "{}: a snapshot at step 4",
        ts.name
    );
    assert_eq!(removed.snapshots_removed, 1, "the snapshot at step 2");
    let history: Vec<u64> = store
        .history("paused", ..)
        .await
        .unwrap()
        .iter()
        .map(|s| s.seq)
        .collect();
    assert_eq!(history, [5]);
    let reopened = store.thread::<Chat>("paused").await.unwrap();
    assert_eq!(reopened.state(), t.state());
    assert_eq!(reopened.seq(), 5);
    let at_four: Chat = store.state_at("paused", 4).await.unwrap();
    assert_eq!(at_four.transcript, ["step 0", "step 2"]);

    // Compacting at a pending step: the snapshot is the state before it.
    t.log_pending(json!({"last": true})).await.unwrap();
    t.compact().await.unwrap();
    assert!(store.history("paused", ..).await.unwrap().is_empty());
    let reopened = store.thread::<Chat>("paused").await.unwrap();
    assert_eq!(reopened.seq(), 6);
    assert_eq!(reopened.state(), t.state());
    assert_eq!(reopened.state().transcript, ["step 0", "step 2", "step 4"]);
    t.log_pending(json!({"after": "compaction"})).await.unwrap();
    let history = store.history("paused", ..).await.unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!(history[0].kind, StepKind::Pending);
    assert_eq!(history[0].seq, 7);
}

/// `start_turn`: the reset and the input as one step, checked on the state
/// after the reset, all or nothing; replayed the same way.
async fn start_turn_is_one_step_all_or_nothing(ts: TestStore) {
    let mut t = ts.store.thread::<Chat>("t").await.unwrap();
    t.apply(Chat::delta().next("tools").budget(30))
        .await
        .unwrap();
    assert_eq!((t.state().next.as_str(), t.state().budget), ("tools", 70));

    let seq = t
        .with_metadata(json!({"nodes": ["__start__"]}))
        .start_turn(
            Chat::delta()
                .messages(vec![Message::human("hi")])
                .budget(20),
        )
        .await
        .unwrap();
    assert_eq!(seq, 2, "{}", ts.name);
    assert_eq!(
        t.state().next,
        "supervisor",
        "{}: turn field reset",
        ts.name
    );
    assert_eq!((t.state().budget, t.state().messages.len()), (50, 1));
    let step = &ts.store.history("t", 2..=2).await.unwrap()[0];
    assert_eq!(step.kind, StepKind::BeginTurn);
    assert_eq!(step.metadata["nodes"], json!(["__start__"]));
    assert_eq!(step.body["budget"], json!(20));

    // Refused input (over the budget): nothing changes, the turn-scoped
    // field included, and nothing is logged.
    t.apply(Chat::delta().next("answer")).await.unwrap();
    let before = t.state().clone();
    let err = t.start_turn(Chat::delta().budget(500)).await.unwrap_err();
    assert!(
        matches!(err, StoreError::State { .. }),
        "{}: {err}",
        ts.name
    );
    assert_eq!(t.state(), &before, "{}", ts.name);
    assert_eq!(t.seq(), 3);
    assert_eq!(ts.store.history("t", ..).await.unwrap().len(), 3);

    // Replay gives the same state, and a plain begin_turn still works.
    let again = ts.store.thread::<Chat>("t").await.unwrap();
    assert_eq!(again.state(), t.state(), "{}", ts.name);
    t.begin_turn().await.unwrap();
    assert_eq!(t.state().next, "supervisor");
    let replayed = ts.store.thread::<Chat>("t").await.unwrap();
    assert_eq!(replayed.state(), t.state());
}

/// `StepRecord::replay_onto` replays the history, step by step from the
/// default state, exactly as loading does: every step kind, each
/// intermediate state equal to `state_at`; a refused step (a corrupt body,
/// a newer schema version) leaves the state as it was.
async fn history_replays_step_by_step(ts: TestStore) {
    let mut t = ts.store.thread::<Chat>("t").await.unwrap();
    run_turns(&mut t).await;
    t.start_turn(
        Chat::delta()
            .messages(vec![Message::human("go")])
            .next("agent"),
    )
    .await
    .unwrap();
    t.log_pending(json!({"writes": {"agent": {"budget": 1}}, "interrupts": []}))
        .await
        .unwrap();
    t.with_metadata(json!({"by": "test"}))
        .apply_nodes([("agent", Chat::delta().budget(5))])
        .await
        .unwrap();
    let history = ts.store.history("t", ..).await.unwrap();
    let kinds: Vec<_> = history.iter().map(|s| s.kind).collect();
    assert_eq!(
        kinds,
        [
            StepKind::Apply,
            StepKind::Superstep,
            StepKind::BeginTurn,
            StepKind::Set,
            StepKind::Apply,
            StepKind::BeginTurn,
            StepKind::Pending,
            StepKind::Superstep,
        ],
        "{}",
        ts.name
    );
    assert!(history[2].body.is_null() && !history[5].body.is_null());

    let mut state = Chat::default();
    for step in &history {
        let before = state.clone();
        step.replay_onto("t", &mut state).unwrap();
        let expected: Chat = ts.store.state_at("t", step.seq).await.unwrap();
        assert_eq!(state, expected, "{}: after step {}", ts.name, step.seq);
        if step.kind == StepKind::Pending {
            assert_eq!(state, before, "a pending step changes nothing");
        }
    }
    assert_eq!(&state, t.state(), "{}", ts.name);

    // Refused steps: the state is left exactly as it was.
    let before = state.clone();
    let mut corrupt = history[0].clone();
    corrupt.body = json!({"budget": "lots"});
    let err = corrupt.replay_onto("t", &mut state).unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { seq: 1, .. }), "{err}");
    assert!(
        err.to_string()
            .starts_with("thread \"t\", step 1: stored data is corrupt: "),
        "{err}"
    );
    assert_eq!(state, before);

    // A superstep whose second delta is refused applies none of them.
    let mut corrupt = history[1].clone();
    corrupt.body = json!([{"budget": 1}, {"next": 5}]);
    assert!(matches!(
        corrupt.replay_onto("t", &mut state),
        Err(StoreError::Corrupt { seq: 2, .. })
    ));
    assert_eq!(state, before);

    // A turn begun with refused input does not reset the turn either.
    let mut corrupt = history[5].clone();
    corrupt.body = json!({"transcript": "not a list"});
    assert!(corrupt.replay_onto("t", &mut state).is_err());
    assert_eq!(state, before);

    for body in [json!([1]), json!({"key": 1, "value": 2})] {
        let mut corrupt = history[3].clone();
        corrupt.body = body;
        assert!(corrupt.replay_onto("t", &mut state).is_err());
        assert_eq!(state, before);
    }
    let mut corrupt = history[6].clone();
    corrupt.body = json!("not an object");
    assert!(corrupt.replay_onto("t", &mut state).is_err());
    assert_eq!(state, before);

    // Written by a newer version of the state: refused, as loading is.
    let mut newer = history[4].clone();
    newer.state_version = Chat::schema().version() + 1;
    let err = newer.replay_onto("t", &mut state).unwrap_err();
    assert!(matches!(err, StoreError::TooNew { .. }), "{err}");
    assert_eq!(state, before);
}

/// Every page of a listing, following each page's cursor.
async fn all_pages(
    store: &state_store::Store,
    order: ThreadOrder,
    filter: Option<&str>,
    limit: usize,
) -> Vec<String> {
    let mut ids = Vec::new();
    let mut after = None;
    loop {
        let mut listing = store.list_threads().order(order).limit(limit);
        if let Some(cursor) = after.take() {
            listing = listing.after(cursor);
        }
        if let Some(filter) = filter {
            listing = listing.id_contains(filter);
        }
        let page = listing.await.unwrap();
        assert!(page.threads.len() <= limit);
        ids.extend(page.threads.into_iter().map(|t| t.id));
        match page.next {
            Some(next) => after = Some(next),
            None => return ids,
        }
    }
}

async fn threads_are_listed_a_page_at_a_time(ts: TestStore) {
    let store = &ts.store;
    for id in ["b", "a", "Ü-1", "c-user", "USER-2", "user-3", "a b"] {
        store.thread::<Chat>(id).await.unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(3)).await;
    }
    let mut t = store.thread::<Chat>("b").await.unwrap();
    t.apply(Chat::delta().next("x")).await.unwrap();

    let infos = store.threads().await.unwrap();
    let millis = |time: std::time::SystemTime| {
        time.duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis()
    };
    let sorted = |key: &dyn Fn(&state_store::ThreadInfo) -> u128, descending: bool| {
        let mut infos = infos.clone();
        infos.sort_by(|x, y| (key(x), x.id.as_bytes()).cmp(&(key(y), y.id.as_bytes())));
        if descending {
            infos.reverse();
        }
        infos.into_iter().map(|t| t.id).collect::<Vec<_>>()
    };
    let updated = |t: &state_store::ThreadInfo| millis(t.updated_at);
    let created = |t: &state_store::ThreadInfo| millis(t.created_at);
    let id = |_: &state_store::ThreadInfo| 0;
    for (order, expected) in [
        (ThreadOrder::UpdatedDesc, sorted(&updated, true)),
        (ThreadOrder::UpdatedAsc, sorted(&updated, false)),
        (ThreadOrder::CreatedDesc, sorted(&created, true)),
        (ThreadOrder::CreatedAsc, sorted(&created, false)),
        (ThreadOrder::IdAsc, sorted(&id, false)),
        (ThreadOrder::IdDesc, sorted(&id, true)),
    ] {
        assert_eq!(expected.len(), 7);
        for limit in [1, 2, 3, 7, 100] {
            assert_eq!(
                all_pages(store, order, None, limit).await,
                expected,
                "{order:?}, pages of {limit}"
            );
        }
    }
    // The default order: the thread with the newest step first.
    let first = store.list_threads().limit(1).await.unwrap();
    assert_eq!(first.threads[0].id, "b");
    assert_eq!(first.threads[0].seq, 1);
    // Bytewise on every backend: upper case before lower, "a b" before "b".
    assert_eq!(
        all_pages(store, ThreadOrder::IdAsc, None, 3).await,
        ["USER-2", "a", "a b", "b", "c-user", "user-3", "Ü-1"]
    );

    // A filter ignores case (Unicode's), in the listing's order.
    for limit in [1, 2, 10] {
        assert_eq!(
            all_pages(store, ThreadOrder::IdAsc, Some("user"), limit).await,
            ["USER-2", "c-user", "user-3"]
        );
    }
    assert_eq!(
        all_pages(store, ThreadOrder::IdAsc, Some("ü"), 5).await,
        ["Ü-1"]
    );
    assert!(
        all_pages(store, ThreadOrder::IdAsc, Some("nobody"), 5)
            .await
            .is_empty()
    );

    // An offset skips what the cursor and the filter leave.
    let page = store
        .list_threads()
        .order(ThreadOrder::IdAsc)
        .offset(2)
        .limit(2)
        .await
        .unwrap();
    let ids: Vec<_> = page.threads.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["a b", "b"]);
    assert!(page.next.is_some());
    let page = store
        .list_threads()
        .order(ThreadOrder::IdAsc)
        .id_contains("USER")
        .offset(1)
        .await
        .unwrap();
    let ids: Vec<_> = page.threads.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["c-user", "user-3"]);
    assert!(page.next.is_none());

    // A cursor made by hand: after "b" in id order.
    let page = store
        .list_threads()
        .order(ThreadOrder::IdAsc)
        .after(ThreadCursor::new(0, "b"))
        .await
        .unwrap();
    assert_eq!(page.threads.len(), 3);
    let none = store.list_threads().limit(0).await.unwrap();
    assert!(none.threads.is_empty() && none.next.is_none());
}

/// `Store::latest` against a load of the same thread, and the last step's
/// record against `history`'s.
async fn assert_latest_is_loaded(store: &state_store::Store, id: &str) {
    let latest = store.latest::<Chat>(id).await.unwrap();
    let loaded = store.existing_thread::<Chat>(id).await.unwrap();
    assert_eq!(latest.seq, loaded.seq(), "{id}: seq");
    assert_eq!(&*latest.state, loaded.state(), "{id}: state");
    let last = store
        .history(id, loaded.seq()..=loaded.seq())
        .await
        .unwrap()
        .pop();
    assert_eq!(latest.step, last, "{id}: last step");
}

/// `Store::latest` is the loaded state with its last step, at every point:
/// before any step, after steps (asked again and again: the memory store
/// starts from the state it kept), after steps another worker wrote, after
/// a snapshot, after compaction removed the last step, on a fork, and on
/// a thread deleted and created again (nothing kept from the first).
async fn latest_is_the_loaded_state_with_its_last_step(ts: TestStore) {
    let store = &ts.store;
    assert!(matches!(
        store.latest::<Chat>("l").await,
        Err(StoreError::ThreadNotFound { .. })
    ));
    let mut t = store.thread::<Chat>("l").await.unwrap();
    let empty = store.latest::<Chat>("l").await.unwrap();
    assert_eq!((empty.seq, &*empty.state), (0, &Chat::default()));
    assert!(empty.step.is_none());

    run_turns(&mut t).await;
    assert_latest_is_loaded(store, "l").await;
    assert_latest_is_loaded(store, "l").await;
    if ts.name == "memory" {
        // Nothing committed between two calls: the kept state, not a copy.
        let a = store.latest::<Chat>("l").await.unwrap();
        let b = store.latest::<Chat>("l").await.unwrap();
        assert!(Arc::ptr_eq(&a.state, &b.state));
    }
    // A state held across a step stays as it was (the memory store brings
    // the state it keeps up to date in place only when no one holds it).
    let held = store.latest::<Chat>("l").await.unwrap();
    let before = (*held.state).clone();
    t.apply(Chat::delta().transcript(vec!["while held".to_owned()]))
        .await
        .unwrap();
    let after = store.latest::<Chat>("l").await.unwrap();
    assert_eq!(*held.state, before);
    assert_eq!(after.state.transcript.last().unwrap(), "while held");
    drop((held, after));
    t.apply(Chat::delta().transcript(vec!["none held".to_owned()]))
        .await
        .unwrap();
    assert_latest_is_loaded(store, "l").await;
    for i in 0..3 {
        t.apply(Chat::delta().transcript(vec![format!("step-{i}")]))
            .await
            .unwrap();
        assert_latest_is_loaded(store, "l").await;
    }
    let other = ts.another_worker().await;
    let mut theirs = other.existing_thread::<Chat>("l").await.unwrap();
    theirs
        .apply(Chat::delta().messages(vec![Message::ai("from another worker")]))
        .await
        .unwrap();
    assert_latest_is_loaded(store, "l").await;
    assert_latest_is_loaded(&other, "l").await;

    t.reload().await.unwrap();
    t.snapshot().await.unwrap();
    assert_latest_is_loaded(store, "l").await;
    t.apply(Chat::delta().note(Some("after the snapshot".to_owned())))
        .await
        .unwrap();
    assert_latest_is_loaded(store, "l").await;
    t.compact().await.unwrap();
    let compacted = store.latest::<Chat>("l").await.unwrap();
    assert_eq!(compacted.seq, t.seq());
    assert_eq!(&*compacted.state, t.state());
    assert!(compacted.step.is_none(), "the last step was compacted away");
    t.apply(Chat::delta().transcript(vec!["after compaction".to_owned()]))
        .await
        .unwrap();
    assert_latest_is_loaded(store, "l").await;

    store.fork::<Chat>("l", t.seq(), "l-fork").await.unwrap();
    assert_latest_is_loaded(store, "l-fork").await;

    assert!(store.delete_thread("l").await.unwrap());
    let mut again = store.thread::<Chat>("l").await.unwrap();
    again
        .apply(Chat::delta().transcript(vec!["a new thread".to_owned()]))
        .await
        .unwrap();
    let latest = store.latest::<Chat>("l").await.unwrap();
    assert_eq!(latest.seq, 1);
    assert_eq!(latest.state.transcript, ["a new thread"]);
    assert_latest_is_loaded(store, "l").await;
}

on_every_backend!(
    threads_are_listed_a_page_at_a_time,
    latest_is_the_loaded_state_with_its_last_step,
    reload_equals_live_state,
    steps_are_logged_with_kind_and_metadata,
    refused_steps_leave_no_trace,
    stale_writers_conflict_then_reload,
    time_travel_and_fork,
    fork_by_copying_the_log,
    delete_and_list,
    snapshots_and_compaction,
    default_policy_snapshots_by_size,
    hostile_thread_ids_are_data,
    set_by_path_is_one_step_and_undone_on_failure,
    concurrent_opens_of_a_new_thread,
    shared_state_keeps_the_state_it_was_taken_on,
    pending_steps_change_no_state,
    pending_steps_count_toward_snapshots_and_compact,
    start_turn_is_one_step_all_or_nothing,
    history_replays_step_by_step,
);
