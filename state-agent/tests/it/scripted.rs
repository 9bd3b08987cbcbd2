//! A local server on 127.0.0.1 that answers a model provider's one route
//! from a script, in that provider's wire format ([`Wire`]: OpenAI's in
//! `server.rs`, Anthropic's in `anthropic_server.rs`). It records every
//! request (headers and body) and knows how many of its streams are still
//! open. No test reaches any other host.

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::post;
use futures::StreamExt;
use serde_json::Value;
use std::collections::VecDeque;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A provider's wire format: where it answers and how it frames things.
pub trait Wire: Send + Sync + 'static {
    /// The route answered (`/v1/chat/completions`).
    const ROUTE: &'static str;
    /// What the base URL adds to `http://host:port` (`/v1`, or nothing).
    const BASE: &'static str;
    /// Headers on every answer, beside `content-type`.
    const HEADERS: &'static [(&'static str, &'static str)];
    /// The last event of a stream that ends well (`data: [DONE]`), if any.
    const DONE: Option<&'static str>;
    /// One streamed event, framed.
    fn frame(event: &Value) -> String;
    /// The answer (status, body, content type) when the script has none
    /// left.
    fn none_left() -> (u16, String, &'static str);
}

/// One scripted answer.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A JSON answer with a status and headers.
    Json(u16, Vec<(&'static str, &'static str)>, Value),
    /// A plain-text answer (a proxy's or a compatible server's error page).
    Text(u16, &'static str),
    /// A server-sent event stream of these events, then its good end.
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

/// The running server, speaking `W`.
pub struct Server<W> {
    script: Arc<Script>,
    /// Its base URL (`http://127.0.0.1:<port>` and the wire's base).
    pub url: String,
    wire: PhantomData<W>,
}

impl<W> Clone for Server<W> {
    fn clone(&self) -> Self {
        Server {
            script: self.script.clone(),
            url: self.url.clone(),
            wire: PhantomData,
        }
    }
}

impl<W: Wire> Server<W> {
    /// A server answering with `replies`, in order.
    pub async fn start(replies: impl IntoIterator<Item = Reply>) -> Server<W> {
        let script = Arc::new(Script {
            replies: Mutex::new(replies.into_iter().collect()),
            ..Script::default()
        });
        let app = Router::new()
            .route(W::ROUTE, post(answer::<W>))
            .with_state(script.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}{}", listener.local_addr().unwrap(), W::BASE);
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Server {
            script,
            url,
            wire: PhantomData,
        }
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

async fn answer<W: Wire>(
    State(script): State<Arc<Script>>,
    headers: HeaderMap,
    body: String,
) -> Response {
    script.seen.lock().unwrap().push(Seen {
        headers,
        body: serde_json::from_str(&body).unwrap(),
    });
    let reply = script.replies.lock().unwrap().pop_front();
    let Some(mut reply) = reply else {
        let (status, body, kind) = W::none_left();
        return respond::<W>(status, &[], Body::from(body), kind);
    };
    while let Reply::Slow(wait, then) = reply {
        tokio::time::sleep(wait).await;
        reply = *then;
    }
    match reply {
        Reply::Json(status, headers, body) => respond::<W>(
            status,
            &headers,
            Body::from(body.to_string()),
            "application/json",
        ),
        Reply::Text(status, text) => respond::<W>(status, &[], Body::from(text), "text/plain"),
        Reply::Sse(events) => sse::<W>(&script, events, End::Done),
        Reply::SseThenStall(events) => sse::<W>(&script, events, End::Stall),
        Reply::SseThenBreak(events) => sse::<W>(&script, events, End::Break),
        Reply::Slow(..) => unreachable!(),
    }
}

fn respond<W: Wire>(status: u16, headers: &[(&str, &str)], body: Body, kind: &str) -> Response {
    let mut response = Response::builder()
        .status(StatusCode::from_u16(status).unwrap())
        .header("content-type", kind);
    for (k, v) in W::HEADERS.iter().chain(headers) {
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

fn sse<W: Wire>(script: &Arc<Script>, events: Vec<Value>, end: End) -> Response {
    script.open_streams.fetch_add(1, Ordering::SeqCst);
    let open = Open(script.clone());
    let events: Vec<_> = events
        .iter()
        .map(|e| Ok::<String, std::io::Error>(W::frame(e)))
        .collect();
    let events = futures::stream::iter(events);
    let tail: futures::stream::BoxStream<'static, Result<String, std::io::Error>> = match end {
        End::Done => futures::stream::iter(W::DONE.map(|done| Ok(done.to_owned()))).boxed(),
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
    respond::<W>(200, &[], Body::from_stream(body), "text/event-stream")
}
