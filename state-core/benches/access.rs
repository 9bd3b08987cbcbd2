//! Dict-like access against its hand-written equivalent: `get`/`set` by key
//! (a generated `match`, then serde_json) versus naming the field directly
//! and calling serde_json on it. The ratio is the price of the key lookup.
//!
//! Run: `cargo bench -p state-core --bench access`.

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use state_core::{AgentState, State};
use std::collections::BTreeMap;
use std::hint::black_box;

/// Twelve fields, so the key `match` has real work to do: the probed key
/// is the last one declared.
#[derive(AgentState, Debug, Clone)]
struct Bench {
    #[reducer(append)]
    a: Vec<String>,
    b: String,
    c: u64,
    d: Option<String>,
    #[reducer(merge)]
    e: BTreeMap<String, f64>,
    f: bool,
    g: i32,
    h: String,
    i: Vec<u8>,
    j: Option<u32>,
    k: String,
    route: String,
}

fn bench_get(c: &mut Criterion) {
    let state = Bench {
        route: "weather_tool".into(),
        ..Bench::default()
    };
    let mut group = c.benchmark_group("get");
    group.bench_function("by key (generated)", |b| {
        b.iter(|| black_box(&state).get(black_box("route")).unwrap())
    });
    group.bench_function("direct field + serde_json", |b| {
        b.iter(|| serde_json::to_value(&black_box(&state).route).unwrap())
    });
    group.finish();
}

fn bench_set(c: &mut Criterion) {
    let mut state = Bench::default();
    let value = json!("summarize");
    let mut group = c.benchmark_group("set");
    group.bench_function("by key (generated)", |b| {
        b.iter(|| {
            black_box(&mut state)
                .set(black_box("route"), black_box(&value).clone())
                .unwrap()
        })
    });
    group.bench_function("direct field + serde_json", |b| {
        b.iter(|| {
            let v: Value = black_box(&value).clone();
            black_box(&mut state).route = serde_json::from_value(v).unwrap();
        })
    });
    group.finish();
}

criterion_group!(benches, bench_get, bench_set);
criterion_main!(benches);
