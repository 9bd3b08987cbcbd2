//! [`Thread`]: a handle that owns one thread's state and logs every change
//! to it before the change becomes visible. It keeps the [`Store`] handle
//! that opened it (`handle.rs`), and calls back through it for its history,
//! time travel and compaction.

use crate::backend::{AppendFailed, Appended, Committing, SnapshotRow, StepRow};
use crate::durability::Durability;
use crate::error::StoreError;
use crate::handle::{Compaction, Store};
use crate::migrations::version_of;
use crate::object_text::{DeltasText, ObjectText};
use crate::rebuild::{rebuild, state_text};
use crate::snapshot::LogSinceSnapshot;
use crate::step::{Encoded, Metadata, StepRecord, metadata_object, now_millis};
use serde::Serialize;
use serde_json::Value;
use state_core::{State, StateError};
use std::fmt;
use std::ops::RangeBounds;
use std::sync::Arc;

/// One conversation thread: its state, and the log that stores it.
///
/// Every change goes through the log: [`apply`](Thread::apply),
/// [`apply_all`](Thread::apply_all), [`begin_turn`](Thread::begin_turn) and
/// [`set`](Thread::set) each check the change against the reducers, commit
/// it as one step, and only then change [`state`](Thread::state). On any
/// error the state, [`seq`](Thread::seq) and the stored log are as before.
///
/// Writers are optimistic: step N of a thread is written once. A handle
/// whose state is stale (another worker committed first) gets an error
/// with [`is_conflict`](StoreError::is_conflict); [`reload`](Thread::reload)
/// and compute the step again.
#[derive(Debug)]
pub struct Thread<S> {
    store: Store,
    id: String,
    state: Cell<S>,
    seq: u64,
    log: LogSinceSnapshot,
    /// A commit failed in a way that left its outcome unknown: reload
    /// before the next step.
    in_doubt: bool,
    /// When its steps are durable (see [`Durability`]).
    durability: Durability,
    /// The commit of the last step written before it was durable
    /// ([`Durability::Async`]): the steps before it are durable when it is.
    committing: Option<Committing>,
}

/// A thread's current state: owned, or shared with the holders of
/// [`Thread::shared_state`]'s handles (with the `Clone` impl of `S`, kept
/// here so that a commit can copy the state without a `Clone` bound).
enum Cell<S> {
    Owned(S),
    Shared(Arc<S>, fn(&S) -> S),
}

impl<S> Cell<S> {
    fn get(&self) -> &S {
        match self {
            Cell::Owned(state) => state,
            Cell::Shared(state, _) => state,
        }
    }

    /// Runs `change` on the state: in place when nobody else holds it,
    /// otherwise on a fresh copy that then replaces the shared one, so
    /// outstanding handles keep the state as it was, never a half-changed
    /// one.
    fn change<R>(&mut self, change: impl FnOnce(&mut S) -> R) -> R {
        match self {
            Cell::Owned(state) => change(state),
            Cell::Shared(shared, clone) => match Arc::get_mut(shared) {
                Some(state) => change(state),
                None => {
                    let mut copy = clone(shared);
                    let result = change(&mut copy);
                    *shared = Arc::new(copy);
                    result
                }
            },
        }
    }

    fn into_inner(self) -> S {
        match self {
            Cell::Owned(state) => state,
            Cell::Shared(shared, clone) => {
                Arc::try_unwrap(shared).unwrap_or_else(|shared| clone(&shared))
            }
        }
    }
}

/// Shows the state alone, as before it could be shared.
impl<S: fmt::Debug> fmt::Debug for Cell<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.get().fmt(f)
    }
}

