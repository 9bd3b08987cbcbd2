//! Map-reduce: the parallel workers' jokes reduced in `Send` order through
//! `apply_all`, the best pick, and a superstep conflict on a `replace`
//! field.

use state_core::{State, StateError};
use state_examples::langgraph::RunError;
use state_examples::langgraph::map_reduce::{
    JokeState, OverallState, best_joke, continue_to_jokes, generate_joke, run,
};

fn joke(subject: &str) -> String {
    format!("Why did the {subject} cross the road? To get to the other {subject}.")
}

#[test]
fn the_workers_jokes_are_reduced_in_send_order() {
    let mut state = OverallState::default();
    let steps = run(&mut state, "animals").unwrap();
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
    assert_eq!(state.subjects, ["lions", "elephants", "penguins"]);
    assert_eq!(
        state.jokes,
        [joke("lions"), joke("elephants"), joke("penguins")]
    );
    assert_eq!(state.best_selected_joke, joke("lions"), "the shortest");
    assert_eq!(state.topic, "animals");
}

#[test]
fn a_second_run_appends_to_the_jokes() {
    let mut state = OverallState::default();
    run(&mut state, "animals").unwrap();
    run(&mut state, "cities").unwrap();
    assert_eq!(state.subjects, ["history", "people", "places"]);
    assert_eq!(state.jokes.len(), 6, "operator.add keeps the first run's");
    assert_eq!(
        state.jokes[3..],
        [joke("history"), joke("people"), joke("places")]
    );
}

#[test]
fn apply_all_reduces_in_the_order_given_not_finished() {
    let mut state = OverallState::default();
    state
        .apply(OverallState::delta().subjects(["a", "b"]))
        .unwrap();
    let sends = continue_to_jokes(&state);
    assert_eq!(
        sends
            .iter()
            .map(|s| (s.node, s.arg.subject.as_str()))
            .collect::<Vec<_>>(),
        [("generate_joke", "a"), ("generate_joke", "b")]
    );
    // Worker b's update listed first: b's joke comes first.
    let b = generate_joke(&sends[1].arg);
    let a = generate_joke(&sends[0].arg);
    state.apply_all([b, a]).unwrap();
    assert_eq!(state.jokes, [joke("b"), joke("a")]);
}

#[test]
fn two_workers_writing_a_replace_field_conflict() {
    let mut state = OverallState::default();
    let worker = |subject: &str| {
        generate_joke(&JokeState {
            subject: subject.to_owned(),
        })
        .best_selected_joke(joke(subject))
    };
    let err = state.apply_all([worker("x"), worker("y")]).unwrap_err();
    assert!(
        matches!(&err, StateError::ConcurrentWrite { field } if field == "best_selected_joke"),
        "{err:?}"
    );
    assert!(state.jokes.is_empty(), "the whole superstep is refused");
}

#[test]
fn best_joke_of_no_jokes_is_an_error() {
    let err = best_joke(&OverallState::default()).unwrap_err();
    assert!(
        matches!(
            err,
            RunError::Node {
                node: "best_joke",
                ..
            }
        ),
        "{err}"
    );
}
