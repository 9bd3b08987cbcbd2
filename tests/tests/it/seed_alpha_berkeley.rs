//! Seed 003, the Alpha Berkeley framework: the document's transitions,
//! asserted on the port in `state_examples::alpha_berkeley`.
//!
//! - `merge_capability_context_data` at each of its three levels, through
//!   the state's reducer, typed and as JSON;
//! - the field list, scopes, reducers and defaults of the document;
//! - `begin_turn` resets every execution field and keeps the context (and
//!   the history), and equals `StateManager.create_fresh_state` (which,
//!   fed through the reducers, cannot clear the appended event lists);
//! - `create_status_update` / `create_progress_event`, appended to the
//!   turn's event lists by their reducers;
//! - a three-turn run of the graph on a store thread: context
//!   accumulates, everything else resets.

use serde_json::{Value, json};
use state_core::{Delta, Message, MessageKind, Scope, State};
use state_examples::alpha_berkeley::graph::{self, Seen, Turn, conversation, run_turn};
use state_examples::alpha_berkeley::{
    AgentState, CapabilityContextData, ContextFields, agent_control_defaults, create_fresh_state,
    create_progress_event, create_status_update, invoke_input, merge_capability_context_data, now,
    start_turn,
};

/// The document's fields, in its order (MessagesState's `messages` first).
const SEED_FIELDS: [&str; 39] = [
    "messages",
    "capability_context_data",
    "agent_control",
    "status_updates",
    "progress_events",
    "task_current_task",
    "task_depends_on_chat_history",
    "task_depends_on_user_memory",
    "task_custom_message",
    "planning_active_capabilities",
    "planning_execution_plan",
    "planning_current_step_index",
    "execution_step_results",
    "execution_last_result",
    "execution_pending_approvals",
    "execution_start_time",
    "execution_total_time",
    "approval_approved",
    "approved_payload",
    "control_needs_reclassification",
    "control_reclassification_reason",
    "control_reclassification_count",
    "control_plans_created_count",
    "control_current_step_retry_count",
    "control_retry_count",
    "control_has_error",
    "control_error_info",
    "control_last_error",
    "control_max_retries",
    "control_is_killed",
    "control_kill_reason",
    "control_is_awaiting_validation",
    "control_validation_context",
    "control_validation_timestamp",
    "ui_notebook_links",
    "ui_captured_figures",
    "ui_agent_context",
    "runtime_checkpoint_metadata",
    "runtime_info",
];

const PERSISTENT: [&str; 2] = ["messages", "capability_context_data"];

fn context(value: Value) -> CapabilityContextData {
    serde_json::from_value(value).expect("a three-level context object")
}

fn with_context(value: Value) -> AgentState {
    let mut state = AgentState::default();
    state
        .apply(AgentState::delta().capability_context_data(context(value)))
        .expect("the merge reducer cannot fail");
    state
}

fn merged(existing: Value, new: Value) -> Value {
    let mut state = with_context(existing);
    state
        .apply(AgentState::delta().capability_context_data(context(new)))
        .expect("the merge reducer cannot fail");
    state.get("capability_context_data").expect("a field")
}

// ----- merge_capability_context_data, level by level -----

#[test]
fn level_one_a_new_context_type_is_added_and_the_others_kept() {
    let result = merged(
        json!({"PV_ADDRESSES": {"step1": {"pvs": ["SR:C01:MAG:1"]}}}),
        json!({"ARCHIVER_DATA": {"step2": {"samples": 1440}}}),
    );
    assert_eq!(
        result,
        json!({
            "ARCHIVER_DATA": {"step2": {"samples": 1440}},
            "PV_ADDRESSES": {"step1": {"pvs": ["SR:C01:MAG:1"]}},
        })
    );
}

#[test]
fn level_one_a_new_type_without_contexts_is_still_created() {
    // Python: `if context_type not in result: result[context_type] = {}`.
    let result = merged(json!({"A": {"k": {"v": 1}}}), json!({"EMPTY": {}}));
    assert_eq!(result, json!({"A": {"k": {"v": 1}}, "EMPTY": {}}));
}

