//! A subgraph as a node of its parent: the erased shape the parent's
//! superstep calls ([`SubgraphNode`]), what it is given ([`SubCall`]) and
//! what it gives back ([`SubOutcome`]). The runner implements it for a
//! compiled child graph (`run/child.rs`); the builder stores it
//! (`spec.rs`). Nothing here knows either.

use crate::command::Goto;
use crate::error::{BoxError, GraphError};
use crate::node::BoxFuture;
use crate::outcome::Interrupt;
use crate::stream::Nested;
use serde_json::Value;
use state_core::State;
use state_store::{DeltasText, ObjectText, Store, StoreError};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// A boxed future that may borrow.
pub(crate) type LogFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Where subgraphs log their steps: the root thread, shared by every
/// subgraph task of a superstep.
pub(crate) trait ChildLog: Send + Sync {
    /// Logs one subgraph step (a step that changes no state of the
    /// thread): its body and metadata, written as text.
    fn log(&self, body: ObjectText, metadata: ObjectText)
    -> LogFuture<'_, Result<u64, StoreError>>;

    /// Itself, for a subgraph of the root's own state type to reach the
    /// typed log and await it in place (see `Child::commit`): no boxed
    /// future per step.
    fn as_any(&self) -> &dyn std::any::Any;
}

/// Everything a subgraph task is given to run: its parent's state, the
/// run's context and thread, where to log, where it stands.
pub(crate) struct SubCall<S, C> {
    /// The parent's state, as its superstep reads it.
    pub state: Arc<S>,
    /// The run's context (none when only read for a snapshot).
    pub context: Option<Arc<C>>,
    pub thread: Option<String>,
    pub store: Option<Store>,
    /// Where its steps are logged (the root thread), if anywhere.
    pub log: Option<Arc<dyn ChildLog>>,
    /// The subgraph's namespace: its parent's, then `node:task-id`.
    pub namespace: Vec<String>,
    /// Where the root run stands: its last committed step (`base`) and the
    /// step its position was read from (`at`, a pending step when it
    /// resumed). A subgraph's steps are those logged after `base` under
    /// its namespace.
    pub base: u64,
    pub at: u64,
    /// Whether the thread has no step after `base` that this run did not
    /// write: the root run committed `base` itself (its input, or a
    /// superstep), so no subgraph step of an earlier run can be there to
    /// go on from, and the subgraph does not read the log for them.
    /// False when the root resumed or continued and has not committed
    /// since, and for snapshots.
    pub fresh: bool,
    /// The subgraph's pause, when the parent's superstep was paused inside
    /// it: its pending body (JSON) and the answers given to it by id.
    pub paused: Option<(Value, Vec<(String, Value)>)>,
    /// Where its events go (for `StreamMode::SUBGRAPHS`).
    pub events: Option<Nested>,
    /// Whether a subgraph of the parent's state type may hand back its
    /// final state ([`SubOutcome::Adopted`]) instead of what its steps
    /// wrote: its parent's superstep has no other task and nothing reads
    /// the writes (see the runner's `Env::adopt`).
    pub adopt: bool,
    /// Whether a subgraph of the parent's state type hands back its final
    /// state with what its steps wrote ([`SubOutcome::Adopted`] with an
    /// update or its steps): its parent's superstep has no other task, and
    /// logs or streams the writes but need not apply them again (see the
    /// runner's `Env::hand_back`).
    pub hand_back: HandBack,
}

/// What a subgraph of the parent's state type hands back with its final
/// state ([`SubCall::hand_back`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HandBack {
    /// Not its final state: it is adopted ([`SubCall::adopt`]), or its
    /// writes are the parent's to apply ([`SubOutcome::Wrote`]).
    No,
    /// What its steps wrote, composed into one delta: the parent streams
    /// it (`updates`, `messages`) or is a subgraph that composes its own.
    Writes,
    /// Its supersteps' deltas as it logged them, for the parent's step to
    /// log as they are (`Thread::adopt_steps`): a top-level run that logs
    /// and streams no writes. Nothing is composed.
    Steps,
}

/// What a subgraph task of a parent of state `S` did.
pub(crate) enum SubOutcome<S: State> {
    /// It reached its end: what it wrote for the parent, and, when one of
    /// its nodes routed in the parent (`to_parent`), where to.
    Wrote {
        update: Option<S::Delta>,
        handoff: Option<Vec<Goto>>,
    },
    /// It reached its end, run with [`SubCall::adopt`] or
    /// [`SubCall::hand_back`]: its final state is the parent's state after
    /// the superstep (its writes are not applied again); with `hand_back`,
    /// `update` is what it wrote, for the parent to log or stream, or, with
    /// [`HandBack::Steps`], `steps` its supersteps' deltas as logged.
    Adopted {
        state: Arc<S>,
        update: Option<S::Delta>,
        steps: Option<Vec<DeltasText>>,
        handoff: Option<Vec<Goto>>,
    },
    /// A node inside paused or failed: the subgraph's pending body (JSON,
    /// for the parent's own) and its interrupts.
    Paused {
        body: Value,
        interrupts: Vec<Interrupt>,
        failed: Option<BoxError>,
    },
    /// It failed before it could pause (its input refused, its log
    /// unreadable).
    Failed(BoxError),
}

/// A compiled graph as a node: what `add_subgraph` and
/// `add_subgraph_mapped` store.
pub(crate) trait SubgraphNode<S: State, C>: Send + Sync {
    /// Runs the subgraph (or goes on with it) inside the parent's superstep.
    fn run(&self, call: SubCall<S, C>) -> BoxFuture<SubOutcome<S>>;

    /// Whether it ends with [`SubOutcome::Adopted`] when called with
    /// [`SubCall::adopt`] (a subgraph of the parent's state type).
    fn adopts(&self) -> bool;

    /// Where the subgraph, node `node` of its parent, stands while paused
    /// inside (`call.paused`): its state, what runs next in it, what is
    /// pending, and its own paused subgraphs.
    fn snapshot(
        &self,
        node: &str,
        call: SubCall<S, C>,
    ) -> BoxFuture<Result<SubgraphSnapshot, GraphError>>;
}

/// A subgraph paused inside a thread's superstep, as a
/// [`Snapshot`](crate::Snapshot) shows it (LangGraph's
/// `get_state(config, subgraphs=True).tasks[..].state`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SubgraphSnapshot {
    /// The subgraph's node in its parent graph.
    pub node: String,
    /// Its namespace (`node:task-id` segments, outermost first).
    pub namespace: Vec<String>,
    /// Its state, as JSON (its own state type's).
    pub state: Value,
    /// What runs next inside it.
    pub next: Vec<String>,
    /// The interrupts pending inside it.
    pub interrupts: Vec<Interrupt>,
    /// Its own subgraphs paused inside.
    pub subgraphs: Vec<SubgraphSnapshot>,
}
