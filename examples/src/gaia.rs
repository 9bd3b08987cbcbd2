//! GAIA (seed 001): a personal assistant whose state holds the query, the
//! message history, the user's datetime and the memories found for the
//! query; its runtime configuration travels beside the state, and every
//! node's update is streamed to the browser as server-sent events.
//!
//! The Python `State` is a Pydantic model made dict-like (`DictLikeModel`)
//! because LangGraph wants a mapping. Here the struct is the state: fields
//! are attributes (`state.query`), and the derive adds the mapping side
//! (`state.get("query")`, `state.set(..)`, `GaiaState::keys()`), with the
//! key and the value checked.
//!
//! Nodes return a [`GaiaStateDelta`], as GAIA's nodes return a partial dict.
//! Two of the document's nodes need care: returning a shorter list for an
//! `add_messages` field does not shorten it (in LangGraph either: the
//! reducer merges by id), so [`trim_messages_node`] and
//! [`filter_messages_node`] use the overwrite setter, LangGraph's
//! `Overwrite`.
//!
//! The user's long-term memories, which GAIA keeps in Mem0, are items of
//! the store the graph compiles with (`compile(store=store)`, LangGraph's
//! `BaseStore`), under `["memories", user_id]`, searched by meaning
//! ([`memory`]); the embedding model is a hashed bag of words
//! ([`embedding`]), so runs are deterministic and offline. The LLM and the
//! calendar tool are simulated by [`Gaia`]: fixed answers and
//! deterministic message ids.
//!
//! The graph runs as a [`state_graph::StateGraph`] ([`graph`]): pruning
//! routed by conditional edges, then memory retrieval, the agent and its
//! tools loop, and the memory store; its run is streamed
//! (`stream_thread`), each node's update sent as it is applied, as GAIA's
//! `graph.astream(.., stream_mode="updates")` feeds its SSE endpoint. The
//! [`RunnableConfig`] is the graph's typed context: one compiled graph for
//! every user, each run given its config (`with_context`), as GAIA passes
//! `config` to each `astream`. GAIA
//! checkpoints with LangGraph's `PostgresSaver`; here the checkpointer is a
//! [`state_store::Store`] (`Store::postgres(url)`, or `Store::sqlite` as in
//! the example): every superstep is one logged step of the thread.
//!
//! [`Gaia::run`] is the same nodes driven by a hand-written loop on a bare
//! state ([`next_node`] is its routing table), recording a [`Run`], its
//! memories in the store it is given; [`Gaia::run_stored`] is that loop
//! with each update logged as a step of a thread. The tests drive them
//! node by node, and check that the graph streams the same updates.

use serde::Serialize;
use serde_json::{Value, json};
use state_core::{Message, MessageKind, Messages, State, StateError, ToolCall, Written};
use state_store::{Store, StoreError, Thread};
use std::collections::BTreeMap;
use std::fmt;

pub mod embedding;
pub mod graph;
pub mod memory;

/// Messages kept by [`trim_messages_node`] ("Keep last 10").
pub const KEEP_LAST: usize = 10;
/// [`filter_messages_node`] keeps messages shorter than this, in characters.
pub const MAX_CONTENT_CHARS: usize = 10_000;
/// Memories returned by one search (`limit=5` in the document).
pub const MEMORY_LIMIT: usize = 5;
/// The calendar tool the simulated agent calls.
pub const FETCH_EVENTS: &str = "CUSTOM_FETCH_EVENTS";
/// Node executions allowed in one run, as LangGraph's `recursion_limit`.
pub const RECURSION_LIMIT: usize = 25;
/// The `"node"` metadata of the logged step that holds a run's input
/// ([`Gaia::run_stored`]), beside the nodes' names.
pub const INPUT: &str = "__input__";

/// Agent state schema with message history and context (the document's
/// `State(DictLikeModel)`), field for field, with its defaults.
///
/// Named `GaiaState` so that it does not shadow the [`State`] trait.
#[derive(state_core::AgentState, Debug, Clone, PartialEq)]
pub struct GaiaState {
    /// Current user query/message.
    pub query: String,
    /// Conversation message history with automatic merging.
    #[reducer(add_messages)]
    pub messages: Messages,
    /// User's current datetime in their timezone.
    pub current_datetime: Option<String>,
    /// User ID for Mem0 memory storage.
    pub mem0_user_id: Option<String>,
    /// Retrieved memories relevant to current conversation.
    pub memories: Vec<String>,
    /// Flag indicating if memories have been stored this turn.
    #[scope(turn)]
    pub memories_stored: bool,
    /// Thread/conversation identifier for state persistence.
    pub conversation_id: Option<String>,
}

