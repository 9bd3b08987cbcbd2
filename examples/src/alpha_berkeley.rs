//! The Alpha Berkeley framework's conversational state (seed 003), ported.
//!
//! The Python original is a LangGraph `MessagesState` subclass with a flat
//! list of prefixed fields (`task_*`, `planning_*`, `execution_*`,
//! `control_*`, `ui_*`, `runtime_*`). Only `capability_context_data`
//! persists across conversation turns, through the custom reducer
//! [`merge_capability_context_data`]; every other field is
//! execution-scoped and reset by `StateManager.create_fresh_state` at each
//! turn. Here that split is one struct attribute, `#[state(scope = turn)]`,
//! with `#[scope(persistent)]` on the fields that carry over, and
//! `create_fresh_state` is [`State::begin_turn`] (see [`create_fresh_state`]
//! for the equivalence).
//!
//! The event lists `status_updates` and `progress_events` accumulate
//! through `#[reducer(append)]` (LangGraph's `operator.add`) for the length
//! of a turn, then reset with the other execution fields. The seed's
//! comment calls them "Event accumulation" and its helpers' docstrings
//! count on "LangGraph's automatic list merging", but its declaration
//! forgets the `Annotated[..., operator.add]` that would do it: as
//! written, LangGraph would keep only the last node's event, and two
//! nodes reporting in one superstep would raise `InvalidUpdateError`.
//!
//! The conversation history is MessagesState's `messages` field with
//! `add_messages`. It is persistent too: the framework passes the fresh
//! state to a checkpointed graph, where `add_messages` appends the new user
//! message to the thread's history (the task extractor reads that history
//! when `task_depends_on_chat_history` is set). See [`invoke_input`].
//!
//! The graph of a run (task extraction, classification, orchestration,
//! the router as conditional edges, the capability nodes, the approval as
//! an interrupt), a `state_graph::StateGraph`, is in [`graph`]. On a store
//! thread, each conversation turn is one `invoke_thread`, which begins the
//! turn exactly as [`start_turn`] does.

pub mod graph;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use state_core::{Message, Messages, State, StateError};
use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

/// Python's `Dict[str, Any]`: a JSON object, keys in insertion order.
pub type JsonObject = Map<String, Value>;

/// Level three of the context data: one stored context, `{field: value}`.
pub type ContextFields = JsonObject;

/// Level two: the contexts of one type, `{context_key: {field: value}}`.
pub type ContextsByKey = BTreeMap<String, ContextFields>;

/// The persistent context store,
/// `{context_type: {context_key: {field: value}}}`. Types and keys are
/// sorted where Python keeps insertion order; the framework only looks
/// them up by name.
pub type CapabilityContextData = BTreeMap<String, ContextsByKey>;

/// An approval request waiting for the user. The seed imports
/// `ApprovalRequest` from `.execution` without showing it, so it is kept
/// as the JSON object it serializes to.
pub type ApprovalRequest = JsonObject;

/// The seed's `StateUpdate = Dict[str, Any]`: what a node returns. Here it
/// is the generated delta, so a misspelt key is a compile error.
pub type StateUpdate = AgentStateDelta;

/// Merges capability context data: the reducer that makes
/// `capability_context_data` accumulate across turns.
///
/// Ported from the seed's `merge_capability_context_data`, level by level:
/// 1. a `context_type` not yet stored is added (even with no contexts);
/// 2. within a type, new `context_key`s are added and the others kept;
/// 3. the `{field: value}` record of a `context_key` written again is
///    replaced as a whole: its old fields are not merged in.
///
/// The Python deep-copies both sides so that no caller sees its input
/// mutated; here the update is moved in, which gives the same guarantee.
pub fn merge_capability_context_data(
    existing: &mut CapabilityContextData,
    new: CapabilityContextData,
) {
    for (context_type, contexts) in new {
        let stored = existing.entry(context_type).or_default();
        // `extend` inserts each key, replacing a stored record whole.
        stored.extend(contexts);
    }
}

