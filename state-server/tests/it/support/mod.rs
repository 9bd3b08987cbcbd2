//! Helpers shared by the state-server integration tests: the state-store
//! suite's real backends, a test state, the router served on a loopback
//! port, and a small HTTP/1.1 client over a `TcpStream` (it sends the
//! target bytes exactly as given, so hostile paths reach the server as
//! written).

#[path = "../../../../state-store/tests/it/support/backends.rs"]
pub mod backends;
#[path = "../../../../state-store/tests/it/support/child.rs"]
pub mod child;
pub mod desk;
#[path = "../../../../state-store/tests/it/support/postgres.rs"]
pub mod postgres;

use serde_json::Value;
use state_core::{AgentState, State};
use state_store::Store;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The state the tests store and read back.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Notes {
    #[reducer(append)]
    pub log: Vec<String>,
    pub title: String,
}

/// Step k of [`thread_with_steps`]: appends `"k"` to the log.
pub fn step(k: u64) -> NotesDelta {
    Notes::delta().log(vec![k.to_string()])
}

/// Thread `id` with `n` steps: step k appends `"k"` to the log.
pub async fn thread_with_steps(store: &Store, id: &str, n: u64) {
    let mut thread = store.thread::<Notes>(id).await.expect("open thread");
    for k in 1..=n {
        thread.apply(step(k)).await.expect("apply");
    }
}

/// Serves `router` on a fresh loopback port, for the rest of the test.
pub async fn serve(router: axum::Router) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind a loopback port");
    let addr = listener.local_addr().expect("its address");
    tokio::spawn(async move {
        axum::serve(listener, router).await.expect("serve");
    });
    addr
}

/// An HTTP response, its body read whole.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// The first of `headers` called `name` (any case).
fn find_header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

impl Response {
    /// The first header called `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        find_header(&self.headers, name)
    }

    /// The body as JSON (panics, showing it, if it is not).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "status {}: body is not JSON ({e}): {:?}",
                self.status,
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    /// The query of the `Link: <?query>; rel="next"` header, if any.
    pub fn next_query(&self) -> Option<String> {
        let link = self.header("link")?;
        let inner = link.strip_prefix("<?")?.split_once('>')?;
        assert_eq!(inner.1, "; rel=\"next\"", "{link}");
        Some(inner.0.to_owned())
    }

    /// Asserts an error answer: this status, a JSON body
    /// `{"detail": .., "kind": kind}`; returns the message.
    #[track_caller]
    pub fn error(&self, status: u16, kind: &str) -> String {
        assert_eq!(
            self.status,
            status,
            "body: {}",
            String::from_utf8_lossy(&self.body)
        );
        let body = self.json();
        assert_eq!(body["kind"], kind, "{body}");
        let object = body.as_object().expect("an object");
        assert_eq!(object.len(), 2, "{body}");
        body["detail"].as_str().expect("a message").to_owned()
    }
}

/// `GET target` with no extra header.
pub async fn get(addr: SocketAddr, target: &str) -> Response {
    request(addr, "GET", target, &[], b"").await
}

/// `GET target` with `Authorization: Bearer token`.
pub async fn get_with_token(addr: SocketAddr, target: &str, token: &str) -> Response {
    let auth = format!("Bearer {token}");
    request(addr, "GET", target, &[("Authorization", &auth)], b"").await
}

/// `POST target` with a form body, and an `Origin` header if given.
pub async fn post_form(
    addr: SocketAddr,
    target: &str,
    form: &str,
    origin: Option<&str>,
) -> Response {
    let mut headers = vec![("Content-Type", "application/x-www-form-urlencoded")];
    if let Some(origin) = origin {
        headers.push(("Origin", origin));
    }
    request(addr, "POST", target, &headers, form.as_bytes()).await
}

/// POSTs `body` as JSON to `target`.
pub async fn post_json(addr: SocketAddr, target: &str, body: &Value) -> Response {
    let body = body.to_string();
    request(
        addr,
        "POST",
        target,
        &[("content-type", "application/json")],
        body.as_bytes(),
    )
    .await
}

