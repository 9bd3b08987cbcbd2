//! A thread with a step of every kind the inspector shows: a turn reset,
//! an apply, supersteps with messages (a tool call and its answer), list
//! appends and map merges, a `set`, and a graph run paused on a question.

use serde_json::json;
use state_core::{AgentState, Message, Messages, State, ToolCall};
use state_graph::{Ctx, END, NodeError, START, StateGraph};
use state_store::Store;
use std::collections::BTreeMap;

/// The state of the inspector's test threads.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Desk {
    /// The conversation.
    #[reducer(add_messages)]
    pub messages: Messages,
    /// What happened, appended.
    #[reducer(append)]
    pub log: Vec<String>,
    /// Scores by name; later keys win.
    #[reducer(merge)]
    pub scores: BTreeMap<String, i64>,
    /// Overwritten.
    pub title: String,
    /// Back to "agent" at every turn.
    #[scope(turn)]
    #[default("agent")]
    pub next: String,
}

/// The question the graph run of [`desk_thread`] waits on.
pub const QUESTION: &str = "Book flight SK4035 for 2,100 NOK?";

fn plan(_: &Desk) -> DeskDelta {
    Desk::delta().log(vec!["plan: book SK4035".into()])
}

fn approve(_: &Desk, ctx: &Ctx) -> Result<DeskDelta, NodeError> {
    let answer = ctx.interrupt(json!(QUESTION))?;
    let answer = match answer {
        serde_json::Value::String(text) => text,
        other => other.to_string(),
    };
    Ok(Desk::delta().log(vec![format!("approved: {answer}")]))
}

/// The graph whose run pauses at step 8 of [`desk_thread`].
pub fn graph(store: &Store) -> state_graph::CompiledGraph<Desk> {
    let mut g = StateGraph::<Desk>::new();
    g.add_node("plan", plan);
    g.add_node("approve", approve);
    g.add_edge(START, "plan");
    g.add_edge("plan", "approve");
    g.add_edge("approve", END);
    g.compile()
        .expect("a valid graph")
        .with_store(store.clone())
}

/// Thread `id`, 8 steps:
/// 1. a turn reset;
/// 2. an apply: the user's message, the title;
/// 3. a superstep: `agent` calls a tool, `scorer` merges a score and logs;
/// 4. a superstep: `tools` answers the call, `logger` logs;
/// 5. a `set` of the title;
/// 6. a graph run's input (a turn begun with a message);
/// 7. its `plan` superstep;
/// 8. a pending step: `approve` asks [`QUESTION`].
pub async fn desk_thread(store: &Store, id: &str) {
    let mut t = store.thread::<Desk>(id).await.expect("open");
    t.begin_turn().await.expect("turn");
    t.apply(
        Desk::delta()
            .messages(vec![
                Message::human("Find <b>flights</b> to Oslo").with_id("h1"),
            ])
            .title("Trip"),
    )
    .await
    .expect("apply");
    let call = ToolCall::new("search_flights", json!({"to": "OSL"})).with_id("c1");
    let mut scores = BTreeMap::new();
    scores.insert("relevance".to_owned(), 3);
    t.apply_nodes([
        (
            "agent",
            Desk::delta().messages(vec![
                Message::ai("Searching.")
                    .with_id("a1")
                    .with_tool_calls([call]),
            ]),
        ),
        (
            "scorer",
            Desk::delta().scores(scores).log(vec!["scored".into()]),
        ),
    ])
    .await
    .expect("superstep");
    t.apply_nodes([
        (
            "tools",
            Desk::delta().messages(vec![Message::tool("3 flights found", "c1").with_id("t1")]),
        ),
        ("logger", Desk::delta().log(vec!["searched".into()])),
    ])
    .await
    .expect("superstep");
    t.set("title", json!("Trip to Oslo")).await.expect("set");
    drop(t);
    let out = graph(store)
        .invoke_thread(
            id,
            Desk::delta().messages(vec![Message::human("Book the cheapest").with_id("h2")]),
        )
        .await
        .expect("the run");
    assert!(out.is_interrupted());
    assert_eq!(store.thread_info(id).await.expect("info").seq, 8);
}
