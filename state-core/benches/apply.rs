//! Workloads 1 and 3 of BENCHMARKS.md, on the Alpha Berkeley-sized state
//! (40 fields, 35 turn-scoped; see `common/mod.rs`), each beside its
//! hand-written equivalent:
//!
//! - `apply`: a typical node delta (3 of 40 fields, one of them messages);
//! - `apply_plain`: a delta of 3 plain replace fields (an integer, a string
//!   and a bool; no messages, no reducer work), on the same state;
//! - `apply_plain40`: the same 3 writes on a state of the same 40 fields
//!   all `replace` (`Plain`), against the plainest hand-written code:
//!   `if let Some(v) = d.f { s.f = v }` for each field (issue 29, item 7);
//! - `commit_plain40`: `commit` alone of the same 3 writes, checked
//!   before the timed loop, against the same hand-written moves (issue
//!   35, item 6: inlined, the generated `commit` copied its delta, as
//!   `apply` did; both are out of line now);
//! - `apply_all`: one superstep of 4 parallel deltas, on a 10,000-message
//!   history (the LangGraph script runs the same superstep);
//! - `begin_turn`: reset the 35 turn-scoped fields;
//! - `apply_json`: the typical delta decoded from JSON (a `Value`, or text)
//!   then applied, against the typed `apply`.
//!
//! A delta that appends a message grows the history, so the timed loops run
//! in chunks: after each chunk the appended messages are removed again,
//! untimed, which keeps the history within 10% of its nominal size and its
//! buffers at their capacity (no reallocation is timed).
//!
//! After criterion's runs, `apply`, `apply_plain`, `apply_plain40` and
//! `commit_plain40` run again interleaved (`apply_paired`): rounds of 100
//! calls of each side in turn, ABBA, so that the machine's load hits both
//! alike; it prints the time per call of each side, their ratio and the
//! load average. It runs
//! when no filter is given or the filter is part of `apply_paired`;
//! `APPLY_PAIRED=0` or `1` decides instead, `APPLY_PAIRED_ROUNDS` sets the
//! rounds (default 20,000).
//!
//! For instruction counts, which machine load does not move:
//! `APPLY_DRIVER=apply_plain40/generated` (or `/hand_written`, or another
//! workload of the four) runs `APPLY_DRIVER_CALLS` calls (default
//! 100,000) of that side only and exits; under
//! `valgrind --tool=callgrind --toggle-collect='*timed_calls*'` the count is
//! of the timed loop alone (the deltas are built outside it).
//!
//! Run: `cargo bench -p state-core --bench apply`.

mod common;

use common::paired::{Paired, interleave, load_average, paired_wanted};
use common::{
    Berkeley, HandBerkeley, HandPlain, Plain, busy_hand_state, busy_state, history_vec,
    parallel_deltas, parallel_hand_deltas, plain_delta, plain_hand_delta, plain40_delta,
    plain40_hand_delta, typical_delta, typical_delta_json, typical_hand_delta,
};
use criterion::{BatchSize, Criterion};
use state_core::reducer::add_messages;
use state_core::{Message, Messages, State};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// History length for `apply` and `apply_json`.
const HISTORY: usize = 1_000;
/// History length for the superstep (the LangGraph comparison's size).
const SUPERSTEP_HISTORY: usize = 10_000;

/// A history of `n` messages with room for `spare` more, so that appends
/// within a chunk never reallocate (`Messages` has no `reserve`: build it
/// longer, then remove the extra messages, which keeps the capacity).
fn history_with_room(n: usize, spare: usize) -> Messages {
    let mut history = Messages::from(history_vec(n + spare));
    let extra = (n..n + spare)
        .map(|i| Message::remove(format!("m{i}")))
        .collect();
    add_messages(&mut history, extra).expect("ids exist");
    history
}

/// Removes the messages `new{0..count}` that a chunk appended.
fn drop_appended(history: &mut Messages, count: usize) {
    let appended = (0..count)
        .map(|i| Message::remove(format!("new{i}")))
        .collect();
    add_messages(history, appended).expect("chunk appended these ids");
}

