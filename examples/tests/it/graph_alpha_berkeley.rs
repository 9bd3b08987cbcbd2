//! The Alpha Berkeley graph end to end on a SQLite file: three turns on
//! one thread, the approval of turn 2 paused by one `Store` and resumed by
//! a second one opened on the same file (as another process would), the
//! execution fields reset by each `invoke_thread` and kept by the resume,
//! and the stored log: one superstep per node, named in its metadata.

use serde_json::{Value, json};
use state_core::{Message, State};
use state_examples::alpha_berkeley::AgentState;
use state_examples::alpha_berkeley::graph::{self, Turn, conversation};
use state_graph::CompiledGraph;
use state_store::Store;
use std::path::Path;

use crate::common::log;

const THREAD: &str = "als-operator";

async fn open(path: &Path) -> (Store, CompiledGraph<AgentState>) {
    let store = Store::sqlite(path).await.expect("the file opens");
    let app = graph::build(conversation())
        .expect("the graph compiles")
        .with_store(store.clone());
    (store, app)
}

fn say(turn: &Turn) -> state_examples::alpha_berkeley::StateUpdate {
    AgentState::delta().messages(vec![Message::human(turn.user_input)])
}

fn messages(state: &AgentState, key: &str, field: &str) -> Vec<String> {
    let events = state.get(key).expect("a field");
    events
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|event| event[field].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn three_turns_with_an_approval_resumed_from_a_second_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("als.db");
    let turns = conversation();
    let (store, app) = open(&path).await;

    // Turn 1: planned, one PV lookup, answered; no approval needed.
    let first = app.invoke_thread(THREAD, say(&turns[0])).await.unwrap();
    assert!(!first.is_interrupted());
    assert_eq!(
        log(&store, THREAD, 1).await,
        [
            "begin_turn __start__",
            "task_extraction",
            "classification",
            "orchestration",
            "pv_address_finding",
            "respond",
        ]
    );
    let state = first.state();
    assert_eq!(state.messages.len(), 2);
    assert_eq!(state.planning_current_step_index, 2);
    assert!(state.capability_context_data["PV_ADDRESSES"].contains_key("beam_current_pvs"));

    // Turn 2: a new turn resets the execution fields; the archiver fails
    // once and retries; the plot's approval is asked, then the run pauses.
    let turn_two = first.seq() + 1;
    let paused = app.invoke_thread(THREAD, say(&turns[1])).await.unwrap();
    assert!(paused.is_interrupted());
    assert_eq!(
        log(&store, THREAD, turn_two).await,
        [
            "begin_turn __start__",
            "task_extraction",
            "classification",
            "orchestration",
            "archiver_retrieval",
            "archiver_retrieval",
            "approval",
            "pending",
        ]
    );
    let [asked] = paused.interrupts() else {
        panic!("one interrupt: {:?}", paused.interrupts())
    };
    assert_eq!(asked.node, "approval");
    assert_eq!(
        asked.value,
        json!({
            "capability": "python_executor",
            "context_key": "beam_current_plot",
            "reason": "python_execution_approval_mode = all_code",
        })
    );
    let state = paused.state();
    // What the stored thread shows while it waits: the request.
    assert_eq!(
        Value::Object(state.execution_pending_approvals["beam_current_plot"].clone()),
        asked.value
    );
    assert_eq!(state.approval_approved, None);
    assert_eq!(state.planning_current_step_index, 1, "the plot is next");
    // Turn 1's execution fields are gone; the context and history stay.
    assert_eq!(state.task_current_task.as_deref(), Some(turns[1].task));
    assert_eq!(state.control_plans_created_count, 1);
    assert_eq!(state.control_retry_count, 1, "this turn's retry only");
    assert_eq!(
        messages(state, "status_updates", "message"),
        [
            "Task extracted",
            "Task classified",
            "Execution plan created",
            "Retrying: archiver_retrieval timed out",
        ]
    );
    assert!(
        !state
            .execution_step_results
            .contains_key("beam_current_pvs")
    );
    assert_eq!(state.messages.len(), 3);
    assert!(state.capability_context_data["PV_ADDRESSES"].contains_key("beam_current_pvs"));
    let paused_state = state.clone();

    // Another process: a second Store on the same file finds the question
    // and answers it. The run goes on in the same turn: nothing resets.
    let (other_store, other_app) = open(&path).await;
    let pending = other_app.pending_interrupts(THREAD).await.unwrap();
    assert_eq!(pending, paused.interrupts());
    let resumed = other_app.resume(THREAD, json!("yes")).await.unwrap();
    assert!(!resumed.is_interrupted());
    assert!(
        other_app
            .pending_interrupts(THREAD)
            .await
            .unwrap()
            .is_empty()
    );
    let state = resumed.state();
    assert_eq!(state.approval_approved, Some(true));
    assert!(state.execution_pending_approvals.is_empty());
    assert_eq!(
        state
            .approved_payload
            .as_ref()
            .map(|p| Value::Object(p.clone())),
        Some(asked.value.clone())
    );
    assert_eq!(state.ui_captured_figures, ["figures/beam_current_plot.png"]);
    assert_eq!(state.control_retry_count, 1, "kept by the resume");
    assert_eq!(state.task_current_task, paused_state.task_current_task);
    assert_eq!(
        messages(state, "status_updates", "message"),
        [
            "Task extracted",
            "Task classified",
            "Execution plan created",
            "Retrying: archiver_retrieval timed out",
            "Response ready",
        ]
    );
    assert_eq!(
        messages(state, "progress_events", "operation"),
        ["archiver_retrieval", "python_executor", "respond"]
    );
    assert_eq!(state.messages.len(), 4);
    let resumed_at = paused.seq() + 1;
    assert_eq!(
        log(&other_store, THREAD, resumed_at).await,
        ["approval", "python_executor", "respond"]
    );
    // The first process reads what the second one wrote.
    let reread = store.thread::<AgentState>(THREAD).await.unwrap();
    assert_eq!((reread.seq(), reread.state()), (resumed.seq(), state));

    // Turn 3, back in the first process: turn 2's execution state resets
    // (the approval, the retry, the figure), the context accumulates.
    let third = app.invoke_thread(THREAD, say(&turns[2])).await.unwrap();
    assert!(!third.is_interrupted());
    let state = third.state();
    assert_eq!(state.approval_approved, None);
    assert_eq!(state.approved_payload, None);
    assert_eq!(state.control_retry_count, 0);
    assert_eq!(state.control_last_error, None);
    assert!(state.ui_captured_figures.is_empty());
    assert_eq!(
        messages(state, "status_updates", "message"),
        [
            "Task extracted",
            "Task classified",
            "Execution plan created",
            "Response ready",
        ]
    );
    assert_eq!(
        state.capability_context_data.keys().collect::<Vec<_>>(),
        ["ARCHIVER_DATA", "PV_ADDRESSES", "PYTHON_RESULTS"]
    );
    let refined = &state.capability_context_data["PV_ADDRESSES"]["beam_current_pvs"];
    assert_eq!(refined["pvs"], json!(["SR:DCCT:Current"]));
    assert!(
        !refined.contains_key("notes"),
        "the record was replaced whole"
    );
    assert_eq!(state.messages.len(), 6);
    assert_eq!(
        log(&store, THREAD, resumed.seq() + 1).await,
        [
            "begin_turn __start__",
            "task_extraction",
            "classification",
            "orchestration",
            "pv_address_finding",
            "pv_address_finding",
            "respond",
        ]
    );
}

