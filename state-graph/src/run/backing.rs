//! Where a run keeps its state: in memory, in a store's thread (every
//! superstep one logged step), or, for a subgraph, its own state inside its
//! parent's superstep (each superstep logged as a subgraph step under the
//! root thread, when there is one).

use crate::error::GraphError;
use crate::graph_state::GraphState;
use crate::subgraph::{ChildLog, LogFuture};
use serde_json::{Value, json};
use state_core::{Delta, State, StateError};
use state_store::{DeltasText, Durability, ObjectText, StoreError, Thread};
use std::sync::Arc;

pub(crate) enum Backing<S: State> {
    Memory(Arc<S>),
    Thread(Thread<S>),
    /// The thread, lent to the subgraphs of a running superstep so they
    /// can log their steps under it (see [`Backing::lend`]), with the state
    /// the superstep reads.
    Lent(Arc<ThreadLog<S>>, Arc<S>),
    Child(Child<S>),
}

/// A subgraph's run: its state, and where its steps are logged.
pub(crate) struct Child<S: State> {
    pub state: Arc<S>,
    pub log: Option<Arc<dyn ChildLog>>,
    /// What its steps' metadata carry besides their nodes and routes: its
    /// namespace, and where the root run stands (see `child.rs`), written
    /// once; none when nothing is logged.
    pub tags: Option<ObjectText>,
    /// What it keeps of what its supersteps wrote, for its parent.
    pub kept: Kept<S::Delta>,
    /// Supersteps committed.
    pub steps: u64,
}

/// What a subgraph's run keeps of what its supersteps wrote, for its
/// parent; asked for empty.
pub(crate) enum Kept<D> {
    /// Nothing: its parent takes its final state (adopted), or
    /// `from_child` of it (mapped).
    Nothing,
    /// Their composition, one after the other (none before the first).
    Writes(Option<D>),
    /// Their deltas as logged: its steps are logged, and its parent logs
    /// them again as they are.
    Steps(Vec<DeltasText>),
}

impl<D: Delta> Kept<D> {
    /// Whether each superstep's write is composed ([`Kept::Writes`]).
    pub fn wants_writes(&self) -> bool {
        matches!(self, Kept::Writes(_))
    }

    /// Whether each superstep's deltas are kept as logged
    /// ([`Kept::Steps`]).
    pub fn wants_steps(&self) -> bool {
        matches!(self, Kept::Steps(_))
    }

    /// Composes a superstep's `write` after those kept ([`Kept::Writes`]).
    pub fn compose(&mut self, write: D) -> Result<(), StateError> {
        if let Kept::Writes(kept) = self {
            *kept = Some(match kept.take() {
                Some(before) => before.then(write)?,
                None => write,
            });
        }
        Ok(())
    }

    /// What the parent gets: the composed writes, or the steps as logged.
    pub fn into_parts(self) -> (Option<D>, Option<Vec<DeltasText>>) {
        match self {
            Kept::Nothing => (None, None),
            Kept::Writes(writes) => (writes, None),
            Kept::Steps(steps) => (None, Some(steps)),
        }
    }
}

/// The root thread, as a [`ChildLog`]. `futures`' mutex, not tokio's: a
/// lone subgraph task never waits for it, and taking and releasing it is
/// then two atomic operations (tokio's locks its list of waiters to
/// release).
pub(crate) struct ThreadLog<S>(futures::lock::Mutex<Thread<S>>);

impl<S: GraphState> ThreadLog<S> {
    /// Logs one subgraph step under the thread.
    async fn log_step(&self, body: ObjectText, metadata: ObjectText) -> Result<u64, StoreError> {
        let mut thread = self.0.lock().await;
        thread
            .with_metadata_text(metadata)
            .log_subgraph_object(body)
            .await
    }
}

impl<S: GraphState> ChildLog for ThreadLog<S> {
    fn log(
        &self,
        body: ObjectText,
        metadata: ObjectText,
    ) -> LogFuture<'_, Result<u64, StoreError>> {
        Box::pin(self.log_step(body, metadata))
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

impl<S: GraphState> Backing<S> {
    /// The state, shared with the superstep's nodes (no copy).
    pub fn shared(&mut self) -> Arc<S> {
        match self {
            Backing::Memory(state) => state.clone(),
            Backing::Thread(thread) => thread.shared_state(),
            Backing::Lent(_, state) => state.clone(),
            Backing::Child(child) => child.state.clone(),
        }
    }

