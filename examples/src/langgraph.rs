//! Ports of four LangGraph tutorials, their states and nodes: the programs
//! in `examples/langgraph/` run them (`cargo run --example langgraph_NAME`)
//! and show the Python original at the top; `examples/tests/langgraph_*.rs`
//! assert the state after a scripted run.
//!
//! Nodes are plain functions from the state to a delta, as LangGraph's nodes
//! return a partial dict. The graph itself (edges, routing) is a short loop
//! in each module's `run` function: this library is the state layer. Models
//! are canned: each reply is fixed by the script, so a run is repeatable.

use state_core::StateError;
use std::fmt;

pub mod customer_support;
pub mod map_reduce;
pub mod plan_and_execute;
pub mod summary_bot;

/// LangGraph's name for the end of the graph, returned by routing functions.
pub const END: &str = "__end__";

/// Node executions allowed in one run, as LangGraph's default
/// `recursion_limit`: a script that loops is stopped, not spun forever.
pub const RECURSION_LIMIT: usize = 25;

/// One node's update, as `stream_mode="updates"` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// The node that wrote it.
    pub node: String,
    /// Its delta, as JSON.
    pub update: serde_json::Value,
}

impl Step {
    /// The step of `node` writing `delta`.
    pub fn new(node: impl Into<String>, delta: &impl serde::Serialize) -> Self {
        Step {
            node: node.into(),
            // A delta's JSON is a map of plain values: it always serializes.
            update: serde_json::to_value(delta).unwrap_or_default(),
        }
    }
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.node, self.update)
    }
}

/// Why a scripted run stopped early.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RunError {
    /// A node met a state it cannot work on (where the Python would raise).
    #[error("node {node}: {reason}")]
    Node {
        /// The node.
        node: &'static str,
        /// What was missing.
        reason: String,
    },
    /// The reducers refused an update.
    #[error(transparent)]
    State(#[from] StateError),
    /// More than [`RECURSION_LIMIT`] node executions in one run.
    #[error("recursion limit of {RECURSION_LIMIT} reached")]
    RecursionLimit,
}