impl<S> Thread<S>
where
    S: State + Serialize + Send + 'static,
    S::Delta: Serialize + Send,
{
    pub(crate) async fn load(store: Store, id: String) -> Result<Thread<S>, StoreError> {
        let rebuilt = rebuild::<S>(&store.backend, &id, None).await?;
        Ok(Thread {
            store,
            id,
            state: Cell::Owned(rebuilt.state),
            seq: rebuilt.seq,
            log: rebuilt.log,
            in_doubt: false,
            durability: Durability::Sync,
            committing: None,
        })
    }

    pub(crate) fn from_snapshot(
        store: Store,
        id: String,
        state: S,
        seq: u64,
        snapshot_bytes: usize,
    ) -> Thread<S> {
        Thread {
            store,
            id,
            state: Cell::Owned(state),
            seq,
            log: LogSinceSnapshot::reset(snapshot_bytes as u64),
            in_doubt: false,
            durability: Durability::Sync,
            committing: None,
        }
    }

    /// The thread's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The state after the last committed step.
    pub fn state(&self) -> &S {
        self.state.get()
    }

    /// The state, consuming the handle. If handles from
    /// [`shared_state`](Thread::shared_state) are still held, this is a
    /// copy of it.
    pub fn into_state(self) -> S {
        self.state.into_inner()
    }

    /// The last committed step this handle has seen: 0 for a new thread.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// The store this thread lives in.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// When this handle's next steps are durable: once written (the
    /// default, [`Durability::Sync`]) or while the caller goes on
    /// ([`Durability::Async`], then [`sync`](Thread::sync) waits).
    pub fn set_durability(&mut self, durability: Durability) {
        self.durability = durability;
    }

    /// When this handle's steps are durable (see
    /// [`set_durability`](Thread::set_durability)).
    pub fn durability(&self) -> Durability {
        self.durability
    }

    /// Waits until every step this handle wrote is durable: at once under
    /// [`Durability::Sync`]. A commit that failed is this error, and the
    /// handle reloads the thread before its next step (its state had gone
    /// ahead of the store's).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use state_core::{AgentState, State};
    /// use state_store::{Durability, Store};
    ///
    /// #[derive(AgentState, Debug, Clone, PartialEq)]
    /// struct S {
    ///     #[reducer(append)]
    ///     log: Vec<String>,
    /// }
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// let store = Store::sqlite(dir.path().join("t.db")).await?;
    /// let mut t = store.thread::<S>("t").await?;
    /// t.set_durability(Durability::Async);
    /// let seq = t.apply(S::delta().log(vec!["one".into()])).await?;
    /// t.sync().await?;
    /// assert_eq!(store.thread::<S>("t").await?.seq(), seq);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn sync(&mut self) -> Result<(), StoreError> {
        match self.committing.take() {
            Some(committing) => committing
                .durable()
                .await
                .inspect_err(|_| self.in_doubt = true),
            None => Ok(()),
        }
    }

    /// The error of an earlier step's commit that failed after its write
    /// returned ([`Durability::Async`]), if it ended so: the handle then
    /// reloads before its next step.
    fn commit_failed(&mut self) -> Result<(), StoreError> {
        let ended = self.committing.as_mut().and_then(Committing::ended);
        match ended {
            None => Ok(()),
            Some(ended) => {
                self.committing = None;
                ended.inspect_err(|_| self.in_doubt = true)
            }
        }
    }

    /// Reloads the state from the store: after a conflict, or to see other
    /// workers' steps.
    pub async fn reload(&mut self) -> Result<(), StoreError> {
        // Its own steps still committing are read once they ended, stored
        // or not (a failed commit is what a reload recovers from).
        if let Some(committing) = self.committing.take() {
            let _ = committing.durable().await;
        }
        let rebuilt = rebuild::<S>(&self.store.backend, &self.id, None).await?;
        // Handles from `shared_state` keep the state they were taken on.
        self.state = Cell::Owned(rebuilt.state);
        self.seq = rebuilt.seq;
        self.log = rebuilt.log;
        self.in_doubt = false;
        Ok(())
    }

    /// Attaches caller metadata (a JSON object: a node name, a run id...)
    /// to the next step, written with the methods of the returned value.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// # use state_core::{AgentState, State};
    /// # #[derive(AgentState, Debug)]
    /// # struct S { #[reducer(append)] log: Vec<String> }
    /// use serde_json::json;
    ///
    /// let store = state_store::Store::memory();
    /// let mut t = store.thread::<S>("t").await?;
    /// t.with_metadata(json!({"node": "planner"})).apply(S::delta().log(vec!["plan".to_string()])).await?;
    /// let history = store.history("t", ..).await?;
    /// assert_eq!(history[0].metadata["node"], "planner");
    /// # Ok(())
    /// # }
    /// ```
    pub fn with_metadata(&mut self, metadata: Value) -> WithMetadata<'_, S> {
        WithMetadata {
            thread: self,
            metadata: metadata_object(metadata).map(Metadata::Map),
        }
    }

    /// [`with_metadata`](Thread::with_metadata) with the metadata already
    /// written as text: stored as it is, no [`Value`] built (what a caller
    /// logging many steps with the same tags does: it writes them once and
    /// clones the text).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # use state_core::{AgentState, State};
    /// # #[derive(AgentState, Debug)]
    /// # struct S { #[reducer(append)] log: Vec<String> }
    /// use state_store::ObjectText;
    ///
    /// let store = state_store::Store::memory();
    /// let mut t = store.thread::<S>("t").await?;
    /// let mut metadata = ObjectText::new();
    /// metadata.field("run", "r1")?;
    /// t.with_metadata_text(metadata).apply_nodes([("a", S::delta().log(vec!["x".into()]))]).await?;
    /// let history = store.history("t", ..).await?;
    /// assert_eq!((history[0].metadata["run"].as_str(), history[0].nodes()), (Some("r1"), vec!["a"]));
    /// # Ok(())
    /// # }
    /// ```
    pub fn with_metadata_text(&mut self, metadata: ObjectText) -> WithMetadata<'_, S> {
        WithMetadata {
            thread: self,
            metadata: Ok(Metadata::Text(metadata)),
        }
    }

    /// Applies one delta through the reducers, as one logged step. Returns
    /// the new step number.
    pub async fn apply(&mut self, delta: S::Delta) -> Result<u64, StoreError> {
        self.apply_with(delta, Metadata::none()).await
    }

    /// One superstep: the deltas of nodes that ran in parallel, reduced in
    /// the order given, as one logged step (each delta kept apart).
    pub async fn apply_all(
        &mut self,
        deltas: impl IntoIterator<Item = S::Delta>,
    ) -> Result<u64, StoreError> {
        self.apply_all_with(deltas.into_iter().collect(), Metadata::none())
            .await
    }

    /// A superstep whose deltas are named by the nodes that wrote them; the
    /// names are logged in the step's metadata under `"nodes"`.
    pub async fn apply_nodes<N: Into<String>>(
        &mut self,
        nodes: impl IntoIterator<Item = (N, S::Delta)>,
    ) -> Result<u64, StoreError> {
        self.apply_nodes_with(nodes, Metadata::none()).await
    }

    /// Starts a new turn (turn-scoped fields back to their defaults), as one
    /// logged step.
    pub async fn begin_turn(&mut self) -> Result<u64, StoreError> {
        self.reset_turn_with(Metadata::none()).await
    }

    /// Starts a new turn and applies its `input`, as one logged step: the
    /// turn-scoped fields go back to their defaults, then `input` goes
    /// through the reducers. All or nothing: input the reducers refuse (on
    /// the state after the reset) leaves the state, `seq()` and the log as
    /// they were, turn-scoped fields included. What a graph run's input is.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use state_core::{AgentState, State};
    ///
    /// #[derive(AgentState, Debug)]
    /// struct S {
    ///     #[reducer(append)]
    ///     log: Vec<String>,
    ///     #[scope(turn)]
    ///     step: u32,
    /// }
    ///
    /// let store = state_store::Store::memory();
    /// let mut t = store.thread::<S>("t").await?;
    /// t.apply(S::delta().step(3u32)).await?;
    /// t.start_turn(S::delta().log(vec!["hi".to_string()])).await?;
    /// assert_eq!((t.state().step, t.seq()), (0, 2));
    /// assert_eq!(t.state().log, ["hi"]);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn start_turn(&mut self, input: S::Delta) -> Result<u64, StoreError> {
        self.start_turn_with(input, Metadata::none()).await
    }

    /// Writes `value` at `key` (a field or dotted path), bypassing the
    /// reducer (LangGraph's `update_state` with `as_node` skipped), as one
    /// logged step.
    pub async fn set(&mut self, key: &str, value: Value) -> Result<u64, StoreError> {
        self.set_with(key, value, Metadata::none()).await
    }

    /// Brings the thread back to its state right after step `seq`, as a new
    /// step ([`StepKind::Branch`](crate::StepKind::Branch)): a branch of
    /// its history from there, LangGraph's run from a past checkpoint. The
    /// steps after `seq` stay in the log ([`history`](Thread::history)
    /// shows both branches); the thread goes on from the new step. Returns
    /// its number. `seq` 0 is the empty thread's state.
    ///
    /// Refused ([`StoreError::NoSuchStep`]) when `seq` is past the thread's
    /// last step or compacted away; the thread is then as it was.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use state_core::{AgentState, State};
    ///
    /// #[derive(AgentState, Debug)]
    /// struct S {
    ///     #[reducer(append)]
    ///     log: Vec<String>,
    /// }
    ///
    /// let store = state_store::Store::memory();
    /// let mut t = store.thread::<S>("t").await?;
    /// t.apply(S::delta().log(vec!["draft".into()])).await?;
    /// t.apply(S::delta().log(vec!["bad turn".into()])).await?;
    ///
    /// assert_eq!(t.branch(1).await?, 3);
    /// t.apply(S::delta().log(vec!["better turn".into()])).await?;
    /// assert_eq!(t.state().log, ["draft", "better turn"]);
    /// // Nothing was lost: the first branch is still there.
    /// assert_eq!(t.state_at(2).await?.log, ["draft", "bad turn"]);
    /// assert!(t.branch(9).await.is_err());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn branch(&mut self, seq: u64) -> Result<u64, StoreError> {
        self.branch_with(seq, Metadata::none()).await
    }

    /// Logs a pending step ([`StepKind::Pending`](crate::StepKind::Pending)):
    /// what a graph runner records when a superstep pauses (an interrupt) or
    /// fails, so that another process can resume it. `body` is the runner's
    /// own JSON object (the finished nodes' deltas, the pending interrupts,
    /// resume answers); the store keeps it as given. The step changes no
    /// state; returns the new step number.
    ///
    /// A body that is not a JSON object is refused
    /// ([`StoreError::PendingBody`]), and `seq()`, the state and the stored
    /// log stay as they were.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// # use state_core::{AgentState, State};
    /// # #[derive(AgentState, Debug, Clone, PartialEq)]
    /// # struct S { #[reducer(append)] log: Vec<String> }
    /// use serde_json::json;
    /// use state_store::StepKind;
    ///
    /// let store = state_store::Store::memory();
    /// let mut t = store.thread::<S>("t").await?;
    /// t.apply(S::delta().log(vec!["plan".to_string()])).await?;
    /// let before = t.state().clone();
    ///
    /// let seq = t.log_pending(json!({"interrupts": [{"node": "approve"}]})).await?;
    /// assert_eq!(seq, 2);
    /// assert_eq!(t.state(), &before);
    ///
    /// let history = store.history("t", 2..).await?;
    /// assert_eq!(history[0].kind, StepKind::Pending);
    /// assert_eq!(history[0].body["interrupts"][0]["node"], "approve");
    ///
    /// // Only a JSON object is a pending step's body.
    /// assert!(t.log_pending(json!(["not", "an", "object"])).await.is_err());
    /// assert_eq!(t.seq(), 2);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn log_pending(&mut self, body: Value) -> Result<u64, StoreError> {
        self.pending_with(body, Metadata::none()).await
    }

    /// Logs a subgraph's step ([`StepKind::Subgraph`](crate::StepKind::Subgraph)):
    /// a step that changes no state, whose body (a JSON object) is the
    /// runner's record of a child graph's superstep, kept so that a crash
    /// inside the child goes on from it. As [`log_pending`](Thread::log_pending)
    /// otherwise.
    pub async fn log_subgraph(&mut self, body: Value) -> Result<u64, StoreError> {
        self.subgraph_with(body, Metadata::none()).await
    }

    /// [`log_subgraph`](Thread::log_subgraph) of a body already written as
    /// JSON text (say by `state_core::json::to_string` of typed deltas),
    /// logged as it is: no [`Value`] is built. The text must be a JSON
    /// object (it is checked, without building one).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use state_core::AgentState;
    /// use state_store::StepKind;
    ///
    /// #[derive(AgentState)]
    /// struct S {
    ///     n: u32,
    /// }
    ///
    /// let store = state_store::Store::memory();
    /// let mut t = store.thread::<S>("t").await?;
    /// t.log_subgraph_text(r#"{"deltas": [{"n": 1}]}"#.to_owned()).await?;
    /// let history = store.history("t", ..).await?;
    /// assert_eq!(history[0].kind, StepKind::Subgraph);
    /// assert_eq!(history[0].body["deltas"][0]["n"], 1);
    /// assert!(t.log_subgraph_text("[1, 2]".to_owned()).await.is_err());
    /// assert!(t.log_subgraph_text("{\"open\": ".to_owned()).await.is_err());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn log_subgraph_text(&mut self, body: String) -> Result<u64, StoreError> {
        self.subgraph_text_with(body, Metadata::none()).await
    }

    /// [`log_subgraph`](Thread::log_subgraph) of a body written as an
    /// [`ObjectText`] (say a runner's typed deltas): stored as it is, an
    /// object by construction, so neither a [`Value`] is built nor the
    /// text read through to check it.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use state_core::{AgentState, State};
    /// use state_store::{ObjectText, StepKind};
    ///
    /// #[derive(AgentState)]
    /// struct S {
    ///     n: u32,
    /// }
    ///
    /// let store = state_store::Store::memory();
    /// let mut t = store.thread::<S>("t").await?;
    /// let mut body = ObjectText::new();
    /// body.array_field("deltas", [S::delta().n(1u32)].iter())?;
    /// t.log_subgraph_object(body).await?;
    /// let history = store.history("t", ..).await?;
    /// assert_eq!(history[0].kind, StepKind::Subgraph);
    /// assert_eq!(history[0].body["deltas"][0]["n"], 1);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn log_subgraph_object(&mut self, body: ObjectText) -> Result<u64, StoreError> {
        self.subgraph_object_with(body, Metadata::none()).await
    }

    /// Writes a snapshot of the current state now (the policy also writes
    /// them on its own). A snapshot already stored at this step is kept.
    pub async fn snapshot(&mut self) -> Result<(), StoreError> {
        // Never a snapshot of a step that is not stored.
        self.sync().await?;
        let state = state_text(&self.id, self.state.get())?;
        let size = state.len();
        let row = SnapshotRow {
            seq: self.seq,
            state,
            state_version: version_of::<S>(),
            recorded_at: now_millis(),
        };
        self.store.backend.snapshot(&self.id, &row).await?;
        self.log = LogSinceSnapshot::reset(size as u64);
        Ok(())
    }

    /// Snapshots the current state, then drops every step and snapshot
    /// before it: the thread's storage becomes one snapshot. History and
    /// time travel no longer reach before this step.
    pub async fn compact(&mut self) -> Result<Compaction, StoreError> {
        self.snapshot().await?;
        self.store.compact(&self.id).await
    }

    /// This thread's logged steps whose numbers fall in `range`.
    pub async fn history(
        &self,
        range: impl RangeBounds<u64>,
    ) -> Result<Vec<StepRecord>, StoreError> {
        self.store.history(&self.id, range).await
    }

    /// This thread's state right after step `seq`, from the log.
    pub async fn state_at(&self, seq: u64) -> Result<S, StoreError> {
        self.store.state_at(&self.id, seq).await
    }

    async fn apply_with(&mut self, delta: S::Delta, metadata: Metadata) -> Result<u64, StoreError> {
        self.settle().await?;
        let encoded = Encoded::apply::<S>(&self.id, &delta)?;
        let checked = self.state().check(delta).map_err(|e| self.refused(e))?;
        self.write(encoded, metadata, |state| {
            state.change(|state| state.commit(checked))
        })
        .await
    }

    async fn apply_all_with(
        &mut self,
        deltas: Vec<S::Delta>,
        metadata: Metadata,
    ) -> Result<u64, StoreError> {
        self.settle().await?;
        let encoded = Encoded::superstep::<S>(&self.id, &deltas)?;
        let merged =
            <S::Delta as state_core::Delta>::merge_all(deltas).map_err(|e| self.refused(e))?;
        let checked = self.state().check(merged).map_err(|e| self.refused(e))?;
        self.write(encoded, metadata, |state| {
            state.change(|state| state.commit(checked))
        })
        .await
    }

    async fn apply_nodes_with<N: Into<String>>(
        &mut self,
        nodes: impl IntoIterator<Item = (N, S::Delta)>,
        mut metadata: Metadata,
    ) -> Result<u64, StoreError> {
        let deltas = named_deltas(nodes, &mut metadata);
        self.apply_all_with(deltas, metadata).await
    }

    async fn reset_turn_with(&mut self, metadata: Metadata) -> Result<u64, StoreError> {
        self.settle().await?;
        self.write(Encoded::begin_turn(), metadata, |state| {
            state.change(S::begin_turn)
        })
        .await
    }

    async fn start_turn_with(
        &mut self,
        input: S::Delta,
        metadata: Metadata,
    ) -> Result<u64, StoreError> {
        self.settle().await?;
        let encoded = Encoded::start_turn::<S>(&self.id, &input)?;
        // The input is checked on the state after the reset, made in place
        // (on a copy when the state is shared); until the step is stored,
        // any failure brings back the state the log still has.
        let checked = self.state.change(|state| {
            state.begin_turn();
            state.check(input)
        });
        let checked = match checked {
            Ok(checked) => checked,
            Err(e) => {
                self.restore().await;
                return Err(self.refused(e));
            }
        };
        let result = self
            .write(encoded, metadata, |state| {
                state.change(|state| state.commit(checked))
            })
            .await;
        if result.is_err() {
            self.restore().await;
        }
        result
    }

    /// Brings back the state of the last committed step, after a change in
    /// memory that was not stored; when the store cannot answer, the next
    /// step reloads first.
    async fn restore(&mut self) {
        if self.reload().await.is_err() {
            self.in_doubt = true;
        }
    }

    async fn set_with(
        &mut self,
        key: &str,
        value: Value,
        metadata: Metadata,
    ) -> Result<u64, StoreError> {
        self.settle().await?;
        let encoded = Encoded::set(&self.id, key, &value)?;
        // `set` has no check phase: try it, and undo it if the step cannot
        // be committed. It changes one top-level field (a dotted path
        // writes inside one), whose JSON we keep.
        let field = key.split('.').next().unwrap_or(key);
        // A shared state is copied first: its holders never see the try.
        let before = self.state().get(field).map_err(|e| self.refused(e))?;
        self.state
            .change(|state| state.set(key, value))
            .map_err(|e| self.refused(e))?;
        let result = self.write(encoded, metadata, |_| {}).await;
        if result.is_err() {
            // The old value came out of this very field: it goes back in.
            let _ = self.state.change(|state| state.set(field, before));
        }
        result
    }

    async fn branch_with(&mut self, seq: u64, metadata: Metadata) -> Result<u64, StoreError> {
        // It reads the log up to `seq`: all of it stored.
        self.sync().await?;
        self.settle().await?;
        if seq > self.seq {
            return Err(StoreError::NoSuchStep {
                thread: self.id.clone(),
                seq,
                reason: format!("its last step is {}", self.seq),
            });
        }
        let state = rebuild::<S>(&self.store.backend, &self.id, Some(seq))
            .await?
            .state;
        let encoded = Encoded::branch(&self.id, seq, &state)?;
        self.write(encoded, metadata, |cell| *cell = Cell::Owned(state))
            .await
    }

    async fn pending_with(&mut self, body: Value, metadata: Metadata) -> Result<u64, StoreError> {
        self.settle().await?;
        let encoded = Encoded::pending(&self.id, &body)?;
        self.write(encoded, metadata, |_| {}).await
    }

    async fn subgraph_with(&mut self, body: Value, metadata: Metadata) -> Result<u64, StoreError> {
        self.settle().await?;
        let encoded = Encoded::subgraph(&self.id, &body)?;
        self.write(encoded, metadata, |_| {}).await
    }

    async fn subgraph_text_with(
        &mut self,
        body: String,
        metadata: Metadata,
    ) -> Result<u64, StoreError> {
        let encoded = Encoded::subgraph_text(&self.id, body)?;
        self.settle().await?;
        self.write(encoded, metadata, |_| {}).await
    }

    async fn subgraph_object_with(
        &mut self,
        body: ObjectText,
        metadata: Metadata,
    ) -> Result<u64, StoreError> {
        self.settle().await?;
        self.write(Encoded::subgraph_object(body), metadata, |_| {})
            .await
    }

    /// Commits one step to the log, then applies it with `commit` (which
    /// cannot fail; it goes through [`Cell::change`], or does nothing for a
    /// step that changes no state). Nothing changes in memory unless the
    /// step is stored.
    async fn write(
        &mut self,
        encoded: Encoded,
        metadata: Metadata,
        commit: impl FnOnce(&mut Cell<S>),
    ) -> Result<u64, StoreError> {
        let row = StepRow {
            seq: self.seq + 1,
            kind: encoded.kind.as_str().to_owned(),
            body: encoded.body,
            metadata: metadata.into_text(),
            state_version: version_of::<S>(),
            recorded_at: now_millis(),
        };
        let (seq, size) = (row.seq, row.size());
        // A step written on one whose commit failed would be refused
        // anyway (its head is missing): say why.
        self.commit_failed()?;
        let appended = match self.durability {
            Durability::Sync => self
                .store
                .backend
                .append(&self.id, row)
                .await
                .map(|a| (a, None)),
            Durability::Async => {
                let (hub, id) = (&self.store.hub, &self.id);
                let announce = || -> Box<dyn FnOnce() + Send> {
                    let (hub, id) = (Arc::clone(hub), id.clone());
                    Box::new(move || hub.announce(&id, seq))
                };
                self.store
                    .backend
                    .append_early(&self.id, row, announce)
                    .await
            }
        };
        let committing = match appended {
            Ok((Appended::Committed, committing)) => committing,
            Ok((Appended::Conflict { stored }, _)) => {
                // The head missing may be this handle's own step, lost in
                // a failed commit: that is the error.
                self.sync().await?;
                return Err(StoreError::Conflict {
                    thread: self.id.clone(),
                    local: self.seq,
                    stored,
                });
            }
            Ok((Appended::NoThread, _)) => {
                return Err(StoreError::ThreadNotFound {
                    thread: self.id.clone(),
                });
            }
            Err(AppendFailed { error, step }) => match self.committed_anyway(&step).await {
                Some(true) => None,
                Some(false) => return Err(error),
                None => {
                    self.in_doubt = true;
                    return Err(error);
                }
            },
        };
        // Watchers of this store wake at once (a flag flip: never waits);
        // a step not yet durable wakes them once it is.
        match committing {
            // The steps before it are durable when it is (commits are in
            // order; a failed one fails every later step of the thread).
            Some(committing) => self.committing = Some(committing),
            None => {
                self.committing = None;
                self.store.hub.announce(&self.id, seq);
            }
        }
        commit(&mut self.state);
        self.seq = seq;
        self.log.add(size);
        if self.store.policy.is_due(&self.log) {
            // A snapshot is of durable steps: a step's commit that failed
            // is its error.
            self.sync().await?;
            // A snapshot only speeds up loading: if it cannot be written,
            // the step still stands, and the policy asks again next step.
            let _ = self.snapshot().await;
        }
        Ok(self.seq)
    }

    /// After a failed commit (a dropped connection, say), whether the step
    /// was stored all the same: `None` when the store cannot tell.
    async fn committed_anyway(&self, row: &StepRow) -> Option<bool> {
        match self.store.backend.step(&self.id, row.seq).await {
            Ok(Some(stored)) => Some(
                stored.kind == row.kind
                    && stored.body == row.body
                    && stored.metadata == row.metadata,
            ),
            Ok(None) => Some(false),
            Err(_) => None,
        }
    }

    /// Resolves an earlier commit whose outcome was unknown, by reloading.
    async fn settle(&mut self) -> Result<(), StoreError> {
        if self.in_doubt {
            self.reload().await?;
        }
        Ok(())
    }

    fn refused(&self, source: StateError) -> StoreError {
        StoreError::State {
            thread: self.id.clone(),
            source,
        }
    }
}

