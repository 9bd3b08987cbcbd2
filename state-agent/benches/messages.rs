//! `trim_messages` on a long history (BENCHMARKS.md, "Message utilities"),
//! and the same on langchain-core in `benches/langgraph/messages_bench.py`,
//! which builds the same messages, runs LangChain's `trim_messages` with
//! the same options and prints both with the ratio.
//!
//! The history: a system message, then 10,000 messages in turns of four: a
//! human question, an AI message with one tool call, the tool's result,
//! the AI's answer (`history` below; the Python script builds the same).
//! Workloads, all with the approximate counter:
//! - `trim_messages/last_10000`: keep the last 4,000 tokens, starting on a
//!   human message, the system message kept (LangChain's recommended
//!   settings for a chat history);
//! - `trim_messages/first_10000`: the first 4,000 tokens, ending on an AI
//!   message;
//! - `count_tokens_approximately/10000`: the count of the whole history.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use serde_json::json;
use state_agent::{TrimOptions, TrimStrategy, count_tokens_approximately, trim_messages};
use state_core::{Message, MessageKind, ToolCall};
use std::hint::black_box;

const SIZE: usize = 10_000;
const MAX_TOKENS: usize = 4_000;

/// The history, as `history()` in messages_bench.py builds it.
fn history(n: usize) -> Vec<Message> {
    let mut messages =
        vec![Message::system("You are a beam line assistant. Answer briefly.").with_id("sys")];
    for i in 0..n {
        let id = format!("m{i}");
        let call = format!("call_{}", i / 4);
        messages.push(
            match i % 4 {
                0 => Message::human(format!(
                    "question number {i}: what is the status of the beam line?"
                )),
                1 => Message::ai("").with_tool_calls([ToolCall::new(
                    "beam_status",
                    json!({"line": i % 7, "detail": "full"}),
                )
                .with_id(call)]),
                2 => Message::tool(format!("line {}: nominal, current 500 mA", i % 7), call)
                    .with_name("beam_status"),
                _ => Message::ai(format!(
                    "answer number {i}: the beam line is nominal, current 500 mA."
                )),
            }
            .with_id(id),
        );
    }
    messages
}

fn bench(c: &mut Criterion) {
    let messages = history(SIZE);
    let last = TrimOptions::max_tokens(MAX_TOKENS)
        .strategy(TrimStrategy::Last)
        .start_on([MessageKind::Human])
        .include_system(true);
    let first = TrimOptions::max_tokens(MAX_TOKENS)
        .strategy(TrimStrategy::First)
        .end_on([MessageKind::Ai]);
    let mut group = c.benchmark_group("trim_messages");
    group.bench_function(BenchmarkId::new("last", SIZE), |b| {
        b.iter(|| trim_messages(black_box(&messages), black_box(&last)))
    });
    group.bench_function(BenchmarkId::new("first", SIZE), |b| {
        b.iter(|| trim_messages(black_box(&messages), black_box(&first)))
    });
    group.finish();
    let mut group = c.benchmark_group("count_tokens_approximately");
    group.bench_function(BenchmarkId::from_parameter(SIZE), |b| {
        b.iter(|| count_tokens_approximately(black_box(&messages)))
    });
    group.finish();
    // What the Python script checks against LangChain's: the kept messages.
    let kept = trim_messages(&messages, &last).unwrap_or_default();
    let ids: Vec<_> = kept.iter().filter_map(Message::id).collect();
    eprintln!(
        "trim_messages last: {} kept, {} .. {}; first: {} kept; count {}",
        ids.len(),
        ids.get(1).copied().unwrap_or("-"),
        ids.last().copied().unwrap_or("-"),
        trim_messages(&messages, &first).map_or(0, |k| k.len()),
        count_tokens_approximately(&messages),
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
