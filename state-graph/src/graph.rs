//! [`StateGraph`]: the builder. It only records what it is told (in
//! `spec.rs`); every check happens in [`compile`](StateGraph::compile), so
//! the errors come together and name what they are about.

use crate::error::{GraphError, NodeError};
use crate::graph_state::GraphState;
use crate::node::{Call, IntoNode, Node};
use crate::plan::Plan;
use crate::retry::RetryPolicy;
use crate::route::{AnyInput, IntoRouter, Worker};
use crate::run::CompiledGraph;
use crate::spec::{Body, BranchSpec, Destination, EdgeSpec, FanOutSpec, NodeSpec, Spec};
use state_core::State;
use std::any::type_name;
use std::sync::Arc;

/// A graph of nodes over the state `S`, LangGraph's `StateGraph`, typed;
/// its runs carry a context of type `C` (`()` by default: see
/// [`with_context`](CompiledGraph::with_context)).
///
/// Nodes are plain functions that read the state and return a delta (or a
/// [`Command`](crate::Command)); edges and routers pick the next nodes.
/// All nodes of a superstep see the same state, and their deltas are
/// applied together, in the order of their names (LangGraph's), whichever
/// finished first.
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
pub struct StateGraph<S: State, C = ()> {
    pub(crate) spec: Spec<S, C>,
}

impl<S: State, C> Default for StateGraph<S, C> {
    fn default() -> Self {
        StateGraph {
            spec: Spec::default(),
        }
    }
}

impl<S: State, C> std::fmt::Debug for StateGraph<S, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateGraph")
            .field(
                "nodes",
                &self.spec.nodes.iter().map(|n| &n.name).collect::<Vec<_>>(),
            )
            .field(
                "edges",
                &self
                    .spec
                    .edges
                    .iter()
                    .map(|e| (&e.from, &e.to))
                    .collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

/// A node just added, to set its options: see [`StateGraph::add_node`].
pub struct NodeOptions<'g, S: State, C> {
    graph: &'g mut StateGraph<S, C>,
    index: usize,
}

impl<S: State, C> std::fmt::Debug for NodeOptions<'_, S, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeOptions")
            .field("node", &self.graph.spec.nodes[self.index].name)
            .finish()
    }
}

impl<S: State, C> NodeOptions<'_, S, C> {
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
        self.graph.spec.nodes[self.index].retry = Some(policy);
        self
    }

    /// Where a [`Command`](crate::Command) the node returns may go
    /// (LangGraph's `destinations=`): node names, [`END`](crate::END), and
    /// the workers it sends to (`Destination::from(&worker)`). `compile`
    /// counts them as the node's edges out, to prove every node reachable
    /// and every loop able to end; a command going anywhere else fails the
    /// run with an error naming the target. Called again, it adds to the
    /// list.
    ///
    /// ```
    /// # use state_core::{AgentState, State};
    /// # #[derive(AgentState, Debug, Clone)]
    /// # struct S { n: u32 }
    /// use state_graph::{Command, END, StateGraph};
    ///
    /// fn supervisor(s: &S) -> Command<SDelta> {
    ///     Command::goto(if s.n < 3 { "worker" } else { END })
    /// }
    /// let mut g = StateGraph::<S>::new();
    /// g.add_node("supervisor", supervisor).destinations(["worker", END]);
    /// ```
    pub fn destinations<T: Into<Destination>>(self, targets: impl IntoIterator<Item = T>) -> Self {
        let declared = self.graph.spec.nodes[self.index]
            .destinations
            .get_or_insert_with(Vec::new);
        declared.extend(targets.into_iter().map(Into::into));
        self
    }
}

/// The sources of an edge: one node name (or [`START`](crate::START)), or
/// several (a join edge: its target runs once all of them ran).
pub trait EdgeSources {
    /// The source names.
    #[doc(hidden)]
    fn into_sources(self) -> Vec<String>;
}

impl EdgeSources for &str {
    fn into_sources(self) -> Vec<String> {
        vec![self.to_owned()]
    }
}

impl EdgeSources for String {
    fn into_sources(self) -> Vec<String> {
        vec![self]
    }
}

