//! The Alpha Berkeley framework's graph, as a [`state_graph::StateGraph`]:
//! task extraction, classification and orchestration (planning), then the
//! router, as conditional edges, sends the run to each plan step's
//! capability node, to the approval node when a step needs the operator's
//! approval, or to `kill` when a step failed too often or the operator
//! refused it.
//!
//! ```text
//! START -> task_extraction -> classification -> orchestration --+
//!                                                               |
//!            +------------------- next_node --------------------+
//!            |   (after orchestration, every capability and approval)
//!            v
//!   pv_address_finding | archiver_retrieval | python_executor | respond
//!   approval (asks, then pauses: ctx.interrupt) | kill -> END | END
//! ```
//!
//! Every node reads the state and returns a [`StateUpdate`], as a LangGraph
//! node returns its dict. The LLM-backed decisions (which task, which
//! capabilities, which plan) come from a scripted [`Turn`], looked up by
//! the user's message as a model would read it, and the capabilities are
//! small deterministic stand-ins, so that a run can be asserted exactly.
//!
//! A conversation turn is one [`invoke_thread`] on a store thread: it
//! begins a turn, so every execution-scoped field resets (the seed's
//! `StateManager.create_fresh_state`) while the capability context and the
//! history carry over. The approval pauses the run with `ctx.interrupt`;
//! [`resume`] (from any process holding the same store) answers it and the
//! run goes on in the same turn: a resume resets nothing.
//!
//! [`invoke_thread`]: state_graph::CompiledGraph::invoke_thread
//! [`resume`]: state_graph::CompiledGraph::resume

use super::{
    AgentState, CapabilityContextData, ContextFields, ContextsByKey, ExecutionError, ExecutionPlan,
    ExecutionResult, JsonObject, PlannedStep, StateUpdate, create_progress_event,
    create_status_update, now,
};
use futures::StreamExt;
use serde_json::{Value, json};
use state_core::{Delta, Message, MessageKind, State, StateError};
use state_graph::{
    CompiledGraph, Ctx, END, Event, GraphError, Interrupt, NodeError, Outcome, RunStream, START,
    StateGraph, StreamMode,
};
use std::collections::BTreeMap;
use std::sync::Arc;

/// One scripted conversation turn: what the user says, and what the
/// framework's LLM-backed nodes decide.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// The user's message.
    pub user_input: &'static str,
    /// The task the extractor distils from the conversation.
    pub task: &'static str,
    /// Whether the task refers to earlier turns.
    pub depends_on_chat_history: bool,
    /// The capabilities the classifier selects.
    pub capabilities: Vec<String>,
    /// The orchestrator's plan.
    pub plan: ExecutionPlan,
    /// A capability whose first attempt fails this turn (a timeout), to
    /// show the retry path.
    pub fail_once: Option<&'static str>,
}

/// Where the router sends the run after a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// Run the current step's capability (again, after an error).
    Execute,
    /// Ask the user to approve the current step first.
    RequestApproval,
    /// Too many retries, or the user rejected the step: stop the run.
    Kill,
    /// The plan is done, or the run was stopped.
    End,
}

/// The capability nodes: one per capability a plan step may name.
pub const CAPABILITIES: [&str; 4] = [
    "pv_address_finding",
    "archiver_retrieval",
    "python_executor",
    "respond",
];

/// The node that asks the operator to approve a step.
pub const APPROVAL: &str = "approval";

/// The node that stops a run ([`kill`]).
pub const KILL: &str = "kill";

/// The three turns of the example conversation. Context found in one turn
/// is used by the next: turn 2 reads the PVs turn 1 stored, turn 3
/// replaces one of them and adds another.
pub fn conversation() -> Vec<Turn> {
    vec![
        Turn {
            user_input: "Find beam current PV addresses",
            task: "Find the PV addresses of the beam current",
            depends_on_chat_history: false,
            capabilities: names(&["pv_address_finding", "respond"]),
            plan: plan(vec![
                pv_step("beam_current_pvs", "beam current"),
                respond_step(),
            ]),
            fail_once: None,
        },
        Turn {
            user_input: "Plot it over the last 24 hours",
            task: "Plot the beam current PVs found earlier over the last 24 hours",
            depends_on_chat_history: true,
            capabilities: names(&["archiver_retrieval", "python_executor", "respond"]),
            plan: plan(vec![archiver_step(), plot_step(), respond_step()]),
            fail_once: Some("archiver_retrieval"),
        },
        Turn {
            user_input: "Only the storage ring one, please. And the SR magnet PVs too.",
            task: "Keep only the storage ring beam current PV and find the SR magnet PVs",
            depends_on_chat_history: true,
            capabilities: names(&["pv_address_finding", "respond"]),
            plan: plan(vec![
                pv_step("beam_current_pvs", "storage ring beam current"),
                pv_step("sr_magnet_pvs", "storage ring magnets"),
                respond_step(),
            ]),
            fail_once: None,
        },
    ]
}

