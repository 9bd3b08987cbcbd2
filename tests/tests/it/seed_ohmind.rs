//! OHMind (seed 000): the document's helpers as deltas, its routing and
//! task-plan tables, human validation, and retries up to the limit, run on
//! `state_examples::ohmind`.

use serde_json::{Value, json};
use state_core::{Delta, Message, MessageKind, Scope, State, StateError};
use state_examples::ohmind::{
    self, AgentState, AgentStateDelta, Dict, FINISH, MAX_RETRIES, MemorySaver, Ohmind, RunError,
    SUPERVISOR,
};

/// A node and the state right after its delta was applied.
struct Snapshot {
    node: String,
    state: AgentState,
}

/// Runs one turn like `Ohmind::run_turn`, but keeps the state after every
/// node, so that each transition can be checked.
async fn drive(app: &mut Ohmind, state: &mut AgentState, user: Option<&str>) -> Vec<Snapshot> {
    if let Some(text) = user {
        state
            .apply(ohmind::update_state_with_message(
                Message::human(text),
                None,
            ))
            .unwrap();
    }
    let mut node = ohmind::entry_node(state).to_owned();
    let mut snapshots = Vec::new();
    loop {
        assert!(snapshots.len() < ohmind::RECURSION_LIMIT, "runaway turn");
        let delta = app.run_node(&node, state).await.unwrap();
        state.apply(delta).unwrap();
        snapshots.push(Snapshot {
            node: node.clone(),
            state: state.clone(),
        });
        match ohmind::route(state) {
            Some(next) => node = next,
            None => return snapshots,
        }
    }
}

fn nodes(snapshots: &[Snapshot]) -> Vec<&str> {
    snapshots.iter().map(|s| s.node.as_str()).collect()
}

fn dict(value: Value) -> Dict {
    value.as_object().cloned().unwrap()
}

fn last_text(state: &AgentState) -> String {
    state.messages.last().map(Message::text).unwrap_or_default()
}

// --- The schema and create_initial_state --------------------------------

#[test]
fn the_schema_has_the_documents_eighteen_fields_in_order() {
    assert_eq!(
        AgentState::keys(),
        [
            "messages",
            "next",
            "mcp_results",
            "rag_context",
            "validation_required",
            "validation_approved",
            "validation_message",
            "current_operation",
            "operation_metadata",
            "artifacts",
            "error",
            "retry_count",
            "task_plan",
            "task_plan_path",
            "current_step",
            "completed_steps",
            "task_plan_needs_approval",
            "task_plan_approved",
        ]
    );
    let schema = AgentState::schema();
    let reducer = |name: &str| schema.field(name).unwrap().reducer;
    assert_eq!(reducer("messages"), "add_messages");
    assert_eq!(reducer("mcp_results"), "merge");
    assert_eq!(reducer("artifacts"), "merge");
    assert_eq!(reducer("completed_steps"), "append");
    assert_eq!(reducer("next"), "replace");
    assert_eq!(reducer("operation_metadata"), "replace");
    // The checkpointer carries everything: the validation and plan flags
    // must outlive the turn that set them.
    assert!(schema.fields.iter().all(|f| f.scope == Scope::Persistent));
    assert_eq!(
        schema.field("validation_approved").unwrap().doc,
        "User approval status (None=pending)."
    );
}

#[test]
fn create_initial_state_matches_the_python_dict() {
    let state = ohmind::create_initial_state("hello");
    let expected = json!({
        "messages": [{"type": "human", "content": "hello", "id": null}],
        "next": "supervisor",
        "mcp_results": {},
        "rag_context": [],
        "validation_required": false,
        "validation_approved": null,
        "validation_message": "",
        "current_operation": "Initializing",
        "operation_metadata": {},
        "artifacts": {},
        "error": null,
        "retry_count": 0,
        "task_plan": null,
        "task_plan_path": null,
        "current_step": 0,
        "completed_steps": [],
        "task_plan_needs_approval": false,
        "task_plan_approved": null,
    });
    assert_eq!(state.to_json().unwrap(), expected);
}

// --- The helpers: deltas instead of copies -------------------------------

