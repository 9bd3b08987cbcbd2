//! LangGraph's customer-support bot ("Build a Customer Support Bot", part
//! 4: specialized workflows): a primary assistant delegates to skills
//! (update a flight, book a hotel, ...), and `dialog_state` is the stack of
//! the skills entered, pushed by an entry node and popped when a skill calls
//! `CompleteOrEscalate`. Each skill has a node for its safe tools (searches)
//! and one for its sensitive tools (bookings), before which the run stops
//! for the passenger's approval. The Python original heads
//! `examples/langgraph/customer_support.rs`; [`build_graph`] is its
//! `builder`, node for node, and [`approve_or_deny`] the body of its
//! `while snapshot.next:` loop.
//!
//! The stack's reducer takes an `Option<String>`, not a list:
//! `#[reducer(with = update_dialog_stack, update = Option<String>)]`.
//!
//! LangGraph's calls and ours:
//! - `compile(checkpointer=memory, interrupt_before=["update_flight_sensitive_tools", ...])`:
//!   `builder.interrupt_before([..])` on the four sensitive-tools nodes
//!   before `compile()`, then `.with_store(store)`: a run on a thread stops
//!   before a superstep that would run one of them (a static breakpoint:
//!   `Outcome::next()` names it, no interrupt is listed).
//! - `snapshot = graph.get_state(config); while snapshot.next:`:
//!   `app.get_state(thread).await?.next()`.
//! - Approved (`"y"`), `graph.invoke(None, config)`: `app.continue_thread(thread)`
//!   (streamed: `stream_continue`): the sensitive tools run, without
//!   stopping at their breakpoint again.
//! - Refused, `graph.invoke({"messages": [ToolMessage(..)]}, config)`: the
//!   refusal ([`deny_tool_calls`]) as the input of a new run on the thread
//!   (`invoke_thread` / `stream_thread`), which starts from `START`
//!   (`fetch_user_info`, then the skill on top of the stack) and leaves the
//!   pause behind, as LangGraph's does.
//!
//! Where the port differs:
//! - The Python refusal answers only `tool_calls[0]`; ours answers every
//!   call, as a chat model requires.
//! - The tools are canned ([`call_tool`]), the tutorial's SQLite database
//!   and Tavily search replaced by fixed strings.

use super::{NodeFailure, Step, updates};
use serde_json::{Value, json};
use state_core::{AgentState, Message, Messages, State, ToolCall};
use state_graph::{CompiledGraph, END, GraphError, Outcome, START, StateGraph, StreamMode};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

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

/// One specialized workflow: its assistant node (also its `dialog_state`
/// entry), the tool the primary assistant delegates to it with, and its
/// tools, split as the tutorial splits them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Skill {
    /// The assistant node, and what the entry node pushes on the stack.
    pub name: &'static str,
    /// Who the entry node's message says the assistant now is.
    pub assistant_name: &'static str,
    /// The primary assistant's tool that delegates here (`ToHotelBookingAssistant`).
    pub delegation: &'static str,
    /// Read-only tools: run without asking.
    pub safe_tools: &'static [&'static str],
    /// Tools that change a booking: run once the passenger approves.
    pub sensitive_tools: &'static [&'static str],
}

impl Skill {
    /// Its entry node: `enter_update_flight`.
    pub fn entry_node(&self) -> String {
        format!("enter_{}", self.name)
    }

    /// Its safe tools' node: `update_flight_safe_tools`.
    pub fn safe_tools_node(&self) -> String {
        format!("{}_safe_tools", self.name)
    }

    /// Its sensitive tools' node: `update_flight_sensitive_tools`.
    pub fn sensitive_tools_node(&self) -> String {
        format!("{}_sensitive_tools", self.name)
    }
}