/// LangGraph-native conversational agent state with execution tracking.
///
/// Extends LangGraph's MessagesState. Only `capability_context_data`
/// (and the message history) persists across conversation turns; all
/// execution-related fields reset between graph invocations.
#[derive(state_core::AgentState, Debug, Clone, PartialEq)]
#[state(scope = turn)]
pub struct AgentState {
    /// Conversation history (MessagesState's field); LangGraph manages it.
    #[scope(persistent)]
    #[reducer(add_messages)]
    pub messages: Messages,

    // ===== PERSISTENT FIELD (accumulates across conversation) =====
    /// Core persistent context: {context_type: {context_key: {field: value}}}.
    #[scope(persistent)]
    #[reducer(with = merge_capability_context_data)]
    pub capability_context_data: CapabilityContextData,

    // ===== EXECUTION-SCOPED FIELDS (reset each invocation) =====
    /// Agent control state; resets to the configured defaults each turn.
    #[default(agent_control_defaults())]
    pub agent_control: JsonObject,
    /// Status update events: every node's event is appended (the seed's
    /// "Event accumulation"); reset each execution.
    #[reducer(append)]
    pub status_updates: Vec<JsonObject>,
    /// Progress events: appended like the status updates; reset each
    /// execution.
    #[reducer(append)]
    pub progress_events: Vec<JsonObject>,

    /// The task extracted from the conversation.
    pub task_current_task: Option<String>,
    /// Whether the task needs the chat history.
    pub task_depends_on_chat_history: bool,
    /// Whether the task needs the user's memory.
    pub task_depends_on_user_memory: bool,
    /// A custom message for task processing.
    pub task_custom_message: Option<String>,

    /// Capabilities selected by classification.
    pub planning_active_capabilities: Vec<String>,
    /// The orchestrator's plan.
    pub planning_execution_plan: Option<ExecutionPlan>,
    /// Index of the plan step to execute next.
    pub planning_current_step_index: usize,

    /// Results of the executed steps, by step context key.
    pub execution_step_results: JsonObject,
    /// The result of the last executed step.
    pub execution_last_result: Option<ExecutionResult>,
    /// Approval requests waiting for the user, by step.
    pub execution_pending_approvals: BTreeMap<String, ApprovalRequest>,
    /// When execution started (seconds since the epoch).
    pub execution_start_time: Option<f64>,
    /// Total execution time in seconds.
    pub execution_total_time: Option<f64>,

    /// True/False/None for approved/rejected/no-approval.
    pub approval_approved: Option<bool>,
    /// Direct payload access for an approved request.
    pub approved_payload: Option<JsonObject>,

    /// Whether classification must run again.
    pub control_needs_reclassification: bool,
    /// Why reclassification was requested.
    pub control_reclassification_reason: Option<String>,
    /// Reclassifications so far.
    pub control_reclassification_count: u32,
    /// Number of plans created by orchestrator for current task.
    pub control_plans_created_count: u32,
    /// Retries of the current step.
    pub control_current_step_retry_count: u32,
    /// Total retry count for current capability.
    pub control_retry_count: u32,
    /// Error state for manual retry handling.
    pub control_has_error: bool,
    /// Error details for retry logic.
    pub control_error_info: Option<JsonObject>,
    /// Last error information for retry logic.
    pub control_last_error: Option<JsonObject>,
    /// Maximum retries (typically 3).
    #[default(3)]
    pub control_max_retries: u32,
    /// Whether execution was stopped.
    pub control_is_killed: bool,
    /// Why execution was stopped.
    pub control_kill_reason: Option<String>,
    /// Whether the run waits for a validation.
    pub control_is_awaiting_validation: bool,
    /// What the pending validation is about.
    pub control_validation_context: Option<JsonObject>,
    /// When the validation was requested.
    pub control_validation_timestamp: Option<f64>,

    /// Links to notebooks produced this turn.
    pub ui_notebook_links: Vec<String>,
    /// Figures produced this turn.
    pub ui_captured_figures: Vec<String>,
    /// Context for the UI agent.
    pub ui_agent_context: Option<JsonObject>,

