//! The summary bot, end to end on thread "4" of an in-memory store: each
//! run's node path (the conditional summarization edge taken or not, read
//! back from the store's history), the summary and the ids of the messages
//! left; the system message carrying the summary; `RemoveMessage` as a
//! delta.

use state_core::{Message, MessageKind, State};
use state_examples::langgraph::summary_bot::{
    CONVERSATION, CannedModel, SummaryState, THREAD, build_graph, call_model, should_continue,
    summarize_conversation,
};
use state_examples::langgraph::{node_path, supersteps, updates};
use state_graph::{END, StreamMode};
use state_store::Store;
use std::sync::Arc;

fn ids(state: &SummaryState) -> Vec<&str> {
    state.base.messages.iter().filter_map(Message::id).collect()
}

fn said(id: &str, text: &str) -> state_examples::langgraph::summary_bot::SummaryStateDelta {
    SummaryState::delta().messages(Message::human(text).with_id(id))
}

#[tokio::test]
async fn the_conversation_summarizes_twice_and_keeps_the_last_two() {
    let model = Arc::new(CannedModel::default());
    let store = Store::memory();
    let app = build_graph(model.clone())
        .unwrap()
        .with_store(store.clone());
    let mut summarized_at = vec![];
    let mut state = SummaryState::default();
    for (turn, (id, text)) in CONVERSATION.into_iter().enumerate() {
        let turn = turn + 1;
        let before = store.thread::<SummaryState>(THREAD).await.unwrap().seq();
        let out = app.invoke_thread(THREAD, said(id, text)).await.unwrap();
        let path = node_path(&store, THREAD, before).await.unwrap();
        // The conditional edge: summarize once the history passes six.
        if path == ["conversation", "summarize_conversation"] {
            summarized_at.push(turn);
        } else {
            assert_eq!(path, ["conversation"], "turn {turn}");
        }
        state = out.into_state();
        if turn == 4 {
            // Eight messages: all but the last two are deleted.
            assert_eq!(ids(&state), ["h-4", "ai-4"]);
            assert_eq!(
                state.summary,
                "The user said: hi! I'm bob / what's my name? / i like the celtics! / \
                 i like how much they win"
            );
        }
    }
    assert_eq!(summarized_at, [4, 7]);
    // The summary's own call took id ai-5; replies resumed at ai-6.
    assert_eq!(ids(&state), ["h-7", "ai-8"]);
    // Extended, not replaced: it starts with the first summary, and adds
    // the human messages since (h-4 was kept, so it is counted again).
    assert!(
        state.summary.starts_with("The user said: hi! I'm bob"),
        "{}",
        state.summary
    );
    assert!(
        state
            .summary
            .ends_with("/ i like how much they win / and their defense / who should I watch next? / thanks, that's all"),
        "{}",
        state.summary
    );
    // The second summary request carried the first summary.
    let inputs = model.inputs();
    let request = inputs[8].last().unwrap().text();
    assert!(
        request.starts_with("This is summary of the conversation to date: The user said:"),
        "{request}"
    );
    // The thread kept it all: one superstep per node run, nine in all.
    let all = supersteps(&store, THREAD, 0).await.unwrap();
    assert_eq!(all.len(), CONVERSATION.len() + 2);
    assert!(all.iter().all(|nodes| nodes.len() == 1));
    let stored = store.thread::<SummaryState>(THREAD).await.unwrap();
    assert_eq!(stored.state(), &state);
}

#[tokio::test]
async fn a_streamed_turn_shows_the_removals_and_the_summary() {
    let app = build_graph(Arc::new(CannedModel::default()))
        .unwrap()
        .with_store(Store::memory());
    let mut last = vec![];
    for (id, text) in &CONVERSATION[..4] {
        let (steps, _) = updates(app.stream_thread(THREAD, said(id, text), StreamMode::UPDATES))
            .await
            .unwrap();
        last = steps;
    }
    let nodes: Vec<&str> = last.iter().map(|s| s.node.as_str()).collect();
    assert_eq!(nodes, ["conversation", "summarize_conversation"]);
    let removed: Vec<&str> = last[1].update["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            assert_eq!(m["type"], "remove");
            m["id"].as_str().unwrap()
        })
        .collect();
    assert_eq!(removed, ["h-1", "ai-1", "h-2", "ai-2", "h-3", "ai-3"]);
    assert!(
        last[1].update["summary"]
            .as_str()
            .unwrap()
            .starts_with("The user said: hi! I'm bob")
    );
}

#[test]
fn should_continue_summarizes_past_six_messages() {
    let mut state = SummaryState::default();
    for i in 0..6 {
        state
            .apply(SummaryState::delta().messages(Message::human("x").with_id(i.to_string())))
            .unwrap();
    }
    assert_eq!(should_continue(&state), END);
    state
        .apply(SummaryState::delta().messages(Message::ai("y").with_id("6")))
        .unwrap();
    assert_eq!(should_continue(&state), "summarize_conversation");
}

#[test]
fn call_model_puts_the_summary_first_when_there_is_one() {
    let model = CannedModel::default();
    let mut state = SummaryState::default();
    state
        .apply(SummaryState::delta().messages(Message::human("hello").with_id("h")))
        .unwrap();
    state.apply(call_model(&model, &state)).unwrap();
    assert_eq!(model.inputs()[0].len(), 1, "no summary, no system message");

    state
        .apply(SummaryState::delta().summary("Bob likes the Celtics."))
        .unwrap();
    let delta = call_model(&model, &state);
    let sent = &model.inputs()[1];
    assert_eq!(sent.len(), 3);
    assert_eq!(sent[0].kind(), MessageKind::System);
    assert_eq!(
        sent[0].text(),
        "Summary of conversation earlier: Bob likes the Celtics."
    );
    // The system message is only the model's input, never the state's.
    state.apply(delta).unwrap();
    assert_eq!(ids(&state), ["h", "ai-1", "ai-2"]);
}

#[test]
fn summarize_on_a_short_history_deletes_nothing_it_must_keep() {
    let model = CannedModel::default();
    let mut state = SummaryState::default();
    state
        .apply(SummaryState::delta().messages([Message::human("only").with_id("h-1")]))
        .unwrap();
    let delta = summarize_conversation(&model, &state);
    assert_eq!(
        delta.get_messages().and_then(|w| w.update()).map(Vec::len),
        Some(0)
    );
    state.apply(delta).unwrap();
    assert_eq!(ids(&state), ["h-1"]);
    assert_eq!(state.summary, "The user said: only");
}

#[test]
fn remove_message_travels_as_json_too() {
    let mut state = SummaryState::default();
    state
        .apply(SummaryState::delta().messages([
            Message::human("a").with_id("1"),
            Message::ai("b").with_id("2"),
            Message::human("c").with_id("3"),
        ]))
        .unwrap();
    state
        .apply_json(serde_json::json!({
            "messages": [{"type": "remove", "id": "2", "content": ""}],
            "summary": "a, then c"
        }))
        .unwrap();
    assert_eq!(ids(&state), ["1", "3"]);
    // RemoveMessage(id=REMOVE_ALL_MESSAGES): the history restarts.
    state
        .apply(
            SummaryState::delta()
                .messages([Message::remove_all(), Message::ai("fresh").with_id("4")]),
        )
        .unwrap();
    assert_eq!(ids(&state), ["4"]);
    assert_eq!(state.summary, "a, then c");
}