/// The user's request (the document's `MessageRequestWithHistory`; only
/// the field the state reads).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageRequestWithHistory {
    /// The user's message.
    pub message: String,
}

/// The graph's input for one invocation (the document's
/// `build_initial_state`). The Python returns a dict that LangGraph applies
/// as an update to the thread's checkpoint; a delta is exactly that.
/// History messages that are already in the checkpoint (same id) are
/// updated in place, not repeated.
///
/// `now` stands for `datetime.now().isoformat()`, so that runs are
/// reproducible; `trigger_context` is accepted and unused, as in the
/// document.
pub fn build_initial_state(
    request: &MessageRequestWithHistory,
    user_id: &str,
    conversation_id: &str,
    history: Vec<Message>,
    _trigger_context: Option<&Value>,
    now: &str,
) -> GaiaStateDelta {
    GaiaState::delta()
        .query(request.message.as_str())
        .messages(history)
        .current_datetime(now)
        .mem0_user_id(user_id)
        .conversation_id(conversation_id)
        .memories(Vec::new())
        .memories_stored(false)
}

/// The user record `build_agent_config` reads.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct User {
    /// The user's id.
    pub user_id: String,
    /// Display name.
    pub name: Option<String>,
    /// Email address.
    pub email: Option<String>,
    /// IANA timezone; `"UTC"` when absent.
    pub timezone: Option<String>,
}

/// The user's chosen model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelConfig {
    /// The model's name.
    pub model_name: String,
}

/// Stand-in for LangChain's `UsageMetadataCallbackHandler`: only its name
/// travels in the config here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UsageMetadataCallbackHandler {
    /// A label for the handler.
    pub name: String,
}

/// The configurable parameters of a run (`config["configurable"]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Configurable {
    /// The conversation, which is also the checkpointer's thread.
    pub thread_id: String,
    /// The user's id.
    pub user_id: String,
    /// The user's name.
    pub user_name: Option<String>,
    /// The user's email.
    pub user_email: Option<String>,
    /// The user's local time, ISO 8601.
    pub user_time: String,
    /// The user's timezone.
    pub user_timezone: String,
    /// The agent to run.
    pub agent_name: String,
    /// A tool the user picked in the UI.
    pub selected_tool: Option<String>,
    /// A tool category the user picked.
    pub tool_category: Option<String>,
    /// The model to use.
    pub model: Option<String>,
}

/// The runtime configuration passed beside the state (LangChain's
/// `RunnableConfig`): read by nodes, never part of the state or its
/// checkpoint. The graph's context type ([`graph::compile`]): each run is
/// given its own with `with_context(config)`, and nodes read it as
/// `ctx.context()`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunnableConfig {
    /// The configurable parameters.
    pub configurable: Configurable,
    /// Callbacks of the run.
    pub callbacks: Vec<UsageMetadataCallbackHandler>,
}

/// The keyword arguments of `build_agent_config` that have defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentOptions {
    /// The user's model choice.
    pub user_model_config: Option<ModelConfig>,
    /// A usage callback to attach.
    pub usage_metadata_callback: Option<UsageMetadataCallbackHandler>,
    /// The agent to run; `"comms_agent"` by default.
    pub agent_name: String,
    /// A tool the user picked.
    pub selected_tool: Option<String>,
    /// A tool category the user picked.
    pub tool_category: Option<String>,
}

impl Default for AgentOptions {
    fn default() -> Self {
        AgentOptions {
            user_model_config: None,
            usage_metadata_callback: None,
            agent_name: "comms_agent".to_owned(),
            selected_tool: None,
            tool_category: None,
        }
    }
}

/// The runtime configuration for a run (the document's
/// `build_agent_config`); `user_time` is ISO 8601.
pub fn build_agent_config(
    conversation_id: &str,
    user: &User,
    user_time: &str,
    options: AgentOptions,
) -> RunnableConfig {
    let configurable = Configurable {
        thread_id: conversation_id.to_owned(),
        user_id: user.user_id.clone(),
        user_name: user.name.clone(),
        user_email: user.email.clone(),
        user_time: user_time.to_owned(),
        user_timezone: user.timezone.clone().unwrap_or_else(|| "UTC".to_owned()),
        agent_name: options.agent_name,
        selected_tool: options.selected_tool,
        tool_category: options.tool_category,
        model: options.user_model_config.map(|config| config.model_name),
    };
    RunnableConfig {
        configurable,
        callbacks: options.usage_metadata_callback.into_iter().collect(),
    }
}

