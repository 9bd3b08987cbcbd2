//! The in-memory backend: the same rows as the SQL backends, in maps behind
//! one lock, so that tests and short-lived programs behave exactly as with a
//! database (conflicts, compaction, corrupt rows included). Beside the rows,
//! each thread may keep the state `Store::latest` last rebuilt, typed
//! ([`Decoded`]): the next call starts from it instead of decoding the log.

use super::{
    Appended, ForkRows, LogTail, Removed, Rewinds, Rewound, SnapshotRow, StepRow, Tail, ThreadRow,
    ThreadsPage,
};
use crate::error::StoreError;
use std::any::{Any, TypeId};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

#[derive(Debug, Default)]
struct MemThread {
    row: Option<ThreadRow>,
    steps: BTreeMap<u64, StepRow>,
    snapshots: BTreeMap<u64, SnapshotRow>,
    /// Which thread of this id this is: a thread deleted and created
    /// again has another, so a state decoded from the first is not kept
    /// for the second.
    generation: u64,
    decoded: Option<Decoded>,
    /// Its rewinds (`Memory::rewind`).
    rewinds: Rewinds,
}

/// A thread's state after step `seq`, as `Store::latest` rebuilt it from
/// the rows, kept typed (`state` is of the type `type_id` names): the
/// memory store keeps its rows as text, as the SQL backends do, and
/// decoding them again at every call made `get_state` as slow as a load.
/// Still valid as long as the thread is: a step is never changed once
/// written, and compaction removes only steps a snapshot replaces; a
/// rewind drops a kept state past its step and starts a new generation.
#[derive(Clone)]
pub(crate) struct Decoded {
    pub seq: u64,
    pub type_id: TypeId,
    pub state: Arc<dyn Any + Send + Sync>,
}

impl std::fmt::Debug for Decoded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decoded")
            .field("seq", &self.seq)
            .finish_non_exhaustive()
    }
}

/// What [`Memory::load_latest`] read.
pub(crate) enum Latest {
    /// The kept state at `base.seq`, the steps after it up to `head`
    /// (all there, in order), and the head's step. With steps, the thread
    /// no longer keeps `base`: the caller keeps the state it makes.
    Decoded {
        base: Decoded,
        steps: Vec<StepRow>,
        head: u64,
        last: Option<StepRow>,
        generation: u64,
    },
    /// No kept state to start from: the rows, as a load reads them, with
    /// the head's step in `tail.last`.
    Rows { tail: LogTail, generation: u64 },
}

/// Threads in memory, shared by every clone of the store.
#[derive(Debug, Clone, Default)]
pub(crate) struct Memory {
    threads: Arc<Mutex<HashMap<String, MemThread>>>,
    /// The last [`MemThread::generation`] given.
    generations: Arc<AtomicU64>,
    /// The long-term memory items (`Store::put_item`).
    pub(super) items: super::memory_items::MemoryItems,
    /// The runs, their events and thread records (`Store::create_run`).
    pub(super) runs: super::memory_runs::MemoryRuns,
    /// The created assistants (`Store::create_assistant`).
    pub(super) assistants: super::memory_assistants::MemoryAssistants,
    /// The crons (`Store::create_cron`).
    pub(super) crons: super::memory_crons::MemoryCrons,
}

