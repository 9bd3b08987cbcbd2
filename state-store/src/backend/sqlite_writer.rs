//! A SQLite store's writes on a thread of their own, with a connection of
//! its own, committed in groups.
//!
//! sqlx runs every statement on its connection's thread: each is a round
//! trip between threads (a tokio task wakes that thread, which wakes the
//! task again), and a run made ~46 of them in its writes; the switches
//! were a third of the server's CPU (BENCHMARKS.md, section 16). Here a
//! write is one closure that runs all its statements on the writer's
//! thread (rusqlite, statements prepared once and cached): one round trip
//! a write.
//!
//! Group commit comes with it: the thread takes every write queued, runs
//! them in one transaction, and commits them together, one fsync for
//! all; each writer hears back only once that commit is durable. A write
//! refuses (or fails) only before it changes a row: a step whose thread
//! moved on, a run whose lease is lost, nothing to claim. Refused, it
//! leaves the others' writes as they are; should one fail after changing
//! rows all the same (an I/O error), its whole group fails, as a failed
//! commit fails every writer of the group. So no write needs a savepoint
//! of its own (their statements and page copies were ~13% of a run's
//! CPU, BENCHMARKS.md section 16). Nothing is visible to readers before
//! it is durable.
//!
//! The store's other writes (rare ones: a fork, a compaction, items,
//! assistants) still run through sqlx on the write pool's connection: they
//! take a [`Turn`] first, which stops this thread between two groups until
//! they are done, so the two connections never wait on SQLite's lock for
//! each other.

use crate::error::StoreError;
use rusqlite::{Connection, Statement, ToSql};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, mpsc};
use tokio::sync::oneshot;

/// How many writes one commit holds at most.
const MAX_GROUP: usize = 256;

/// WAL pages between the writer's automatic checkpoints (SQLite's default
/// is 1,000). A checkpoint copies each page once, however often it was
/// written since: under a steady load of small commits, which rewrite the
/// same pages, fewer checkpoints copy far fewer pages (~10% less CPU a
/// run, BENCHMARKS.md section 16). The WAL file grows to ~40 MiB with
/// 4 KiB pages.
const CHECKPOINT_PAGES: i64 = 10_000;

/// What a write's closure asks of its statements.
pub(crate) enum Written<T> {
    /// Kept: committed with the group.
    Keep(T),
    /// Undone: nothing of it committed; `T` is still the answer (a
    /// conflict found, say). Only before the write changed a row (see
    /// [`Writer::write`]).
    Undo(T),
}

/// The writer of one SQLite database file (cheap to clone: a queue's
/// sender). Its thread ends, closing its connection, with the last clone.
#[derive(Clone)]
pub(crate) struct Writer {
    jobs: mpsc::Sender<Job>,
    /// Groups committed so far.
    commits: Arc<AtomicU64>,
}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer")
            .field("commits", &self.commits.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// The pragmas a write connection copies from the store's pool: the
/// durability of a commit is the pool's.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pragmas {
    /// `PRAGMA synchronous` (0 off, 1 normal, 2 full, 3 extra).
    pub synchronous: i64,
    /// `PRAGMA busy_timeout`.
    pub busy_timeout: std::time::Duration,
    /// `PRAGMA foreign_keys`.
    pub foreign_keys: bool,
}

enum Job {
    Write(Box<dyn Work>),
    /// A turn for a write through sqlx: granted between two groups.
    Turn(oneshot::Sender<Turn>),
}

/// A write queued: its statements, then its answer once its group ended.
trait Work: Send {
    /// Runs the write's statements; whether to keep them.
    fn run(&mut self, conn: &Connection) -> bool;
    /// Tells the writer how its group ended.
    fn tell(self: Box<Self>, committed: Result<(), String>);
}

/// A write's answer, or the panic its closure raised (raised again in
/// the caller's task, as `spawn_blocking`'s are).
type Answer<T> = std::thread::Result<Result<T, StoreError>>;

struct Task<T, F> {
    work: Option<F>,
    /// What the statements answered, and whether they are kept.
    done: Option<(Answer<T>, bool)>,
    /// Where the answer goes: once the group ended, or, for an early
    /// write, as soon as its statements are kept (then taken).
    reply: Option<oneshot::Sender<Answer<T>>>,
    /// An early write's commit, told when its group ends.
    early: Option<Early>,
}

