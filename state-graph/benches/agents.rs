//! The agent half of the graph runner, measured (issue 32's speed targets;
//! BENCHMARKS.md, "Agents: Command, subgraphs, get_state"): each workload
//! beside what it must cost no more than, in the same run, and the same
//! workloads on LangGraph in `benches/langgraph/agent_bench.py`.
//!
//! - `handoff/{no_store,memory}/{command,router}`: a supervisor loop of 10
//!   handoffs. The state (`Team`) is a `messages` history
//!   (`add_messages`), a counter and a `next` string. `supervisor` appends
//!   one AI message with an id (`s{count}`) and hands off to `worker`
//!   while `count < 10`, else ends; `worker` appends one AI message with
//!   an id (`w{count}`, runner.rs's text) and increments the counter; an
//!   edge goes from `worker` back to `supervisor`. A run: supervisor →
//!   worker → supervisor … 10 handoffs, then `END`: 21 supersteps (11 of
//!   `supervisor`, 10 of `worker`), the history growing from 1 to 22
//!   messages. **The time reported is per run** (one `invoke`, or one
//!   `invoke_thread` on a new thread of a fresh `Store::memory()`, made
//!   and dropped untimed; the input is one human message, `count = 0`).
//!   - `command`: `supervisor` returns `Command::goto(next).update(delta)`
//!     and is added with `.destinations(["worker", END])`.
//!   - `router`: `supervisor` returns its delta with `next` set to its
//!     choice, and a conditional edge after it routes on `s.next`
//!     (`fn(&Team) -> &str`).
//! - `subgraph/{no_store,memory,sqlite}/{direct,subgraph,mapped}/{10,100}`:
//!   runner.rs's two-node loop (`agent` appends a message, `count`
//!   increments, a router goes back to `agent` until N supersteps ran),
//!   N = 10 and 100. **The time reported is per superstep of the loop**
//!   (criterion's iterations are supersteps; whole runs are timed and
//!   divided by N, as runner.rs's loop).
//!   - `direct`: the loop is the graph (`loop_graph(n)`): N supersteps.
//!   - `subgraph`: a parent over the same state, START → `inner` → END,
//!     where `inner` is the compiled loop added with `add_subgraph`: one
//!     parent superstep, inside which the child runs its N supersteps
//!     (its writes, composed, are the node's write in the parent).
//!   - `mapped`: the same loop over another state type (`Inner`, the same
//!     fields) added with `add_subgraph_mapped`: `into_child` hands it the
//!     parent's history and counter, `from_child` writes back the messages
//!     the child added and its counter. Every variant ends with the same
//!     parent state.
//!
//!   Memory: a fresh `Store::memory()` per run (the child's supersteps are
//!   logged as subgraph steps under the parent's thread). SQLite:
//!   `Store::sqlite` on a file in a temporary directory (WAL,
//!   `synchronous = FULL`; `STATE_GRAPH_BENCH_DIR` picks its parent), one
//!   store for the group, a new thread per run, deleted untimed.
//! - `get_state/{memory,sqlite}/{get_state,load}/{100,1000}`: a thread on
//!   which the loop ran once with N = 100 or 1,000 supersteps (N + 1
//!   steps; the history ends at N/2 + 1 messages), written untimed before
//!   the group. `get_state`: `app.get_state(thread)` (a `Snapshot`: the
//!   state, `next`, interrupts, the last step's metadata); `load`:
//!   `store.thread::<Loop>(thread)`, the store opening and loading the
//!   same thread. Per call. Default `SnapshotPolicy` everywhere.
//! - `agents_paired` (printed, not criterion; after criterion's runs):
//!   criterion measures each benchmark seconds apart, and this machine's
//!   load moves by more than the 5% the handoff target allows. This runs
//!   each pair of the targets interleaved (ABBA, `state-core`'s
//!   `paired.rs`), with the load average, and prints the mean of each, the
//!   ratio of the means and the median of the per-pair ratios: handoff
//!   `command` / `router`, `subgraph` and `mapped` / `direct` per
//!   superstep (and per superstep *inside* the subgraph,
//!   `subgraph/<backend>/<variant>/inside`: each run at N = 100 timed
//!   right after one at N = 10, `(T(100) - T(10)) / 90`, so that the
//!   invocation's fixed cost cancels out),
//!   `get_state` / `load`; and on `Store::memory()`,
//!   `get_state` right after a step (the step untimed: the store's kept
//!   state brought up to date) / `load`. One round of a side is a batch of
//!   runs (or calls) timed together. It writes them to
//!   `target/state-graph-agents-paired.json` (under `CARGO_TARGET_DIR` if
//!   set). It runs when no filter is given or the filter is part of
//!   `agents_paired`; `STATE_GRAPH_PAIRED=0` or `1` decides instead.
//!
//! - `AGENTS_DRIVER=<group>/<backend>/<variant>[/<n>]` (`handoff/memory/command`,
//!   `subgraph/no_store/subgraph/10`; no store or memory) runs
//!   `AGENTS_DRIVER_RUNS` runs (default 100) of that workload alone, on a
//!   current-thread runtime, and exits: under
//!   `valgrind --tool=callgrind --toggle-collect='*timed_section*'` the
//!   count is of the timed part of each run alone (as criterion times it);
//!   the difference of two counts (say 101 and 1 runs) is per 100 runs.
//!
//! Run: `cargo bench -p state-graph --bench agents` (about 5 minutes; add
//! `-- handoff` to pick a group, `-- agents_paired` for the interleaved
//! runs alone). LangGraph's side: `benches/langgraph/agent_bench.py`,
//! which prints both with the ratios. Under `cargo test --all-targets`
//! every benchmark runs once, at the smaller N.

