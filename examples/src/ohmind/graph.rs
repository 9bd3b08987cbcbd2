//! OHMind as a [`StateGraph`]: the document's `workflow`, compiled with a
//! checkpointer.
//!
//! ```text
//! START ──entry_node──▶ supervisor | human_validation | plan_approval
//! every node ──next_node──▶ the node `next` names
//!                           | human_validation (a validation waits: ctx.interrupt)
//!                           | plan_approval    (a task plan waits: ctx.interrupt)
//!                           | END              (FINISH, no active plan)
//! ```
//!
//! The nodes are those of [`Ohmind::run_node`] (the supervisor, the task
//! planner, the five agents, the error handler, the summary). Each agent's
//! node runs its ReAct agent ([`super::agents`]: the chat model with its
//! `#[tool]` bound, a `ToolNode`, `tools_condition`) as a subgraph, without
//! holding the app's lock, then records the run's messages and the tool's
//! result ([`Ohmind::agent_start`], [`Ohmind::agent_finish`]). Otherwise
//! the nodes are unchanged:
//! an agent whose tool needs approval still writes
//! [`mark_validation_required`](super::mark_validation_required)
//! (`next = "FINISH"`, "wait for user approval"), and the task planner
//! still writes a plan with `task_plan_needs_approval`. Where the hand-written loop then ends the
//! turn and reads the user's next message as the answer, the graph's
//! router sends the run to `human_validation` or `plan_approval`, which
//! pause it with [`Ctx::interrupt`]: the run returns an interrupted
//! [`Outcome`](state_graph::Outcome), the pause is stored on the thread,
//! and [`CompiledGraph::resume`] with the user's answer runs the node again,
//! where `interrupt` returns the answer
//! ([`Ohmind::answer_validation`], [`Ohmind::answer_plan`]).
//!
//! A thread is read and edited as OHMind's Python does with LangGraph:
//! `app.get_state(config)` is [`CompiledGraph::get_state`] (the state,
//! what runs next, the pending interrupts), and a decision written without
//! a message, as a front end's Approve button would, is the document's
//! [`mark_validation_complete`] written as `human_validation`
//! (`update_state(.., as_node=..)`): [`decide_validation`].
//!
//! The app ([`Ohmind`]: the agents' model, the injected tool failures, the
//! message counter) is shared by the nodes behind a mutex
//! ([`SharedOhmind`]), never held across an `.await`; the nodes run one at
//! a time, so it is never contended.

use super::agents::run_agent;
use super::{
    AGENTS, AgentStart, AgentState, AgentStateDelta, ERROR_HANDLER, HUMAN_VALIDATION, Ohmind,
    PLAN_APPROVAL, RECURSION_LIMIT, SUMMARY, SUPERVISOR, Step, TASK_PLANNER, entry_node,
    mark_validation_complete, route, should_continue_validation,
};
use serde_json::{Value, json};
use state_core::{Delta, State};
use state_graph::{CompiledGraph, Ctx, END, GraphError, NodeError, START, StateGraph};
use state_store::Store;
use std::sync::{Arc, Mutex, MutexGuard};

/// The app, shared by the graph's nodes (and by the caller, who injects
/// tool failures between runs).
pub type SharedOhmind = Arc<Mutex<Ohmind>>;

/// Wraps an app for [`build`].
pub fn shared(app: Ohmind) -> SharedOhmind {
    Arc::new(Mutex::new(app))
}

/// The app, locked. A node that panicked while holding it (the runner
/// catches the panic and fails the run) leaves nothing half-written in it
/// that matters: the lock is taken back.
pub fn lock(app: &SharedOhmind) -> MutexGuard<'_, Ohmind> {
    app.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The `"kind"` of the interrupt `human_validation` raises.
pub const ASK_VALIDATION: &str = "validation";
/// The `"kind"` of the interrupt `plan_approval` raises.
pub const ASK_PLAN_APPROVAL: &str = "plan_approval";

