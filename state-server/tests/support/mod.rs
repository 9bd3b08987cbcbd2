//! Helpers shared by the state-server integration tests: the state-store
//! suite's real backends, a test state, the router served on a loopback
//! port, and a small HTTP/1.1 client over a `TcpStream` (it sends the
//! target bytes exactly as given, so hostile paths reach the server as
//! written).
#![allow(dead_code)]

#[path = "../../../state-store/tests/support/backends.rs"]
pub mod backends;
#[path = "../../../state-store/tests/support/postgres.rs"]
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

/// Thread `id` with `n` steps: step k appends `"k"` to the log.
pub async fn thread_with_steps(store: &Store, id: &str, n: u64) {
    let mut thread = store.thread::<Notes>(id).await.expect("open thread");
    for k in 1..=n {
        thread
            .apply(Notes::delta().log(vec![k.to_string()]))
            .await
            .expect("apply");
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

impl Response {
    /// The first header called `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
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
    /// `{"error": .., "kind": kind}`; returns the message.
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
        body["error"].as_str().expect("a message").to_owned()
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

/// One request on a new connection (`Connection: close`); the target is
/// sent byte for byte.
pub async fn request(
    addr: SocketAddr,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &[u8],
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
        // The server may close while a refused body is still being sent.
        let _ = stream.read_to_end(&mut raw).await;
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
    let chunked = headers
        .iter()
        .any(|(n, v)| n.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    let body = if chunked {
        dechunk(rest)
    } else {
        rest.to_vec()
    };
    let length = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"));
    if let (Some((_, length)), false) = (length, head_only) {
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

fn dechunk(mut rest: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    loop {
        let line_end = rest
            .windows(2)
            .position(|w| w == b"\r\n")
            .expect("chunk size");
        let size_text = std::str::from_utf8(&rest[..line_end]).expect("ASCII size");
        let size = usize::from_str_radix(size_text.split(';').next().unwrap().trim(), 16)
            .expect("hex size");
        rest = &rest[line_end + 2..];
        if size == 0 {
            return body;
        }
        body.extend_from_slice(&rest[..size]);
        rest = &rest[size + 2..];
    }
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
