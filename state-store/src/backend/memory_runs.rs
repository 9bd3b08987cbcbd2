//! Runs, their events and thread records in memory: the same rows as the
//! SQL backends, behind one lock, so each transition is as atomic as the
//! SQL backends' transactions.

use super::Rewound;
use super::runs::{
    Cancelled, ClaimEvents, Created, Fence, NewRunRow, OnInflight, RecordScan, RolledBack, RunRow,
    RunScan, ThreadRecordRow,
};
use crate::error::StoreError;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

#[derive(Debug)]
struct Stored {
    row: RunRow,
    lease_owner: Option<String>,
    lease_expires_at: Option<i64>,
    last_seq: u64,
    events: BTreeMap<u64, (String, String, i64)>,
}

#[derive(Debug, Default)]
struct Tables {
    runs: HashMap<String, Stored>,
    records: HashMap<String, ThreadRecordRow>,
    /// The ids of the runs in flight (and of some that ended since): what
    /// claims, wake-ups and a thread's settling scan, instead of every run
    /// the store holds. A run joins at its creation; one that ended or
    /// went is dropped at the next scan (`Tables::active`).
    active: HashSet<String>,
}

/// The runs and thread records of a memory store.
#[derive(Debug, Clone, Default)]
pub(crate) struct MemoryRuns {
    tables: Arc<Mutex<Tables>>,
}

fn in_flight(status: &str) -> bool {
    status == "pending" || status == "running"
}

fn fenced<'t>(tables: &'t mut Tables, fence: Fence<'_>) -> Option<&'t mut Stored> {
    tables.runs.get_mut(fence.run_id).filter(|s| {
        s.row.status == "running"
            && s.lease_owner.as_deref() == Some(fence.worker)
            && s.row.attempt == fence.attempt
    })
}

impl Tables {
    /// The runs in flight, pending or running.
    fn active(&mut self) -> impl Iterator<Item = &Stored> + '_ {
        let runs = &self.runs;
        self.active
            .retain(|id| runs.get(id).is_some_and(|s| in_flight(&s.row.status)));
        let (active, runs) = (&self.active, &self.runs);
        active.iter().filter_map(|id| runs.get(id))
    }

    /// The thread's status after a run on it ended: `busy` while others
    /// are in flight, else `otherwise`.
    /// Whether runs are still in flight on the thread.
    fn settle_thread(&mut self, thread: Option<&str>, otherwise: &str, now: i64) -> bool {
        let Some(thread) = thread else { return false };
        let busy = self
            .active()
            .any(|s| s.row.thread_id.as_deref() == Some(thread));
        if let Some(record) = self.records.get_mut(thread) {
            record.status = if busy { "busy" } else { otherwise }.to_owned();
            record.updated_at = now;
        }
        busy
    }
}

impl MemoryRuns {
    fn lock(&self) -> MutexGuard<'_, Tables> {
        // Each transition below checks everything before it changes
        // anything: a panic cannot leave one half-done.
        self.tables.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn create(&self, new: &NewRunRow<'_>) -> Result<Created, StoreError> {
        let mut t = self.lock();
        if t.runs.contains_key(&new.row.run_id) {
            return Ok(Created::Exists);
        }
        let mut touched = Vec::new();
        if let Some(thread) = new.row.thread_id.as_deref() {
            match t.records.get(thread) {
                Some(record) if new.owner.is_none() || record.owner.as_deref() == new.owner => {}
                Some(_) => return Ok(Created::NoThread),
                None if new.create_thread => {}
                None => return Ok(Created::NoThread),
            }
            let inflight: Vec<String> = t
                .active()
                .filter(|s| s.row.thread_id.as_deref() == Some(thread))
                .map(|s| s.row.run_id.clone())
                .collect();
            match new.on_inflight {
                OnInflight::Enqueue => {}
                OnInflight::Reject if !inflight.is_empty() => return Ok(Created::ThreadBusy),
                OnInflight::Reject => {}
                OnInflight::Cancel(action) => {
                    for id in inflight {
                        let pending = t.runs.get(&id).is_some_and(|s| s.row.status == "pending");
                        if pending && action == "rollback" {
                            t.runs.remove(&id);
                        } else if let Some(stored) = t.runs.get_mut(&id) {
                            if pending {
                                stored.row.status = "interrupted".into();
                            } else {
                                stored.row.cancel_action = Some(action.into());
                            }
                            stored.row.updated_at = new.now;
                        }
                        touched.push(id);
                    }
                }
            }
            let record = t
                .records
                .entry(thread.to_owned())
                .or_insert_with(|| ThreadRecordRow {
                    thread_id: thread.to_owned(),
                    metadata: "{}".into(),
                    status: "idle".into(),
                    owner: new.owner.map(str::to_owned),
                    created_at: new.now,
                    updated_at: new.now,
                });
            if let Some(patch) = new.thread_metadata
                && let Some(merged) = super::merged_metadata(thread, &record.metadata, patch)?
            {
                record.metadata = merged;
            }
            record.status = "busy".into();
            record.updated_at = new.now;
        }
        t.active.insert(new.row.run_id.clone());
        t.runs.insert(
            new.row.run_id.clone(),
            Stored {
                row: new.row.clone(),
                lease_owner: None,
                lease_expires_at: None,
                last_seq: 0,
                events: BTreeMap::new(),
            },
        );
        Ok(Created::Run {
            row: Box::new(new.row.clone()),
            touched,
            claimed: None,
        })
    }