/// Keeps the last [`KEEP_LAST`] messages (the document's
/// `trim_messages_node`). The shorter history replaces the field wholesale
/// (`overwrite_messages`, LangGraph's `Overwrite`): through `add_messages`
/// it would not shorten anything, see [`trim_messages_as_written`].
pub fn trim_messages_node(state: &GaiaState) -> GaiaStateDelta {
    let skip = state.messages.len().saturating_sub(KEEP_LAST);
    let kept: Messages = state.messages.iter().skip(skip).cloned().collect();
    GaiaState::delta().overwrite_messages(kept)
}

/// The document's `trim_messages_node` as written:
/// `{"messages": state.messages[-10:]}` goes through `add_messages`, which
/// updates the ten messages in place by id and keeps every other one. In
/// LangGraph too. Kept to show the difference.
pub fn trim_messages_as_written(state: &GaiaState) -> GaiaStateDelta {
    let skip = state.messages.len().saturating_sub(KEEP_LAST);
    let kept: Vec<Message> = state.messages.iter().skip(skip).cloned().collect();
    GaiaState::delta().messages(kept)
}

/// Drops messages of [`MAX_CONTENT_CHARS`] characters or more (the
/// document's `filter_messages_node`), replacing the history wholesale.
pub fn filter_messages_node(state: &GaiaState) -> GaiaStateDelta {
    let kept: Messages = state
        .messages
        .iter()
        .filter(|message| !is_oversized(message))
        .cloned()
        .collect();
    GaiaState::delta().overwrite_messages(kept)
}

/// `len(msg.content) >= 10000`, counted in characters as Python does.
fn is_oversized(message: &Message) -> bool {
    message.text().chars().count() >= MAX_CONTENT_CHARS
}

/// The pruning node a run starts with, if any: filter oversized messages
/// first, then trim to [`KEEP_LAST`].
pub fn prune_route(state: &GaiaState) -> Option<&'static str> {
    if state.messages.iter().any(is_oversized) {
        Some("filter_messages")
    } else if state.messages.len() > KEEP_LAST {
        Some("trim_messages")
    } else {
        None
    }
}

/// The node after `node`, or `None` at the end of the run:
/// prune → `memory_retrieval` → `agent` ⇄ `tools` → `store_memory`.
pub fn next_node(node: &str, state: &GaiaState) -> Option<&'static str> {
    match node {
        "__start__" | "filter_messages" | "trim_messages" => {
            Some(prune_route(state).unwrap_or("memory_retrieval"))
        }
        "memory_retrieval" | "tools" => Some("agent"),
        "agent" if wants_tools(state) => Some("tools"),
        "agent" => Some("store_memory"),
        _ => None,
    }
}

/// True when the last message is an AI message with tool calls.
fn wants_tools(state: &GaiaState) -> bool {
    state.messages.last().is_some_and(|message| {
        message.kind() == MessageKind::Ai && !message.tool_calls().is_empty()
    })
}

/// The words of four letters or more, lowercased: what the simulated
/// model looks for, and what the stand-in embedding counts.
fn keywords(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|word| word.chars().count() >= 4)
        .map(str::to_lowercase)
        .collect()
}

/// The simulated calendar: the events `CUSTOM_FETCH_EVENTS` returns.
pub fn fetch_events(args: &Value) -> Value {
    json!({
        "time_min": args.get("time_min").cloned().unwrap_or(Value::Null),
        "events": [
            {"summary": "Team standup", "start": "2024-01-02T09:00:00Z"},
            {"summary": "Design review", "start": "2024-01-02T14:00:00Z"}
        ]
    })
}

/// One node execution: the node, its update, and the full state after it.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeRun {
    /// The node that ran.
    pub node: &'static str,
    /// What it returned (a `stream_mode="updates"` chunk).
    pub delta: GaiaStateDelta,
    /// The state after its update (a `stream_mode="values"` chunk).
    pub values: Value,
}

/// One invocation of the graph, recorded for streaming.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    /// The state once the input was applied (the first `values` chunk).
    pub input_values: Value,
    /// The nodes, in order.
    pub steps: Vec<NodeRun>,
}

