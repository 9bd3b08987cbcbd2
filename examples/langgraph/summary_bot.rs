//! LangGraph's summary bot, its graph ported: run it with
//! `cargo run -p state-examples --example langgraph_summary_bot`.
//! The state, nodes and graph are in `state_examples::langgraph::summary_bot`;
//! the model is canned. Each message is one run on thread "4" of an
//! in-memory store (the tutorial's `MemorySaver`), streamed in `updates`
//! mode; the history carries over from run to run.
//!
//! The Python original ("How to add summary of the conversation history"),
//! for comparison:
/*
class State(MessagesState):
    summary: str

def call_model(state: State):
    summary = state.get("summary", "")
    if summary:
        system_message = f"Summary of conversation earlier: {summary}"
        messages = [SystemMessage(content=system_message)] + state["messages"]
    else:
        messages = state["messages"]
    response = model.invoke(messages)
    return {"messages": [response]}

def should_continue(state: State) -> Literal["summarize_conversation", END]:
    """Return the next node to execute."""
    messages = state["messages"]
    if len(messages) > 6:
        return "summarize_conversation"
    return END

def summarize_conversation(state: State):
    summary = state.get("summary", "")
    if summary:
        summary_message = (
            f"This is summary of the conversation to date: {summary}\n\n"
            "Extend the summary by taking into account the new messages above:"
        )
    else:
        summary_message = "Create a summary of the conversation above:"
    messages = state["messages"] + [HumanMessage(content=summary_message)]
    response = model.invoke(messages)
    delete_messages = [RemoveMessage(id=m.id) for m in state["messages"][:-2]]
    return {"summary": response.content, "messages": delete_messages}

from langgraph.graph import StateGraph, START

# Define a new graph
workflow = StateGraph(State)

# Define the conversation node and the summarize node
workflow.add_node("conversation", call_model)
workflow.add_node(summarize_conversation)

# Set the entrypoint as conversation
workflow.add_edge(START, "conversation")

# We now add a conditional edge
workflow.add_conditional_edges(
    # First, we define the start node. We use `conversation`.
    # This means these are the edges taken after the `conversation` node is called.
    "conversation",
    # Next, we pass in the function that will determine which node is called next.
    should_continue,
)

# We now add a normal edge from `summarize_conversation` to END.
# This means that after `summarize_conversation` is called, we end.
workflow.add_edge("summarize_conversation", END)

# Finally, we compile it!
memory = MemorySaver()
app = workflow.compile(checkpointer=memory)

def print_update(update):
    for k, v in update.items():
        for m in v["messages"]:
            m.pretty_print()
        if "summary" in v:
            print(v["summary"])

config = {"configurable": {"thread_id": "4"}}
input_message = HumanMessage(content="hi! I'm bob")
input_message.pretty_print()
for event in app.stream({"messages": [input_message]}, config, stream_mode="updates"):
    print_update(event)
*/

use state_core::{Message, State};
use state_examples::langgraph::summary_bot::{
    CONVERSATION, CannedModel, SummaryState, THREAD, build_graph,
};
use state_examples::langgraph::updates;
use state_graph::StreamMode;
use state_store::Store;
use std::sync::Arc;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let app = build_graph(Arc::new(CannedModel::default()))?.with_store(Store::memory());
    let mut summary = String::new();
    for (id, text) in CONVERSATION {
        println!("user: {text}");
        let input = SummaryState::delta().messages(Message::human(text).with_id(id));
        let (steps, outcome) =
            updates(app.stream_thread(THREAD, input, StreamMode::UPDATES)).await?;
        for step in &steps {
            println!("  {step}");
        }
        let state = outcome.into_state();
        let ids: Vec<&str> = state.base.messages.iter().filter_map(|m| m.id()).collect();
        println!("  history: {ids:?}");
        summary = state.summary;
    }
    println!("\nsummary: {summary}");
    Ok(())
}
