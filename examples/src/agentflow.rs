//! AgentFlow (seed 004): the framework ships a base `AgentState`
//! (`context`, `context_summary`, `execution_meta`), applications extend it
//! by subclassing (`class OrderState(AgentState)`), and four reducers
//! (`add_messages`, `replace_messages`, `append_items`, `replace_value`)
//! say how a node's partial update merges.
//!
//! The translation:
//!
//! | AgentFlow | here |
//! |---|---|
//! | `class AgentState(BaseModel)` | [`AgentState`], `#[derive(AgentState)]` |
//! | `class OrderState(AgentState)` | [`OrderState`] with `#[state(flatten)] base: AgentState`: the base's fields are its own (keys, JSON, schema) |
//! | `context: Annotated[list[Message], add_messages]` | `#[reducer(with = reducers::AddMessages)] context: Vec<Message>` |
//! | `execution_meta: ExecutionState` | [`ExecutionState`], a nested state under `#[reducer(merge)]`, in a private field: application code reads it ([`AgentState::execution_meta`]) and has no typed setter for it (a JSON update or `set` can still write it, as a checkpoint restore must) |
//! | status methods (`is_running()`...) | methods of [`AgentState`] and [`ExecutionState`] returning `bool` |
//! | lifecycle methods (`advance_step()`...) | methods of [`AgentState`] returning an [`AgentStateDelta`] that the runtime applies (a node of an [`OrderState`] graph converts it with `.into()`) |
//! | a field without `Annotated` (`replace_value`) | the default `replace` reducer |
//! | `append_items` | [`reducers::append_items`] on a `Vec<T: HasId>` |
//! | `replace_messages` on a field | not expressible on an inherited field (see [`MyState`]); per write: `overwrite_context(...)`, JSON `{"context": {"__overwrite__": [...]}}` |
//! | a node returning `list[Message]` / `dict` / `None` | [`NodeReturn::Messages`] / [`NodeReturn::Update`] or [`NodeReturn::Dict`] / [`NodeReturn::Nothing`] |
//!
//! # AgentFlow's `add_messages` is not LangGraph's
//!
//! `state_core`'s built-in `#[reducer(add_messages)]` follows LangGraph: a
//! message whose id is already in the history **replaces** it in place, and
//! every message is stored. AgentFlow's **drops** a message whose
//! `message_id` is already in the history, and never stores a streaming
//! chunk. [`reducers::add_messages`] implements AgentFlow's rules as a
//! function, [`reducers::AddMessages`] as the field's reducer, and [`reducers::append_items`] does the same for
//! `append_items` (the built-in `append_by_id` updates in place instead).
//!
//! # Streaming chunks
//!
//! AgentFlow's `Message` has a boolean field `delta`: true on the partial
//! messages a streaming LLM call emits before the final one. `state_core`'s
//! [`Message`] keeps JSON keys it has no field for, so a chunk here is a
//! message with the extra key `"delta": true` ([`as_chunk`], [`chunk`]),
//! which round-trips through JSON at the message's top level, as AgentFlow
//! writes it. [`is_chunk`] tests for it (also under `additional_kwargs`,
//! where a message read from role-shaped JSON keeps unknown keys), and
//! [`reducers::add_messages`] skips chunks. A chunk carries the id of the
//! final message it belongs to.
//!
//! # Message ids
//!
//! An AgentFlow `Message` always has a `message_id` (a default factory
//! makes one). Here [`text_message`] (`Message.text_message`) gives each
//! message a new id from [`generate_id`], and [`reducers::AddMessages`]
//! gives one to a message that arrives without, when the delta is built
//! (its `prepare`): the delta then holds the id, so a stored log replays
//! to the same state. (The function [`reducers::add_messages`] gives one
//! as it merges.)
//!
//! # The runtime
//!
//! A [`Flow`] (AgentFlow's `StateGraph(OrderState())`: nodes in order,
//! interrupt points) compiles to a real [`state_graph::StateGraph`] on a
//! store: its [`Agent`] runs each thread superstep by superstep, one logged
//! step per node. AgentFlow's runtime is the wrapper around each node,
//! writing in the node's own superstep: `set_current_node` and
//! `advance_step` before it, `error(...)` when it fails (and the router
//! ends the run), `complete()` after the last node, the stop request when
//! `compiled.stop()` was called ([`Agent::stop`]).
//!
//! | AgentFlow | here |
//! |---|---|
//! | `StateGraph(OrderState())`, `interrupt_before` | [`Flow`], [`Flow::interrupt_before`] |
//! | `compiled = graph.compile(checkpointer=...)` | [`Flow::compile`] on a `state_store::Store` |
//! | `app.invoke(input, config={"thread_id": ...})` | [`Agent::invoke`]: a new run (`invoke_thread`), or the resume of a paused one (`resume`) |
//! | `set_interrupt(...)` | written with the superstep of the node before the interrupt point, which then pauses with `ctx.interrupt`: the stored thread says it waits |
//! | `clear_interrupt()` | written by the interrupt point when the next invoke resumes it, with that invoke's input, before its node runs |
//! | streaming (`delta=True` messages) | the graph's `messages` stream mode ([`Event::Chunk`]); never stored |
//!
//! Nodes written for [`AgentState`] ([`answer_node`], [`summarise_node`])
//! run on any extension of it.
//!
//! # Departures from the document
//!
//! - `ExecutionState` has two fields the document's table lacks but its
//!   methods write: `interrupt_data` (`set_interrupt`'s `data`) and `error`
//!   (`error(error_msg)`; AgentFlow keeps it in an internal dict).
//!   [`AgentState::request_stop`] (what `compiled.stop()` writes) and
//!   [`AgentState::begin_run`] (what a new run resets) are the runtime's
//!   writes, named here because the document names no method for them.
//! - A subclass cannot redeclare an inherited field with another reducer
//!   (the document's `MyState`); the derive refuses the clash at compile
//!   time. See [`MyState`].
//! - Messages are written in LangChain's JSON shape (`type`, `id`), not
//!   AgentFlow's (`role`, `message_id`): role-shaped input is read, but its
//!   `message_id` is kept under `additional_kwargs`, not taken as the id.