/// LangGraph's stream modes that GAIA uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamMode {
    /// `"updates"`: `{node: update}` after each node.
    Updates,
    /// `"values"`: the full state after the input and after each node.
    Values,
}

impl Run {
    /// The `stream_mode="updates"` chunks: `{node_name: delta}`, the delta
    /// serialized with serde (an overwrite as `{"__overwrite__": ...}`).
    ///
    /// # Errors
    ///
    /// When a delta holds a value with no JSON form (none of this state's do).
    pub fn updates(&self) -> Result<Vec<Value>, serde_json::Error> {
        self.steps
            .iter()
            .map(|step| Ok(json!({ step.node: serde_json::to_value(&step.delta)? })))
            .collect()
    }

    /// The `stream_mode="values"` chunks: [`State::to_json`] after the
    /// input and after each node.
    pub fn values(&self) -> Vec<Value> {
        let after_nodes = self.steps.iter().map(|step| step.values.clone());
        std::iter::once(self.input_values.clone())
            .chain(after_nodes)
            .collect()
    }

    /// The chunks of one stream mode.
    ///
    /// # Errors
    ///
    /// As [`Run::updates`].
    pub fn stream(&self, mode: StreamMode) -> Result<Vec<Value>, serde_json::Error> {
        match mode {
            StreamMode::Updates => self.updates(),
            StreamMode::Values => Ok(self.values()),
        }
    }

    /// The SSE events of the document's `execute_graph_streaming`: the
    /// content of each new AI message, its tool calls, then `[DONE]`.
    ///
    /// The Python tests `"messages" in chunk`, but an `updates` chunk is
    /// keyed by node name, so it would never match; this reads each node's
    /// update instead. An overwrite (trimming) streams nothing: it adds no
    /// new message.
    pub fn sse_events(&self) -> Vec<String> {
        let mut events: Vec<String> = self
            .steps
            .iter()
            .flat_map(|step| update_sse_events(&step.delta))
            .collect();
        events.push(SSE_DONE.to_owned());
        events
    }
}

/// The SSE event that ends `execute_graph_streaming`'s stream.
pub const SSE_DONE: &str = "data: [DONE]\n\n";

/// The SSE events of one node's update (`execute_graph_streaming`'s loop
/// body): for each new AI message it writes, its content, then its tool
/// calls. An overwrite (trimming) adds no new message and streams nothing.
pub fn update_sse_events(delta: &GaiaStateDelta) -> Vec<String> {
    let written = delta.get_messages().map_or(&[][..], Written::updates);
    written.iter().flatten().flat_map(message_events).collect()
}

fn message_events(message: &Message) -> Vec<String> {
    if message.kind() != MessageKind::Ai {
        return Vec::new();
    }
    let mut events = Vec::new();
    if !message.content().is_empty() {
        events.push(sse(&json!({"content": message.text()})));
    }
    if !message.tool_calls().is_empty() {
        let calls: Vec<Value> = message.tool_calls().iter().map(tool_call_json).collect();
        events.push(sse(&json!({"tool_calls": calls})));
    }
    events
}

fn tool_call_json(call: &ToolCall) -> Value {
    json!({"id": call.id, "name": call.name, "args": call.args})
}

fn sse(data: &Value) -> String {
    format!("data: {data}\n\n")
}

/// Why a run failed.
#[derive(Debug)]
pub enum RunError {
    /// A node's update was refused.
    State(StateError),
    /// The run went past [`RECURSION_LIMIT`] nodes.
    RecursionLimit(usize),
    /// A node name the graph does not know.
    UnknownNode(String),
    /// A step could not be checkpointed ([`Gaia::run_stored`]): the
    /// reducers refused it ([`StoreError::State`]), another writer moved
    /// the thread on ([`StoreError::is_conflict`]), or the backend failed.
    /// The thread and its state are as after the last stored step.
    Store(StoreError),
    /// The long-term memory failed (searching or storing the user's
    /// memories in the store's items; see [`memory`]).
    Memory(StoreError),
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::State(error) => write!(f, "state update refused: {error}"),
            RunError::RecursionLimit(limit) => write!(f, "more than {limit} nodes in one run"),
            RunError::UnknownNode(node) => write!(f, "no node named {node:?}"),
            RunError::Store(error) => write!(f, "checkpoint failed: {error}"),
            RunError::Memory(error) => write!(f, "long-term memory failed: {error}"),
        }
    }
}

