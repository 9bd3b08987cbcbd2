//! The in-memory backend: the same rows as the SQL backends, in maps behind
//! one lock, so that tests and short-lived programs behave exactly as with a
//! database (conflicts, compaction, corrupt rows included).

use super::{
    Appended, ForkRows, LogTail, Removed, SnapshotRow, StepRow, Tail, ThreadRow, ThreadsPage,
};
use crate::error::StoreError;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

#[derive(Debug, Default)]
struct MemThread {
    row: Option<ThreadRow>,
    steps: BTreeMap<u64, StepRow>,
    snapshots: BTreeMap<u64, SnapshotRow>,
}

/// Threads in memory, shared by every clone of the store.
#[derive(Debug, Clone, Default)]
pub(crate) struct Memory {
    threads: Arc<Mutex<HashMap<String, MemThread>>>,
    /// The long-term memory items (`Store::put_item`).
    pub(super) items: super::memory_items::MemoryItems,
    /// The runs, their events and thread records (`Store::create_run`).
    pub(super) runs: super::memory_runs::MemoryRuns,
}

impl Memory {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, MemThread>> {
        // A panic while holding the lock cannot leave a half-written row
        // (every change below is a single insert or remove), so a poisoned
        // lock is still consistent.
        self.threads.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn open(&self, thread: &str, now: i64) -> Result<(), StoreError> {
        let mut threads = self.lock();
        let entry = threads.entry(thread.to_owned()).or_default();
        entry.row.get_or_insert_with(|| ThreadRow {
            id: thread.to_owned(),
            head: 0,
            created_at: now,
            updated_at: now,
            parent: None,
        });
        Ok(())
    }

    pub fn load(&self, thread: &str, upto: Option<u64>) -> Result<Option<LogTail>, StoreError> {
        let threads = self.lock();
        let Some(t) = threads.get(thread) else {
            return Ok(None);
        };
        let Some(row) = &t.row else {
            return Ok(None);
        };
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
        Ok(Some(LogTail {
            head: row.head,
            snapshot,
            steps,
        }))
    }

    pub fn append(&self, thread: &str, step: &StepRow) -> Result<Appended, StoreError> {
        let mut threads = self.lock();
        let Some(t) = threads.get_mut(thread) else {
            return Ok(Appended::NoThread);
        };
        let Some(row) = t.row.as_mut() else {
            return Ok(Appended::NoThread);
        };
        if row.head + 1 != step.seq || t.steps.contains_key(&step.seq) {
            return Ok(Appended::Conflict { stored: row.head });
        }
        row.head = step.seq;
        row.updated_at = step.recorded_at;
        t.steps.insert(step.seq, step.clone());
        Ok(Appended::Committed)
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
