//! The graph runner's benchmarks (BENCHMARKS.md, "The graph runner"): each
//! workload beside its hand-written equivalent in the same run, and the
//! same workloads on LangGraph in `benches/langgraph/graph_bench.py`.
//!
//! - `loop_{no_store,memory,sqlite}/…/{100,1000}`: a two-node loop. The
//!   state is a `messages` history (`add_messages`) and a counter; `agent`
//!   appends one AI message (with an id: `a{count}`), `count` increments the
//!   counter, and a router after `count` goes back to `agent` until the run
//!   has taken N supersteps (N/2 of each node), then to `END`. One run is one
//!   `invoke` (no store) or `invoke_thread` on a new thread (a store): a
//!   turn begins, the input (one human message, `count = 0`) is applied, N
//!   supersteps run. **The time reported is per superstep**: criterion's
//!   iterations are supersteps, and whole runs are timed (so the thread's
//!   opening, the input step and the final state are spread over the N
//!   supersteps; the history grows from 1 to N/2 + 1 messages in a run).
//!   - `runner`: the graph.
//!   - `hand_written` (no store): the same node functions applied in turn
//!     to a plain state with `State::apply`, in a `loop`.
//!   - `apply_nodes` (a store): the same calls the runner makes to the
//!     store, written out: open the thread, the turn with its input
//!     (`start_turn`, `{"nodes": ["__start__"]}`), then per superstep the node's delta
//!     (the same function on `thread.state()`) through
//!     `thread.apply_nodes([(name, delta)])`: the store's own step on the
//!     same deltas.
//!
//!   Memory: a fresh `Store::memory()` per run (made and dropped untimed).
//!   SQLite: `Store::sqlite` on a file in a temporary directory (on disk;
//!   `STATE_GRAPH_BENCH_DIR` picks its parent), WAL, `synchronous = FULL`;
//!   one store for the group, a new thread id per run, deleted untimed
//!   after the run. Default `SnapshotPolicy` everywhere.
//! - `interrupt_resume/memory/runner`: START → `approve` → END on
//!   `Store::memory()`, where `approve` calls `ctx.interrupt(..)`: one
//!   `invoke_thread` that pauses plus one `resume` that finishes, on a new
//!   thread of a fresh store.
//! - `fan_out_64/{no_store,memory}/…`: `add_fan_out(START, worker, ..)`
//!   sends 64 subjects to a worker that appends one string each; one run is
//!   one `invoke` (no store) or `invoke_thread` (memory store). `hand_written`:
//!   the worker function on each subject and one `State::apply_all` of the
//!   64 deltas.
//! - `loop_sqlite_paired` (printed, not criterion; after criterion's runs):
//!   the SQLite step is a disk sync whose time moves by tens of percent
//!   with the machine's load, more than the runner adds, so criterion's
//!   `runner` and `apply_nodes`, measured seconds apart, do not settle the
//!   1.2x target. This runs them interleaved, one run of each in turn
//!   (ABBA), on the same store, and prints the mean per superstep of each,
//!   the ratio of the totals and the median of the per-pair ratios; it
//!   writes them to `target/state-graph-runner-paired.json` (under
//!   `CARGO_TARGET_DIR` if set). It runs when no filter is given or the
//!   filter is part of `loop_sqlite_paired`; `STATE_GRAPH_PAIRED=0` or `1`
//!   decides instead.
//!
//! Run: `cargo bench -p state-graph --bench runner` (about 5 minutes; add
//! `-- loop_sqlite` to pick a group). LangGraph's side:
//! `benches/langgraph/graph_bench.py`, which prints both with the ratios. Under `cargo test --all-targets`
//! every benchmark runs once, at the smaller N.

use criterion::{BenchmarkId, Criterion, SamplingMode};
use serde_json::json;
use state_core::{AgentState, Message, Messages, State};
use state_graph::{CompiledGraph, Ctx, END, NodeError, START, StateGraph};
use state_store::{Store, Thread};
use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tokio::runtime::Runtime;