/// The four skills of part 4, with the tutorial's tools.
pub const SKILLS: [Skill; 4] = [
    Skill {
        name: "update_flight",
        assistant_name: "Flight Updates & Booking Assistant",
        delegation: "ToFlightBookingAssistant",
        safe_tools: &["search_flights"],
        sensitive_tools: &["update_ticket_to_new_flight", "cancel_ticket"],
    },
    Skill {
        name: "book_car_rental",
        assistant_name: "Car Rental Assistant",
        delegation: "ToBookCarRental",
        safe_tools: &["search_car_rentals"],
        sensitive_tools: &["book_car_rental", "update_car_rental", "cancel_car_rental"],
    },
    Skill {
        name: "book_hotel",
        assistant_name: "Hotel Booking Assistant",
        delegation: "ToHotelBookingAssistant",
        safe_tools: &["search_hotels"],
        sensitive_tools: &["book_hotel", "update_hotel", "cancel_hotel"],
    },
    Skill {
        name: "book_excursion",
        assistant_name: "Trip Recommendation Assistant",
        delegation: "ToBookExcursion",
        safe_tools: &["search_trip_recommendations"],
        sensitive_tools: &["book_excursion", "update_excursion", "cancel_excursion"],
    },
];

/// The primary assistant's own tools (`primary_assistant_tools`).
pub const PRIMARY_ASSISTANT_TOOLS: &[&str] = &[
    "tavily_search_results_json",
    "search_flights",
    "lookup_policy",
];

/// The canned tools: what each returns for `args` (the tutorial's return
/// strings where it has fixed ones), or `None` for a tool that does not
/// exist.
pub fn call_tool(name: &str, args: &Value) -> Option<String> {
    let arg = |key: &str| match &args[key] {
        Value::String(s) => s.clone(),
        Value::Null => "?".to_owned(),
        other => other.to_string(),
    };
    Some(match name {
        "fetch_user_flight_information" => {
            "ticket 7240005432906569, LX0112 CDG->BSL, 2024-04-30, seat 18E".to_owned()
        }
        "search_flights" => "[{flight_id: 19250, flight_no: LX0112, CDG->BSL, 2024-05-07 11:00}, \
             {flight_id: 19251, flight_no: LX0112, CDG->BSL, 2024-05-08 11:00}]"
            .to_owned(),
        "update_ticket_to_new_flight" => "Ticket successfully updated to new flight.".to_owned(),
        "cancel_ticket" => "Ticket successfully cancelled.".to_owned(),
        "search_car_rentals" => "[{id: 1, name: Europcar, location: Basel}]".to_owned(),
        "book_car_rental" => format!("Car rental {} successfully booked.", arg("rental_id")),
        "update_car_rental" => format!("Car rental {} successfully updated.", arg("rental_id")),
        "cancel_car_rental" => format!("Car rental {} successfully cancelled.", arg("rental_id")),
        "search_hotels" => "[{id: 1, name: Hilton Basel, price_tier: Luxury}, \
             {id: 3, name: Hyatt Regency Basel, price_tier: Upper Upscale}, \
             {id: 5, name: Holiday Inn Basel, price_tier: Upper Midscale}]"
            .to_owned(),
        "book_hotel" => format!("Hotel {} successfully booked.", arg("hotel_id")),
        "update_hotel" => format!("Hotel {} successfully updated.", arg("hotel_id")),
        "cancel_hotel" => format!("Hotel {} successfully cancelled.", arg("hotel_id")),
        "search_trip_recommendations" => {
            "[{id: 1, name: Basel Minster, location: Basel}]".to_owned()
        }
        "book_excursion" => format!(
            "Trip recommendation {} successfully booked.",
            arg("recommendation_id")
        ),
        "update_excursion" => format!(
            "Trip recommendation {} successfully updated.",
            arg("recommendation_id")
        ),
        "cancel_excursion" => format!(
            "Trip recommendation {} successfully cancelled.",
            arg("recommendation_id")
        ),
        "lookup_policy" => "Changes are allowed up to 3 hours before departure.".to_owned(),
        "tavily_search_results_json" => "[]".to_owned(),
        _ => return None,
    })
}

/// Node `fetch_user_info`: the passenger's flights (canned).
pub fn user_info(_state: &SupportState) -> SupportStateDelta {
    let info = call_tool("fetch_user_flight_information", &json!({})).unwrap_or_default();
    SupportState::delta().user_info(info)
}

/// The tool calls of the last message (`state["messages"][-1].tool_calls`).
fn last_tool_calls(state: &SupportState) -> &[ToolCall] {
    state.messages.last().map_or(&[], Message::tool_calls)
}

