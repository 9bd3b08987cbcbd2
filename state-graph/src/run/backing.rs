//! Where a run keeps its state: in memory, or in a store's thread, where
//! every superstep is one logged step.

use crate::error::GraphError;
use crate::graph_state::GraphState;
use serde_json::{Map, Value, json};
use state_core::{Delta, State, StateError};
use state_store::{StoreError, Thread};
use std::sync::Arc;

pub(crate) enum Backing<S: State> {
    Memory(Arc<S>),
    Thread(Thread<S>),
}

impl<S: GraphState> Backing<S> {
    /// The state, shared with the superstep's nodes (no copy).
    pub fn shared(&mut self) -> Arc<S> {
        match self {
            Backing::Memory(state) => state.clone(),
            Backing::Thread(thread) => thread.shared_state(),
        }
    }

    /// Starts a turn and applies the run's input, as the `__start__` node's
    /// write (LangGraph's input step): one step, all or nothing.
    pub async fn input(&mut self, input: S::Delta) -> Result<(), GraphError> {
        let refused = |source| GraphError::State {
            context: "the input was refused by the reducers".to_owned(),
            source,
        };
        match self {
            Backing::Memory(state) => {
                let state = Arc::make_mut(state);
                state.begin_turn();
                state.apply(input).map_err(refused)
            }
            Backing::Thread(thread) => {
                thread
                    .with_metadata(json!({"nodes": [crate::START]}))
                    .start_turn(input)
                    .await
                    .map_err(|e| match e {
                        StoreError::State { source, .. } => refused(source),
                        other => other.into(),
                    })?;
                Ok(())
            }
        }
    }

    /// Applies one superstep's deltas, in order, all or nothing; with a
    /// store, logged with `routes` (and the node names) as its metadata.
    pub async fn commit(
        &mut self,
        nodes: Vec<(&str, S::Delta)>,
        routes: Map<String, Value>,
    ) -> Result<(), GraphError> {
        // Who wrote what, to name both nodes of a concurrent write.
        let fields: Vec<(&str, state_core::FieldNames)> = if nodes.len() > 1 {
            nodes.iter().map(|(n, d)| (*n, d.fields())).collect()
        } else {
            Vec::new()
        };
        let result = match self {
            Backing::Memory(state) => {
                Arc::make_mut(state).apply_all(nodes.into_iter().map(|(_, delta)| delta))
            }
            Backing::Thread(thread) => match thread
                .with_metadata(Value::Object(routes))
                .apply_nodes(nodes)
                .await
            {
                Ok(_) => Ok(()),
                Err(StoreError::State { source, .. }) => Err(source),
                Err(other) => return Err(other.into()),
            },
        };
        result.map_err(|source| conflict(source, &fields))
    }

    /// Logs a paused superstep (store only), its tasks' node names in the
    /// metadata as a superstep's are.
    pub async fn pending(&mut self, nodes: Vec<String>, body: Value) -> Result<(), GraphError> {
        match self {
            Backing::Memory(_) => Ok(()),
            Backing::Thread(thread) => {
                thread
                    .with_metadata(json!({ "nodes": nodes }))
                    .log_pending(body)
                    .await?;
                Ok(())
            }
        }
    }

    pub fn seq(&self) -> u64 {
        match self {
            Backing::Memory(_) => 0,
            Backing::Thread(thread) => thread.seq(),
        }
    }

    pub fn into_state(self) -> S {
        match self {
            Backing::Memory(state) => Arc::try_unwrap(state).unwrap_or_else(|s| (*s).clone()),
            Backing::Thread(thread) => thread.into_state(),
        }
    }
}

/// The reducers' refusal of a superstep, with both writers named when it
/// is a concurrent write.
fn conflict(source: StateError, fields: &[(&str, state_core::FieldNames)]) -> GraphError {
    if let StateError::ConcurrentWrite { field } | StateError::ConcurrentOverwrite { field } =
        &source
    {
        let top = field.split('.').next().unwrap_or(field);
        let mut writers = fields
            .iter()
            .filter(|(_, f)| f.as_slice().contains(&top))
            .map(|(n, _)| (*n).to_owned());
        if let (Some(first), Some(second)) = (writers.next(), writers.next()) {
            return GraphError::ConcurrentWrite {
                field: field.clone(),
                first,
                second,
            };
        }
    }
    GraphError::State {
        context: "the reducers refused the superstep".to_owned(),
        source,
    }
}
