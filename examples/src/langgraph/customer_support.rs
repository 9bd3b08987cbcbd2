//! LangGraph's customer-support bot ("Build a Customer Support Bot", part
//! 4: specialized workflows): a primary assistant delegates to skills
//! (update a flight, book a hotel, ...), and `dialog_state` is the stack of
//! the skills entered, pushed by an entry node and popped when a skill calls
//! `CompleteOrEscalate`. The Python original heads
//! `examples/langgraph/customer_support.rs`.
//!
//! The stack's reducer takes an `Option<String>`, not a list:
//! `#[reducer(with = update_dialog_stack, update = Option<String>)]`.

use super::{END, RECURSION_LIMIT, RunError, Step};
use serde_json::json;
use state_core::{AgentState, Message, Messages, State, ToolCall};
use std::collections::VecDeque;

/// Push or pop the state: `None` leaves the stack, `"pop"` pops, any other
/// name is pushed.
pub fn update_dialog_stack(left: &mut Vec<String>, right: Option<String>) {
    match right.as_deref() {
        None => {}
        Some("pop") => {
            left.pop();
        }
        Some(_) => left.extend(right),
    }
}

/// The bot's state (Python: `class State(TypedDict)`).
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct SupportState {
    /// The conversation. (`MessagesState` is not built in yet: declared as
    /// its field is.)
    #[reducer(add_messages)]
    pub messages: Messages,
    /// The passenger's flights, fetched at the start of every run.
    pub user_info: String,
    /// The skills entered, innermost last: `"update_flight"`,
    /// `"book_car_rental"`, `"book_hotel"`, `"book_excursion"`.
    #[reducer(with = update_dialog_stack, update = Option<String>)]
    pub dialog_state: Vec<String>,
}

/// The tool a skill calls to hand control back to the primary assistant.
pub const COMPLETE_OR_ESCALATE: &str = "CompleteOrEscalate";

/// The tools the primary assistant calls to delegate, with the entry node
/// each one routes to.
pub const DELEGATIONS: [(&str, &str); 4] = [
    ("ToFlightBookingAssistant", "enter_update_flight"),
    ("ToBookCarRental", "enter_book_car_rental"),
    ("ToHotelBookingAssistant", "enter_book_hotel"),
    ("ToBookExcursion", "enter_book_excursion"),
];

/// Node `fetch_user_info`: the passenger's flights (canned).
pub fn user_info(_state: &SupportState) -> SupportStateDelta {
    SupportState::delta()
        .user_info("ticket 7240005432906569, LX0112 CDG->BSL, 2024-04-30, seat 18E")
}

/// The first tool call of the last message (`state["messages"][-1].tool_calls[0]`).
fn last_tool_call(state: &SupportState) -> Option<&ToolCall> {
    state.messages.last()?.tool_calls().first()
}

/// The entry node of a skill: answers the delegating tool call and pushes
/// the skill (Python: `create_entry_node(assistant_name, new_dialog_state)`).
pub fn create_entry_node(
    assistant_name: &'static str,
    new_dialog_state: &'static str,
) -> impl Fn(&SupportState) -> Result<SupportStateDelta, RunError> {
    move |state| {
        let call = last_tool_call(state).ok_or(RunError::Node {
            node: new_dialog_state,
            reason: "the last message calls no tool".into(),
        })?;
        Ok(SupportState::delta()
            .messages(Message::tool_result(
                call,
                format!(
                    "The assistant is now the {assistant_name}. Reflect on the above conversation \
                     between the host assistant and the user. The user's intent is unsatisfied. \
                     Use the provided tools to assist the user. Remember, you are {assistant_name}."
                ),
            ))
            .dialog_state(new_dialog_state))
    }
}

/// Node `leave_skill`: pops the dialog stack and returns to the primary
/// assistant, answering the `CompleteOrEscalate` call if there is one.
pub fn pop_dialog_state(state: &SupportState) -> SupportStateDelta {
    let mut messages = vec![];
    if let Some(call) = last_tool_call(state) {
        messages.push(Message::tool_result(
            call,
            "Resuming dialog with the host assistant. Please reflect on the past conversation \
             and assist the user as needed.",
        ));
    }
    SupportState::delta().dialog_state("pop").messages(messages)
}

/// Where a run starts after `fetch_user_info`: the innermost skill, or the
/// primary assistant when none was entered.
pub fn route_to_workflow(state: &SupportState) -> &str {
    state
        .dialog_state
        .last()
        .map_or("primary_assistant", String::as_str)
}

/// After the primary assistant: the entry node of the skill it delegates
/// to, or the end (the tutorial's other tools are not scripted here).
pub fn route_primary_assistant(state: &SupportState) -> &'static str {
    let Some(call) = last_tool_call(state) else {
        return END;
    };
    DELEGATIONS
        .iter()
        .find(|(tool, _)| *tool == call.name)
        .map_or(END, |(_, entry)| entry)
}

