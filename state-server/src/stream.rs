//! `GET /threads/{id}/stream`: a thread's steps as server-sent events, the
//! backlog after the resume point first, then each step as it is committed
//! (by this process or any other on the same database), through
//! [`Store::watch`].
//!
//! Per step: an `updates` event (what it wrote, as LangGraph's
//! `{node: update}` chunks), a `values` event (the state after it), or
//! both, the step's seq as the `id:` of its last event only, so that a
//! client resuming from its last id never gets half a step. The stream
//! ends with `event: end` when the thread is deleted, or `event: error`
//! (the JSON error body) when the store fails.

use crate::error::ApiError;
use crate::extract::{Query, ThreadId};
use crate::routes::App;
use axum::extract::State as Shared;
use axum::http::{HeaderMap, Uri};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::{Stream, StreamExt};
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::{Map, Value, json};
use state_core::State;
use state_store::{StepKind, StepRecord, StepStream, Store, StoreError};
use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;

/// The header a reconnecting `EventSource` sends: the last `id:` it saw.
const LAST_EVENT_ID: &str = "last-event-id";

/// The state after a step, as JSON.
type ValuesFuture<'a> = Pin<Box<dyn Future<Output = Result<Value, Stop>> + Send + 'a>>;

/// One connection's source of `values`: the state after each step it
/// streams, in order.
pub(crate) trait Values: Send {
    /// The state after `step`, the next step streamed.
    fn after<'a>(&'a mut self, step: &'a StepRecord) -> ValuesFuture<'a>;
}

/// How the typed router makes a connection's [`Values`] (for the store
/// and thread id); the untyped router has none.
pub(crate) type ValuesFn = fn(Store, String) -> Box<dyn Values>;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StreamQuery {
    mode: Option<String>,
    after: Option<u64>,
    /// The token of a client that cannot send a header (a browser's
    /// `EventSource`): the guard checks it, the handler ignores it.
    #[serde(rename = "access_token")]
    _access_token: Option<IgnoredAny>,
}

/// Which events each step is sent as.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Modes {
    updates: bool,
    values: bool,
}

impl Modes {
    /// `updates` (the default), `values`, or both, comma-separated.
    fn parse(mode: Option<&str>) -> Result<Modes, ApiError> {
        let Some(mode) = mode else {
            return Ok(Modes {
                updates: true,
                values: false,
            });
        };
        let mut modes = Modes {
            updates: false,
            values: false,
        };
        for name in mode.split(',') {
            match name.trim() {
                "updates" => modes.updates = true,
                "values" => modes.values = true,
                other => {
                    return Err(ApiError::bad_query(format!(
                        "mode must be updates, values or updates,values, got {other:?}"
                    )));
                }
            }
        }
        Ok(modes)
    }
}

/// The step to start after: `Last-Event-ID` when a client sends one (a
/// reconnecting `EventSource` repeats its first URL, `?after=` included,
/// so the header is the later position), else `?after=`, else 0 (the
/// whole log).
fn resume_point(headers: &HeaderMap, after: Option<u64>) -> Result<u64, ApiError> {
    let Some(value) = headers.get(LAST_EVENT_ID) else {
        return Ok(after.unwrap_or(0));
    };
    let text = value.to_str().unwrap_or("\u{fffd}").trim();
    if text.is_empty() {
        // What an `EventSource` that saw no id yet would mean.
        return Ok(after.unwrap_or(0));
    }
    text.parse().map_err(|_| {
        ApiError::bad_header(format!(
            "Last-Event-ID must be a step number (the id: of an event of this stream), got {text:?}"
        ))
    })
}

/// `GET /threads/{id}/stream` on the typed router: `updates` and `values`.
pub(crate) async fn stream<S>(
    Shared(app): Shared<App>,
    ThreadId(id): ThreadId,
    headers: HeaderMap,
    uri: Uri,
) -> Result<Response, ApiError>
where
    S: State + serde::Serialize + Send + 'static,
    S::Delta: serde::Serialize + Send,
{
    open(app, id, &headers, &uri, Some(Replayed::<S>::boxed)).await
}

/// `GET /threads/{id}/stream` without a state type: `updates` only.
pub(crate) async fn stream_untyped(
    Shared(app): Shared<App>,
    ThreadId(id): ThreadId,
    headers: HeaderMap,
    uri: Uri,
) -> Result<Response, ApiError> {
    open(app, id, &headers, &uri, None).await
}

