//! A local server on 127.0.0.1 that speaks OpenAI's Chat Completions:
//! each request recorded (its `authorization` header and its JSON body),
//! each answered with the next scripted reply, streamed as
//! `chat.completion.chunk` server-sent events ending in `data: [DONE]`
//! when the request says `"stream": true`, else as the one
//! `chat.completion` they make; with none left, a 400 with OpenAI's error
//! body. The examples' online
//! tests point `ChatOpenAI` at it: no test reaches a provider.

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State as Shared;
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::post;
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// What the server saw of a request.
#[derive(Debug, Clone)]
pub struct Seen {
    /// The `authorization` header.
    pub authorization: Option<String>,
    /// The request's JSON.
    pub body: Value,
}

/// The replies left and the requests seen.
#[derive(Default)]
pub struct Script {
    /// Each reply: the `chat.completion.chunk`s of one stream.
    pub replies: Mutex<VecDeque<Vec<Value>>>,
    /// Every request, in order.
    pub seen: Mutex<Vec<Seen>>,
}

/// Serves `POST /v1/chat/completions` on 127.0.0.1 with `replies`, each
/// as a server-sent event stream ending in `data: [DONE]`. Returns the
/// base URL and the script (what it saw).
pub async fn serve(replies: Vec<Vec<Value>>) -> (String, Arc<Script>) {
    let script = Arc::new(Script {
        replies: Mutex::new(replies.into()),
        ..Script::default()
    });
    let app = Router::new()
        .route("/v1/chat/completions", post(completions))
        .with_state(script.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, script)
}

async fn completions(
    Shared(script): Shared<Arc<Script>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or_default();
    let authorization = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let streamed = body["stream"] == json!(true);
    script.seen.lock().unwrap().push(Seen {
        authorization,
        body,
    });
    let chunks = script.replies.lock().unwrap().pop_front();
    let Some(chunks) = chunks else {
        let error = json!({"error": {"message": "no reply left", "type": "invalid_request_error"}});
        return Response::builder()
            .status(400)
            .header("content-type", "application/json")
            .body(Body::from(error.to_string()))
            .unwrap();
    };
    if !streamed {
        return Response::builder()
            .header("content-type", "application/json")
            .body(Body::from(completion(&chunks).to_string()))
            .unwrap();
    }
    let mut sse = String::new();
    for chunk in chunks {
        sse.push_str(&format!("data: {chunk}\n\n"));
    }
    sse.push_str("data: [DONE]\n\n");
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from(sse))
        .unwrap()
}

/// The `chat.completion` that `chunks` stream (the answer to a request
/// without `"stream": true`): the content joined, each tool call's id,
/// name and arguments gathered by its index, the last finish reason.
fn completion(chunks: &[Value]) -> Value {
    let mut content: Option<String> = None;
    let mut calls: Vec<Value> = Vec::new();
    let mut finish = Value::Null;
    for chunk in chunks {
        let choice = &chunk["choices"][0];
        let delta = &choice["delta"];
        if let Some(text) = delta["content"].as_str() {
            content.get_or_insert_with(String::new).push_str(text);
        }
        for part in delta["tool_calls"].as_array().into_iter().flatten() {
            let index = part["index"].as_u64().unwrap() as usize;
            if calls.len() <= index {
                calls.resize(
                    index + 1,
                    json!({"type": "function", "function": {"arguments": ""}}),
                );
            }
            let call = &mut calls[index];
            if let Some(id) = part.get("id") {
                call["id"] = id.clone();
            }
            if let Some(name) = part["function"].get("name") {
                call["function"]["name"] = name.clone();
            }
            if let Some(args) = part["function"]["arguments"].as_str() {
                let joined = format!("{}{args}", call["function"]["arguments"].as_str().unwrap());
                call["function"]["arguments"] = json!(joined);
            }
        }
        if !choice["finish_reason"].is_null() {
            finish = choice["finish_reason"].clone();
        }
    }
    let mut message = json!({"role": "assistant", "content": content});
    if !calls.is_empty() {
        message["tool_calls"] = json!(calls);
    }
    json!({
        "id": chunks[0]["id"],
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60}
    })
}

/// One `chat.completion.chunk` of reply `id`.
pub fn chunk(id: &str, delta: Value, finish: Option<&str>) -> Value {
    json!({
        "id": id,
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]
    })
}
