//! Streaming a run: [`Event`]s in LangGraph's stream modes, and
//! [`RunStream`], the run as a `futures::Stream` of them.

use crate::error::GraphError;
use crate::node::BoxFuture;
use crate::outcome::{Interrupt, Outcome};
use futures::channel::mpsc::{UnboundedReceiver, UnboundedSender};
use futures::{FutureExt, Stream, StreamExt};
use serde_json::{Map, Value, json};
use state_core::{Message, State, StateError};
use std::fmt;
use std::ops::BitOr;
use std::pin::Pin;
use std::sync::Arc;
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
    /// A message chunk a node wrote with `Ctx::write_message` (`messages`).
    Message {
        /// The node.
        node: String,
        /// The chunk.
        chunk: Message,
    },
    /// The run paused: the pending interrupts.
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
            Event::End(_) => "end",
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
            Event::Message { node, chunk } => {
                let chunk = state_core::json::to_value(chunk).map_err(|e| unwritable(node, e))?;
                json!([chunk, {"langgraph_node": node}])
            }
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

/// A node's delta or chunk that JSON cannot hold (a NaN, say).
fn unwritable(node: &str, error: serde_json::Error) -> StateError {
    StateError::Serialize {
        field: format!("(what node \"{node}\" wrote)"),
        message: error.to_string(),
    }
}

/// Where a run sends its events, with the modes asked for.
pub(crate) struct Sink<S: State> {
    pub tx: UnboundedSender<Event<S>>,
    pub modes: StreamMode,
}

impl<S: State> Sink<S> {
    pub fn send(&self, event: Event<S>) {
        // A dropped stream has dropped the run too; nobody is left to tell.
        let _ = self.tx.unbounded_send(event);
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
