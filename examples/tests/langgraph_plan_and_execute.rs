//! Plan-and-execute: `past_steps` (`operator.add` over tuples) after a
//! scripted run, the replanner shrinking the plan, and the nodes' errors.

use state_core::{State, StateError};
use state_examples::langgraph::plan_and_execute::{
    PlanExecute, QUESTION, demo_models, execute_step, run, should_end,
};
use state_examples::langgraph::{END, RunError};

fn pair(task: &str, result: &str) -> (String, String) {
    (task.to_owned(), result.to_owned())
}

#[test]
fn the_scripted_run_records_every_step_in_order() {
    let models = demo_models();
    let mut state = PlanExecute::default();
    let steps = run(&models, &mut state, QUESTION).unwrap();

    let nodes: Vec<&str> = steps.iter().map(|s| s.node.as_str()).collect();
    assert_eq!(nodes, ["planner", "agent", "replan", "agent", "replan"]);
    assert_eq!(state.input, QUESTION);
    assert_eq!(
        state.past_steps, models.results,
        "both steps, in the order done"
    );
    // The first replan kept only the step left to do; the last one answered.
    assert_eq!(
        steps[2].update,
        serde_json::json!({"plan": [models.steps[1]]})
    );
    assert_eq!(state.plan, [models.steps[1].clone()]);
    assert_eq!(state.response, models.answer);
    assert_eq!(should_end(&state), END);
    // Each agent step wrote one (task, result) pair: a JSON array of two.
    assert_eq!(
        steps[1].update["past_steps"],
        serde_json::json!([[models.results[0].0, models.results[0].1]])
    );
}

#[test]
fn past_steps_appends_across_a_superstep_and_plan_conflicts() {
    let mut state = PlanExecute::default();
    state
        .apply(PlanExecute::delta().push_past_steps(pair("a", "1")))
        .unwrap();
    state
        .apply_all([
            PlanExecute::delta().push_past_steps(pair("b", "2")),
            PlanExecute::delta().past_steps([pair("c", "3"), pair("d", "4")]),
        ])
        .unwrap();
    assert_eq!(
        state.past_steps,
        [
            pair("a", "1"),
            pair("b", "2"),
            pair("c", "3"),
            pair("d", "4")
        ]
    );
    // As in JSON: a list of two-element lists.
    state
        .apply_json(serde_json::json!({"past_steps": [["e", "5"]]}))
        .unwrap();
    assert_eq!(state.past_steps.last(), Some(&pair("e", "5")));

    let err = state
        .apply_all([
            PlanExecute::delta().plan(["x"]),
            PlanExecute::delta().plan(["y"]),
        ])
        .unwrap_err();
    assert!(matches!(&err, StateError::ConcurrentWrite { field } if field == "plan"));
    assert_eq!(
        state.past_steps.len(),
        5,
        "a refused superstep changes nothing"
    );
}

#[test]
fn executing_an_empty_or_unknown_plan_is_an_error() {
    let models = demo_models();
    let state = PlanExecute::default();
    let err = execute_step(&models, &state).unwrap_err();
    assert!(matches!(err, RunError::Node { node: "agent", .. }), "{err}");

    let mut state = PlanExecute::default();
    state.apply(PlanExecute::delta().plan(["dance"])).unwrap();
    let err = execute_step(&models, &state).unwrap_err();
    assert!(err.to_string().contains("dance"), "{err}");
    assert_eq!(should_end(&state), "agent");
}
