//! Map-reduce, end to end: the fan-out's workers in one superstep (the
//! streamed node path, and the supersteps as a store logs them), their
//! jokes reduced in send order whatever order they finish in, the best
//! pick, and two workers writing a `replace` field conflicting.

use state_core::{State, StateError};
use state_examples::langgraph::map_reduce::{
    JokeState, OverallState, OverallStateDelta, best_joke, build_graph, continue_to_jokes,
    generate_joke, generate_topics,
};
use state_examples::langgraph::{supersteps, updates};
use state_graph::{END, GraphError, START, StateGraph, StreamMode};
use state_store::Store;
use std::sync::{Arc, Mutex};

fn joke(subject: &str) -> String {
    format!("Why did the {subject} cross the road? To get to the other {subject}.")
}

#[tokio::test]
async fn the_workers_jokes_are_reduced_in_send_order() {
    let app = build_graph().unwrap();
    let input = OverallState::delta().topic("animals");
    let (steps, outcome) = updates(app.stream(input, StreamMode::UPDATES))
        .await
        .unwrap();
    let nodes: Vec<&str> = steps.iter().map(|s| s.node.as_str()).collect();
    assert_eq!(
        nodes,
        [
            "generate_topics",
            "generate_joke",
            "generate_joke",
            "generate_joke",
            "best_joke"
        ]
    );
    // Each worker wrote its own subject's joke, in send order.
    let written: Vec<&str> = steps[1..4]
        .iter()
        .map(|s| s.update["jokes"][0].as_str().unwrap())
        .collect();
    assert_eq!(
        written,
        [joke("lions"), joke("elephants"), joke("penguins")]
    );
    let state = outcome.into_state();
    assert_eq!(state.subjects, ["lions", "elephants", "penguins"]);
    assert_eq!(
        state.jokes,
        [joke("lions"), joke("elephants"), joke("penguins")]
    );
    assert_eq!(state.best_selected_joke, joke("lions"), "the shortest");
    assert_eq!(state.topic, "animals");
}

#[tokio::test]
async fn the_fan_out_is_one_superstep_and_best_joke_runs_once() {
    let store = Store::memory();
    let app = build_graph().unwrap().with_store(store.clone());
    let out = app
        .invoke_thread("jokes", OverallState::delta().topic("animals"))
        .await
        .unwrap();
    assert_eq!(
        supersteps(&store, "jokes", 0).await.unwrap(),
        [
            vec!["generate_topics"],
            vec!["generate_joke", "generate_joke", "generate_joke"],
            vec!["best_joke"],
        ]
    );
    assert_eq!(out.state().jokes.len(), 3);
}

#[tokio::test]
async fn a_second_run_appends_to_the_jokes() {
    let app = build_graph().unwrap();
    let state = app
        .invoke(OverallState::delta().topic("animals"))
        .await
        .unwrap();
    let state = app
        .invoke_on(state, OverallState::delta().topic("cities"))
        .await
        .unwrap();
    assert_eq!(state.subjects, ["history", "people", "places"]);
    assert_eq!(state.jokes.len(), 6, "operator.add keeps the first run's");
    assert_eq!(
        state.jokes[3..],
        [joke("history"), joke("people"), joke("places")]
    );
    // The best is picked among all six.
    assert_eq!(state.best_selected_joke, joke("lions"));
}

#[tokio::test]
async fn workers_that_finish_out_of_order_still_reduce_in_send_order() {
    // The how-to's graph with an async worker that yields the longer the
    // earlier it was sent: the last sent finishes first.
    let finished = Arc::new(Mutex::new(Vec::new()));
    let mut graph = StateGraph::<OverallState>::new();
    graph.add_node("generate_topics", generate_topics);
    let log = finished.clone();
    let worker = graph.add_worker("generate_joke", move |input: Arc<JokeState>| {
        let log = log.clone();
        async move {
            let waits = match input.subject.as_str() {
                "lions" => 3,
                "elephants" => 2,
                _ => 1,
            };
            for _ in 0..waits {
                tokio::task::yield_now().await;
            }
            log.lock().unwrap().push(input.subject.clone());
            generate_joke(&input)
        }
    });
    graph.add_node("best_joke", best_joke);
    graph.add_edge(START, "generate_topics");
    graph.add_fan_out("generate_topics", &worker, continue_to_jokes);
    graph.add_edge("generate_joke", "best_joke");
    graph.add_edge("best_joke", END);
    let state = graph
        .compile()
        .unwrap()
        .invoke(OverallState::delta().topic("animals"))
        .await
        .unwrap();
    assert_eq!(
        *finished.lock().unwrap(),
        ["penguins", "elephants", "lions"]
    );
    assert_eq!(
        state.jokes,
        [joke("lions"), joke("elephants"), joke("penguins")]
    );
}

#[tokio::test]
async fn two_workers_writing_a_replace_field_conflict() {
    fn greedy(input: &JokeState) -> OverallStateDelta {
        generate_joke(input).best_selected_joke(joke(&input.subject))
    }
    let mut graph = StateGraph::<OverallState>::new();
    graph.add_node("generate_topics", generate_topics);
    let worker = graph.add_worker("generate_joke", greedy);
    graph.add_edge(START, "generate_topics");
    graph.add_fan_out("generate_topics", &worker, continue_to_jokes);
    graph.add_edge("generate_joke", END);
    let store = Store::memory();
    let app = graph.compile().unwrap().with_store(store.clone());
    let err = app
        .invoke_thread("t", OverallState::delta().topic("animals"))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, GraphError::ConcurrentWrite { field, first, second }
            if field == "best_selected_joke" && first == "generate_joke" && second == "generate_joke"),
        "{err:?}"
    );
    // The whole superstep is refused: no joke was kept.
    let thread = store.thread::<OverallState>("t").await.unwrap();
    assert!(thread.state().jokes.is_empty());
    assert_eq!(thread.state().subjects.len(), 3);
}

#[test]
fn continue_to_jokes_sends_one_input_per_subject() {
    let mut state = OverallState::default();
    state
        .apply(OverallState::delta().subjects(["a", "b"]))
        .unwrap();
    let sends = continue_to_jokes(&state);
    let subjects: Vec<&str> = sends.iter().map(|s| s.subject.as_str()).collect();
    assert_eq!(subjects, ["a", "b"]);
    // apply_all reduces in the order given: b's joke first when b's
    // update is listed first.
    let b = generate_joke(&sends[1]);
    let a = generate_joke(&sends[0]);
    state.apply_all([b, a]).unwrap();
    assert_eq!(state.jokes, [joke("b"), joke("a")]);
    let err = state
        .apply_all([
            OverallState::delta().best_selected_joke("x"),
            OverallState::delta().best_selected_joke("y"),
        ])
        .unwrap_err();
    assert!(
        matches!(&err, StateError::ConcurrentWrite { field } if field == "best_selected_joke"),
        "{err:?}"
    );
}

#[test]
fn best_joke_of_no_jokes_is_an_error() {
    let err = best_joke(&OverallState::default()).unwrap_err();
    assert_eq!(err.node, "best_joke", "{err}");
}