use futures::StreamExt;
use serde::Serialize;
use serde_json::{Map, Value, json};
use state_core::reducer::HasId;
use state_core::{Delta, Message, State, StateError};
use state_graph::{CompiledGraph, Ctx, END, GraphError, NodeError, StateGraph, StreamMode};
use state_store::{Store, StoreError};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// A Python `dict[str, Any]`.
pub type Dict = Map<String, Value>;

/// AgentFlow's name of the node a run starts at.
pub const START: &str = "__start__";

/// The extra key that marks a streaming chunk (AgentFlow's `Message.delta`).
pub const DELTA_KEY: &str = "delta";

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A new message id, `msg-1`, `msg-2`, ... (AgentFlow's `generate_id`;
/// unique within the process).
pub fn generate_id() -> String {
    format!("msg-{}", NEXT_ID.fetch_add(1, Ordering::Relaxed))
}

/// The role of a [`text_message`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// `role="user"`: a human message.
    User,
    /// `role="assistant"`: an AI message.
    Assistant,
    /// `role="system"`: instructions.
    System,
}

/// `Message.text_message(content, role=...)`: a text message with a new id.
pub fn text_message(content: &str, role: Role) -> Message {
    let message = match role {
        Role::User => Message::human(content),
        Role::Assistant => Message::ai(content),
        Role::System => Message::system(content),
    };
    message.with_id(generate_id())
}

/// Marks `message` as a streaming chunk (`delta=True`).
#[must_use]
pub fn as_chunk(message: Message) -> Message {
    message.with_extra(DELTA_KEY, json!(true))
}

/// An assistant streaming chunk of the final message `id`.
pub fn chunk(content: &str, id: &str) -> Message {
    as_chunk(Message::ai(content).with_id(id))
}

/// True for a streaming chunk: the extra key `"delta": true`, at the top
/// level or under `additional_kwargs`.
pub fn is_chunk(message: &Message) -> bool {
    let extra = message.extra();
    let flag = |map: &Map<String, Value>| map.get(DELTA_KEY) == Some(&Value::Bool(true));
    flag(extra)
        || extra
            .get("additional_kwargs")
            .and_then(Value::as_object)
            .is_some_and(flag)
}

/// AgentFlow's reducers (`agentflow.core.state.reducers`), as functions
/// `#[reducer(with = ...)]` takes.
pub mod reducers {
    use super::{Message, generate_id, is_chunk};
    use state_core::reducer::{HasId, Reducer, Writes};
    use state_core::{MessageLike, ReduceError};
    use std::collections::HashSet;

    /// [`add_messages`] as the reducer of a field
    /// (`#[reducer(with = reducers::AddMessages)]`). A message without an
    /// id gets one ([`generate_id`]) when a delta is built or decoded
    /// ([`Reducer::prepare`]), not when it is merged: a reducer must do the
    /// same on every replay of a stored step, and the delta then holds the
    /// id. Two writes of one step are two calls, in order.
    ///
    /// ```
    /// use state_examples::agentflow::{AgentState, reducers};
    /// use state_core::{Message, State, Written};
    ///
    /// let delta = AgentState::delta().context(vec![Message::human("hi")]);
    /// let written = delta.get_context().and_then(Written::update);
    /// let id = written.and_then(|m| m[0].id()).map(str::to_owned);
    /// assert!(id.as_deref().is_some_and(|id| id.starts_with("msg-")));
    /// let mut state = AgentState::default();
    /// state.apply(delta).unwrap();
    /// assert_eq!(state.context[0].id(), id.as_deref());
    /// # let _ = reducers::AddMessages;
    /// ```
    #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
    pub struct AddMessages;

    impl Reducer<Vec<Message>> for AddMessages {
        type Update = Vec<Message>;

        /// [`add_messages`] of an update [`check`](Reducer::check) accepted.
        fn apply(&self, target: &mut Vec<Message>, update: Vec<Message>) {
            // Checked updates cannot fail; an unchecked bad one is a no-op.
            let _ = add_messages(target, update);
        }

        /// Refuses a removal, as [`add_messages`] does; nothing else fails.
        fn check(
            &self,
            _target: &Vec<Message>,
            writes: &Writes<Vec<Message>>,
        ) -> Result<(), ReduceError> {
            writes
                .iter()
                .try_for_each(|update| no_removal(update))
                .map_err(ReduceError::custom)
        }

        /// Gives every message without an id (removals aside) a new one.
        fn prepare(&self, update: &mut Vec<Message>) {
            for message in update.iter_mut() {
                if message.id().is_none() && !message.is_removal() {
                    message.set_id(generate_id());
                }
            }
        }
    }

    /// AgentFlow's `add_messages` has no removals: the error for one.
    fn no_removal(update: &[Message]) -> Result<(), String> {
        match update.iter().find(|m| m.is_removal()) {
            Some(removal) => Err(format!(
                "AgentFlow's add_messages has no removals (remove {:?}); overwrite the history instead",
                removal.id().unwrap_or_default()
            )),
            None => Ok(()),
        }
    }

