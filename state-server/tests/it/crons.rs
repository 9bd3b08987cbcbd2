//! Crons: LangGraph's Python client drives every cron call against our
//! server on each backend (`tests/sdk/crons.py`), and two servers on one
//! database make each tick's run once.

use crate::agent_sdk::{Chat, run_script, server, sqlite_store};
use crate::support::{get, request, serve};
use state_store::Store;
use std::time::{Duration, Instant};

#[tokio::test]
async fn crons() {
    let addr = serve(server(Store::memory()).router::<Chat>()).await;
    run_script("crons.py", &format!("http://{addr}")).await;
}

#[tokio::test]
async fn crons_on_sqlite() {
    let (store, _dir) = sqlite_store().await;
    let addr = serve(server(store).router::<Chat>()).await;
    run_script("crons.py", &format!("http://{addr}")).await;
}

#[tokio::test]
async fn crons_on_postgres() {
    let db = crate::support::postgres::shared().fresh_database("sdk_crons");
    let store = Store::postgres(&db.url).await.expect("a PostgreSQL store");
    let addr = serve(server(store).router::<Chat>()).await;
    run_script("crons.py", &format!("http://{addr}")).await;
}

/// Two servers on one database, each with its workers and its scheduler:
/// a cron firing every second makes one run a tick, not one per server.
#[tokio::test]
async fn two_servers_make_each_ticks_run_once() {
    let db = crate::support::postgres::shared().fresh_database("crons_twice");
    let one = Store::postgres(&db.url).await.expect("a PostgreSQL store");
    let two = Store::postgres(&db.url).await.expect("a PostgreSQL store");
    let first = server(one);
    let second = server(two);
    let _workers = (first.start_workers(), second.start_workers());
    let addr = serve(first.router::<Chat>()).await;
    let json = [("Content-Type", "application/json")];
    let thread = request(addr, "POST", "/threads", &json, b"{}").await.json();
    let thread = thread["thread_id"].as_str().expect("a thread").to_owned();
    let body = br#"{"assistant_id": "agent", "schedule": "* * * * * *",
        "input": {"messages": [{"role": "user", "content": "ping"}]}}"#;
    let started = Instant::now();
    let cron = request(
        addr,
        "POST",
        &format!("/threads/{thread}/runs/crons"),
        &json,
        body,
    )
    .await;
    assert_eq!(cron.status, 200, "{:?}", cron.json());
    let cron_id = cron.json()["cron_id"].as_str().expect("an id").to_owned();
    tokio::time::sleep(Duration::from_secs(4)).await;
    let deleted = request(addr, "DELETE", &format!("/runs/crons/{cron_id}"), &[], b"").await;
    let elapsed = started.elapsed();
    assert_eq!(deleted.status, 204);
    let runs = get(addr, &format!("/threads/{thread}/runs?limit=100"))
        .await
        .json();
    let runs = runs.as_array().expect("a list").len();
    // One a second at most (and the one a tick may have made as the
    // delete came); twice that if each server made each tick's.
    let ticks = elapsed.as_secs() as usize + 1;
    assert!(
        (2..=ticks).contains(&runs),
        "{runs} runs in {elapsed:?} (one a tick expected)"
    );
}
