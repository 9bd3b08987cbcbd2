//! Workload 7 of BENCHMARKS.md: persistence. A one-node graph appends one
//! human message per step to a history (see `common/mod.rs`).
//!
//! - `append_step/{memory,sqlite,postgres}/N`: one `Thread::apply` of one
//!   message on a thread whose history holds N messages (100 ... 100,000),
//!   under the default `SnapshotPolicy`. The thread is prefilled with one
//!   step of N messages (a template thread), then forked from it
//!   (`Store::fork`, untimed) whenever it has grown by N/10 messages (at
//!   least 10), so the history stays within 10% of N; the first step after
//!   a fork is untimed too (it reallocates the decoded history). Deltas are
//!   built before the timer starts. SQLite runs as `Store::sqlite` opens it: WAL,
//!   `synchronous = FULL`, a file on disk; PostgreSQL is a throwaway
//!   cluster (tests/it/support/postgres.rs, fsync on) on 127.0.0.1.
//!   A snapshot at N messages is written once per ~0.9 N steps, which no
//!   timed window here spans for N ≥ 1,000: the amortized cost with the
//!   snapshot in is measured over whole snapshot cycles by `bytes.rs`.
//! - `load/{memory,sqlite,postgres}/10000_steps`: `Store::thread` (open +
//!   latest snapshot + replay) of a thread written by 10,000 steps of one
//!   message each, under the default policy.
//! - `workers8/{postgres,sqlite}`: 8 tokio tasks on the multi-threaded
//!   runtime, each appending to its own thread id (8 conversations, as a
//!   server's workers), each thread prefilled with 10,000 messages; time
//!   per step of all eight together, so criterion's throughput is steps
//!   per second. (On SQLite the eight share one write lock: see
//!   BENCHMARKS.md on what waiting for it costs.)
//!
//! - `concurrent/sqlite/{1,4,16,64}`: that many tasks appending at once,
//!   each to a thread of its own (100 messages): time per step of all of
//!   them together. The steps ready at once share one commit (the group
//!   commit, `backend/sqlite_writer.rs`).
//!
//! - `bare_commit/sqlite`: the step's baseline: the same row (the same
//!   columns and bytes: thread id, seq, kind, the delta's JSON, metadata,
//!   version, time) inserted into a table of the same shape in another
//!   SQLite file of the same directory, opened as `Store::sqlite` opens
//!   one (WAL, `synchronous = FULL`), one `INSERT` in autocommit: one
//!   commit, one fsync, nothing else.
//! - `step_vs_commit` (printed, not criterion; after criterion's runs):
//!   `append_step/sqlite/10000` and `bare_commit/sqlite` interleaved,
//!   rounds of 10 of each in turn (ABBA), so the machine's load hits both
//!   alike; prints the time per call of each, their ratio (BENCHMARKS.md
//!   section 7's target: a step within 1.2x of the bare commit), the
//!   process's CPU time per call of each (all its threads, sqlx's SQLite
//!   worker included), and the load average, and writes
//!   `target/state-store-step-vs-commit.json`. It runs when no filter is
//!   given or the filter is part of `step_vs_commit`;
//!   `STATE_STORE_PAIRED=0` or `1` decides instead,
//!   `STATE_STORE_PAIRED_ROUNDS` sets the rounds (default 300).
//!
//! - `watchers/sqlite/{0,1,10,100}`: the writer's `Thread::apply` of one
//!   message (a history of 1,000) while that many `Store::watch` streams
//!   of the thread, each drained by a task of its own on the same runtime,
//!   follow it (issue 35: the writer's cost should not grow with them).
//!   Only the writer's steps are timed; after each sample the watchers
//!   are waited for (untimed), so each sample holds their work too.
//! - `watchers_paired` (printed, after criterion's runs): the same writer
//!   on two threads of one store, one followed by 1 watcher and one by
//!   100, rounds of 10 steps on each in turn (ABBA): the writer's time
//!   per step with 100 watchers against 1, and the load average. Runs as
//!   `step_vs_commit` does (its own filter, `STATE_STORE_PAIRED`).
//! - For a profile or a count of system calls, of one side alone:
//!   `STORE_DRIVER=step` (or `bare`) runs `STORE_DRIVER_CALLS` (default
//!   2,000) calls of `append_step/sqlite/10000` (or `bare_commit/sqlite`)
//!   after the set-up, then exits; under `valgrind --tool=callgrind
//!   --toggle-collect='*driven_calls*'` only those calls count.
//!
//! Run: `cargo bench -p state-store --bench store` (about 3 minutes; add
//! `-- append_step/sqlite` to pick benchmarks). Under `cargo test
//! --all-targets` every benchmark runs once on small data.