/// The entry node of a skill: answers the delegating tool call and pushes
/// the skill (Python: `create_entry_node(assistant_name, new_dialog_state)`).
pub fn create_entry_node(
    assistant_name: &'static str,
    new_dialog_state: &'static str,
) -> impl Fn(&SupportState) -> Result<SupportStateDelta, NodeFailure> + Send + Sync + 'static {
    move |state| {
        let call = last_tool_calls(state)
            .first()
            .ok_or_else(|| NodeFailure::new(new_dialog_state, "the last message calls no tool"))?;
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
    if let Some(call) = last_tool_calls(state).first() {
        messages.push(Message::tool_result(
            call,
            "Resuming dialog with the host assistant. Please reflect on the past conversation \
             and assist the user as needed.",
        ));
    }
    SupportState::delta().dialog_state("pop").messages(messages)
}

/// A tool node (Python: `create_tool_node_with_fallback(tools)`, a
/// `ToolNode`): answers every tool call of the last message with the
/// tool's result, or, for a tool not in `tools`, with an error the model
/// can read (the fallback's `handle_tool_error`).
pub fn create_tool_node(
    node: impl Into<String>,
    tools: &'static [&'static str],
) -> impl Fn(&SupportState) -> Result<SupportStateDelta, NodeFailure> + Send + Sync + 'static {
    let node = node.into();
    move |state| run_tools(&node, tools, state)
}

fn run_tools(
    node: &str,
    tools: &[&str],
    state: &SupportState,
) -> Result<SupportStateDelta, NodeFailure> {
    let calls = last_tool_calls(state);
    if calls.is_empty() {
        return Err(NodeFailure::new(node, "the last message calls no tool"));
    }
    let answers = calls.iter().map(|call| {
        let result = tools
            .contains(&call.name.as_str())
            .then(|| call_tool(&call.name, &call.args))
            .flatten();
        let content = result.unwrap_or_else(|| {
            format!(
                "Error: {} is not a valid tool, try one of [{}].\n please fix your mistakes.",
                call.name,
                tools.join(", ")
            )
        });
        Message::tool_result(call, content)
    });
    Ok(SupportState::delta().messages(answers.collect::<Vec<_>>()))
}

/// What the passenger is asked before a sensitive tool runs (the
/// tutorial's `input(..)` prompt).
pub const APPROVAL_QUESTION: &str = "Do you approve of the above actions? Type 'y' to continue; \
     otherwise, explain your requested changed.";

/// The Python's refusal input: a `ToolMessage` answering each tool call of
/// the last message (the calls the run stopped before) with the
/// passenger's reason.
pub fn deny_tool_calls(state: &SupportState, user_input: &str) -> SupportStateDelta {
    let refusals = last_tool_calls(state).iter().map(|call| {
        Message::tool_result(
            call,
            format!(
                "API call denied by user. Reasoning: '{user_input}'. Continue assisting, \
                 accounting for the user's input."
            ),
        )
    });
    SupportState::delta().messages(refusals.collect::<Vec<_>>())
}

/// The passenger's answer to a run stopped before sensitive tools (the
/// body of the Python's `while snapshot.next:`), streamed: `"y"` goes on
/// (`graph.invoke(None, config)`: `stream_continue`) and the tools run;
/// anything else is a new input refusing the calls
/// (`graph.invoke({"messages": [ToolMessage(..)]}, config)`:
/// [`deny_tool_calls`], `stream_thread`), a new run from `START`. Returns
/// the run's updates and its outcome, stopped again if the skill asks for
/// another sensitive tool.
///
/// # Errors
///
/// The run's; or the thread's, when it cannot be read.
pub async fn approve_or_deny<C>(
    app: &CompiledGraph<SupportState, C>,
    thread: &str,
    user_input: &str,
) -> Result<(Vec<Step>, Outcome<SupportState>), GraphError>
where
    C: Send + Sync + 'static,
{
    if user_input.trim() == "y" {
        return updates(app.stream_continue(thread, StreamMode::UPDATES)).await;
    }
    let snapshot = app.get_state(thread).await?;
    let refusal = deny_tool_calls(snapshot.state(), user_input);
    updates(app.stream_thread(thread, refusal, StreamMode::UPDATES)).await
}

/// After `fetch_user_info`: the innermost skill's assistant, or the
/// primary assistant when none was entered.
pub fn route_to_workflow(state: &SupportState) -> &str {
    state
        .dialog_state
        .last()
        .map_or("primary_assistant", String::as_str)
}

