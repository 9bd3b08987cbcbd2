//! Section 11 of BENCHMARKS.md: long-term memory items on SQLite (WAL,
//! `synchronous = FULL`, a file on disk, as `Store::sqlite` opens it).
//!
//! - `put_vs_step/{step,put,update}`: one `Thread::apply` of one message
//!   (the step of section 7, on a thread that never snapshots, so each is
//!   one step's commit and nothing else) against one `put_item` of the
//!   same bytes (the delta's JSON as the item's value) under a new key, and
//!   one `put_item` that replaces an existing item. In the same run; the
//!   bench also prints the ratio measured interleaved (blocks of 20 steps
//!   and 20 puts, alternating), which the machine's load moves less.
//! - `get/10000`: `get_item` of an existing key among 10,000 items;
//!   `get/thread_info`, the baseline: `Store::thread_info` on the same
//!   file, the store's own one-row read.
//! - `search/…/10000`: `search_items(&["users"])` over 10,000 items in 100
//!   namespaces, limit 10: `newest` without a filter; `filter` with
//!   `{"kind": "pref", "n": {"$gt": 5000}}` (a quarter of the items are
//!   prefs: the ten newest match); `selective`, `{"kind": "pref", "n":
//!   {"$lt": 40}}`, whose ten matches are the oldest items (every row is
//!   read); `rust_only`, `{"meta": {"lang": "fr"}}`, a nested condition SQL
//!   is not given, matching the same ten oldest items (every row is read
//!   and decoded).
//! - `semantic/{sqlite,memory}/N`: `search_items(&["docs"]).query(..)`,
//!   limit 10, over N = 1,000, 10,000 and 100,000 items, each embedded to
//!   one 384-dimensional vector (a common small model's size; a
//!   deterministic pseudo-random embedding, no model is called): every
//!   vector read and scored. Memory shows the scoring alone.
//!
//! Run: `cargo bench -p state-store --bench items` (about 5 minutes, two
//! of them writing the 111,000 items of `semantic`). Under `cargo test
//! --all-targets` every benchmark runs once, on small data.

mod common;

use common::{BenchStore, Chat, Kind, benchmarking, next_number, step_deltas};
use criterion::{BenchmarkId, Criterion, SamplingMode};
use serde_json::{Value, json};
use state_store::{IndexConfig, SnapshotPolicy, Store, Thread};
use std::future::IntoFuture;
use std::hint::black_box;
use std::time::{Duration, Instant};
use tokio::runtime::Runtime;

/// Items of the `get` and `search` workloads.
const ITEMS: usize = 10_000;
/// Sizes of the semantic workload.
const SEMANTIC: [usize; 3] = [1_000, 10_000, 100_000];
/// Dimensions of its vectors.
const DIMS: usize = 384;

fn main() {
    eprintln!("load average at the start: {}", load_average());
    let rt = common::runtime();
    let _context = rt.enter();
    let mut c = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    put_vs_step(&mut c, &rt);
    get_and_search(&mut c, &rt);
    semantic(&mut c, &rt);
    c.final_summary();
    eprintln!("load average at the end: {}", load_average());
}

/// `/proc/loadavg`'s first three fields (the machine is shared).
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|text| {
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|_| "unknown".to_owned())
}

/// A store on a SQLite file with a thread that never snapshots.
struct Writer {
    store: BenchStore,
    thread: Thread<Chat>,
}

impl Writer {
    async fn new() -> Writer {
        let store = BenchStore::open(Kind::Sqlite).await;
        let thread = store
            .store
            .clone()
            .with_snapshot_policy(SnapshotPolicy::never())
            .thread::<Chat>("steps")
            .await
            .expect("open the step thread");
        Writer { store, thread }
    }

    /// `count` steps, timed.
    async fn steps(&mut self, count: u64) -> Duration {
        let deltas = step_deltas(count);
        let start = Instant::now();
        for delta in deltas {
            black_box(self.thread.apply(delta).await.expect("a step"));
        }
        start.elapsed()
    }

