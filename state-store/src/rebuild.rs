//! A thread's state rebuilt from the store: the latest snapshot, then the
//! steps after it replayed through the reducers, both migrated to the
//! current schema (`migrations.rs`). Opening, reloading, time travel and
//! forks all load this way, from `thread.rs`, `handle.rs` and `store.rs`,
//! which also share the snapshot's JSON text written here.

use crate::backend::{Backend, Decoded, ForkRows, Latest, LogTail, SnapshotRow, StepRow};
use crate::error::StoreError;
use crate::migrations::Migrations;
use crate::missing::{Missing, why_missing};
use crate::snapshot::LogSinceSnapshot;
use crate::step::replay;
use serde::Serialize;
use serde_json::Value;
use state_core::State;
use std::any::TypeId;
use std::sync::Arc;

/// A state rebuilt from the log, with what the snapshot policy needs.
pub(crate) struct Rebuilt<S> {
    pub state: S,
    pub seq: u64,
    pub log: LogSinceSnapshot,
}

/// Rebuilds thread `id` up to step `upto` (default: its head) from the
/// latest snapshot at or before it and the steps after.
pub(crate) async fn rebuild<S>(
    backend: &Backend,
    id: &str,
    upto: Option<u64>,
) -> Result<Rebuilt<S>, StoreError>
where
    S: State + Serialize,
{
    let (tail, target) = load(backend, id, upto).await?;
    replay_tail(backend, id, tail, target).await
}

/// The state a load's rows give: the snapshot (or the initial state), then
/// the steps after it, which must reach `target`.
async fn replay_tail<S>(
    backend: &Backend,
    id: &str,
    tail: LogTail,
    target: u64,
) -> Result<Rebuilt<S>, StoreError>
where
    S: State + Serialize,
{
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
            return Err(missing_step(backend, id, target, seq + 1).await);
        }
        let migrate = migrations.for_step::<S>(id, row.seq, row.state_version)?;
        replay(id, &mut state, row, migrate)?;
        seq = row.seq;
        log.add(row.size());
    }
    if seq != target {
        return Err(missing_step(backend, id, target, seq + 1).await);
    }
    Ok(Rebuilt { state, seq, log })
}

/// Thread `id`'s latest state, its step number and the head's step row
/// (`None` at 0, or when compaction removed it), read consistently:
/// `Store::latest`. The memory backend keeps the state it returns
/// ([`Decoded`]) and starts the next call from it, replaying only the
/// steps after it, as long as no snapshot is newer.
pub(crate) async fn latest<S>(
    backend: &Backend,
    id: &str,
) -> Result<(u64, Arc<S>, Option<StepRow>), StoreError>
where
    S: State + Clone + Serialize + Send + Sync + 'static,
{
    let not_found = || StoreError::ThreadNotFound {
        thread: id.to_owned(),
    };
    // Irrefutable in a build with neither SQLite nor PostgreSQL.
    #[allow(irrefutable_let_patterns)]
    let Backend::Memory(memory) = backend else {
        let mut tail = backend.load_latest(id).await?.ok_or_else(not_found)?;
        let last = tail.last.take();
        let head = tail.head;
        let rebuilt = replay_tail::<S>(backend, id, tail, head).await?;
        return Ok((rebuilt.seq, Arc::new(rebuilt.state), last));
    };
    let type_id = TypeId::of::<S>();
    let (state, seq, last, generation) =
        match memory.load_latest(id, type_id)?.ok_or_else(not_found)? {
            Latest::Decoded {
                base,
                steps,
                head,
                last,
                generation,
            } => {
                let Ok(mut kept) = base.state.downcast::<S>() else {
                    unreachable!("kept with the type id of S");
                };
                // Nothing committed since: the kept state itself, shared.
                if steps.is_empty() {
                    return Ok((head, kept, last));
                }
                // Brought up to date in place, or on a copy if a caller
                // still holds it. (On an error it is dropped: not kept.)
                let state = Arc::make_mut(&mut kept);
                let migrations = Migrations::of::<S>();
                for row in &steps {
                    let migrate = migrations.for_step::<S>(id, row.seq, row.state_version)?;
                    replay(id, state, row, migrate)?;
                }
                (kept, head, last, generation)
            }
            Latest::Rows {
                mut tail,
                generation,
            } => {
                let last = tail.last.take();
                let head = tail.head;
                let rebuilt = replay_tail::<S>(backend, id, tail, head).await?;
                (Arc::new(rebuilt.state), rebuilt.seq, last, generation)
            }
        };
    // Kept and returned: one state, shared.
    memory.keep_decoded(
        id,
        generation,
        Decoded {
            seq,
            type_id,
            state: state.clone(),
        },
    );
    Ok((seq, state, last))
}

/// Thread `id`'s stored rows up to step `upto`, as they are, checked to be
/// whole (a snapshot, then every step after it): what a fork copies
/// without rebuilding the state, so without knowing its type.
pub(crate) async fn rows_upto(
    backend: &Backend,
    id: &str,
    upto: u64,
) -> Result<ForkRows, StoreError> {
    let (tail, _) = load(backend, id, Some(upto)).await?;
    let mut seq = tail.snapshot.as_ref().map_or(0, |snapshot| snapshot.seq);
    for row in &tail.steps {
        if row.seq != seq + 1 {
            return Err(missing_step(backend, id, upto, seq + 1).await);
        }
        seq = row.seq;
    }
    if seq != upto {
        return Err(missing_step(backend, id, upto, seq + 1).await);
    }
    Ok(ForkRows {
        snapshot: tail.snapshot,
        steps: tail.steps,
    })
}

/// Thread `id`'s latest snapshot at or before step `upto` (default: its
/// head) and the steps after it, with the step they are read up to:
/// refused when there is no such thread or that step is past its head.
async fn load(
    backend: &Backend,
    id: &str,
    upto: Option<u64>,
) -> Result<(LogTail, u64), StoreError> {
    let Some(tail) = backend.load(id, upto).await? else {
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
    Ok((tail, target))
}

/// The error for a state at `target` whose replay needs step `needed`, which
/// the log lacks: compacted away (or before a fork), or a gap in a corrupt
/// log (the rule is `missing.rs`'s); the database's own error when it
/// cannot tell which.
async fn missing_step(backend: &Backend, id: &str, target: u64, needed: u64) -> StoreError {
    let compacted = |reason: String| StoreError::NoSuchStep {
        thread: id.to_owned(),
        seq: target,
        reason,
    };
    match why_missing(backend, id, needed).await {
        Ok(Missing::Compacted { first: Some(first) }) => compacted(format!(
            "the log before step {first} was compacted away or precedes a fork"
        )),
        Ok(Missing::Compacted { first: None }) => {
            compacted("its log was compacted away or precedes a fork".to_owned())
        }
        Ok(Missing::Hole) => StoreError::corrupt(id, "step", needed, "missing from the log"),
        Err(error) => error,
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

/// The state's JSON text, as a snapshot stores it.
pub(crate) fn state_text<S: State + Serialize>(id: &str, state: &S) -> Result<String, StoreError> {
    state_core::json::state_to_string(state).map_err(|source| StoreError::Encode {
        thread: id.to_owned(),
        what: "state",
        source,
    })
}
