//! `POST /threads/{id}/stream/events`: the v3 thread protocol's event
//! stream (what `client.threads.stream(...)` reads; recorded exchanges
//! 55, 56 and 59). The body names the channels (`values`, `updates`,
//! `messages`, `tools`, `lifecycle`, `input`, `checkpoints`, `tasks`,
//! `custom`, `custom:<name>`), and may narrow them to `namespaces` (path
//! prefixes, a segment without `:` matching `name:<task>`) and a `depth`
//! below them; `since` skips the events up to that `seq`.
//!
//! As LangGraph's server, each connection replays the thread's runs from
//! the first (its latest 100), then follows the runs to come, and stays
//! open until the client leaves: every run's stored events are shaped
//! into protocol events ([`protocol_shape`](super::protocol_shape)),
//! numbered `seq` 1, 2... on this connection (the `id:` of each frame),
//! filtered, and sent under their method's name. The stream may be
//! opened before the thread exists (the client names a new thread before
//! `run.start` makes it); it waits for it.

use super::follow::{Followed, run_events};
use super::protocol_shape::{RunShaper, Shaped};
use super::sse;
use crate::auth::Owner;
use crate::error::ApiError;
use crate::extract::Path;
use crate::routes::App;
use axum::body::Bytes;
use axum::extract::State as Shared;
use axum::http::{HeaderMap, header};
use axum::response::Response;
use futures::{Stream, StreamExt};
use serde::Deserialize;
use serde_json::{Value, json};
use state_store::{Run, RunFilter, RunWakeups};
use std::collections::HashSet;
use std::convert::Infallible;
use std::pin::Pin;

/// How many of a thread's runs a connection replays: its latest.
const RUNS: usize = 100;

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
struct Filter {
    channels: HashSet<String>,
    /// Prefixes; none: every namespace.
    namespaces: Vec<Vec<String>>,
    depth: Option<usize>,
    since: u64,
}