    /// See `Backend::claim_run`; `head` reads a thread's head (the log's
    /// lock is taken inside this one, never the other way round).
    pub fn claim(
        &self,
        worker: &str,
        now: i64,
        until: i64,
        head: impl Fn(&str) -> i64,
        events: ClaimEvents,
    ) -> Result<Option<(RunRow, bool)>, StoreError> {
        let mut t = self.lock();
        let active: Vec<&Stored> = t.active().collect();
        let running: Vec<&str> = active
            .iter()
            .filter(|s| s.row.status == "running")
            .filter_map(|s| s.row.thread_id.as_deref())
            .collect();
        let due = |s: &Stored| match s.row.status.as_str() {
            "pending" => {
                s.row.available_at <= now
                    && s.row
                        .thread_id
                        .as_deref()
                        .is_none_or(|thread| !running.contains(&thread))
            }
            "running" => s.lease_expires_at.is_some_and(|at| at <= now),
            _ => false,
        };
        let Some(id) = active
            .iter()
            .filter(|s| due(s))
            .min_by(|a, b| {
                (a.row.available_at, a.row.created_at, &a.row.run_id).cmp(&(
                    b.row.available_at,
                    b.row.created_at,
                    &b.row.run_id,
                ))
            })
            .map(|s| (s.row.run_id.clone(), s.row.thread_id.clone()))
        else {
            return Ok(None);
        };
        let (id, thread) = id;
        // Others due besides this one (not on its thread, busy from now).
        let others_due = active.iter().filter(|s| due(s)).any(|s| {
            s.row.run_id != id && (s.row.thread_id.is_none() || s.row.thread_id != thread)
        });
        let Some(stored) = t.runs.get_mut(&id) else {
            return Ok(None);
        };
        let mut row = stored.row.clone();
        row.status = "running".into();
        row.attempt += 1;
        if row.base_seq.is_none() {
            row.base_seq = Some(row.thread_id.as_deref().map_or(0, &head));
        }
        row.updated_at = now;
        // Made before anything changes: an error leaves the run as it was.
        let events = events(&row)?;
        stored.row = row.clone();
        stored.lease_owner = Some(worker.to_owned());
        stored.lease_expires_at = Some(until);
        for (event, data) in events {
            stored.last_seq += 1;
            stored.events.insert(stored.last_seq, (event, data, now));
        }
        if let Some(record) = row
            .thread_id
            .as_deref()
            .and_then(|id| t.records.get_mut(id))
        {
            record.status = "busy".into();
            record.updated_at = now;
        }
        Ok(Some((row, others_due)))
    }

    pub fn renew(
        &self,
        fence: Fence<'_>,
        now: i64,
        until: i64,
    ) -> Result<Option<Option<String>>, StoreError> {
        let mut t = self.lock();
        Ok(fenced(&mut t, fence).map(|s| {
            s.lease_expires_at = Some(until);
            s.row.updated_at = now;
            s.row.cancel_action.clone()
        }))
    }

    pub fn finish(
        &self,
        fence: Fence<'_>,
        status: &str,
        thread_status: &str,
        now: i64,
        events: &[(&str, String)],
    ) -> Result<Option<bool>, StoreError> {
        let mut t = self.lock();
        let Some(s) = fenced(&mut t, fence) else {
            return Ok(None);
        };
        for (event, data) in events {
            s.last_seq += 1;
            s.events
                .insert(s.last_seq, ((*event).to_owned(), data.clone(), now));
        }
        s.row.status = status.to_owned();
        s.row.updated_at = now;
        s.row.cancel_action = None;
        s.lease_owner = None;
        s.lease_expires_at = None;
        let thread = s.row.thread_id.clone();
        Ok(Some(t.settle_thread(thread.as_deref(), thread_status, now)))
    }

