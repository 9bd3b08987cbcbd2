//! LangGraph's map-reduce how-to: a node lists subjects for a topic, one
//! `generate_joke` worker per subject runs in parallel (`Send`), and their
//! jokes meet in `jokes: Annotated[list, operator.add]`; a last node picks
//! the best. The Python original heads `examples/langgraph/map_reduce.rs`.
//!
//! `Send("generate_joke", {"subject": s})` is a fan-out to a worker
//! ([`build_graph`]): `add_worker` gives the worker its own input type,
//! [`JokeState`], and `add_fan_out` the function that lists the inputs, so
//! the compiler checks that what is sent is what the worker reads.
//!
//! The workers' updates form one superstep: the runner applies them in the
//! order the workers were sent, whatever order they finish in, as
//! LangGraph does. `jokes` is `#[reducer(append)]`; two workers writing
//! the last-write-wins `best_selected_joke` in one superstep would be a
//! `GraphError::ConcurrentWrite` naming both.

use super::NodeFailure;
use state_core::{AgentState, State};
use state_graph::{CompiledGraph, END, GraphError, START, StateGraph};

/// The graph's state (Python: `class OverallState(TypedDict)`).
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct OverallState {
    /// What the jokes are about.
    pub topic: String,
    /// One subject per worker.
    pub subjects: Vec<String>,
    /// Every worker's jokes, in the order the workers were sent.
    #[reducer(append)]
    pub jokes: Vec<String>,
    /// The joke `best_joke` picked.
    pub best_selected_joke: String,
}

/// A worker's private input (Python: `class JokeState(TypedDict)`): not
/// part of the graph's state, so a plain struct.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JokeState {
    /// The subject of the joke.
    pub subject: String,
}

/// Node `generate_topics`: the subjects (canned: the tutorial's model's
/// answer for "animals", and three generic ones for any other topic).
pub fn generate_topics(state: &OverallState) -> OverallStateDelta {
    let subjects = match state.topic.as_str() {
        "animals" => ["lions", "elephants", "penguins"],
        _ => ["history", "people", "places"],
    };
    OverallState::delta().subjects(subjects)
}

/// Node `generate_joke`, a worker: one joke about its subject (canned).
pub fn generate_joke(state: &JokeState) -> OverallStateDelta {
    let subject = &state.subject;
    let joke = format!("Why did the {subject} cross the road? To get to the other {subject}.");
    OverallState::delta().jokes([joke])
}

/// The fan-out after `generate_topics`: one `generate_joke` input per
/// subject (Python: a list of `Send("generate_joke", {"subject": s})`; the
/// worker is named where the fan-out is added, not in each input).
pub fn continue_to_jokes(state: &OverallState) -> Vec<JokeState> {
    state
        .subjects
        .iter()
        .map(|s| JokeState { subject: s.clone() })
        .collect()
}

/// Node `best_joke`: the model's pick (canned: the shortest joke, the first
/// of equals), by index as in the tutorial's `BestJoke.id`.
pub fn best_joke(state: &OverallState) -> Result<OverallStateDelta, NodeFailure> {
    let id = (0..state.jokes.len()).min_by_key(|&i| state.jokes[i].len());
    let joke = id
        .and_then(|id| state.jokes.get(id))
        .ok_or_else(|| NodeFailure::new("best_joke", "no joke to pick from"))?;
    Ok(OverallState::delta().best_selected_joke(joke))
}

/// The how-to's graph (Python: `graph`, then `graph.compile()`):
///
/// ```text
/// START -> generate_topics =fan-out=> generate_joke (one per subject) -> best_joke -> END
/// ```
///
/// The workers form one superstep: each reads only its own input, and
/// their updates are applied together, in send order. (This sync worker
/// runs one send after another on the runner's task; an async worker, a
/// real model call, would overlap with its siblings.) `best_joke`, which
/// an edge from each of them reaches, runs once, in the next superstep.
pub fn build_graph() -> Result<CompiledGraph<OverallState>, GraphError> {
    let mut graph = StateGraph::<OverallState>::new();
    graph.add_node("generate_topics", generate_topics);
    let joke = graph.add_worker("generate_joke", generate_joke);
    graph.add_node("best_joke", best_joke);
    graph.add_edge(START, "generate_topics");
    // Python: add_conditional_edges("generate_topics", continue_to_jokes, ["generate_joke"]).
    graph.add_fan_out("generate_topics", &joke, continue_to_jokes);
    graph.add_edge("generate_joke", "best_joke");
    graph.add_edge("best_joke", END);
    graph.compile()
}
