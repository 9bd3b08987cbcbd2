//! `POST /threads/{id}/stream/events`: the v3 thread protocol's event
//! stream (what `client.threads.stream(...)` reads; recorded exchanges
//! 55, 56 and 59). The body names the channels (`values`, `updates`,
//! `messages`, `tools`, `lifecycle`, `input`, `checkpoints`, `tasks`,
//! `custom`, `custom:<name>`), and may narrow them to `namespaces` (path
//! prefixes, a segment without `:` matching `name:<task>`) and a `depth`
//! below them; `since` skips the events up to that `seq`. The events are
//! the thread's feed ([`protocol_feed`](super::protocol_feed)), each
//! sent under its method's name with its `seq` as its `id:`.

use super::protocol_feed::{Fed, feed};
use super::protocol_shape::Shaped;
use super::sse;
use crate::auth::Owner;
use crate::error::ApiError;
use crate::extract::Path;
use crate::routes::App;
use axum::body::Bytes;
use axum::extract::State as Shared;
use axum::http::HeaderMap;
use axum::response::Response;
use futures::StreamExt;
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::HashSet;

/// The channels a stream may name (and `custom:<name>`).
const CHANNELS: [&str; 9] = [
    "values",
    "updates",
    "checkpoints",
    "messages",
    "tools",
    "custom",
    "lifecycle",
    "input",
    "tasks",
];

/// The request body (`EventStreamRequest`).
#[derive(Deserialize)]
pub(crate) struct EventsRequest {
    /// Checked by hand: LangGraph answers a missing or bad list with a
    /// 400 naming the channels it takes.
    #[serde(default)]
    channels: Option<Vec<Value>>,
    #[serde(default)]
    namespaces: Option<Vec<Vec<String>>>,
    #[serde(default)]
    depth: Option<usize>,
    #[serde(default)]
    since: Option<u64>,
}

/// Which events a connection sends.
pub(crate) struct Filter {
    channels: HashSet<String>,
    /// Prefixes; none: every namespace.
    namespaces: Vec<Vec<String>>,
    depth: Option<usize>,
    /// Events up to this `seq` are not sent.
    pub since: u64,
}

impl Filter {
    /// The request's filter, or LangGraph's 400 naming what is wrong.
    pub(crate) fn of(request: EventsRequest) -> Result<Filter, ApiError> {
        let channels = request.channels.unwrap_or_default();
        if channels.is_empty() {
            return Err(ApiError::bad_request(
                "channels is required and must be a non-empty array",
            ));
        }
        let mut known = HashSet::new();
        let mut bad = Vec::new();
        for channel in channels {
            match channel {
                Value::String(name)
                    if CHANNELS.contains(&name.as_str())
                        || name.strip_prefix("custom:").is_some_and(|n| !n.is_empty()) =>
                {
                    known.insert(name);
                }
                Value::String(name) => bad.push(name),
                other => bad.push(other.to_string()),
            }
        }
        if !bad.is_empty() {
            bad.truncate(5);
            return Err(ApiError::bad_request(format!(
                "channels contains unsupported entries: {}. Allowed: values, updates, messages, \
                 tools, custom, lifecycle, input, tasks, checkpoints, or any `custom:<name>`.",
                bad.join(", ")
            )));
        }
        Ok(Filter {
            channels: known,
            namespaces: request.namespaces.unwrap_or_default(),
            depth: request.depth,
            since: request.since.unwrap_or(0),
        })
    }

    /// Whether `event` is sent.
    pub(crate) fn sends(&self, event: &Shaped) -> bool {
        let name = (event.method == "custom")
            .then(|| event.data["name"].as_str())
            .flatten();
        self.sends_to(event.method, &event.namespace, name)
    }

    /// Whether an event of `method` in `namespace` is sent (`name`: a
    /// custom event's name).
    pub(crate) fn sends_to(&self, method: &str, namespace: &[String], name: Option<&str>) -> bool {
        let named = match method {
            "input.requested" => self.channels.contains("input"),
            "custom" => {
                self.channels.contains("custom")
                    || name.is_some_and(|name| self.channels.contains(&format!("custom:{name}")))
            }
            channel => self.channels.contains(channel),
        };
        named
            && (self.namespaces.is_empty()
                || self.namespaces.iter().any(|prefix| {
                    is_prefix(namespace, prefix)
                        && self
                            .depth
                            .is_none_or(|depth| namespace.len() - prefix.len() <= depth)
                }))
    }
}

