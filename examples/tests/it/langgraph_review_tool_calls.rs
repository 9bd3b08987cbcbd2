//! Reviewing a tool call before it runs, end to end: the breakpoint before
//! `human_review_node` (nothing of the tool ran), an approval that goes on
//! with no input (another worker's), an edit of the call and feedback
//! instead of it, each written with `update_state` as `human_review_node`,
//! and what runs after each: the model's call is never made twice.

use crate::stores::TestStore;
use serde_json::json;
use state_core::{MessageKind, State};
use state_examples::langgraph::review_tool_calls::{
    FEEDBACK, ReviewState, build_graph, edit_tool_call, feedback_for_tool_call,
};
use state_examples::langgraph::snapshots_since;
use state_graph::{CompiledGraph, Outcome};

const SF: &str = "what's the weather in sf?";

async fn ask(app: &CompiledGraph<ReviewState>, thread: &str, text: &str) -> Outcome<ReviewState> {
    app.invoke_thread(thread, ReviewState::delta().messages([("user", text)]))
        .await
        .unwrap()
}

/// The nodes that ran on `thread`, in order, from its snapshots: the
/// supersteps (`source: loop`), not the input, the edits (`update`) or the
/// pauses.
async fn ran(app: &CompiledGraph<ReviewState>, thread: &str) -> Vec<String> {
    let snapshots = snapshots_since(app, thread, 0).await.unwrap();
    snapshots
        .iter()
        .filter(|s| s.metadata()["source"] == "loop")
        .flat_map(|s| {
            let nodes = s.metadata()["nodes"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            nodes
                .into_iter()
                .map(|n| n.as_str().unwrap_or_default().to_owned())
        })
        .collect()
}

/// The kinds of the thread's messages, in order.
fn kinds(state: &ReviewState) -> Vec<MessageKind> {
    state.base.messages.iter().map(|m| m.kind()).collect()
}

async fn no_tool_call_no_review(ts: TestStore) {
    let app = build_graph(ts.store.clone()).unwrap();
    let out = ask(&app, "1", "hi!").await;
    assert!(!out.is_interrupted(), "{}", ts.name);
    assert!(app.get_state("1").await.unwrap().next().is_empty());
    assert_eq!(ran(&app, "1").await, ["call_llm"]);
}

async fn an_approved_call_runs_once_the_run_goes_on(ts: TestStore) {
    let app = build_graph(ts.store.clone()).unwrap();
    let out = ask(&app, "2", SF).await;
    assert!(out.is_interrupted());
    assert!(
        out.interrupts().is_empty(),
        "a breakpoint, not an interrupt"
    );
    assert_eq!(out.next(), ["human_review_node"]);
    assert_eq!(kinds(out.state()), [MessageKind::Human, MessageKind::Ai]);
    let call = out.state().base.messages[1].tool_calls()[0].clone();
    assert_eq!(call.args, json!({"city": "San Francisco"}));

    // Another worker approves: the run goes on, with no input.
    let worker = build_graph(ts.another_worker().await).unwrap();
    assert_eq!(
        worker.get_state("2").await.unwrap().next(),
        ["human_review_node"]
    );
    let done = worker.continue_thread("2").await.unwrap();
    assert!(
        !done.is_interrupted(),
        "{}: the breakpoint was passed",
        ts.name
    );
    assert_eq!(
        ran(&app, "2").await,
        ["call_llm", "human_review_node", "run_tool", "call_llm"],
        "{}: the first call_llm is not run again",
        ts.name
    );
    let messages = &done.state().base.messages;
    assert_eq!(
        messages[1],
        out.state().base.messages[1],
        "the call as made"
    );
    assert_eq!(messages[2].tool_call_id(), call.id.as_deref());
    assert_eq!(messages[2].text(), "Sunny!");
    assert_eq!(messages[3].text(), "The weather in San Francisco is sunny!");
}

async fn an_edited_call_replaces_the_message_and_runs(ts: TestStore) {
    let app = build_graph(ts.store.clone()).unwrap();
    ask(&app, "5", SF).await;
    let state = app.get_state("5").await.unwrap();
    let original = state.state().base.messages[1].clone();
    let new_message = edit_tool_call(state.state(), json!({"city": "San Francisco, USA"})).unwrap();
    assert_eq!(new_message.id(), original.id());

    let seq = app
        .update_state(
            "5",
            ReviewState::delta().messages(vec![new_message]),
            Some("human_review_node"),
        )
        .await
        .unwrap();
    let edited = app.get_state("5").await.unwrap();
    assert_eq!(edited.seq(), seq);
    assert_eq!(
        edited.next(),
        ["run_tool"],
        "{}: as if human_review_node ran",
        ts.name
    );
    assert_eq!(edited.metadata()["source"], "update");
    assert_eq!(edited.state().base.messages.len(), 2, "replaced, not added");

    let done = app.continue_thread("5").await.unwrap();
    assert!(!done.is_interrupted());
    assert_eq!(
        ran(&app, "5").await,
        ["call_llm", "run_tool", "call_llm"],
        "{}: human_review_node never ran; the edit stands for it",
        ts.name
    );
    let messages = &done.state().base.messages;
    assert_eq!(
        messages[1].tool_calls()[0].args,
        json!({"city": "San Francisco, USA"})
    );
    assert_eq!(messages[1].tool_calls()[0].id, original.tool_calls()[0].id);
    assert_eq!(
        messages[3].text(),
        "The weather in San Francisco, USA is sunny!"
    );
    // What a values stream would have shown after the edit: the tool, then the model.
    let after: Vec<MessageKind> = snapshots_since(&app, "5", seq)
        .await
        .unwrap()
        .iter()
        .map(|s| s.state().base.messages.last().unwrap().kind())
        .collect();
    assert_eq!(after, [MessageKind::Tool, MessageKind::Ai]);
}

async fn feedback_goes_back_to_the_model_and_is_reviewed_again(ts: TestStore) {
    let app = build_graph(ts.store.clone()).unwrap();
    ask(&app, "6", SF).await;
    let state = app.get_state("6").await.unwrap();
    let feedback = feedback_for_tool_call(state.state(), FEEDBACK).unwrap();
    app.update_state(
        "6",
        ReviewState::delta().messages(vec![feedback]),
        Some("human_review_node"),
    )
    .await
    .unwrap();
    assert_eq!(app.get_state("6").await.unwrap().next(), ["call_llm"]);

    // The model calls again, with the country: a new breakpoint.
    let out = app.continue_thread("6").await.unwrap();
    assert!(out.is_interrupted(), "{}", ts.name);
    assert_eq!(out.next(), ["human_review_node"]);
    let call = &out.state().base.messages.last().unwrap().tool_calls()[0];
    assert_eq!(call.args, json!({"city": "San Francisco, USA"}));
    assert_eq!(
        ran(&app, "6").await,
        ["call_llm", "call_llm"],
        "{}: no tool ran yet",
        ts.name
    );

    // Approved this time.
    let done = app.continue_thread("6").await.unwrap();
    assert!(!done.is_interrupted());
    assert_eq!(
        kinds(done.state()),
        [
            MessageKind::Human,
            MessageKind::Ai,
            MessageKind::Tool,
            MessageKind::Ai,
            MessageKind::Tool,
            MessageKind::Ai
        ]
    );
    assert_eq!(done.state().base.messages[2].text(), FEEDBACK);
    assert_eq!(done.state().base.messages[4].text(), "Sunny!");
}

on_both_stores!(
    no_tool_call_no_review,
    an_approved_call_runs_once_the_run_goes_on,
    an_edited_call_replaces_the_message_and_runs,
    feedback_goes_back_to_the_model_and_is_reviewed_again,
);
