//! GAIA (seed 001) as a graph, its run streamed: the initial state built
//! from a request, the config passed beside the state as the run's typed
//! context (one compiled graph for every user, `with_context(config)` per
//! run, nodes reading `ctx.context()`), a
//! `state_graph::StateGraph` (pruning routed by conditional edges, memory
//! retrieval, the agent and its tool loop, the memory store) whose run is
//! streamed with `stream_thread` (each node's update printed as it comes,
//! as GAIA's front end receives it over SSE), dict-like access, trimming and
//! filtering the history with an overwrite, the thread's snapshot
//! (`get_state`, GAIA's `aget_state`), and resuming a thread from its
//! checkpoint: every superstep is logged in a `state_store` thread, in a
//! SQLite file. The user's long-term memories (Mem0 in GAIA) are the same
//! store's items (`compile(store=store)`), which the memory nodes search
//! by meaning and put through `ctx.store()`: what one conversation stored,
//! the next finds, and another user does not.
//!
//! The graph is in `state_examples::gaia::graph`.
//!
//! Run it with `cargo run --example gaia`.
//!
//! The Python original (GAIA's "State Management" page), for comparison:
/*
def build_initial_state(
    request: MessageRequestWithHistory,
    user_id: str,
    conversation_id: str,
    history: List[AnyMessage],
    trigger_context: Optional[dict] = None,
) -> dict:
    return {
        "query": request.message,
        "messages": history,
        "current_datetime": datetime.now().isoformat(),
        "mem0_user_id": user_id,
        "conversation_id": conversation_id,
        "memories": [],
        "memories_stored": False,
    }

def my_node(state: State, config: RunnableConfig) -> dict:
    """Node that uses runtime configuration."""
    user_id = config["configurable"]["user_id"]
    user_timezone = config["configurable"]["user_timezone"]
    selected_tool = config["configurable"].get("selected_tool")
    return {}

def trim_messages_node(state: State) -> dict:
    """Only update messages field."""
    trimmed = state.messages[-10:]  # Keep last 10
    return {"messages": trimmed}

def filter_messages_node(state: State) -> dict:
    """Replace messages with filtered version."""
    filtered = [msg for msg in state.messages if len(msg.content) < 10000]
    return {"messages": filtered}

checkpointer = checkpointer_manager.get_checkpointer()
graph = builder.compile(
    checkpointer=checkpointer,
    store=store
)

# Store user message in memory (background task)
if user_id and request.message:
    task = asyncio.create_task(
        store_user_message_memory(
            user_id,
            request.message,
            conversation_id
        )
    )

# Retrieve memories for context
memories = await memory_service.search_memories(
    query=state.query,
    user_id=state.mem0_user_id,
    limit=5
)

# Add to state
state["memories"] = [m.content for m in memories.memories]

async def execute_graph_streaming(
    graph,
    initial_state: dict,
    config: RunnableConfig,
) -> AsyncGenerator[str, None]:
    async for chunk in graph.astream(initial_state, config, stream_mode="updates"):
        # Stream messages
        if "messages" in chunk:
            for msg in chunk["messages"]:
                if isinstance(msg, AIMessage):
                    yield f"data: {json.dumps({'content': msg.content})}\n\n"

        # Stream tool calls
        if "tool_calls" in chunk:
            yield f"data: {json.dumps({'tool_calls': chunk['tool_calls']})}\n\n"

    yield "data: [DONE]\n\n"

# Get state snapshot
snapshot = await graph.aget_state(config)

print(snapshot.values)      # Current state values
print(snapshot.next)        # Next nodes to execute
print(snapshot.metadata)    # Checkpoint metadata

# Resume conversation from saved state
config = {
    "configurable": {
        "thread_id": "conversation_123",
        "user_id": "user_456",
    }
}

# Agent automatically loads previous state
result = await graph.ainvoke(
    {"messages": [HumanMessage(content="Continue from where we left off")]},
    config=config
)
*/

use futures::StreamExt;
use serde_json::{Value, json};
use state_core::reducer::add_messages;
use state_core::{Delta, Message, Messages, State};
use state_examples::gaia::graph as gaia_graph;
use state_examples::gaia::{
    self, Gaia, GaiaState, GaiaStateDelta, MessageRequestWithHistory, Run, RunnableConfig, memory,
};
use state_graph::{CompiledGraph, Event, START, Snapshot};

type Graph = CompiledGraph<GaiaState, RunnableConfig>;
use state_store::Store;
use std::path::Path;

