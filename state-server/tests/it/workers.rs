//! The run workers: graceful shutdown (runs finish within the grace, or
//! are handed back and taken over by another worker), and on PostgreSQL
//! worker processes apart from the API process, one killed with SIGKILL
//! mid-run and another taking the run over from its last committed step:
//! every node's write applied once.

use crate::support::{self, request, serve};
use serde_json::{Value, json};
use state_core::{AgentState, State};
use state_graph::{CompiledGraph, END, NodeError, START, StateGraph};
use state_server::Server;
use state_store::{RunStatus, Store};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Steps {
    /// One entry per node run: a node run twice shows twice.
    #[reducer(append)]
    pub log: Vec<String>,
}

/// How node `two` behaves in a process.
#[derive(Clone)]
pub(crate) enum Two {
    /// Runs at once.
    Quick,
    /// Takes this long.
    Slow(Duration),
    /// Writes the mark file (step `one` is committed by then), then
    /// never ends: the worker must be stopped around it.
    Hangs(PathBuf),
}

/// `one` → `two` → `three`, each appending its name.
pub(crate) fn steps(two: Two) -> CompiledGraph<Steps> {
    let mut g = StateGraph::<Steps>::new();
    g.add_node("one", |_: &Steps| Steps::delta().log(vec!["one".into()]));
    g.add_node("two", move |_: Arc<Steps>| {
        let two = two.clone();
        async move {
            match two {
                Two::Quick => {}
                Two::Slow(time) => tokio::time::sleep(time).await,
                Two::Hangs(mark) => {
                    std::fs::write(&mark, b"in two").expect("write the mark");
                    std::future::pending::<()>().await;
                }
            }
            Ok::<_, NodeError>(Steps::delta().log(vec!["two".into()]))
        }
    });
    g.add_node("three", |_: &Steps| {
        Steps::delta().log(vec!["three".into()])
    });
    g.add_edge(START, "one");
    g.add_edge("one", "two");
    g.add_edge("two", "three");
    g.add_edge("three", END);
    g.compile().expect("the steps graph compiles")
}

/// POSTs `body` as JSON; the answer's JSON.
pub(crate) async fn post(addr: SocketAddr, path: &str, body: Value) -> Value {
    let response = support::post_json(addr, path, &body).await;
    assert!(
        response.status < 300,
        "POST {path}: {} {}",
        response.status,
        String::from_utf8_lossy(&response.body)
    );
    response.json()
}

/// A thread and a run of `steps` on it, created over HTTP.
async fn start_run(addr: SocketAddr) -> (String, String) {
    let thread = post(addr, "/threads", json!({})).await;
    let thread = thread["thread_id"]
        .as_str()
        .expect("a thread id")
        .to_owned();
    let run = post(
        addr,
        &format!("/threads/{thread}/runs"),
        json!({"assistant_id": "steps", "input": {}}),
    )
    .await;
    let run = run["run_id"].as_str().expect("a run id").to_owned();
    (thread, run)
}

