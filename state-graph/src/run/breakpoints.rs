//! A run's own static breakpoints (LangGraph's `interrupt_before=` and
//! `interrupt_after=` given to `invoke`/`stream`, and the Agent Server's
//! run fields of those names): set on a cheap clone of the graph, they
//! take the place of those it was compiled with.

use super::CompiledGraph;
use crate::error::GraphError;
use crate::graph_state::GraphState;
use std::sync::Arc;

/// The nodes runs pause before and after, by node index.
pub(crate) struct Breakpoints {
    before: Vec<bool>,
    after: Vec<bool>,
}

/// Which side of a node a breakpoint is on.
#[derive(Clone, Copy)]
enum Side {
    Before,
    After,
}

impl<S, C> CompiledGraph<S, C>
where
    S: GraphState,
    C: Send + Sync + 'static,
{
    /// This graph, its runs pausing before any of `nodes` (`"*"`: every
    /// node) in place of the nodes it was compiled to pause before
    /// ([`StateGraph::interrupt_before`](crate::StateGraph::interrupt_before));
    /// none: no breakpoint before any node. As LangGraph's
    /// `invoke(.., interrupt_before=[..])`: for one run, set by its caller
    /// (a debugger, the Agent Server's run field). A cheap clone of the
    /// graph; a subgraph keeps its own. A name that is not a node is an
    /// error naming it.
    ///
    /// ```
    /// use state_core::{AgentState, State};
    /// use state_graph::{END, START, StateGraph};
    /// use state_store::Store;
    /// # #[derive(AgentState, Debug, Clone, PartialEq)]
    /// # struct Chat { turns: u32 }
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let mut g = StateGraph::<Chat>::new();
    /// g.add_node("plan", |s: &Chat| Chat::delta().turns(s.turns + 1));
    /// g.add_node("act", |s: &Chat| Chat::delta().turns(s.turns + 1));
    /// g.add_edge(START, "plan");
    /// g.add_edge("plan", "act");
    /// g.add_edge("act", END);
    /// let app = g.compile()?.with_store(Store::memory());
    ///
    /// let paused = app.with_interrupt_before(["act"])?.invoke_thread("t", Chat::delta()).await?;
    /// assert_eq!(paused.next(), ["act"]);
    /// assert_eq!(app.continue_thread("t").await?.state().turns, 2);
    /// assert!(app.with_interrupt_before(["nope"]).is_err());
    /// # Ok(())
    /// # }
    /// ```
    pub fn with_interrupt_before<T: AsRef<str>>(
        &self,
        nodes: impl IntoIterator<Item = T>,
    ) -> Result<Self, GraphError> {
        self.with_breakpoints(Side::Before, nodes, "with_interrupt_before")
    }

    /// This graph, its runs pausing after any of `nodes` (`"*"`: every
    /// node) in place of the nodes it was compiled to pause after
    /// ([`StateGraph::interrupt_after`](crate::StateGraph::interrupt_after));
    /// as [`with_interrupt_before`](Self::with_interrupt_before) otherwise.
    ///
    /// ```
    /// use state_core::{AgentState, State};
    /// use state_graph::{END, START, StateGraph};
    /// use state_store::Store;
    /// # #[derive(AgentState, Debug, Clone, PartialEq)]
    /// # struct Chat { turns: u32 }
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let mut g = StateGraph::<Chat>::new();
    /// g.add_node("plan", |s: &Chat| Chat::delta().turns(s.turns + 1));
    /// g.add_node("act", |s: &Chat| Chat::delta().turns(s.turns + 1));
    /// g.add_edge(START, "plan");
    /// g.add_edge("plan", "act");
    /// g.add_edge("act", END);
    /// let app = g.compile()?.with_store(Store::memory());
    ///
    /// let paused = app.with_interrupt_after(["*"])?.invoke_thread("t", Chat::delta()).await?;
    /// assert_eq!((paused.state().turns, paused.next()), (1, ["act".to_owned()].as_slice()));
    /// # Ok(())
    /// # }
    /// ```
    pub fn with_interrupt_after<T: AsRef<str>>(
        &self,
        nodes: impl IntoIterator<Item = T>,
    ) -> Result<Self, GraphError> {
        self.with_breakpoints(Side::After, nodes, "with_interrupt_after")
    }

    /// The graph with one side of its breakpoints set to `nodes`.
    fn with_breakpoints<T: AsRef<str>>(
        &self,
        side: Side,
        nodes: impl IntoIterator<Item = T>,
        method: &'static str,
    ) -> Result<Self, GraphError> {
        let mut flags = vec![false; self.plan.nodes.len()];
        for name in nodes {
            let name = name.as_ref();
            if name == "*" {
                flags.fill(true);
                continue;
            }
            let node = self
                .plan
                .node(name)
                .ok_or_else(|| GraphError::UnknownNode {
                    method,
                    node: name.to_owned(),
                })?;
            flags[node] = true;
        }
        let (before, after) = self.breakpoints();
        let (before, after) = match side {
            Side::Before => (flags, after.to_vec()),
            Side::After => (before.to_vec(), flags),
        };
        let mut app = self.clone();
        app.breakpoints = Some(Arc::new(Breakpoints { before, after }));
        Ok(app)
    }

    /// The nodes runs pause before and after: the run's own, or those the
    /// graph was compiled with.
    pub(crate) fn breakpoints(&self) -> (&[bool], &[bool]) {
        match &self.breakpoints {
            Some(own) => (&own.before, &own.after),
            None => (&self.plan.before, &self.plan.after),
        }
    }
}