/// The graph, on the decisions of `script`: `.with_store(store)` it to
/// run conversation turns on threads ([`run_turn`]).
///
/// # Errors
///
/// A [`GraphError::Invalid`] if the graph is wrong (it is not).
pub fn build(script: Vec<Turn>) -> Result<CompiledGraph<AgentState>, GraphError> {
    let script: Arc<[Turn]> = script.into();
    let mut g = StateGraph::<AgentState>::new();
    let planners: [(&str, Planner); 3] = [
        ("task_extraction", task_extraction),
        ("classification", classification),
        ("orchestration", orchestration),
    ];
    for (name, planner) in planners {
        let script = script.clone();
        g.add_node(
            name,
            move |s: &AgentState| -> Result<StateUpdate, NodeError> {
                Ok(planner(s, scripted(&script, s)?)?)
            },
        );
    }
    for capability in CAPABILITIES {
        let script = script.clone();
        g.add_node(
            capability,
            move |s: &AgentState| -> Result<StateUpdate, NodeError> {
                Ok(execute_step(s, scripted(&script, s)?)?)
            },
        );
    }
    g.add_node(APPROVAL, approval);
    g.add_node(KILL, kill);

    g.add_edge(START, "task_extraction");
    g.add_edge("task_extraction", "classification");
    g.add_edge("classification", "orchestration");
    let mut targets = vec![APPROVAL, KILL, END];
    targets.extend(CAPABILITIES);
    for from in ["orchestration", APPROVAL].into_iter().chain(CAPABILITIES) {
        g.add_conditional_edges(from, next_node, targets.clone());
    }
    g.add_edge(KILL, END);
    g.compile()
}

/// A planning node: reads the state and the turn's script.
type Planner = fn(&AgentState, &Turn) -> Result<StateUpdate, StateError>;

/// The scripted decisions for the user's last message: what the LLM-backed
/// nodes would decide reading it.
fn scripted<'t>(script: &'t [Turn], state: &AgentState) -> Result<&'t Turn, NodeError> {
    let said = state
        .messages
        .iter()
        .rev()
        .find(|message| message.kind() == MessageKind::Human)
        .map(Message::text)
        .unwrap_or_default();
    script
        .iter()
        .find(|turn| turn.user_input == said)
        .ok_or_else(|| NodeError::msg(format!("no scripted decisions for {said:?}")))
}

/// The router, on the conditional edges of every node after planning: the
/// node [`route`] names (a capability's name is its node's).
pub fn next_node(state: &AgentState) -> String {
    match route(state) {
        Route::End => END.to_owned(),
        Route::Kill => KILL.to_owned(),
        Route::RequestApproval => APPROVAL.to_owned(),
        Route::Execute => {
            current_step(state).map_or_else(|| END.to_owned(), |step| step.capability.clone())
        }
    }
}

/// The approval node, in two runs. The first records the current step's
/// request ([`request_approval`]: `execution_pending_approvals`), and the
/// router comes back: a node that pauses writes nothing, so the request is
/// stored first and the thread shows what it waits for. The second pauses
/// the run with the request (`ctx.interrupt`); resumed, the same call
/// returns the operator's answer, recorded by [`resume_approval`]. An
/// answer [`approves`] or not.
///
/// # Errors
///
/// [`state_graph::Interrupted`] while it waits for the answer.
pub fn approval(state: &AgentState, ctx: &Ctx) -> Result<StateUpdate, NodeError> {
    let pending = current_step(state)
        .and_then(|step| state.execution_pending_approvals.get(&step.context_key));
    let Some(request) = pending else {
        return Ok(request_approval(state));
    };
    let answer = ctx.interrupt(Value::Object(request.clone()))?;
    Ok(resume_approval(state, approves(&answer)))
}

/// Whether an answer to the approval approves: `true`, or "yes",
/// "approve" or "approved" in any case.
pub fn approves(answer: &Value) -> bool {
    match answer {
        Value::Bool(yes) => *yes,
        Value::String(text) => ["yes", "approve", "approved"]
            .iter()
            .any(|word| text.trim().eq_ignore_ascii_case(word)),
        _ => false,
    }
}

