//! LangGraph's "How to Review Tool Calls": the model decides on a tool
//! call, the run stops at a static breakpoint before `human_review_node`
//! (`interrupt_before`), and a person approves the call (the run goes on
//! with no input), edits it (`update_state` with a message of the same id,
//! as `human_review_node`) or answers it with feedback (`update_state` with
//! a tool message) before the run goes on. The Python original heads
//! `examples/langgraph/review_tool_calls.rs`; [`build_graph`] is its
//! `builder`.
//!
//! LangGraph's calls and ours:
//! - `compile(checkpointer=memory, interrupt_before=["human_review_node"])`:
//!   `builder.interrupt_before(["human_review_node"])` before
//!   `compile()`, then `.with_store(store)`.
//! - `graph.get_state(thread).next`: `app.get_state(thread).await?.next()`.
//! - `graph.stream(None, thread)` (go on, no input):
//!   `app.continue_thread(thread)`. It is not streamed; the example prints
//!   the snapshots the run logged instead
//!   ([`snapshots_since`](super::snapshots_since)).
//! - `graph.update_state(thread, {"messages": [new_message]},
//!   as_node="human_review_node")`: `app.update_state(thread,
//!   ReviewState::delta().messages(..), Some("human_review_node"))`; the
//!   run then goes on from `human_review_node`'s edges, without stopping
//!   at its breakpoint again, as in LangGraph.
//!
//! Where the port differs:
//! - `builder.add_node(call_llm)` names a node after its function; ours
//!   names it.
//! - The routers' targets come from their `Literal[..]` annotations in the
//!   Python; ours are listed in `add_conditional_edges`.
//! - The model is canned ([`call_model`]): it calls `weather_search` for a
//!   question about the weather, again with the country once the user asks
//!   for it, and reports the tool's answer. Its messages get ids from the
//!   conversation's length (`ai-1`), the tool's from the call it answers
//!   (`tool-toolu_1`), so runs are repeatable.
//! - `weather_search` prints "Searching for: ..." in the Python; ours is a
//!   pure function: the example prints the tool calls from the log.

use super::NodeFailure;
use serde_json::json;
use state_core::{AgentState, Message, MessageKind, MessagesState, State, ToolCall};
use state_graph::{CompiledGraph, END, GraphError, START, StateGraph};
use state_store::Store;

/// Simple state (Python: `class State(MessagesState)`).
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct ReviewState {
    /// The conversation.
    #[state(flatten)]
    pub base: MessagesState,
}

/// Search for the weather (Python: the `weather_search` tool).
pub fn weather_search(_city: &str) -> String {
    "Sunny!".to_owned()
}

/// The feedback the how-to gives instead of running the call.
pub const FEEDBACK: &str = "User requested changes: pass in the country as well";

/// The model with `weather_search` bound, canned
/// (`model.invoke(state["messages"])`): a question about the weather gets
/// a `weather_search` call for San Francisco, feedback asking for the
/// country a call for "San Francisco, USA", the tool's answer a report of
/// it, anything else a greeting.
pub fn call_model(messages: &[Message]) -> Message {
    let n = messages.len();
    let reply = match messages.last() {
        Some(last)
            if last.kind() == MessageKind::Tool && last.text().starts_with("User requested") =>
        {
            weather_call(n, "San Francisco, USA")
        }
        Some(last) if last.kind() == MessageKind::Tool => {
            let city = asked_city(messages).unwrap_or_else(|| "San Francisco".to_owned());
            Message::ai(format!(
                "The weather in {city} is {}",
                last.text().to_lowercase()
            ))
        }
        Some(last) if last.text().to_lowercase().contains("weather") => {
            weather_call(n, "San Francisco")
        }
        _ => Message::ai("Hello! How can I assist you today?"),
    };
    reply.with_id(format!("ai-{n}"))
}

/// A `weather_search` call for `city`, its id from the position `n`.
fn weather_call(n: usize, city: &str) -> Message {
    Message::ai(format!("Let me look up the weather in {city} for you.")).with_tool_calls([
        ToolCall::new("weather_search", json!({"city": city})).with_id(format!("toolu_{n}")),
    ])
}

/// The city of the last `weather_search` call.
fn asked_city(messages: &[Message]) -> Option<String> {
    messages.iter().rev().find_map(|m| {
        m.tool_calls()
            .iter()
            .find(|c| c.name == "weather_search")
            .and_then(|c| c.args["city"].as_str().map(str::to_owned))
    })
}

