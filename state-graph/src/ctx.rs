//! [`Ctx`]: what a node can do besides reading the state: pause for a
//! person, stream custom data and message chunks, read the run's context
//! and the store's items.

use serde_json::Value;
use state_core::Message;
use state_store::Store;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// A node's context: its name, interrupts, the custom and message stream
/// modes, the run's context value `C` (see
/// [`with_context`](crate::CompiledGraph::with_context)), the store's
/// items, and how many supersteps the run has left.
///
/// Sync nodes take it as `&Ctx<C>`, async nodes as `Ctx<C>` (a cheap
/// clone, so the future can own it). `C` is the graph's context type
/// (`StateGraph<S, C>`), `()` when the graph has none: a node expecting
/// another context type is not a node of the graph.
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
pub struct Ctx<C = ()> {
    inner: Arc<Inner>,
    context: Arc<C>,
}

impl<C> Clone for Ctx<C> {
    fn clone(&self) -> Self {
        Ctx {
            inner: self.inner.clone(),
            context: self.context.clone(),
        }
    }
}

impl<C> std::fmt::Debug for Ctx<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.fmt(f)
    }
}

struct Inner {
    task: TaskInfo,
    /// The run's store, for items.
    store: Option<Store>,
    /// Supersteps the run may still take after this one.
    remaining: usize,
    /// Answers to this task's interrupts so far, in call order.
    answers: Vec<Value>,
    /// `interrupt` calls made in this run of the node.
    calls: AtomicUsize,
    /// The value of the first unanswered interrupt, once raised.
    raised: Mutex<Option<Value>>,
    events: Option<EmitFn>,
    /// Whether the stream carries the `messages` mode.
    messages: bool,
}

/// Which task a [`Ctx`] belongs to, as LangGraph's stream metadata names
/// it. Made for every task, so cheap to make: what only the stream and a
/// subgraph's namespace read (the id, the triggers) is derived when read.
#[derive(Debug, Clone)]
pub(crate) struct TaskInfo {
    pub node: String,
    /// The superstep's number in the thread (the step's `seq` once
    /// committed).
    pub step: u64,
    /// The place among the sends to a worker, if it is one.
    pub send: Option<usize>,
    /// What every task of its graph's run shares.
    pub scope: Arc<TaskScope>,
}

/// What the tasks of one run of a graph share: where it runs, and its
/// namespace already hashed for their ids.
#[derive(Debug)]
pub(crate) struct TaskScope {
    /// The namespace of the graph the tasks run in: `node:task-id`
    /// segments of the subgraph tasks above it, outermost first (empty at
    /// the top).
    pub namespace: Vec<String>,
    /// The thread of a stored run; `None` in memory.
    pub thread: Option<String>,
    /// [`task_id`]'s hash once it has eaten the namespace.
    hashed: IdHash,
}

impl TaskScope {
    pub fn new(namespace: Vec<String>, thread: Option<String>) -> Arc<TaskScope> {
        let mut hashed = IdHash::START;
        for segment in &namespace {
            hashed.eat(segment.as_bytes());
        }
        Arc::new(TaskScope {
            namespace,
            thread,
            hashed,
        })
    }
}

impl TaskInfo {
    /// The task's id: the same for the same task of the same superstep of
    /// the same thread, in any process (see [`task_id`]); the tail of its
    /// [`segment`](TaskInfo::segment).
    #[cfg(test)]
    pub fn id(&self) -> String {
        self.scope.hashed.task(self.step, &self.node, self.send)
    }

    /// What scheduled the task (LangGraph's `langgraph_triggers`).
    pub fn triggers(&self) -> Vec<String> {
        vec![match self.send {
            Some(_) => "__pregel_push".to_owned(),
            None => format!("branch:to:{}", self.node),
        }]
    }

    /// The task's own namespace segment, `node:id` (LangGraph's
    /// `checkpoint_ns` of what runs inside it).
    pub fn segment(&self) -> String {
        self.scope.segment(self.step, &self.node, self.send)
    }
}

impl TaskScope {
    /// The namespace segment, `node:id`, of the task of this scope at
    /// `step` (see [`TaskInfo::segment`]): written into one string, the
    /// only allocation (a subgraph task makes one per run).
    pub fn segment(&self, step: u64, node: &str, send: Option<usize>) -> String {
        let mut segment = String::with_capacity(node.len() + 1 + UUID_LEN);
        segment.push_str(node);
        segment.push(':');
        self.hashed.task_into(step, node, send, &mut segment);
        segment
    }
}

/// A hyphenated UUID's length.
const UUID_LEN: usize = 36;

/// A task's id, derived from what identifies it in its thread (a
/// UUID-shaped FNV-1a hash: stable across processes and versions, so a
/// subgraph's namespace is the same when a crashed run goes on elsewhere,
/// and on a fork of its thread). The runner hashes the namespace once per
/// run ([`TaskScope`]); this is the same hash in one go.
#[cfg(test)]
pub(crate) fn task_id(namespace: &[String], step: u64, node: &str, send: Option<usize>) -> String {
    let mut hash = IdHash::START;
    for segment in namespace {
        hash.eat(segment.as_bytes());
    }
    hash.task(step, node, send)
}

