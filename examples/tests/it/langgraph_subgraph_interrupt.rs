//! The subgraph whose node asks, end to end: the run pauses inside the
//! subgraph (the interrupt names its node and the subgraph's namespace),
//! the thread's snapshot says the parent node is next, and the resumed
//! run, here or in another worker, runs again exactly what LangGraph runs
//! again: the parent node's code before the call and the asking node, not
//! the subgraph's finished node.

use crate::stores::TestStore;
use futures::StreamExt;
use serde_json::{Value, json};
use state_core::State;
use state_examples::langgraph::subgraph_interrupt::{CounterState, Globals, QUESTION, build_graph};
use state_graph::StreamMode;
use state_store::StepKind;
use std::sync::{Arc, Mutex};

/// Globals whose prints are collected.
fn globals() -> (Arc<Globals>, Arc<Mutex<Vec<String>>>) {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = lines.clone();
    let globals = Globals::new(move |line| sink.lock().unwrap().push(line));
    (globals, lines)
}

fn take(lines: &Mutex<Vec<String>>) -> Vec<String> {
    std::mem::take(&mut *lines.lock().unwrap())
}

/// The how-to's run, on one graph: its printed lines, chunk for chunk.
async fn prints_what_the_python_prints(ts: TestStore) {
    let (globals, lines) = globals();
    let graph = build_graph(&globals, ts.store.clone()).unwrap();

    let chunks: Vec<Value> = graph
        .stream_thread(
            "1",
            CounterState::delta().state_counter(1),
            StreamMode::UPDATES,
        )
        .filter_map(|e| async move {
            let e = e.unwrap();
            (e.mode() == "updates").then(|| e.data().unwrap())
        })
        .collect()
        .await;
    assert_eq!(
        take(&lines),
        [
            "Entered `parent_node` a total of 1 times",
            "Entered `node_in_subgraph` a total of 1 times",
            "Entered human_node in sub-graph a total of 1 times",
        ],
        "{}",
        ts.name
    );
    assert_eq!(chunks.len(), 1, "{chunks:?}");
    assert_eq!(chunks[0]["__interrupt__"][0]["value"], QUESTION);

    let chunks: Vec<Value> = graph
        .stream_resume("1", json!("35"), StreamMode::UPDATES)
        .filter_map(|e| async move {
            let e = e.unwrap();
            (e.mode() == "updates").then(|| e.data().unwrap())
        })
        .collect()
        .await;
    assert_eq!(
        take(&lines),
        [
            "Entered `parent_node` a total of 2 times",
            "Entered human_node in sub-graph a total of 2 times",
            "Got an answer of 35",
        ],
        "{}",
        ts.name
    );
    assert_eq!(chunks, [json!({"parent_node": {"state_counter": 1}})]);
    assert_eq!(globals.counts(), (2, 1, 2));
}

/// The pause as the thread keeps it, read and answered by another worker
/// with a graph of its own.
async fn another_worker_resumes_inside_the_subgraph(ts: TestStore) {
    let (first, _) = globals();
    let graph = build_graph(&first, ts.store.clone()).unwrap();
    let out = graph
        .invoke_thread("t", CounterState::delta().state_counter(7))
        .await
        .unwrap();
    assert!(out.is_interrupted());
    assert_eq!(out.next(), ["parent_node"]);
    let [interrupt] = out.interrupts() else {
        panic!("one interrupt: {:?}", out.interrupts());
    };
    assert_eq!(interrupt.node, "human_node");
    assert_eq!(interrupt.value, QUESTION);
    assert_eq!(interrupt.namespace.len(), 1, "{:?}", interrupt.namespace);
    assert!(interrupt.namespace[0].starts_with("parent_node:"));
    assert_eq!(first.counts(), (1, 1, 1));

    let (second, lines) = globals();
    let worker = build_graph(&second, ts.another_worker().await).unwrap();
    let snapshot = worker.get_state("t").await.unwrap();
    assert_eq!(snapshot.next(), ["parent_node"], "{}", ts.name);
    assert_eq!(snapshot.interrupts(), out.interrupts());
    assert_eq!(snapshot.state().state_counter, 7);

    let done = worker.resume("t", json!("Ada")).await.unwrap();
    assert!(!done.is_interrupted());
    assert_eq!(done.state().state_counter, 7);
    assert_eq!(
        second.counts(),
        (1, 0, 1),
        "{}: the subgraph's finished node is not run again",
        ts.name
    );
    assert_eq!(take(&lines).last().unwrap(), "Got an answer of Ada");
    assert_eq!(
        first.counts(),
        (1, 1, 1),
        "the first worker did nothing more"
    );

    // The subgraph's steps are in the parent's thread, under its namespace.
    let steps = ts.store.history("t", ..).await.unwrap();
    let inner: Vec<(Vec<&str>, &str)> = steps
        .iter()
        .filter(|s| s.kind == StepKind::Subgraph)
        .map(|s| (s.nodes(), s.metadata["ns"].as_str().unwrap()))
        .collect();
    assert_eq!(inner.len(), 2, "{inner:?}");
    assert_eq!(inner[0].0, ["some_node"]);
    assert_eq!(inner[1].0, ["human_node"]);
    assert!(inner.iter().all(|(_, ns)| *ns == interrupt.namespace[0]));
    assert!(worker.get_state("t").await.unwrap().next().is_empty());
}

on_both_stores!(
    prints_what_the_python_prints,
    another_worker_resumes_inside_the_subgraph,
);
