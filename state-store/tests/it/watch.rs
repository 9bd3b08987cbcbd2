//! `Store::watch` on real storage: the backlog then live steps with no gap
//! and no duplicate, however the watcher and the writers interleave; a
//! thread not created yet, deleted, or compacted; slow and many watchers;
//! and steps written by another process (SQLite, PostgreSQL), across a
//! PostgreSQL restart.
//!
//! Every wait is bounded. The other processes are this test binary run
//! again (`child_writer` with `CHILD_DB` set), as in `crash.rs`.

use crate::on_every_backend;
use crate::support;
use crate::support::backends::TestStore;
use crate::support::states::Chat;
use futures::StreamExt;
use serde_json::json;
use state_core::State;
use state_store::{StepRecord, StepStream, Store, StoreError};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime};
use tokio::time::timeout;

/// The longest wait for one step that is due.
const STEP_WAIT: Duration = Duration::from_secs(20);

/// The next item, which must come within `STEP_WAIT`.
async fn next_item(
    steps: &mut StepStream,
    context: &str,
) -> Option<Result<StepRecord, StoreError>> {
    timeout(STEP_WAIT, steps.next())
        .await
        .unwrap_or_else(|_| panic!("{context}: no step within {STEP_WAIT:?}"))
}

/// The next step, which must come in time and be a step.
async fn next_step(steps: &mut StepStream, context: &str) -> StepRecord {
    match next_item(steps, context).await {
        Some(Ok(step)) => step,
        Some(Err(e)) => panic!("{context}: {e}"),
        None => panic!("{context}: the stream ended"),
    }
}

/// Reads steps until step `last`, checking that they are exactly
/// `first..=last`, in order.
async fn steps_until(
    steps: &mut StepStream,
    first: u64,
    last: u64,
    context: &str,
) -> Vec<StepRecord> {
    let mut got = Vec::new();
    for expected in first..=last {
        let step = next_step(steps, context).await;
        assert_eq!(
            step.seq, expected,
            "{context}: steps out of order or missing"
        );
        got.push(step);
    }
    got
}

/// Nothing arrives for a while (the stream waits).
async fn nothing_for(steps: &mut StepStream, wait: Duration, context: &str) {
    if let Ok(item) = timeout(wait, steps.next()).await {
        panic!("{context}: expected nothing, got {item:?}");
    }
}

fn entry(text: impl Into<String>) -> <Chat as State>::Delta {
    Chat::delta().transcript(vec![text.into()])
}

/// Applies steps `from..=to` (their text is their number), as `t` is the
/// only writer.
async fn write(t: &mut state_store::Thread<Chat>, from: u64, to: u64) {
    for n in from..=to {
        assert_eq!(t.apply(entry(n.to_string())).await.unwrap(), n);
    }
}

