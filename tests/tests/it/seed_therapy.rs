//! The therapy agent (seed 002): the input / reducer / loaded / turn-scoped
//! lifecycle table, `AgentInput` -> state -> `AgentOutput`, the crisis gate
//! routing, and the parallel extractors writing `diagnostics` in one
//! superstep, run on `state_examples::therapy`.

use serde_json::json;
use state_core::{Delta, Scope, State, StateError};
use state_examples::therapy::{
    self, AgentInput, Channel, Checkpointer, CrisisAssessment, Diagnostics, LlmClient, MemoryMode,
    Message, MessageRole, ModeType, Progress, ResponseKind, Routing, TherapyAgent, TherapyState,
    Turn, WorkflowContext, WorkingMemoryEntry,
};

const SESSION: &str = "s-1";

/// The walk-through's user and memories, in the default memory mode.
fn context() -> WorkflowContext {
    WorkflowContext {
        memory_mode: MemoryMode::default(),
        ..therapy::demo_context()
    }
}

fn state_with(message: &str) -> TherapyState {
    TherapyState {
        message: message.to_owned(),
        ..TherapyState::default()
    }
}

fn nodes(turn: &Turn) -> Vec<Vec<&'static str>> {
    turn.steps
        .iter()
        .map(|step| step.writes.iter().map(|(node, _)| *node).collect())
        .collect()
}

// --- The lifecycle table ---------------------------------------------------

#[test]
fn the_state_has_the_documents_fields_in_order() {
    assert_eq!(
        TherapyState::keys(),
        [
            "message",
            "channel",
            "user_id",
            "session_id",
            "installed_skills",
            "history",
            "transcript",
            "working_memory",
            "memory",
            "progress",
            "crisis",
            "routing",
            "response",
            "diagnostics",
        ]
    );
}

#[test]
fn each_lifecycle_class_maps_to_a_scope_and_a_reducer() {
    let schema = TherapyState::schema();
    let row = |name: &str| {
        let field = schema.field(name).unwrap();
        (field.reducer, field.scope)
    };
    // Input: written every turn by build_initial_state.
    for name in [
        "message",
        "channel",
        "user_id",
        "session_id",
        "installed_skills",
    ] {
        assert_eq!(row(name), ("replace", Scope::Turn), "{name}");
        assert!(schema.field(name).unwrap().doc.starts_with("Input."));
    }
    // Reducer-backed: operator.add and _merge_dicts, carried across turns.
    assert_eq!(row("history"), ("append", Scope::Persistent));
    assert_eq!(row("transcript"), ("append", Scope::Persistent));
    assert_eq!(row("progress"), ("merge", Scope::Persistent));
    assert_eq!(row("diagnostics"), ("merge", Scope::Persistent));
    // Loaded per turn by load_memory_node.
    assert_eq!(row("working_memory"), ("replace", Scope::Turn));
    assert_eq!(row("memory"), ("replace", Scope::Turn));
    // Turn-scoped.
    for name in ["crisis", "routing", "response"] {
        assert_eq!(row(name), ("replace", Scope::Turn), "{name}");
    }
    // Groups without a reducer are turn-scoped throughout.
    for group in [
        therapy::Memory::schema(),
        Routing::schema(),
        therapy::Response::schema(),
    ] {
        assert!(
            group.fields.iter().all(|f| f.scope == Scope::Turn),
            "{}",
            group.name
        );
    }
}

#[test]
fn the_markdown_table_shows_the_merged_groups_by_dotted_path() {
    let md = TherapyState::schema().to_markdown();
    for row in [
        "| `progress` | `Progress` | merge | persistent |",
        "| `progress.stage` | `String` | replace | persistent | `\"opening\"` | Conversation arc: opening, deepening, stabilizing, closing. |",
        "| `progress.exercise_step` | `Option<u32>` | replace | persistent |",
        "| `diagnostics.extract_facts_ms` | `Option<f64>` | replace | persistent |",
        "| `crisis` | `CrisisAssessment` | replace | turn |",
        "| `message` | `String` | replace | turn |",
    ] {
        assert!(md.contains(row), "missing {row}\n{md}");
    }
    let leaves = TherapyState::leaf_keys();
    for path in [
        "progress.turn_count",
        "progress.exercise_type",
        "diagnostics.load_memory_ms",
        "diagnostics.extract_procedural_ms",
        "history",
    ] {
        assert!(leaves.iter().any(|leaf| leaf == path), "{path}");
    }
    let routing = Routing::schema().to_markdown();
    assert!(
        routing.contains("| `mode_source` | `String` | replace | turn | `\"default\"` |"),
        "{routing}"
    );
}

