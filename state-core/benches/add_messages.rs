//! Workload 2 of BENCHMARKS.md: `add_messages` of one message into
//! histories of 100 to 100,000 messages, on the id-indexed `Messages` and on
//! a plain `Vec<Message>` (which, like LangGraph, looks ids up by building a
//! map of the whole history on every call).
//!
//! - `add_messages_append`: one new message (with its id), appended;
//! - `add_messages_update`: one message whose id is in the history (the
//!   middle one), replaced in place;
//! - `add_messages_new_id`: one message without an id, which gets a UUID v4
//!   (on `Messages`, 1,000 messages: the price of the id itself).
//!
//! Appends run in chunks (see `apply.rs`): the history never grows more
//! than 10% past its nominal size and no buffer reallocation is timed.
//!
//! Run: `cargo bench -p state-core --bench add_messages`.

mod common;

use common::{edited_message, history_vec, new_message};
use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group, criterion_main};
use state_core::reducer::add_messages;
use state_core::{Message, Messages};
use std::hint::black_box;
use std::time::{Duration, Instant};

const SIZES: [usize; 4] = [100, 1_000, 10_000, 100_000];

/// Appends per chunk: 10% of the history, at least 10.
fn chunk_for(n: usize) -> usize {
    (n / 10).max(10)
}

/// A history of `n` messages with room for `spare` more.
fn messages_with_room(n: usize, spare: usize) -> Messages {
    let mut history = Messages::from(history_vec(n + spare));
    let extra = (n..n + spare)
        .map(|i| Message::remove(format!("m{i}")))
        .collect();
    add_messages(&mut history, extra).expect("ids exist");
    history
}

fn vec_with_room(n: usize, spare: usize) -> Vec<Message> {
    let mut history = Vec::with_capacity(n + spare);
    history.extend(history_vec(n));
    history
}

/// Times `iters` appends of one new message in chunks; `restore` undoes a
/// chunk's appends, untimed.
fn appends<H>(
    iters: u64,
    chunk: usize,
    history: &mut H,
    mut append: impl FnMut(&mut H, Vec<Message>),
    mut restore: impl FnMut(&mut H, usize),
) -> Duration {
    let mut total = Duration::ZERO;
    let mut done = 0u64;
    while done < iters {
        let n = (iters - done).min(chunk as u64) as usize;
        let updates: Vec<Vec<Message>> = (0..n).map(|i| vec![new_message(i)]).collect();
        let start = Instant::now();
        for update in updates {
            append(black_box(&mut *history), black_box(update));
        }
        total += start.elapsed();
        restore(history, n);
        done += n as u64;
    }
    total
}

fn bench_append(c: &mut Criterion) {
    let mut group = c.benchmark_group("add_messages_append");
    for n in SIZES {
        let chunk = chunk_for(n);
        group.bench_with_input(BenchmarkId::new("Messages", n), &n, |b, &n| {
            let mut history = messages_with_room(n, chunk);
            b.iter_custom(|iters| {
                appends(
                    iters,
                    chunk,
                    &mut history,
                    |h, u| add_messages(h, u).unwrap(),
                    |h, count| {
                        let gone = (0..count)
                            .map(|i| Message::remove(format!("new{i}")))
                            .collect();
                        add_messages(h, gone).unwrap();
                    },
                )
            })
        });
        group.bench_with_input(BenchmarkId::new("Vec", n), &n, |b, &n| {
            let mut history = vec_with_room(n, chunk);
            b.iter_custom(|iters| {
                appends(
                    iters,
                    chunk,
                    &mut history,
                    |h, u| add_messages(h, u).unwrap(),
                    |h, _| h.truncate(n),
                )
            })
        });
    }
    group.finish();
}

fn bench_update(c: &mut Criterion) {
    let mut group = c.benchmark_group("add_messages_update");
    for n in SIZES {
        let id = format!("m{}", n / 2);
        group.bench_with_input(BenchmarkId::new("Messages", n), &n, |b, &n| {
            let mut history = Messages::from(history_vec(n));
            b.iter_batched(
                || vec![edited_message(&id)],
                |u| add_messages(black_box(&mut history), u).unwrap(),
                BatchSize::SmallInput,
            )
        });
        group.bench_with_input(BenchmarkId::new("Vec", n), &n, |b, &n| {
            let mut history = history_vec(n);
            b.iter_batched(
                || vec![edited_message(&id)],
                |u| add_messages(black_box(&mut history), u).unwrap(),
                BatchSize::SmallInput,
            )
        });
    }
    group.finish();
}

fn bench_new_id(c: &mut Criterion) {
    let mut group = c.benchmark_group("add_messages_new_id");
    let n = 1_000;
    let chunk = chunk_for(n);
    group.bench_function("Messages/1000", |b| {
        let mut history = messages_with_room(n, chunk);
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let mut done = 0u64;
            while done < iters {
                let count = (iters - done).min(chunk as u64) as usize;
                let updates: Vec<Vec<Message>> =
                    (0..count).map(|_| vec![Message::ai("no id yet")]).collect();
                let start = Instant::now();
                for update in updates {
                    add_messages(black_box(&mut history), black_box(update)).unwrap();
                }
                total += start.elapsed();
                // The assigned ids are random: remove the chunk by position.
                let gone = history.as_slice()[n..]
                    .iter()
                    .filter_map(Message::id)
                    .map(Message::remove)
                    .collect();
                add_messages(&mut history, gone).unwrap();
                done += count as u64;
            }
            total
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
    targets = bench_append, bench_update, bench_new_id
}
criterion_main!(benches);