/// A small deterministic generator (xorshift), for the random points.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// A writer commits 200 steps while watchers subscribe at random points,
/// each from a random step (some past the head at the time): each sees
/// exactly the steps after its own, in order.
async fn backlog_then_live_while_a_writer_runs(ts: TestStore) {
    const STEPS: u64 = 200;
    const WATCHERS: u64 = 12;
    let other = ts.another_worker().await;
    let mut t = ts.store.thread::<Chat>("busy").await.unwrap();
    let written = Arc::new(AtomicU64::new(0));
    let seed = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    let mut rng = Rng(seed);

    let mut watchers = Vec::new();
    for i in 0..WATCHERS {
        let start_at = rng.below(STEPS);
        let ahead = rng.below(8);
        // Half watch through another store on the same database.
        let store = if i % 2 == 0 {
            ts.store.clone()
        } else {
            other.clone()
        };
        let written = written.clone();
        let name = ts.name;
        watchers.push(tokio::spawn(async move {
            while written.load(Ordering::SeqCst) < start_at {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            let after = (written.load(Ordering::SeqCst) + ahead).min(STEPS);
            let mut steps = store.watch("busy", after);
            let context = format!("{name}, seed {seed}, watcher {i} after {after}");
            if after < STEPS {
                steps_until(&mut steps, after + 1, STEPS, &context).await;
            }
            nothing_for(&mut steps, Duration::from_millis(100), &context).await;
        }));
    }
    let writer = tokio::spawn(async move {
        for n in 1..=STEPS {
            t.apply(entry(n.to_string())).await.unwrap();
            written.store(n, Ordering::SeqCst);
            // The memory store never waits on I/O: let the watchers in.
            tokio::task::yield_now().await;
        }
    });
    timeout(Duration::from_secs(120), writer)
        .await
        .expect("the writer finishes")
        .unwrap();
    for watcher in watchers {
        timeout(Duration::from_secs(60), watcher)
            .await
            .expect("each watcher finishes")
            .unwrap();
    }
}

/// `after` in the middle of the log, at its end, and past it.
async fn from_the_middle_of_the_log(ts: TestStore) {
    let mut t = ts.store.thread::<Chat>("t").await.unwrap();
    write(&mut t, 1, 10).await;
    let history = ts.store.history("t", 5..).await.unwrap();

    let mut middle = ts.store.watch("t", 4);
    let got = steps_until(&mut middle, 5, 10, ts.name).await;
    assert_eq!(got, history, "{}: the steps as logged", ts.name);
    assert_eq!(got[0].body, json!({"transcript": ["5"]}));

    let mut at_end = ts.store.watch("t", 10);
    let mut past_end = ts.store.watch("t", 12);
    nothing_for(&mut at_end, Duration::from_millis(100), ts.name).await;
    write(&mut t, 11, 13).await;
    steps_until(&mut middle, 11, 13, ts.name).await;
    steps_until(&mut at_end, 11, 13, ts.name).await;
    assert_eq!(next_step(&mut past_end, ts.name).await.seq, 13);
}

/// A watcher of a thread that does not exist yet waits for it, and sees
/// its steps when another worker creates it.
async fn a_thread_not_created_yet(ts: TestStore) {
    let mut steps = ts.store.watch("later", 0);
    nothing_for(&mut steps, Duration::from_millis(200), ts.name).await;
    let other = ts.another_worker().await;
    let mut t = other.thread::<Chat>("later").await.unwrap();
    nothing_for(&mut steps, Duration::from_millis(100), ts.name).await;
    write(&mut t, 1, 3).await;
    steps_until(&mut steps, 1, 3, ts.name).await;
}

/// Deleting the thread (through another worker) ends the stream with an
/// error that says so; a watcher that saw the thread missing and never
/// saw it exist keeps waiting.
async fn deleting_the_thread_ends_the_stream(ts: TestStore) {
    let mut t = ts.store.thread::<Chat>("doomed").await.unwrap();
    write(&mut t, 1, 2).await;
    let mut steps = ts.store.watch("doomed", 0);
    steps_until(&mut steps, 1, 2, ts.name).await;
    let mut idle = ts.store.watch("doomed", 2);
    nothing_for(&mut idle, Duration::from_millis(100), ts.name).await;

    let other = ts.another_worker().await;
    assert!(other.delete_thread("doomed").await.unwrap());
    for stream in [&mut steps, &mut idle] {
        match next_item(stream, ts.name).await {
            Some(Err(e @ StoreError::ThreadDeleted { .. })) => assert_eq!(
                e.to_string(),
                "thread \"doomed\" was deleted while it was being watched"
            ),
            other => panic!("{}: expected the deletion, got {other:?}", ts.name),
        }
        assert!(next_item(stream, ts.name).await.is_none(), "then the end");
    }

    // Created again: a new watcher starts over with it.
    let mut again = ts.store.watch("doomed", 0);
    let mut t = ts.store.thread::<Chat>("doomed").await.unwrap();
    write(&mut t, 1, 1).await;
    assert_eq!(
        next_step(&mut again, ts.name).await.body,
        json!({"transcript": ["1"]})
    );
}

/// A consumer that sleeps between reads holds no writer back and still
/// gets every step.
async fn a_slow_consumer_never_holds_the_writer(ts: TestStore) {
    const STEPS: u64 = 100;
    let mut t = ts.store.thread::<Chat>("slow").await.unwrap();
    let writer_done = Arc::new(AtomicBool::new(false));
    let consumed = Arc::new(AtomicUsize::new(0));
    let mut steps = ts.store.watch("slow", 0);
    let consumer = {
        let (writer_done, consumed) = (writer_done.clone(), consumed.clone());
        let name = ts.name;
        tokio::spawn(async move {
            for seq in 1..=STEPS {
                assert_eq!(next_step(&mut steps, name).await.seq, seq);
                consumed.fetch_add(1, Ordering::SeqCst);
                if !writer_done.load(Ordering::SeqCst) {
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
            }
        })
    };
    let started = Instant::now();
    for n in 1..=STEPS {
        t.apply(entry(n.to_string())).await.unwrap();
        tokio::task::yield_now().await;
    }
    writer_done.store(true, Ordering::SeqCst);
    let read = consumed.load(Ordering::SeqCst);
    assert!(
        read < 10,
        "{}: the writer took {:?} for {STEPS} steps, the consumer read {read} meanwhile",
        ts.name,
        started.elapsed()
    );
    timeout(Duration::from_secs(60), consumer)
        .await
        .expect("the consumer catches up")
        .unwrap();
}

/// Twenty watchers (on two stores) all get every step.
async fn twenty_watchers_get_every_step(ts: TestStore) {
    const STEPS: u64 = 50;
    let other = ts.another_worker().await;
    let mut watchers = Vec::new();
    for i in 0..20 {
        let store = if i % 4 == 0 { &other } else { &ts.store };
        let mut steps = store.watch("shared", 0);
        let context = format!("{} watcher {i}", ts.name);
        watchers.push(tokio::spawn(async move {
            steps_until(&mut steps, 1, STEPS, &context).await;
        }));
    }
    let mut t = ts.store.thread::<Chat>("shared").await.unwrap();
    for n in 1..=STEPS {
        t.apply(entry(n.to_string())).await.unwrap();
        tokio::task::yield_now().await;
    }
    for watcher in watchers {
        timeout(Duration::from_secs(60), watcher)
            .await
            .expect("each watcher finishes")
            .unwrap();
    }
}

/// Steps after `after` that were compacted away (or precede a fork) are an
/// error naming the first missing step, not a silent skip.
async fn compacted_steps_are_an_error(ts: TestStore) {
    let mut t = ts.store.thread::<Chat>("t").await.unwrap();
    write(&mut t, 1, 10).await;
    t.compact().await.unwrap();

    let mut steps = ts.store.watch("t", 3);
    match next_item(&mut steps, ts.name).await {
        Some(Err(e @ StoreError::NoSuchStep { seq: 4, .. })) => assert_eq!(
            e.to_string(),
            "thread \"t\" has no step 4: the log up to the thread's last step was compacted away or precedes a fork"
        ),
        other => panic!("{}: expected no step 4, got {other:?}", ts.name),
    }
    assert!(next_item(&mut steps, ts.name).await.is_none());

    write(&mut t, 11, 12).await;
    let mut steps = ts.store.watch("t", 3);
    match next_item(&mut steps, ts.name).await {
        Some(Err(e @ StoreError::NoSuchStep { seq: 4, .. })) => assert!(
            e.to_string().contains("before step 11 was compacted away"),
            "{e}"
        ),
        other => panic!("{}: expected no step 4, got {other:?}", ts.name),
    }
    // From the compaction point on, all is there.
    let mut steps = ts.store.watch("t", 10);
    steps_until(&mut steps, 11, 12, ts.name).await;

    // A fork's steps before the fork point are not its own.
    let mut fork = ts.store.fork::<Chat>("t", 12, "f").await.unwrap();
    let mut from_start = ts.store.watch("f", 0);
    assert!(matches!(
        next_item(&mut from_start, ts.name).await,
        Some(Err(StoreError::NoSuchStep { seq: 1, .. }))
    ));
    let mut from_fork = ts.store.watch("f", 12);
    write(&mut fork, 13, 13).await;
    steps_until(&mut from_fork, 13, 13, ts.name).await;
}

/// An id that cannot be stored is an error, then the end.
async fn invalid_ids_are_an_error(ts: TestStore) {
    let mut steps = ts.store.watch("", 0);
    assert!(matches!(
        next_item(&mut steps, ts.name).await,
        Some(Err(StoreError::InvalidThreadId { .. }))
    ));
    assert!(next_item(&mut steps, ts.name).await.is_none());
}

/// The signature tests outside this repository rely on: a plain call,
/// no future, a `Send + 'static` stream (and `Unpin`: `next()` works on it
/// as it is).
#[test]
fn watch_has_the_fixed_signature() {
    fn steps(
        store: &Store,
        after_seq: u64,
    ) -> impl futures::Stream<Item = Result<StepRecord, StoreError>> + Send + Unpin + 'static {
        store.watch("user-42", after_seq)
    }
    let store = Store::memory();
    let stream = steps(&store, 0);
    drop(store);
    let handle = std::thread::spawn(move || drop(stream));
    handle.join().unwrap();
}

on_every_backend!(
    backlog_then_live_while_a_writer_runs,
    from_the_middle_of_the_log,
    a_thread_not_created_yet,
    deleting_the_thread_ends_the_stream,
    a_slow_consumer_never_holds_the_writer,
    twenty_watchers_get_every_step,
    compacted_steps_are_an_error,
    invalid_ids_are_an_error,
);

// Other processes.

/// Where the child writes: a SQLite file or a PostgreSQL URL.
const CHILD_DB: &str = "WATCH_CHILD_DB";
/// Steps the child writes.
const CHILD_STEPS: u64 = 30;

/// As a child (with `CHILD_DB` set): appends `CHILD_STEPS` steps to thread
/// "remote", a few milliseconds apart, then exits. Otherwise does nothing.
#[tokio::test]
async fn child_writer() {
    let Ok(db) = std::env::var(CHILD_DB) else {
        return;
    };
    let store = if db.starts_with("postgres://") {
        Store::postgres(&db).await.unwrap()
    } else {
        Store::sqlite(&db).await.unwrap()
    };
    let mut t = store.thread::<Chat>("remote").await.unwrap();
    for _ in 0..CHILD_STEPS {
        let n = t.seq() + 1;
        t.apply(entry(n.to_string())).await.unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Runs `child_writer` in another process on `db`, and waits for it.
async fn run_child(db: &str) {
    let mut child =
        tokio::process::Command::from(support::child::only(module_path!(), "child_writer"))
            .env(CHILD_DB, db)
            .stdout(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
    let status = timeout(Duration::from_secs(60), child.wait())
        .await
        .expect("the child finishes")
        .unwrap();
    assert!(status.success(), "the child failed: {status}");
}

/// How long after its commit each step reached the watcher (the step's
/// own clock is the writer's, on this machine).
fn latency(step: &StepRecord) -> Duration {
    SystemTime::now()
        .duration_since(step.recorded_at)
        .unwrap_or_default()
}

/// Steps 1..=CHILD_STEPS of thread "remote", from a watcher started before
/// the child, with the worst latency.
async fn watch_the_child(store: &Store, db: &str) -> Duration {
    let mut steps = store.watch("remote", 0);
    let child = run_child(db);
    let watcher = async {
        let mut worst = Duration::ZERO;
        for seq in 1..=CHILD_STEPS {
            let step = next_step(&mut steps, "the child's steps").await;
            assert_eq!(step.seq, seq);
            assert_eq!(step.body, json!({"transcript": [seq.to_string()]}));
            worst = worst.max(latency(&step));
        }
        worst
    };
    let ((), worst) = tokio::join!(child, watcher);
    nothing_for(&mut steps, Duration::from_millis(200), "after the child").await;
    worst
}

/// Another process writes to the SQLite file: the watcher sees each step
/// within the documented bound (one 25 ms poll, plus the time to read it;
/// checked with room for a loaded machine).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_steps_of_another_process() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.db");
    let store = Store::sqlite(&path).await.unwrap();
    let worst = watch_the_child(&store, &path.display().to_string()).await;
    eprintln!("worst latency from another process: {worst:?}");
    assert!(
        worst < Duration::from_millis(50 + 450),
        "a step took {worst:?} to arrive"
    );
}

/// Another process writes to the PostgreSQL database: NOTIFY brings each
/// step.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_steps_of_another_process() {
    let db = support::postgres::shared().fresh_database("watch_child");
    let store = Store::postgres(&db.url).await.unwrap();
    let worst = watch_the_child(&store, &db.url).await;
    eprintln!("worst latency from another process: {worst:?}");
    assert!(
        worst < Duration::from_secs(2),
        "a step took {worst:?} to arrive"
    );
}

/// Applies one step, riding out a server that is coming back: retries on
/// errors (a handle whose commit is in doubt reloads first, so a step
/// committed despite an error is not written twice).
async fn apply_through_outage(t: &mut state_store::Thread<Chat>, text: String) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match t.apply(entry(text.clone())).await {
            Ok(seq) => return seq,
            Err(e) if Instant::now() < deadline => {
                if e.is_conflict() {
                    t.reload().await.ok();
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("the server did not come back: {e}"),
        }
    }
}

/// The watcher's store and the writer's are separate (another hub: only
/// NOTIFY wakes the watcher). The server restarts under the watcher, then
/// every session is terminated: the steps written before, between and
/// after all arrive, once each, in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_restart_under_a_watcher() {
    // A cluster of its own: restarting the shared one would break the
    // tests running beside this one.
    let cluster = support::postgres::TempPostgres::start();
    let db = cluster.fresh_database("restart");
    let watching = Store::postgres(&db.url).await.unwrap();
    let writing = Store::postgres(&db.url).await.unwrap();
    let mut t = writing.thread::<Chat>("t").await.unwrap();
    let mut steps = watching.watch("t", 0);
    let mut delivered = Vec::new();

    write(&mut t, 1, 5).await;
    delivered.extend(steps_until(&mut steps, 1, 5, "before the restart").await);
    nothing_for(&mut steps, Duration::from_millis(100), "before the restart").await;

    let cluster = Arc::new(cluster);
    let restarting = cluster.clone();
    tokio::task::spawn_blocking(move || restarting.restart())
        .await
        .unwrap();
    // Written at once: before the watcher's store listens again.
    for n in 6..=10 {
        apply_through_outage(&mut t, n.to_string()).await;
    }
    delivered.extend(steps_until(&mut steps, 6, t.seq(), "after the restart").await);

    let (killing, name) = (cluster.clone(), db.name.clone());
    let killed = tokio::task::spawn_blocking(move || killing.terminate_connections(&name))
        .await
        .unwrap();
    assert!(killed >= 2, "the listener and pooled sessions: {killed}");
    nothing_for(
        &mut steps,
        Duration::from_millis(100),
        "after the terminations",
    )
    .await;
    let first = t.seq() + 1;
    for n in first..first + 5 {
        apply_through_outage(&mut t, n.to_string()).await;
    }
    delivered.extend(steps_until(&mut steps, first, t.seq(), "after the terminations").await);
    nothing_for(&mut steps, Duration::from_millis(300), "at the end").await;

    // Exactly the log, once each.
    assert_eq!(delivered, writing.history("t", ..).await.unwrap());
}

/// A loopback proxy to the PostgreSQL server that can cut every
/// connection through it and refuse new ones for a while.
struct Proxy {
    port: u16,
    refusing: Arc<AtomicBool>,
    relays: Arc<std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>>,
    accepting: tokio::task::JoinHandle<()>,
}

impl Proxy {
    async fn start(server_port: u16) -> Proxy {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let refusing = Arc::new(AtomicBool::new(false));
        let relays = Arc::new(std::sync::Mutex::new(Vec::new()));
        let accepting = tokio::spawn({
            let (refusing, relays) = (refusing.clone(), relays.clone());
            async move {
                while let Ok((mut client, _)) = listener.accept().await {
                    if refusing.load(Ordering::SeqCst) {
                        continue; // dropped: the connection closes
                    }
                    let Ok(mut server) =
                        tokio::net::TcpStream::connect(("127.0.0.1", server_port)).await
                    else {
                        continue;
                    };
                    let relay = tokio::spawn(async move {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    });
                    relays.lock().unwrap().push(relay);
                }
            }
        });
        Proxy {
            port,
            refusing,
            relays,
            accepting,
        }
    }

    /// Cuts every connection and refuses new ones until `resume`.
    fn cut(&self) {
        self.refusing.store(true, Ordering::SeqCst);
        for relay in self.relays.lock().unwrap().drain(..) {
            relay.abort();
        }
    }

    fn resume(&self) {
        self.refusing.store(false, Ordering::SeqCst);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.cut();
        self.accepting.abort();
    }
}

/// Waits until `count` sessions listen on database `name`.
async fn wait_for_listeners(name: &str, count: usize) {
    let query = format!(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = '{name}' AND query LIKE 'LISTEN%'"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while support::postgres::shared().psql("postgres", &query) != count.to_string() {
        assert!(Instant::now() < deadline, "{count} listening sessions");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Steps committed while the watcher's store has lost its connections
/// (so no notification can reach it) and none after: when it connects
/// again it reads them, though no notification will ever announce them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_steps_committed_while_the_listener_is_away() {
    let cluster = support::postgres::shared();
    let db = cluster.fresh_database("away");
    let proxy = Proxy::start(cluster.port()).await;
    let through_proxy = db.url.replace(
        &format!(":{}/", cluster.port()),
        &format!(":{}/", proxy.port),
    );
    assert_ne!(through_proxy, db.url);
    let watching = Store::postgres(&through_proxy).await.unwrap();
    let writing = Store::postgres(&db.url).await.unwrap();
    let mut t = writing.thread::<Chat>("t").await.unwrap();
    write(&mut t, 1, 2).await;
    let mut steps = watching.watch("t", 0);
    steps_until(&mut steps, 1, 2, "before the cut").await;
    // Read everything, and waiting for a notice.
    nothing_for(&mut steps, Duration::from_millis(100), "before the cut").await;
    wait_for_listeners(&db.name, 1).await;

    proxy.cut();
    write(&mut t, 3, 5).await;
    nothing_for(&mut steps, Duration::from_millis(500), "while cut off").await;
    proxy.resume();
    steps_until(&mut steps, 3, 5, "after the cut").await;
    nothing_for(&mut steps, Duration::from_millis(200), "at the end").await;
}

/// The listening connection lives while the store has watchers, and is
/// closed with the last one.
#[tokio::test]
async fn postgres_listener_ends_with_the_last_watcher() {
    let cluster = support::postgres::shared();
    let db = cluster.fresh_database("listener");
    let store = Store::postgres(&db.url).await.unwrap();
    let mut t = store.thread::<Chat>("t").await.unwrap();
    write(&mut t, 1, 1).await;
    let mut a = store.watch("t", 0);
    let mut b = store.watch("u", 0);
    assert_eq!(next_step(&mut a, "a").await.seq, 1);
    nothing_for(&mut b, Duration::from_millis(100), "b").await;
    wait_for_listeners(&db.name, 1).await;
    drop(a);
    drop(b);
    wait_for_listeners(&db.name, 0).await;
}