/// Checks the request (a bad one is a JSON 4xx before any event), then
/// answers with the stream.
async fn open(
    app: App,
    id: String,
    headers: &HeaderMap,
    uri: &Uri,
    values: Option<ValuesFn>,
) -> Result<Response, ApiError> {
    // An Agent Server thread answers the Agent Server's thread stream.
    #[cfg(feature = "graph")]
    if crate::agent::is_agent_thread(&app, &id).await? {
        return crate::agent::thread_stream(app, id, uri, headers).await;
    }
    let Query(query) = Query::<StreamQuery>::of(uri)?;
    let modes = Modes::parse(query.mode.as_deref())?;
    let values = match (modes.values, values) {
        (true, None) => return Err(ApiError::no_state_type_values()),
        (true, Some(values)) => Some(values(app.store.clone(), id.clone())),
        (false, _) => None,
    };
    let after = resume_point(headers, query.after)?;
    // An id the store cannot hold is a 400 now, not an error event; a
    // thread that does not exist yet is waited for, as `watch` does.
    match app.store.thread_info(&id).await {
        Ok(_) | Err(StoreError::ThreadNotFound { .. }) => {}
        Err(error) => return Err(error.into()),
    }
    let permit = app.streams.acquire()?;
    let follow = Follow {
        steps: app.store.watch(&id, after),
        modes,
        values,
        queue: VecDeque::new(),
        done: false,
    };
    let keep_alive = KeepAlive::new().interval(app.keep_alive).text("keep-alive");
    Ok(Sse::new(crate::stream_cap::hold(follow.events(), permit))
        .keep_alive(keep_alive)
        .into_response())
}

/// Why a stream ends early.
pub(crate) enum Stop {
    /// The thread was deleted: `event: end`.
    Deleted,
    /// The thread was rewound below a step sent (a run rolled back):
    /// `event: end` naming the step it went back to; follow it again
    /// from there.
    Rewound(u64),
    /// The store failed: `event: error`.
    Error(ApiError),
}

impl From<StoreError> for Stop {
    fn from(error: StoreError) -> Stop {
        match error {
            StoreError::ThreadDeleted { .. } | StoreError::ThreadNotFound { .. } => Stop::Deleted,
            StoreError::ThreadRewound { seq, .. } => Stop::Rewound(seq),
            other => Stop::Error(other.into()),
        }
    }
}

/// A connection's `values` for state `S`: the state after the last step
/// streamed, kept, and each next step replayed onto it
/// ([`StepRecord::replay_onto`], what loading the thread does), so a
/// long-lived stream pays one step's replay per step, not a load. The first
/// step, one that does not follow the kept state (a gap) and one whose
/// replay is refused are rebuilt by the store instead
/// ([`Store::state_at`]: its latest snapshot at or before the step, then
/// the steps after it), which also has the last word on an error.
struct Replayed<S> {
    store: Store,
    id: String,
    /// The state after step `.0`.
    last: Option<(u64, S)>,
}

impl<S> Replayed<S>
where
    S: State + serde::Serialize + Send + 'static,
    S::Delta: serde::Serialize + Send,
{
    fn boxed(store: Store, id: String) -> Box<dyn Values> {
        Box::new(Replayed::<S> {
            store,
            id,
            last: None,
        })
    }
}

impl<S> Values for Replayed<S>
where
    S: State + serde::Serialize + Send + 'static,
    S::Delta: serde::Serialize + Send,
{
    fn after<'a>(&'a mut self, step: &'a StepRecord) -> ValuesFuture<'a> {
        Box::pin(async move {
            let replayed = match self.last.take() {
                Some((seq, mut state)) if seq + 1 == step.seq => step
                    .replay_onto(&self.id, &mut state)
                    .is_ok()
                    .then_some(state),
                _ => None,
            };
            let state = match replayed {
                Some(state) => state,
                None => self.store.state_at::<S>(&self.id, step.seq).await?,
            };
            let json = state
                .to_json()
                .map_err(|error| Stop::Error(ApiError::encode(&self.id, step.seq, &error)))?;
            self.last = Some((step.seq, state));
            Ok(json)
        })
    }
}

/// One connection's stream: its watcher, and the events of the step being
/// sent.
struct Follow {
    steps: StepStream,
    modes: Modes,
    values: Option<Box<dyn Values>>,
    /// Events made, not yet sent (at most a step's two, or the last one).
    queue: VecDeque<Event>,
    done: bool,
}

