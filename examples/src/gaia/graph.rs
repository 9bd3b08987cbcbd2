//! GAIA as a [`StateGraph`], its run streamed.
//!
//! ```text
//! START ──prune──▶ filter_messages | trim_messages | memory_retrieval
//! filter_messages ──prune──▶ trim_messages | memory_retrieval
//! trim_messages ──prune──▶ memory_retrieval
//! memory_retrieval ──▶ agent
//! agent ──after_agent──▶ tools (the last AI message calls a tool) | store_memory
//! tools ──▶ agent
//! store_memory ──▶ END
//! ```
//!
//! The routers are [`next_node`], the hand-written loop's table: the graph
//! takes the same path. The pruning nodes are the document's
//! [`filter_messages_node`] and [`trim_messages_node`] as they are; the
//! agent and its tools are [`Gaia`]'s simulated model and calendar
//! ([`SharedGaia`], behind a mutex: the nodes run one at a time).
//!
//! The memory nodes are async and reach the user's memories through the
//! run's store, `ctx.store()`, as GAIA's graph, compiled with
//! `store=store`, reaches its `BaseStore`: [`memory::memory_retrieval`]
//! searches `["memories", user_id]` by meaning for the query, and
//! [`memory::store_memory`] puts the user's message there. The store is
//! the one the threads run in ([`compile`]): what one thread's run
//! remembers, every later run of the same user finds, on any thread.
//!
//! The run's [`RunnableConfig`] travels beside the state, never in it: it is
//! the graph's context (`StateGraph<GaiaState, RunnableConfig>`), given to
//! each run with [`CompiledGraph::with_context`] as GAIA passes `config` to
//! each `graph.astream(..)`, and a node reads it as the document's
//! `my_node(state, config)` does: `ctx.context().configurable.user_timezone`
//! for `config["configurable"]["user_timezone"]`. One compiled graph serves
//! every user; the context is not stored in the thread, so a resumed turn
//! runs with the config it is given.
//!
//! [`execute_graph_streaming`] is the document's function: the run streamed
//! with [`StreamMode::UPDATES`], each node's update turned into the SSE
//! events GAIA's front end reads as soon as the runner applies it.

use super::{
    Gaia, GaiaState, GaiaStateDelta, NodeRun, RECURSION_LIMIT, Run, RunnableConfig, SSE_DONE,
    filter_messages_node, memory, next_node, trim_messages_node, update_sse_events,
};
use futures::{Stream, StreamExt, stream};
use state_core::State;
use state_graph::{
    CompiledGraph, Ctx, END, Event, GraphError, NodeError, Outcome, START, StateGraph, StreamMode,
};
use state_store::Store;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// The node that drops oversized messages.
pub const FILTER_MESSAGES: &str = "filter_messages";
/// The node that keeps the last ten messages.
pub const TRIM_MESSAGES: &str = "trim_messages";
/// The node that searches the user's memories.
pub const MEMORY_RETRIEVAL: &str = "memory_retrieval";
/// The model.
pub const AGENT: &str = "agent";
/// The tool executor.
pub const TOOLS: &str = "tools";
/// The node that stores the user's message as a memory.
pub const STORE_MEMORY: &str = "store_memory";

/// Every node of the graph.
pub const NODES: [&str; 6] = [
    FILTER_MESSAGES,
    TRIM_MESSAGES,
    MEMORY_RETRIEVAL,
    AGENT,
    TOOLS,
    STORE_MEMORY,
];

/// The simulated model and calendar, shared by the graph's nodes (one
/// counter for their messages' ids).
pub type SharedGaia = Arc<Mutex<Gaia>>;

/// Wraps the services for [`build`].
pub fn shared(gaia: Gaia) -> SharedGaia {
    Arc::new(Mutex::new(gaia))
}

/// The services, locked (taken back if a node panicked holding them).
pub fn lock(gaia: &SharedGaia) -> MutexGuard<'_, Gaia> {
    gaia.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The conditional edges of `START` and the pruning nodes: filter
/// oversized messages first, then trim, then on to memory retrieval.
pub fn prune(state: &GaiaState) -> &'static str {
    next_node(START, state).unwrap_or(END)
}

/// The conditional edge of the agent: its tools when the last AI message
/// calls one, else the memory store.
pub fn after_agent(state: &GaiaState) -> &'static str {
    next_node(AGENT, state).unwrap_or(END)
}

/// The graph over `gaia`; its runs carry their [`RunnableConfig`], and
/// need a store for the memories ([`compile`]).
pub fn build(gaia: &SharedGaia) -> StateGraph<GaiaState, RunnableConfig> {
    let mut g = StateGraph::<GaiaState, RunnableConfig>::new();
    g.add_node(FILTER_MESSAGES, filter_messages_node);
    g.add_node(TRIM_MESSAGES, trim_messages_node);
    // `def my_node(state: State, config: RunnableConfig)`: the config is
    // the run's context; the memories are the run's store's items.
    let ids = gaia.clone();
    g.add_node(
        MEMORY_RETRIEVAL,
        move |state: Arc<GaiaState>, ctx: Ctx<RunnableConfig>| {
            // Taken before the search, as the hand-written loop takes it,
            // so both number their messages alike.
            let id = lock(&ids).id("sys");
            async move {
                let delta =
                    memory::memory_retrieval(ctx.store()?, &state, ctx.context(), id).await?;
                Ok::<_, NodeError>(delta)
            }
        },
    );
    let model = gaia.clone();
    g.add_node(
        AGENT,
        move |state: &GaiaState, ctx: &Ctx<RunnableConfig>| {
            lock(&model).agent(state, ctx.context())
        },
    );
    let calendar = gaia.clone();
    g.add_node(TOOLS, move |state: &GaiaState| lock(&calendar).tools(state));
    g.add_node(
        STORE_MEMORY,
        |state: Arc<GaiaState>, ctx: Ctx<RunnableConfig>| async move {
            let delta = memory::store_memory(ctx.store()?, &state, ctx.context()).await?;
            Ok::<_, NodeError>(delta)
        },
    );
    let pruned = [FILTER_MESSAGES, TRIM_MESSAGES, MEMORY_RETRIEVAL];
    g.add_conditional_edges(START, prune, pruned);
    g.add_conditional_edges(FILTER_MESSAGES, prune, [TRIM_MESSAGES, MEMORY_RETRIEVAL]);
    g.add_conditional_edges(TRIM_MESSAGES, prune, [MEMORY_RETRIEVAL]);
    g.add_edge(MEMORY_RETRIEVAL, AGENT);
    g.add_conditional_edges(AGENT, after_agent, [TOOLS, STORE_MEMORY]);
    g.add_edge(TOOLS, AGENT);
    g.add_edge(STORE_MEMORY, END);
    g
}