    /// `count` puts of a step's bytes, timed: under new keys, or over the
    /// same 100 keys (`update`) once they exist.
    async fn puts(&self, count: u64, update: bool) -> Duration {
        let values: Vec<(String, String, Value)> = step_deltas(count)
            .into_iter()
            .map(|delta| {
                let i = next_number();
                let key = if update {
                    format!("same{}", i % 100)
                } else {
                    format!("k{i}")
                };
                let value = serde_json::to_value(&delta).expect("a delta as JSON");
                (format!("u{}", i % 100), key, value)
            })
            .collect();
        let store = &self.store.store;
        let start = Instant::now();
        for (user, key, value) in values {
            store
                .put_item(&["bench", &user], &key, value)
                .await
                .expect("a put");
        }
        start.elapsed()
    }
}

fn put_vs_step(c: &mut Criterion, rt: &Runtime) {
    let mut writer = rt.block_on(Writer::new());
    // What a step writes, and what a put of the same bytes writes.
    let delta = step_deltas(1).pop().expect("a delta");
    let bytes = serde_json::to_string(&delta)
        .expect("a delta as JSON")
        .len();
    eprintln!("put_vs_step: a step's delta and a put's value are {bytes} bytes of JSON");
    rt.block_on(writer.puts(100, true));

    let mut group = c.benchmark_group("put_vs_step");
    group.bench_function("step", |b| {
        b.iter_custom(|iters| rt.block_on(writer.steps(iters)))
    });
    group.bench_function("put", |b| {
        b.iter_custom(|iters| rt.block_on(writer.puts(iters, false)))
    });
    group.bench_function("update", |b| {
        b.iter_custom(|iters| rt.block_on(writer.puts(iters, true)))
    });
    group.finish();

    // Interleaved: the same load on both sides. CPU time (every thread of
    // the process, the SQLite worker's included) is what the machine's
    // other jobs do not inflate; wall time adds the disk's syncs.
    let rounds = if benchmarking() { 50 } else { 2 };
    let (mut steps, mut puts) = (Vec::new(), Vec::new());
    let (mut steps_cpu, mut puts_cpu) = (Duration::ZERO, Duration::ZERO);
    rt.block_on(async {
        for _ in 0..rounds {
            let cpu = cpu_time();
            steps.push(writer.steps(20).await.as_secs_f64() / 20.0);
            let middle = cpu_time();
            puts.push(writer.puts(20, false).await.as_secs_f64() / 20.0);
            steps_cpu += middle - cpu;
            puts_cpu += cpu_time() - middle;
        }
    });
    let (step, put) = (median(&mut steps), median(&mut puts));
    let (step_cpu, put_cpu) = (
        steps_cpu.as_secs_f64() / f64::from(rounds * 20),
        puts_cpu.as_secs_f64() / f64::from(rounds * 20),
    );
    eprintln!(
        "put_vs_step interleaved ({rounds} rounds of 20 each): step {:.0} µs (CPU {:.0} µs), put {:.0} µs (CPU {:.0} µs); put/step {:.2}x (CPU {:.2}x)",
        step * 1e6,
        step_cpu * 1e6,
        put * 1e6,
        put_cpu * 1e6,
        put / step,
        put_cpu / step_cpu
    );
}

/// CPU time this process's threads have run so far
/// (`/proc/self/task/*/schedstat`, nanoseconds; zero elsewhere).
fn cpu_time() -> Duration {
    let tasks = std::fs::read_dir("/proc/self/task").into_iter().flatten();
    Duration::from_nanos(
        tasks
            .flatten()
            .filter_map(|task| std::fs::read_to_string(task.path().join("schedstat")).ok())
            .filter_map(|stat| stat.split_whitespace().next()?.parse::<u64>().ok())
            .sum(),
    )
}

