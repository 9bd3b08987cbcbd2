//! `GET /threads/{id}/stream` over real HTTP on loopback: the backlog then
//! live steps, resuming with `Last-Event-ID` or `?after=`, `values` on the
//! typed router, a graph run's supersteps, the end on deletion,
//! keep-alives, the query token, bad requests, and load (many subscribers,
//! a subscriber that never reads).

use crate::on_every_backend;
use crate::support;
use crate::support::backends::TestStore;
use crate::support::{Frame, Notes, get, open_stream, serve, step, stream, thread_with_steps};
use serde_json::{Value, json};
use state_core::{AgentState, State};
use state_server::Server;
use state_store::Store;
use std::time::{Duration, Instant};

/// The `updates` data of step k of `thread_with_steps`.
fn appended(k: u64) -> Value {
    json!([{"__apply__": {"log": [k.to_string()]}}])
}

/// Appends steps `from..=to` (as `thread_with_steps` numbers them).
async fn append(store: &Store, id: &str, from: u64, to: u64) {
    let mut thread = store.thread::<Notes>(id).await.expect("open thread");
    assert_eq!(thread.seq(), from - 1);
    for k in from..=to {
        thread.apply(step(k)).await.expect("apply");
    }
}

#[track_caller]
fn assert_steps(events: &[support::SseEvent], first: u64) {
    for (i, event) in events.iter().enumerate() {
        let k = first + i as u64;
        assert_eq!(event.event, "updates", "{event:?}");
        assert_eq!(event.seq(), k, "{event:?}");
        assert_eq!(event.json(), appended(k), "{event:?}");
    }
}

async fn backlog_then_live(ts: TestStore) {
    let store = &ts.store;
    let addr = serve(state_server::router::<Notes>(store.clone())).await;
    thread_with_steps(store, "t", 3).await;
    let mut events = stream(addr, "/threads/t/stream").await;
    assert_eq!(events.header("cache-control"), Some("no-store"));
    assert_steps(&events.events(3).await, 1);

    // Live: written by another worker (another process's store, for the
    // SQL backends) while connected.
    let other = ts.another_worker().await;
    let writer = tokio::spawn(async move { append(&other, "t", 4, 8).await });
    assert_steps(&events.events(5).await, 4);
    writer.await.unwrap();
    events.assert_quiet(Duration::from_millis(200)).await;
}

async fn resume_without_gap_or_duplicate(ts: TestStore) {
    let store = &ts.store;
    let addr = serve(state_server::router::<Notes>(store.clone())).await;
    thread_with_steps(store, "t", 5).await;

    let mut first = stream(addr, "/threads/t/stream").await;
    let seen = first.events(2).await;
    assert_steps(&seen, 1);
    drop(first); // disconnected after step 2
    append(store, "t", 6, 8).await;

    // Last-Event-ID: what a reconnecting EventSource sends.
    let last = seen[1].id.clone().unwrap();
    let mut again = open_stream(addr, "/threads/t/stream", &[("Last-Event-ID", &last)])
        .await
        .unwrap();
    assert_steps(&again.events(6).await, 3);
    let writer = {
        let store = store.clone();
        tokio::spawn(async move { append(&store, "t", 9, 10).await })
    };
    assert_steps(&again.events(2).await, 9);
    writer.await.unwrap();
    again.assert_quiet(Duration::from_millis(200)).await;
    drop(again);

    // ?after=N.
    let mut after = stream(addr, "/threads/t/stream?after=7").await;
    assert_steps(&after.events(3).await, 8);
    after.assert_quiet(Duration::from_millis(100)).await;

    // Both: the header wins (the URL is the one first opened).
    let mut both = open_stream(addr, "/threads/t/stream?after=1", &[("Last-Event-ID", "9")])
        .await
        .unwrap();
    assert_steps(&both.events(1).await, 10);
    both.assert_quiet(Duration::from_millis(100)).await;

    // Past the end: waits for the step after N.
    let mut ahead = stream(addr, "/threads/t/stream?after=11").await;
    append(store, "t", 11, 12).await;
    assert_steps(&ahead.events(1).await, 12);
}