use criterion::{BenchmarkId, Criterion, SamplingMode};
use serde_json::json;
use state_core::{AgentState, Message, Messages, State};
use state_graph::{Command, CompiledGraph, END, START, StateGraph};
use state_store::Store;
use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tokio::runtime::Runtime;

mod common;
use common::{benchmarking, per_superstep, runtime, thread_id};
// The interleaved (ABBA) measure, state-core's benches' own.
#[allow(dead_code)]
#[path = "../../state-core/benches/common/paired.rs"]
mod paired;
use paired::{Paired, interleave, load_average, paired_wanted};

/// Handoffs from the supervisor to the worker per run.
const HANDOFFS: u64 = 10;
/// Supersteps of a handoff run: the supervisor once more than the worker.
const HANDOFF_STEPS: u64 = 2 * HANDOFFS + 1;
/// Supersteps of the loop run directly or inside a subgraph.
const SUB_SIZES: [u64; 2] = [10, 100];
/// Supersteps of the loop that wrote the thread `get_state` reads.
const THREAD_SIZES: [u64; 2] = [100, 1_000];

// ---------------------------------------------------------------- handoff

/// The supervisor's team: a history, a counter, and where the supervisor
/// sent the run (the `router` variant's field; the `command` variant
/// leaves it empty).
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Team {
    /// The conversation.
    #[reducer(add_messages)]
    pub messages: Messages,
    /// Times `worker` ran.
    pub count: u64,
    /// The supervisor's choice (router variant).
    pub next: String,
}

/// What the supervisor decides: the worker while handoffs are left.
fn choice(s: &Team) -> &'static str {
    if s.count < HANDOFFS { "worker" } else { END }
}

/// The supervisor's message (both variants).
fn supervisor_delta(s: &Team) -> TeamDelta {
    Team::delta().messages(vec![
        Message::ai(format!("supervisor {}: the worker goes next.", s.count))
            .with_id(format!("s{}", s.count)),
    ])
}

/// `command`: the handoff as a `Command`.
fn supervisor_command(s: &Team) -> Command<TeamDelta> {
    Command::goto(choice(s)).update(supervisor_delta(s))
}

/// `router`: the choice written to `next`, for the conditional edge.
fn supervisor_router(s: &Team) -> TeamDelta {
    supervisor_delta(s).next(choice(s))
}

