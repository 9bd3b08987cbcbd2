//! Crons in memory: the same rows as the SQL backends, behind one lock,
//! so each change is as atomic as their transactions.

use super::crons::{CronChange, CronRow, CronScan};
use crate::CronSort;
use crate::error::StoreError;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// The crons of a memory store, by id.
#[derive(Debug, Clone, Default)]
pub(crate) struct MemoryCrons {
    rows: Arc<Mutex<HashMap<String, CronRow>>>,
}

/// A value a scan orders by. A missing one sorts after every other, as
/// PostgreSQL orders NULLs (the variants' order).
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Key<'a> {
    Number(i64),
    Text(&'a [u8]),
    Missing,
}

fn key(row: &CronRow, column: CronSort) -> Key<'_> {
    let number = |n: Option<i64>| n.map_or(Key::Missing, Key::Number);
    match column {
        CronSort::CronId => Key::Text(row.cron_id.as_bytes()),
        CronSort::AssistantId => Key::Text(row.assistant_id.as_bytes()),
        CronSort::ThreadId => row
            .thread_id
            .as_deref()
            .map_or(Key::Missing, |t| Key::Text(t.as_bytes())),
        CronSort::NextRunDate => number(row.next_run_at),
        CronSort::EndTime => number(row.end_time),
        CronSort::CreatedAt => Key::Number(row.created_at),
        CronSort::UpdatedAt => Key::Number(row.updated_at),
    }
}

fn visible(row: &CronRow, owner: Option<&str>) -> bool {
    owner.is_none() || row.owner.as_deref() == owner
}

impl MemoryCrons {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, CronRow>> {
        // Every change below is one insert, replace or remove: a panic
        // cannot leave half of one.
        self.rows.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn insert(&self, row: &CronRow) -> Result<bool, StoreError> {
        let mut rows = self.lock();
        if rows.contains_key(&row.cron_id) {
            return Ok(false);
        }
        rows.insert(row.cron_id.clone(), row.clone());
        Ok(true)
    }

    pub fn get(&self, id: &str) -> Result<Option<CronRow>, StoreError> {
        Ok(self.lock().get(id).cloned())
    }

    pub fn update(
        &self,
        id: &str,
        owner: Option<&str>,
        change: CronChange<'_>,
        now: i64,
    ) -> Result<Option<CronRow>, StoreError> {
        let mut rows = self.lock();
        let Some(current) = rows.get_mut(id).filter(|row| visible(row, owner)) else {
            return Ok(None);
        };
        let mut row = change(current);
        row.updated_at = now;
        *current = row.clone();
        Ok(Some(row))
    }

    pub fn delete(&self, id: &str, owner: Option<&str>) -> Result<bool, StoreError> {
        let mut rows = self.lock();
        if !rows.get(id).is_some_and(|row| visible(row, owner)) {
            return Ok(false);
        }
        rows.remove(id);
        Ok(true)
    }

    pub fn scan(&self, scan: CronScan<'_>) -> Result<Vec<CronRow>, StoreError> {
        let mut found: Vec<CronRow> = self
            .lock()
            .values()
            .filter(|r| scan.assistant_id.is_none_or(|a| r.assistant_id == a))
            .filter(|r| {
                scan.thread_id
                    .is_none_or(|t| r.thread_id.as_deref() == Some(t))
            })
            .filter(|r| scan.enabled.is_none_or(|e| r.enabled == i64::from(e)))
            .filter(|r| visible(r, scan.owner))
            .cloned()
            .collect();
        found.sort_by(|a, b| {
            (key(a, scan.order_by), a.cron_id.as_bytes())
                .cmp(&(key(b, scan.order_by), b.cron_id.as_bytes()))
        });
        if scan.descending {
            found.reverse();
        }
        Ok(found)
    }

    pub fn due(&self, now: i64, limit: usize) -> Result<Vec<CronRow>, StoreError> {
        let mut due: Vec<CronRow> = self
            .lock()
            .values()
            .filter(|r| r.enabled == 1 && r.next_run_at.is_some_and(|at| at <= now))
            .cloned()
            .collect();
        due.sort_by(|a, b| {
            (a.next_run_at, a.cron_id.as_bytes()).cmp(&(b.next_run_at, b.cron_id.as_bytes()))
        });
        due.truncate(limit);
        Ok(due)
    }

    pub fn next_due(&self) -> Result<Option<i64>, StoreError> {
        Ok(self
            .lock()
            .values()
            .filter(|r| r.enabled == 1)
            .filter_map(|r| r.next_run_at)
            .min())
    }

    pub fn advance(
        &self,
        id: &str,
        from: i64,
        to: Option<i64>,
        now: i64,
    ) -> Result<bool, StoreError> {
        let mut rows = self.lock();
        match rows.get_mut(id) {
            Some(row) if row.next_run_at == Some(from) => {
                row.next_run_at = to;
                row.updated_at = now;
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}