mod common;
use common::{benchmarking, per_superstep, runtime, thread_id};
// The interleaved (ABBA) measure, state-core's benches' own; this bench
// uses part of it.
#[allow(dead_code)]
#[path = "../../state-core/benches/common/paired.rs"]
mod paired;
use paired::{Paired, interleave, paired_wanted};

/// Supersteps per run of the loop.
const SIZES: [u64; 2] = [100, 1_000];
/// Workers of the fan-out.
const WORKERS: usize = 64;

/// The loop's state: a history and a counter (the derive writes `LoopDelta`).
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Loop {
    /// The conversation.
    #[reducer(add_messages)]
    pub messages: Messages,
    /// Times `count` ran.
    pub count: u64,
}

/// Node A: one AI message, with an id (as the LangGraph side's).
fn agent(s: &Loop) -> LoopDelta {
    Loop::delta().messages(vec![
        Message::ai(format!(
            "step {}: the beam line is nominal, current 500 mA.",
            s.count
        ))
        .with_id(format!("a{}", s.count)),
    ])
}

/// Node B: the counter.
fn count(s: &Loop) -> LoopDelta {
    Loop::delta().count(s.count + 1)
}

/// A run's input: one human message; the counter at 0.
fn loop_input() -> LoopDelta {
    Loop::delta()
        .messages(vec![Message::human("start the loop").with_id("h0")])
        .count(0)
}

/// The two-node loop, ending after `n` supersteps.
fn loop_graph(n: u64) -> CompiledGraph<Loop> {
    let mut g = StateGraph::<Loop>::new();
    g.add_node("agent", agent);
    g.add_node("count", count);
    g.add_edge(START, "agent");
    g.add_edge("agent", "count");
    g.add_conditional_edges(
        "count",
        move |s: &Loop| -> &'static str { if s.count * 2 < n { "agent" } else { END } },
        ["agent", END],
    );
    g.compile()
        .expect("the loop compiles")
        .with_recursion_limit(n as usize + 10)
}

/// What every run of the loop must end with.
fn check_loop(s: &Loop, n: u64) {
    assert_eq!(s.count, n / 2, "the loop ran {} times", s.count);
    assert_eq!(s.messages.len() as u64, n / 2 + 1);
}

/// The hand-written loop on a plain state: the same node functions, one
/// `apply` per superstep.
fn hand_written_loop(n: u64) -> Loop {
    let mut s = Loop::default();
    s.begin_turn();
    s.apply(loop_input()).expect("the input");
    loop {
        s.apply(agent(&s)).expect("agent's delta");
        s.apply(count(&s)).expect("count's delta");
        if s.count * 2 >= n {
            return s;
        }
    }
}

/// The runner's calls to the store, written out: the store's own steps on
/// the same deltas.
async fn apply_nodes_loop(store: &Store, id: &str, n: u64) -> Thread<Loop> {
    let mut t = store.thread::<Loop>(id).await.expect("open the thread");
    t.with_metadata(json!({"nodes": [START]}))
        .start_turn(loop_input())
        .await
        .expect("the input");
    loop {
        let d = agent(t.state());
        t.apply_nodes([("agent", d)]).await.expect("agent's step");
        let d = count(t.state());
        t.apply_nodes([("count", d)]).await.expect("count's step");
        if t.state().count * 2 >= n {
            return t;
        }
    }
}

/// The interrupt's node (on the loop's state): asks, then writes the
/// answer as a message.
fn approve(s: &Loop, ctx: &Ctx) -> Result<LoopDelta, NodeError> {
    let answer = ctx.interrupt(json!({"question": "run the plan?"}))?;
    let answer = answer.as_str().unwrap_or("no").to_owned();
    Ok(Loop::delta()
        .messages(vec![Message::human(answer).with_id("r1")])
        .count(s.count + 1))
}