/// The conditional edge of the `router` variant.
fn route_next(s: &Team) -> &str {
    s.next.as_str()
}

/// The worker: one message (runner.rs's `agent`'s text) and the counter.
fn worker(s: &Team) -> TeamDelta {
    Team::delta()
        .messages(vec![
            Message::ai(format!(
                "step {}: the beam line is nominal, current 500 mA.",
                s.count
            ))
            .with_id(format!("w{}", s.count)),
        ])
        .count(s.count + 1)
}

fn team_input() -> TeamDelta {
    Team::delta()
        .messages(vec![Message::human("run the team").with_id("h0")])
        .count(0)
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Handoff {
    Command,
    Router,
}

impl Handoff {
    fn name(self) -> &'static str {
        match self {
            Handoff::Command => "command",
            Handoff::Router => "router",
        }
    }
}

fn handoff_graph(variant: Handoff) -> CompiledGraph<Team> {
    let mut g = StateGraph::<Team>::new();
    match variant {
        Handoff::Command => {
            g.add_node("supervisor", supervisor_command)
                .destinations(["worker", END]);
        }
        Handoff::Router => {
            g.add_node("supervisor", supervisor_router);
            g.add_conditional_edges("supervisor", route_next, ["worker", END]);
        }
    }
    g.add_node("worker", worker);
    g.add_edge(START, "supervisor");
    g.add_edge("worker", "supervisor");
    g.compile()
        .expect("the supervisor loop compiles")
        .with_recursion_limit(HANDOFF_STEPS as usize + 10)
}

fn check_team(s: &Team) {
    assert_eq!(s.count, HANDOFFS);
    assert_eq!(s.messages.len() as u64, HANDOFF_STEPS + 1);
    assert_eq!(s.messages.last().and_then(|m| m.id()), Some("s10"));
}

// ---------------------------------------------------------------- the loop

/// runner.rs's loop state: a history and a counter.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Loop {
    /// The conversation.
    #[reducer(add_messages)]
    pub messages: Messages,
    /// Times `count` ran.
    pub count: u64,
}

/// The same fields as another type: the mapped subgraph's state.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Inner {
    /// The conversation, as handed in.
    #[reducer(add_messages)]
    pub messages: Messages,
    /// Times `count` ran.
    pub count: u64,
}

fn agent_message(count: u64) -> Message {
    Message::ai(format!(
        "step {count}: the beam line is nominal, current 500 mA."
    ))
    .with_id(format!("a{count}"))
}

fn agent(s: &Loop) -> LoopDelta {
    Loop::delta().messages(vec![agent_message(s.count)])
}

fn count(s: &Loop) -> LoopDelta {
    Loop::delta().count(s.count + 1)
}

fn inner_agent(s: &Inner) -> InnerDelta {
    Inner::delta().messages(vec![agent_message(s.count)])
}

fn inner_count(s: &Inner) -> InnerDelta {
    Inner::delta().count(s.count + 1)
}

fn loop_input() -> LoopDelta {
    Loop::delta()
        .messages(vec![Message::human("start the loop").with_id("h0")])
        .count(0)
}

/// runner.rs's two-node loop, ending after `n` supersteps.
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

/// The same loop over `Inner`.
fn inner_graph(n: u64) -> CompiledGraph<Inner> {
    let mut g = StateGraph::<Inner>::new();
    g.add_node("agent", inner_agent);
    g.add_node("count", inner_count);
    g.add_edge(START, "agent");
    g.add_edge("agent", "count");
    g.add_conditional_edges(
        "count",
        move |s: &Inner| -> &'static str { if s.count * 2 < n { "agent" } else { END } },
        ["agent", END],
    );
    g.compile()
        .expect("the inner loop compiles")
        .with_recursion_limit(n as usize + 10)
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Sub {
    Direct,
    Subgraph,
    Mapped,
}

impl Sub {
    fn name(self) -> &'static str {
        match self {
            Sub::Direct => "direct",
            Sub::Subgraph => "subgraph",
            Sub::Mapped => "mapped",
        }
    }
}