/// Whether `namespace` starts with `prefix`: a segment equal, or, for a
/// prefix segment without a task id, equal once the task id is cut
/// (`agent` matches `agent:1f2e`).
fn is_prefix(namespace: &[String], prefix: &[String]) -> bool {
    prefix.len() <= namespace.len()
        && prefix.iter().zip(namespace).all(|(want, have)| {
            want == have || (!want.contains(':') && have.split(':').next() == Some(want.as_str()))
        })
}

/// The request's body as LangGraph reads it: not JSON is a 400 (`Invalid
/// JSON body`), as is JSON that is no object (it has no `channels`); a
/// field of the wrong type is a 422 naming it.
fn request_of(headers: &HeaderMap, body: &[u8]) -> Result<EventsRequest, ApiError> {
    super::body::require_json(headers)?;
    match serde_json::from_slice::<Value>(body) {
        Err(error) => Err(ApiError::bad_request(format!("Invalid JSON body: {error}"))),
        Ok(Value::Object(_)) => super::body::parse(body),
        Ok(_) => Err(ApiError::bad_request(
            "channels is required and must be a non-empty array",
        )),
    }
}

/// The route.
pub(crate) async fn events(
    Shared(app): Shared<App>,
    owner: Owner,
    Path(thread): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let filter = Filter::of(request_of(&headers, &body)?)?;
    let permit = app.streams.acquire()?;
    let frames = feed(app, thread, owner.0)
        .map(move |fed| match fed {
            Fed::Events(events) => {
                let mut out = Vec::new();
                for numbered in &events {
                    if numbered.seq > filter.since && filter.sends(&numbered.event) {
                        let id = numbered.seq.to_string();
                        let frame =
                            sse::frame(numbered.event.method, &numbered.envelope(), Some(&id));
                        out.extend_from_slice(&frame);
                    }
                }
                Bytes::from(out)
            }
            Fed::Silent => Bytes::from_static(sse::HEARTBEAT_FRAME),
            Fed::Failed(message) => {
                let data = json!({"error": "StoreError", "message": message});
                sse::frame("error", &data, None)
            }
        })
        .filter(|frame| std::future::ready(!frame.is_empty()))
        .map(Ok::<_, std::convert::Infallible>);
    Ok(sse::response(frames, permit))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(body: Value) -> Result<Filter, ApiError> {
        Filter::of(serde_json::from_value(body).unwrap())
    }

    fn event(method: &'static str, namespace: &[&str], data: Value) -> Shaped {
        Shaped {
            method,
            namespace: namespace.iter().map(|s| s.to_string()).collect(),
            data,
            node: None,
            event_id: "e".into(),
            timestamp: 0,
        }
    }

    #[test]
    fn channels_are_checked_as_langgraph_checks_them() {
        for body in [json!({}), json!({"channels": []})] {
            let error = request(body).err().unwrap();
            assert_eq!(error.status(), 400);
            assert!(error.message().starts_with("channels is required"));
        }
        let error = request(json!({"channels": ["values", "debug", 3]}))
            .err()
            .unwrap();
        assert_eq!(error.status(), 400);
        assert!(
            error
                .message()
                .starts_with("channels contains unsupported entries: debug, 3."),
            "{}",
            error.message()
        );
        assert!(request(json!({"channels": ["custom:progress", "input"]})).is_ok());
        assert!(request(json!({"channels": ["custom:"]})).is_err());
    }

    #[test]
    fn events_are_filtered_by_channel_namespace_and_depth() {
        let filter = request(json!({"channels": ["input", "custom:progress", "values"],
                                    "namespaces": [["child"]], "depth": 1}))
        .unwrap();
        assert!(filter.sends(&event("input.requested", &["child:1"], json!({}))));
        assert!(filter.sends(&event("values", &["child:1", "inner:2"], json!({}))));
        assert!(!filter.sends(&event("values", &["child:1", "inner:2", "x"], json!({}))));
        assert!(!filter.sends(&event("values", &[], json!({}))));
        assert!(!filter.sends(&event("updates", &["child"], json!({}))));
        let custom = |name: &str| event("custom", &["child"], json!({"name": name}));
        assert!(filter.sends(&custom("progress")));
        assert!(!filter.sends(&custom("other")));
        // A prefix segment with a task id matches that task only.
        let exact = request(json!({"channels": ["values"], "namespaces": [["child:1"]]})).unwrap();
        assert!(exact.sends(&event("values", &["child:1"], json!({}))));
        assert!(!exact.sends(&event("values", &["child:2"], json!({}))));
    }
}
