//! The AgentFlow order graph end to end on a SQLite file: a run paused
//! before checkout (the interrupt status written by the superstep before
//! the pause), resumed by a second `Store` opened on the same file (as
//! another process would), the status cleared on resume; a new run's
//! resets (`begin_run`: the error and the stop request of the last run);
//! and the stored log: one superstep per node, named in its metadata.

use serde_json::{Value, json};
use state_core::State;
use state_examples::agentflow::{
    self, Agent, ExecutionStatus, OrderState, Role, StopRequestStatus,
};
use state_store::{StepKind, StepRecord, Store};
use std::path::Path;

use crate::common::log;

async fn open(path: &Path) -> (Store, Agent<OrderState>) {
    let store = Store::sqlite(path).await.expect("the file opens");
    let agent = agentflow::order_graph()
        .compile(store.clone())
        .expect("the graph compiles");
    (store, agent)
}

async fn history(store: &Store, thread: &str, from: u64) -> Vec<StepRecord> {
    store.history(thread, from..).await.expect("the log reads")
}

/// What the logged superstep of `node` wrote to `execution_meta`.
fn meta_written<'s>(steps: &'s [StepRecord], node: &str) -> &'s Value {
    let step = steps
        .iter()
        .find(|step| step.metadata.get("nodes") == Some(&json!([node])))
        .expect("the node's superstep");
    assert_eq!(step.kind, StepKind::Superstep);
    &step.body[0]["execution_meta"]
}

#[tokio::test]
async fn paused_before_checkout_resumed_from_a_second_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("orders.db");
    let (store, agent) = open(&path).await;

    let said = agentflow::text_message("Process my order, use code save10", Role::User);
    let input = agentflow::order_input(&agentflow::seeded_order(), vec![said]);
    let paused = agent.invoke("ORD-001", input).await.unwrap();
    assert_eq!(paused.visited, ["apply_discount", "process_order"]);
    assert_eq!(
        log(&store, "ORD-001", 1).await,
        [
            "begin_turn __start__",
            "apply_discount",
            "process_order",
            "pending"
        ]
    );
    // process_order's superstep recorded set_interrupt for checkout; the
    // pause itself (the pending step) changed no state.
    let steps = history(&store, "ORD-001", 1).await;
    assert_eq!(
        meta_written(&steps, "process_order"),
        &json!({
            "current_node": "process_order",
            "step": 2,
            "status": "interrupted",
            "interrupt_node": "checkout",
            "interrupt_reason": "awaiting the customer's confirmation",
            "interrupt_data": {"pending_node": "checkout"},
        })
    );
    assert_eq!(steps.last().map(|step| step.seq), Some(paused.seq));
    assert_eq!(
        store
            .state_at::<OrderState>("ORD-001", paused.seq)
            .await
            .unwrap(),
        paused.state
    );
    let meta = paused.state.base.execution_meta();
    assert!(paused.state.base.is_interrupted());
    assert_eq!(meta.interrupt_node.as_deref(), Some("checkout"));

    // Another process: a second Store on the same file sees the thread
    // waiting, and the customer's answer resumes it at checkout.
    let (other_store, other) = open(&path).await;
    let pending = other.graph().pending_interrupts("ORD-001").await.unwrap();
    let [waiting] = pending.as_slice() else {
        panic!("one interrupt: {pending:?}")
    };
    assert_eq!(waiting.node, "checkout");
    assert_eq!(
        waiting.value,
        json!({
            "node": "checkout",
            "reason": "awaiting the customer's confirmation",
            "data": {"pending_node": "checkout"},
        })
    );
    let stored = other_store.thread::<OrderState>("ORD-001").await.unwrap();
    assert!(
        stored.state().base.is_interrupted(),
        "the file says it waits"
    );
    assert!(
        !other.stop("ORD-001").await.unwrap(),
        "a paused thread is not stopped"
    );

    let confirm = agentflow::text_message("Yes, confirm", Role::User);
    let done = other
        .invoke("ORD-001", agentflow::say(vec![confirm]))
        .await
        .unwrap();
    assert_eq!(done.visited, ["checkout", "answer", "summarise"]);
    assert!(
        other
            .graph()
            .pending_interrupts("ORD-001")
            .await
            .unwrap()
            .is_empty()
    );
    let state = &done.state;
    assert!(state.confirmed);
    let meta = state.base.execution_meta();
    assert_eq!(meta.status, ExecutionStatus::Completed);
    assert_eq!((meta.step, meta.current_node.as_str()), (5, "summarise"));
    assert_eq!(
        (
            &meta.interrupt_node,
            &meta.interrupt_reason,
            &meta.interrupt_data
        ),
        (&None, &None, &None),
        "cleared on resume"
    );
    assert_eq!(
        state
            .base
            .context
            .iter()
            .map(|m| m.text())
            .collect::<Vec<_>>(),
        [
            "Process my order, use code save10",
            "Order ORD-001: 1 x ABC, code SAVE10. Shall I place it?",
            "Yes, confirm",
            "Order placed!",
            "Here is the answer: it ships tomorrow.",
        ]
    );
    // A resume is no new run: no turn reset, no input step.
    assert_eq!(
        log(&other_store, "ORD-001", paused.seq + 1).await,
        ["checkout", "answer", "summarise"]
    );
    let steps = history(&other_store, "ORD-001", paused.seq + 1).await;
    assert_eq!(
        meta_written(&steps, "checkout"),
        &json!({
            "current_node": "checkout",
            "step": 3,
            "status": "running",
            "interrupt_node": null,
            "interrupt_reason": null,
            "interrupt_data": null,
        }),
        "clear_interrupt, then set_current_node and advance_step"
    );
    assert_eq!(meta_written(&steps, "summarise")["status"], "completed");
    // The answer's streamed chunks are not in the log.
    let answer = steps[1].body.to_string();
    assert!(!answer.contains("\"delta\":true"), "{answer}");
    assert!(
        done.events
            .iter()
            .any(|e| matches!(e, agentflow::Event::Chunk { .. }))
    );

    // The first process reads what the second wrote.
    let reread = store.thread::<OrderState>("ORD-001").await.unwrap();
    assert_eq!((reread.seq(), reread.state()), (done.seq, state));
}

