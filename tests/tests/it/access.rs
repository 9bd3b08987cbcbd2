//! Dict-like access (issue 4): get, set, apply_json, to_json, from_json,
//! keys, contains_key, field_ref, field_mut and schema, with every error
//! path and the unchanged-on-error guarantee.

use serde_json::json;
use state_core::{AgentState, Delta, Message, Messages, ReducerKind, Scope, State, StateError};
use std::collections::BTreeMap;

fn keep_max(current: &mut i64, new: i64) {
    *current = (*current).max(new);
}

fn bounded(current: &mut u32, add: u32) -> Result<(), String> {
    let next = *current + add;
    if next > 10 {
        return Err(format!("budget would reach {next}, over 10"));
    }
    *current = next;
    Ok(())
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct Finding {
    id: u32,
    text: String,
}

impl state_core::reducer::HasId for Finding {
    type Id = u32;
    fn item_id(&self) -> Option<&u32> {
        Some(&self.id)
    }
}

/// A state with every kind of reducer.
#[derive(AgentState, Debug, Clone, PartialEq)]
#[state(json_schema)]
pub struct Agent {
    /// Conversation history.
    #[reducer(add_messages)]
    messages: Messages,
    /// Durable record.
    #[reducer(append)]
    transcript: Vec<String>,
    /// Timings by node.
    #[reducer(merge)]
    diagnostics: BTreeMap<String, f64>,
    #[reducer(append_by_id)]
    findings: Vec<Finding>,
    #[reducer(with = keep_max)]
    best: i64,
    #[reducer(with = bounded)]
    budget: u32,
    /// Next node.
    #[scope(turn)]
    #[default("supervisor")]
    next: String,
    error: Option<String>,
}

fn sample() -> Agent {
    let mut state = Agent::default();
    state
        .apply_json(json!({
            "messages": [{"type": "human", "id": "1", "content": "hi"}],
            "transcript": ["hello"],
            "diagnostics": {"llm": 1.5},
            "findings": [{"id": 1, "text": "draft"}],
            "best": 4,
            "budget": 3,
            "next": "tools",
        }))
        .unwrap();
    state
}

#[test]
fn keys_are_field_names_in_declaration_order() {
    assert_eq!(
        Agent::keys(),
        [
            "messages",
            "transcript",
            "diagnostics",
            "findings",
            "best",
            "budget",
            "next",
            "error"
        ]
    );
    let state = sample();
    assert!(state.contains_key("next"));
    assert!(state.contains_key("diagnostics.llm"));
    assert!(!state.contains_key("diagnostics.nope"));
    assert!(!state.contains_key("nxt"));
}

#[test]
fn get_reads_fields_and_paths_as_json() {
    let state = sample();
    assert_eq!(state.get("next").unwrap(), json!("tools"));
    assert_eq!(state.get("transcript").unwrap(), json!(["hello"]));
    assert_eq!(state.get("diagnostics.llm").unwrap(), json!(1.5));
    assert_eq!(state.get("findings.0.text").unwrap(), json!("draft"));
    assert_eq!(state.get("error").unwrap(), json!(null));
    assert_eq!(state.get("messages.0.content").unwrap(), json!("hi"));
    assert_eq!(
        state.get("messages").unwrap(),
        json!([{"type": "human", "id": "1", "content": "hi"}])
    );
}

#[test]
fn get_errors_name_the_key() {
    let state = sample();
    let err = state.get("nxt").unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"`Agent` has no field `nxt`; did you mean `next`?"#
    );
    let err = state.get("diagnostics.gpu").unwrap_err();
    assert_eq!(
        err,
        StateError::Path {
            path: "diagnostics.gpu".into(),
            reason: "no \"gpu\" inside an object with 1 key(s)".into()
        }
    );
    assert!(state.get("next.deeper").is_err(), "a string has no keys");
}

#[test]
fn set_replaces_bypassing_the_reducer() {
    let mut state = sample();
    state.set("transcript", json!(["only"])).unwrap();
    assert_eq!(state.transcript, ["only"], "append is bypassed");
    state.set("best", json!(1)).unwrap();
    assert_eq!(state.best, 1, "keep_max is bypassed");
    state.set("diagnostics.tool", json!(2.0)).unwrap();
    assert_eq!(state.diagnostics["tool"], 2.0);
    state.set("error", json!("boom")).unwrap();
    assert_eq!(state.error.as_deref(), Some("boom"));
    state.set("error", json!(null)).unwrap();
    assert_eq!(state.error, None);
}

