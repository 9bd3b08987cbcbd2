//! Streaming a run: [`Event`]s in LangGraph's stream modes, and
//! [`RunStream`], the run as a `futures::Stream` of them.

use crate::error::GraphError;
use crate::node::BoxFuture;
use crate::outcome::{Interrupt, Outcome};
use futures::channel::mpsc::{UnboundedReceiver, UnboundedSender};
use futures::{FutureExt, Stream, StreamExt};
use serde_json::{Map, Value, json};
use state_core::{Message, State, StateError};
use std::collections::HashSet;
use std::fmt;
use std::ops::BitOr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

/// Which events a stream carries: LangGraph's `stream_mode`, combined with
/// `|`. Interrupts and the end are always sent.
///
/// ```
/// use state_graph::StreamMode;
///
/// let modes = StreamMode::UPDATES | StreamMode::VALUES;
/// assert!(modes.contains(StreamMode::VALUES));
/// assert!(!modes.contains(StreamMode::CUSTOM));
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct StreamMode(u8);

impl StreamMode {
    /// `updates`: each node's delta, once its superstep is applied.
    pub const UPDATES: StreamMode = StreamMode(1);
    /// `values`: the whole state after the input and after each superstep.
    pub const VALUES: StreamMode = StreamMode(2);
    /// `custom`: what nodes write with [`Ctx::write_custom`](crate::Ctx::write_custom).
    pub const CUSTOM: StreamMode = StreamMode(4);
    /// `messages`: the message chunks nodes write with
    /// [`Ctx::write_message`](crate::Ctx::write_message).
    pub const MESSAGES: StreamMode = StreamMode(8);
    /// Every mode.
    pub const ALL: StreamMode = StreamMode(15);
    /// Not a mode: with it, the events of the modes asked for come from
    /// inside subgraphs too, as [`Event::Nested`] marked with the
    /// subgraph's namespace (LangGraph's `stream(subgraphs=True)`).
    pub const SUBGRAPHS: StreamMode = StreamMode(16);

    /// Whether every mode of `other` is in `self`.
    pub fn contains(self, other: StreamMode) -> bool {
        self.0 & other.0 == other.0
    }
}

impl BitOr for StreamMode {
    type Output = StreamMode;
    fn bitor(self, other: StreamMode) -> StreamMode {
        StreamMode(self.0 | other.0)
    }
}

impl fmt::Debug for StreamMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = [
            (StreamMode::UPDATES, "updates"),
            (StreamMode::VALUES, "values"),
            (StreamMode::CUSTOM, "custom"),
            (StreamMode::MESSAGES, "messages"),
            (StreamMode::SUBGRAPHS, "subgraphs"),
        ]
        .into_iter()
        .filter(|(m, _)| self.contains(*m))
        .map(|(_, n)| n)
        .collect();
        write!(f, "StreamMode({})", names.join(" | "))
    }
}

/// One event of a streamed run.
///
/// [`mode`](Event::mode) and [`data`](Event::data) are what LangGraph's
/// server sends as an SSE event's `event:` and `data:`. Where we differ:
/// an update is one event per node (LangGraph's `{node: update}` chunk, the
/// same JSON), sent once its superstep is applied rather than when the node
/// returns, so a stream never shows a write that a failed superstep threw
/// away; an interrupt is sent as LangGraph does, as an `updates` chunk
/// `{"__interrupt__": [{"value", "id"}]}`; and the stream ends with an
/// `end` event.
#[derive(Debug)]
#[non_exhaustive]
pub enum Event<S: State> {
    /// A node's delta (`updates`).
    Update {
        /// The node.
        node: String,
        /// What it wrote.
        delta: S::Delta,
    },
    /// The state after the input or a superstep (`values`). A consumer
    /// that keeps it past the next superstep makes the runner copy the
    /// state once; drop it (or serialize it) soon.
    Values(Arc<S>),
    /// What a node wrote with `Ctx::write_custom` (`custom`).
    Custom {
        /// The node.
        node: String,
        /// The value.
        value: Value,
    },
    /// A message chunk a node wrote with `Ctx::write_message`, or a
    /// message it returned in its delta (`messages`).
    Message {
        /// The node.
        node: String,
        /// The chunk.
        chunk: Message,
        /// LangGraph's metadata of the event (boxed: events stay small).
        metadata: Box<MessageMetadata>,
    },
    /// An event from inside a subgraph (with [`StreamMode::SUBGRAPHS`]):
    /// its namespace (`node:task-id` segments, outermost first), its mode
    /// and its JSON, as LangGraph's `(namespace, mode, chunk)`.
    Nested {
        /// The subgraph's namespace.
        namespace: Vec<String>,
        /// `updates`, `values`, `custom` or `messages`.
        mode: &'static str,
        /// The event's JSON, as [`data`](Event::data) gives a top-level one.
        data: Value,
    },
    /// The run paused: the pending interrupts (none for a breakpoint).
    Interrupt(Vec<Interrupt>),
    /// The run ended at `END` (no interrupts) or paused (with them): its
    /// outcome. The last event.
    End(Outcome<S>),
}

