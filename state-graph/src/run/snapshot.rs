//! Reading and editing a thread as LangGraph's `get_state`,
//! `get_state_history` and `update_state` do: a [`Snapshot`] is the state
//! after one logged step, with what runs next and what is pending there.

use super::CompiledGraph;
use super::backing::unstorable_metadata;
use super::cursor::step_metadata;
use super::pending::{Breakpoint, PendingBody, PendingWrite};
use super::position::Loaded;
use crate::error::GraphError;
use crate::graph_state::GraphState;
use crate::outcome::Interrupt;
use crate::plan::Task;
use crate::spec::{Body, START};
use crate::subgraph::{SubCall, SubgraphSnapshot};
use serde_json::{Map, Value, json};
use state_core::State;
use state_store::{ObjectText, StepKind, StepRecord};
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::Arc;
use std::time::SystemTime;

/// A thread's state after one of its steps, as LangGraph's `StateSnapshot`:
/// the state, the nodes that run when the thread goes on, the interrupts
/// pending there, and the step's metadata. See
/// [`get_state`](CompiledGraph::get_state).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Snapshot<S> {
    // Shared: `get_state` on `Store::memory()` hands out the state the
    // store keeps decoded, without copying it.
    state: Arc<S>,
    seq: u64,
    parent: Option<u64>,
    next: Vec<String>,
    interrupts: Vec<Interrupt>,
    metadata: Map<String, Value>,
    created_at: Option<SystemTime>,
    subgraphs: Vec<SubgraphSnapshot>,
}

impl<S> Snapshot<S> {
    /// The state after the step.
    pub fn state(&self) -> &S {
        &self.state
    }

    /// The state, consuming the snapshot (a copy if the store still
    /// shares it: `get_state` on `Store::memory()`).
    pub fn into_state(self) -> S
    where
        S: Clone,
    {
        Arc::unwrap_or_clone(self.state)
    }

    /// The step (0: a thread with none yet). Fork here with
    /// [`Store::fork`](state_store::Store::fork) to go back to it.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// The step before it in its branch of the history (LangGraph's
    /// `parent_config`): the step before, or for a branch back to an
    /// earlier step ([`with_checkpoint`](CompiledGraph::with_checkpoint))
    /// that step. 0 is the empty thread, before its first step; `None`
    /// only for the snapshot of a thread with no step.
    pub fn parent(&self) -> Option<u64> {
        self.parent
    }

    /// The nodes that run when the thread goes on (LangGraph's `next`):
    /// the paused ones, those after a breakpoint, the next superstep's;
    /// empty after `END`.
    pub fn next(&self) -> &[String] {
        &self.next
    }

    /// The interrupts pending at this step, with their ids and nodes.
    pub fn interrupts(&self) -> &[Interrupt] {
        &self.interrupts
    }

    /// The step's metadata: what the runner logged (`nodes`, routes), plus
    /// LangGraph's `source` (`"input"`: a run's input; `"loop"`: a
    /// superstep; `"update"`: an `update_state`; `"fork"`: a branch back to
    /// an earlier step; and ours, `"pause"`: a
    /// superstep paused by an interrupt, a failure or a breakpoint, where
    /// LangGraph has no checkpoint of its own) and `step` (the seq, where
    /// LangGraph counts its checkpoints).
    pub fn metadata(&self) -> &Map<String, Value> {
        &self.metadata
    }

    /// When the step was committed (`None` for a thread with no step).
    pub fn created_at(&self) -> Option<SystemTime> {
        self.created_at
    }

    /// The subgraphs paused inside this step's superstep, each with its
    /// own state, `next`, interrupts and paused subgraphs (LangGraph's
    /// `get_state(config, subgraphs=True)`): where a run paused inside a
    /// subgraph stands, inside it. Empty unless paused inside one.
    pub fn subgraphs(&self) -> &[SubgraphSnapshot] {
        &self.subgraphs
    }
}