/// The loop of `n` supersteps: the graph itself, or inside a parent.
fn sub_graph(variant: Sub, n: u64) -> CompiledGraph<Loop> {
    let mut g = StateGraph::<Loop>::new();
    match variant {
        Sub::Direct => return loop_graph(n),
        Sub::Subgraph => {
            g.add_subgraph("inner", loop_graph(n));
        }
        Sub::Mapped => {
            g.add_subgraph_mapped(
                "inner",
                inner_graph(n),
                |s: &Loop| {
                    Inner::delta()
                        .messages(s.messages.iter().cloned().collect::<Vec<_>>())
                        .count(s.count)
                },
                |c: &Inner| {
                    Loop::delta()
                        .messages(c.messages.iter().skip(1).cloned().collect::<Vec<_>>())
                        .count(c.count)
                },
            );
        }
    }
    g.add_edge(START, "inner");
    g.add_edge("inner", END);
    g.compile()
        .expect("the parent compiles")
        .with_recursion_limit(n as usize + 10)
}

/// What every run of the loop must end with.
fn check_loop(s: &Loop, n: u64) {
    assert_eq!(s.count, n / 2, "the loop ran {} times", s.count);
    assert_eq!(s.messages.len() as u64, n / 2 + 1);
}

// ---------------------------------------------------------------- helpers

/// Criterion's iterations are runs (or calls), each timed by `run`.
fn per_run(iters: u64, mut run: impl FnMut() -> Duration) -> Duration {
    (0..iters).map(|_| run()).sum()
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
        let path: PathBuf = dir.path().join("agents.db");
        let store = Store::sqlite(&path).await.expect("open the SQLite store");
        SqliteStore { store, _dir: dir }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Backend {
    NoStore,
    Memory,
    Sqlite,
}

impl Backend {
    fn name(self) -> &'static str {
        match self {
            Backend::NoStore => "no_store",
            Backend::Memory => "memory",
            Backend::Sqlite => "sqlite",
        }
    }
}

/// One run of `app`, timed: `invoke` without a store, `invoke_thread` on
/// a fresh memory store, or on a new thread of `sqlite` (deleted after).
fn timed_run<S, D>(
    rt: &Runtime,
    app: &CompiledGraph<S>,
    backend: Backend,
    sqlite: Option<&Store>,
    input: impl FnOnce() -> D,
    check: impl FnOnce(&S),
) -> Duration
where
    S: state_graph::GraphState + State<Delta = D>,
{
    let input = input();
    match backend {
        Backend::NoStore => {
            let (s, elapsed) = timed_section(|| rt.block_on(app.invoke(input)));
            let s = s.expect("a run");
            check(&s);
            drop(black_box(s));
            elapsed
        }
        Backend::Memory => {
            let app = app.clone().with_store(Store::memory());
            let (out, elapsed) = timed_section(|| rt.block_on(app.invoke_thread("run", input)));
            let out = out.expect("a run");
            check(out.state());
            drop(black_box((out, app)));
            elapsed
        }
        Backend::Sqlite => {
            let store = sqlite.expect("a SQLite store");
            let id = thread_id("run");
            let (out, elapsed) = timed_section(|| rt.block_on(app.invoke_thread(&id, input)));
            let out = out.expect("a run");
            check(out.state());
            drop(black_box(out));
            rt.block_on(store.delete_thread(&id))
                .expect("delete the thread");
            elapsed
        }
    }
}

/// What a run times, out of line so that callgrind can count it alone
/// (`--toggle-collect='*timed_section*'`, see [`driver`]).
#[inline(never)]
fn timed_section<T>(run: impl FnOnce() -> T) -> (T, Duration) {
    let start = Instant::now();
    let out = run();
    (out, start.elapsed())
}

