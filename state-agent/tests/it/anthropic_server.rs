//! A local server that speaks Anthropic's Messages API wire format exactly
//! (`POST /v1/messages`; JSON replies; server-sent events named by their
//! type, `event: content_block_delta` then `data: {...}`; Anthropic's error
//! bodies and `retry-after` headers), on 127.0.0.1, answering from a
//! script (`scripted.rs`). No test reaches any other host.

use serde_json::{Value, json};

pub use super::scripted::{Reply, Wire};

/// Anthropic's wire format.
pub struct Anthropic;

impl Wire for Anthropic {
    const ROUTE: &'static str = "/v1/messages";
    const BASE: &'static str = "";
    const HEADERS: &'static [(&'static str, &'static str)] = &[("request-id", "req_test")];
    // A stream ends with its `message_stop` event, then the body's end.
    const DONE: Option<&'static str> = None;

    fn frame(event: &Value) -> String {
        format!(
            "event: {}\ndata: {}\n\n",
            event["type"].as_str().unwrap_or("message"),
            event
        )
    }

    fn none_left() -> (u16, String, &'static str) {
        let body = error_body("api_error", "the script has no answer left");
        (500, body.to_string(), "application/json")
    }
}

/// The running server (its base URL is `http://127.0.0.1:<port>`,
/// Anthropic's shape: no `/v1`).
pub type Server = super::scripted::Server<Anthropic>;

/// Anthropic's error body.
pub fn error_body(kind: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message}})
}

/// A reply of `content` blocks.
pub fn message(content: Value, stop_reason: &str) -> Value {
    json!({
        "id": "msg_T1", "type": "message", "role": "assistant", "model": "claude-test-1",
        "content": content, "stop_reason": stop_reason, "stop_sequence": null,
        "usage": {"input_tokens": 21, "output_tokens": 9, "cache_read_input_tokens": 4},
    })
}

/// The events of the same reply, streamed: `pieces` of text in block 0,
/// then a tool call whose arguments come in `args` pieces in block 1 (when
/// given).
pub fn events(
    pieces: &[&str],
    tool: Option<(&str, &str, &[&str])>,
    stop_reason: &str,
) -> Vec<Value> {
    let mut events = vec![json!({
        "type": "message_start",
        "message": {"id": "msg_T1", "type": "message", "role": "assistant", "model": "claude-test-1",
                    "content": [], "stop_reason": null, "stop_sequence": null,
                    "usage": {"input_tokens": 21, "output_tokens": 1, "cache_read_input_tokens": 4}},
    })];
    events.push(json!({"type": "content_block_start", "index": 0,
                       "content_block": {"type": "text", "text": ""}}));
    events.push(json!({"type": "ping"}));
    for piece in pieces {
        events.push(json!({"type": "content_block_delta", "index": 0,
                           "delta": {"type": "text_delta", "text": piece}}));
    }
    events.push(json!({"type": "content_block_stop", "index": 0}));
    if let Some((id, name, args)) = tool {
        events.push(json!({"type": "content_block_start", "index": 1,
                           "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}));
        for piece in args {
            events.push(json!({"type": "content_block_delta", "index": 1,
                               "delta": {"type": "input_json_delta", "partial_json": piece}}));
        }
        events.push(json!({"type": "content_block_stop", "index": 1}));
    }
    events.push(json!({"type": "message_delta",
                       "delta": {"stop_reason": stop_reason, "stop_sequence": null},
                       "usage": {"output_tokens": 9}}));
    events.push(json!({"type": "message_stop"}));
    events
}
