#![doc = include_str!("../README.md")]
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod command;
mod compile;
mod ctx;
mod error;
mod graph;
mod graph_state;
mod mermaid;
mod node;
mod outcome;
mod plan;
mod retry;
mod route;
mod run;
mod spec;
mod stream;
mod subgraph;

pub use command::{Command, Dispatch, Goto, IntoGoto};
pub use ctx::{Ctx, Interrupted, MessageStream, NoStore, message_stream};
pub use error::{BoxError, GraphError, NodeError, NodeResult, Panicked};
pub use graph::{EdgeSources, NodeOptions, StateGraph};
pub use graph_state::GraphState;
pub use node::{IntoNode, Node, NodeOutput, markers};
pub use outcome::{Interrupt, Outcome, Resume};
pub use retry::RetryPolicy;
pub use route::{IntoRouter, Router, Targets, Worker};
pub use run::{CompiledGraph, DEFAULT_RECURSION_LIMIT, History, Snapshot};
pub use spec::{Destination, END, START};
pub use stream::{Event, MessageMetadata, RunStream, StreamMode};
pub use subgraph::SubgraphSnapshot;

/// The router forms' markers (inferred; never written).
pub mod router_markers {
    pub use crate::route::markers::*;
}
