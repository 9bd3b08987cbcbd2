//! Anthropic's reply (the JSON of a non-streamed `POST /v1/messages`) as
//! one chunk, as langchain-anthropic's `_format_output` reads it: a single
//! text block becomes plain text, other content stays blocks, `tool_use`
//! blocks become tool calls, the usage becomes LangChain's (cache reads and
//! writes added back to the input tokens), and the reply's other fields go
//! to `response_metadata`. Lenient: a field missing or of another type is
//! read as absent, never a panic.

use crate::chunk::{MessageChunk, ToolCallChunk, Usage};
use crate::error::{ModelError, ModelErrorKind};
use serde_json::{Map, Value, json};
use state_core::Content;

/// The reply `body` as the one chunk of its message (marked last).
pub(crate) fn from_response(body: Value) -> Result<MessageChunk, ModelError> {
    let Value::Object(mut fields) = body else {
        return Err(ModelError::new("anthropic", ModelErrorKind::Decode)
            .with_message("the reply is not a JSON object"));
    };
    let blocks: Vec<Value> = match fields.remove("content") {
        Some(Value::Array(blocks)) => blocks.into_iter().map(clean_block).collect(),
        _ => Vec::new(),
    };
    fields.remove("role");
    fields.remove("type");
    let usage = fields.get("usage").map(usage_metadata);
    let mut metadata = fields;
    if let Some(model) = metadata.get("model").cloned() {
        metadata.entry("model_name").or_insert(model);
    }
    metadata.insert("model_provider".into(), json!("anthropic"));

    let single_text = blocks.len() == 1
        && blocks[0]["type"] == "text"
        && !blocks[0].get("citations").is_some_and(is_truthy_list);
    let mut chunk = MessageChunk::default();
    if single_text {
        chunk.content = Some(Content::Text(
            blocks[0]["text"].as_str().unwrap_or_default().to_owned(),
        ));
    } else {
        for (index, block) in blocks.iter().enumerate() {
            if block["type"] == "tool_use" {
                chunk.tool_call_chunks.push(ToolCallChunk {
                    index: Some(index),
                    id: block["id"].as_str().map(str::to_owned),
                    name: block["name"].as_str().map(str::to_owned),
                    args: Some(block.get("input").unwrap_or(&json!({})).to_string()),
                });
            }
        }
        chunk.content = Some(Content::Blocks(blocks));
    }
    chunk.usage = usage;
    chunk.response_metadata = metadata;
    chunk.last = true;
    Ok(chunk)
}

fn is_truthy_list(value: &Value) -> bool {
    value.as_array().is_some_and(|a| !a.is_empty())
}

/// A reply's block without the nulls the SDK would drop (`citations`,
/// `caller`, `encrypted_content`).
fn clean_block(mut block: Value) -> Value {
    if let Some(fields) = block.as_object_mut() {
        for key in ["citations", "caller", "encrypted_content"] {
            if fields.get(key) == Some(&Value::Null) {
                fields.remove(key);
            }
        }
    }
    block
}

/// Anthropic's `usage` as LangChain's (`_create_usage_metadata`): its
/// `input_tokens` leaves out the tokens read from and written to the
/// cache, which are added back, and told apart in `input_token_details`.
pub(crate) fn usage_metadata(usage: &Value) -> Usage {
    let count = |v: &Value| v.as_u64();
    let mut details = Map::new();
    let cache_read = usage.get("cache_read_input_tokens").and_then(count);
    let mut cache_creation = usage.get("cache_creation_input_tokens").and_then(count);
    let mut by_ttl = 0;
    if let Some(ttls) = usage.get("cache_creation").and_then(Value::as_object) {
        for key in ["ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens"] {
            if let Some(n) = ttls.get(key).and_then(count) {
                by_ttl += n;
                details.insert(key.into(), json!(n));
            }
        }
        if by_ttl > 0 {
            // Told by TTL: the total would count them twice.
            cache_creation = Some(0);
        }
    }
    if let Some(n) = cache_read {
        details.insert("cache_read".into(), json!(n));
    }
    if let Some(n) = cache_creation {
        details.insert("cache_creation".into(), json!(n));
    }
    let created = if by_ttl > 0 {
        by_ttl
    } else {
        cache_creation.unwrap_or(0)
    };
    let input_tokens =
        usage.get("input_tokens").and_then(count).unwrap_or(0) + cache_read.unwrap_or(0) + created;
    let output_tokens = usage.get("output_tokens").and_then(count).unwrap_or(0);
    let mut output_details = Map::new();
    if let Some(n) = usage["output_tokens_details"]["thinking_tokens"].as_u64() {
        output_details.insert("reasoning".into(), json!(n));
    }
    Usage {
        input_tokens,
        output_tokens,
        total_tokens: input_tokens + output_tokens,
        input_token_details: details,
        output_token_details: output_details,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_an_object_is_a_decode_error() {
        let err = from_response(json!([1, 2])).unwrap_err();
        assert_eq!(err.kind(), ModelErrorKind::Decode);
    }

    #[test]
    fn odd_fields_are_read_as_absent() {
        let chunk = from_response(json!({
            "content": [{"type": "tool_use", "id": 5, "name": null}, "text?"],
            "usage": {"input_tokens": "many", "output_tokens": -1},
        }))
        .unwrap();
        let message = chunk.into_message();
        assert_eq!(message.tool_calls().len(), 1);
        assert_eq!(message.tool_calls()[0].args, json!({}));
        assert_eq!(message.extra()["usage_metadata"]["total_tokens"], 0);
    }
}
