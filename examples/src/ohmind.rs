//! OHMind (seed 000): a supervisor routes each request about hydroxide
//! exchange membranes (HEMs) to a specialist agent. Long-running operations
//! wait for a human's approval, complex requests become a task plan run
//! step by step, and failed MCP tool calls are retried up to
//! [`MAX_RETRIES`] times.
//!
//! The Python helpers copy the whole state dict and modify the copy
//! (`updated = state.copy(); updated["next"] = ...; return updated`). Here a
//! helper returns a delta that names only what it writes; the runtime
//! applies it through each field's reducer. So `update_state_with_message`
//! needs no state at all (`messages` appends by itself), `add_mcp_result`
//! no longer copies the results map (`mcp_results` merges by key), and two
//! helpers' deltas combine with [`Delta::merge`], which refuses two writes
//! to the same last-write-wins field instead of letting one silently win.
//!
//! Each specialist agent is a ReAct agent ([`agents`]): a chat model (any
//! `state_agent::ChatModel`, [`Ohmind::with_model`]) with its MCP tool, a
//! `#[tool]`, bound, looping through a `ToolNode` (`tools_condition`)
//! until it answers; the agent's node runs it and writes OHMind's
//! bookkeeping (the tool's result in `mcp_results`, the artifact, the
//! route). Offline the model is [`agents::OhmindModel`], which calls its
//! tool with the request and answers with the tool's summary. The
//! supervisor's routing is by keyword, the MCP tools' results are fixed,
//! and failures are injected, so every offline run is deterministic.
//!
//! The graph runs as a [`state_graph::StateGraph`] ([`graph`]): the
//! supervisor's `next` routes through conditional edges, each agent is a
//! node, and a validation or a task plan waiting for the user's yes or no
//! pauses the run with a real interrupt (`ctx.interrupt`), answered by
//! `resume` on the thread. OHMind checkpoints with LangGraph's
//! `MemorySaver`; here the checkpointer is a [`state_store::Store`]: every
//! superstep is one logged step of the thread, and any process with the
//! store can resume it.
//!
//! [`Ohmind::run`] and [`Ohmind::run_turn`] are the same nodes driven by a
//! hand-written loop on a bare state, where the user's yes or no arrives as
//! the next turn's message and [`entry_node`] sends it to the node that
//! reads it; [`Ohmind::run_stored`] and [`Ohmind::run_turn_stored`] are
//! that loop with each node's delta logged as a step of a thread. The
//! tests drive them node by node, and check that the graph takes the same
//! steps.

use serde_json::{Map, Value, json};
use state_agent::ChatModel;
use state_core::{Delta, Message, MessageKind, Messages, State, StateError};
use state_graph::GraphError;
use state_store::{StoreError, Thread};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

pub mod agents;
pub mod graph;

/// The supervisor node; also the value of `next` that routes to it.
pub const SUPERVISOR: &str = "supervisor";
/// The value of `next` that ends the turn (or, with an active task plan,
/// hands back to the supervisor for the next step).
pub const FINISH: &str = "FINISH";
/// How many times a failed tool call is retried before giving up.
pub const MAX_RETRIES: u32 = 3;
/// Node executions allowed in one turn, as LangGraph's `recursion_limit`.
pub const RECURSION_LIMIT: usize = 25;

/// The node that plans complex requests.
pub const TASK_PLANNER: &str = "task_planner";
/// The node that summarizes a finished task plan and clears it.
pub const SUMMARY: &str = "summary";
/// The node that decides what to do after a tool failure.
pub const ERROR_HANDLER: &str = "error_handler";
/// The entry node when the user answers a validation request.
pub const HUMAN_VALIDATION: &str = "human_validation";
/// The entry node when the user answers a task-plan approval request.
pub const PLAN_APPROVAL: &str = "plan_approval";
/// The `"node"` metadata of a logged step that is the graph's input (the
/// user's message), not a node's update.
pub const INPUT: &str = "__input__";

/// Python's `Dict[str, Any]`: a JSON object, keys in insertion order.
///
/// (Also keeps clippy's `type_complexity` quiet about the code the derive
/// generates for `Option<Map<String, Value>>`.)
pub type Dict = Map<String, Value>;

/// The state shared by every OHMind agent (the document's `AgentState`
/// TypedDict), field for field.
///
/// Defaults are those of the document's `create_initial_state`. Every field
/// is persistent: the checkpointer carries all of them across turns, and the
/// validation and task-plan flags must survive until the user's next
/// message answers them.
#[derive(state_core::AgentState, Debug, Clone, PartialEq)]
pub struct AgentState {
    /// Conversation history with automatic message accumulation.
    #[reducer(add_messages)]
    pub messages: Messages,
    /// Next agent to route to (e.g., "hem_agent", "FINISH").
    #[default("supervisor")]
    pub next: String,
    /// Results from MCP tool calls, keyed by tool name.
    #[reducer(merge)]
    pub mcp_results: Dict,
    /// Retrieved documents with metadata.
    pub rag_context: Vec<Dict>,
    /// Flag indicating if validation is needed.
    pub validation_required: bool,
    /// User approval status (None=pending).
    pub validation_approved: Option<bool>,
    /// Message to display for validation.
    pub validation_message: String,
    /// Description of current operation.
    #[default("Initializing")]
    pub current_operation: String,
    /// Additional metadata (includes next_agent for routing).
    pub operation_metadata: Dict,
    /// Data for custom UI components (molecules, charts).
    #[reducer(merge)]
    pub artifacts: Dict,
    /// Error message if something went wrong.
    pub error: Option<String>,
    /// Number of retries for failed operations.
    pub retry_count: u32,
    /// Task plan with steps.
    pub task_plan: Option<Dict>,
    /// Path to task plan markdown file.
    pub task_plan_path: Option<String>,
    /// Current step number in task plan.
    pub current_step: u32,
    /// List of completed step numbers.
    #[reducer(append)]
    pub completed_steps: Vec<u32>,
    /// Flag for task plan approval.
    pub task_plan_needs_approval: bool,
    /// User approval status for task plan.
    pub task_plan_approved: Option<bool>,
}

