//! A model called inside a node streams its tokens into the run's
//! `messages` mode on its own: their concatenation is the reply, under one
//! id, and the reply the node returns is not streamed again.

use futures::StreamExt;
use serde_json::Value;
use state_agent::{ChatModelExt, FakeChatModel};
use state_core::{Message, MessagesState, State};
use state_graph::{END, NodeError, START, StateGraph, StreamMode};
use std::sync::Arc;

#[tokio::test]
async fn a_models_tokens_reach_the_stream_on_their_own() {
    let model = FakeChatModel::new([Message::ai("The weather in Oslo is mild.")]).chunk_size(5);
    let mut g = StateGraph::<MessagesState>::new();
    let m = model.clone();
    g.add_node("agent", move |s: Arc<MessagesState>| {
        let model = m.clone();
        async move {
            let reply = model
                .invoke(s.messages.iter().cloned().collect::<Vec<_>>())
                .await?;
            Ok::<_, NodeError>(MessagesState::delta().messages(vec![reply]))
        }
    });
    g.add_edge(START, "agent").add_edge("agent", END);
    let app = g.compile().unwrap();
    let events: Vec<(String, Value)> = app
        .stream(
            MessagesState::delta().messages(vec![Message::human("weather?")]),
            StreamMode::MESSAGES | StreamMode::VALUES,
        )
        .map(|e| {
            let e = e.unwrap();
            (e.mode().to_owned(), e.data().unwrap())
        })
        .collect()
        .await;
    let chunks: Vec<&Value> = events
        .iter()
        .filter(|(mode, _)| mode == "messages")
        .map(|(_, data)| data)
        .collect();
    assert!(chunks.len() > 3, "{chunks:?}");
    let text: String = chunks
        .iter()
        .map(|c| c[0]["content"].as_str().unwrap())
        .collect();
    assert_eq!(text, "The weather in Oslo is mild.");
    let ids: Vec<&str> = chunks
        .iter()
        .map(|c| c[0]["id"].as_str().unwrap())
        .collect();
    assert!(ids.iter().all(|id| *id == ids[0]), "one id: {ids:?}");
    assert!(chunks.iter().all(|c| c[1]["langgraph_node"] == "agent"));
    // The state's reply has the streamed id.
    let last = &events
        .iter()
        .rev()
        .find(|(mode, _)| mode == "values")
        .unwrap()
        .1;
    assert_eq!(last["messages"][1]["id"], ids[0]);
    assert_eq!(
        last["messages"][1]["content"],
        "The weather in Oslo is mild."
    );
    // Streamed once: no message event after the tokens for the reply.
    assert_eq!(
        chunks
            .iter()
            .filter(|c| c[0]["content"] == "The weather in Oslo is mild.")
            .count(),
        0
    );
}
