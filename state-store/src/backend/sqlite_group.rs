//! Group commit for SQLite: the writes of many tasks (steps of many
//! threads, runs' transitions and events) committed together, one
//! transaction and one fsync for all that is ready, instead of one each.
//!
//! SQLite has one writer at a time and each commit waits for its fsync
//! (`synchronous = FULL`): with many threads running, the disk's flush
//! rate bounds the store. Here the process's writers take turns on the
//! one write connection as before, but each runs inside a savepoint of a
//! transaction left open for the next (the writer that begins the
//! transaction needs none: it has it to itself until it is done, and
//! rolls the whole of it back on a failure): the last writer in line (or one
//! whose group has grown old or large) commits for all, and every writer
//! of the group returns only once that commit is durable. A writer whose
//! statements fail rolls back to its savepoint, leaving the others'
//! writes as they were; a failed commit fails every writer of the group.
//! Nothing a writer was told is committed can be lost, and nothing is
//! visible to readers (the read pool's connections) before it is durable.

use sqlx::pool::PoolConnection;
use sqlx::{Sqlite, SqliteConnection, SqlitePool};
use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::{Mutex, OwnedMutexGuard, oneshot};

/// How old a group may grow before its next writer commits it, however
/// many wait: bounds a writer's wait under a steady stream of writers.
const MAX_AGE: Duration = Duration::from_millis(5);

/// How many writers may wait for one commit.
const MAX_WRITERS: usize = 256;

/// How long a writer waiting for its group's commit waits before looking
/// whether it must commit itself (the writers after it went away).
const RECHECK: Duration = Duration::from_millis(20);

/// A commit's outcome, as each writer of the group gets it.
type Outcome = Result<(), String>;

/// The write connection and its open group.
struct Shared {
    /// The write pool's one connection, held for good.
    conn: PoolConnection<Sqlite>,
    /// When the open transaction began (`None`: none is open). Set before
    /// its `BEGIN` runs: a `COMMIT` with none open fails harmlessly.
    opened: Option<Instant>,
    /// Whether a writer is writing (its statements not yet kept).
    writing: bool,
    /// Whether that writer is in a savepoint of its own (it joined an
    /// open group), or began the transaction and has it to itself (no
    /// savepoint: two statements, two round trips to the connection's
    /// thread, fewer a write; undone by rolling the whole transaction
    /// back, which holds only its statements).
    savepoint: bool,
    /// The writers of the open transaction waiting for its commit.
    waiters: Vec<oneshot::Sender<Outcome>>,
    /// Counts the commits (and rollbacks) of groups: a waiter tells by it
    /// whether its group ended.
    generation: u64,
}

/// The group committer of one SQLite store.
#[derive(Clone)]
pub(crate) struct Group {
    shared: Arc<Mutex<Shared>>,
    /// Writers holding or waiting for the connection.
    queued: Arc<AtomicUsize>,
}

impl std::fmt::Debug for Group {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Group")
            .field("queued", &self.queued.load(Ordering::Relaxed))
            .finish()
    }
}

/// Counts a writer in line, and out again when it leaves.
struct InLine(Arc<AtomicUsize>);

impl Drop for InLine {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The connection, held. Let go of any other way than
/// [`release`](Held::release) (a writer dropped, a future cancelled
/// between two statements), it is first settled, in a task of its own: a
/// writer's open savepoint rolled back, and the open transaction committed
/// when nobody is in line to do it (it holds the database's write lock,
/// and its waiters wait for it).
struct Held {
    guard: Option<OwnedMutexGuard<Shared>>,
    queued: Arc<AtomicUsize>,
    /// The holder's place in line, while it is a writer. Let go before
    /// the settling task looks who is in line: counted there, the holder
    /// would leave the group open for itself, holding the write lock until
    /// the next writer came.
    in_line: Option<InLine>,
}

impl Held {
    fn shared(&mut self) -> &mut Shared {
        match &mut self.guard {
            Some(guard) => guard,
            None => unreachable!("held until released or dropped"),
        }
    }

    /// Lets the connection go as it is (the group open for the writers in
    /// line, or ended).
    fn release(mut self) {
        drop(self.guard.take());
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        drop(self.in_line.take());
        let Some(mut shared) = self.guard.take() else {
            return;
        };
        let queued = self.queued.clone();
        // Without a runtime (the process is ending) the connection closes
        // with the pool, which rolls the transaction back; nobody waits.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if shared.writing {
                    shared.writing = false;
                    if shared.savepoint {
                        let _ = exec(&mut shared.conn, "ROLLBACK TO writer").await;
                        let _ = exec(&mut shared.conn, "RELEASE writer").await;
                    } else {
                        // The transaction is this writer's alone: undone
                        // whole (nobody waits on it).
                        let _ = end(&mut shared, Err("the writer went away".to_owned())).await;
                    }
                }
                if queued.load(Ordering::SeqCst) == 0 {
                    let _ = end(&mut shared, Ok(())).await;
                }
            });
        }
    }
}