/// What an early write ([`Writer::write_early`]) hears of its commit.
struct Early {
    committed: oneshot::Sender<Result<(), StoreError>>,
    /// Run on the writer's thread once the commit is durable (a watcher's
    /// wake-up).
    on_commit: Box<dyn FnOnce() + Send>,
}

impl<T, F> Work for Task<T, F>
where
    T: Send,
    F: FnOnce(&Connection) -> Result<Written<T>, StoreError> + Send,
{
    fn run(&mut self, conn: &Connection) -> bool {
        let Some(work) = self.work.take() else {
            return false;
        };
        // A panic in a write (a user's closure, for a claim's events)
        // undoes it and goes back to its caller; the thread goes on.
        let done = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(conn))) {
            Ok(Ok(Written::Keep(answer))) => (Ok(Ok(answer)), true),
            Ok(Ok(Written::Undo(answer))) => (Ok(Ok(answer)), false),
            Ok(Err(error)) => (Ok(Err(error)), false),
            Err(panic) => (Err(panic), false),
        };
        let keep = done.1;
        match (keep && self.early.is_some(), self.reply.take()) {
            // Kept, an early write hears its answer now, its commit later.
            (true, Some(reply)) => {
                let _ = reply.send(done.0);
            }
            (_, reply) => {
                self.reply = reply;
                self.done = Some(done);
            }
        }
        keep
    }

    fn tell(self: Box<Self>, committed: Result<(), String>) {
        let Task {
            done, reply, early, ..
        } = *self;
        let failed = |why: String| StoreError::backend("committing a group of writes", why);
        // An early write kept was answered already; one undone is answered
        // here, and has nothing committed to announce.
        let answered = reply.is_none();
        if let Some(reply) = reply {
            let answer = match (done, &committed) {
                (Some((answer, false)), _) => answer,
                (Some((answer, true)), Ok(())) => answer,
                (Some((_, true)), Err(why)) => Ok(Err(failed(why.clone()))),
                (None, Err(why)) => Ok(Err(StoreError::backend(
                    "writing a group of writes",
                    why.clone(),
                ))),
                // Not reached: a write that did not run fails its group.
                (None, Ok(())) => Ok(Err(StoreError::backend("writing", "the write did not run"))),
            };
            let _ = reply.send(answer);
        }
        if let Some(early) = early {
            if answered && committed.is_ok() {
                (early.on_commit)();
            }
            let _ = early.committed.send(committed.map_err(failed));
        }
    }
}

/// An early write's commit ([`Writer::write_early`]): durable, or why not.
#[derive(Debug)]
pub(crate) struct Committing(oneshot::Receiver<Result<(), StoreError>>);

impl Committing {
    /// Waits until the write's group is durably committed.
    pub(crate) async fn durable(self) -> Result<(), StoreError> {
        match self.0.await {
            Ok(committed) => committed,
            Err(_) => Err(gone("a write's commit went unanswered")),
        }
    }

    /// The commit's outcome, if its group ended already.
    pub(crate) fn ended(&mut self) -> Option<Result<(), StoreError>> {
        match self.0.try_recv() {
            Ok(committed) => Some(committed),
            Err(oneshot::error::TryRecvError::Empty) => None,
            Err(oneshot::error::TryRecvError::Closed) => {
                Some(Err(gone("a write's commit went unanswered")))
            }
        }
    }
}

fn gone(what: &str) -> StoreError {
    StoreError::backend(
        "writing to SQLite",
        format!("the writer thread stopped: {what}"),
    )
}

/// A turn on the database for a write through sqlx: the writer's thread
/// waits until this is dropped.
pub(crate) struct Turn {
    /// Dropped, it tells the thread (its `recv` ends).
    _back: mpsc::Sender<()>,
}