    /// Checkpoint metadata of the run.
    pub runtime_checkpoint_metadata: Option<JsonObject>,
    /// Runtime information.
    pub runtime_info: Option<JsonObject>,
}

/// The orchestrator's plan (the framework's `ExecutionPlan` TypedDict,
/// imported by the seed from `framework.base.planning`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ExecutionPlan {
    /// Ordered list of execution steps comprising the plan.
    pub steps: Vec<PlannedStep>,
}

/// One step of an [`ExecutionPlan`] (the framework's `PlannedStep`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PlannedStep {
    /// Unique key under which the step's result is stored.
    pub context_key: String,
    /// Name of the capability to execute.
    pub capability: String,
    /// Self-sufficient description of what the step must accomplish.
    pub task_objective: String,
    /// How to tell that the step succeeded.
    pub success_criteria: String,
    /// Context type where the result is stored (e.g. `PV_ADDRESSES`).
    pub expected_output: Option<String>,
    /// Capability-specific parameters.
    pub parameters: Option<JsonObject>,
    /// Inputs, as `{context_type: context_key}` mappings.
    pub inputs: Option<Vec<BTreeMap<String, String>>>,
}

/// The outcome of one execution (the framework's `ExecutionResult`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExecutionResult {
    /// Whether the execution completed without error.
    pub success: bool,
    /// Result data of a successful execution.
    pub data: Option<Value>,
    /// What went wrong in a failed execution.
    pub error: Option<ExecutionError>,
    /// Duration in seconds.
    pub execution_time: Option<f64>,
}

/// Why an execution failed (the framework's `ExecutionError`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExecutionError {
    /// How to recover: `retriable`, `replanning`, `critical`, ...
    pub severity: String,
    /// What happened.
    pub message: String,
}

