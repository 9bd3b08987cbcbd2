//! Issue 33's last two speed targets (BENCHMARKS.md, section 15), with
//! LangGraph's side in `benches/langgraph/react_bench.py`:
//!
//! - `react_step/{no_store,memory}`: one ReAct step of `react_agent`: the
//!   model (scripted with two replies, taken in turn) answers the human's
//!   question with two tool calls, the tool node runs them (a
//!   `#[tool] fn add(a: i64, b: i64)`), the model answers with text, the
//!   run ends: one `invoke` of three supersteps, five messages in the
//!   final state. The same messages, ids and tool as the Python script's
//!   `create_react_agent` with its fake chat model, and the agent built
//!   once, as there. `no_store` is `invoke` (no checkpointer); `memory` is
//!   `invoke_thread` on `Store::memory()` (LangGraph's `InMemorySaver`), a
//!   new thread per run, deleted after it outside the timing.
//! - `stream_tokens/{graph,direct}/1000`: a scripted model streaming
//!   1,000 chunks of one token each (then its last, empty chunk). `graph`:
//!   the model's `invoke` inside the one node of a graph run with
//!   `StreamMode::MESSAGES`, every event read off the stream (1,001
//!   message events, the `end` event); `direct`: the same model's
//!   `stream` read directly, its chunks merged into the reply (what
//!   `invoke` does outside a graph). Their difference divided by 1,000 is
//!   what a token costs between the model's chunk and the stream's event
//!   (the graph's own run, a few microseconds, is in it: a few
//!   nanoseconds a token). `graph_json` also writes each event's data as
//!   JSON text (what state-server sends), for reference.
//! - `stream_paired` (printed, not criterion; after criterion's runs):
//!   `graph` and `direct` interleaved (ABBA, `paired.rs`) with the load
//!   average, the per-token overhead from the means and from the median of
//!   the pairs' differences; written to `target/state-agent-react-paired.json`
//!   (under `CARGO_TARGET_DIR` if set), which react_bench.py reads. Runs
//!   with `cargo bench` with no filter or one matching `stream_paired`;
//!   `STATE_AGENT_PAIRED=0` or `1` decides instead.
//!
//! Run: `cargo bench -p state-agent --bench react`.

use criterion::{BenchmarkId, Criterion};
use futures::StreamExt;
use serde_json::json;
use state_agent::{
    ChatModel, ChatModelExt, ChunkStream, MessageChunk, ModelRequest, react_agent, tool,
};
use state_core::{Message, MessagesState, MessagesStateDelta, State, ToolCall};
use state_graph::{CompiledGraph, END, Event, NodeError, START, StateGraph, StreamMode};
use state_store::Store;
use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::runtime::Runtime;

#[allow(dead_code)]
#[path = "../../state-core/benches/common/paired.rs"]
mod paired;
use paired::{Paired, interleave, load_average, paired_wanted};

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

const QUESTION: &str = "What are 2 + 3 and 4 + 5?";
const ANSWER: &str = "2 + 3 = 5 and 4 + 5 = 9.";
const TOKENS: usize = 1_000;

// ---------------------------------------------------------------- ReAct

/// The model's two replies, as react_bench.py scripts them.
fn replies() -> [Message; 2] {
    [
        Message::ai("")
            .with_tool_calls([
                ToolCall::new("add", json!({"a": 2, "b": 3})).with_id("c1"),
                ToolCall::new("add", json!({"a": 4, "b": 5})).with_id("c2"),
            ])
            .with_id("r1"),
        Message::ai(ANSWER).with_id("r2"),
    ]
}

fn react_input() -> MessagesStateDelta {
    MessagesState::delta().messages(vec![Message::human(QUESTION).with_id("h")])
}

/// The scripted model: its replies in turn, round and round, each as one
/// chunk (`MessageChunk::from_message`: the text, and the tool calls
/// with their arguments as JSON text, parsed back when the reply is
/// merged). langchain-core's `GenericFakeChatModel(messages=cycle(...))`,
/// which react_bench.py uses, answers an `invoke` with its message whole;
/// a model here only streams, so this is the least a Rust model can do.
/// Cycling lets the agent be built once, as the Python side's is.
struct Scripted {
    replies: [Message; 2],
    next: AtomicUsize,
}

impl Scripted {
    fn new() -> Scripted {
        Scripted {
            replies: replies(),
            next: AtomicUsize::new(0),
        }
    }
}

impl ChatModel for Scripted {
    fn provider(&self) -> &str {
        "scripted"
    }

    fn model(&self) -> &str {
        "react"
    }