#[test]
fn defaults_are_the_reset_values() {
    assert_eq!(
        TherapyState::default().to_json().unwrap(),
        json!({
            "message": "",
            "channel": "TEST",
            "user_id": null,
            "session_id": null,
            "installed_skills": [],
            "history": [],
            "transcript": [],
            "working_memory": [],
            "memory": {"summary": "", "procedural_rules": [], "proactive_recall_enabled": false},
            "progress": {"turn_count": 0, "stage": "opening", "exercise_type": null, "exercise_step": null},
            "crisis": {"level": 0, "confidence": 0.0, "reason": "", "needs_crisis_response": false, "needs_clarification": false},
            "routing": {"route": "therapeutic", "mode": "supportive", "mode_source": "default", "mode_type": "THERAPEUTIC", "modality": null},
            "response": {"text": "", "kind": "THERAPEUTIC", "guidance": ""},
            "diagnostics": {"load_memory_ms": null, "crisis_gate_ms": null, "extract_facts_ms": null, "extract_procedural_ms": null},
        })
    );
}

#[test]
fn begin_turn_resets_input_loaded_and_turn_scoped_fields_and_keeps_the_reducer_backed_ones() {
    let agent = TherapyAgent::new(context());
    let mut saver = Checkpointer::default();
    saver
        .run_turn(
            &agent,
            &AgentInput::new("Let's do a breathing exercise.", Some(SESSION)),
        )
        .unwrap();
    let mut state = saver.get(SESSION).unwrap().unwrap();
    let before = state.clone();
    assert_eq!(state.routing.mode, "guided_exercise");
    assert!(!state.working_memory.is_empty());
    assert!(!state.response.text.is_empty());

    state.begin_turn();
    let fresh = TherapyState::default();
    assert_eq!(state.message, fresh.message);
    assert_eq!(state.session_id, None);
    assert_eq!(state.working_memory, fresh.working_memory);
    assert_eq!(state.memory, fresh.memory);
    assert_eq!(state.crisis, CrisisAssessment::default());
    assert_eq!(state.routing, Routing::default());
    assert_eq!(state.response, fresh.response);
    // Kept: the checkpoint's accumulated lists and merged groups.
    assert_eq!(state.history, before.history);
    assert_eq!(state.transcript, before.transcript);
    assert_eq!(state.progress, before.progress);
    assert_eq!(
        state.progress.exercise_type.as_deref(),
        Some(therapy::EXERCISE)
    );
    assert_eq!(state.diagnostics, before.diagnostics);
}

// --- The public contract: AgentInput -> state -> AgentOutput -----------

#[test]
fn build_initial_state_emits_only_the_user_turn_for_a_checkpointed_caller() {
    let mut checkpoint = TherapyState::default();
    checkpoint
        .apply(
            TherapyState::delta()
                .history(vec![
                    Message::user("hi"),
                    Message::assistant("hello", "supportive"),
                ])
                .progress(
                    Progress::delta()
                        .turn_count(1)
                        .stage("opening")
                        .exercise_type(therapy::EXERCISE)
                        .exercise_step(2),
                ),
        )
        .unwrap();
    let input = AgentInput {
        channel: Channel::Whatsapp,
        user_id: Some("u".into()),
        installed_skills: vec!["journaling".into()],
        ..AgentInput::new("I'm back", Some(SESSION))
    };
    let delta = therapy::build_initial_state(&input, Some(&checkpoint));
    assert_eq!(
        delta.fields(),
        [
            "message",
            "channel",
            "user_id",
            "session_id",
            "installed_skills",
            "history",
            "transcript",
            "working_memory",
            "progress",
        ]
    );
    assert_eq!(
        delta.get_history().and_then(state_core::Written::update),
        Some(&vec![Message::user("I'm back")])
    );
    assert_eq!(
        serde_json::to_value(&delta).unwrap()["progress"],
        json!({"turn_count": 2}),
        "only the per-turn counter; the exercise is left to the merge"
    );

    let mut state = checkpoint.clone();
    state.begin_turn();
    state.apply(delta).unwrap();
    assert_eq!(state.message, "I'm back");
    assert_eq!(state.channel, Channel::Whatsapp);
    assert_eq!(state.user_id.as_deref(), Some("u"));
    assert_eq!(state.session_id.as_deref(), Some(SESSION));
    assert_eq!(state.installed_skills, ["journaling"]);
    assert_eq!(state.history.len(), 3, "appended to the checkpoint's list");
    assert_eq!(state.progress.turn_count, 2, "derived from the checkpoint");
    assert_eq!(
        state.progress.exercise_type.as_deref(),
        Some(therapy::EXERCISE)
    );
    assert_eq!(state.progress.exercise_step, Some(2));
}