impl Writer {
    /// Opens a connection of its own to `file` with `pragmas`, and starts
    /// its thread.
    pub(crate) fn open(file: &str, pragmas: Pragmas) -> Result<Writer, StoreError> {
        let context = || format!("opening SQLite database {file} for writing");
        let connect = || -> rusqlite::Result<Connection> {
            let conn = Connection::open(file)?;
            conn.pragma_update(None, "synchronous", pragmas.synchronous)?;
            conn.pragma_update(None, "foreign_keys", pragmas.foreign_keys)?;
            conn.busy_timeout(pragmas.busy_timeout)?;
            // The begins and commits of every group, and the hot writes'
            // statements, stay prepared.
            conn.set_prepared_statement_cache_capacity(64);
            conn.pragma_update(None, "wal_autocheckpoint", CHECKPOINT_PAGES)?;
            Ok(conn)
        };
        let conn = connect().map_err(|error| StoreError::backend(context(), error))?;
        let (jobs, queue) = mpsc::channel();
        let commits = Arc::new(AtomicU64::new(0));
        let counted = commits.clone();
        std::thread::Builder::new()
            .name("state-store-sqlite-writer".to_owned())
            .spawn(move || serve(conn, queue, &counted))
            .map_err(|error| StoreError::backend(context(), error))?;
        Ok(Writer { jobs, commits })
    }

    /// Runs `work` on the writer's thread, in the open group, and returns
    /// its answer once the group is durably committed (or once it ended,
    /// for a write undone). `work` must refuse ([`Written::Undo`], or an
    /// error) only before it changes a row: undone or failed after, it
    /// fails its whole group (nothing of it is committed), unless it is
    /// the group's first. A caller that goes away does not stop the
    /// write: it may land, as a commit cut short may.
    pub(crate) async fn write<T, F>(&self, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<Written<T>, StoreError> + Send + 'static,
    {
        self.queue(work, None).await
    }

    /// [`write`](Writer::write), answered as soon as its statements are
    /// kept in the open group, before the group commits: the caller goes
    /// on while the commit is made (LangGraph's `durability="async"`) and
    /// learns of it from the [`Committing`]; `on_commit` runs once it is
    /// durable. Groups commit in the order their writes were queued, and a
    /// failed commit undoes its whole group: a later write that depends on
    /// this one (a step after a step: the thread's head) then finds it
    /// missing and is refused. A write undone (or failed) is answered once
    /// its group ended, as by `write`.
    pub(crate) async fn write_early<T, F>(
        &self,
        work: F,
        on_commit: Box<dyn FnOnce() + Send>,
    ) -> Result<(T, Committing), StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<Written<T>, StoreError> + Send + 'static,
    {
        let (committed, committing) = oneshot::channel();
        let early = Early {
            committed,
            on_commit,
        };
        let answer = self.queue(work, Some(early)).await?;
        Ok((answer, Committing(committing)))
    }

    /// Queues `work` and waits for its answer.
    async fn queue<T, F>(&self, work: F, early: Option<Early>) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<Written<T>, StoreError> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let task = Task {
            work: Some(work),
            done: None,
            reply: Some(reply),
            early,
        };
        self.jobs
            .send(Job::Write(Box::new(task)))
            .map_err(|_| gone("a write was queued after it"))?;
        match answer.await {
            Ok(Ok(answer)) => answer,
            Ok(Err(panic)) => std::panic::resume_unwind(panic),
            Err(_) => Err(gone("a write was dropped unanswered")),
        }
    }

    /// A turn for a write through sqlx, once the writes queued before it
    /// are committed.
    pub(crate) async fn turn(&self) -> Result<Turn, sqlx::Error> {
        let (granted, turn) = oneshot::channel();
        self.jobs
            .send(Job::Turn(granted))
            .map_err(|_| sqlx::Error::WorkerCrashed)?;
        turn.await.map_err(|_| sqlx::Error::WorkerCrashed)
    }
}

