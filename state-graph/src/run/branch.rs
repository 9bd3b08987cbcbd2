//! Runs from a past step (`with_checkpoint`, LangGraph's `checkpoint_id`):
//! the thread branched back there before the run, as a `branch` step. From
//! inside a subgraph's run, the branch goes back to the parent's last
//! committed step and copies the subgraph's steps since, their step
//! numbers and their task's namespace moved with them, so the run goes on
//! inside the subgraph.

use super::CompiledGraph;
use super::position::Loaded;
use crate::ctx::TaskScope;
use crate::error::GraphError;
use crate::graph_state::GraphState;
use serde_json::Value;

impl<S, C> CompiledGraph<S, C>
where
    S: GraphState,
    C: Send + Sync + 'static,
{
    /// Branches the thread back to the step runs start from, if they are
    /// given one ([`with_checkpoint`](Self::with_checkpoint)) that is not
    /// its latest: checked first, so that a refused run writes nothing.
    /// `method` reads where a run stood there (`None`: new input, which
    /// starts from START on the state there).
    pub(crate) async fn branch(
        &self,
        handle: &mut state_store::Thread<S>,
        method: Option<&'static str>,
    ) -> Result<(), GraphError> {
        let Some(seq) = self.checkpoint else {
            return Ok(());
        };
        let head = handle.seq();
        if seq == head {
            return Ok(());
        }
        let thread = handle.id().to_owned();
        let refused = |reason: String| GraphError::Checkpoint {
            thread: thread.clone(),
            seq,
            reason,
        };
        if seq > head {
            return Err(refused(format!("its last step is {head}")));
        }
        // Inside a subgraph's run, the steps since its parent's last
        // committed one are where it stands: copied after the branch.
        let mut inside = None;
        if let Some(method) = method {
            match self.load(seq, &thread, method).await {
                Ok(loaded) => {
                    if inside_subgraph(&loaded, seq).is_some() {
                        inside = Some(loaded.base);
                    }
                }
                // An edit may start from a step no graph run wrote.
                Err(GraphError::Continue { .. }) if method == "update_state" => {}
                Err(error) => return Err(error),
            }
        }
        let (to, copied) = match inside {
            Some(base) => {
                let store = self.store.as_ref().ok_or(GraphError::NoStore {
                    method: "with_checkpoint",
                })?;
                let steps = store.history(&thread, base + 1..=seq).await?;
                if steps.len() as u64 != seq - base {
                    return Err(refused(format!(
                        "the subgraph's steps since step {base} were compacted away"
                    )));
                }
                (base, steps)
            }
            None => (seq, Vec::new()),
        };
        let branch = handle
            .with_metadata(serde_json::json!({"source": "fork"}))
            .branch(to)
            .await
            .map_err(|error| match error {
                state_store::StoreError::NoSuchStep { reason, .. } => refused(reason),
                other => other.into(),
            })?;
        // Each copy is `branch - to` steps later than its original: what
        // its tags name in that range moves as much, and so does the
        // superstep the subgraph's task runs in (its namespace's first
        // segment is that task's, whose id hashes the step's number).
        let shift = branch - to;
        let renamed = renamed_tasks(&copied, to + 1, branch + 1);
        for step in copied {
            relog(handle, step, to, shift, &renamed).await?;
        }
        Ok(())
    }
}

/// Why a run cannot go on from a branch straight back to step `seq`,
/// where `loaded` stands: it stood inside a subgraph's run, whose own
/// steps before the branch a run after it does not read (a branch the
/// graph makes copies them after it; `Thread::branch` alone does not).
pub(crate) fn inside_subgraph<D>(loaded: &Loaded<D>, seq: u64) -> Option<String> {
    let paused = loaded
        .pending
        .as_ref()
        .and_then(|body| body.children.first())
        .map(|child| child.namespace.join("|"));
    match paused {
        Some(namespace) => Some(format!(
            "the run was paused inside subgraph \"{namespace}\" there; branch there with the graph's with_checkpoint, which copies the subgraph's steps"
        )),
        None if loaded.at != seq => Some(
            "the step is a subgraph's, inside its parent's step; branch there with the graph's with_checkpoint, which copies the subgraph's steps"
                .to_owned(),
        ),
        None => None,
    }
}