/// Times `iters` calls of `run(state, input(i))` in chunks of at most
/// `chunk` calls; before each chunk the inputs are built, after it
/// `restore(state, calls)` undoes the chunk's appends, both untimed. The
/// inputs of a chunk are numbered from 0, so appended ids repeat across
/// chunks but never within one.
fn chunked<S, I>(
    iters: u64,
    chunk: u64,
    state: &mut S,
    mut input: impl FnMut(usize) -> I,
    mut run: impl FnMut(&mut S, I),
    mut restore: impl FnMut(&mut S, usize),
) -> Duration {
    let mut total = Duration::ZERO;
    let mut done = 0;
    while done < iters {
        let n = (iters - done).min(chunk) as usize;
        let inputs: Vec<I> = (0..n).map(&mut input).collect();
        total += timed_calls(state, inputs, &mut run);
        restore(state, n);
        done += n as u64;
    }
    total
}

/// The timed loop of [`chunked`], out of line so that callgrind can count
/// it alone (`--toggle-collect='*timed_calls*'`). The inputs come out of a
/// `Vec` built elsewhere, opaque to this loop, so they are not passed
/// through `black_box`: that forced one more copy of each input (1.3 KB
/// for a delta of the 40-field states) into memory per call, the same on
/// both sides, which made ratios look closer to 1 than the code's are.
#[inline(never)]
fn timed_calls<S, I>(state: &mut S, inputs: Vec<I>, run: &mut impl FnMut(&mut S, I)) -> Duration {
    let start = Instant::now();
    for item in inputs {
        run(black_box(&mut *state), item);
    }
    start.elapsed()
}

/// Calls of one side of a workload, each side on a state of its own: times
/// `iters` calls (in chunks, as [`chunked`]).
type Side = Box<dyn FnMut(u64) -> Duration>;

/// The workloads that run both in criterion and interleaved.
const PAIRED: [&str; 4] = ["apply", "apply_plain", "apply_plain40", "commit_plain40"];

/// Calls per chunk (and per interleaved round).
const CHUNK: u64 = 100;

/// A [`Side`] on `state` of its own: chunks of [`CHUNK`] calls, as
/// [`chunked`] runs them. The closures capture nothing (`Copy`), so each
/// chunk gets them by value, as a direct call of `chunked` would.
fn side_of<S: 'static, I: 'static>(
    mut state: S,
    input: impl FnMut(usize) -> I + Copy + 'static,
    run: impl FnMut(&mut S, I) + Copy + 'static,
    restore: impl FnMut(&mut S, usize) + Copy + 'static,
) -> Side {
    Box::new(move |iters| chunked(iters, CHUNK, &mut state, input, run, restore))
}

