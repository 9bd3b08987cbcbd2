//! `GET /threads/{id}/stream/events` as a WebSocket: the v3 thread
//! protocol's other transport (`client.threads.stream(..,
//! transport="websocket")`, JavaScript's `transport: "websocket"`). Every
//! text frame the client sends is a command: `subscription.subscribe`
//! (`channels`, `namespaces`, `depth`, `since`, as the event stream's
//! body; answered with its `subscription_id` and how many events it
//! replayed, sent after them), `subscription.unsubscribe`
//! (`subscription_id`), `agent.getTree` (the latest run's namespaces and
//! their lifecycle), and the
//! commands of `POST /threads/{id}/commands` (`run.start`,
//! `input.respond`). The server sends each answer, then each event of the
//! thread's feed ([`protocol_feed`](super::protocol_feed)) that a
//! subscription asks for, once, as a text frame of its JSON envelope.
//!
//! A socket opened by a page of another site (its `Origin`) is refused:
//! browsers open WebSockets without asking the server (no CORS).
//!
//! The feed starts with the socket; events that come before a
//! subscription asks for them are kept (the latest [`KEPT`], within
//! [`KEPT_BYTES`]), and a new
//! subscription replays those it matches and that were not sent yet. The
//! socket closes when the client does, or when the thread is deleted.

use super::protocol_commands::{answer, invalid, success};
use super::protocol_events::{EventsRequest, Filter};
use super::protocol_feed::{Fed, Numbered, feed};
use crate::auth::Owner;
use crate::error::ApiError;
use crate::extract::Path;
use crate::routes::App;
use axum::extract::State as Shared;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::response::Response;
use futures::StreamExt;
use serde_json::{Value, json};
use std::collections::VecDeque;

/// How many events a socket keeps for subscriptions to come
/// (LangGraph's session keeps 10,000)...
const KEPT: usize = 10_000;

/// ...and how many bytes of them at most (a `values` event carries the
/// whole state): the oldest go first.
const KEPT_BYTES: usize = 4 << 20;

/// An event kept: what a subscription is matched against, its text, and
/// whether it was sent.
struct Kept {
    seq: u64,
    method: &'static str,
    namespace: Vec<String>,
    /// A custom event's name.
    name: Option<String>,
    text: String,
    sent: bool,
}

/// The events a socket keeps, within [`KEPT`] and [`KEPT_BYTES`].
#[derive(Default)]
struct KeptEvents {
    events: VecDeque<Kept>,
    /// Their texts' bytes.
    bytes: usize,
}

impl KeptEvents {
    /// Keeps `kept`, the oldest going past [`KEPT`] or [`KEPT_BYTES`].
    fn push(&mut self, kept: Kept) {
        self.bytes += kept.text.len();
        self.events.push_back(kept);
        while self.events.len() > KEPT || self.bytes > KEPT_BYTES {
            let Some(oldest) = self.events.pop_front() else {
                break;
            };
            self.bytes -= oldest.text.len();
        }
    }
}

impl Kept {
    fn of(numbered: &Numbered, text: String, sent: bool) -> Kept {
        let event = &numbered.event;
        let name = (event.method == "custom")
            .then(|| event.data["name"].as_str().map(str::to_owned))
            .flatten();
        Kept {
            seq: numbered.seq,
            method: event.method,
            namespace: event.namespace.clone(),
            name,
            text,
            sent,
        }
    }

    /// Whether `filter` asks for it.
    fn wanted_by(&self, filter: &Filter) -> bool {
        self.seq > filter.since
            && filter.sends_to(self.method, &self.namespace, self.name.as_deref())
    }
}

/// The route: the upgrade, holding a place among the open streams for
/// the socket's life.
pub(crate) async fn socket(
    Shared(app): Shared<App>,
    owner: Owner,
    Path(thread): Path<String>,
    headers: axum::http::HeaderMap,
    upgrade: WebSocketUpgrade,
) -> Result<Response, ApiError> {
    // A browser opens a WebSocket to any site without asking it (no CORS):
    // a page of another site could start runs and read them. Clients that
    // are not browsers send no `Origin`.
    crate::origin::same_origin(&headers).map_err(|_| {
        ApiError::forbidden(
            "a WebSocket opened by a page of another site is refused (its Origin names \
             another host): browsers do not ask a server before opening one; such a page \
             uses the event stream, POST /threads/{id}/stream/events, which CORS governs",
        )
    })?;
    let permit = app.streams.acquire()?;
    // A command is a request body: the same cap.
    let upgrade = upgrade.max_message_size(crate::DEFAULT_BODY_LIMIT);
    Ok(upgrade.on_upgrade(move |socket| async move {
        let _permit = permit;
        Socket {
            app,
            thread,
            owner: owner.0,
            subscriptions: Vec::new(),
            kept: KeptEvents::default(),
            made: 0,
            tree: Vec::new(),
        }
        .serve(socket)
        .await;
    }))
}

