#![doc = include_str!("../README.md")]
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod compile;
mod ctx;
mod error;
mod graph;
mod node;
mod outcome;
mod retry;
mod route;
mod run;
mod stream;

pub use ctx::{Ctx, Interrupted};
pub use error::{BoxError, GraphError, NodeError, Panicked};
pub use graph::{END, NodeOptions, START, StateGraph};
pub use node::{IntoNode, Node, NodeOutput, markers};
pub use outcome::{Interrupt, Outcome, Resume};
pub use retry::RetryPolicy;
pub use route::{IntoRouter, Router, Targets, Worker};
pub use run::{CompiledGraph, DEFAULT_RECURSION_LIMIT};
pub use stream::{Event, RunStream, StreamMode};

/// The router forms' markers (inferred; never written).
pub mod router_markers {
    pub use crate::route::markers::*;
}
