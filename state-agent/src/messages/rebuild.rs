//! Copies of a message with some fields changed (`Message` has builders
//! for everything but its content and its kind).

use state_core::{Content, Message, MessageKind, ToolCall};

/// `message` with `content` instead of its own: LangChain's
/// `model_copy(update={"content": ...})`.
pub(crate) fn with_content(message: &Message, content: Content) -> Message {
    rebuilt(message, content, message.tool_calls().to_vec())
}

/// `message` with `content` and `tool_calls` instead of its own.
pub(crate) fn rebuilt(message: &Message, content: Content, tool_calls: Vec<ToolCall>) -> Message {
    let mut copy = match message.kind() {
        MessageKind::Human => Message::human(content),
        MessageKind::Ai => Message::ai(content),
        MessageKind::System => Message::system(content),
        MessageKind::Tool => Message::tool(content, message.tool_call_id().unwrap_or_default()),
        MessageKind::Function => Message::function(content, message.name().unwrap_or_default()),
        MessageKind::Chat => Message::chat(message.role().unwrap_or_default(), content),
        // A removal has no content to change.
        _ => return message.clone(),
    };
    if let Some(id) = message.id() {
        copy = copy.with_id(id);
    }
    if let Some(name) = message.name() {
        copy = copy.with_name(name);
    }
    if let Some(id) = message.tool_call_id() {
        copy = copy.with_tool_call_id(id);
    }
    if !tool_calls.is_empty() {
        copy = copy.with_tool_calls(tool_calls);
    }
    for (key, value) in message.extra() {
        copy = copy.with_extra(key.clone(), value.clone());
    }
    copy
}

/// LangChain's `_is_message_type`: whether `message` is of one of `kinds`.
pub(crate) fn is_kind(message: &Message, kinds: &[MessageKind]) -> bool {
    kinds.contains(&message.kind())
}
