//! Anthropic's streamed reply (server-sent events) as chunks, one event at
//! a time, as langchain-anthropic's `_make_message_chunk_from_anthropic_event`
//! makes them: `message_start` gives the model's name, `content_block_start`
//! a tool call's id and name (its arguments then come as `input_json_delta`
//! pieces, tied to it by the block's index), text deltas give text,
//! `message_delta` the usage and stop reason (the last chunk). `ping`,
//! `content_block_stop`, `message_stop` and event types not known yet give
//! nothing; an `error` event is the stream's error.
//!
//! Two things differ from langchain-anthropic, both so that the merged
//! chunks equal the non-streamed reply: the first chunk's metadata also
//! carries the reply's `id` and `model`, and the last chunk's usage is the
//! reply's whole usage (`message_start`'s, updated by `message_delta`'s,
//! as the SDKs accumulate it), where langchain-anthropic reads
//! `message_delta`'s alone (older servers put no input tokens there).

use super::error::from_error_body;
use super::response::usage_metadata;
use crate::chunk::{MessageChunk, ToolCallChunk};
use crate::error::{ModelError, ModelErrorKind};
use serde_json::{Map, Value, json};
use state_core::Content;

/// What a stream remembers between events.
#[derive(Debug, Default)]
pub(crate) struct StreamState {
    /// Text comes as plain strings (no tools offered), else as blocks.
    plain_text: bool,
    /// The usage `message_start` reported, updated by `message_delta`.
    usage: Map<String, Value>,
    /// The type of the block last started (`input_json_delta` pieces are
    /// tool-call arguments only inside a `tool_use` block).
    open_block: Option<String>,
    /// Whether `message_stop` (or a last `message_delta`) came: a stream
    /// that ends before is cut.
    pub(crate) finished: bool,
}

impl StreamState {
    /// The state of a new stream; `plain_text` as
    /// [`streams_plain_text`](super::wire::streams_plain_text) says.
    pub(crate) fn new(plain_text: bool) -> StreamState {
        StreamState {
            plain_text,
            ..StreamState::default()
        }
    }
}

/// The chunk that the event `data` (of SSE type `event`) makes, if any.
/// Data that is not JSON is an error; JSON of an unexpected shape is read
/// leniently.
pub(crate) fn on_event(
    state: &mut StreamState,
    event: &str,
    data: &str,
) -> Result<Option<MessageChunk>, ModelError> {
    if data.trim().is_empty() {
        return Ok(None);
    }
    let data: Value = serde_json::from_str(data).map_err(|e| {
        ModelError::new("anthropic", ModelErrorKind::Decode)
            .with_message(format!("a streamed event is not JSON: {e}"))
    })?;
    let kind = data["type"].as_str().unwrap_or(event);
    let chunk = match kind {
        "message_start" => Some(message_start(state, &data["message"])),
        "content_block_start" => block_start(state, &data),
        "content_block_delta" => block_delta(state, &data),
        "message_delta" => Some(message_delta(state, &data)),
        "message_stop" => {
            state.finished = true;
            None
        }
        "error" => return Err(from_error_body(None, &data)),
        // ping, content_block_stop, and whatever Anthropic adds later.
        _ => None,
    };
    Ok(chunk.map(|mut chunk| {
        chunk
            .response_metadata
            .insert("model_provider".into(), json!("anthropic"));
        chunk
    }))
}

fn empty_content(state: &StreamState) -> Content {
    if state.plain_text {
        Content::Text(String::new())
    } else {
        Content::Blocks(Vec::new())
    }
}

fn message_start(state: &mut StreamState, message: &Value) -> MessageChunk {
    if let Some(usage) = message["usage"].as_object() {
        state.usage = usage.clone();
    }
    let mut chunk = MessageChunk {
        content: Some(empty_content(state)),
        ..MessageChunk::default()
    };
    for key in ["id", "model"] {
        if let Some(value) = message.get(key).filter(|v| !v.is_null()) {
            chunk.response_metadata.insert(key.into(), value.clone());
        }
    }
    if let Some(model) = message.get("model").filter(|v| !v.is_null()) {
        chunk
            .response_metadata
            .insert("model_name".into(), model.clone());
    }
    chunk
}

fn index_of(data: &Value) -> Option<usize> {
    data["index"].as_u64().and_then(|i| usize::try_from(i).ok())
}

