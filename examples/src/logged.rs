//! A graph run read back from its thread's log: the nodes of a logged
//! superstep and the deltas they wrote, decoded. Shared by the ports that
//! rebuild their hand-written loop's step records from the store
//! (OHMind, the therapy agent).

use serde_json::Value;
use state_core::Delta;
use state_graph::{GraphError, START};
use state_store::{StepKind, StepRecord};

/// The nodes of one logged superstep of `thread` and their deltas, in
/// order; empty for any other step (the run's input `__start__`, a turn
/// start, a pause, a step without node names).
///
/// # Errors
///
/// [`GraphError::Log`] when the step names a different number of nodes
/// than it holds deltas, or a delta does not decode as `D`.
pub fn node_deltas<D: Delta>(
    thread: &str,
    record: StepRecord,
) -> Result<Vec<(String, D)>, GraphError> {
    let nodes: Vec<String> = record.nodes().into_iter().map(str::to_owned).collect();
    if nodes.is_empty() || nodes == [START] {
        return Ok(Vec::new());
    }
    let seq = record.seq;
    let bodies = match (record.kind, record.body) {
        (StepKind::Superstep, Value::Array(deltas)) => deltas,
        (StepKind::Apply, delta) => vec![delta],
        _ => return Ok(Vec::new()),
    };
    let unreadable = |reason: String| GraphError::Log {
        thread: thread.to_owned(),
        seq,
        reason,
    };
    if nodes.len() != bodies.len() {
        return Err(unreadable(format!(
            "{} nodes named for {} deltas",
            nodes.len(),
            bodies.len()
        )));
    }
    nodes
        .into_iter()
        .zip(bodies)
        .map(|(node, body)| {
            let delta = D::from_json(body)
                .map_err(|e| unreadable(format!("the delta of {node} does not decode: {e}")))?;
            Ok((node, delta))
        })
        .collect()
}