async fn deletion_ends_the_stream(ts: TestStore) {
    let store = &ts.store;
    let addr = serve(state_server::router::<Notes>(store.clone())).await;
    thread_with_steps(store, "t", 2).await;
    let mut events = stream(addr, "/threads/t/stream").await;
    assert_steps(&events.events(2).await, 1);
    assert!(store.delete_thread("t").await.unwrap());
    let end = events.next_event().await;
    assert_eq!(end.event, "end");
    assert_eq!(end.id, None);
    assert_eq!(end.json(), json!({"reason": "deleted"}));
    events.assert_ends().await;
}

async fn an_unknown_thread_is_waited_for(ts: TestStore) {
    let store = &ts.store;
    let addr = serve(state_server::router::<Notes>(store.clone())).await;
    let mut events = stream(addr, "/threads/later/stream").await;
    events.assert_quiet(Duration::from_millis(200)).await;
    assert!(store.thread_info("later").await.is_err(), "not created");
    thread_with_steps(store, "later", 2).await;
    assert_steps(&events.events(2).await, 1);
}

async fn values_are_the_state_after_each_step(ts: TestStore) {
    let store = &ts.store;
    let addr = serve(state_server::router::<Notes>(store.clone())).await;
    let mut thread = store.thread::<Notes>("t").await.unwrap();
    thread.apply(Notes::delta().title("draft")).await.unwrap();
    thread
        .apply_nodes([
            ("a", Notes::delta().log(vec!["from a".into()])),
            ("b", Notes::delta().log(vec!["from b".into()])),
        ])
        .await
        .unwrap();
    thread.set("title", json!("final")).await.unwrap();
    thread.begin_turn().await.unwrap();

    let mut both = stream(addr, "/threads/t/stream?mode=updates,values").await;
    let mut only = stream(addr, "/threads/t/stream?mode=values").await;
    let expected_updates = [
        json!([{"__apply__": {"title": "draft"}}]),
        json!([{"a": {"log": ["from a"]}}, {"b": {"log": ["from b"]}}]),
        json!([{"__set__": {"key": "title", "value": "final"}}]),
        json!([{"__begin_turn__": null}]),
        json!([{"__apply__": {"log": ["5"]}}]),
    ];
    for seq in 1..=5u64 {
        if seq == 5 {
            // A live step, with the state computed for it too.
            thread
                .apply(Notes::delta().log(vec!["5".into()]))
                .await
                .unwrap();
        }
        let values = store
            .state_at::<Notes>("t", seq)
            .await
            .unwrap()
            .to_json()
            .unwrap();
        let pair = both.events(2).await;
        assert_eq!(pair[0].event, "updates");
        assert_eq!(pair[0].id, None, "the id comes with the step's last event");
        assert_eq!(pair[0].json(), expected_updates[seq as usize - 1]);
        assert_eq!(pair[1].event, "values");
        assert_eq!(pair[1].seq(), seq);
        assert_eq!(pair[1].json(), values);
        let one = only.next_event().await;
        assert_eq!((one.event.as_str(), one.seq()), ("values", seq));
        assert_eq!(one.json(), values);
    }
}

async fn bad_requests_are_json_errors_before_the_stream(ts: TestStore) {
    let store = &ts.store;
    thread_with_steps(store, "t", 1).await;
    let addr = serve(state_server::router::<Notes>(store.clone())).await;
    for (target, says) in [
        ("/threads/t/stream?mode=foo", "mode must be updates, values"),
        ("/threads/t/stream?mode=", "mode must be"),
        ("/threads/t/stream?after=-1", "after"),
        ("/threads/t/stream?after=x", "after"),
        ("/threads/t/stream?since=1", "since"),
    ] {
        let response = open_stream(addr, target, &[]).await.err().unwrap();
        let message = response.error(400, "bad_query");
        assert!(message.contains(says), "{target}: {message}");
    }
    let response = open_stream(addr, "/threads/t/stream", &[("Last-Event-ID", "abc")])
        .await
        .err()
        .unwrap();
    let message = response.error(400, "bad_header");
    assert!(message.contains("Last-Event-ID"), "{message}");
    let long = "x".repeat(600);
    let response = open_stream(addr, &format!("/threads/{long}/stream"), &[])
        .await
        .err()
        .unwrap();
    response.error(400, "invalid_thread_id");
    assert_eq!(
        support::request(addr, "POST", "/threads/t/stream", &[], b"")
            .await
            .error(405, "method_not_allowed")
            .split(' ')
            .next(),
        Some("POST")
    );

    // The untyped router streams updates, and refuses values.
    let addr = serve(Server::new(store.clone()).untyped_router()).await;
    assert_steps(&stream(addr, "/threads/t/stream").await.events(1).await, 1);
    for target in [
        "/threads/t/stream?mode=values",
        "/threads/t/stream?mode=updates,values",
    ] {
        let response = open_stream(addr, target, &[]).await.err().unwrap();
        let message = response.error(501, "no_state_type");
        assert!(message.contains("router::<YourState>"), "{message}");
    }
}

