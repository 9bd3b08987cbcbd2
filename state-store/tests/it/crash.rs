//! A writer process killed with SIGKILL while it appends steps to a SQLite
//! file: on reopen, every step whose call returned `Ok` is there, no partial
//! step exists, and the state is the replay of the log.
//!
//! The writer is this test binary run again (`writer_appends_and_reports`
//! with `CRASH_WRITER_DB` set), so the test needs nothing but itself.

use crate::support;
use crate::support::states::Chat;
use state_core::{Message, State};
use state_store::Store;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

const DB_ENV: &str = "CRASH_WRITER_DB";

/// Appends steps to thread "crash" and prints each committed step number;
/// as a child (with `DB_ENV`) it writes until it is killed, otherwise it
/// writes a few steps and checks them.
#[tokio::test]
async fn writer_appends_and_reports() {
    let child_db = std::env::var(DB_ENV).ok();
    let dir = tempfile::tempdir().unwrap();
    let path = child_db
        .clone()
        .unwrap_or_else(|| dir.path().join("w.db").display().to_string());
    let limit = if child_db.is_some() { u64::MAX } else { 5 };
    let store = Store::sqlite(&path).await.unwrap();
    let mut t = store.thread::<Chat>("crash").await.unwrap();
    let start = t.seq();
    while t.seq() - start < limit {
        // A large body: the kill often lands inside the write.
        let text = format!("step {} {}", t.seq() + 1, "x".repeat(4000));
        let seq = t
            .apply(
                Chat::delta()
                    .messages(vec![Message::human(text)])
                    .transcript(vec![(t.seq() + 1).to_string()]),
            )
            .await
            .unwrap();
        println!("committed {seq}");
    }
    let again = Store::sqlite(&path)
        .await
        .unwrap()
        .thread::<Chat>("crash")
        .await
        .unwrap();
    assert_eq!(again.state(), t.state());
}

/// Runs the writer as a child process until it reports `after` more
/// commits, kills it with SIGKILL, and returns the last step it reported.
fn run_and_kill(db: &Path, after: u64, extra_delay: Duration) -> u64 {
    let mut child = support::child::only(module_path!(), "writer_appends_and_reports")
        .env(DB_ENV, db)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    let mut last = 0;
    let mut seen = 0;
    while seen < after {
        let line = lines.next().expect("the writer reports commits").unwrap();
        if let Some(seq) = line.strip_prefix("committed ") {
            last = seq.parse().unwrap();
            seen += 1;
        }
    }
    std::thread::sleep(extra_delay);
    child.kill().unwrap(); // SIGKILL on Unix
    child.wait().unwrap();
    // Commits reported before the kill landed.
    for line in lines.map_while(Result::ok) {
        if let Some(seq) = line.strip_prefix("committed ") {
            last = seq.parse().unwrap();
        }
    }
    last
}

#[tokio::test]
async fn killed_writer_loses_no_committed_step() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("crash.db");
    let mut reported = 0;
    for (round, delay_ms) in [0u64, 3, 7, 1].into_iter().enumerate() {
        let last = run_and_kill(&db, 10 + round as u64 * 5, Duration::from_millis(delay_ms));
        assert!(last > reported, "round {round}: the writer went on");
        reported = last;

        let store = Store::sqlite(&db).await.unwrap();
        let t = store.thread::<Chat>("crash").await.unwrap();
        // A step reported committed is there; at most the one being
        // reported when the kill landed is there beyond it.
        assert!(
            t.seq() == reported || t.seq() == reported + 1,
            "round {round}: reported {reported}, stored {}",
            t.seq()
        );
        reported = t.seq();
        // No partial step: every stored step decodes, numbers are dense,
        // and the state is their replay.
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