    /// The state, for a subgraph task to adopt ([`adopt`](Backing::adopt)):
    /// held by it alone, it changes it in place instead of copying it. A
    /// default state is left until then; a run that adopts nothing after
    /// this ends in an error (it logs nothing, so a pause or a failure is
    /// one), which returns no state.
    pub fn take_shared(&mut self) -> Arc<S> {
        match self {
            Backing::Memory(state) => std::mem::replace(state, Arc::new(S::default())),
            Backing::Child(child) => std::mem::replace(&mut child.state, Arc::new(S::default())),
            Backing::Thread(_) | Backing::Lent(..) => self.shared(),
        }
    }

    /// When a thread's steps are durable (a thread only: nothing else
    /// stores them).
    pub fn set_durability(&mut self, durability: Durability) {
        if let Backing::Thread(thread) = self {
            thread.set_durability(durability);
        }
    }

    /// Waits until the thread's steps are durable (see
    /// [`Thread::sync`]).
    pub async fn sync(&mut self) -> Result<(), GraphError> {
        match self {
            Backing::Thread(thread) => Ok(thread.sync().await?),
            _ => Ok(()),
        }
    }

    /// Whether a superstep's commit is logged (and so reads its routes).
    pub fn logs(&self) -> bool {
        match self {
            Backing::Memory(_) => false,
            Backing::Thread(_) | Backing::Lent(..) => true,
            Backing::Child(child) => child.log.is_some(),
        }
    }

    /// Whether a superstep may end by taking a subgraph's final state as
    /// its own ([`adopt`](Backing::adopt)): nothing is logged, and no
    /// parent composes what this run's supersteps wrote.
    pub fn adoptable(&self) -> bool {
        match self {
            Backing::Memory(_) => true,
            Backing::Child(child) => child.log.is_none() && matches!(child.kept, Kept::Nothing),
            Backing::Thread(_) | Backing::Lent(..) => false,
        }
    }

    /// Ends a superstep whose only task was a subgraph run on its state:
    /// `state`, the subgraph's final state, is the state after it (what
    /// [`commit`](Backing::commit) of the subgraph's writes would make).
    pub fn adopt(&mut self, state: Arc<S>) -> Result<(), GraphError> {
        match self {
            Backing::Memory(held) => *held = state,
            Backing::Child(child) if child.log.is_none() && matches!(child.kept, Kept::Nothing) => {
                child.state = state;
                child.steps += 1;
            }
            _ => {
                return Err(GraphError::Log {
                    thread: String::new(),
                    seq: self.seq(),
                    reason: "a subgraph's state was adopted by a run that logs its steps"
                        .to_owned(),
                });
            }
        }
        Ok(())
    }

    /// Whether this is a run's own thread (not lent, not a subgraph's).
    pub fn is_thread(&self) -> bool {
        matches!(self, Backing::Thread(_))
    }

    /// Where the subgraphs of the next superstep log their steps: the
    /// thread (lent until [`take_back`](Backing::take_back)), a parent's
    /// log, or nowhere (in memory).
    pub fn lend(&mut self) -> Option<Arc<dyn ChildLog>> {
        match self {
            Backing::Memory(_) => None,
            Backing::Child(child) => child.log.clone(),
            Backing::Lent(log, _) => Some(log.clone()),
            Backing::Thread(_) => {
                let Backing::Thread(mut thread) =
                    std::mem::replace(self, Backing::Memory(Arc::new(S::default())))
                else {
                    return None;
                };
                let state = thread.shared_state();
                let log = Arc::new(ThreadLog(futures::lock::Mutex::new(thread)));
                *self = Backing::Lent(log.clone(), state);
                Some(log)
            }
        }
    }

    /// The thread back from the superstep's subgraphs (which hold it no
    /// more once the superstep is over).
    pub fn take_back(&mut self) -> Result<(), GraphError> {
        if !matches!(self, Backing::Lent(..)) {
            return Ok(());
        }
        let Backing::Lent(log, state) =
            std::mem::replace(self, Backing::Memory(Arc::new(S::default())))
        else {
            return Ok(());
        };
        drop(state);
        match Arc::try_unwrap(log) {
            Ok(log) => {
                *self = Backing::Thread(log.0.into_inner());
                Ok(())
            }
            Err(log) => {
                // Unreachable: every subgraph task ended with its superstep.
                let seq = log.0.try_lock().map(|t| t.seq()).unwrap_or_default();
                *self = Backing::Lent(log, Arc::new(S::default()));
                Err(GraphError::Log {
                    thread: String::new(),
                    seq,
                    reason: "a subgraph still held the thread after its superstep".to_owned(),
                })
            }
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
            Backing::Child(child) => {
                let state = Arc::make_mut(&mut child.state);
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
            Backing::Lent(..) => Err(lent()),
        }
    }

    /// Applies one superstep's deltas, in order, all or nothing; with a
    /// store, logged with `routes` (and the node names) as its metadata.
    pub async fn commit(
        &mut self,
        nodes: Vec<(&str, S::Delta)>,
        routes: Routes,
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
            Backing::Child(child) => return child.commit(nodes, routes, &fields, None).await,
            Backing::Thread(thread) => match thread
                .with_metadata_text(routes.unwrap_or_default())
                .apply_nodes(nodes)
                .await
            {
                Ok(_) => Ok(()),
                Err(StoreError::State { source, .. }) => Err(source),
                Err(other) => return Err(other.into()),
            },
            Backing::Lent(..) => return Err(lent()),
        };
        result.map_err(|source| conflict(source, &fields))
    }