impl<S> Thread<S>
where
    S: State + Clone + Serialize + Send + 'static,
    S::Delta: Serialize + Send,
{
    /// A shared handle on the current state: a reference count, no copy.
    /// What an async graph node takes (`Arc<S>`), taken once per superstep.
    ///
    /// The handle keeps the state it was taken on: a later step never
    /// changes it. A step commits in place when no handle is held any more,
    /// and on a fresh copy of the state when one is (the only time the state
    /// is cloned).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use state_core::{AgentState, State};
    /// use std::sync::Arc;
    ///
    /// #[derive(AgentState, Debug, Clone, PartialEq)]
    /// struct S {
    ///     #[reducer(append)]
    ///     log: Vec<String>,
    /// }
    ///
    /// let store = state_store::Store::memory();
    /// let mut t = store.thread::<S>("t").await?;
    /// t.apply(S::delta().log(vec!["one".to_string()])).await?;
    ///
    /// let shared: Arc<S> = t.shared_state();
    /// assert!(std::ptr::eq(&*shared, t.state()), "no copy");
    ///
    /// t.apply(S::delta().log(vec!["two".to_string()])).await?;
    /// assert_eq!(shared.log, ["one"], "the handle keeps its state");
    /// assert_eq!(t.state().log, ["one", "two"]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn shared_state(&mut self) -> Arc<S> {
        let shared = match &mut self.state {
            Cell::Shared(shared, _) => return Arc::clone(shared),
            Cell::Owned(state) => Arc::new(std::mem::take(state)),
        };
        self.state = Cell::Shared(Arc::clone(&shared), <S as Clone>::clone);
        shared
    }
}