    /// `add_messages`: appends the messages of `new` in order, except
    /// - a message whose id is already in `current` (it is **dropped**,
    ///   where the built-in `add_messages` would replace the stored one);
    /// - a streaming chunk ([`is_chunk`]).
    ///
    /// As in AgentFlow, ids are checked against `current` only: two
    /// messages of one update with the same id are both kept. A message
    /// without an id gets one ([`generate_id`]).
    ///
    /// # Errors
    ///
    /// A removal (`Message::remove`): AgentFlow's `add_messages` has none;
    /// replace the history instead ([`replace_messages`], or
    /// `overwrite_context`). The history is then unchanged.
    pub fn add_messages(current: &mut Vec<Message>, new: Vec<Message>) -> Result<(), String> {
        no_removal(&new)?;
        let left: HashSet<String> = current
            .iter()
            .filter_map(|m| m.id().map(str::to_owned))
            .collect();
        for message in new {
            if is_chunk(&message) || message.id().is_some_and(|id| left.contains(id)) {
                continue;
            }
            let message = match message.id() {
                Some(_) => message,
                None => message.with_id(generate_id()),
            };
            current.push(message);
        }
        Ok(())
    }

    /// `replace_messages`: the history becomes `new`.
    pub fn replace_messages(current: &mut Vec<Message>, new: Vec<Message>) {
        *current = new;
    }

    /// `append_items`: appends the items of `new` whose id is not already
    /// in `current` (the built-in `append_by_id` would update those in
    /// place). As in AgentFlow, ids are checked against `current` only.
    /// Items without an id are always appended.
    pub fn append_items<T: HasId>(current: &mut Vec<T>, new: Vec<T>) {
        let left: HashSet<T::Id> = current
            .iter()
            .filter_map(|item| item.item_id().cloned())
            .collect();
        current.extend(
            new.into_iter()
                .filter(|item| item.item_id().is_none_or(|id| !left.contains(id))),
        );
    }

    /// `replace_value`: the field takes the new value. This is what an
    /// AgentFlow field without a reducer does, and what `state_core`'s
    /// default `replace` reducer does; named in `#[reducer(with =
    /// replace_value)]` it differs from `replace` only in that two writes in
    /// one superstep apply in order (the last wins) instead of conflicting.
    pub fn replace_value<T>(current: &mut T, new: T) {
        *current = new;
    }
}

// ---------------------------------------------------------------------------
// ExecutionState: framework-managed execution tracking.
// ---------------------------------------------------------------------------

/// `ExecutionStatus`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecutionStatus {
    /// The graph is executing (also the initial status, as in AgentFlow).
    #[default]
    Running,
    /// Paused at an interrupt point.
    Interrupted,
    /// Finished.
    Completed,
    /// Failed; the message is in [`ExecutionState::error`].
    Error,
}

/// `StopRequestStatus`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopRequestStatus {
    /// No stop requested.
    #[default]
    None,
    /// `compiled.stop()` was called for this thread.
    StopRequested,
}

/// `ExecutionState`, the `execution_meta` field of [`AgentState`]. The
/// document's table, plus the two fields its lifecycle methods write:
/// `interrupt_data` (`set_interrupt(..., data)`) and `error`
/// (`error(error_msg)`).
#[derive(state_core::AgentState, Debug, Clone, PartialEq)]
pub struct ExecutionState {
    /// The node currently executing.
    #[default("__start__")]
    pub current_node: String,
    /// Step counter (number of node transitions).
    pub step: u32,
    /// RUNNING, INTERRUPTED, COMPLETED, ERROR.
    pub status: ExecutionStatus,
    /// Node where the last interrupt occurred.
    pub interrupt_node: Option<String>,
    /// Reason string for the interrupt.
    pub interrupt_reason: Option<String>,
    /// Data recorded with the interrupt (`set_interrupt`'s `data`).
    pub interrupt_data: Option<Dict>,
    /// NONE or STOP_REQUESTED.
    pub stop_current_execution: StopRequestStatus,
    /// The error message recorded by `error(error_msg)`.
    pub error: Option<String>,
}

impl ExecutionState {
    /// True while the graph is executing.
    pub fn is_running(&self) -> bool {
        self.status == ExecutionStatus::Running
    }

    /// True when execution paused at an interrupt point.
    pub fn is_interrupted(&self) -> bool {
        self.status == ExecutionStatus::Interrupted
    }

    /// True when `compiled.stop()` was called for this thread.
    pub fn is_stopped_requested(&self) -> bool {
        self.stop_current_execution == StopRequestStatus::StopRequested
    }
}

// ---------------------------------------------------------------------------
// AgentState: the framework's base state.
// ---------------------------------------------------------------------------

/// AgentFlow's `AgentState`, the default state of every graph. Extend it
/// with `#[state(flatten)]` ([`OrderState`], [`AnalysisState`]).
#[derive(state_core::AgentState, Debug, Clone, PartialEq)]
pub struct AgentState {
    /// Conversation message history. AgentFlow's add_messages: new messages
    /// are appended; duplicates by message id and streaming chunks are
    /// dropped.
    #[reducer(with = reducers::AddMessages)]
    pub context: Vec<Message>,
    /// Optional rolling summary of the conversation. Written by summary
    /// nodes.
    pub context_summary: Option<String>,
    /// Internal execution tracking. Managed by the framework: read-only for
    /// application code (private; read it with `execution_meta()`).
    #[reducer(merge)]
    execution_meta: ExecutionState,
}

impl AgentState {
    /// The execution tracking, read-only.
    pub fn execution_meta(&self) -> &ExecutionState {
        &self.execution_meta
    }

    fn meta(delta: ExecutionStateDelta) -> AgentStateDelta {
        AgentState::delta().execution_meta(delta)
    }

    // Status methods: safe to call in any node.

    /// True while the graph is executing.
    pub fn is_running(&self) -> bool {
        self.execution_meta.is_running()
    }

    /// True when execution paused at an interrupt point.
    pub fn is_interrupted(&self) -> bool {
        self.execution_meta.is_interrupted()
    }

    /// True when `compiled.stop()` was called for this thread.
    pub fn is_stopped_requested(&self) -> bool {
        self.execution_meta.is_stopped_requested()
    }