#[test]
fn update_state_with_message_appends_and_routes_only_when_asked() {
    let mut state = ohmind::create_initial_state("hi");
    let plain = ohmind::update_state_with_message(Message::ai("one"), None);
    assert_eq!(plain.fields(), ["messages"]);
    state.apply(plain).unwrap();
    assert_eq!(state.next, SUPERVISOR, "next untouched without next_agent");

    let routed = ohmind::update_state_with_message(Message::ai("two"), Some("hem_agent"));
    assert_eq!(routed.fields(), ["messages", "next"]);
    state.apply(routed).unwrap();
    assert_eq!(state.next, "hem_agent");
    let texts: Vec<String> = state.messages.iter().map(Message::text).collect();
    assert_eq!(texts, ["hi", "one", "two"]);
}

#[test]
fn should_continue_validation_truth_table() {
    for (required, approved, expected) in [
        (false, None, false),
        (true, None, true),
        (true, Some(true), false),
        (true, Some(false), false),
        (false, Some(true), false),
    ] {
        let state = AgentState {
            validation_required: required,
            validation_approved: approved,
            ..AgentState::default()
        };
        assert_eq!(
            ohmind::should_continue_validation(&state),
            expected,
            "required={required}, approved={approved:?}"
        );
    }
}

#[test]
fn mark_validation_required_writes_five_keys_and_resets_a_previous_answer() {
    let metadata = dict(json!({"next_agent": "md_agent", "tool": "gromacs_md"}));
    let delta = ohmind::mark_validation_required("Run 10 ns of MD", metadata.clone());
    assert_eq!(
        delta.fields(),
        [
            "next",
            "validation_required",
            "validation_approved",
            "validation_message",
            "operation_metadata"
        ]
    );
    let mut state = AgentState {
        validation_approved: Some(true),
        ..AgentState::default()
    };
    state.apply(delta).unwrap();
    assert!(state.validation_required);
    assert_eq!(state.validation_approved, None, "an old approval is reset");
    assert_eq!(state.validation_message, "Run 10 ns of MD");
    assert_eq!(state.operation_metadata, metadata);
    assert_eq!(state.next, FINISH, "waits for the user");
    assert!(ohmind::should_continue_validation(&state));
    assert_eq!(state.next_agent(), Some("md_agent"));
}

#[test]
fn mark_validation_complete_routes_by_the_decision() {
    let mut approved = AgentState {
        validation_required: true,
        ..AgentState::default()
    };
    let mut rejected = approved.clone();
    approved
        .apply(ohmind::mark_validation_complete(true, "md_agent"))
        .unwrap();
    rejected
        .apply(ohmind::mark_validation_complete(false, "md_agent"))
        .unwrap();
    assert_eq!(
        (
            approved.validation_required,
            approved.validation_approved,
            approved.next.as_str()
        ),
        (false, Some(true), "md_agent")
    );
    assert_eq!(
        (
            rejected.validation_required,
            rejected.validation_approved,
            rejected.next.as_str()
        ),
        (false, Some(false), SUPERVISOR)
    );
}

#[test]
fn mcp_results_and_artifacts_merge_by_name() {
    let mut state = AgentState::default();
    state
        .apply(ohmind::add_mcp_result("hem_design", json!({"n": 2})))
        .unwrap();
    state
        .apply(ohmind::add_mcp_result(
            "orca_single_point",
            json!({"gap": 5.1}),
        ))
        .unwrap();
    state
        .apply(ohmind::add_mcp_result("hem_design", json!({"n": 3})))
        .unwrap();
    assert_eq!(
        Value::Object(state.mcp_results.clone()),
        json!({"hem_design": {"n": 3}, "orca_single_point": {"gap": 5.1}})
    );

    // Two tool nodes in one superstep: both results kept. The Python's two
    // full copies would have been a conflict on every key.
    state
        .apply_all([
            ohmind::add_artifact("chart", json!(1)),
            ohmind::add_artifact("molecule", json!(2)),
        ])
        .unwrap();
    assert_eq!(
        Value::Object(state.artifacts.clone()),
        json!({"chart": 1, "molecule": 2})
    );
}

#[test]
fn two_helpers_that_both_route_conflict_instead_of_one_winning() {
    let a = ohmind::mark_validation_complete(true, "md_agent");
    let b = ohmind::update_state_with_message(Message::ai("x"), Some(SUPERVISOR));
    assert_eq!(
        a.clone().merge(b.clone()).unwrap_err(),
        StateError::ConcurrentWrite {
            field: "next".into()
        }
    );
    let mut state = ohmind::create_initial_state("hi");
    let before = state.clone();
    assert!(state.apply_all([a, b]).is_err());
    assert_eq!(state, before, "a refused step changes nothing");
}

