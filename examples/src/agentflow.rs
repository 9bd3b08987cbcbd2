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
//! [`StateGraph`] is a small linear stand-in for AgentFlow's compiled graph,
//! enough to show who writes what: before each node it checks the stop
//! flag and the interrupt points and writes `set_current_node` and
//! `advance_step`; it records a failing node with `error` and a finished
//! run with `complete`; an interrupted state resumes at its interrupt node
//! (`clear_interrupt`). Nodes written for [`AgentState`] ([`answer_node`],
//! [`summarise_node`]) run on any extension of it.
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

use serde::Serialize;
use serde_json::{Map, Value, json};
use state_core::reducer::HasId;
use state_core::{Delta, Message, State, StateError};
use std::sync::atomic::{AtomicU64, Ordering};

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
// Nodes and a small runtime: StateGraph, invoke, interrupt, stop.
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

/// What happened during a run, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The runtime applied a lifecycle delta (`what` names the calls).
    Framework {
        /// The lifecycle calls, e.g. `set_current_node+advance_step`.
        what: String,
        /// The delta, as JSON.
        update: Value,
    },
    /// A node ran and its return was applied.
    Node {
        /// The node.
        node: &'static str,
        /// What it returned: `list[Message]`, `dict`, `None`.
        returned: &'static str,
        /// The delta, as JSON.
        update: Value,
    },
    /// A streaming chunk a node emitted: shown to the caller, not stored.
    Chunk {
        /// The node.
        node: &'static str,
        /// The chunk's text.
        text: String,
    },
    /// The run stopped before its end (interrupt, stop request, error).
    Halt {
        /// Why.
        reason: String,
    },
}

/// The result of [`StateGraph::invoke`] (`ResponseGranularity.FULL`: the
/// state, plus what happened).
#[derive(Debug, Clone)]
pub struct Run<S> {
    /// The state after the run.
    pub state: S,
    /// The events, in order.
    pub events: Vec<Event>,
    /// The nodes that ran, in order.
    pub visited: Vec<&'static str>,
}

/// A linear graph over any extension `S` of [`AgentState`] (`StateGraph(OrderState())`,
/// compiled): its nodes run in order, the runtime writes the execution
/// metadata around them.
pub struct StateGraph<S: State> {
    nodes: Vec<(&'static str, Node<S>)>,
    interrupt_before: Vec<(&'static str, &'static str)>,
}

impl<S: State> Default for StateGraph<S> {
    fn default() -> Self {
        Self {
            nodes: Vec::new(),
            interrupt_before: Vec::new(),
        }
    }
}

impl<S> StateGraph<S>
where
    S: State + AsRef<AgentState>,
    S::Delta: From<AgentStateDelta> + Serialize + Clone,
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