#[test]
fn a_one_shot_caller_brings_its_history_and_turn_count_is_counted_from_it() {
    let input = AgentInput {
        history: vec![
            Message::user("one"),
            Message::assistant("a", "supportive"),
            Message::user("two"),
            Message::assistant("b", "reflective"),
        ],
        working_memory: vec![WorkingMemoryEntry::Legacy("Likes tea.".into())],
        ..AgentInput::new("three", None)
    };
    let mut state = TherapyState::default();
    state
        .apply(therapy::build_initial_state(&input, None))
        .unwrap();
    assert_eq!(state.progress.turn_count, 3);
    let contents: Vec<&str> = state.history.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(contents, ["one", "a", "two", "b", "three"]);
    assert_eq!(state.transcript, state.history);
    assert_eq!(state.working_memory, input.working_memory);

    // The whole turn: the caller's memory entry is kept beside the loaded ones.
    let turn = TherapyAgent::new(context()).run_turn(None, &input).unwrap();
    assert_eq!(turn.state.progress.turn_count, 3);
    assert_eq!(
        turn.state.working_memory.first(),
        Some(&WorkingMemoryEntry::Legacy("Likes tea.".into()))
    );
    assert_eq!(turn.state.history.len(), 6);
}

#[test]
fn state_to_output_exposes_the_decisions_not_the_state() {
    let agent = TherapyAgent::new(context());
    let turn = agent
        .run_turn(
            None,
            &AgentInput::new("Why does anxiety feel so physical?", None),
        )
        .unwrap();
    let state = &turn.state;
    let output = &turn.output;
    assert_eq!(output, &therapy::state_to_output(state, true));
    assert_eq!(output.response_text, state.response.text);
    assert_eq!(output.response_type, ResponseKind::Therapeutic);
    assert_eq!(output.crisis, state.crisis);
    assert_eq!(
        (output.mode.as_str(), output.mode_source.as_str()),
        ("psychoeducation", "keyword")
    );
    assert_eq!(output.mode_type, ModeType::Therapeutic);
    assert!(output.should_persist_memory);
    assert_eq!(output.diagnostics, state.diagnostics);
    let json = serde_json::to_value(output).unwrap();
    let keys: Vec<&String> = json.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "response_text",
            "response_type",
            "crisis",
            "mode",
            "mode_type",
            "mode_source",
            "should_persist_memory",
            "diagnostics",
        ]
    );
    assert_eq!(json["response_type"], "THERAPEUTIC");
}

// --- The crisis gate ------------------------------------------------------