on_every_backend!(
    backlog_then_live,
    resume_without_gap_or_duplicate,
    deletion_ends_the_stream,
    an_unknown_thread_is_waited_for,
    values_are_the_state_after_each_step,
    bad_requests_are_json_errors_before_the_stream,
);

mod graph {
    use super::*;
    use state_graph::{Ctx, END, NodeError, START, StateGraph};

    #[derive(AgentState, Debug, Clone, PartialEq)]
    pub struct Plan {
        pub steps: Vec<String>,
        pub approved: bool,
    }

    fn plan(_: &Plan) -> PlanDelta {
        Plan::delta().steps(vec!["search".into(), "write".into()])
    }

    fn approve(s: &Plan, ctx: &Ctx) -> Result<PlanDelta, NodeError> {
        let answer = ctx.interrupt(json!({"question": "run?", "plan": s.steps}))?;
        Ok(Plan::delta().approved(answer == "yes"))
    }

    #[tokio::test]
    async fn a_graph_run_streams_its_supersteps() {
        let ts = TestStore::sqlite().await;
        let store = ts.store.clone();
        let addr = serve(state_server::router::<Plan>(store.clone())).await;
        let mut events = stream(addr, "/threads/run/stream?mode=updates,values").await;

        let mut g = StateGraph::<Plan>::new();
        g.add_node("plan", plan);
        g.add_node("approve", approve);
        g.add_edge(START, "plan");
        g.add_edge("plan", "approve");
        g.add_edge("approve", END);
        let app = g.compile().unwrap().with_store(store.clone());
        let out = app
            .invoke_thread("run", Plan::delta().steps(vec!["ask".into()]))
            .await
            .unwrap();
        assert!(out.is_interrupted());

        let mut updates = Vec::new();
        let mut values = Vec::new();
        for _ in 0..3 {
            let pair = events.events(2).await;
            updates.push(pair[0].json());
            assert_eq!(pair[1].event, "values");
            values.push((pair[1].seq(), pair[1].json()));
        }
        assert_eq!(updates[0], json!([{"__start__": {"steps": ["ask"]}}]));
        assert_eq!(
            updates[1],
            json!([{"plan": {"steps": ["search", "write"]}}])
        );
        let interrupt = &updates[2][0]["__interrupt__"];
        assert_eq!(
            interrupt[0]["value"],
            json!({"question": "run?", "plan": ["search", "write"]})
        );
        assert!(interrupt[0]["id"].is_string(), "{interrupt}");
        assert_eq!(
            values.iter().map(|(seq, _)| *seq).collect::<Vec<_>>(),
            [1, 2, 3]
        );
        assert_eq!(values[2].1, values[1].1, "a pause changes no state");

        app.resume("run", json!("yes")).await.unwrap();
        let pair = events.events(2).await;
        assert_eq!(pair[0].json(), json!([{"approve": {"approved": true}}]));
        assert_eq!(pair[1].seq(), 4);
        assert_eq!(pair[1].json()["approved"], true);
    }
}

#[tokio::test]
async fn keep_alive_comments_arrive() {
    let store = Store::memory();
    thread_with_steps(&store, "t", 1).await;
    let server = Server::new(store).keep_alive(Duration::from_millis(100));
    let addr = serve(server.router::<Notes>()).await;
    let mut events = stream(addr, "/threads/t/stream").await;
    assert_steps(&events.events(1).await, 1);
    for _ in 0..2 {
        let frame = events.next_frame(Duration::from_secs(5)).await;
        assert_eq!(frame, Some(Frame::Comment("keep-alive".into())));
    }
}

