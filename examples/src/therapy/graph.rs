//! The therapy agent as a [`StateGraph`]: one turn is one run.
//!
//! ```text
//! START ──▶ load_memory ──▶ crisis_gate ──route_after_crisis_gate──▶ crisis_response
//!                                                                  | select_mode ──▶ therapeutic_response
//! crisis_response, therapeutic_response ──▶ finalize_turn
//! finalize_turn ──extractors──▶ [extract_facts, extract_procedural] (one superstep) | END
//! extract_facts, extract_procedural ──▶ END
//! ```
//!
//! The nodes are the module's node functions, unchanged. The runtime
//! context ([`WorkflowContext`], LangGraph's `runtime.context`) is the
//! graph's context type (`StateGraph<TherapyState, WorkflowContext>`):
//! each run is given one (`app.with_context(ctx)`, the Python's
//! `graph.invoke(input, context=ctx)`), the nodes that need it read it as
//! `ctx.context()`, and the router [`extractors`] as its second argument.
//! One compiled graph serves every context; the context is not stored in
//! the thread. [`route_after_crisis_gate`] picks the branch per turn, and
//! [`extractors`] fans out to both extractors when
//! [`should_persist_memory`] says so: they read the same state and their
//! `diagnostics` keys merge in one superstep.
//!
//! [`run_turn`] is one turn on the session's thread: the checkpoint read
//! for [`build_initial_state`] (which derives `turn_count` from it), then
//! one `invoke_thread` with the turn's context, which begins the turn (the
//! turn-scoped fields reset), applies the input and runs the nodes, each
//! superstep one logged step. A caller without a session runs in memory
//! ([`run_one_shot`]).

use super::{
    AgentInput, BUILD_INITIAL_STATE, CRISIS_GATE, CRISIS_RESPONSE, EXTRACT_FACTS,
    EXTRACT_PROCEDURAL, FINALIZE_TURN, LOAD_MEMORY, SELECT_MODE, Step, THERAPEUTIC_RESPONSE,
    TherapyState, TherapyStateDelta, Turn, WorkflowContext, build_initial_state, crisis_gate_node,
    crisis_response_node, extract_facts_node, extract_procedural_node, finalize_turn_node,
    load_memory_node, route_after_crisis_gate, select_mode_node, should_persist_memory,
    state_to_output, therapeutic_response_node,
};
use futures::StreamExt;
use state_graph::{CompiledGraph, Ctx, END, Event, GraphError, START, StateGraph, StreamMode};
use state_store::{StepRecord, Store};

/// The compiled graph: its runs carry a [`WorkflowContext`].
pub type TherapyGraph = CompiledGraph<TherapyState, WorkflowContext>;

/// A node that reads the context: `node(state, ctx.context())`.
fn context_node(
    node: fn(&TherapyState, &WorkflowContext) -> TherapyStateDelta,
) -> impl Fn(&TherapyState, &Ctx<WorkflowContext>) -> TherapyStateDelta + Send + Sync + 'static {
    move |state, ctx| node(state, ctx.context())
}

/// Every node of the graph.
pub const NODES: [&str; 8] = [
    LOAD_MEMORY,
    CRISIS_GATE,
    SELECT_MODE,
    THERAPEUTIC_RESPONSE,
    CRISIS_RESPONSE,
    FINALIZE_TURN,
    EXTRACT_FACTS,
    EXTRACT_PROCEDURAL,
];

/// The node name as the module's constant (the [`Step`]s name nodes with
/// them).
pub fn node_name(name: &str) -> Option<&'static str> {
    NODES
        .into_iter()
        .chain([BUILD_INITIAL_STATE])
        .find(|known| *known == name)
}

/// The conditional edge of `finalize_turn`: both extractors, in one
/// superstep, when the turn's memories are kept; else the end.
pub fn extractors(state: &TherapyState, ctx: &WorkflowContext) -> Vec<&'static str> {
    if should_persist_memory(state, ctx) {
        vec![EXTRACT_FACTS, EXTRACT_PROCEDURAL]
    } else {
        vec![END]
    }
}

/// The graph; its runs carry their [`WorkflowContext`].
pub fn build() -> StateGraph<TherapyState, WorkflowContext> {
    let mut g = StateGraph::<TherapyState, WorkflowContext>::new();
    g.add_node(LOAD_MEMORY, context_node(load_memory_node));
    g.add_node(CRISIS_GATE, context_node(crisis_gate_node));
    g.add_node(SELECT_MODE, context_node(select_mode_node));
    g.add_node(THERAPEUTIC_RESPONSE, therapeutic_response_node);
    g.add_node(CRISIS_RESPONSE, crisis_response_node);
    g.add_node(FINALIZE_TURN, finalize_turn_node);
    g.add_node(EXTRACT_FACTS, context_node(extract_facts_node));
    g.add_node(EXTRACT_PROCEDURAL, context_node(extract_procedural_node));

    g.add_edge(START, LOAD_MEMORY);
    g.add_edge(LOAD_MEMORY, CRISIS_GATE);
    g.add_conditional_edges(
        CRISIS_GATE,
        route_after_crisis_gate,
        [CRISIS_RESPONSE, SELECT_MODE],
    );
    g.add_edge(SELECT_MODE, THERAPEUTIC_RESPONSE);
    g.add_edge(THERAPEUTIC_RESPONSE, FINALIZE_TURN);
    g.add_edge(CRISIS_RESPONSE, FINALIZE_TURN);
    g.add_conditional_edges(
        FINALIZE_TURN,
        extractors,
        [EXTRACT_FACTS, EXTRACT_PROCEDURAL, END],
    );
    g.add_edge(EXTRACT_FACTS, END);
    g.add_edge(EXTRACT_PROCEDURAL, END);
    g
}

