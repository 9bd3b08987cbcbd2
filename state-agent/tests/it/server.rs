//! A local server that speaks OpenAI's Chat Completions wire format exactly
//! (JSON answers, SSE streams of `chat.completion.chunk`s ending in `data:
//! [DONE]`, OpenAI's error bodies and headers), on 127.0.0.1, answering
//! from a script (`scripted.rs`). No test reaches any other host.

use serde_json::{Value, json};

pub use super::scripted::{Reply, Wire};

/// OpenAI's wire format.
pub struct OpenAi;

impl Wire for OpenAi {
    const ROUTE: &'static str = "/v1/chat/completions";
    const BASE: &'static str = "/v1";
    const HEADERS: &'static [(&'static str, &'static str)] = &[];
    const DONE: Option<&'static str> = Some("data: [DONE]\n\n");

    fn frame(chunk: &Value) -> String {
        format!("data: {chunk}\n\n")
    }

    fn none_left() -> (u16, String, &'static str) {
        (
            500,
            "the script has no answer left".to_owned(),
            "text/plain",
        )
    }
}

/// The running server (its base URL is `http://127.0.0.1:<port>/v1`).
pub type Server = super::scripted::Server<OpenAi>;

/// A chat completion answering `message`.
pub fn completion(message: Value, finish_reason: &str) -> Value {
    json!({
        "id": "chatcmpl-T1", "object": "chat.completion", "created": 1_700_000_000,
        "model": "gpt-4o-mini-2024-07-18", "system_fingerprint": "fp_t",
        "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 21, "completion_tokens": 9, "total_tokens": 30,
                  "prompt_tokens_details": {"cached_tokens": 5}},
    })
}

/// A stream chunk with `delta` (and a finish reason).
pub fn chunk(delta: Value, finish_reason: Option<&str>) -> Value {
    json!({
        "id": "chatcmpl-T1", "object": "chat.completion.chunk", "created": 1_700_000_000,
        "model": "gpt-4o-mini-2024-07-18", "system_fingerprint": "fp_t",
        "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason}],
    })
}

/// The last chunk of a stream that asked for usage.
pub fn usage_chunk() -> Value {
    json!({
        "id": "chatcmpl-T1", "object": "chat.completion.chunk", "created": 1_700_000_000,
        "model": "gpt-4o-mini-2024-07-18", "system_fingerprint": "fp_t", "choices": [],
        "usage": {"prompt_tokens": 21, "completion_tokens": 9, "total_tokens": 30,
                  "prompt_tokens_details": {"cached_tokens": 5}},
    })
}

/// OpenAI's error body.
pub fn error_body(message: &str, kind: &str, code: Option<&str>) -> Value {
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
}
