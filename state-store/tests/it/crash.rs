//! A writer process killed with SIGKILL while it appends steps to a SQLite
//! file: on reopen, every step whose call returned `Ok` is there, no partial
//! step exists, and the state is the replay of the log. Under
//! `Durability::Async` (a step answered before its commit), every step the
//! writer saw durable is there, and the thread is a prefix of what it
//! wrote, never with a gap.
//!
//! The writer is this test binary run again (`writer_appends_and_reports`
//! with `CRASH_WRITER_DB` set), so the test needs nothing but itself.

use crate::support;
use crate::support::states::Chat;
use state_core::{Message, State};
use state_store::{Durability, Store};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

const DB_ENV: &str = "CRASH_WRITER_DB";
/// Set: the writer writes under `Durability::Async`.
const ASYNC_ENV: &str = "CRASH_WRITER_ASYNC";

/// Appends steps to thread "crash", printing `written N` when an apply
/// returns and `committed N` once step N is durable (at once, or under
/// `ASYNC_ENV` after a `sync` every third step); as a child (with
/// `DB_ENV`) it writes until it is killed, otherwise it writes a few steps
/// and checks them.
#[tokio::test]
async fn writer_appends_and_reports() {
    let child_db = std::env::var(DB_ENV).ok();
    let dir = tempfile::tempdir().unwrap();
    let path = child_db
        .clone()
        .unwrap_or_else(|| dir.path().join("w.db").display().to_string());
    let limit = if child_db.is_some() { u64::MAX } else { 7 };
    let eager = std::env::var_os(ASYNC_ENV).is_some();
    let store = Store::sqlite(&path).await.unwrap();
    let mut t = store.thread::<Chat>("crash").await.unwrap();
    if eager {
        t.set_durability(Durability::Async);
    }
    let start = t.seq();
    while t.seq() - start < limit {
        // A large body: the kill often lands inside the write.
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
        if !eager || seq % 3 == 0 {
            t.sync().await.unwrap();
            println!("committed {seq}");
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

/// Runs the writer as a child process until it reports `after` more
/// commits, kills it with SIGKILL, and returns the last steps it reported
/// written and committed.
fn run_and_kill(db: &Path, eager: bool, after: u64, extra_delay: Duration) -> (u64, u64) {
    let mut command = support::child::only(module_path!(), "writer_appends_and_reports");
    command.env(DB_ENV, db);
    if eager {
        command.env(ASYNC_ENV, "1");
    }
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    let (mut written, mut committed, mut seen) = (0, 0, 0);
    let mut read = |line: &str, seen: &mut u64| {
        if let Some(seq) = line.strip_prefix("written ") {
            written = seq.parse().unwrap();
        } else if let Some(seq) = line.strip_prefix("committed ") {
            committed = seq.parse().unwrap();
            *seen += 1;
        }
    };
    while seen < after {
        let line = lines.next().expect("the writer reports commits").unwrap();
        read(&line, &mut seen);
    }
    std::thread::sleep(extra_delay);
    child.kill().unwrap(); // SIGKILL on Unix
    child.wait().unwrap();
    // Commits reported before the kill landed.
    for line in lines.map_while(Result::ok) {
        read(&line, &mut seen);
    }
    (written, committed)
}

/// Kills the writer four times, at different moments; after each, the
/// thread holds every step reported committed, at most the one in flight
/// beyond what was reported written, and is a prefix: numbers dense, no
/// partial step, the state their replay.
async fn killed_writer_rounds(eager: bool) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("crash.db");
    let mut reported = 0;
    for (round, delay_ms) in [0u64, 3, 7, 1].into_iter().enumerate() {
        let after = if eager {
            4 + round as u64
        } else {
            10 + round as u64 * 5
        };
        let (written, committed) = run_and_kill(&db, eager, after, Duration::from_millis(delay_ms));
        assert!(committed > reported, "round {round}: the writer went on");

        let store = Store::sqlite(&db).await.unwrap();
        let t = store.thread::<Chat>("crash").await.unwrap();
        assert!(
            committed <= t.seq() && t.seq() <= written + 1,
            "round {round}: written {written}, committed {committed}, stored {}",
            t.seq()
        );
        reported = t.seq();
        let history = store.history("crash", ..).await.unwrap();
        let seqs: Vec<u64> = history.iter().map(|s| s.seq).collect();
        assert_eq!(seqs, (1..=t.seq()).collect::<Vec<_>>());
        let expected: Vec<String> = (1..=t.seq()).map(|n| n.to_string()).collect();
        assert_eq!(t.state().transcript, expected);
        assert_eq!(t.state().messages.len() as u64, t.seq());
        let mut replayed = Chat::default();
        for step in history {
            replayed.apply_json(step.body).unwrap();
        }
        assert_eq!(&replayed, t.state());
    }
}

#[tokio::test]
async fn killed_writer_loses_no_committed_step() {
    killed_writer_rounds(false).await;
}

#[tokio::test]
async fn a_killed_async_writer_leaves_a_prefix_with_every_durable_step() {
    killed_writer_rounds(true).await;
}