impl Follow {
    /// The events, read from the log only as fast as the client takes
    /// them: a client that stops reading holds one step, never a backlog,
    /// and never slows a writer.
    fn events(self) -> impl Stream<Item = Result<Event, Infallible>> + Send + 'static {
        futures::stream::unfold(self, |mut follow| async move {
            loop {
                if let Some(event) = follow.queue.pop_front() {
                    return Some((Ok(event), follow));
                }
                if follow.done {
                    return None;
                }
                follow.pull().await;
            }
        })
    }

    /// Reads the next step (waiting for one) into events.
    async fn pull(&mut self) {
        let stop = match self.steps.next().await {
            Some(Ok(step)) => match self.step(&step).await {
                Ok(()) => return,
                Err(stop) => stop,
            },
            Some(Err(error)) => error.into(),
            // The watcher ends only after an error, sent already.
            None => {
                self.done = true;
                return;
            }
        };
        let event = match stop {
            Stop::Deleted => Event::default()
                .event("end")
                .data(json!({"reason": "deleted"}).to_string()),
            Stop::Rewound(seq) => Event::default()
                .event("end")
                .data(json!({"reason": "rewound", "seq": seq}).to_string()),
            Stop::Error(error) => Event::default()
                .event("error")
                .data(error.body().to_string()),
        };
        self.queue.push_back(event);
        self.done = true;
    }

    /// A step's events: `updates`, `values`, or both; its seq is the id of
    /// the last one.
    async fn step(&mut self, step: &StepRecord) -> Result<(), Stop> {
        let mut events = Vec::with_capacity(2);
        if self.modes.updates {
            events.push(
                Event::default()
                    .event("updates")
                    .data(updates(step).to_string()),
            );
        }
        if let Some(values) = &mut self.values {
            let state = values.after(step).await?;
            events.push(Event::default().event("values").data(state.to_string()));
        }
        let last = events.pop().map(|event| event.id(step.seq.to_string()));
        self.queue.extend(events.into_iter().chain(last));
        Ok(())
    }
}