    // Lifecycle methods (framework use only): each returns the delta the
    // runtime applies, instead of mutating the state.

    /// Records an interrupt at `node`.
    pub fn set_interrupt(
        &self,
        node: &str,
        reason: &str,
        status: ExecutionStatus,
        data: Option<Dict>,
    ) -> AgentStateDelta {
        Self::meta(
            ExecutionState::delta()
                .interrupt_node(node)
                .interrupt_reason(reason)
                .status(status)
                .interrupt_data(data),
        )
    }

    /// Clears the interrupt, allowing execution to resume.
    pub fn clear_interrupt(&self) -> AgentStateDelta {
        Self::meta(
            ExecutionState::delta()
                .interrupt_node(None)
                .interrupt_reason(None)
                .interrupt_data(None)
                .status(ExecutionStatus::Running),
        )
    }

    /// Increments the step counter.
    pub fn advance_step(&self) -> AgentStateDelta {
        Self::meta(ExecutionState::delta().step(self.execution_meta.step + 1))
    }

    /// Updates the `current_node` pointer.
    pub fn set_current_node(&self, node: &str) -> AgentStateDelta {
        Self::meta(ExecutionState::delta().current_node(node))
    }

    /// Marks execution as completed.
    pub fn complete(&self) -> AgentStateDelta {
        Self::meta(ExecutionState::delta().status(ExecutionStatus::Completed))
    }

    /// Records an error message and marks execution as errored.
    pub fn error(&self, error_msg: &str) -> AgentStateDelta {
        Self::meta(
            ExecutionState::delta()
                .status(ExecutionStatus::Error)
                .error(error_msg),
        )
    }

    /// What `compiled.stop()` writes: the stop flag, when the thread is
    /// running and not interrupted; `None` otherwise.
    pub fn request_stop(&self) -> Option<AgentStateDelta> {
        (self.is_running() && !self.is_interrupted()).then(|| {
            Self::meta(
                ExecutionState::delta().stop_current_execution(StopRequestStatus::StopRequested),
            )
        })
    }

    /// What the runtime writes when a new run starts (not a resume):
    /// running again, at [`START`], with no error or stop request left from
    /// an earlier run. The step counter goes on.
    pub fn begin_run(&self) -> AgentStateDelta {
        Self::new_run()
    }

    /// [`begin_run`](Self::begin_run), which reads nothing of the state:
    /// the runtime writes it as part of a new run's input.
    fn new_run() -> AgentStateDelta {
        Self::meta(
            ExecutionState::delta()
                .current_node(START)
                .status(ExecutionStatus::Running)
                .stop_current_execution(StopRequestStatus::None)
                .error(None),
        )
    }
}

// ---------------------------------------------------------------------------
// The document's extensions of AgentState.
// ---------------------------------------------------------------------------

/// `class OrderState(AgentState)`: state for an order-processing agent.
#[derive(state_core::AgentState, Debug, Clone, PartialEq)]
pub struct OrderState {
    /// Everything `AgentState` has: `context`, `context_summary`,
    /// `execution_meta`.
    #[state(flatten)]
    pub base: AgentState,
    /// The order being processed.
    pub order_id: Option<String>,
    /// Cart lines (`list[dict]`), e.g. `{"sku": "ABC", "qty": 1}`.
    pub cart: Vec<Dict>,
    /// Whether the customer confirmed the order.
    pub confirmed: bool,
    /// A discount code the customer gave.
    pub discount_code: Option<String>,
}

/// An item with an id, for `append_items` (the document's `Finding`).
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Finding {
    /// The id `append_items` deduplicates by.
    pub id: String,
    /// What was found.
    pub text: String,
}

impl Finding {
    /// A finding.
    pub fn new(id: &str, text: &str) -> Self {
        Self {
            id: id.to_owned(),
            text: text.to_owned(),
        }
    }
}

impl HasId for Finding {
    type Id = String;
    fn item_id(&self) -> Option<&String> {
        Some(&self.id)
    }
}

/// `class AnalysisState(AgentState)`: custom reducers on added fields.
#[derive(state_core::AgentState, Debug, Clone, PartialEq)]
pub struct AnalysisState {
    /// Everything `AgentState` has.
    #[state(flatten)]
    pub base: AgentState,
    /// Append new items; deduplicate by `.id` (`append_items`).
    #[reducer(with = reducers::append_items)]
    pub findings: Vec<Finding>,
    /// Full replacement: always overwritten (`replace_value`, the default).
    #[default("init")]
    pub current_step: String,
}

/// `class MyState(AgentState)` with `context: Annotated[list[Message],
/// replace_messages]`. A flattened base's field cannot be redeclared with
/// another reducer, so this state repeats `AgentState`'s fields instead of
/// extending it: it is not an [`AgentState`] (no `AsRef<AgentState>`, no
/// framework helpers). Within an [`AgentState`] graph, replace the history
/// per write with `overwrite_context` instead.
#[derive(state_core::AgentState, Debug, Clone, PartialEq)]
pub struct MyState {
    /// Conversation history, replaced whole by every write
    /// (`replace_messages`).
    #[reducer(with = reducers::replace_messages)]
    pub context: Vec<Message>,
    /// As `AgentState::context_summary`.
    pub context_summary: Option<String>,
    /// As `AgentState::execution_meta`.
    #[reducer(merge)]
    pub execution_meta: ExecutionState,
}

// ---------------------------------------------------------------------------
// Nodes, and AgentFlow's runtime on state_graph: Flow, Agent, invoke, stop.
// ---------------------------------------------------------------------------

/// What a node returns (the document's "How nodes update state").
#[derive(Debug, Clone, PartialEq)]
pub enum NodeReturn<D> {
    /// `list[Message]`: appended to `context` via `add_messages`.
    Messages(Vec<Message>),
    /// A `dict`, typed: each field updates through its reducer.
    Update(D),
    /// A `dict` as JSON (`{"context": [...], "confirmed": true}`), applied
    /// with `apply_json`.
    Dict(Value),
    /// `None`: no state update.
    Nothing,
}