/// Waits for `path` to exist.
pub(crate) async fn wait_for_file(path: &Path, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !path.exists() {
        assert!(Instant::now() < deadline, "{what}: no mark after 30 s");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The run's final values, by `join` (which waits for its end).
pub(crate) async fn joined(addr: SocketAddr, thread: &str, run: &str) -> Value {
    let response = request(
        addr,
        "GET",
        &format!("/threads/{thread}/runs/{run}/join"),
        &[],
        b"",
    )
    .await;
    assert_eq!(
        response.status,
        200,
        "{}",
        String::from_utf8_lossy(&response.body)
    );
    serde_json::from_str(String::from_utf8_lossy(&response.body).trim()).expect("the joined values")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shutdown_lets_the_runs_in_hand_finish() {
    let store = Store::memory();
    // A slow but finite node: the grace is long enough for it.
    let server = Server::new(store.clone())
        .workers(1)
        .assistant("steps", steps(Two::Slow(Duration::from_millis(300))));
    let addr = serve(server.router::<Steps>()).await;
    let workers = server.start_workers();
    let (thread, run) = start_run(addr).await;
    while store.get_run(&run, None).await.unwrap().unwrap().status != RunStatus::Running {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    workers.shutdown(Duration::from_secs(10)).await;
    let run = store.get_run(&run, None).await.unwrap().unwrap();
    assert_eq!(run.status, RunStatus::Success);
    let values = joined(addr, &thread, &run.run_id).await;
    assert_eq!(values["log"], json!(["one", "two", "three"]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_its_grace_a_run_is_handed_back_and_taken_over() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::sqlite(dir.path().join("runs.db")).await.unwrap();
    let mark = dir.path().join("in-two");
    // The first server's worker hangs in `two`; its routes serve on.
    let first = Server::new(store.clone())
        .workers(1)
        .assistant("steps", steps(Two::Hangs(mark.clone())));
    let addr = serve(first.router::<Steps>()).await;
    let workers = first.start_workers();
    let (thread, run) = start_run(addr).await;
    wait_for_file(&mark, "the first worker in two").await;
    let stopped = Instant::now();
    workers.shutdown(Duration::from_millis(200)).await;
    assert!(
        stopped.elapsed() < Duration::from_secs(5),
        "the shutdown waited {:?}",
        stopped.elapsed()
    );
    let handed_back = store.get_run(&run, None).await.unwrap().unwrap();
    assert_eq!(
        (handed_back.status, handed_back.attempt),
        (RunStatus::Pending, 1),
        "pending again, for another worker"
    );
    // Another server's worker takes it over, after step `one`.
    let second = Server::new(store.clone())
        .workers(1)
        .assistant("steps", steps(Two::Quick));
    let _workers = second.start_workers();
    let values = joined(addr, &thread, &run).await;
    assert_eq!(
        values["log"],
        json!(["one", "two", "three"]),
        "each node's write applied once"
    );
    let done = store.get_run(&run, None).await.unwrap().unwrap();
    assert_eq!((done.status, done.attempt), (RunStatus::Success, 2));
}

/// The environment that makes [`worker_child`] a worker process: the
/// database's URL.
const WORKER_DB: &str = "STATE_SERVER_WORKER_DB";
/// Where the worker process writes its mark when node `two` hangs (unset:
/// `two` runs at once).
const WORKER_MARK: &str = "STATE_SERVER_WORKER_MARK";

/// A worker process: serves no routes, runs the runs of the database
/// [`WORKER_DB`] names until it is killed. Without it (a normal test
/// run), returns at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_child() {
    let Ok(url) = std::env::var(WORKER_DB) else {
        return;
    };
    let two = match std::env::var_os(WORKER_MARK) {
        Some(mark) => Two::Hangs(mark.into()),
        None => Two::Quick,
    };
    let store = Store::postgres(&url).await.expect("the worker's database");
    let _workers = Server::new(store)
        .workers(2)
        .lease(Duration::from_millis(500))
        .assistant("steps", steps(two))
        .start_workers();
    eprintln!("worker ready");
    std::future::pending::<()>().await;
}

/// Kills the child when dropped, so that a failing test leaves none behind.
pub(crate) struct KillOnDrop(pub(crate) Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub(crate) fn worker_process(url: &str, mark: Option<&Path>) -> KillOnDrop {
    let mut command = support::child::only(module_path!(), "worker_child");
    command
        .env(WORKER_DB, url)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    match mark {
        Some(mark) => command.env(WORKER_MARK, mark),
        None => command.env_remove(WORKER_MARK),
    };
    KillOnDrop(command.spawn().expect("start a worker process"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_mid_run_is_taken_over_by_another_process() {
    let pg = support::postgres::shared();
    let db = pg.fresh_database("workers_sigkill");
    let store = Store::postgres(&db.url).await.unwrap();
    // This process serves the API only: the runs are the workers'.
    let api = Server::new(store.clone())
        .workers(0)
        .assistant("steps", steps(Two::Quick));
    let addr = serve(api.router::<Steps>()).await;
    let dir = tempfile::tempdir().unwrap();
    let mark = dir.path().join("in-two");
    let mut doomed = worker_process(&db.url, Some(&mark));
    let (thread, run) = start_run(addr).await;
    wait_for_file(&mark, "the first worker process in two").await;
    // SIGKILL: no shutdown, no release; its lease runs out.
    doomed.0.kill().expect("kill the worker");
    doomed.0.wait().expect("reap it");
    let taken = store.get_run(&run, None).await.unwrap().unwrap();
    assert_eq!(
        (taken.status, taken.attempt),
        (RunStatus::Running, 1),
        "the dead worker's claim still stands"
    );
    let _rescuer = worker_process(&db.url, None);
    let values = tokio::time::timeout(Duration::from_secs(60), joined(addr, &thread, &run))
        .await
        .expect("the run ends once taken over");
    assert_eq!(
        values["log"],
        json!(["one", "two", "three"]),
        "nothing committed lost, nothing applied twice"
    );
    let done = store.get_run(&run, None).await.unwrap().unwrap();
    assert_eq!((done.status, done.attempt), (RunStatus::Success, 2));
    // The run's stream holds both attempts' starts, from the store.
    let events = store.run_events(&run, 0, 100).await.unwrap();
    let starts: Vec<&Value> = events
        .iter()
        .filter(|e| e.event == "metadata")
        .map(|e| &e.data["attempt"])
        .collect();
    assert_eq!(starts, [&json!(1), &json!(2)]);
}

/// A server whose `two` takes `two`'s time, on `store`, its workers
/// started; its address.
async fn steps_server(store: &Store, two: Two) -> SocketAddr {
    let server = Server::new(store.clone())
        .workers(2)
        .assistant("steps", steps(two));
    let addr = serve(server.router::<Steps>()).await;
    let _workers = server.start_workers();
    addr
}

/// Sends `body` to `path` and reads the answer until `until` shows up in
/// it; then drops the connection (a client going away).
async fn read_until_then_leave(addr: SocketAddr, path: &str, body: &Value, until: &str) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let body = body.to_string();
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut seen = Vec::new();
    let mut buffer = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains(until) {
        let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buffer))
            .await
            .expect("the answer starts")
            .unwrap();
        assert!(
            n > 0,
            "closed before {until:?}: {}",
            String::from_utf8_lossy(&seen)
        );
        seen.extend_from_slice(&buffer[..n]);
    }
    drop(stream);
}

/// Waits for the run's status to become `status`.
async fn wait_for_status(store: &Store, run: &str, status: RunStatus) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let now = store.get_run(run, None).await.unwrap().unwrap().status;
        if now == status {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "run {run} still {now:?}, not {status:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_goes_away_cancels_its_run_when_it_asked() {
    let store = Store::memory();
    let addr = steps_server(&store, Two::Slow(Duration::from_secs(30))).await;
    for (on_disconnect, ends) in [("cancel", true), ("continue", false)] {
        let thread = post(addr, "/threads", json!({})).await;
        let thread = thread["thread_id"].as_str().unwrap().to_owned();
        let body = json!({"assistant_id": "steps", "input": {}, "on_disconnect": on_disconnect});
        // A stream, left after its first event.
        read_until_then_leave(
            addr,
            &format!("/threads/{thread}/runs/stream"),
            &body,
            "event: metadata",
        )
        .await;
        let runs = store
            .list_runs(Some(&thread), Default::default())
            .await
            .unwrap();
        let run = runs[0].run_id.clone();
        if ends {
            wait_for_status(&store, &run, RunStatus::Interrupted).await;
        } else {
            tokio::time::sleep(Duration::from_millis(300)).await;
            assert_eq!(
                store.get_run(&run, None).await.unwrap().unwrap().status,
                RunStatus::Running,
                "on_disconnect=continue: the run goes on"
            );
            let cancel = request(
                addr,
                "POST",
                &format!("/threads/{thread}/runs/{run}/cancel?wait=1"),
                &[],
                b"",
            )
            .await;
            assert_eq!(cancel.status, 200);
        }
    }
    // A wait, left before its answer: the same.
    let thread = post(addr, "/threads", json!({})).await;
    let thread = thread["thread_id"].as_str().unwrap().to_owned();
    let body = json!({"assistant_id": "steps", "input": {}, "on_disconnect": "cancel"});
    read_until_then_leave(
        addr,
        &format!("/threads/{thread}/runs/wait"),
        &body,
        "\r\n\r\n",
    )
    .await;
    let runs = store
        .list_runs(Some(&thread), Default::default())
        .await
        .unwrap();
    wait_for_status(&store, &runs[0].run_id, RunStatus::Interrupted).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_after_seconds_waits_its_time() {
    let store = Store::memory();
    let addr = steps_server(&store, Two::Quick).await;
    let thread = post(addr, "/threads", json!({})).await;
    let thread = thread["thread_id"].as_str().unwrap().to_owned();
    let run = post(
        addr,
        &format!("/threads/{thread}/runs"),
        json!({"assistant_id": "steps", "input": {}, "after_seconds": 1.5}),
    )
    .await;
    let run = run["run_id"].as_str().unwrap().to_owned();
    // Idle workers do not take it before its time.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        store.get_run(&run, None).await.unwrap().unwrap().status,
        RunStatus::Pending
    );
    let values = joined(addr, &thread, &run).await;
    assert_eq!(values["log"], json!(["one", "two", "three"]));
    for bad in [json!(-1), json!(1e12), json!("soon")] {
        let body = json!({"assistant_id": "steps", "input": {}, "after_seconds": bad}).to_string();
        let response = request(
            addr,
            "POST",
            &format!("/threads/{thread}/runs"),
            &[("content-type", "application/json")],
            body.as_bytes(),
        )
        .await;
        assert_eq!(
            response.status,
            422,
            "{bad}: {}",
            String::from_utf8_lossy(&response.body)
        );
        assert!(String::from_utf8_lossy(&response.body).contains("after_seconds"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_workers_keep_dying_ends_in_error() {
    let store = Store::memory();
    // Created by an API-only server: no worker of its own.
    let api = Server::new(store.clone())
        .workers(0)
        .assistant("steps", steps(Two::Quick));
    let addr = serve(api.router::<Steps>()).await;
    let (thread, run) = start_run(addr).await;
    // Three workers took it and stopped mid-run.
    for _ in 0..3 {
        let claim = store
            .claim_run("doomed", Duration::from_secs(30))
            .await
            .unwrap()
            .unwrap();
        store.release_run(claim).await.unwrap();
    }
    let _workers = Server::new(store.clone())
        .workers(1)
        .assistant("steps", steps(Two::Quick))
        .start_workers();
    wait_for_status(&store, &run, RunStatus::Error).await;
    let events = store.run_events(&run, 0, 10).await.unwrap();
    let last = events.last().unwrap();
    assert_eq!(last.event, "error");
    assert_eq!(last.data["error"], "RunAttemptsExceeded");
    // Nothing ran: the thread has no step.
    let state = request(addr, "GET", &format!("/threads/{thread}/state"), &[], b"").await;
    let state = state.json();
    assert_eq!(
        (&state["values"]["log"], &state["metadata"]["step"]),
        (&json!([]), &json!(0)),
        "{state}"
    );
}