/// After the primary assistant: the entry node of the skill it delegates
/// to, its own tools for any other call, or the end when it answered.
pub fn route_primary_assistant(state: &SupportState) -> String {
    let Some(call) = last_tool_calls(state).first() else {
        return END.to_owned();
    };
    match SKILLS.iter().find(|skill| skill.delegation == call.name) {
        Some(skill) => skill.entry_node(),
        None => "primary_assistant_tools".to_owned(),
    }
}

/// After a skill's assistant (Python: `route_update_flight` and its three
/// twins): the end when it answered, `leave_skill` when it calls
/// `CompleteOrEscalate`, its safe tools when every call is safe, else its
/// sensitive tools.
pub fn route_skill(skill: &Skill, state: &SupportState) -> String {
    let calls = last_tool_calls(state);
    if calls.is_empty() {
        return END.to_owned();
    }
    if calls.iter().any(|call| call.name == COMPLETE_OR_ESCALATE) {
        return "leave_skill".to_owned();
    }
    if calls
        .iter()
        .all(|call| skill.safe_tools.contains(&call.name.as_str()))
    {
        skill.safe_tools_node()
    } else {
        skill.sensitive_tools_node()
    }
}

/// The assistants' model: canned replies, in order, shared by every
/// assistant node (and safe to share between runs and threads).
#[derive(Debug, Default)]
pub struct ScriptedModel {
    replies: Mutex<VecDeque<Message>>,
}

impl ScriptedModel {
    /// A model that answers with `replies`, one per call.
    pub fn new(replies: impl IntoIterator<Item = Message>) -> Self {
        ScriptedModel {
            replies: Mutex::new(replies.into_iter().collect()),
        }
    }

