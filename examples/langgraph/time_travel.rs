//! LangGraph's "How to view and update past graph state" (time travel)
//! ported: run it with `cargo run -p state-examples --example
//! langgraph_time_travel`. The graph is in
//! `state_examples::langgraph::time_travel` (whose docs list what differs
//! from the Python); the model is canned. The thread's history is read
//! with `get_state_history`; a replay and two branches are forks of the
//! thread at one of its steps (`store.fork`), run on with
//! `continue_thread`, edited first with `update_state` for a branch. The
//! original thread is untouched.
//!
//! The Python original (setup cells omitted), for comparison:
/*
# Set up the tool
from langchain_openai import ChatOpenAI
from langchain_core.tools import tool
from langgraph.graph import MessagesState, START
from langgraph.prebuilt import ToolNode
from langgraph.graph import END, StateGraph
from langgraph.checkpoint.memory import MemorySaver


@tool
def play_song_on_spotify(song: str):
    """Play a song on Spotify"""
    # Call the spotify API ...
    return f"Successfully played {song} on Spotify!"


@tool
def play_song_on_apple(song: str):
    """Play a song on Apple Music"""
    # Call the apple music API ...
    return f"Successfully played {song} on Apple Music!"


tools = [play_song_on_apple, play_song_on_spotify]
tool_node = ToolNode(tools)

# Set up the model

model = ChatOpenAI(model="gpt-4o-mini")
model = model.bind_tools(tools, parallel_tool_calls=False)


# Define nodes and conditional edges


# Define the function that determines whether to continue or not
def should_continue(state):
    messages = state["messages"]
    last_message = messages[-1]
    # If there is no function call, then we finish
    if not last_message.tool_calls:
        return "end"
    # Otherwise if there is, we continue
    else:
        return "continue"


# Define the function that calls the model
def call_model(state):
    messages = state["messages"]
    response = model.invoke(messages)
    # We return a list, because this will get added to the existing list
    return {"messages": [response]}


# Define a new graph
workflow = StateGraph(MessagesState)

# Define the two nodes we will cycle between
workflow.add_node("agent", call_model)
workflow.add_node("action", tool_node)

# Set the entrypoint as `agent`
# This means that this node is the first one called
workflow.add_edge(START, "agent")

# We now add a conditional edge
workflow.add_conditional_edges(
    # First, we define the start node. We use `agent`.
    # This means these are the edges taken after the `agent` node is called.
    "agent",
    # Next, we pass in the function that will determine which node is called next.
    should_continue,
    # Finally we pass in a mapping.
    # The keys are strings, and the values are other nodes.
    # END is a special node marking that the graph should finish.
    # What will happen is we will call `should_continue`, and then the output of that
    # will be matched against the keys in this mapping.
    # Based on which one it matches, that node will then be called.
    {
        # If `tools`, then we call the tool node.
        "continue": "action",
        # Otherwise we finish.
        "end": END,
    },
)

# We now add a normal edge from `tools` to `agent`.
# This means that after `tools` is called, `agent` node is called next.
workflow.add_edge("action", "agent")

# Set up memory
memory = MemorySaver()

# Finally, we compile it!
# This compiles it into a LangChain Runnable,
# meaning you can use it as you would any other runnable

# We add in `interrupt_before=["action"]`
# This will add a breakpoint before the `action` node is called
app = workflow.compile(checkpointer=memory)

from langchain_core.messages import HumanMessage

config = {"configurable": {"thread_id": "1"}}
input_message = HumanMessage(content="Can you play Taylor Swift's most popular song?")
for event in app.stream({"messages": [input_message]}, config, stream_mode="values"):
    event["messages"][-1].pretty_print()

app.get_state(config).values["messages"]

all_states = []
for state in app.get_state_history(config):
    print(state)
    all_states.append(state)
    print("--")

to_replay = all_states[2]

to_replay.values

to_replay.next

for event in app.stream(None, to_replay.config):
    for v in event.values():
        print(v)

# Let's now get the last message in the state
# This is the one with the tool calls that we want to update
last_message = to_replay.values["messages"][-1]


# Let's now update the tool we are calling
last_message.tool_calls[0]["name"] = "play_song_on_spotify"

branch_config = app.update_state(
    to_replay.config,
    {"messages": [last_message]},
)

for event in app.stream(None, branch_config):
    for v in event.values():
        print(v)

from langchain_core.messages import AIMessage

# Let's now get the last message in the state
# This is the one with the tool calls that we want to update
last_message = to_replay.values["messages"][-1]

# Let's now get the ID for the last message, and create a new message with that ID.
new_message = AIMessage(
    content="It's quiet hours so I can't play any music right now!", id=last_message.id
)

branch_config = app.update_state(
    to_replay.config,
    {"messages": [new_message]},
)

branch_state = app.get_state(branch_config)

branch_state.values

branch_state.next
*/

