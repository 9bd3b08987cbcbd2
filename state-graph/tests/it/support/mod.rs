//! Helpers shared by the state-graph integration tests: the state-store
//! suite's real backends (memory, a SQLite file, a PostgreSQL server the
//! tests start) and its child processes, reused as they are, and the
//! conformance vectors' matcher from state-tests.

#[path = "../../../../state-store/tests/it/support/backends.rs"]
pub mod backends;
#[path = "../../../../state-store/tests/it/support/child.rs"]
pub mod child;
pub mod lg;
#[path = "../../../../tests/tests/it/placeholders.rs"]
pub mod placeholders;
#[path = "../../../../state-store/tests/it/support/postgres.rs"]
pub mod postgres;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

/// Calls of one node, counted by its closure.
#[derive(Clone, Default)]
pub struct Count(Arc<AtomicUsize>);

impl Count {
    /// Counts a call; returns how many there were, this one included.
    pub fn hit(&self) -> usize {
        self.0.fetch_add(1, SeqCst) + 1
    }

    /// The calls so far.
    pub fn get(&self) -> usize {
        self.0.load(SeqCst)
    }
}

/// Reading a thread back, as the graph tests check it.
pub mod log {
    use serde::Serialize;
    use serde_json::Value;
    use state_core::State;
    use state_store::{StepKind, StepRecord, Store};

    /// Every logged step of `thread`.
    pub async fn history(store: &Store, thread: &str) -> Vec<StepRecord> {
        store.history(thread, ..).await.unwrap()
    }

    /// Each step as (seq, kind, metadata "nodes").
    pub fn summary(steps: &[StepRecord]) -> Vec<(u64, StepKind, Value)> {
        steps
            .iter()
            .map(|s| {
                let nodes = s.metadata.get("nodes").cloned().unwrap_or(Value::Null);
                (s.seq, s.kind, nodes)
            })
            .collect()
    }

    /// The thread as a fresh handle loads it: its seq and state.
    pub async fn reloaded<S>(store: &Store, thread: &str) -> (u64, S)
    where
        S: State + Serialize + Send + 'static,
        S::Delta: Serialize + Send,
    {
        let t = store.thread::<S>(thread).await.unwrap();
        (t.seq(), t.into_state())
    }
}