#[test]
fn a_langgraph_style_update_dict_goes_through_the_same_reducers() {
    let mut state = AgentState::default();
    state.apply(ohmind::add_mcp_result("a", json!(1))).unwrap();
    state
        .apply_json(json!({"mcp_results": {"b": 2}, "next": "hem_agent", "completed_steps": [1]}))
        .unwrap();
    assert_eq!(
        Value::Object(state.mcp_results.clone()),
        json!({"a": 1, "b": 2})
    );
    assert_eq!(state.next, "hem_agent");
    assert_eq!(state.completed_steps, [1]);
    let typo = state.apply_json(json!({"nxt": "FINISH"})).unwrap_err();
    assert_eq!(
        typo.to_string(),
        "`AgentState` has no field `nxt`; did you mean `next`?"
    );
}

// --- The task-plan table ---------------------------------------------------

fn plan(steps: &[(&str, &str)]) -> Dict {
    let steps: Vec<Value> = steps
        .iter()
        .zip(1..)
        .map(|((agent, description), step)| json!({"step": step, "agent": agent, "description": description}))
        .collect();
    dict(json!({"goal": "g", "steps": steps}))
}

#[test]
fn task_plan_transitions_follow_the_table() {
    // Leftovers of an earlier plan, to see create_task_plan reset them.
    let mut state = AgentState {
        completed_steps: vec![7, 8],
        current_step: 9,
        ..AgentState::default()
    };
    let two = plan(&[("hem_agent", "design"), ("qm_agent", "dft")]);

    // task_plan=None, complex query detected: create task plan.
    state
        .apply(ohmind::create_task_plan(two.clone(), "task_plans/p.md"))
        .unwrap();
    assert_eq!(state.task_plan.as_ref(), Some(&two));
    assert_eq!(state.task_plan_path.as_deref(), Some("task_plans/p.md"));
    assert_eq!(
        (state.current_step, state.completed_steps.clone()),
        (0, vec![])
    );

    // current_step=0, plan created: execute step 1.
    state.apply(ohmind::start_first_step()).unwrap();
    assert_eq!(state.current_step, 1);

    // current_step=N, step N completes: add N, increment.
    state.apply(ohmind::complete_step(&state)).unwrap();
    assert_eq!(
        (state.current_step, state.completed_steps.clone()),
        (2, vec![1])
    );
    assert!(!ohmind::all_steps_complete(&state));
    state.apply(ohmind::complete_step(&state)).unwrap();
    assert_eq!(
        (state.current_step, state.completed_steps.clone()),
        (3, vec![1, 2])
    );

    // completed_steps full: all steps done, clear plan.
    assert!(ohmind::all_steps_complete(&state));
    state.apply(ohmind::clear_task_plan()).unwrap();
    assert_eq!(state.task_plan, None);
    assert_eq!(state.task_plan_path, None);
    assert_eq!(
        (state.current_step, state.completed_steps.clone()),
        (0, vec![])
    );
}

#[test]
fn plan_steps_reads_the_free_form_plan_and_skips_malformed_steps() {
    let mut raw = plan(&[("hem_agent", "design")]);
    if let Some(Value::Array(steps)) = raw.get_mut("steps") {
        steps.push(json!({"step": "two"}));
    }
    let state = AgentState {
        task_plan: Some(raw),
        completed_steps: vec![1],
        ..AgentState::default()
    };
    let steps = state.plan_steps();
    assert_eq!(steps.len(), 1);
    assert_eq!((steps[0].step, steps[0].agent.as_str()), (1, "hem_agent"));
    let markdown = state.plan_markdown().unwrap();
    assert!(
        markdown.contains("- [x] 1. design (hem_agent)"),
        "{markdown}"
    );
}

// --- The routing table -----------------------------------------------------

#[test]
fn route_follows_the_routing_table() {
    let agent = AgentState {
        next: "hem_agent".into(),
        ..AgentState::default()
    };
    assert_eq!(ohmind::route(&agent).as_deref(), Some("hem_agent"));

    let finished = AgentState {
        next: FINISH.into(),
        ..AgentState::default()
    };
    assert_eq!(ohmind::route(&finished), None, "FINISH, no plan: end");

    let with_plan = AgentState {
        task_plan: Some(plan(&[("hem_agent", "design")])),
        ..finished.clone()
    };
    assert_eq!(
        ohmind::route(&with_plan).as_deref(),
        Some(SUPERVISOR),
        "FINISH, plan active: next step"
    );

    let waiting = AgentState {
        validation_required: true,
        ..with_plan.clone()
    };
    assert_eq!(ohmind::route(&waiting), None, "waits for the user");

    let failed = AgentState {
        error: Some("boom".into()),
        ..with_plan
    };
    assert_eq!(ohmind::route(&failed), None, "max retries: end");
}