/// What the operator answers in [`run_turn`]: approved.
pub const OPERATOR_ANSWER: &str = "yes";

/// What a turn's run showed, in order.
#[derive(Debug)]
pub enum Seen<'a> {
    /// A node's update, once its superstep was committed (LangGraph's
    /// `stream_mode="updates"`, where a UI reads the status events).
    Node {
        /// The node.
        name: &'a str,
        /// What it wrote.
        update: &'a StateUpdate,
    },
    /// The run paused for the operator; it is resumed with
    /// [`OPERATOR_ANSWER`].
    Asked(&'a Interrupt),
}

/// Runs one conversation turn on `thread`: [`invoke_thread`] with the
/// user's message (a turn begins: every execution field resets), and, each
/// time the run pauses for an approval, [`resume`] with the operator's
/// answer ([`OPERATOR_ANSWER`]), until the run reaches `END`. `observe`
/// sees each node's update and each question.
///
/// # Errors
///
/// A [`GraphError`] if a run fails: a node's error (no script for the
/// message), a refused update, the store.
///
/// [`invoke_thread`]: CompiledGraph::invoke_thread
/// [`resume`]: CompiledGraph::resume
pub async fn run_turn(
    app: &CompiledGraph<AgentState>,
    thread: &str,
    turn: &Turn,
    mut observe: impl FnMut(Seen<'_>),
) -> Result<Outcome<AgentState>, GraphError> {
    let input = AgentState::delta().messages(vec![Message::human(turn.user_input)]);
    let mut outcome = watch(
        app.stream_thread(thread, input, StreamMode::UPDATES),
        &mut observe,
    )
    .await?;
    while outcome.is_interrupted() {
        let resumed = app.stream_resume(thread, json!(OPERATOR_ANSWER), StreamMode::UPDATES);
        outcome = watch(resumed, &mut observe).await?;
    }
    Ok(outcome)
}

/// Shows a streamed run to `observe`; its outcome.
async fn watch(
    mut run: RunStream<AgentState>,
    observe: &mut impl FnMut(Seen<'_>),
) -> Result<Outcome<AgentState>, GraphError> {
    while let Some(event) = run.next().await {
        match event? {
            Event::Update { node, delta } => observe(Seen::Node {
                name: &node,
                update: &delta,
            }),
            Event::Interrupt(asked) => asked.iter().for_each(|i| observe(Seen::Asked(i))),
            Event::End(outcome) => return Ok(outcome),
            _ => {}
        }
    }
    unreachable!("a run's stream ends with its outcome or an error")
}

/// Task extraction: the task, and whether it needs the chat history.
///
/// # Errors
///
/// Never in practice: the status and task fields are distinct.
pub fn task_extraction(_state: &AgentState, turn: &Turn) -> Result<StateUpdate, StateError> {
    let fields = AgentState::delta()
        .task_current_task(turn.task)
        .task_depends_on_chat_history(turn.depends_on_chat_history)
        .task_depends_on_user_memory(false);
    status("Task extracted", 0.1, "task_extraction").merge(fields)
}

/// Classification: the capabilities that can serve the task.
///
/// # Errors
///
/// Never in practice: the status and planning fields are distinct.
pub fn classification(_state: &AgentState, turn: &Turn) -> Result<StateUpdate, StateError> {
    let fields = AgentState::delta().planning_active_capabilities(turn.capabilities.clone());
    status("Task classified", 0.2, "classification").merge(fields)
}

/// Orchestration: the plan, from its first step; the clock starts.
///
/// # Errors
///
/// Never in practice: the status and planning fields are distinct.
pub fn orchestration(state: &AgentState, turn: &Turn) -> Result<StateUpdate, StateError> {
    let fields = AgentState::delta()
        .planning_execution_plan(Some(turn.plan.clone()))
        .planning_current_step_index(0)
        .control_plans_created_count(state.control_plans_created_count + 1)
        .execution_start_time(now());
    status("Execution plan created", 0.3, "orchestration").merge(fields)
}

/// The router's decision: retry a failed step, stop after too many
/// retries, ask for approval (stop if it was refused), or run the current
/// step. [`next_node`] names the node.
pub fn route(state: &AgentState) -> Route {
    if state.control_is_killed {
        return Route::End;
    }
    if state.control_has_error {
        return if state.control_current_step_retry_count >= state.control_max_retries {
            Route::Kill
        } else {
            Route::Execute
        };
    }
    match current_step(state) {
        None => Route::End,
        Some(step) if needs_approval(state, step) && !approved(state, step) => {
            if answered(state, step) {
                Route::Kill
            } else {
                Route::RequestApproval
            }
        }
        Some(_) => Route::Execute,
    }
}

/// The plan step at `planning_current_step_index`, if any is left.
pub fn current_step(state: &AgentState) -> Option<&PlannedStep> {
    let plan = state.planning_execution_plan.as_ref()?;
    plan.steps.get(state.planning_current_step_index)
}

/// Python code runs only after approval when `agent_control` says so.
fn needs_approval(state: &AgentState, step: &PlannedStep) -> bool {
    step.capability == "python_executor"
        && state.agent_control.get("python_execution_approval_enabled") == Some(&json!(true))
}

fn approved(state: &AgentState, step: &PlannedStep) -> bool {
    answered(state, step) && state.approval_approved == Some(true)
}

/// Whether the operator answered the request of `step` (either way).
fn answered(state: &AgentState, step: &PlannedStep) -> bool {
    let payload_key = state
        .approved_payload
        .as_ref()
        .and_then(|payload| payload.get("context_key"));
    state.approval_approved.is_some() && payload_key == Some(&json!(step.context_key))
}

/// The approval's request (the first run of [`approval`]): the current
/// step's request, stored to wait for the user.
pub fn request_approval(state: &AgentState) -> StateUpdate {
    let Some(step) = current_step(state) else {
        return AgentState::delta();
    };
    let request = object(json!({
        "capability": step.capability,
        "context_key": step.context_key,
        "reason": "python_execution_approval_mode = all_code",
    }));
    let pending = BTreeMap::from([(step.context_key.clone(), request)]);
    AgentState::delta()
        .execution_pending_approvals(pending)
        .approval_approved(None)
}

/// The user's answer to the pending request of the current step (the
/// resumed run of [`approval`]).
pub fn resume_approval(state: &AgentState, approve: bool) -> StateUpdate {
    let request = current_step(state)
        .and_then(|step| state.execution_pending_approvals.get(&step.context_key))
        .cloned();
    AgentState::delta()
        .approval_approved(approve)
        .approved_payload(request)
        .execution_pending_approvals(BTreeMap::new())
}

/// Runs the current step's capability: on success its context is stored
/// and the plan advances; on failure the error is recorded for a retry.
///
/// # Errors
///
/// A [`StateError::ConcurrentWrite`] if a capability's extra writes
/// collide with the step bookkeeping (none of the stand-ins do).
pub fn execute_step(state: &AgentState, turn: &Turn) -> Result<StateUpdate, StateError> {
    let Some(step) = current_step(state) else {
        return Ok(AgentState::delta());
    };
    let started = now();
    match run_capability(state, turn, step) {
        Ok(output) => step_succeeded(state, step, output, now() - started),
        Err(message) => step_failed(state, step, &message),
    }
}

/// Stops a run whose step failed too often, or whose approval was refused.
pub fn kill(state: &AgentState) -> StateUpdate {
    let index = state.planning_current_step_index;
    let reason = if state.approval_approved == Some(false) {
        format!("the operator rejected step {index}")
    } else {
        format!(
            "step {index} failed {} times",
            state.control_current_step_retry_count
        )
    };
    AgentState::delta()
        .control_is_killed(true)
        .control_kill_reason(reason)
}

/// What a capability produced: the context it stores (under the step's
/// `expected_output` type and `context_key`) and any other writes.
struct Output {
    fields: ContextFields,
    extra: StateUpdate,
}

fn run_capability(state: &AgentState, turn: &Turn, step: &PlannedStep) -> Result<Output, String> {
    let first_attempt = state.control_current_step_retry_count == 0;
    if turn.fail_once == Some(step.capability.as_str()) && first_attempt {
        return Err(format!("{} timed out", step.capability));
    }
    match step.capability.as_str() {
        "pv_address_finding" => Ok(find_pvs(step)),
        "archiver_retrieval" => retrieve_archived(state, step),
        "python_executor" => Ok(run_python(state, step)),
        "respond" => Ok(respond(state)),
        other => Err(format!("unknown capability {other:?}")),
    }
}

fn step_succeeded(
    state: &AgentState,
    step: &PlannedStep,
    output: Output,
    seconds: f64,
) -> Result<StateUpdate, StateError> {
    let index = state.planning_current_step_index;
    let mut results = state.execution_step_results.clone();
    results.insert(
        step.context_key.clone(),
        json!({"step_index": index, "capability": step.capability, "success": true}),
    );
    let result = ExecutionResult {
        success: true,
        data: Some(Value::Object(output.fields.clone())),
        error: None,
        execution_time: Some(seconds),
    };
    let mut fields = AgentState::delta()
        .execution_step_results(results)
        .execution_last_result(Some(result))
        .planning_current_step_index(index + 1);
    if let Some(context_type) = &step.expected_output {
        fields = fields.capability_context_data(context_entry(context_type, step, output.fields));
    }
    if state.control_has_error {
        fields = fields
            .control_has_error(false)
            .control_error_info(None)
            .control_current_step_retry_count(0);
    }
    progress(state, index + 1, &step.capability)
        .merge(fields)?
        .merge(output.extra)
}

fn step_failed(
    state: &AgentState,
    step: &PlannedStep,
    message: &str,
) -> Result<StateUpdate, StateError> {
    let error = object(json!({
        "capability": step.capability,
        "step_index": state.planning_current_step_index,
        "message": message,
    }));
    let result = ExecutionResult {
        success: false,
        data: None,
        error: Some(ExecutionError {
            severity: "retriable".to_owned(),
            message: message.to_owned(),
        }),
        execution_time: None,
    };
    let fields = AgentState::delta()
        .control_has_error(true)
        .control_error_info(Some(error.clone()))
        .control_last_error(Some(error))
        .control_retry_count(state.control_retry_count + 1)
        .control_current_step_retry_count(state.control_current_step_retry_count + 1)
        .execution_last_result(Some(result));
    status(&format!("Retrying: {message}"), 0.5, &step.capability).merge(fields)
}

/// `{context_type: {context_key: fields}}`: one record, for the merge
/// reducer to fold into the stored context.
fn context_entry(
    context_type: &str,
    step: &PlannedStep,
    fields: ContextFields,
) -> CapabilityContextData {
    let by_key = ContextsByKey::from([(step.context_key.clone(), fields)]);
    CapabilityContextData::from([(context_type.to_owned(), by_key)])
}

/// A PV lookup: the beam-current query is ambiguous and says so in a
/// `notes` field; the refined queries have none.
fn find_pvs(step: &PlannedStep) -> Output {
    let query = parameter(step, "query")
        .and_then(Value::as_str)
        .unwrap_or("");
    let (pvs, notes): (&[&str], Option<&str>) = match query {
        "beam current" => (
            &["SR:DCCT:Current", "BTS:DCCT:Current"],
            Some("BTS:DCCT:Current is the transfer line monitor, not the ring"),
        ),
        "storage ring beam current" => (&["SR:DCCT:Current"], None),
        "storage ring magnets" => (&["SR:C01:MAG:1", "SR:C02:MAG:1"], None),
        _ => (&[], None),
    };
    let mut fields = object(json!({"pvs": pvs, "description": format!("PVs for {query}")}));
    if let Some(notes) = notes {
        fields.insert("notes".to_owned(), json!(notes));
    }
    output(fields)
}

/// Archived data for the PVs of the step's first input: the context a
/// previous turn stored must still be there.
fn retrieve_archived(state: &AgentState, step: &PlannedStep) -> Result<Output, String> {
    let (context_type, context_key) = first_input(step)?;
    let pvs = state
        .capability_context_data
        .get(context_type)
        .and_then(|contexts| contexts.get(context_key))
        .and_then(|fields| fields.get("pvs"))
        .ok_or_else(|| format!("no {context_type} context {context_key:?}"))?;
    let hours = parameter(step, "hours")
        .and_then(Value::as_u64)
        .unwrap_or(1);
    Ok(output(object(json!({
        "pvs": pvs,
        "hours": hours,
        "samples": hours * 60,
    }))))
}

/// A plot of the archived data: a figure and a notebook for the UI.
fn run_python(state: &AgentState, step: &PlannedStep) -> Output {
    let figure = format!("figures/{}.png", step.context_key);
    let notebook = format!("notebooks/{}.ipynb", step.context_key);
    let mut figures = state.ui_captured_figures.clone();
    figures.push(figure.clone());
    let mut notebooks = state.ui_notebook_links.clone();
    notebooks.push(notebook.clone());
    Output {
        fields: object(json!({"figure": figure, "notebook": notebook})),
        extra: AgentState::delta()
            .ui_captured_figures(figures)
            .ui_notebook_links(notebooks),
    }
}

/// The answer: lists the context stored for this task, and stops the clock.
fn respond(state: &AgentState) -> Output {
    let task = state.task_current_task.as_deref().unwrap_or("the request");
    let answer = format!(
        "Done: {task}. Context now holds {}.",
        context_summary(state)
    );
    let started = state.execution_start_time.unwrap_or_else(now);
    let extra = create_status_update("Response ready", 1.0, true, [("node", json!("respond"))])
        .messages(vec![Message::ai(answer)])
        .execution_total_time(now() - started);
    output_with(JsonObject::new(), extra)
}

/// `TYPE/key` for every stored context, in order.
pub fn context_summary(state: &AgentState) -> String {
    let entries: Vec<String> = state
        .capability_context_data
        .iter()
        .flat_map(|(context_type, contexts)| {
            contexts
                .keys()
                .map(move |key| format!("{context_type}/{key}"))
        })
        .collect();
    entries.join(", ")
}

fn status(message: &str, progress: f64, node: &str) -> StateUpdate {
    create_status_update(message, progress, false, [("node", json!(node))])
}

fn progress(state: &AgentState, done: usize, operation: &str) -> StateUpdate {
    let total = state
        .planning_execution_plan
        .as_ref()
        .map_or(0, |plan| plan.steps.len());
    create_progress_event(count(done), count(total), operation, [])
}

/// Step counts are small; saturate rather than wrap on the impossible.
fn count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn first_input(step: &PlannedStep) -> Result<(&str, &str), String> {
    step.inputs
        .iter()
        .flatten()
        .flat_map(|mapping| mapping.iter())
        .map(|(context_type, key)| (context_type.as_str(), key.as_str()))
        .next()
        .ok_or_else(|| format!("step {:?} has no input", step.context_key))
}

fn parameter<'s>(step: &'s PlannedStep, name: &str) -> Option<&'s Value> {
    step.parameters.as_ref()?.get(name)
}

