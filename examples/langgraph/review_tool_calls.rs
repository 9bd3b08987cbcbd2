//! LangGraph's "How to Review Tool Calls" ported: run it with `cargo run
//! -p state-examples --example langgraph_review_tool_calls`. The graph is
//! in `state_examples::langgraph::review_tool_calls` (whose docs list what
//! differs from the Python); the model is canned. A static breakpoint
//! (`interrupt_before`) stops each run before `human_review_node`; the
//! four threads show no review, an approval (`continue_thread`, Python's
//! `stream(None, thread)`), an edit of the call and feedback instead of
//! the call (`update_state(.., as_node="human_review_node")`).
//!
//! The Python original (setup cells omitted), for comparison:
/*
from typing_extensions import TypedDict, Literal
from langgraph.graph import StateGraph, START, END, MessagesState
from langgraph.checkpoint.memory import InMemorySaver
from langchain_anthropic import ChatAnthropic
from langchain_core.tools import tool
from langchain_core.messages import AIMessage
from IPython.display import Image, display


@tool
def weather_search(city: str):
    """Search for the weather"""
    print("----")
    print(f"Searching for: {city}")
    print("----")
    return "Sunny!"


model = ChatAnthropic(model_name="claude-3-5-sonnet-20240620").bind_tools(
    [weather_search]
)


class State(MessagesState):
    """Simple state."""


def call_llm(state):
    return {"messages": [model.invoke(state["messages"])]}


def human_review_node(state):
    pass


def run_tool(state):
    new_messages = []
    tools = {"weather_search": weather_search}
    tool_calls = state["messages"][-1].tool_calls
    for tool_call in tool_calls:
        tool = tools[tool_call["name"]]
        result = tool.invoke(tool_call["args"])
        new_messages.append(
            {
                "role": "tool",
                "name": tool_call["name"],
                "content": result,
                "tool_call_id": tool_call["id"],
            }
        )
    return {"messages": new_messages}


def route_after_llm(state) -> Literal[END, "human_review_node"]:
    if len(state["messages"][-1].tool_calls) == 0:
        return END
    else:
        return "human_review_node"


def route_after_human(state) -> Literal["run_tool", "call_llm"]:
    if isinstance(state["messages"][-1], AIMessage):
        return "run_tool"
    else:
        return "call_llm"


builder = StateGraph(State)
builder.add_node(call_llm)
builder.add_node(run_tool)
builder.add_node(human_review_node)
builder.add_edge(START, "call_llm")
builder.add_conditional_edges("call_llm", route_after_llm)
builder.add_conditional_edges("human_review_node", route_after_human)
builder.add_edge("run_tool", "call_llm")

# Set up memory
memory = InMemorySaver()

# Add
graph = builder.compile(checkpointer=memory, interrupt_before=["human_review_node"])

# View
display(Image(graph.get_graph().draw_mermaid_png()))

# Input
initial_input = {"messages": [{"role": "user", "content": "hi!"}]}

# Thread
thread = {"configurable": {"thread_id": "1"}}

# Run the graph until the first interruption
for event in graph.stream(initial_input, thread, stream_mode="values"):
    print(event)

print("Pending Executions!")
print(graph.get_state(thread).next)

# Input
initial_input = {"messages": [{"role": "user", "content": "what's the weather in sf?"}]}

# Thread
thread = {"configurable": {"thread_id": "2"}}

# Run the graph until the first interruption
for event in graph.stream(initial_input, thread, stream_mode="values"):
    print(event)

print("Pending Executions!")
print(graph.get_state(thread).next)

for event in graph.stream(None, thread, stream_mode="values"):
    print(event)

# Input
initial_input = {"messages": [{"role": "user", "content": "what's the weather in sf?"}]}

# Thread
thread = {"configurable": {"thread_id": "5"}}

# Run the graph until the first interruption
for event in graph.stream(initial_input, thread, stream_mode="values"):
    print(event)

print("Pending Executions!")
print(graph.get_state(thread).next)

# To get the ID of the message we want to replace, we need to fetch the current state and find it there.
state = graph.get_state(thread)
print("Current State:")
print(state.values)
print("\nCurrent Tool Call ID:")
current_content = state.values["messages"][-1].content
current_id = state.values["messages"][-1].id
tool_call_id = state.values["messages"][-1].tool_calls[0]["id"]
print(tool_call_id)

# We now need to construct a replacement tool call.
# We will change the argument to be `San Francisco, USA`
# Note that we could change any number of arguments or tool names - it just has to be a valid one
new_message = {
    "role": "assistant",
    "content": current_content,
    "tool_calls": [
        {
            "id": tool_call_id,
            "name": "weather_search",
            "args": {"city": "San Francisco, USA"},
        }
    ],
    # This is important - this needs to be the same as the message you replacing!
    # Otherwise, it will show up as a separate message
    "id": current_id,
}
graph.update_state(
    # This is the config which represents this thread
    thread,
    # This is the updated value we want to push
    {"messages": [new_message]},
    # We push this update acting as our human_review_node
    as_node="human_review_node",
)

# Let's now continue executing from here
for event in graph.stream(None, thread, stream_mode="values"):
    print(event)

# Input
initial_input = {"messages": [{"role": "user", "content": "what's the weather in sf?"}]}

# Thread
thread = {"configurable": {"thread_id": "6"}}

# Run the graph until the first interruption
for event in graph.stream(initial_input, thread, stream_mode="values"):
    print(event)

print("Pending Executions!")
print(graph.get_state(thread).next)

# To get the ID of the message we want to replace, we need to fetch the current state and find it there.
state = graph.get_state(thread)
print("Current State:")
print(state.values)
print("\nCurrent Tool Call ID:")
tool_call_id = state.values["messages"][-1].tool_calls[0]["id"]
print(tool_call_id)

# We now need to construct a replacement tool call.
# We will change the argument to be `San Francisco, USA`
# Note that we could change any number of arguments or tool names - it just has to be a valid one
new_message = {
    "role": "tool",
    # This is our natural language feedback
    "content": "User requested changes: pass in the country as well",
    "name": "weather_search",
    "tool_call_id": tool_call_id,
}
graph.update_state(
    # This is the config which represents this thread
    thread,
    # This is the updated value we want to push
    {"messages": [new_message]},
    # We push this update acting as our human_review_node
    as_node="human_review_node",
)

# Let's now continue executing from here
for event in graph.stream(None, thread, stream_mode="values"):
    print(event)

print("Pending Executions!")
print(graph.get_state(thread).next)

for event in graph.stream(None, thread, stream_mode="values"):
    print(event)
*/