impl Group {
    /// Takes the write pool's connection for good.
    pub(crate) async fn new(writes: &SqlitePool) -> Result<Group, sqlx::Error> {
        let conn = writes.acquire().await?;
        Ok(Group {
            shared: Arc::new(Mutex::new(Shared {
                conn,
                opened: None,
                writing: false,
                savepoint: false,
                waiters: Vec::new(),
                generation: 0,
            })),
            queued: Arc::new(AtomicUsize::new(0)),
        })
    }

    /// The connection, once this process's writers before have had it.
    async fn hold(&self) -> Held {
        Held {
            guard: Some(self.shared.clone().lock_owned().await),
            queued: self.queued.clone(),
            in_line: None,
        }
    }

    /// A writer's turn on the connection: inside the open transaction
    /// (begun now if none is), in a savepoint of its own. Done in a task of
    /// its own, so that a caller that goes away meanwhile leaves nothing
    /// half begun.
    pub(crate) async fn begin(&self) -> Result<Writer, sqlx::Error> {
        self.queued.fetch_add(1, Ordering::SeqCst);
        let in_line = InLine(self.queued.clone());
        let group = self.clone();
        let begun = tokio::spawn(async move {
            let mut held = group.hold().await;
            held.in_line = Some(in_line);
            let shared = held.shared();
            shared.writing = true;
            if shared.opened.is_none() {
                // A transaction of its own until others join: no
                // savepoint needed to undo only its statements.
                shared.opened = Some(Instant::now());
                shared.savepoint = false;
                exec(&mut shared.conn, "BEGIN IMMEDIATE").await?;
            } else {
                shared.savepoint = true;
                exec(&mut shared.conn, "SAVEPOINT writer").await?;
            }
            Ok::<_, sqlx::Error>(Writer { held, group })
        });
        begun
            .await
            .map_err(|error| sqlx::Error::Protocol(format!("beginning a write: {error}")))?
    }
}

/// One writer's savepoint in the open transaction: its statements run on
/// it (`&mut *writer` is the connection); [`commit`](Writer::commit)
/// returns once they are durable. Dropped without a commit (an error, a
/// cancelled write), its statements are rolled back, and only those.
pub(crate) struct Writer {
    held: Held,
    group: Group,
}

impl Deref for Writer {
    type Target = SqliteConnection;

    fn deref(&self) -> &SqliteConnection {
        match &self.held.guard {
            Some(shared) => &shared.conn,
            None => unreachable!("a writer holds the connection until it commits"),
        }
    }
}

impl DerefMut for Writer {
    fn deref_mut(&mut self) -> &mut SqliteConnection {
        &mut self.held.shared().conn
    }
}

impl Writer {
    /// Keeps this writer's statements, and returns once the group they
    /// joined is committed: at once when no writer is in line behind it,
    /// else when the last of them (or a later writer, for an old or large
    /// group) commits. Done in a task of its own: a caller that goes away
    /// meanwhile does not leave the group open (its writes may then land,
    /// as a commit cut short may).
    pub(crate) async fn commit(self) -> Result<(), sqlx::Error> {
        let committed = tokio::spawn(self.keep());
        match committed.await {
            Ok(outcome) => outcome.map_err(sqlx::Error::Protocol),
            Err(error) => Err(sqlx::Error::Protocol(format!(
                "committing a write: {error}"
            ))),
        }
    }