    pub fn release(&self, fence: Fence<'_>, now: i64) -> Result<bool, StoreError> {
        let mut t = self.lock();
        let Some(s) = fenced(&mut t, fence) else {
            return Ok(false);
        };
        s.row.status = "pending".into();
        s.row.updated_at = now;
        s.lease_owner = None;
        s.lease_expires_at = None;
        Ok(true)
    }

    /// The ids of assistant `assistant_id`'s runs in flight: the pending
    /// ones, then the running ones, oldest first in each; from the
    /// in-flight set (not every run the store holds).
    pub fn in_flight_of_assistant(&self, assistant_id: &str) -> Vec<String> {
        let mut tables = self.lock();
        let mut found: Vec<(bool, i64, String)> = tables
            .active()
            .filter(|s| s.row.assistant_id == assistant_id)
            .map(|s| {
                let running = s.row.status == "running";
                (running, s.row.created_at, s.row.run_id.clone())
            })
            .collect();
        found.sort_unstable();
        found.into_iter().map(|(_, _, run_id)| run_id).collect()
    }

    pub fn get(&self, run_id: &str) -> Result<Option<RunRow>, StoreError> {
        Ok(self.lock().runs.get(run_id).map(|s| s.row.clone()))
    }

    pub fn list(&self, scan: RunScan<'_>) -> Result<Vec<RunRow>, StoreError> {
        let t = self.lock();
        let mut rows: Vec<RunRow> = t
            .runs
            .values()
            .map(|s| &s.row)
            .filter(|r| r.thread_id.as_deref() == scan.thread_id)
            .filter(|r| scan.status.is_none_or(|s| r.status == s))
            .filter(|r| scan.owner.is_none() || r.owner.as_deref() == scan.owner)
            .cloned()
            .collect();
        rows.sort_by(|a, b| (b.created_at, &b.run_id).cmp(&(a.created_at, &a.run_id)));
        Ok(rows
            .into_iter()
            .skip(scan.offset)
            .take(scan.limit)
            .collect())
    }

    pub fn cancel(
        &self,
        run_id: &str,
        action: &'static str,
        owner: Option<&str>,
        now: i64,
    ) -> Result<Cancelled, StoreError> {
        let mut t = self.lock();
        let Some(s) = t
            .runs
            .get_mut(run_id)
            .filter(|s| owner.is_none() || s.row.owner.as_deref() == owner)
        else {
            return Ok(Cancelled::NotFound);
        };
        match s.row.status.as_str() {
            "pending" => {
                let thread = s.row.thread_id.clone();
                let row = if action == "rollback" {
                    None
                } else {
                    s.row.status = "interrupted".into();
                    s.row.updated_at = now;
                    Some(Box::new(s.row.clone()))
                };
                if row.is_none() {
                    t.runs.remove(run_id);
                }
                t.settle_thread(thread.as_deref(), "idle", now);
                Ok(Cancelled::Done(row))
            }
            "running" => {
                s.row.cancel_action = Some(action.to_owned());
                s.row.updated_at = now;
                Ok(Cancelled::Done(Some(Box::new(s.row.clone()))))
            }
            _ => Ok(Cancelled::Done(Some(Box::new(s.row.clone())))),
        }
    }

    pub fn delete(&self, run_id: &str, owner: Option<&str>, now: i64) -> Result<bool, StoreError> {
        let mut t = self.lock();
        if !t
            .runs
            .get(run_id)
            .is_some_and(|s| owner.is_none() || s.row.owner.as_deref() == owner)
        {
            return Ok(false);
        }
        let Some(removed) = t.runs.remove(run_id) else {
            return Ok(false);
        };
        if in_flight(&removed.row.status) {
            t.settle_thread(removed.row.thread_id.as_deref(), "idle", now);
        }
        Ok(true)
    }

    pub fn append_events(
        &self,
        fence: Fence<'_>,
        events: &[(&str, String)],
        now: i64,
    ) -> Result<Option<u64>, StoreError> {
        let mut t = self.lock();
        let Some(s) = fenced(&mut t, fence) else {
            return Ok(None);
        };
        for (event, data) in events {
            s.last_seq += 1;
            s.events
                .insert(s.last_seq, ((*event).to_owned(), data.clone(), now));
        }
        Ok(Some(s.last_seq))
    }