/// The `agent_control` defaults, as the framework's
/// `get_agent_control_defaults` falls back to when its configuration
/// cannot be read (the seed leaves them to configuration).
pub fn agent_control_defaults() -> JsonObject {
    let defaults = json!({
        "planning_mode_enabled": false,
        "epics_writes_enabled": false,
        "approval_global_mode": "selective",
        "python_execution_approval_enabled": true,
        "python_execution_approval_mode": "all_code",
        "memory_approval_enabled": true,
        "max_reclassifications": 1,
        "max_planning_attempts": 2,
        "max_step_retries": 0,
        "max_execution_time_seconds": 300,
        "max_concurrent_classifications": 5,
    });
    match defaults {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

/// Python's `StateManager.create_fresh_state(user_input, current_state)`,
/// written out as the Python does it: every field at its default, the
/// user's message as the only message, and `capability_context_data`
/// carried over from `current_state`.
///
/// This is [`State::begin_turn`] spelt by hand. The state the graph then
/// runs on is this value fed to the checkpointed thread ([`invoke_input`]),
/// which is [`start_turn`] (`begin_turn` plus the user's message) except
/// for the event lists: their `append` reducer adds the fresh `[]` to the
/// last turn's events instead of clearing them, as `operator.add` would
/// in LangGraph. `begin_turn` resets a turn-scoped field whatever its
/// reducer. The integration tests check both statements.
pub fn create_fresh_state(
    user_input: impl Into<Message>,
    current_state: Option<&AgentState>,
) -> AgentState {
    let preserved = current_state
        .map(|state| state.capability_context_data.clone())
        .unwrap_or_default();
    AgentState {
        messages: Messages::from(vec![user_input.into()]),
        capability_context_data: preserved,
        agent_control: agent_control_defaults(),
        status_updates: Vec::new(),
        progress_events: Vec::new(),
        task_current_task: None,
        task_depends_on_chat_history: false,
        task_depends_on_user_memory: false,
        task_custom_message: None,
        planning_active_capabilities: Vec::new(),
        planning_execution_plan: None,
        planning_current_step_index: 0,
        execution_step_results: JsonObject::new(),
        execution_last_result: None,
        execution_pending_approvals: BTreeMap::new(),
        execution_start_time: None,
        execution_total_time: None,
        approval_approved: None,
        approved_payload: None,
        control_needs_reclassification: false,
        control_reclassification_reason: None,
        control_reclassification_count: 0,
        control_plans_created_count: 0,
        control_current_step_retry_count: 0,
        control_retry_count: 0,
        control_has_error: false,
        control_error_info: None,
        control_last_error: None,
        control_max_retries: 3,
        control_is_killed: false,
        control_kill_reason: None,
        control_is_awaiting_validation: false,
        control_validation_context: None,
        control_validation_timestamp: None,
        ui_notebook_links: Vec::new(),
        ui_captured_figures: Vec::new(),
        ui_agent_context: None,
        runtime_checkpoint_metadata: None,
        runtime_info: None,
    }
}

/// What LangGraph does with an input dict on a checkpointed thread: each
/// key goes through its channel's reducer (`add_messages` appends, the
/// context merge adds nothing new, the event lists append nothing, so
/// they keep the last turn's events) and the plain keys are overwritten.
/// That is `apply_json` of the whole input.
///
/// # Errors
///
/// A [`StateError`] if the input does not decode; the checkpoint is then
/// unchanged.
pub fn invoke_input(checkpoint: &mut AgentState, input: &AgentState) -> Result<(), StateError> {
    checkpoint.apply_json(input.to_json()?)
}

/// Starts a conversation turn the Rust way: reset the execution fields,
/// then add the user's message. This is what the graph's `invoke_thread`
/// does with the message as its input.
///
/// # Errors
///
/// A [`StateError`] if the message is refused (a removal of an id that is
/// not in the history).
pub fn start_turn(
    state: &mut AgentState,
    user_input: impl Into<Message>,
) -> Result<(), StateError> {
    state.begin_turn();
    state.apply(AgentState::delta().messages(vec![user_input.into()]))
}

/// Seconds since the epoch, as Python's `time.time()`; 0.0 if the clock
/// is set before 1970.
pub fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |elapsed| elapsed.as_secs_f64())
}

/// A status update event, as the seed's `create_status_update`: a delta
/// writing `status_updates` with one timestamped event, which the
/// `append` reducer adds to the turn's list. The metadata
/// pairs come last, so they may override the standard keys (as Python's
/// `**metadata` does).
pub fn create_status_update<'k>(
    message: &str,
    progress: f64,
    complete: bool,
    metadata: impl IntoIterator<Item = (&'k str, Value)>,
) -> StateUpdate {
    let event = event([
        ("message", json!(message)),
        ("progress", json!(progress)),
        ("complete", json!(complete)),
        ("timestamp", json!(now())),
    ]);
    AgentState::delta().status_updates(vec![with_metadata(event, metadata)])
}

/// A progress event, as the seed's `create_progress_event`: a delta
/// appending to `progress_events` one event whose `progress` is
/// `current / total`, or 0.0 when `total` is not positive.
pub fn create_progress_event<'k>(
    current: i64,
    total: i64,
    operation: &str,
    metadata: impl IntoIterator<Item = (&'k str, Value)>,
) -> StateUpdate {
    let event = event([
        ("current", json!(current)),
        ("total", json!(total)),
        ("operation", json!(operation)),
        ("progress", json!(progress_fraction(current, total))),
        ("timestamp", json!(now())),
    ]);
    AgentState::delta().progress_events(vec![with_metadata(event, metadata)])
}

/// `current / total` as Python's true division, guarded against zero.
fn progress_fraction(current: i64, total: i64) -> f64 {
    if total > 0 {
        current as f64 / total as f64
    } else {
        0.0
    }
}

fn event<const N: usize>(pairs: [(&str, Value); N]) -> JsonObject {
    pairs
        .into_iter()
        .map(|(key, value)| (key.to_owned(), value))
        .collect()
}