/// Logs a copy of `step`, one of a paused subgraph run's steps after its
/// parent's last committed step `base`, `shift` steps later: the steps it
/// names from `base` on (its tags' `base` and `at`, a pending body's
/// `base`, its paused subgraphs' too) move with it.
async fn relog<S: GraphState>(
    handle: &mut state_store::Thread<S>,
    mut step: state_store::StepRecord,
    base: u64,
    shift: u64,
    renamed: &[(String, String)],
) -> Result<(), GraphError> {
    use state_store::StepKind;
    let seq = step.seq;
    let mut metadata = Value::Object(std::mem::take(&mut step.metadata));
    if !renamed.is_empty() {
        metadata = renaming(metadata, renamed);
        step.body = renaming(step.body, renamed);
    }
    shifted(&mut metadata, base, shift);
    if let Some(pending) = metadata.get_mut("pending") {
        shifted_body(pending, base, shift);
    }
    let unreadable = |e: state_core::StateError| GraphError::Log {
        thread: handle.id().to_owned(),
        seq,
        reason: format!("a step inside a subgraph's run cannot be copied: {e}"),
    };
    match step.kind {
        StepKind::Subgraph => {
            handle
                .with_metadata(metadata)
                .log_subgraph(step.body)
                .await?;
        }
        StepKind::Pending => {
            let mut body = step.body;
            shifted_body(&mut body, base, shift);
            handle.with_metadata(metadata).log_pending(body).await?;
        }
        // An edit made while paused (update_state).
        StepKind::Superstep => {
            let deltas = step.deltas::<S>(handle.id())?;
            handle.with_metadata(metadata).apply_all(deltas).await?;
        }
        StepKind::Apply => {
            let delta =
                <S::Delta as state_core::Delta>::from_json(step.body).map_err(unreadable)?;
            handle.with_metadata(metadata).apply(delta).await?;
        }
        other => {
            return Err(GraphError::Log {
                thread: handle.id().to_owned(),
                seq,
                reason: format!("a {other} step inside a subgraph's run, which no run writes"),
            });
        }
    }
    Ok(())
}

/// The top-level subgraph tasks' namespace segments in `steps` (their
/// tags' `ns`, their pending bodies' paused subgraphs), each with what it
/// is in superstep `to` rather than `from`.
fn renamed_tasks(steps: &[state_store::StepRecord], from: u64, to: u64) -> Vec<(String, String)> {
    let mut segments: Vec<String> = Vec::new();
    let mut add = |segment: Option<&str>| {
        if let Some(segment) = segment
            && !segments.iter().any(|s| s == segment)
        {
            segments.push(segment.to_owned());
        }
    };
    for step in steps {
        add(step
            .metadata
            .get("ns")
            .and_then(Value::as_str)
            .and_then(|ns| ns.split('|').next()));
        let pending = match step.kind {
            state_store::StepKind::Pending => Some(&step.body),
            _ => step.metadata.get("pending"),
        };
        for child in pending
            .and_then(|body| body.get("children"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            add(child
                .get("namespace")
                .and_then(|ns| ns.get(0))
                .and_then(Value::as_str));
        }
    }
    let top = TaskScope::new(Vec::new(), None);
    segments
        .into_iter()
        .filter_map(|segment| {
            let node = segment.rsplit_once(':')?.0.to_owned();
            // A worker's segment hashes its place among the sends too.
            let send = std::iter::once(None)
                .chain((0..4096).map(Some))
                .find(|send| top.segment(from, &node, *send) == segment)?;
            Some((segment, top.segment(to, &node, send)))
        })
        .collect()
}

/// `value` with every renamed segment in its strings replaced (segments
/// are `node:<uuid>`: no other text holds one).
fn renaming(value: Value, renamed: &[(String, String)]) -> Value {
    let mut text = value.to_string();
    for (old, new) in renamed {
        text = text.replace(old.as_str(), new);
    }
    serde_json::from_str(&text).unwrap_or(value)
}

/// `base` and `at` of step tags, moved by `shift` when from `base` on.
fn shifted(tags: &mut Value, base: u64, shift: u64) {
    for key in ["base", "at"] {
        if let Some(seq) = tags.get(key).and_then(Value::as_u64).filter(|s| *s >= base) {
            tags[key] = Value::from(seq + shift);
        }
    }
}

/// A pending body's `base`, and its paused subgraphs', moved as [`shifted`].
fn shifted_body(body: &mut Value, base: u64, shift: u64) {
    shifted(body, base, shift);
    if let Some(children) = body.get_mut("children").and_then(Value::as_array_mut) {
        for child in children {
            if let Some(inner) = child.get_mut("body") {
                shifted_body(inner, base, shift);
            }
        }
    }
}
