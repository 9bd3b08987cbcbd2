//! Nested states: a field whose type derives `AgentState`, with
//! `#[reducer(merge)]`, takes the inner delta; scopes, supersteps, JSON,
//! paths and the schema compose. Ported from the therapy agent's groups
//! (seed 002): progress, routing, diagnostics, crisis, response.

use serde::{Deserialize, Serialize};
use serde_json::json;
use state_core::{AgentState, Delta, Scope, State, StateError};
use std::collections::BTreeMap;

/// Session progress: per-turn counters beside a multi-turn exercise.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Progress {
    /// Turns in this session so far (re-derived every turn).
    #[scope(turn)]
    pub turn_count: u32,
    /// Conversation stage for this turn.
    #[scope(turn)]
    #[default("opening")]
    pub stage: String,
    /// Multi-turn exercise identifier: survives turns.
    pub exercise_type: Option<String>,
    /// Step within the exercise: survives turns.
    pub exercise_step: Option<u32>,
}

/// How this turn is routed: every field is per turn.
#[derive(AgentState, Debug, Clone, PartialEq)]
#[state(scope = turn)]
pub struct Routing {
    /// "crisis" or "therapeutic".
    pub route: String,
    /// The therapeutic mode selected.
    pub mode: String,
    /// keyword, llm, default or crisis_gate.
    pub mode_source: String,
    /// THERAPEUTIC, OPERATIONAL or CRISIS.
    pub mode_type: ModeType,
    /// MI, CBT, ACT, ... or none.
    pub modality: Option<String>,
}

/// The category of a mode.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ModeType {
    /// A therapeutic mode.
    #[default]
    Therapeutic,
    /// Operational (help, settings).
    Operational,
    /// The crisis branch.
    Crisis,
}

/// The crisis gate's assessment: replaced whole, per turn.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CrisisAssessment {
    /// 0 (none) to 3 (acute).
    pub level: u8,
    /// The classifier's confidence.
    pub confidence: f64,
    /// Why.
    pub reason: String,
    /// Whether the crisis branch must answer.
    pub needs_crisis_response: bool,
    /// Whether to ask a clarifying question.
    pub needs_clarification: bool,
}

/// The reply being built this turn.
#[derive(AgentState, Debug, Clone, PartialEq)]
#[state(scope = turn)]
pub struct Response {
    /// The reply text.
    pub text: String,
    /// THERAPEUTIC or CRISIS.
    pub kind: String,
    /// Turn-specific prompt shaping hint.
    pub guidance: String,
}

/// The therapy agent's state.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct TherapyState {
    /// Conversation turns, appended.
    #[reducer(append)]
    pub history: Vec<String>,
    /// Per-turn and cross-turn progress, merged field by field.
    #[reducer(merge)]
    pub progress: Progress,
    /// Safety assessment from the crisis gate.
    #[scope(turn)]
    pub crisis: CrisisAssessment,
    /// Routing for this turn.
    #[reducer(merge)]
    #[scope(turn)]
    pub routing: Routing,
    /// The reply.
    #[reducer(merge)]
    #[scope(turn)]
    pub response: Response,
    /// Timings written independently by nodes.
    #[reducer(merge)]
    pub diagnostics: BTreeMap<String, f64>,
}

fn timings(pairs: &[(&str, f64)]) -> BTreeMap<String, f64> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
}

#[test]
fn a_nested_delta_changes_only_the_inner_fields_it_writes() {
    let mut state = TherapyState::default();
    state
        .apply(TherapyState::delta().progress(Progress::delta().exercise_type("breathing")))
        .unwrap();
    state
        .apply(TherapyState::delta().progress(Progress::delta().stage("closing")))
        .unwrap();
    assert_eq!(state.progress.exercise_type.as_deref(), Some("breathing"));
    assert_eq!(state.progress.stage, "closing");
    assert_eq!(state.progress.turn_count, 0);
}