/// One request on a new connection (`Connection: close`); the target is
/// sent byte for byte.
pub async fn request(
    addr: SocketAddr,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Response {
    exchange(addr, method, target, headers, body, false).await
}

/// As [`request`], but an answer that is an event stream (`200`,
/// `text/event-stream`, which may never end) is returned at its head,
/// its body left unread.
pub async fn request_or_stream(
    addr: SocketAddr,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Response {
    exchange(addr, method, target, headers, body, true).await
}

/// Sends the request, reads the answer (to its head only when `streams`
/// and it is an event stream).
async fn exchange(
    addr: SocketAddr,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    streams: bool,
) -> Response {
    let exchange = async {
        let mut stream = TcpStream::connect(addr).await.expect("connect");
        let mut head =
            format!("{method} {target} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        if !body.is_empty() {
            head.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes()).await.expect("send");
        stream.write_all(body).await.expect("send the body");
        let mut raw = Vec::new();
        let mut buffer = [0u8; 4096];
        // The server may close while a refused body is still being sent:
        // a failed read ends the answer.
        while let Ok(n @ 1..) = stream.read(&mut buffer).await {
            raw.extend_from_slice(&buffer[..n]);
            let end = raw.windows(4).position(|w| w == b"\r\n\r\n");
            if let (true, Some(end)) = (streams, end) {
                let head = String::from_utf8_lossy(&raw[..end]).to_ascii_lowercase();
                if head.contains("content-type: text/event-stream") {
                    raw.truncate(end + 4);
                    break;
                }
            }
        }
        parse(&raw, method == "HEAD")
    };
    tokio::time::timeout(Duration::from_secs(30), exchange)
        .await
        .expect("the server answers within 30 s")
}

fn parse(raw: &[u8], head_only: bool) -> Response {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no header end in {:?}", String::from_utf8_lossy(raw)));
    let head = std::str::from_utf8(&raw[..end]).expect("an ASCII head");
    let mut lines = head.split("\r\n");
    let status_line = lines.next().expect("a status line");
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
    let headers: Vec<(String, String)> = lines
        .map(|line| {
            let (name, value) = line.split_once(':').expect("a header line");
            (name.trim().to_owned(), value.trim().to_owned())
        })
        .collect();
    let rest = &raw[end + 4..];
    let chunked = find_header(&headers, "transfer-encoding").is_some_and(|v| v.contains("chunked"));
    let body = if chunked && !rest.is_empty() {
        dechunk(rest)
    } else {
        rest.to_vec()
    };
    let length = find_header(&headers, "content-length");
    if let (Some(length), false) = (length, head_only) {
        assert_eq!(
            length.parse::<usize>().ok(),
            Some(body.len()),
            "content-length"
        );
    }
    Response {
        status,
        headers,
        body,
    }
}

/// A whole chunked body, decoded.
fn dechunk(mut rest: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    loop {
        let (used, data) = next_chunk(rest).expect("a whole chunk");
        if data.is_empty() {
            return body;
        }
        body.extend_from_slice(data);
        rest = &rest[used..];
    }
}

/// The chunk `raw` starts with, if it is whole: how many bytes it takes
/// up, and its data (empty for the last chunk, whose trailer is not read).
fn next_chunk(raw: &[u8]) -> Option<(usize, &[u8])> {
    let line_end = raw.windows(2).position(|w| w == b"\r\n")?;
    let size_text = std::str::from_utf8(&raw[..line_end]).expect("ASCII size");
    let size =
        usize::from_str_radix(size_text.split(';').next().unwrap().trim(), 16).expect("hex size");
    let start = line_end + 2;
    if size == 0 {
        return Some((start, &[]));
    }
    let data = raw.get(start..start + size)?;
    (raw.len() >= start + size + 2).then_some((start + size + 2, data))
}

/// Every page of a list, following the `Link` headers from `first`:
/// the items in order, and the number of pages.
pub async fn all_pages(addr: SocketAddr, path: &str, first: &str) -> (Vec<Value>, usize) {
    let mut items = Vec::new();
    let mut pages = 0;
    let mut query = first.to_owned();
    loop {
        let response = get(addr, &format!("{path}?{query}")).await;
        assert_eq!(response.status, 200, "{:?}", response.json());
        pages += 1;
        let page = response.json();
        let page = page.as_array().expect("a JSON list").clone();
        items.extend(page);
        match response.next_query() {
            Some(next) => query = next,
            None => return (items, pages),
        }
        assert!(pages < 10_000, "the pages never end");
    }
}

/// `text`, percent-encoded for a path segment (every byte but the
/// unreserved ones).
pub fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// One server-sent event: its `id:` (if any), `event:` and `data:`.
#[derive(Debug, Clone, PartialEq)]
pub struct SseEvent {
    pub id: Option<String>,
    pub event: String,
    pub data: String,
}

impl SseEvent {
    /// The data as JSON (panics, showing it, if it is not).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data)
            .unwrap_or_else(|e| panic!("event data is not JSON ({e}): {self:?}"))
    }

    /// The id as a step number.
    #[track_caller]
    pub fn seq(&self) -> u64 {
        self.id
            .as_deref()
            .unwrap_or_else(|| panic!("no id: {self:?}"))
            .parse()
            .expect("a numeric id")
    }
}

/// What an event stream sends: an event, or a comment (`: text`).
#[derive(Debug, Clone, PartialEq)]
pub enum Frame {
    Event(SseEvent),
    Comment(String),
}

/// An open `text/event-stream` answer, read as it arrives (its chunked
/// body decoded on the way).
pub struct EventStream {
    socket: TcpStream,
    pub headers: Vec<(String, String)>,
    /// Received, not yet decoded from chunks.
    raw: Vec<u8>,
    /// Decoded body, not yet parsed into frames.
    body: Vec<u8>,
    /// The last chunk (or the connection's end) was seen.
    ended: bool,
}

/// `GET target` with `headers`, answered with an event stream (status
/// 200); any other answer is returned whole as the error.
pub async fn open_stream(
    addr: SocketAddr,
    target: &str,
    headers: &[(&str, &str)],
) -> Result<EventStream, Response> {
    open_request_stream(addr, "GET", target, headers, b"").await
}

/// `POST target` with `headers` and `body`, answered with an event stream
/// (a run's); any other answer is returned whole as the error.
pub async fn open_post_stream(
    addr: SocketAddr,
    target: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Result<EventStream, Response> {
    open_request_stream(addr, "POST", target, headers, body).await
}

async fn open_request_stream(
    addr: SocketAddr,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Result<EventStream, Response> {
    let open = async {
        let mut socket = TcpStream::connect(addr).await.expect("connect");
        let mut head = format!("{method} {target} HTTP/1.1\r\nHost: {addr}\r\n");
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        if !body.is_empty() {
            head.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        head.push_str("\r\n");
        socket.write_all(head.as_bytes()).await.expect("send");
        socket.write_all(body).await.expect("send the body");
        let mut raw = Vec::new();
        let end = loop {
            if let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
                break end;
            }
            let mut buf = [0u8; 4096];
            let n = socket.read(&mut buf).await.expect("read the head");
            assert!(n > 0, "closed before the head: {raw:?}");
            raw.extend_from_slice(&buf[..n]);
        };
        let parsed = parse(&raw[..end + 4], true);
        if parsed.status != 200 {
            // An error answer: read it whole, by its length.
            let length: usize = parsed
                .header("content-length")
                .expect("an error answer has a length")
                .parse()
                .expect("a numeric length");
            while raw.len() < end + 4 + length {
                let mut buf = [0u8; 4096];
                let n = socket.read(&mut buf).await.expect("read the body");
                assert!(n > 0, "closed in the body");
                raw.extend_from_slice(&buf[..n]);
            }
            return Err(parse(&raw, false));
        }
        assert!(
            parsed
                .header("content-type")
                .is_some_and(|t| t.starts_with("text/event-stream")),
            "{:?}",
            parsed.headers
        );
        assert!(
            parsed
                .header("transfer-encoding")
                .is_some_and(|t| t.contains("chunked")),
            "{:?}",
            parsed.headers
        );
        Ok(EventStream {
            socket,
            headers: parsed.headers,
            raw: raw[end + 4..].to_vec(),
            body: Vec::new(),
            ended: false,
        })
    };
    tokio::time::timeout(Duration::from_secs(30), open)
        .await
        .expect("the server answers within 30 s")
}

/// `GET target`, which must answer with an event stream (panics, showing
/// the answer, if it does not).
pub async fn stream(addr: SocketAddr, target: &str) -> EventStream {
    match open_stream(addr, target, &[]).await {
        Ok(stream) => stream,
        Err(response) => panic!(
            "{target}: {} {}",
            response.status,
            String::from_utf8_lossy(&response.body)
        ),
    }
}

impl EventStream {
    /// The first header called `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        find_header(&self.headers, name)
    }

    /// Moves whole chunks from `raw` to `body`.
    fn dechunk(&mut self) {
        while let Some((used, data)) = next_chunk(&self.raw) {
            if data.is_empty() {
                self.ended = true;
                self.raw.clear();
                return;
            }
            self.body.extend_from_slice(data);
            self.raw.drain(..used);
        }
    }

    /// The next frame, waiting up to `wait`; `None` when the stream ended.
    /// Panics when nothing whole arrives in time.
    pub async fn next_frame(&mut self, wait: Duration) -> Option<Frame> {
        let read = async {
            loop {
                self.dechunk();
                if let Some(end) = self.body.windows(2).position(|w| w == b"\n\n") {
                    let block: Vec<u8> = self.body.drain(..end + 2).collect();
                    return Some(frame(std::str::from_utf8(&block).expect("UTF-8 event")));
                }
                if self.ended {
                    assert!(self.body.is_empty(), "a partial event at the end");
                    return None;
                }
                let mut buf = [0u8; 16 * 1024];
                let n = self.socket.read(&mut buf).await.expect("read the stream");
                if n == 0 {
                    self.ended = true;
                    continue;
                }
                self.raw.extend_from_slice(&buf[..n]);
            }
        };
        tokio::time::timeout(wait, read)
            .await
            .unwrap_or_else(|_| panic!("no whole event within {wait:?}"))
    }

    /// The next event, skipping comments (10 s at most).
    pub async fn next_event(&mut self) -> SseEvent {
        loop {
            match self.next_frame(Duration::from_secs(10)).await {
                Some(Frame::Event(event)) => return event,
                Some(Frame::Comment(_)) => {}
                None => panic!("the stream ended"),
            }
        }
    }

    /// `n` events, skipping comments.
    pub async fn events(&mut self, n: usize) -> Vec<SseEvent> {
        let mut events = Vec::with_capacity(n);
        for _ in 0..n {
            events.push(self.next_event().await);
        }
        events
    }

    /// Reads until the server ends the stream (within 10 s), whatever it
    /// sends (an Agent Server stream's CRLF frames included); the rest of
    /// the body, still chunked.
    pub async fn read_to_end(&mut self) -> Vec<u8> {
        let read = async {
            while !self.ended {
                let mut buf = [0u8; 16 * 1024];
                let n = self.socket.read(&mut buf).await.expect("read the stream");
                self.ended = n == 0;
                self.raw.extend_from_slice(&buf[..n]);
            }
            std::mem::take(&mut self.raw)
        };
        tokio::time::timeout(Duration::from_secs(10), read)
            .await
            .expect("the stream ends within 10 s")
    }

    /// Asserts that the stream ends (after comments only) within 10 s.
    pub async fn assert_ends(&mut self) {
        loop {
            match self.next_frame(Duration::from_secs(10)).await {
                Some(Frame::Comment(_)) => {}
                Some(Frame::Event(event)) => panic!("an event after the end: {event:?}"),
                None => return,
            }
        }
    }

    /// Asserts that no event arrives within `wait` (comments may).
    pub async fn assert_quiet(&mut self, wait: Duration) {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() {
                return;
            }
            let next = tokio::time::timeout(left, self.next_frame(wait * 2)).await;
            match next {
                Err(_) => return,
                Ok(Some(Frame::Comment(_))) => {}
                Ok(other) => panic!("expected nothing, got {other:?}"),
            }
        }
    }
}

/// One block of an event stream, its blank line included.
fn frame(block: &str) -> Frame {
    let mut id = None;
    let mut event = String::from("message");
    let mut data: Vec<&str> = Vec::new();
    let mut comments = Vec::new();
    for line in block.split('\n').filter(|l| !l.is_empty()) {
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "" => comments.push(value.to_owned()),
            "id" => id = Some(value.to_owned()),
            "event" => event = value.to_owned(),
            "data" => data.push(value),
            other => panic!("unknown field {other:?} in {block:?}"),
        }
    }
    if data.is_empty() && id.is_none() {
        return Frame::Comment(comments.join("\n"));
    }
    Frame::Event(SseEvent {
        id,
        event,
        data: data.join("\n"),
    })
}