/// The 128-bit FNV-1a hash of task ids, each part ended by `0xff`.
#[derive(Debug, Clone, Copy)]
struct IdHash(u128);

impl IdHash {
    const START: IdHash = IdHash(0x6c62272e07bb014262b821756295c58d);
    const PRIME: u128 = 0x0000000001000000000000000000013B;

    fn eat(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u128::from(b);
            self.0 = self.0.wrapping_mul(Self::PRIME);
        }
        self.0 ^= 0xff;
        self.0 = self.0.wrapping_mul(Self::PRIME);
    }

    /// The id of a task of this namespace, as a version 8 (custom) UUID.
    #[cfg(test)]
    fn task(self, step: u64, node: &str, send: Option<usize>) -> String {
        let mut id = String::with_capacity(UUID_LEN);
        self.task_into(step, node, send, &mut id);
        id
    }

    /// The task id (see `task`), written at the end of `out`.
    fn task_into(mut self, step: u64, node: &str, send: Option<usize>, out: &mut String) {
        self.eat(&step.to_le_bytes());
        self.eat(node.as_bytes());
        self.eat(&send.map_or(u64::MAX, |s| s as u64).to_le_bytes());
        let mut bytes = self.0.to_be_bytes();
        bytes[6] = (bytes[6] & 0x0f) | 0x80;
        bytes[8] = (bytes[8] & 0x3f) | 0x80;
        let mut text = uuid::Uuid::encode_buffer();
        let text = uuid::Uuid::from_bytes(bytes)
            .hyphenated()
            .encode_lower(&mut text);
        out.push_str(text);
    }
}

/// Where a node's custom data and message chunks go: the run's stream.
pub(crate) type EmitFn = Arc<dyn Fn(Emitted) + Send + Sync>;

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ctx")
            .field("node", &self.task.node)
            .field("thread", &self.task.scope.thread)
            .field("remaining_steps", &self.remaining)
            .field("answers", &self.answers)
            .finish_non_exhaustive()
    }
}

/// What a node emitted through its [`Ctx`], for the stream.
#[derive(Debug)]
pub(crate) enum Emitted {
    Custom { task: TaskInfo, value: Value },
    Message { task: TaskInfo, chunk: Message },
}

/// The `messages` stream of the node running on this task, as a model
/// client reaches it without being handed a [`Ctx`]: see
/// [`message_stream`](crate::message_stream).
#[derive(Clone)]
pub struct MessageStream {
    events: EmitFn,
    task: TaskInfo,
}

impl std::fmt::Debug for MessageStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MessageStream")
            .field("node", &self.task.node)
            .finish_non_exhaustive()
    }
}

impl MessageStream {
    /// Sends a message chunk (a model's tokens) to the stream, as
    /// [`Ctx::write_message`] does, with the node's metadata.
    pub fn send(&self, chunk: Message) {
        (self.events)(Emitted::Message {
            task: self.task.clone(),
            chunk,
        });
    }

    /// The node it streams for.
    pub fn node(&self) -> &str {
        &self.task.node
    }
}

tokio::task_local! {
    /// The `messages` stream of the node running on this task.
    static MESSAGE_STREAM: MessageStream;
}

/// The `messages` stream of the node running on this task, when the run is
/// streamed in [`StreamMode::MESSAGES`](crate::StreamMode::MESSAGES):
/// what a model client calls to stream its tokens on its own, as LangGraph's
/// chat models do through callbacks (no [`Ctx`] to pass). `None` outside a
/// node, when nobody streams, or in a task the node spawned (it does not
/// inherit it: pass the [`Ctx`] there and use [`Ctx::write_message`]).
///
/// ```
/// // In a model client:
/// if let Some(stream) = state_graph::message_stream() {
///     stream.send(state_core::Message::ai("Hel").with_id("reply"));
/// }
/// ```
pub fn message_stream() -> Option<MessageStream> {
    MESSAGE_STREAM.try_with(Clone::clone).ok()
}

/// Runs `future` (a node's run) with `ctx`'s `messages` stream as this
/// task's (see [`message_stream`]).
pub(crate) async fn with_message_stream<C, F: std::future::Future>(
    ctx: &Ctx<C>,
    future: F,
) -> F::Output {
    match ctx.message_stream() {
        Some(stream) => MESSAGE_STREAM.scope(stream, future).await,
        None => future.await,
    }
}

/// The error [`Ctx::store`] returns when the graph has no store: give it
/// one with [`with_store`](crate::CompiledGraph::with_store).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "the node asked for the store's items, but the graph has no store: compile it with with_store(..)"
)]
pub struct NoStore;

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

/// What a [`Ctx`] is made of, from the runner.
pub(crate) struct CtxParts<'a> {
    pub task: TaskInfo,
    pub store: Option<&'a Store>,
    pub remaining: usize,
    pub answers: Vec<Value>,
    pub events: Option<EmitFn>,
    pub messages: bool,
}