/// Side `which` (`generated` or `hand_written`) of `workload`.
fn side(workload: &str, which: &str) -> Side {
    let spare = CHUNK as usize;
    match (workload, which) {
        ("apply", "generated") => side_of(
            Berkeley {
                messages: history_with_room(HISTORY, spare),
                ..Berkeley::default()
            },
            typical_delta,
            |s, d| s.apply(d).unwrap(),
            |s, n| drop_appended(&mut s.messages, n),
        ),
        ("apply", "hand_written") => side_of(
            HandBerkeley {
                messages: history_with_room(HISTORY, spare),
                ..HandBerkeley::default()
            },
            typical_hand_delta,
            |s, d| s.apply(d).unwrap(),
            |s, n| drop_appended(&mut s.messages, n),
        ),
        // Nothing is appended, so nothing needs undoing after a chunk; the
        // chunks keep the deltas' construction untimed, as in `apply`. The
        // state does not grow: each delta overwrites the same three fields
        // (checked between chunks, untimed).
        ("apply_plain", "generated") => side_of(
            Berkeley {
                messages: history_with_room(HISTORY, 0),
                ..Berkeley::default()
            },
            |_| plain_delta(),
            |s, d| s.apply(d).unwrap(),
            |s, _| assert_eq!(s.messages.len(), HISTORY),
        ),
        ("apply_plain", "hand_written") => side_of(
            HandBerkeley {
                messages: history_with_room(HISTORY, 0),
                ..HandBerkeley::default()
            },
            |_| plain_hand_delta(),
            |s, d| s.apply(d).unwrap(),
            |s, _| assert_eq!(s.messages.len(), HISTORY),
        ),
        // The same three writes, on a state whose 40 fields are all
        // `replace`; the history is the same size, and no write touches it.
        ("apply_plain40", "generated") => side_of(
            Plain {
                messages: history_with_room(HISTORY, 0),
                ..Plain::default()
            },
            |_| plain40_delta(),
            |s, d| s.apply(d).unwrap(),
            |s, _| assert_eq!(s.planning_current_step_index, 7),
        ),
        ("apply_plain40", "hand_written") => side_of(
            HandPlain {
                messages: history_with_room(HISTORY, 0),
                ..HandPlain::default()
            },
            |_| plain40_hand_delta(),
            |s, d| s.apply(d),
            |s, _| assert_eq!(s.planning_current_step_index, 7),
        ),
        // `commit` alone (issue 35, item 6): the writes `check` accepted,
        // checked before the timed loop (against a default state: no
        // `replace` write depends on the state), moved in; against the
        // same hand-written moves as `apply_plain40`.
        ("commit_plain40", "generated") => side_of(
            Plain {
                messages: history_with_room(HISTORY, 0),
                ..Plain::default()
            },
            |_| Plain::default().check(plain40_delta()).unwrap(),
            |s, c| s.commit(c),
            |s, _| assert_eq!(s.planning_current_step_index, 7),
        ),
        ("commit_plain40", "hand_written") => side("apply_plain40", which),
        _ => panic!("no side {which:?} of workload {workload:?}"),
    }
}

/// Criterion's `generated` and `hand_written` of `workload`.
fn bench_sides(c: &mut Criterion, workload: &str) {
    let mut group = c.benchmark_group(workload);
    for which in ["generated", "hand_written"] {
        let mut side = side(workload, which);
        group.bench_function(which, |b| b.iter_custom(&mut side));
    }
    group.finish();
}