#[test]
fn entry_node_sends_answers_to_the_node_that_reads_them() {
    let mut state = AgentState::default();
    assert_eq!(ohmind::entry_node(&state), SUPERVISOR);
    state.validation_required = true;
    assert_eq!(ohmind::entry_node(&state), ohmind::HUMAN_VALIDATION);
    state.validation_required = false;
    state.task_plan = Some(Dict::new());
    state.task_plan_needs_approval = true;
    assert_eq!(ohmind::entry_node(&state), ohmind::PLAN_APPROVAL);
}

// --- Whole turns -------------------------------------------------------------

#[tokio::test]
async fn a_simple_query_goes_supervisor_agent_end() {
    let mut app = Ohmind::new();
    let mut state =
        ohmind::create_initial_state("What is the HOMO LUMO gap of benzyltrimethylammonium?");
    let turn = drive(&mut app, &mut state, None).await;
    assert_eq!(nodes(&turn), [SUPERVISOR, "qm_agent"]);
    assert_eq!(turn[0].state.next, "qm_agent", "supervisor → agent_name");
    assert_eq!(turn[0].state.next_agent(), Some("qm_agent"));
    assert_eq!(state.next, FINISH);
    assert!(state.mcp_results.contains_key("orca_single_point"));
    assert!(state.artifacts.contains_key("orbital_chart"));
    let answer = state.messages.last().unwrap();
    assert_eq!(
        (answer.kind(), answer.name()),
        (MessageKind::Ai, Some("qm_agent"))
    );
}

#[tokio::test]
async fn small_talk_is_answered_by_the_supervisor() {
    let mut app = Ohmind::new();
    let mut state = ohmind::create_initial_state("Hello there");
    let turn = drive(&mut app, &mut state, None).await;
    assert_eq!(nodes(&turn), [SUPERVISOR]);
    assert_eq!(state.next, FINISH);
    assert!(state.mcp_results.is_empty());
}

#[tokio::test]
async fn validation_waits_for_the_user_then_runs_on_approval() {
    let mut app = Ohmind::new();
    let mut state = ohmind::create_initial_state("Simulate the conductivity with MD");
    let ask = drive(&mut app, &mut state, None).await;
    assert_eq!(nodes(&ask), [SUPERVISOR, "md_agent"]);
    assert!(ohmind::should_continue_validation(&state));
    assert_eq!(state.next, FINISH);
    assert!(!state.mcp_results.contains_key("gromacs_md"), "not run yet");

    let approve = drive(&mut app, &mut state, Some("yes please")).await;
    assert_eq!(nodes(&approve), [ohmind::HUMAN_VALIDATION, "md_agent"]);
    let decided = &approve[0].state;
    assert_eq!(
        (
            decided.validation_required,
            decided.validation_approved,
            decided.next.as_str()
        ),
        (false, Some(true), "md_agent"),
        "ValidationWait → AgentExecution"
    );
    assert!(state.mcp_results.contains_key("gromacs_md"));
    assert_eq!(
        state.validation_approved, None,
        "the approval was used once"
    );
}

#[tokio::test]
async fn a_rejected_validation_goes_back_to_the_supervisor_and_ends() {
    let mut app = Ohmind::new();
    let mut state = ohmind::create_initial_state("Run an MD simulation");
    drive(&mut app, &mut state, None).await;
    let reject = drive(&mut app, &mut state, Some("no, cancel")).await;
    assert_eq!(nodes(&reject), [ohmind::HUMAN_VALIDATION, SUPERVISOR]);
    assert_eq!(
        reject[0].state.next, SUPERVISOR,
        "ValidationWait → Supervisor"
    );
    assert_eq!(state.validation_approved, Some(false));
    assert_eq!(state.next, FINISH);
    assert!(!state.mcp_results.contains_key("gromacs_md"));
    assert!(last_text(&state).starts_with("Cancelled"));
}

