//! Composition costs: a state that flattens a base against the flat state
//! with the same sixteen fields, on the same workloads (a JSON delta decoded
//! and applied, a typed delta applied, `get` by key). The flattened state
//! routes a base key through one extra generated `match`; the ratio shows
//! what that costs.
//!
//! Run: `cargo bench -p state-core --bench compose`.

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use state_core::{AgentState, Message, Messages, State};
use std::hint::black_box;

/// All sixteen fields in one struct.
#[derive(AgentState, Debug, Clone, PartialEq)]
struct Flat {
    #[reducer(add_messages)]
    messages: Messages,
    #[scope(turn)]
    current_node: String,
    step: u32,
    is_running: bool,
    a1: String,
    a2: u64,
    a3: Option<String>,
    #[reducer(append)]
    a4: Vec<String>,
    order_id: Option<String>,
    #[reducer(append)]
    items: Vec<String>,
    b1: String,
    b2: u64,
    b3: Option<String>,
    b4: bool,
    b5: i32,
    total: f64,
}

/// The framework's half.
#[derive(AgentState, Debug, Clone, PartialEq)]
struct Base {
    #[reducer(add_messages)]
    messages: Messages,
    #[scope(turn)]
    current_node: String,
    step: u32,
    is_running: bool,
    a1: String,
    a2: u64,
    a3: Option<String>,
    #[reducer(append)]
    a4: Vec<String>,
}

/// The application's half, on top of the base.
#[derive(AgentState, Debug, Clone, PartialEq)]
struct Extended {
    #[state(flatten)]
    base: Base,
    order_id: Option<String>,
    #[reducer(append)]
    items: Vec<String>,
    b1: String,
    b2: u64,
    b3: Option<String>,
    b4: bool,
    b5: i32,
    total: f64,
}

/// A node's update touching both halves: a base key and an own key.
fn update() -> Value {
    json!({"step": 3, "current_node": "tools", "items": ["tea"], "total": 4.5})
}

fn bench_apply_json(c: &mut Criterion) {
    let mut group = c.benchmark_group("compose/apply_json");
    group.bench_function("flat", |b| {
        let mut state = Flat::default();
        b.iter(|| state.apply_json(black_box(update())).unwrap())
    });
    group.bench_function("flattened base", |b| {
        let mut state = Extended::default();
        b.iter(|| state.apply_json(black_box(update())).unwrap())
    });
    group.finish();
}

fn bench_apply(c: &mut Criterion) {
    let mut group = c.benchmark_group("compose/apply");
    group.bench_function("flat", |b| {
        let mut state = Flat::default();
        b.iter(|| {
            let delta = Flat::delta()
                .step(3)
                .messages(vec![Message::ai("ok").with_id("m")])
                .total(4.5);
            state.apply(black_box(delta)).unwrap()
        })
    });
    group.bench_function("flattened base", |b| {
        let mut state = Extended::default();
        b.iter(|| {
            let delta = Extended::delta()
                .base(
                    Base::delta()
                        .step(3)
                        .messages(vec![Message::ai("ok").with_id("m")]),
                )
                .total(4.5);
            state.apply(black_box(delta)).unwrap()
        })
    });
    group.finish();
}

fn bench_get(c: &mut Criterion) {
    let mut group = c.benchmark_group("compose/get");
    let flat = Flat::default();
    let extended = Extended::default();
    group.bench_function("flat", |b| {
        b.iter(|| black_box(&flat).get(black_box("a3")).unwrap())
    });
    group.bench_function("flattened base", |b| {
        b.iter(|| black_box(&extended).get(black_box("a3")).unwrap())
    });
    group.finish();
}

criterion_group!(benches, bench_apply_json, bench_apply, bench_get);
criterion_main!(benches);