#[tokio::test]
async fn a_new_run_resets_the_last_runs_error_and_stop_request() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("orders.db");
    let (store, agent) = open(&path).await;

    // ORD-002 has an empty cart: resumed, checkout fails, and the runtime
    // records the error; the router ends the run.
    let empty = OrderState {
        order_id: Some("ORD-002".into()),
        ..OrderState::default()
    };
    let said = agentflow::text_message("Order please", Role::User);
    agent
        .invoke("ORD-002", agentflow::order_input(&empty, vec![said]))
        .await
        .unwrap();
    let (_, other) = open(&path).await;
    let yes = agentflow::text_message("yes", Role::User);
    let failed = other
        .invoke("ORD-002", agentflow::say(vec![yes]))
        .await
        .unwrap();
    assert_eq!(failed.visited, ["checkout"]);
    let meta = failed.state.base.execution_meta();
    assert_eq!(meta.status, ExecutionStatus::Error);
    assert_eq!(
        meta.error.as_deref(),
        Some("cannot check out an empty cart")
    );
    assert_eq!(meta.interrupt_node, None);
    let failed_at = failed.seq;

    // The next invoke is a new run: a turn begins and the input carries
    // begin_run, which clears the error; the step counter goes on.
    let again = agentflow::text_message("Order please, again", Role::User);
    let rerun = agent
        .invoke("ORD-002", agentflow::say(vec![again]))
        .await
        .unwrap();
    assert_eq!(rerun.visited, ["apply_discount", "process_order"]);
    let meta = rerun.state.base.execution_meta();
    assert_eq!(meta.error, None);
    assert_eq!(meta.status, ExecutionStatus::Interrupted);
    assert_eq!(meta.step, 5);
    assert_eq!(
        log(&store, "ORD-002", failed_at + 1).await,
        [
            "begin_turn __start__",
            "apply_discount",
            "process_order",
            "pending"
        ]
    );
    let input = &history(&store, "ORD-002", failed_at + 1).await[0];
    assert_eq!(input.kind, StepKind::BeginTurn);
    assert_eq!(
        input.body["execution_meta"],
        json!({"current_node": "__start__", "status": "running", "stop_current_execution": "none", "error": null}),
        "begin_run"
    );

    // A stop request: taken at the first node boundary, recorded with its
    // superstep; the next run clears it.
    assert!(agent.stop("ORD-003").await.unwrap());
    let said = agentflow::text_message("Process my order", Role::User);
    let input = agentflow::order_input(&agentflow::seeded_order(), vec![said]);
    let stopped = agent.invoke("ORD-003", input).await.unwrap();
    assert_eq!(stopped.visited, ["apply_discount"]);
    assert_eq!(
        stopped.state.base.execution_meta().stop_current_execution,
        StopRequestStatus::StopRequested
    );
    assert_eq!(
        log(&store, "ORD-003", 1).await,
        ["begin_turn __start__", "apply_discount"]
    );
    let next = other.invoke("ORD-003", OrderState::delta()).await.unwrap();
    assert!(!next.state.base.is_stopped_requested());
    assert_eq!(next.visited, ["apply_discount", "process_order"]);
    let reloaded = Store::sqlite(&path)
        .await
        .unwrap()
        .thread::<OrderState>("ORD-003")
        .await
        .unwrap();
    assert_eq!(
        reloaded.state().to_json().unwrap(),
        next.state.to_json().unwrap()
    );
}