impl std::error::Error for RunError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RunError::State(error) => Some(error),
            RunError::Store(error) | RunError::Memory(error) => Some(error),
            _ => None,
        }
    }
}

impl From<StateError> for RunError {
    fn from(error: StateError) -> Self {
        RunError::State(error)
    }
}

impl From<StoreError> for RunError {
    fn from(error: StoreError) -> Self {
        RunError::Store(error)
    }
}

/// The simulated GAIA graph: the calendar, a model that answers by rule,
/// and a counter for deterministic message ids. The memories are not
/// here: they are the store's ([`memory`]), given to each run.
#[derive(Debug, Default)]
pub struct Gaia {
    next_id: u64,
}

impl Gaia {
    /// Applies `input` to `state` and runs the graph to its end, recording
    /// every node's update and the state after it (`graph.astream`). The
    /// user's memories are searched and stored in `store` (GAIA's
    /// `compile(store=store)`; see [`memory::indexed`]); the state is not
    /// stored.
    ///
    /// # Errors
    ///
    /// When an update is refused (the state is left as after the last
    /// accepted one), the memories cannot be read or stored, a node is
    /// unknown, or the run exceeds [`RECURSION_LIMIT`].
    pub async fn run(
        &mut self,
        store: &Store,
        state: &mut GaiaState,
        input: GaiaStateDelta,
        config: &RunnableConfig,
    ) -> Result<Run, RunError> {
        state.apply(input)?;
        let input_values = state.to_json()?;
        let mut steps = Vec::new();
        let mut node = next_node("__start__", state);
        while let Some(name) = node {
            if steps.len() == RECURSION_LIMIT {
                return Err(RunError::RecursionLimit(RECURSION_LIMIT));
            }
            let delta = self.run_node(store, name, state, config).await?;
            state.apply(delta.clone())?;
            steps.push(NodeRun {
                node: name,
                delta,
                values: state.to_json()?,
            });
            node = next_node(name, state);
        }
        Ok(Run {
            input_values,
            steps,
        })
    }

    /// [`Gaia::run`] on a checkpointed thread (GAIA's `PostgresSaver` at
    /// work), the memories in `store` (the thread's store, or another):
    /// `input` is one logged step (metadata `{"node": "__input__"}`),
    /// then every node's update is one step, its metadata `{"node": name}`.
    /// A step reaches the state only once it is stored, so the thread can
    /// be reopened from the store after any step. The [`Run`] recorded is
    /// the one [`Gaia::run`] records.
    ///
    /// A new turn on a resumed thread starts with
    /// [`Thread::begin_turn`] (a step of its own), as `run` on a bare state
    /// starts after [`State::begin_turn`].
    ///
    /// # Errors
    ///
    /// [`RunError::Store`] when a step is refused by the reducers or cannot
    /// be stored (the thread is left as after the last stored step); else as
    /// [`Gaia::run`].
    pub async fn run_stored(
        &mut self,
        store: &Store,
        thread: &mut Thread<GaiaState>,
        input: GaiaStateDelta,
        config: &RunnableConfig,
    ) -> Result<Run, RunError> {
        thread
            .with_metadata(json!({"node": INPUT}))
            .apply(input)
            .await?;
        let input_values = thread.state().to_json()?;
        let mut steps = Vec::new();
        let mut node = next_node("__start__", thread.state());
        while let Some(name) = node {
            if steps.len() == RECURSION_LIMIT {
                return Err(RunError::RecursionLimit(RECURSION_LIMIT));
            }
            let delta = self.run_node(store, name, thread.state(), config).await?;
            thread
                .with_metadata(json!({"node": name}))
                .apply(delta.clone())
                .await?;
            steps.push(NodeRun {
                node: name,
                delta,
                values: thread.state().to_json()?,
            });
            node = next_node(name, thread.state());
        }
        Ok(Run {
            input_values,
            steps,
        })
    }

    /// Runs and formats the SSE events (the document's
    /// `execute_graph_streaming`).
    ///
    /// # Errors
    ///
    /// As [`Gaia::run`].
    pub async fn execute_graph_streaming(
        &mut self,
        store: &Store,
        state: &mut GaiaState,
        initial_state: GaiaStateDelta,
        config: &RunnableConfig,
    ) -> Result<Vec<String>, RunError> {
        let run = self.run(store, state, initial_state, config).await?;
        Ok(run.sse_events())
    }