/// One step of a task plan, read from the `steps` list of `task_plan`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanStep {
    /// The step number, from 1.
    pub step: u32,
    /// The agent that runs it.
    pub agent: String,
    /// What the step does.
    pub description: String,
}

impl AgentState {
    /// The agent recorded in `operation_metadata["next_agent"]`, where the
    /// supervisor notes who should run (or run again after an error or an
    /// approval).
    pub fn next_agent(&self) -> Option<&str> {
        self.operation_metadata
            .get("next_agent")
            .and_then(Value::as_str)
    }

    /// True when a task plan exists and is not waiting for approval.
    pub fn task_plan_active(&self) -> bool {
        self.task_plan.is_some() && !self.task_plan_needs_approval
    }

    /// True when a task plan waits for the user's yes or no.
    pub fn awaiting_plan_approval(&self) -> bool {
        self.task_plan.is_some()
            && self.task_plan_needs_approval
            && self.task_plan_approved.is_none()
    }

    /// The steps of the task plan; empty without a plan. Malformed entries
    /// are skipped (the plan is free-form JSON, as in the Python).
    pub fn plan_steps(&self) -> Vec<PlanStep> {
        let steps = self
            .task_plan
            .as_ref()
            .and_then(|plan| plan.get("steps"))
            .and_then(Value::as_array);
        steps
            .map(|steps| steps.iter().filter_map(parse_step).collect())
            .unwrap_or_default()
    }

    /// The task plan as the markdown written to `task_plan_path`.
    pub fn plan_markdown(&self) -> Option<String> {
        let plan = self.task_plan.as_ref()?;
        let goal = plan.get("goal").and_then(Value::as_str).unwrap_or("");
        let mut markdown = format!("# Task plan\n\nGoal: {goal}\n");
        for step in self.plan_steps() {
            let done = if self.completed_steps.contains(&step.step) {
                "x"
            } else {
                " "
            };
            markdown.push_str(&format!(
                "\n- [{done}] {}. {} ({})",
                step.step, step.description, step.agent
            ));
        }
        Some(markdown)
    }

    /// The text of the last message, if it came from the user.
    fn last_human_text(&self) -> Option<String> {
        self.messages
            .last()
            .filter(|message| message.kind() == MessageKind::Human)
            .map(Message::text)
    }
}

fn parse_step(value: &Value) -> Option<PlanStep> {
    Some(PlanStep {
        step: u32::try_from(value.get("step")?.as_u64()?).ok()?,
        agent: value.get("agent")?.as_str()?.to_owned(),
        description: value.get("description")?.as_str()?.to_owned(),
    })
}

// ---------------------------------------------------------------------------
// The document's helpers. Each returns a delta instead of a modified copy.
// ---------------------------------------------------------------------------

/// The state of a new conversation (the document's `create_initial_state`).
///
/// The Python spells out all 18 keys; here the `#[default]` attributes hold
/// them, so only the first message is written.
pub fn create_initial_state(user_message: &str) -> AgentState {
    AgentState {
        messages: Messages::from(vec![Message::human(user_message)]),
        ..AgentState::default()
    }
}

/// Adds a message and optionally routes (the document's
/// `update_state_with_message`). The Python concatenates the whole history
/// (`state["messages"] + [message]`); the `add_messages` reducer appends,
/// so this needs no state.
pub fn update_state_with_message(message: Message, next_agent: Option<&str>) -> AgentStateDelta {
    let delta = AgentState::delta().messages(vec![message]);
    match next_agent {
        Some(next) => delta.next(next),
        None => delta,
    }
}

/// True when validation is required and not yet approved or rejected (the
/// document's `should_continue_validation`).
pub fn should_continue_validation(state: &AgentState) -> bool {
    state.validation_required && state.validation_approved.is_none()
}

/// Marks that an operation requires human validation and ends the turn to
/// wait for the user (the document's `mark_validation_required`).
pub fn mark_validation_required(operation_description: &str, metadata: Dict) -> AgentStateDelta {
    AgentState::delta()
        .validation_required(true)
        .validation_approved(None)
        .validation_message(operation_description)
        .operation_metadata(metadata)
        .next(FINISH)
}

/// Records the user's decision: route to `next_agent` when approved, back
/// to the supervisor when not (the document's `mark_validation_complete`).
pub fn mark_validation_complete(approved: bool, next_agent: &str) -> AgentStateDelta {
    AgentState::delta()
        .validation_required(false)
        .validation_approved(approved)
        .next(if approved { next_agent } else { SUPERVISOR })
}

/// Adds the result of an MCP tool call (the document's `add_mcp_result`).
/// The delta holds one key; the `merge` reducer keeps the other tools'
/// results, which the Python preserved by copying the map.
pub fn add_mcp_result(tool_name: &str, result: Value) -> AgentStateDelta {
    AgentState::delta().mcp_results(single_entry(tool_name, result))
}

/// Adds an artifact for UI rendering (the document's `add_artifact`),
/// merged by id like [`add_mcp_result`].
pub fn add_artifact(artifact_id: &str, artifact_data: Value) -> AgentStateDelta {
    AgentState::delta().artifacts(single_entry(artifact_id, artifact_data))
}

fn single_entry(key: &str, value: Value) -> Dict {
    let mut map = Map::new();
    map.insert(key.to_owned(), value);
    map
}

// ---------------------------------------------------------------------------
// Task-plan transitions (the document's table).
// ---------------------------------------------------------------------------

