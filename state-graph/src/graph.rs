//! [`StateGraph`]: the builder. It only records what it is told; every
//! check happens in [`compile`](StateGraph::compile), so the errors come
//! together and name what they are about.

use crate::compile::Plan;
use crate::error::{GraphError, NodeError};
use crate::node::{Call, IntoNode, Node};
use crate::retry::RetryPolicy;
use crate::route::{AnyInput, FanOutFn, IntoRouter, RouterFn, Worker};
use crate::run::CompiledGraph;
use state_core::State;
use std::any::type_name;
use std::sync::Arc;

/// The entry of a graph: `add_edge(START, "first")`.
pub const START: &str = "__start__";

/// The exit of a graph: `add_edge("last", END)`, or a router's answer.
pub const END: &str = "__end__";

/// What a node reads: the state, or (a worker) its own input.
pub(crate) enum Body<S: State> {
    State(Node<S, S::Delta>),
    Worker(Node<AnyInput, S::Delta>),
}

/// One node as added.
pub(crate) struct NodeSpec<S: State> {
    pub name: String,
    pub body: Body<S>,
    pub retry: Option<RetryPolicy>,
}

/// A conditional edge as added: its source, router and declared targets.
pub(crate) struct BranchSpec<S> {
    pub from: String,
    pub router: RouterFn<S>,
    pub targets: Vec<String>,
}

/// A fan-out as added: its source, router and worker.
pub(crate) struct FanOutSpec<S> {
    pub from: String,
    pub router: FanOutFn<S>,
    pub worker: String,
}

/// A graph of nodes over the state `S`, LangGraph's `StateGraph`, typed.
///
/// Nodes are plain functions that read the state and return a delta;
/// edges and routers pick the next nodes. All nodes of a superstep see the
/// same state, and their deltas are applied together, in the order of
/// their names (LangGraph's), whichever finished first.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), state_graph::GraphError> {
/// use state_core::{AgentState, State};
/// use state_graph::{END, START, StateGraph};
///
/// #[derive(AgentState, Debug, Clone, PartialEq)]
/// struct Count {
///     #[reducer(append)]
///     log: Vec<String>,
///     n: u32,
/// }
///
/// fn step(s: &Count) -> CountDelta {
///     Count::delta().n(s.n + 1).log(vec![format!("step {}", s.n + 1)])
/// }
/// fn again(s: &Count) -> &'static str {
///     if s.n < 3 { "step" } else { END }
/// }
///
/// let mut g = StateGraph::<Count>::new();
/// g.add_node("step", step);
/// g.add_edge(START, "step");
/// g.add_conditional_edges("step", again, ["step", END]);
/// let app = g.compile()?;
///
/// let out = app.invoke(Count::delta()).await?;
/// assert_eq!(out.n, 3);
/// assert_eq!(out.log, ["step 1", "step 2", "step 3"]);
/// # Ok(())
/// # }
/// ```
pub struct StateGraph<S: State> {
    pub(crate) nodes: Vec<NodeSpec<S>>,
    pub(crate) edges: Vec<(String, String)>,
    pub(crate) branches: Vec<BranchSpec<S>>,
    pub(crate) fan_outs: Vec<FanOutSpec<S>>,
}

impl<S: State> Default for StateGraph<S> {
    fn default() -> Self {
        StateGraph {
            nodes: Vec::new(),
            edges: Vec::new(),
            branches: Vec::new(),
            fan_outs: Vec::new(),
        }
    }
}

impl<S: State> std::fmt::Debug for StateGraph<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateGraph")
            .field(
                "nodes",
                &self.nodes.iter().map(|n| &n.name).collect::<Vec<_>>(),
            )
            .field("edges", &self.edges)
            .finish_non_exhaustive()
    }
}

/// A node just added, to set its options: see [`StateGraph::add_node`].
#[derive(Debug)]
pub struct NodeOptions<'g, S: State> {
    graph: &'g mut StateGraph<S>,
    index: usize,
}

impl<S: State> NodeOptions<'_, S> {
    /// Retries the node when it fails, as `policy` says (LangGraph's
    /// `retry_policy=`).
    ///
    /// ```
    /// # use state_core::{AgentState, State};
    /// # #[derive(AgentState, Debug, Clone)]
    /// # struct S { n: u32 }
    /// # fn flaky(_: &S) -> Result<SDelta, std::io::Error> { Ok(S::delta()) }
    /// use state_graph::{RetryPolicy, StateGraph};
    ///
    /// let mut g = StateGraph::<S>::new();
    /// g.add_node("flaky", flaky).retry(RetryPolicy::new(3));
    /// ```
    pub fn retry(self, policy: RetryPolicy) -> Self {
        self.graph.nodes[self.index].retry = Some(policy);
        self
    }
}

