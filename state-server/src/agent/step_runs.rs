//! The run that wrote a step, and its keys in the step's checkpoint
//! metadata. LangGraph's checkpoints each carry their run's metadata and
//! ids (`graph_id`, `assistant_id`, the run's own metadata, `run_id`,
//! `run_attempt`, `user_id`, ...); here a step keeps only its own keys and
//! the run's are joined when a state is read: stored once, on the run, not
//! again on each of its steps.
//!
//! A step is its run's when the run is the newest of its thread whose
//! first claim found the thread at an earlier step (runs on a thread go
//! one at a time). A step written by `update_state` (`source: "update"`)
//! is no run's, as in LangGraph; nor is a step of a thread copied from
//! another (the copy has no runs).

use crate::error::ApiError;
use serde_json::{Map, Value, json};
use state_store::{Run, RunFilter, Store};

/// How many runs are read first (a thread's state is most often its last
/// run's), then at a time, newest first.
const FIRST_PAGE: usize = 2;
const PAGE: usize = 50;

/// The keys a run gives the metadata of the steps it writes.
pub(crate) fn run_keys(
    run_id: &str,
    thread_id: &str,
    attempt: u32,
    metadata: &Value,
    owner: Option<&str>,
) -> Map<String, Value> {
    let mut keys = metadata.as_object().cloned().unwrap_or_default();
    keys.insert("run_attempt".into(), json!(attempt.max(1)));
    keys.insert("thread_id".into(), json!(thread_id));
    keys.insert("run_id".into(), json!(run_id));
    keys.insert("user_id".into(), json!(owner.unwrap_or_default()));
    keys.insert(
        "langgraph_auth_user_id".into(),
        json!(owner.unwrap_or_default()),
    );
    keys
}

/// `state`'s (a `ThreadState`'s) metadata with `keys` under its own: the
/// step's keys win (`source`, `step`, `parents`). A step written by
/// `update_state` is no run's, and is left as it is.
pub(crate) fn join(state: &mut Value, keys: &Map<String, Value>) {
    let Some(own) = state.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    if own.get("source").and_then(Value::as_str) == Some("update") {
        return;
    }
    let mut joined = keys.clone();
    joined.extend(std::mem::take(own));
    *own = joined;
}

/// The runs of one thread, read newest first as far as a request needs.
pub(crate) struct StepRuns<'a> {
    store: &'a Store,
    thread: &'a str,
    runs: Vec<Run>,
    /// Whether every run of the thread has been read.
    all: bool,
}

impl<'a> StepRuns<'a> {
    /// The runs of `thread`, none read yet.
    pub(crate) fn of(store: &'a Store, thread: &'a str) -> Self {
        StepRuns {
            store,
            thread,
            runs: Vec::new(),
            all: false,
        }
    }

    /// `state` (a `ThreadState`) with the keys of the run that wrote its
    /// step, if a run did.
    pub(crate) async fn join(&mut self, state: &mut Value) -> Result<(), ApiError> {
        let metadata = &state["metadata"];
        if metadata["source"] == "update" {
            // No run's: `join` would leave it; no run need be read.
            return Ok(());
        }
        let Some(seq) = metadata["step"].as_u64() else {
            return Ok(());
        };
        let thread = self.thread;
        if let Some(run) = self.run_of(seq).await? {
            let keys = run_keys(
                &run.run_id,
                thread,
                run.attempt,
                &run.metadata,
                run.owner.as_deref(),
            );
            join(state, &keys);
        }
        Ok(())
    }

    /// The run that wrote step `seq`: the newest whose first claim found
    /// the thread before it.
    async fn run_of(&mut self, seq: u64) -> Result<Option<&Run>, ApiError> {
        loop {
            let found = self
                .runs
                .iter()
                .position(|run| run.base_seq.is_some_and(|base| base < seq));
            // Runs are newest first: one found in what is read is the one,
            // unless a newer one is still unread (never: pages go older).
            if let Some(at) = found {
                return Ok(self.runs.get(at));
            }
            if self.all {
                return Ok(None);
            }
            let size = if self.runs.is_empty() {
                FIRST_PAGE
            } else {
                PAGE
            };
            let filter = RunFilter::default().limit(size).offset(self.runs.len());
            let page = self.store.list_runs(Some(self.thread), filter).await?;
            self.all = page.len() < size;
            self.runs.extend(page);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_steps_own_keys_win_over_its_runs() {
        let keys = run_keys(
            "r1",
            "t1",
            0,
            &json!({"graph_id": "agent", "source": "run's", "purpose": "demo"}),
            Some("ada"),
        );
        let mut state = json!({"metadata": {"source": "loop", "step": 2}});
        join(&mut state, &keys);
        let metadata = &state["metadata"];
        assert_eq!(metadata["source"], "loop");
        assert_eq!(metadata["step"], 2);
        assert_eq!(metadata["graph_id"], "agent");
        assert_eq!(metadata["purpose"], "demo");
        assert_eq!(metadata["run_id"], "r1");
        assert_eq!(metadata["thread_id"], "t1");
        assert_eq!(metadata["run_attempt"], 1);
        assert_eq!(metadata["user_id"], "ada");
        let mut edit = json!({"metadata": {"source": "update", "step": 3}});
        join(&mut edit, &keys);
        assert_eq!(edit, json!({"metadata": {"source": "update", "step": 3}}));
    }
}
