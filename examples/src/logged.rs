//! A graph run read back from its thread's log: the nodes of a logged
//! superstep and the deltas they wrote, decoded. Shared by the ports that
//! rebuild their hand-written loop's step records from the store
//! (OHMind, the therapy agent).

use state_core::State;
use state_graph::{GraphError, START};
use state_store::{StepKind, StepRecord};

/// The nodes of one logged superstep of `thread` and their deltas, in
/// order (decoded by [`StepRecord::deltas`]); empty for any other step
/// (the run's input `__start__`, a turn start, a pause, a step without
/// node names).
///
/// # Errors
///
/// [`GraphError::Log`] when the step names a different number of nodes
/// than it holds deltas, or a delta does not decode as `S`'s.
pub fn node_deltas<S: State>(
    thread: &str,
    record: StepRecord,
) -> Result<Vec<(String, S::Delta)>, GraphError> {
    let nodes: Vec<String> = record.nodes().into_iter().map(str::to_owned).collect();
    if nodes.is_empty()
        || nodes == [START]
        || !matches!(record.kind, StepKind::Superstep | StepKind::Apply)
    {
        return Ok(Vec::new());
    }
    let deltas = record.deltas::<S>(thread)?;
    if nodes.len() != deltas.len() {
        return Err(GraphError::Log {
            thread: thread.to_owned(),
            seq: record.seq,
            reason: format!("{} nodes named for {} deltas", nodes.len(), deltas.len()),
        });
    }
    Ok(nodes.into_iter().zip(deltas).collect())
}