use gaia::demo::{
    EARLIER_THREAD, NOW, OTHER_THREAD, THREAD, USER_ID, config, other_config, remember_earlier,
};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    println!("GAIA state management, simulated, as a state_graph::StateGraph\n");
    println!(
        "The schema, from #[derive(AgentState)]:\n{}",
        GaiaState::schema().to_markdown()
    );

    let config = config();
    println!(
        "1. build_agent_config(..): the config travels beside the state, never in it: the run's context"
    );
    println!(
        "   {}",
        serde_json::to_string(&config).expect("the config serializes")
    );
    println!(
        "   config[\"configurable\"][\"user_timezone\"] → config.configurable.user_timezone = {:?}",
        config.configurable.user_timezone
    );

    // The checkpointer and the store. GAIA's PostgresSaver ↔
    // `Store::postgres(url)` in production, with the same calls; here
    // `Store::sqlite` on a file in a fresh temporary directory, removed at
    // the end. One store holds the threads and the long-term memories
    // (tables of their own), indexed for search by meaning.
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("checkpoints.db");
    let store = Store::sqlite(&path).await.expect("the SQLite store opens");
    let store = memory::indexed(store);
    remember_earlier(&store)
        .await
        .expect("the earlier memories are stored");
    println!(
        "\n   The store already remembers, from {EARLIER_THREAD:?}: {:?}",
        memories_of(&store, USER_ID).await
    );

    // builder.compile(checkpointer=checkpointer, store=store): one graph
    // for every user; each run is given its config
    // (`app.with_context(config)`), and the nodes read it as
    // `ctx.context()`, the store as `ctx.store()`.
    let services = gaia_graph::shared(Gaia::default());
    let app = gaia_graph::compile(&services, store.clone()).expect("the graph compiles");
    println!("\n   The graph (state_examples::gaia::graph):");
    println!(
        "   START → prune → filter_messages | trim_messages | memory_retrieval (pruning first when needed)"
    );
    println!("   memory_retrieval → agent → after_agent → tools → agent … | store_memory → END");
    println!(
        "   memory_retrieval and store_memory: ctx.store().search_items(&[\"memories\", user_id]).query(query) / .put_item(..)"
    );

    let input = first_input();
    println!(
        "\n2. build_initial_state(..) is the graph's input, a delta:\n   {}",
        to_line(&input)
    );

    println!(
        "\n3. app.with_context(config).stream_thread({THREAD:?}, input, StreamMode::UPDATES | StreamMode::VALUES): each event as it comes"
    );
    println!(
        "   (`event:` its mode; an update is {{node: delta}}, LangGraph's chunk; under it, the SSE frames GAIA sends for it)"
    );
    let (run, outcome) = gaia_graph::stream_run(&app, input, &config, print_event)
        .await
        .expect("turn 1 runs");
    println!(
        "   the run's outcome: seq = {}, interrupted = {}; each superstep is a step of thread {THREAD:?} in the SQLite file",
        outcome.seq(),
        outcome.is_interrupted()
    );
    replay_updates(&run);

    dict_like_access(&mut outcome.state().clone());
    accumulation_vs_replacement();
    resume(&app, &path, &config).await;
    prune_long_history(&app, &config).await;
    another_user(&app).await;
    remembered_across_threads(&app, &path, &config).await;

    drop((app, store));
    dir.close().expect("the temporary directory is removed");
}

fn first_input() -> GaiaStateDelta {
    let request = MessageRequestWithHistory {
        message: "Schedule a meeting for tomorrow".into(),
    };
    let history = vec![Message::human(request.message.as_str()).with_id("user-1")];
    gaia::build_initial_state(&request, USER_ID, THREAD, history, None, NOW)
}

/// One event of the stream, as it comes: an update in full (LangGraph's
/// `{node: update}` chunk) with the SSE frames GAIA derives from it, a
/// `values` chunk in short.
fn print_event(event: &Event<GaiaState>) {
    match event {
        Event::Update { .. } => {
            let data = event.data().expect("an update serializes");
            println!("   {:<8} {data}", event.mode());
            if let Event::Update { delta, .. } = event {
                for frame in gaia::update_sse_events(delta) {
                    println!("   {:<8}   SSE → {}", "", frame.trim_end());
                }
            }
        }
        Event::Values(state) => println!(
            "   {:<8} messages: {}, memories: {:?}, memories_stored: {}",
            event.mode(),
            state.messages.len(),
            state.memories,
            state.memories_stored
        ),
        Event::End(_) => println!(
            "   {:<8} (the stream's last event: the outcome)",
            event.mode()
        ),
        _ => println!("   {:<8} {:?}", event.mode(), event.data().ok()),
    }
}