#[test]
fn deltas_nest_in_json() {
    let mut state = TherapyState::default();
    state
        .apply_json(json!({"progress": {"stage": "closing", "exercise_step": 2}}))
        .unwrap();
    assert_eq!(state.progress.stage, "closing");
    assert_eq!(state.progress.exercise_step, Some(2));
    let delta = TherapyState::delta().progress(Progress::delta().turn_count(3));
    assert_eq!(
        serde_json::to_value(&delta).unwrap(),
        json!({"progress": {"turn_count": 3}})
    );
    let back: TherapyStateDelta =
        serde_json::from_value(json!({"progress": {"turn_count": 3}})).unwrap();
    assert_eq!(back, delta);
}

#[test]
fn json_errors_name_the_inner_path() {
    let mut state = TherapyState::default();
    let before = state.clone();
    let err = state
        .apply_json(json!({"history": ["hi"], "progress": {"stagee": "closing"}}))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"`TherapyState` has no field `progress.stagee`; did you mean `progress.stage`?"#
    );
    let err = state
        .apply_json(json!({"progress": {"turn_count": "three"}}))
        .unwrap_err();
    assert_eq!(err.field(), Some("progress.turn_count"));
    let err = state.apply_json(json!({"progress": 3})).unwrap_err();
    assert_eq!(err.field(), Some("progress"));
    assert_eq!(state, before);
}

#[test]
fn begin_turn_resets_a_turn_scoped_group_wholesale_and_inner_turn_fields_of_a_persistent_one() {
    let mut state = TherapyState::default();
    state
        .apply(
            TherapyState::delta()
                .progress(
                    Progress::delta()
                        .turn_count(4)
                        .stage("working")
                        .exercise_type("grounding")
                        .exercise_step(1),
                )
                .routing(
                    Routing::delta()
                        .route("therapeutic")
                        .mode("guided_exercise"),
                )
                .diagnostics(timings(&[("load_memory_ms", 3.0)])),
        )
        .unwrap();
    state.begin_turn();
    assert_eq!(state.progress.turn_count, 0);
    assert_eq!(state.progress.stage, "opening");
    assert_eq!(state.progress.exercise_type.as_deref(), Some("grounding"));
    assert_eq!(state.progress.exercise_step, Some(1));
    assert_eq!(state.routing, Routing::default());
    assert_eq!(state.diagnostics.len(), 1, "persistent map untouched");
}

#[test]
fn parallel_writes_to_different_inner_keys_merge() {
    let mut state = TherapyState::default();
    state
        .apply_all([
            TherapyState::delta().routing(Routing::delta().route("therapeutic")),
            TherapyState::delta().routing(Routing::delta().mode("reflective")),
        ])
        .unwrap();
    assert_eq!(state.routing.route, "therapeutic");
    assert_eq!(state.routing.mode, "reflective");
}

#[test]
fn parallel_writes_to_one_inner_replace_key_conflict_with_the_full_path() {
    let mut state = TherapyState::default();
    let before = state.clone();
    let a = TherapyState::delta()
        .history(vec!["a".to_owned()])
        .routing(Routing::delta().route("therapeutic"));
    let b = TherapyState::delta().routing(Routing::delta().route("crisis"));
    let err = state.apply_all([a.clone(), b.clone()]).unwrap_err();
    assert_eq!(
        err,
        StateError::ConcurrentWrite {
            field: "routing.route".into()
        }
    );
    assert_eq!(state, before);
    assert_eq!(a.merge(b).unwrap_err(), err);
}

#[test]
fn dotted_paths_reach_into_groups() {
    let mut state = TherapyState::default();
    state
        .set("progress.exercise_type", json!("breathing"))
        .unwrap();
    assert_eq!(
        state.get("progress.exercise_type").unwrap(),
        json!("breathing")
    );
    assert_eq!(
        state.field_ref::<Option<String>>("progress.exercise_type"),
        Some(&Some("breathing".to_owned()))
    );
    *state.field_mut::<String>("routing.route").unwrap() = "crisis".into();
    assert_eq!(state.routing.route, "crisis");
    let err = state.get("routing.rout").unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"`TherapyState` has no field `routing.rout`; did you mean `routing.route`?"#
    );
    assert!(state.contains_key("response.guidance"));
    assert!(!state.contains_key("response.guide"));
}

