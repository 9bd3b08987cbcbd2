//! The SQL of crons (schema version 8), for both SQL backends, and
//! `sql_crons!`, which stamps their methods out beside `sql_backend!`'s.
//! A cron is one row; a change locks it first (PostgreSQL; SQLite's write
//! transaction has the database already), and a scheduler advances its
//! next run by compare-and-set, so two processes firing one tick advance
//! it once.
//!
//! Times are microseconds since the Unix epoch, JSON is stored as text,
//! `enabled` as 1 or 0.

use super::crons::{CronRow, CronScan};
use crate::CronSort;

/// The table and index of version 8, the same in both databases. The
/// index serves the due crons' query (`due_crons_sql`).
pub(crate) const CRON_TABLES: [&str; 2] = [
    "CREATE TABLE IF NOT EXISTS state_store_crons (
        cron_id TEXT PRIMARY KEY,
        assistant_id TEXT NOT NULL,
        thread_id TEXT,
        schedule TEXT NOT NULL,
        timezone TEXT,
        end_time BIGINT,
        payload TEXT NOT NULL,
        metadata TEXT NOT NULL,
        enabled BIGINT NOT NULL,
        on_run_completed TEXT,
        next_run_at BIGINT,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        owner TEXT
    )",
    "CREATE INDEX IF NOT EXISTS state_store_crons_due ON state_store_crons (next_run_at)",
];

macro_rules! cron_columns {
    () => {
        "cron_id, assistant_id, thread_id, schedule, timezone, end_time, payload, metadata, \
         enabled, on_run_completed, next_run_at, created_at, updated_at, owner"
    };
}

pub(crate) const INSERT_CRON: &str = concat!(
    "INSERT INTO state_store_crons (",
    cron_columns!(),
    ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) \
     ON CONFLICT (cron_id) DO NOTHING"
);
pub(crate) const SELECT_CRON: &str = concat!(
    "SELECT ",
    cron_columns!(),
    " FROM state_store_crons WHERE cron_id = $1"
);
/// Takes the cron's row lock (PostgreSQL) before it is read and changed.
pub(crate) const LOCK_CRON: &str =
    "UPDATE state_store_crons SET updated_at = updated_at WHERE cron_id = $1";
pub(crate) const SET_CRON: &str = "UPDATE state_store_crons SET schedule = $2, timezone = $3, \
     end_time = $4, payload = $5, metadata = $6, enabled = $7, on_run_completed = $8, \
     next_run_at = $9, updated_at = $10 WHERE cron_id = $1";
pub(crate) const DELETE_CRON: &str =
    "DELETE FROM state_store_crons WHERE cron_id = $1 AND ($2 IS NULL OR owner = $2)";
pub(crate) const NEXT_CRON_DUE: &str =
    "SELECT MIN(next_run_at) FROM state_store_crons WHERE enabled = 1";
/// The compare-and-set of a scheduler's tick: a row changes only if its
/// next run is still `$2` (PostgreSQL's second writer waits for the
/// first's row lock, then finds it changed).
pub(crate) const ADVANCE_CRON: &str = "UPDATE state_store_crons SET next_run_at = $3, \
     updated_at = $4 WHERE cron_id = $1 AND next_run_at = $2";

/// The crons of a scan: by assistant (`$1`), thread (`$2`), `enabled`
/// (`$3`) and owner (`$4`) when given, ordered by one of the table's
/// columns (a fixed name, never input), NULLs last ascending (first
/// descending, as PostgreSQL orders them by default), then the id;
/// `collate` makes PostgreSQL compare text bytewise, as SQLite does.
pub(crate) fn scan_crons_sql(scan: &CronScan<'_>, collate: &str) -> String {
    let direction = if scan.descending { "DESC" } else { "ASC" };
    let column = scan.order_by.column();
    let first = match scan.order_by {
        CronSort::CronId => String::new(),
        CronSort::AssistantId => format!("{column}{collate} {direction}, "),
        CronSort::ThreadId => {
            format!("({column} IS NULL) {direction}, {column}{collate} {direction}, ")
        }
        CronSort::NextRunDate | CronSort::EndTime => {
            format!("({column} IS NULL) {direction}, {column} {direction}, ")
        }
        CronSort::CreatedAt | CronSort::UpdatedAt => format!("{column} {direction}, "),
    };
    format!(
        concat!(
            "SELECT ",
            cron_columns!(),
            " FROM state_store_crons WHERE ($1 IS NULL OR assistant_id = $1) \
             AND ($2 IS NULL OR thread_id = $2) AND ($3 IS NULL OR enabled = $3) \
             AND ($4 IS NULL OR owner = $4) ORDER BY {}cron_id{} {}"
        ),
        first, collate, direction
    )
}