#[test]
fn level_two_a_new_key_joins_its_type_and_siblings_are_untouched() {
    // The document's first example: `len(result["PV_ADDRESSES"]) == 2`.
    let result = merged(
        json!({"PV_ADDRESSES": {"step1": {"pvs": ["SR:C01:MAG:1"]}}}),
        json!({"PV_ADDRESSES": {"step2": {"pvs": ["SR:C02:MAG:1"]}}}),
    );
    assert_eq!(result["PV_ADDRESSES"].as_object().map(|m| m.len()), Some(2));
    assert_eq!(
        result["PV_ADDRESSES"]["step1"]["pvs"],
        json!(["SR:C01:MAG:1"])
    );
    assert_eq!(
        result["PV_ADDRESSES"]["step2"]["pvs"],
        json!(["SR:C02:MAG:1"])
    );
}

#[test]
fn level_three_a_rewritten_key_is_replaced_whole_not_field_merged() {
    // The document's second example, plus a field only the old record had:
    // `result[type][key] = deepcopy(context_data)` drops it.
    let result = merged(
        json!({"DATA": {"key1": {"value": "old", "stale": true}, "key2": {"value": 2}}}),
        json!({"DATA": {"key1": {"value": "new", "extra": "data"}}}),
    );
    assert_eq!(
        result["DATA"]["key1"],
        json!({"value": "new", "extra": "data"})
    );
    assert_eq!(result["DATA"]["key2"], json!({"value": 2}));
}

#[test]
fn merging_into_nothing_is_the_update_itself() {
    // Python's `existing is None` branch: a deep copy of `new`.
    let new = json!({"T": {"k": {"f": [1, 2]}}, "U": {}});
    assert_eq!(merged(json!({}), new.clone()), new);
}

#[test]
fn the_reducer_function_works_on_its_own() {
    let mut existing = context(json!({"T": {"a": {"x": 1}}}));
    merge_capability_context_data(&mut existing, context(json!({"T": {"b": {"y": 2}}})));
    assert_eq!(
        serde_json::to_value(&existing).ok(),
        Some(json!({"T": {"a": {"x": 1}, "b": {"y": 2}}}))
    );
}

#[test]
fn two_capabilities_in_one_superstep_both_store_their_context() {
    // A reducer field takes parallel writes (a plain field would conflict).
    let mut state = with_context(json!({"PV_ADDRESSES": {"a": {"pvs": []}}}));
    let first = AgentState::delta()
        .capability_context_data(context(json!({"PV_ADDRESSES": {"b": {"n": 1}}})));
    let second = AgentState::delta().capability_context_data(context(
        json!({"PV_ADDRESSES": {"b": {"n": 2}}, "X": {"c": {}}}),
    ));
    state.apply_all([first, second]).expect("no conflict");
    assert_eq!(
        state.get("capability_context_data").ok(),
        Some(json!({"PV_ADDRESSES": {"a": {"pvs": []}, "b": {"n": 2}}, "X": {"c": {}}}))
    );
}

#[test]
fn a_json_update_from_a_python_node_goes_through_the_merge() {
    // What `StateManager.store_context` returns, as a LangGraph update.
    let mut state = with_context(json!({"PV_ADDRESSES": {"a": {"pvs": ["X"]}}}));
    state
        .apply_json(json!({"capability_context_data": {"PV_ADDRESSES": {"b": {"pvs": ["Y"]}}}}))
        .expect("a valid update");
    assert_eq!(state.capability_context_data["PV_ADDRESSES"].len(), 2);
    let bad =
        state.apply_json(json!({"capability_context_data": {"PV_ADDRESSES": ["not", "a", "map"]}}));
    assert!(bad.is_err(), "a two-level value is refused");
    assert_eq!(state.capability_context_data["PV_ADDRESSES"].len(), 2);
}

// ----- the state's declaration -----

#[test]
fn every_field_of_the_document_is_declared_in_order() {
    assert_eq!(AgentState::keys(), SEED_FIELDS);
}

#[test]
fn only_the_context_and_the_history_persist() {
    for field in AgentState::schema().fields {
        let expected = if PERSISTENT.contains(&field.name) {
            Scope::Persistent
        } else {
            Scope::Turn
        };
        assert_eq!(field.scope, expected, "scope of {}", field.name);
    }
}

#[test]
fn reducers_are_the_documents_plus_event_accumulation() {
    let schema = AgentState::schema();
    let reducer = |name: &str| schema.field(name).map(|field| field.reducer);
    assert_eq!(reducer("messages"), Some("add_messages"));
    assert_eq!(
        reducer("capability_context_data"),
        Some("with = merge_capability_context_data")
    );
    // "Event accumulation - reset each execution": appended within a turn.
    assert_eq!(reducer("status_updates"), Some("append"));
    assert_eq!(reducer("progress_events"), Some("append"));
    for name in &SEED_FIELDS[5..] {
        assert_eq!(reducer(name), Some("replace"), "reducer of {name}");
    }
}