/// `task_plan=None`, complex query detected: create the plan. The step
/// counter starts at 0 ("plan created") and the step list is emptied
/// wholesale, bypassing its `append` reducer.
pub fn create_task_plan(plan: Dict, path: &str) -> AgentStateDelta {
    AgentState::delta()
        .task_plan(Some(plan))
        .task_plan_path(path)
        .current_step(0)
        .overwrite_completed_steps(Vec::new())
}

/// `current_step=0`, plan created: execute step 1.
pub fn start_first_step() -> AgentStateDelta {
    AgentState::delta().current_step(1)
}

/// `current_step=N`, step N completes: add N to `completed_steps` (the
/// `append` reducer adds it) and move to step N + 1.
pub fn complete_step(state: &AgentState) -> AgentStateDelta {
    let done = state.current_step;
    AgentState::delta()
        .push_completed_steps(done)
        .current_step(done + 1)
}

/// `completed_steps` full, all steps done: clear the plan (the summary node
/// adds the summary message).
pub fn clear_task_plan() -> AgentStateDelta {
    AgentState::delta()
        .task_plan(None)
        .task_plan_path(None)
        .current_step(0)
        .overwrite_completed_steps(Vec::new())
        .task_plan_needs_approval(false)
}

/// True when every step of the plan is in `completed_steps`.
pub fn all_steps_complete(state: &AgentState) -> bool {
    let steps = state.plan_steps();
    !steps.is_empty()
        && steps
            .iter()
            .all(|step| state.completed_steps.contains(&step.step))
}

// ---------------------------------------------------------------------------
// Routing.
// ---------------------------------------------------------------------------

/// The first node of a turn: an answer to a pending validation or plan
/// approval goes to the node that reads it, anything else to the supervisor.
pub fn entry_node(state: &AgentState) -> &'static str {
    if should_continue_validation(state) {
        HUMAN_VALIDATION
    } else if state.awaiting_plan_approval() {
        PLAN_APPROVAL
    } else {
        SUPERVISOR
    }
}

/// The conditional edge after every node: the next node, or `None` to end
/// the turn. `next="FINISH"` ends it, unless a task plan is active, which
/// goes back to the supervisor for the next step. A pending question to
/// the user or an unrecovered error always ends it.
pub fn route(state: &AgentState) -> Option<String> {
    if state.next != FINISH {
        return Some(state.next.clone());
    }
    let waiting = should_continue_validation(state) || state.awaiting_plan_approval();
    if !waiting && state.error.is_none() && state.task_plan_active() {
        Some(SUPERVISOR.to_owned())
    } else {
        None
    }
}

// ---------------------------------------------------------------------------
// The agents.
// ---------------------------------------------------------------------------

/// A specialist agent of the graph (its ReAct agent is in [`agents`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AgentSpec {
    /// The node name, written to `next` to route here.
    pub name: &'static str,
    /// The MCP tool it calls.
    pub tool: &'static str,
    /// What it does, as a task-plan step.
    pub task: &'static str,
    /// Words of a request that route to it.
    pub keywords: &'static [&'static str],
    /// Whether its tool runs only after the user approves.
    pub needs_validation: bool,
}

/// The specialist agents, in the supervisor's order of preference.
pub const AGENTS: &[AgentSpec] = &[
    AgentSpec {
        name: "hem_agent",
        tool: "hem_design",
        task: "Design candidate HEM cations",
        keywords: &[
            "hem",
            "membrane",
            "membranes",
            "cation",
            "cations",
            "design",
        ],
        needs_validation: false,
    },
    AgentSpec {
        name: "chemistry_agent",
        tool: "smiles_properties",
        task: "Compute molecular properties",
        keywords: &["smiles", "molecule", "properties", "logp", "weight"],
        needs_validation: false,
    },
    AgentSpec {
        name: "qm_agent",
        tool: "orca_single_point",
        task: "Compute the HOMO-LUMO gap with DFT",
        keywords: &["homo", "lumo", "dft", "orbital", "orbitals", "gap"],
        needs_validation: false,
    },
    AgentSpec {
        name: "md_agent",
        tool: "gromacs_md",
        task: "Simulate hydroxide conductivity with MD",
        keywords: &["md", "simulate", "simulation", "conductivity", "dynamics"],
        needs_validation: true,
    },
    AgentSpec {
        name: "rag_agent",
        tool: "rag_search",
        task: "Search the literature",
        keywords: &["paper", "papers", "literature", "review", "references"],
        needs_validation: false,
    },
];

/// The agent with this node name.
pub fn agent_spec(name: &str) -> Option<&'static AgentSpec> {
    AGENTS.iter().find(|spec| spec.name == name)
}

/// The agents a request mentions, in order of first mention (the simulated
/// supervisor LLM): none is small talk, one a simple query, more a complex
/// query that needs a task plan.
pub fn match_agents(request: &str) -> Vec<&'static AgentSpec> {
    let mut found: Vec<&'static AgentSpec> = Vec::new();
    for word in words(request) {
        let hit = AGENTS
            .iter()
            .find(|spec| spec.keywords.contains(&word.as_str()));
        if let Some(spec) = hit.filter(|spec| !found.contains(spec)) {
            found.push(spec);
        }
    }
    found
}

/// Whether the user's answer approves (the simulated reading of a yes/no).
pub fn is_approval(answer: &str) -> bool {
    let words = words(answer);
    let has = |set: &[&str]| words.iter().any(|word| set.contains(&word.as_str()));
    has(&[
        "yes", "y", "approve", "approved", "ok", "okay", "go", "sure",
    ]) && !has(&["no", "not", "don", "cancel", "reject", "stop"])
}

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// What a simulated MCP tool returns.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// The result, stored under the tool's name in `mcp_results`.
    pub result: Value,
    /// The artifact's id in `artifacts`.
    pub artifact_id: &'static str,
    /// The artifact, for the UI.
    pub artifact: Value,
    /// The agent's answer.
    pub summary: &'static str,
}

