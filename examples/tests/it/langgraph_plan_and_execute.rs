//! Plan-and-execute, end to end: the streamed node path of the replan loop
//! and the state it leaves (`past_steps`, `operator.add` over tuples), the
//! recursion limit stopping a plan too long for it, and the nodes' errors.

use state_core::{State, StateError};
use state_examples::langgraph::plan_and_execute::{
    CannedModels, PlanExecute, QUESTION, RECURSION_LIMIT, build_graph, demo_models, execute_step,
    should_end,
};
use state_examples::langgraph::{NodeFailure, Step, updates};
use state_graph::{END, GraphError, StreamMode};
use std::sync::Arc;

fn pair(task: &str, result: &str) -> (String, String) {
    (task.to_owned(), result.to_owned())
}

fn nodes(steps: &[Step]) -> Vec<&str> {
    steps.iter().map(|s| s.node.as_str()).collect()
}

#[tokio::test]
async fn the_graph_loops_through_agent_and_replan_until_it_answers() {
    let models = demo_models();
    let app = build_graph(models.clone()).unwrap();
    let input = PlanExecute::delta().input(QUESTION);
    let (steps, outcome) = updates(app.stream(input, StreamMode::UPDATES))
        .await
        .unwrap();
    assert!(!outcome.is_interrupted());
    let state = outcome.into_state();

    assert_eq!(
        nodes(&steps),
        ["planner", "agent", "replan", "agent", "replan"]
    );
    assert_eq!(state.input, QUESTION);
    assert_eq!(
        state.past_steps, models.results,
        "both steps, in the order done"
    );
    // The planner wrote the whole plan; the first replan kept only the step
    // left to do; the last one answered.
    assert_eq!(steps[0].update, serde_json::json!({"plan": models.steps}));
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

    // `invoke` runs the same graph to the same state.
    let invoked = app
        .invoke(PlanExecute::delta().input(QUESTION))
        .await
        .unwrap();
    assert_eq!(invoked, state);
}

/// Canned models for a plan of `n` steps, each with its result.
fn long_plan(n: usize) -> CannedModels {
    let steps: Vec<String> = (1..=n).map(|i| format!("step {i}")).collect();
    CannedModels {
        results: steps
            .iter()
            .map(|s| (s.clone(), format!("{s} done")))
            .collect(),
        steps,
        answer: "all done".into(),
    }
}

#[tokio::test]
async fn the_recursion_limit_stops_a_plan_too_long_for_it() {
    // A plan of n steps takes 2n + 1 supersteps: 20 steps (41) fit the
    // tutorial's limit of 50, though not LangGraph's default of 25...
    assert_eq!(RECURSION_LIMIT, 50);
    let state = build_graph(long_plan(20))
        .unwrap()
        .invoke(PlanExecute::delta().input("go"))
        .await
        .unwrap();
    assert_eq!(state.past_steps.len(), 20);
    assert_eq!(state.response, "all done");
    let err = build_graph(long_plan(20))
        .unwrap()
        .with_recursion_limit(state_graph::DEFAULT_RECURSION_LIMIT)
        .invoke(PlanExecute::delta().input("go"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, GraphError::RecursionLimit { limit: 25 }),
        "{err}"
    );

    // ... and 30 steps (61) do not fit 50.
    let err = build_graph(long_plan(30))
        .unwrap()
        .invoke(PlanExecute::delta().input("go"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, GraphError::RecursionLimit { limit: 50 }),
        "{err}"
    );
    assert!(err.to_string().contains("50 supersteps"), "{err}");

    // Streamed, the updates up to the limit arrive before the error.
    let mut stream = build_graph(demo_models())
        .unwrap()
        .with_recursion_limit(4)
        .stream(PlanExecute::delta().input(QUESTION), StreamMode::UPDATES);
    let mut seen = vec![];
    let err = loop {
        use futures::StreamExt;
        match stream.next().await.expect("the stream ends with the error") {
            Ok(state_graph::Event::Update { node, .. }) => seen.push(node),
            Ok(_) => {}
            Err(err) => break err,
        }
    };
    assert_eq!(seen, ["planner", "agent", "replan", "agent"]);
    assert!(
        matches!(err, GraphError::RecursionLimit { limit: 4 }),
        "{err}"
    );
}

#[tokio::test]
async fn a_step_without_a_canned_result_fails_the_agent_node() {
    let mut models = demo_models();
    models.results.pop();
    let err = build_graph(models)
        .unwrap()
        .invoke(PlanExecute::delta().input(QUESTION))
        .await
        .unwrap_err();
    assert_eq!(err.node(), Some("agent"));
    let GraphError::Node { source, .. } = &err else {
        panic!("{err}")
    };
    let failure = source.downcast_ref::<NodeFailure>().unwrap();
    assert!(
        failure.reason.contains("Find the hometown"),
        "{}",
        failure.reason
    );
}

#[tokio::test]
async fn executing_an_empty_or_unknown_plan_is_an_error() {
    let models = Arc::new(demo_models());
    let state = Arc::new(PlanExecute::default());
    let err = execute_step(models.clone(), state).await.unwrap_err();
    assert_eq!(err.node, "agent", "{err}");

    let mut state = PlanExecute::default();
    state.apply(PlanExecute::delta().plan(["dance"])).unwrap();
    assert_eq!(should_end(&state), "agent");
    let err = execute_step(models, Arc::new(state)).await.unwrap_err();
    assert!(err.to_string().contains("dance"), "{err}");
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