#[test]
fn defaults_are_those_of_create_fresh_state() {
    let state = AgentState::default();
    assert_eq!(state.control_max_retries, 3);
    assert_eq!(state.agent_control, agent_control_defaults());
    assert_eq!(
        state.agent_control["approval_global_mode"],
        json!("selective")
    );
    assert_eq!(state.task_current_task, None);
    assert!(state.status_updates.is_empty() && state.capability_context_data.is_empty());
    let mut fresh = create_fresh_state("hi", None);
    assert_eq!(fresh.messages.len(), 1);
    fresh.messages = state.messages.clone();
    assert_eq!(fresh, state);
}

// ----- begin_turn and create_fresh_state -----

/// A state where every field holds something other than its default.
fn dirty() -> AgentState {
    let state = AgentState::from_json(json!({
        "messages": [{"type": "human", "content": "Find beam current PV addresses", "id": "u1"},
                     {"type": "ai", "content": "SR:DCCT:Current", "id": "a1"}],
        "capability_context_data": {"PV_ADDRESSES": {"beam_current_pvs": {"pvs": ["SR:DCCT:Current"]}}},
        "agent_control": {"planning_mode_enabled": true},
        "status_updates": [{"message": "done", "progress": 1.0}],
        "progress_events": [{"current": 1, "total": 1}],
        "task_current_task": "find PVs",
        "task_depends_on_chat_history": true,
        "task_depends_on_user_memory": true,
        "task_custom_message": "custom",
        "planning_active_capabilities": ["pv_address_finding"],
        "planning_execution_plan": {"steps": [{"context_key": "k", "capability": "respond"}]},
        "planning_current_step_index": 1,
        "execution_step_results": {"k": {"success": true}},
        "execution_last_result": {"success": true, "data": null, "error": null, "execution_time": 0.5},
        "execution_pending_approvals": {"k": {"capability": "python_executor"}},
        "execution_start_time": 100.0,
        "execution_total_time": 2.5,
        "approval_approved": false,
        "approved_payload": {"code": "print(1)"},
        "control_needs_reclassification": true,
        "control_reclassification_reason": "new capability",
        "control_reclassification_count": 1,
        "control_plans_created_count": 2,
        "control_current_step_retry_count": 1,
        "control_retry_count": 2,
        "control_has_error": true,
        "control_error_info": {"message": "timeout"},
        "control_last_error": {"message": "timeout"},
        "control_max_retries": 5,
        "control_is_killed": true,
        "control_kill_reason": "too many retries",
        "control_is_awaiting_validation": true,
        "control_validation_context": {"step": 1},
        "control_validation_timestamp": 101.0,
        "ui_notebook_links": ["notebooks/a.ipynb"],
        "ui_captured_figures": ["figures/a.png"],
        "ui_agent_context": {"panel": "plots"},
        "runtime_checkpoint_metadata": {"checkpoint_id": "c1"},
        "runtime_info": {"thread_id": "t1"},
    }))
    .expect("a valid state");
    let default = AgentState::default();
    for key in AgentState::keys() {
        assert_ne!(
            state.get(key).ok(),
            default.get(key).ok(),
            "{key} is not dirty"
        );
    }
    state
}

#[test]
fn begin_turn_resets_every_execution_field_and_keeps_the_persistent_ones() {
    let before = dirty();
    let mut state = before.clone();
    state.begin_turn();
    let default = AgentState::default();
    for key in AgentState::keys() {
        let expected = if PERSISTENT.contains(key) {
            before.get(key)
        } else {
            default.get(key)
        };
        assert_eq!(state.get(key), expected, "{key} after begin_turn");
    }
}

#[test]
fn create_fresh_state_is_begin_turn_with_the_user_message_as_history() {
    let previous = dirty();
    let message = Message::human("Plot it").with_id("u2");
    let mut fresh = create_fresh_state(message.clone(), Some(&previous));
    let mut reset = previous.clone();
    reset.begin_turn();
    // The Python dict holds only the new message...
    assert_eq!(fresh.messages.as_slice(), [message]);
    // ...and every other field is begin_turn's.
    fresh.messages = reset.messages.clone();
    assert_eq!(fresh, reset);
}

