//! The customer-support graph, end to end on a thread of an in-memory
//! store: the node path of each run (read back from the store's history),
//! the stops before sensitive tools (`interrupt_before`), an approval that
//! goes on (`continue_thread`) and a refusal that is a new input, the
//! dialog stack; and the entry, leave, tool nodes and routers on their own.

use serde_json::json;
use state_core::{Message, MessageKind, State, StateError, ToolCall};
use state_examples::langgraph::customer_support::{
    APPROVALS, QUESTIONS, SKILLS, ScriptedModel, SupportState, SupportStateDelta, approve_or_deny,
    build_graph, create_entry_node, create_tool_node, demo_model, deny_tool_calls,
    pop_dialog_state, route_primary_assistant, route_skill, route_to_workflow,
};
use state_examples::langgraph::{NodeFailure, node_path};
use state_graph::{CompiledGraph, END, GraphError, Outcome};
use state_store::{StepKind, Store};
use std::sync::Arc;

const THREAD: &str = "passenger-3442";

/// The demo graph on a fresh in-memory store.
fn app() -> (CompiledGraph<SupportState>, Store) {
    let store = Store::memory();
    let app = build_graph(Arc::new(demo_model()))
        .unwrap()
        .with_store(store.clone());
    (app, store)
}

fn question(text: &str) -> SupportStateDelta {
    SupportState::delta().messages(("user", text))
}

/// Where the run stopped (a breakpoint: no interrupt listed) and the
/// tool calls waiting there, those of the last message.
fn stopped(outcome: &Outcome<SupportState>) -> (&str, Vec<&str>) {
    assert!(
        outcome.interrupts().is_empty(),
        "{:?}",
        outcome.interrupts()
    );
    let [next] = outcome.next() else {
        panic!("one node next: {:?}", outcome.next())
    };
    let calls = outcome
        .state()
        .messages
        .last()
        .unwrap()
        .tool_calls()
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    (next.as_str(), calls)
}

/// The id of the one tool call waiting.
fn waiting_call(outcome: &Outcome<SupportState>) -> &str {
    let calls = outcome.state().messages.last().unwrap().tool_calls();
    assert_eq!(calls.len(), 1);
    calls[0].id.as_deref().unwrap()
}

#[tokio::test]
async fn the_scripted_run_stops_before_sensitive_tools_and_goes_on_or_starts_anew() {
    let (app, store) = app();

    // Question 1: delegated to the flight skill, which searches (safe) and
    // then wants to move the ticket (sensitive): the run stops before it.
    let out = app
        .invoke_thread(THREAD, question(QUESTIONS[0]))
        .await
        .unwrap();
    assert_eq!(
        node_path(&store, THREAD, 0).await.unwrap(),
        [
            "fetch_user_info",
            "primary_assistant",
            "enter_update_flight",
            "update_flight",
            "update_flight_safe_tools",
            "update_flight",
        ]
    );
    assert_eq!(
        stopped(&out),
        (
            "update_flight_sensitive_tools",
            vec!["update_ticket_to_new_flight"]
        )
    );
    assert_eq!(waiting_call(&out), "call_3");
    // The stop is stored on the thread: `graph.get_state(config).next`.
    let snapshot = app.get_state(THREAD).await.unwrap();
    assert_eq!(snapshot.next(), ["update_flight_sensitive_tools"]);
    assert_eq!(snapshot.state(), out.state());

    // "y": `graph.invoke(None, config)`, the tool runs.
    let seq = out.seq();
    let (steps, out) = approve_or_deny(&app, THREAD, APPROVALS[0]).await.unwrap();
    assert!(!out.is_interrupted());
    let nodes: Vec<&str> = steps.iter().map(|step| step.node.as_str()).collect();
    assert_eq!(nodes, ["update_flight_sensitive_tools", "update_flight"]);
    assert_eq!(
        node_path(&store, THREAD, seq).await.unwrap(),
        ["update_flight_sensitive_tools", "update_flight"]
    );
    let state = out.state();
    assert_eq!(state.dialog_state, ["update_flight"]);
    assert!(state.user_info.contains("LX0112"));
    let tool = &state.messages.as_slice()[state.messages.len() - 2];
    assert_eq!(
        (tool.tool_call_id(), tool.text().as_str()),
        (Some("call_3"), "Ticket successfully updated to new flight.")
    );
    // The next question goes straight to the skill on top of the stack.
    assert_eq!(route_to_workflow(state), "update_flight");

    // Question 2: the flight skill escalates, the primary assistant
    // delegates to the hotel skill, which searches and books the Hilton.
    let seq = out.seq();
    let out = app
        .invoke_thread(THREAD, question(QUESTIONS[1]))
        .await
        .unwrap();
    assert_eq!(
        node_path(&store, THREAD, seq).await.unwrap(),
        [
            "fetch_user_info",
            "update_flight",
            "leave_skill",
            "primary_assistant",
            "enter_book_hotel",
            "book_hotel",
            "book_hotel_safe_tools",
            "book_hotel",
        ]
    );
    assert_eq!(
        stopped(&out),
        ("book_hotel_sensitive_tools", vec!["book_hotel"])
    );
    let call = out.state().messages.last().unwrap().tool_calls()[0].clone();
    assert_eq!(call.args, json!({"hotel_id": 1}));

    // Refused: a new input answers the call with the reason (the Python's
    // `invoke({"messages": [ToolMessage(..)]}, config)`), a new run from
    // START back to the skill on top of the stack, which tries another
    // hotel and stops before the sensitive tools again.
    let seq = out.seq();
    let (_, out) = approve_or_deny(&app, THREAD, APPROVALS[1]).await.unwrap();
    assert_eq!(
        node_path(&store, THREAD, seq).await.unwrap(),
        ["fetch_user_info", "book_hotel"]
    );
    let input = store.history(THREAD, seq + 1..).await.unwrap();
    assert_eq!(input[0].kind, StepKind::BeginTurn, "a new run's input");
    assert_eq!(
        stopped(&out),
        ("book_hotel_sensitive_tools", vec!["book_hotel"])
    );
    assert_eq!(waiting_call(&out), "call_8");
    let refusal = out.state().messages.get_by_call("call_7");
    assert!(
        refusal.starts_with("API call denied by user. Reasoning: 'Not the Hilton"),
        "{refusal}"
    );

    // Approved: booked, and the skill answers.
    let seq = out.seq();
    let (_, out) = approve_or_deny(&app, THREAD, APPROVALS[2]).await.unwrap();
    assert!(!out.is_interrupted());
    assert_eq!(
        node_path(&store, THREAD, seq).await.unwrap(),
        ["book_hotel_sensitive_tools", "book_hotel"]
    );
    let state = out.into_state();
    assert_eq!(state.dialog_state, ["book_hotel"]);
    assert_eq!(
        state.messages.get_by_call("call_8"),
        "Hotel 5 successfully booked."
    );

    // Every tool call got its tool message, in order.
    use MessageKind::{Ai, Human, Tool};
    let kinds: Vec<MessageKind> = state.messages.iter().map(Message::kind).collect();
    assert_eq!(
        kinds,
        [
            Human, Ai, Tool, Ai, Tool, Ai, Tool, Ai, // question 1
            Human, Ai, Tool, Ai, Tool, Ai, Tool, Ai, Tool, Ai, Tool, Ai, // question 2
        ]
    );
    let answered: Vec<&str> = state
        .messages
        .iter()
        .filter_map(Message::tool_call_id)
        .collect();
    assert_eq!(
        answered,
        [
            "call_1", "call_2", "call_3", "call_4", "call_5", "call_6", "call_7", "call_8"
        ]
    );
    assert_eq!(
        state.messages.last().map(Message::text).as_deref(),
        Some("Booked: Holiday Inn Basel from 2024-05-07.")
    );
    // The store's state is the outcome's.
    let stored = store.thread::<SupportState>(THREAD).await.unwrap();
    assert_eq!(stored.state(), &state);
}

