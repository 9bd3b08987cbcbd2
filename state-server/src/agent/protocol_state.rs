//! State payloads as the v3 thread protocol sends them (`values` and
//! `updates` events): LangGraph's server (`state_normalizers.py`) drops
//! `__interrupt__` (it goes on the `input` channel) and sends each message
//! in the protocol's compact form: `type`, `content` (a string, or
//! content blocks), `id`, and only the fields a message of its type has
//! and that say something (`name`, a non-empty `response_metadata`, a
//! tool's `tool_call_id`, `status`, `artifact`, an AI message's
//! `tool_calls`).

use serde_json::{Map, Value, json};

/// The message types the protocol's state messages have.
const MESSAGE_TYPES: [&str; 8] = [
    "human",
    "user",
    "ai",
    "assistant",
    "system",
    "tool",
    "function",
    "remove",
];

/// Content block types the protocol knows, sent as they are.
const BLOCK_TYPES: [&str; 13] = [
    "text",
    "reasoning",
    "tool_call",
    "tool_call_chunk",
    "invalid_tool_call",
    "server_tool_call",
    "server_tool_call_chunk",
    "server_tool_call_result",
    "image",
    "audio",
    "video",
    "file",
    "non_standard",
];

/// A message's protocol type (`assistant` is `ai`, `user` is `human`, a
/// streamed chunk's type its message's), if `value` is a message.
pub(crate) fn message_type(value: &Value) -> Option<&str> {
    let kind = value.get("type")?.as_str()?;
    let kind = match kind {
        "assistant" | "AIMessageChunk" => "ai",
        "user" | "HumanMessageChunk" => "human",
        "SystemMessageChunk" => "system",
        "ToolMessageChunk" => "tool",
        other => other,
    };
    MESSAGE_TYPES.contains(&kind).then_some(kind)
}