/// `AGENTS_DRIVER=<group>/<backend>/<variant>[/<n>]`: that workload's runs
/// alone, for callgrind. Returns whether it ran.
fn driver() -> bool {
    let Ok(which) = std::env::var("AGENTS_DRIVER") else {
        return false;
    };
    let runs: u32 = std::env::var("AGENTS_DRIVER_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    // One thread: callgrind counts the toggled function's thread only.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let parts: Vec<&str> = which.split('/').collect();
    let backend = match parts.get(1) {
        Some(&"no_store") => Backend::NoStore,
        Some(&"memory") => Backend::Memory,
        _ => panic!("AGENTS_DRIVER's backend is no_store or memory: {which}"),
    };
    let mut took = Duration::ZERO;
    match parts[..] {
        ["handoff", _, variant] => {
            let variant = match variant {
                "command" => Handoff::Command,
                _ => Handoff::Router,
            };
            let app = handoff_graph(variant);
            for _ in 0..runs {
                took += timed_run(&rt, &app, backend, None, team_input, check_team);
            }
        }
        ["subgraph", _, variant, n] => {
            let variant = match variant {
                "direct" => Sub::Direct,
                "subgraph" => Sub::Subgraph,
                _ => Sub::Mapped,
            };
            let n: u64 = n.parse().expect("AGENTS_DRIVER's n is a number");
            let app = sub_graph(variant, n);
            for _ in 0..runs {
                took += timed_run(&rt, &app, backend, None, loop_input, |s| check_loop(s, n));
            }
        }
        _ => panic!(
            "AGENTS_DRIVER is handoff/<backend>/<variant> or subgraph/<backend>/<variant>/<n>: {which}"
        ),
    }
    eprintln!(
        "{which}: {runs} runs, {:.2} µs each",
        took.as_secs_f64() * 1e6 / f64::from(runs)
    );
    true
}

// ---------------------------------------------------------------- criterion

fn main() {
    if driver() {
        return;
    }
    let rt = runtime();
    // Pools and threads are dropped inside the runtime's context.
    let _context = rt.enter();
    let mut c = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    handoff(&mut c, &rt);
    subgraph(&mut c, &rt);
    get_state(&mut c, &rt);
    c.final_summary();
    if paired_wanted("STATE_GRAPH_PAIRED", "agents_paired") {
        agents_paired(&rt);
    }
}

fn handoff(c: &mut Criterion, rt: &Runtime) {
    let mut group = c.benchmark_group("handoff");
    for backend in [Backend::NoStore, Backend::Memory] {
        for variant in [Handoff::Command, Handoff::Router] {
            let app = handoff_graph(variant);
            group.bench_function(BenchmarkId::new(backend.name(), variant.name()), |b| {
                b.iter_custom(|iters| {
                    per_run(iters, || {
                        timed_run(rt, &app, backend, None, team_input, check_team)
                    })
                });
            });
        }
    }
    group.finish();
}

fn sub_sizes() -> &'static [u64] {
    if benchmarking() {
        &SUB_SIZES
    } else {
        &SUB_SIZES[..1]
    }
}

fn subgraph(c: &mut Criterion, rt: &Runtime) {
    let mut sqlite: Option<SqliteStore> = None;
    for backend in [Backend::NoStore, Backend::Memory, Backend::Sqlite] {
        let mut group = c.benchmark_group(format!("subgraph_{}", backend.name()));
        group.sampling_mode(SamplingMode::Flat);
        if backend == Backend::Sqlite {
            group.sample_size(10);
        }
        for &n in sub_sizes() {
            for variant in [Sub::Direct, Sub::Subgraph, Sub::Mapped] {
                let app = sub_graph(variant, n);
                let mut app_on: Option<CompiledGraph<Loop>> = None;
                group.bench_function(BenchmarkId::new(variant.name(), n), |b| {
                    // Set up on first use: a filtered-out benchmark costs nothing.
                    let (app, store) = if backend == Backend::Sqlite {
                        let store = sqlite.get_or_insert_with(|| rt.block_on(SqliteStore::open()));
                        let app = app_on
                            .get_or_insert_with(|| app.clone().with_store(store.store.clone()));
                        (&*app, Some(&store.store))
                    } else {
                        (&app, None)
                    };
                    b.iter_custom(|iters| {
                        per_superstep(n, iters, || {
                            timed_run(rt, app, backend, store, loop_input, |s| check_loop(s, n))
                        })
                    });
                });
            }
        }
        group.finish();
    }
}

