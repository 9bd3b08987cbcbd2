//! A run's own options over real HTTP, on memory and SQLite: its
//! breakpoints (`interrupt_before`, `interrupt_after`: LangGraph Studio's
//! per-run breakpoints) pause it where they say, a run without input goes
//! on, a breakpoint on no node is the field's 422 and creates no run, the
//! fields this server does not serve are refused by name, the stored run's
//! `kwargs` carry LangGraph's names, and a run or an edit from a past
//! checkpoint goes on from there (LangGraph's replay and fork, in place).

use super::workers::{Steps, Two, post, steps};
use crate::support::{get, post_json, serve};
use serde_json::{Value, json};
use state_server::Server;
use state_store::Store;
use std::net::SocketAddr;

async fn server(store: Store) -> SocketAddr {
    let server = Server::new(store).assistant("steps", steps(Two::Quick));
    serve(server.router::<Steps>()).await
}

async fn get_json(addr: SocketAddr, path: &str) -> Value {
    let response = get(addr, path).await;
    assert_eq!(response.status, 200, "GET {path}");
    response.json()
}

/// POSTs `body`; the status and the answer's JSON.
async fn post_any(addr: SocketAddr, path: &str, body: Value) -> (u16, Value) {
    let response = post_json(addr, path, &body).await;
    let json = serde_json::from_slice(&response.body).unwrap_or(Value::Null);
    (response.status, json)
}

