//! LangGraph's customer-support bot, its part-4 graph ported: run it with
//! `cargo run -p state-examples --example langgraph_customer_support`.
//! The state, nodes and graph are in
//! `state_examples::langgraph::customer_support` (whose docs list what
//! differs from the Python); the model and tools are canned. The run is on
//! a thread of an in-memory store, as the tutorial's on `InMemorySaver`:
//! the graph stops before each sensitive tool (`interrupt_before`), the
//! scripted passenger answers, and `"y"` goes on (`continue_thread`, the
//! Python's `invoke(None, config)`) while a refusal is a new input that
//! answers the tool call (`invoke_thread`).
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

builder = StateGraph(State)
builder.add_node("fetch_user_info", user_info)
builder.add_edge(START, "fetch_user_info")

# Flight booking assistant
builder.add_node(
    "enter_update_flight",
    create_entry_node("Flight Updates & Booking Assistant", "update_flight"),
)
builder.add_node("update_flight", Assistant(update_flight_runnable))
builder.add_edge("enter_update_flight", "update_flight")
builder.add_node(
    "update_flight_sensitive_tools",
    create_tool_node_with_fallback(update_flight_sensitive_tools),
)
builder.add_node(
    "update_flight_safe_tools",
    create_tool_node_with_fallback(update_flight_safe_tools),
)

def route_update_flight(state: State):
    route = tools_condition(state)
    if route == END:
        return END
    tool_calls = state["messages"][-1].tool_calls
    did_cancel = any(tc["name"] == CompleteOrEscalate.__name__ for tc in tool_calls)
    if did_cancel:
        return "leave_skill"
    safe_toolnames = [t.name for t in update_flight_safe_tools]
    if all(tc["name"] in safe_toolnames for tc in tool_calls):
        return "update_flight_safe_tools"
    return "update_flight_sensitive_tools"

builder.add_edge("update_flight_sensitive_tools", "update_flight")
builder.add_edge("update_flight_safe_tools", "update_flight")
builder.add_conditional_edges(
    "update_flight",
    route_update_flight,
    ["update_flight_sensitive_tools", "update_flight_safe_tools", "leave_skill", END],
)

# This node will be shared for exiting all specialized assistants
builder.add_node("leave_skill", pop_dialog_state)
builder.add_edge("leave_skill", "primary_assistant")

# Car rental, hotel and excursion assistants: the same, with
# "book_car_rental", "book_hotel", "book_excursion" for "update_flight".
...

# Primary assistant
builder.add_node("primary_assistant", Assistant(assistant_runnable))
builder.add_node(
    "primary_assistant_tools", create_tool_node_with_fallback(primary_assistant_tools)
)

def route_primary_assistant(state: State):
    route = tools_condition(state)
    if route == END:
        return END
    tool_calls = state["messages"][-1].tool_calls
    if tool_calls:
        if tool_calls[0]["name"] == ToFlightBookingAssistant.__name__:
            return "enter_update_flight"
        elif tool_calls[0]["name"] == ToBookCarRental.__name__:
            return "enter_book_car_rental"
        elif tool_calls[0]["name"] == ToHotelBookingAssistant.__name__:
            return "enter_book_hotel"
        elif tool_calls[0]["name"] == ToBookExcursion.__name__:
            return "enter_book_excursion"
        return "primary_assistant_tools"
    raise ValueError("Invalid route")

# The assistant can route to one of the delegated assistants,
# directly use a tool, or directly respond to the user
builder.add_conditional_edges(
    "primary_assistant",
    route_primary_assistant,
    [
        "enter_update_flight",
        "enter_book_car_rental",
        "enter_book_hotel",
        "enter_book_excursion",
        "primary_assistant_tools",
        END,
    ],
)
builder.add_edge("primary_assistant_tools", "primary_assistant")

# Each delegated workflow can directly respond to the user
# When the user responds, we want to return to the currently active workflow
builder.add_conditional_edges("fetch_user_info", route_to_workflow)

# Compile graph
memory = InMemorySaver()
part_4_graph = builder.compile(
    checkpointer=memory,
    # Let the user approve or deny the use of sensitive tools
    interrupt_before=[
        "update_flight_sensitive_tools",
        "book_car_rental_sensitive_tools",
        "book_hotel_sensitive_tools",
        "book_excursion_sensitive_tools",
    ],
)

for question in tutorial_questions:
    events = part_4_graph.stream(
        {"messages": ("user", question)}, config, stream_mode="values"
    )
    for event in events:
        _print_event(event, _printed)
    snapshot = part_4_graph.get_state(config)
    while snapshot.next:
        # We have an interrupt! The agent is trying to use a tool, and the user can approve or deny it
        user_input = input(
            "Do you approve of the above actions? Type 'y' to continue;"
            " otherwise, explain your requested changed.\n\n"
        )
        if user_input.strip() == "y":
            # Just continue
            result = part_4_graph.invoke(None, config)
        else:
            # Satisfy the tool invocation by
            # providing instructions on the requested changes / change of mind
            result = part_4_graph.invoke(
                {
                    "messages": [
                        ToolMessage(
                            tool_call_id=event["messages"][-1].tool_calls[0]["id"],
                            content=f"API call denied by user. Reasoning: '{user_input}'. Continue assisting, accounting for the user's input.",
                        )
                    ]
                },
                config,
            )
        snapshot = part_4_graph.get_state(config)
*/

use state_core::State;
use state_examples::langgraph::customer_support::{
    APPROVAL_QUESTION, APPROVALS, QUESTIONS, SupportState, approve_or_deny, build_graph, demo_model,
};
use state_examples::langgraph::{Step, updates};
use state_graph::StreamMode;
use state_store::Store;
use std::sync::Arc;

fn print_steps(steps: &[Step]) {
    for step in steps {
        println!("  {step}");
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let app = build_graph(Arc::new(demo_model()))?.with_store(Store::memory());
    let thread = "passenger-3442";
    let mut approvals = APPROVALS.into_iter();
    let mut last = None;
    for question in QUESTIONS {
        println!("user: {question}");
        let input = SupportState::delta().messages(("user", question));
        let (steps, _) = updates(app.stream_thread(thread, input, StreamMode::UPDATES)).await?;
        print_steps(&steps);
        // `snapshot = part_4_graph.get_state(config); while snapshot.next:`
        let mut snapshot = app.get_state(thread).await?;
        while !snapshot.next().is_empty() {
            let calls: Vec<String> = snapshot
                .state()
                .messages
                .last()
                .map(|m| m.tool_calls().to_vec())
                .unwrap_or_default()
                .iter()
                .map(|c| format!("{}({})", c.name, c.args))
                .collect();
            println!(
                "  -- stopped before {}: {}",
                snapshot.next().join(", "),
                calls.join(", ")
            );
            println!("     {APPROVAL_QUESTION}");
            let answer = approvals.next().ok_or("the script has no answer left")?;
            println!("  passenger: {answer}");
            if answer.trim() != "y" {
                println!("  (a new input answers the call with the reason: a new run, from START)");
            }
            let (steps, _) = approve_or_deny(&app, thread, answer).await?;
            print_steps(&steps);
            snapshot = app.get_state(thread).await?;
        }
        println!("  dialog_state: {:?}\n", snapshot.state().dialog_state);
        last = Some(snapshot.into_state());
    }
    if let Some(state) = last {
        println!("{} messages; the last:", state.messages.len());
        if let Some(message) = state.messages.last() {
            println!("  {}", message.text());
        }
    }
    Ok(())
}
