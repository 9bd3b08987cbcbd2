//! Ports of LangGraph tutorials and how-tos as `state_graph::StateGraph`s: the
//! programs in `examples/langgraph/` run them (`cargo run --example
//! langgraph_NAME`) and show the Python original at the top;
//! `examples/tests/langgraph_*.rs` run each graph end to end and assert the
//! nodes it went through and the state it left.
//!
//! Each module keeps the tutorial's state and nodes (plain functions from
//! the state to a delta, as LangGraph's nodes return a partial dict) and
//! builds the tutorial's graph from them: the same node names, edges and
//! routers. Models are canned: each reply is fixed by the script, so a run
//! is repeatable.
//!
//! This module holds what they share: [`Step`], one node's update as
//! `stream_mode="updates"` shows it, [`updates`] to collect a streamed
//! run's, [`supersteps`] to read the node names of a thread's supersteps
//! back from its store, [`snapshots_since`] for what a run that is not
//! streamed would have shown, and [`NodeFailure`], a node's error.

use futures::StreamExt;
use serde_json::Value;
use state_core::State;
use state_graph::{CompiledGraph, Event, GraphError, GraphState, Outcome, RunStream, Snapshot};
use state_store::{StepKind, Store, StoreError};
use std::fmt;

pub mod customer_support;
pub mod map_reduce;
pub mod plan_and_execute;
pub mod react_agent;
pub mod review_tool_calls;
pub mod subgraph_interrupt;
pub mod summary_bot;
pub mod supervisor;
pub mod time_travel;

/// One node's update, as `stream_mode="updates"` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// The node that wrote it.
    pub node: String,
    /// Its delta, as JSON.
    pub update: Value,
}

impl Step {
    /// The step of `node` writing `delta`.
    pub fn new(node: impl Into<String>, delta: &impl serde::Serialize) -> Self {
        Step {
            node: node.into(),
            // A delta's JSON is a map of plain values: it always serializes.
            update: serde_json::to_value(delta).unwrap_or_default(),
        }
    }
}

/// `node: field = value; ...`, each message of a `messages` update on one
/// short line (`ai -> search_flights {..}`, `tool(call_1) "..."`,
/// `remove h-1`), long texts cut.
impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:", self.node)?;
        let Value::Object(fields) = &self.update else {
            return write!(f, " {}", self.update);
        };
        for (i, (key, value)) in fields.iter().enumerate() {
            let sep = if i == 0 { " " } else { "; " };
            match (key.as_str(), value) {
                ("messages", Value::Array(messages)) => {
                    let shown: Vec<String> = messages.iter().map(show_message).collect();
                    write!(f, "{sep}messages + [{}]", shown.join(", "))?;
                }
                (_, value) => write!(f, "{sep}{key} = {}", cut(&value.to_string(), 90))?,
            }
        }
        Ok(())
    }
}

/// A message of an update, in a few words.
fn show_message(message: &Value) -> String {
    let kind = message["type"].as_str().unwrap_or("?");
    let text = || cut(&message["content"].to_string(), 70);
    match kind {
        "remove" => format!("remove {}", message["id"].as_str().unwrap_or("?")),
        "tool" => format!(
            "tool({}) {}",
            message["tool_call_id"].as_str().unwrap_or("?"),
            text()
        ),
        _ => match message["tool_calls"].as_array() {
            Some(calls) if !calls.is_empty() => {
                let calls: Vec<String> = calls
                    .iter()
                    .map(|c| {
                        let name = c["name"].as_str().unwrap_or("?");
                        format!("{name} {}", cut(&c["args"].to_string(), 60))
                    })
                    .collect();
                format!("{kind} -> {}", calls.join(", "))
            }
            _ => format!("{kind} {}", text()),
        },
    }
}

/// `text`, cut to `max` characters with an ellipsis.
fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_owned()
    } else {
        let kept: String = text.chars().take(max - 1).collect();
        format!("{kept}…")
    }
}

/// Drains a streamed run: its node updates in order (`Event::Update`, as
/// LangGraph's `stream_mode="updates"`), and its outcome (`Event::End`).
pub async fn updates<S>(mut stream: RunStream<S>) -> Result<(Vec<Step>, Outcome<S>), GraphError>
where
    S: State,
    S::Delta: serde::Serialize,
{
    let mut steps = Vec::new();
    while let Some(event) = stream.next().await {
        match event? {
            Event::Update { node, delta } => steps.push(Step::new(node, &delta)),
            Event::End(outcome) => return Ok((steps, outcome)),
            _ => {}
        }
    }
    // A stream always ends with Event::End or an error.
    unreachable!("a run's stream ended without its outcome")
}

/// The node names of each superstep thread `thread` logged after step
/// `after`, read back from the store: each superstep's metadata `nodes`.
/// The input steps (`__start__`), turn starts and paused (pending) steps
/// are left out.
pub async fn supersteps(
    store: &Store,
    thread: &str,
    after: u64,
) -> Result<Vec<Vec<String>>, StoreError> {
    let steps = store.history(thread, after + 1..).await?;
    Ok(steps
        .into_iter()
        .filter(|step| step.kind == StepKind::Superstep)
        .map(|step| step.nodes().into_iter().map(str::to_owned).collect())
        .collect())
}

/// [`supersteps`], flattened: the path of a graph whose supersteps each
/// run one node.
pub async fn node_path(store: &Store, thread: &str, after: u64) -> Result<Vec<String>, StoreError> {
    Ok(supersteps(store, thread, after)
        .await?
        .into_iter()
        .flatten()
        .collect())
}

/// The snapshots of `thread` after step `after`, oldest first: the
/// states a run logged, what `stream_mode="values"` would have shown of
/// it. For the runs that are not streamed (`continue_thread`, LangGraph's
/// `graph.stream(None, config)`).
///
/// A pause is logged as a step of its own, which changes nothing and
/// leads where the step before it did; LangGraph has no checkpoint there,
/// and no `values` event: it is left out.
///
/// # Errors
///
/// When the thread's history cannot be read.
pub async fn snapshots_since<S, C>(
    app: &CompiledGraph<S, C>,
    thread: &str,
    after: u64,
) -> Result<Vec<Snapshot<S>>, GraphError>
where
    S: GraphState + PartialEq,
    C: Send + Sync + 'static,
{
    let mut history = app.get_state_history(thread).await?;
    history.retain(|s| s.seq() >= after);
    history.reverse();
    let mut snapshots: Vec<Snapshot<S>> = Vec::new();
    let mut before: Option<Snapshot<S>> = None;
    for snapshot in history {
        let pause = before
            .as_ref()
            .is_some_and(|b| b.state() == snapshot.state() && b.next() == snapshot.next());
        if snapshot.seq() > after && !pause {
            snapshots.push(snapshot.clone());
        }
        before = Some(snapshot);
    }
    Ok(snapshots)
}

/// Why a node could not produce its update (where the Python would raise):
/// the runner stops the run with `GraphError::Node`, naming the node, with
/// this as its source.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("node {node}: {reason}")]
pub struct NodeFailure {
    /// The node.
    pub node: String,
    /// What was missing.
    pub reason: String,
}

impl NodeFailure {
    /// `node` failed because of `reason`.
    pub fn new(node: impl Into<String>, reason: impl Into<String>) -> Self {
        NodeFailure {
            node: node.into(),
            reason: reason.into(),
        }
    }
}
