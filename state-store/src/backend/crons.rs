//! Crons as the backends store them (`Store::create_cron`): one row of
//! text and integers each. A change is decided inside the backend's
//! transaction, after the cron's row is locked: `memory_crons.rs` under
//! its lock, `sql_crons.rs` in SQL. `crate::crons` validates what goes in
//! and decodes what comes out.

use super::Backend;
use crate::error::StoreError;

/// A cron, as stored.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CronRow {
    pub cron_id: String,
    pub assistant_id: String,
    pub thread_id: Option<String>,
    pub schedule: String,
    pub timezone: Option<String>,
    pub end_time: Option<i64>,
    pub payload: String,
    pub metadata: String,
    /// 1 or 0.
    pub enabled: i64,
    pub on_run_completed: Option<String>,
    pub next_run_at: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
    pub owner: Option<String>,
}

/// The cron's new row from its current one (its update time is set by
/// the backend).
pub(crate) type CronChange<'a> = &'a (dyn Fn(&CronRow) -> CronRow + Send + Sync);

/// Which crons a scan reads (each filter given must hold), in which
/// order: by `order_by`, then the id (ids compared bytewise; a missing
/// value after every other, as PostgreSQL orders NULLs), ascending or
/// `descending`. The metadata filter is applied in Rust.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CronScan<'a> {
    pub assistant_id: Option<&'a str>,
    pub thread_id: Option<&'a str>,
    pub enabled: Option<bool>,
    pub owner: Option<&'a str>,
    pub order_by: crate::CronSort,
    pub descending: bool,
}

impl Backend {
    /// Inserts a cron unless one with its id exists. False: it existed.
    pub async fn insert_cron(&self, row: &CronRow) -> Result<bool, StoreError> {
        dispatch_split!(self, b => b.crons.insert(row), b.insert_cron(row))
    }

    pub async fn cron(&self, id: &str) -> Result<Option<CronRow>, StoreError> {
        dispatch_split!(self, b => b.crons.get(id), b.cron(id))
    }

    /// Replaces cron `id`'s row with `change`'s, its update time `now`, in
    /// one transaction. `None`: no such cron visible to `owner` (`None`:
    /// any).
    pub async fn update_cron(
        &self,
        id: &str,
        owner: Option<&str>,
        change: CronChange<'_>,
        now: i64,
    ) -> Result<Option<CronRow>, StoreError> {
        dispatch_split!(self, b => b.crons.update(id, owner, change, now),
            b.update_cron(id, owner, change, now))
    }

    /// Deletes cron `id`. False: no such cron visible to `owner`.
    pub async fn delete_cron(&self, id: &str, owner: Option<&str>) -> Result<bool, StoreError> {
        dispatch_split!(self, b => b.crons.delete(id, owner), b.delete_cron(id, owner))
    }

    /// The crons `scan` selects, in its order.
    pub async fn crons(&self, scan: CronScan<'_>) -> Result<Vec<CronRow>, StoreError> {
        dispatch_split!(self, b => b.crons.scan(scan), b.crons(scan))
    }

    /// The enabled crons due at `now`, soonest first (then by id), at
    /// most `limit`.
    pub async fn due_crons(&self, now: i64, limit: usize) -> Result<Vec<CronRow>, StoreError> {
        dispatch_split!(self, b => b.crons.due(now, limit), b.due_crons(now, limit))
    }

    /// The soonest next run of the enabled crons.
    pub async fn next_cron_due(&self) -> Result<Option<i64>, StoreError> {
        dispatch_split!(self, b => b.crons.next_due(), b.next_cron_due())
    }

    /// Sets cron `id`'s next run to `to` (updated at `now`) if it is
    /// `from`. False: it was not (or no such cron).
    pub async fn advance_cron(
        &self,
        id: &str,
        from: i64,
        to: Option<i64>,
        now: i64,
    ) -> Result<bool, StoreError> {
        dispatch_split!(self, b => b.crons.advance(id, from, to, now),
            b.advance_cron(id, from, to, now))
    }
}