impl NodeReturn<AgentStateDelta> {
    /// The return of a node written against [`AgentState`], for a graph
    /// over an extension of it.
    pub fn convert<D: From<AgentStateDelta>>(self) -> NodeReturn<D> {
        match self {
            NodeReturn::Messages(messages) => NodeReturn::Messages(messages),
            NodeReturn::Update(delta) => NodeReturn::Update(delta.into()),
            NodeReturn::Dict(value) => NodeReturn::Dict(value),
            NodeReturn::Nothing => NodeReturn::Nothing,
        }
    }
}

/// A node written for one state type; `Err` is a failure the runtime
/// records with `error(...)`.
pub type NodeFn<S, D> = fn(&S) -> Result<NodeReturn<D>, String>;

/// A node of a graph over `S`: written for `S`, or for the base
/// [`AgentState`] only (its deltas converted with `.into()`).
pub enum Node<S: State> {
    /// Written for `S`.
    App(NodeFn<S, S::Delta>),
    /// Written for `AgentState`: runs on `state.as_ref()`.
    Base(NodeFn<AgentState, AgentStateDelta>),
}

/// What a run showed, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A node's superstep was committed: what it wrote (its return and the
    /// runtime's lifecycle writes around it, one delta), as JSON.
    Node {
        /// The node.
        node: &'static str,
        /// The delta, as JSON.
        update: Value,
    },
    /// A streaming chunk a node emitted: sent to the caller (the graph's
    /// `messages` stream mode), never stored.
    Chunk {
        /// The node.
        node: &'static str,
        /// The chunk's text.
        text: String,
    },
    /// The run paused before an interrupt point (`ctx.interrupt`); the
    /// next [`Agent::invoke`] of the thread resumes it.
    Paused {
        /// The node that waits.
        node: String,
        /// What it showed: `{"node", "reason", "data"}`.
        value: Value,
    },
    /// The run ended before the graph's end: a stop request, or a node's
    /// error recorded with `error(...)`.
    Halt {
        /// Why.
        reason: String,
    },
}

/// The result of [`Agent::invoke`] (`ResponseGranularity.FULL`: the
/// state, plus what happened).
#[derive(Debug, Clone)]
pub struct Run<S> {
    /// The state after the run.
    pub state: S,
    /// The events, in order.
    pub events: Vec<Event>,
    /// The nodes whose supersteps were committed, in order.
    pub visited: Vec<&'static str>,
    /// The thread's last step after the run.
    pub seq: u64,
}

/// AgentFlow's graph builder over any extension `S` of [`AgentState`]
/// (`StateGraph(OrderState())`): its nodes, run in order, and its interrupt
/// points. [`compile`](Flow::compile) makes it a [`state_graph::StateGraph`].
pub struct Flow<S: State> {
    nodes: Vec<(&'static str, Node<S>)>,
    interrupt_before: Vec<(&'static str, &'static str)>,
}

impl<S: State> Default for Flow<S> {
    fn default() -> Self {
        Self {
            nodes: Vec::new(),
            interrupt_before: Vec::new(),
        }
    }
}

impl<S> Flow<S>
where
    S: State + AsRef<AgentState> + Clone + Serialize + Send + Sync + 'static,
    S::Delta: From<AgentStateDelta> + Serialize + Clone + Send + Sync + 'static,
{
    /// An empty graph.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a node written for `S`.
    #[must_use]
    pub fn node(mut self, name: &'static str, node: NodeFn<S, S::Delta>) -> Self {
        self.nodes.push((name, Node::App(node)));
        self
    }

    /// Adds a node written for the base [`AgentState`].
    #[must_use]
    pub fn base_node(
        mut self,
        name: &'static str,
        node: NodeFn<AgentState, AgentStateDelta>,
    ) -> Self {
        self.nodes.push((name, Node::Base(node)));
        self
    }

    /// Pauses every run before `node` with `reason` (`interrupt_before`).
    #[must_use]
    pub fn interrupt_before(mut self, node: &'static str, reason: &'static str) -> Self {
        self.interrupt_before.push((node, reason));
        self
    }

    /// The node names, in order.
    pub fn node_names(&self) -> Vec<&'static str> {
        self.nodes.iter().map(|(name, _)| *name).collect()
    }

    /// The graph, running its threads in `store`: each node is a graph node
    /// wrapped in AgentFlow's runtime (see [`Agent`]), `START` leads to the
    /// first, and after each a router (conditional edges) goes on to the
    /// next, or to `END` when the run was stopped or a node failed.
    ///
    /// # Errors
    ///
    /// A [`GraphError::Invalid`] for a graph without nodes, or with a
    /// name used twice.
    pub fn compile(self, store: Store) -> Result<Agent<S>, GraphError> {
        let names = self.node_names();
        let reason = |name: &str| {
            self.interrupt_before
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, r)| *r)
        };
        let reasons: Vec<Option<&'static str>> = names.iter().map(|name| reason(name)).collect();
        let stop = Arc::new(AtomicBool::new(false));
        let mut g = StateGraph::<S>::new();
        for (i, (name, node)) in self.nodes.into_iter().enumerate() {
            let step = Step {
                name,
                node,
                paused_here: reasons[i].is_some(),
                next: names.get(i + 1).map(|next| (*next, reasons[i + 1])),
                stop: stop.clone(),
            };
            g.add_node(name, move |state: &S, ctx: &Ctx| step.run(state, ctx));
            match names.get(i + 1) {
                Some(&next) => {
                    let router = move |state: &S| if halted(state.as_ref()) { END } else { next };
                    g.add_conditional_edges(name, router, [next, END]);
                }
                None => {
                    g.add_edge(name, END);
                }
            }
        }
        if let Some(first) = names.first() {
            g.add_edge(state_graph::START, *first);
        }
        Ok(Agent {
            app: g.compile()?.with_store(store),
            first: names
                .first()
                .copied()
                .zip(reasons.first().copied().flatten()),
            names,
            stop,
        })
    }
}