    /// `compiled.stop()`: sets the stop flag when the thread is running and
    /// not interrupted. Returns whether it did.
    ///
    /// # Errors
    ///
    /// When the delta does not apply (never, for a well-formed state).
    pub fn stop(&self, state: &mut S) -> Result<bool, StateError> {
        match state.as_ref().request_stop() {
            Some(delta) => {
                state.apply(delta.into())?;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// `app.invoke({"messages": input}, ...)`: see [`invoke_with`](Self::invoke_with).
    ///
    /// # Errors
    ///
    /// As [`invoke_with`](Self::invoke_with).
    pub fn invoke(&self, state: S, input: Vec<Message>) -> Result<Run<S>, StateError> {
        self.invoke_with(state, input, |_, _| {})
    }

    /// Runs the graph on `state`. An interrupted state resumes at its
    /// interrupt node (`clear_interrupt`); any other starts a new run
    /// ([`AgentState::begin_run`]) at the first node. `input` is appended
    /// to `context`. Before each node the runtime checks the stop flag and
    /// the interrupt points, then writes `set_current_node` and
    /// `advance_step`; a node's `Err` is recorded with `error`; after the
    /// last node, `complete`. `after_node` runs after each node (a caller
    /// of `stop` from elsewhere, say).
    ///
    /// # Errors
    ///
    /// When a node's return does not apply (a removal in `context`, an
    /// unknown key in a dict...): the state is then as before that return.
    pub fn invoke_with(
        &self,
        mut state: S,
        input: Vec<Message>,
        mut after_node: impl FnMut(&'static str, &mut S),
    ) -> Result<Run<S>, StateError> {
        let mut events = Vec::new();
        let mut visited = Vec::new();
        let base = state.as_ref();
        let (resume_at, start) = match base.execution_meta.interrupt_node.clone() {
            Some(node) if base.is_interrupted() => (Some(node), base.clear_interrupt()),
            _ => (None, base.begin_run()),
        };
        let what = if resume_at.is_some() {
            "clear_interrupt"
        } else {
            "begin_run"
        };
        framework(&mut state, &mut events, what, start)?;
        if !input.is_empty() {
            framework(
                &mut state,
                &mut events,
                "input -> context",
                AgentState::delta().context(input),
            )?;
        }
        let first = resume_at
            .as_deref()
            .and_then(|node| self.nodes.iter().position(|(name, _)| *name == node))
            .unwrap_or(0);
        for (name, node) in &self.nodes[first..] {
            let name = *name;
            if state.as_ref().is_stopped_requested() {
                events.push(Event::Halt {
                    reason: format!("stop requested; {name} not run"),
                });
                return Ok(Run {
                    state,
                    events,
                    visited,
                });
            }
            let interrupt = self.interrupt_before.iter().find(|(node, _)| *node == name);
            if let Some((_, reason)) = interrupt
                && resume_at.as_deref() != Some(name)
            {
                let mut data = Map::new();
                data.insert("pending_node".into(), json!(name));
                let delta = state.as_ref().set_interrupt(
                    name,
                    reason,
                    ExecutionStatus::Interrupted,
                    Some(data),
                );
                framework(&mut state, &mut events, "set_interrupt", delta)?;
                events.push(Event::Halt {
                    reason: format!("interrupted before {name}: {reason}"),
                });
                return Ok(Run {
                    state,
                    events,
                    visited,
                });
            }
            let base = state.as_ref();
            let enter = base.set_current_node(name).merge(base.advance_step())?;
            framework(
                &mut state,
                &mut events,
                "set_current_node+advance_step",
                enter,
            )?;
            visited.push(name);
            let returned = match node {
                Node::App(f) => f(&state),
                Node::Base(f) => f(state.as_ref()).map(NodeReturn::convert),
            };
            match returned {
                Ok(returned) => apply_return(&mut state, &mut events, name, returned)?,
                Err(message) => {
                    let delta = state.as_ref().error(&message);
                    framework(&mut state, &mut events, "error", delta)?;
                    events.push(Event::Halt {
                        reason: format!("{name} failed: {message}"),
                    });
                    return Ok(Run {
                        state,
                        events,
                        visited,
                    });
                }
            }
            after_node(name, &mut state);
        }
        let done = state.as_ref().complete();
        framework(&mut state, &mut events, "complete", done)?;
        Ok(Run {
            state,
            events,
            visited,
        })
    }
}

fn framework<S>(
    state: &mut S,
    events: &mut Vec<Event>,
    what: &str,
    delta: AgentStateDelta,
) -> Result<(), StateError>
where
    S: State,
    S::Delta: From<AgentStateDelta> + Serialize,
{
    let delta = S::Delta::from(delta);
    let update = serde_json::to_value(&delta).unwrap_or(Value::Null);
    state.apply(delta)?;
    events.push(Event::Framework {
        what: what.to_owned(),
        update,
    });
    Ok(())
}

fn apply_return<S>(
    state: &mut S,
    events: &mut Vec<Event>,
    node: &'static str,
    returned: NodeReturn<S::Delta>,
) -> Result<(), StateError>
where
    S: State,
    S::Delta: From<AgentStateDelta> + Serialize,
{
    let (returned, update) = match returned {
        NodeReturn::Messages(messages) => {
            for message in messages.iter().filter(|m| is_chunk(m)) {
                events.push(Event::Chunk {
                    node,
                    text: message.text(),
                });
            }
            let delta = S::Delta::from(AgentState::delta().context(messages));
            let update = serde_json::to_value(&delta).unwrap_or(Value::Null);
            state.apply(delta)?;
            ("list[Message]", update)
        }
        NodeReturn::Update(delta) => {
            let update = serde_json::to_value(&delta).unwrap_or(Value::Null);
            state.apply(delta)?;
            ("dict", update)
        }
        NodeReturn::Dict(value) => {
            state.apply_json(value.clone())?;
            ("dict", value)
        }
        NodeReturn::Nothing => ("None", Value::Null),
    };
    events.push(Event::Node {
        node,
        returned,
        update,
    });
    Ok(())
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
/// confirmation.
pub fn order_graph() -> StateGraph<OrderState> {
    StateGraph::new()
        .node("apply_discount", apply_discount)
        .node("process_order", process_order)
        .node("checkout", checkout)
        .base_node("answer", answer_node)
        .base_node("summarise", summarise_node)
        .interrupt_before("checkout", "awaiting the customer's confirmation")
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