impl<S: State> Event<S> {
    /// The event's LangGraph stream mode: `updates`, `values`, `custom`,
    /// `messages` (an interrupt is an `updates` event, as in LangGraph), or
    /// `end`.
    pub fn mode(&self) -> &'static str {
        match self {
            Event::Update { .. } | Event::Interrupt(_) => "updates",
            Event::Values(_) => "values",
            Event::Custom { .. } => "custom",
            Event::Message { .. } => "messages",
            Event::Nested { mode, .. } => mode,
            Event::End(_) => "end",
        }
    }

    /// The namespace of the graph it comes from: empty at the top, a
    /// subgraph's for [`Event::Nested`].
    pub fn namespace(&self) -> &[String] {
        match self {
            Event::Nested { namespace, .. } => namespace,
            _ => &[],
        }
    }

    /// The event's JSON, as LangGraph's stream clients read it:
    /// `{node: delta}`, the state, the custom value,
    /// `[chunk, {"langgraph_node": node}]`,
    /// `{"__interrupt__": [{"value": .., "id": ..}]}`, or `null` for the end.
    pub fn data(&self) -> Result<Value, StateError>
    where
        S::Delta: serde::Serialize,
    {
        Ok(match self {
            Event::Update { node, delta } => {
                let mut map = Map::new();
                let delta = state_core::json::to_value(delta).map_err(|e| unwritable(node, e))?;
                map.insert(node.clone(), delta);
                Value::Object(map)
            }
            Event::Values(state) => state.to_json()?,
            Event::Custom { value, .. } => value.clone(),
            Event::Message {
                node,
                chunk,
                metadata,
            } => {
                let chunk = state_core::json::to_value(chunk).map_err(|e| unwritable(node, e))?;
                json!([chunk, metadata.to_json()])
            }
            Event::Nested { data, .. } => data.clone(),
            Event::Interrupt(interrupts) => {
                let list: Vec<Value> = interrupts
                    .iter()
                    .map(|i| json!({"value": i.value, "id": i.id}))
                    .collect();
                json!({"__interrupt__": list})
            }
            Event::End(_) => Value::Null,
        })
    }
}

/// The metadata LangGraph sends with each `messages` event: which task of
/// which superstep produced the message.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct MessageMetadata {
    /// The superstep (LangGraph's `langgraph_step`): the thread's step
    /// number it commits as, or its count in a run in memory.
    pub step: u64,
    /// The node (`langgraph_node`).
    pub node: String,
    /// What scheduled it (`langgraph_triggers`): `branch:to:<node>` for a
    /// node an edge, router or command led to, `join:<a+b:c>` for a
    /// join's target, `__pregel_push` for a worker's run.
    pub triggers: Vec<String>,
    /// The task's path (`langgraph_path`): `["__pregel_pull", node]`, or
    /// `["__pregel_push", index]` for a worker's run.
    pub path: Value,
    /// The task's namespace (`langgraph_checkpoint_ns`): `node:task-id`
    /// segments, those of the subgraph tasks it runs in first, joined by
    /// `|`.
    pub task_namespace: String,
    /// The namespace of the graph it runs in (`checkpoint_ns`): empty at
    /// the top, when the key is not sent.
    pub namespace: String,
    /// The thread (`thread_id`), for a run on one.
    pub thread: Option<String>,
    /// Whether the node returned the message in its delta (sent when its
    /// superstep commits), rather than sending it as a chunk while it ran
    /// (a model's tokens). LangGraph's legacy `messages` stream mode tells
    /// them apart (`messages/complete` against `messages/partial`); not
    /// part of [`to_json`](MessageMetadata::to_json).
    pub returned: bool,
}

impl MessageMetadata {
    pub(crate) fn of(task: &crate::ctx::TaskInfo) -> MessageMetadata {
        let namespace = task.scope.namespace.join("|");
        let task_namespace = if namespace.is_empty() {
            task.segment()
        } else {
            format!("{namespace}|{}", task.segment())
        };
        MessageMetadata {
            step: task.step,
            node: task.node.clone(),
            triggers: task.triggers(),
            path: match task.send {
                Some(index) => json!(["__pregel_push", index]),
                None => json!(["__pregel_pull", task.node]),
            },
            task_namespace,
            namespace,
            thread: task.scope.thread.clone(),
            returned: false,
        }
    }

