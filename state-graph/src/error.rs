//! The runner's errors: [`NodeError`], what a node returns when it fails or
//! pauses, and [`GraphError`], what a build or a run returns.

use state_core::StateError;
use state_store::StoreError;
use std::error::Error as StdError;
use std::fmt;

/// A boxed error, as a node's failure keeps it.
pub type BoxError = Box<dyn StdError + Send + Sync + 'static>;

/// What a node returns when it can fail: `Result<D, NodeError>`, named
/// once (an async closure's `Ok(..)` needs its error type written out).
pub type NodeResult<D> = Result<D, NodeError>;

/// What a node returns when it cannot produce its delta: its own error, or
/// a pause for a person ([`Ctx::interrupt`](crate::Ctx::interrupt)).
///
/// Like `anyhow::Error`, any `std::error::Error + Send + Sync + 'static`
/// converts into it with `?`, so a node that returns
/// `Result<S::Delta, NodeError>` can mix its own errors with interrupts. It
/// does not implement `std::error::Error` itself (that would make the
/// blanket conversion overlap); [`GraphError::Node`] keeps what it holds as
/// its source.
///
/// ```
/// use state_graph::NodeError;
///
/// fn parse(text: &str) -> Result<u32, NodeError> {
///     Ok(text.parse::<u32>()?)
/// }
/// let err = parse("x").unwrap_err();
/// assert!(err.downcast_ref::<std::num::ParseIntError>().is_some());
/// assert_eq!(err.to_string(), "invalid digit found in string");
/// ```
pub struct NodeError {
    inner: BoxError,
}

impl NodeError {
    /// A node error from any error value.
    pub fn new(error: impl Into<BoxError>) -> NodeError {
        NodeError {
            inner: error.into(),
        }
    }

    /// A node error with only a message.
    ///
    /// ```
    /// let err = state_graph::NodeError::msg("the plan is empty");
    /// assert_eq!(err.to_string(), "the plan is empty");
    /// ```
    pub fn msg(message: impl fmt::Display) -> NodeError {
        NodeError::new(message.to_string())
    }

    /// The error it holds, if it is an `E`.
    pub fn downcast_ref<E: StdError + 'static>(&self) -> Option<&E> {
        self.inner.downcast_ref::<E>()
    }

    /// Whether this is the pause of [`Ctx::interrupt`](crate::Ctx::interrupt).
    pub fn is_interrupt(&self) -> bool {
        self.inner.is::<crate::Interrupted>()
    }

    /// The boxed error it holds.
    pub fn into_inner(self) -> BoxError {
        self.inner
    }
}

impl<E: StdError + Send + Sync + 'static> From<E> for NodeError {
    fn from(error: E) -> NodeError {
        NodeError::new(error)
    }
}

/// The boxed error a node error holds: so a node error goes wherever any
/// error goes (`Into<BoxError>`: a tool's `Err`, an `anyhow::Error`).
impl From<NodeError> for BoxError {
    fn from(error: NodeError) -> BoxError {
        error.inner
    }
}

impl fmt::Debug for NodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.inner, f)
    }
}

impl fmt::Display for NodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.inner, f)
    }
}

/// A node panicked; kept as the source of [`GraphError::Node`].
#[derive(Debug, thiserror::Error)]
#[error("the node panicked: {message}")]
pub struct Panicked {
    /// The panic's message, when it was a string.
    pub message: String,
}

