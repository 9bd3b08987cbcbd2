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
//! Run: `cargo bench -p state-store --bench store` (about 3 minutes; add
//! `-- append_step/sqlite` to pick benchmarks). Under `cargo test
//! --all-targets` every benchmark runs once on small data.

mod common;

use common::{BenchStore, Chat, Kind, benchmarking, next_number, prefill, step_deltas};
use criterion::{BenchmarkId, Criterion, SamplingMode, Throughput};
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
    let mut c = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    append_step(&mut c, &rt);
    load(&mut c, &rt);
    workers(&mut c, &rt);
    c.final_summary();
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
            let start = Instant::now();
            for delta in deltas.by_ref().take(batch as usize) {
                black_box(thread.apply(delta).await.expect("append a step"));
            }
            total += start.elapsed();
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
async fn worker_threads(store: &Store, history: usize) -> Vec<Thread<Chat>> {
    let mut threads = Vec::new();
    for w in 0..WORKERS {
        let id = format!("worker{w}-{}", next_number());
        threads.push(prefill(store, &id, history).await);
    }
    threads
}

/// `iters` steps shared by the workers, each on its own thread; the wall
/// time from the first spawn to the last worker's end.
async fn run_workers(threads: &mut Vec<Thread<Chat>>, iters: u64) -> Duration {
    let jobs: Vec<_> = threads
        .drain(..)
        .enumerate()
        .map(|(w, thread)| {
            let share = iters / WORKERS as u64 + u64::from((w as u64) < iters % WORKERS as u64);
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
                    let threads = worker_threads(&store.store, history).await;
                    (store, threads)
                }));
            }
            let (_, threads) = setup.as_mut().expect("set up above");
            b.iter_custom(|iters| rt.block_on(run_workers(threads, iters)));
        });
    }
    group.finish();
}