fn thread_sizes() -> &'static [u64] {
    if benchmarking() {
        &THREAD_SIZES
    } else {
        &THREAD_SIZES[..1]
    }
}

/// A store holding thread `loop-{n}` for each size, written by the loop.
fn written_threads(rt: &Runtime, store: &Store) {
    for &n in thread_sizes() {
        let app = loop_graph(n).with_store(store.clone());
        let out = rt
            .block_on(app.invoke_thread(&format!("loop-{n}"), loop_input()))
            .expect("write the thread");
        check_loop(out.state(), n);
        assert_eq!(out.seq(), n + 1);
    }
}

fn get_state_once(rt: &Runtime, app: &CompiledGraph<Loop>, id: &str, n: u64) -> Duration {
    let start = Instant::now();
    let snap = rt.block_on(app.get_state(id)).expect("get_state");
    let elapsed = start.elapsed();
    check_loop(snap.state(), n);
    assert!(snap.next().is_empty());
    drop(black_box(snap));
    elapsed
}

fn load_once(rt: &Runtime, store: &Store, id: &str, n: u64) -> Duration {
    let start = Instant::now();
    let t = rt
        .block_on(store.thread::<Loop>(id))
        .expect("load the thread");
    let elapsed = start.elapsed();
    check_loop(t.state(), n);
    drop(black_box(t));
    elapsed
}

fn get_state(c: &mut Criterion, rt: &Runtime) {
    let mut sqlite: Option<SqliteStore> = None;
    let memory = Store::memory();
    let mut memory_written = false;
    for backend in [Backend::Memory, Backend::Sqlite] {
        let mut group = c.benchmark_group(format!("get_state_{}", backend.name()));
        for &n in thread_sizes() {
            let id = format!("loop-{n}");
            for side in ["get_state", "load"] {
                group.bench_function(BenchmarkId::new(side, n), |b| {
                    // Written on first use: a filtered-out group costs nothing.
                    let store = match backend {
                        Backend::Sqlite => {
                            &sqlite
                                .get_or_insert_with(|| {
                                    let s = rt.block_on(SqliteStore::open());
                                    written_threads(rt, &s.store);
                                    s
                                })
                                .store
                        }
                        _ => {
                            if !memory_written {
                                written_threads(rt, &memory);
                                memory_written = true;
                            }
                            &memory
                        }
                    };
                    let app = loop_graph(n).with_store(store.clone());
                    b.iter_custom(|iters| {
                        per_run(iters, || match side {
                            "get_state" => get_state_once(rt, &app, &id, n),
                            _ => load_once(rt, store, &id, n),
                        })
                    });
                });
            }
        }
        group.finish();
    }
}

// ---------------------------------------------------------------- paired

/// One interleaved comparison: `a` and `b` in turn, `rounds` rounds of
/// `batch` runs each; printed and returned as JSON.
fn pair(
    label: &str,
    (a_name, b_name): (&str, &str),
    unit: &str,
    rounds: usize,
    a: impl FnMut() -> (Duration, usize),
    b: impl FnMut() -> (Duration, usize),
) -> serde_json::Value {
    let paired = interleave(rounds, a, b);
    let (pa, pb) = (&paired.a, &paired.b);
    let (ma, mb) = (Paired::mean(pa), Paired::mean(pb));
    eprintln!(
        "  {label:<26} {a_name} {:>8.2} µs, {b_name} {:>8.2} µs {unit}: {a_name} / {b_name} {:.3}x of the means, \
         median of the pairs {:.3}x ({rounds} rounds; load {})",
        ma * 1e6,
        mb * 1e6,
        paired.ratio_of_means(),
        paired.median_pair_ratio(),
        load_average()
    );
    json!({
        "label": label,
        "a": a_name,
        "b": b_name,
        "unit": unit,
        "rounds": rounds,
        "a_mean_s": ma,
        "a_median_s": Paired::median(pa),
        "b_mean_s": mb,
        "b_median_s": Paired::median(pb),
        "ratio_of_means": paired.ratio_of_means(),
        "median_pair_ratio": paired.median_pair_ratio(),
        "load_average": load_average(),
    })
}

