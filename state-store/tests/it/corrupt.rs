//! Damaged rows in a real SQLite file: every one is a clear error naming
//! the thread and the step (or snapshot), never a panic or a half-loaded
//! state; data written by a newer version is refused.

use crate::support::states::Chat;
use sqlx::SqlitePool;
use state_core::{Message, State};
use state_store::{SnapshotPolicy, Store, StoreError};
use std::num::NonZeroU64;
use std::path::{Path, PathBuf};

/// A SQLite store with thread "t" at step 3, and a raw pool on the file.
async fn three_steps(dir: &Path) -> (PathBuf, SqlitePool) {
    let path = dir.join("store.db");
    let store = Store::sqlite(&path).await.unwrap();
    let mut t = store.thread::<Chat>("t").await.unwrap();
    t.apply(Chat::delta().messages(vec![Message::human("hi")]))
        .await
        .unwrap();
    t.apply(Chat::delta().transcript(vec!["two".to_string()]))
        .await
        .unwrap();
    t.apply(Chat::delta().next("three")).await.unwrap();
    let raw = SqlitePool::connect(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    (path, raw)
}

async fn exec(pool: &SqlitePool, sql: &str) {
    sqlx::query(sql).execute(pool).await.unwrap();
}

/// Opens thread "t" expecting an error; checks it names thread and step.
async fn open_err(path: &Path) -> StoreError {
    let store = Store::sqlite(path).await.unwrap();
    store.thread::<Chat>("t").await.unwrap_err()
}

#[tokio::test]
async fn step_body_that_is_not_json() {
    let dir = tempfile::tempdir().unwrap();
    let (path, raw) = three_steps(dir.path()).await;
    exec(
        &raw,
        "UPDATE state_store_steps SET body = '{\"transcript\": [' WHERE seq = 2",
    )
    .await;
    let err = open_err(&path).await;
    let text = err.to_string();
    assert!(
        matches!(
            err,
            StoreError::Corrupt {
                seq: 2,
                what: "step",
                ..
            }
        ),
        "{text}"
    );
    assert!(
        text.starts_with("thread \"t\", step 2: stored data is corrupt: body is not JSON"),
        "{text}"
    );
}

#[tokio::test]
async fn step_with_an_unknown_field() {
    let dir = tempfile::tempdir().unwrap();
    let (path, raw) = three_steps(dir.path()).await;
    exec(
        &raw,
        "UPDATE state_store_steps SET body = '{\"nxt\": \"x\"}' WHERE seq = 3",
    )
    .await;
    let err = open_err(&path).await;
    let text = err.to_string();
    assert!(matches!(err, StoreError::Corrupt { seq: 3, .. }), "{text}");
    assert!(
        text.contains("has no field `nxt`; did you mean `next`?"),
        "did-you-mean kept: {text}"
    );
}

#[tokio::test]
async fn step_with_a_value_of_the_wrong_type() {
    let dir = tempfile::tempdir().unwrap();
    let (path, raw) = three_steps(dir.path()).await;
    exec(
        &raw,
        "UPDATE state_store_steps SET body = '{\"transcript\": 7}' WHERE seq = 2",
    )
    .await;
    let text = open_err(&path).await.to_string();
    assert!(
        text.contains("step 2") && text.contains("transcript"),
        "{text}"
    );
}

#[tokio::test]
async fn step_of_an_unknown_kind_and_bad_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let (path, raw) = three_steps(dir.path()).await;
    exec(
        &raw,
        "UPDATE state_store_steps SET kind = 'teleport' WHERE seq = 1",
    )
    .await;
    let text = open_err(&path).await.to_string();
    assert!(
        text.contains("step 1") && text.contains("unknown step kind \"teleport\""),
        "{text}"
    );

    exec(
        &raw,
        "UPDATE state_store_steps SET kind = 'apply', metadata = 'oops' WHERE seq = 1",
    )
    .await;
    let store = Store::sqlite(&path).await.unwrap();
    // Loading ignores metadata; history reports it.
    store.thread::<Chat>("t").await.unwrap();
    let text = store.history("t", ..).await.unwrap_err().to_string();
    assert!(
        text.contains("step 1") && text.contains("metadata is not JSON"),
        "{text}"
    );
}

