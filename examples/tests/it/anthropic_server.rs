//! A local server on 127.0.0.1 that speaks Anthropic's Messages API
//! (`POST /v1/messages`, not streamed): each request recorded (its
//! `x-api-key` header, as `Seen::authorization`, and its JSON body), each
//! answered with the next scripted `message` JSON; with none left, a 400
//! with Anthropic's error body. No test reaches a provider.

use crate::openai_server::{Script, Seen};
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State as Shared;
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::post;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

/// Serves `POST /v1/messages` on 127.0.0.1 with `replies` (each one
/// `message`, given as one chunk list of one item). Returns the base URL
/// and the script (what it saw).
pub async fn serve(replies: Vec<Value>) -> (String, Arc<Script>) {
    let script = Arc::new(Script {
        replies: Mutex::new(replies.into_iter().map(|r| vec![r]).collect()),
        ..Script::default()
    });
    let app = Router::new()
        .route("/v1/messages", post(messages))
        .with_state(script.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, script)
}

async fn messages(
    Shared(script): Shared<Arc<Script>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or_default();
    let authorization = headers
        .get("x-api-key")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    script.seen.lock().unwrap().push(Seen {
        authorization,
        body,
    });
    let reply = script.replies.lock().unwrap().pop_front();
    let (status, body) = match reply.and_then(|mut r| r.pop()) {
        Some(message) => (200, message),
        None => (
            400,
            json!({"type": "error", "error": {"type": "invalid_request_error", "message": "no reply left"}}),
        ),
    };
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap()
}

/// A `message` reply of `id` with `content` blocks.
pub fn message(id: &str, content: Value, stop_reason: &str) -> Value {
    json!({
        "id": id,
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": null,
        "usage": {"input_tokens": 120, "output_tokens": 20}
    })
}