#[test]
fn the_crisis_gate_assesses_and_routes() {
    let ctx = WorkflowContext::default();
    let cases = [
        (
            "I had a long day.",
            0,
            therapy::ROUTE_THERAPEUTIC,
            "supportive",
            "default",
        ),
        (
            "I can't go on like this.",
            1,
            therapy::ROUTE_THERAPEUTIC,
            "clarifying",
            "crisis_gate",
        ),
        (
            "Sometimes I hurt myself.",
            2,
            therapy::ROUTE_CRISIS,
            "supportive",
            "crisis_gate",
        ),
        (
            "I want to end my life.",
            3,
            therapy::ROUTE_CRISIS,
            "supportive",
            "crisis_gate",
        ),
    ];
    for (message, level, route, mode, source) in cases {
        let delta = therapy::crisis_gate_node(&state_with(message), &ctx);
        assert_eq!(
            delta.fields(),
            ["crisis", "routing", "diagnostics"],
            "{message}"
        );
        let mut state = state_with(message);
        state.apply(delta).unwrap();
        let crisis = &state.crisis;
        assert_eq!(crisis.level, level, "{message}");
        assert_eq!(crisis.needs_crisis_response, level >= 2, "{message}");
        assert_eq!(crisis.needs_clarification, level == 1, "{message}");
        assert_eq!(state.routing.route, route, "{message}");
        assert_eq!(state.routing.mode, mode, "{message}");
        assert_eq!(state.routing.mode_source, source, "{message}");
        let crisis_branch = route == therapy::ROUTE_CRISIS;
        assert_eq!(
            therapy::route_after_crisis_gate(&state),
            if crisis_branch {
                therapy::CRISIS_RESPONSE
            } else {
                therapy::SELECT_MODE
            }
        );
        if crisis_branch {
            assert_eq!(state.routing.mode_type, ModeType::Crisis);
            assert_eq!(state.routing.modality.as_deref(), Some("PFA"));
        }
        assert_eq!(state.diagnostics.crisis_gate_ms, Some(0.8));
    }
    let logged: Vec<u8> = ctx
        .crisis_log_backend
        .entries()
        .iter()
        .map(|entry| entry.level)
        .collect();
    assert_eq!(logged, [2, 3], "only crisis responses are logged");
}

#[test]
fn a_crisis_turn_takes_the_crisis_branch_and_skips_the_extractors() {
    let agent = TherapyAgent::new(context());
    let input = AgentInput::new("I want to kill myself.", Some(SESSION));
    let turn = agent.run_turn(None, &input).unwrap();
    assert_eq!(
        nodes(&turn),
        [
            vec![therapy::BUILD_INITIAL_STATE],
            vec![therapy::LOAD_MEMORY],
            vec![therapy::CRISIS_GATE],
            vec![therapy::CRISIS_RESPONSE],
            vec![therapy::FINALIZE_TURN],
        ]
    );
    assert_eq!(turn.output.response_type, ResponseKind::Crisis);
    assert_eq!(turn.output.mode_type, ModeType::Crisis);
    assert_eq!(turn.output.mode_source, "crisis_gate");
    assert!(!turn.output.should_persist_memory);
    assert!(turn.output.crisis.needs_crisis_response);
    assert_eq!(turn.state.progress.stage, "stabilizing");
    assert_eq!(turn.state.diagnostics.extract_facts_ms, None);
    assert!(
        agent.context.memory_store.facts().len() == 1,
        "nothing extracted"
    );
    let log = agent.context.crisis_log_backend.entries();
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].session_id.as_deref(), Some(SESSION));
    assert_eq!(log[0].level, 3);
}

// --- Mode selection --------------------------------------------------------

#[test]
fn the_dispatcher_picks_the_mode_by_keyword_llm_or_default() {
    let with_llm = WorkflowContext {
        llm_client: Some(LlmClient),
        ..WorkflowContext::default()
    };
    let without = WorkflowContext::default();
    let pick = |message: &str, ctx: &WorkflowContext| {
        let mut state = state_with(message);
        state.apply(therapy::crisis_gate_node(&state, ctx)).unwrap();
        state.apply(therapy::select_mode_node(&state, ctx)).unwrap();
        (
            state.routing.mode,
            state.routing.mode_source,
            state.routing.modality,
            state.routing.route,
        )
    };
    let keyword = pick("My mother died in spring.", &without);
    assert_eq!(
        keyword,
        (
            "supportive".into(),
            "keyword".into(),
            Some("grief".into()),
            "therapeutic".into()
        ),
        "the route the gate wrote is carried forward"
    );
    assert_eq!(
        pick("I'm torn, maybe I should move.", &without).0,
        "reflective"
    );
    let llm = pick("The weather is grey.", &with_llm);
    assert_eq!((llm.0.as_str(), llm.1.as_str()), ("reflective", "llm"));
    let default = pick("The weather is grey.", &without);
    assert_eq!(
        (default.0.as_str(), default.1.as_str(), default.2),
        ("supportive", "default", None)
    );
    let clarify = pick("I just want to disappear.", &with_llm);
    assert_eq!(
        (clarify.0.as_str(), clarify.1.as_str()),
        ("clarifying", "crisis_gate"),
        "the gate's mode stands"
    );
}