impl EdgeSources for &String {
    fn into_sources(self) -> Vec<String> {
        vec![self.clone()]
    }
}

impl<T: AsRef<str>, const N: usize> EdgeSources for [T; N] {
    fn into_sources(self) -> Vec<String> {
        self.iter().map(|s| s.as_ref().to_owned()).collect()
    }
}

impl<T: AsRef<str>> EdgeSources for Vec<T> {
    fn into_sources(self) -> Vec<String> {
        self.iter().map(|s| s.as_ref().to_owned()).collect()
    }
}

impl<T: AsRef<str>> EdgeSources for &[T] {
    fn into_sources(self) -> Vec<String> {
        self.iter().map(|s| s.as_ref().to_owned()).collect()
    }
}

impl<S, C> StateGraph<S, C>
where
    S: GraphState,
    C: Send + Sync + 'static,
{
    /// An empty graph.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a node named `name`: a function of the state returning a
    /// delta or a [`Command`](crate::Command), in any of the forms of
    /// [`IntoNode`] (sync or async, fallible or not, with or without a
    /// [`Ctx`](crate::Ctx)). A duplicate or reserved name is reported by
    /// [`compile`](StateGraph::compile).
    pub fn add_node<M>(
        &mut self,
        name: impl Into<String>,
        node: impl IntoNode<S, C, S::Delta, M>,
    ) -> NodeOptions<'_, S, C> {
        self.push(name.into(), Body::State(node.into_node()))
    }

    /// Adds a worker: a node that reads its own input `I` instead of the
    /// state, run once per input a fan-out (or a
    /// [`Command`](crate::Command)'s [`send`](Worker::send)) sends it
    /// (LangGraph's `Send`). It accepts the same forms as a node, over
    /// `I`: `fn(&I) -> R`, `async fn(Arc<I>) -> R`, with or without a
    /// context. Its handle is what
    /// [`add_fan_out`](StateGraph::add_fan_out) sends to.
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
        worker: impl IntoNode<I, C, S::Delta, M>,
    ) -> Worker<I>
    where
        I: Send + Sync + 'static,
    {
        let name = name.into();
        let call = match worker.into_node().call {
            Call::Sync(f) => Call::Sync(Box::new(move |input: &AnyInput, ctx: &crate::Ctx<C>| {
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

    /// Adds a compiled graph of the same state type as one node (LangGraph's
    /// `add_node(name, compiled_subgraph)`): when it runs, the child graph
    /// runs from its `START` on the parent's state, superstep after
    /// superstep, and what its steps wrote, applied one after the other
    /// (two child steps writing one plain field are not a conflict), is the
    /// node's write in the parent's superstep.
    ///
    /// With a store, each child superstep is logged under the parent's
    /// thread (a `subgraph` step, with its namespace: LangGraph's checkpoint
    /// namespace), so a crash inside the child goes on inside it; a node
    /// pausing inside pauses the parent, and `resume` on the parent's thread
    /// answers it (by id too), without running again what the child
    /// finished. A child node's [`Command::to_parent`](crate::Command::to_parent)
    /// ends the child and routes in this graph, through this node's
    /// [`destinations`](NodeOptions::destinations). The child's own store,
    /// recursion limit and context bindings are not used: the parent's run
    /// is given to it; its context type is the parent's.
    ///
    /// Unlike LangGraph, whose subgraph node writes the child's whole final
    /// state back through the parent's reducers (a list the child only read
    /// is appended again), the write is what the child's steps wrote.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_graph::GraphError> {
    /// use state_core::{AgentState, State};
    /// use state_graph::{END, START, StateGraph};
    ///
    /// #[derive(AgentState, Debug, Clone)]
    /// struct Team {
    ///     #[reducer(append)]
    ///     log: Vec<String>,
    ///     last: String,
    /// }
    /// fn step(name: &'static str) -> impl Fn(&Team) -> TeamDelta {
    ///     move |_| Team::delta().log(vec![name.to_owned()]).last(name)
    /// }
    ///
    /// let mut research = StateGraph::<Team>::new();
    /// research.add_node("search", step("search"));
    /// research.add_node("read", step("read"));
    /// research.add_edge(START, "search").add_edge("search", "read").add_edge("read", END);
    ///
    /// let mut g = StateGraph::<Team>::new();
    /// g.add_subgraph("research", research.compile()?);
    /// g.add_node("write", step("write"));
    /// g.add_edge(START, "research").add_edge("research", "write").add_edge("write", END);
    /// let out = g.compile()?.invoke(Team::delta()).await?;
    /// assert_eq!(out.log, ["search", "read", "write"]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn add_subgraph(
        &mut self,
        name: impl Into<String>,
        child: CompiledGraph<S, C>,
    ) -> NodeOptions<'_, S, C> {
        self.push(
            name.into(),
            Body::Subgraph(Arc::new(crate::run::SameState { child })),
        )
    }

    /// Adds a compiled graph of another state type `T` as one node: when it
    /// runs, `into_child` of the parent's state is applied to a fresh `T`
    /// (as the child's input), the child runs, and `from_child` of its final
    /// state is the node's write. LangGraph's node function that invokes a
    /// child graph, with everything [`add_subgraph`](Self::add_subgraph)
    /// says of logging, pausing and resuming. As LangGraph runs that node
    /// function again from its start when a pause inside is answered,
    /// `into_child` runs again on `resume` (the child's finished steps do
    /// not); reading a snapshot (`get_state`) does not call it.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_graph::GraphError> {
    /// use state_core::{AgentState, State};
    /// use state_graph::{END, START, StateGraph};
    ///
    /// #[derive(AgentState, Debug, Clone)]
    /// struct Report {
    ///     topic: String,
    ///     summary: String,
    /// }
    /// #[derive(AgentState, Debug, Clone)]
    /// struct Notes {
    ///     subject: String,
    ///     #[reducer(append)]
    ///     notes: Vec<String>,
    /// }
    ///
    /// let mut notes = StateGraph::<Notes>::new();
    /// notes.add_node("take", |n: &Notes| Notes::delta().notes(vec![format!("on {}", n.subject)]));
    /// notes.add_edge(START, "take").add_edge("take", END);
    ///
    /// let mut g = StateGraph::<Report>::new();
    /// g.add_subgraph_mapped(
    ///     "notes",
    ///     notes.compile()?,
    ///     |r: &Report| Notes::delta().subject(r.topic.clone()),
    ///     |n: &Notes| Report::delta().summary(n.notes.join("; ")),
    /// );
    /// g.add_edge(START, "notes").add_edge("notes", END);
    /// let out = g.compile()?.invoke(Report::delta().topic("rust")).await?;
    /// assert_eq!(out.summary, "on rust");
    /// # Ok(())
    /// # }
    /// ```
    pub fn add_subgraph_mapped<T, I, O>(
        &mut self,
        name: impl Into<String>,
        child: CompiledGraph<T, C>,
        into_child: I,
        from_child: O,
    ) -> NodeOptions<'_, S, C>
    where
        T: GraphState,
        I: Fn(&S) -> T::Delta + Send + Sync + 'static,
        O: Fn(&T) -> S::Delta + Send + Sync + 'static,
    {
        self.push(
            name.into(),
            Body::Subgraph(Arc::new(crate::run::Mapped {
                child,
                into_child: Arc::new(into_child),
                from_child: Arc::new(from_child),
            })),
        )
    }

    fn push(&mut self, name: String, body: Body<S, C>) -> NodeOptions<'_, S, C> {
        self.spec.nodes.push(NodeSpec {
            name,
            body,
            retry: None,
            destinations: None,
        });
        NodeOptions {
            index: self.spec.nodes.len() - 1,
            graph: self,
        }
    }

    /// An edge: after `from` runs, `to` runs in the next superstep. `from`
    /// may be [`START`](crate::START), `to` may be [`END`](crate::END).
    /// Several edges into one node in one superstep run it once.
    ///
    /// With several sources (`add_edge(["a", "b"], "c")`, LangGraph's join
    /// edge), `to` runs once, in the superstep after the last of them ran,
    /// however long each branch is; then it waits for all of them again.
    /// What ran is logged with each step, so a join holds across a pause
    /// or a crash.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_graph::GraphError> {
    /// use state_core::{AgentState, State};
    /// use state_graph::{END, START, StateGraph};
    ///
    /// #[derive(AgentState, Debug, Clone)]
    /// struct Log {
    ///     #[reducer(append)]
    ///     ran: Vec<String>,
    /// }
    /// fn node(name: &'static str) -> impl Fn(&Log) -> LogDelta {
    ///     move |_| Log::delta().ran(vec![name.to_owned()])
    /// }
    ///
    /// let mut g = StateGraph::<Log>::new();
    /// for name in ["a", "a2", "b", "join"] {
    ///     g.add_node(name, node(name));
    /// }
    /// g.add_edge(START, "a").add_edge("a", "a2").add_edge(START, "b");
    /// g.add_edge(["a2", "b"], "join");
    /// g.add_edge("join", END);
    /// let out = g.compile()?.invoke(Log::delta()).await?;
    /// assert_eq!(out.ran, ["a", "b", "a2", "join"]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn add_edge(&mut self, from: impl EdgeSources, to: impl Into<String>) -> &mut Self {
        self.spec.edges.push(EdgeSpec {
            from: from.into_sources(),
            to: to.into(),
        });
        self
    }

    /// Conditional edges: after `from` runs (and its superstep is applied),
    /// `router` reads the state (and, in the `fn(&S, &C)` form, the run's
    /// context) and names the next node(s), or [`END`](crate::END).
    /// `targets` lists every name it may return: `compile` checks them,
    /// and a router returning another name at run time is an error naming
    /// it.
    ///
    /// Unlike LangGraph, whose router sees only its own node's writes on
    /// top of the previous state, ours sees the whole superstep applied:
    /// what the next superstep will read. (A router deciding on a state
    /// its own next superstep will not see would be deciding on stale
    /// data; and seeing one node's writes alone would cost a copy of the
    /// state per router.)
    pub fn add_conditional_edges<M, T>(
        &mut self,
        from: impl Into<String>,
        router: impl IntoRouter<S, C, M>,
        targets: impl IntoIterator<Item = T>,
    ) -> &mut Self
    where
        T: Into<String>,
    {
        self.spec.branches.push(BranchSpec {
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
        self.spec.fan_outs.push(FanOutSpec {
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

    /// Static breakpoints (LangGraph's `interrupt_before=`): a run on a
    /// thread pauses before a superstep that would run any of `nodes`, as
    /// if interrupted; [`continue_thread`](CompiledGraph::continue_thread)
    /// runs it (after, say, an
    /// [`update_state`](CompiledGraph::update_state) that edits what the
    /// node will read). A run in memory cannot pause: it fails, saying so.
    /// `"*"` names every node. A run can be given its own
    /// ([`CompiledGraph::with_interrupt_before`]).
    pub fn interrupt_before<T: Into<String>>(
        &mut self,
        nodes: impl IntoIterator<Item = T>,
    ) -> &mut Self {
        self.spec
            .interrupt_before
            .extend(nodes.into_iter().map(Into::into));
        self
    }

    /// Static breakpoints (LangGraph's `interrupt_after=`): a run on a
    /// thread pauses after a superstep that ran any of `nodes` (its writes
    /// committed); [`continue_thread`](CompiledGraph::continue_thread) goes
    /// on. `"*"` names every node; a run can be given its own
    /// ([`CompiledGraph::with_interrupt_after`]).
    pub fn interrupt_after<T: Into<String>>(
        &mut self,
        nodes: impl IntoIterator<Item = T>,
    ) -> &mut Self {
        self.spec
            .interrupt_after
            .extend(nodes.into_iter().map(Into::into));
        self
    }

    /// Checks the graph and makes it runnable. A wrong graph is an error
    /// naming what is wrong, every problem at once: an edge, target or
    /// destination that is not a node, a duplicate or reserved name, no
    /// edge from `START`, a node no edge reaches, a node with no edge out,
    /// a node that can never reach `END`, a breakpoint on no node.
    pub fn compile(self) -> Result<CompiledGraph<S, C>, GraphError> {
        Plan::build(self.spec).map(CompiledGraph::new)
    }
}

fn wrong_input<I>() -> NodeError {
    NodeError::msg(format!("the worker's input is not a {}", type_name::<I>()))
}