/// The enabled crons whose next run is at or before `$1`, soonest first
/// (then by id), at most `$2`: a range of the index.
pub(crate) fn due_crons_sql(collate: &str) -> String {
    format!(
        concat!(
            "SELECT ",
            cron_columns!(),
            " FROM state_store_crons WHERE next_run_at <= $1 AND enabled = 1 \
             ORDER BY next_run_at, cron_id{} LIMIT $2"
        ),
        collate
    )
}

/// A count as SQL binds it.
pub(crate) fn to_limit(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}

/// The columns of a cron, as read.
pub(crate) type CronTuple = (
    String,
    String,
    Option<String>,
    String,
    Option<String>,
    Option<i64>,
    String,
    String,
    i64,
    Option<String>,
    Option<i64>,
    i64,
    i64,
    Option<String>,
);

pub(crate) fn cron_row(t: CronTuple) -> CronRow {
    CronRow {
        cron_id: t.0,
        assistant_id: t.1,
        thread_id: t.2,
        schedule: t.3,
        timezone: t.4,
        end_time: t.5,
        payload: t.6,
        metadata: t.7,
        enabled: t.8,
        on_run_completed: t.9,
        next_run_at: t.10,
        created_at: t.11,
        updated_at: t.12,
        owner: t.13,
    }
}

