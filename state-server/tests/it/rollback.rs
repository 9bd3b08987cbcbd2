//! Cancel with `action=rollback` and `multitask_strategy: "rollback"` over
//! real HTTP, on memory, SQLite and PostgreSQL (and, on PostgreSQL, with
//! the run's worker in another process): the run stops, is deleted (404)
//! with its events and the steps it wrote, and the thread's state and
//! history are as before it; a client joined to the run sees its stream
//! end, a watcher of the thread's steps is told of the rewind, and the
//! thread goes on from where it was.

use super::workers::{Steps, Two, joined, post, steps, wait_for_file, worker_process};
use crate::support::{self, request, serve};
use futures::StreamExt;
use serde_json::{Value, json};
use state_server::Server;
use state_store::{Store, StoreError};
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;
use tokio::time::timeout;

const WAIT: Duration = Duration::from_secs(30);

/// `steps` (runs at once) and `hangs` (writes step `one`, then hangs in
/// `two`, after writing the mark file) on `store`, its workers started
/// unless `workers` is 0.
async fn server(store: &Store, mark: &Path, workers: usize) -> SocketAddr {
    let server = Server::new(store.clone())
        .workers(workers)
        .assistant("steps", steps(Two::Quick))
        .assistant("hangs", steps(Two::Hangs(mark.to_owned())));
    let addr = serve(server.router::<Steps>()).await;
    if workers > 0 {
        std::mem::forget(server.start_workers());
    }
    addr
}

async fn get_json(addr: SocketAddr, path: &str) -> (u16, Value) {
    let response = request(addr, "GET", path, &[], b"").await;
    let body = serde_json::from_slice(&response.body).unwrap_or(Value::Null);
    (response.status, body)
}

/// A run of `assistant` on `thread`, with `extra` fields; its id.
async fn run(addr: SocketAddr, thread: &str, assistant: &str, extra: Value) -> String {
    let mut body = json!({"assistant_id": assistant, "input": {}});
    if let (Value::Object(body), Value::Object(extra)) = (&mut body, extra) {
        body.extend(extra);
    }
    let run = post(addr, &format!("/threads/{thread}/runs"), body).await;
    run["run_id"].as_str().expect("a run id").to_owned()
}

/// Starts a `hangs` run (with `extra`) and waits until it hangs in `two`,
/// its step `one` committed.
async fn hanging_run(addr: SocketAddr, thread: &str, mark: &Path, extra: Value) -> String {
    let _ = std::fs::remove_file(mark);
    let id = run(addr, thread, "hangs", extra).await;
    wait_for_file(mark, "the run in two").await;
    id
}

/// The thread's state and history (the first 20 states).
async fn snapshot(addr: SocketAddr, thread: &str) -> (Value, Value) {
    let (status, state) = get_json(addr, &format!("/threads/{thread}/state")).await;
    assert_eq!(status, 200, "{state}");
    let (status, history) = get_json(addr, &format!("/threads/{thread}/history?limit=20")).await;
    assert_eq!(status, 200, "{history}");
    (state, history)
}

/// Cancels `run` with `action=rollback&wait=1`: its answer, the thread's
/// values once rolled back.
async fn roll_back(addr: SocketAddr, thread: &str, run: &str) -> Value {
    let path = format!("/threads/{thread}/runs/{run}/cancel?wait=1&action=rollback");
    let response = timeout(WAIT, request(addr, "POST", &path, &[], b""))
        .await
        .expect("the rollback ends");
    assert_eq!(
        response.status,
        200,
        "{}",
        String::from_utf8_lossy(&response.body)
    );
    response.json()
}

/// `GET path` on a connection of its own, once the server has answered
/// 200 and sent its headers (the stream is open).
async fn open(addr: SocketAddr, path: &str) -> tokio::net::TcpStream {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!("GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n");
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut seen = Vec::new();
    while !seen.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        let read = timeout(WAIT, stream.read(&mut byte))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(read, 1, "closed early: {}", String::from_utf8_lossy(&seen));
        seen.push(byte[0]);
    }
    let seen = String::from_utf8_lossy(&seen);
    assert!(seen.starts_with("HTTP/1.1 200"), "{seen}");
    stream
}

