//! A thread's v3 protocol events, numbered, for one connection (an event
//! stream, or a WebSocket): as LangGraph's server, each connection replays
//! the thread's runs from the first (its latest 100), then follows the
//! runs to come, for as long as the client stays. Every run's stored
//! events are shaped into protocol events
//! ([`protocol_shape`](super::protocol_shape)) and numbered `seq` 1, 2...
//! on this connection, whichever of them the connection then sends. The
//! thread may not exist yet (the client names a new thread before
//! `run.start` makes it): the feed waits for it; it ends when the thread
//! is deleted, or turns out to be another's.

use super::follow::{Followed, run_events};
use super::protocol_shape::{RunShaper, Shaped};
use super::sse;
use crate::routes::App;
use futures::{Stream, StreamExt};
use serde_json::{Value, json};
use state_store::{Run, RunFilter, RunWakeups};
use std::collections::HashSet;
use std::pin::Pin;

/// How many of a thread's runs a connection replays: its latest.
const RUNS: usize = 100;

/// A protocol event with its number on the connection.
pub(crate) struct Numbered {
    pub seq: u64,
    pub event: Shaped,
}

impl Numbered {
    /// The event as the protocol sends it: `{"type": "event", "event_id",
    /// "seq", "method", "params": {"namespace", "timestamp", "data",
    /// "node"?}}`.
    pub(crate) fn envelope(&self) -> Value {
        let event = &self.event;
        let mut params = json!({"namespace": event.namespace, "timestamp": event.timestamp,
                                "data": event.data});
        if let Some(node) = &event.node {
            params["node"] = json!(node);
        }
        json!({"type": "event", "event_id": event.event_id, "seq": self.seq,
               "method": event.method, "params": params})
    }
}

/// What a feed yields.
pub(crate) enum Fed {
    /// Events, in order.
    Events(Vec<Numbered>),
    /// Nothing for [`sse::HEARTBEAT`].
    Silent,
    /// The store failed; the feed ends.
    Failed(String),
}

/// The protocol events of `thread` for a reader that is `owner` (`None`:
/// anyone).
pub(crate) fn feed(
    app: App,
    thread: String,
    owner: Option<String>,
) -> impl Stream<Item = Fed> + Send {
    let start = Feed {
        wakeups: app.store.run_wakeups(),
        app,
        thread,
        owner,
        seq: 0,
        started: HashSet::new(),
        existed: false,
        current: None,
    };
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
                    Some(Followed::Silent) => return Some((Fed::Silent, Some(at))),
                    Some(Followed::Failed(message)) => return Some((Fed::Failed(message), None)),
                    None => {
                        let run = at.app.store.get_run(&current.run_id, None).await;
                        if let Ok(Some(run)) = run {
                            let at_ms = crate::json::millis(run.updated_at);
                            current.shaper.end(run.status, at_ms, &mut shaped);
                        }
                        at.current = None;
                    }
                }
                if !shaped.is_empty() {
                    let numbered = at.number(shaped);
                    return Some((Fed::Events(numbered), Some(at)));
                }
                continue;
            }
            if !at.thread_stays().await {
                return None;
            }
            match at.next_run().await {
                Ok(Some(running)) => {
                    let numbered = at.number(vec![running]);
                    return Some((Fed::Events(numbered), Some(at)));
                }
                Ok(None) => {}
                Err(error) => return Some((Fed::Failed(error.to_string()), None)),
            }
            match tokio::time::timeout(sse::HEARTBEAT, at.wakeups.next()).await {
                Err(_) => return Some((Fed::Silent, Some(at))),
                Ok(Ok(_)) => {}
                // The store's notifications failed: look again in a while.
                Ok(Err(_)) => tokio::time::sleep(sse::HEARTBEAT).await,
            }
        }
    })
}

/// A run being fed.
struct Current {
    run_id: String,
    shaper: RunShaper,
    events: Pin<Box<dyn Stream<Item = Followed> + Send>>,
}

/// Where a feed is.
struct Feed {
    app: App,
    thread: String,
    owner: Option<String>,
    /// The last `seq` given.
    seq: u64,
    /// The runs fed (or being fed).
    started: HashSet<String>,
    /// Whether the thread was seen: it going away then ends the feed.
    existed: bool,
    current: Option<Current>,
    /// Wakes the feed when a run is created.
    wakeups: RunWakeups,
}

impl Feed {
    /// Numbers `shaped`.
    fn number(&mut self, shaped: Vec<Shaped>) -> Vec<Numbered> {
        shaped
            .into_iter()
            .map(|event| {
                self.seq += 1;
                Numbered {
                    seq: self.seq,
                    event,
                }
            })
            .collect()
    }

    /// Starts the oldest run not fed yet, if there is one; its first
    /// event (`running`).
    async fn next_run(&mut self) -> Result<Option<Shaped>, state_store::StoreError> {
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
        Ok(Some(running))
    }

    /// Whether the feed goes on waiting for runs: the thread is there and
    /// the reader's, or not there yet.
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