    fn stream_reply(&self, _request: ModelRequest) -> ChunkStream {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.replies.len();
        let chunk = MessageChunk::from_message(self.replies[i].clone());
        Box::pin(futures::stream::once(async move { Ok(chunk) }))
    }
}

/// The agent, built and compiled once.
fn react_app() -> CompiledGraph<MessagesState> {
    react_agent(Scripted::new(), [add])
        .compile()
        .expect("a valid graph")
}

fn check_react(s: &MessagesState) {
    let m = s.messages.as_slice();
    assert_eq!(m.len(), 5, "{m:?}");
    assert_eq!(m[1].tool_calls().len(), 2);
    assert_eq!(m[2].text(), "5");
    assert_eq!(m[3].text(), "9");
    assert_eq!(m[3].tool_call_id(), Some("c2"));
    assert_eq!(m[4].text(), ANSWER);
}

fn react_step(c: &mut Criterion, rt: &Runtime) {
    let app = react_app();
    check_react(&rt.block_on(app.invoke(react_input())).expect("a run"));
    let mut group = c.benchmark_group("react_step");
    group.bench_function("no_store", |b| {
        // The input is made and the final state dropped outside the
        // timing, one run at a time.
        b.iter_custom(|iters| {
            let mut spent = Duration::ZERO;
            for _ in 0..iters {
                let input = react_input();
                let start = Instant::now();
                let s = rt.block_on(app.invoke(input)).expect("a run");
                spent += start.elapsed();
                debug_assert_eq!(s.messages.len(), 5);
                drop(black_box(s));
            }
            spent
        })
    });
    let app = react_app().with_store(Store::memory());
    let out = rt.block_on(app.invoke_thread("check", react_input()));
    check_react(out.expect("a run").state());
    let threads = AtomicUsize::new(0);
    group.bench_function("memory", |b| {
        // A new thread per run, deleted after it (untimed), as the Python
        // side does with InMemorySaver.
        b.iter_custom(|iters| {
            let mut spent = Duration::ZERO;
            for _ in 0..iters {
                let thread = format!("run-{}", threads.fetch_add(1, Ordering::Relaxed));
                let input = react_input();
                let start = Instant::now();
                let out = rt
                    .block_on(app.invoke_thread(&thread, input))
                    .expect("a run");
                spent += start.elapsed();
                debug_assert_eq!(out.state().messages.len(), 5);
                drop(black_box(out));
                rt.block_on(app.store().expect("a store").delete_thread(&thread))
                    .expect("deleted");
            }
            spent
        })
    });
    group.finish();
}

// ---------------------------------------------------------------- tokens

/// A scripted model streaming its reply one token a chunk (no id: one is
/// minted for the reply, as for a provider that gives none), then its
/// last, empty chunk. Every call gives the same reply.
struct Tokens(Arc<[String]>);

impl Tokens {
    fn new(n: usize) -> Tokens {
        Tokens((0..n).map(|i| format!(" t{:03}", i % 1000)).collect())
    }
}

impl ChatModel for Tokens {
    fn provider(&self) -> &str {
        "scripted"
    }

    fn model(&self) -> &str {
        "tokens"
    }

    fn stream_reply(&self, _request: ModelRequest) -> ChunkStream {
        let tokens = self.0.clone();
        Box::pin(futures::stream::iter((0..=tokens.len()).map(move |i| {
            Ok(match tokens.get(i) {
                Some(token) => MessageChunk::text(token.clone()),
                None => MessageChunk {
                    last: true,
                    ..MessageChunk::default()
                },
            })
        })))
    }
}

fn tokens_input() -> MessagesStateDelta {
    MessagesState::delta().messages(vec![Message::human("Tell me a long story.").with_id("h")])
}

/// START -> agent -> END, the agent calling `model`.
fn tokens_graph(model: Arc<Tokens>) -> CompiledGraph<MessagesState> {
    let mut g = StateGraph::<MessagesState>::new();
    g.add_node("agent", move |s: Arc<MessagesState>| {
        let model = model.clone();
        async move {
            let reply = model.invoke(s.messages.as_slice().to_vec()).await?;
            Ok::<_, NodeError>(MessagesState::delta().messages(vec![reply]))
        }
    });
    g.add_edge(START, "agent").add_edge("agent", END);
    g.compile().expect("a valid graph")
}

/// One streamed run; the number of message events read (and with `json`,
/// each event's data written as JSON text).
async fn graph_run(app: &CompiledGraph<MessagesState>, json: bool) -> usize {
    let mut stream = app.stream(tokens_input(), StreamMode::MESSAGES);
    let mut messages = 0;
    let mut ended = false;
    while let Some(event) = stream.next().await {
        let event = event.expect("an event");
        if json {
            black_box(event.data().expect("JSON").to_string());
        }
        match event {
            Event::Message { chunk, .. } => {
                messages += 1;
                black_box(chunk);
            }
            Event::End(out) => {
                ended = true;
                black_box(out);
            }
            other => {
                black_box(other);
            }
        }
    }
    assert!(ended);
    messages
}

