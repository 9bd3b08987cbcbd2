//! LangGraph's customer-support bot, its dialog stack ported: run it with
//! `cargo run -p state-examples --example langgraph_customer_support`.
//! The state and nodes are in `state_examples::langgraph::customer_support`;
//! the model is canned.
//!
//! The Python original ("Build a Customer Support Bot", part 4), for
//! comparison:
/*
def update_dialog_stack(left: list[str], right: Optional[str]) -> list[str]:
    """Push or pop the state."""
    if right is None:
        return left
    if right == "pop":
        return left[:-1]
    return left + [right]

class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    user_info: str
    dialog_state: Annotated[
        list[Literal["assistant", "update_flight", "book_car_rental",
                     "book_hotel", "book_excursion"]],
        update_dialog_stack,
    ]

def user_info(state: State):
    return {"user_info": fetch_user_flight_information.invoke({})}

def create_entry_node(assistant_name: str, new_dialog_state: str) -> Callable:
    def entry_node(state: State) -> dict:
        tool_call_id = state["messages"][-1].tool_calls[0]["id"]
        return {
            "messages": [
                ToolMessage(
                    content=f"The assistant is now the {assistant_name}. Reflect on the above conversation between the host assistant and the user."
                    f" The user's intent is unsatisfied. Use the provided tools to assist the user. Remember, you are {assistant_name}, ...",
                    tool_call_id=tool_call_id,
                )
            ],
            "dialog_state": new_dialog_state,
        }
    return entry_node

def pop_dialog_state(state: State) -> dict:
    """Pop the dialog stack and return to the main assistant."""
    messages = []
    if state["messages"][-1].tool_calls:
        messages.append(
            ToolMessage(
                content="Resuming dialog with the host assistant. Please reflect on the past conversation and assist the user as needed.",
                tool_call_id=state["messages"][-1].tool_calls[0]["id"],
            )
        )
    return {"dialog_state": "pop", "messages": messages}

def route_to_workflow(state: State):
    """If we are in a delegated state, route directly to the appropriate assistant."""
    dialog_state = state.get("dialog_state")
    if not dialog_state:
        return "primary_assistant"
    return dialog_state[-1]
*/

use state_examples::langgraph::customer_support::{QUESTIONS, SupportState, demo_model, run};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut state = SupportState::default();
    let mut model = demo_model();
    for question in QUESTIONS {
        println!("user: {question}");
        for step in run(&mut state, &mut model, question)? {
            println!("  {step}");
        }
        println!("  dialog_state: {:?}\n", state.dialog_state);
    }
    println!("{} messages; the last:", state.messages.len());
    if let Some(last) = state.messages.last() {
        println!("  {}", last.text());
    }
    Ok(())
}
