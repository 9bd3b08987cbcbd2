//! `Durability::Async` on a SQLite file: a thread's steps answered before
//! their commit. What `sync` returns is durable and read by others; a
//! stale writer is refused with its state unchanged; watchers hear the
//! steps once durable; and a writer killed with SIGKILL leaves a prefix
//! of its steps, at least every one it saw durable, never a gap (the
//! child is this test binary run again, as in `crash.rs`).

use crate::support;
use crate::support::states::Chat;
use futures::StreamExt;
use state_core::{Message, State};
use state_store::{Durability, Store, StoreError};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

const DB_ENV: &str = "ASYNC_WRITER_DB";

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

/// Appends steps under `Durability::Async`, printing `written N` when an
/// apply returns and `durable N` after each `sync` (every third step); as
/// a child (with `DB_ENV`) until it is killed, else a few steps.
#[tokio::test]
async fn async_writer_appends_and_reports() {
    let child_db = std::env::var(DB_ENV).ok();
    let dir = tempfile::tempdir().unwrap();
    let path = child_db
        .clone()
        .unwrap_or_else(|| dir.path().join("w.db").display().to_string());
    let limit = if child_db.is_some() { u64::MAX } else { 7 };
    let store = Store::sqlite(&path).await.unwrap();
    let mut t = store.thread::<Chat>("crash").await.unwrap();
    t.set_durability(Durability::Async);
    let start = t.seq();
    while t.seq() - start < limit {
        let n = t.seq() + 1;
        let text = format!("step {n} {}", "x".repeat(4000));
        let seq = t
            .apply(
                Chat::delta()
                    .messages(vec![Message::human(text)])
                    .transcript(vec![n.to_string()]),
            )
            .await
            .unwrap();
        println!("written {seq}");
        if seq % 3 == 0 {
            t.sync().await.unwrap();
            println!("durable {seq}");
        }
    }
    t.sync().await.unwrap();
    let again = Store::sqlite(&path)
        .await
        .unwrap()
        .thread::<Chat>("crash")
        .await
        .unwrap();
    assert_eq!(again.state(), t.state());
}

/// Runs the writer until it reports `after` durable steps, kills it with
/// SIGKILL, and returns the last steps it reported written and durable.
fn run_and_kill(db: &Path, after: u64, extra_delay: Duration) -> (u64, u64) {
    let mut child = support::child::only(module_path!(), "async_writer_appends_and_reports")
        .env(DB_ENV, db)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    let (mut written, mut durable, mut seen) = (0, 0, 0);
    let mut read = |line: &str, seen: &mut u64| {
        if let Some(seq) = line.strip_prefix("written ") {
            written = seq.parse().unwrap();
        } else if let Some(seq) = line.strip_prefix("durable ") {
            durable = seq.parse().unwrap();
            *seen += 1;
        }
    };
    while seen < after {
        let line = lines.next().expect("the writer reports steps").unwrap();
        read(&line, &mut seen);
    }
    std::thread::sleep(extra_delay);
    child.kill().unwrap(); // SIGKILL on Unix
    child.wait().unwrap();
    for line in lines.map_while(Result::ok) {
        read(&line, &mut seen);
    }
    (written, durable)
}

#[tokio::test]
async fn a_killed_async_writer_leaves_a_prefix_with_every_durable_step() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("crash.db");
    for (round, delay_ms) in [0u64, 2, 5].into_iter().enumerate() {
        let (written, durable) =
            run_and_kill(&db, 4 + round as u64 * 3, Duration::from_millis(delay_ms));
        let store = Store::sqlite(&db).await.unwrap();
        let t = store.thread::<Chat>("crash").await.unwrap();
        // Every step it saw durable is there; beyond what it saw written,
        // at most the one in flight.
        assert!(
            durable <= t.seq() && t.seq() <= written + 1,
            "round {round}: written {written}, durable {durable}, stored {}",
            t.seq()
        );
        // A prefix: numbers dense, the state their replay.
        let history = store.history("crash", ..).await.unwrap();
        let seqs: Vec<u64> = history.iter().map(|s| s.seq).collect();
        assert_eq!(seqs, (1..=t.seq()).collect::<Vec<_>>());
        let expected: Vec<String> = (1..=t.seq()).map(|n| n.to_string()).collect();
        assert_eq!(t.state().transcript, expected);
        let mut replayed = Chat::default();
        for step in history {
            replayed.apply_json(step.body).unwrap();
        }
        assert_eq!(&replayed, t.state());
    }
}