#[tokio::test]
async fn the_token_may_come_in_the_query_of_the_stream_only() {
    let store = Store::memory();
    thread_with_steps(&store, "t", 1).await;
    let addr = serve(Server::new(store).token("s3cret-T0ken").router::<Notes>()).await;
    for target in [
        "/threads/t/stream",
        "/threads/t/stream?access_token=wrong",
        "/threads/t/stream?access_token=",
        "/threads/t/stream?access_token=s3cret-t0ken",
    ] {
        let response = open_stream(addr, target, &[]).await.err().unwrap();
        response.error(401, "unauthorized");
        assert!(response.header("www-authenticate").is_some());
    }
    // The right token in the query opens the stream (other parameters
    // beside it).
    for target in [
        "/threads/t/stream?access_token=s3cret-T0ken",
        "/threads/t/stream?after=0&access_token=s3cret-T0ken&mode=updates",
    ] {
        assert_steps(&stream(addr, target).await.events(1).await, 1);
    }
    // The header still works; a wrong header is not saved by the query.
    let auth = [("Authorization", "Bearer s3cret-T0ken")];
    let mut events = open_stream(addr, "/threads/t/stream", &auth).await.unwrap();
    assert_steps(&events.events(1).await, 1);
    let wrong = [("Authorization", "Bearer nope")];
    let response = open_stream(addr, "/threads/t/stream?access_token=s3cret-T0ken", &wrong)
        .await
        .err()
        .unwrap();
    response.error(401, "unauthorized");
    // Every other path: the header only.
    for path in ["/threads", "/threads/t/history", "/threads/t/state"] {
        get(addr, &format!("{path}?access_token=s3cret-T0ken"))
            .await
            .error(401, "unauthorized");
    }
}

/// 50 subscribers and one writer of 200 steps on SQLite: everyone sees
/// every step once, in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_subscribers_see_every_step_once_in_order() {
    let ts = TestStore::sqlite().await;
    let store = ts.store.clone();
    let addr = serve(state_server::router::<Notes>(store.clone())).await;
    let mut subscribers = Vec::new();
    for _ in 0..50 {
        let mut events = stream(addr, "/threads/load/stream").await;
        subscribers.push(tokio::spawn(async move {
            let seen = events.events(200).await;
            assert_steps(&seen, 1);
            events.assert_quiet(Duration::from_millis(100)).await;
        }));
    }
    let started = Instant::now();
    append(&store, "load", 1, 200).await;
    let writing = started.elapsed();
    let all = async {
        for subscriber in subscribers {
            subscriber.await.unwrap();
        }
    };
    tokio::time::timeout(Duration::from_secs(60), all)
        .await
        .expect("every subscriber got every step within 60 s");
    eprintln!("200 steps written in {writing:?} with 50 subscribers");
}

/// A subscriber that never reads its socket does not slow the writer, nor
/// the other subscribers.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_stalled_subscriber_slows_nobody() {
    let ts = TestStore::sqlite().await;
    let store = ts.store.clone();
    let addr = serve(state_server::router::<Notes>(store.clone())).await;
    // Big steps, and their states (which grow) too: far more than the
    // socket buffers hold, so the stalled connection really is full.
    let big = "x".repeat(4096);
    let write = |id: &'static str| {
        let store = store.clone();
        let big = big.clone();
        async move {
            let started = Instant::now();
            let mut thread = store.thread::<Notes>(id).await.unwrap();
            for k in 1..=200 {
                thread
                    .apply(Notes::delta().log(vec![format!("{k}{big}")]))
                    .await
                    .unwrap();
            }
            started.elapsed()
        }
    };
    let alone = write("alone").await;

    let stalled = stream(addr, "/threads/busy/stream?mode=updates,values").await;
    let mut reader = stream(addr, "/threads/busy/stream").await;
    let reading = tokio::spawn(async move {
        let events = reader.events(200).await;
        for (i, event) in events.iter().enumerate() {
            assert_eq!(event.seq(), i as u64 + 1);
        }
    });
    let busy = tokio::time::timeout(Duration::from_secs(60), write("busy"))
        .await
        .expect("the writer is not blocked");
    tokio::time::timeout(Duration::from_secs(60), reading)
        .await
        .expect("the reader got every step")
        .unwrap();
    eprintln!("200 steps: {alone:?} alone, {busy:?} with a stalled subscriber");
    assert!(
        busy < alone * 5 + Duration::from_secs(2),
        "{busy:?} with a stalled subscriber, {alone:?} without"
    );
    drop(stalled);
}