#[test]
fn set_errors_leave_the_state_unchanged() {
    let mut state = sample();
    let before = state.clone();
    let err = state.set("best", json!("high")).unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"field "best": expected i64, got string "high""#
    );
    let err = state
        .set("diagnostics", json!({"llm": "slow"}))
        .unwrap_err();
    assert!(
        err.to_string().starts_with(
            r#"field "diagnostics": expected BTreeMap<String, f64>, got an object with 1 key(s): invalid type: string "slow""#
        ),
        "{err}"
    );
    let err = state.set("diagnostics.llm", json!("slow")).unwrap_err();
    assert_eq!(err.field(), Some("diagnostics.llm"));
    let err = state.set("nxt", json!("x")).unwrap_err();
    assert!(
        matches!(err, StateError::UnknownField { ref suggestion, .. } if suggestion.as_deref() == Some("next"))
    );
    assert!(
        state.set("next", json!(null)).is_err(),
        "null is not a String"
    );
    assert_eq!(state, before);
}

#[test]
fn apply_json_goes_through_the_reducers() {
    let mut state = sample();
    state
        .apply_json(json!({
            "transcript": ["again"],
            "diagnostics": {"tool": 0.5},
            "findings": [{"id": 1, "text": "final"}, {"id": 2, "text": "new"}],
            "best": 2,
            "budget": 4,
        }))
        .unwrap();
    assert_eq!(state.transcript, ["hello", "again"]);
    assert_eq!(state.diagnostics.len(), 2);
    assert_eq!(state.findings[0].text, "final");
    assert_eq!(state.findings.len(), 2);
    assert_eq!(state.best, 4, "keep_max kept the larger");
    assert_eq!(state.budget, 7);
}

#[test]
fn apply_json_takes_langgraph_message_updates() {
    let mut state = sample();
    // One message where a list is expected, in OpenAI's shape, as LangGraph allows.
    state
        .apply_json(json!({"messages": {"role": "assistant", "content": "hello", "id": "2"}}))
        .unwrap();
    // A list with a LangChain-shaped update of id 1 and a bare string.
    state
        .apply_json(json!({"messages": [{"type": "human", "id": "1", "content": "hi!"}, "thanks"]}))
        .unwrap();
    let texts: Vec<_> = state.messages.iter().map(Message::text).collect();
    assert_eq!(texts, ["hi!", "hello", "thanks"]);
    // A removal by id, then __remove_all__.
    state
        .apply_json(json!({"messages": [{"type": "remove", "id": "2"}]}))
        .unwrap();
    assert_eq!(state.messages.len(), 2);
    state
        .apply_json(json!({"messages": {"type": "remove", "id": "__remove_all__"}}))
        .unwrap();
    assert!(state.messages.is_empty());
}

#[test]
fn apply_json_accepts_langgraph_overwrite() {
    let mut state = sample();
    state
        .apply_json(json!({"transcript": {"__overwrite__": ["trimmed"]}}))
        .unwrap();
    assert_eq!(state.transcript, ["trimmed"]);
    state
        .apply_json(json!({"transcript": {"type": "__overwrite__", "value": []}}))
        .unwrap();
    assert!(state.transcript.is_empty());
}

#[test]
fn apply_json_is_all_or_nothing() {
    let mut state = sample();
    let before = state.clone();
    // A decode error after valid keys.
    let err = state
        .apply_json(json!({"transcript": ["x"], "best": "high"}))
        .unwrap_err();
    assert_eq!(err.field(), Some("best"));
    // A reducer error after valid keys.
    let err = state
        .apply_json(json!({"transcript": ["x"], "budget": 100}))
        .unwrap_err();
    assert_eq!(
        state_tests::report(&err),
        r#"field "budget": the reducer refused the update: budget would reach 103, over 10"#
    );
    // A removal of an unknown message id, after valid keys.
    let err = state
        .apply_json(json!({"transcript": ["x"], "messages": [{"type": "remove", "id": "nope"}]}))
        .unwrap_err();
    assert_eq!(
        state_tests::report(&err),
        r#"field "messages": the reducer refused the update: cannot remove message "nope": no message has that id"#
    );
    // Unknown key, with a suggestion.
    let err = state.apply_json(json!({"transcipt": ["x"]})).unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"`Agent` has no field `transcipt`; did you mean `transcript`?"#
    );
    // Not an object.
    let err = state.apply_json(json!(["transcript"])).unwrap_err();
    assert!(matches!(err, StateError::NotAnObject { .. }));
    assert_eq!(state, before);
}