/// Node `call_llm`: the model's reply.
pub fn call_llm(state: &ReviewState) -> ReviewStateDelta {
    let messages = state.base.messages.as_slice();
    ReviewState::delta().messages(vec![call_model(messages)])
}

/// Node `human_review_node`: does nothing. The run stops before it, and a
/// person's edit is written as if by it (`update_state(.., as_node=..)`).
pub fn human_review_node(_state: &ReviewState) -> ReviewStateDelta {
    ReviewState::delta()
}

/// Node `run_tool`: runs every tool call of the last message and answers
/// each with a tool message.
pub fn run_tool(state: &ReviewState) -> Result<ReviewStateDelta, NodeFailure> {
    let calls = state
        .base
        .messages
        .last()
        .map_or(&[][..], Message::tool_calls);
    let mut new_messages = Vec::new();
    for tool_call in calls {
        // `tools[tool_call["name"]]`: a tool the model made up is a KeyError.
        let result = match tool_call.name.as_str() {
            "weather_search" => weather_search(tool_call.args["city"].as_str().unwrap_or_default()),
            other => {
                return Err(NodeFailure::new(
                    "run_tool",
                    format!("no tool named {other:?}"),
                ));
            }
        };
        let id = format!("tool-{}", tool_call.id.as_deref().unwrap_or_default());
        new_messages.push(Message::tool_result(tool_call, result).with_id(id));
    }
    Ok(ReviewState::delta().messages(new_messages))
}

/// After `call_llm`: a reply without tool calls ends the run; one with
/// calls goes to the review.
pub fn route_after_llm(state: &ReviewState) -> &'static str {
    match state.base.messages.last() {
        Some(last) if !last.tool_calls().is_empty() => "human_review_node",
        _ => END,
    }
}

/// After the review: an AI message (the call, approved or edited) goes to
/// the tool; anything else (the user's feedback as a tool message) back to
/// the model.
pub fn route_after_human(state: &ReviewState) -> &'static str {
    match state.base.messages.last() {
        Some(last) if last.kind() == MessageKind::Ai => "run_tool",
        _ => "call_llm",
    }
}

/// The how-to's graph (Python: `builder`, compiled with `checkpointer=memory,
/// interrupt_before=["human_review_node"]`), its threads in `store`:
///
/// ```text
/// START -> call_llm -?-> human_review_node (breakpoint before) | END
/// human_review_node -?-> run_tool | call_llm
/// run_tool -> call_llm
/// ```
pub fn build_graph(store: Store) -> Result<CompiledGraph<ReviewState>, GraphError> {
    let mut builder = StateGraph::<ReviewState>::new();
    builder.add_node("call_llm", call_llm);
    builder.add_node("run_tool", run_tool);
    builder.add_node("human_review_node", human_review_node);
    builder.add_edge(START, "call_llm");
    builder.add_conditional_edges("call_llm", route_after_llm, [END, "human_review_node"]);
    builder.add_conditional_edges(
        "human_review_node",
        route_after_human,
        ["run_tool", "call_llm"],
    );
    builder.add_edge("run_tool", "call_llm");
    builder.interrupt_before(["human_review_node"]);
    Ok(builder.compile()?.with_store(store))
}

/// The how-to's edit: the last message's tool call, with new arguments,
/// in a message of the same id (so `add_messages` replaces it) and the
/// same content and call id.
///
/// # Errors
///
/// When the last message calls no tool.
pub fn edit_tool_call(
    state: &ReviewState,
    args: serde_json::Value,
) -> Result<Message, NodeFailure> {
    let last = state
        .base
        .messages
        .last()
        .ok_or_else(|| NodeFailure::new("review", "no message to edit"))?;
    let call = last
        .tool_calls()
        .first()
        .ok_or_else(|| NodeFailure::new("review", "the last message calls no tool"))?;
    let mut edited = ToolCall::new(call.name.clone(), args);
    edited.id = call.id.clone();
    let mut message = Message::ai(last.content().clone()).with_tool_calls([edited]);
    if let Some(id) = last.id() {
        // This is important: the same id replaces the message; another
        // would add a second one.
        message = message.with_id(id);
    }
    Ok(message)
}

/// The how-to's feedback: a tool message answering the last message's
/// tool call with `feedback`, instead of the tool's result.
///
/// # Errors
///
/// When the last message calls no tool.
pub fn feedback_for_tool_call(state: &ReviewState, feedback: &str) -> Result<Message, NodeFailure> {
    let call = state
        .base
        .messages
        .last()
        .and_then(|m| m.tool_calls().first())
        .ok_or_else(|| NodeFailure::new("review", "the last message calls no tool"))?;
    Ok(Message::tool_result(call, feedback))
}