/// The `data:` of a step's `updates` event: always a JSON array of
/// LangGraph chunks, each an object with one key, in order:
/// - a superstep: `{node: delta}` per node (a worker sent to several
///   times: one chunk per send; a node that ran a subgraph of the
///   thread's state type, logged as its supersteps' deltas: one chunk per
///   delta, in order); without node names, `{"__superstep__": [delta,
///   ..]}`;
/// - a turn begun with input: `{"__start__": input}`;
/// - a paused superstep: `{"__interrupt__": [{"value", "id"}, ..]}` (its
///   finished nodes' deltas come with the superstep when it resumes);
/// - an `apply` by one named node: `{node: delta}`;
/// - anything else: `{"__<kind>__": body}` (`__apply__`, `__begin_turn__`
///   with `null`, `__set__` with `{"key", "value"}`, `__pending__`).
pub(crate) fn updates(step: &StepRecord) -> Value {
    let nodes = step.nodes();
    let body = &step.body;
    let chunks = match step.kind {
        StepKind::Superstep => match body.as_array() {
            Some(deltas) if deltas.len() == nodes.len() => nodes
                .iter()
                .zip(deltas)
                .flat_map(|(node, write)| {
                    crate::json::node_deltas(write)
                        .into_iter()
                        .map(|(_, delta)| chunk(node, delta.clone()))
                })
                .collect(),
            _ => Vec::new(),
        },
        StepKind::BeginTurn if !body.is_null() => vec![chunk("__start__", body.clone())],
        StepKind::Apply if nodes.len() == 1 => vec![chunk(nodes[0], body.clone())],
        StepKind::Pending => interrupts(body)
            .map(|list| vec![chunk("__interrupt__", list)])
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    let chunks = if chunks.is_empty() {
        vec![chunk(&format!("__{}__", step.kind.as_str()), body.clone())]
    } else {
        chunks
    };
    Value::Array(chunks)
}

fn chunk(name: &str, update: Value) -> Value {
    let mut map = Map::new();
    map.insert(name.to_owned(), update);
    Value::Object(map)
}

/// A pending step's interrupts, as LangGraph streams them:
/// `[{"value", "id"}, ..]`; `None` when it has none (a failure paused it).
fn interrupts(body: &Value) -> Option<Value> {
    let list = crate::json::pending_interrupts(body);
    if list.is_empty() {
        return None;
    }
    let list = list
        .iter()
        .map(|interrupt| {
            json!({
                "value": interrupt.get("value").cloned().unwrap_or(Value::Null),
                "id": interrupt.get("id").cloned().unwrap_or(Value::Null),
            })
        })
        .collect();
    Some(Value::Array(list))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn modes_parse_or_say_why_not() {
        let both = Modes {
            updates: true,
            values: true,
        };
        assert_eq!(
            Modes::parse(None).ok(),
            Some(Modes {
                updates: true,
                values: false
            })
        );
        assert_eq!(Modes::parse(Some("values,updates")).ok(), Some(both));
        assert_eq!(Modes::parse(Some("updates, values")).ok(), Some(both));
        assert_eq!(
            Modes::parse(Some("values")).ok(),
            Some(Modes {
                updates: false,
                values: true
            })
        );
        for bad in ["", "foo", "updates,", "messages"] {
            assert!(Modes::parse(Some(bad)).is_err(), "{bad:?}");
        }
    }

    #[tokio::test]
    async fn a_subgraphs_supersteps_are_an_update_chunk_each() {
        use state_core::{AgentState, Delta, State};
        use state_store::DeltasText;

        #[derive(AgentState, Debug, Clone, PartialEq)]
        struct S {
            #[reducer(append)]
            log: Vec<String>,
        }

        let store = Store::memory();
        let mut t = store.thread::<S>("t").await.unwrap();
        let write = |word: &str| S::delta().log(vec![word.to_owned()]);
        let steps = vec![
            DeltasText::write([&write("a")]).unwrap(),
            DeltasText::write([&write("b"), &write("c")]).unwrap(),
        ];
        let mut made = t.state().clone();
        made.apply(write("a")).unwrap();
        made.apply(write("b").merge(write("c")).unwrap()).unwrap();
        t.adopt_steps("crew", steps, std::sync::Arc::new(made))
            .await
            .unwrap();
        let step = &store.history("t", ..).await.unwrap()[0];
        assert_eq!(
            updates(step),
            json!([
                {"crew": {"log": ["a"]}},
                {"crew": {"log": ["b"]}},
                {"crew": {"log": ["c"]}},
            ])
        );
    }

    #[tokio::test]
    async fn values_replay_in_order_and_rebuild_otherwise() {
        use state_core::AgentState;

        #[derive(AgentState, Debug, Clone, PartialEq)]
        struct S {
            #[reducer(append)]
            log: Vec<String>,
            next: String,
        }

        let store = Store::memory();
        let mut t = store.thread::<S>("t").await.unwrap();
        for word in ["a", "b", "c", "d"] {
            t.apply(S::delta().log(vec![word.to_owned()]).next(word))
                .await
                .unwrap();
        }
        let history = store.history("t", ..).await.unwrap();
        let expected = |seq: u64| {
            let store = store.clone();
            async move {
                store
                    .state_at::<S>("t", seq)
                    .await
                    .unwrap()
                    .to_json()
                    .unwrap()
            }
        };
        let values = |values: Result<Value, Stop>| match values {
            Ok(value) => value,
            Err(_) => panic!("no values"),
        };

        let mut replayed = Replayed::<S>::boxed(store.clone(), "t".to_owned());
        // In order from step 2: rebuilt once, then replayed.
        for step in &history[1..3] {
            let got = values(replayed.after(step).await);
            assert_eq!(got, expected(step.seq).await, "step {}", step.seq);
        }
        // A refused replay is rebuilt by the store (the log is fine).
        let mut corrupt = history[3].clone();
        corrupt.body = json!({"log": "not a list"});
        let got = values(replayed.after(&corrupt).await);
        assert_eq!(got, expected(4).await);
        // A gap (back to step 2) is rebuilt too.
        let got = values(replayed.after(&history[1]).await);
        assert_eq!(got, expected(2).await);
        let got = values(replayed.after(&history[2]).await);
        assert_eq!(got, expected(3).await);
    }

    #[test]
    fn last_event_id_wins_over_after() {
        let mut headers = HeaderMap::new();
        assert_eq!(resume_point(&headers, None).ok(), Some(0));
        assert_eq!(resume_point(&headers, Some(4)).ok(), Some(4));
        headers.insert(LAST_EVENT_ID, HeaderValue::from_static("7"));
        assert_eq!(resume_point(&headers, Some(4)).ok(), Some(7));
        headers.insert(LAST_EVENT_ID, HeaderValue::from_static(""));
        assert_eq!(resume_point(&headers, Some(4)).ok(), Some(4));
        headers.insert(LAST_EVENT_ID, HeaderValue::from_static("-1"));
        assert!(resume_point(&headers, None).is_err());
    }
}