#[test]
fn the_fresh_state_fed_to_the_thread_is_start_turn_but_for_the_event_lists() {
    // LangGraph reduces the input dict into the checkpoint: the history
    // grows by one message, the context merges into itself, the plain
    // fields are overwritten with defaults, and the event lists get `[]`
    // appended: through a reducer, the fresh dict cannot clear them.
    let previous = dirty();
    let message = Message::human("Plot it").with_id("u2");
    let mut python = previous.clone();
    invoke_input(
        &mut python,
        &create_fresh_state(message.clone(), Some(&previous)),
    )
    .expect("a valid input");
    let mut rust = previous.clone();
    start_turn(&mut rust, message).expect("a valid message");
    assert_eq!(python.status_updates, previous.status_updates);
    assert_eq!(python.progress_events, previous.progress_events);
    assert!(rust.status_updates.is_empty() && rust.progress_events.is_empty());
    // begin_turn resets a turn-scoped field whatever its reducer; apart
    // from that the two agree field for field.
    python.status_updates.clear();
    python.progress_events.clear();
    assert_eq!(python, rust);
    assert_eq!(rust.messages.len(), 3);
    assert_eq!(
        rust.capability_context_data,
        previous.capability_context_data
    );
    assert_eq!(rust.control_max_retries, 3);
}

// ----- status updates and progress events -----

fn only_event(update: &state_examples::alpha_berkeley::StateUpdate, key: &str) -> ContextFields {
    let json = serde_json::to_value(update).expect("a delta serializes");
    let events = json[key].as_array().cloned().unwrap_or_default();
    assert_eq!(events.len(), 1, "one {key} event");
    serde_json::from_value(events[0].clone()).expect("an object")
}

#[test]
fn a_status_update_is_one_timestamped_event() {
    let before = now();
    let update = create_status_update("Processing data", 0.5, false, []);
    assert_eq!(update.fields(), ["status_updates"]);
    let event = only_event(&update, "status_updates");
    assert_eq!(event["message"], json!("Processing data"));
    assert_eq!(event["progress"], json!(0.5));
    assert_eq!(event["complete"], json!(false));
    let stamp = event["timestamp"].as_f64().unwrap_or(0.0);
    assert!(
        stamp >= before && stamp <= now(),
        "timestamp {stamp} is now"
    );
    assert_eq!(
        event.keys().map(String::as_str).collect::<Vec<_>>(),
        ["message", "progress", "complete", "timestamp"]
    );
}

#[test]
fn a_status_update_carries_its_metadata() {
    let update = create_status_update(
        "Analysis complete",
        1.0,
        true,
        [
            ("node", json!("data_analysis")),
            ("items_processed", json!(150)),
        ],
    );
    let event = only_event(&update, "status_updates");
    assert_eq!(event["complete"], json!(true));
    assert_eq!(event["items_processed"], json!(150));
    assert_eq!(event["node"], json!("data_analysis"));
}

#[test]
fn a_progress_event_computes_its_fraction() {
    let event = only_event(
        &create_progress_event(3, 10, "Processing files", []),
        "progress_events",
    );
    assert_eq!(event["current"], json!(3));
    assert_eq!(event["total"], json!(10));
    assert_eq!(event["progress"], json!(0.3));
    let update = create_progress_event(
        5,
        20,
        "Analyzing data points",
        [("file_name", json!("data.csv"))],
    );
    let event = only_event(&update, "progress_events");
    assert_eq!(event["operation"], json!("Analyzing data points"));
    assert_eq!(event["file_name"], json!("data.csv"));
    let empty = only_event(
        &create_progress_event(0, 0, "Empty operation", []),
        "progress_events",
    );
    assert_eq!(empty["progress"], json!(0.0));
}