/// Every node of the graph, in the order they are added.
pub fn node_names() -> Vec<&'static str> {
    let mut names = vec![SUPERVISOR, TASK_PLANNER];
    names.extend(AGENTS.iter().map(|spec| spec.name));
    names.extend([ERROR_HANDLER, SUMMARY, HUMAN_VALIDATION, PLAN_APPROVAL]);
    names
}

/// The conditional edge after every node: a validation or a task plan
/// waiting for the user goes to the node that asks (and pauses); otherwise
/// [`route`]: the node `next` names, the supervisor when `FINISH` comes
/// with an active plan, or `END`.
pub fn next_node(state: &AgentState) -> String {
    if should_continue_validation(state) {
        HUMAN_VALIDATION.to_owned()
    } else if state.awaiting_plan_approval() {
        PLAN_APPROVAL.to_owned()
    } else {
        route(state).unwrap_or_else(|| END.to_owned())
    }
}

/// What `human_validation` shows the user: the operation and its metadata
/// (the agent, the tool, the estimated hours).
pub fn validation_request(state: &AgentState) -> Value {
    json!({
        "kind": ASK_VALIDATION,
        "message": state.validation_message,
        "operation": state.operation_metadata,
    })
}

/// What `plan_approval` shows the user: the plan, as data and as the
/// markdown written to `task_plan_path`.
pub fn plan_request(state: &AgentState) -> Value {
    json!({
        "kind": ASK_PLAN_APPROVAL,
        "path": state.task_plan_path,
        "plan": state.task_plan,
        "markdown": state.plan_markdown(),
    })
}

/// The user's answer as text: a string as given, `true`/`false` as yes/no.
pub fn answer_text(answer: &Value) -> String {
    match answer {
        Value::String(text) => text.clone(),
        Value::Bool(true) => "yes".to_owned(),
        Value::Bool(false) => "no".to_owned(),
        other => other.to_string(),
    }
}

/// The graph over `app`: every node of [`Ohmind::run_node`], the two
/// asking nodes with their interrupts, and the edges above.
pub fn build(app: &SharedOhmind) -> StateGraph<AgentState> {
    let mut g = StateGraph::<AgentState>::new();
    for name in [SUPERVISOR, TASK_PLANNER, ERROR_HANDLER, SUMMARY] {
        let app = app.clone();
        g.add_node(name, move |state: &AgentState| {
            lock(&app).run_control_node(name, state)
        });
    }
    // The agents: each runs its ReAct agent (the model, its tool through a
    // ToolNode) as a subgraph, the app's lock not held while it runs.
    for spec in AGENTS {
        let app = app.clone();
        g.add_node(spec.name, move |state: Arc<AgentState>| {
            let app = app.clone();
            async move {
                let start = lock(&app).agent_start(spec, &state)?;
                match start {
                    AgentStart::Done(delta) => Ok::<_, NodeError>(*delta),
                    AgentStart::Run {
                        model,
                        failures,
                        request,
                    } => {
                        let messages = run_agent(model, spec, &request, failures).await?;
                        Ok(lock(&app).agent_finish(spec, &state, messages)?)
                    }
                }
            }
        });
    }

    // The asking nodes: nothing before `interrupt` has a side effect, so
    // running them again on resume is safe.
    let validation = app.clone();
    g.add_node(
        HUMAN_VALIDATION,
        move |state: &AgentState, ctx: &Ctx| -> Result<AgentStateDelta, NodeError> {
            let answer = ctx.interrupt(validation_request(state))?;
            Ok(lock(&validation).answer_validation(state, &answer_text(&answer))?)
        },
    );
    let plan = app.clone();
    g.add_node(
        PLAN_APPROVAL,
        move |state: &AgentState, ctx: &Ctx| -> Result<AgentStateDelta, NodeError> {
            let answer = ctx.interrupt(plan_request(state))?;
            Ok(lock(&plan).answer_plan(&answer_text(&answer))?)
        },
    );

    g.add_conditional_edges(
        START,
        entry_node,
        [SUPERVISOR, HUMAN_VALIDATION, PLAN_APPROVAL],
    );
    let mut targets = node_names();
    targets.push(END);
    for name in node_names() {
        g.add_conditional_edges(name, next_node, targets.clone());
    }
    g
}