impl<S, C> CompiledGraph<S, C>
where
    S: GraphState,
    C: Send + Sync + 'static,
{
    /// The thread's current [`Snapshot`] (LangGraph's `get_state`): its
    /// state, [`next`](Snapshot::next), pending interrupts and the last
    /// step's metadata. A thread that does not exist has the default state
    /// and nothing next, and is not created. Costs one load of the thread
    /// at most ([`Store::latest`](state_store::Store::latest): on
    /// `Store::memory()` the steps since the last call).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_graph::GraphError> {
    /// use state_core::{AgentState, State};
    /// use state_graph::{END, START, StateGraph};
    ///
    /// #[derive(AgentState, Debug, Clone)]
    /// struct S { n: u32 }
    ///
    /// let mut g = StateGraph::<S>::new();
    /// g.add_node("agent", |s: &S| S::delta().n(s.n + 1));
    /// g.add_node("tools", |s: &S| S::delta().n(s.n + 10));
    /// g.add_edge(START, "agent").add_edge("agent", "tools").add_edge("tools", END);
    /// g.interrupt_before(["tools"]);
    /// let app = g.compile()?.with_store(state_store::Store::memory());
    ///
    /// app.invoke_thread("t", S::delta()).await?;
    /// let snap = app.get_state("t").await?;
    /// assert_eq!((snap.state().n, snap.next()), (1, &["tools".to_owned()][..]));
    /// # Ok(())
    /// # }
    /// ```
    pub async fn get_state(&self, thread: &str) -> Result<Snapshot<S>, GraphError> {
        let store = self.store_for("get_state")?;
        // The state and its last step read together (a step committed
        // meanwhile is not the one whose metadata is shown), without
        // opening the thread.
        let latest = match store.latest::<S>(thread).await {
            Ok(latest) => latest,
            Err(state_store::StoreError::ThreadNotFound { .. }) => return Ok(empty()),
            Err(e) => return Err(e.into()),
        };
        if latest.seq == 0 {
            return Ok(empty());
        }
        let Some(step) = latest.step else {
            return Err(GraphError::Log {
                thread: thread.to_owned(),
                seq: latest.seq,
                reason: "the thread's last step was compacted away".to_owned(),
            });
        };
        self.snapshot(thread, step, latest.state).await
    }

    /// The thread's snapshots, newest first (LangGraph's
    /// `get_state_history`): one per logged step, each with its state,
    /// `next`, interrupts and metadata. A builder: `.limit(n)`,
    /// `.before(seq)` and `.filter(json!({..}))` (metadata keys that must
    /// match) narrow it; await it to read.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_graph::GraphError> {
    /// # use state_core::{AgentState, State};
    /// # use state_graph::{END, START, StateGraph};
    /// # #[derive(AgentState, Debug, Clone)]
    /// # struct S { n: u32 }
    /// # let mut g = StateGraph::<S>::new();
    /// # g.add_node("inc", |s: &S| S::delta().n(s.n + 1));
    /// # g.add_edge(START, "inc").add_edge("inc", END);
    /// # let app = g.compile()?.with_store(state_store::Store::memory());
    /// app.invoke_thread("t", S::delta()).await?;
    /// let history = app.get_state_history("t").await?;
    /// let steps: Vec<(u64, u32)> = history.iter().map(|s| (s.seq(), s.state().n)).collect();
    /// assert_eq!(steps, [(2, 1), (1, 0)]);
    /// assert_eq!(history[1].next(), ["inc"]);
    /// let inputs = app.get_state_history("t").filter(serde_json::json!({"source": "input"})).await?;
    /// assert_eq!(inputs.len(), 1);
    /// # Ok(())
    /// # }
    /// ```
    pub fn get_state_history<'a>(&'a self, thread: &'a str) -> History<'a, S, C> {
        History {
            app: self,
            thread,
            limit: None,
            before: None,
            filter: Map::new(),
        }
    }

    /// Edits the thread's state as if node `as_node` had written `delta`
    /// (LangGraph's `update_state`): logged as one step written by that
    /// node, so a run that goes on follows `as_node`'s edges from there.
    /// With `as_node` `None`, the nodes of the last step (the step's
    /// writer, as LangGraph picks it); on a thread with no step, the input.
    /// Returns the new step's seq.
    ///
    /// On a paused thread, what is paused survives the edit: the pending
    /// interrupts and the finished nodes' writes, so `resume` answers them
    /// on the edited state. Unless `as_node` is a paused node: its write is
    /// then `delta`, it counts as done (LangGraph's), and when nothing else
    /// is pending the paused superstep is committed with it. After a
    /// breakpoint, [`continue_thread`](Self::continue_thread) goes on
    /// without stopping at it again (LangGraph's edit-then-continue).
    ///
    /// On a graph [`with_checkpoint`](Self::with_checkpoint), the edit is
    /// made on the state after that step, the thread first branched back
    /// there (LangGraph's fork: `update_state` at a past checkpoint).
    pub async fn update_state(
        &self,
        thread: &str,
        delta: S::Delta,
        as_node: Option<&str>,
    ) -> Result<u64, GraphError> {
        let store = self.store_for("update_state")?;
        if let Some(name) = as_node
            && name != START
            && self.plan.node(name).is_none()
        {
            return Err(GraphError::UnknownNode {
                method: "update_state",
                node: name.to_owned(),
            });
        }
        let mut handle = self.thread_to_write(store, thread).await?;
        // From a past step (`with_checkpoint`): LangGraph's fork.
        self.branch(&mut handle, Some("update_state")).await?;
        let seq = handle.seq();
        let mut last = if seq == 0 {
            None
        } else {
            store.history(thread, seq..=seq).await?.pop()
        };
        // A branch back to an earlier step stands where that step stood
        // (refused inside a subgraph's run, as running from there is).
        if last
            .as_ref()
            .is_some_and(|step| step.kind == StepKind::Branch)
        {
            match self.load(seq, thread, "update_state").await {
                Ok(_) | Err(GraphError::Continue { .. }) => {}
                Err(error) => return Err(error),
            }
        }
        while let Some(from) = last.as_ref().and_then(StepRecord::branched_from) {
            last = match from {
                0 => None,
                from => store.history(thread, from..=from).await?.pop(),
            };
        }
        let position = match &last {
            Some(step) => Some(self.position(thread, step.clone(), "update_state")?),
            None => None,
        };
        let writer = match (as_node, &last) {
            (Some(name), _) => name.to_owned(),
            (None, None) => START.to_owned(),
            (None, Some(step)) => {
                // The last writer: of the step, or, on a paused thread, of
                // the step the paused superstep was planned from.
                let nodes: Vec<String> = match pending_body(step) {
                    Some(body) => body
                        .get("from")
                        .and_then(Value::as_array)
                        .map(|from| {
                            from.iter()
                                .filter_map(Value::as_str)
                                .map(str::to_owned)
                                .collect()
                        })
                        .unwrap_or_default(),
                    None => step.nodes().iter().map(|n| (*n).to_owned()).collect(),
                };
                match nodes.first() {
                    Some(first) if nodes.iter().all(|n| n == first) => first.clone(),
                    _ => {
                        return Err(GraphError::AmbiguousUpdate {
                            thread: thread.to_owned(),
                            nodes,
                        });
                    }
                }
            }
        };
        let mut metadata = Map::new();
        metadata.insert("source".to_owned(), json!("update"));
        if let (Some(step), Some(position)) = (&last, &position)
            && position.pending.is_some()
        {
            let body = pending_body(step).cloned().unwrap_or(Value::Null);
            let body: PendingBody = serde_json::from_value(body).map_err(|e| GraphError::Log {
                thread: thread.to_owned(),
                seq,
                reason: format!("not a pending step of a graph run: {e}"),
            })?;
            match body.breakpoint {
                Some(Breakpoint::Before) => {
                    metadata.insert("breakpoint".to_owned(), json!("before"));
                }
                Some(Breakpoint::After) => {
                    metadata.insert("breakpoint".to_owned(), json!("after"));
                }
                None => {
                    let paused = body.interrupts.iter().any(|i| i.task.node == writer)
                        || body.children.iter().any(|c| c.task.node == writer)
                        || body.failed.as_ref().is_some_and(|f| f.task.node == writer);
                    if paused {
                        return self
                            .finish_paused(handle, thread, body, &writer, delta, metadata)
                            .await;
                    }
                    metadata.insert(
                        "pending".to_owned(),
                        serde_json::to_value(&body).map_err(|e| GraphError::Log {
                            thread: thread.to_owned(),
                            seq,
                            reason: format!("the pending step cannot be written: {e}"),
                        })?,
                    );
                }
            }
        }
        let seq = handle
            .with_metadata(Value::Object(metadata))
            .apply_nodes([(writer, delta)])
            .await
            .map_err(state_refused)?;
        Ok(seq)
    }

    /// `update_state` as the paused node `writer`: its task counts as done
    /// with `delta` as its write.
    async fn finish_paused(
        &self,
        mut handle: state_store::Thread<S>,
        thread: &str,
        mut body: PendingBody,
        writer: &str,
        delta: S::Delta,
        metadata: Map<String, Value>,
    ) -> Result<u64, GraphError> {
        let task = body
            .interrupts
            .iter()
            .map(|i| i.task.clone())
            .chain(body.children.iter().map(|c| c.task.clone()))
            .chain(body.failed.iter().map(|f| f.task.clone()))
            .find(|t| t.node == writer)
            .ok_or_else(|| GraphError::UnknownNode {
                method: "update_state",
                node: writer.to_owned(),
            })?;
        body.interrupts.retain(|i| i.task != task);
        body.children.retain(|c| c.task != task);
        body.answers.retain(|a| a.task != task);
        if body.failed.as_ref().is_some_and(|f| f.task == task) {
            body.failed = None;
        }
        let write = state_core::json::to_value(&delta).map_err(|e| GraphError::State {
            context: format!("the update as \"{writer}\" cannot be stored"),
            source: state_core::StateError::Serialize {
                field: writer.to_owned(),
                message: e.to_string(),
            },
        })?;
        body.writes.push(PendingWrite {
            task,
            delta: write,
            goto: Vec::new(),
            sends: Vec::new(),
        });
        let seq = handle.seq();
        let log_error = |e: serde_json::Error| GraphError::Log {
            thread: thread.to_owned(),
            seq,
            reason: format!("the pending step cannot be written: {e}"),
        };
        if !body.interrupts.is_empty() || !body.children.is_empty() || body.failed.is_some() {
            // Others still wait: the superstep stays paused, with one
            // write more.
            let value = serde_json::to_value(&body).map_err(log_error)?;
            let nodes: Vec<String> = body.writes.iter().map(|w| w.task.node.clone()).collect();
            let seq = handle
                .with_metadata(json!({"nodes": nodes, "source": "update"}))
                .log_pending(value)
                .await?;
            return Ok(seq);
        }
        // Nothing else pending: the superstep is done, its writes applied
        // in its task order.
        let mut prior =
            super::pending::Prior::decode(&mut body, &self.plan, |reason| GraphError::Log {
                thread: thread.to_owned(),
                seq: handle.seq(),
                reason,
            })?;
        let loaded_cursor = body
            .routes()
            .cursor(&self.plan, &body.from)
            .map_err(|reason| GraphError::Log {
                thread: thread.to_owned(),
                seq: handle.seq(),
                reason,
            })?;
        let state = handle.shared_state();
        let (tasks, joins) = self
            .plan
            .next(&loaded_cursor, &state, self.context.as_deref())?;
        drop(state);
        let mut next = crate::plan::Cursor::default();
        let mut nodes = Vec::new();
        for task in &tasks {
            let key = super::superstep::key(&self.plan, task);
            if !next.sources.contains(&Some(task.node)) {
                next.sources.push(Some(task.node));
            }
            if let Some(output) = prior.writes.remove(&key) {
                super::runner::take_all(&mut next.goto, output.resolved.targets);
                next.sends
                    .extend(output.resolved.sends.into_iter().map(|s| (task.node, s)));
                nodes.push((
                    self.plan.nodes[task.node].name.clone(),
                    output.update.unwrap_or_default(),
                ));
            }
        }
        let ran: Vec<usize> = tasks.iter().map(|t: &Task| t.node).collect();
        next.joins = self.plan.mark_joins(joins, &ran);
        // The edit's own keys, then the routes it leaves (never the same
        // keys: `step_metadata` writes only `goto`, `sends` and `joins`).
        let mut text = ObjectText::new();
        for (key, value) in &metadata {
            text.field(key, value).map_err(unstorable_metadata)?;
        }
        text.extend(&step_metadata(&self.plan, &next).map_err(unstorable_metadata)?);
        let seq = handle
            .with_metadata_text(text)
            .apply_nodes(nodes)
            .await
            .map_err(state_refused)?;
        Ok(seq)
    }

    /// The snapshot of `thread` after `step`, whose state is `state`.
    async fn snapshot(
        &self,
        thread: &str,
        step: StepRecord,
        state: Arc<S>,
    ) -> Result<Snapshot<S>, GraphError> {
        let seq = step.seq;
        let created_at = Some(step.recorded_at);
        let mut metadata = step.metadata.clone();
        let source = if metadata.get("source").is_some() {
            None
        } else if step.kind == StepKind::Branch {
            Some("fork")
        } else if step.kind == StepKind::Pending {
            Some("pause")
        } else if step.kind == StepKind::BeginTurn {
            Some("input")
        } else if step.metadata.contains_key("nodes") {
            Some("loop")
        } else {
            Some("update")
        };
        if let Some(source) = source {
            metadata.insert("source".to_owned(), json!(source));
        }
        metadata.insert("step".to_owned(), json!(seq));
        let parent = step.branched_from().or(seq.checked_sub(1));
        let loaded: Option<Loaded<S::Delta>> = if step.kind == StepKind::Subgraph {
            // Inside a subgraph: the parent stands where its steps say.
            Some(self.load(seq, thread, "get_state").await?)
        } else if step.kind == StepKind::Branch {
            // Where the step it branched from stood; nowhere when no graph
            // run wrote that one.
            match self.load(seq, thread, "get_state").await {
                Ok(loaded) => Some(loaded),
                Err(GraphError::Continue { .. }) => None,
                Err(error) => return Err(error),
            }
        } else if step.metadata.contains_key("nodes") || step.kind == StepKind::Pending {
            Some(self.position(thread, step, "get_state")?)
        } else {
            None
        };
        let (next, interrupts, subgraphs) = match loaded {
            Some(loaded) => {
                let subgraphs = self.subgraphs_of(thread, &loaded, &state).await?;
                let (next, interrupts) = self.next_and_interrupts(loaded, &state)?;
                (next, interrupts, subgraphs)
            }
            None => (Vec::new(), Vec::new(), Vec::new()),
        };
        Ok(Snapshot {
            state,
            seq,
            parent,
            next,
            interrupts,
            metadata,
            created_at,
            subgraphs,
        })
    }

    /// The snapshots of the subgraphs paused inside where `loaded` stands.
    async fn subgraphs_of(
        &self,
        thread: &str,
        loaded: &Loaded<S::Delta>,
        state: &S,
    ) -> Result<Vec<SubgraphSnapshot>, GraphError> {
        let Some(body) = &loaded.pending else {
            return Ok(Vec::new());
        };
        let mut subgraphs = Vec::new();
        let parent = Arc::new(state.clone());
        for child in &body.children {
            let Some(index) = self.plan.node(&child.task.node) else {
                continue;
            };
            let Body::Subgraph(sub) = &self.plan.nodes[index].body else {
                continue;
            };
            let call = SubCall {
                state: parent.clone(),
                context: self.context.clone(),
                thread: Some(thread.to_owned()),
                store: self.store().cloned(),
                log: None,
                namespace: child.namespace.clone(),
                base: loaded.base,
                at: loaded.at,
                fresh: false,
                paused: Some((child.body.clone(), Vec::new())),
                events: None,
                adopt: false,
                hand_back: crate::subgraph::HandBack::No,
            };
            subgraphs.push(sub.snapshot(&child.task.node, call).await?);
        }
        Ok(subgraphs)
    }

    /// What runs next from `loaded`, on `state`, and what is pending there.
    fn next_and_interrupts(
        &self,
        loaded: Loaded<S::Delta>,
        state: &S,
    ) -> Result<(Vec<String>, Vec<Interrupt>), GraphError> {
        // Without a context, only a router that reads one needs it.
        let (tasks, _) = self
            .plan
            .next(&loaded.position.cursor, state, self.context.as_deref())?;
        let mut next: Vec<String> = Vec::new();
        for task in &tasks {
            let key = super::superstep::key(&self.plan, task);
            let name = &self.plan.nodes[task.node].name;
            if !loaded.position.prior.writes.contains_key(&key) && !next.contains(name) {
                next.push(name.clone());
            }
        }
        let interrupts = loaded
            .pending
            .map(|body| body.all_interrupts().into_iter().map(|(_, i)| i).collect())
            .unwrap_or_default();
        Ok((next, interrupts))
    }

    fn store_for(&self, method: &'static str) -> Result<&state_store::Store, GraphError> {
        self.store.as_ref().ok_or(GraphError::NoStore { method })
    }

    /// The snapshots of [`History`], newest first.
    async fn history(
        &self,
        thread: &str,
        limit: Option<usize>,
        before: Option<u64>,
        filter: &Map<String, Value>,
    ) -> Result<Vec<Snapshot<S>>, GraphError> {
        let store = self.store_for("get_state_history")?;
        let steps = match before {
            Some(before) => store.history(thread, ..before).await?,
            None => store.history(thread, ..).await?,
        };
        let Some(first) = steps.first() else {
            return Ok(Vec::new());
        };
        // From the state after the first step listed, or, on a fork, after
        // the step it was forked at: the steps a fork copies from before
        // it change no state (a pause, a subgraph's steps, back to the
        // step that did), so they all show the fork's first state.
        let forked_at = store
            .thread_info(thread)
            .await?
            .forked_from
            .map_or(0, |(_, seq)| seq);
        let start = first.seq.max(forked_at);
        let mut state: S = store.state_at(thread, start).await?;
        let mut snapshots = Vec::new();
        for step in steps {
            if step.seq > start {
                step.replay_onto(thread, &mut state)?;
            }
            if step.kind == StepKind::Subgraph {
                // A subgraph's own step: not one of this graph's snapshots.
                continue;
            }
            let snapshot = self.snapshot(thread, step, Arc::new(state.clone())).await?;
            if filter
                .iter()
                .all(|(k, v)| snapshot.metadata.get(k) == Some(v))
            {
                snapshots.push(snapshot);
            }
        }
        snapshots.reverse();
        if let Some(limit) = limit {
            snapshots.truncate(limit);
        }
        Ok(snapshots)
    }
}

