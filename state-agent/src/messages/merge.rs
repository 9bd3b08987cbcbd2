//! [`merge_message_runs`]: LangChain's `merge_message_runs`, to the same
//! messages.

use super::merge_json::{add_usage, is_falsy, merge_dicts, merge_lists};
use super::partial_json::parse_partial_json;
use super::python::json_dumps;
use serde_json::{Map, Value, json};
use state_core::{Content, Message, MessageKind, ToolCall};

/// Merges each run of consecutive messages of the same kind into one, as
/// LangChain's `merge_message_runs` does with its default `"\n"` between
/// two texts (see [`merge_message_runs_with_separator`]).
///
/// ```
/// use state_agent::merge_message_runs;
/// use state_core::Message;
///
/// let merged = merge_message_runs(&[
///     Message::human("Hi!").with_id("1"),
///     Message::human("Are you there?").with_id("2"),
///     Message::ai("Yes."),
/// ]);
/// assert_eq!(merged, [Message::human("Hi!\nAre you there?").with_id("1"), Message::ai("Yes.")]);
/// ```
pub fn merge_message_runs(messages: &[Message]) -> Vec<Message> {
    merge_message_runs_with_separator(messages, "\n")
}

/// [`merge_message_runs`] with `separator` between two non-empty texts
/// (LangChain's `chunk_separator`).
///
/// Merged as LangChain merges message chunks: the first message's id (an
/// AI message's: the first that is not LangChain's own `lc_..`), texts
/// joined, content blocks and texts into one list (blocks with the same
/// `index` merged), tool calls one after the other (invalid ones whose
/// arguments now parse as an object become calls), `additional_kwargs`
/// merged, the usage added, and the first message's `response_metadata`
/// kept. Names, and keys that are not LangChain's fields, are not kept, as
/// in LangChain. Tool messages are never merged, nor removals.
///
/// Where LangChain raises, this does not: chat messages of two roles and
/// function messages of two names are left apart, and of two values of
/// `additional_kwargs` that cannot merge the first is kept.
///
/// ```
/// use state_agent::merge_message_runs_with_separator;
/// use state_core::Message;
/// use serde_json::json;
///
/// let merged = merge_message_runs_with_separator(
///     &[Message::human("a"), Message::human(vec![json!({"type": "text", "text": "b"})])],
///     " ",
/// );
/// // A text and blocks make a list of blocks; no separator is added.
/// assert_eq!(merged, [Message::human(vec![json!("a"), json!({"type": "text", "text": "b"})])]);
/// ```
pub fn merge_message_runs_with_separator(messages: &[Message], separator: &str) -> Vec<Message> {
    let mut merged: Vec<Message> = Vec::with_capacity(messages.len());
    for message in messages {
        match merged.last_mut() {
            Some(last) if mergeable(last, message) => *last = merge_pair(last, message, separator),
            _ => merged.push(message.clone()),
        }
    }
    merged
}

fn mergeable(last: &Message, next: &Message) -> bool {
    last.kind() == next.kind()
        && match next.kind() {
            MessageKind::Human | MessageKind::Ai | MessageKind::System => true,
            MessageKind::Chat => last.role() == next.role(),
            MessageKind::Function => last.name() == next.name(),
            _ => false,
        }
}

fn object<'a>(message: &'a Message, key: &str) -> Option<&'a Map<String, Value>> {
    message.extra().get(key).and_then(Value::as_object)
}

fn merge_pair(last: &Message, next: &Message, separator: &str) -> Message {
    let mut left = last.content().clone();
    if let (Content::Text(a), Content::Text(b)) = (&mut left, next.content())
        && !a.is_empty()
        && !b.is_empty()
    {
        a.push_str(separator);
    }
    let content = merge_content(left, next.content());
    let empty = Map::new();
    let kwargs = merge_dicts(
        object(last, "additional_kwargs").unwrap_or(&empty),
        object(next, "additional_kwargs").unwrap_or(&empty),
    );
    // The next message's response_metadata is cleared before the merge.
    let metadata = object(last, "response_metadata")
        .cloned()
        .unwrap_or_default();
    let mut message = match last.kind() {
        MessageKind::Ai => return merge_ai(last, next, content, kwargs, metadata),
        MessageKind::Human => Message::human(content),
        MessageKind::System => Message::system(content),
        MessageKind::Chat => Message::chat(last.role().unwrap_or_default(), content),
        MessageKind::Function => Message::function(content, last.name().unwrap_or_default()),
        _ => return last.clone(),
    };
    if let Some(id) = last.id() {
        message = message.with_id(id);
    }
    with_maps(message, kwargs, metadata)
}