/// A client that holds the input state can rebuild every `values` chunk
/// from the `updates` chunks: each decodes back to a typed delta and goes
/// through the same reducers.
fn replay_updates(run: &Run) {
    println!(
        "\n4. The updates, replayed by a client on the first values chunk (the state after the input)"
    );
    let chunks = run.updates().expect("deltas serialize");
    let mut replayed = GaiaState::from_json(run.input_values.clone()).expect("the input state");
    for chunk in &chunks {
        for (_node, update) in chunk.as_object().into_iter().flatten() {
            let delta = GaiaStateDelta::from_json(update.clone()).expect("a chunk decodes");
            replayed.apply(delta).expect("and applies");
        }
    }
    let last = run.values().last().cloned().unwrap_or_default();
    println!(
        "   GaiaStateDelta::from_json + apply, chunk by chunk, gives the last \"values\" chunk: {}",
        replayed.to_json().ok() == Some(last.clone())
    );
    println!("   the last values chunk in full:\n   {last}");
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

/// "State Snapshots" and "Resuming from Checkpoints": the thread's
/// snapshot (`graph.aget_state(config)`), then a new turn on the thread,
/// with a partial input, run by `execute_graph_streaming`: the runner
/// opens the thread from the store, begins a turn, applies the input, and
/// the SSE frames come as the nodes' updates are applied.
async fn resume(app: &Graph, path: &Path, config: &RunnableConfig) {
    println!("\n7. The snapshot of {THREAD:?}, then resuming it from its checkpoint");
    // The snapshot's `next` is what the routers pick, and they may read the
    // config: `get_state` runs with one, as `aget_state(config)` does.
    let snapshot = app
        .with_context(config.clone())
        .get_state(THREAD)
        .await
        .expect("the thread reads");
    let resumed_at = snapshot.seq();
    println!(
        "   app.get_state({THREAD:?}) (graph.aget_state(config)): step {resumed_at}; values: {} messages, memories_stored = {}",
        snapshot.state().messages.len(),
        snapshot.state().memories_stored
    );
    println!(
        "   snapshot.next() = {:?} (the run ended); snapshot.metadata() = {}",
        snapshot.next(),
        serde_json::Value::Object(snapshot.metadata().clone())
    );
    let input = json!({"messages": [{"type": "human", "content": "Continue from where we left off", "id": "user-2"}]});
    let delta = GaiaStateDelta::from_json(input.clone()).expect("a valid partial input");
    println!("   input {input} writes {:?}", delta.fields());
    println!(
        "   execute_graph_streaming(app, input, config), frame by frame (config: the thread and the user, as before):"
    );
    let mut frames = gaia_graph::execute_graph_streaming(app, delta, config);
    while let Some(frame) = frames.next().await {
        let frame = frame.expect("the resumed turn runs");
        println!("   {}", frame.trim_end());
    }

    let app = app.with_context(config.clone());
    let history = app
        .get_state_history(THREAD)
        .await
        .expect("the history reads");
    let mut shown: Vec<String> = history
        .iter()
        .filter(|snapshot| snapshot.seq() > resumed_at)
        .map(describe)
        .collect();
    shown.reverse();
    println!(
        "   the turn's snapshots (get_state_history): {}",
        shown.join(", ")
    );
    let thread = app.get_state(THREAD).await.expect("the thread reads");
    println!(
        "   begin_turn reset memories_stored (turn scope) before the input; store_memory set it again: {}",
        thread.state().memories_stored
    );
    println!(
        "   (the input wrote only messages, so query is still the checkpoint's {:?}: the nodes that read it act on the old request, as in GAIA)",
        thread.state().query
    );
    // Another process (a new connection to the same file) sees it all.
    let reopened = Store::sqlite(path).await.expect("the file reopens");
    let other = app.clone().with_store(reopened);
    let seen = other.get_state(THREAD).await.expect("the thread reads");
    println!(
        "   a graph on a new Store on the same file reads it at step {} with the same state: {}",
        seen.seq(),
        seen.state() == thread.state()
    );
}

/// Another user on the same compiled graph: their own config (Tokyo, the
/// mail tool picked), given to their run alone.
async fn another_user(app: &Graph) {
    let config = other_config();
    println!(
        "\n9. Another user, {:?} in {}, on the same compiled graph: app.with_context(their config)",
        config.configurable.user_name.as_deref().unwrap_or("?"),
        config.configurable.user_timezone
    );
    let request = MessageRequestWithHistory {
        message: "Schedule a meeting for tomorrow".into(),
    };
    let history = vec![Message::human(request.message.as_str()).with_id("kenji-1")];
    let user_id = config.configurable.user_id.clone();
    let input = gaia::build_initial_state(&request, &user_id, OTHER_THREAD, history, None, NOW);
    let (run, outcome) = gaia_graph::stream_run(app, input, &config, |_| {})
        .await
        .expect("the other user's turn runs");
    let nodes: Vec<&str> = run.steps.iter().map(|step| step.node).collect();
    println!(
        "   selected_tool = {:?}: the agent does not call the calendar; nodes: {}",
        config.configurable.selected_tool,
        nodes.join(" → ")
    );
    if let Some(last) = outcome.state().messages.last() {
        println!("   the agent: {}", last.text());
    }
    println!(
        "   memory_retrieval found {:?}: Ada's memories are under [\"memories\", {USER_ID:?}], not Kenji's",
        outcome.state().memories
    );
}

/// Long-term memory: a new conversation of the same user finds what the
/// first one stored, by meaning; the namespaces and items are in the
/// SQLite file, for any process.
async fn remembered_across_threads(app: &Graph, path: &Path, config: &RunnableConfig) {
    println!("\n10. Long-term memory across threads: Ada starts a new conversation");
    let request = MessageRequestWithHistory {
        message: "Anything planned for tomorrow afternoon?".into(),
    };
    let history = vec![Message::human(request.message.as_str()).with_id("friday-1")];
    let thread = "conversation_456";
    let input = gaia::build_initial_state(&request, USER_ID, thread, history, None, NOW);
    let mut config = config.clone();
    config.configurable.thread_id = thread.to_owned();
    let (run, outcome) = gaia_graph::stream_run(app, input, &config, |_| {})
        .await
        .expect("the new conversation runs");
    println!(
        "   {thread:?}, query {:?}: memory_retrieval found {:?}",
        request.message,
        outcome.state().memories
    );
    println!(
        "   (the first from {THREAD:?}, the second from {EARLIER_THREAD:?}; \"Works with the design team\" shares no word with the query)"
    );
    if let Some(last) = outcome.state().messages.last() {
        println!("   the agent: {}", last.text());
    }
    let nodes: Vec<&str> = run.steps.iter().map(|step| step.node).collect();
    println!("   nodes: {}", nodes.join(" → "));

    // Another process opens the same file: the memories are there.
    let reopened = memory::indexed(Store::sqlite(path).await.expect("the file reopens"));
    let namespaces = reopened
        .list_namespaces(&[memory::NAMESPACE])
        .await
        .expect("the namespaces list");
    println!("   a new Store on the file: store.list_namespaces(&[\"memories\"]) = {namespaces:?}");
    for user in [USER_ID, gaia::demo::OTHER_USER_ID] {
        println!("   {user:?}: {:?}", memories_of(&reopened, user).await);
    }
    println!(
        "   (one item per thing said: the query of {THREAD:?}'s two turns was the same, so its second put replaced the first)"
    );
}

/// Every memory of `user`, newest first.
async fn memories_of(store: &Store, user: &str) -> Vec<String> {
    let items = store
        .search_items(&memory::namespace(user))
        .await
        .expect("the memories read");
    items
        .iter()
        .filter_map(|item| item.value["text"].as_str().map(str::to_owned))
        .collect()
}

/// `seq source nodes` of one snapshot: what wrote it.
fn describe(snapshot: &Snapshot<GaiaState>) -> String {
    let metadata = snapshot.metadata();
    let source = metadata
        .get("source")
        .and_then(Value::as_str)
        .unwrap_or("?");
    let nodes: Vec<&str> = metadata
        .get("nodes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    match nodes.as_slice() {
        [START] => format!("{} input", snapshot.seq()),
        _ => format!("{} {source} {}", snapshot.seq(), nodes.join("+")),
    }
}

/// A turn with a long history, on its own thread: filtered, then trimmed
/// to the last ten, by the conditional edges out of `START`.
async fn prune_long_history(app: &Graph, config: &RunnableConfig) {
    println!("\n8. A long history: the router sends it to filter_messages, then trim_messages");
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
    // The same user, on a thread of their own.
    let mut config = config.clone();
    config.configurable.thread_id = "thread_long".to_owned();
    let (run, outcome) = gaia_graph::stream_run(app, input, &config, |_| {})
        .await
        .expect("the long turn runs");
    print_nodes(&run);
    let state = outcome.state();
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