/// Runs `op` `runs` times; prints the median wall time of a run and the
/// process's CPU time per run.
async fn wall_and_cpu<F, Fut>(label: &str, runs: u32, mut op: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut walls = Vec::new();
    let cpu = cpu_time();
    for _ in 0..runs {
        let start = Instant::now();
        op().await;
        walls.push(start.elapsed().as_secs_f64());
    }
    let cpu = (cpu_time() - cpu).as_secs_f64() / f64::from(runs);
    eprintln!(
        "{label}: wall {:.3} ms (median of {runs}), CPU {:.3} ms per run",
        median(&mut walls) * 1e3,
        cpu * 1e3
    );
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Item `i` of the get and search workloads: a quarter of them prefs, the
/// ten oldest French.
fn profile_item(i: usize) -> (String, String, Value) {
    let kind = ["pref", "note", "fact", "todo"][i % 4];
    let lang = if i < 40 && i.is_multiple_of(4) {
        "fr"
    } else {
        "en"
    };
    let value = json!({
        "kind": kind,
        "n": i,
        "text": format!("memory number {i}: the user prefers the dark theme and short answers"),
        "meta": {"lang": lang, "source": "chat"},
    });
    (format!("u{}", i % 100), format!("m{i}"), value)
}

fn get_and_search(c: &mut Criterion, rt: &Runtime) {
    let items = if benchmarking() { ITEMS } else { 100 };
    let store = rt.block_on(async {
        let store = BenchStore::open(Kind::Sqlite).await;
        for i in 0..items {
            let (user, key, value) = profile_item(i);
            store
                .store
                .put_item(&["users", &user], &key, value)
                .await
                .expect("prefill");
        }
        store
    });
    let store = &store.store;

    let mut group = c.benchmark_group("get");
    let mut i = 0;
    group.bench_function(BenchmarkId::from_parameter(items), |b| {
        b.iter(|| {
            i = (i + 7919) % items;
            let (user, key, _) = profile_item(i);
            let item = rt.block_on(store.get_item(&["users", &user], &key));
            assert!(black_box(item).expect("a get").is_some());
        })
    });
    // The floor: the store's own one-row read of a thread, same file.
    rt.block_on(store.thread::<Chat>("baseline"))
        .expect("a thread");
    group.bench_function("thread_info", |b| {
        b.iter(|| black_box(rt.block_on(store.thread_info("baseline"))).expect("a read"))
    });
    group.finish();

    // Interleaved, as put_vs_step.
    let rounds = if benchmarking() { 50 } else { 2 };
    let (mut gets, mut infos) = (Vec::new(), Vec::new());
    let (mut gets_cpu, mut infos_cpu) = (Duration::ZERO, Duration::ZERO);
    rt.block_on(async {
        for round in 0..rounds {
            let keys: Vec<_> = (0..100)
                .map(|j| profile_item((round * 100 + j) % items))
                .collect();
            let (cpu, start) = (cpu_time(), Instant::now());
            for (user, key, _) in &keys {
                let item = store.get_item(&["users", user], key).await.expect("a get");
                assert!(black_box(item).is_some());
            }
            gets.push(start.elapsed().as_secs_f64() / 100.0);
            gets_cpu += cpu_time() - cpu;
            let (cpu, start) = (cpu_time(), Instant::now());
            for _ in 0..100 {
                black_box(store.thread_info("baseline").await.expect("a read"));
            }
            infos.push(start.elapsed().as_secs_f64() / 100.0);
            infos_cpu += cpu_time() - cpu;
        }
    });
    let (get, info) = (median(&mut gets), median(&mut infos));
    let per = f64::from(u32::try_from(rounds * 100).unwrap_or(u32::MAX));
    eprintln!(
        "get interleaved ({rounds} rounds of 100 each): get_item {:.1} µs (CPU {:.1} µs), thread_info {:.1} µs (CPU {:.1} µs)",
        get * 1e6,
        gets_cpu.as_secs_f64() / per * 1e6,
        info * 1e6,
        infos_cpu.as_secs_f64() / per * 1e6
    );

    let searches = [
        ("newest", Value::Null, items.min(10)),
        (
            "filter",
            json!({"kind": "pref", "n": {"$gt": items / 2}}),
            10,
        ),
        ("selective", json!({"kind": "pref", "n": {"$lt": 40}}), 10),
        ("rust_only", json!({"meta": {"lang": "fr"}}), 10),
    ];
    let mut group = c.benchmark_group("search");
    for (name, filter, expected) in searches.clone() {
        group.bench_function(BenchmarkId::new(name, items), |b| {
            b.iter(|| {
                let found = rt.block_on(
                    store
                        .search_items(&["users"])
                        .filter(filter.clone())
                        .limit(10)
                        .into_future(),
                );
                assert_eq!(black_box(found).expect("a search").len(), expected);
            })
        });
    }
    group.finish();
    let runs = if benchmarking() { 20 } else { 1 };
    for (name, filter, _) in &searches {
        rt.block_on(wall_and_cpu(
            &format!("cpu: search/{name}/{items}"),
            runs,
            || async {
                let found = store
                    .search_items(&["users"])
                    .filter(filter.clone())
                    .limit(10)
                    .await;
                black_box(found.expect("a search"));
            },
        ));
    }
}

/// A deterministic stand-in for a model: a pseudo-random unit-scale
/// vector seeded by the text's hash.
fn pseudo_embedding(text: &str) -> Vec<f32> {
    let mut state = text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    (0..DIMS)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        })
        .collect()
}