#[tokio::test]
async fn a_rejected_approval_kills_the_run_and_the_next_turn_starts_clean() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("als.db");
    let turns = conversation();
    let (store, app) = open(&path).await;
    app.invoke_thread(THREAD, say(&turns[0])).await.unwrap();
    let paused = app.invoke_thread(THREAD, say(&turns[1])).await.unwrap();
    assert!(paused.is_interrupted());

    let (_, other_app) = open(&path).await;
    let rejected = other_app.resume(THREAD, json!("no")).await.unwrap();
    assert!(!rejected.is_interrupted());
    let state = rejected.state();
    assert_eq!(state.approval_approved, Some(false));
    assert!(state.control_is_killed);
    assert_eq!(
        state.control_kill_reason.as_deref(),
        Some("the operator rejected step 1")
    );
    assert!(state.ui_captured_figures.is_empty(), "the code never ran");
    assert_eq!(state.messages.len(), 3, "no answer");
    assert_eq!(
        log(&store, THREAD, paused.seq() + 1).await,
        ["approval", "kill"]
    );

    // The kill is execution state: the next turn runs as usual.
    let next = app.invoke_thread(THREAD, say(&turns[2])).await.unwrap();
    let state = next.state();
    assert!(!state.control_is_killed);
    assert_eq!(state.control_kill_reason, None);
    assert_eq!(state.approval_approved, None);
    assert_eq!(state.messages.len(), 5);
}
