//! Shared by the benches: the Alpha Berkeley-sized state (40 fields, 35 of
//! them turn-scoped) twice, once derived and once written by hand with the
//! same semantics, plus the data the workloads use.
//!
//! The state is `examples/src/alpha_berkeley.rs`'s `AgentState` (a bench
//! cannot depend on the examples crate) with one more persistent field,
//! `session_id`, and three of its fields made persistent
//! (`runtime_checkpoint_metadata`, `runtime_info`, `ui_agent_context`), so
//! that it has 40 fields of which 35 are turn-scoped.
//!
//! `paired` runs two sides of a workload interleaved.

#![allow(dead_code)]

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use state_core::reducer::{AddMessages, Reducer, Writes, add_messages};
use state_core::{AgentState, Message, Messages, State, StateError};
use std::collections::BTreeMap;

pub mod paired;

pub type JsonObject = Map<String, Value>;
pub type ContextFields = JsonObject;
pub type ContextsByKey = BTreeMap<String, ContextFields>;
pub type CapabilityContextData = BTreeMap<String, ContextsByKey>;
pub type ApprovalRequest = JsonObject;

/// The Alpha Berkeley custom reducer, as in the example.
pub fn merge_capability_context_data(
    existing: &mut CapabilityContextData,
    new: CapabilityContextData,
) {
    for (context_type, contexts) in new {
        existing.entry(context_type).or_default().extend(contexts);
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ExecutionPlan {
    pub steps: Vec<PlannedStep>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PlannedStep {
    pub context_key: String,
    pub capability: String,
    pub task_objective: String,
    pub success_criteria: String,
    pub expected_output: Option<String>,
    pub parameters: Option<JsonObject>,
    pub inputs: Option<Vec<BTreeMap<String, String>>>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExecutionResult {
    pub success: bool,
    pub data: Option<Value>,
    pub error: Option<ExecutionError>,
    pub execution_time: Option<f64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExecutionError {
    pub severity: String,
    pub message: String,
}

pub fn agent_control_defaults() -> JsonObject {
    match json!({
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
    }) {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

/// The derived state.
#[derive(AgentState, Debug, Clone, PartialEq)]
#[state(scope = turn)]
pub struct Berkeley {
    #[scope(persistent)]
    #[reducer(add_messages)]
    pub messages: Messages,
    #[scope(persistent)]
    #[reducer(with = merge_capability_context_data)]
    pub capability_context_data: CapabilityContextData,
    #[scope(persistent)]
    pub session_id: Option<String>,

    #[default(agent_control_defaults())]
    pub agent_control: JsonObject,
    pub status_updates: Vec<JsonObject>,
    pub progress_events: Vec<JsonObject>,

    pub task_current_task: Option<String>,
    pub task_depends_on_chat_history: bool,
    pub task_depends_on_user_memory: bool,
    pub task_custom_message: Option<String>,

    pub planning_active_capabilities: Vec<String>,
    pub planning_execution_plan: Option<ExecutionPlan>,
    pub planning_current_step_index: usize,

    pub execution_step_results: JsonObject,
    pub execution_last_result: Option<ExecutionResult>,
    pub execution_pending_approvals: BTreeMap<String, ApprovalRequest>,
    pub execution_start_time: Option<f64>,
    pub execution_total_time: Option<f64>,

    pub approval_approved: Option<bool>,
    pub approved_payload: Option<JsonObject>,

    pub control_needs_reclassification: bool,
    pub control_reclassification_reason: Option<String>,
    pub control_reclassification_count: u32,
    pub control_plans_created_count: u32,
    pub control_current_step_retry_count: u32,
    pub control_retry_count: u32,
    pub control_has_error: bool,
    pub control_error_info: Option<JsonObject>,
    pub control_last_error: Option<JsonObject>,
    #[default(3)]
    pub control_max_retries: u32,
    pub control_is_killed: bool,
    pub control_kill_reason: Option<String>,
    pub control_is_awaiting_validation: bool,
    pub control_validation_context: Option<JsonObject>,
    pub control_validation_timestamp: Option<f64>,

    pub ui_notebook_links: Vec<String>,
    pub ui_captured_figures: Vec<String>,
    #[scope(persistent)]
    pub ui_agent_context: Option<JsonObject>,

    #[scope(persistent)]
    pub runtime_checkpoint_metadata: Option<JsonObject>,
    #[scope(persistent)]
    pub runtime_info: Option<JsonObject>,
}

/// The 40 fields of [`Berkeley`], name and type, declared once for the
/// states that have no attributes on them ([`HandBerkeley`], [`Plain`],
/// [`HandPlain`]): calls `$then! { field: Type, ... }`.
macro_rules! berkeley_fields {
    ($then:ident) => {
        $then! {
            messages: Messages,
            capability_context_data: CapabilityContextData,
            session_id: Option<String>,
            agent_control: JsonObject,
            status_updates: Vec<JsonObject>,
            progress_events: Vec<JsonObject>,
            task_current_task: Option<String>,
            task_depends_on_chat_history: bool,
            task_depends_on_user_memory: bool,
            task_custom_message: Option<String>,
            planning_active_capabilities: Vec<String>,
            planning_execution_plan: Option<ExecutionPlan>,
            planning_current_step_index: usize,
            execution_step_results: JsonObject,
            execution_last_result: Option<ExecutionResult>,
            execution_pending_approvals: BTreeMap<String, ApprovalRequest>,
            execution_start_time: Option<f64>,
            execution_total_time: Option<f64>,
            approval_approved: Option<bool>,
            approved_payload: Option<JsonObject>,
            control_needs_reclassification: bool,
            control_reclassification_reason: Option<String>,
            control_reclassification_count: u32,
            control_plans_created_count: u32,
            control_current_step_retry_count: u32,
            control_retry_count: u32,
            control_has_error: bool,
            control_error_info: Option<JsonObject>,
            control_last_error: Option<JsonObject>,
            control_max_retries: u32,
            control_is_killed: bool,
            control_kill_reason: Option<String>,
            control_is_awaiting_validation: bool,
            control_validation_context: Option<JsonObject>,
            control_validation_timestamp: Option<f64>,
            ui_notebook_links: Vec<String>,
            ui_captured_figures: Vec<String>,
            ui_agent_context: Option<JsonObject>,
            runtime_checkpoint_metadata: Option<JsonObject>,
            runtime_info: Option<JsonObject>,
        }
    };
}

/// Declares [`HandBerkeley`] from the field list.
macro_rules! hand_berkeley {
    ($($field:ident: $ty:ty,)*) => {
        /// The same state written by hand: a plain struct.
        #[derive(Debug, Clone, PartialEq)]
        pub struct HandBerkeley {
            $(pub $field: $ty,)*
        }
    };
}

berkeley_fields!(hand_berkeley);

impl Default for HandBerkeley {
    fn default() -> Self {
        HandBerkeley {
            messages: Messages::default(),
            capability_context_data: CapabilityContextData::default(),
            session_id: None,
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
}

/// The hand-written delta: one `Option` per field (`Option<Option<T>>` for
/// an `Option<T>` field, so that a delta can clear it).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HandDelta {
    pub messages: Option<Vec<Message>>,
    pub capability_context_data: Option<CapabilityContextData>,
    pub session_id: Option<Option<String>>,
    pub agent_control: Option<JsonObject>,
    pub status_updates: Option<Vec<JsonObject>>,
    pub progress_events: Option<Vec<JsonObject>>,
    pub task_current_task: Option<Option<String>>,
    pub task_depends_on_chat_history: Option<bool>,
    pub task_depends_on_user_memory: Option<bool>,
    pub task_custom_message: Option<Option<String>>,
    pub planning_active_capabilities: Option<Vec<String>>,
    pub planning_execution_plan: Option<Option<ExecutionPlan>>,
    pub planning_current_step_index: Option<usize>,
    pub execution_step_results: Option<JsonObject>,
    pub execution_last_result: Option<Option<ExecutionResult>>,
    pub execution_pending_approvals: Option<BTreeMap<String, ApprovalRequest>>,
    pub execution_start_time: Option<Option<f64>>,
    pub execution_total_time: Option<Option<f64>>,
    pub approval_approved: Option<Option<bool>>,
    pub approved_payload: Option<Option<JsonObject>>,
    pub control_needs_reclassification: Option<bool>,
    pub control_reclassification_reason: Option<Option<String>>,
    pub control_reclassification_count: Option<u32>,
    pub control_plans_created_count: Option<u32>,
    pub control_current_step_retry_count: Option<u32>,
    pub control_retry_count: Option<u32>,
    pub control_has_error: Option<bool>,
    pub control_error_info: Option<Option<JsonObject>>,
    pub control_last_error: Option<Option<JsonObject>>,
    pub control_max_retries: Option<u32>,
    pub control_is_killed: Option<bool>,
    pub control_kill_reason: Option<Option<String>>,
    pub control_is_awaiting_validation: Option<bool>,
    pub control_validation_context: Option<Option<JsonObject>>,
    pub control_validation_timestamp: Option<Option<f64>>,
    pub ui_notebook_links: Option<Vec<String>>,
    pub ui_captured_figures: Option<Vec<String>>,
    pub ui_agent_context: Option<Option<JsonObject>>,
    pub runtime_checkpoint_metadata: Option<Option<JsonObject>>,
    pub runtime_info: Option<Option<JsonObject>>,
}

/// Moves `value` into `target` when the delta writes it.
#[inline(always)]
fn put<T>(target: &mut T, value: Option<T>) {
    if let Some(value) = value {
        *target = value;
    }
}

/// Folds a later replace-field write into a merged delta: a second write
/// is a concurrent write.
#[inline(always)]
fn once<T>(slot: &mut Option<T>, value: Option<T>, field: &str) -> Result<(), StateError> {
    if let Some(value) = value {
        if slot.is_some() {
            return Err(StateError::ConcurrentWrite {
                field: field.to_owned(),
            });
        }
        *slot = Some(value);
    }
    Ok(())
}

fn messages_error(source: state_core::ReduceError) -> StateError {
    StateError::Reduce {
        field: "messages".to_owned(),
        source,
    }
}

impl HandBerkeley {
    /// The hand-written `apply`: same semantics as the derived one. Only
    /// `add_messages` can fail and it is all-or-nothing itself, so it runs
    /// first; every other write then moves its value into place.
    pub fn apply(&mut self, d: HandDelta) -> Result<(), StateError> {
        let (messages, context, rest) = d.split();
        if let Some(update) = messages {
            add_messages(&mut self.messages, update).map_err(messages_error)?;
        }
        self.apply_rest(context, rest);
        Ok(())
    }

    /// The hand-written superstep: merge the deltas (a second write to a
    /// replace field is a concurrent write; message writes are concatenated
    /// while that is exact, i.e. while the earlier write removes no id, else
    /// kept apart and staged together), then apply once.
    pub fn apply_all(
        &mut self,
        deltas: impl IntoIterator<Item = HandDelta>,
    ) -> Result<(), StateError> {
        let mut message_writes: Vec<Vec<Message>> = Vec::new();
        let mut context: Option<CapabilityContextData> = None;
        let mut rest = Rest::default();
        for d in deltas {
            let (messages, new_context, d_rest) = d.split();
            if let Some(update) = messages {
                match message_writes.last_mut() {
                    Some(last) if !last.iter().any(removes_an_id) => last.extend(update),
                    _ => message_writes.push(update),
                }
            }
            if let Some(new) = new_context {
                match context.as_mut() {
                    Some(merged) => merge_capability_context_data(merged, new),
                    None => context = Some(new),
                }
            }
            rest.merge(d_rest)?;
        }
        let mut writes = message_writes.into_iter();
        if let Some(first) = writes.next() {
            let later: Vec<_> = writes.collect();
            if later.is_empty() {
                add_messages(&mut self.messages, first).map_err(messages_error)?;
            } else {
                let staged = AddMessages
                    .stage(&self.messages, Writes::new(first, later))
                    .map_err(messages_error)?;
                AddMessages.commit(&mut self.messages, staged);
            }
        }
        self.apply_rest(context, rest);
        Ok(())
    }

    /// The hand-written `begin_turn`: the 35 turn-scoped fields back to
    /// their defaults.
    pub fn begin_turn(&mut self) {
        self.agent_control = agent_control_defaults();
        self.status_updates = Vec::new();
        self.progress_events = Vec::new();
        self.task_current_task = None;
        self.task_depends_on_chat_history = false;
        self.task_depends_on_user_memory = false;
        self.task_custom_message = None;
        self.planning_active_capabilities = Vec::new();
        self.planning_execution_plan = None;
        self.planning_current_step_index = 0;
        self.execution_step_results = JsonObject::new();
        self.execution_last_result = None;
        self.execution_pending_approvals = BTreeMap::new();
        self.execution_start_time = None;
        self.execution_total_time = None;
        self.approval_approved = None;
        self.approved_payload = None;
        self.control_needs_reclassification = false;
        self.control_reclassification_reason = None;
        self.control_reclassification_count = 0;
        self.control_plans_created_count = 0;
        self.control_current_step_retry_count = 0;
        self.control_retry_count = 0;
        self.control_has_error = false;
        self.control_error_info = None;
        self.control_last_error = None;
        self.control_max_retries = 3;
        self.control_is_killed = false;
        self.control_kill_reason = None;
        self.control_is_awaiting_validation = false;
        self.control_validation_context = None;
        self.control_validation_timestamp = None;
        self.ui_notebook_links = Vec::new();
        self.ui_captured_figures = Vec::new();
    }

    fn apply_rest(&mut self, context: Option<CapabilityContextData>, r: Rest) {
        if let Some(new) = context {
            merge_capability_context_data(&mut self.capability_context_data, new);
        }
        put(&mut self.session_id, r.session_id);
        put(&mut self.agent_control, r.agent_control);
        put(&mut self.status_updates, r.status_updates);
        put(&mut self.progress_events, r.progress_events);
        put(&mut self.task_current_task, r.task_current_task);
        put(
            &mut self.task_depends_on_chat_history,
            r.task_depends_on_chat_history,
        );
        put(
            &mut self.task_depends_on_user_memory,
            r.task_depends_on_user_memory,
        );
        put(&mut self.task_custom_message, r.task_custom_message);
        put(
            &mut self.planning_active_capabilities,
            r.planning_active_capabilities,
        );
        put(&mut self.planning_execution_plan, r.planning_execution_plan);
        put(
            &mut self.planning_current_step_index,
            r.planning_current_step_index,
        );
        put(&mut self.execution_step_results, r.execution_step_results);
        put(&mut self.execution_last_result, r.execution_last_result);
        put(
            &mut self.execution_pending_approvals,
            r.execution_pending_approvals,
        );
        put(&mut self.execution_start_time, r.execution_start_time);
        put(&mut self.execution_total_time, r.execution_total_time);
        put(&mut self.approval_approved, r.approval_approved);
        put(&mut self.approved_payload, r.approved_payload);
        put(
            &mut self.control_needs_reclassification,
            r.control_needs_reclassification,
        );
        put(
            &mut self.control_reclassification_reason,
            r.control_reclassification_reason,
        );
        put(
            &mut self.control_reclassification_count,
            r.control_reclassification_count,
        );
        put(
            &mut self.control_plans_created_count,
            r.control_plans_created_count,
        );
        put(
            &mut self.control_current_step_retry_count,
            r.control_current_step_retry_count,
        );
        put(&mut self.control_retry_count, r.control_retry_count);
        put(&mut self.control_has_error, r.control_has_error);
        put(&mut self.control_error_info, r.control_error_info);
        put(&mut self.control_last_error, r.control_last_error);
        put(&mut self.control_max_retries, r.control_max_retries);
        put(&mut self.control_is_killed, r.control_is_killed);
        put(&mut self.control_kill_reason, r.control_kill_reason);
        put(
            &mut self.control_is_awaiting_validation,
            r.control_is_awaiting_validation,
        );
        put(
            &mut self.control_validation_context,
            r.control_validation_context,
        );
        put(
            &mut self.control_validation_timestamp,
            r.control_validation_timestamp,
        );
        put(&mut self.ui_notebook_links, r.ui_notebook_links);
        put(&mut self.ui_captured_figures, r.ui_captured_figures);
        put(&mut self.ui_agent_context, r.ui_agent_context);
        put(
            &mut self.runtime_checkpoint_metadata,
            r.runtime_checkpoint_metadata,
        );
        put(&mut self.runtime_info, r.runtime_info);
    }
}

fn removes_an_id(m: &Message) -> bool {
    m.is_removal() && !m.is_remove_all()
}

/// The replace fields of a [`HandDelta`] (all but the two reducer fields).
#[derive(Debug, Default)]
pub struct Rest {
    session_id: Option<Option<String>>,
    agent_control: Option<JsonObject>,
    status_updates: Option<Vec<JsonObject>>,
    progress_events: Option<Vec<JsonObject>>,
    task_current_task: Option<Option<String>>,
    task_depends_on_chat_history: Option<bool>,
    task_depends_on_user_memory: Option<bool>,
    task_custom_message: Option<Option<String>>,
    planning_active_capabilities: Option<Vec<String>>,
    planning_execution_plan: Option<Option<ExecutionPlan>>,
    planning_current_step_index: Option<usize>,
    execution_step_results: Option<JsonObject>,
    execution_last_result: Option<Option<ExecutionResult>>,
    execution_pending_approvals: Option<BTreeMap<String, ApprovalRequest>>,
    execution_start_time: Option<Option<f64>>,
    execution_total_time: Option<Option<f64>>,
    approval_approved: Option<Option<bool>>,
    approved_payload: Option<Option<JsonObject>>,
    control_needs_reclassification: Option<bool>,
    control_reclassification_reason: Option<Option<String>>,
    control_reclassification_count: Option<u32>,
    control_plans_created_count: Option<u32>,
    control_current_step_retry_count: Option<u32>,
    control_retry_count: Option<u32>,
    control_has_error: Option<bool>,
    control_error_info: Option<Option<JsonObject>>,
    control_last_error: Option<Option<JsonObject>>,
    control_max_retries: Option<u32>,
    control_is_killed: Option<bool>,
    control_kill_reason: Option<Option<String>>,
    control_is_awaiting_validation: Option<bool>,
    control_validation_context: Option<Option<JsonObject>>,
    control_validation_timestamp: Option<Option<f64>>,
    ui_notebook_links: Option<Vec<String>>,
    ui_captured_figures: Option<Vec<String>>,
    ui_agent_context: Option<Option<JsonObject>>,
    runtime_checkpoint_metadata: Option<Option<JsonObject>>,
    runtime_info: Option<Option<JsonObject>>,
}

impl HandDelta {
    /// The two reducer fields' writes, and the replace fields'.
    #[inline(always)]
    fn split(self) -> (Option<Vec<Message>>, Option<CapabilityContextData>, Rest) {
        let rest = Rest {
            session_id: self.session_id,
            agent_control: self.agent_control,
            status_updates: self.status_updates,
            progress_events: self.progress_events,
            task_current_task: self.task_current_task,
            task_depends_on_chat_history: self.task_depends_on_chat_history,
            task_depends_on_user_memory: self.task_depends_on_user_memory,
            task_custom_message: self.task_custom_message,
            planning_active_capabilities: self.planning_active_capabilities,
            planning_execution_plan: self.planning_execution_plan,
            planning_current_step_index: self.planning_current_step_index,
            execution_step_results: self.execution_step_results,
            execution_last_result: self.execution_last_result,
            execution_pending_approvals: self.execution_pending_approvals,
            execution_start_time: self.execution_start_time,
            execution_total_time: self.execution_total_time,
            approval_approved: self.approval_approved,
            approved_payload: self.approved_payload,
            control_needs_reclassification: self.control_needs_reclassification,
            control_reclassification_reason: self.control_reclassification_reason,
            control_reclassification_count: self.control_reclassification_count,
            control_plans_created_count: self.control_plans_created_count,
            control_current_step_retry_count: self.control_current_step_retry_count,
            control_retry_count: self.control_retry_count,
            control_has_error: self.control_has_error,
            control_error_info: self.control_error_info,
            control_last_error: self.control_last_error,
            control_max_retries: self.control_max_retries,
            control_is_killed: self.control_is_killed,
            control_kill_reason: self.control_kill_reason,
            control_is_awaiting_validation: self.control_is_awaiting_validation,
            control_validation_context: self.control_validation_context,
            control_validation_timestamp: self.control_validation_timestamp,
            ui_notebook_links: self.ui_notebook_links,
            ui_captured_figures: self.ui_captured_figures,
            ui_agent_context: self.ui_agent_context,
            runtime_checkpoint_metadata: self.runtime_checkpoint_metadata,
            runtime_info: self.runtime_info,
        };
        (self.messages, self.capability_context_data, rest)
    }
}

impl Rest {
    fn merge(&mut self, o: Rest) -> Result<(), StateError> {
        once(&mut self.session_id, o.session_id, "session_id")?;
        once(&mut self.agent_control, o.agent_control, "agent_control")?;
        once(&mut self.status_updates, o.status_updates, "status_updates")?;
        once(
            &mut self.progress_events,
            o.progress_events,
            "progress_events",
        )?;
        once(
            &mut self.task_current_task,
            o.task_current_task,
            "task_current_task",
        )?;
        once(
            &mut self.task_depends_on_chat_history,
            o.task_depends_on_chat_history,
            "task_depends_on_chat_history",
        )?;
        once(
            &mut self.task_depends_on_user_memory,
            o.task_depends_on_user_memory,
            "task_depends_on_user_memory",
        )?;
        once(
            &mut self.task_custom_message,
            o.task_custom_message,
            "task_custom_message",
        )?;
        once(
            &mut self.planning_active_capabilities,
            o.planning_active_capabilities,
            "planning_active_capabilities",
        )?;
        once(
            &mut self.planning_execution_plan,
            o.planning_execution_plan,
            "planning_execution_plan",
        )?;
        once(
            &mut self.planning_current_step_index,
            o.planning_current_step_index,
            "planning_current_step_index",
        )?;
        once(
            &mut self.execution_step_results,
            o.execution_step_results,
            "execution_step_results",
        )?;
        once(
            &mut self.execution_last_result,
            o.execution_last_result,
            "execution_last_result",
        )?;
        once(
            &mut self.execution_pending_approvals,
            o.execution_pending_approvals,
            "execution_pending_approvals",
        )?;
        once(
            &mut self.execution_start_time,
            o.execution_start_time,
            "execution_start_time",
        )?;
        once(
            &mut self.execution_total_time,
            o.execution_total_time,
            "execution_total_time",
        )?;
        once(
            &mut self.approval_approved,
            o.approval_approved,
            "approval_approved",
        )?;
        once(
            &mut self.approved_payload,
            o.approved_payload,
            "approved_payload",
        )?;
        once(
            &mut self.control_needs_reclassification,
            o.control_needs_reclassification,
            "control_needs_reclassification",
        )?;
        once(
            &mut self.control_reclassification_reason,
            o.control_reclassification_reason,
            "control_reclassification_reason",
        )?;
        once(
            &mut self.control_reclassification_count,
            o.control_reclassification_count,
            "control_reclassification_count",
        )?;
        once(
            &mut self.control_plans_created_count,
            o.control_plans_created_count,
            "control_plans_created_count",
        )?;
        once(
            &mut self.control_current_step_retry_count,
            o.control_current_step_retry_count,
            "control_current_step_retry_count",
        )?;
        once(
            &mut self.control_retry_count,
            o.control_retry_count,
            "control_retry_count",
        )?;
        once(
            &mut self.control_has_error,
            o.control_has_error,
            "control_has_error",
        )?;
        once(
            &mut self.control_error_info,
            o.control_error_info,
            "control_error_info",
        )?;
        once(
            &mut self.control_last_error,
            o.control_last_error,
            "control_last_error",
        )?;
        once(
            &mut self.control_max_retries,
            o.control_max_retries,
            "control_max_retries",
        )?;
        once(
            &mut self.control_is_killed,
            o.control_is_killed,
            "control_is_killed",
        )?;
        once(
            &mut self.control_kill_reason,
            o.control_kill_reason,
            "control_kill_reason",
        )?;
        once(
            &mut self.control_is_awaiting_validation,
            o.control_is_awaiting_validation,
            "control_is_awaiting_validation",
        )?;
        once(
            &mut self.control_validation_context,
            o.control_validation_context,
            "control_validation_context",
        )?;
        once(
            &mut self.control_validation_timestamp,
            o.control_validation_timestamp,
            "control_validation_timestamp",
        )?;
        once(
            &mut self.ui_notebook_links,
            o.ui_notebook_links,
            "ui_notebook_links",
        )?;
        once(
            &mut self.ui_captured_figures,
            o.ui_captured_figures,
            "ui_captured_figures",
        )?;
        once(
            &mut self.ui_agent_context,
            o.ui_agent_context,
            "ui_agent_context",
        )?;
        once(
            &mut self.runtime_checkpoint_metadata,
            o.runtime_checkpoint_metadata,
            "runtime_checkpoint_metadata",
        )?;
        once(&mut self.runtime_info, o.runtime_info, "runtime_info")?;
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// Data. Every workload uses the same messages on both sides, and so does
// the LangGraph script (`benches/langgraph/bench.py`): ids `m{i}`, a human
// message then an AI message, alternating, with short English content.

/// Message `i` of a history: human on even `i`, AI on odd.
pub fn history_message(i: usize) -> Message {
    if i.is_multiple_of(2) {
        Message::human(format!(
            "question number {i}: what is the status of the beam line?"
        ))
        .with_id(format!("m{i}"))
    } else {
        Message::ai(format!(
            "answer number {i}: the beam line is nominal, current 500 mA."
        ))
        .with_id(format!("m{i}"))
    }
}

/// A history of `n` messages as a plain `Vec`.
pub fn history_vec(n: usize) -> Vec<Message> {
    (0..n).map(history_message).collect()
}

/// A new AI message with its own id (`new{i}`), as a node returns it.
pub fn new_message(i: usize) -> Message {
    Message::ai("the orbit correction finished; 3 correctors moved.").with_id(format!("new{i}"))
}

/// An update of an existing message (same id, new content).
pub fn edited_message(id: &str) -> Message {
    Message::ai("edited: the beam line is nominal.").with_id(id)
}

/// The step result a node writes.
pub fn step_result() -> ExecutionResult {
    ExecutionResult {
        success: true,
        data: Some(json!({"pv": "SR:C01-BI{BPM:1}Pos:X-I", "value": 0.0132})),
        error: None,
        execution_time: Some(0.84),
    }
}

/// A typical node delta: 3 of the 40 fields, one of them messages.
pub fn typical_delta(i: usize) -> BerkeleyDelta {
    Berkeley::delta()
        .messages(vec![new_message(i)])
        .execution_last_result(Some(step_result()))
        .planning_current_step_index(2)
}

/// The same delta, hand-written.
pub fn typical_hand_delta(i: usize) -> HandDelta {
    HandDelta {
        messages: Some(vec![new_message(i)]),
        execution_last_result: Some(Some(step_result())),
        planning_current_step_index: Some(2),
        ..HandDelta::default()
    }
}

/// The same delta as LangGraph-style JSON.
pub fn typical_delta_json(i: usize) -> Value {
    json!({
        "messages": [{"type": "ai", "content": "the orbit correction finished; 3 correctors moved.", "id": format!("new{i}")}],
        "execution_last_result": serde_json::to_value(step_result()).unwrap_or_default(),
        "planning_current_step_index": 2,
    })
}

/// A delta of 3 plain replace fields, no messages and no reducer work: an
/// integer (`planning_current_step_index`, a `usize`), a string
/// (`task_current_task`, an `Option<String>`: the state has no bare
/// `String` field) and a bool (`control_has_error`).
pub fn plain_delta() -> BerkeleyDelta {
    Berkeley::delta()
        .planning_current_step_index(7)
        .task_current_task(Some(PLAIN_TASK.to_owned()))
        .control_has_error(true)
}

/// The same delta, hand-written.
pub fn plain_hand_delta() -> HandDelta {
    HandDelta {
        planning_current_step_index: Some(7),
        task_current_task: Some(Some(PLAIN_TASK.to_owned())),
        control_has_error: Some(true),
        ..HandDelta::default()
    }
}

/// The string [`plain_delta`] writes.
const PLAIN_TASK: &str = "find the beam current PVs and plot the last hour";

fn context(kind: &str, key: &str) -> CapabilityContextData {
    let mut fields = JsonObject::new();
    fields.insert("value".into(), json!(key));
    let mut by_key = ContextsByKey::new();
    by_key.insert(key.to_owned(), fields);
    let mut data = CapabilityContextData::new();
    data.insert(kind.to_owned(), by_key);
    data
}

/// Four parallel capability nodes of one superstep: each adds a message
/// and a context entry and writes one replace field of its own.
pub fn parallel_deltas(step: usize) -> [BerkeleyDelta; 4] {
    let base = step * 4;
    [
        Berkeley::delta()
            .messages(vec![new_message(base)])
            .capability_context_data(context("PV_ADDRESSES", "a"))
            .execution_last_result(Some(step_result())),
        Berkeley::delta()
            .messages(vec![new_message(base + 1)])
            .capability_context_data(context("PV_VALUES", "b"))
            .ui_notebook_links(vec!["notebook.ipynb".to_owned()]),
        Berkeley::delta()
            .messages(vec![new_message(base + 2)])
            .capability_context_data(context("TIME_RANGE", "c"))
            .control_retry_count(1),
        Berkeley::delta()
            .messages(vec![new_message(base + 3)])
            .capability_context_data(context("ARCHIVER_DATA", "d"))
            .execution_start_time(Some(1.0e9)),
    ]
}

/// The same four deltas, hand-written.
pub fn parallel_hand_deltas(step: usize) -> [HandDelta; 4] {
    let base = step * 4;
    [
        HandDelta {
            messages: Some(vec![new_message(base)]),
            capability_context_data: Some(context("PV_ADDRESSES", "a")),
            execution_last_result: Some(Some(step_result())),
            ..HandDelta::default()
        },
        HandDelta {
            messages: Some(vec![new_message(base + 1)]),
            capability_context_data: Some(context("PV_VALUES", "b")),
            ui_notebook_links: Some(vec!["notebook.ipynb".to_owned()]),
            ..HandDelta::default()
        },
        HandDelta {
            messages: Some(vec![new_message(base + 2)]),
            capability_context_data: Some(context("TIME_RANGE", "c")),
            control_retry_count: Some(1),
            ..HandDelta::default()
        },
        HandDelta {
            messages: Some(vec![new_message(base + 3)]),
            capability_context_data: Some(context("ARCHIVER_DATA", "d")),
            execution_start_time: Some(Some(1.0e9)),
            ..HandDelta::default()
        },
    ]
}

/// A state mid-turn: `history` messages and a dozen turn fields written.
pub fn busy_state(history: usize) -> Berkeley {
    let mut state = Berkeley {
        messages: Messages::from(history_vec(history)),
        ..Berkeley::default()
    };
    fill_turn_fields(&mut state.task_current_task, &mut state.status_updates);
    state.planning_active_capabilities = vec!["pv_finder".into(), "archiver".into()];
    state.execution_last_result = Some(step_result());
    state.control_error_info = Some(agent_control_defaults());
    state.ui_notebook_links = vec!["a.ipynb".into(), "b.ipynb".into()];
    state.control_retry_count = 2;
    state
}

/// The same state, hand-written.
pub fn busy_hand_state(history: usize) -> HandBerkeley {
    let mut state = HandBerkeley {
        messages: Messages::from(history_vec(history)),
        ..HandBerkeley::default()
    };
    fill_turn_fields(&mut state.task_current_task, &mut state.status_updates);
    state.planning_active_capabilities = vec!["pv_finder".into(), "archiver".into()];
    state.execution_last_result = Some(step_result());
    state.control_error_info = Some(agent_control_defaults());
    state.ui_notebook_links = vec!["a.ipynb".into(), "b.ipynb".into()];
    state.control_retry_count = 2;
    state
}

fn fill_turn_fields(task: &mut Option<String>, updates: &mut Vec<JsonObject>) {
    *task = Some("find the beam current PVs and plot the last hour".into());
    *updates = vec![agent_control_defaults(); 3];
}

// ---------------------------------------------------------------------------
// Plain fields only (issue 29, item 7): the same 40 fields and types, every
// one `replace` (no reducer, no scope or default), against the plainest
// hand-written code.

/// Declares the plain states from the field list: [`Plain`], derived with
/// every field `replace`, and [`HandPlain`] with its delta and `apply`.
macro_rules! plain_states {
    ($($field:ident: $ty:ty,)*) => {
        /// The 40 fields of [`Berkeley`], every one `replace`: an `apply`
        /// of it has no reducer work at all.
        #[derive(AgentState, Debug, Clone, PartialEq)]
        pub struct Plain {
            $(pub $field: $ty,)*
        }

        /// The same state written by hand.
        #[derive(Debug, Clone, Default, PartialEq)]
        pub struct HandPlain {
            $(pub $field: $ty,)*
        }

        /// The hand-written delta of [`HandPlain`]: one `Option` per field.
        #[derive(Debug, Clone, Default, PartialEq)]
        pub struct HandPlainDelta {
            $(pub $field: Option<$ty>,)*
        }

        impl HandPlain {
            /// The plainest `apply`: `if let Some(v) = d.f { s.f = v }` for
            /// each of the 40 fields (no error, nothing to stage).
            pub fn apply(&mut self, d: HandPlainDelta) {
                $(
                    if let Some(v) = d.$field {
                        self.$field = v;
                    }
                )*
            }
        }
    };
}

berkeley_fields!(plain_states);

/// A delta of [`Plain`] writing 3 of its 40 fields, as [`plain_delta`]
/// does on [`Berkeley`]: an integer, an `Option<String>` and a bool.
pub fn plain40_delta() -> PlainDelta {
    Plain::delta()
        .planning_current_step_index(7)
        .task_current_task(Some(PLAIN_TASK.to_owned()))
        .control_has_error(true)
}

/// The same delta, hand-written.
pub fn plain40_hand_delta() -> HandPlainDelta {
    HandPlainDelta {
        planning_current_step_index: Some(7),
        task_current_task: Some(Some(PLAIN_TASK.to_owned())),
        control_has_error: Some(true),
        ..HandPlainDelta::default()
    }
}