/// Every dynamic entry point names the state a misspelt key was looked up
/// in: the outer one, for a path into a nested state.
#[test]
fn unknown_keys_name_the_outer_state_at_every_entry_point() {
    let expected = "`TherapyState` has no field `routing.rout`; did you mean `routing.route`?";
    let mut state = TherapyState::default();
    let before = state.clone();
    let set = state.set("routing.rout", json!("x")).unwrap_err();
    assert_eq!(set.to_string(), expected);
    let apply = state
        .apply_json(json!({"routing": {"rout": "x"}}))
        .unwrap_err();
    assert_eq!(apply.to_string(), expected);
    let delta = TherapyStateDelta::from_json(json!({"routing": {"rout": "x"}})).unwrap_err();
    assert_eq!(delta.to_string(), expected);
    let from_json = TherapyState::from_json(json!({"routing": {"rout": "x"}})).unwrap_err();
    assert_eq!(from_json.to_string(), expected);
    let top = TherapyState::from_json(json!({"histroy": []})).unwrap_err();
    assert_eq!(
        top.to_string(),
        "`TherapyState` has no field `histroy`; did you mean `history`?"
    );
    let text = serde_json::from_str::<TherapyStateDelta>(r#"{"routing": {"rout": "x"}}"#);
    let text = text.unwrap_err().to_string();
    assert!(text.starts_with(expected), "{text}");
    assert_eq!(state, before);
}

#[test]
fn schema_and_leaf_keys_describe_nested_fields_by_path() {
    let schema = TherapyState::schema();
    let progress = schema.field("progress").unwrap();
    assert_eq!(progress.nested().map(|s| s.name), Some("Progress"));
    assert!(schema.field("diagnostics").unwrap().nested().is_none());
    let leaves = TherapyState::leaf_keys();
    assert!(leaves.contains(&"progress.turn_count".to_owned()));
    assert!(leaves.contains(&"routing.modality".to_owned()));
    assert!(leaves.contains(&"diagnostics".to_owned()));
    assert!(!leaves.contains(&"progress".to_owned()));
    let paths = schema.leaves();
    let (path, info) = paths
        .iter()
        .find(|(path, _)| path == "progress.exercise_type")
        .unwrap();
    assert_eq!(path, "progress.exercise_type");
    assert_eq!(info.scope, Scope::Persistent);
    let md = schema.to_markdown();
    assert!(md.contains("| `progress.stage` | `String` | replace | turn | `\"opening\"` | Conversation stage for this turn. |"), "{md}");
}

#[test]
fn an_overwrite_replaces_a_group_wholesale() {
    let mut state = TherapyState::default();
    state
        .apply(TherapyState::delta().progress(Progress::delta().exercise_type("x")))
        .unwrap();
    state
        .apply_json(json!({"progress": {"__overwrite__": {"stage": "closing"}}}))
        .unwrap();
    assert_eq!(state.progress.exercise_type, None);
    assert_eq!(state.progress.stage, "closing");
}

/// Three turns of the therapy graph.
#[test]
fn three_turns_of_the_therapy_agent() {
    let mut state = TherapyState::default();

    // Turn 1: a guided exercise starts.
    state.begin_turn();
    state
        .apply(
            TherapyState::delta()
                .history(vec!["user: I feel tense".to_owned()])
                .progress(Progress::delta().turn_count(1)),
        )
        .unwrap();
    state
        .apply(
            TherapyState::delta()
                .crisis(CrisisAssessment {
                    level: 0,
                    confidence: 0.97,
                    ..Default::default()
                })
                .routing(
                    Routing::delta()
                        .route("therapeutic")
                        .mode("guided_exercise")
                        .mode_source("keyword"),
                )
                .diagnostics(timings(&[("crisis_gate_ms", 4.0)])),
        )
        .unwrap();
    // Two extractors run in parallel: one superstep, merged diagnostics.
    state
        .apply_all([
            TherapyState::delta().diagnostics(timings(&[("extract_facts_ms", 12.5)])),
            TherapyState::delta().diagnostics(timings(&[("extract_procedural_ms", 9.0)])),
        ])
        .unwrap();
    state
        .apply(
            TherapyState::delta()
                .progress(
                    Progress::delta()
                        .stage("exercise")
                        .exercise_type("box_breathing")
                        .exercise_step(1),
                )
                .response(
                    Response::delta()
                        .text("Let's breathe in for four.")
                        .kind("THERAPEUTIC"),
                ),
        )
        .unwrap();
    assert_eq!(
        state.diagnostics.keys().collect::<Vec<_>>(),
        [
            "crisis_gate_ms",
            "extract_facts_ms",
            "extract_procedural_ms"
        ]
    );

    // Turn 2: routing resets, the exercise carries on.
    state.begin_turn();
    assert_eq!(state.routing, Routing::default());
    assert_eq!(state.response, Response::default());
    assert_eq!(state.crisis, CrisisAssessment::default());
    assert_eq!(
        state.progress.exercise_type.as_deref(),
        Some("box_breathing")
    );
    assert_eq!(state.progress.stage, "opening");
    state
        .apply(TherapyState::delta().progress(Progress::delta().turn_count(2).exercise_step(2)))
        .unwrap();

    // Two nodes race to route: an error naming routing.route, nothing changes.
    let before = state.clone();
    let err = state
        .apply_all([
            TherapyState::delta().routing(Routing::delta().route("therapeutic")),
            TherapyState::delta().routing(Routing::delta().route("crisis")),
        ])
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"concurrent writes to "routing.route" in one step; give the field a reducer"#
    );
    assert_eq!(state, before);

    // Turn 3: the exercise completes.
    state.begin_turn();
    state
        .apply(
            TherapyState::delta().progress(
                Progress::delta()
                    .turn_count(3)
                    .exercise_type(None)
                    .exercise_step(None),
            ),
        )
        .unwrap();
    assert_eq!(state.progress.exercise_type, None);
    assert_eq!(state.history, ["user: I feel tense"]);
    assert_eq!(state.diagnostics.len(), 3);
}