fn interrupt_graph() -> CompiledGraph<Loop> {
    let mut g = StateGraph::<Loop>::new();
    g.add_node("approve", approve);
    g.add_edge(START, "approve");
    g.add_edge("approve", END);
    g.compile().expect("the interrupt graph compiles")
}

/// The fan-out's state.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Jokes {
    /// What to send to the workers.
    pub subjects: Vec<String>,
    /// One entry per worker.
    #[reducer(append)]
    pub jokes: Vec<String>,
}

fn joke(subject: &String) -> JokesDelta {
    Jokes::delta().jokes(vec![format!("a joke about {subject}")])
}

fn subjects() -> Vec<String> {
    (0..WORKERS).map(|i| format!("subject {i}")).collect()
}

fn fan_out_graph() -> CompiledGraph<Jokes> {
    let mut g = StateGraph::<Jokes>::new();
    let worker = g.add_worker("joke", joke);
    g.add_fan_out(START, &worker, |s: &Jokes| s.subjects.clone());
    g.add_edge("joke", END);
    g.compile().expect("the fan-out compiles")
}

fn check_jokes(s: &Jokes) {
    assert_eq!(s.jokes.len(), WORKERS);
    assert_eq!(
        s.jokes[WORKERS - 1],
        format!("a joke about subject {}", WORKERS - 1)
    );
}

/// A SQLite store on a file in a temporary directory, on disk.
struct SqliteStore {
    store: Store,
    _dir: tempfile::TempDir,
}

impl SqliteStore {
    async fn open() -> SqliteStore {
        let dir = match std::env::var_os("STATE_GRAPH_BENCH_DIR") {
            Some(base) => tempfile::tempdir_in(base),
            None => tempfile::tempdir(),
        }
        .expect("a temporary directory");
        let path: PathBuf = dir.path().join("runner.db");
        let store = Store::sqlite(&path).await.expect("open the SQLite store");
        SqliteStore { store, _dir: dir }
    }
}

fn main() {
    let rt = runtime();
    // Pools and threads are dropped inside the runtime's context.
    let _context = rt.enter();
    let mut c = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    loop_no_store(&mut c, &rt);
    loop_memory(&mut c, &rt);
    loop_sqlite(&mut c, &rt);
    interrupt_resume(&mut c, &rt);
    fan_out(&mut c, &rt);
    c.final_summary();
    if paired_wanted("STATE_GRAPH_PAIRED", "loop_sqlite_paired") {
        loop_sqlite_paired(&rt);
    }
}

fn sizes() -> &'static [u64] {
    if benchmarking() { &SIZES } else { &SIZES[..1] }
}

fn loop_no_store(c: &mut Criterion, rt: &Runtime) {
    let mut group = c.benchmark_group("loop_no_store");
    group.sampling_mode(SamplingMode::Flat);
    for &n in sizes() {
        let app = loop_graph(n);
        group.bench_function(BenchmarkId::new("runner", n), |b| {
            b.iter_custom(|iters| {
                per_superstep(n, iters, || {
                    let start = Instant::now();
                    let s = rt.block_on(app.invoke(loop_input())).expect("a run");
                    let elapsed = start.elapsed();
                    check_loop(&s, n);
                    drop(black_box(s));
                    elapsed
                })
            });
        });
        group.bench_function(BenchmarkId::new("hand_written", n), |b| {
            b.iter_custom(|iters| {
                per_superstep(n, iters, || {
                    let start = Instant::now();
                    let s = black_box(hand_written_loop(n));
                    let elapsed = start.elapsed();
                    check_loop(&s, n);
                    drop(s);
                    elapsed
                })
            });
        });
    }
    group.finish();
}