    async fn keep(self) -> Outcome {
        let Writer { mut held, group } = self;
        // A failure here drops `held`: the savepoint is rolled back.
        // (Left open instead, for the group's `COMMIT` to release, the
        // savepoints nest: measured no faster, BENCHMARKS.md section 16.)
        if held.shared().savepoint {
            exec(&mut held.shared().conn, "RELEASE writer")
                .await
                .map_err(|error| error.to_string())?;
        }
        held.shared().writing = false;
        drop(held.in_line.take());
        let shared = held.shared();
        let behind = group.queued.load(Ordering::SeqCst);
        let old = shared.opened.is_some_and(|at| at.elapsed() >= MAX_AGE);
        if behind == 0 || old || shared.waiters.len() >= MAX_WRITERS {
            let outcome = end(shared, Ok(())).await;
            held.release();
            return outcome;
        }
        let (told, mut outcome) = oneshot::channel();
        shared.waiters.push(told);
        let generation = shared.generation;
        held.release();
        loop {
            match tokio::time::timeout(RECHECK, &mut outcome).await {
                Ok(Ok(result)) => return result,
                Ok(Err(_)) => return Err("the group commit ended without an outcome".to_owned()),
                Err(_) => {
                    // The writers behind may have gone away: commit if the
                    // group is still open and nobody is in line.
                    let mut held = group.hold().await;
                    let shared = held.shared();
                    if shared.generation == generation && group.queued.load(Ordering::SeqCst) == 0 {
                        let _ = end(shared, Ok(())).await;
                    }
                    held.release();
                }
            }
        }
    }
}

/// Ends the open group, committing it (`Ok`) or rolling it back (`Err`,
/// with why), and tells its waiters; the outcome.
async fn end(shared: &mut Shared, wanted: Outcome) -> Outcome {
    let outcome = match (shared.opened.is_some(), wanted) {
        (false, wanted) => wanted,
        (true, Ok(())) => match exec(&mut shared.conn, "COMMIT").await {
            Ok(()) => Ok(()),
            Err(error) => {
                let _ = exec(&mut shared.conn, "ROLLBACK").await;
                Err(format!("committing a group of writes: {error}"))
            }
        },
        (true, Err(why)) => {
            let _ = exec(&mut shared.conn, "ROLLBACK").await;
            Err(why)
        }
    };
    shared.opened = None;
    shared.generation += 1;
    for waiter in shared.waiters.drain(..) {
        let _ = waiter.send(outcome.clone());
    }
    outcome
}