/// An error from building or running a graph. Each variant names the node,
/// edge, field or thread it is about.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GraphError {
    /// `compile` found the graph wrong: an unknown or duplicate node, no
    /// entry, a node no edge reaches or one that can never reach `END`.
    #[error("invalid graph: {0}")]
    Invalid(String),

    /// A node failed (its error, or a panic). The state is as after the
    /// last committed superstep; with a store, the writes of the node's
    /// siblings that finished are kept as pending writes.
    #[error("node \"{node}\" failed")]
    Node {
        /// The node.
        node: String,
        /// Its error ([`Panicked`] for a panic); downcast it to the node's
        /// own error type.
        #[source]
        source: BoxError,
    },

    /// A router returned a name it did not declare.
    #[error(
        "the router of \"{from}\" returned \"{target}\", which is not one of its declared targets {declared:?}"
    )]
    UndeclaredTarget {
        /// The node whose conditional edges the router is.
        from: String,
        /// What it returned.
        target: String,
        /// What `add_conditional_edges` declared.
        declared: Vec<String>,
    },

    /// A node returned a [`Command`](crate::Command) going to a target it
    /// did not declare with [`destinations`](crate::NodeOptions::destinations).
    #[error(
        "node \"{node}\" returned a Command going to \"{target}\", which is not among its destinations {declared:?}; declare it with .destinations([..])"
    )]
    UndeclaredDestination {
        /// The node.
        node: String,
        /// Where its command went.
        target: String,
        /// What `destinations` declared.
        declared: Vec<String>,
    },

    /// The graph's nodes read a context (`StateGraph<S, C>`), and the run
    /// was given none.
    #[error(
        "the graph's runs carry a context of type {context}, and none was given: call with_context(..) on the compiled graph"
    )]
    NoContext {
        /// The context type.
        context: &'static str,
    },

    /// A static breakpoint was reached in a run without a store: a pause
    /// must be stored to be continued.
    #[error(
        "the run reached a breakpoint at \"{node}\", but pausing needs a store: compile the graph with with_store(..) and run it with invoke_thread"
    )]
    BreakpointWithoutStore {
        /// The node.
        node: String,
    },

    /// Two nodes of one superstep wrote one field that has no reducer (or
    /// two overwrites of one field). Nothing of the superstep was applied.
    #[error(
        "nodes \"{first}\" and \"{second}\" both wrote \"{field}\" in one superstep; give the field a reducer, or let one node write it"
    )]
    ConcurrentWrite {
        /// The field.
        field: String,
        /// The node that wrote it first, in the superstep's order.
        first: String,
        /// The node that wrote it again.
        second: String,
    },

    /// The reducers refused a superstep, the input, or a node's delta.
    #[error("{context}")]
    State {
        /// What was being applied.
        context: String,
        /// The reducers' error.
        #[source]
        source: StateError,
    },

    /// The run did not reach `END` within its recursion limit.
    #[error(
        "recursion limit of {limit} supersteps reached without reaching END; raise it with with_recursion_limit, or check the graph's loop exits"
    )]
    RecursionLimit {
        /// The limit.
        limit: usize,
    },

    /// A node called `ctx.interrupt` in a run without a store: a pause must
    /// be stored to be resumed.
    #[error(
        "node \"{node}\" interrupted, but interrupts need a store: compile the graph with with_store(..) and run it with invoke_thread"
    )]
    InterruptWithoutStore {
        /// The node.
        node: String,
    },

    /// `resume` found nothing to answer, or answers that do not fit.
    #[error("cannot resume thread \"{thread}\": {reason}")]
    Resume {
        /// The thread.
        thread: String,
        /// What does not fit.
        reason: String,
    },

    /// `continue_thread` (or another method reading where a run stands)
    /// found nothing to go on from.
    #[error("cannot {method} thread \"{thread}\": {reason}")]
    Continue {
        /// The method called.
        method: &'static str,
        /// The thread.
        thread: String,
        /// Why.
        reason: String,
    },

    /// A run asked to start from a past step
    /// ([`with_checkpoint`](crate::CompiledGraph::with_checkpoint)) that a
    /// run cannot start from. Nothing was written.
    #[error("cannot run thread \"{thread}\" from step {seq}: {reason}")]
    Checkpoint {
        /// The thread.
        thread: String,
        /// The step asked for.
        seq: u64,
        /// Why not.
        reason: String,
    },

    /// A node returned a [`Command`](crate::Command) for the parent graph
    /// (`to_parent`) in a graph that is not a subgraph.
    #[error(
        "node \"{node}\" returned a Command for the parent graph (to_parent), but its graph is not a subgraph"
    )]
    NoParent {
        /// The node.
        node: String,
    },

    /// A method was given a node name the graph does not have.
    #[error("{method}: \"{node}\" is not a node of this graph")]
    UnknownNode {
        /// The method called.
        method: &'static str,
        /// The name given.
        node: String,
    },

    /// `update_state` without `as_node` after a superstep of several
    /// nodes: which one wrote the edit is for the caller to say.
    #[error(
        "update_state on thread \"{thread}\" needs as_node: its last step was written by several nodes ({nodes:?})"
    )]
    AmbiguousUpdate {
        /// The thread.
        thread: String,
        /// The nodes of the last step.
        nodes: Vec<String>,
    },

    /// A thread method on a graph compiled without `with_store`.
    #[error("{method} needs a store: call with_store(..) on the compiled graph first")]
    NoStore {
        /// The method called.
        method: &'static str,
    },

    /// The thread's log does not fit this graph (a pending step written by
    /// another graph, or an unreadable one).
    #[error("thread \"{thread}\", step {seq}: {reason}")]
    Log {
        /// The thread.
        thread: String,
        /// The step.
        seq: u64,
        /// What does not fit.
        reason: String,
    },

    /// The store failed; [`is_conflict`](GraphError::is_conflict) tells
    /// whether another worker moved the thread on first.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl GraphError {
    /// Another worker committed to the thread first: this run stopped
    /// without writing anything; reload and run again if wanted.
    pub fn is_conflict(&self) -> bool {
        matches!(self, GraphError::Store(e) if e.is_conflict())
    }

    /// The failing node's name, for [`GraphError::Node`].
    pub fn node(&self) -> Option<&str> {
        match self {
            GraphError::Node { node, .. } | GraphError::InterruptWithoutStore { node } => {
                Some(node)
            }
            _ => None,
        }
    }
}