mod common;
#[path = "../../state-core/benches/common/paired.rs"]
mod paired;

use common::{
    BareCommit, BenchStore, Chat, Kind, benchmarking, next_number, prefill, process_cpu_ns,
    step_deltas,
};
use criterion::{BenchmarkId, Criterion, SamplingMode, Throughput};
use paired::{Paired, interleave, load_average, paired_wanted};
use state_store::{Store, Thread};
use std::hint::black_box;
use std::time::{Duration, Instant};
use tokio::runtime::Runtime;

const SIZES: [usize; 4] = [100, 1_000, 10_000, 100_000];
const BACKENDS: [Kind; 3] = [Kind::Memory, Kind::Sqlite, Kind::Postgres];
const LOAD_STEPS: usize = 10_000;
const WORKERS: usize = 8;
const WORKER_HISTORY: usize = 10_000;

fn main() {
    let rt = common::runtime();
    // Pools and threads are dropped inside the runtime's context.
    let _context = rt.enter();
    if driver(&rt) {
        return;
    }
    let mut c = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    append_step(&mut c, &rt);
    bare_commit(&mut c, &rt);
    watched(&mut c, &rt);
    load(&mut c, &rt);
    workers(&mut c, &rt);
    concurrent(&mut c, &rt);
    c.final_summary();
    if paired_wanted("STATE_STORE_PAIRED", "step_vs_commit") {
        step_vs_commit(&rt);
    }
    if paired_wanted("STATE_STORE_PAIRED", "watchers_paired") {
        watchers_paired(&rt);
    }
}

/// A thread kept at N messages (within 10%) by forking it afresh from a
/// template thread.
struct Appender {
    store: BenchStore,
    template: String,
    /// `None` only while it is being replaced.
    thread: Option<Thread<Chat>>,
    /// Steps allowed between two forks.
    room: u64,
    /// Steps since the last fork.
    used: u64,
    /// CPU time of the process during the timed steps so far, in ns.
    cpu_ns: u64,
}

impl Appender {
    async fn new(kind: Kind, n: usize) -> Appender {
        let store = BenchStore::open(kind).await;
        let template = format!("template-{n}-{}", next_number());
        prefill(&store.store, &template, n).await;
        let mut appender = Appender {
            store,
            template,
            thread: None,
            room: (n as u64 / 10).max(10),
            used: 0,
            cpu_ns: 0,
        };
        appender.refork().await;
        appender
    }

    /// Replaces the thread with a new fork of the template, untimed.
    async fn refork(&mut self) {
        // The old thread goes first: its memory is then reused by the fork
        // (at 100,000 messages, freeing 40 MB after the fork leaves the
        // allocator's free lists to be sorted out during the timed steps).
        if let Some(old) = self.thread.take() {
            self.store
                .store
                .delete_thread(old.id())
                .await
                .expect("delete a used bench thread");
        }
        let mut fresh = fork(&self.store.store, &self.template).await;
        // The first step after a fork: a history decoded from a snapshot
        // has no spare capacity, so this append reallocates it (an O(N)
        // copy that a thread kept open pays once per doubling, not once per
        // N/10 steps as these forks would make it).
        let delta = step_deltas(1).pop().expect("one delta");
        fresh.apply(delta).await.expect("append a step");
        self.thread = Some(fresh);
        self.used = 1;
    }