/// The fixed output of each simulated MCP tool.
pub fn tool_output(tool: &str) -> ToolOutput {
    match tool {
        "hem_design" => ToolOutput {
            result: json!({"candidates": [
                {"smiles": "C[N+](C)(C)Cc1ccccc1", "score": 0.87},
                {"smiles": "C[n+]1ccn(C)c1C", "score": 0.81}
            ]}),
            artifact_id: "hem_candidates",
            artifact: json!({"type": "molecule_grid", "smiles": ["C[N+](C)(C)Cc1ccccc1", "C[n+]1ccn(C)c1C"]}),
            summary: "Two cation candidates; benzyltrimethylammonium scores best (0.87).",
        },
        "smiles_properties" => ToolOutput {
            result: json!({"molecular_weight": 150.24, "logp": -1.9}),
            artifact_id: "properties_table",
            artifact: json!({"type": "table", "rows": [["MW", 150.24], ["logP", -1.9]]}),
            summary: "MW 150.24 g/mol, logP -1.9.",
        },
        "orca_single_point" => ToolOutput {
            result: json!({"homo_ev": -6.12, "lumo_ev": -0.95, "gap_ev": 5.17}),
            artifact_id: "orbital_chart",
            artifact: json!({"type": "chart", "kind": "orbital_levels", "values": [-6.12, -0.95]}),
            summary: "HOMO -6.12 eV, LUMO -0.95 eV: a 5.17 eV gap, chemically stable.",
        },
        "gromacs_md" => ToolOutput {
            result: json!({"conductivity_mS_cm": 112.0, "water_uptake": 0.42, "ns": 10}),
            artifact_id: "conductivity_chart",
            artifact: json!({"type": "chart", "kind": "conductivity_vs_time"}),
            summary: "Simulated OH- conductivity: 112 mS/cm at 80 °C.",
        },
        _ => ToolOutput {
            result: json!({"documents": 2}),
            artifact_id: "references",
            artifact: json!({"type": "reference_list", "count": 2}),
            summary: "Two relevant papers on alkaline-stable cations.",
        },
    }
}

/// The documents the simulated `rag_search` retrieves.
pub fn rag_documents() -> Vec<Dict> {
    let docs = [
        json!({"title": "Alkaline stability of quaternary ammonium cations", "source": "J. Membr. Sci.", "score": 0.92}),
        json!({"title": "Imidazolium-based anion exchange membranes", "source": "Macromolecules", "score": 0.85}),
    ];
    docs.into_iter()
        .filter_map(|doc| doc.as_object().cloned())
        .collect()
}

/// One node execution of a turn: the node and the delta it returned.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// The node that ran.
    pub node: String,
    /// What it wrote.
    pub delta: AgentStateDelta,
}

/// Why a turn could not run.
#[derive(Debug)]
pub enum RunError {
    /// A delta was refused (a bug in a node).
    State(StateError),
    /// `next` named a node that does not exist.
    UnknownNode(String),
    /// The turn ran more nodes than [`RECURSION_LIMIT`].
    RecursionLimit(usize),
    /// A step could not be checkpointed ([`Ohmind::run_stored`]): the
    /// reducers refused it ([`StoreError::State`]), another writer moved
    /// the thread on ([`StoreError::is_conflict`]), or the backend failed.
    /// The thread and its state are as after the last stored step.
    Store(StoreError),
    /// An agent's run failed: its model's error (a provider's), or the
    /// agent's own recursion limit.
    Agent(GraphError),
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::State(error) => write!(f, "state update refused: {error}"),
            RunError::UnknownNode(node) => write!(f, "no node named {node:?}"),
            RunError::RecursionLimit(limit) => write!(f, "more than {limit} steps in one turn"),
            RunError::Store(error) => write!(f, "checkpoint failed: {error}"),
            RunError::Agent(error) => write!(f, "the agent's run failed: {error}"),
        }
    }
}

impl std::error::Error for RunError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RunError::State(error) => Some(error),
            RunError::Store(error) => Some(error),
            RunError::Agent(error) => Some(error),
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

/// The OHMind graph's services: the agents' chat model, the MCP tools'
/// injected failures, and a counter for deterministic message ids.
pub struct Ohmind {
    model: Arc<dyn ChatModel>,
    failures: agents::Failures,
    require_plan_approval: bool,
    next_id: u64,
    plans: u32,
}

impl Default for Ohmind {
    fn default() -> Self {
        Ohmind::with_model(agents::OhmindModel::new())
    }
}

impl fmt::Debug for Ohmind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ohmind")
            .field("model", &(self.model.provider(), self.model.model()))
            .field("failures", &self.failures)
            .field("require_plan_approval", &self.require_plan_approval)
            .field("next_id", &self.next_id)
            .field("plans", &self.plans)
            .finish()
    }
}

/// What an agent's node does first ([`Ohmind::agent_start`]): answer at
/// once (ask for validation), or run the agent's model and tool.
pub enum AgentStart {
    /// The node's delta, without the model (a validation to ask for).
    Done(Box<AgentStateDelta>),
    /// Run the agent ([`agents::run_agent`]) on this request, then
    /// [`Ohmind::agent_finish`] with its messages.
    Run {
        /// The agents' model.
        model: Arc<dyn ChatModel>,
        /// The injected failures.
        failures: agents::Failures,
        /// What the agent is asked.
        request: String,
    },
}

impl Ohmind {
    /// A graph whose tools always succeed and whose plans auto-execute,
    /// its agents on the offline model ([`agents::OhmindModel`]).
    pub fn new() -> Self {
        Self::default()
    }

