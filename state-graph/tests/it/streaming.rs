//! A run as a `futures::Stream` of events in LangGraph's modes, each
//! serializable to the JSON LangGraph's stream clients read.

use futures::StreamExt;
use serde_json::{Value, json};
use state_core::{AgentState, Message, Messages, State};
use state_graph::{Ctx, END, Event, GraphError, NodeError, START, StateGraph, StreamMode};
use std::sync::Arc;

#[derive(AgentState, Debug, Clone, PartialEq)]
struct Chat {
    #[reducer(add_messages)]
    messages: Messages,
    #[reducer(append)]
    notes: Vec<String>,
    approved: bool,
}

fn graph() -> StateGraph<Chat> {
    let mut g = StateGraph::<Chat>::new();
    g.add_node("agent", |_: Arc<Chat>, ctx: Ctx| async move {
        for token in ["Hel", "lo"] {
            ctx.write_message(Message::ai(token).with_id("reply"));
        }
        ctx.write_custom(json!({"progress": 0.5}));
        Ok::<_, NodeError>(Chat::delta().messages(vec![Message::ai("Hello").with_id("reply")]))
    });
    g.add_node("notes", |_: &Chat| {
        Chat::delta().notes(vec!["noted".into()])
    });
    g.add_edge(START, "agent");
    g.add_edge("agent", "notes");
    g.add_edge("notes", END);
    g
}

/// Every event of a run, as (mode, data).
async fn collect(stream: state_graph::RunStream<Chat>) -> Vec<(String, Value)> {
    stream
        .map(|event| {
            let event = event.expect("no error");
            (event.mode().to_owned(), event.data().expect("JSON"))
        })
        .collect()
        .await
}

#[tokio::test]
async fn every_mode_in_order_with_langgraph_json() {
    let app = graph().compile().unwrap();
    let input = Chat::delta().messages(vec![Message::human("hi").with_id("q")]);
    let mut events = collect(app.stream(input, StreamMode::ALL)).await;
    // A chunk's metadata: LangGraph's keys; its task id checked apart.
    let mut task_namespaces = Vec::new();
    for (mode, data) in &mut events {
        if mode == "messages" {
            let metadata = data[1].as_object_mut().expect("metadata");
            task_namespaces.push(metadata.remove("langgraph_checkpoint_ns").unwrap());
            assert_eq!(
                Value::Object(metadata.clone()),
                json!({"langgraph_node": "agent", "langgraph_path": ["__pregel_pull", "agent"],
                       "langgraph_step": 1, "langgraph_triggers": ["branch:to:agent"],
                       "ls_integration": "langgraph"})
            );
            data[1] = json!({"langgraph_node": "agent"});
        }
    }
    // Both chunks of one task: one namespace, `node:task-id`.
    assert_eq!(task_namespaces.len(), 2);
    assert_eq!(task_namespaces[0], task_namespaces[1]);
    assert!(task_namespaces[0].as_str().unwrap().starts_with("agent:"));
    let q = json!({"type": "human", "content": "hi", "id": "q"});
    let reply = json!({"type": "ai", "content": "Hello", "id": "reply"});
    let expected = vec![
        (
            "values",
            json!({"messages": [q], "notes": [], "approved": false}),
        ),
        (
            "messages",
            json!([{"type": "ai", "content": "Hel", "id": "reply"}, {"langgraph_node": "agent"}]),
        ),
        (
            "messages",
            json!([{"type": "ai", "content": "lo", "id": "reply"}, {"langgraph_node": "agent"}]),
        ),
        ("custom", json!({"progress": 0.5})),
        ("updates", json!({"agent": {"messages": [reply]}})),
        (
            "values",
            json!({"messages": [q, reply], "notes": [], "approved": false}),
        ),
        ("updates", json!({"notes": {"notes": ["noted"]}})),
        (
            "values",
            json!({"messages": [q, reply], "notes": ["noted"], "approved": false}),
        ),
        ("end", Value::Null),
    ];
    let expected: Vec<(String, Value)> = expected
        .into_iter()
        .map(|(m, v)| (m.to_owned(), v))
        .collect();
    assert_eq!(events, expected);
}

#[tokio::test]
async fn only_the_modes_asked_for_are_sent() {
    let app = graph().compile().unwrap();
    let events = collect(app.stream(Chat::delta(), StreamMode::UPDATES)).await;
    let modes: Vec<&str> = events.iter().map(|(m, _)| m.as_str()).collect();
    assert_eq!(modes, ["updates", "updates", "end"]);
    let events = collect(app.stream(Chat::delta(), StreamMode::CUSTOM)).await;
    assert_eq!(events[0], ("custom".to_owned(), json!({"progress": 0.5})));
    assert_eq!(events.len(), 2);
}

#[tokio::test]
async fn the_last_event_carries_the_outcome() {
    let app = graph().compile().unwrap();
    let mut stream = app.stream(Chat::delta(), StreamMode::VALUES);
    let mut last = None;
    while let Some(event) = stream.next().await {
        last = Some(event.unwrap());
    }
    let Some(Event::End(outcome)) = last else {
        panic!("the stream ends with its outcome")
    };
    assert_eq!(outcome.state().notes, ["noted"]);
    assert!(!outcome.is_interrupted());
}