fn index() -> IndexConfig {
    IndexConfig::new(DIMS, |texts: Vec<String>| async move {
        Ok::<_, std::convert::Infallible>(texts.iter().map(|t| pseudo_embedding(t)).collect())
    })
    .fields(["text"])
}

async fn prefill_docs(store: &Store, n: usize) {
    for i in 0..n {
        let text = format!("document {i} about topic {} and subject {}", i % 97, i % 89);
        store
            .put_item(
                &["docs", &format!("d{}", i % 100)],
                &format!("doc{i}"),
                json!({"text": text}),
            )
            .await
            .expect("prefill");
    }
}

fn semantic(c: &mut Criterion, rt: &Runtime) {
    let sizes: &[usize] = if benchmarking() { &SEMANTIC } else { &[100] };
    let mut group = c.benchmark_group("semantic");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .measurement_time(Duration::from_secs(5));
    for kind in [Kind::Sqlite, Kind::Memory] {
        for &n in sizes {
            let mut setup: Option<(BenchStore, Store)> = None;
            group.bench_function(BenchmarkId::new(kind.name(), n), |b| {
                let (_, store) = setup.get_or_insert_with(|| {
                    rt.block_on(async {
                        let bench = BenchStore::open(kind).await;
                        let store = bench.store.clone().with_index(index());
                        let start = Instant::now();
                        prefill_docs(&store, n).await;
                        eprintln!(
                            "semantic/{}/{n}: {n} puts in {:.1?}",
                            kind.name(),
                            start.elapsed()
                        );
                        (bench, store)
                    })
                });
                b.iter(|| {
                    let found = rt.block_on(
                        store
                            .search_items(&["docs"])
                            .query("which documents are about topic 42?")
                            .limit(10)
                            .into_future(),
                    );
                    assert_eq!(black_box(found).expect("a search").len(), 10);
                })
            });
            if let Some((_, store)) = &setup {
                let runs = if n >= 100_000 { 5 } else { 20 };
                let label = format!("cpu: semantic/{}/{n}", kind.name());
                rt.block_on(wall_and_cpu(&label, runs, || async {
                    let found = store
                        .search_items(&["docs"])
                        .query("which documents are about topic 42?")
                        .limit(10)
                        .await;
                    black_box(found.expect("a search"));
                }));
            }
        }
    }
    group.finish();
}
