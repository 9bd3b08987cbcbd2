//! [`Ctx`]: what a node can do besides reading the state: pause for a
//! person, stream custom data and message chunks.

use serde_json::Value;
use state_core::Message;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// A node's context: its name, interrupts, and the custom and message
/// stream modes.
///
/// Sync nodes take it as `&Ctx`, async nodes as `Ctx` (a cheap clone, so the
/// future can own it).
///
/// ```
/// use serde_json::json;
/// use state_core::{AgentState, State};
/// use state_graph::{Ctx, NodeError};
///
/// #[derive(AgentState, Debug, Clone)]
/// struct Plan {
///     approved: bool,
/// }
///
/// fn approve(_: &Plan, ctx: &Ctx) -> Result<PlanDelta, NodeError> {
///     ctx.write_custom(json!({"progress": "asking"}));
///     let answer = ctx.interrupt(json!({"question": "run the plan?"}))?;
///     Ok(Plan::delta().approved(answer == "yes"))
/// }
/// # let _ = approve;
/// ```
#[derive(Debug, Clone)]
pub struct Ctx {
    inner: Arc<Inner>,
}

struct Inner {
    node: String,
    /// The thread of a stored run; `None` in memory.
    thread: Option<String>,
    /// Answers to this task's interrupts so far, in call order.
    answers: Vec<Value>,
    /// `interrupt` calls made in this run of the node.
    calls: AtomicUsize,
    /// The value of the first unanswered interrupt, once raised.
    raised: Mutex<Option<Value>>,
    events: Option<EmitFn>,
}

/// Where a node's custom data and message chunks go: the run's stream.
pub(crate) type EmitFn = Arc<dyn Fn(Emitted) + Send + Sync>;

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ctx")
            .field("node", &self.node)
            .field("thread", &self.thread)
            .field("answers", &self.answers)
            .finish_non_exhaustive()
    }
}

/// What a node emitted through its [`Ctx`], for the stream.
#[derive(Debug)]
pub(crate) enum Emitted {
    Custom { node: String, value: Value },
    Message { node: String, chunk: Message },
}

/// The error [`Ctx::interrupt`] returns to pause the run: return it (with
/// `?`) so the node stops there.
///
/// It converts into [`NodeError`](crate::NodeError) like any error; a node
/// with its own error type needs a `From<Interrupted>` for it. Even when a
/// node swallows it, the runner knows the node paused: its delta is not
/// used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the node paused for a person (ctx.interrupt); resume the thread to continue")]
pub struct Interrupted;

impl Ctx {
    pub(crate) fn new(
        node: &str,
        thread: Option<&str>,
        answers: Vec<Value>,
        events: Option<EmitFn>,
    ) -> Ctx {
        Ctx {
            inner: Arc::new(Inner {
                node: node.to_owned(),
                thread: thread.map(str::to_owned),
                answers,
                calls: AtomicUsize::new(0),
                raised: Mutex::new(None),
                events,
            }),
        }
    }

    /// The name of the node running.
    pub fn node(&self) -> &str {
        &self.inner.node
    }

    /// The thread the run is on (LangGraph's `config["configurable"]
    /// ["thread_id"]`); `None` for a run in memory.
    pub fn thread(&self) -> Option<&str> {
        self.inner.thread.as_deref()
    }

    /// Pauses the run for a person, showing them `value` (a question, a
    /// plan to approve). The run stops after this superstep's other nodes
    /// finish and returns the interrupt; [`resume`] runs this node again
    /// from its start, and this call then returns the answer. The i-th
    /// call of a node gets the i-th answer given to it, as in LangGraph.
    ///
    /// Code before the call runs again on resume: keep side effects after
    /// it, or make them idempotent.
    ///
    /// [`resume`]: crate::CompiledGraph::resume
    pub fn interrupt(&self, value: impl Into<Value>) -> Result<Value, Interrupted> {
        let call = self.inner.calls.fetch_add(1, Ordering::SeqCst);
        if let Some(answer) = self.inner.answers.get(call) {
            return Ok(answer.clone());
        }
        let mut raised = self.inner.raised.lock().unwrap_or_else(|e| e.into_inner());
        // Only the first unanswered call pauses; a later one (a node that
        // ignored the error) changes nothing.
        raised.get_or_insert_with(|| value.into());
        Err(Interrupted)
    }

    /// Sends `value` to the stream's `custom` mode (LangGraph's
    /// `get_stream_writer()`): progress, partial results. A no-op when
    /// nobody streams.
    pub fn write_custom(&self, value: impl Into<Value>) {
        if let Some(events) = &self.inner.events {
            events(Emitted::Custom {
                node: self.inner.node.clone(),
                value: value.into(),
            });
        }
    }

    /// Sends a message chunk (an LLM's tokens, say) to the stream's
    /// `messages` mode, with this node's name. A no-op when nobody streams.
    pub fn write_message(&self, chunk: Message) {
        if let Some(events) = &self.inner.events {
            events(Emitted::Message {
                node: self.inner.node.clone(),
                chunk,
            });
        }
    }

    /// The value of the interrupt this run of the node raised, if any.
    pub(crate) fn take_raised(&self) -> Option<Value> {
        self.inner
            .raised
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }
}