impl Filter {
    /// The request's filter, or LangGraph's 400 naming what is wrong.
    fn of(request: EventsRequest) -> Result<Filter, ApiError> {
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
    fn sends(&self, event: &Shaped) -> bool {
        let channel = match event.method {
            "input.requested" => "input",
            other => other,
        };
        let named = if channel == "custom" {
            self.channels.contains("custom")
                || event.data["name"]
                    .as_str()
                    .is_some_and(|name| self.channels.contains(&format!("custom:{name}")))
        } else {
            self.channels.contains(channel)
        };
        named
            && (self.namespaces.is_empty()
                || self.namespaces.iter().any(|prefix| {
                    is_prefix(&event.namespace, prefix)
                        && self
                            .depth
                            .is_none_or(|depth| event.namespace.len() - prefix.len() <= depth)
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
    // JSON only, as every body of the API (a cross-site form cannot open it).
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(super::body::is_json);
    if !json {
        return Err(ApiError::unsupported_media_type());
    }
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
    let connection = Connection {
        wakeups: app.store.run_wakeups(),
        app,
        thread,
        owner: owner.0,
        filter,
        seq: 0,
        started: HashSet::new(),
        existed: false,
        current: None,
    };
    Ok(sse::response(frames(connection), permit))
}

/// A run being streamed.
struct Current {
    run_id: String,
    shaper: RunShaper,
    events: Pin<Box<dyn Stream<Item = Followed> + Send>>,
}

/// Where a connection is.
struct Connection {
    app: App,
    thread: String,
    /// Who reads (`None`: anyone).
    owner: Option<String>,
    filter: Filter,
    /// The last `seq` given.
    seq: u64,
    /// The runs streamed (or being streamed).
    started: HashSet<String>,
    /// Whether the thread was seen: it going away then ends the stream.
    existed: bool,
    current: Option<Current>,
    /// Wakes the connection when a run is created.
    wakeups: RunWakeups,
}

impl Connection {
    /// Numbers `shaped`, and frames those the filter sends.
    fn frame(&mut self, shaped: Vec<Shaped>) -> Vec<u8> {
        let mut out = Vec::new();
        for event in shaped {
            self.seq += 1;
            if self.seq <= self.filter.since || !self.filter.sends(&event) {
                continue;
            }
            let mut params = json!({"namespace": event.namespace, "timestamp": event.timestamp,
                                    "data": event.data});
            if let Some(node) = event.node {
                params["node"] = json!(node);
            }
            let envelope = json!({"type": "event", "event_id": event.event_id, "seq": self.seq,
                                  "method": event.method, "params": params});
            out.extend_from_slice(&sse::frame(
                event.method,
                &envelope,
                Some(&self.seq.to_string()),
            ));
        }
        out
    }

    /// Starts the oldest run not streamed yet, if there is one; its first
    /// events.
    async fn next_run(&mut self) -> Result<Option<Vec<Shaped>>, ApiError> {
        let runs = self
            .app
            .store
            .list_runs(Some(&self.thread), RunFilter::default().limit(RUNS))
            .await?;
        let Some(run) = runs
            .iter()
            .rev()
            .find(|run| !self.started.contains(&run.run_id))
        else {
            return Ok(None);
        };
        self.started.insert(run.run_id.clone());
        let started = crate::json::millis(run.created_at);
        let (shaper, running) = RunShaper::start(&run.run_id, &graph_name(run), started);
        self.current = Some(Current {
            run_id: run.run_id.clone(),
            shaper,
            events: Box::pin(run_events(self.app.clone(), run.run_id.clone(), 0)),
        });
        Ok(Some(vec![running]))
    }

    /// Whether the stream goes on waiting for runs: the thread is there
    /// and the reader's, or not there yet.
    async fn thread_stays(&mut self) -> bool {
        match self.app.store.thread_record(&self.thread, None).await {
            Ok(Some(record)) => {
                self.existed = true;
                self.owner.is_none() || record.owner == self.owner
            }
            Ok(None) => !self.existed,
            // Read again at the next look.
            Err(_) => true,
        }
    }
}

/// The graph a run's lifecycle names: its graph id, or its assistant.
fn graph_name(run: &Run) -> String {
    run.kwargs["config"]["configurable"]["graph_id"]
        .as_str()
        .unwrap_or(&run.assistant_id)
        .to_owned()
}

/// The connection's frames, run after run, for as long as the client
/// stays.
fn frames(start: Connection) -> impl Stream<Item = Result<Bytes, Infallible>> + Send {
    futures::stream::unfold(Some(start), |at| async move {
        let mut at = at?;
        loop {
            if let Some(current) = at.current.as_mut() {
                let mut shaped = Vec::new();
                match current.events.next().await {
                    Some(Followed::Events(batch)) => {
                        for event in &batch {
                            current.shaper.shape(event, &mut shaped);
                        }
                    }
                    Some(Followed::Silent) => {
                        return Some((Ok(Bytes::from_static(sse::HEARTBEAT_FRAME)), Some(at)));
                    }
                    Some(Followed::Failed(message)) => {
                        let data = json!({"error": "StoreError", "message": message});
                        return Some((Ok(sse::frame("error", &data, None)), None));
                    }
                    None => {
                        let run = at.app.store.get_run(&current.run_id, None).await;
                        if let Ok(Some(run)) = run {
                            let at_ms = crate::json::millis(run.updated_at);
                            current.shaper.end(run.status, at_ms, &mut shaped);
                        }
                        at.current = None;
                    }
                }
                let out = at.frame(shaped);
                if !out.is_empty() {
                    return Some((Ok(Bytes::from(out)), Some(at)));
                }
                continue;
            }
            if !at.thread_stays().await {
                return None;
            }
            match at.next_run().await {
                Ok(Some(shaped)) => {
                    let out = at.frame(shaped);
                    if !out.is_empty() {
                        return Some((Ok(Bytes::from(out)), Some(at)));
                    }
                    continue;
                }
                Ok(None) => {}
                Err(error) => {
                    let data = json!({"error": "StoreError", "message": error.message()});
                    return Some((Ok(sse::frame("error", &data, None)), None));
                }
            }
            match tokio::time::timeout(sse::HEARTBEAT, at.wakeups.next()).await {
                Err(_) => return Some((Ok(Bytes::from_static(sse::HEARTBEAT_FRAME)), Some(at))),
                Ok(Ok(_)) => {}
                // The store's notifications failed: look again in a while.
                Ok(Err(_)) => tokio::time::sleep(sse::HEARTBEAT).await,
            }
        }
    })
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