    /// The app with `model` as its agents' model (`ChatOpenAI::new(..)`,
    /// `ChatAnthropic::new(..)`, or any `ChatModel`).
    pub fn with_model(model: impl ChatModel) -> Self {
        Ohmind {
            model: Arc::new(model),
            failures: agents::Failures::default(),
            require_plan_approval: false,
            next_id: 0,
            plans: 0,
        }
    }

    /// Task plans wait for the user's approval before running.
    #[must_use]
    pub fn with_plan_approval(mut self) -> Self {
        self.require_plan_approval = true;
        self
    }

    /// Makes the next `times` calls of `tool` fail.
    pub fn fail_next(&mut self, tool: &str, times: u32) {
        let mut failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        failures.insert(tool.to_owned(), times);
    }

    /// Runs one turn for a new user message: the message is added, then
    /// nodes run from [`entry_node`] until [`route`] ends the turn.
    ///
    /// # Errors
    ///
    /// As [`Ohmind::run`].
    pub async fn run_turn(
        &mut self,
        state: &mut AgentState,
        user_message: &str,
    ) -> Result<Vec<Step>, RunError> {
        let message = self.user_message(user_message);
        state.apply(update_state_with_message(message, None))?;
        self.run(state).await
    }

    /// Runs nodes from [`entry_node`] until [`route`] ends the turn (for a
    /// state whose last message is already the user's, such as
    /// [`create_initial_state`]'s).
    ///
    /// # Errors
    ///
    /// When a delta is refused (the state is left as after the last accepted
    /// one), `next` names no node, or the turn exceeds [`RECURSION_LIMIT`].
    pub async fn run(&mut self, state: &mut AgentState) -> Result<Vec<Step>, RunError> {
        let mut node = entry_node(state).to_owned();
        let mut steps = Vec::new();
        while steps.len() < RECURSION_LIMIT {
            let delta = self.run_node(&node, state).await?;
            state.apply(delta.clone())?;
            steps.push(Step { node, delta });
            match route(state) {
                Some(next) => node = next,
                None => return Ok(steps),
            }
        }
        Err(RunError::RecursionLimit(RECURSION_LIMIT))
    }

    /// [`Ohmind::run_turn`] on a checkpointed thread: the user's message is
    /// one logged step (metadata `{"node": "__input__"}`), then the turn
    /// runs as [`Ohmind::run_stored`] does.
    ///
    /// The message id comes from the same counter as in `run_turn`, so two
    /// apps in the same position produce the same steps either way.
    ///
    /// # Errors
    ///
    /// As [`Ohmind::run_stored`].
    pub async fn run_turn_stored(
        &mut self,
        thread: &mut Thread<AgentState>,
        user_message: &str,
    ) -> Result<Vec<Step>, RunError> {
        let message = self.user_message(user_message);
        thread
            .with_metadata(json!({"node": INPUT}))
            .apply(update_state_with_message(message, None))
            .await?;
        self.run_stored(thread).await
    }

    /// [`Ohmind::run`] on a checkpointed thread (LangGraph's checkpointer
    /// at work): nodes run from [`entry_node`] on the thread's state until
    /// [`route`] ends the turn, and each node's delta is one logged step,
    /// its metadata `{"node": name}` (see [`state_store::Store::history`]).
    /// A step reaches the state only once it is stored, so the thread can
    /// be reopened from the store after any step.
    ///
    /// # Errors
    ///
    /// [`RunError::Store`] when a step is refused by the reducers or cannot
    /// be stored (the thread is left as after the last stored step); else as
    /// [`Ohmind::run`].
    pub async fn run_stored(
        &mut self,
        thread: &mut Thread<AgentState>,
    ) -> Result<Vec<Step>, RunError> {
        let mut node = entry_node(thread.state()).to_owned();
        let mut steps = Vec::new();
        while steps.len() < RECURSION_LIMIT {
            let delta = self.run_node(&node, thread.state()).await?;
            thread
                .with_metadata(json!({"node": node.as_str()}))
                .apply(delta.clone())
                .await?;
            steps.push(Step { node, delta });
            match route(thread.state()) {
                Some(next) => node = next,
                None => return Ok(steps),
            }
        }
        Err(RunError::RecursionLimit(RECURSION_LIMIT))
    }

    /// Runs one node on `state` and returns its delta (unapplied).
    ///
    /// # Errors
    ///
    /// [`RunError::UnknownNode`] for a name that is no node,
    /// [`RunError::State`] when combining a node's helper deltas conflicts,
    /// and [`RunError::Agent`] when an agent's run fails (its model's
    /// error).
    pub async fn run_node(
        &mut self,
        node: &str,
        state: &AgentState,
    ) -> Result<AgentStateDelta, RunError> {
        match agent_spec(node) {
            Some(spec) => self.agent(spec, state).await,
            None => self.run_control_node(node, state),
        }
    }

    /// Runs one node that calls no model (the supervisor, the task
    /// planner, the error handler, the summary, and the validation and
    /// plan answers read from the last message) and returns its delta.
    ///
    /// # Errors
    ///
    /// [`RunError::UnknownNode`] for any other name (an agent's too), and
    /// [`RunError::State`] when combining a node's helper deltas conflicts.
    pub fn run_control_node(
        &mut self,
        node: &str,
        state: &AgentState,
    ) -> Result<AgentStateDelta, RunError> {
        let delta = match node {
            SUPERVISOR => self.supervisor(state),
            TASK_PLANNER => self.task_planner(state),
            SUMMARY => self.summary(state)?,
            ERROR_HANDLER => self.error_handler(state),
            HUMAN_VALIDATION => self.human_validation(state)?,
            PLAN_APPROVAL => self.plan_approval(state)?,
            _ => return Err(RunError::UnknownNode(node.to_owned())),
        };
        Ok(delta)
    }