/// A subscription on a socket.
struct Subscription {
    id: String,
    filter: Filter,
}

/// One socket's state.
struct Socket {
    app: App,
    thread: String,
    owner: Option<String>,
    subscriptions: Vec<Subscription>,
    /// The latest events.
    kept: KeptEvents,
    /// How many subscriptions were made (their ids).
    made: u64,
    /// The latest run's namespaces, each with its lifecycle status and
    /// graph name (`agent.getTree`).
    tree: Vec<(Vec<String>, String, String)>,
}

impl Socket {
    /// Answers commands and sends events until the client leaves or the
    /// thread goes.
    async fn serve(mut self, mut socket: WebSocket) {
        let mut events = Box::pin(feed(
            self.app.clone(),
            self.thread.clone(),
            self.owner.clone(),
        ));
        loop {
            let out = tokio::select! {
                incoming = socket.recv() => match incoming {
                    Some(Ok(Message::Text(text))) => self.command(text.as_str()).await,
                    Some(Ok(Message::Binary(bytes))) => match std::str::from_utf8(&bytes) {
                        Ok(text) => self.command(text).await,
                        Err(_) => vec![not_json()],
                    },
                    Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
                    // Closed, or the connection failed.
                    Some(Ok(Message::Close(_)) | Err(_)) | None => return,
                },
                fed = events.next() => match fed {
                    Some(Fed::Events(batch)) => self.fed(batch),
                    // Keeps proxies from closing a quiet socket.
                    Some(Fed::Silent) => {
                        if socket.send(Message::Ping(Default::default())).await.is_err() {
                            return;
                        }
                        continue;
                    }
                    Some(Fed::Failed(message)) => {
                        let failed = json!({"type": "error", "id": null, "error": "unknown_error",
                                            "message": message});
                        let _ = socket.send(Message::Text(failed.to_string().into())).await;
                        return;
                    }
                    // The thread was deleted (or is another's).
                    None => {
                        let _ = socket.send(Message::Close(None)).await;
                        return;
                    }
                },
            };
            for text in out {
                if socket.send(Message::Text(text.into())).await.is_err() {
                    return;
                }
            }
        }
    }

    /// The events a subscription asks for, each once; all kept.
    fn fed(&mut self, batch: Vec<Numbered>) -> Vec<String> {
        let mut out = Vec::new();
        for numbered in batch {
            self.grow_tree(&numbered);
            let sent = self.wanted(&numbered);
            let text = numbered.envelope().to_string();
            if sent {
                out.push(text.clone());
            }
            self.kept.push(Kept::of(&numbered, text, sent));
        }
        out
    }

    /// Whether a subscription asks for `numbered`.
    fn wanted(&self, numbered: &Numbered) -> bool {
        self.subscriptions.iter().any(|subscription| {
            numbered.seq > subscription.filter.since && subscription.filter.sends(&numbered.event)
        })
    }

    /// The answer to the text frame `text`, and for a subscription the
    /// kept events it replays.
    async fn command(&mut self, text: &str) -> Vec<String> {
        let command: Value = match serde_json::from_str(text) {
            Ok(command) => command,
            Err(_) => return vec![not_json()],
        };
        let id = command.get("id").cloned().unwrap_or(Value::Null);
        let params = command.get("params").cloned().unwrap_or(json!({}));
        match (id.as_u64(), command.get("method").and_then(Value::as_str)) {
            (Some(id), Some("subscription.subscribe")) => self.subscribe(id, params),
            (Some(id), Some("subscription.unsubscribe")) => {
                vec![self.unsubscribe(id, &params).to_string()]
            }
            (Some(id), Some("agent.getTree")) => {
                vec![success(id, json!({"tree": self.tree_at(&[])})).to_string()]
            }
            _ => {
                let owner = self.owner.as_deref();
                let (envelope, _) = answer(&self.app, owner, &self.thread, &command).await;
                vec![envelope.to_string()]
            }
        }
    }