fn loop_memory(c: &mut Criterion, rt: &Runtime) {
    let mut group = c.benchmark_group("loop_memory");
    group.sampling_mode(SamplingMode::Flat);
    for &n in sizes() {
        let app = loop_graph(n);
        group.bench_function(BenchmarkId::new("runner", n), |b| {
            b.iter_custom(|iters| {
                per_superstep(n, iters, || {
                    let app = app.clone().with_store(Store::memory());
                    let start = Instant::now();
                    let out = rt
                        .block_on(app.invoke_thread("loop", loop_input()))
                        .expect("a run");
                    let elapsed = start.elapsed();
                    check_loop(out.state(), n);
                    drop(black_box((out, app)));
                    elapsed
                })
            });
        });
        group.bench_function(BenchmarkId::new("apply_nodes", n), |b| {
            b.iter_custom(|iters| {
                per_superstep(n, iters, || {
                    let store = Store::memory();
                    let start = Instant::now();
                    let t = rt.block_on(apply_nodes_loop(&store, "loop", n));
                    let elapsed = start.elapsed();
                    check_loop(t.state(), n);
                    drop(black_box((t, store)));
                    elapsed
                })
            });
        });
    }
    group.finish();
}

fn loop_sqlite(c: &mut Criterion, rt: &Runtime) {
    let mut group = c.benchmark_group("loop_sqlite");
    group.sampling_mode(SamplingMode::Flat).sample_size(10);
    let mut store: Option<SqliteStore> = None;
    for &n in sizes() {
        let app = loop_graph(n);
        let mut app_on: Option<CompiledGraph<Loop>> = None;
        group.bench_function(BenchmarkId::new("runner", n), |b| {
            // Set up on first use: a filtered-out benchmark costs nothing.
            let store = store.get_or_insert_with(|| rt.block_on(SqliteStore::open()));
            let app = app_on.get_or_insert_with(|| app.clone().with_store(store.store.clone()));
            b.iter_custom(|iters| {
                per_superstep(n, iters, || {
                    let id = thread_id("runner");
                    let start = Instant::now();
                    let out = rt
                        .block_on(app.invoke_thread(&id, loop_input()))
                        .expect("a run");
                    let elapsed = start.elapsed();
                    check_loop(out.state(), n);
                    drop(black_box(out));
                    rt.block_on(store.store.delete_thread(&id))
                        .expect("delete the thread");
                    elapsed
                })
            });
        });
        group.bench_function(BenchmarkId::new("apply_nodes", n), |b| {
            let store = store.get_or_insert_with(|| rt.block_on(SqliteStore::open()));
            b.iter_custom(|iters| {
                per_superstep(n, iters, || {
                    let id = thread_id("apply_nodes");
                    let start = Instant::now();
                    let t = rt.block_on(apply_nodes_loop(&store.store, &id, n));
                    let elapsed = start.elapsed();
                    check_loop(t.state(), n);
                    drop(black_box(t));
                    rt.block_on(store.store.delete_thread(&id))
                        .expect("delete the thread");
                    elapsed
                })
            });
        });
    }
    group.finish();
}

fn interrupt_resume(c: &mut Criterion, rt: &Runtime) {
    let mut group = c.benchmark_group("interrupt_resume");
    let app = interrupt_graph();
    group.bench_function(BenchmarkId::new("memory", "runner"), |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let app = app.clone().with_store(Store::memory());
                let start = Instant::now();
                let paused = rt
                    .block_on(app.invoke_thread("review", loop_input()))
                    .expect("a run that pauses");
                let done = rt
                    .block_on(app.resume("review", json!("yes")))
                    .expect("the resume");
                total += start.elapsed();
                assert!(paused.is_interrupted() && !done.is_interrupted());
                assert_eq!(done.state().count, 1);
                drop(black_box((paused, done, app)));
            }
            total
        });
    });
    group.finish();
}