/// A group holding its own message history.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Memory {
    /// Messages of the memory agent.
    #[reducer(add_messages)]
    pub messages: state_core::Messages,
    /// Facts extracted so far.
    #[reducer(append)]
    pub facts: Vec<String>,
}

/// A state whose group can fail to reduce.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct WithMemory {
    /// Appended.
    #[reducer(append)]
    pub log: Vec<String>,
    /// The group.
    #[reducer(merge)]
    pub memory: Memory,
    /// A group replaced whole (no reducer), per turn.
    #[scope(turn)]
    pub snapshot: Memory,
}

#[test]
fn a_group_replaced_whole_is_still_described_by_path() {
    let entries = WithMemory::schema().entries();
    let (_, facts) = entries
        .iter()
        .find(|(path, _)| path == "snapshot.facts")
        .unwrap();
    assert_eq!(facts.scope, Scope::Turn, "reset with its turn-scoped group");
    assert_eq!(facts.reducer, "append");
    assert!(WithMemory::leaf_keys().contains(&"snapshot.messages".to_owned()));
    assert!(!WithMemory::leaf_keys().contains(&"snapshot".to_owned()));
}

#[test]
fn a_failing_inner_reducer_leaves_the_whole_state_unchanged() {
    use state_core::Message;
    let mut state = WithMemory::default();
    state
        .apply(
            WithMemory::delta()
                .memory(Memory::delta().messages(vec![Message::human("hi").with_id("1")])),
        )
        .unwrap();
    let before = state.clone();
    let err = state
        .apply(
            WithMemory::delta().log(vec!["x".to_owned()]).memory(
                Memory::delta()
                    .facts(vec!["f".to_owned()])
                    .messages(vec![Message::remove("nope")]),
            ),
        )
        .unwrap_err();
    assert_eq!(err.field(), Some("memory.messages"));
    assert_eq!(
        state_tests::report(&err),
        r#"field "memory.messages": the reducer refused the update: cannot remove message "nope": no message has that id"#
    );
    assert_eq!(state, before);
    // In a superstep: the second node's removal fails, the first's append
    // is rolled back with it.
    let err = state
        .apply_all([
            WithMemory::delta().memory(Memory::delta().facts(vec!["g".to_owned()])),
            WithMemory::delta().memory(Memory::delta().messages(vec![Message::remove("nope")])),
        ])
        .unwrap_err();
    assert_eq!(err.field(), Some("memory.messages"));
    assert_eq!(state, before);
}

