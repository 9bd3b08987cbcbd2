//! LangGraph's "parent and subgraph execution flow" (the human-in-the-loop
//! how-to's extended example, "Using with subgraphs called as functions"):
//! a parent node runs a subgraph whose second node asks the user with
//! `interrupt()`; the run pauses inside the subgraph, and on resume the
//! example counts what runs again. The Python original heads
//! `examples/langgraph/subgraph_interrupt.rs`.
//!
//! What LangGraph does on resume, and the port with it:
//! 1. the parent's finished nodes do not run again (none here before
//!    `parent_node`);
//! 2. the parent node that called the subgraph runs again from its start:
//!    here its code before the call is `into_child` of
//!    [`StateGraph::add_subgraph_mapped`], which the runner calls again to
//!    rebuild the subgraph's input;
//! 3. the subgraph's finished nodes do not run again (`some_node`: its
//!    step is logged under the parent's thread);
//! 4. the node that called `interrupt()` runs again from its start, and
//!    `interrupt` returns the answer;
//! 5. the rest runs.
//!
//! Where the port differs:
//! - The Python's module globals (three counters and `print`) are
//!   [`Globals`], shared by the nodes: a program prints with it, a test
//!   collects the lines.
//! - `parent_node` is a Python function calling `subgraph.invoke(state)`
//!   and returning its result; ours declares the same as a subgraph node:
//!   `into_child` is the code before the call (the count and the print,
//!   then the input), `from_child` the returned state. The Python's
//!   subgraph is compiled with a checkpointer of its own; ours logs its
//!   steps in the parent's thread, where any process can resume them.
//! - LangGraph ends a run at a node with no edge out; ours wants the edge:
//!   `human_node -> END` and `parent_node -> END` are written out.

use serde_json::json;
use state_core::{AgentState, State};
use state_graph::{CompiledGraph, Ctx, END, GraphError, NodeError, START, StateGraph};
use state_store::Store;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The graph state (Python: `class State(TypedDict): state_counter: int`).
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct CounterState {
    /// The counter the input sets; no node changes it.
    pub state_counter: i64,
}

/// Where the nodes print (Python: `print`).
pub type Print = Arc<dyn Fn(String) + Send + Sync>;

/// The how-to's module globals: how many times each node was entered, and
/// where the nodes print.
pub struct Globals {
    /// `counter_parent_node`.
    pub counter_parent_node: AtomicUsize,
    /// `counter_node_in_subgraph`.
    pub counter_node_in_subgraph: AtomicUsize,
    /// `counter_human_node`.
    pub counter_human_node: AtomicUsize,
    print: Print,
}

impl std::fmt::Debug for Globals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Globals")
            .field("counter_parent_node", &self.counter_parent_node)
            .field("counter_node_in_subgraph", &self.counter_node_in_subgraph)
            .field("counter_human_node", &self.counter_human_node)
            .finish_non_exhaustive()
    }
}

impl Globals {
    /// Counters at zero, printing with `print`.
    pub fn new(print: impl Fn(String) + Send + Sync + 'static) -> Arc<Globals> {
        Arc::new(Globals {
            counter_parent_node: AtomicUsize::new(0),
            counter_node_in_subgraph: AtomicUsize::new(0),
            counter_human_node: AtomicUsize::new(0),
            print: Arc::new(print),
        })
    }

    /// The three counters: parent node, node in the subgraph, human node.
    pub fn counts(&self) -> (usize, usize, usize) {
        (
            self.counter_parent_node.load(Ordering::SeqCst),
            self.counter_node_in_subgraph.load(Ordering::SeqCst),
            self.counter_human_node.load(Ordering::SeqCst),
        )
    }

    /// `counter += 1`, returning the new count.
    fn enter(counter: &AtomicUsize) -> usize {
        counter.fetch_add(1, Ordering::SeqCst) + 1
    }

    fn print(&self, line: String) {
        (self.print)(line);
    }
}

/// What `human_node` asks.
pub const QUESTION: &str = "what is your name?";

/// A node in the sub-graph (Python: `node_in_subgraph`). This code will
/// **not** run again on resume: its step is logged.
pub fn node_in_subgraph(
    globals: &Arc<Globals>,
) -> impl Fn(&CounterState) -> CounterStateDelta + Send + Sync + 'static {
    let globals = globals.clone();
    move |_| {
        let n = Globals::enter(&globals.counter_node_in_subgraph);
        globals.print(format!("Entered `node_in_subgraph` a total of {n} times"));
        CounterState::delta()
    }
}

/// The subgraph's human node (Python: `human_node`): asks [`QUESTION`].
/// This code will run again on resume, up to `interrupt`, which then
/// returns the answer.
pub fn human_node(
    globals: &Arc<Globals>,
) -> impl Fn(&CounterState, &Ctx) -> Result<CounterStateDelta, NodeError> + Send + Sync + 'static {
    let globals = globals.clone();
    move |_, ctx| {
        let n = Globals::enter(&globals.counter_human_node);
        globals.print(format!(
            "Entered human_node in sub-graph a total of {n} times"
        ));
        let answer = ctx.interrupt(json!(QUESTION))?;
        let answer = answer
            .as_str()
            .map_or_else(|| answer.to_string(), str::to_owned);
        globals.print(format!("Got an answer of {answer}"));
        Ok(CounterState::delta())
    }
}

/// The subgraph (Python: `subgraph_builder`, compiled):
/// `START -> some_node -> human_node -> END`.
pub fn build_subgraph(globals: &Arc<Globals>) -> Result<CompiledGraph<CounterState>, GraphError> {
    let mut subgraph_builder = StateGraph::<CounterState>::new();
    subgraph_builder.add_node("some_node", node_in_subgraph(globals));
    subgraph_builder.add_node("human_node", human_node(globals));
    subgraph_builder.add_edge(START, "some_node");
    subgraph_builder.add_edge("some_node", "human_node");
    subgraph_builder.add_edge("human_node", END);
    subgraph_builder.compile()
}

/// The parent graph (Python: `builder`, compiled with a checkpointer):
/// `START -> parent_node -> END`, where `parent_node` runs the subgraph.
/// Its threads are in `store`: "a checkpointer must be enabled for
/// interrupts to work!"
pub fn build_graph(
    globals: &Arc<Globals>,
    store: Store,
) -> Result<CompiledGraph<CounterState>, GraphError> {
    let subgraph = build_subgraph(globals)?;
    let parent = globals.clone();
    let mut builder = StateGraph::<CounterState>::new();
    builder.add_subgraph_mapped(
        "parent_node",
        subgraph,
        // This parent node's code runs again on resuming, as the Python's
        // does: the runner rebuilds the subgraph's input with it.
        move |state: &CounterState| {
            let n = Globals::enter(&parent.counter_parent_node);
            parent.print(format!("Entered `parent_node` a total of {n} times"));
            CounterState::delta().state_counter(state.state_counter)
        },
        // `return subgraph_state`.
        |subgraph_state: &CounterState| {
            CounterState::delta().state_counter(subgraph_state.state_counter)
        },
    );
    builder.add_edge(START, "parent_node");
    builder.add_edge("parent_node", END);
    Ok(builder.compile()?.with_store(store))
}