use futures::StreamExt;
use state_core::{Message, MessagesState, State};
use state_examples::langgraph::snapshots_since;
use state_examples::langgraph::time_travel::{
    QUIET_HOURS, REQUEST, branch, build_graph, replay, with_tool,
};
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

/// The messages a branch's run added after step `after`, by node.
async fn print_run(
    app: &CompiledGraph<MessagesState>,
    thread: &str,
    after: u64,
) -> Result<(), Error> {
    for snapshot in snapshots_since(app, thread, after).await? {
        let nodes = snapshot
            .metadata()
            .get("nodes")
            .cloned()
            .unwrap_or_default();
        if let Some(last) = snapshot.state().messages.last() {
            println!("  {nodes}: {}", show(last));
        }
    }
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let store = Store::memory();
    let app = build_graph(store.clone())?;

    println!("Interacting with the agent (thread 1):");
    let input = MessagesState::delta().messages(vec![Message::human(REQUEST)]);
    let mut events = app.stream_thread("1", input, StreamMode::VALUES);
    while let Some(event) = events.next().await {
        if let Event::Values(state) = event?
            && let Some(last) = state.messages.last()
        {
            println!("  {}", show(last));
        }
    }

    println!("\nChecking history: get_state_history, newest first");
    let all_states = app.get_state_history("1").await?;
    for state in &all_states {
        println!(
            "  seq {}: {} messages, next {:?}, source {}",
            state.seq(),
            state.state().messages.len(),
            state.next(),
            state.metadata().get("source").cloned().unwrap_or_default()
        );
    }

    let to_replay = all_states
        .get(2)
        .ok_or("the thread has fewer than 3 steps")?;
    println!(
        "\nReplay a state: to_replay = all_states[2], seq {}, next {:?}",
        to_replay.seq(),
        to_replay.next()
    );
    let seq = to_replay.seq();
    replay(&app, "1", seq, "1-replay").await?;
    println!("  the fork \"1-replay\" goes on from there:");
    print_run(&app, "1-replay", seq).await?;

    println!("\nBranch off a past state: play it on Spotify instead");
    let last_message = to_replay
        .state()
        .messages
        .last()
        .ok_or("the step has no message")?;
    let last_message = with_tool(last_message, "play_song_on_spotify");
    let edited = branch(
        &app,
        "1",
        seq,
        "1-spotify",
        MessagesState::delta().messages(vec![last_message.clone()]),
    )
    .await?;
    app.continue_thread("1-spotify").await?;
    print_run(&app, "1-spotify", edited - 1).await?;

    println!("\nOr not call a tool at all: a reply with the same id");
    let id = last_message.id().ok_or("the message has no id")?;
    let new_message = Message::ai(QUIET_HOURS).with_id(id);
    branch(
        &app,
        "1",
        seq,
        "1-quiet",
        MessagesState::delta().messages(vec![new_message]),
    )
    .await?;
    let branch_state = app.get_state("1-quiet").await?;
    if let Some(last) = branch_state.state().messages.last() {
        println!("  branch_state.values: ... {}", show(last));
    }
    println!("  branch_state.next: {:?}", branch_state.next());

    let original = app.get_state("1").await?;
    println!(
        "\nThread 1 is untouched: seq {}, its last message: {}",
        original.seq(),
        original
            .state()
            .messages
            .last()
            .map(show)
            .unwrap_or_default()
    );
    Ok(())
}