/// A persistent group held by a `replace` field (replaced whole when
/// written) still resets its own turn-scoped fields at a new turn.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct HeldWhole {
    /// Replaced whole, kept across turns.
    pub progress: Progress,
    /// A plain field beside it.
    pub note: String,
}

#[test]
fn begin_turn_reaches_into_a_group_replaced_whole() {
    let mut state = HeldWhole::default();
    state
        .apply_json(json!({"progress": {"stage": "working", "exercise_type": "box"}, "note": "n"}))
        .unwrap();
    state.begin_turn();
    assert_eq!(state.progress.stage, "opening", "inner turn field reset");
    assert_eq!(state.progress.exercise_type.as_deref(), Some("box"));
    assert_eq!(state.note, "n");
}

/// Fields of one nested type, some merged and some held whole: the
/// generated code probes the type once and answers for all of them.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct TwoMemories {
    /// Merged.
    #[reducer(merge)]
    pub left: Memory,
    /// Not a state.
    pub note: String,
    /// Merged, the same type.
    #[reducer(merge)]
    pub right: Memory,
    /// Held whole, the same type.
    pub kept: Memory,
}

#[test]
fn fields_of_one_nested_type_each_link_their_schema_and_reach_their_own_state() {
    let schema = TwoMemories::schema();
    for name in ["left", "right", "kept"] {
        let linked = schema.field(name).unwrap().nested().map(|s| s.name);
        assert_eq!(linked, Some("Memory"), "{name}");
    }
    assert!(schema.field("note").unwrap().nested().is_none());

    let mut state = TwoMemories::default();
    state
        .field_mut::<Vec<String>>("right.facts")
        .unwrap()
        .push("r".into());
    state
        .field_mut::<Vec<String>>("kept.facts")
        .unwrap()
        .push("k".into());
    assert_eq!(state.field_ref::<Vec<String>>("left.facts"), Some(&vec![]));
    assert_eq!(state.right.facts, ["r"]);
    assert_eq!(state.kept.facts, ["k"]);
    assert_eq!(
        state.field_ref::<Memory>("kept").map(|m| m.facts.len()),
        Some(1)
    );
    assert!(
        state.field_ref::<String>("kept.facts").is_none(),
        "wrong type"
    );
    assert!(state.field_ref::<String>("note.x").is_none(), "not a state");
}

/// `from_json` and `set` of a whole nested state name a bad value inside it
/// by its dotted path, as `apply_json` and `set` of a path do.
#[test]
fn a_bad_value_inside_a_nested_state_is_named_by_its_path() {
    let expected = r#"field "progress.turn_count": expected u32, got integer `-1`"#;
    let err = TherapyState::from_json(json!({"progress": {"turn_count": -1}})).unwrap_err();
    assert_eq!(err.field(), Some("progress.turn_count"));
    assert_eq!(err.to_string(), expected);
    let mut state = TherapyState::default();
    let before = state.clone();
    let err = state
        .set("progress", json!({"turn_count": -1}))
        .unwrap_err();
    assert_eq!(err.to_string(), expected);
    let err = state.set("progress", json!(3)).unwrap_err();
    assert_eq!(err.field(), Some("progress"));
    assert_eq!(state, before);
    let err = serde_json::from_value::<TherapyState>(json!({"progress": {"turn_count": -1}}));
    assert_eq!(err.unwrap_err().to_string(), expected);
}