/// Whether the runtime ends the run here: a stop request, or an error.
fn halted(state: &AgentState) -> bool {
    state.is_stopped_requested() || state.execution_meta.status == ExecutionStatus::Error
}

/// The stream modes [`Agent::invoke`] reads: the nodes' updates and the
/// chunks they stream.
fn modes() -> StreamMode {
    StreamMode::UPDATES | StreamMode::MESSAGES
}

/// A compiled [`Flow`]: a [`CompiledGraph`] running its threads in a store,
/// with AgentFlow's `invoke` (a new run, or the resume of a paused one) and
/// `stop`.
///
/// Around each node, the runtime writes what AgentFlow's does, in the same
/// superstep as the node's return: `set_current_node` and `advance_step`
/// before it, `error(...)` when it fails, `complete()` after the last node.
/// An interrupt point is a real interrupt: the node before it records
/// `set_interrupt(...)` (a node that pauses writes nothing, so the stored
/// thread could not say it waits otherwise), the interrupt point pauses
/// with `ctx.interrupt` before running its node, and resumed (by the next
/// `invoke` of the thread, in any process) it writes `clear_interrupt()`
/// and the invoke's input, then runs.
pub struct Agent<S: State> {
    app: CompiledGraph<S>,
    names: Vec<&'static str>,
    /// The first node and its reason, when it is an interrupt point.
    first: Option<(&'static str, &'static str)>,
    stop: Arc<AtomicBool>,
}

impl<S: State> Clone for Agent<S> {
    fn clone(&self) -> Self {
        Self {
            app: self.app.clone(),
            names: self.names.clone(),
            first: self.first,
            stop: self.stop.clone(),
        }
    }
}

impl<S> Agent<S>
where
    S: State + AsRef<AgentState> + Clone + Serialize + Send + Sync + 'static,
    S::Delta: From<AgentStateDelta> + Serialize + Clone + Send + Sync + 'static,
{
    /// The graph itself.
    pub fn graph(&self) -> &CompiledGraph<S> {
        &self.app
    }

    /// The node names, in order.
    pub fn node_names(&self) -> &[&'static str] {
        &self.names
    }

    /// `app.invoke(input, config={"thread_id": thread})`. A thread paused at
    /// an interrupt point resumes there ([`CompiledGraph::resume`]), the
    /// input applied as the paused node starts again; any other starts a
    /// new run ([`CompiledGraph::invoke_thread`], input
    /// [`AgentState::begin_run`] plus `input`) at the first node.
    ///
    /// # Errors
    ///
    /// A [`GraphError`] when a node's return does not apply (a removal in
    /// `context`, an unknown key in a dict...): its superstep is then not
    /// applied. A node's own `Err` is no error: the runtime records it.
    pub async fn invoke(&self, thread: &str, input: S::Delta) -> Result<Run<S>, GraphError> {
        let refused = |source| GraphError::State {
            context: "the input was refused".to_owned(),
            source,
        };
        let pending = match self.app.pending_interrupts(thread).await {
            Err(GraphError::Store(StoreError::ThreadNotFound { .. })) => Vec::new(),
            other => other?,
        };
        let mut stream = if pending.is_empty() {
            let mut calls = vec![AgentState::new_run()];
            if let Some((node, reason)) = self.first {
                calls.push(interrupt_before(&AgentState::default(), node, reason));
            }
            let start = S::Delta::from(in_order(calls).map_err(refused)?)
                .merge(input)
                .map_err(refused)?;
            self.app.stream_thread(thread, start, modes())
        } else {
            let answer = state_core::json::to_value(&input).map_err(|e| {
                refused(StateError::Serialize {
                    field: "(the input)".to_owned(),
                    message: e.to_string(),
                })
            })?;
            self.app.stream_resume(thread, answer, modes())
        };
        let mut events = Vec::new();
        let mut visited = Vec::new();
        let mut outcome = None;
        while let Some(event) = stream.next().await {
            match event? {
                state_graph::Event::Update { node, delta } => {
                    let node = self.name(&node);
                    visited.push(node);
                    let update = serde_json::to_value(&delta).unwrap_or(Value::Null);
                    events.push(Event::Node { node, update });
                }
                state_graph::Event::Message { node, chunk, .. } => events.push(Event::Chunk {
                    node: self.name(&node),
                    text: chunk.text(),
                }),
                state_graph::Event::Interrupt(paused) => {
                    events.extend(paused.into_iter().map(|i| Event::Paused {
                        node: i.node,
                        value: i.value,
                    }));
                }
                state_graph::Event::End(end) => outcome = Some(end),
                _ => {}
            }
        }
        let Some(outcome) = outcome else {
            unreachable!("a run's stream ends with its outcome or an error")
        };
        let (seq, state) = (outcome.seq(), outcome.into_state());
        if let Some(reason) = self.halt(state.as_ref()) {
            events.push(Event::Halt { reason });
        }
        Ok(Run {
            state,
            events,
            visited,
            seq,
        })
    }

    /// `compiled.stop()` for `thread`: when the thread is running and not
    /// interrupted, asks the runtime to stop; the next node boundary
    /// records it (`is_stopped_requested()`) with that node's superstep,
    /// and the router ends the run. Returns whether it asked.
    ///
    /// The request is the agent's, not the thread's: a node does not know
    /// which thread it runs on, so the next node of any run of this agent
    /// takes it. This example runs one thread at a time.
    ///
    /// # Errors
    ///
    /// A [`GraphError`] if the thread cannot be read.
    pub async fn stop(&self, thread: &str) -> Result<bool, GraphError> {
        let Some(store) = self.app.store() else {
            return Err(GraphError::NoStore { method: "stop" });
        };
        let thread = store.thread::<S>(thread).await?;
        let asked = thread.state().as_ref().request_stop().is_some();
        if asked {
            self.stop.store(true, Ordering::SeqCst);
        }
        Ok(asked)
    }

    fn name(&self, node: &str) -> &'static str {
        self.names
            .iter()
            .copied()
            .find(|name| *name == node)
            .unwrap_or("?")
    }

    /// Why a run ended before the graph's end, if it did.
    fn halt(&self, state: &AgentState) -> Option<String> {
        let meta = state.execution_meta();
        let at = meta.current_node.as_str();
        if state.is_stopped_requested() {
            let next = self.names.iter().skip_while(|n| **n != at).nth(1);
            return Some(match next {
                Some(next) => format!("stop requested; {next} not run"),
                None => "stop requested".to_owned(),
            });
        }
        let error = meta
            .error
            .as_deref()
            .filter(|_| meta.status == ExecutionStatus::Error)?;
        Some(format!("{at} failed: {error}"))
    }
}

