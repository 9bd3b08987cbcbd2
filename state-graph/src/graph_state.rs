//! [`GraphState`]: every bound a graph puts on its state, under one name.

use serde::Serialize;
use state_core::State;

/// A state a graph can run: a [`State`] that is `Clone`, `Serialize`,
/// `Send + Sync + 'static`, whose delta is `Serialize + Clone + Send +
/// Sync + 'static`. Every `#[derive(AgentState, Clone)]` state without
/// borrowed fields is one; write `S: GraphState` in a generic helper
/// instead of the list.
///
/// ```
/// use state_graph::{CompiledGraph, GraphError, GraphState};
///
/// /// Runs any graph on its default state, whatever its state type.
/// async fn run_empty<S: GraphState>(app: &CompiledGraph<S>) -> Result<S, GraphError> {
///     app.invoke(S::delta()).await
/// }
/// # let _ = run_empty::<Example>;
/// # #[derive(state_core::AgentState, Debug, Clone)]
/// # struct Example { n: u32 }
/// ```
pub trait GraphState:
    State<Delta: Serialize + Clone + Send + Sync + 'static> + Clone + Serialize + Send + Sync + 'static
{
}

impl<S> GraphState for S
where
    S: State + Clone + Serialize + Send + Sync + 'static,
    S::Delta: Serialize + Clone + Send + Sync + 'static,
{
}
