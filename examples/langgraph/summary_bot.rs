//! LangGraph's summary bot, ported: run it with
//! `cargo run -p state-examples --example langgraph_summary_bot`.
//! The state and nodes are in `state_examples::langgraph::summary_bot`; the
//! model is canned.
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
*/

use state_examples::langgraph::summary_bot::{CONVERSATION, CannedModel, SummaryState, run};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut state = SummaryState::default();
    let mut model = CannedModel::default();
    for (id, text) in CONVERSATION {
        println!("user: {text}");
        for step in run(&mut model, &mut state, id, text)? {
            println!("  {step}");
        }
        let ids: Vec<&str> = state.base.messages.iter().filter_map(|m| m.id()).collect();
        println!("  history: {ids:?}");
    }
    println!("\nsummary: {}", state.summary);
    Ok(())
}
