//! Server-sent events as the Agent Server frames them (sse-starlette):
//! `event: <name>\r\ndata: <compact JSON>\r\n[id: <id>\r\n]\r\n`, the field
//! order event, data, id, and a `: heartbeat` comment while a stream is
//! silent. Clients split on either line ending; CRLF keeps us
//! byte-for-byte with the recorded exchanges.

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, header};
use axum::response::Response;
use serde_json::Value;
use std::convert::Infallible;
use std::time::Duration;

/// How long an Agent Server stream may be silent before a heartbeat (the
/// Agent Server's 5 s).
pub(crate) const HEARTBEAT: Duration = Duration::from_secs(5);

/// The comment sent after [`HEARTBEAT`] of silence.
pub(crate) const HEARTBEAT_FRAME: &[u8] = b": heartbeat\r\n\r\n";

/// A response streaming `frames`, with the Agent Server's SSE headers,
/// holding its place among the open streams (`permit`) until it ends.
pub(crate) fn response(
    frames: impl futures::Stream<Item = Result<Bytes, Infallible>> + Send + 'static,
    permit: crate::stream_cap::Permit,
) -> Response {
    let frames = crate::stream_cap::hold(frames, permit);
    let mut response = Response::new(Body::from_stream(frames));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream; charset=utf-8"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

/// One event's frame. JSON never holds a raw line break (serde_json
/// escapes them in strings), so `data` is one line.
pub(crate) fn frame(event: &str, data: &Value, id: Option<&str>) -> Bytes {
    let data = serde_json::to_string(data).unwrap_or_else(|_| "null".to_owned());
    let mut out = String::with_capacity(event.len() + data.len() + 32);
    out.push_str("event: ");
    // An event name is ours (a mode, a namespace of node names): a line
    // break in a node's name must not end the field.
    out.extend(
        event
            .chars()
            .map(|c| if c == '\r' || c == '\n' { ' ' } else { c }),
    );
    out.push_str("\r\ndata: ");
    out.push_str(&data);
    out.push_str("\r\n");
    if let Some(id) = id {
        out.push_str("id: ");
        out.push_str(id);
        out.push_str("\r\n");
    }
    out.push_str("\r\n");
    Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn frames_are_the_agent_servers() {
        assert_eq!(
            &frame("metadata", &json!({"run_id": "r"}), None)[..],
            b"event: metadata\r\ndata: {\"run_id\":\"r\"}\r\n\r\n"
        );
        assert_eq!(
            &frame("values", &json!({"t": "a\nb"}), Some("1795775945817-0"))[..],
            b"event: values\r\ndata: {\"t\":\"a\\nb\"}\r\nid: 1795775945817-0\r\n\r\n"
        );
        assert_eq!(
            &frame("updates|sub\n:1", &json!(null), None)[..],
            b"event: updates|sub :1\r\ndata: null\r\n\r\n"
        );
    }
}