/// `runs` timed runs as one round: their total and their count.
fn batch(runs: usize, scale: u64, mut run: impl FnMut() -> Duration) -> (Duration, usize) {
    let total: Duration = (0..runs).map(|_| run()).sum();
    (total, runs * scale as usize)
}

fn agents_paired(rt: &Runtime) {
    let mut report = Vec::new();
    eprintln!();
    eprintln!(
        "agents_paired: interleaved (ABBA); load average at the start {}",
        load_average()
    );

    // Handoffs: per run of 10 handoffs.
    let command = handoff_graph(Handoff::Command);
    let router = handoff_graph(Handoff::Router);
    for (backend, rounds, runs) in [(Backend::NoStore, 400, 40), (Backend::Memory, 300, 20)] {
        let label = format!("handoff/{}", backend.name());
        let mut row = pair(
            &label,
            ("command", "router"),
            "per run",
            rounds,
            || {
                batch(runs, 1, || {
                    timed_run(rt, &command, backend, None, team_input, check_team)
                })
            },
            || {
                batch(runs, 1, || {
                    timed_run(rt, &router, backend, None, team_input, check_team)
                })
            },
        );
        row["workload"] = json!("handoff");
        row["backend"] = json!(backend.name());
        report.push(row);
    }

    // Subgraphs: per superstep of the loop.
    let sqlite = rt.block_on(SqliteStore::open());
    for backend in [Backend::NoStore, Backend::Memory, Backend::Sqlite] {
        let store = (backend == Backend::Sqlite).then_some(&sqlite.store);
        let on = |app: CompiledGraph<Loop>| match store {
            Some(s) => app.with_store(s.clone()),
            None => app,
        };
        for &n in &SUB_SIZES {
            let (rounds, runs) = match (backend, n) {
                (Backend::Sqlite, 10) => (40, 3),
                (Backend::Sqlite, _) => (12, 1),
                (_, 10) => (300, 40),
                (_, _) => (200, 4),
            };
            let direct = on(sub_graph(Sub::Direct, n));
            for variant in [Sub::Subgraph, Sub::Mapped] {
                let nested = on(sub_graph(variant, n));
                let label = format!("subgraph/{}/{}/{n}", backend.name(), variant.name());
                let mut row = pair(
                    &label,
                    (variant.name(), "direct"),
                    "per superstep",
                    rounds,
                    || {
                        batch(runs, n, || {
                            timed_run(rt, &nested, backend, store, loop_input, |s| {
                                check_loop(s, n)
                            })
                        })
                    },
                    || {
                        batch(runs, n, || {
                            timed_run(rt, &direct, backend, store, loop_input, |s| {
                                check_loop(s, n)
                            })
                        })
                    },
                );
                row["workload"] = json!("subgraph");
                row["backend"] = json!(backend.name());
                row["variant"] = json!(variant.name());
                row["n"] = json!(n);
                report.push(row);
            }
        }
        // A superstep inside the subgraph, counted alone: what one more
        // superstep of the loop adds to a run. Each run at N = 100 is
        // timed right after one at N = 10 of the same graph, and the
        // difference taken, divided by 90: the invocation's fixed cost
        // cancels out, and so does a host that changes speed between
        // rounds. What grows with the loop stays in (for `mapped`, the
        // messages `from_child` writes back, which the parent logs again).
        let (small, large) = (SUB_SIZES[0], SUB_SIZES[1]);
        let (rounds, runs) = match backend {
            Backend::Sqlite => (12, 1),
            _ => (200, 4),
        };
        let grown = |variant: Sub| (on(sub_graph(variant, small)), on(sub_graph(variant, large)));
        let run_of = |app: &CompiledGraph<Loop>, n: u64| {
            timed_run(rt, app, backend, store, loop_input, |s| check_loop(s, n))
        };
        let direct = grown(Sub::Direct);
        for variant in [Sub::Subgraph, Sub::Mapped] {
            let nested = grown(variant);
            let label = format!("subgraph/{}/{}/inside", backend.name(), variant.name());
            let added = |(at_small, at_large): &(CompiledGraph<Loop>, CompiledGraph<Loop>)| {
                batch(runs, large - small, || {
                    let before = run_of(at_small, small);
                    run_of(at_large, large).saturating_sub(before)
                })
            };
            let mut row = pair(
                &label,
                (variant.name(), "direct"),
                "per superstep inside",
                rounds,
                || added(&nested),
                || added(&direct),
            );
            row["workload"] = json!("subgraph_inside");
            row["backend"] = json!(backend.name());
            row["variant"] = json!(variant.name());
            report.push(row);
        }
    }

    // get_state against loading the thread: per call.
    let memory = Store::memory();
    written_threads(rt, &memory);
    written_threads(rt, &sqlite.store);
    for (backend, store) in [(Backend::Memory, &memory), (Backend::Sqlite, &sqlite.store)] {
        for &n in &THREAD_SIZES {
            let id = format!("loop-{n}");
            let app = loop_graph(n).with_store(store.clone());
            let (rounds, calls) = if n <= 100 { (200, 20) } else { (100, 4) };
            let label = format!("get_state/{}/{n}", backend.name());
            let mut row = pair(
                &label,
                ("get_state", "load"),
                "per call",
                rounds,
                || batch(calls, 1, || get_state_once(rt, &app, &id, n)),
                || batch(calls, 1, || load_once(rt, store, &id, n)),
            );
            row["workload"] = json!("get_state");
            row["backend"] = json!(backend.name());
            row["n"] = json!(n);
            report.push(row);
        }
    }

    // get_state right after a step (on `Store::memory()` the state the
    // store keeps is brought up to date with it), against loading the
    // thread: per call, the step untimed.
    for &n in &THREAD_SIZES {
        let id = format!("stepped-{n}");
        let app = loop_graph(n).with_store(memory.clone());
        rt.block_on(app.invoke_thread(&id, loop_input()))
            .expect("write the thread");
        let mut th = rt
            .block_on(memory.existing_thread::<Loop>(&id))
            .expect("open the thread");
        let mut count = 0;
        let (rounds, calls) = if n <= 100 { (200, 20) } else { (100, 4) };
        let label = format!("get_state_after_step/memory/{n}");
        let mut row = pair(
            &label,
            ("after_step", "load"),
            "per call",
            rounds,
            || {
                batch(calls, 1, || {
                    count += 1;
                    rt.block_on(th.apply(Loop::delta().count(count)))
                        .expect("a step");
                    let start = Instant::now();
                    let snap = rt.block_on(app.get_state(&id)).expect("get_state");
                    let elapsed = start.elapsed();
                    assert_eq!(snap.state().count, count);
                    drop(black_box(snap));
                    elapsed
                })
            },
            || {
                batch(calls, 1, || {
                    let start = Instant::now();
                    let t = rt
                        .block_on(memory.existing_thread::<Loop>(&id))
                        .expect("load the thread");
                    let elapsed = start.elapsed();
                    drop(black_box(t));
                    elapsed
                })
            },
        );
        row["workload"] = json!("get_state_after_step");
        row["backend"] = json!("memory");
        row["n"] = json!(n);
        report.push(row);
    }

    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let crate_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
            crate_dir.parent().unwrap_or(crate_dir).join("target")
        });
    let path = target.join("state-graph-agents-paired.json");
    match std::fs::write(&path, format!("{:#}\n", json!(report))) {
        Ok(()) => eprintln!("  wrote {}", path.display()),
        Err(e) => eprintln!("  could not write {}: {e}", path.display()),
    }
}