fn with_maps(
    mut message: Message,
    kwargs: Map<String, Value>,
    metadata: Map<String, Value>,
) -> Message {
    if !kwargs.is_empty() {
        message = message.with_extra("additional_kwargs", Value::Object(kwargs));
    }
    if !metadata.is_empty() {
        message = message.with_extra("response_metadata", Value::Object(metadata));
    }
    message
}

/// LangChain's `merge_content` of two contents.
fn merge_content(left: Content, right: &Content) -> Content {
    match (left, right) {
        (Content::Text(mut a), Content::Text(b)) => {
            a.push_str(b);
            Content::Text(a)
        }
        (Content::Text(a), Content::Blocks(b)) => Content::Blocks(
            std::iter::once(Value::String(a))
                .chain(b.iter().cloned())
                .collect(),
        ),
        (Content::Blocks(a), Content::Blocks(b)) => Content::Blocks(merge_lists(&a, b)),
        (Content::Blocks(mut a), Content::Text(b)) => {
            if let Some(Value::String(last)) = a.last_mut() {
                last.push_str(b);
            } else if !b.is_empty() && !a.is_empty() {
                a.push(Value::String(b.clone()));
            }
            Content::Blocks(a)
        }
    }
}

/// A tool-call chunk, as LangChain makes them of an AI message's calls.
struct CallChunk {
    name: Value,
    args: Option<String>,
    id: Value,
}

fn call_chunks(message: &Message, into: &mut Vec<CallChunk>) {
    for call in message.tool_calls() {
        into.push(CallChunk {
            name: Value::String(call.name.clone()),
            args: Some(json_dumps(&call.args)),
            id: call.id.clone().map_or(Value::Null, Value::String),
        });
    }
    let invalid = message
        .extra()
        .get("invalid_tool_calls")
        .and_then(Value::as_array);
    for call in invalid.into_iter().flatten() {
        into.push(CallChunk {
            name: call.get("name").cloned().unwrap_or(Value::Null),
            args: call.get("args").and_then(Value::as_str).map(str::to_owned),
            id: call.get("id").cloned().unwrap_or(Value::Null),
        });
    }
}

/// LangChain's `add_ai_message_chunks` of the two, made a message again.
fn merge_ai(
    last: &Message,
    next: &Message,
    content: Content,
    kwargs: Map<String, Value>,
    metadata: Map<String, Value>,
) -> Message {
    let mut chunks = Vec::new();
    call_chunks(last, &mut chunks);
    call_chunks(next, &mut chunks);
    let mut calls = Vec::new();
    let mut invalid = Vec::new();
    for chunk in chunks {
        let args = match chunk.args.as_deref() {
            None | Some("") => Some(json!({})),
            Some(text) => parse_partial_json(text),
        };
        match args {
            Some(args @ Value::Object(_)) => {
                let mut call = ToolCall::new(chunk.name.as_str().unwrap_or_default(), args);
                call.id = chunk.id.as_str().map(str::to_owned);
                calls.push(call);
            }
            _ => invalid.push(json!({
                "name": chunk.name, "args": chunk.args, "id": chunk.id,
                "error": null, "type": "invalid_tool_call",
            })),
        }
    }
    let (left_usage, right_usage) = (
        last.extra().get("usage_metadata"),
        next.extra().get("usage_metadata"),
    );
    let usage =
        if left_usage.is_some_and(|u| !is_falsy(u)) || right_usage.is_some_and(|u| !u.is_null()) {
            Some(add_usage(left_usage, right_usage))
        } else {
            None
        };
    let mut message = Message::ai(content).with_tool_calls(calls);
    if let Some(id) = best_id([last.id(), next.id()]) {
        message = message.with_id(id);
    }
    message = with_maps(message, kwargs, metadata);
    if !invalid.is_empty() {
        message = message.with_extra("invalid_tool_calls", Value::Array(invalid));
    }
    if let Some(usage) = usage {
        message = message.with_extra("usage_metadata", usage);
    }
    message
}

/// The id of merged AI chunks: the first provider's id, else the first
/// `lc_run-..`, else the first other.
fn best_id(ids: [Option<&str>; 2]) -> Option<&str> {
    let mut best: Option<(u8, &str)> = None;
    for id in ids.into_iter().flatten().filter(|id| !id.is_empty()) {
        if !id.starts_with("lc_") {
            return Some(id);
        }
        let rank = u8::from(id.starts_with("lc_run-"));
        if best.is_none_or(|(r, _)| rank > r) {
            best = Some((rank, id));
        }
    }
    best.map(|(_, id)| id)
}
