//! LangGraph's map-reduce how-to: a node lists subjects for a topic, one
//! `generate_joke` worker per subject runs in parallel (`Send`), and their
//! jokes meet in `jokes: Annotated[list, operator.add]`; a last node picks
//! the best. The Python original heads `examples/langgraph/map_reduce.rs`.
//!
//! The workers' updates form one superstep: [`State::apply_all`] reduces
//! them in the order the workers were sent, whatever order they finish in,
//! as LangGraph does. `jokes` is `#[reducer(append)]`; two workers writing
//! the last-write-wins `best_selected_joke` in one superstep would be a
//! [`state_core::StateError::ConcurrentWrite`].

use super::{RunError, Step};
use state_core::{AgentState, State};
use std::thread;

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

/// `Send("generate_joke", {"subject": s})`: a worker to run in the next
/// superstep, with its input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Send {
    /// The node to run.
    pub node: &'static str,
    /// Its input.
    pub arg: JokeState,
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

/// The edge after `generate_topics`: one worker per subject.
pub fn continue_to_jokes(state: &OverallState) -> Vec<Send> {
    state
        .subjects
        .iter()
        .map(|s| Send {
            node: "generate_joke",
            arg: JokeState { subject: s.clone() },
        })
        .collect()
}

/// Node `best_joke`: the model's pick (canned: the shortest joke, the first
/// of equals), by index as in the tutorial's `BestJoke.id`.
pub fn best_joke(state: &OverallState) -> Result<OverallStateDelta, RunError> {
    let id = (0..state.jokes.len()).min_by_key(|&i| state.jokes[i].len());
    let joke = id
        .and_then(|id| state.jokes.get(id))
        .ok_or(RunError::Node {
            node: "best_joke",
            reason: "no joke to pick from".into(),
        })?;
    Ok(OverallState::delta().best_selected_joke(joke))
}

/// One `app.stream({"topic": topic})`: `generate_topics`, the workers in
/// parallel threads as one superstep, then `best_joke`. Returns the updates
/// in order.
pub fn run(state: &mut OverallState, topic: &str) -> Result<Vec<Step>, RunError> {
    state.apply(OverallState::delta().topic(topic))?;
    let delta = generate_topics(state);
    let mut steps = vec![Step::new("generate_topics", &delta)];
    state.apply(delta)?;

    let sends = continue_to_jokes(state);
    // Joining the handles in the order they were spawned keeps the workers'
    // updates in `Send` order, which is the order `apply_all` reduces them.
    let updates: Vec<OverallStateDelta> = thread::scope(|scope| {
        let handles: Vec<_> = sends
            .iter()
            .map(|send| scope.spawn(|| generate_joke(&send.arg)))
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join())
            .collect::<Result<_, _>>()
    })
    .map_err(|_| RunError::Node {
        node: "generate_joke",
        reason: "a worker panicked".into(),
    })?;
    for (send, update) in sends.iter().zip(&updates) {
        steps.push(Step::new(send.node, update));
    }
    state.apply_all(updates)?;

    let delta = best_joke(state)?;
    steps.push(Step::new("best_joke", &delta));
    state.apply(delta)?;
    Ok(steps)
}