#[test]
fn to_json_and_from_json_round_trip() {
    let state = sample();
    let json = state.to_json().unwrap();
    assert_eq!(json["next"], json!("tools"));
    assert_eq!(
        json.as_object().unwrap().keys().collect::<Vec<_>>(),
        Agent::keys().to_vec()
    );
    assert_eq!(Agent::from_json(json).unwrap(), state);
    // serde uses the same shape.
    let text = serde_json::to_string(&state).unwrap();
    assert_eq!(serde_json::from_str::<Agent>(&text).unwrap(), state);
}

#[test]
fn from_json_defaults_missing_fields_and_rejects_unknown() {
    let state = Agent::from_json(json!({"best": 9})).unwrap();
    assert_eq!(state.best, 9);
    assert_eq!(state.next, "supervisor");
    let err = Agent::from_json(json!({"bset": 9})).unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"`Agent` has no field `bset`; did you mean `best`?"#
    );
    assert!(Agent::from_json(json!({"diagnostics.llm": 1.0})).is_err());
    assert!(matches!(
        Agent::from_json(json!(3)),
        Err(StateError::NotAnObject { .. })
    ));
    let err = serde_json::from_value::<Agent>(json!({"best": "x"})).unwrap_err();
    assert!(err.to_string().contains(r#"field "best""#), "{err}");
}

#[test]
fn typed_access_without_json() {
    let mut state = sample();
    assert_eq!(
        state.field_ref::<String>("next").map(String::as_str),
        Some("tools")
    );
    assert_eq!(state.field_ref::<u32>("next"), None, "wrong type");
    assert_eq!(state.field_ref::<String>("nope"), None, "no such field");
    assert_eq!(
        state.field_ref::<f64>("diagnostics.llm"),
        None,
        "no typed access inside a map"
    );
    assert!(state.field_mut::<u32>("best").is_none(), "wrong type");
    assert!(state.field_mut::<i64>("bset").is_none(), "no such field");
    *state.field_mut::<i64>("best").unwrap() = 42;
    assert_eq!(state.best, 42);
    state
        .field_mut::<Vec<String>>("transcript")
        .unwrap()
        .clear();
    assert!(state.transcript.is_empty());
}

#[test]
fn schema_describes_fields_as_written() {
    let schema = Agent::schema();
    assert_eq!(schema.name, "Agent");
    assert_eq!(schema.doc, "A state with every kind of reducer.");
    let names: Vec<_> = schema.fields.iter().map(|f| f.name).collect();
    assert_eq!(names, Agent::keys());
    let next = schema.field("next").unwrap();
    assert_eq!(next.ty, "String");
    assert_eq!(next.reducer, "replace");
    assert_eq!(next.scope, Scope::Turn);
    assert_eq!(next.default, Some("\"supervisor\""));
    assert_eq!(next.doc, "Next node.");
    let diagnostics = schema.field("diagnostics").unwrap();
    assert_eq!(diagnostics.ty, "BTreeMap<String, f64>");
    assert_eq!(diagnostics.reducer, "merge");
    assert_eq!(diagnostics.scope, Scope::Persistent);
    assert_eq!(diagnostics.default, None);
    assert_eq!(schema.field("best").unwrap().reducer, "with = keep_max");
    // The same as an enum.
    let kinds: Vec<_> = schema.fields.iter().map(|f| f.reducer_kind()).collect();
    for (field, kind) in schema.fields.iter().zip(&kinds) {
        assert_eq!(*kind, field.reducer, "{}", field.name);
        assert_eq!(kind.to_string(), field.reducer, "{}", field.name);
    }
    assert_eq!(next.reducer_kind(), ReducerKind::Replacing);
    assert_eq!(diagnostics.reducer_kind(), ReducerKind::Merging);
    assert_eq!(
        schema.field("best").unwrap().reducer_kind(),
        ReducerKind::Custom("with = keep_max")
    );
    assert!(kinds.contains(&ReducerKind::AddingMessages), "{kinds:?}");
    let md = schema.to_markdown();
    assert!(md.contains("| `diagnostics` | `BTreeMap<String, f64>` | merge | persistent | `Default::default()` | Timings by node. |"), "{md}");
}

#[test]
fn json_schema_for_state_and_delta() {
    let state = serde_json::to_value(schemars::schema_for!(Agent)).unwrap();
    assert_eq!(state["title"], json!("Agent"));
    assert_eq!(state["additionalProperties"], json!(false));
    assert_eq!(state["properties"]["transcript"]["type"], json!("array"));
    assert_eq!(
        state["properties"]["next"]["description"],
        json!("Next node.")
    );
    let delta = serde_json::to_value(schemars::schema_for!(AgentDelta)).unwrap();
    let transcript = &delta["properties"]["transcript"]["anyOf"];
    assert_eq!(transcript[0]["type"], json!("array"));
    assert_eq!(transcript[1]["required"], json!(["__overwrite__"]));
    assert_eq!(transcript[2]["required"], json!(["__writes__"]));
    assert_eq!(
        transcript[2]["properties"]["__writes__"]["items"],
        transcript[0]
    );
    assert!(
        delta["properties"]["next"].get("anyOf").is_none(),
        "replace fields have no overwrite form"
    );
}

#[test]
fn delta_from_json_matches_typed_delta() {
    let from_json = AgentDelta::from_json(json!({"next": "x", "best": 3})).unwrap();
    let typed = Agent::delta().next("x").best(3);
    assert_eq!(from_json, typed);
    assert_eq!(from_json.fields(), ["best", "next"]);
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    fn arb_json() -> impl Strategy<Value = serde_json::Value> {
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::from),
            any::<i64>().prop_map(serde_json::Value::from),
            any::<f64>().prop_map(serde_json::Value::from),
            "[a-z_.]{0,12}".prop_map(serde_json::Value::from),
            // Message kinds, roles and ids, so objects look like messages.
            prop::sample::select(vec![
                "human",
                "ai",
                "system",
                "tool",
                "remove",
                "user",
                "assistant",
                "function",
                "__remove_all__",
                "0",
                "1",
                "tool_call",
            ])
            .prop_map(serde_json::Value::from),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::from),
                prop::collection::btree_map(key(), inner, 0..6)
                    .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// Real keys, paths below them, near misses and the overwrite marker,
    /// so generated objects hit the interesting code paths often.
    fn key() -> impl Strategy<Value = String> {
        prop_oneof![
            prop::sample::select(Agent::keys().to_vec()).prop_map(str::to_owned),
            Just("__overwrite__".to_owned()),
            Just("diagnostics.llm".to_owned()),
            Just("findings.0.text".to_owned()),
            // Message fields (LangChain's, OpenAI's and LangChain's
            // serialized-object shape), so objects look like messages.
            prop::sample::select(vec![
                "type",
                "role",
                "content",
                "id",
                "name",
                "tool_calls",
                "tool_call_id",
                "function",
                "arguments",
                "args",
                "lc",
                "kwargs",
                "text",
            ])
            .prop_map(str::to_owned),
            "[a-z_.]{0,10}",
        ]
    }

    proptest! {
        #[test]
        fn apply_json_never_panics_and_is_atomic(value in arb_json()) {
            let mut state = sample();
            let before = state.clone();
            if state.apply_json(value).is_err() {
                prop_assert_eq!(state, before);
            }
        }

        #[test]
        fn set_never_panics_and_is_atomic(k in key(), value in arb_json()) {
            let mut state = sample();
            let before = state.clone();
            if state.set(&k, value).is_err() {
                prop_assert_eq!(state, before);
            }
        }

        #[test]
        fn from_json_never_panics(value in arb_json()) {
            if let Ok(state) = Agent::from_json(value) {
                // Whatever it accepted round-trips.
                prop_assert_eq!(Agent::from_json(state.to_json().unwrap()).unwrap(), state);
            }
        }

        #[test]
        fn get_never_panics(k in key()) {
            let _ = sample().get(&k);
        }
    }
}

