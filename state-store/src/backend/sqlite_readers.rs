//! A SQLite store's reads made for every run and step (a thread's head
//! and tail, a run, a thread's record, what is due), on connections of
//! its own, run on the calling thread.
//!
//! Through sqlx each statement is a round trip to its connection's
//! thread, and its pool pings every connection it takes back (one more):
//! a run's dozen reads were two dozen round trips between threads. These
//! reads are small (a few rows by primary key; a thread's tail is bounded
//! by the snapshot policy) and SQLite answers them from its page cache in
//! microseconds, so they run where they are asked, as a lock would: no
//! hand-off at all. Scans (listings, history, search) stay on sqlx's pool.
//!
//! In WAL mode a reader never waits for the writer, nor the writer for
//! it. A connection holds no snapshot between reads (a statement is reset
//! once read whole), so each read sees every commit made before it began;
//! a read of one statement needs no transaction of its own, a read of
//! several takes one ([`Readers::read_together`]).

use rusqlite::{Connection, OpenFlags};
use std::sync::Mutex;
use std::time::Duration;

/// How many idle connections are kept (more are opened when more reads
/// run at once, and closed after).
const MAX_IDLE: usize = 8;

/// The read connections of one database file.
#[derive(Debug)]
pub(crate) struct Readers {
    file: String,
    busy_timeout: Duration,
    idle: Mutex<Vec<Connection>>,
}

impl Readers {
    /// Readers of `file`, which wait up to `busy_timeout` where SQLite
    /// makes a reader wait (a WAL file being recovered). Connections are
    /// opened when first needed.
    pub(crate) fn new(file: &str, busy_timeout: Duration) -> Readers {
        Readers {
            file: file.to_owned(),
            busy_timeout,
            idle: Mutex::new(Vec::new()),
        }
    }

    /// Runs `read` on an idle connection (opened if none is). Each of its
    /// statements reads one snapshot of the database (its own implicit
    /// transaction): enough for a read of one statement.
    pub(crate) fn read<T>(
        &self,
        read: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> rusqlite::Result<T> {
        let conn = match self.lock().pop() {
            Some(conn) => conn,
            None => self.open()?,
        };
        let answer = read(&conn);
        // A connection left inside a transaction (one that could not be
        // ended) is closed, not kept.
        if conn.is_autocommit() {
            let mut idle = self.lock();
            if idle.len() < MAX_IDLE {
                idle.push(conn);
            }
        }
        answer
    }

    /// [`read`](Readers::read) inside one read transaction: all of
    /// `read`'s statements see one snapshot of the database.
    pub(crate) fn read_together<T>(
        &self,
        read: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> rusqlite::Result<T> {
        self.read(|conn| {
            conn.prepare_cached("BEGIN")?.raw_execute()?;
            let answer = read(conn);
            // Ends the snapshot whatever the read did (a `ROLLBACK` of a
            // read-only transaction changes nothing).
            let _ = conn
                .prepare_cached("ROLLBACK")
                .and_then(|mut end| end.raw_execute());
            answer
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Connection>> {
        // A read that panicked never held this lock: nothing is half done.
        self.idle
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn open(&self) -> rusqlite::Result<Connection> {
        let conn = Connection::open_with_flags(
            &self.file,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX
                | OpenFlags::SQLITE_OPEN_URI,
        )?;
        conn.busy_timeout(self.busy_timeout)?;
        // Reads only: a statement that would write fails instead.
        conn.pragma_update(None, "query_only", true)?;
        conn.set_prepared_statement_cache_capacity(32);
        Ok(conn)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_sees_one_snapshot_and_every_commit_before_it() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("readers.db").display().to_string();
        let writer = Connection::open(&file).unwrap();
        writer
            .execute_batch("PRAGMA journal_mode = WAL; CREATE TABLE t (n INTEGER)")
            .unwrap();
        let readers = Readers::new(&file, Duration::from_secs(1));
        let count = |conn: &Connection| -> rusqlite::Result<i64> {
            conn.query_row("SELECT COUNT(*) FROM t", [], |row| row.get(0))
        };
        let (before, after) = readers
            .read_together(|conn| {
                let before = count(conn)?;
                // A commit made during the read is not in its snapshot.
                writer.execute("INSERT INTO t VALUES (1)", []).unwrap();
                Ok((before, count(conn)?))
            })
            .unwrap();
        assert_eq!((before, after), (0, 0));
        // The next read, on the same connection, sees it.
        assert_eq!(readers.read(count).unwrap(), 1);
        assert_eq!(readers.lock().len(), 1, "one connection, kept");
        // A read cannot write.
        let refused = readers.read(|conn| conn.execute("INSERT INTO t VALUES (2)", []));
        assert!(refused.is_err());
        assert_eq!(readers.read(count).unwrap(), 1);
    }
}