#[test]
fn routing_has_no_reducer_two_writers_in_one_step_conflict() {
    let mut state = TherapyState::default();
    let before = state.clone();
    let gate = TherapyState::delta().routing(Routing {
        route: therapy::ROUTE_CRISIS.into(),
        ..Routing::default()
    });
    let dispatcher = TherapyState::delta().routing(Routing::default());
    let err = state.apply_all([gate, dispatcher]).unwrap_err();
    assert_eq!(
        err,
        StateError::ConcurrentWrite {
            field: "routing".into()
        }
    );
    assert_eq!(state, before);
}

// --- Parallel extractors ------------------------------------------------------

#[test]
fn the_extractors_write_their_own_diagnostics_keys_in_one_superstep() {
    let agent = TherapyAgent::new(context());
    let input = AgentInput::new(
        "My cat is called Miso. Please keep replies brief.",
        Some(SESSION),
    );
    let turn = agent.run_turn(None, &input).unwrap();
    let last = turn.steps.last().unwrap();
    let writers: Vec<&str> = last.writes.iter().map(|(node, _)| *node).collect();
    assert_eq!(
        writers,
        [therapy::EXTRACT_FACTS, therapy::EXTRACT_PROCEDURAL],
        "one superstep, two nodes"
    );
    for (node, delta) in &last.writes {
        assert_eq!(delta.fields(), ["diagnostics"], "{node}");
    }
    let facts = serde_json::to_value(&last.writes[0].1).unwrap();
    let rules = serde_json::to_value(&last.writes[1].1).unwrap();
    assert_eq!(facts, json!({"diagnostics": {"extract_facts_ms": 14.0}}));
    assert_eq!(
        rules,
        json!({"diagnostics": {"extract_procedural_ms": 11.0}})
    );
    let merged = therapy::merged(last).unwrap();
    assert_eq!(
        serde_json::to_value(&merged).unwrap(),
        json!({"diagnostics": {"extract_facts_ms": 14.0, "extract_procedural_ms": 11.0}})
    );
    // Every node's key is there: no node overwrote another's.
    assert_eq!(
        turn.state.diagnostics,
        Diagnostics {
            load_memory_ms: Some(2.0),
            crisis_gate_ms: Some(0.8),
            extract_facts_ms: Some(14.0),
            extract_procedural_ms: Some(11.0),
        }
    );
    assert_eq!(
        agent.context.memory_store.facts()[1],
        "My cat is called Miso."
    );
    assert_eq!(
        agent.context.memory_store.procedural_rules(),
        ["Please keep replies brief."]
    );
}

#[test]
fn two_writers_of_one_diagnostics_key_in_a_superstep_are_refused() {
    let mut state = TherapyState::default();
    state
        .apply(TherapyState::delta().diagnostics(Diagnostics::delta().load_memory_ms(2.0)))
        .unwrap();
    let before = state.clone();
    let a = TherapyState::delta().diagnostics(Diagnostics::delta().extract_facts_ms(1.0));
    let b = TherapyState::delta().diagnostics(Diagnostics::delta().extract_facts_ms(2.0));
    let err = state.apply_all([a.clone(), b.clone()]).unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"concurrent writes to "diagnostics.extract_facts_ms" in one step; give the field a reducer"#
    );
    assert_eq!(state, before);
    assert_eq!(a.merge(b).unwrap_err(), err);
    // One after the other (two supersteps) is fine: the later write wins.
    state
        .apply_json(json!({"diagnostics": {"extract_facts_ms": 1.0}}))
        .unwrap();
    state
        .apply_json(json!({"diagnostics": {"extract_facts_ms": 2.0}}))
        .unwrap();
    assert_eq!(state.diagnostics.extract_facts_ms, Some(2.0));
    assert_eq!(state.diagnostics.load_memory_ms, Some(2.0));
}