impl<C> Ctx<C> {
    pub(crate) fn new(parts: CtxParts<'_>, context: Arc<C>) -> Ctx<C> {
        Ctx {
            inner: Arc::new(Inner {
                task: parts.task,
                store: parts.store.cloned(),
                remaining: parts.remaining,
                answers: parts.answers,
                calls: AtomicUsize::new(0),
                raised: Mutex::new(None),
                events: parts.events,
                messages: parts.messages,
            }),
            context,
        }
    }

    /// The name of the node running.
    pub fn node(&self) -> &str {
        &self.inner.task.node
    }

    /// The thread the run is on (LangGraph's `config["configurable"]
    /// ["thread_id"]`); `None` for a run in memory.
    pub fn thread(&self) -> Option<&str> {
        self.inner.task.scope.thread.as_deref()
    }

    /// The run's context (LangGraph's `runtime.context`): the value bound
    /// with [`with_context`](crate::CompiledGraph::with_context), typed as
    /// the graph's `C`. Not stored in the thread: each run is given it.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_graph::GraphError> {
    /// use state_core::{AgentState, State};
    /// use state_graph::{Ctx, END, START, StateGraph};
    ///
    /// #[derive(AgentState, Debug, Clone)]
    /// struct Chat {
    ///     greeting: String,
    /// }
    /// struct User {
    ///     name: String,
    /// }
    ///
    /// fn greet(_: &Chat, ctx: &Ctx<User>) -> ChatDelta {
    ///     Chat::delta().greeting(format!("hello, {}", ctx.context().name))
    /// }
    ///
    /// let mut g = StateGraph::<Chat, User>::new();
    /// g.add_node("greet", greet);
    /// g.add_edge(START, "greet");
    /// g.add_edge("greet", END);
    /// let app = g.compile()?;
    /// let out = app.with_context(User { name: "Ada".into() }).invoke(Chat::delta()).await?;
    /// assert_eq!(out.greeting, "hello, Ada");
    /// # Ok(())
    /// # }
    /// ```
    pub fn context(&self) -> &C {
        &self.context
    }

    /// The store of the run, for long-term memory (LangGraph's
    /// `runtime.store`): items by namespace, shared across threads. An
    /// error (which `?` turns into the node's failure) when the graph has
    /// no store ([`with_store`](crate::CompiledGraph::with_store)).
    pub fn store(&self) -> Result<&Store, NoStore> {
        self.inner.store.as_ref().ok_or(NoStore)
    }

    /// Supersteps the run may still take after this one before it reaches
    /// its recursion limit (LangGraph's `RemainingSteps`): a node can wrap
    /// up (answer with what it has) when few are left.
    pub fn remaining_steps(&self) -> usize {
        self.inner.remaining
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
                task: self.inner.task.clone(),
                value: value.into(),
            });
        }
    }

    /// Sends a message chunk (an LLM's tokens, say) to the stream's
    /// `messages` mode, with this node's name and LangGraph's metadata. A
    /// no-op when nobody streams. A message the node then returns in its
    /// delta with the same id is not streamed again.
    pub fn write_message(&self, chunk: Message) {
        if let Some(events) = &self.inner.events {
            events(Emitted::Message {
                task: self.inner.task.clone(),
                chunk,
            });
        }
    }

    /// Whether anybody streams the `messages` mode: a model client can
    /// skip streaming its tokens when nobody reads them.
    pub fn streams_messages(&self) -> bool {
        self.inner.messages
    }

    /// This node's `messages` stream, when somebody reads it.
    pub(crate) fn message_stream(&self) -> Option<MessageStream> {
        let events = self.inner.events.as_ref().filter(|_| self.inner.messages)?;
        Some(MessageStream {
            events: events.clone(),
            task: self.inner.task.clone(),
        })
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Task ids are in logs (subgraph namespaces): the same values in every
    /// version, whether the namespace is hashed once per run or not.
    #[test]
    fn task_ids_are_pinned() {
        let info = |namespace: Vec<String>, step, node: &str, send| TaskInfo {
            node: node.to_owned(),
            step,
            send,
            scope: TaskScope::new(namespace, None),
        };
        let top = info(Vec::new(), 3, "agent", None);
        assert_eq!(top.id(), "68d6ae78-1330-8f19-8b5c-ca7f0bf731f6");
        assert_eq!(top.id(), task_id(&[], 3, "agent", None));
        let inner = info(Vec::new(), 1, "inner", None).segment();
        assert_eq!(inner, "inner:e7a2ba7b-5af9-805a-a076-a3afa2860541");
        let nested = info(vec![inner.clone()], 2, "worker", Some(1));
        assert_eq!(nested.id(), "121f1f96-06d5-82b8-b0f2-cd71b9d6491a");
        assert_eq!(nested.id(), task_id(&[inner], 2, "worker", Some(1)));
    }
}