#[tokio::test]
async fn a_complex_query_runs_its_plan_step_by_step_then_summarizes() {
    let mut app = Ohmind::new();
    let mut state = ohmind::create_initial_state(
        "Design HEM cations, compute their HOMO LUMO gap, and find papers",
    );
    let turn = drive(&mut app, &mut state, None).await;
    assert_eq!(
        nodes(&turn),
        [
            SUPERVISOR,
            ohmind::TASK_PLANNER,
            SUPERVISOR,
            "hem_agent",
            SUPERVISOR,
            "qm_agent",
            SUPERVISOR,
            "rag_agent",
            SUPERVISOR,
            ohmind::SUMMARY,
        ]
    );
    // (current_step, completed_steps) after each node.
    let progress: Vec<(u32, Vec<u32>)> = turn
        .iter()
        .map(|s| (s.state.current_step, s.state.completed_steps.clone()))
        .collect();
    assert_eq!(
        progress,
        [
            (0, vec![]),
            (0, vec![]),
            (1, vec![]),
            (2, vec![1]),
            (2, vec![1]),
            (3, vec![1, 2]),
            (3, vec![1, 2]),
            (4, vec![1, 2, 3]),
            (4, vec![1, 2, 3]),
            (0, vec![]),
        ]
    );
    let planned = &turn[1].state;
    assert_eq!(planned.plan_steps().len(), 3);
    assert!(!planned.task_plan_needs_approval, "auto-execute");
    assert!(planned.task_plan_path.is_some());
    // Every agent ended with FINISH, and the active plan sent it back.
    assert!(turn[3].state.next == FINISH && turn[4].node == SUPERVISOR);
    assert_eq!(state.task_plan, None, "plan cleared");
    assert_eq!(state.task_plan_path, None);
    assert!(last_text(&state).starts_with("All 3 steps complete."));
    for tool in ["hem_design", "orca_single_point", "rag_search"] {
        assert!(state.mcp_results.contains_key(tool), "{tool}");
    }
    assert_eq!(state.rag_context.len(), 2);
}

#[tokio::test]
async fn a_failed_tool_is_retried_and_the_budget_resets_on_success() {
    let mut app = Ohmind::new();
    app.fail_next("orca_single_point", 2);
    let mut state = ohmind::create_initial_state("Compute the HOMO energy with DFT");
    let turn = drive(&mut app, &mut state, None).await;
    assert_eq!(
        nodes(&turn),
        [
            SUPERVISOR,
            "qm_agent",
            ohmind::ERROR_HANDLER,
            SUPERVISOR,
            "qm_agent",
            ohmind::ERROR_HANDLER,
            SUPERVISOR,
            "qm_agent",
        ]
    );
    assert!(turn[1].state.error.is_some(), "AgentExecution → Error");
    assert_eq!(turn[2].state.retry_count, 1);
    assert_eq!(turn[2].state.next, SUPERVISOR, "Error → Supervisor: retry");
    assert_eq!(turn[3].state.next, "qm_agent", "the supervisor re-routes");
    assert_eq!(turn[5].state.retry_count, 2);
    assert_eq!((state.error.clone(), state.retry_count), (None, 0));
    assert!(state.mcp_results.contains_key("orca_single_point"));
}

#[tokio::test]
async fn a_tool_that_keeps_failing_ends_the_turn_after_max_retries() {
    let mut app = Ohmind::new();
    app.fail_next("rag_search", 100);
    let mut state = ohmind::create_initial_state("Find literature on degradation");
    let turn = drive(&mut app, &mut state, None).await;
    let attempts = turn.iter().filter(|s| s.node == "rag_agent").count();
    assert_eq!(attempts as u32, 1 + MAX_RETRIES);
    assert_eq!(turn.last().unwrap().node, ohmind::ERROR_HANDLER);
    assert_eq!(state.retry_count, MAX_RETRIES);
    assert_eq!(state.next, FINISH, "Error → End: max retries");
    assert_eq!(
        state.error.as_deref(),
        Some("rag_search: MCP server timed out")
    );
    assert!(last_text(&state).contains(&format!("after {MAX_RETRIES} retries")));

    // The next request starts with a fresh budget.
    let next = drive(&mut app, &mut state, Some("Compute the HOMO LUMO gap")).await;
    assert_eq!(nodes(&next), [SUPERVISOR, "qm_agent"]);
    assert_eq!((state.error.clone(), state.retry_count), (None, 0));
}