/// [`build`], compiled, its threads (one per `session_id`) in `store`.
/// Give each run its context ([`run_turn`] does, or
/// `app.with_context(ctx)`): a run without one is refused
/// (`GraphError::NoContext`).
///
/// # Errors
///
/// When the graph does not compile (it does: the tests build it).
pub fn compile(store: Store) -> Result<TherapyGraph, GraphError> {
    Ok(build().compile()?.with_store(store))
}

/// The session's checkpoint: its thread's state, or `None` for a thread
/// with no step yet (a new session).
///
/// # Errors
///
/// When the graph has no store, or the store fails.
pub async fn checkpoint(
    app: &TherapyGraph,
    session: &str,
) -> Result<Option<TherapyState>, GraphError> {
    let store = app.store().ok_or(GraphError::NoStore {
        method: "checkpoint",
    })?;
    let thread = store.thread::<TherapyState>(session).await?;
    Ok((thread.seq() > 0).then(|| thread.into_state()))
}

/// One turn with `ctx` (the Python's `graph.invoke(input, context=ctx)`):
/// on the session's thread when the input names one (one
/// `invoke_thread`), else in memory ([`run_one_shot`]). The [`Turn`]'s
/// steps are read back from the thread's log: the input (as
/// [`BUILD_INITIAL_STATE`], what the hand-written loop records), then one
/// [`Step`] per superstep, its nodes named in the step's metadata.
///
/// # Errors
///
/// The run's error (the state is then as after its last committed
/// superstep); the store's.
pub async fn run_turn(
    app: &TherapyGraph,
    ctx: &WorkflowContext,
    input: &AgentInput,
) -> Result<Turn, GraphError> {
    let Some(session) = input.session_id.as_deref() else {
        return run_one_shot(app, ctx, input).await;
    };
    let store = app
        .store()
        .ok_or(GraphError::NoStore { method: "run_turn" })?;
    // `app.get_state(config)`: the thread as the store has it.
    let thread = store.thread::<TherapyState>(session).await?;
    let before = thread.seq();
    let saved = (before > 0).then(|| thread.into_state());
    let initial = build_initial_state(input, saved.as_ref());
    // A cheap copy: its stores are the caller's.
    let out = app
        .with_context(ctx.clone())
        .invoke_thread(session, initial.clone())
        .await?;
    let mut steps = vec![Step {
        writes: vec![(BUILD_INITIAL_STATE, initial)],
    }];
    for record in store.history(session, before + 1..).await? {
        if let Some(step) = logged_step(session, record)? {
            steps.push(step);
        }
    }
    let state = out.into_state();
    let output = state_to_output(&state, should_persist_memory(&state, ctx));
    Ok(Turn {
        state,
        output,
        steps,
    })
}

/// A turn without a checkpoint, in memory: the caller sends the earlier
/// turns in the input. Streamed (`updates` and `values`) to record its
/// supersteps: the updates between two `values` events are one superstep.
///
/// # Errors
///
/// The run's error.
pub async fn run_one_shot(
    app: &TherapyGraph,
    ctx: &WorkflowContext,
    input: &AgentInput,
) -> Result<Turn, GraphError> {
    let initial = build_initial_state(input, None);
    let mut steps = vec![Step {
        writes: vec![(BUILD_INITIAL_STATE, initial.clone())],
    }];
    let mut events = app
        .with_context(ctx.clone())
        .stream(initial, StreamMode::UPDATES | StreamMode::VALUES);
    let mut writes = Vec::new();
    while let Some(event) = events.next().await {
        match event? {
            Event::Update { node, delta } => writes.push((known(&node)?, delta)),
            Event::Values(_) if !writes.is_empty() => steps.push(Step {
                writes: std::mem::take(&mut writes),
            }),
            Event::End(out) => {
                let state = out.into_state();
                let output = state_to_output(&state, should_persist_memory(&state, ctx));
                return Ok(Turn {
                    state,
                    output,
                    steps,
                });
            }
            _ => {}
        }
    }
    Err(GraphError::Invalid(
        "the stream ended without its End event".to_owned(),
    ))
}

fn known(node: &str) -> Result<&'static str, GraphError> {
    node_name(node).ok_or_else(|| GraphError::Invalid(format!("unknown node {node:?}")))
}

/// A logged superstep as a [`Step`]: its nodes and their deltas, decoded;
/// `None` for the input, a turn start, or a pending step.
fn logged_step(thread: &str, record: StepRecord) -> Result<Option<Step>, GraphError> {
    let seq = record.seq;
    let writes = crate::logged::node_deltas::<TherapyState>(thread, record)?;
    if writes.is_empty() {
        return Ok(None);
    }
    let writes = writes
        .into_iter()
        .map(|(node, delta)| match node_name(&node) {
            Some(name) => Ok((name, delta)),
            None => Err(GraphError::Log {
                thread: thread.to_owned(),
                seq,
                reason: format!("unknown node {node:?}"),
            }),
        })
        .collect::<Result<_, _>>()?;
    Ok(Some(Step { writes }))
}