impl<S> Thread<S>
where
    S: State + Clone + Serialize + Send + Sync + 'static,
    S::Delta: Serialize + Send,
{
    /// [`apply_nodes`](Thread::apply_nodes) for a caller that already
    /// holds the state the deltas make from this thread's state (a graph
    /// runner whose subgraph ran them one by one on its own copy): the
    /// deltas are logged as `apply_nodes` logs them, and `state` becomes
    /// the thread's state, without applying them again.
    ///
    /// `state` is trusted: the log is what every other reader (a load,
    /// [`Store::latest`], another process) rebuilds from, and a `state`
    /// that is not what replaying the step makes would differ from it in
    /// this handle only. Deltas that cannot form one superstep (two nodes
    /// writing one plain field) are refused, as by `apply_nodes`.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use state_core::{AgentState, State};
    /// use std::sync::Arc;
    ///
    /// #[derive(AgentState, Debug, Clone, PartialEq)]
    /// struct S {
    ///     #[reducer(append)]
    ///     log: Vec<String>,
    /// }
    ///
    /// let store = state_store::Store::memory();
    /// let mut t = store.thread::<S>("t").await?;
    /// let delta = S::delta().log(vec!["one".to_string()]);
    /// let mut made = t.state().clone();
    /// made.apply(delta.clone()).unwrap();
    /// t.adopt_nodes([("a", delta)], Arc::new(made)).await?;
    ///
    /// assert_eq!(t.state().log, ["one"]);
    /// let loaded = store.thread::<S>("t").await?;
    /// assert_eq!(loaded.state(), t.state());
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// [`Store::latest`]: crate::Store::latest
    pub async fn adopt_nodes<N: Into<String>>(
        &mut self,
        nodes: impl IntoIterator<Item = (N, S::Delta)>,
        state: Arc<S>,
    ) -> Result<u64, StoreError> {
        self.adopt_nodes_with(nodes, state, Metadata::none()).await
    }

    /// [`adopt_nodes`](Thread::adopt_nodes) for one node that ran a
    /// subgraph of this state type (a graph runner's): its write is given
    /// as the supersteps the subgraph logged, in order, each its deltas as
    /// text, and logged as they are (see [`StepKind::Superstep`]), so they
    /// are neither composed nor written again; `state`, what they make
    /// from this thread's state, becomes the thread's. `state` is trusted,
    /// as by `adopt_nodes`.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use state_core::{AgentState, State};
    /// use state_store::DeltasText;
    /// use std::sync::Arc;
    ///
    /// #[derive(AgentState, Debug, Clone, PartialEq)]
    /// struct S {
    ///     #[reducer(append)]
    ///     log: Vec<String>,
    ///     last: String,
    /// }
    ///
    /// let store = state_store::Store::memory();
    /// let mut t = store.thread::<S>("t").await?;
    /// // The subgraph's two supersteps, applied one after the other.
    /// let first = S::delta().log(vec!["one".to_string()]).last("one".to_string());
    /// let second = S::delta().log(vec!["two".to_string()]).last("two".to_string());
    /// let steps = vec![DeltasText::write([&first])?, DeltasText::write([&second])?];
    /// let mut made = t.state().clone();
    /// made.apply(first)?;
    /// made.apply(second)?;
    /// t.adopt_steps("inner", steps, Arc::new(made)).await?;
    ///
    /// assert_eq!(t.state().log, ["one", "two"]);
    /// let loaded = store.thread::<S>("t").await?;
    /// assert_eq!(loaded.state(), t.state());
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// [`StepKind::Superstep`]: crate::StepKind::Superstep
    pub async fn adopt_steps(
        &mut self,
        node: impl Into<String>,
        steps: Vec<DeltasText>,
        state: Arc<S>,
    ) -> Result<u64, StoreError> {
        self.adopt_steps_with(node.into(), steps, state, Metadata::none())
            .await
    }

    async fn adopt_steps_with(
        &mut self,
        node: String,
        steps: Vec<DeltasText>,
        state: Arc<S>,
        mut metadata: Metadata,
    ) -> Result<u64, StoreError> {
        metadata.nodes(vec![node]);
        self.settle().await?;
        let encoded = Encoded::sequence(&steps);
        drop(steps);
        self.write(encoded, metadata, |cell| {
            *cell = Cell::Shared(state, <S as Clone>::clone);
        })
        .await
    }

    async fn adopt_nodes_with<N: Into<String>>(
        &mut self,
        nodes: impl IntoIterator<Item = (N, S::Delta)>,
        state: Arc<S>,
        mut metadata: Metadata,
    ) -> Result<u64, StoreError> {
        let deltas = named_deltas(nodes, &mut metadata);
        self.settle().await?;
        let encoded = Encoded::superstep::<S>(&self.id, &deltas)?;
        // Merged only to refuse a concurrent write: `state` is what they make.
        if deltas.len() > 1 {
            <S::Delta as state_core::Delta>::merge_all(deltas).map_err(|e| self.refused(e))?;
        }
        self.write(encoded, metadata, |cell| {
            *cell = Cell::Shared(state, <S as Clone>::clone);
        })
        .await
    }
}