/// One node of a [`Flow`], with what the runtime does around it.
struct Step<S: State> {
    name: &'static str,
    node: Node<S>,
    /// This node is an interrupt point: the run pauses before it runs.
    paused_here: bool,
    /// The next node, with its reason if it is an interrupt point.
    next: Option<(&'static str, Option<&'static str>)>,
    /// The agent's stop request, taken at the node boundary.
    stop: Arc<AtomicBool>,
}

impl<S> Step<S>
where
    S: State + AsRef<AgentState> + Clone,
    S::Delta: From<AgentStateDelta> + Clone,
{
    /// The node's superstep: the lifecycle writes, the resumed invoke's
    /// input, and the node's return, as one delta.
    fn run(&self, state: &S, ctx: &Ctx) -> Result<S::Delta, NodeError> {
        let mut calls = Vec::new();
        let mut input = S::delta();
        let mut resumed = None;
        let meta = state.as_ref().execution_meta();
        if self.paused_here && meta.interrupt_node.as_deref() == Some(self.name) {
            // Wait here; resumed, the call returns the next invoke's input,
            // and the node runs on the state as it leaves it.
            let asked = json!({
                "node": self.name,
                "reason": meta.interrupt_reason,
                "data": meta.interrupt_data,
            });
            let answer = ctx.interrupt(asked)?;
            input = S::Delta::from_json(answer)?;
            let clear = state.as_ref().clear_interrupt();
            let mut view = state.clone();
            view.apply(S::Delta::from(clear.clone()).merge(input.clone())?)?;
            calls.push(clear);
            resumed = Some(view);
        }
        let state = resumed.as_ref().unwrap_or(state);
        let base = state.as_ref();
        calls.push(base.set_current_node(self.name));
        calls.push(base.advance_step());
        let returned = match &self.node {
            Node::App(f) => f(state),
            Node::Base(f) => f(base).map(NodeReturn::convert),
        };
        let written = match returned {
            Err(message) => {
                calls.push(base.error(&message));
                S::delta()
            }
            Ok(returned) => {
                let written = written(returned, ctx)?;
                let stop = self.stop.swap(false, Ordering::SeqCst);
                let stop = stop.then(|| base.request_stop()).flatten();
                let stopping = stop.is_some();
                calls.extend(stop);
                match self.next {
                    None => calls.push(base.complete()),
                    Some((next, Some(reason))) if !stopping => {
                        calls.push(interrupt_before(base, next, reason));
                    }
                    Some(_) => {}
                }
                written
            }
        };
        Ok(S::Delta::from(in_order(calls)?)
            .merge(input)?
            .merge(written)?)
    }
}

/// What a node's return writes. Its streaming chunks go to the caller
/// through `ctx` (the `messages` stream mode), not into the delta: they are
/// never stored.
fn written<D>(returned: NodeReturn<D>, ctx: &Ctx) -> Result<D, NodeError>
where
    D: Delta + From<AgentStateDelta>,
{
    Ok(match returned {
        NodeReturn::Messages(messages) => {
            let (chunks, messages): (Vec<Message>, Vec<Message>) =
                messages.into_iter().partition(is_chunk);
            chunks
                .into_iter()
                .for_each(|chunk| ctx.write_message(chunk));
            D::from(AgentState::delta().context(messages))
        }
        NodeReturn::Update(delta) => delta,
        // A dict that does not decode fails the node (the run's error).
        NodeReturn::Dict(dict) => D::from_json(dict)?,
        NodeReturn::Nothing => D::default(),
    })
}

/// `set_interrupt` for the interrupt point `node`, as the node before it
/// records it.
fn interrupt_before(state: &AgentState, node: &str, reason: &str) -> AgentStateDelta {
    let mut data = Map::new();
    data.insert("pending_node".into(), json!(node));
    state.set_interrupt(node, reason, ExecutionStatus::Interrupted, Some(data))
}

/// The runtime's lifecycle calls around one node, in call order, as one
/// delta: a field that two calls write keeps the later call's value (one
/// writer's sequence of calls, where [`Delta::merge`] would see two
/// parallel writes and refuse them).
fn in_order(calls: Vec<AgentStateDelta>) -> Result<AgentStateDelta, StateError> {
    let mut meta = Map::new();
    for call in &calls {
        let json = state_core::json::to_value(call).map_err(|e| StateError::Serialize {
            field: "execution_meta".to_owned(),
            message: e.to_string(),
        })?;
        if let Some(Value::Object(fields)) = json.get("execution_meta") {
            meta.extend(fields.clone());
        }
    }
    AgentStateDelta::from_json(json!({ "execution_meta": meta }))
}