#[tokio::test]
async fn an_interrupt_is_streamed_as_langgraph_does_and_the_resume_streams_on() {
    let mut g = StateGraph::<Chat>::new();
    g.add_node(
        "approve",
        |_: &Chat, ctx: &Ctx| -> Result<ChatDelta, NodeError> {
            let answer = ctx.interrupt(json!({"question": "ship it?"}))?;
            Ok(Chat::delta().approved(answer == "yes"))
        },
    );
    g.add_edge(START, "approve");
    g.add_edge("approve", END);
    let app = g
        .compile()
        .unwrap()
        .with_store(state_store::Store::memory());

    let events = collect(app.stream_thread("t", Chat::delta(), StreamMode::UPDATES)).await;
    assert_eq!(events.len(), 2);
    let (mode, data) = &events[0];
    assert_eq!(mode, "updates");
    let pending = &data["__interrupt__"];
    assert_eq!(pending[0]["value"], json!({"question": "ship it?"}));
    let id = pending[0]["id"].as_str().unwrap().to_owned();
    assert_eq!(app.pending_interrupts("t").await.unwrap()[0].id, id);

    let events = collect(app.stream_resume("t", json!("yes"), StreamMode::UPDATES)).await;
    assert_eq!(
        events[0],
        ("updates".to_owned(), json!({"approve": {"approved": true}}))
    );
    assert!(app.pending_interrupts("t").await.unwrap().is_empty());
}

#[tokio::test]
async fn a_failed_run_ends_its_stream_with_the_error() {
    let mut g = StateGraph::<Chat>::new();
    g.add_node("ok", |_: &Chat| Chat::delta().notes(vec!["one".into()]));
    g.add_node("broken", |_: &Chat| {
        Err::<ChatDelta, _>(std::io::Error::other("disk full"))
    });
    g.add_edge(START, "ok");
    g.add_edge("ok", "broken");
    g.add_edge("broken", END);
    let app = g.compile().unwrap();
    let items: Vec<Result<Event<Chat>, GraphError>> = app
        .stream(Chat::delta(), StreamMode::UPDATES)
        .collect()
        .await;
    assert_eq!(items.len(), 2);
    assert_eq!(items[0].as_ref().unwrap().mode(), "updates");
    let err = items[1].as_ref().unwrap_err();
    assert_eq!(err.node(), Some("broken"));
}

#[tokio::test]
async fn dropping_the_stream_cancels_the_run() {
    let started = Arc::new(tokio::sync::Notify::new());
    let finished = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (s, f) = (started.clone(), finished.clone());
    let mut g = StateGraph::<Chat>::new();
    g.add_node("first", |_: &Chat| {
        Chat::delta().notes(vec!["first".into()])
    });
    g.add_node("slow", move |_: Arc<Chat>| {
        let (s, f) = (s.clone(), f.clone());
        async move {
            s.notify_one();
            tokio::time::sleep(std::time::Duration::from_secs(30)).await;
            f.store(true, std::sync::atomic::Ordering::SeqCst);
            Ok::<_, NodeError>(Chat::delta())
        }
    });
    g.add_edge(START, "first");
    g.add_edge("first", "slow");
    g.add_edge("slow", END);
    let store = state_store::Store::memory();
    let app = g.compile().unwrap().with_store(store.clone());
    let mut stream = app.stream_thread("t", Chat::delta(), StreamMode::UPDATES);
    let first = stream.next().await.unwrap().unwrap();
    assert_eq!(first.mode(), "updates");
    tokio::select! {
        _ = started.notified() => {}
        _ = stream.next() => panic!("the slow node does not end"),
    }
    drop(stream);
    assert!(!finished.load(std::sync::atomic::Ordering::SeqCst));
    // The turn with its input, the first superstep: nothing of the second.
    let thread = store.thread::<Chat>("t").await.unwrap();
    assert_eq!(thread.seq(), 2);
    assert_eq!(thread.state().notes, ["first"]);
}

/// A model client reaches the running node's `messages` stream without a
/// `Ctx` (`state_graph::message_stream()`), as LangGraph's chat models do
/// through callbacks: its chunks carry the node's metadata; outside a
/// streamed run there is none.
#[tokio::test]
async fn a_model_client_streams_into_the_running_node_on_its_own() {
    fn client_call() -> Message {
        if let Some(stream) = state_graph::message_stream() {
            for token in ["Bon", "jour"] {
                stream.send(Message::ai(token).with_id("m1"));
            }
        }
        Message::ai("Bonjour").with_id("m1")
    }
    let mut g = StateGraph::<Chat>::new();
    g.add_node("agent", |_: Arc<Chat>| async move {
        let reply = client_call();
        Ok::<_, NodeError>(Chat::delta().messages(vec![reply]))
    });
    g.add_edge(START, "agent");
    g.add_edge("agent", END);
    let app = g.compile().unwrap();
    let events = collect(app.stream(Chat::delta(), StreamMode::MESSAGES)).await;
    let chunks: Vec<(&str, &str)> = events
        .iter()
        .filter(|(mode, _)| mode == "messages")
        .map(|(_, data)| {
            (
                data[0]["content"].as_str().unwrap(),
                data[1]["langgraph_node"].as_str().unwrap(),
            )
        })
        .collect();
    // The two tokens; the returned message (same id) is not streamed again.
    assert_eq!(chunks, [("Bon", "agent"), ("jour", "agent")]);
    assert!(state_graph::message_stream().is_none());
    // Not streamed: the client finds no stream.
    let out = app.invoke(Chat::delta()).await.unwrap();
    assert_eq!(out.messages.len(), 1);
}
