//! Workloads 1 and 3 of BENCHMARKS.md, on the Alpha Berkeley-sized state
//! (40 fields, 35 turn-scoped; see `common/mod.rs`), each beside its
//! hand-written equivalent:
//!
//! - `apply`: a typical node delta (3 of 40 fields, one of them messages);
//! - `apply_plain`: a delta of 3 plain replace fields (an integer, a string
//!   and a bool; no messages, no reducer work), on the same state;
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
//! Run: `cargo bench -p state-core --bench apply`.

mod common;

use common::{
    Berkeley, HandBerkeley, busy_hand_state, busy_state, history_vec, parallel_deltas,
    parallel_hand_deltas, plain_delta, plain_hand_delta, typical_delta, typical_delta_json,
    typical_hand_delta,
};
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
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
        let start = Instant::now();
        for item in inputs {
            run(black_box(&mut *state), black_box(item));
        }
        total += start.elapsed();
        restore(state, n);
        done += n as u64;
    }
    total
}

fn bench_apply(c: &mut Criterion) {
    const CHUNK: u64 = 100;
    let spare = CHUNK as usize;
    let mut group = c.benchmark_group("apply");
    group.bench_function("generated", |b| {
        let mut state = Berkeley {
            messages: history_with_room(HISTORY, spare),
            ..Berkeley::default()
        };
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
    group.bench_function("hand_written", |b| {
        let mut state = HandBerkeley {
            messages: history_with_room(HISTORY, spare),
            ..HandBerkeley::default()
        };
        b.iter_custom(|iters| {
            chunked(
                iters,
                CHUNK,
                &mut state,
                typical_hand_delta,
                |s, d| s.apply(d).unwrap(),
                |s, n| drop_appended(&mut s.messages, n),
            )
        })
    });
    group.finish();
}

fn bench_apply_plain(c: &mut Criterion) {
    // Nothing is appended, so nothing needs undoing after a chunk; the
    // chunks keep the deltas' construction untimed, as in `apply`. The
    // state does not grow: each delta overwrites the same three fields
    // (checked between chunks, untimed).
    const CHUNK: u64 = 100;
    let mut group = c.benchmark_group("apply_plain");
    group.bench_function("generated", |b| {
        let mut state = Berkeley {
            messages: history_with_room(HISTORY, 0),
            ..Berkeley::default()
        };
        b.iter_custom(|iters| {
            chunked(
                iters,
                CHUNK,
                &mut state,
                |_| plain_delta(),
                |s, d| s.apply(d).unwrap(),
                |s, _| assert_eq!(s.messages.len(), HISTORY),
            )
        })
    });
    group.bench_function("hand_written", |b| {
        let mut state = HandBerkeley {
            messages: history_with_room(HISTORY, 0),
            ..HandBerkeley::default()
        };
        b.iter_custom(|iters| {
            chunked(
                iters,
                CHUNK,
                &mut state,
                |_| plain_hand_delta(),
                |s, d| s.apply(d).unwrap(),
                |s, _| assert_eq!(s.messages.len(), HISTORY),
            )
        })
    });
    group.finish();
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

criterion_group! {
    name = benches;
    config = config();
    targets = bench_apply, bench_apply_plain, bench_apply_all, bench_begin_turn, bench_apply_json
}
criterion_main!(benches);