/// After a skill's assistant: `leave_skill` when it calls
/// `CompleteOrEscalate`, else the end.
pub fn route_skill(state: &SupportState) -> &'static str {
    match last_tool_call(state) {
        Some(call) if call.name == COMPLETE_OR_ESCALATE => "leave_skill",
        _ => END,
    }
}

/// The assistants' model: canned replies, in order, shared by every
/// assistant node.
#[derive(Debug, Clone, Default)]
pub struct ScriptedModel {
    replies: VecDeque<Message>,
}

impl ScriptedModel {
    /// A model that answers with `replies`, one per call.
    pub fn new(replies: impl IntoIterator<Item = Message>) -> Self {
        ScriptedModel {
            replies: replies.into_iter().collect(),
        }
    }

    /// An assistant node: the next canned reply (Python: `Assistant.__call__`,
    /// `{"messages": result}`).
    pub fn assistant(
        &mut self,
        node: &'static str,
        _state: &SupportState,
    ) -> Result<SupportStateDelta, RunError> {
        let reply = self.replies.pop_front().ok_or(RunError::Node {
            node,
            reason: "the script has no reply left".into(),
        })?;
        Ok(SupportState::delta().messages(reply))
    }
}

/// One `graph.invoke({"messages": ("user", question)})`: the nodes run in
/// the order the tutorial's edges give, each update applied as it comes.
/// Returns the updates in order.
pub fn run(
    state: &mut SupportState,
    model: &mut ScriptedModel,
    question: &str,
) -> Result<Vec<Step>, RunError> {
    state.apply(SupportState::delta().messages(("user", question)))?;
    let mut steps = vec![];
    let mut node = String::from("fetch_user_info");
    while node != END {
        if steps.len() == RECURSION_LIMIT {
            return Err(RunError::RecursionLimit);
        }
        let delta = match node.as_str() {
            "fetch_user_info" => user_info(state),
            "enter_update_flight" => {
                create_entry_node("Flight Updates & Booking Assistant", "update_flight")(state)?
            }
            "enter_book_car_rental" => {
                create_entry_node("Car Rental Assistant", "book_car_rental")(state)?
            }
            "enter_book_hotel" => {
                create_entry_node("Hotel Booking Assistant", "book_hotel")(state)?
            }
            "enter_book_excursion" => {
                create_entry_node("Trip Recommendation Assistant", "book_excursion")(state)?
            }
            "leave_skill" => pop_dialog_state(state),
            "primary_assistant" => model.assistant("primary_assistant", state)?,
            "update_flight" => model.assistant("update_flight", state)?,
            "book_car_rental" => model.assistant("book_car_rental", state)?,
            "book_hotel" => model.assistant("book_hotel", state)?,
            "book_excursion" => model.assistant("book_excursion", state)?,
            other => {
                return Err(RunError::Node {
                    node: "route",
                    reason: format!("no node named {other:?}"),
                });
            }
        };
        steps.push(Step::new(&node, &delta));
        state.apply(delta)?;
        node = match node.as_str() {
            "fetch_user_info" => route_to_workflow(state).to_owned(),
            "primary_assistant" => route_primary_assistant(state).to_owned(),
            "leave_skill" => "primary_assistant".to_owned(),
            // An entry node leads to its skill's assistant.
            entry => match entry.strip_prefix("enter_") {
                Some(skill) => skill.to_owned(),
                None => route_skill(state).to_owned(),
            },
        };
    }
    Ok(steps)
}

/// The walk-through's two questions.
pub const QUESTIONS: [&str; 2] = [
    "Hi, could you move my flight to next week?",
    "Thanks! I also need a hotel in Basel for those nights.",
];

/// The canned replies for [`QUESTIONS`]: the primary assistant delegates to
/// the flight skill, which moves the flight; on the second question the
/// flight skill escalates, and the primary assistant delegates to the
/// hotel skill.
pub fn demo_model() -> ScriptedModel {
    let call = |name: &str, id: &str, args| ToolCall::new(name, args).with_id(id);
    ScriptedModel::new([
        Message::ai("").with_tool_calls([call(
            "ToFlightBookingAssistant",
            "call_1",
            json!({"request": "Move LX0112 to next week"}),
        )]),
        Message::ai("Done: LX0112 now leaves on 2024-05-07, seat 18E."),
        Message::ai("").with_tool_calls([call(
            COMPLETE_OR_ESCALATE,
            "call_2",
            json!({"cancel": true, "reason": "The user needs a hotel."}),
        )]),
        Message::ai("").with_tool_calls([call(
            "ToHotelBookingAssistant",
            "call_3",
            json!({"location": "Basel", "checkin_date": "2024-05-07"}),
        )]),
        Message::ai("Booked: Hilton Basel from 2024-05-07."),
    ])
}