// ---------------------------------------------------------------------------
// The order-processing agent.
// ---------------------------------------------------------------------------

/// The text of the last user message, lowercased.
fn last_user_text(state: &AgentState) -> String {
    state
        .context
        .iter()
        .rev()
        .find(|m| m.kind() == state_core::MessageKind::Human)
        .map(|m| m.text().to_lowercase())
        .unwrap_or_default()
}

/// An order node: reads a discount code ("code SAVE10") from the last user
/// message. Returns `None` when there is none.
pub fn apply_discount(state: &OrderState) -> Result<NodeReturn<OrderStateDelta>, String> {
    let text = last_user_text(&state.base);
    let code = text
        .split_whitespace()
        .skip_while(|word| *word != "code")
        .nth(1)
        .map(|code| {
            code.trim_matches(|c: char| !c.is_alphanumeric())
                .to_uppercase()
        });
    Ok(match code {
        Some(code) => NodeReturn::Update(OrderState::delta().discount_code(code)),
        None => NodeReturn::Nothing,
    })
}

/// An order node (the document's `process_order`): returns a message.
pub fn process_order(state: &OrderState) -> Result<NodeReturn<OrderStateDelta>, String> {
    let order_id = state.order_id.as_deref().unwrap_or("(new order)");
    let text = if state.confirmed {
        format!("Order {order_id} confirmed!")
    } else {
        let lines: Vec<String> = state
            .cart
            .iter()
            .map(|line| format!("{} x {}", line["qty"], line["sku"].as_str().unwrap_or("?")))
            .collect();
        let discount = state
            .discount_code
            .as_deref()
            .map(|code| format!(", code {code}"))
            .unwrap_or_default();
        format!(
            "Order {order_id}: {}{discount}. Shall I place it?",
            lines.join(", ")
        )
    };
    Ok(NodeReturn::Messages(vec![text_message(
        &text,
        Role::Assistant,
    )]))
}

/// The id of the "Order placed!" message of an order: fixed, so that a
/// retried checkout repeats it.
pub fn placed_message_id(order_id: &str) -> String {
    format!("{order_id}-placed")
}

/// An order node (the document's `checkout_node`): on a confirmation,
/// returns the dict `{"context": [Order placed!], "confirmed": true}`.
/// Fails on an empty cart.
pub fn checkout(state: &OrderState) -> Result<NodeReturn<OrderStateDelta>, String> {
    if state.cart.is_empty() {
        return Err("cannot check out an empty cart".into());
    }
    let text = last_user_text(&state.base);
    if !(text.contains("yes") || text.contains("confirm")) {
        return Ok(NodeReturn::Messages(vec![text_message(
            "Order not placed.",
            Role::Assistant,
        )]));
    }
    let order_id = state.order_id.as_deref().unwrap_or("order");
    let placed = Message::ai("Order placed!").with_id(placed_message_id(order_id));
    Ok(NodeReturn::Dict(json!({
        "context": [placed],
        "confirmed": true,
    })))
}

/// A node written for the base state (the document's `answer_node`),
/// streaming: it returns the chunks it streamed, then the final message,
/// all with one id. `add_messages` stores only the final one.
pub fn answer_node(_state: &AgentState) -> Result<NodeReturn<AgentStateDelta>, String> {
    let id = generate_id();
    let parts = ["Here is ", "the answer: ", "it ships tomorrow."];
    let mut messages: Vec<Message> = parts.iter().map(|part| chunk(part, &id)).collect();
    messages.push(Message::ai(parts.concat()).with_id(id));
    Ok(NodeReturn::Messages(messages))
}

/// `generate_summary(state.context)`: the number of messages and the first
/// user request.
pub fn generate_summary(context: &[Message]) -> String {
    let first = context
        .iter()
        .find(|m| m.kind() == state_core::MessageKind::Human)
        .map(Message::text)
        .unwrap_or_default();
    format!("{} message(s); the user asked: {first:?}", context.len())
}

/// A node written for the base state (the document's `summarise_node`):
/// returns the dict `{"context_summary": ...}`.
pub fn summarise_node(state: &AgentState) -> Result<NodeReturn<AgentStateDelta>, String> {
    Ok(NodeReturn::Update(
        AgentState::delta().context_summary(generate_summary(&state.context)),
    ))
}

/// The order agent: `apply_discount -> process_order -> checkout -> answer
/// -> summarise`, paused before `checkout` for the customer's
/// confirmation. Compile it on a store to run it: `order_graph().compile(store)`.
pub fn order_graph() -> Flow<OrderState> {
    Flow::new()
        .node("apply_discount", apply_discount)
        .node("process_order", process_order)
        .node("checkout", checkout)
        .base_node("answer", answer_node)
        .base_node("summarise", summarise_node)
        .interrupt_before("checkout", "awaiting the customer's confirmation")
}

/// An invoke's input that only adds `messages` to `context`
/// (`{"messages": [...]}`), for a graph over any extension of
/// [`AgentState`].
pub fn say<D: From<AgentStateDelta>>(messages: Vec<Message>) -> D {
    D::from(AgentState::delta().context(messages))
}

/// An order (the document's seeding `input_data`) and the user's messages,
/// as an invoke's input.
pub fn order_input(order: &OrderState, messages: Vec<Message>) -> OrderStateDelta {
    OrderState::delta()
        .order_id(order.order_id.clone())
        .cart(order.cart.clone())
        .base(AgentState::delta().context(messages))
}

/// The document's seeded state: `OrderState(order_id="ORD-001",
/// cart=[{"sku": "ABC", "qty": 1}])`.
pub fn seeded_order() -> OrderState {
    let line = json!({"sku": "ABC", "qty": 1});
    OrderState {
        order_id: Some("ORD-001".into()),
        cart: vec![line.as_object().cloned().unwrap_or_default()],
        ..OrderState::default()
    }
}