/// What an open stream sends until it ends (chunked framing and all).
async fn rest(mut stream: tokio::net::TcpStream) -> String {
    use tokio::io::AsyncReadExt;
    let mut body = Vec::new();
    timeout(WAIT, stream.read_to_end(&mut body))
        .await
        .expect("the stream ends")
        .unwrap();
    String::from_utf8_lossy(&body).into_owned()
}

async fn the_run_is_gone(addr: SocketAddr, thread: &str, run: &str) {
    let (status, body) = get_json(addr, &format!("/threads/{thread}/runs/{run}")).await;
    assert_eq!(status, 404, "{body}");
}

async fn cancel_rolls_back(store: Store) {
    let dir = tempfile::tempdir().unwrap();
    let mark = dir.path().join("in-two");
    let addr = server(&store, &mark, 2).await;
    let thread = post(addr, "/threads", json!({})).await["thread_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let first = run(addr, &thread, "steps", json!({})).await;
    let values = joined(addr, &thread, &first).await;
    assert_eq!(values["log"], json!(["one", "two", "three"]));
    let before = snapshot(addr, &thread).await;
    let head = store.thread_info(&thread).await.unwrap().seq;

    let doomed = hanging_run(addr, &thread, &mark, json!({})).await;
    // Watching: a client joined to the run, a watcher of the thread's
    // steps that has read the run's step `one`.
    let client = open(addr, &format!("/threads/{thread}/runs/{doomed}/stream")).await;
    // The inspector's page follows the thread's steps too.
    let inspector = open(addr, &format!("/inspect/{thread}/events?after={head}")).await;
    let mut steps = store.watch(&thread, head);
    let one = timeout(WAIT, steps.next()).await.unwrap().unwrap().unwrap();
    assert_eq!(one.seq, head + 1);

    let answer = roll_back(addr, &thread, &doomed).await;
    assert_eq!(answer, before.0["values"], "the values as they were");
    the_run_is_gone(addr, &thread, &doomed).await;
    assert!(store.run_events(&doomed, 0, 10).await.unwrap().is_empty());
    assert_eq!(
        snapshot(addr, &thread).await,
        before,
        "state and history as before"
    );
    let (_, record) = get_json(addr, &format!("/threads/{thread}")).await;
    assert_eq!(record["status"], "idle", "{record}");
    let (_, runs) = get_json(addr, &format!("/threads/{thread}/runs")).await;
    let ids: Vec<&str> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [first.as_str()]);
    let joined_stream = rest(client).await;
    assert!(joined_stream.contains("event: metadata"), "{joined_stream}");
    let page = rest(inspector).await;
    assert!(
        page.contains(&format!("event: step\nid: {}\n", head + 1)),
        "{page}"
    );
    assert!(
        page.contains(&format!(
            "event: end\ndata: {{\"reason\":\"rewound\",\"seq\":{head}}}"
        )),
        "{page}"
    );
    // (After the run's other steps it had read already.)
    let err = loop {
        match timeout(WAIT, steps.next()).await.unwrap().unwrap() {
            Ok(step) => assert!(step.seq > head + 1, "{step:?}"),
            Err(err) => break err,
        }
    };
    assert!(
        matches!(err, StoreError::ThreadRewound { seq, .. } if seq == head),
        "{err}"
    );

    // The thread goes on from where it was.
    let again = run(addr, &thread, "steps", json!({})).await;
    let values = joined(addr, &thread, &again).await;
    assert_eq!(
        values["log"],
        json!(["one", "two", "three", "one", "two", "three"])
    );

    // multitask_strategy "rollback": the run in flight is rolled back, the
    // new one runs on the thread as it was.
    let before = snapshot(addr, &thread).await;
    let doomed = hanging_run(addr, &thread, &mark, json!({})).await;
    let next = run(
        addr,
        &thread,
        "steps",
        json!({"multitask_strategy": "rollback"}),
    )
    .await;
    let values = timeout(WAIT, joined(addr, &thread, &next)).await.unwrap();
    assert_eq!(values["log"].as_array().unwrap().len(), 9, "{values}");
    the_run_is_gone(addr, &thread, &doomed).await;
    let (_, history) = snapshot(addr, &thread).await;
    let history = history.as_array().unwrap();
    let old = before.1.as_array().unwrap();
    assert_eq!(
        &history[history.len() - old.len()..],
        old.as_slice(),
        "the old history stays"
    );

    // A pending run (due later) rolled back: deleted at once.
    let later = run(addr, &thread, "steps", json!({"after_seconds": 60})).await;
    let path = format!("/threads/{thread}/runs/{later}/cancel?action=rollback");
    assert_eq!(request(addr, "POST", &path, &[], b"").await.status, 202);
    the_run_is_gone(addr, &thread, &later).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_memory() {
    cancel_rolls_back(Store::memory()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::sqlite(dir.path().join("runs.db")).await.unwrap();
    cancel_rolls_back(store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres() {
    let db = support::postgres::shared().fresh_database("rollback");
    cancel_rolls_back(Store::postgres(&db.url).await.unwrap()).await;
}

/// On PostgreSQL, the API in this process and the run's worker in
/// another: the cancel reaches the worker, which stops the graph and
/// rolls back; the API answers once it has.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_worker_in_another_process() {
    let db = support::postgres::shared().fresh_database("rollback_remote");
    let store = Store::postgres(&db.url).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mark = dir.path().join("in-two");
    // This process serves the API only; the worker process's `steps` hangs.
    let addr = server(&store, &mark, 0).await;
    let _worker = worker_process(&db.url, Some(&mark));
    let created = post(addr, "/threads", json!({"metadata": {"graph_id": "steps"}})).await;
    let thread = created["thread_id"].as_str().unwrap().to_owned();
    let update = json!({"values": {"log": ["before"]}, "as_node": "three"});
    post(addr, &format!("/threads/{thread}/state"), update).await;
    let before = snapshot(addr, &thread).await;
    let doomed = run(addr, &thread, "steps", json!({})).await;
    wait_for_file(&mark, "the worker process in two").await;
    let during = store.thread_info(&thread).await.unwrap().seq;
    assert!(during >= 2, "step one is in: {during}");

    let answer = roll_back(addr, &thread, &doomed).await;
    assert_eq!(answer, json!({"log": ["before"]}));
    the_run_is_gone(addr, &thread, &doomed).await;
    assert_eq!(snapshot(addr, &thread).await, before);
    assert_eq!(store.thread_info(&thread).await.unwrap().seq, 1);
}

/// On PostgreSQL, a rollback asked of a worker process that died (SIGKILL)
/// mid-run: the worker that takes the run over rolls it back before
/// anything else, and the cancel that waited answers then.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn asked_of_a_dead_worker_it_is_done_by_the_next() {
    let db = support::postgres::shared().fresh_database("rollback_takeover");
    let store = Store::postgres(&db.url).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mark = dir.path().join("in-two");
    let addr = server(&store, &mark, 0).await;
    let mut doomed_worker = worker_process(&db.url, Some(&mark));
    let created = post(addr, "/threads", json!({"metadata": {"graph_id": "steps"}})).await;
    let thread = created["thread_id"].as_str().unwrap().to_owned();
    let update = json!({"values": {"log": ["before"]}, "as_node": "three"});
    post(addr, &format!("/threads/{thread}/state"), update).await;
    let before = snapshot(addr, &thread).await;
    let doomed = run(addr, &thread, "steps", json!({})).await;
    wait_for_file(&mark, "the worker process in two").await;
    doomed_worker.0.kill().expect("kill the worker");
    doomed_worker.0.wait().expect("reap it");
    // The request is recorded on the run; nobody acts on it yet.
    let (t, r) = (thread.clone(), doomed.clone());
    let cancel = tokio::spawn(async move { roll_back(addr, &t, &r).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!cancel.is_finished(), "answered with no worker alive");
    let _rescuer = worker_process(&db.url, None);
    let answer = timeout(WAIT, cancel).await.expect("rolled back").unwrap();
    assert_eq!(answer, json!({"log": ["before"]}));
    the_run_is_gone(addr, &thread, &doomed).await;
    assert_eq!(snapshot(addr, &thread).await, before);
}