    /// `subscription.subscribe`: the kept events it asks for that were
    /// not sent, then its answer.
    fn subscribe(&mut self, id: u64, params: Value) -> Vec<String> {
        let filter = serde_json::from_value::<EventsRequest>(params)
            .map_err(|error| error.to_string())
            .and_then(|request| Filter::of(request).map_err(|error| error.message().to_owned()));
        let filter = match filter {
            Ok(filter) => filter,
            Err(message) => return vec![invalid(json!(id), message).to_string()],
        };
        self.made += 1;
        let subscription_id = format!("sub-{}", self.made);
        let mut replayed = Vec::new();
        for kept in &mut self.kept.events {
            if !kept.sent && kept.wanted_by(&filter) {
                kept.sent = true;
                replayed.push(kept.text.clone());
            }
        }
        self.subscriptions.push(Subscription {
            id: subscription_id.clone(),
            filter,
        });
        let result = json!({"subscription_id": subscription_id,
                            "replayed_events": replayed.len()});
        // As LangGraph: the replayed events, then the answer.
        replayed.push(success(id, result).to_string());
        replayed
    }

    /// Follows the latest run's lifecycle (a root `running` starts a
    /// run's tree anew).
    fn grow_tree(&mut self, numbered: &Numbered) {
        let event = &numbered.event;
        if event.method != "lifecycle" {
            return;
        }
        let status = event.data["event"].as_str().unwrap_or_default().to_owned();
        let graph = event.data["graph_name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if event.namespace.is_empty() && status == "running" {
            self.tree.clear();
        }
        match self.tree.iter_mut().find(|(ns, ..)| *ns == event.namespace) {
            Some(node) => node.1 = status,
            None => self.tree.push((event.namespace.clone(), status, graph)),
        }
    }

    /// The tree below `namespace` (LangGraph's `agent.getTree`):
    /// `{namespace, status, graph_name, children?}`, children in order.
    fn tree_at(&self, namespace: &[String]) -> Value {
        let (status, graph) = self
            .tree
            .iter()
            .find(|(ns, ..)| ns == namespace)
            .map(|(_, status, graph)| (status.as_str(), graph.as_str()))
            .unwrap_or(("started", ""));
        let mut node = json!({"namespace": namespace, "status": status, "graph_name": graph});
        let mut children: Vec<&Vec<String>> = self
            .tree
            .iter()
            .map(|(ns, ..)| ns)
            .filter(|ns| ns.len() == namespace.len() + 1 && ns.starts_with(namespace))
            .collect();
        children.sort();
        if !children.is_empty() {
            node["children"] = children.iter().map(|ns| self.tree_at(ns)).collect();
        }
        node
    }

    /// `subscription.unsubscribe`.
    fn unsubscribe(&mut self, id: u64, params: &Value) -> Value {
        let Some(subscription_id) = params.get("subscription_id").and_then(Value::as_str) else {
            return invalid(json!(id), "subscription_id: expected a string");
        };
        let before = self.subscriptions.len();
        self.subscriptions.retain(|s| s.id != subscription_id);
        if self.subscriptions.len() == before {
            return json!({"type": "error", "id": id, "error": "no_such_subscription",
                          "message": format!("No subscription {subscription_id} on this socket")});
        }
        success(id, json!({}))
    }
}

/// The answer to a frame that is not JSON.
fn not_json() -> String {
    invalid(Value::Null, "Protocol commands must be valid JSON.").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::protocol_shape::Shaped;

    fn kept(seq: u64, bytes: usize) -> Kept {
        let numbered = Numbered {
            seq,
            event: Shaped {
                method: "custom",
                namespace: vec!["a:1".into()],
                data: json!({"name": "progress", "payload": "x"}),
                node: None,
                event_id: "e".into(),
                timestamp: 0,
            },
        };
        Kept::of(&numbered, "x".repeat(bytes), false)
    }

    #[test]
    fn the_oldest_events_go_past_the_count_or_the_bytes() {
        let mut events = KeptEvents::default();
        for seq in 1..=KEPT as u64 + 5 {
            events.push(kept(seq, 1));
        }
        assert_eq!(events.events.len(), KEPT);
        assert_eq!(events.events.front().map(|k| k.seq), Some(6));
        assert_eq!(events.bytes, KEPT);
        events.push(kept(99_999, KEPT_BYTES));
        assert_eq!(events.events.len(), 1, "one event of the whole budget");
        assert_eq!(events.bytes, KEPT_BYTES);
        // What a subscription matches is kept: a custom event's name, its
        // namespace; not its data.
        let probe = kept(1, 1);
        assert_eq!(probe.name.as_deref(), Some("progress"));
        assert_eq!(probe.namespace, ["a:1"]);
    }
}
