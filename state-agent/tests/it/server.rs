//! A local server that speaks OpenAI's Chat Completions wire format exactly
//! (JSON answers, SSE streams of `chat.completion.chunk`s ending in `data:
//! [DONE]`, OpenAI's error bodies and headers), on 127.0.0.1, answering
//! from a script. It records every request and knows how many of its
//! streams are still open. No test reaches any other host.

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::post;
use futures::StreamExt;
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One scripted answer.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A JSON answer with a status and headers.
    Json(u16, Vec<(&'static str, &'static str)>, Value),
    /// A plain-text answer (a proxy's or a compatible server's error page).
    Text(u16, &'static str),
    /// An SSE stream of these chunks, then `[DONE]`.
    Sse(Vec<Value>),
    /// An SSE stream of these chunks, then silence, the connection open.
    SseThenStall(Vec<Value>),
    /// An SSE stream of these chunks, then a broken connection.
    SseThenBreak(Vec<Value>),
    /// This answer, after a wait.
    Slow(Duration, Box<Reply>),
}

/// A request as the server saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub body: Value,
    pub authorization: Option<String>,
}

#[derive(Default)]
struct Script {
    replies: Mutex<VecDeque<Reply>>,
    seen: Mutex<Vec<Seen>>,
    open_streams: AtomicUsize,
}

/// The running server.
#[derive(Clone)]
pub struct Server {
    script: Arc<Script>,
    /// Its base URL (`http://127.0.0.1:<port>/v1`).
    pub url: String,
}

impl Server {
    /// A server answering with `replies`, in order.
    pub async fn start(replies: impl IntoIterator<Item = Reply>) -> Server {
        let script = Arc::new(Script {
            replies: Mutex::new(replies.into_iter().collect()),
            ..Script::default()
        });
        let app = Router::new()
            .route("/v1/chat/completions", post(answer))
            .with_state(script.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Server { script, url }
    }

    /// The requests so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.script.seen.lock().unwrap().clone()
    }

    /// How many of its SSE streams a client still holds open.
    pub fn open_streams(&self) -> usize {
        self.script.open_streams.load(Ordering::SeqCst)
    }
}

async fn answer(State(script): State<Arc<Script>>, headers: HeaderMap, body: String) -> Response {
    script.seen.lock().unwrap().push(Seen {
        body: serde_json::from_str(&body).unwrap(),
        authorization: headers
            .get("authorization")
            .map(|v| v.to_str().unwrap().to_owned()),
    });
    let reply = script.replies.lock().unwrap().pop_front();
    let Some(mut reply) = reply else {
        return respond(
            500,
            &[],
            Body::from("the script has no answer left"),
            "text/plain",
        );
    };
    while let Reply::Slow(wait, then) = reply {
        tokio::time::sleep(wait).await;
        reply = *then;
    }
    match reply {
        Reply::Json(status, headers, body) => respond(
            status,
            &headers,
            Body::from(body.to_string()),
            "application/json",
        ),
        Reply::Text(status, text) => respond(status, &[], Body::from(text), "text/plain"),
        Reply::Sse(chunks) => sse(&script, chunks, End::Done),
        Reply::SseThenStall(chunks) => sse(&script, chunks, End::Stall),
        Reply::SseThenBreak(chunks) => sse(&script, chunks, End::Break),
        Reply::Slow(..) => unreachable!(),
    }
}

fn respond(status: u16, headers: &[(&str, &str)], body: Body, kind: &str) -> Response {
    let mut response = Response::builder()
        .status(StatusCode::from_u16(status).unwrap())
        .header("content-type", kind);
    for (k, v) in headers {
        response = response.header(*k, *v);
    }
    response.body(body).unwrap()
}

enum End {
    Done,
    Stall,
    Break,
}

/// Counts a stream open until the server drops its body (the client went).
struct Open(Arc<Script>);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.open_streams.fetch_sub(1, Ordering::SeqCst);
    }
}

fn sse(script: &Arc<Script>, chunks: Vec<Value>, end: End) -> Response {
    script.open_streams.fetch_add(1, Ordering::SeqCst);
    let open = Open(script.clone());
    let events = chunks
        .into_iter()
        .map(|c| Ok::<String, std::io::Error>(format!("data: {c}\n\n")));
    let events = futures::stream::iter(events);
    let tail: futures::stream::BoxStream<'static, Result<String, std::io::Error>> = match end {
        End::Done => futures::stream::iter([Ok("data: [DONE]\n\n".to_owned())]).boxed(),
        End::Stall => futures::stream::pending().boxed(),
        End::Break => futures::stream::once(async {
            // After the head and the first chunks have reached the client.
            tokio::time::sleep(Duration::from_millis(300)).await;
            Err(std::io::Error::other("broken"))
        })
        .boxed(),
    };
    let body = events.chain(tail).map(move |item| {
        let _keep = &open;
        item
    });
    respond(200, &[], Body::from_stream(body), "text/event-stream")
}

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