impl Memory {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, MemThread>> {
        // A panic while holding the lock cannot leave a half-written row
        // (every change below is a single insert or remove), so a poisoned
        // lock is still consistent.
        self.threads.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn next_generation(&self) -> u64 {
        self.generations.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// The thread's last step (0 for none, or no thread).
    pub fn head(&self, thread: &str) -> i64 {
        let threads = self.lock();
        let head = threads
            .get(thread)
            .and_then(|t| t.row.as_ref())
            .map_or(0, |row| row.head);
        i64::try_from(head).unwrap_or(i64::MAX)
    }

    pub fn open(&self, thread: &str, now: i64) -> Result<(), StoreError> {
        let generation = self.next_generation();
        let mut threads = self.lock();
        let entry = threads.entry(thread.to_owned()).or_default();
        if entry.row.is_none() {
            entry.row = Some(ThreadRow {
                id: thread.to_owned(),
                head: 0,
                created_at: now,
                updated_at: now,
                parent: None,
            });
            entry.generation = generation;
        }
        Ok(())
    }

    pub fn load(&self, thread: &str, upto: Option<u64>) -> Result<Option<LogTail>, StoreError> {
        let threads = self.lock();
        Ok(threads.get(thread).and_then(|t| Self::tail_of(t, upto)))
    }

    /// What [`load`](Self::load) reads, from the thread's rows.
    fn tail_of(t: &MemThread, upto: Option<u64>) -> Option<LogTail> {
        let row = t.row.as_ref()?;
        let upto = upto.unwrap_or(row.head).min(row.head);
        let snapshot = t
            .snapshots
            .range(..=upto)
            .next_back()
            .map(|(_, s)| s.clone());
        let from = snapshot.as_ref().map_or(1, |s| s.seq + 1);
        let steps = if from > upto {
            Vec::new()
        } else {
            t.steps.range(from..=upto).map(|(_, s)| s.clone()).collect()
        };
        Some(LogTail {
            head: row.head,
            snapshot,
            steps,
            last: None,
        })
    }

    /// The thread's latest state as rows to rebuild it from, with its head's
    /// step: the kept [`Decoded`] state of type `type_id` and the steps
    /// after it when there is one no older than the latest snapshot (and
    /// every step after it is there), else the rows a load reads. `None`:
    /// no thread.
    pub fn load_latest(&self, thread: &str, type_id: TypeId) -> Result<Option<Latest>, StoreError> {
        let mut threads = self.lock();
        let Some(t) = threads.get_mut(thread) else {
            return Ok(None);
        };
        let Some(head) = t.row.as_ref().map(|row| row.head) else {
            return Ok(None);
        };
        let last = t.steps.get(&head).cloned();
        let kept = t.decoded.as_ref().filter(|base| {
            base.type_id == type_id
                && base.seq <= head
                && t.snapshots
                    .range(..=head)
                    .next_back()
                    .is_none_or(|(&snapshot, _)| snapshot <= base.seq)
        });
        if let Some(from) = kept.map(|base| base.seq) {
            let steps: Vec<StepRow> = if from == head {
                Vec::new()
            } else {
                t.steps
                    .range(from + 1..=head)
                    .map(|(_, s)| s.clone())
                    .collect()
            };
            // Keys are distinct and in the range: as many as the range
            // holds means none is missing.
            if steps.len() as u64 == head - from {
                // With steps to replay, taken out: the caller brings it up
                // to date in place when no one else holds it (and keeps it
                // again), instead of copying it.
                let base = match steps.is_empty() {
                    true => t.decoded.clone(),
                    false => t.decoded.take(),
                };
                if let Some(base) = base {
                    return Ok(Some(Latest::Decoded {
                        base,
                        steps,
                        head,
                        last,
                        generation: t.generation,
                    }));
                }
            }
        }
        let Some(mut tail) = Self::tail_of(t, None) else {
            return Ok(None);
        };
        tail.last = last;
        Ok(Some(Latest::Rows {
            tail,
            generation: t.generation,
        }))
    }

    /// Keeps `decoded` as thread `thread`'s latest decoded state, if the
    /// thread is still the one of `generation` (not deleted and created
    /// again) and what it keeps is not newer (of the same type).
    pub fn keep_decoded(&self, thread: &str, generation: u64, decoded: Decoded) {
        let mut threads = self.lock();
        if let Some(t) = threads.get_mut(thread)
            && t.generation == generation
            && t.row.is_some()
            && t.decoded
                .as_ref()
                .is_none_or(|kept| kept.type_id != decoded.type_id || kept.seq < decoded.seq)
        {
            t.decoded = Some(decoded);
        }
    }

    pub fn append(&self, thread: &str, step: StepRow) -> Appended {
        let mut threads = self.lock();
        let Some(t) = threads.get_mut(thread) else {
            return Appended::NoThread;
        };
        let Some(row) = t.row.as_mut() else {
            return Appended::NoThread;
        };
        if row.head + 1 != step.seq || t.steps.contains_key(&step.seq) {
            return Appended::Conflict { stored: row.head };
        }
        row.head = step.seq;
        row.updated_at = step.recorded_at;
        t.steps.insert(step.seq, step);
        Appended::Committed
    }

    pub fn step(&self, thread: &str, seq: u64) -> Result<Option<StepRow>, StoreError> {
        Ok(self
            .lock()
            .get(thread)
            .and_then(|t| t.steps.get(&seq).cloned()))
    }

    pub fn snapshot(&self, thread: &str, snapshot: &SnapshotRow) -> Result<(), StoreError> {
        if let Some(t) = self.lock().get_mut(thread) {
            t.snapshots
                .entry(snapshot.seq)
                .or_insert_with(|| snapshot.clone());
        }
        Ok(())
    }

    pub fn steps(&self, thread: &str, from: u64, to: u64) -> Result<Vec<StepRow>, StoreError> {
        if from > to {
            return Ok(Vec::new());
        }
        Ok(self.lock().get(thread).map_or_else(Vec::new, |t| {
            t.steps.range(from..=to).map(|(_, s)| s.clone()).collect()
        }))
    }

    pub fn tail(&self, thread: &str, from: u64, limit: usize) -> Result<Option<Tail>, StoreError> {
        let threads = self.lock();
        let Some(t) = threads.get(thread) else {
            return Ok(None);
        };
        Ok(t.row.as_ref().map(|row| Tail {
            head: row.head,
            created_at: row.created_at,
            rewinds: t.rewinds,
            steps: t
                .steps
                .range(from..)
                .take(limit)
                .map(|(_, s)| s.clone())
                .collect(),
        }))
    }

    pub fn first_step(&self, thread: &str) -> Result<Option<u64>, StoreError> {
        Ok(self
            .lock()
            .get(thread)
            .and_then(|t| t.steps.keys().next().copied()))
    }

    pub fn threads(&self) -> Result<Vec<ThreadRow>, StoreError> {
        let mut rows: Vec<ThreadRow> = self.lock().values().filter_map(|t| t.row.clone()).collect();
        rows.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(rows)
    }

    pub fn threads_page(&self, page: ThreadsPage<'_>) -> Result<Vec<ThreadRow>, StoreError> {
        let at = |row: &ThreadRow| (page.position(row), row.id.as_bytes().to_vec());
        let mut rows: Vec<ThreadRow> = self
            .lock()
            .values()
            .filter_map(|t| t.row.clone())
            .filter(|row| {
                page.after.is_none_or(|(time, id)| {
                    let here = (page.position(row), row.id.as_bytes());
                    let cursor = (time, id.as_bytes());
                    if page.descending {
                        here < cursor
                    } else {
                        here > cursor
                    }
                })
            })
            .collect();
        rows.sort_by_cached_key(|row| at(row));
        if page.descending {
            rows.reverse();
        }
        Ok(rows
            .into_iter()
            .skip(page.offset)
            .take(page.limit)
            .collect())
    }

    pub fn thread(&self, thread: &str) -> Result<Option<ThreadRow>, StoreError> {
        Ok(self.lock().get(thread).and_then(|t| t.row.clone()))
    }

    pub fn delete(&self, thread: &str) -> Result<(bool, Vec<String>), StoreError> {
        // Its runs (with their events) and its record go with it.
        let (recorded, inflight) = self.runs.delete_thread(thread);
        let existed = self.lock().remove(thread).is_some_and(|t| t.row.is_some());
        Ok((existed || recorded, inflight))
    }

    pub fn create_from(
        &self,
        thread: &str,
        fork: &ForkRows,
        (parent, parent_seq): (&str, u64),
        now: i64,
    ) -> Result<bool, StoreError> {
        let mut threads = self.lock();
        if threads.get(thread).is_some_and(|t| t.row.is_some()) {
            return Ok(false);
        }
        let mut t = MemThread {
            generation: self.next_generation(),
            row: Some(ThreadRow {
                id: thread.to_owned(),
                head: parent_seq,
                created_at: now,
                updated_at: now,
                parent: Some((parent.to_owned(), parent_seq)),
            }),
            ..MemThread::default()
        };
        if let Some(snapshot) = &fork.snapshot {
            t.snapshots.insert(snapshot.seq, snapshot.clone());
        }
        for step in &fork.steps {
            t.steps.insert(step.seq, step.clone());
        }
        threads.insert(thread.to_owned(), t);
        Ok(true)
    }

    /// Takes the thread back to `seq` (see `Backend::rewind`). A run's
    /// rollback calls it holding the runs' lock: the runs' lock is always
    /// taken before this one.
    pub fn rewind(&self, thread: &str, seq: u64, now: i64) -> Result<Rewound, StoreError> {
        let generation = self.next_generation();
        let mut threads = self.lock();
        Ok(match threads.get_mut(thread) {
            Some(t) => Self::rewind_thread(t, seq, now, generation),
            None => Rewound::NoThread,
        })
    }

    fn rewind_thread(t: &mut MemThread, seq: u64, now: i64, generation: u64) -> Rewound {
        let Some(row) = t.row.as_mut() else {
            return Rewound::NoThread;
        };
        if row.head < seq {
            return Rewound::Ahead { head: row.head };
        }
        if row.head == seq {
            return Rewound::Done { steps: 0 };
        }
        // The state at `seq` must stay rebuildable: a snapshot at or
        // before it (or the start) and every step after that up to it.
        let base = t.snapshots.range(..=seq).next_back().map_or(0, |(&s, _)| s);
        if let Some(missing) = (base + 1..=seq).find(|n| !t.steps.contains_key(n)) {
            return Rewound::Unrebuildable { missing };
        }
        let removed = t.steps.split_off(&(seq + 1)).len() as u64;
        t.snapshots.split_off(&(seq + 1));
        row.head = seq;
        row.updated_at = now;
        t.rewinds = Rewinds {
            count: t.rewinds.count + 1,
            to: seq,
        };
        // A state kept past `seq` is gone; one being rebuilt from before
        // the rewind must not be kept either (another generation).
        if t.decoded.as_ref().is_some_and(|kept| kept.seq > seq) {
            t.decoded = None;
        }
        t.generation = generation;
        Rewound::Done { steps: removed }
    }

    /// A run's rollback (`Backend::roll_back_run`): the runs' lock, then
    /// this one for the rewind.
    pub fn roll_back_run(
        &self,
        fence: super::Fence<'_>,
        thread_status: &str,
        now: i64,
        now_ms: i64,
    ) -> Result<super::RolledBack, StoreError> {
        self.runs
            .roll_back(fence, thread_status, now, |thread, seq| {
                self.rewind(thread, seq, now_ms)
                    .unwrap_or(Rewound::NoThread)
            })
    }

    pub fn compact(&self, thread: &str) -> Result<Removed, StoreError> {
        let mut threads = self.lock();
        let Some(t) = threads.get_mut(thread) else {
            return Ok(Removed::default());
        };
        let Some(&latest) = t.snapshots.keys().next_back() else {
            return Ok(Removed::default());
        };
        let kept_steps = t.steps.split_off(&(latest + 1));
        let kept_snapshots = t.snapshots.split_off(&latest);
        let removed = Removed {
            steps: t.steps.len() as u64,
            snapshots: t.snapshots.len() as u64,
        };
        t.steps = kept_steps;
        t.snapshots = kept_snapshots;
        Ok(removed)
    }
}