fn block_start(state: &mut StreamState, data: &Value) -> Option<MessageChunk> {
    let block = data.get("content_block").filter(|b| b.is_object())?;
    let kind = block["type"].as_str().unwrap_or_default().to_owned();
    state.open_block = Some(kind.clone());
    let index = index_of(data);
    let with_index = |block: &Value| {
        let mut block = block.clone();
        if let Some(fields) = block.as_object_mut() {
            if fields.get("caller") == Some(&Value::Null) {
                fields.remove("caller");
            }
            fields.insert("index".into(), json!(index));
        }
        block
    };
    let structural = ["tool_result", "tool_use", "document", "redacted_thinking"]
        .iter()
        .any(|k| kind.contains(k));
    if structural {
        let mut content_block = with_index(block);
        if kind == "advisor_tool_result" {
            content_block = pick(
                &content_block,
                &["type", "tool_use_id", "content", "cache_control"],
            );
        }
        let mut chunk = MessageChunk {
            content: Some(Content::Blocks(vec![content_block])),
            ..MessageChunk::default()
        };
        if kind == "tool_use" {
            // The arguments may come whole in the start event.
            let args = match block.get("input") {
                Some(input @ Value::Object(fields)) if !fields.is_empty() => python_json(input),
                _ => String::new(),
            };
            chunk.tool_call_chunks.push(ToolCallChunk {
                index,
                id: block["id"].as_str().map(str::to_owned),
                name: block["name"].as_str().map(str::to_owned),
                args: Some(args),
            });
        }
        return Some(chunk);
    }
    // Text or thinking may start with content of its own.
    let content = match kind.as_str() {
        "text" => {
            let text = block["text"].as_str().unwrap_or_default();
            if text.is_empty() {
                return None;
            }
            if state.plain_text {
                Content::Text(text.to_owned())
            } else {
                let mut block = with_index(block);
                if block.get("citations") == Some(&Value::Null) {
                    block.as_object_mut()?.remove("citations");
                }
                Content::Blocks(vec![block])
            }
        }
        "thinking" => {
            let thinking = block["thinking"].as_str().unwrap_or_default();
            let signature = block["signature"].as_str().unwrap_or_default();
            if thinking.is_empty() && signature.is_empty() {
                return None;
            }
            Content::Blocks(vec![with_index(block)])
        }
        _ => return None,
    };
    Some(MessageChunk {
        content: Some(content),
        ..MessageChunk::default()
    })
}

/// `value` as Python's `json.dumps` writes it (`", "` and `": "` between
/// items, non-ASCII escaped), as langchain-anthropic gives the arguments a
/// `tool_use` block starts with.
fn python_json(value: &Value) -> String {
    let mut out = String::new();
    write_python_json(value, &mut out);
    out
}

fn write_python_json(value: &Value, out: &mut String) {
    match value {
        Value::String(text) => {
            out.push('"');
            for c in text.chars() {
                match c {
                    '"' => out.push_str("\\\""),
                    '\\' => out.push_str("\\\\"),
                    '\n' => out.push_str("\\n"),
                    '\r' => out.push_str("\\r"),
                    '\t' => out.push_str("\\t"),
                    c if (c as u32) < 0x20 || !c.is_ascii() => {
                        let mut units = [0u16; 2];
                        for unit in c.encode_utf16(&mut units) {
                            out.push_str(&format!("\\u{unit:04x}"));
                        }
                    }
                    c => out.push(c),
                }
            }
            out.push('"');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_python_json(item, out);
            }
            out.push(']');
        }
        Value::Object(fields) => {
            out.push('{');
            for (i, (key, item)) in fields.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_python_json(&Value::String(key.clone()), out);
                out.push_str(": ");
                write_python_json(item, out);
            }
            out.push('}');
        }
        other => out.push_str(&other.to_string()),
    }
}

fn pick(block: &Value, keys: &[&str]) -> Value {
    Value::Object(
        block
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, _)| keys.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    )
}

