//! [`Thread`]: a handle that owns one thread's state and logs every change
//! to it before the change becomes visible.

use crate::backend::{Appended, SnapshotRow, StepRow};
use crate::error::StoreError;
use crate::snapshot::LogSinceSnapshot;
use crate::step::{Encoded, StepRecord, metadata_object, metadata_text, now_millis, replay};
use crate::store::{Compaction, Store};
use serde::Serialize;
use serde_json::{Map, Value};
use state_core::{State, StateError};
use std::ops::RangeBounds;

/// The schema version written with every step and snapshot of `S`.
pub(crate) fn version_of<S: State>() -> i64 {
    i64::from(S::schema().version())
}

/// Longest thread id accepted, in bytes (index entries stay small).
const MAX_ID_LEN: usize = 512;

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
    state: S,
    seq: u64,
    log: LogSinceSnapshot,
    /// A commit failed in a way that left its outcome unknown: reload
    /// before the next step.
    in_doubt: bool,
}

/// A state rebuilt from the log, with what the snapshot policy needs.
pub(crate) struct Rebuilt<S> {
    pub state: S,
    pub seq: u64,
    pub log: LogSinceSnapshot,
}

impl<S> Thread<S>
where
    S: State + Serialize + Send + 'static,
    S::Delta: Serialize + Send,
{
    pub(crate) async fn load(store: Store, id: String) -> Result<Thread<S>, StoreError> {
        let rebuilt = rebuild::<S>(&store, &id, None).await?;
        Ok(Thread {
            store,
            id,
            state: rebuilt.state,
            seq: rebuilt.seq,
            log: rebuilt.log,
            in_doubt: false,
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
            state,
            seq,
            log: LogSinceSnapshot::reset(snapshot_bytes as u64),
            in_doubt: false,
        }
    }

    /// The thread's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The state after the last committed step.
    pub fn state(&self) -> &S {
        &self.state
    }

    /// The state, consuming the handle.
    pub fn into_state(self) -> S {
        self.state
    }

    /// The last committed step this handle has seen: 0 for a new thread.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// The store this thread lives in.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Reloads the state from the store: after a conflict, or to see other
    /// workers' steps.
    pub async fn reload(&mut self) -> Result<(), StoreError> {
        let rebuilt = rebuild::<S>(&self.store, &self.id, None).await?;
        self.state = rebuilt.state;
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
            metadata: metadata_object(metadata),
        }
    }

    /// Applies one delta through the reducers, as one logged step. Returns
    /// the new step number.
    pub async fn apply(&mut self, delta: S::Delta) -> Result<u64, StoreError> {
        self.apply_with(delta, Map::new()).await
    }

    /// One superstep: the deltas of nodes that ran in parallel, reduced in
    /// the order given, as one logged step (each delta kept apart).
    pub async fn apply_all(
        &mut self,
        deltas: impl IntoIterator<Item = S::Delta>,
    ) -> Result<u64, StoreError> {
        self.apply_all_with(deltas.into_iter().collect(), Map::new())
            .await
    }

    /// A superstep whose deltas are named by the nodes that wrote them; the
    /// names are logged in the step's metadata under `"nodes"`.
    pub async fn apply_nodes<N: Into<String>>(
        &mut self,
        nodes: impl IntoIterator<Item = (N, S::Delta)>,
    ) -> Result<u64, StoreError> {
        self.apply_nodes_with(nodes, Map::new()).await
    }

    /// Starts a new turn (turn-scoped fields back to their defaults), as one
    /// logged step.
    pub async fn begin_turn(&mut self) -> Result<u64, StoreError> {
        self.begin_turn_with(Map::new()).await
    }

    /// Writes `value` at `key` (a field or dotted path), bypassing the
    /// reducer (LangGraph's `update_state` with `as_node` skipped), as one
    /// logged step.
    pub async fn set(&mut self, key: &str, value: Value) -> Result<u64, StoreError> {
        self.set_with(key, value, Map::new()).await
    }

    /// Writes a snapshot of the current state now (the policy also writes
    /// them on its own). A snapshot already stored at this step is kept.
    pub async fn snapshot(&mut self) -> Result<(), StoreError> {
        let state = state_text(&self.id, &self.state)?;
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

    async fn apply_with(
        &mut self,
        delta: S::Delta,
        metadata: Map<String, Value>,
    ) -> Result<u64, StoreError> {
        self.settle().await?;
        let encoded = Encoded::apply::<S>(&self.id, &delta)?;
        let checked = self.state.check(delta).map_err(|e| self.refused(e))?;
        self.write(encoded, metadata, |state| state.commit(checked))
            .await
    }

    async fn apply_all_with(
        &mut self,
        deltas: Vec<S::Delta>,
        metadata: Map<String, Value>,
    ) -> Result<u64, StoreError> {
        self.settle().await?;
        let encoded = Encoded::superstep::<S>(&self.id, &deltas)?;
        let mut merged = S::delta();
        for delta in deltas {
            merged = state_core::Delta::merge(merged, delta).map_err(|e| self.refused(e))?;
        }
        let checked = self.state.check(merged).map_err(|e| self.refused(e))?;
        self.write(encoded, metadata, |state| state.commit(checked))
            .await
    }

    async fn apply_nodes_with<N: Into<String>>(
        &mut self,
        nodes: impl IntoIterator<Item = (N, S::Delta)>,
        mut metadata: Map<String, Value>,
    ) -> Result<u64, StoreError> {
        let (names, deltas): (Vec<Value>, Vec<S::Delta>) = nodes
            .into_iter()
            .map(|(name, delta)| (Value::String(name.into()), delta))
            .unzip();
        metadata.insert("nodes".to_owned(), Value::Array(names));
        self.apply_all_with(deltas, metadata).await
    }

    async fn begin_turn_with(&mut self, metadata: Map<String, Value>) -> Result<u64, StoreError> {
        self.settle().await?;
        self.write(Encoded::begin_turn(), metadata, S::begin_turn)
            .await
    }

    async fn set_with(
        &mut self,
        key: &str,
        value: Value,
        metadata: Map<String, Value>,
    ) -> Result<u64, StoreError> {
        self.settle().await?;
        let encoded = Encoded::set(&self.id, key, &value)?;
        // `set` has no check phase: try it, and undo it if the step cannot
        // be committed. It changes one top-level field (a dotted path
        // writes inside one), whose JSON we keep.
        let field = key.split('.').next().unwrap_or(key);
        let before = self.state.get(field).map_err(|e| self.refused(e))?;
        self.state.set(key, value).map_err(|e| self.refused(e))?;
        let result = self.write(encoded, metadata, |_| {}).await;
        if result.is_err() {
            // The old value came out of this very field: it goes back in.
            let _ = self.state.set(field, before);
        }
        result
    }

    /// Commits one step to the log, then applies it with `commit` (which
    /// cannot fail). Nothing changes in memory unless the step is stored.
    async fn write(
        &mut self,
        encoded: Encoded,
        metadata: Map<String, Value>,
        commit: impl FnOnce(&mut S),
    ) -> Result<u64, StoreError> {
        let row = StepRow {
            seq: self.seq + 1,
            kind: encoded.kind.as_str().to_owned(),
            body: encoded.body,
            metadata: metadata_text(&metadata),
            state_version: version_of::<S>(),
            recorded_at: now_millis(),
        };
        match self.store.backend.append(&self.id, &row).await {
            Ok(Appended::Committed) => {}
            Ok(Appended::Conflict { stored }) => {
                return Err(StoreError::Conflict {
                    thread: self.id.clone(),
                    local: self.seq,
                    stored,
                });
            }
            Ok(Appended::NoThread) => {
                return Err(StoreError::ThreadNotFound {
                    thread: self.id.clone(),
                });
            }
            Err(error) => match self.committed_anyway(&row).await {
                Some(true) => {}
                Some(false) => return Err(error),
                None => {
                    self.in_doubt = true;
                    return Err(error);
                }
            },
        }
        commit(&mut self.state);
        self.seq = row.seq;
        self.log.add(row.size());
        if self.store.policy.is_due(&self.log) {
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

/// The next step of a thread, with caller metadata: see
/// [`Thread::with_metadata`].
#[derive(Debug)]
#[must_use = "a step is written by calling one of its methods"]
pub struct WithMetadata<'t, S> {
    thread: &'t mut Thread<S>,
    metadata: Result<Map<String, Value>, StoreError>,
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
        self.thread.begin_turn_with(self.metadata?).await
    }

    /// [`Thread::set`], with this metadata.
    pub async fn set(self, key: &str, value: Value) -> Result<u64, StoreError> {
        let metadata = self.metadata?;
        self.thread.set_with(key, value, metadata).await
    }
}

/// Rebuilds thread `id` up to step `upto` (default: its head) from the
/// latest snapshot at or before it and the steps after.
pub(crate) async fn rebuild<S>(
    store: &Store,
    id: &str,
    upto: Option<u64>,
) -> Result<Rebuilt<S>, StoreError>
where
    S: State + Serialize,
{
    let Some(tail) = store.backend.load(id, upto).await? else {
        return Err(StoreError::ThreadNotFound {
            thread: id.to_owned(),
        });
    };
    let target = upto.unwrap_or(tail.head);
    if target > tail.head {
        return Err(StoreError::NoSuchStep {
            thread: id.to_owned(),
            seq: target,
            reason: format!("its last step is {}", tail.head),
        });
    }
    let migrations = Migrations::of::<S>();
    let (mut state, mut seq, snapshot_bytes) = match &tail.snapshot {
        Some(snapshot) => (
            decode_snapshot::<S>(id, snapshot, &migrations)?,
            snapshot.seq,
            snapshot.state.len(),
        ),
        None => (S::default(), 0, state_text(id, &S::default())?.len()),
    };
    let mut log = LogSinceSnapshot::reset(snapshot_bytes as u64);
    for row in &tail.steps {
        if row.seq != seq + 1 {
            return Err(missing_step(store, id, target, seq + 1).await);
        }
        let from = migrations.check::<S>(id, "step", row.seq, row.state_version)?;
        replay(id, &mut state, row, |data| {
            migrations.apply::<S>(from, data)
        })?;
        seq = row.seq;
        log.add(row.size());
    }
    if seq != target {
        return Err(missing_step(store, id, target, seq + 1).await);
    }
    Ok(Rebuilt { state, seq, log })
}

/// The error for a state at `target` whose replay needs step `needed`, which
/// the log lacks: compacted away (or before a fork), or a gap in a corrupt
/// log.
async fn missing_step(store: &Store, id: &str, target: u64, needed: u64) -> StoreError {
    let compacted = |reason: String| StoreError::NoSuchStep {
        thread: id.to_owned(),
        seq: target,
        reason,
    };
    match store.backend.first_step(id).await {
        Ok(Some(first)) if first > needed => compacted(format!(
            "the log before step {first} was compacted away or precedes a fork"
        )),
        Ok(None) => compacted("its log was compacted away or precedes a fork".to_owned()),
        _ => StoreError::corrupt(id, "step", needed, "missing from the log"),
    }
}

fn decode_snapshot<S: State>(
    id: &str,
    row: &SnapshotRow,
    migrations: &Migrations,
) -> Result<S, StoreError> {
    let from = migrations.check::<S>(id, "snapshot", row.seq, row.state_version)?;
    let mut value: Value = serde_json::from_str(&row.state)
        .map_err(|e| StoreError::corrupt(id, "snapshot", row.seq, format!("not JSON: {e}")))?;
    migrations
        .apply::<S>(from, &mut value)
        .map_err(|message| StoreError::Migration {
            thread: id.to_owned(),
            what: "snapshot",
            seq: row.seq,
            message,
        })?;
    S::from_json(value).map_err(|e| StoreError::corrupt(id, "snapshot", row.seq, e))
}

/// What reading stored data of `S` needs: its schema version, and whether
/// any field has a former name (then even current data is looked at).
struct Migrations {
    current: u32,
    aliases: bool,
}

impl Migrations {
    fn of<S: State>() -> Migrations {
        let schema = S::schema();
        Migrations {
            current: schema.version(),
            aliases: schema
                .entries()
                .iter()
                .any(|(_, f)| !f.aliases().is_empty()),
        }
    }

    /// The version data was written with, refused if newer than the code.
    fn check<S: State>(
        &self,
        id: &str,
        what: &'static str,
        seq: u64,
        version: i64,
    ) -> Result<u32, StoreError> {
        match u32::try_from(version) {
            Ok(v) if v <= self.current => Ok(v),
            _ => Err(StoreError::TooNew {
                what: format!("thread \"{id}\", {what} {seq} (state {})", S::schema().name),
                found: version,
                known: i64::from(self.current),
            }),
        }
    }

    /// Brings one stored field map up to the current version.
    fn apply<S: State>(&self, from: u32, data: &mut Value) -> Result<(), String> {
        if from < self.current || self.aliases {
            S::schema().migrate(from, data)?;
        }
        Ok(())
    }
}

/// The state's JSON text, as a snapshot stores it.
pub(crate) fn state_text<S: Serialize>(id: &str, state: &S) -> Result<String, StoreError> {
    state_core::json::to_string(state).map_err(|source| StoreError::Encode {
        thread: id.to_owned(),
        what: "state",
        source,
    })
}

/// Refuses thread ids that cannot be stored faithfully.
pub(crate) fn check_id(id: &str) -> Result<(), StoreError> {
    let reason = if id.is_empty() {
        "a thread id cannot be empty"
    } else if id.len() > MAX_ID_LEN {
        "a thread id is at most 512 bytes"
    } else if id.contains('\0') {
        "a thread id cannot contain a NUL character"
    } else {
        return Ok(());
    };
    let mut shown: String = id.chars().take(40).collect();
    if shown.len() < id.len() {
        shown.push('…');
    }
    Err(StoreError::InvalidThreadId {
        shown: format!("{shown:?}"),
        reason,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_that_cannot_be_stored_are_refused_with_a_reason() {
        assert!(check_id("user-42").is_ok());
        assert!(check_id("'; DROP TABLE x; --").is_ok());
        let empty = check_id("").unwrap_err().to_string();
        assert_eq!(empty, "invalid thread id \"\": a thread id cannot be empty");
        let long = check_id(&"x".repeat(513)).unwrap_err().to_string();
        assert!(
            long.contains("at most 512 bytes") && long.contains('…'),
            "{long}"
        );
        assert!(check_id("a\0b").unwrap_err().to_string().contains("NUL"));
    }
}