/// The next step of a thread, with caller metadata: see
/// [`Thread::with_metadata`].
#[derive(Debug)]
#[must_use = "a step is written by calling one of its methods"]
pub struct WithMetadata<'t, S> {
    thread: &'t mut Thread<S>,
    metadata: Result<Metadata, StoreError>,
}

impl<S> WithMetadata<'_, S>
where
    S: State + Serialize + Send + 'static,
    S::Delta: Serialize + Send,
{
    /// [`Thread::apply`], with this metadata.
    pub async fn apply(self, delta: S::Delta) -> Result<u64, StoreError> {
        self.thread.apply_with(delta, self.metadata?).await
    }

    /// [`Thread::apply_all`], with this metadata.
    pub async fn apply_all(
        self,
        deltas: impl IntoIterator<Item = S::Delta>,
    ) -> Result<u64, StoreError> {
        let metadata = self.metadata?;
        self.thread
            .apply_all_with(deltas.into_iter().collect(), metadata)
            .await
    }

    /// [`Thread::apply_nodes`], with this metadata (plus `"nodes"`).
    pub async fn apply_nodes<N: Into<String>>(
        self,
        nodes: impl IntoIterator<Item = (N, S::Delta)>,
    ) -> Result<u64, StoreError> {
        let metadata = self.metadata?;
        self.thread.apply_nodes_with(nodes, metadata).await
    }

    /// [`Thread::begin_turn`], with this metadata.
    pub async fn begin_turn(self) -> Result<u64, StoreError> {
        self.thread.reset_turn_with(self.metadata?).await
    }

    /// [`Thread::set`], with this metadata.
    pub async fn set(self, key: &str, value: Value) -> Result<u64, StoreError> {
        let metadata = self.metadata?;
        self.thread.set_with(key, value, metadata).await
    }

    /// [`Thread::branch`], with this metadata.
    pub async fn branch(self, seq: u64) -> Result<u64, StoreError> {
        let metadata = self.metadata?;
        self.thread.branch_with(seq, metadata).await
    }

    /// [`Thread::start_turn`], with this metadata.
    pub async fn start_turn(self, input: S::Delta) -> Result<u64, StoreError> {
        let metadata = self.metadata?;
        self.thread.start_turn_with(input, metadata).await
    }

    /// [`Thread::log_pending`], with this metadata.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// # use state_core::{AgentState, State};
    /// # #[derive(AgentState, Debug)]
    /// # struct S { #[reducer(append)] log: Vec<String> }
    /// use serde_json::json;
    ///
    /// let store = state_store::Store::memory();
    /// let mut t = store.thread::<S>("t").await?;
    /// t.with_metadata(json!({"nodes": ["approve"]}))
    ///     .log_pending(json!({"interrupts": [{"value": "run the plan?"}]}))
    ///     .await?;
    /// let history = store.history("t", ..).await?;
    /// assert_eq!(history[0].metadata["nodes"][0], "approve");
    /// # Ok(())
    /// # }
    /// ```
    pub async fn log_pending(self, body: Value) -> Result<u64, StoreError> {
        let metadata = self.metadata?;
        self.thread.pending_with(body, metadata).await
    }

    /// [`Thread::log_subgraph`], with this metadata.
    pub async fn log_subgraph(self, body: Value) -> Result<u64, StoreError> {
        let metadata = self.metadata?;
        self.thread.subgraph_with(body, metadata).await
    }

    /// [`Thread::log_subgraph_text`], with this metadata.
    pub async fn log_subgraph_text(self, body: String) -> Result<u64, StoreError> {
        let metadata = self.metadata?;
        self.thread.subgraph_text_with(body, metadata).await
    }

    /// [`Thread::log_subgraph_object`], with this metadata.
    pub async fn log_subgraph_object(self, body: ObjectText) -> Result<u64, StoreError> {
        let metadata = self.metadata?;
        self.thread.subgraph_object_with(body, metadata).await
    }
}