    /// Applies `iters` steps, timing only the applies.
    async fn run(&mut self, iters: u64) -> Duration {
        let mut deltas = step_deltas(iters).into_iter();
        let mut left = iters;
        let mut total = Duration::ZERO;
        while left > 0 {
            if self.used == self.room {
                self.refork().await;
            }
            let batch = left.min(self.room - self.used);
            let thread = self.thread.as_mut().expect("a thread");
            let cpu = process_cpu_ns();
            let start = Instant::now();
            for delta in deltas.by_ref().take(batch as usize) {
                black_box(thread.apply(delta).await.expect("append a step"));
            }
            total += start.elapsed();
            self.cpu_ns += process_cpu_ns().saturating_sub(cpu);
            self.used += batch;
            left -= batch;
        }
        total
    }
}

/// A new thread holding the template's state after its prefill step.
async fn fork(store: &Store, template: &str) -> Thread<Chat> {
    let id = format!("bench-{}", next_number());
    store
        .fork::<Chat>(template, 1, &id)
        .await
        .expect("fork the template thread")
}

fn append_step(c: &mut Criterion, rt: &Runtime) {
    let sizes: &[usize] = if benchmarking() { &SIZES } else { &SIZES[..1] };
    let mut group = c.benchmark_group("append_step");
    group.throughput(Throughput::Elements(1));
    for kind in BACKENDS {
        for &n in sizes {
            // Set up on first use: a filtered-out benchmark costs nothing.
            let mut appender: Option<Appender> = None;
            group.bench_function(BenchmarkId::new(kind.name(), n), |b| {
                if appender.is_none() {
                    appender = Some(rt.block_on(Appender::new(kind, n)));
                }
                let appender = appender.as_mut().expect("set up above");
                b.iter_custom(|iters| rt.block_on(appender.run(iters)));
            });
        }
    }
    group.finish();
}

/// The step's baseline: the same rows, each one bare commit.
fn bare_commit(c: &mut Criterion, rt: &Runtime) {
    let mut group = c.benchmark_group("bare_commit");
    group.throughput(Throughput::Elements(1));
    let mut bare: Option<BareCommit> = None;
    group.bench_function("sqlite", |b| {
        if bare.is_none() {
            bare = Some(rt.block_on(BareCommit::open()));
        }
        let bare = bare.as_mut().expect("set up above");
        b.iter_custom(|iters| rt.block_on(bare.run(iters)));
    });
    group.finish();
}