/// The text of the tool message answering `id`.
trait ByCall {
    fn get_by_call(&self, id: &str) -> String;
}

impl ByCall for state_core::Messages {
    fn get_by_call(&self, id: &str) -> String {
        self.iter()
            .find(|m| m.tool_call_id() == Some(id))
            .map(Message::text)
            .unwrap_or_default()
    }
}

#[tokio::test]
async fn another_graph_on_the_same_store_goes_on_from_the_stop() {
    // As another process would: a second graph, compiled apart, shares
    // only the store (and, here, the canned model's remaining replies).
    let store = Store::memory();
    let model = Arc::new(demo_model());
    let first = build_graph(model.clone())
        .unwrap()
        .with_store(store.clone());
    let out = first
        .invoke_thread(THREAD, question(QUESTIONS[0]))
        .await
        .unwrap();
    assert_eq!(out.next(), ["update_flight_sensitive_tools"]);
    drop(first);

    let second = build_graph(model).unwrap().with_store(store.clone());
    let snapshot = second.get_state(THREAD).await.unwrap();
    assert_eq!(snapshot.next(), out.next());
    let out = second.continue_thread(THREAD).await.unwrap();
    assert!(!out.is_interrupted());
    assert_eq!(
        out.state().messages.last().map(Message::text).as_deref(),
        Some("Done: LX0112 now leaves on 2024-05-07, seat 18E.")
    );
    // A breakpoint is not an interrupt: there is nothing to resume, and
    // going on again from the end runs nothing.
    let err = second.resume(THREAD, json!("y")).await.unwrap_err();
    assert!(matches!(err, GraphError::Resume { .. }), "{err}");
    let seq = out.seq();
    let again = second.continue_thread(THREAD).await.unwrap();
    assert!(again.next().is_empty());
    assert!(node_path(&store, THREAD, seq).await.unwrap().is_empty());
}

#[tokio::test]
async fn without_a_store_the_stop_is_an_error() {
    // As LangGraph's interrupt_before needs a checkpointer.
    let app = build_graph(Arc::new(demo_model())).unwrap();
    let err = app.invoke(question(QUESTIONS[0])).await.unwrap_err();
    assert!(
        matches!(&err, GraphError::BreakpointWithoutStore { node } if node == "update_flight_sensitive_tools"),
        "{err}"
    );
}