/// [`build`], compiled, its threads and the users' memories in `store`
/// (GAIA's `compile(checkpointer=checkpointer, store=store)`: here one
/// store holds both, in tables of their own), with [`RECURSION_LIMIT`]
/// supersteps per run. The memory search ranks by meaning, so give the
/// store the index: `memory::indexed(store)` (without it the memory
/// node fails, saying so). One graph for every user: give each run its
/// config with [`CompiledGraph::with_context`] (a run without one is
/// refused, `GraphError::NoContext`).
///
/// # Errors
///
/// When the graph does not compile (it does: the tests build it).
pub fn compile(
    gaia: &SharedGaia,
    store: Store,
) -> Result<CompiledGraph<GaiaState, RunnableConfig>, GraphError> {
    Ok(build(gaia)
        .compile()?
        .with_store(store)
        .with_recursion_limit(RECURSION_LIMIT))
}

/// The document's `execute_graph_streaming(graph, initial_state, config)`:
/// the run of `initial_state` with `config` (on its `thread_id`), streamed
/// with [`StreamMode::UPDATES`], as SSE events: for each node's update as
/// it comes, the content of each new AI message and its tool calls; then
/// `data: [DONE]`, unless the run failed (its error is the last item, as
/// the Python generator raises).
pub fn execute_graph_streaming(
    graph: &CompiledGraph<GaiaState, RunnableConfig>,
    initial_state: GaiaStateDelta,
    config: &RunnableConfig,
) -> impl Stream<Item = Result<String, GraphError>> + Send + Unpin + 'static {
    let failed = Arc::new(AtomicBool::new(false));
    let seen = failed.clone();
    let thread = config.configurable.thread_id.clone();
    let events = graph
        .with_context(config.clone())
        .stream_thread(&thread, initial_state, StreamMode::UPDATES)
        .flat_map(move |event| {
            let frames: Vec<Result<String, GraphError>> = match event {
                Ok(Event::Update { delta, .. }) => {
                    update_sse_events(&delta).into_iter().map(Ok).collect()
                }
                Ok(_) => Vec::new(),
                Err(error) => {
                    seen.store(true, Ordering::Relaxed);
                    vec![Err(error)]
                }
            };
            stream::iter(frames)
        });
    // Read once the run's events are all out (a chained stream is polled
    // only after the first ends).
    let done = stream::iter([()]).flat_map(move |()| {
        let failed = failed.load(Ordering::Relaxed);
        stream::iter((!failed).then(|| Ok(SSE_DONE.to_owned())))
    });
    events.chain(done)
}

/// The run of `input` with `config` (on its `thread_id`), streamed with
/// `StreamMode::UPDATES | StreamMode::VALUES`; `on_event` sees each event as
/// it comes (a front end's SSE feed). Returns what the hand-written loop
/// records ([`Run`]: the state after the input, each node's update and the
/// state after it), and the outcome.
///
/// # Errors
///
/// The run's error; or a node the graph does not know (it knows them all).
pub async fn stream_run(
    graph: &CompiledGraph<GaiaState, RunnableConfig>,
    input: GaiaStateDelta,
    config: &RunnableConfig,
    mut on_event: impl FnMut(&Event<GaiaState>),
) -> Result<(Run, Outcome<GaiaState>), GraphError> {
    let thread = &config.configurable.thread_id;
    let mut events = graph.with_context(config.clone()).stream_thread(
        thread,
        input,
        StreamMode::UPDATES | StreamMode::VALUES,
    );
    let mut input_values = None;
    let mut steps: Vec<NodeRun> = Vec::new();
    // GAIA's supersteps are one node each: the update, then the values.
    let mut update = None;
    while let Some(event) = events.next().await {
        let event = event?;
        on_event(&event);
        match event {
            Event::Update { node, delta } => {
                let name = NODES
                    .into_iter()
                    .find(|known| *known == node)
                    .ok_or_else(|| GraphError::Invalid(format!("unknown node {node:?}")))?;
                update = Some((name, delta));
            }
            Event::Values(state) => {
                let values = state.to_json().map_err(|source| GraphError::State {
                    context: "the state has no JSON form".to_owned(),
                    source,
                })?;
                match update.take() {
                    Some((node, delta)) => steps.push(NodeRun {
                        node,
                        delta,
                        values,
                    }),
                    None => input_values = Some(values),
                }
            }
            Event::End(outcome) => {
                let run = Run {
                    input_values: input_values.unwrap_or_default(),
                    steps,
                };
                return Ok((run, outcome));
            }
            _ => {}
        }
    }
    Err(GraphError::Invalid(
        "the stream ended without its End event".to_owned(),
    ))
}