    /// Ends a superstep whose only task was a subgraph that handed back
    /// its final state (`state`) with what it wrote (`nodes`): logged as
    /// [`commit`](Backing::commit) logs them, and `state` taken as the
    /// state they make instead of applying them again.
    pub async fn commit_adopted(
        &mut self,
        nodes: Vec<(&str, S::Delta)>,
        routes: Routes,
        state: Arc<S>,
    ) -> Result<(), GraphError> {
        match self {
            Backing::Memory(held) => {
                *held = state;
                Ok(())
            }
            Backing::Child(child) => child.commit(nodes, routes, &[], Some(state)).await,
            Backing::Thread(thread) => match thread
                .with_metadata_text(routes.unwrap_or_default())
                .adopt_nodes(nodes, state)
                .await
            {
                Ok(_) => Ok(()),
                Err(StoreError::State { source, .. }) => Err(conflict(source, &[])),
                Err(other) => Err(other.into()),
            },
            Backing::Lent(..) => Err(lent()),
        }
    }

    /// [`commit_adopted`](Backing::commit_adopted) of a subgraph that
    /// handed back its steps' deltas as it logged them ([`Kept::Steps`],
    /// a thread only): logged as they are (`Thread::adopt_steps`), as the
    /// write of its node, the superstep's only one.
    pub async fn commit_steps(
        &mut self,
        node: &str,
        steps: Vec<DeltasText>,
        routes: Routes,
        state: Arc<S>,
    ) -> Result<(), GraphError> {
        match self {
            Backing::Thread(thread) => {
                thread
                    .with_metadata_text(routes.unwrap_or_default())
                    .adopt_steps(node, steps, state)
                    .await?;
                Ok(())
            }
            backing => Err(GraphError::Log {
                thread: String::new(),
                seq: backing.seq(),
                reason: "a subgraph's logged steps were handed back to a superstep that \
                         cannot log them as they are"
                    .to_owned(),
            }),
        }
    }

    /// Logs a paused superstep (a thread only), its tasks' node names in
    /// the metadata as a superstep's are.
    pub async fn pending(&mut self, nodes: Vec<String>, body: Value) -> Result<(), GraphError> {
        match self {
            Backing::Memory(_) | Backing::Child(_) => Ok(()),
            Backing::Thread(thread) => {
                thread
                    .with_metadata(json!({ "nodes": nodes }))
                    .log_pending(body)
                    .await?;
                Ok(())
            }
            Backing::Lent(..) => Err(lent()),
        }
    }

    /// The thread's last step (0 in memory; a subgraph's: its steps).
    pub fn seq(&self) -> u64 {
        match self {
            Backing::Memory(_) => 0,
            Backing::Thread(thread) => thread.seq(),
            Backing::Lent(log, _) => log.0.try_lock().map(|t| t.seq()).unwrap_or_default(),
            Backing::Child(child) => child.steps,
        }
    }