#[test]
fn memory_mode_off_loads_nothing_and_persists_nothing() {
    let agent = TherapyAgent::new(WorkflowContext {
        memory_mode: MemoryMode::Off,
        ..context()
    });
    let turn = agent
        .run_turn(None, &AgentInput::new("My sister called today.", None))
        .unwrap();
    assert!(turn.state.working_memory.is_empty());
    assert_eq!(turn.state.memory.summary, "memory off");
    assert!(!turn.output.should_persist_memory);
    assert_eq!(
        turn.steps.last().unwrap().writes[0].0,
        therapy::FINALIZE_TURN
    );
    assert_eq!(agent.context.memory_store.facts().len(), 1);
}

// --- Working memory -----------------------------------------------------------

#[test]
fn working_memory_entries_are_structured_and_formatted_on_demand() {
    let semantic = WorkingMemoryEntry::semantic("I have a sister named Sarah.");
    let episodic =
        WorkingMemoryEntry::episodic("talked about loss after my dog died.", &["grief"], false);
    let legacy = WorkingMemoryEntry::Legacy("Prefers evenings.".into());
    assert_eq!(
        therapy::format_working_memory_entry(&semantic),
        "Previously noted: I have a sister named Sarah."
    );
    assert_eq!(
        therapy::format_working_memory_entry(&episodic),
        "Last session (grief): talked about loss after my dog died."
    );
    assert_eq!(
        therapy::format_working_memory_entry(&legacy),
        "Prefers evenings."
    );
    let entries = vec![semantic, episodic, legacy];
    assert_eq!(
        serde_json::to_value(&entries).unwrap(),
        json!([
            {"type": "semantic", "evidence_quote": "I have a sister named Sarah."},
            {"type": "episodic", "summary": "talked about loss after my dog died.", "primary_themes": ["grief"], "is_catch_up": false},
            "Prefers evenings.",
        ])
    );
    // An older checkpoint with a legacy string entry still loads.
    let mut snapshot = TherapyState::default().to_json().unwrap();
    snapshot["working_memory"] = serde_json::to_value(&entries).unwrap();
    let state = TherapyState::from_json(snapshot).unwrap();
    assert_eq!(state.working_memory, entries);
    assert_eq!(
        therapy::format_working_memory_entries(&state.working_memory)
            .lines()
            .count(),
        3
    );
}

// --- A whole session -------------------------------------------------------------