async fn breakpoints_pause_the_run_and_bad_ones_create_nothing(store: Store) {
    let addr = server(store).await;
    let thread = post(addr, "/threads", json!({})).await["thread_id"]
        .as_str()
        .expect("a thread id")
        .to_owned();
    let wait = format!("/threads/{thread}/runs/wait");

    // Paused before `two`: `one` ran, `two` is next.
    let values = post(
        addr,
        &wait,
        json!({"assistant_id": "steps", "input": {}, "interrupt_before": ["two"]}),
    )
    .await;
    assert_eq!(values["log"], json!(["one"]), "{values}");
    let state = get_json(addr, &format!("/threads/{thread}/state")).await;
    assert_eq!(state["next"], json!(["two"]), "{state}");

    // The run as stored: LangGraph's kwargs.
    let runs = get_json(addr, &format!("/threads/{thread}/runs")).await;
    let kwargs = &runs[0]["kwargs"];
    assert_eq!(kwargs["interrupt_before"], json!(["two"]), "{kwargs}");
    assert_eq!(kwargs["interrupt_after"], Value::Null, "{kwargs}");
    assert_eq!(kwargs["subgraphs"], json!(false), "{kwargs}");
    assert_eq!(kwargs["resumable"], json!(false), "{kwargs}");
    assert_eq!(kwargs["durability"], json!("async"), "{kwargs}");
    assert!(kwargs.get("stream_subgraphs").is_none(), "{kwargs}");

    // Going on (no input), paused after every node: after `two`.
    let values = post(
        addr,
        &wait,
        json!({"assistant_id": "steps", "input": null, "interrupt_after": "*"}),
    )
    .await;
    assert_eq!(values["log"], json!(["one", "two"]), "{values}");

    // Going on with the graph's own breakpoints (none): to the end.
    let values = post(addr, &wait, json!({"assistant_id": "steps", "input": null})).await;
    assert_eq!(values["log"], json!(["one", "two", "three"]), "{values}");
    let state = get_json(addr, &format!("/threads/{thread}/state")).await;
    assert_eq!(state["next"], json!([]), "{state}");

    // Refused before anything is written: the run list stays at three.
    let head = state["checkpoint"]["checkpoint_id"].clone();
    let earlier = state["parent_checkpoint_id"].clone();
    assert!(head.is_string() && earlier.is_string(), "{state}");
    for (field, value, says) in [
        ("interrupt_before", json!(["nope"]), "no node \"nope\""),
        ("interrupt_after", json!("two"), "\"*\" or a list"),
        ("webhook", json!("http://127.0.0.1:9/hook"), "not served"),
        (
            "durability",
            json!("never"),
            "\"sync\", \"async\" or \"exit\"",
        ),
    ] {
        let mut body = json!({"assistant_id": "steps", "input": {}});
        body[field] = value;
        let (status, answer) = post_any(addr, &wait, body).await;
        assert_eq!(status, 422, "{field}: {answer}");
        let detail = answer["detail"].as_str().unwrap_or_default();
        assert!(detail.contains(says), "{field}: {detail}");
    }
    let runs = get_json(addr, &format!("/threads/{thread}/runs")).await;
    assert_eq!(runs.as_array().map(Vec::len), Some(3), "{runs}");
    let state = get_json(addr, &format!("/threads/{thread}/state")).await;
    assert_eq!(
        state["values"]["log"],
        json!(["one", "two", "three"]),
        "{state}"
    );

    // The thread's latest checkpoint is where a run starts anyway.
    let values = post(
        addr,
        &wait,
        json!({"assistant_id": "steps", "input": {}, "checkpoint_id": head}),
    )
    .await;
    assert_eq!(values["log"].as_array().map(Vec::len), Some(6), "{values}");

    // A checkpoint the thread does not have: 404, no run made.
    let runs_before = get_json(addr, &format!("/threads/{thread}/runs")).await;
    let nowhere = "00000000-0000-6000-8000-0000000003e7";
    for body in [
        json!({"assistant_id": "steps", "input": {}, "checkpoint_id": nowhere}),
        json!({"assistant_id": "steps", "input": null,
               "config": {"configurable": {"checkpoint_id": nowhere}}}),
    ] {
        let (status, answer) = post_any(addr, &wait, body).await;
        assert_eq!(status, 404, "{answer}");
        let detail = answer["detail"].as_str().unwrap_or_default();
        assert!(detail.contains(nowhere), "{detail}");
    }
    let runs = get_json(addr, &format!("/threads/{thread}/runs")).await;
    assert_eq!(runs, runs_before);

    // Replayed from `earlier` (after `two`): `three` runs again on the
    // state there; the thread's history keeps both branches.
    let history_before = post(
        addr,
        &format!("/threads/{thread}/history"),
        json!({"limit": 100}),
    )
    .await;
    let values = post(
        addr,
        &wait,
        json!({"assistant_id": "steps", "input": null, "checkpoint_id": earlier}),
    )
    .await;
    assert_eq!(values["log"], json!(["one", "two", "three"]), "{values}");
    let history = post(
        addr,
        &format!("/threads/{thread}/history"),
        json!({"limit": 100}),
    )
    .await;
    let history = history.as_array().expect("a list");
    let before = history_before.as_array().expect("a list");
    assert_eq!(&history[history.len() - before.len()..], &before[..]);
    let fork = history
        .iter()
        .find(|h| h["metadata"]["source"] == "fork")
        .expect("the branch's checkpoint");
    assert_eq!(fork["parent_checkpoint_id"], earlier, "{fork}");
    assert_eq!(fork["values"]["log"], json!(["one", "two"]), "{fork}");
    assert_eq!(fork["next"], json!(["three"]), "{fork}");

    // New input from there, named as LangGraph's clients send it.
    let values = post(
        addr,
        &wait,
        json!({"assistant_id": "steps", "input": {}, "checkpoint": {"checkpoint_id": earlier}}),
    )
    .await;
    assert_eq!(
        values["log"],
        json!(["one", "two", "one", "two", "three"]),
        "{values}"
    );

    // An edit there, as `two` (LangGraph's fork), then on.
    let edited = post(
        addr,
        &format!("/threads/{thread}/state"),
        json!({"values": {"log": ["edited"]}, "as_node": "two", "checkpoint_id": earlier}),
    )
    .await;
    let state = get_json(addr, &format!("/threads/{thread}/state")).await;
    assert_eq!(state["checkpoint_id"], edited["checkpoint_id"], "{state}");
    assert_eq!(
        state["values"]["log"],
        json!(["one", "two", "edited"]),
        "{state}"
    );
    assert_eq!(state["next"], json!(["three"]), "{state}");
    let values = post(addr, &wait, json!({"assistant_id": "steps", "input": null})).await;
    assert_eq!(
        values["log"],
        json!(["one", "two", "edited", "three"]),
        "{values}"
    );
}

#[tokio::test]
async fn on_memory() {
    breakpoints_pause_the_run_and_bad_ones_create_nothing(Store::memory()).await;
}

#[tokio::test]
async fn on_sqlite() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let store = Store::sqlite(dir.path().join("runs.db"))
        .await
        .expect("a SQLite store");
    breakpoints_pause_the_run_and_bad_ones_create_nothing(store).await;
}