/// Fields whose values may have no JSON form: a map with non-string keys,
/// floats that may be non-finite.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Unwritable {
    /// Keys are pairs: JSON objects cannot have them.
    pub grid: std::collections::HashMap<(u8, u8), u8>,
    /// An ordinary field beside it.
    pub label: String,
    /// `NaN` and `inf` are not JSON numbers.
    pub score: f64,
    /// The same inside an `Option` and a nested state, where `null` would
    /// read back as `None` or as an error far from the cause.
    pub best: Option<f32>,
    #[reducer(merge)]
    pub inner: Scored,
}

/// A nested state with a float.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Scored {
    /// Per-judge scores.
    pub by_judge: BTreeMap<String, f64>,
}

/// The serialize error's field, for the assertions below.
fn refused_field(err: &StateError) -> &str {
    match err {
        StateError::Serialize { field, .. } => field,
        other => panic!("expected a Serialize error, got {other}"),
    }
}

#[test]
fn a_field_without_a_json_form_is_an_error_in_to_json_and_by_key() {
    let mut state = Unwritable {
        label: "l".to_owned(),
        ..Unwritable::default()
    };
    assert_eq!(
        state.to_json().unwrap(),
        json!({"grid": {}, "label": "l", "score": 0.0, "best": null, "inner": {"by_judge": {}}})
    );
    state.grid.insert((1, 2), 3);
    let err = state.to_json().unwrap_err();
    assert_eq!(refused_field(&err), "grid");
    assert!(
        err.to_string()
            .starts_with(r#"field "grid": cannot be written as JSON: "#),
        "{err}"
    );
    let err = state.get("grid").unwrap_err();
    assert_eq!(refused_field(&err), "grid");
    assert!(
        serde_json::to_value(&state).is_err(),
        "serde reports it too"
    );
}

#[test]
fn a_non_finite_float_is_an_error_not_null() {
    let mut state = Unwritable {
        score: f64::NAN,
        ..Unwritable::default()
    };
    let err = state.to_json().unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"field "score": cannot be written as JSON: NaN has no JSON form (JSON numbers are finite)"#
    );
    assert_eq!(refused_field(&state.get("score").unwrap_err()), "score");
    // serde_json alone writes it as null: what this guards against.
    assert_eq!(serde_json::to_value(&state).unwrap()["score"], json!(null));

    state.score = 1.0;
    state.best = Some(f32::NEG_INFINITY);
    let err = state.to_json().unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"field "best": cannot be written as JSON: -inf has no JSON form (JSON numbers are finite)"#
    );

    state.best = None;
    state.inner.by_judge.insert("ada".to_owned(), f64::INFINITY);
    let err = state.to_json().unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"field "inner": cannot be written as JSON: inf has no JSON form (JSON numbers are finite), at by_judge.ada"#
    );
    assert!(state.get("inner.by_judge").is_err());
    assert_eq!(state.get("label").unwrap(), json!(""), "other fields read");

    state.inner.by_judge.insert("ada".to_owned(), 0.5);
    let json = state.to_json().unwrap();
    assert_eq!(Unwritable::from_json(json).unwrap(), state);
}

/// A dotted path below a plain field edits the field's JSON and reads it
/// back: a valid edit lands, an invalid one names the path and changes
/// nothing.
#[test]
fn paths_below_a_plain_field_go_through_its_json() {
    let mut state = sample();
    assert_eq!(state.get("diagnostics.llm").unwrap(), json!(1.5));
    state.set("diagnostics.tool", json!(2.5)).unwrap();
    assert_eq!(state.diagnostics["tool"], 2.5);
    let before = state.clone();
    let err = state.set("diagnostics.llm", json!("fast")).unwrap_err();
    assert!(
        matches!(err, StateError::Type { ref field, .. } if field == "diagnostics.llm"),
        "{err}"
    );
    assert_eq!(state, before);
    assert_eq!(
        state.field_ref::<f64>("diagnostics.llm"),
        None,
        "not a field"
    );
    assert_eq!(
        state
            .field_ref::<BTreeMap<String, f64>>("diagnostics")
            .map(|m| m.len()),
        Some(2)
    );
}