#[test]
fn a_checkpointed_session_walks_the_documented_lifecycle() {
    let agent = TherapyAgent::new(context());
    let mut saver = Checkpointer::default();
    let mut say = |message: &str| {
        saver
            .run_turn(&agent, &AgentInput::new(message, Some(SESSION)))
            .unwrap()
    };

    // Turn 1: memory loaded and recalled; a style rule is extracted.
    let t1 = say("Hi. I've been feeling low since my dog died. Please keep it short.");
    assert_eq!(
        nodes(&t1),
        [
            vec![therapy::BUILD_INITIAL_STATE],
            vec![therapy::LOAD_MEMORY],
            vec![therapy::CRISIS_GATE],
            vec![therapy::SELECT_MODE],
            vec![therapy::THERAPEUTIC_RESPONSE],
            vec![therapy::FINALIZE_TURN],
            vec![therapy::EXTRACT_FACTS, therapy::EXTRACT_PROCEDURAL],
        ]
    );
    assert_eq!(t1.state.progress.turn_count, 1);
    assert_eq!(t1.state.progress.stage, "opening");
    assert!(t1.state.memory.procedural_rules.is_empty());
    assert!(t1.state.memory.proactive_recall_enabled);
    assert!(
        t1.output
            .response_text
            .ends_with("Last time we talked about grief.")
    );
    assert_eq!(t1.state.routing.modality.as_deref(), Some("grief"));

    // Turn 2: last turn's rule is loaded; an exercise starts.
    let t2 = say("Could we try a breathing exercise?");
    assert_eq!(
        t2.state.memory.procedural_rules,
        ["Please keep it short."],
        "loaded per turn from the store"
    );
    assert!(t2.state.response.guidance.contains("Please keep it short."));
    assert_eq!(
        (
            t2.state.routing.mode.as_str(),
            t2.state.routing.mode_source.as_str()
        ),
        ("guided_exercise", "keyword")
    );
    assert_eq!(
        t2.state.progress.exercise_type.as_deref(),
        Some(therapy::EXERCISE)
    );
    assert_eq!(t2.state.progress.exercise_step, Some(1));
    assert!(t2.output.response_text.starts_with("Step 1 of 3"));

    // Turn 3: the exercise persists across the turn and goes on.
    let t3 = say("Okay.");
    assert_eq!(t3.state.progress.exercise_step, Some(2));
    assert_eq!(t3.state.routing.mode_source, "default");

    // Turn 4: a crisis. The exercise fields are untouched (progress merges,
    // and the crisis branch writes only the stage).
    let t4 = say("Honestly, I want to end my life.");
    assert_eq!(t4.state.routing.route, therapy::ROUTE_CRISIS);
    assert_eq!(t4.output.response_type, ResponseKind::Crisis);
    assert_eq!(t4.state.progress.turn_count, 4);
    assert_eq!(t4.state.progress.stage, "stabilizing");
    assert_eq!(
        t4.state.progress.exercise_type.as_deref(),
        Some(therapy::EXERCISE)
    );
    assert_eq!(t4.state.progress.exercise_step, Some(2));
    assert!(!t4.output.should_persist_memory);
    // diagnostics persists and merges: the extractors did not run, so
    // their keys still hold turn 3's timings.
    assert_eq!(
        t4.state.diagnostics.extract_facts_ms,
        t3.state.diagnostics.extract_facts_ms
    );

    // Turn 5: the crisis fields are reset; the exercise resumes and
    // completes, which clears it.
    let t5 = say("I'm safe, my sister Sarah is here. Let's finish.");
    assert_eq!(t5.state.crisis.level, 0);
    assert_eq!(t5.state.routing.route, therapy::ROUTE_THERAPEUTIC);
    assert!(t5.output.response_text.starts_with("Step 3 of 3"));
    assert_eq!(t5.state.progress.exercise_type, None);
    assert_eq!(t5.state.progress.exercise_step, None);
    assert!(
        t5.state
            .working_memory
            .contains(&WorkingMemoryEntry::semantic(
                "I have a sister named Sarah."
            )),
        "the stored fact matches 'sister'"
    );

    // Turn 6: closing.
    let t6 = say("Thank you, goodbye.");
    assert_eq!(t6.state.routing.mode, "closing");
    assert_eq!(t6.state.progress.stage, "closing");
    assert_eq!(t6.state.progress.turn_count, 6);

    // history and transcript: each turn appended one user and one
    // assistant entry to the checkpoint's list, never rebuilt it.
    let history = &t6.state.history;
    assert_eq!(history.len(), 12);
    assert!(
        history
            .iter()
            .step_by(2)
            .all(|m| m.role == MessageRole::User)
    );
    assert!(
        history
            .iter()
            .skip(1)
            .step_by(2)
            .all(|m| m.role == MessageRole::Assistant)
    );
    assert_eq!(
        history[7].mode.as_deref(),
        Some("supportive"),
        "the crisis reply"
    );
    assert_eq!(t6.state.transcript, *history);
    assert_eq!(agent.context.crisis_log_backend.entries().len(), 1);

    // The checkpoint is the state, through JSON.
    let saved = saver.get(SESSION).unwrap().unwrap();
    assert_eq!(saved, t6.state);
}

#[test]
fn dotted_paths_reach_into_every_group() {
    let agent = TherapyAgent::new(context());
    let mut state = agent
        .run_turn(
            None,
            &AgentInput::new("Could we do a grounding exercise?", None),
        )
        .unwrap()
        .state;
    assert_eq!(state.get("routing.mode").unwrap(), json!("guided_exercise"));
    assert_eq!(state.get("progress.exercise_step").unwrap(), json!(1));
    assert_eq!(state.get("crisis.level").unwrap(), json!(0));
    assert_eq!(
        state.field_ref::<Option<String>>("progress.exercise_type"),
        Some(&Some(therapy::EXERCISE.to_owned()))
    );
    state.set("progress.stage", json!("closing")).unwrap();
    assert_eq!(state.progress.stage, "closing");
    let err = state.get("routing.moed").unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"`TherapyState` has no field `routing.moed`; did you mean `routing.mode`?"#
    );
}
