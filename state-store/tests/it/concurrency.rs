//! Two workers, each with its own connection pool, append to one thread at
//! once for a few hundred steps. Every step is committed once or refused as
//! a conflict; nothing is lost or duplicated, and the final state equals a
//! serial replay of the committed log.

use crate::support::backends::TestStore;
use crate::support::states::Chat;
use state_core::{Delta, State};
use state_store::{Store, StoreError};

const STEPS_PER_WORKER: usize = 150;

/// Appends `STEPS_PER_WORKER` entries, reloading and retrying on conflict.
/// Returns how many conflicts it met.
async fn worker(store: Store, name: &'static str) -> Result<u64, StoreError> {
    let mut t = store.thread::<Chat>("contended").await?;
    let mut conflicts = 0;
    for i in 0..STEPS_PER_WORKER {
        loop {
            let delta = Chat::delta().transcript(vec![format!("{name}-{i}")]);
            match t.apply(delta).await {
                Ok(_) => {
                    // Let the other worker in (the memory store never
                    // waits on I/O, so it would otherwise run alone).
                    tokio::task::yield_now().await;
                    break;
                }
                Err(e) if e.is_conflict() => {
                    conflicts += 1;
                    t.reload().await?;
                }
                Err(e) => return Err(e),
            }
        }
    }
    Ok(conflicts)
}