    /// Runs one node and returns its update, unapplied; the memory nodes
    /// read and write `store` ([`memory::memory_retrieval`],
    /// [`memory::store_memory`]).
    ///
    /// # Errors
    ///
    /// [`RunError::UnknownNode`] for a name the graph does not have;
    /// [`RunError::Memory`] when the store fails.
    pub async fn run_node(
        &mut self,
        store: &Store,
        node: &str,
        state: &GaiaState,
        config: &RunnableConfig,
    ) -> Result<GaiaStateDelta, RunError> {
        Ok(match node {
            "filter_messages" => filter_messages_node(state),
            "trim_messages" => trim_messages_node(state),
            "memory_retrieval" => {
                let id = self.id("sys");
                memory::memory_retrieval(store, state, config, id)
                    .await
                    .map_err(RunError::Memory)?
            }
            "agent" => self.agent(state, config),
            "tools" => self.tools(state),
            "store_memory" => memory::store_memory(store, state, config)
                .await
                .map_err(RunError::Memory)?,
            _ => return Err(RunError::UnknownNode(node.to_owned())),
        })
    }

    /// The next message id of this kind (`sys-1`, `ai-2`): one counter for
    /// the run's messages, so two runs from the same start write the same
    /// ids.
    fn id(&mut self, kind: &str) -> String {
        self.next_id += 1;
        format!("{kind}-{}", self.next_id)
    }

    /// The document's `my_node(state, config)`: reads the user's timezone,
    /// name and selected tool from the config, never from the state.
    fn agent(&mut self, state: &GaiaState, config: &RunnableConfig) -> GaiaStateDelta {
        let user = &config.configurable;
        let reply = match state.messages.last() {
            Some(last) if last.kind() == MessageKind::Tool => {
                self.calendar_answer(last, &user.user_timezone)
            }
            _ if wants_calendar(state, user.selected_tool.as_deref()) => self.calendar_call(state),
            _ => self.chat_answer(state, user.user_name.as_deref()),
        };
        GaiaState::delta().messages(vec![reply])
    }

    fn calendar_call(&mut self, state: &GaiaState) -> Message {
        let args = json!({"time_min": state.current_datetime});
        let call = ToolCall::new(FETCH_EVENTS, args).with_id(self.id("call"));
        Message::ai("I'll check your calendar")
            .with_tool_calls([call])
            .with_id(self.id("ai"))
    }

    fn calendar_answer(&mut self, result: &Message, timezone: &str) -> Message {
        let events: Value = serde_json::from_str(&result.text()).unwrap_or(Value::Null);
        let count = events["events"].as_array().map_or(0, Vec::len);
        let text =
            format!("You have {count} events tomorrow; I'll suggest a free slot in {timezone}.");
        Message::ai(text).with_id(self.id("ai"))
    }

    fn chat_answer(&mut self, state: &GaiaState, user_name: Option<&str>) -> Message {
        let name = user_name.unwrap_or("there");
        let text = match state.memories.as_slice() {
            [] => format!("Hi {name}! How can I help?"),
            memories => format!("Hi {name}! I remember: {}.", memories.join("; ")),
        };
        Message::ai(text).with_id(self.id("ai"))
    }

    /// Executes the tool calls of the last AI message.
    fn tools(&mut self, state: &GaiaState) -> GaiaStateDelta {
        let calls = state
            .messages
            .last()
            .map(Message::tool_calls)
            .unwrap_or_default();
        let results: Vec<Message> = calls
            .iter()
            .map(|call| {
                let call_id = call.id.clone().unwrap_or_else(|| call.name.clone());
                Message::tool(fetch_events(&call.args).to_string(), call_id)
                    .with_id(self.id("tool"))
            })
            .collect();
        GaiaState::delta().messages(results)
    }
}

/// Whether the simulated model calls the calendar: the query is about
/// scheduling, and the user did not pick another tool.
fn wants_calendar(state: &GaiaState, selected_tool: Option<&str>) -> bool {
    let about_calendar = keywords(&state.query)
        .iter()
        .any(|word| ["schedule", "meeting", "calendar", "events"].contains(&word.as_str()));
    about_calendar && selected_tool.is_none_or(|tool| tool == FETCH_EVENTS)
}