    fn id(&mut self) -> String {
        self.next_id += 1;
        format!("m{}", self.next_id)
    }

    /// The user's message, with the next id of the app's counter (as
    /// [`Ohmind::run_turn`] gives it), so that runs are reproducible.
    pub fn user_message(&mut self, text: &str) -> Message {
        Message::human(text).with_id(self.id())
    }

    fn ai(&mut self, author: &str, text: impl Into<String>) -> Message {
        Message::ai(text.into())
            .with_name(author)
            .with_id(self.id())
    }

    /// Routes: a retry after an error, the next step of an active plan, or
    /// a new request; after an answer, `FINISH`.
    fn supervisor(&mut self, state: &AgentState) -> AgentStateDelta {
        // An error with the user's message last is from an earlier turn.
        let retrying = state.error.is_some() && state.last_human_text().is_none();
        if let Some(agent) = state.next_agent().filter(|_| retrying) {
            let operation = format!(
                "Retrying {agent} (retry {} of {MAX_RETRIES})",
                state.retry_count
            );
            return AgentState::delta().next(agent).current_operation(operation);
        }
        if state.task_plan_active() {
            let step = advance_plan(state);
            // The user's message resumes a plan stopped by an error: the
            // step gets a fresh retry budget.
            return match state.last_human_text() {
                Some(_) => step.error(None).retry_count(0),
                None => step,
            };
        }
        match state.last_human_text() {
            Some(request) => self.route_request(&request),
            None => AgentState::delta().next(FINISH).current_operation("Done"),
        }
    }

    /// A new request: a fresh error budget, and one agent, a plan, or a
    /// direct answer.
    fn route_request(&mut self, request: &str) -> AgentStateDelta {
        let fresh = AgentState::delta().error(None).retry_count(0);
        match match_agents(request).as_slice() {
            [] => {
                let help = "I can design HEM cations, compute properties, run DFT and MD, and search the literature.";
                fresh
                    .messages(vec![self.ai(SUPERVISOR, help)])
                    .next(FINISH)
                    .current_operation("Answered directly")
            }
            [spec] => fresh
                .next(spec.name)
                .current_operation(format!("Routing to {}", spec.name))
                .operation_metadata(metadata(spec.name, request)),
            _ => fresh
                .next(TASK_PLANNER)
                .current_operation("Planning a multi-step task"),
        }
    }

    /// Builds a plan with one step per agent the request mentions.
    fn task_planner(&mut self, state: &AgentState) -> AgentStateDelta {
        let request = state.last_human_text().unwrap_or_default();
        let agents = match_agents(&request);
        self.plans += 1;
        let path = format!("task_plans/plan_{}.md", self.plans);
        let listing: Vec<String> = agents
            .iter()
            .enumerate()
            .map(|(i, spec)| format!("{}. {}", i + 1, spec.task))
            .collect();
        let plan = create_task_plan(build_plan(&request, &agents), &path)
            .task_plan_needs_approval(self.require_plan_approval)
            .task_plan_approved(None)
            .current_operation(format!("Task plan with {} steps", agents.len()));
        if self.require_plan_approval {
            let ask = format!("Plan:\n{}\nShall I run it?", listing.join("\n"));
            plan.messages(vec![self.ai(TASK_PLANNER, ask)]).next(FINISH)
        } else {
            let note = format!("Plan (auto-executing):\n{}", listing.join("\n"));
            plan.messages(vec![self.ai(TASK_PLANNER, note)])
                .next(SUPERVISOR)
        }
    }

    /// The agent's node: asks for validation first when the tool needs it
    /// and no approval is on record; else runs the agent (its model, its
    /// tool) and records what it did.
    async fn agent(
        &mut self,
        spec: &AgentSpec,
        state: &AgentState,
    ) -> Result<AgentStateDelta, RunError> {
        match self.agent_start(spec, state)? {
            AgentStart::Done(delta) => Ok(*delta),
            AgentStart::Run {
                model,
                failures,
                request,
            } => {
                let messages = agents::run_agent(model, spec, &request, failures)
                    .await
                    .map_err(RunError::Agent)?;
                Ok(self.agent_finish(spec, state, messages)?)
            }
        }
    }

    /// The first half of an agent's node: the validation to ask for, or
    /// what to run the agent with (the graph's node runs it without
    /// holding the app's lock, then calls [`Ohmind::agent_finish`]).
    ///
    /// # Errors
    ///
    /// When the validation's deltas conflict (a bug in the node).
    pub fn agent_start(
        &mut self,
        spec: &AgentSpec,
        state: &AgentState,
    ) -> Result<AgentStart, StateError> {
        if spec.needs_validation && state.validation_approved != Some(true) {
            return self
                .ask_validation(spec, state)
                .map(|delta| AgentStart::Done(Box::new(delta)));
        }
        let request = match request_of(state) {
            request if request.is_empty() => state.last_human_text().unwrap_or_default(),
            request => request,
        };
        Ok(AgentStart::Run {
            model: self.model.clone(),
            failures: self.failures.clone(),
            request,
        })
    }