    pub fn into_state(self) -> S {
        let unshare = |state: Arc<S>| Arc::try_unwrap(state).unwrap_or_else(|s| (*s).clone());
        match self {
            Backing::Memory(state) => unshare(state),
            Backing::Thread(thread) => thread.into_state(),
            Backing::Lent(_, state) => unshare(state),
            Backing::Child(child) => unshare(child.state),
        }
    }
}

impl<S: GraphState> Child<S> {
    /// A subgraph's superstep: applied to its own state (or, `made`, the
    /// state a subgraph inside it handed back, which those deltas make),
    /// composed into what it wrote so far, logged as a subgraph step.
    async fn commit(
        &mut self,
        nodes: Vec<(&str, S::Delta)>,
        routes: Routes,
        fields: &[(&str, state_core::FieldNames)],
        made: Option<Arc<S>>,
    ) -> Result<(), GraphError> {
        let logged = match &self.log {
            Some(_) => Some(self.logged(&nodes, routes)?),
            None => None,
        };
        let keep_writes = self.kept.wants_writes();
        let merged = S::Delta::merge_all(nodes.into_iter().map(|(_, delta)| delta))
            .map_err(|source| conflict(source, fields))?;
        let kept = match made {
            Some(state) => {
                self.state = state;
                keep_writes.then_some(merged)
            }
            None => {
                let kept = keep_writes.then(|| merged.clone());
                Arc::make_mut(&mut self.state)
                    .apply(merged)
                    .map_err(|source| conflict(source, fields))?;
                kept
            }
        };
        if let (Some(log), Some((body, metadata, deltas))) = (&self.log, logged) {
            if let (Kept::Steps(steps), Some(deltas)) = (&mut self.kept, deltas) {
                steps.push(deltas);
            }
            // The root thread of this very state type (a same-state
            // subgraph of a top-level run) is logged to in place; another
            // (a mapped one, or below one) through the erased log.
            match log.as_any().downcast_ref::<ThreadLog<S>>() {
                Some(thread) => thread.log_step(body, metadata).await?,
                None => log.log(body, metadata).await?,
            };
        }
        if let Some(kept) = kept {
            self.kept
                .compose(kept)
                .map_err(|source| GraphError::State {
                    context: "the subgraph's steps do not compose".to_owned(),
                    source,
                })?;
        }
        self.steps += 1;
        Ok(())
    }

    /// A superstep's subgraph step as logged: `{"deltas": [..]}`, the typed
    /// deltas written as text once (no `Value` made and dropped), and its
    /// metadata: the tags (written once per run), the nodes, the routes.
    /// Also the deltas' text, kept for a parent that logs it again
    /// ([`Kept::Steps`]).
    fn logged(
        &self,
        nodes: &[(&str, S::Delta)],
        routes: Routes,
    ) -> Result<(ObjectText, ObjectText, Option<DeltasText>), GraphError> {
        let written = nodes.iter().map(|(_, delta)| delta);
        // Written once either way: as text kept for the parent, or straight
        // into the body.
        let (body, deltas) = if self.kept.wants_steps() {
            let deltas = DeltasText::write(written).map_err(|e| unstorable_deltas(nodes, e))?;
            let mut body = ObjectText::with_capacity(deltas.as_str().len() + 16);
            body.deltas_text_field("deltas", &deltas);
            (body, Some(deltas))
        } else {
            let mut body = ObjectText::with_capacity(512);
            if let Err(e) = body.delta_array_field("deltas", written) {
                return Err(unstorable_deltas(nodes, e));
            }
            (body, None)
        };
        let mut metadata = match &self.tags {
            Some(tags) => tags.clone_with_room(64),
            None => ObjectText::new(),
        };
        metadata.strings_field("nodes", nodes.iter().map(|(node, _)| node));
        if let Some(routes) = &routes {
            metadata.extend(routes);
        }
        Ok((body, metadata, deltas))
    }
}

/// A superstep's routes as its step's metadata text (`step_metadata`),
/// made only when the step is logged; the store adds the nodes.
pub(crate) type Routes = Option<ObjectText>;

/// A step's metadata that cannot be written (its routes).
pub(crate) fn unstorable_metadata(error: serde_json::Error) -> GraphError {
    unstorable(
        "the step's metadata cannot be stored".to_owned(),
        "metadata",
        error,
    )
}

/// A subgraph's step that cannot be stored: `field` cannot be written.
fn unstorable(context: String, field: &str, error: serde_json::Error) -> GraphError {
    GraphError::State {
        context,
        source: StateError::Serialize {
            field: field.to_owned(),
            message: error.to_string(),
        },
    }
}

/// Why a subgraph's step cannot be stored, named by the node whose delta
/// it is.
fn unstorable_deltas<D: serde::Serialize>(
    nodes: &[(&str, D)],
    error: serde_json::Error,
) -> GraphError {
    for (node, delta) in nodes {
        if let Err(e) = ObjectText::new().field("delta", delta) {
            let context = format!("the delta of \"{node}\" cannot be stored");
            return unstorable(context, node, e);
        }
    }
    unstorable(
        "the subgraph's step cannot be stored".to_owned(),
        "deltas",
        error,
    )
}

fn lent() -> GraphError {
    GraphError::Log {
        thread: String::new(),
        seq: 0,
        reason: "the thread is lent to a running superstep's subgraphs".to_owned(),
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