/// The pending body a step holds: its own (a pending step) or the one an
/// edit kept (in its metadata).
fn pending_body(step: &StepRecord) -> Option<&Value> {
    if step.kind == StepKind::Pending {
        Some(&step.body)
    } else {
        step.metadata.get("pending")
    }
}

/// The snapshot of a thread with no step.
fn empty<S: State>() -> Snapshot<S> {
    Snapshot {
        state: Arc::new(S::default()),
        seq: 0,
        parent: None,
        next: Vec::new(),
        interrupts: Vec::new(),
        metadata: Map::new(),
        created_at: None,
        subgraphs: Vec::new(),
    }
}

/// An edit the reducers refuse is the caller's error, as it is.
fn state_refused(error: state_store::StoreError) -> GraphError {
    match error {
        state_store::StoreError::State { source, .. } => GraphError::State {
            context: "the update was refused by the reducers".to_owned(),
            source,
        },
        other => other.into(),
    }
}

/// [`get_state_history`](CompiledGraph::get_state_history), to narrow and
/// await.
#[must_use = "a history does nothing until awaited"]
pub struct History<'a, S: State, C> {
    app: &'a CompiledGraph<S, C>,
    thread: &'a str,
    limit: Option<usize>,
    before: Option<u64>,
    filter: Map<String, Value>,
}