/// Runs one statement without parameters.
async fn exec(conn: &mut SqliteConnection, sql: &str) -> Result<(), sqlx::Error> {
    sqlx::Executor::execute(conn, sql).await.map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions};

    /// A database file with a table `t (n)`, its write pool of one
    /// connection and a read pool.
    async fn database(dir: &tempfile::TempDir) -> (SqlitePool, SqlitePool) {
        let options = SqliteConnectOptions::new()
            .filename(dir.path().join("group.db"))
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .busy_timeout(Duration::from_secs(10));
        let reads = SqlitePoolOptions::new()
            .max_connections(2)
            .connect_with(options.clone())
            .await
            .unwrap();
        sqlx::query("CREATE TABLE t (n INTEGER PRIMARY KEY)")
            .execute(&reads)
            .await
            .unwrap();
        let writes = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(options)
            .await
            .unwrap();
        (reads, writes)
    }

    async fn count(reads: &SqlitePool) -> i64 {
        sqlx::query_scalar("SELECT COUNT(*) FROM t")
            .fetch_one(reads)
            .await
            .unwrap()
    }

    async fn insert(group: &Group, n: i64) -> Result<(), sqlx::Error> {
        let mut writer = group.begin().await?;
        sqlx::query("INSERT INTO t (n) VALUES ($1)")
            .bind(n)
            .execute(&mut *writer)
            .await?;
        writer.commit().await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_writers_share_commits_and_each_is_durable_when_told() {
        let dir = tempfile::tempdir().unwrap();
        let (reads, writes) = database(&dir).await;
        let group = Group::new(&writes).await.unwrap();
        let tasks: Vec<_> = (0..64)
            .map(|n| {
                let (group, reads) = (group.clone(), reads.clone());
                tokio::spawn(async move {
                    insert(&group, n).await.unwrap();
                    // Told it is committed: another connection sees it.
                    let seen: Option<i64> = sqlx::query_scalar("SELECT n FROM t WHERE n = $1")
                        .bind(n)
                        .fetch_optional(&reads)
                        .await
                        .unwrap();
                    assert_eq!(seen, Some(n));
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        assert_eq!(count(&reads).await, 64);
        let commits = group.shared.lock().await.generation;
        assert!(
            commits < 64,
            "64 concurrent writers made {commits} commits: none shared"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failed_writer_undoes_only_its_own_writes() {
        let dir = tempfile::tempdir().unwrap();
        let (reads, writes) = database(&dir).await;
        let group = Group::new(&writes).await.unwrap();
        // A writer in line behind keeps the group open while the first
        // fails.
        let mut first = group.begin().await.unwrap();
        sqlx::query("INSERT INTO t (n) VALUES (1)")
            .execute(&mut *first)
            .await
            .unwrap();
        let behind = {
            let group = group.clone();
            tokio::spawn(async move { insert(&group, 2).await })
        };
        // The same key again: the statement fails; the writer is dropped.
        let refused = sqlx::query("INSERT INTO t (n) VALUES (1)")
            .execute(&mut *first)
            .await;
        assert!(refused.is_err());
        drop(first);
        behind.await.unwrap().unwrap();
        let rows: Vec<i64> = sqlx::query_scalar("SELECT n FROM t ORDER BY n")
            .fetch_all(&reads)
            .await
            .unwrap();
        assert_eq!(rows, [2], "the failed writer's first row is gone too");
        // And the group goes on.
        insert(&group, 3).await.unwrap();
        assert_eq!(count(&reads).await, 2);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_joined_writer_that_fails_undoes_only_its_own_writes() {
        let dir = tempfile::tempdir().unwrap();
        let (reads, writes) = database(&dir).await;
        let group = Group::new(&writes).await.unwrap();
        // The first writer has the transaction; two join it in turn,
        // each in a savepoint of its own.
        let mut first = group.begin().await.unwrap();
        sqlx::query("INSERT INTO t (n) VALUES (1)")
            .execute(&mut *first)
            .await
            .unwrap();
        let second = tokio::spawn({
            let group = group.clone();
            async move { group.begin().await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        let third = tokio::spawn({
            let group = group.clone();
            async move { group.begin().await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        let first_kept = tokio::spawn(first.commit());
        let mut second = second.await.unwrap().unwrap();
        sqlx::query("INSERT INTO t (n) VALUES (2)")
            .execute(&mut *second)
            .await
            .unwrap();
        let second_kept = tokio::spawn(second.commit());
        let mut third = third.await.unwrap().unwrap();
        sqlx::query("INSERT INTO t (n) VALUES (3)")
            .execute(&mut *third)
            .await
            .unwrap();
        let refused = sqlx::query("INSERT INTO t (n) VALUES (2)")
            .execute(&mut *third)
            .await;
        assert!(refused.is_err());
        drop(third);
        first_kept.await.unwrap().unwrap();
        second_kept.await.unwrap().unwrap();
        let rows: Vec<i64> = sqlx::query_scalar("SELECT n FROM t ORDER BY n")
            .fetch_all(&reads)
            .await
            .unwrap();
        assert_eq!(
            rows,
            [1, 2],
            "the third writer's rows are gone, the others' kept"
        );
        insert(&group, 4).await.unwrap();
        assert_eq!(count(&reads).await, 3);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_writer_that_goes_away_leaves_no_one_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let (reads, writes) = database(&dir).await;
        let group = Group::new(&writes).await.unwrap();
        let holder = group.begin().await.unwrap();
        // Two writers queue behind; one is cancelled while it waits.
        let waiting = {
            let group = group.clone();
            tokio::spawn(async move { insert(&group, 7).await })
        };
        let cancelled = {
            let group = group.clone();
            tokio::spawn(async move { insert(&group, 8).await })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        cancelled.abort();
        holder.commit().await.unwrap();
        tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("the writer behind ends")
            .unwrap()
            .unwrap();
        assert!(count(&reads).await >= 1);
        // Nothing is left open: another connection can write.
        tokio::time::timeout(
            Duration::from_secs(5),
            sqlx::query("INSERT INTO t (n) VALUES (100)").execute(&reads),
        )
        .await
        .expect("the write lock is free")
        .unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_write_cancelled_anywhere_leaves_the_database_free() {
        let dir = tempfile::tempdir().unwrap();
        let (reads, writes) = database(&dir).await;
        let group = Group::new(&writes).await.unwrap();
        let mut cancelled = 0;
        for i in 0..80i64 {
            // From cancelled before it begins to after it commits.
            let cut = Duration::from_micros(15 * i as u64);
            if tokio::time::timeout(cut, insert(&group, i)).await.is_err() {
                cancelled += 1;
            }
            // Another connection writes at once: no transaction was left
            // open holding the write lock.
            tokio::time::timeout(
                Duration::from_secs(5),
                sqlx::query("INSERT INTO t (n) VALUES ($1)")
                    .bind(10_000 + i)
                    .execute(&reads),
            )
            .await
            .unwrap_or_else(|_| panic!("write {i}: the database stayed locked"))
            .unwrap();
        }
        assert!(cancelled > 0, "some writes were cancelled");
        // And the group still writes.
        insert(&group, 99_999).await.unwrap();
    }
}