/// The model's stream read directly, merged into the reply.
async fn direct_run(model: &Tokens, history: &[Message]) -> Message {
    let mut stream = model.stream(history.to_vec());
    let mut reply = MessageChunk::default();
    while let Some(chunk) = stream.next().await {
        reply += chunk.expect("a chunk");
    }
    reply.into_message()
}

fn stream_tokens(c: &mut Criterion, rt: &Runtime) {
    let model = Arc::new(Tokens::new(TOKENS));
    let app = tokens_graph(model.clone());
    let history = vec![Message::human("Tell me a long story.").with_id("h")];
    assert_eq!(rt.block_on(graph_run(&app, false)), TOKENS + 1);
    assert_eq!(
        rt.block_on(direct_run(&model, &history)).text().len(),
        5 * TOKENS
    );
    let mut group = c.benchmark_group("stream_tokens");
    group.bench_function(BenchmarkId::new("graph", TOKENS), |b| {
        b.iter(|| rt.block_on(graph_run(&app, false)))
    });
    group.bench_function(BenchmarkId::new("direct", TOKENS), |b| {
        b.iter(|| rt.block_on(direct_run(&model, &history)))
    });
    group.bench_function(BenchmarkId::new("graph_json", TOKENS), |b| {
        b.iter(|| rt.block_on(graph_run(&app, true)))
    });
    group.finish();
}

// ---------------------------------------------------------------- paired

fn stream_paired(rt: &Runtime) {
    let model = Arc::new(Tokens::new(TOKENS));
    let app = tokens_graph(model.clone());
    let history = vec![Message::human("Tell me a long story.").with_id("h")];
    let runs = 4;
    let rounds = 150;
    let load_before = load_average();
    let paired = interleave(
        rounds,
        || {
            let start = Instant::now();
            for _ in 0..runs {
                black_box(rt.block_on(graph_run(&app, false)));
            }
            (start.elapsed(), runs)
        },
        || {
            let start = Instant::now();
            for _ in 0..runs {
                black_box(rt.block_on(direct_run(&model, &history)));
            }
            (start.elapsed(), runs)
        },
    );
    let (ma, mb) = (Paired::mean(&paired.a), Paired::mean(&paired.b));
    let diffs: Vec<f64> = paired.a.iter().zip(&paired.b).map(|(a, b)| a - b).collect();
    let per_token_means = (ma - mb) / TOKENS as f64;
    let per_token_median = Paired::median(&diffs) / TOKENS as f64;
    let load = load_average();
    eprintln!();
    eprintln!(
        "stream_paired: interleaved (ABBA), {rounds} rounds of {runs} runs, {TOKENS} tokens a run; \
         load average {load_before} before, {load} after"
    );
    eprintln!(
        "  graph {:.1} µs, direct {:.1} µs a run: {:.0} ns a token from the means, \
         {:.0} ns from the median of the pairs' differences (target < 5 µs)",
        ma * 1e6,
        mb * 1e6,
        per_token_means * 1e9,
        per_token_median * 1e9,
    );
    let report = json!({
        "label": format!("stream_tokens/{TOKENS}"),
        "a": "graph",
        "b": "direct",
        "tokens": TOKENS,
        "rounds": rounds,
        "runs_per_round": runs,
        "a_mean_s": ma,
        "a_median_s": Paired::median(&paired.a),
        "b_mean_s": mb,
        "b_median_s": Paired::median(&paired.b),
        "per_token_s_of_means": per_token_means,
        "per_token_s_median_pair": per_token_median,
        "ratio_of_means": paired.ratio_of_means(),
        "median_pair_ratio": paired.median_pair_ratio(),
        "load_average": load,
        "load_average_before": load_before,
    });
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let crate_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
            crate_dir.parent().unwrap_or(crate_dir).join("target")
        });
    let path = target.join("state-agent-react-paired.json");
    match std::fs::write(&path, format!("{report:#}\n")) {
        Ok(()) => eprintln!("  wrote {}", path.display()),
        Err(e) => eprintln!("  could not write {}: {e}", path.display()),
    }
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    let mut c = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    react_step(&mut c, &rt);
    stream_tokens(&mut c, &rt);
    c.final_summary();
    if paired_wanted("STATE_AGENT_PAIRED", "stream_paired") {
        stream_paired(&rt);
    }
}