/// `STORE_DRIVER=step|bare`: that side's calls alone, for a profiler.
/// Returns whether it ran.
fn driver(rt: &Runtime) -> bool {
    let Ok(side) = std::env::var("STORE_DRIVER") else {
        return false;
    };
    let calls: u64 = std::env::var("STORE_DRIVER_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000);
    let took = match side.as_str() {
        "step" => {
            let mut appender = rt.block_on(Appender::new(Kind::Sqlite, 10_000));
            driven_calls(|| rt.block_on(appender.run(calls)))
        }
        "bare" => {
            let mut bare = rt.block_on(BareCommit::open());
            driven_calls(|| rt.block_on(bare.run(calls)))
        }
        other => panic!("STORE_DRIVER is step or bare, not {other:?}"),
    };
    eprintln!(
        "{side}: {calls} calls, {:.1} µs each",
        took.as_secs_f64() * 1e6 / calls as f64
    );
    true
}

/// The driven calls, by a name callgrind's `--toggle-collect` can find.
#[inline(never)]
fn driven_calls(run: impl FnOnce() -> Duration) -> Duration {
    run()
}

/// `append_step/sqlite/10000` against `bare_commit/sqlite`, interleaved.
fn step_vs_commit(rt: &Runtime) {
    const N: usize = 10_000;
    const ROUND: u64 = 10;
    let rounds = std::env::var("STATE_STORE_PAIRED_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let mut appender = rt.block_on(Appender::new(Kind::Sqlite, N));
    let mut bare = rt.block_on(BareCommit::open());
    let before = load_average();
    let paired = interleave(
        rounds,
        || (rt.block_on(appender.run(ROUND)), ROUND as usize),
        || (rt.block_on(bare.run(ROUND)), ROUND as usize),
    );
    let after = load_average();
    // The warm-up rounds (a tenth) count in the CPU sums too.
    let calls = (rounds + rounds / 10) as f64 * ROUND as f64;
    let cpu_step = appender.cpu_ns as f64 / calls;
    let cpu_bare = bare.cpu_ns as f64 / calls;
    let (a, b) = (&paired.a, &paired.b);
    eprintln!();
    eprintln!(
        "step_vs_commit: append_step/sqlite/{N} and bare_commit/sqlite interleaved (ABBA), \
         {rounds} rounds of {ROUND} each; load {before} -> {after}"
    );
    eprintln!(
        "  step {:.1} µs (median {:.1}), bare commit {:.1} µs (median {:.1}); \
         step / commit: {:.3}x of the means, {:.3}x of the medians, median of the rounds {:.3}x",
        Paired::mean(a) * 1e6,
        Paired::median(a) * 1e6,
        Paired::mean(b) * 1e6,
        Paired::median(b) * 1e6,
        paired.ratio_of_means(),
        paired.ratio_of_medians(),
        paired.median_pair_ratio(),
    );
    eprintln!(
        "  CPU time per call (the process, all threads): step {:.1} µs, bare commit {:.1} µs ({:.3}x)",
        cpu_step / 1e3,
        cpu_bare / 1e3,
        cpu_step / cpu_bare,
    );
    let report = serde_json::json!({
        "n": N,
        "rounds": rounds,
        "per_round": ROUND,
        "load_before": before,
        "load_after": after,
        "step_mean_s": Paired::mean(a),
        "step_median_s": Paired::median(a),
        "bare_mean_s": Paired::mean(b),
        "bare_median_s": Paired::median(b),
        "ratio_of_means": paired.ratio_of_means(),
        "ratio_of_medians": paired.ratio_of_medians(),
        "median_round_ratio": paired.median_pair_ratio(),
        "step_cpu_s": cpu_step / 1e9,
        "bare_cpu_s": cpu_bare / 1e9,
    });
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            let crate_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
            crate_dir.parent().unwrap_or(crate_dir).join("target")
        });
    let path = target.join("state-store-step-vs-commit.json");
    match std::fs::write(&path, format!("{report:#}\n")) {
        Ok(()) => eprintln!("  wrote {}", path.display()),
        Err(e) => eprintln!("  could not write {}: {e}", path.display()),
    }
}

/// A thread of 1,000 messages on a SQLite store followed by `count`
/// watchers, each a task that drains its stream and counts the steps.
struct Watched {
    thread: Thread<Chat>,
    seen: Vec<std::sync::Arc<std::sync::atomic::AtomicU64>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Watched {
    async fn new(store: &Store, count: usize) -> Watched {
        use futures::StreamExt;
        let id = format!("watched-{}", next_number());
        let thread = prefill(store, &id, 1_000).await;
        let head = thread.seq();
        let mut seen = Vec::new();
        let mut tasks = Vec::new();
        for _ in 0..count {
            let counter = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(head));
            let mut steps = store.watch(&id, head);
            let mine = std::sync::Arc::clone(&counter);
            tasks.push(tokio::spawn(async move {
                while let Some(step) = steps.next().await {
                    let step = step.expect("a watched step");
                    mine.store(step.seq, std::sync::atomic::Ordering::Release);
                }
            }));
            seen.push(counter);
        }
        Watched {
            thread,
            seen,
            tasks,
        }
    }

