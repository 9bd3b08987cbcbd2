//! `Server::max_streams`: the open event streams of every kind (the
//! crate's own thread stream, the Agent Server's thread, run and join
//! streams) counted together; one more is a 503 `too_many_streams` with
//! `Retry-After` that writes nothing; a place is freed when its client
//! disconnects or its stream ends.

use crate::agent_sdk::{Chat, server};
use crate::support::{EventStream, Response, get, open_stream, request};
use serde_json::{Value, json};
use state_store::Store;
use std::net::SocketAddr;
use std::time::Duration;

const JSON: [(&str, &str); 1] = [("Content-Type", "application/json")];

/// A stream's request headers: the connection closes with the stream.
const CLOSE: [(&str, &str); 2] = [
    ("Content-Type", "application/json"),
    ("Connection", "close"),
];

/// `POST path` with a JSON body.
async fn post(addr: SocketAddr, path: &str, body: Value) -> Response {
    request(addr, "POST", path, &JSON, body.to_string().as_bytes()).await
}

/// Asserts the answer is the cap's 503.
#[track_caller]
fn refused(response: &Response) {
    let detail = response.error(503, "too_many_streams");
    assert!(detail.contains("max_streams"), "{detail}");
    assert_eq!(response.header("retry-after"), Some("1"));
}

/// Opens `target` as soon as a place is free (within 10 s).
async fn open_when_free(addr: SocketAddr, target: &str) -> EventStream {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        match open_stream(addr, target, &CLOSE).await {
            Ok(stream) => return stream,
            Err(response) => {
                refused(&response);
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "{target}: no place freed within 10 s"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
}

/// The Agent Server threads' runs, by the API.
async fn runs_of(addr: SocketAddr, thread: &str) -> usize {
    let runs = get(addr, &format!("/threads/{thread}/runs")).await;
    runs.json().as_array().expect("a list").len()
}

#[tokio::test]
async fn beyond_the_cap_every_stream_is_a_503_until_a_client_leaves() {
    let store = Store::memory();
    let routes = server(store)
        .max_streams(2)
        .keep_alive(Duration::from_millis(50))
        .router::<Chat>();
    let addr = crate::support::serve(routes).await;
    // An Agent Server thread with a run done, for its streams.
    let created = post(addr, "/threads", json!({"thread_id": "t"})).await;
    assert_eq!(created.status, 200);
    let done = post(
        addr,
        "/threads/t/runs/wait",
        json!({"assistant_id": "hitl", "input": {}}),
    )
    .await;
    assert_eq!(done.status, 200, "{:?}", done.json());
    let run = get(addr, "/threads/t/runs").await.json()[0]["run_id"]
        .as_str()
        .expect("a run")
        .to_owned();

    // Two of the crate's own streams (a thread not written yet is waited for).
    let first = open_when_free(addr, "/threads/plain/stream").await;
    let _second = open_when_free(addr, "/threads/plain/stream").await;

    // Every kind of stream is refused now, and nothing is written.
    refused(
        &open_stream(addr, "/threads/plain/stream", &[])
            .await
            .err()
            .expect("refused"),
    );
    refused(
        &open_stream(addr, "/threads/t/stream", &[])
            .await
            .err()
            .expect("refused"),
    );
    let join = format!("/threads/t/runs/{run}/stream");
    refused(&open_stream(addr, &join, &[]).await.err().expect("refused"));
    let body = json!({"assistant_id": "hitl", "command": {"resume": "Ada"}});
    refused(&post(addr, "/threads/t/runs/stream", body.clone()).await);
    refused(
        &post(
            addr,
            "/runs/stream",
            json!({"assistant_id": "agent", "input": {}}),
        )
        .await,
    );
    assert_eq!(
        runs_of(addr, "t").await,
        1,
        "a refused stream created a run"
    );
    // The rest of the API answers as usual.
    assert_eq!(get(addr, "/ok").await.status, 200);
    assert_eq!(get(addr, "/threads/t").await.status, 200);

    // A client leaves: its place is freed (the server notices the closed
    // socket, or at the latest its next keep-alive), and the next stream
    // opens.
    drop(first);
    let mut resumed = post_stream_when_free(addr, "/threads/t/runs/stream", &body).await;
    let events = String::from_utf8_lossy(&resumed.read_to_end().await).into_owned();
    assert!(events.contains("\"answer\":\"Ada\""), "{events}");
    assert_eq!(runs_of(addr, "t").await, 2);

    // The same for an Agent Server stream (hyper notices the closed
    // socket; its heartbeat would, after 5 s at most).
    let thread_stream = open_when_free(addr, "/threads/t/stream").await;
    refused(
        &open_stream(addr, "/threads/t/stream", &[])
            .await
            .err()
            .expect("refused"),
    );
    drop(thread_stream);
    let _again = open_when_free(addr, "/threads/t/stream").await;
}

#[tokio::test]
async fn a_stream_that_ends_frees_its_place() {
    let routes = server(Store::memory()).max_streams(1).router::<Chat>();
    let addr = crate::support::serve(routes).await;
    let created = post(addr, "/threads", json!({"thread_id": "t"})).await;
    assert_eq!(created.status, 200);
    // A run that sleeps 20 s, followed by a join stream.
    let slow = post(
        addr,
        "/threads/t/runs",
        json!({"assistant_id": "slow", "input": {}}),
    )
    .await;
    assert_eq!(slow.status, 200, "{:?}", slow.json());
    let run = slow.json()["run_id"].as_str().expect("a run").to_owned();
    let join = format!("/threads/t/runs/{run}/stream");
    let mut joined = open_when_free(addr, &join).await;
    refused(&open_stream(addr, &join, &[]).await.err().expect("refused"));
    // The run is cancelled: it ends, so does its stream, and its place
    // is free at once.
    let cancelled = post(
        addr,
        &format!("/threads/t/runs/{run}/cancel?wait=1"),
        json!({}),
    )
    .await;
    assert_eq!(cancelled.status, 200, "{:?}", cancelled.json());
    joined.read_to_end().await;
    let mut next = open_stream(addr, &join, &CLOSE)
        .await
        .expect("the place is free");
    next.read_to_end().await;
    // Streams that end at once, one after the other: each frees its place.
    for _ in 0..3 {
        let streamed = post(
            addr,
            "/runs/stream",
            json!({"assistant_id": "hitl", "input": {}}),
        )
        .await;
        assert_eq!(
            streamed.status,
            200,
            "{}",
            String::from_utf8_lossy(&streamed.body)
        );
    }
}

/// `POST target` answered with an event stream, as soon as a place is
/// free (within 10 s).
async fn post_stream_when_free(addr: SocketAddr, target: &str, body: &Value) -> EventStream {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        match crate::support::open_post_stream(addr, target, &CLOSE, body.to_string().as_bytes())
            .await
        {
            Ok(stream) => return stream,
            Err(response) => {
                refused(&response);
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "{target}: no place freed within 10 s"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
}