/// The workloads of [`PAIRED`] interleaved: rounds of [`CHUNK`] calls of
/// each side in turn (ABBA), printed with the load average before and
/// after.
fn apply_paired() {
    let rounds = std::env::var("APPLY_PAIRED_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    eprintln!();
    eprintln!(
        "apply_paired: generated and hand_written interleaved (ABBA), {rounds} rounds of {CHUNK} calls each"
    );
    for workload in PAIRED {
        let before = load_average();
        let (mut a, mut b) = (side(workload, "generated"), side(workload, "hand_written"));
        let paired = interleave(
            rounds,
            || (a(CHUNK), CHUNK as usize),
            || (b(CHUNK), CHUNK as usize),
        );
        eprintln!(
            "  {workload:<14} generated {:>6.1} ns (median {:>6.1}), hand_written {:>6.1} ns (median {:>6.1}); \
             ratio of means {:.3}x, of medians {:.3}x, median of the rounds {:.3}x; load {before} -> {}",
            Paired::mean(&paired.a) * 1e9,
            Paired::median(&paired.a) * 1e9,
            Paired::mean(&paired.b) * 1e9,
            Paired::median(&paired.b) * 1e9,
            paired.ratio_of_means(),
            paired.ratio_of_medians(),
            paired.median_pair_ratio(),
            load_average(),
        );
    }
}

/// `APPLY_DRIVER=<workload>/<side>`: that side's calls alone, for
/// callgrind. Returns whether it ran.
fn driver() -> bool {
    let Ok(which) = std::env::var("APPLY_DRIVER") else {
        return false;
    };
    let calls: u64 = std::env::var("APPLY_DRIVER_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let (workload, side_name) = which
        .split_once('/')
        .expect("APPLY_DRIVER is <workload>/<generated|hand_written>");
    let mut side = side(workload, side_name);
    let took = side(calls);
    eprintln!(
        "{which}: {calls} calls, {:.1} ns each",
        took.as_secs_f64() * 1e9 / calls as f64
    );
    true
}

fn bench_apply_all(c: &mut Criterion) {
    // 4 messages per superstep: 250 supersteps grow the history by 10%.
    const CHUNK: u64 = 250;
    let spare = 4 * CHUNK as usize;
    let mut group = c.benchmark_group("apply_all");
    group.bench_function("generated", |b| {
        let mut state = Berkeley {
            messages: history_with_room(SUPERSTEP_HISTORY, spare),
            ..Berkeley::default()
        };
        b.iter_custom(|iters| {
            chunked(
                iters,
                CHUNK,
                &mut state,
                parallel_deltas,
                |s, d| s.apply_all(d).unwrap(),
                |s, n| drop_appended(&mut s.messages, 4 * n),
            )
        })
    });
    group.bench_function("hand_written", |b| {
        let mut state = HandBerkeley {
            messages: history_with_room(SUPERSTEP_HISTORY, spare),
            ..HandBerkeley::default()
        };
        b.iter_custom(|iters| {
            chunked(
                iters,
                CHUNK,
                &mut state,
                parallel_hand_deltas,
                |s, d| s.apply_all(d).unwrap(),
                |s, n| drop_appended(&mut s.messages, 4 * n),
            )
        })
    });
    group.finish();
}

fn bench_begin_turn(c: &mut Criterion) {
    let mut group = c.benchmark_group("begin_turn");
    let state = busy_state(10);
    group.bench_function("generated", |b| {
        b.iter_batched_ref(|| state.clone(), |s| s.begin_turn(), BatchSize::SmallInput)
    });
    let hand = busy_hand_state(10);
    group.bench_function("hand_written", |b| {
        b.iter_batched_ref(|| hand.clone(), |s| s.begin_turn(), BatchSize::SmallInput)
    });
    group.finish();
}

fn bench_apply_json(c: &mut Criterion) {
    const CHUNK: u64 = 100;
    let spare = CHUNK as usize;
    let mut group = c.benchmark_group("apply_json");
    let fresh = || Berkeley {
        messages: history_with_room(HISTORY, spare),
        ..Berkeley::default()
    };
    group.bench_function("typed_apply", |b| {
        let mut state = fresh();
        b.iter_custom(|iters| {
            chunked(
                iters,
                CHUNK,
                &mut state,
                typical_delta,
                |s, d| s.apply(d).unwrap(),
                |s, n| drop_appended(&mut s.messages, n),
            )
        })
    });
    group.bench_function("json_value", |b| {
        let mut state = fresh();
        b.iter_custom(|iters| {
            chunked(
                iters,
                CHUNK,
                &mut state,
                typical_delta_json,
                |s, v| s.apply_json(v).unwrap(),
                |s, n| drop_appended(&mut s.messages, n),
            )
        })
    });
    group.bench_function("json_text", |b| {
        let mut state = fresh();
        b.iter_custom(|iters| {
            chunked(
                iters,
                CHUNK,
                &mut state,
                |i| typical_delta_json(i).to_string(),
                |s, text| {
                    let delta: <Berkeley as State>::Delta = serde_json::from_str(&text).unwrap();
                    s.apply(delta).unwrap()
                },
                |s, n| drop_appended(&mut s.messages, n),
            )
        })
    });
    group.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2))
}

fn main() {
    if driver() {
        return;
    }
    let mut c = config().configure_from_args();
    for workload in PAIRED {
        bench_sides(&mut c, workload);
    }
    bench_apply_all(&mut c);
    bench_begin_turn(&mut c);
    bench_apply_json(&mut c);
    c.final_summary();
    if paired_wanted("APPLY_PAIRED", "apply_paired") {
        apply_paired();
    }
}