    /// Applies `iters` steps, timing only the writer's applies; then
    /// waits, untimed, until every watcher has seen the last.
    async fn run(&mut self, iters: u64) -> Duration {
        let deltas = step_deltas(iters);
        let start = Instant::now();
        for delta in deltas {
            black_box(self.thread.apply(delta).await.expect("append a step"));
        }
        let took = start.elapsed();
        let head = self.thread.seq();
        while self
            .seen
            .iter()
            .any(|seen| seen.load(std::sync::atomic::Ordering::Acquire) < head)
        {
            tokio::time::sleep(Duration::from_micros(200)).await;
        }
        took
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// The writer's step with 0, 1, 10 and 100 watchers of its thread.
fn watched(c: &mut Criterion, rt: &Runtime) {
    let counts: &[usize] = if benchmarking() {
        &[0, 1, 10, 100]
    } else {
        &[2]
    };
    let mut group = c.benchmark_group("watchers");
    group.throughput(Throughput::Elements(1));
    let mut store: Option<BenchStore> = None;
    for &count in counts {
        let mut setup: Option<Watched> = None;
        group.bench_function(BenchmarkId::new("sqlite", count), |b| {
            let store = store.get_or_insert_with(|| rt.block_on(BenchStore::open(Kind::Sqlite)));
            if setup.is_none() {
                setup = Some(rt.block_on(Watched::new(&store.store, count)));
            }
            let watched = setup.as_mut().expect("set up above");
            b.iter_custom(|iters| rt.block_on(watched.run(iters)));
        });
    }
    group.finish();
}

/// The writer with 100 watchers against 1, interleaved.
fn watchers_paired(rt: &Runtime) {
    const ROUND: u64 = 10;
    let rounds = std::env::var("STATE_STORE_PAIRED_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let store = rt.block_on(BenchStore::open(Kind::Sqlite));
    let mut one = rt.block_on(Watched::new(&store.store, 1));
    let mut hundred = rt.block_on(Watched::new(&store.store, 100));
    let before = load_average();
    let paired = interleave(
        rounds,
        || (rt.block_on(hundred.run(ROUND)), ROUND as usize),
        || (rt.block_on(one.run(ROUND)), ROUND as usize),
    );
    let after = load_average();
    let (a, b) = (&paired.a, &paired.b);
    eprintln!();
    eprintln!(
        "watchers_paired: the writer's step with 100 watchers and with 1, interleaved (ABBA), \
         {rounds} rounds of {ROUND} each; load {before} -> {after}"
    );
    eprintln!(
        "  100 watchers {:.1} µs (median {:.1}), 1 watcher {:.1} µs (median {:.1}); \
         100 / 1: {:.3}x of the means, {:.3}x of the medians, median of the rounds {:.3}x",
        Paired::mean(a) * 1e6,
        Paired::median(a) * 1e6,
        Paired::mean(b) * 1e6,
        Paired::median(b) * 1e6,
        paired.ratio_of_means(),
        paired.ratio_of_medians(),
        paired.median_pair_ratio(),
    );
}

/// Writes `steps` steps of one message each to a new thread.
async fn write_log(store: &Store, steps: usize) -> String {
    let id = format!("load-{}", next_number());
    let mut thread = prefill(store, &id, 0).await;
    for delta in step_deltas(steps as u64) {
        thread.apply(delta).await.expect("write the log");
    }
    id
}

fn load(c: &mut Criterion, rt: &Runtime) {
    let steps = if benchmarking() { LOAD_STEPS } else { 100 };
    let mut group = c.benchmark_group("load");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .measurement_time(Duration::from_secs(5));
    for kind in BACKENDS {
        let mut setup: Option<(BenchStore, String)> = None;
        let id = BenchmarkId::new(kind.name(), format!("{steps}_steps"));
        group.bench_function(id, |b| {
            if setup.is_none() {
                setup = Some(rt.block_on(async {
                    let store = BenchStore::open(kind).await;
                    let id = write_log(&store.store, steps).await;
                    if let Some(side) = store.side().await {
                        let snapshot = side.latest_snapshot(&id).await.unwrap_or(0);
                        eprintln!(
                            "load/{}: {steps} steps; latest snapshot at step {snapshot}, \
                             {} steps replayed on load",
                            kind.name(),
                            steps as u64 - snapshot
                        );
                    }
                    (store, id)
                }));
            }
            let (store, id) = setup.as_ref().expect("set up above");
            b.iter(|| {
                let thread = rt
                    .block_on(store.store.thread::<Chat>(id))
                    .expect("load the thread");
                assert_eq!(thread.seq(), steps as u64);
                black_box(thread)
            });
        });
    }
    group.finish();
}

/// Eight threads, one per worker, each prefilled with `history` messages.
async fn worker_threads(store: &Store, history: usize, workers: usize) -> Vec<Thread<Chat>> {
    let mut threads = Vec::new();
    for w in 0..workers {
        let id = format!("worker{w}-{}", next_number());
        threads.push(prefill(store, &id, history).await);
    }
    threads
}

/// `iters` steps shared by the workers, each on its own thread; the wall
/// time from the first spawn to the last worker's end.
async fn run_workers(threads: &mut Vec<Thread<Chat>>, iters: u64) -> Duration {
    let workers = threads.len() as u64;
    let jobs: Vec<_> = threads
        .drain(..)
        .enumerate()
        .map(|(w, thread)| {
            let share = iters / workers + u64::from((w as u64) < iters % workers);
            (thread, step_deltas(share))
        })
        .collect();
    let start = Instant::now();
    let handles: Vec<_> = jobs
        .into_iter()
        .map(|(mut thread, deltas)| {
            tokio::spawn(async move {
                for delta in deltas {
                    thread.apply(delta).await.expect("a worker's step");
                }
                thread
            })
        })
        .collect();
    for handle in handles {
        threads.push(handle.await.expect("a worker task"));
    }
    start.elapsed()
}

/// `concurrent/sqlite/N`: N tasks appending at once, each to a thread of
/// its own (of 100 messages): the group commit's curve (one commit for the
/// steps ready together).
fn concurrent(c: &mut Criterion, rt: &Runtime) {
    let counts: &[usize] = if benchmarking() {
        &[1, 4, 16, 64]
    } else {
        &[4]
    };
    let mut group = c.benchmark_group("concurrent");
    group.throughput(Throughput::Elements(1));
    for &n in counts {
        let mut setup: Option<(BenchStore, Vec<Thread<Chat>>)> = None;
        group.bench_function(BenchmarkId::new("sqlite", n), |b| {
            if setup.is_none() {
                setup = Some(rt.block_on(async {
                    let store = BenchStore::open(Kind::Sqlite).await;
                    let threads = worker_threads(&store.store, 100, n).await;
                    (store, threads)
                }));
            }
            let (_, threads) = setup.as_mut().expect("set up above");
            b.iter_custom(|iters| rt.block_on(run_workers(threads, iters)));
        });
    }
    group.finish();
}

fn workers(c: &mut Criterion, rt: &Runtime) {
    let history = if benchmarking() { WORKER_HISTORY } else { 100 };
    let mut group = c.benchmark_group("workers8");
    group.throughput(Throughput::Elements(1));
    for kind in [Kind::Postgres, Kind::Sqlite] {
        let mut setup: Option<(BenchStore, Vec<Thread<Chat>>)> = None;
        group.bench_function(kind.name(), |b| {
            if setup.is_none() {
                setup = Some(rt.block_on(async {
                    let store = BenchStore::open(kind).await;
                    let threads = worker_threads(&store.store, history, WORKERS).await;
                    (store, threads)
                }));
            }
            let (_, threads) = setup.as_mut().expect("set up above");
            b.iter_custom(|iters| rt.block_on(run_workers(threads, iters)));
        });
    }
    group.finish();
}