async fn two_workers(ts: TestStore) {
    let a = tokio::spawn(worker(ts.store.clone(), "a"));
    let b = tokio::spawn(worker(ts.another_worker().await, "b"));
    let conflicts = a.await.unwrap().unwrap() + b.await.unwrap().unwrap();

    let t = ts.store.thread::<Chat>("contended").await.unwrap();
    assert_eq!(
        t.seq(),
        2 * STEPS_PER_WORKER as u64,
        "{}: every step once",
        ts.name
    );
    // Each worker's entries appear once each, in its own order.
    for name in ["a", "b"] {
        let mine: Vec<&String> = t
            .state()
            .transcript
            .iter()
            .filter(|e| e.starts_with(&format!("{name}-")))
            .collect();
        let expected: Vec<String> = (0..STEPS_PER_WORKER)
            .map(|i| format!("{name}-{i}"))
            .collect();
        assert_eq!(
            mine,
            expected.iter().collect::<Vec<_>>(),
            "{}: worker {name}",
            ts.name
        );
    }
    // The committed log, replayed by hand, gives the loaded state.
    let history = ts.store.history("contended", ..).await.unwrap();
    let seqs: Vec<u64> = history.iter().map(|s| s.seq).collect();
    assert_eq!(seqs, (1..=2 * STEPS_PER_WORKER as u64).collect::<Vec<_>>());
    let mut serial = Chat::default();
    for step in history {
        serial
            .apply(<Chat as State>::Delta::from_json(step.body).unwrap())
            .unwrap();
    }
    assert_eq!(&serial, t.state());
    eprintln!("{}: {conflicts} conflicts", ts.name);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_workers_on_sqlite() {
    two_workers(TestStore::sqlite().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_workers_on_postgres() {
    two_workers(TestStore::postgres().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_workers_in_memory() {
    two_workers(TestStore::memory()).await;
}

/// Polls `future` `polls` times, yielding between, then drops it:
/// whether it was cut in the middle (started, and still pending).
async fn cut_after<F: std::future::Future>(future: F, polls: usize) -> bool {
    let mut future = std::pin::pin!(future);
    for _ in 0..polls {
        if futures::poll!(future.as_mut()).is_ready() {
            return false;
        }
        tokio::task::yield_now().await;
    }
    polls > 0
}

/// A SQLite step cancelled at any point (its future dropped, as a
/// `timeout` or a `select!` does) leaves no transaction open: the next
/// write of this store and another worker's both go through at once, and
/// the log holds each committed step once. (The append is one job of the
/// store's writer thread, which runs it whether its caller still listens
/// or not.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_step_leaves_no_transaction_open_on_sqlite() {
    use std::time::Duration;
    use tokio::time::timeout;

    let ts = TestStore::sqlite().await;
    let other = ts.another_worker().await;
    let mut mine = ts.store.thread::<Chat>("cancelled").await.unwrap();
    let mut theirs = other.thread::<Chat>("cancelled").await.unwrap();
    let mut cancelled = 0;
    for i in 0..60u64 {
        // Cut after one to four polls, or left to end.
        let delta = Chat::delta().transcript(vec![format!("mine-{i}")]);
        if cut_after(mine.apply(delta), 1 + (i % 5) as usize).await {
            cancelled += 1;
        }
        // A lock left held would make these wait for the busy timeout. (A
        // step cancelled during its commit may still land after the
        // reload: a conflict, then, as for any other writer.)
        for (thread, entry) in [(&mut theirs, "theirs"), (&mut mine, "again")] {
            let step = async {
                loop {
                    thread.reload().await.unwrap();
                    let delta = Chat::delta().transcript(vec![format!("{entry}-{i}")]);
                    match thread.apply(delta).await {
                        Ok(_) => break,
                        Err(e) if e.is_conflict() => continue,
                        Err(e) => panic!("{entry}-{i}: {e}"),
                    }
                }
            };
            timeout(Duration::from_secs(5), step)
                .await
                .unwrap_or_else(|_| panic!("{entry}-{i} is not kept waiting"));
        }
    }
    assert!(cancelled > 0, "some steps were cancelled");
    let history = ts.store.history("cancelled", ..).await.unwrap();
    let seqs: Vec<u64> = history.iter().map(|s| s.seq).collect();
    assert_eq!(seqs, (1..=history.len() as u64).collect::<Vec<_>>());
    let mut serial = Chat::default();
    for step in history {
        serial
            .apply(<Chat as State>::Delta::from_json(step.body).unwrap())
            .unwrap();
    }
    let reloaded = ts.store.thread::<Chat>("cancelled").await.unwrap();
    assert_eq!(&serial, reloaded.state());
    for i in 0..60 {
        for name in ["theirs", "again"] {
            let entry = format!("{name}-{i}");
            assert_eq!(
                serial.transcript.iter().filter(|e| **e == entry).count(),
                1,
                "{entry} once"
            );
        }
    }
    eprintln!("{cancelled} of 60 steps cancelled");
}

/// A SQLite read cancelled at any point (a cancelled run's task aborted
/// while it reads its thread) leaves no transaction open: every later
/// read sees the latest step, and none fails. (sqlx's `begin_with` could
/// be cut after its `BEGIN` ran, which left a pooled connection in a
/// transaction: later reads on it saw an old snapshot, or failed with
/// "non-zero transaction depth". A thread's tail is read on the calling
/// thread, in one go; its history through the pool.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_read_leaves_no_transaction_open_on_sqlite() {
    use std::time::Duration;
    use tokio::time::timeout;

    let ts = TestStore::sqlite().await;
    let other = ts.another_worker().await;
    let mut theirs = other.thread::<Chat>("read").await.unwrap();
    let mut cancelled = 0;
    for i in 0..120u64 {
        // Cut after one to four polls, or left to end: a thread's load, or
        // its history (through sqlx's pool).
        let polls = 1 + (i % 5) as usize;
        let cut = match i % 2 {
            0 => cut_after(ts.store.thread::<Chat>("read"), polls).await,
            _ => cut_after(ts.store.history("read", ..), polls).await,
        };
        if cut {
            cancelled += 1;
        }
        let delta = Chat::delta().transcript(vec![format!("theirs-{i}")]);
        theirs.apply(delta).await.unwrap();
        // Every connection of the pool in turn: each sees the new step.
        let reads = (0..8).map(|_| {
            let store = ts.store.clone();
            async move {
                let seq = store.thread::<Chat>("read").await.map(|t| t.seq())?;
                let steps = store.history("read", ..).await?.len() as u64;
                Ok::<_, state_store::StoreError>((seq, steps))
            }
        });
        let seqs = timeout(Duration::from_secs(5), futures::future::join_all(reads))
            .await
            .unwrap_or_else(|_| panic!("reads after cancel {i} are not kept waiting"));
        for seq in seqs {
            let seq = seq.unwrap_or_else(|e| panic!("read after cancel {i}: {e}"));
            assert_eq!(
                seq,
                (i + 1, i + 1),
                "read after cancel {i} sees the latest step"
            );
        }
    }
    assert!(cancelled > 0, "some reads were cancelled");
    eprintln!("{cancelled} of 120 reads cancelled");
}
