//! LangGraph's "how to add summary of the conversation history": once the
//! history is longer than six messages, a node asks the model for a
//! summary, stores it in `summary`, and deletes all but the last two
//! messages with `RemoveMessage`. The Python original heads
//! `examples/langgraph/summary_bot.rs`.
//!
//! `RemoveMessage(id=m.id)` is `Message::remove(id)`: a removal travels in
//! the `messages` update, and `add_messages` deletes the message.

use super::{END, RunError, Step};
use state_core::{AgentState, Message, MessageKind, MessagesState, State};

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
#[derive(Debug, Clone, Default)]
pub struct CannedModel {
    calls: usize,
    /// Every list of messages the model was sent, in order.
    pub inputs: Vec<Vec<Message>>,
}

/// The start of a request for a first summary.
const CREATE_SUMMARY: &str = "Create a summary of the conversation above:";
/// The start of a request to extend a summary.
const EXTEND_SUMMARY: &str = "This is summary of the conversation to date: ";
/// What ends the summary in a request to extend it.
const EXTEND_INSTRUCTION: &str =
    "\n\nExtend the summary by taking into account the new messages above:";

impl CannedModel {
    /// `model.invoke(messages)`.
    pub fn invoke(&mut self, messages: Vec<Message>) -> Message {
        self.calls += 1;
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
        self.inputs.push(messages);
        Message::ai(reply).with_id(format!("ai-{}", self.calls))
    }
}

/// Node `conversation`: the model answers, reading the summary first when
/// there is one.
pub fn call_model(model: &mut CannedModel, state: &SummaryState) -> SummaryStateDelta {
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
pub fn summarize_conversation(model: &mut CannedModel, state: &SummaryState) -> SummaryStateDelta {
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

/// One `app.invoke({"messages": [HumanMessage(text)]})`, the human message
/// with id `id`: `conversation`, then `summarize_conversation` when the
/// history is long. Returns the updates in order.
pub fn run(
    model: &mut CannedModel,
    state: &mut SummaryState,
    id: &str,
    text: &str,
) -> Result<Vec<Step>, RunError> {
    state.apply(SummaryState::delta().messages(Message::human(text).with_id(id)))?;
    let delta = call_model(model, state);
    let mut steps = vec![Step::new("conversation", &delta)];
    state.apply(delta)?;
    if should_continue(state) == "summarize_conversation" {
        let delta = summarize_conversation(model, state);
        steps.push(Step::new("summarize_conversation", &delta));
        state.apply(delta)?;
    }
    Ok(steps)
}

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