fn output(fields: ContextFields) -> Output {
    output_with(fields, AgentState::delta())
}

fn output_with(fields: ContextFields, extra: StateUpdate) -> Output {
    Output { fields, extra }
}

/// The object inside a `json!({...})` literal (empty for anything else,
/// which the literals here never are).
fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

fn names(capabilities: &[&str]) -> Vec<String> {
    capabilities.iter().map(|name| (*name).to_owned()).collect()
}

fn plan(steps: Vec<PlannedStep>) -> ExecutionPlan {
    ExecutionPlan { steps }
}

fn pv_step(context_key: &str, query: &str) -> PlannedStep {
    PlannedStep {
        context_key: context_key.to_owned(),
        capability: "pv_address_finding".to_owned(),
        task_objective: format!("Find the PV addresses of the {query}"),
        success_criteria: "PV addresses found".to_owned(),
        expected_output: Some("PV_ADDRESSES".to_owned()),
        parameters: Some(object(json!({"query": query}))),
        inputs: None,
    }
}

fn archiver_step() -> PlannedStep {
    PlannedStep {
        context_key: "beam_current_24h".to_owned(),
        capability: "archiver_retrieval".to_owned(),
        task_objective: "Retrieve 24 hours of beam current data".to_owned(),
        success_criteria: "Archived samples retrieved".to_owned(),
        expected_output: Some("ARCHIVER_DATA".to_owned()),
        parameters: Some(object(json!({"hours": 24}))),
        inputs: Some(vec![input("PV_ADDRESSES", "beam_current_pvs")]),
    }
}

fn plot_step() -> PlannedStep {
    PlannedStep {
        context_key: "beam_current_plot".to_owned(),
        capability: "python_executor".to_owned(),
        task_objective: "Plot the archived beam current".to_owned(),
        success_criteria: "A figure is produced".to_owned(),
        expected_output: Some("PYTHON_RESULTS".to_owned()),
        parameters: None,
        inputs: Some(vec![input("ARCHIVER_DATA", "beam_current_24h")]),
    }
}

fn respond_step() -> PlannedStep {
    PlannedStep {
        context_key: "user_response".to_owned(),
        capability: "respond".to_owned(),
        task_objective: "Answer the user".to_owned(),
        success_criteria: "The user has an answer".to_owned(),
        expected_output: None,
        parameters: None,
        inputs: None,
    }
}

fn input(context_type: &str, context_key: &str) -> BTreeMap<String, String> {
    BTreeMap::from([(context_type.to_owned(), context_key.to_owned())])
}