    /// As LangGraph sends it.
    pub fn to_json(&self) -> Value {
        let mut map = Map::new();
        if !self.namespace.is_empty() {
            map.insert("checkpoint_ns".to_owned(), json!(self.namespace));
        }
        map.insert(
            "langgraph_checkpoint_ns".to_owned(),
            json!(self.task_namespace),
        );
        map.insert("langgraph_node".to_owned(), json!(self.node));
        map.insert("langgraph_path".to_owned(), self.path.clone());
        map.insert("langgraph_step".to_owned(), json!(self.step));
        map.insert("langgraph_triggers".to_owned(), json!(self.triggers));
        map.insert("ls_integration".to_owned(), json!("langgraph"));
        if let Some(thread) = &self.thread {
            map.insert("thread_id".to_owned(), json!(thread));
        }
        Value::Object(map)
    }
}

/// A node's delta or chunk that JSON cannot hold (a NaN, say).
fn unwritable(node: &str, error: serde_json::Error) -> StateError {
    StateError::Serialize {
        field: format!("(what node \"{node}\" wrote)"),
        message: error.to_string(),
    }
}

/// Where a run sends its events, with the modes asked for.
pub(crate) struct Sink<S: State> {
    send: Arc<dyn Fn(Event<S>) + Send + Sync>,
    pub modes: StreamMode,
    /// The ids of the messages this run streamed: a message is streamed
    /// once (as LangGraph does), whether as chunks or from a delta.
    pub streamed: Arc<Mutex<HashSet<String>>>,
}

impl<S: State> Clone for Sink<S> {
    fn clone(&self) -> Self {
        Sink {
            send: self.send.clone(),
            modes: self.modes,
            streamed: self.streamed.clone(),
        }
    }
}

/// Where a subgraph's events go: the root's stream, each marked with the
/// subgraph's namespace.
#[derive(Clone)]
pub(crate) struct Nested {
    send: Arc<dyn Fn(Vec<String>, &'static str, Value) + Send + Sync>,
    pub modes: StreamMode,
    pub streamed: Arc<Mutex<HashSet<String>>>,
}

impl<S> Sink<S>
where
    S: State + Send + Sync + 'static,
    S::Delta: Send,
{
    /// The sink of a top-level run, onto `tx`.
    pub fn new(tx: UnboundedSender<Event<S>>, modes: StreamMode) -> Sink<S> {
        Sink {
            send: Arc::new(move |event| {
                // A dropped stream has dropped the run too; nobody is left
                // to tell.
                let _ = tx.unbounded_send(event);
            }),
            modes,
            streamed: Arc::default(),
        }
    }
}

impl<S: State> Sink<S> {
    pub fn send(&self, event: Event<S>) {
        (self.send)(event)
    }