impl<S> StateGraph<S>
where
    S: State + Clone + serde::Serialize + Send + Sync + 'static,
    S::Delta: serde::Serialize + Clone + Send + Sync + 'static,
{
    /// An empty graph.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a node named `name`: a function of the state returning a
    /// delta, in any of the forms of [`IntoNode`] (sync or async, fallible
    /// or not, with or without a [`Ctx`](crate::Ctx)). A duplicate or
    /// reserved name is reported by [`compile`](StateGraph::compile).
    pub fn add_node<M>(
        &mut self,
        name: impl Into<String>,
        node: impl IntoNode<S, S::Delta, M>,
    ) -> NodeOptions<'_, S> {
        self.push(name.into(), Body::State(node.into_node()))
    }

    /// Adds a worker: a node that reads its own input `I` instead of the
    /// state, run once per input a fan-out sends it (LangGraph's `Send`).
    /// It accepts the same forms as a node, over `I`: `fn(&I) -> R`,
    /// `async fn(Arc<I>) -> R`, with or without a context. Its handle is
    /// what [`add_fan_out`](StateGraph::add_fan_out) sends to.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_graph::GraphError> {
    /// use state_core::{AgentState, State};
    /// use state_graph::{END, START, StateGraph};
    ///
    /// #[derive(AgentState, Debug, Clone)]
    /// struct Jokes {
    ///     subjects: Vec<String>,
    ///     #[reducer(append)]
    ///     jokes: Vec<String>,
    /// }
    ///
    /// let mut g = StateGraph::<Jokes>::new();
    /// let joke = g.add_worker("joke", |subject: &String| {
    ///     Jokes::delta().jokes(vec![format!("a joke about {subject}")])
    /// });
    /// g.add_fan_out(START, &joke, |s: &Jokes| s.subjects.clone());
    /// g.add_edge("joke", END);
    /// let app = g.compile()?;
    /// let out = app.invoke(Jokes::delta().subjects(vec!["cats".into(), "dogs".into()])).await?;
    /// assert_eq!(out.jokes, ["a joke about cats", "a joke about dogs"]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn add_worker<I, M>(
        &mut self,
        name: impl Into<String>,
        worker: impl IntoNode<I, S::Delta, M>,
    ) -> Worker<I>
    where
        I: Send + Sync + 'static,
    {
        let name = name.into();
        let call = match worker.into_node().call {
            Call::Sync(f) => Call::Sync(Box::new(move |input: &AnyInput, ctx: &crate::Ctx| {
                match input.downcast_ref::<I>() {
                    Some(input) => f(input, ctx),
                    None => Err(wrong_input::<I>()),
                }
            }) as Box<_>),
            Call::Async(f) => Call::Async(Box::new(move |input: Arc<AnyInput>, ctx| {
                match input.downcast::<I>() {
                    Ok(input) => f(input, ctx),
                    Err(_) => Box::pin(async { Err(wrong_input::<I>()) }),
                }
            })),
        };
        self.push(name.clone(), Body::Worker(Node { call }));
        Worker::new(name)
    }

    fn push(&mut self, name: String, body: Body<S>) -> NodeOptions<'_, S> {
        self.nodes.push(NodeSpec {
            name,
            body,
            retry: None,
        });
        NodeOptions {
            index: self.nodes.len() - 1,
            graph: self,
        }
    }

    /// An edge: after `from` runs, `to` runs in the next superstep.
    /// `from` may be [`START`], `to` may be [`END`]. Several edges into one
    /// node in one superstep run it once.
    pub fn add_edge(&mut self, from: impl Into<String>, to: impl Into<String>) -> &mut Self {
        self.edges.push((from.into(), to.into()));
        self
    }

    /// Conditional edges: after `from` runs (and its superstep is applied),
    /// `router` reads the state and names the next node(s), or [`END`].
    /// `targets` lists every name it may return: `compile` checks them, and
    /// a router returning another name at run time is an error naming it.
    ///
    /// Unlike LangGraph, whose router sees only its own node's writes on
    /// top of the previous state, ours sees the whole superstep applied:
    /// what the next superstep will read.
    pub fn add_conditional_edges<M, T>(
        &mut self,
        from: impl Into<String>,
        router: impl IntoRouter<S, M>,
        targets: impl IntoIterator<Item = T>,
    ) -> &mut Self
    where
        T: Into<String>,
    {
        self.branches.push(BranchSpec {
            from: from.into(),
            router: router.into_router().0,
            targets: targets.into_iter().map(Into::into).collect(),
        });
        self
    }

    /// A fan-out (LangGraph's `Send`): after `from` runs, `router` reads the
    /// state and returns the inputs to send to `worker`, one run each, all
    /// in the next superstep. Their deltas are applied in send order, after
    /// those of the superstep's ordinary nodes.
    pub fn add_fan_out<I, F, It>(
        &mut self,
        from: impl Into<String>,
        worker: &Worker<I>,
        router: F,
    ) -> &mut Self
    where
        I: Send + Sync + 'static,
        F: Fn(&S) -> It + Send + Sync + 'static,
        It: IntoIterator<Item = I>,
    {
        self.fan_outs.push(FanOutSpec {
            from: from.into(),
            router: Box::new(move |state| {
                router(state)
                    .into_iter()
                    .map(|input| Arc::new(input) as Arc<AnyInput>)
                    .collect()
            }),
            worker: worker.name.clone(),
        });
        self
    }

    /// Checks the graph and makes it runnable. A wrong graph is an error
    /// naming what is wrong, every problem at once: an edge or target that
    /// is not a node, a duplicate or reserved name, no edge from `START`, a
    /// node no edge reaches, a node with no edge out, a node that can never
    /// reach `END`.
    pub fn compile(self) -> Result<CompiledGraph<S>, GraphError> {
        Plan::build(self).map(CompiledGraph::new)
    }
}

fn wrong_input<I>() -> NodeError {
    NodeError::msg(format!("the worker's input is not a {}", type_name::<I>()))
}
