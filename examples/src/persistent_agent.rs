//! An agent whose run outlives the process: a graph on a SQLite file that
//! plans, asks for approval (`ctx.interrupt`) and stops there. The next
//! run, in another process, finds the question in the file and resumes
//! with the answer, exactly where the first one stopped.
//!
//! ```text
//! START -> plan -> approve (pauses for the answer) -> execute -> END
//!                          (rejected)                -> END
//! ```

use serde_json::{Value, json};
use state_core::{AgentState, Message, Messages, State};
use state_graph::{CompiledGraph, Ctx, END, GraphError, NodeError, START, StateGraph};
use state_store::{Store, StoreError};
use std::path::Path;

/// The agent's state.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct PlanState {
    /// The conversation, kept across turns.
    #[reducer(add_messages)]
    pub messages: Messages,
    /// Every plan carried out, kept across turns.
    #[reducer(append)]
    pub done: Vec<String>,
    /// This turn's plan.
    #[scope(turn)]
    pub plan: Vec<String>,
    /// The answer to this turn's question.
    #[scope(turn)]
    pub approved: Option<bool>,
}

/// The thread every run works on.
pub const THREAD: &str = "agent";

/// What a new turn asks the agent to do.
pub const TASK: &str = "Back up the photos";

/// Plans the task of the last message: a canned planner.
fn plan(s: &PlanState) -> PlanStateDelta {
    let task = s
        .messages
        .iter()
        .last()
        .map(Message::text)
        .unwrap_or_default();
    let plan = vec![
        format!("list what \"{task}\" needs"),
        format!("do \"{task}\""),
        "report back".to_owned(),
    ];
    let text = format!("Plan: {}.", plan.join("; "));
    PlanState::delta()
        .plan(plan)
        .messages(vec![Message::ai(text)])
}

/// Pauses for the user's approval; resumed, records the answer.
fn approve(s: &PlanState, ctx: &Ctx) -> Result<PlanStateDelta, NodeError> {
    let answer = ctx.interrupt(json!({"question": "Run this plan?", "plan": s.plan}))?;
    let approved = matches!(&answer, Value::String(a) if a.eq_ignore_ascii_case("yes"));
    let reply = if approved {
        "Running it."
    } else {
        "Plan dropped."
    };
    Ok(PlanState::delta()
        .approved(approved)
        .messages(vec![Message::ai(reply)]))
}

/// Carries the plan out.
fn execute(s: &PlanState) -> PlanStateDelta {
    let summary = s.plan.join("; ");
    let reply = format!("Done: {summary}.");
    PlanState::delta()
        .done(vec![summary])
        .messages(vec![Message::ai(reply)])
}

fn after_approval(s: &PlanState) -> &'static str {
    if s.approved == Some(true) {
        "execute"
    } else {
        END
    }
}

/// The graph: plan, ask, then carry the plan out if approved.
pub fn graph() -> Result<CompiledGraph<PlanState>, GraphError> {
    let mut g = StateGraph::<PlanState>::new();
    g.add_node("plan", plan);
    g.add_node("approve", approve);
    g.add_node("execute", execute);
    g.add_edge(START, "plan");
    g.add_edge("plan", "approve");
    g.add_conditional_edges("approve", after_approval, ["execute", END]);
    g.add_edge("execute", END);
    g.compile()
}

/// What one run did.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// Whether it answered a question left by an earlier run.
    pub resumed: bool,
    /// The question it stopped at, waiting for the next run's answer.
    pub question: Option<Value>,
    /// The thread's state after the run.
    pub state: PlanState,
}

/// One run, as one process does it: answers the pending question with
/// `answer` if there is one (the run goes on from where it paused); with
/// nothing pending, starts a new turn on [`TASK`]. A pending question and
/// no answer: asks it again, changing nothing.
pub async fn run_once(path: &Path, answer: Option<&str>) -> Result<Report, Error> {
    let store = Store::sqlite(path).await?;
    let app = graph()?.with_store(store.clone());
    let pending = match app.pending_interrupts(THREAD).await {
        // A new file: no thread yet, so nothing pending.
        Err(GraphError::Store(StoreError::ThreadNotFound { .. })) => Vec::new(),
        other => other?,
    };
    let outcome = match (pending.first(), answer) {
        (Some(question), None) => {
            let thread = store.thread::<PlanState>(THREAD).await?;
            return Ok(Report {
                resumed: false,
                question: Some(question.value.clone()),
                state: thread.into_state(),
            });
        }
        (Some(_), Some(answer)) => app.resume(THREAD, json!(answer)).await?,
        (None, _) => {
            let input = PlanState::delta().messages(vec![Message::human(TASK)]);
            app.invoke_thread(THREAD, input).await?
        }
    };
    Ok(Report {
        resumed: !pending.is_empty(),
        question: outcome.interrupts().first().map(|i| i.value.clone()),
        state: outcome.into_state(),
    })
}

/// What can go wrong: the file, or the run.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The SQLite file.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The graph's run.
    #[error(transparent)]
    Graph(#[from] GraphError),
}
