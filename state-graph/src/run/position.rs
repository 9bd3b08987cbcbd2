//! Where a stored run stands, read from its thread's log: what its next
//! superstep is planned from and what is pending in it, from the last step
//! (a superstep, a pending step, an edit, or, after a crash inside a
//! subgraph, the subgraph's last step and the step its parent stood at).

use super::CompiledGraph;
use super::cursor::LoggedRoutes;
use super::pending::{Breakpoint, PendingBody, Prior};
use super::runner::Position;
use crate::error::GraphError;
use crate::graph_state::GraphState;
use serde_json::Value;
use state_store::{StepKind, StepRecord};

/// Where a stored run stands.
pub(crate) struct Loaded<D> {
    pub position: Position<D>,
    /// The pending body it stands at, when paused (its interrupts, its
    /// subgraphs' included).
    pub pending: Option<PendingBody>,
    /// A breakpoint stopped it there.
    pub breakpoint: Option<Breakpoint>,
    /// The last committed step of the run (a subgraph's steps come after).
    pub base: u64,
    /// The step its position was read from.
    pub at: u64,
}

impl<S, C> CompiledGraph<S, C>
where
    S: GraphState,
    C: Send + Sync + 'static,
{
    /// Where the run of `thread` stands after its step `seq`.
    pub(crate) async fn load(
        &self,
        seq: u64,
        thread: &str,
        method: &'static str,
    ) -> Result<Loaded<S::Delta>, GraphError> {
        let Some(store) = self.store() else {
            return Err(GraphError::NoStore { method });
        };
        if seq == 0 {
            let reason = "the thread has no run yet: start one with invoke_thread".to_owned();
            let thread = thread.to_owned();
            return Err(match method {
                "resume" => GraphError::Resume { thread, reason },
                _ => GraphError::Continue {
                    method,
                    thread,
                    reason,
                },
            });
        }
        let last = self.step(thread, seq).await?;
        if let Some(from) = last.branched_from() {
            // A branch: the run stands where it stood after `from`, and
            // its next steps come after the branch.
            let mut loaded = Box::pin(self.load(from, thread, method)).await?;
            if let Some(reason) = super::branch::inside_subgraph(&loaded, from) {
                return Err(log(
                    thread,
                    seq,
                    format!("a branch back to step {from}: {reason}"),
                ));
            }
            loaded.base = seq;
            loaded.at = seq;
            return Ok(loaded);
        }
        if last.kind != StepKind::Subgraph {
            return self.position(thread, last, method);
        }
        // A crash inside a subgraph: the parent stands where that
        // subgraph's steps say it stood.
        let read = |key: &str| last.metadata.get(key).and_then(Value::as_u64);
        let (Some(base), Some(at)) = (read("base"), read("at")) else {
            return Err(log(
                thread,
                seq,
                "a subgraph step that does not say where its parent stood".to_owned(),
            ));
        };
        let at_step = self.step(thread, at).await?;
        // Copied after a branch, the parent stood at the branch itself.
        let mut loaded = match at_step.kind {
            StepKind::Branch => Box::pin(self.load(at, thread, method)).await?,
            _ => self.position(thread, at_step, method)?,
        };
        loaded.base = base;
        let _ = store;
        Ok(loaded)
    }

    /// Step `seq` of `thread`, which must be there.
    async fn step(&self, thread: &str, seq: u64) -> Result<StepRecord, GraphError> {
        let store = self.store().ok_or(GraphError::NoStore { method: "load" })?;
        store
            .history(thread, seq..=seq)
            .await?
            .pop()
            .ok_or_else(|| {
                log(
                    thread,
                    seq,
                    "the step was compacted away; start a new run with invoke_thread".to_owned(),
                )
            })
    }

    /// Where a run stands after the logged step `step` (not a subgraph's).
    pub(crate) fn position(
        &self,
        thread: &str,
        step: StepRecord,
        method: &'static str,
    ) -> Result<Loaded<S::Delta>, GraphError> {
        let seq = step.seq;
        let err = |reason: String| log(thread, seq, reason);
        // A pending step, or an edit (update_state) that kept one.
        let pending = if step.kind == StepKind::Pending {
            Some(step.body)
        } else {
            step.metadata.get("pending").cloned()
        };
        if let Some(body) = pending {
            let kept = step.kind != StepKind::Pending;
            let mut body: PendingBody = serde_json::from_value(body)
                .map_err(|e| err(format!("not a pending step of a graph run: {e}")))?;
            let shown = body.clone();
            let prior = Prior::decode(&mut body, &self.plan, err)?;
            let cursor = body.routes().cursor(&self.plan, &body.from).map_err(err)?;
            return Ok(Loaded {
                position: Position {
                    cursor,
                    prior,
                    // Nothing was written since the pause: a breakpoint
                    // before the next superstep is passed, as LangGraph's
                    // (no channel updated since its last interrupt).
                    past_breakpoint: body.breakpoint.is_some(),
                },
                pending: Some(shown),
                breakpoint: body.breakpoint,
                // The paused superstep's base, kept through an edit: its
                // subgraphs' steps since then are still theirs.
                base: match (kept, body.base) {
                    (_, Some(base)) => base,
                    (true, None) => seq,
                    (false, None) => seq.saturating_sub(1),
                },
                at: seq,
            });
        }
        let names = match step.metadata.get("nodes") {
            Some(Value::Array(names)) => names
                .iter()
                .map(|n| n.as_str().map(str::to_owned))
                .collect::<Option<Vec<String>>>(),
            _ => None,
        };
        let Some(names) = names else {
            return Err(GraphError::Continue {
                method,
                thread: thread.to_owned(),
                reason: format!(
                    "its last step ({seq}, {}) was not written by a graph run; write edits with update_state",
                    step.kind
                ),
            });
        };
        let cursor = LoggedRoutes::from_metadata(&step.metadata, &names)
            .and_then(|routes| routes.cursor(&self.plan, &names))
            .map_err(err)?;
        // An edit of a thread paused at a breakpoint (before or after a
        // node) keeps it passed: LangGraph's `invoke(None)` after
        // `update_state` goes on.
        let passed = match step.metadata.get("breakpoint").and_then(Value::as_str) {
            Some("before") => Some(Breakpoint::Before),
            Some("after") => Some(Breakpoint::After),
            _ => None,
        };
        Ok(Loaded {
            position: Position {
                cursor,
                prior: Prior::default(),
                past_breakpoint: passed.is_some(),
            },
            pending: None,
            breakpoint: passed,
            base: seq,
            at: seq,
        })
    }
}

fn log(thread: &str, seq: u64, reason: String) -> GraphError {
    GraphError::Log {
        thread: thread.to_owned(),
        seq,
        reason,
    }
}