#[test]
fn status_updates_and_progress_events_are_appended_through_their_reducers() {
    let mut state = AgentState::default();
    state
        .apply(create_status_update("first", 0.1, false, []))
        .expect("applies");
    state
        .apply(create_status_update("second", 0.2, false, []))
        .expect("applies");
    let messages: Vec<&Value> = state
        .status_updates
        .iter()
        .map(|event| &event["message"])
        .collect();
    assert_eq!(messages, [&json!("first"), &json!("second")]);
    // Two nodes reporting in one superstep: both events land, in order
    // (the seed as literally declared, without a reducer, would raise
    // InvalidUpdateError).
    state
        .apply_all([
            create_status_update("a", 0.5, false, []),
            create_status_update("b", 0.5, false, []),
            create_progress_event(1, 2, "step", []),
            create_progress_event(2, 2, "step", []),
        ])
        .expect("append never conflicts");
    assert_eq!(state.status_updates.len(), 4);
    assert_eq!(state.status_updates[3]["message"], json!("b"));
    let fractions: Vec<&Value> = state
        .progress_events
        .iter()
        .map(|event| &event["progress"])
        .collect();
    assert_eq!(fractions, [&json!(0.5), &json!(1.0)]);
    // The same through Delta::merge, as a node combining two helpers.
    let both = create_status_update("x", 0.1, false, [])
        .merge(create_status_update("y", 0.2, false, []))
        .expect("append fields merge");
    assert_eq!(
        both.get_status_updates()
            .and_then(state_core::Written::update)
            .map(Vec::len),
        Some(2)
    );
    // ...and they are execution-scoped: the next turn starts empty.
    state.begin_turn();
    assert!(state.status_updates.is_empty() && state.progress_events.is_empty());
}

// ----- a multi-turn run -----

const THREAD: &str = "als-operator";

/// The graph on a memory store.
fn app() -> state_graph::CompiledGraph<AgentState> {
    graph::build(conversation())
        .expect("the graph compiles")
        .with_store(state_store::Store::memory())
}

/// Runs a turn on the thread; the names of the nodes that ran, and the
/// state after the turn.
async fn run(
    app: &state_graph::CompiledGraph<AgentState>,
    turn: &Turn,
) -> (Vec<String>, AgentState) {
    let mut nodes = Vec::new();
    let outcome = run_turn(app, THREAD, turn, |seen| {
        if let Seen::Node { name, .. } = seen {
            nodes.push(name.to_owned());
        }
    })
    .await
    .expect("the turn runs");
    (nodes, outcome.into_state())
}

fn stored(state: &AgentState, context_type: &str, key: &str) -> Option<Value> {
    let fields = state.capability_context_data.get(context_type)?.get(key)?;
    Some(Value::Object(fields.clone()))
}

