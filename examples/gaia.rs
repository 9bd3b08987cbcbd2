//! GAIA (seed 001) turn by turn: the initial state built from a request,
//! the config passed beside the state, node updates streamed as JSON lines
//! (`stream_mode="updates"`) and as full values (`"values"`), the SSE
//! events, dict-like access, trimming and filtering the history with an
//! overwrite, and resuming a thread from its checkpoint: every step is
//! checkpointed in a `state_store` thread, in a SQLite file.
//!
//! Run it with `cargo run --example gaia`.

use serde_json::{Value, json};
use state_core::reducer::add_messages;
use state_core::{Delta, Message, Messages, State};
use state_examples::gaia::{
    self, Gaia, GaiaState, GaiaStateDelta, MessageRequestWithHistory, Run, RunnableConfig,
    StreamMode,
};
use state_store::{StepRecord, Store};
use std::path::{Path, PathBuf};

use gaia::demo::{NOW, THREAD, USER_ID, config, remembered};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    println!("GAIA state management, simulated\n");
    println!(
        "The schema, from #[derive(AgentState)]:\n{}",
        GaiaState::schema().to_markdown()
    );

    let config = config();
    println!("1. build_agent_config(..): the config travels beside the state, never in it");
    println!(
        "   {}",
        serde_json::to_string(&config).expect("the config serializes")
    );
    println!(
        "   config[\"configurable\"][\"user_timezone\"] → config.configurable.user_timezone = {:?}",
        config.configurable.user_timezone
    );

    // The checkpointer. GAIA's PostgresSaver ↔ `Store::postgres(url)` in
    // production, with the same calls; here `Store::sqlite` on a file in a
    // fresh temporary directory, removed at the end.
    let dir = fresh_dir();
    let path = dir.join("checkpoints.db");
    let store = Store::sqlite(&path).await.expect("the SQLite store opens");

    let mut graph = Gaia::new(remembered());
    let mut thread = store
        .thread::<GaiaState>(THREAD)
        .await
        .expect("the thread opens");
    let input = first_input();
    println!(
        "\n2. build_initial_state(..) is the graph's input, a delta:\n   {}",
        to_line(&input)
    );

    let run = graph
        .run_stored(&mut thread, input, &config)
        .await
        .expect("turn 1 runs");
    println!(
        "   run_stored: the input and each node's update are steps 1 to {} of thread {THREAD:?} in the SQLite file",
        thread.seq()
    );
    stream_updates(&run);
    stream_values(&run);
    println!("\n   execute_graph_streaming: the SSE events");
    for event in run.sse_events() {
        print!("   {event}");
    }

    dict_like_access(&mut thread.state().clone());
    accumulation_vs_replacement();
    resume(&mut graph, &store, &path, &config).await;
    prune_long_history(&mut graph, &config);

    drop((thread, store));
    std::fs::remove_dir_all(&dir).expect("the temporary directory is removed");
}