/// [`build`], compiled, its threads in `store`, with OHMind's recursion
/// limit ([`RECURSION_LIMIT`] supersteps, one node each, per run).
///
/// # Errors
///
/// When the graph does not compile (it does: the tests build it).
pub fn compile(app: &SharedOhmind, store: Store) -> Result<CompiledGraph<AgentState>, GraphError> {
    Ok(build(app)
        .compile()?
        .with_store(store)
        .with_recursion_limit(RECURSION_LIMIT))
}

/// A user turn's input: the message, with its id from the app's counter.
pub fn user_input(app: &SharedOhmind, text: &str) -> AgentStateDelta {
    AgentState::delta().messages(vec![lock(app).user_message(text)])
}

/// A state as the graph's input (`app.invoke(initial_state, config)`):
/// every field written, through the reducers.
///
/// # Errors
///
/// A field with no JSON form (none of this state's).
pub fn state_input(state: &AgentState) -> Result<AgentStateDelta, state_core::StateError> {
    AgentStateDelta::from_json(state.to_json()?)
}

/// Why [`decide_validation`] wrote nothing.
#[derive(Debug, thiserror::Error)]
pub enum DecisionError {
    /// The thread does not wait for a validation.
    #[error("no validation is pending on {thread:?} (next: {next:?})")]
    NotPending {
        /// The thread.
        thread: String,
        /// What runs next there instead.
        next: Vec<String>,
    },
    /// Reading or writing the thread failed.
    #[error(transparent)]
    Graph(#[from] GraphError),
}

/// The user's yes or no to the validation pending on `thread`, written
/// without a message (a front end's Approve or Reject button): the
/// document's [`mark_validation_complete`] for the agent that asked, read
/// from the thread (`app.get_state(config)`), written as `human_validation`
/// (`app.update_state(config, .., as_node="human_validation")`). The paused
/// node counts as done with that write: `continue_thread` then runs the
/// approved agent (or, rejected, the supervisor), and `human_validation`
/// does not run again. Returns the edit's step.
///
/// # Errors
///
/// [`DecisionError::NotPending`] when the thread does not wait for
/// `human_validation`; [`DecisionError::Graph`] when it cannot be read or
/// written.
pub async fn decide_validation(
    app: &CompiledGraph<AgentState>,
    thread: &str,
    approved: bool,
) -> Result<u64, DecisionError> {
    let snapshot = app.get_state(thread).await?;
    if !snapshot.next().iter().any(|node| node == HUMAN_VALIDATION) {
        return Err(DecisionError::NotPending {
            thread: thread.to_owned(),
            next: snapshot.next().to_vec(),
        });
    }
    let next_agent = snapshot.state().next_agent().unwrap_or(SUPERVISOR);
    let decision = mark_validation_complete(approved, next_agent);
    Ok(app
        .update_state(thread, decision, Some(HUMAN_VALIDATION))
        .await?)
}

/// The nodes' deltas logged on `thread` after step `after`, decoded from
/// the store: one [`Step`] per node of each superstep, in order. The input
/// (`__start__`), turn starts and pending steps (a pause) are skipped.
///
/// # Errors
///
/// When the log cannot be read, or a logged delta does not decode.
pub async fn logged_steps(
    store: &Store,
    thread: &str,
    after: u64,
) -> Result<Vec<Step>, GraphError> {
    let mut steps = Vec::new();
    for record in store.history(thread, after + 1..).await? {
        for (node, delta) in crate::logged::node_deltas::<AgentState>(thread, record)? {
            steps.push(Step { node, delta });
        }
    }
    Ok(steps)
}