impl<S: State, C> std::fmt::Debug for History<'_, S, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("History")
            .field("thread", &self.thread)
            .field("limit", &self.limit)
            .field("before", &self.before)
            .field("filter", &self.filter)
            .finish()
    }
}

impl<S: State, C> History<'_, S, C> {
    /// At most `n` snapshots (the newest).
    pub fn limit(mut self, n: usize) -> Self {
        self.limit = Some(n);
        self
    }

    /// Only the steps before `seq` (LangGraph's `before=`).
    pub fn before(mut self, seq: u64) -> Self {
        self.before = Some(seq);
        self
    }

    /// Only the snapshots whose metadata has these keys with these values
    /// (a JSON object; anything else matches nothing): `json!({"source":
    /// "update"})`.
    pub fn filter(mut self, filter: Value) -> Self {
        self.filter = match filter {
            Value::Object(map) => map,
            other => {
                let mut map = Map::new();
                map.insert("\u{0}not an object".to_owned(), other);
                map
            }
        };
        self
    }
}

impl<'a, S, C> IntoFuture for History<'a, S, C>
where
    S: GraphState,
    C: Send + Sync + 'static,
{
    type Output = Result<Vec<Snapshot<S>>, GraphError>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send + 'a>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            self.app
                .history(self.thread, self.limit, self.before, &self.filter)
                .await
        })
    }
}