/// A new directory under the system's temporary one, unique to this run.
fn fresh_dir() -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos());
    let dir = std::env::temp_dir().join(format!("gaia-example-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    dir
}

fn first_input() -> GaiaStateDelta {
    let request = MessageRequestWithHistory {
        message: "Schedule a meeting for tomorrow".into(),
    };
    let history = vec![Message::human(request.message.as_str()).with_id("user-1")];
    gaia::build_initial_state(&request, USER_ID, THREAD, history, None, NOW)
}

/// `async for chunk in graph.astream(state, config, stream_mode="updates")`.
fn stream_updates(run: &Run) {
    println!("\n3. stream_mode=\"updates\": one JSON line per node, its delta serialized");
    let chunks = run.stream(StreamMode::Updates).expect("deltas serialize");
    for chunk in &chunks {
        println!("   {chunk}");
    }
    // A client that holds the input state can rebuild every `values`
    // chunk from the `updates` lines: each line decodes back to a typed
    // delta and goes through the same reducers.
    let mut replayed = GaiaState::from_json(run.input_values.clone()).expect("the input state");
    for chunk in &chunks {
        for (_node, update) in chunk.as_object().into_iter().flatten() {
            let delta = GaiaStateDelta::from_json(update.clone()).expect("a line decodes");
            replayed.apply(delta).expect("and applies");
        }
    }
    let last = run.values().last().cloned().unwrap_or_default();
    println!(
        "   replaying the lines on the input state (GaiaStateDelta::from_json + apply) gives the last \"values\" chunk: {}",
        replayed.to_json().ok() == Some(last)
    );
}

/// `stream_mode="values"`: the whole state after the input and each node.
fn stream_values(run: &Run) {
    println!("\n4. stream_mode=\"values\": state.to_json() after the input and after each node");
    let chunks = run.stream(StreamMode::Values).expect("values are JSON");
    for chunk in &chunks {
        let messages = chunk["messages"].as_array().map_or(0, Vec::len);
        println!(
            "   messages: {messages}, memories: {}, memories_stored: {}",
            chunk["memories"], chunk["memories_stored"]
        );
    }
    if let Some(last) = chunks.last() {
        println!("   the last chunk in full:\n   {last}");
    }
}

/// `DictLikeModel`: `state["query"]` and `state.query` side by side.
fn dict_like_access(state: &mut GaiaState) {
    println!("\n5. Dict-like access (DictLikeModel): state[\"query\"] beside state.query");
    println!("   state.query          = {:?}", state.query);
    println!(
        "   state.get(\"query\")   = {}",
        state.get("query").expect("a field")
    );
    // Both work interchangeably: write one way, read the other.
    state.query = "Hello".into();
    println!(
        "   state.query = \"Hello\"           → state.get(\"query\") = {}",
        state.get("query").expect("a field")
    );
    state
        .set("query", json!("Schedule a meeting for tomorrow"))
        .expect("a string");
    println!(
        "   state.set(\"query\", json!(..)) → state.query = {:?}",
        state.query
    );
    println!(
        "   field_ref::<String>  = {:?}",
        state.field_ref::<String>("query")
    );
    println!(
        "   len(state)           = GaiaState::keys().len() = {}",
        GaiaState::keys().len()
    );
    println!(
        "   \"memories\" in state  = {}",
        state.contains_key("memories")
    );

    // state["memories"] = [m.content for m in memories.memories]
    state
        .set("memories", json!(["Likes Thai food"]))
        .expect("a list of strings");
    println!("   state[\"memories\"] = [..] → set: {:?}", state.memories);
    println!(
        "   a typo:       {}",
        state.get("memory").expect_err("no such key")
    );
    println!(
        "   a wrong type: {}",
        state
            .set("memories_stored", json!("yes"))
            .expect_err("not a bool")
    );

    // state["messages"].append(HumanMessage(...)): the reducer, in place.
    let before = state.messages.len();
    add_messages(&mut state.messages, vec![Message::human("And lunch?")]).expect("a plain append");
    println!(
        "   state[\"messages\"].append(..) → add_messages: {before} → {} messages",
        state.messages.len()
    );
}

/// The document's "Accumulation vs. Replacement".
fn accumulation_vs_replacement() {
    println!("\n6. Accumulation vs. replacement");
    let mut state = GaiaState::default();
    let hello = GaiaState::delta().messages(vec![Message::human("Hello").with_id("1")]);
    state.apply(hello).expect("append");
    state
        .apply(GaiaState::delta().messages(vec![Message::ai("Hi there").with_id("2")]))
        .expect("append");
    println!(
        "   return {{\"messages\": [AIMessage(..)]}}: both kept → {:?}",
        texts(&state.messages)
    );

    let kept = vec![Message::ai("Hi there").with_id("2")];
    let mut as_written = state.clone();
    as_written
        .apply(GaiaState::delta().messages(kept.clone()))
        .expect("merge by id");
    println!(
        "   return {{\"messages\": filtered}} through add_messages: nothing removed → {:?}",
        texts(&as_written.messages)
    );
    state
        .apply(GaiaState::delta().overwrite_messages(Messages::from(kept)))
        .expect("overwrite");
    println!(
        "   overwrite_messages(filtered), LangGraph's Overwrite: replaced → {:?}",
        texts(&state.messages)
    );
}

/// "Resuming from Checkpoints": the thread reopened from the store, a new
/// turn, a partial input.
async fn resume(graph: &mut Gaia, store: &Store, path: &Path, config: &RunnableConfig) {
    println!("\n7. Resuming {THREAD:?} from its checkpoint");
    let mut thread = store
        .thread::<GaiaState>(THREAD)
        .await
        .expect("the thread reopens");
    let resumed_at = thread.seq();
    println!(
        "   store.thread(..) (graph.aget_state): step {resumed_at}; the state has {} messages; memories_stored = {}",
        thread.state().messages.len(),
        thread.state().memories_stored
    );
    thread.begin_turn().await.expect("the turn starts");
    println!(
        "   begin_turn(): memories_stored (turn scope) = {}, query (persistent) = {:?}",
        thread.state().memories_stored,
        thread.state().query
    );
    let input = json!({"messages": [{"type": "human", "content": "Continue from where we left off", "id": "user-2"}]});
    let delta = GaiaStateDelta::from_json(input.clone()).expect("a valid partial input");
    println!("   input {input} writes {:?}", delta.fields());
    let run = graph
        .run_stored(&mut thread, delta, config)
        .await
        .expect("the resumed turn runs");
    print_nodes(&run);
    println!(
        "   (the input wrote only messages, so query is still the checkpoint's {:?}: the nodes that read it act on the old request, as in GAIA)",
        thread.state().query
    );

    let history = store
        .history(THREAD, resumed_at + 1..)
        .await
        .expect("the log reads");
    let shown: Vec<String> = history.iter().map(describe).collect();
    println!("   the turn's steps in the log: {}", shown.join(", "));
    // Another process (a new connection to the same file) sees it all.
    let reopened = Store::sqlite(path)
        .await
        .expect("the file reopens")
        .thread::<GaiaState>(THREAD)
        .await
        .expect("the thread reopens");
    println!(
        "   a new Store on the same file reopens it at step {} with the same state: {}",
        reopened.seq(),
        reopened.state() == thread.state()
    );
}

/// `seq kind node` of one logged step.
fn describe(step: &StepRecord) -> String {
    match step.metadata.get("node").and_then(Value::as_str) {
        Some(node) => format!("{} {} {node}", step.seq, step.kind),
        None => format!("{} {}", step.seq, step.kind),
    }
}

/// Turn with a long history: filtered, then trimmed to the last ten.
fn prune_long_history(graph: &mut Gaia, config: &RunnableConfig) {
    println!("\n8. A long history: filter_messages_node, then trim_messages_node");
    let mut history: Vec<Message> = (1..=14)
        .map(|i| Message::human(format!("message {i}")).with_id(format!("h{i}")))
        .collect();
    history.insert(3, Message::ai("x".repeat(12_000)).with_id("huge"));
    let request = MessageRequestWithHistory {
        message: "What did we say?".into(),
    };
    println!(
        "   the input history: {} messages, one of them (id \"huge\") 12,000 characters long",
        history.len()
    );
    let input = gaia::build_initial_state(&request, USER_ID, "thread_long", history, None, NOW);
    let mut state = GaiaState::default();
    let run = graph
        .run(&mut state, input, config)
        .expect("the long turn runs");
    print_nodes(&run);
    println!(
        "   history now starts at {:?} and has {} messages",
        state.messages.first().and_then(Message::id),
        state.messages.len()
    );
}

/// One line per node: the fields its update writes, and how many messages
/// the state holds after it.
fn print_nodes(run: &Run) {
    for step in &run.steps {
        let count = step.values["messages"].as_array().map_or(0, Vec::len);
        let update = to_line(&step.delta).to_string();
        let shown = shorten(&update, 110);
        println!(
            "   {:<17} {:>2} messages after; update {}",
            step.node, count, shown
        );
    }
}

/// The text cut to `max` characters, marked with an ellipsis.
fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let cut: String = text.chars().take(max).collect();
    format!("{cut}…")
}

fn texts(messages: &Messages) -> Vec<String> {
    messages.iter().map(Message::text).collect()
}

fn to_line(delta: &GaiaStateDelta) -> Value {
    serde_json::to_value(delta).expect("a delta of JSON-able fields serializes")
}