/// The writer's thread: groups of writes until every sender is gone.
fn serve(conn: Connection, queue: mpsc::Receiver<Job>, commits: &AtomicU64) {
    while let Ok(first) = queue.recv() {
        let mut next = Some(first);
        let mut group: Vec<Box<dyn Work>> = Vec::new();
        // Whether the group's transaction began, and why it cannot commit
        // (then it is rolled back whole, and its writers told why).
        let mut began = false;
        // Whether a write of the open transaction is kept (the next one
        // cannot be undone alone: see `after_others`).
        let mut kept = false;
        let mut failed: Option<String> = None;
        let mut turn = None;
        while let Some(job) = next.take() {
            match job {
                Job::Turn(granted) => {
                    turn = Some(granted);
                    break;
                }
                Job::Write(mut work) => {
                    if failed.is_none() && !began {
                        match run(&conn, "BEGIN IMMEDIATE") {
                            Ok(()) => began = true,
                            Err(why) => failed = Some(why),
                        }
                    }
                    if failed.is_none() {
                        let done = match kept {
                            // The transaction holds this write alone:
                            // undone (even half way), it ends.
                            false => match work.run(&conn) {
                                true => Ok(true),
                                false => run(&conn, "ROLLBACK").map(|()| {
                                    began = false;
                                    false
                                }),
                            },
                            true => after_others(&conn, work.as_mut()),
                        };
                        match done {
                            Ok(kept_any) => kept = kept || kept_any,
                            Err(why) => failed = Some(why),
                        }
                    }
                    group.push(work);
                }
            }
            if group.len() < MAX_GROUP {
                next = queue.try_recv().ok();
            }
        }
        let committed = match (began, failed) {
            (true, None) => match run(&conn, "COMMIT") {
                Ok(()) => {
                    commits.fetch_add(1, Ordering::Relaxed);
                    Ok(())
                }
                Err(why) => {
                    let _ = conn.execute_batch("ROLLBACK");
                    Err(why)
                }
            },
            (false, None) => Ok(()),
            (began, Some(why)) => {
                if began {
                    let _ = conn.execute_batch("ROLLBACK");
                }
                Err(why)
            }
        };
        for work in group {
            work.tell(committed.clone());
        }
        if let Some(granted) = turn {
            let (back, returned) = mpsc::channel();
            if granted.send(Turn { _back: back }).is_ok() {
                // Until the turn is dropped (its sender with it).
                let _ = returned.recv();
            }
        }
    }
}

/// Runs `work` after the group's earlier writes, which it cannot undo
/// alone: kept, or undone having changed nothing, the group goes on.
/// Undone (or failed, or panicked) after changing rows, or ended by SQLite
/// rolling the transaction back (an I/O error, say), it fails the whole
/// group: its rows cannot be undone alone, and nothing half written is
/// committed. (`total_changes` counts the rows of the statements that
/// completed; one that failed was undone by SQLite itself.)
fn after_others(conn: &Connection, work: &mut dyn Work) -> Result<bool, String> {
    let before = conn.total_changes();
    let keep = work.run(conn);
    if conn.is_autocommit() {
        return Err("SQLite rolled the group's transaction back during a write".to_owned());
    }
    if !keep && conn.total_changes() != before {
        return Err("a write failed after changing rows, which cannot be undone alone".to_owned());
    }
    Ok(keep)
}

/// Runs one statement without parameters or rows, prepared once.
fn run(conn: &Connection, sql: &str) -> Result<(), String> {
    conn.prepare_cached(sql)
        .and_then(|mut statement| statement.raw_execute())
        .map(|_| ())
        .map_err(|error| format!("{sql}: {error}"))
}

