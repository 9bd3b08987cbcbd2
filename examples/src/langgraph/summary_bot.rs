//! LangGraph's "how to add summary of the conversation history": once the
//! history is longer than six messages, a node asks the model for a
//! summary, stores it in `summary`, and deletes all but the last two
//! messages with `RemoveMessage`: a conditional edge after the
//! `conversation` node ([`build_graph`]). The Python original heads
//! `examples/langgraph/summary_bot.rs`.
//!
//! `RemoveMessage(id=m.id)` is `Message::remove(id)`: a removal travels in
//! the `messages` update, and `add_messages` deletes the message.

use state_core::{AgentState, Message, MessageKind, MessagesState, State};
use state_graph::{CompiledGraph, END, GraphError, START, StateGraph};
use std::sync::{Arc, Mutex};

/// Messages kept after a summary (`state["messages"][:-2]` are deleted).
pub const KEEP_LAST: usize = 2;
/// A history longer than this is summarized (`len(messages) > 6`).
pub const MAX_MESSAGES: usize = 6;

/// The bot's state (Python: `class State(MessagesState): summary: str`).
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct SummaryState {
    /// The conversation since the last summary: `messages`, merged with
    /// `add_messages`, with its setter on this state's delta.
    #[state(flatten)]
    pub base: MessagesState,
    /// What the deleted messages said; empty until the first summary.
    pub summary: String,
}

/// The chat model, canned: it answers a question with a fixed reply and a
/// summary request with the human messages it was sent, after the summary
/// the request extends. Its replies get the ids `ai-1`, `ai-2`, ...
///
/// Shared by the graph's two nodes (and safe to share between runs), so
/// what it keeps is behind a lock.
#[derive(Debug, Default)]
pub struct CannedModel {
    log: Mutex<ModelLog>,
}

#[derive(Debug, Default)]
struct ModelLog {
    calls: usize,
    inputs: Vec<Vec<Message>>,
}

/// The start of a request for a first summary.
const CREATE_SUMMARY: &str = "Create a summary of the conversation above:";
/// The start of a request to extend a summary.
const EXTEND_SUMMARY: &str = "This is summary of the conversation to date: ";
/// What ends the summary in a request to extend it.
const EXTEND_INSTRUCTION: &str =
    "\n\nExtend the summary by taking into account the new messages above:";

impl CannedModel {
    /// Every list of messages the model was sent, in order.
    pub fn inputs(&self) -> Vec<Vec<Message>> {
        self.lock().inputs.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ModelLog> {
        self.log.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `model.invoke(messages)`.
    pub fn invoke(&self, messages: Vec<Message>) -> Message {
        let request = messages.last().map(Message::text).unwrap_or_default();
        let said = || {
            messages
                .iter()
                .filter(|m| m.kind() == MessageKind::Human && m.text() != request)
                .map(Message::text)
                .collect::<Vec<_>>()
                .join(" / ")
        };
        let reply = if request == CREATE_SUMMARY {
            format!("The user said: {}", said())
        } else if let Some(rest) = request.strip_prefix(EXTEND_SUMMARY) {
            let summary = rest.strip_suffix(EXTEND_INSTRUCTION).unwrap_or(rest);
            format!("{summary} / {}", said())
        } else {
            format!("Noted: {request}")
        };
        let mut log = self.lock();
        log.calls += 1;
        log.inputs.push(messages);
        Message::ai(reply).with_id(format!("ai-{}", log.calls))
    }
}

/// Node `conversation`: the model answers, reading the summary first when
/// there is one.
pub fn call_model(model: &CannedModel, state: &SummaryState) -> SummaryStateDelta {
    let summary = &state.summary;
    let mut messages = vec![];
    if !summary.is_empty() {
        let system_message = format!("Summary of conversation earlier: {summary}");
        messages.push(Message::system(system_message));
    }
    messages.extend(state.base.messages.iter().cloned());
    let response = model.invoke(messages);
    SummaryState::delta().messages(response)
}

/// After `conversation`: summarize a history longer than [`MAX_MESSAGES`].
pub fn should_continue(state: &SummaryState) -> &'static str {
    if state.base.messages.len() > MAX_MESSAGES {
        "summarize_conversation"
    } else {
        END
    }
}

/// Node `summarize_conversation`: a new or extended summary, and a
/// `RemoveMessage` for every message but the last [`KEEP_LAST`].
pub fn summarize_conversation(model: &CannedModel, state: &SummaryState) -> SummaryStateDelta {
    let summary = &state.summary;
    let summary_message = if summary.is_empty() {
        CREATE_SUMMARY.to_owned()
    } else {
        format!("{EXTEND_SUMMARY}{summary}{EXTEND_INSTRUCTION}")
    };
    let mut messages: Vec<Message> = state.base.messages.iter().cloned().collect();
    messages.push(Message::human(summary_message));
    let response = model.invoke(messages);
    let keep_from = state.base.messages.len().saturating_sub(KEEP_LAST);
    let delete_messages: Vec<Message> = state.base.messages.as_slice()[..keep_from]
        .iter()
        .filter_map(Message::id)
        .map(Message::remove)
        .collect();
    SummaryState::delta()
        .summary(response.text())
        .messages(delete_messages)
}

/// The tutorial's graph (Python: `workflow`, then
/// `workflow.compile(checkpointer=memory)`), its nodes calling `model`:
///
/// ```text
/// START -> conversation -?-> summarize_conversation | END
/// summarize_conversation -> END
/// ```
///
/// Give it a store (`.with_store(store)`) to keep the conversation on a
/// thread between runs, as the tutorial's checkpointer does.
pub fn build_graph(model: Arc<CannedModel>) -> Result<CompiledGraph<SummaryState>, GraphError> {
    let mut workflow = StateGraph::<SummaryState>::new();
    let m = Arc::clone(&model);
    workflow.add_node("conversation", move |s: &SummaryState| call_model(&m, s));
    // Python: `workflow.add_node(summarize_conversation)`, named after the
    // function.
    let m = Arc::clone(&model);
    workflow.add_node("summarize_conversation", move |s: &SummaryState| {
        summarize_conversation(&m, s)
    });
    workflow.add_edge(START, "conversation");
    // Python reads the targets from should_continue's `Literal[...]`
    // annotation; we list them.
    workflow.add_conditional_edges(
        "conversation",
        should_continue,
        ["summarize_conversation", END],
    );
    workflow.add_edge("summarize_conversation", END);
    workflow.compile()
}

/// The thread the walk-through runs on (`{"thread_id": "4"}`).
pub const THREAD: &str = "4";

/// The walk-through's user messages, with their ids.
pub const CONVERSATION: [(&str, &str); 7] = [
    ("h-1", "hi! I'm bob"),
    ("h-2", "what's my name?"),
    ("h-3", "i like the celtics!"),
    ("h-4", "i like how much they win"),
    ("h-5", "and their defense"),
    ("h-6", "who should I watch next?"),
    ("h-7", "thanks, that's all"),
];