use futures::StreamExt;
use serde_json::json;
use state_core::{Message, State};
use state_examples::langgraph::review_tool_calls::{
    FEEDBACK, ReviewState, build_graph, edit_tool_call, feedback_for_tool_call,
};
use state_examples::langgraph::snapshots_since;
use state_graph::{CompiledGraph, Event, StreamMode};
use state_store::Store;

type Error = Box<dyn std::error::Error>;

/// A message in one line: its kind, text and tool calls.
fn show(message: &Message) -> String {
    let calls: Vec<String> = message
        .tool_calls()
        .iter()
        .map(|c| format!(" -> {}({})", c.name, c.args))
        .collect();
    format!("{}: {}{}", message.kind(), message.text(), calls.concat())
}

/// `for event in graph.stream(initial_input, thread, stream_mode="values"):
/// print(event)`, each state by its last message. Returns the thread's
/// last step.
async fn run(app: &CompiledGraph<ReviewState>, thread: &str, text: &str) -> Result<u64, Error> {
    let input = ReviewState::delta().messages([("user", text)]);
    let mut events = app.stream_thread(thread, input, StreamMode::VALUES);
    let mut seq = 0;
    while let Some(event) = events.next().await {
        match event? {
            Event::Values(state) => {
                if let Some(last) = state.base.messages.last() {
                    println!("  values: ... {}", show(last));
                }
            }
            Event::End(outcome) => seq = outcome.seq(),
            _ => {}
        }
    }
    Ok(seq)
}

/// `graph.stream(None, thread, stream_mode="values")`: the run goes on,
/// and prints the states it logged. Returns the thread's last step.
async fn go_on(app: &CompiledGraph<ReviewState>, thread: &str, after: u64) -> Result<u64, Error> {
    let out = app.continue_thread(thread).await?;
    for snapshot in snapshots_since(app, thread, after).await? {
        let nodes = snapshot
            .metadata()
            .get("nodes")
            .cloned()
            .unwrap_or_default();
        if let Some(last) = snapshot.state().base.messages.last() {
            println!("  values after {nodes}: ... {}", show(last));
        }
    }
    Ok(out.seq())
}

async fn pending(app: &CompiledGraph<ReviewState>, thread: &str) -> Result<(), Error> {
    println!(
        "  Pending Executions! {:?}",
        app.get_state(thread).await?.next()
    );
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let graph = build_graph(Store::memory())?;
    println!("{}", graph.draw_mermaid());

    println!("Example with no review (thread 1):");
    run(&graph, "1", "hi!").await?;
    pending(&graph, "1").await?;

    println!("\nApproving the tool call (thread 2): go on with no input");
    let seq = run(&graph, "2", "what's the weather in sf?").await?;
    pending(&graph, "2").await?;
    go_on(&graph, "2", seq).await?;
    pending(&graph, "2").await?;

    println!("\nEditing the tool call (thread 5): update_state as human_review_node");
    run(&graph, "5", "what's the weather in sf?").await?;
    pending(&graph, "5").await?;
    let state = graph.get_state("5").await?;
    let new_message = edit_tool_call(state.state(), json!({"city": "San Francisco, USA"}))?;
    println!("  edited: {}", show(&new_message));
    let seq = graph
        .update_state(
            "5",
            ReviewState::delta().messages(vec![new_message]),
            Some("human_review_node"),
        )
        .await?;
    pending(&graph, "5").await?;
    go_on(&graph, "5", seq).await?;

    println!("\nGiving feedback instead (thread 6): a tool message as human_review_node");
    run(&graph, "6", "what's the weather in sf?").await?;
    pending(&graph, "6").await?;
    let state = graph.get_state("6").await?;
    let feedback = feedback_for_tool_call(state.state(), FEEDBACK)?;
    println!("  feedback: {}", show(&feedback));
    let seq = graph
        .update_state(
            "6",
            ReviewState::delta().messages(vec![feedback]),
            Some("human_review_node"),
        )
        .await?;
    let seq = go_on(&graph, "6", seq).await?;
    pending(&graph, "6").await?;
    go_on(&graph, "6", seq).await?;
    pending(&graph, "6").await?;
    Ok(())
}