/// Binds `values` to the parameters `$1`, `$2`, ... of `statement`, as
/// sqlx does: SQLite numbers `$N` parameters in the order they first
/// appear, not by `N`, so they are bound by name. A `$N` the statement
/// does not use is skipped.
pub(crate) fn bind(statement: &mut Statement<'_>, values: &[&dyn ToSql]) -> rusqlite::Result<()> {
    const NAMES: [&str; 16] = [
        "$1", "$2", "$3", "$4", "$5", "$6", "$7", "$8", "$9", "$10", "$11", "$12", "$13", "$14",
        "$15", "$16",
    ];
    for (n, value) in values.iter().enumerate() {
        let index = match NAMES.get(n) {
            Some(name) => statement.parameter_index(name)?,
            None => statement.parameter_index(&format!("${}", n + 1))?,
        };
        if let Some(index) = index {
            statement.raw_bind_parameter(index, value)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const FULL: Pragmas = Pragmas {
        synchronous: 2,
        busy_timeout: Duration::from_secs(10),
        foreign_keys: true,
    };

    /// A database file with a table `t (n)`, its writer, and another
    /// connection's view of it.
    fn database(dir: &tempfile::TempDir) -> (Writer, String) {
        let file = dir.path().join("writer.db").display().to_string();
        let conn = Connection::open(&file).unwrap();
        conn.execute_batch("PRAGMA journal_mode = WAL; CREATE TABLE t (n INTEGER PRIMARY KEY)")
            .unwrap();
        (Writer::open(&file, FULL).unwrap(), file)
    }

    fn rows(file: &str) -> Vec<i64> {
        let conn = Connection::open(file).unwrap();
        let mut statement = conn.prepare("SELECT n FROM t ORDER BY n").unwrap();
        statement
            .query_map([], |row| row.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    fn insert(conn: &Connection, n: i64) -> Result<(), StoreError> {
        conn.execute("INSERT INTO t (n) VALUES (?1)", [n])
            .map(|_| ())
            .map_err(|error| StoreError::backend(format!("inserting {n}"), error))
    }

    /// A write, on a task of its own, that inserts `n`, then panics (a
    /// user's closure that panicked after changing a row).
    fn spawn_panicking_write(
        writer: &Writer,
        n: i64,
    ) -> tokio::task::JoinHandle<Result<(), StoreError>> {
        let writer = writer.clone();
        tokio::spawn(async move {
            writer
                .write(move |conn| {
                    insert(conn, n)?;
                    panic!("a closure panicked after inserting {n}");
                    #[allow(unreachable_code)]
                    Ok(Written::Keep(()))
                })
                .await
        })
    }

    async fn write(writer: &Writer, n: i64) -> Result<(), StoreError> {
        writer
            .write(move |conn| insert(conn, n).map(Written::Keep))
            .await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_writers_share_commits_and_each_is_durable_when_told() {
        let dir = tempfile::tempdir().unwrap();
        let (writer, file) = database(&dir);
        let tasks: Vec<_> = (0..64)
            .map(|n| {
                let (writer, file) = (writer.clone(), file.clone());
                tokio::spawn(async move {
                    write(&writer, n).await.unwrap();
                    // Told it is committed: another connection sees it.
                    assert!(rows(&file).contains(&n));
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        assert_eq!(rows(&file).len(), 64);
        let commits = writer.commits.load(Ordering::Relaxed);
        assert!(
            commits < 64,
            "64 concurrent writers made {commits} commits: none shared"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_write_refused_before_changing_a_row_leaves_the_group_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let (writer, file) = database(&dir);
        // Queued in this order behind a turn: one group.
        let turn = writer.turn().await.unwrap();
        let mut kept = Box::pin(write(&writer, 1));
        // Refused before it changed a row: nothing to undo.
        let mut refused = Box::pin(writer.write(|conn| {
            let found: i64 = conn
                .query_row("SELECT COUNT(*) FROM t WHERE n = 1", [], |r| r.get(0))
                .map_err(|error| StoreError::backend("counting", error))?;
            Ok(Written::Undo(found))
        }));
        // Its one statement failed: SQLite undid it.
        let mut failed = Box::pin(writer.write(|conn| insert(conn, 1).map(Written::Keep)));
        let mut last = Box::pin(writer.write(|conn| insert(conn, 2).map(Written::Keep)));
        assert!(futures::poll!(&mut kept).is_pending());
        assert!(futures::poll!(&mut refused).is_pending());
        assert!(futures::poll!(&mut failed).is_pending());
        assert!(futures::poll!(&mut last).is_pending());
        drop(turn);
        kept.await.unwrap();
        assert_eq!(
            refused.await.unwrap(),
            1,
            "it saw the group's earlier write"
        );
        let error = failed.await.unwrap_err();
        assert!(error.to_string().contains("inserting 1"), "{error}");
        last.await.unwrap();
        assert_eq!(rows(&file), [1, 2]);
        assert_eq!(writer.commits.load(Ordering::Relaxed), 1, "one group");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_write_that_fails_after_changing_rows_fails_its_group() {
        let dir = tempfile::tempdir().unwrap();
        let (writer, file) = database(&dir);
        write(&writer, 0).await.unwrap();
        // Queued in this order behind a turn: one group.
        let turn = writer.turn().await.unwrap();
        let mut kept = Box::pin(write(&writer, 1));
        // Broke its promise: a row changed, then undone.
        let mut undone =
            Box::pin(writer.write(|conn| insert(conn, 2).map(|()| Written::Undo("undone"))));
        let mut later = Box::pin(write(&writer, 3));
        assert!(futures::poll!(&mut kept).is_pending());
        assert!(futures::poll!(&mut undone).is_pending());
        assert!(futures::poll!(&mut later).is_pending());
        drop(turn);
        // The group is rolled back whole: the write kept before it fails,
        // the one after it does not run; it hears its own answer.
        assert!(kept.await.is_err());
        assert_eq!(undone.await.unwrap(), "undone");
        assert!(later.await.is_err());
        assert_eq!(rows(&file), [0], "nothing of the group committed");

        // A panic after a row: the same.
        let turn = writer.turn().await.unwrap();
        let mut kept = Box::pin(write(&writer, 4));
        assert!(futures::poll!(&mut kept).is_pending());
        let mut panicked = spawn_panicking_write(&writer, 5);
        // The spawned write queued (second) before the turn ends.
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(futures::poll!(&mut panicked).is_pending());
        drop(turn);
        assert!(kept.await.is_err());
        assert!(panicked.await.unwrap_err().is_panic());
        assert_eq!(rows(&file), [0]);
        // The writer goes on.
        write(&writer, 6).await.unwrap();
        assert_eq!(rows(&file), [0, 6]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_first_writer_that_fails_alone_leaves_the_group_to_the_next() {
        let dir = tempfile::tempdir().unwrap();
        let (writer, file) = database(&dir);
        // Queued in this order behind a turn: one group.
        let turn = writer.turn().await.unwrap();
        let mut failing = Box::pin(writer.write(|conn| {
            insert(conn, 1)?;
            insert(conn, 1)?;
            Ok(Written::Keep(()))
        }));
        let mut undone = Box::pin(writer.write(|conn| insert(conn, 2).map(Written::Undo)));
        let mut kept = Box::pin(write(&writer, 3));
        assert!(futures::poll!(&mut failing).is_pending());
        assert!(futures::poll!(&mut undone).is_pending());
        assert!(futures::poll!(&mut kept).is_pending());
        drop(turn);
        assert!(failing.await.is_err());
        undone.await.unwrap();
        kept.await.unwrap();
        assert_eq!(rows(&file), [3]);
        assert_eq!(writer.commits.load(Ordering::Relaxed), 1);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_panicking_write_panics_in_its_caller_and_the_writer_goes_on() {
        let dir = tempfile::tempdir().unwrap();
        let (writer, file) = database(&dir);
        // The group's first: undone alone (a panic after others: see
        // `a_write_that_fails_after_changing_rows_fails_its_group`).
        let turn = writer.turn().await.unwrap();
        let panicked = spawn_panicking_write(&writer, 1);
        // The spawned write queued first.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let mut kept = Box::pin(write(&writer, 2));
        assert!(futures::poll!(&mut kept).is_pending());
        drop(turn);
        let panic = panicked.await.unwrap_err();
        assert!(panic.is_panic());
        kept.await.unwrap();
        write(&writer, 3).await.unwrap();
        assert_eq!(rows(&file), [2, 3]);
        assert_eq!(writer.commits.load(Ordering::Relaxed), 2);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_turn_stops_the_writer_until_it_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let (writer, file) = database(&dir);
        let turn = writer.turn().await.unwrap();
        let waiting = {
            let writer = writer.clone();
            tokio::spawn(async move { write(&writer, 1).await })
        };
        // Another connection writes in the turn, without waiting on the
        // lock (a busy timeout of zero: it would fail at once).
        let other = Connection::open(&file).unwrap();
        other.busy_timeout(Duration::ZERO).unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        insert(&other, 2).unwrap();
        assert!(!waiting.is_finished(), "the writer waits for the turn");
        drop(turn);
        waiting.await.unwrap().unwrap();
        assert_eq!(rows(&file), [1, 2]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_write_cancelled_anywhere_leaves_the_database_free() {
        let dir = tempfile::tempdir().unwrap();
        let (writer, file) = database(&dir);
        let other = Connection::open(&file).unwrap();
        other.busy_timeout(Duration::from_secs(5)).unwrap();
        let mut cancelled = 0;
        for i in 0..80i64 {
            // Dropped once queued, or after a few more polls, or done.
            let mut write = Box::pin(write(&writer, i));
            for _ in 0..i % 5 {
                if futures::poll!(&mut write).is_ready() {
                    break;
                }
                tokio::task::yield_now().await;
            }
            if futures::poll!(&mut write).is_pending() {
                cancelled += 1;
            }
            drop(write);
            // Another connection writes: no transaction was left open.
            insert(&other, 10_000 + i).unwrap();
        }
        assert!(cancelled > 0, "some writes were cancelled");
        write(&writer, 99_999).await.unwrap();
    }
}