    /// The second half of an agent's node: the messages of its run (the
    /// model's replies named after the agent, keeping their ids; the tool
    /// messages, whose ids `add_messages` drew at random, given the next
    /// id of the app's counter, so that runs are reproducible), and
    /// OHMind's bookkeeping: a call its tool failed is an
    /// `error` and a route to the error handler (the tool message with
    /// `status: "error"` is in the conversation, as LangGraph's `ToolNode`
    /// writes it); a result goes to `mcp_results`, with its artifact, and
    /// the agent's answer ends the turn.
    ///
    /// # Errors
    ///
    /// When the helpers' deltas conflict (a bug in the node).
    pub fn agent_finish(
        &mut self,
        spec: &AgentSpec,
        state: &AgentState,
        messages: Vec<Message>,
    ) -> Result<AgentStateDelta, StateError> {
        let messages: Vec<Message> = messages
            .into_iter()
            .map(|message| match message.kind() {
                // The model's replies keep their ids: a run streamed in
                // `StreamMode::MESSAGES` has sent their tokens under them.
                MessageKind::Ai if message.id().is_some() => message.with_name(spec.name),
                MessageKind::Ai => message.with_id(self.id()).with_name(spec.name),
                _ => message.with_id(self.id()),
            })
            .collect();
        let answered = |m: &&Message| m.kind() == MessageKind::Tool && m.name() == Some(spec.tool);
        let failed = messages
            .iter()
            .filter(answered)
            .find(|m| m.extra().get("status") == Some(&json!("error")));
        let result = messages
            .iter()
            .filter(answered)
            .rfind(|m| m.extra().get("status") != Some(&json!("error")))
            .map(|m| serde_json::from_str(&m.text()).unwrap_or_else(|_| json!(m.text())));
        let Some(result) = result else {
            let reason = failed.map_or_else(
                || "the agent did not call its tool".to_owned(),
                agents::error_reason,
            );
            let error = format!("{}: {reason}", spec.tool);
            return Ok(AgentState::delta()
                .messages(messages)
                .error(error)
                .next(ERROR_HANDLER)
                .operation_metadata(metadata(spec.name, &request_of(state)))
                .current_operation(format!("{} failed", spec.tool)));
        };
        self.agent_success(spec, state, messages, result)
    }

    /// The helpers' deltas, combined: each writes its own fields, so
    /// `merge` cannot conflict (it would report it if two did).
    fn agent_success(
        &mut self,
        spec: &AgentSpec,
        state: &AgentState,
        messages: Vec<Message>,
        result: Value,
    ) -> Result<AgentStateDelta, StateError> {
        let output = tool_output(spec.tool);
        let mut delta = add_mcp_result(spec.tool, result)
            .merge(add_artifact(output.artifact_id, output.artifact))?
            .merge(AgentState::delta().messages(messages).next(FINISH))?
            .merge(
                AgentState::delta()
                    .error(None)
                    .retry_count(0)
                    .current_operation(format!("{} finished {}", spec.name, spec.tool)),
            )?;
        if spec.needs_validation {
            // An approval covers one operation: consume it.
            delta = delta.merge(AgentState::delta().validation_approved(None))?;
        }
        if spec.tool == "rag_search" {
            delta = delta.merge(AgentState::delta().rag_context(rag_documents()))?;
        }
        if state.task_plan_active() {
            delta = delta.merge(complete_step(state))?;
        }
        Ok(delta)
    }

    fn ask_validation(
        &mut self,
        spec: &AgentSpec,
        state: &AgentState,
    ) -> Result<AgentStateDelta, StateError> {
        let description = format!(
            "{} runs {} (about 6 hours of compute)",
            spec.name, spec.tool
        );
        let mut meta = metadata(spec.name, &request_of(state));
        meta.insert("tool".into(), json!(spec.tool));
        meta.insert("estimated_hours".into(), json!(6));
        let ask = self.ai(
            spec.name,
            format!("Approval needed: {description}. Reply yes or no."),
        );
        mark_validation_required(&description, meta).merge(
            AgentState::delta()
                .messages(vec![ask])
                .current_operation("Awaiting the user's approval"),
        )
    }

    /// Retries through the supervisor while the budget lasts; then gives up
    /// with an apology, keeping `error` for the UI.
    fn error_handler(&mut self, state: &AgentState) -> AgentStateDelta {
        if state.retry_count < MAX_RETRIES {
            let retry = state.retry_count + 1;
            return AgentState::delta()
                .retry_count(retry)
                .next(SUPERVISOR)
                .current_operation(format!("Retry {retry} of {MAX_RETRIES}"));
        }
        let agent = state.next_agent().unwrap_or("the agent").to_owned();
        let error = state.error.clone().unwrap_or_default();
        let apology = format!("{agent} failed after {MAX_RETRIES} retries: {error}");
        AgentState::delta()
            .messages(vec![self.ai(ERROR_HANDLER, apology)])
            .next(FINISH)
            .current_operation("Gave up")
    }

    /// Reads the user's yes or no to a pending validation: the last
    /// message, when the answer came as a new turn.
    fn human_validation(&mut self, state: &AgentState) -> Result<AgentStateDelta, StateError> {
        let approved = is_approval(&state.last_human_text().unwrap_or_default());
        self.decide_validation(state, approved)
    }

    /// The graph's `human_validation` node, once the run resumed with the
    /// user's answer to its interrupt ([`graph`]): the answer joins the
    /// conversation as a human message (an id from the same counter), then
    /// the decision is the one [`Ohmind::run_node`] makes when the answer
    /// came as a new turn.
    ///
    /// # Errors
    ///
    /// When the decision's deltas conflict (a bug in the node).
    pub fn answer_validation(
        &mut self,
        state: &AgentState,
        answer: &str,
    ) -> Result<AgentStateDelta, StateError> {
        let said = AgentState::delta().messages(vec![self.user_message(answer)]);
        let decision = self.decide_validation(state, is_approval(answer))?;
        said.merge(decision)
    }

    fn decide_validation(
        &mut self,
        state: &AgentState,
        approved: bool,
    ) -> Result<AgentStateDelta, StateError> {
        let next_agent = state.next_agent().unwrap_or(SUPERVISOR);
        let decision = mark_validation_complete(approved, next_agent);
        if approved {
            return Ok(
                decision.current_operation(format!("Approved: {}", state.validation_message))
            );
        }
        let note = self.ai(
            HUMAN_VALIDATION,
            format!("Cancelled: {}.", state.validation_message),
        );
        let decision = decision
            .messages(vec![note])
            .current_operation("Validation rejected");
        // A rejected step cannot complete, so its plan stops here.
        if state.task_plan.is_some() {
            return decision.merge(clear_task_plan());
        }
        Ok(decision)
    }