fn block_delta(state: &mut StreamState, data: &Value) -> Option<MessageChunk> {
    let delta = data.get("delta").filter(|d| d.is_object())?;
    let index = index_of(data);
    let mut block = delta.clone();
    let fields = block.as_object_mut()?;
    fields.insert("index".into(), json!(index));
    let blocks = |block: Value| MessageChunk {
        content: Some(Content::Blocks(vec![block])),
        ..MessageChunk::default()
    };
    match delta["type"].as_str().unwrap_or_default() {
        "text_delta" | "citations_delta" => {
            if state.plain_text
                && let Some(text) = delta["text"].as_str()
            {
                return Some(MessageChunk::text(text));
            }
            fields.insert("type".into(), json!("text"));
            if let Some(citation) = fields.remove("citation") {
                fields.insert("citations".into(), json!([citation]));
            }
            Some(blocks(block))
        }
        kind @ ("thinking_delta" | "signature_delta") => {
            fields.insert("type".into(), json!("thinking"));
            if kind == "signature_delta" {
                fields.entry("thinking").or_insert(json!(""));
            }
            Some(blocks(block))
        }
        "input_json_delta" => {
            let mut chunk = blocks(block);
            if state.open_block.as_deref() == Some("tool_use") {
                chunk.tool_call_chunks.push(ToolCallChunk {
                    index,
                    id: None,
                    name: None,
                    args: Some(
                        delta["partial_json"]
                            .as_str()
                            .unwrap_or_default()
                            .to_owned(),
                    ),
                });
            }
            Some(chunk)
        }
        "compaction_delta" => {
            fields.insert("type".into(), json!("compaction"));
            if fields.get("encrypted_content") == Some(&Value::Null) {
                fields.remove("encrypted_content");
            }
            Some(blocks(block))
        }
        _ => None,
    }
}

fn message_delta(state: &mut StreamState, data: &Value) -> MessageChunk {
    if let Some(usage) = data["usage"].as_object() {
        for (key, value) in usage {
            if !value.is_null() {
                state.usage.insert(key.clone(), value.clone());
            }
        }
    }
    let usage = Value::Object(state.usage.clone());
    let delta = &data["delta"];
    let mut metadata = Map::new();
    metadata.insert("stop_reason".into(), delta["stop_reason"].clone());
    metadata.insert("stop_sequence".into(), delta["stop_sequence"].clone());
    for (from, key) in [
        (delta, "stop_details"),
        (data, "context_management"),
        (delta, "container"),
    ] {
        if let Some(value) = from.get(key).filter(|v| !v.is_null()) {
            metadata.insert(key.into(), value.clone());
        }
    }
    metadata.insert("usage".into(), usage.clone());
    let last = !delta["stop_reason"].is_null();
    state.finished |= last;
    MessageChunk {
        content: Some(empty_content(state)),
        usage: Some(usage_metadata(&usage)),
        response_metadata: metadata,
        last,
        ..MessageChunk::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_and_quiet_events_give_nothing() {
        let mut state = StreamState::new(true);
        for (event, data) in [
            ("ping", r#"{"type": "ping"}"#),
            (
                "content_block_stop",
                r#"{"type": "content_block_stop", "index": 0}"#,
            ),
            ("future_event", r#"{"type": "future_event", "x": [1]}"#),
            (
                "content_block_delta",
                r#"{"type": "content_block_delta", "index": 0, "delta": {"type": "future_delta"}}"#,
            ),
            (
                "content_block_start",
                r#"{"type": "content_block_start", "index": 0, "content_block": {"type": "future_block"}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type": "content_block_delta", "delta": 3}"#,
            ),
        ] {
            assert_eq!(on_event(&mut state, event, data).unwrap(), None, "{event}");
        }
    }

    #[test]
    fn an_error_event_is_the_streams_error() {
        let mut state = StreamState::new(true);
        let err = on_event(
            &mut state,
            "error",
            r#"{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}"#,
        )
        .unwrap_err();
        assert_eq!(err.kind(), ModelErrorKind::Server);
        assert_eq!(err.message(), Some("Overloaded"));
    }

    #[test]
    fn start_arguments_are_written_as_python_writes_them() {
        let value = serde_json::json!({"a": [1, "é\n\"x\"", null], "b": {"c": true}});
        assert_eq!(
            python_json(&value),
            r#"{"a": [1, "\u00e9\n\"x\"", null], "b": {"c": true}}"#
        );
        assert_eq!(
            serde_json::from_str::<Value>(&python_json(&value)).unwrap(),
            value
        );
    }

    #[test]
    fn data_that_is_not_json_is_a_decode_error() {
        let mut state = StreamState::new(true);
        let err = on_event(&mut state, "message_start", "{oops").unwrap_err();
        assert_eq!(err.kind(), ModelErrorKind::Decode);
    }
}