/// The cron methods of a SQL backend (see `sql_backend!`); `collate` is
/// its.
macro_rules! sql_crons {
    ($name:ident, $db:ty, collate = $collate:expr) => {
        impl $name {
            /// Inserts the cron, unless one with its id exists. False: it
            /// existed.
            pub async fn insert_cron(
                &self,
                row: &$crate::backend::crons::CronRow,
            ) -> Result<bool, StoreError> {
                use $crate::backend::sql_crons::*;
                let _queued = self.queue().await;
                let context = || format!("creating cron \"{}\"", row.cron_id);
                let mut tx = self.write_tx().await.map_err(db_error(context()))?;
                let inserted = sqlx::query(INSERT_CRON)
                    .bind(&row.cron_id)
                    .bind(&row.assistant_id)
                    .bind(row.thread_id.as_deref())
                    .bind(&row.schedule)
                    .bind(row.timezone.as_deref())
                    .bind(row.end_time)
                    .bind(&row.payload)
                    .bind(&row.metadata)
                    .bind(row.enabled)
                    .bind(row.on_run_completed.as_deref())
                    .bind(row.next_run_at)
                    .bind(row.created_at)
                    .bind(row.updated_at)
                    .bind(row.owner.as_deref())
                    .execute(&mut *tx)
                    .await
                    .map_err(db_error(context()))?
                    .rows_affected();
                tx.commit().await.map_err(db_error(context()))?;
                Ok(inserted == 1)
            }

            pub async fn cron(
                &self,
                id: &str,
            ) -> Result<Option<$crate::backend::crons::CronRow>, StoreError> {
                use $crate::backend::sql_crons::*;
                // Read whole, as every read of the pool (see `get_run`).
                let row: Option<CronTuple> = sqlx::query_as(SELECT_CRON)
                    .bind(id)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_error(format!("reading cron \"{id}\"")))?
                    .pop();
                Ok(row.map(cron_row))
            }

            pub async fn update_cron(
                &self,
                id: &str,
                owner: Option<&str>,
                change: $crate::backend::crons::CronChange<'_>,
                now: i64,
            ) -> Result<Option<$crate::backend::crons::CronRow>, StoreError> {
                use $crate::backend::sql_crons::*;
                let _queued = self.queue().await;
                let context = || format!("updating cron \"{id}\"");
                let mut tx = self.write_tx().await.map_err(db_error(context()))?;
                sqlx::query(LOCK_CRON)
                    .bind(id)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_error(context()))?;
                let current: Option<CronTuple> = sqlx::query_as(SELECT_CRON)
                    .bind(id)
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(db_error(context()))?;
                let Some(current) = current.map(cron_row) else {
                    return Ok(None);
                };
                if owner.is_some() && current.owner.as_deref() != owner {
                    return Ok(None);
                }
                let mut row = change(&current);
                row.updated_at = now;
                sqlx::query(SET_CRON)
                    .bind(id)
                    .bind(&row.schedule)
                    .bind(row.timezone.as_deref())
                    .bind(row.end_time)
                    .bind(&row.payload)
                    .bind(&row.metadata)
                    .bind(row.enabled)
                    .bind(row.on_run_completed.as_deref())
                    .bind(row.next_run_at)
                    .bind(row.updated_at)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_error(context()))?;
                tx.commit().await.map_err(db_error(context()))?;
                Ok(Some(row))
            }

            pub async fn delete_cron(
                &self,
                id: &str,
                owner: Option<&str>,
            ) -> Result<bool, StoreError> {
                use $crate::backend::sql_crons::*;
                let _queued = self.queue().await;
                let context = || format!("deleting cron \"{id}\"");
                let mut tx = self.write_tx().await.map_err(db_error(context()))?;
                let deleted = sqlx::query(DELETE_CRON)
                    .bind(id)
                    .bind(owner)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_error(context()))?
                    .rows_affected();
                tx.commit().await.map_err(db_error(context()))?;
                Ok(deleted == 1)
            }

            pub async fn crons(
                &self,
                scan: $crate::backend::crons::CronScan<'_>,
            ) -> Result<Vec<$crate::backend::crons::CronRow>, StoreError> {
                use $crate::backend::sql_crons::*;
                let sql = scan_crons_sql(&scan, $collate);
                let rows: Vec<CronTuple> = sqlx::query_as(&sql)
                    .bind(scan.assistant_id)
                    .bind(scan.thread_id)
                    .bind(scan.enabled.map(i64::from))
                    .bind(scan.owner)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_error("searching crons".to_owned()))?;
                Ok(rows.into_iter().map(cron_row).collect())
            }

            pub async fn due_crons(
                &self,
                now: i64,
                limit: usize,
            ) -> Result<Vec<$crate::backend::crons::CronRow>, StoreError> {
                use $crate::backend::sql_crons::*;
                let rows: Vec<CronTuple> = sqlx::query_as(&due_crons_sql($collate))
                    .bind(now)
                    .bind(to_limit(limit))
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_error(format!("listing the crons due at {now}")))?;
                Ok(rows.into_iter().map(cron_row).collect())
            }

            pub async fn next_cron_due(&self) -> Result<Option<i64>, StoreError> {
                use $crate::backend::sql_crons::*;
                let (next,): (Option<i64>,) = sqlx::query_as(NEXT_CRON_DUE)
                    .fetch_one(&self.pool)
                    .await
                    .map_err(db_error("reading when the next cron is due".to_owned()))?;
                Ok(next)
            }

            pub async fn advance_cron(
                &self,
                id: &str,
                from: i64,
                to: Option<i64>,
                now: i64,
            ) -> Result<bool, StoreError> {
                use $crate::backend::sql_crons::*;
                let _queued = self.queue().await;
                let context = || format!("advancing cron \"{id}\" from {from}");
                let mut tx = self.write_tx().await.map_err(db_error(context()))?;
                let advanced = sqlx::query(ADVANCE_CRON)
                    .bind(id)
                    .bind(from)
                    .bind(to)
                    .bind(now)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_error(context()))?
                    .rows_affected();
                tx.commit().await.map_err(db_error(context()))?;
                Ok(advanced == 1)
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scan_orders_by_its_column_nulls_last_then_the_id() {
        let scan = |order_by, descending| CronScan {
            assistant_id: None,
            thread_id: None,
            enabled: None,
            owner: None,
            order_by,
            descending,
        };
        let pg = " COLLATE \"C\"";
        assert!(
            scan_crons_sql(&scan(CronSort::NextRunDate, false), "")
                .ends_with("ORDER BY (next_run_at IS NULL) ASC, next_run_at ASC, cron_id ASC")
        );
        assert!(
            scan_crons_sql(&scan(CronSort::ThreadId, true), pg).ends_with(
                "ORDER BY (thread_id IS NULL) DESC, thread_id COLLATE \"C\" DESC, \
                 cron_id COLLATE \"C\" DESC"
            )
        );
        assert!(
            scan_crons_sql(&scan(CronSort::CronId, true), "").ends_with("ORDER BY cron_id DESC")
        );
        assert!(
            due_crons_sql(pg).ends_with("ORDER BY next_run_at, cron_id COLLATE \"C\" LIMIT $2")
        );
    }
}