#[tokio::test]
async fn a_plan_stopped_by_max_retries_resumes_with_a_fresh_budget() {
    let mut app = Ohmind::new();
    app.fail_next("orca_single_point", 1 + MAX_RETRIES);
    let mut state = ohmind::create_initial_state("Design cations and compute the HOMO gap");
    let stopped = drive(&mut app, &mut state, None).await;
    assert_eq!(stopped.last().unwrap().node, ohmind::ERROR_HANDLER);
    assert_eq!(
        (state.current_step, state.completed_steps.clone()),
        (2, vec![1])
    );
    assert!(state.task_plan.is_some(), "the plan is kept");

    let resumed = drive(&mut app, &mut state, Some("try again")).await;
    assert_eq!(resumed[0].state.retry_count, 0);
    assert_eq!(resumed[0].state.error, None);
    assert_eq!(resumed[1].node, "qm_agent", "step 2 again");
    assert_eq!(resumed.last().unwrap().node, ohmind::SUMMARY);
}

#[tokio::test]
async fn a_plan_can_wait_for_approval() {
    let mut app = Ohmind::new().with_plan_approval();
    let mut state = ohmind::create_initial_state("Design cations and compute the HOMO gap");
    let plan = drive(&mut app, &mut state, None).await;
    assert_eq!(nodes(&plan), [SUPERVISOR, ohmind::TASK_PLANNER]);
    assert!(state.task_plan_needs_approval && state.awaiting_plan_approval());
    assert_eq!(state.task_plan_approved, None);

    let approved = drive(&mut app, &mut state, Some("yes")).await;
    assert_eq!(approved[0].node, ohmind::PLAN_APPROVAL);
    assert_eq!(approved[0].state.task_plan_approved, Some(true));
    assert!(!approved[0].state.task_plan_needs_approval);
    assert_eq!(approved.last().unwrap().node, ohmind::SUMMARY);
    assert_eq!(state.task_plan, None);

    let mut app = Ohmind::new().with_plan_approval();
    let mut state = ohmind::create_initial_state("Design cations and compute the HOMO gap");
    drive(&mut app, &mut state, None).await;
    let rejected = drive(&mut app, &mut state, Some("no")).await;
    assert_eq!(nodes(&rejected), [ohmind::PLAN_APPROVAL]);
    assert_eq!(
        (state.task_plan.clone(), state.task_plan_approved),
        (None, Some(false))
    );
    assert!(state.mcp_results.is_empty(), "nothing ran");
}

#[tokio::test]
async fn a_rejected_step_stops_its_plan() {
    let mut app = Ohmind::new();
    let mut state = ohmind::create_initial_state("Design cations and simulate their conductivity");
    let turn = drive(&mut app, &mut state, None).await;
    assert_eq!(turn.last().unwrap().node, "md_agent", "step 2 asks first");
    assert!(ohmind::should_continue_validation(&state));
    assert_eq!(state.completed_steps, [1]);
    drive(&mut app, &mut state, Some("no")).await;
    assert_eq!(state.task_plan, None);
    assert_eq!(state.next, FINISH);
}

#[tokio::test]
async fn run_turn_records_each_nodes_delta_and_checkpoints_round_trip() {
    let mut app = Ohmind::new();
    let mut state = ohmind::create_initial_state("hi");
    let mut memory = MemorySaver::default();
    app.run(&mut state).await.unwrap();
    memory.put("t", &state).unwrap();
    let mut restored = memory.get_state("t").unwrap().unwrap();
    assert_eq!(restored, state);
    assert!(memory.get_state("other").unwrap().is_none());

    let steps = app
        .run_turn(&mut restored, "Compute the HOMO LUMO gap")
        .await
        .unwrap();
    let deltas: Vec<&AgentStateDelta> = steps.iter().map(|s| &s.delta).collect();
    assert_eq!(steps.len(), 2);
    assert!(deltas[1].fields().any(|key| key == "mcp_results"));
    // Replaying the recorded deltas on the saved state gives the same result
    // (message ids included: they were assigned by the nodes).
    let mut replay = memory.get_state("t").unwrap().unwrap();
    // The user's question: the agent's run wrote its tool call, the
    // tool's answer and its own answer after it.
    let question = restored
        .messages
        .iter()
        .rev()
        .find(|m| m.kind() == MessageKind::Human)
        .cloned()
        .unwrap();
    assert_eq!(question.text(), "Compute the HOMO LUMO gap");
    replay
        .apply(ohmind::update_state_with_message(question, None))
        .unwrap();
    for step in steps {
        replay.apply(step.delta).unwrap();
    }
    assert_eq!(replay, restored);
}

#[tokio::test]
async fn an_unknown_node_is_an_error() {
    let mut app = Ohmind::new();
    let state = AgentState::default();
    let error = app.run_node("nope", &state).await.unwrap_err();
    assert!(
        matches!(&error, RunError::UnknownNode(node) if node == "nope"),
        "{error:?}"
    );
}
