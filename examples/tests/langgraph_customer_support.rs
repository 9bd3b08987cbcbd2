//! The customer-support bot's dialog stack: a scripted two-question run,
//! and the entry and leave nodes pushing and popping on their own.

use state_core::{Message, MessageKind, State, StateError, ToolCall};
use state_examples::langgraph::customer_support::{
    QUESTIONS, ScriptedModel, SupportState, SupportStateDelta, create_entry_node, demo_model,
    pop_dialog_state, route_to_workflow, run,
};
use state_examples::langgraph::{RunError, Step};

fn nodes(steps: &[Step]) -> Vec<&str> {
    steps.iter().map(|s| s.node.as_str()).collect()
}

#[test]
fn the_scripted_run_enters_leaves_and_enters_a_skill() {
    let mut state = SupportState::default();
    let mut model = demo_model();

    let first = run(&mut state, &mut model, QUESTIONS[0]).unwrap();
    assert_eq!(
        nodes(&first),
        [
            "fetch_user_info",
            "primary_assistant",
            "enter_update_flight",
            "update_flight"
        ]
    );
    assert_eq!(state.dialog_state, ["update_flight"]);
    assert!(state.user_info.contains("LX0112"));
    // The next question goes straight to the skill on top of the stack.
    assert_eq!(route_to_workflow(&state), "update_flight");

    let second = run(&mut state, &mut model, QUESTIONS[1]).unwrap();
    assert_eq!(
        nodes(&second),
        [
            "fetch_user_info",
            "update_flight",
            "leave_skill",
            "primary_assistant",
            "enter_book_hotel",
            "book_hotel"
        ]
    );
    assert_eq!(second[2].update["dialog_state"], "pop");
    assert_eq!(state.dialog_state, ["book_hotel"]);

    // Every delegating or escalating call got its tool message.
    let kinds: Vec<MessageKind> = state.messages.iter().map(Message::kind).collect();
    use MessageKind::{Ai, Human, Tool};
    assert_eq!(kinds, [Human, Ai, Tool, Ai, Human, Ai, Tool, Ai, Tool, Ai]);
    let answered: Vec<&str> = state
        .messages
        .iter()
        .filter_map(Message::tool_call_id)
        .collect();
    assert_eq!(answered, ["call_1", "call_2", "call_3"]);
    assert_eq!(
        state.messages.last().map(Message::text).as_deref(),
        Some("Booked: Hilton Basel from 2024-05-07.")
    );
}

/// An AI message delegating with one tool call.
fn delegate(tool: &str, id: &str) -> SupportStateDelta {
    SupportState::delta().messages(
        Message::ai("").with_tool_calls([ToolCall::new(tool, serde_json::json!({})).with_id(id)]),
    )
}

#[test]
fn entry_nodes_push_and_leave_skill_pops() {
    let mut state = SupportState::default();
    assert_eq!(route_to_workflow(&state), "primary_assistant");

    state
        .apply(delegate("ToFlightBookingAssistant", "c1"))
        .unwrap();
    let enter_flight = create_entry_node("Flight Updates & Booking Assistant", "update_flight");
    state.apply(enter_flight(&state).unwrap()).unwrap();
    state
        .apply(delegate("ToHotelBookingAssistant", "c2"))
        .unwrap();
    let enter_hotel = create_entry_node("Hotel Booking Assistant", "book_hotel");
    state.apply(enter_hotel(&state).unwrap()).unwrap();
    assert_eq!(state.dialog_state, ["update_flight", "book_hotel"]);
    assert_eq!(route_to_workflow(&state), "book_hotel");

    state.apply(delegate("CompleteOrEscalate", "c3")).unwrap();
    let leave = pop_dialog_state(&state);
    assert_eq!(
        leave.get_dialog_state().and_then(|w| w.update()),
        Some(&Some("pop".to_owned()))
    );
    state.apply(leave).unwrap();
    assert_eq!(state.dialog_state, ["update_flight"]);
    let last = state.messages.last().unwrap();
    assert_eq!(
        (last.kind(), last.tool_call_id()),
        (MessageKind::Tool, Some("c3"))
    );

    // Without a tool call to answer, leave_skill pops and says nothing.
    let count = state.messages.len();
    state.apply(pop_dialog_state(&state)).unwrap();
    state.apply(pop_dialog_state(&state)).unwrap();
    assert!(
        state.dialog_state.is_empty(),
        "popping an empty stack leaves it empty"
    );
    assert_eq!(state.messages.len(), count);
}

#[test]
fn an_entry_node_without_a_tool_call_is_an_error_not_a_panic() {
    let mut state = SupportState::default();
    state
        .apply(SupportState::delta().messages(("user", "hi")))
        .unwrap();
    let enter = create_entry_node("Car Rental Assistant", "book_car_rental");
    let err = enter(&state).unwrap_err();
    assert!(
        matches!(
            err,
            RunError::Node {
                node: "book_car_rental",
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn a_script_that_runs_out_stops_the_run() {
    let mut state = SupportState::default();
    let mut model = ScriptedModel::new([]);
    let err = run(&mut state, &mut model, "hi").unwrap_err();
    assert!(
        matches!(
            err,
            RunError::Node {
                node: "primary_assistant",
                ..
            }
        ),
        "{err}"
    );
    // The user's message and fetch_user_info's update were applied.
    assert_eq!(state.messages.len(), 1);
    assert!(!state.user_info.is_empty());
}

#[test]
fn two_pushes_in_one_superstep_apply_in_order() {
    let mut state = SupportState::default();
    state
        .apply_all([
            SupportState::delta().dialog_state("book_car_rental"),
            SupportState::delta().dialog_state("book_excursion"),
            SupportState::delta().dialog_state(None::<String>),
        ])
        .unwrap();
    assert_eq!(state.dialog_state, ["book_car_rental", "book_excursion"]);
    // user_info has no reducer: two writes in one superstep conflict.
    let err = state
        .apply_all([
            SupportState::delta().user_info("a"),
            SupportState::delta().user_info("b"),
        ])
        .unwrap_err();
    assert!(matches!(&err, StateError::ConcurrentWrite { field } if field == "user_info"));
}