/// A PostgresSaver stand-in: one JSON snapshot per thread, written after a
/// run and read back to resume.
///
/// Kept to show what a checkpoint holds (and for the tests that compare
/// with it). The real checkpointer is now [`state_store`]:
/// `Store::postgres(url)` is `PostgresSaver` (`Store::sqlite(path)` on one
/// machine, `Store::memory()` in tests): the compiled graph
/// ([`graph::compile`]) logs the input and every superstep as steps of the
/// thread (`examples/gaia.rs`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Checkpointer {
    threads: BTreeMap<String, Value>,
}

impl Checkpointer {
    /// Saves a thread's state.
    ///
    /// # Errors
    ///
    /// A field with no JSON form ([`StateError::Serialize`]); nothing is
    /// saved then.
    pub fn put(&mut self, thread_id: &str, state: &GaiaState) -> Result<(), StateError> {
        self.threads.insert(thread_id.to_owned(), state.to_json()?);
        Ok(())
    }

    /// The saved values of a thread (`snapshot.values`).
    pub fn values(&self, thread_id: &str) -> Option<&Value> {
        self.threads.get(thread_id)
    }

    /// The saved state of a thread, decoded (`graph.aget_state(config)`).
    ///
    /// # Errors
    ///
    /// When the snapshot does not decode as a [`GaiaState`].
    pub fn get(&self, thread_id: &str) -> Result<Option<GaiaState>, StateError> {
        self.values(thread_id)
            .map(|values| GaiaState::from_json(values.clone()))
            .transpose()
    }
}

/// The walk-through of `examples/gaia.rs`: its thread, user and clock, the
/// agent config and what the memory already holds, shared with the tests
/// that replay it through the store.
pub mod demo {
    use super::{
        AgentOptions, ModelConfig, RunnableConfig, UsageMetadataCallbackHandler, User,
        build_agent_config, memory,
    };
    use state_store::{Store, StoreError};

    /// The conversation's thread id.
    pub const THREAD: &str = "conversation_123";
    /// The user's id (the second label of their memories' namespace).
    pub const USER_ID: &str = "user_456";
    /// The clock the nodes read.
    pub const NOW: &str = "2024-01-01T18:30:00+01:00";

    /// The `RunnableConfig` the graph runs with.
    pub fn config() -> RunnableConfig {
        let user = User {
            user_id: USER_ID.into(),
            name: Some("Ada".into()),
            email: Some("ada@example.com".into()),
            timezone: Some("Europe/Paris".into()),
        };
        let options = AgentOptions {
            user_model_config: Some(ModelConfig {
                model_name: "gpt-4o-mini".into(),
            }),
            usage_metadata_callback: Some(UsageMetadataCallbackHandler {
                name: "usage".into(),
            }),
            ..AgentOptions::default()
        };
        build_agent_config(THREAD, &user, NOW, options)
    }

    /// Another user's conversation.
    pub const OTHER_THREAD: &str = "conversation_789";
    /// Another user, in another time zone, who picked another tool: the
    /// same compiled graph serves them with their own config.
    pub const OTHER_USER_ID: &str = "user_789";

    /// The other user's `RunnableConfig`: Tokyo, and the mail tool picked
    /// in the UI (so the agent does not call the calendar).
    pub fn other_config() -> RunnableConfig {
        let user = User {
            user_id: OTHER_USER_ID.into(),
            name: Some("Kenji".into()),
            email: None,
            timezone: Some("Asia/Tokyo".into()),
        };
        let options = AgentOptions {
            selected_tool: Some("GMAIL_SEND_EMAIL".into()),
            ..AgentOptions::default()
        };
        build_agent_config(OTHER_THREAD, &user, "2024-01-02T08:00:00+09:00", options)
    }

    /// What the user said in an earlier conversation.
    pub const EARLIER: [&str; 2] = [
        "Prefers meeting slots in the afternoon",
        "Works with the design team",
    ];
    /// The earlier conversation.
    pub const EARLIER_THREAD: &str = "older_thread";

    /// The memory already knows two things about the user ([`EARLIER`],
    /// from [`EARLIER_THREAD`]): puts them in `store`.
    ///
    /// # Errors
    ///
    /// The store's (as [`memory::store_user_message_memory`]).
    pub async fn remember_earlier(store: &Store) -> Result<(), StoreError> {
        for text in EARLIER {
            memory::store_user_message_memory(store, USER_ID, text, EARLIER_THREAD).await?;
        }
        Ok(())
    }
}