    /// Reads the user's yes or no to a pending task plan: the last message,
    /// when the answer came as a new turn.
    fn plan_approval(&mut self, state: &AgentState) -> Result<AgentStateDelta, StateError> {
        let approved = is_approval(&state.last_human_text().unwrap_or_default());
        self.decide_plan(approved)
    }

    /// The graph's `plan_approval` node, once the run resumed with the
    /// user's answer to its interrupt ([`graph`]); as
    /// [`Ohmind::answer_validation`].
    ///
    /// # Errors
    ///
    /// When the decision's deltas conflict (a bug in the node).
    pub fn answer_plan(&mut self, answer: &str) -> Result<AgentStateDelta, StateError> {
        let said = AgentState::delta().messages(vec![self.user_message(answer)]);
        let decision = self.decide_plan(is_approval(answer))?;
        said.merge(decision)
    }

    fn decide_plan(&mut self, approved: bool) -> Result<AgentStateDelta, StateError> {
        if approved {
            return Ok(AgentState::delta()
                .task_plan_needs_approval(false)
                .task_plan_approved(true)
                .next(SUPERVISOR)
                .current_operation("Task plan approved"));
        }
        let note = self.ai(PLAN_APPROVAL, "Plan discarded.");
        clear_task_plan().merge(
            AgentState::delta()
                .task_plan_approved(false)
                .messages(vec![note])
                .next(FINISH)
                .current_operation("Task plan rejected"),
        )
    }

    /// The plan is done: one summary message, and the plan cleared.
    fn summary(&mut self, state: &AgentState) -> Result<AgentStateDelta, StateError> {
        let lines: Vec<String> = state
            .plan_steps()
            .iter()
            .map(|step| summary_line(state, step))
            .collect();
        let text = format!("All {} steps complete.\n{}", lines.len(), lines.join("\n"));
        let summary = self.ai(SUMMARY, text);
        clear_task_plan().merge(
            update_state_with_message(summary, Some(FINISH))
                .current_operation("Task plan complete"),
        )
    }
}

/// The supervisor's move with an active plan: start step 1, route to the
/// current step's agent, or summarize when every step is done.
fn advance_plan(state: &AgentState) -> AgentStateDelta {
    if all_steps_complete(state) {
        return AgentState::delta()
            .next(SUMMARY)
            .current_operation("Summarizing the plan");
    }
    let number = state.current_step.max(1);
    let steps = state.plan_steps();
    let Some(step) = steps.iter().find(|step| step.step == number) else {
        // A plan without this step cannot advance: summarize what is done.
        return AgentState::delta()
            .next(SUMMARY)
            .current_operation("Plan ended early");
    };
    let delta = if state.current_step == 0 {
        start_first_step()
    } else {
        AgentState::delta()
    };
    delta
        .next(step.agent.as_str())
        .current_operation(format!(
            "Step {number}/{}: {}",
            steps.len(),
            step.description
        ))
        .operation_metadata(metadata(&step.agent, &step.description))
}

/// The request an agent works on: the current step's, or the one the
/// supervisor recorded.
fn request_of(state: &AgentState) -> String {
    state
        .operation_metadata
        .get("request")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn metadata(agent: &str, request: &str) -> Dict {
    let mut meta = Map::new();
    meta.insert("next_agent".into(), json!(agent));
    meta.insert("request".into(), json!(request));
    meta
}

fn build_plan(goal: &str, agents: &[&AgentSpec]) -> Dict {
    let steps: Vec<Value> = agents
        .iter()
        .zip(1..)
        .map(|(spec, step)| json!({"step": step, "agent": spec.name, "description": spec.task}))
        .collect();
    let mut plan = Map::new();
    plan.insert("goal".into(), json!(goal));
    plan.insert("steps".into(), Value::Array(steps));
    plan
}

fn summary_line(state: &AgentState, step: &PlanStep) -> String {
    let result = agent_spec(&step.agent)
        .and_then(|spec| state.mcp_results.get(spec.tool))
        .map(Value::to_string)
        .unwrap_or_else(|| "no result".to_owned());
    format!("{}. {}: {result}", step.step, step.description)
}

/// LangGraph's `MemorySaver` stand-in: one JSON snapshot per thread id,
/// written with [`State::to_json`] and read back with [`State::from_json`].
///
/// Kept to show what a checkpoint holds (and for the tests that compare
/// with it). The real checkpointer is now [`state_store`]:
/// `Store::memory()` is `MemorySaver`, `Store::sqlite(path)` and
/// `Store::postgres(url)` its durable siblings: the compiled graph
/// ([`graph::compile`]) logs every superstep as one step of the thread and
/// stores its pauses there (`examples/ohmind.rs`).
#[derive(Debug, Default, Clone)]
pub struct MemorySaver {
    threads: BTreeMap<String, Value>,
}

impl MemorySaver {
    /// Saves the state of a thread (a checkpoint).
    ///
    /// # Errors
    ///
    /// A field with no JSON form ([`StateError::Serialize`]); nothing is
    /// saved then.
    pub fn put(&mut self, thread_id: &str, state: &AgentState) -> Result<(), StateError> {
        self.threads.insert(thread_id.to_owned(), state.to_json()?);
        Ok(())
    }

    /// The saved state of a thread (`app.get_state(config)`), if any.
    ///
    /// # Errors
    ///
    /// When the snapshot does not decode as an [`AgentState`].
    pub fn get_state(&self, thread_id: &str) -> Result<Option<AgentState>, StateError> {
        self.threads
            .get(thread_id)
            .map(|snapshot| AgentState::from_json(snapshot.clone()))
            .transpose()
    }
}