    /// Replies not given yet.
    pub fn remaining(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<Message>> {
        self.replies.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// An assistant node's body: the next canned reply (Python:
    /// `Assistant.__call__`, `{"messages": result}`).
    pub fn assistant(
        &self,
        node: &'static str,
        _state: &SupportState,
    ) -> Result<SupportStateDelta, NodeFailure> {
        let reply = self
            .lock()
            .pop_front()
            .ok_or_else(|| NodeFailure::new(node, "the script has no reply left"))?;
        Ok(SupportState::delta().messages(reply))
    }
}

/// An assistant node over `model` (Python: `Assistant(runnable)`).
fn assistant(
    model: &Arc<ScriptedModel>,
    node: &'static str,
) -> impl Fn(&SupportState) -> Result<SupportStateDelta, NodeFailure> + Send + Sync + 'static {
    let model = Arc::clone(model);
    move |state| model.assistant(node, state)
}

/// The tutorial's part-4 graph (Python: `builder`, then
/// `builder.compile(...)` with `interrupt_before` the sensitive tools),
/// its assistants answering from `model`. Give it a store
/// (`.with_store(store)`, the tutorial's `checkpointer=memory`) to run it
/// on a thread: the run stops before the sensitive tools, which needs one
/// (in memory, the run fails there, `GraphError::BreakpointWithoutStore`).
///
/// ```text
/// START -> fetch_user_info -?-> primary_assistant | update_flight | book_car_rental | book_hotel | book_excursion
/// primary_assistant -?-> enter_<skill> | primary_assistant_tools | END
/// primary_assistant_tools -> primary_assistant
/// enter_<skill> -> <skill>
/// <skill> -?-> <skill>_safe_tools | <skill>_sensitive_tools | leave_skill | END
/// <skill>_safe_tools -> <skill>          <skill>_sensitive_tools (stops before) -> <skill>
/// leave_skill -> primary_assistant
/// ```
pub fn build_graph(model: Arc<ScriptedModel>) -> Result<CompiledGraph<SupportState>, GraphError> {
    let mut builder = StateGraph::<SupportState>::new();
    builder.add_node("fetch_user_info", user_info);
    builder.add_edge(START, "fetch_user_info");

    // One workflow per skill, as the tutorial writes out four times.
    for skill in SKILLS {
        builder.add_node(
            skill.entry_node(),
            create_entry_node(skill.assistant_name, skill.name),
        );
        builder.add_node(skill.name, assistant(&model, skill.name));
        builder.add_edge(skill.entry_node(), skill.name);
        builder.add_node(
            skill.sensitive_tools_node(),
            create_tool_node(skill.sensitive_tools_node(), skill.sensitive_tools),
        );
        builder.add_node(
            skill.safe_tools_node(),
            create_tool_node(skill.safe_tools_node(), skill.safe_tools),
        );
        builder.add_edge(skill.sensitive_tools_node(), skill.name);
        builder.add_edge(skill.safe_tools_node(), skill.name);
        builder.add_conditional_edges(
            skill.name,
            move |state: &SupportState| route_skill(&skill, state),
            [
                skill.sensitive_tools_node(),
                skill.safe_tools_node(),
                "leave_skill".to_owned(),
                END.to_owned(),
            ],
        );
    }

    // Shared by every skill to return to the primary assistant.
    builder.add_node("leave_skill", pop_dialog_state);
    builder.add_edge("leave_skill", "primary_assistant");

    builder.add_node("primary_assistant", assistant(&model, "primary_assistant"));
    builder.add_node(
        "primary_assistant_tools",
        create_tool_node("primary_assistant_tools", PRIMARY_ASSISTANT_TOOLS),
    );
    let mut targets: Vec<String> = SKILLS.iter().map(Skill::entry_node).collect();
    targets.extend(["primary_assistant_tools".to_owned(), END.to_owned()]);
    builder.add_conditional_edges("primary_assistant", route_primary_assistant, targets);
    builder.add_edge("primary_assistant_tools", "primary_assistant");

    // Python infers these targets from route_to_workflow's `Literal[...]`
    // return annotation; we list them.
    let mut workflows = vec!["primary_assistant"];
    workflows.extend(SKILLS.iter().map(|skill| skill.name));
    builder.add_conditional_edges("fetch_user_info", route_to_workflow, workflows);

    // Let the user approve or deny the use of sensitive tools.
    builder.interrupt_before(SKILLS.iter().map(Skill::sensitive_tools_node));
    builder.compile()
}

/// The walk-through's two questions.
pub const QUESTIONS: [&str; 2] = [
    "Hi, could you move my flight to next week?",
    "Thanks! I also need a hotel in Basel for those nights.",
];

/// The passenger's answers each time the run stops before a sensitive
/// tool, in order: approve the new flight, refuse the first hotel, approve
/// the second.
pub const APPROVALS: [&str; 3] = ["y", "Not the Hilton, something cheaper please.", "y"];

/// The canned replies for [`QUESTIONS`] and [`APPROVALS`]: the primary
/// assistant delegates to the flight skill, which searches (a safe tool)
/// and moves the ticket (sensitive: approved). On the second question the
/// flight skill escalates, the primary assistant delegates to the hotel
/// skill, which searches and books the Hilton (refused: a new run, back
/// to the hotel skill), then the Holiday Inn (approved).
pub fn demo_model() -> ScriptedModel {
    let call = |id: &str, name: &str, args| {
        Message::ai("").with_tool_calls([ToolCall::new(name, args).with_id(id)])
    };
    ScriptedModel::new([
        // Question 1.
        call(
            "call_1",
            "ToFlightBookingAssistant",
            json!({"request": "Move LX0112 to next week"}),
        ),
        call(
            "call_2",
            "search_flights",
            json!({"departure_airport": "CDG", "arrival_airport": "BSL", "start_time": "2024-05-07"}),
        ),
        call(
            "call_3",
            "update_ticket_to_new_flight",
            json!({"ticket_no": "7240005432906569", "new_flight_id": 19250}),
        ),
        Message::ai("Done: LX0112 now leaves on 2024-05-07, seat 18E."),
        // Question 2.
        call(
            "call_4",
            COMPLETE_OR_ESCALATE,
            json!({"cancel": true, "reason": "The user needs a hotel."}),
        ),
        call(
            "call_5",
            "ToHotelBookingAssistant",
            json!({"location": "Basel", "checkin_date": "2024-05-07"}),
        ),
        call("call_6", "search_hotels", json!({"location": "Basel"})),
        call("call_7", "book_hotel", json!({"hotel_id": 1})),
        call("call_8", "book_hotel", json!({"hotel_id": 5})),
        Message::ai("Booked: Holiday Inn Basel from 2024-05-07."),
    ])
}
