//! `Durability::Async` on a SQLite file: a thread's steps answered before
//! their commit. What `sync` returns is durable and read by others, and by
//! the handle's own reload; a stale writer is refused with its state
//! unchanged; watchers hear the steps once durable. (A writer killed with
//! SIGKILL: `crash.rs`.)

use crate::support::states::Chat;
use futures::StreamExt;
use state_core::{Message, State};
use state_store::{Durability, Store, StoreError};
use std::time::Duration;

fn step(n: u64) -> <Chat as State>::Delta {
    Chat::delta()
        .messages(vec![Message::human(format!("step {n}"))])
        .transcript(vec![n.to_string()])
}

#[tokio::test]
async fn synced_steps_are_read_by_another_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("async.db");
    let store = Store::sqlite(&path).await.unwrap();
    let mut t = store.thread::<Chat>("t").await.unwrap();
    t.set_durability(Durability::Async);
    assert_eq!(t.durability(), Durability::Async);
    for n in 1..=20 {
        assert_eq!(t.apply(step(n)).await.unwrap(), n);
    }
    // The handle's state has every step at once.
    assert_eq!(t.state().transcript.len(), 20);
    t.sync().await.unwrap();
    let other = Store::sqlite(&path).await.unwrap();
    let again = other.thread::<Chat>("t").await.unwrap();
    assert_eq!(again.seq(), 20);
    assert_eq!(again.state(), t.state());
    // Back to `Sync`: the next step is durable when it returns.
    t.set_durability(Durability::Sync);
    t.apply(step(21)).await.unwrap();
    assert_eq!(other.thread::<Chat>("t").await.unwrap().seq(), 21);
}

#[tokio::test]
async fn a_reload_reads_the_handles_own_async_steps() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::sqlite(dir.path().join("reload.db")).await.unwrap();
    let mut t = store.thread::<Chat>("t").await.unwrap();
    t.set_durability(Durability::Async);
    for n in 1..=3 {
        t.apply(step(n)).await.unwrap();
    }
    let before = t.state().clone();
    t.reload().await.unwrap();
    assert_eq!((t.seq(), t.state()), (3, &before));
    // And it goes on from there.
    assert_eq!(t.apply(step(4)).await.unwrap(), 4);
}

#[tokio::test]
async fn a_stale_async_writer_is_refused_and_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::sqlite(dir.path().join("stale.db")).await.unwrap();
    let mut stale = store.thread::<Chat>("t").await.unwrap();
    stale.set_durability(Durability::Async);
    let mut other = store.thread::<Chat>("t").await.unwrap();
    other.apply(step(1)).await.unwrap();
    let before = stale.state().clone();
    match stale.apply(step(99)).await {
        Err(StoreError::Conflict { local, stored, .. }) => {
            assert_eq!((local, stored), (0, 1));
        }
        other => panic!("expected a conflict, got {other:?}"),
    }
    assert_eq!(stale.seq(), 0);
    assert_eq!(stale.state(), &before);
    stale.sync().await.unwrap();
    // Nothing of it was stored.
    let stored = store.thread::<Chat>("t").await.unwrap();
    assert_eq!(stored.state().transcript, ["1"]);
}

#[tokio::test]
async fn a_watcher_hears_async_steps_once_durable() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::sqlite(dir.path().join("watch.db")).await.unwrap();
    let mut t = store.thread::<Chat>("t").await.unwrap();
    t.apply(step(1)).await.unwrap();
    let mut steps = store.watch("t", 0);
    t.set_durability(Durability::Async);
    for n in 2..=6 {
        t.apply(step(n)).await.unwrap();
    }
    t.sync().await.unwrap();
    for expected in 1..=6 {
        let step = tokio::time::timeout(Duration::from_secs(20), steps.next())
            .await
            .expect("a step within 20 s")
            .expect("the stream goes on")
            .unwrap();
        assert_eq!(step.seq, expected);
    }
}
