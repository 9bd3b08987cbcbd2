//! What a run on a thread returns: [`Outcome`], and its pending
//! [`Interrupt`]s.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A pause of a run for a person: what a node passed to
/// [`Ctx::interrupt`](crate::Ctx::interrupt), and the id to answer it by.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Interrupt {
    /// Answers it in [`Resume::by_id`](crate::Resume::by_id) when several
    /// are pending.
    pub id: String,
    /// The node that paused.
    pub node: String,
    /// What the node showed (a question, a plan).
    pub value: Value,
    /// The namespace of the subgraph the node is in (`node:task-id`
    /// segments, outermost first); empty for a node of the graph itself.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub namespace: Vec<String>,
}

/// How a run on a thread ended: at `END`, or paused by interrupts.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), state_graph::GraphError> {
/// use serde_json::json;
/// use state_core::{AgentState, State};
/// use state_graph::{Ctx, END, NodeError, START, StateGraph};
///
/// #[derive(AgentState, Debug, Clone)]
/// struct Plan {
///     approved: bool,
/// }
///
/// fn approve(_: &Plan, ctx: &Ctx) -> Result<PlanDelta, NodeError> {
///     let answer = ctx.interrupt(json!("run the plan?"))?;
///     Ok(Plan::delta().approved(answer == "yes"))
/// }
///
/// let mut g = StateGraph::<Plan>::new();
/// g.add_node("approve", approve);
/// g.add_edge(START, "approve");
/// g.add_edge("approve", END);
/// let app = g.compile()?.with_store(state_store::Store::memory());
///
/// let out = app.invoke_thread("t1", Plan::delta()).await?;
/// assert!(out.is_interrupted());
/// assert_eq!(out.interrupts()[0].value, "run the plan?");
///
/// let out = app.resume("t1", json!("yes")).await?;
/// assert!(!out.is_interrupted());
/// assert!(out.state().approved);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Outcome<S> {
    pub(crate) thread: String,
    pub(crate) state: S,
    pub(crate) seq: u64,
    pub(crate) interrupts: Vec<Interrupt>,
    /// The nodes that run when the thread goes on; empty at `END`.
    pub(crate) next: Vec<String>,
}

impl<S> Outcome<S> {
    /// The state after the last committed superstep.
    pub fn state(&self) -> &S {
        &self.state
    }

    /// The state, consuming the outcome.
    pub fn into_state(self) -> S {
        self.state
    }

    /// The thread's last step.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// The thread.
    pub fn thread(&self) -> &str {
        &self.thread
    }

    /// Whether the run paused for a person: a node's interrupt (see
    /// [`interrupts`](Outcome::interrupts)) or a static breakpoint
    /// (`interrupt_before` / `interrupt_after`, with no interrupt listed).
    /// [`next`](Outcome::next) says what runs when the thread goes on.
    pub fn is_interrupted(&self) -> bool {
        !self.next.is_empty()
    }

    /// The nodes that run when the thread goes on (LangGraph's
    /// `get_state().next`): those paused, or those after a breakpoint;
    /// empty when the run reached `END`.
    pub fn next(&self) -> &[String] {
        &self.next
    }

    /// The pending interrupts, in the superstep's order; empty when the run
    /// reached `END`.
    pub fn interrupts(&self) -> &[Interrupt] {
        &self.interrupts
    }
}

/// The answer(s) given to [`resume`](crate::CompiledGraph::resume): one
/// value for the one pending interrupt (any `serde_json::Value` converts),
/// or answers by interrupt id when several are pending (LangGraph's
/// `Command(resume={id: value})`).
///
/// ```
/// use serde_json::json;
/// use state_graph::Resume;
///
/// let one: Resume = json!("yes").into();
/// let many = Resume::by_id([("3f2a…", json!("yes")), ("9c1b…", json!(false))]);
/// # let _ = (one, many);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Resume {
    /// The answer to the only pending interrupt.
    One(Value),
    /// Answers by interrupt id; pending interrupts not named stay pending.
    ById(Vec<(String, Value)>),
}

impl Resume {
    /// Answers by interrupt id.
    pub fn by_id<K: Into<String>>(answers: impl IntoIterator<Item = (K, Value)>) -> Resume {
        Resume::ById(answers.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }
}

impl From<Value> for Resume {
    fn from(value: Value) -> Resume {
        Resume::One(value)
    }
}