    /// Where this run's subgraphs send their events, when they are asked
    /// for.
    pub fn nested(&self) -> Option<Nested>
    where
        S: 'static,
    {
        if !self.modes.contains(StreamMode::SUBGRAPHS) {
            return None;
        }
        let send = self.send.clone();
        Some(Nested {
            send: Arc::new(move |namespace, mode, data| {
                send(Event::Nested {
                    namespace,
                    mode,
                    data,
                })
            }),
            modes: self.modes,
            streamed: self.streamed.clone(),
        })
    }
}

impl Nested {
    /// The sink of a subgraph whose namespace is `namespace`: its events,
    /// as JSON, into the root's stream.
    pub fn sink<T: State + 'static>(&self, namespace: Vec<String>) -> Sink<T>
    where
        T::Delta: serde::Serialize,
    {
        let send = self.send.clone();
        Sink {
            send: Arc::new(move |event: Event<T>| {
                if matches!(event, Event::Interrupt(_) | Event::End(_)) {
                    // The root says when the run pauses or ends.
                    return;
                }
                let mode = event.mode();
                let inner = event.namespace().to_vec();
                // An event that cannot be written as JSON is dropped, as a
                // dropped stream drops it: the run goes on.
                if let Ok(data) = event.data() {
                    let mut full = namespace.clone();
                    full.extend(inner);
                    send(full, mode, data);
                }
            }),
            modes: self.modes,
            streamed: self.streamed.clone(),
        }
    }
}

impl<S: State> Sink<S> {
    /// The events of the messages `delta` writes (its `add_messages`
    /// fields), those not streamed before, as written by `task`: sent once
    /// the superstep is committed.
    pub fn delta_messages(
        &self,
        task: &crate::ctx::TaskInfo,
        delta: &S::Delta,
        events: &mut Vec<Event<S>>,
    ) where
        S::Delta: serde::Serialize,
    {
        let fields: Vec<&str> = S::schema()
            .fields
            .iter()
            .filter(|f| f.reducer_kind() == state_core::ReducerKind::AddingMessages)
            .map(|f| f.name)
            .collect();
        if fields.is_empty() {
            return;
        }
        let Ok(Value::Object(written)) = state_core::json::to_value(delta) else {
            return;
        };
        let mut streamed = self.streamed.lock().unwrap_or_else(|e| e.into_inner());
        for field in fields {
            let Some(value) = written.get(field) else {
                continue;
            };
            // One write, the writes of a merged step, or an overwrite.
            let lists: Vec<&Value> = match value {
                Value::Object(o) if o.contains_key("__writes__") => {
                    o["__writes__"].as_array().into_iter().flatten().collect()
                }
                Value::Object(o) if o.contains_key("__overwrite__") => vec![&o["__overwrite__"]],
                other => vec![other],
            };
            for message in lists
                .into_iter()
                .flat_map(|l| l.as_array().into_iter().flatten())
            {
                let Ok(message) = serde_json::from_value::<Message>(message.clone()) else {
                    continue;
                };
                if message.is_removal() {
                    continue;
                }
                if let Some(id) = message.id()
                    && !streamed.insert(id.to_owned())
                {
                    continue;
                }
                events.push(Event::Message {
                    node: task.node.clone(),
                    chunk: message,
                    metadata: Box::new(MessageMetadata {
                        returned: true,
                        ..MessageMetadata::of(task)
                    }),
                });
            }
        }
    }
}

/// A run as a `futures::Stream` of [`Event`]s, ending with
/// [`Event::End`], or with an error. Dropping it cancels the run: nothing
/// half applied is left (a superstep is committed whole or not at all).
///
/// It polls the run itself: no task is spawned, and it works on any
/// executor (a node's retry backoff sleeps on tokio's timer).
#[must_use = "a stream does nothing until polled"]
pub struct RunStream<S: State> {
    events: UnboundedReceiver<Event<S>>,
    run: Option<BoxFuture<Result<Outcome<S>, GraphError>>>,
    result: Option<Result<Outcome<S>, GraphError>>,
}

impl<S: State> RunStream<S> {
    pub(crate) fn new(
        events: UnboundedReceiver<Event<S>>,
        run: BoxFuture<Result<Outcome<S>, GraphError>>,
    ) -> Self {
        RunStream {
            events,
            run: Some(run),
            result: None,
        }
    }
}

impl<S: State> RunStream<S> {
    /// Runs to the end, dropping the events, and returns the outcome.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_graph::GraphError> {
    /// # use state_core::{AgentState, State};
    /// # use state_graph::{END, START, StateGraph, StreamMode};
    /// # #[derive(AgentState, Debug, Clone)]
    /// # struct S { n: u32 }
    /// # let mut g = StateGraph::<S>::new();
    /// # g.add_node("inc", |s: &S| S::delta().n(s.n + 1));
    /// # g.add_edge(START, "inc");
    /// # g.add_edge("inc", END);
    /// # let app = g.compile()?;
    /// let outcome = app.stream(S::delta(), StreamMode::UPDATES).outcome().await?;
    /// assert_eq!(outcome.state().n, 1);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn outcome(mut self) -> Result<Outcome<S>, GraphError> {
        while let Some(event) = self.next().await {
            if let Event::End(outcome) = event? {
                return Ok(outcome);
            }
        }
        // The stream ends with its outcome or an error; a stream polled
        // again after its end has neither.
        Err(GraphError::Log {
            thread: String::new(),
            seq: 0,
            reason: "the stream had already ended".to_owned(),
        })
    }
}

impl<S: State> fmt::Debug for RunStream<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunStream")
            .field("running", &self.run.is_some())
            .finish_non_exhaustive()
    }
}

impl<S: State> Unpin for RunStream<S> {}

impl<S: State> Stream for RunStream<S> {
    type Item = Result<Event<S>, GraphError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if let Poll::Ready(Some(event)) = this.events.poll_next_unpin(cx) {
                return Poll::Ready(Some(Ok(event)));
            }
            let Some(run) = this.run.as_mut() else {
                // The run is over and its events are drained.
                return Poll::Ready(this.result.take().map(|r| r.map(Event::End)));
            };
            match run.poll_unpin(cx) {
                Poll::Ready(result) => {
                    this.run = None;
                    this.result = Some(result);
                    this.events.close();
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}