/// A state payload (or a node's update) in the protocol's form.
pub(crate) fn state(value: &Value) -> Value {
    match value {
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| match message_type(item) {
                    Some(_) => message(item),
                    None => state(item),
                })
                .collect(),
        ),
        Value::Object(map) => {
            let mut out = Map::with_capacity(map.len());
            for (key, entry) in map {
                match (key.as_str(), entry) {
                    ("__interrupt__", _) => {}
                    ("messages", Value::Array(items)) => {
                        let items = items
                            .iter()
                            .map(|item| match message_type(item) {
                                Some(_) => message(item),
                                None => item.clone(),
                            })
                            .collect();
                        out.insert(key.clone(), Value::Array(items));
                    }
                    _ => {
                        out.insert(key.clone(), state(entry));
                    }
                }
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

/// One message in the protocol's compact form.
pub(crate) fn message(value: &Value) -> Value {
    let Some(kind) = message_type(value) else {
        return value.clone();
    };
    let mut out = Map::new();
    out.insert("type".into(), json!(kind));
    let content = value.get("content").cloned().unwrap_or(json!(""));
    out.insert("content".into(), content_blocks(content));
    for key in ["id", "name"] {
        if let Some(text @ Value::String(_)) = value.get(key) {
            out.insert(key.into(), text.clone());
        }
    }
    if matches!(kind, "ai" | "human")
        && let Some(example @ Value::Bool(_)) = value.get("example")
    {
        out.insert("example".into(), example.clone());
    }
    if let Some(Value::Object(metadata)) = value.get("response_metadata")
        && !metadata.is_empty()
    {
        out.insert("response_metadata".into(), json!(metadata));
    }
    match kind {
        "tool" => {
            if let Some(id @ Value::String(_)) = value.get("tool_call_id") {
                out.insert("tool_call_id".into(), id.clone());
            }
            if let Some(status) = value
                .get("status")
                .filter(|s| *s == "success" || *s == "error")
            {
                out.insert("status".into(), status.clone());
            }
            if let Some(artifact) = value.get("artifact") {
                out.insert("artifact".into(), artifact.clone());
            }
        }
        "ai" => {
            let calls = tool_calls(value);
            if !calls.is_empty() {
                out.insert("tool_calls".into(), Value::Array(calls));
            }
            if let Some(Value::Array(invalid)) = value.get("invalid_tool_calls")
                && !invalid.is_empty()
            {
                out.insert("invalid_tool_calls".into(), Value::Array(invalid.clone()));
            }
        }
        _ => {}
    }
    Value::Object(out)
}

/// An AI message's tool calls as protocol `tool_call` blocks:
/// `{type, name, args, id}`.
pub(crate) fn tool_calls(message: &Value) -> Vec<Value> {
    let Some(Value::Array(calls)) = message.get("tool_calls") else {
        return Vec::new();
    };
    calls
        .iter()
        .filter_map(|call| {
            let name = call.get("name")?.as_str()?;
            let mut block = Map::new();
            block.insert("type".into(), json!("tool_call"));
            block.insert("name".into(), json!(name));
            block.insert(
                "args".into(),
                call.get("args").cloned().unwrap_or_else(|| json!({})),
            );
            if let Some(id @ Value::String(_)) = call.get("id") {
                block.insert("id".into(), id.clone());
            }
            Some(Value::Object(block))
        })
        .collect()
}

/// A message's text: its content if a string, else its text blocks
/// joined.
pub(crate) fn text_of(message: &Value) -> String {
    match message.get("content") {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|block| match block {
                Value::String(text) => Some(text.as_str()),
                block if block.get("type") == Some(&json!("text")) => {
                    block.get("text").and_then(Value::as_str)
                }
                _ => None,
            })
            .collect(),
        _ => String::new(),
    }
}

/// Content as the protocol has it: a string stays a string; a list's
/// strings become text blocks, an `image_url` an image, blocks of a type
/// the protocol does not know `non_standard` ones.
fn content_blocks(content: Value) -> Value {
    let Value::Array(items) = content else {
        return content;
    };
    let blocks: Vec<Value> = items
        .into_iter()
        .filter_map(|item| match item {
            Value::String(text) => Some(json!({"type": "text", "text": text})),
            Value::Object(block) => match block.get("type").and_then(Value::as_str) {
                Some(kind) if BLOCK_TYPES.contains(&kind) => Some(Value::Object(block)),
                Some("image_url") => {
                    let url = match block.get("image_url") {
                        Some(Value::String(url)) => Some(url.clone()),
                        Some(image) => image.get("url").and_then(Value::as_str).map(Into::into),
                        None => None,
                    };
                    url.map(|url| json!({"type": "image", "url": url}))
                }
                Some(_) => Some(json!({"type": "non_standard", "value": block})),
                None => None,
            },
            _ => None,
        })
        .collect();
    Value::Array(blocks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_sent_compact() {
        // Exchange 59's values: LangChain's full dicts in, compact out.
        let values = json!({
            "messages": [
                {"content": "ping", "additional_kwargs": {}, "response_metadata": {},
                 "type": "human", "name": null, "id": "h1"},
                {"content": "", "additional_kwargs": {}, "response_metadata": {}, "type": "ai",
                 "name": null, "id": "a1", "invalid_tool_calls": [], "usage_metadata": null,
                 "tool_calls": [{"name": "echo", "args": {"text": "ping"}, "id": "call_1",
                                 "type": "tool_call"}]},
                {"content": "echo:ping", "additional_kwargs": {}, "response_metadata": {},
                 "type": "tool", "name": "echo", "id": "t1", "tool_call_id": "call_1",
                 "artifact": null, "status": "success"}
            ],
            "__interrupt__": [{"id": "i", "value": 1}]
        });
        assert_eq!(
            state(&values),
            json!({"messages": [
                {"type": "human", "content": "ping", "id": "h1"},
                {"type": "ai", "content": "", "id": "a1", "tool_calls": [
                    {"type": "tool_call", "name": "echo", "args": {"text": "ping"}, "id": "call_1"}
                ]},
                {"type": "tool", "content": "echo:ping", "id": "t1", "name": "echo",
                 "tool_call_id": "call_1", "status": "success", "artifact": null}
            ]})
        );
    }

    #[test]
    fn content_lists_become_blocks_and_other_values_stay() {
        let message = json!({"type": "user", "content": ["hi", {"type": "image_url",
            "image_url": {"url": "http://x/y.png"}}, {"type": "custom", "x": 1}, 3]});
        assert_eq!(
            super::message(&message),
            json!({"type": "human", "content": [
                {"type": "text", "text": "hi"},
                {"type": "image", "url": "http://x/y.png"},
                {"type": "non_standard", "value": {"type": "custom", "x": 1}}
            ]})
        );
        assert_eq!(
            state(&json!({"n": [1, {"type": "x"}]})),
            json!({"n": [1, {"type": "x"}]})
        );
        assert_eq!(text_of(&message), "hi");
    }
}
