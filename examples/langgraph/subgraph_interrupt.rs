//! LangGraph's "parent and subgraph execution flow" ported: a subgraph's
//! node pauses the run with an interrupt, and the resumed run shows what
//! runs again. Run it with `cargo run -p state-examples --example
//! langgraph_subgraph_interrupt`. The graphs are in
//! `state_examples::langgraph::subgraph_interrupt` (whose docs list what
//! differs from the Python). The Python prints the lines below; ours
//! prints the same lines, its chunks as JSON (the interrupt as
//! `{"__interrupt__": [{"value", "id"}]}`, with the asking node and the
//! subgraph's namespace under it):
//!
//! ```text
//! Entered `parent_node` a total of 1 times
//! Entered `node_in_subgraph` a total of 1 times
//! Entered human_node in sub-graph a total of 1 times
//! {'__interrupt__': (Interrupt(value='what is your name?', resumable=True, ns=['parent_node:…', 'human_node:…'], when='during'),)}
//! --- Resuming ---
//! Entered `parent_node` a total of 2 times
//! Entered human_node in sub-graph a total of 2 times
//! Got an answer of 35
//! {'parent_node': {'state_counter': 1}}
//! ```
//!
//! The Python original (the how-to "Add human-in-the-loop", "Using with
//! subgraphs called as functions", extended example), for comparison:
/*
import uuid
from typing import TypedDict

from langgraph.graph import StateGraph
from langgraph.constants import START
from langgraph.types import interrupt, Command
from langgraph.checkpoint.memory import MemorySaver


class State(TypedDict):
    """The graph state."""
    state_counter: int


counter_node_in_subgraph = 0

def node_in_subgraph(state: State):
    """A node in the sub-graph."""
    global counter_node_in_subgraph
    counter_node_in_subgraph += 1  # This code will **NOT** run again!
    print(f"Entered `node_in_subgraph` a total of {counter_node_in_subgraph} times")

counter_human_node = 0

def human_node(state: State):
    global counter_human_node
    counter_human_node += 1 # This code will run again!
    print(f"Entered human_node in sub-graph a total of {counter_human_node} times")
    answer = interrupt("what is your name?")
    print(f"Got an answer of {answer}")


checkpointer = MemorySaver()

subgraph_builder = StateGraph(State)
subgraph_builder.add_node("some_node", node_in_subgraph)
subgraph_builder.add_node("human_node", human_node)
subgraph_builder.add_edge(START, "some_node")
subgraph_builder.add_edge("some_node", "human_node")
subgraph = subgraph_builder.compile(checkpointer=checkpointer)


counter_parent_node = 0

def parent_node(state: State):
    """This parent node will invoke the subgraph."""
    global counter_parent_node

    counter_parent_node += 1 # This code will run again on resuming!
    print(f"Entered `parent_node` a total of {counter_parent_node} times")

    # Please note that we're intentionally incrementing the state counter
    # in the graph state as well to demonstrate that the subgraph update
    # of the same key will not conflict with the parent graph (until
    subgraph_state = subgraph.invoke(state)
    return subgraph_state


builder = StateGraph(State)
builder.add_node("parent_node", parent_node)
builder.add_edge(START, "parent_node")

# A checkpointer must be enabled for interrupts to work!
checkpointer = MemorySaver()
graph = builder.compile(checkpointer=checkpointer)

config = {
    "configurable": {
      "thread_id": uuid.uuid4(),
    }
}

for chunk in graph.stream({"state_counter": 1}, config):
    print(chunk)

print('--- Resuming ---')

for chunk in graph.stream(Command(resume="35"), config):
    print(chunk)
*/

use futures::StreamExt;
use serde_json::json;
use state_core::State;
use state_examples::langgraph::subgraph_interrupt::{CounterState, Globals, build_graph};
use state_graph::{RunStream, StreamMode};
use state_store::Store;

/// `for chunk in graph.stream(..): print(chunk)`: each `updates` chunk
/// (an interrupt is one, `__interrupt__`), with the interrupt's namespace.
async fn print_chunks(
    mut stream: RunStream<CounterState>,
) -> Result<(), Box<dyn std::error::Error>> {
    while let Some(event) = stream.next().await {
        let event = event?;
        if event.mode() == "updates" {
            println!("{}", event.data()?);
        }
        if let state_graph::Event::Interrupt(interrupts) = &event {
            for interrupt in interrupts {
                println!(
                    "  (asked by {} in the subgraph {:?})",
                    interrupt.node, interrupt.namespace
                );
            }
        }
    }
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let globals = Globals::new(|line| println!("{line}"));
    // MemorySaver: `Store::memory()`; `Store::sqlite(path)` keeps the
    // pause across processes.
    let graph = build_graph(&globals, Store::memory())?;
    let thread = "1";

    let input = CounterState::delta().state_counter(1);
    print_chunks(graph.stream_thread(thread, input, StreamMode::UPDATES)).await?;

    let snapshot = graph.get_state(thread).await?;
    println!(
        "get_state: next = {:?}, state_counter = {}",
        snapshot.next(),
        snapshot.state().state_counter
    );

    println!("--- Resuming ---");
    print_chunks(graph.stream_resume(thread, json!("35"), StreamMode::UPDATES)).await?;

    let (parent, some_node, human) = globals.counts();
    println!(
        "\nentered: parent_node {parent}, some_node {some_node} (not run again), human_node {human}"
    );
    Ok(())
}
