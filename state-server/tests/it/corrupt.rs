//! Damaged rows in a real SQLite file, written straight into it with sqlx:
//! a state or a page that cannot be rebuilt is a 500 whose message names
//! the row; what does not need the row is still served; nothing panics.

use crate::support::{Notes, get, serve, thread_with_steps};
use serde_json::json;
use sqlx::SqlitePool;
use state_core::AgentState;
use state_store::{SnapshotPolicy, Store};
use std::net::SocketAddr;
use std::num::NonZeroU64;
use std::path::Path;

/// Thread "t" with 3 steps in a SQLite file (no snapshot but the ones
/// `policy` takes), served; and a raw pool on the file.
async fn served(dir: &Path, policy: SnapshotPolicy) -> (SocketAddr, SqlitePool) {
    let path = dir.join("store.db");
    let store = Store::sqlite(&path)
        .await
        .unwrap()
        .with_snapshot_policy(policy);
    thread_with_steps(&store, "t", 3).await;
    let raw = SqlitePool::connect(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    let addr = serve(state_server::router::<Notes>(store)).await;
    (addr, raw)
}

async fn exec(pool: &SqlitePool, sql: &str) {
    sqlx::query(sql).execute(pool).await.unwrap();
}

#[tokio::test]
async fn a_step_body_that_is_not_json() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, raw) = served(dir.path(), SnapshotPolicy::never()).await;
    exec(
        &raw,
        "UPDATE state_store_steps SET body = '{\"log\": [' WHERE seq = 2",
    )
    .await;

    let message = get(addr, "/threads/t/state").await.error(500, "corrupt");
    assert!(
        message.starts_with("thread \"t\", step 2: stored data is corrupt: body is not JSON"),
        "{message}"
    );
    // The history through that row names it too.
    let message = get(addr, "/threads/t/history").await.error(500, "corrupt");
    assert!(message.starts_with("thread \"t\", step 2:"), "{message}");
    // Before it, and around it, all is served.
    let before = get(addr, "/threads/t/state?seq=1").await;
    assert_eq!(
        before.json(),
        json!({"seq": 1, "values": {"log": ["1"], "title": ""}})
    );
    let page = get(addr, "/threads/t/history?limit=1").await;
    assert_eq!(page.json()[0]["seq"], 1);
    let after = get(addr, "/threads/t/history?after=2").await;
    assert_eq!(after.json()[0]["seq"], 3);
    assert_eq!(get(addr, "/threads").await.json()[0]["id"], "t");
    let message = get(addr, "/threads/t/state?seq=2")
        .await
        .error(500, "corrupt");
    assert!(message.contains("step 2"), "{message}");
}

#[tokio::test]
async fn a_step_the_reducers_refuse() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, raw) = served(dir.path(), SnapshotPolicy::never()).await;
    exec(
        &raw,
        "UPDATE state_store_steps SET body = '{\"lgo\": [\"x\"]}' WHERE seq = 3",
    )
    .await;
    // Valid JSON: the history shows it as stored...
    let history = get(addr, "/threads/t/history?after=2").await;
    assert_eq!(history.json()[0]["body"], json!({"lgo": ["x"]}));
    // ...but no state can be rebuilt through it.
    let message = get(addr, "/threads/t/state").await.error(500, "corrupt");
    assert!(
        message.starts_with("thread \"t\", step 3: stored data is corrupt"),
        "{message}"
    );
    assert!(message.contains("lgo"), "{message}");
    assert_eq!(get(addr, "/threads/t/state?seq=2").await.status, 200);
}

#[tokio::test]
async fn an_unknown_step_kind_and_bad_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, raw) = served(dir.path(), SnapshotPolicy::never()).await;
    exec(
        &raw,
        "UPDATE state_store_steps SET kind = 'teleport' WHERE seq = 1",
    )
    .await;
    exec(
        &raw,
        "UPDATE state_store_steps SET metadata = 'oops' WHERE seq = 3",
    )
    .await;
    let message = get(addr, "/threads/t/state").await.error(500, "corrupt");
    assert!(
        message.contains("step 1") && message.contains("teleport"),
        "{message}"
    );
    let message = get(addr, "/threads/t/history?after=2")
        .await
        .error(500, "corrupt");
    assert!(
        message.contains("step 3") && message.contains("metadata"),
        "{message}"
    );
    // Step 0 needs no row.
    assert_eq!(get(addr, "/threads/t/state?seq=0").await.status, 200);
}