#[test]
fn a_refusal_answers_every_waiting_call_with_the_reason() {
    let state = after(&["book_hotel", "book_car_rental"]);
    let refusal = deny_tool_calls(&state, "Too expensive.");
    let mut refused = state.clone();
    refused.apply(refusal).unwrap();
    let answers: Vec<(Option<&str>, String)> = refused
        .messages
        .iter()
        .skip(1)
        .map(|m| (m.tool_call_id(), m.text()))
        .collect();
    let reason = "API call denied by user. Reasoning: 'Too expensive.'. Continue assisting, \
                  accounting for the user's input.";
    assert_eq!(
        answers,
        [
            (Some("c1"), reason.to_owned()),
            (Some("c2"), reason.to_owned())
        ]
    );
    // Nothing waiting, nothing to refuse (the Python raises an IndexError).
    let idle = SupportState::default();
    let mut after_refusal = idle.clone();
    after_refusal.apply(deny_tool_calls(&idle, "no")).unwrap();
    assert_eq!(after_refusal, idle);
}

#[tokio::test]
async fn a_script_that_runs_out_stops_the_run_at_the_node() {
    let store = Store::memory();
    let app = build_graph(Arc::new(ScriptedModel::new([])))
        .unwrap()
        .with_store(store.clone());
    let err = app.invoke_thread(THREAD, question("hi")).await.unwrap_err();
    assert_eq!(err.node(), Some("primary_assistant"));
    let GraphError::Node { source, .. } = &err else {
        panic!("{err}")
    };
    let failure = source.downcast_ref::<NodeFailure>().unwrap();
    assert_eq!(failure.reason, "the script has no reply left");
    // The user's message and fetch_user_info's update were committed.
    let thread = store.thread::<SupportState>(THREAD).await.unwrap();
    assert_eq!(thread.state().messages.len(), 1);
    assert!(!thread.state().user_info.is_empty());
    assert_eq!(
        node_path(&store, THREAD, 0).await.unwrap(),
        ["fetch_user_info"]
    );
}

/// An AI message calling `tools`, ids `c1`, `c2`, ...
fn calling(tools: &[&str]) -> SupportStateDelta {
    let calls = tools
        .iter()
        .enumerate()
        .map(|(i, tool)| ToolCall::new(*tool, json!({})).with_id(format!("c{}", i + 1)));
    SupportState::delta().messages(Message::ai("").with_tool_calls(calls))
}

fn after(tools: &[&str]) -> SupportState {
    let mut state = SupportState::default();
    state.apply(calling(tools)).unwrap();
    state
}

#[test]
fn the_routers_pick_the_tutorials_targets() {
    let [flight, car, hotel, excursion] = SKILLS;
    assert_eq!(route_primary_assistant(&after(&[])), END);
    assert_eq!(
        route_primary_assistant(&after(&["ToHotelBookingAssistant"])),
        "enter_book_hotel"
    );
    assert_eq!(
        route_primary_assistant(&after(&["ToBookCarRental"])),
        "enter_book_car_rental"
    );
    assert_eq!(
        route_primary_assistant(&after(&["ToBookExcursion"])),
        "enter_book_excursion"
    );
    assert_eq!(
        route_primary_assistant(&after(&["lookup_policy"])),
        "primary_assistant_tools"
    );

    assert_eq!(route_skill(&flight, &after(&[])), END);
    assert_eq!(
        route_skill(&flight, &after(&["search_flights"])),
        "update_flight_safe_tools"
    );
    assert_eq!(
        route_skill(&flight, &after(&["search_flights", "cancel_ticket"])),
        "update_flight_sensitive_tools",
        "one sensitive call makes the batch sensitive"
    );
    assert_eq!(
        route_skill(&car, &after(&["search_car_rentals", "CompleteOrEscalate"])),
        "leave_skill"
    );
    assert_eq!(
        route_skill(&hotel, &after(&["book_hotel"])),
        "book_hotel_sensitive_tools"
    );
    assert_eq!(
        route_skill(&excursion, &after(&["search_trip_recommendations"])),
        "book_excursion_safe_tools"
    );
}

#[test]
fn a_tool_node_answers_every_call_and_an_unknown_tool_with_an_error() {
    let mut state = after(&["search_hotels", "book_hotel"]);
    let tools = create_tool_node("book_hotel_safe_tools", SKILLS[2].safe_tools);
    state.apply(tools(&state).unwrap()).unwrap();
    let answers: Vec<(Option<&str>, String)> = state
        .messages
        .iter()
        .skip(1)
        .map(|m| (m.tool_call_id(), m.text()))
        .collect();
    assert_eq!(answers.len(), 2);
    assert_eq!(answers[0].0, Some("c1"));
    assert!(answers[0].1.contains("Hilton Basel"), "{}", answers[0].1);
    assert_eq!(answers[1].0, Some("c2"));
    assert!(
        answers[1]
            .1
            .starts_with("Error: book_hotel is not a valid tool, try one of [search_hotels]."),
        "{}",
        answers[1].1
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
    assert_eq!(err.node, "book_car_rental", "{err}");
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