#[tokio::test]
async fn a_gap_in_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let (path, raw) = three_steps(dir.path()).await;
    exec(&raw, "DELETE FROM state_store_steps WHERE seq = 2").await;
    let err = open_err(&path).await;
    assert!(matches!(err, StoreError::Corrupt { seq: 2, .. }), "{err}");
    assert!(err.to_string().contains("missing from the log"), "{err}");
}

#[tokio::test]
async fn a_corrupt_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let store = Store::sqlite(&path)
        .await
        .unwrap()
        .with_snapshot_policy(SnapshotPolicy::every(NonZeroU64::new(2).unwrap()));
    let mut t = store.thread::<Chat>("t").await.unwrap();
    for i in 0..3 {
        t.apply(Chat::delta().transcript(vec![i.to_string()]))
            .await
            .unwrap();
    }
    let raw = SqlitePool::connect(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    exec(
        &raw,
        "UPDATE state_store_snapshots SET state = '{\"budget\": \"lots\"}' WHERE seq = 2",
    )
    .await;
    let err = store.thread::<Chat>("t").await.unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(
            err,
            StoreError::Corrupt {
                what: "snapshot",
                seq: 2,
                ..
            }
        ),
        "{text}"
    );
    assert!(text.contains("budget"), "{text}");
}

#[tokio::test]
async fn data_from_a_newer_version_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (path, raw) = three_steps(dir.path()).await;
    exec(
        &raw,
        "UPDATE state_store_steps SET state_version = 2 WHERE seq = 3",
    )
    .await;
    let err = open_err(&path).await;
    assert!(
        matches!(
            err,
            StoreError::TooNew {
                found: 2,
                known: 1,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("thread \"t\", step 3"), "{err}");

    exec(&raw, "UPDATE state_store_schema SET version = 99").await;
    let err = Store::sqlite(&path).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "the database's state-store tables: written by version 99, but this program knows versions up to 10; upgrade it"
    );
}

#[tokio::test]
async fn a_pending_step_whose_body_is_not_an_object() {
    let dir = tempfile::tempdir().unwrap();
    let (path, raw) = three_steps(dir.path()).await;
    let store = Store::sqlite(&path).await.unwrap();
    let mut t = store.thread::<Chat>("t").await.unwrap();
    t.log_pending(serde_json::json!({"interrupts": []}))
        .await
        .unwrap();
    exec(
        &raw,
        "UPDATE state_store_steps SET body = '[\"interrupts\"]' WHERE seq = 4",
    )
    .await;
    let err = open_err(&path).await;
    let text = err.to_string();
    assert!(
        matches!(
            err,
            StoreError::Corrupt {
                seq: 4,
                what: "step",
                ..
            }
        ),
        "{text}"
    );
    assert_eq!(
        text,
        "thread \"t\", step 4: stored data is corrupt: a pending step's body must be a JSON object, got an array"
    );
    // Time travel before it still works; at it, it fails the same way.
    let at_three: Chat = store.state_at("t", 3).await.unwrap();
    assert_eq!(at_three.next, "three");
    let err = store.state_at::<Chat>("t", 4).await.unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { seq: 4, .. }), "{err}");
}

#[tokio::test]
async fn a_refused_open_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (path, raw) = three_steps(dir.path()).await;
    let before: Vec<(i64, String)> =
        sqlx::query_as("SELECT seq, body FROM state_store_steps ORDER BY seq")
            .fetch_all(&raw)
            .await
            .unwrap();
    exec(
        &raw,
        "UPDATE state_store_steps SET body = 'null' WHERE seq = 3",
    )
    .await;
    open_err(&path).await;
    exec(
        &raw,
        &format!(
            "UPDATE state_store_steps SET body = '{}' WHERE seq = 3",
            before[2].1
        ),
    )
    .await;
    let after: Vec<(i64, String)> =
        sqlx::query_as("SELECT seq, body FROM state_store_steps ORDER BY seq")
            .fetch_all(&raw)
            .await
            .unwrap();
    assert_eq!(before, after);
    let store = Store::sqlite(&path).await.unwrap();
    assert_eq!(store.thread::<Chat>("t").await.unwrap().seq(), 3);
}