/// Adds the metadata after the standard keys; a repeated key keeps its
/// place and takes the metadata's value, as in a Python dict literal.
fn with_metadata<'k>(
    mut event: JsonObject,
    metadata: impl IntoIterator<Item = (&'k str, Value)>,
) -> JsonObject {
    for (key, value) in metadata {
        event.insert(key.to_owned(), value);
    }
    event
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(value: Value) -> ContextFields {
        match value {
            Value::Object(map) => map,
            other => panic!("not an object: {other}"),
        }
    }

    fn data(entries: &[(&str, &str, Value)]) -> CapabilityContextData {
        let mut out = CapabilityContextData::new();
        for (context_type, key, value) in entries {
            out.entry((*context_type).to_owned())
                .or_default()
                .insert((*key).to_owned(), fields(value.clone()));
        }
        out
    }

    #[test]
    fn level_one_adds_a_new_context_type() {
        let mut existing = data(&[("PV_ADDRESSES", "step1", json!({"pvs": ["SR:C01:MAG:1"]}))]);
        merge_capability_context_data(
            &mut existing,
            data(&[("ARCHIVER_DATA", "step2", json!({"samples": 10}))]),
        );
        assert_eq!(
            existing.keys().collect::<Vec<_>>(),
            ["ARCHIVER_DATA", "PV_ADDRESSES"]
        );
        assert_eq!(
            existing["PV_ADDRESSES"]["step1"]["pvs"],
            json!(["SR:C01:MAG:1"])
        );
    }

    #[test]
    fn level_one_keeps_an_empty_new_type() {
        // Python: `result[context_type] = {}` runs before the inner loop.
        let mut existing = CapabilityContextData::new();
        let new = CapabilityContextData::from([("EMPTY".to_owned(), ContextsByKey::new())]);
        merge_capability_context_data(&mut existing, new);
        assert_eq!(existing.get("EMPTY"), Some(&ContextsByKey::new()));
    }

    #[test]
    fn level_two_adds_keys_beside_the_existing_ones() {
        // The seed's first doctest: two keys under PV_ADDRESSES.
        let mut existing = data(&[("PV_ADDRESSES", "step1", json!({"pvs": ["SR:C01:MAG:1"]}))]);
        merge_capability_context_data(
            &mut existing,
            data(&[("PV_ADDRESSES", "step2", json!({"pvs": ["SR:C02:MAG:1"]}))]),
        );
        assert_eq!(existing["PV_ADDRESSES"].len(), 2);
        assert_eq!(
            existing["PV_ADDRESSES"]["step1"]["pvs"],
            json!(["SR:C01:MAG:1"])
        );
    }

    #[test]
    fn level_three_replaces_a_records_fields_whole() {
        // The seed's second doctest, plus a field only the old record had.
        let mut existing = data(&[("DATA", "key1", json!({"value": "old", "stale": 1}))]);
        merge_capability_context_data(
            &mut existing,
            data(&[("DATA", "key1", json!({"value": "new", "extra": "data"}))]),
        );
        assert_eq!(
            Value::Object(existing["DATA"]["key1"].clone()),
            json!({"value": "new", "extra": "data"})
        );
    }

    #[test]
    fn progress_is_a_guarded_fraction() {
        assert_eq!(progress_fraction(3, 10), 0.3);
        assert_eq!(progress_fraction(0, 0), 0.0);
        assert_eq!(progress_fraction(5, -1), 0.0);
    }

    #[test]
    fn metadata_overrides_a_standard_key_in_place() {
        let event = with_metadata(
            event([("message", json!("m")), ("progress", json!(0.5))]),
            [("progress", json!(1.0)), ("node", json!("n"))],
        );
        assert_eq!(
            event
                .iter()
                .map(|(k, v)| (k.as_str(), v.clone()))
                .collect::<Vec<_>>(),
            [
                ("message", json!("m")),
                ("progress", json!(1.0)),
                ("node", json!("n"))
            ]
        );
    }
}
