//! `ToolNode`'s overhead per tool call (issue 33: under 20 µs): a graph
//! whose one node answers the calls of the last AI message, as a
//! `ToolNode` of a `#[tool]` function and as a hand-written node that
//! builds the same tool messages; the difference, divided by the number
//! of calls, is what the tool node adds per call (finding the message,
//! reading the arguments through the schema, running the tool's future,
//! writing the answers through the state's delta).
//!
//! Run: `cargo bench -p state-agent --bench tool_node`.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use serde_json::json;
use state_agent::{ToolNode, tool};
use state_core::{Message, MessagesState, MessagesStateDelta, State, ToolCall};
use state_graph::{CompiledGraph, END, START, StateGraph};
use std::hint::black_box;
use std::time::Duration;

/// Adds two numbers.
#[tool]
fn add(
    /// The first.
    a: i64,
    /// The second.
    b: i64,
) -> i64 {
    a + b
}

fn input(calls: usize) -> MessagesStateDelta {
    let calls = (0..calls)
        .map(|i| ToolCall::new("add", json!({"a": i, "b": 1})).with_id(format!("call_{i}")));
    MessagesState::delta().messages(vec![
        Message::human("add them").with_id("h"),
        Message::ai("").with_tool_calls(calls).with_id("a"),
    ])
}

/// The same answers, written by hand.
fn by_hand(s: &MessagesState) -> MessagesStateDelta {
    let last = s.messages.last().expect("a message");
    let answers: Vec<Message> = last
        .tool_calls()
        .iter()
        .map(|call| {
            let sum = call.args["a"].as_i64().unwrap_or(0) + call.args["b"].as_i64().unwrap_or(0);
            Message::tool_result(call, sum.to_string())
        })
        .collect();
    MessagesState::delta().messages(answers)
}

fn graph(tool_node: bool) -> CompiledGraph<MessagesState> {
    let mut g = StateGraph::<MessagesState>::new();
    if tool_node {
        g.add_node("tools", ToolNode::new([add]));
    } else {
        g.add_node("tools", by_hand);
    }
    g.add_edge(START, "tools").add_edge("tools", END);
    g.compile().expect("a valid graph")
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    let mut group = c.benchmark_group("tool_node");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    for calls in [1, 8] {
        for (name, tool_node) in [("by_hand", false), ("tool_node", true)] {
            let app = graph(tool_node);
            let delta = input(calls);
            let out = rt.block_on(app.invoke(delta.clone())).expect("a run");
            assert_eq!(out.messages.len(), 2 + calls);
            group.bench_with_input(BenchmarkId::new(name, calls), &delta, |b, delta| {
                b.iter(|| black_box(rt.block_on(app.invoke(delta.clone())).expect("a run")))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