impl<S> WithMetadata<'_, S>
where
    S: State + Clone + Serialize + Send + Sync + 'static,
    S::Delta: Serialize + Send,
{
    /// [`Thread::adopt_nodes`], with this metadata (plus `"nodes"`).
    pub async fn adopt_nodes<N: Into<String>>(
        self,
        nodes: impl IntoIterator<Item = (N, S::Delta)>,
        state: Arc<S>,
    ) -> Result<u64, StoreError> {
        let metadata = self.metadata?;
        self.thread.adopt_nodes_with(nodes, state, metadata).await
    }

    /// [`Thread::adopt_steps`], with this metadata (plus `"nodes"`).
    pub async fn adopt_steps(
        self,
        node: impl Into<String>,
        steps: Vec<DeltasText>,
        state: Arc<S>,
    ) -> Result<u64, StoreError> {
        let metadata = self.metadata?;
        self.thread
            .adopt_steps_with(node.into(), steps, state, metadata)
            .await
    }
}

/// The deltas of a superstep's nodes, their names put in `metadata`
/// (what `apply_nodes` and `adopt_nodes` log).
fn named_deltas<N: Into<String>, D>(
    nodes: impl IntoIterator<Item = (N, D)>,
    metadata: &mut Metadata,
) -> Vec<D> {
    let (names, deltas): (Vec<String>, Vec<D>) = nodes
        .into_iter()
        .map(|(name, delta)| (name.into(), delta))
        .unzip();
    metadata.nodes(names);
    deltas
}