    pub fn events(
        &self,
        run_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<(i64, String, String, i64)>, StoreError> {
        let t = self.lock();
        Ok(t.runs.get(run_id).map_or_else(Vec::new, |s| {
            s.events
                .range(after.saturating_add(1)..)
                .take(limit)
                .map(|(seq, (event, data, at))| {
                    (
                        i64::try_from(*seq).unwrap_or(i64::MAX),
                        event.clone(),
                        data.clone(),
                        *at,
                    )
                })
                .collect()
        }))
    }

    pub fn prune_events(&self, before: i64) -> Result<u64, StoreError> {
        let mut t = self.lock();
        let mut pruned = 0;
        for s in t.runs.values_mut() {
            if !in_flight(&s.row.status) && s.row.updated_at < before {
                pruned += s.events.len() as u64;
                s.events.clear();
            }
        }
        Ok(pruned)
    }

    pub fn next_due(&self, now: i64) -> Result<Option<i64>, StoreError> {
        let mut t = self.lock();
        Ok(t.active()
            .filter_map(|s| match s.row.status.as_str() {
                "pending" => Some(s.row.available_at),
                "running" => s.lease_expires_at,
                _ => None,
            })
            .filter(|&at| at > now)
            .min())
    }

    /// Removes a thread's record and runs (with `Memory::delete`): whether
    /// it had a record, and the runs that were in flight.
    /// Rolls the fenced run back (see `Backend::roll_back_run`): `rewind`
    /// takes its thread back to its base step, under this lock.
    pub fn roll_back(
        &self,
        fence: Fence<'_>,
        thread_status: &str,
        now: i64,
        rewind: impl FnOnce(&str, u64) -> Rewound,
    ) -> Result<RolledBack, StoreError> {
        let mut t = self.lock();
        let Some(s) = fenced(&mut t, fence) else {
            return Ok(RolledBack::Lost);
        };
        let thread = s.row.thread_id.clone();
        let base_seq = u64::try_from(s.row.base_seq.unwrap_or(0)).unwrap_or(0);
        let steps = match thread.as_deref().map(|thread| rewind(thread, base_seq)) {
            None | Some(Rewound::NoThread | Rewound::Ahead { .. }) => 0,
            Some(Rewound::Done { steps }) => steps,
            Some(refused @ Rewound::Unrebuildable { .. }) => {
                return Ok(RolledBack::Refused(refused));
            }
        };
        t.runs.remove(fence.run_id);
        t.settle_thread(thread.as_deref(), thread_status, now);
        Ok(RolledBack::Done {
            thread,
            base_seq,
            steps,
        })
    }

    pub fn delete_thread(&self, thread: &str) -> (bool, Vec<String>) {
        let mut t = self.lock();
        let mut inflight = Vec::new();
        t.runs.retain(|id, s| {
            let on_thread = s.row.thread_id.as_deref() == Some(thread);
            if on_thread && in_flight(&s.row.status) {
                inflight.push(id.clone());
            }
            !on_thread
        });
        (t.records.remove(thread).is_some(), inflight)
    }

    pub fn insert_record(&self, row: &ThreadRecordRow) -> Result<bool, StoreError> {
        let mut t = self.lock();
        if t.records.contains_key(&row.thread_id) {
            return Ok(false);
        }
        t.records.insert(row.thread_id.clone(), row.clone());
        Ok(true)
    }

    pub fn record(&self, id: &str) -> Result<Option<ThreadRecordRow>, StoreError> {
        Ok(self.lock().records.get(id).cloned())
    }

    pub fn update_record(
        &self,
        id: &str,
        owner: Option<&str>,
        merge: &(dyn Fn(&str) -> Result<String, StoreError> + Send + Sync),
        now: i64,
    ) -> Result<Option<ThreadRecordRow>, StoreError> {
        let mut t = self.lock();
        let Some(record) = t
            .records
            .get_mut(id)
            .filter(|r| owner.is_none() || r.owner.as_deref() == owner)
        else {
            return Ok(None);
        };
        record.metadata = merge(&record.metadata)?;
        record.updated_at = now;
        Ok(Some(record.clone()))
    }

    pub fn set_status(&self, id: &str, status: &str, now: i64) -> Result<bool, StoreError> {
        let mut t = self.lock();
        Ok(t.records.get_mut(id).is_some_and(|r| {
            r.status = status.to_owned();
            r.updated_at = now;
            true
        }))
    }

    pub fn records(&self, scan: RecordScan<'_>) -> Result<Vec<ThreadRecordRow>, StoreError> {
        let t = self.lock();
        let mut rows: Vec<ThreadRecordRow> = t
            .records
            .values()
            .filter(|r| scan.status.is_none_or(|s| r.status == s))
            .filter(|r| scan.owner.is_none() || r.owner.as_deref() == scan.owner)
            .cloned()
            .collect();
        let key = |r: &ThreadRecordRow| match scan.order_by {
            "created_at" => r.created_at,
            "updated_at" => r.updated_at,
            _ => 0,
        };
        rows.sort_by(|a, b| {
            (key(a), a.thread_id.as_bytes()).cmp(&(key(b), b.thread_id.as_bytes()))
        });
        if scan.descending {
            rows.reverse();
        }
        Ok(rows)
    }
}