#[tokio::test]
async fn three_turns_accumulate_context_and_reset_everything_else() {
    let turns = conversation();
    let app = app();

    // Turn 1: extract, classify, plan, find the PVs, respond.
    let (nodes, state) = run(&app, &turns[0]).await;
    assert_eq!(
        nodes,
        [
            "task_extraction",
            "classification",
            "orchestration",
            "pv_address_finding",
            "respond"
        ]
    );
    assert_eq!(state.task_current_task.as_deref(), Some(turns[0].task));
    assert_eq!(
        state.planning_active_capabilities,
        ["pv_address_finding", "respond"]
    );
    assert_eq!(state.planning_current_step_index, 2);
    assert_eq!(state.control_plans_created_count, 1);
    assert_eq!(state.execution_step_results.len(), 2);
    assert!(state.execution_total_time.is_some());
    let turn_one_pvs = stored(&state, "PV_ADDRESSES", "beam_current_pvs").expect("stored");
    assert_eq!(
        turn_one_pvs["pvs"],
        json!(["SR:DCCT:Current", "BTS:DCCT:Current"])
    );
    assert!(turn_one_pvs.get("notes").is_some());
    assert_eq!(state.messages.len(), 2);
    assert_eq!(state.messages[1].kind(), MessageKind::Ai);

    // Turn 2: the archiver reads turn 1's PVs, times out once and retries;
    // the plot waits for approval (asked, then answered on resume).
    let (nodes, state) = run(&app, &turns[1]).await;
    assert_eq!(
        nodes,
        [
            "task_extraction",
            "classification",
            "orchestration",
            "archiver_retrieval",
            "archiver_retrieval",
            "approval",
            "approval",
            "python_executor",
            "respond",
        ]
    );
    assert!(state.task_depends_on_chat_history);
    assert_eq!(state.control_plans_created_count, 1, "reset, then one plan");
    assert_eq!(state.control_retry_count, 1);
    assert!(!state.control_has_error);
    assert!(state.control_last_error.is_some());
    assert_eq!(state.approval_approved, Some(true));
    assert!(state.execution_pending_approvals.is_empty());
    assert_eq!(state.ui_captured_figures, ["figures/beam_current_plot.png"]);
    let archived = stored(&state, "ARCHIVER_DATA", "beam_current_24h").expect("stored");
    assert_eq!(archived["pvs"], turn_one_pvs["pvs"]);
    assert_eq!(
        stored(&state, "PV_ADDRESSES", "beam_current_pvs"),
        Some(turn_one_pvs)
    );
    assert_eq!(state.messages.len(), 4);

    // Turn 3: one PV record rewritten (level 3), one added (level 2).
    let (_, state) = run(&app, &turns[2]).await;
    let refined = stored(&state, "PV_ADDRESSES", "beam_current_pvs").expect("stored");
    assert_eq!(refined["pvs"], json!(["SR:DCCT:Current"]));
    assert_eq!(refined.get("notes"), None, "the record was replaced whole");
    assert!(stored(&state, "PV_ADDRESSES", "sr_magnet_pvs").is_some());
    assert_eq!(
        state.capability_context_data.keys().collect::<Vec<_>>(),
        ["ARCHIVER_DATA", "PV_ADDRESSES", "PYTHON_RESULTS"]
    );
    // Turn 2's execution state is gone.
    assert_eq!(state.control_retry_count, 0);
    assert_eq!(state.control_last_error, None);
    assert_eq!(state.approval_approved, None);
    assert!(state.ui_captured_figures.is_empty());
    assert!(
        !state
            .execution_step_results
            .contains_key("beam_current_24h")
    );
    // The history holds every turn.
    assert_eq!(state.messages.len(), 6);
    let humans: Vec<String> = state
        .messages
        .iter()
        .filter(|message| message.kind() == MessageKind::Human)
        .map(Message::text)
        .collect();
    assert_eq!(
        humans,
        turns.iter().map(|turn| turn.user_input).collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn a_turn_accumulates_every_nodes_events_and_the_next_turn_resets_them() {
    let turns = conversation();
    let app = app();
    let mut seen = 0;
    let state = run_turn(&app, THREAD, &turns[0], |event| {
        if let Seen::Node { update, .. } = event {
            seen += usize::from(update.get_status_updates().is_some());
        }
    })
    .await
    .expect("the turn runs")
    .into_state();
    assert_eq!(seen, 4, "four nodes reported a status");
    let messages: Vec<&str> = state
        .status_updates
        .iter()
        .filter_map(|event| event["message"].as_str())
        .collect();
    assert_eq!(
        messages,
        [
            "Task extracted",
            "Task classified",
            "Execution plan created",
            "Response ready"
        ]
    );
    assert_eq!(state.status_updates[3]["complete"], json!(true));
    let progress: Vec<(&Value, &Value)> = state
        .progress_events
        .iter()
        .map(|event| (&event["operation"], &event["progress"]))
        .collect();
    assert_eq!(
        progress,
        [
            (&json!("pv_address_finding"), &json!(0.5)),
            (&json!("respond"), &json!(1.0))
        ]
    );
    // Turn 2 starts from empty lists: only its own events, the retry's
    // status among them.
    let (_, state) = run(&app, &turns[1]).await;
    let messages: Vec<&str> = state
        .status_updates
        .iter()
        .filter_map(|event| event["message"].as_str())
        .collect();
    assert_eq!(
        messages,
        [
            "Task extracted",
            "Task classified",
            "Execution plan created",
            "Retrying: archiver_retrieval timed out",
            "Response ready"
        ]
    );
    assert_eq!(state.progress_events.len(), 3, "one per completed step");
}

#[tokio::test]
async fn without_the_previous_turns_context_the_archiver_fails_until_killed() {
    // Turn 2 alone: the PVs it needs were never stored.
    let (nodes, mut state) = run(&app(), &conversation()[1]).await;
    let attempts = nodes
        .iter()
        .filter(|node| *node == "archiver_retrieval")
        .count();
    assert_eq!(attempts, 3, "one try and retries up to control_max_retries");
    assert_eq!(nodes.last().map(String::as_str), Some("kill"));
    assert!(state.control_is_killed);
    assert_eq!(
        state.control_kill_reason.as_deref(),
        Some("step 0 failed 3 times")
    );
    let error = state
        .control_error_info
        .as_ref()
        .and_then(|info| info.get("message"));
    assert_eq!(
        error,
        Some(&json!("no PV_ADDRESSES context \"beam_current_pvs\""))
    );
    assert!(state.capability_context_data.is_empty());
    assert_eq!(state.messages.len(), 1, "no answer");
    // The next turn starts clean.
    start_turn(&mut state, "retry").expect("a valid message");
    assert!(!state.control_is_killed);
    assert_eq!(state.control_kill_reason, None);
}