fn fan_out(c: &mut Criterion, rt: &Runtime) {
    let mut group = c.benchmark_group("fan_out_64");
    let app = fan_out_graph();
    let input = || Jokes::delta().subjects(subjects());
    group.bench_function(BenchmarkId::new("no_store", "runner"), |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let input = input();
                let start = Instant::now();
                let s = rt.block_on(app.invoke(input)).expect("a run");
                total += start.elapsed();
                check_jokes(&s);
                drop(black_box(s));
            }
            total
        });
    });
    group.bench_function(BenchmarkId::new("no_store", "hand_written"), |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let input = input();
                let start = Instant::now();
                let mut s = Jokes::default();
                s.begin_turn();
                s.apply(input).expect("the input");
                let deltas: Vec<JokesDelta> = s.subjects.iter().map(joke).collect();
                s.apply_all(deltas).expect("the workers' deltas");
                let s = black_box(s);
                total += start.elapsed();
                check_jokes(&s);
            }
            total
        });
    });
    group.bench_function(BenchmarkId::new("memory", "runner"), |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let app = app.clone().with_store(Store::memory());
                let input = input();
                let start = Instant::now();
                let out = rt
                    .block_on(app.invoke_thread("jokes", input))
                    .expect("a run");
                total += start.elapsed();
                check_jokes(out.state());
                drop(black_box((out, app)));
            }
            total
        });
    });
    group.finish();
}

/// Per-superstep times of interleaved runs of the runner and of the
/// store's own `apply_nodes` on one SQLite store.
fn loop_sqlite_paired(rt: &Runtime) {
    let store = rt.block_on(SqliteStore::open());
    let mut report = Vec::new();
    eprintln!();
    eprintln!("loop_sqlite_paired: runner and apply_nodes interleaved (ABBA), per superstep");
    for &(n, pairs) in &[(100u64, 40usize), (1_000, 12)] {
        let app = loop_graph(n).with_store(store.store.clone());
        let runner = || {
            let id = thread_id("paired-runner");
            let start = Instant::now();
            let out = rt
                .block_on(app.invoke_thread(&id, loop_input()))
                .expect("a run");
            let elapsed = start.elapsed();
            check_loop(out.state(), n);
            rt.block_on(store.store.delete_thread(&id))
                .expect("delete the thread");
            (elapsed, n as usize)
        };
        let by_hand = || {
            let id = thread_id("paired-apply-nodes");
            let start = Instant::now();
            let t = rt.block_on(apply_nodes_loop(&store.store, &id, n));
            let elapsed = start.elapsed();
            check_loop(t.state(), n);
            drop(t);
            rt.block_on(store.store.delete_thread(&id))
                .expect("delete the thread");
            (elapsed, n as usize)
        };
        let paired = interleave(pairs, runner, by_hand);
        let (a, b) = (&paired.a, &paired.b);
        let (ma, mb) = (Paired::mean(a), Paired::mean(b));
        eprintln!(
            "  N = {n:>5}, {pairs} pairs: runner {:.1} µs (median {:.1}), apply_nodes {:.1} µs (median {:.1}); \
             runner / apply_nodes: {:.3}x of the totals, median of the pairs {:.3}x",
            ma * 1e6,
            Paired::median(a) * 1e6,
            mb * 1e6,
            Paired::median(b) * 1e6,
            paired.ratio_of_means(),
            paired.median_pair_ratio()
        );
        report.push(json!({
            "n": n,
            "pairs": pairs,
            "runner_mean_s": ma,
            "runner_median_s": Paired::median(a),
            "apply_nodes_mean_s": mb,
            "apply_nodes_median_s": Paired::median(b),
            "ratio_of_means": paired.ratio_of_means(),
            "median_pair_ratio": paired.median_pair_ratio(),
        }));
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let crate_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
            crate_dir.parent().unwrap_or(crate_dir).join("target")
        });
    let path = target.join("state-graph-runner-paired.json");
    match std::fs::write(&path, format!("{:#}\n", json!(report))) {
        Ok(()) => eprintln!("  wrote {}", path.display()),
        Err(e) => eprintln!("  could not write {}: {e}", path.display()),
    }
}
