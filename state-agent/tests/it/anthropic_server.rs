//! A local server that speaks Anthropic's Messages API wire format exactly
//! (`POST /v1/messages`; JSON replies; server-sent events named by their
//! type, `event: content_block_delta` then `data: {...}`; Anthropic's error
//! bodies and `retry-after` headers), on 127.0.0.1, answering from a
//! script. It records every request (headers and body) and knows how many
//! of its streams are still open. No test reaches any other host.

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
    /// A server-sent event stream of these events (each `data` an event
    /// object whose `type` names it), then the end of the body.
    Sse(Vec<Value>),
    /// These events, then silence, the connection open.
    SseThenStall(Vec<Value>),
    /// These events, then a broken connection.
    SseThenBreak(Vec<Value>),
    /// This answer, after a wait.
    Slow(Duration, Box<Reply>),
}

/// A request as the server saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub headers: HeaderMap,
    pub body: Value,
}

impl Seen {
    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
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
    /// Its base URL (`http://127.0.0.1:<port>`, Anthropic's base URL shape:
    /// no `/v1`).
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
            .route("/v1/messages", post(answer))
            .with_state(script.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Server { script, url }
    }

    /// The requests so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.script.seen.lock().unwrap().clone()
    }

    /// How many of its event streams a client still holds open.
    pub fn open_streams(&self) -> usize {
        self.script.open_streams.load(Ordering::SeqCst)
    }
}

async fn answer(State(script): State<Arc<Script>>, headers: HeaderMap, body: String) -> Response {
    script.seen.lock().unwrap().push(Seen {
        headers,
        body: serde_json::from_str(&body).unwrap(),
    });
    let reply = script.replies.lock().unwrap().pop_front();
    let Some(mut reply) = reply else {
        return respond(
            500,
            &[],
            Body::from(error_body("api_error", "the script has no answer left").to_string()),
            "application/json",
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
        Reply::Sse(events) => sse(&script, events, End::Done),
        Reply::SseThenStall(events) => sse(&script, events, End::Stall),
        Reply::SseThenBreak(events) => sse(&script, events, End::Break),
        Reply::Slow(..) => unreachable!(),
    }
}

fn respond(status: u16, headers: &[(&str, &str)], body: Body, kind: &str) -> Response {
    let mut response = Response::builder()
        .status(StatusCode::from_u16(status).unwrap())
        .header("content-type", kind)
        .header("request-id", "req_test");
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

/// One event as Anthropic frames it.
pub fn frame(event: &Value) -> String {
    format!(
        "event: {}\ndata: {}\n\n",
        event["type"].as_str().unwrap_or("message"),
        event
    )
}

fn sse(script: &Arc<Script>, events: Vec<Value>, end: End) -> Response {
    script.open_streams.fetch_add(1, Ordering::SeqCst);
    let open = Open(script.clone());
    let events = events
        .iter()
        .map(|e| Ok::<String, std::io::Error>(frame(e)))
        .collect::<Vec<_>>();
    let events = futures::stream::iter(events);
    let tail: futures::stream::BoxStream<'static, Result<String, std::io::Error>> = match end {
        End::Done => futures::stream::empty().boxed(),
        End::Stall => futures::stream::pending().boxed(),
        End::Break => futures::stream::once(async {
            // After the head and the first events have reached the client.
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