#[tokio::test]
async fn a_corrupt_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let every_two = SnapshotPolicy::every(NonZeroU64::new(2).unwrap());
    let (addr, raw) = served(dir.path(), every_two).await;
    exec(
        &raw,
        "UPDATE state_store_snapshots SET state = '{\"log\": 7}' WHERE seq = 2",
    )
    .await;
    let message = get(addr, "/threads/t/state").await.error(500, "corrupt");
    assert!(
        message.starts_with("thread \"t\", snapshot 2: stored data is corrupt"),
        "{message}"
    );
    // The log itself is fine.
    assert_eq!(
        get(addr, "/threads/t/history")
            .await
            .json()
            .as_array()
            .unwrap()
            .len(),
        3
    );
}

#[tokio::test]
async fn a_step_from_a_newer_program() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, raw) = served(dir.path(), SnapshotPolicy::never()).await;
    exec(
        &raw,
        "UPDATE state_store_steps SET state_version = 99 WHERE seq = 3",
    )
    .await;
    let message = get(addr, "/threads/t/state").await.error(500, "too_new");
    assert!(
        message.contains("step 3") && message.contains("99"),
        "{message}"
    );
}

/// A state of another shape than the threads hold.
#[derive(AgentState, Debug, Clone, PartialEq)]
struct Other {
    count: u64,
}

#[tokio::test]
async fn a_router_typed_with_the_wrong_state() {
    let store = Store::memory();
    thread_with_steps(&store, "t", 2).await;
    let addr = serve(state_server::router::<Other>(store)).await;
    let message = get(addr, "/threads/t/state").await.error(500, "corrupt");
    assert!(
        message.starts_with("thread \"t\", step 1: stored data is corrupt"),
        "{message}"
    );
    // The initial state is the router's own type's.
    let initial = get(addr, "/threads/t/state?seq=0").await;
    assert_eq!(initial.json(), json!({"seq": 0, "values": {"count": 0}}));
}

/// The inspector's pages over damaged rows: a step that is not JSON is a
/// 500 page naming it; a state the reducers refuse is said in the state
/// panel while the steps are shown; bodies of unexpected shapes are shown
/// as they are.
#[tokio::test]
async fn the_inspector_over_damaged_rows() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, raw) = served(dir.path(), SnapshotPolicy::never()).await;
    let page = |target: &'static str| async move {
        let response = get(addr, target).await;
        (response.status, String::from_utf8(response.body).unwrap())
    };

    // Not JSON: the window through it cannot be read; the page says which.
    exec(
        &raw,
        "UPDATE state_store_steps SET body = '{\"log\": [' WHERE seq = 2",
    )
    .await;
    let (status, html) = page("/inspect/t").await;
    assert_eq!(status, 500, "{html}");
    assert!(
        html.contains("thread &quot;t&quot;, step 2: stored data is corrupt"),
        "{html}"
    );
    assert!(page("/").await.1.contains(r#"data-thread="t""#));

    // Refused by the reducers: the steps are shown, the state says why.
    exec(
        &raw,
        "UPDATE state_store_steps SET body = '{\"lgo\": [\"x\"]}' WHERE seq = 2",
    )
    .await;
    let (status, html) = page("/inspect/t").await;
    assert_eq!(status, 200, "{html}");
    assert!(
        html.contains(r#"data-field="lgo""#),
        "the step as stored: {html}"
    );
    assert!(html.contains(r#"<p class="error" role="alert">"#), "{html}");
    assert!(html.contains("step 2"), "{html}");

    // Shapes the inspector does not expect: shown as JSON, no panic.
    exec(&raw, "UPDATE state_store_steps SET kind = 'superstep', body = '{\"not\": \"a list\"}' WHERE seq = 1").await;
    exec(&raw, "UPDATE state_store_steps SET kind = 'pending', body = '{\"interrupts\": 7, \"writes\": [{\"task\": 1}]}' WHERE seq = 3").await;
    let (status, html) = page("/inspect/t?seq=1").await;
    assert_eq!(status, 200, "{html}");
    assert!(html.contains("a list"), "{html}");
    let (status, html) = page("/inspect/t/live?after=0").await;
    assert_eq!(status, 200, "{html}");
}
