//! LangGraph's plan-and-execute agent: a planner writes a list of steps,
//! an executor does the first one and records it in `past_steps`, a
//! replanner either answers or writes the steps still to do, and the graph
//! loops through `agent` and `replan` until it answers ([`build_graph`]).
//! The Python original heads `examples/langgraph/plan_and_execute.rs`.
//!
//! `past_steps: Annotated[List[Tuple], operator.add]` is
//! `#[reducer(append)] past_steps: Vec<(String, String)>`: each execution
//! appends its `(task, result)`; `plan` and `response` are last-write-wins.

use super::NodeFailure;
use state_core::{AgentState, State};
use state_graph::{CompiledGraph, END, GraphError, START, StateGraph};
use std::sync::Arc;

/// The agent's state (Python: `class PlanExecute(TypedDict)`).
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct PlanExecute {
    /// The user's question.
    pub input: String,
    /// The steps still to do, next first.
    pub plan: Vec<String>,
    /// Every step done, with its result, in order.
    #[reducer(append)]
    pub past_steps: Vec<(String, String)>,
    /// The final answer; empty until the replanner gives one.
    pub response: String,
}

/// What the replanner decides (Python: `Act.action: Union[Response, Plan]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Answer the user: the run ends.
    Response(String),
    /// The steps still to do.
    Plan(Vec<String>),
}

/// The canned models: the planner's steps, the executor's answer to each
/// task, and the replanner's answer once the plan is done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CannedModels {
    /// What the planner returns for any input.
    pub steps: Vec<String>,
    /// The executor's result for each task, by task.
    pub results: Vec<(String, String)>,
    /// What the replanner answers when no step is left.
    pub answer: String,
}

impl CannedModels {
    /// The planner (Python: `planner.ainvoke(..)`, a `Plan`).
    fn plan(&self, _input: &str) -> Vec<String> {
        self.steps.clone()
    }

    /// The executor agent: the result of one task, or `None` for a task it
    /// has no canned answer for.
    fn execute(&self, task: &str) -> Option<String> {
        self.results
            .iter()
            .find(|(known, _)| known == task)
            .map(|(_, result)| result.clone())
    }

    /// The replanner (Python: `replanner.ainvoke(state)`): the planned steps
    /// not done yet, or the answer when there are none.
    fn replan(&self, state: &PlanExecute) -> Action {
        let left: Vec<String> = state
            .plan
            .iter()
            .filter(|step| !state.past_steps.iter().any(|(done, _)| done == *step))
            .cloned()
            .collect();
        if left.is_empty() {
            Action::Response(self.answer.clone())
        } else {
            Action::Plan(left)
        }
    }
}

/// Node `planner` (Python: `async def plan_step`).
pub async fn plan_step(models: Arc<CannedModels>, state: Arc<PlanExecute>) -> PlanExecuteDelta {
    PlanExecute::delta().plan(models.plan(&state.input))
}

/// Node `agent` (Python: `async def execute_step`): executes the first
/// step of the plan.
pub async fn execute_step(
    models: Arc<CannedModels>,
    state: Arc<PlanExecute>,
) -> Result<PlanExecuteDelta, NodeFailure> {
    let task = state
        .plan
        .first()
        .ok_or_else(|| NodeFailure::new("agent", "the plan is empty"))?;
    // The canned executor needs only the task, not the tutorial's prompt
    // listing the whole plan.
    let result = models
        .execute(task)
        .ok_or_else(|| NodeFailure::new("agent", format!("no canned result for {task:?}")))?;
    Ok(PlanExecute::delta().past_steps([(task.clone(), result)]))
}

/// Node `replan` (Python: `async def replan_step`).
pub async fn replan_step(models: Arc<CannedModels>, state: Arc<PlanExecute>) -> PlanExecuteDelta {
    match models.replan(&state) {
        Action::Response(response) => PlanExecute::delta().response(response),
        Action::Plan(steps) => PlanExecute::delta().plan(steps),
    }
}

/// After `replan`: the end once there is a response, else `agent`.
pub fn should_end(state: &PlanExecute) -> &'static str {
    if state.response.is_empty() {
        "agent"
    } else {
        END
    }
}

/// Supersteps one run may take: the tutorial's `config =
/// {"recursion_limit": 50}`. A plan of n steps takes 2n + 1.
pub const RECURSION_LIMIT: usize = 50;

/// The tutorial's graph (Python: `workflow`, then `workflow.compile()`),
/// its nodes answering from `models`, stopped after [`RECURSION_LIMIT`]
/// supersteps:
///
/// ```text
/// START -> planner -> agent -> replan -?-> agent | END
/// ```
///
/// The Python passes the limit with each run (`app.astream(inputs,
/// config={"recursion_limit": 50})`); ours belongs to the compiled graph
/// (`with_recursion_limit` again to change it).
pub fn build_graph(models: CannedModels) -> Result<CompiledGraph<PlanExecute>, GraphError> {
    let models = Arc::new(models);
    let mut workflow = StateGraph::<PlanExecute>::new();
    // The nodes are async, as the tutorial's: each gets the state as an
    // `Arc` and the models it closes over.
    let m = Arc::clone(&models);
    workflow.add_node("planner", move |s: Arc<PlanExecute>| {
        plan_step(m.clone(), s)
    });
    let m = Arc::clone(&models);
    workflow.add_node("agent", move |s: Arc<PlanExecute>| {
        execute_step(m.clone(), s)
    });
    let m = Arc::clone(&models);
    workflow.add_node("replan", move |s: Arc<PlanExecute>| {
        replan_step(m.clone(), s)
    });
    workflow.add_edge(START, "planner");
    workflow.add_edge("planner", "agent");
    workflow.add_edge("agent", "replan");
    workflow.add_conditional_edges("replan", should_end, ["agent", END]);
    Ok(workflow.compile()?.with_recursion_limit(RECURSION_LIMIT))
}

/// The tutorial's question.
pub const QUESTION: &str = "what is the hometown of the mens 2024 Australia open winner?";

/// The canned models for [`QUESTION`].
pub fn demo_models() -> CannedModels {
    let pair = |task: &str, result: &str| (task.to_owned(), result.to_owned());
    CannedModels {
        steps: vec![
            "Identify the winner of the men's singles at the 2024 Australian Open.".into(),
            "Find the hometown of that winner.".into(),
        ],
        results: vec![
            pair(
                "Identify the winner of the men's singles at the 2024 Australian Open.",
                "Jannik Sinner won the men's singles at the 2024 Australian Open.",
            ),
            pair(
                "Find the hometown of that winner.",
                "Jannik Sinner's hometown is Sexten (Sesto), in South Tyrol, Italy.",
            ),
        ],
        answer:
            "The 2024 Australian Open men's singles winner, Jannik Sinner, is from Sexten, Italy."
                .into(),
    }
}
