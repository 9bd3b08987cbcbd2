//! What the builder records, before any check: the nodes, edges, routers
//! and options as they were added. [`StateGraph`](crate::StateGraph) writes
//! these and `compile` reads them, so neither needs the other.

use crate::node::Node;
use crate::retry::RetryPolicy;
use crate::route::{AnyInput, FanOutFn, RouterFn};
use crate::subgraph::SubgraphNode;
use state_core::State;
use std::sync::Arc;

/// The entry of a graph: `add_edge(START, "first")`.
pub const START: &str = "__start__";

/// The exit of a graph: `add_edge("last", END)`, a router's answer, or a
/// [`Command`](crate::Command)'s target.
pub const END: &str = "__end__";

/// Decodes a logged worker input (a [`Command`](crate::Command)'s send) back
/// into the worker's input type.
pub(crate) type DecodeFn = fn(serde_json::Value) -> Result<Arc<AnyInput>, serde_json::Error>;

/// What a node reads: the state, its own input (a worker), or it runs a
/// child graph (a subgraph).
pub(crate) enum Body<S: State, C> {
    State(Node<S, C, S::Delta>),
    Worker(Node<AnyInput, C, S::Delta>),
    Subgraph(Arc<dyn SubgraphNode<S, C>>),
}

/// A target a node declared with
/// [`destinations`](crate::NodeOptions::destinations): a node, `END`, or
/// a worker it may send to (with the decoder of the worker's input).
#[derive(Clone)]
pub struct Destination {
    pub(crate) name: String,
    pub(crate) decode: Option<DecodeFn>,
}

impl std::fmt::Debug for Destination {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Destination").field(&self.name).finish()
    }
}

impl From<&str> for Destination {
    fn from(name: &str) -> Destination {
        Destination {
            name: name.to_owned(),
            decode: None,
        }
    }
}

impl From<String> for Destination {
    fn from(name: String) -> Destination {
        Destination { name, decode: None }
    }
}

impl From<&String> for Destination {
    fn from(name: &String) -> Destination {
        Destination::from(name.as_str())
    }
}

/// One node as added.
pub(crate) struct NodeSpec<S: State, C> {
    pub name: String,
    pub body: Body<S, C>,
    pub retry: Option<RetryPolicy>,
    /// Where a [`Command`](crate::Command) it returns may go; `None` when it
    /// declared none.
    pub destinations: Option<Vec<Destination>>,
}

/// An edge as added: from one source, or from several (a join: `to` runs
/// once all of them ran).
pub(crate) struct EdgeSpec {
    pub from: Vec<String>,
    pub to: String,
}

/// A conditional edge as added: its source, router and declared targets.
pub(crate) struct BranchSpec<S, C> {
    pub from: String,
    pub router: RouterFn<S, C>,
    pub targets: Vec<String>,
}

/// A fan-out as added: its source, router and worker.
pub(crate) struct FanOutSpec<S> {
    pub from: String,
    pub router: FanOutFn<S>,
    pub worker: String,
}

/// Everything a [`StateGraph`](crate::StateGraph) was told.
pub(crate) struct Spec<S: State, C> {
    pub nodes: Vec<NodeSpec<S, C>>,
    pub edges: Vec<EdgeSpec>,
    pub branches: Vec<BranchSpec<S, C>>,
    pub fan_outs: Vec<FanOutSpec<S>>,
    pub interrupt_before: Vec<String>,
    pub interrupt_after: Vec<String>,
}

impl<S: State, C> Default for Spec<S, C> {
    fn default() -> Self {
        Spec {
            nodes: Vec::new(),
            edges: Vec::new(),
            branches: Vec::new(),
            fan_outs: Vec::new(),
            interrupt_before: Vec::new(),
            interrupt_after: Vec::new(),
        }
    }
}
