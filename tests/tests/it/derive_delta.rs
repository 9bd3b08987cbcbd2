//! The generated delta type: setters, `overwrite_<field>` setters,
//! `is_empty`, `fields`, `merge`, its derives, and its JSON form (serialize,
//! deserialize, unknown and repeated keys, the overwrite markers).

use serde_json::json;
use state_core::{AgentState, Delta, State, StateError, Written};
use std::collections::BTreeMap;

fn keep_max(current: &mut i64, new: i64) {
    *current = (*current).max(new);
}

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Chat {
    #[reducer(append)]
    pub transcript: Vec<String>,
    #[reducer(merge)]
    pub diagnostics: BTreeMap<String, f64>,
    #[default("supervisor")]
    pub next: String,
    pub retries: u32,
    #[reducer(with = keep_max)]
    pub best_score: i64,
    /// A replace field holding any JSON: LangGraph's LastValue stores an
    /// overwrite marker as a plain value.
    pub raw: serde_json::Value,
    #[reducer(merge)]
    pub meta: serde_json::Map<String, serde_json::Value>,
    /// A raw identifier: the key is `type`, the overwrite setter `overwrite_type`.
    #[reducer(append)]
    pub r#type: Vec<u8>,
}

fn s(v: &str) -> String {
    v.to_owned()
}

fn decode(value: serde_json::Value) -> Result<ChatDelta, String> {
    serde_json::from_value::<ChatDelta>(value).map_err(|e| e.to_string())
}

fn decode_str(text: &str) -> Result<ChatDelta, String> {
    serde_json::from_str::<ChatDelta>(text).map_err(|e| e.to_string())
}

#[test]
fn delta_starts_empty_and_equals_default() {
    let delta = Chat::delta();
    assert!(delta.is_empty());
    assert!(delta.fields().is_empty());
    assert_eq!(delta, ChatDelta::default());
    assert_eq!(delta, <Chat as State>::Delta::default());
}

#[test]
fn setters_chain_and_convert_with_into_update() {
    let delta = Chat::delta()
        .next("tools") // &str into String
        .retries(2) // an integer literal infers u32
        .transcript(vec![s("hi")])
        .best_score(4)
        .r#type(vec![1]);
    assert_eq!(delta.get_next().map(String::as_str), Some("tools"));
    assert_eq!(delta.get_retries(), Some(&2u32));
    assert_eq!(
        delta.get_transcript(),
        Some(Written::Update(&vec![s("hi")]))
    );
    assert_eq!(delta.get_best_score(), Some(Written::Update(&4)));
    assert_eq!(delta.get_type().and_then(Written::update), Some(&vec![1]));
    assert_eq!(delta.get_raw(), None);
    assert_eq!(delta.get_meta(), None);
    assert!(!delta.is_empty());
    // Numeric widening is explicit: an implicit u8 -> u32 would make every
    // integer literal ambiguous (the reason setters do not take `impl Into`).
    assert_eq!(
        Chat::delta().retries(u32::from(2u8)).get_retries(),
        Some(&2)
    );
    // One item through `push_x`, or an array where a Vec is expected.
    assert_eq!(
        Chat::delta()
            .push_transcript(s("one"))
            .get_transcript()
            .and_then(Written::update),
        Some(&vec![s("one")])
    );
    assert_eq!(
        Chat::delta()
            .r#type([1, 2])
            .get_type()
            .and_then(Written::update),
        Some(&vec![1, 2])
    );
}

#[test]
fn equality_ignores_how_a_delta_was_built() {
    let rebuilt = Chat::delta()
        .overwrite_transcript(vec![])
        .transcript(vec![s("x")]);
    assert_eq!(rebuilt, Chat::delta().transcript(vec![s("x")]));
    let json = serde_json::to_value(&rebuilt).unwrap();
    let back: ChatDelta = serde_json::from_value(json).unwrap();
    assert_eq!(back, rebuilt);
}

#[test]
fn a_setter_called_again_replaces_the_earlier_value() {
    let delta = Chat::delta()
        .next("a")
        .next("b")
        .transcript(vec![s("1")])
        .transcript(vec![s("2")]);
    assert_eq!(delta.get_next().map(String::as_str), Some("b"));
    let mut state = Chat::default();
    state.apply(delta).unwrap();
    assert_eq!(state.transcript, ["2"]);
}

#[test]
fn fields_lists_written_keys_in_declaration_order() {
    let delta = Chat::delta().r#type(vec![]).next("x").transcript(vec![]);
    assert_eq!(delta.fields(), ["transcript", "next", "type"]);
    // An overwrite is a write too, and makes the delta non-empty.
    let over = Chat::delta().overwrite_diagnostics(BTreeMap::new());
    assert!(!over.is_empty());
    assert_eq!(over.fields(), ["diagnostics"]);
    let over = Chat::delta().overwrite_type(vec![]);
    assert_eq!(over.fields(), ["type"]);
    // An empty update is still a write (LangGraph counts `{"items": []}`).
    assert!(!Chat::delta().transcript(vec![]).is_empty());
}

#[test]
fn merge_combines_the_writes_of_two_deltas() {
    let a = Chat::delta().transcript(vec![s("a")]).next("n");
    let b = Chat::delta()
        .transcript(vec![s("b")])
        .diagnostics(BTreeMap::from([(s("d"), 1.0)]));
    let merged = a.merge(b).unwrap();
    assert_eq!(merged.fields(), ["transcript", "diagnostics", "next"]);
    assert_eq!(
        merged.get_transcript().and_then(Written::update),
        Some(&vec![s("a"), s("b")])
    );
    let err = merged.merge(Chat::delta().next("m")).unwrap_err();
    assert_eq!(err, StateError::ConcurrentWrite { field: s("next") });
}

#[test]
fn delta_is_clone_debug_partial_eq() {
    let delta = Chat::delta().next("x").overwrite_transcript(vec![s("t")]);
    let copy = delta.clone();
    assert_eq!(copy, delta);
    assert_ne!(copy, Chat::delta().next("x"));
    let debug = format!("{delta:?}");
    assert!(
        debug.contains("ChatDelta") && debug.contains("\"x\""),
        "{debug}"
    );
}

// ---------------------------------------------------------------------------
// JSON
// ---------------------------------------------------------------------------

#[test]
fn serializes_only_the_written_fields() {
    let delta = Chat::delta()
        .r#type(vec![7])
        .next("tools")
        .transcript(vec![s("hi")]);
    let value = serde_json::to_value(&delta).unwrap();
    assert_eq!(
        value,
        json!({"transcript": ["hi"], "next": "tools", "type": [7]})
    );
    // In declaration order.
    assert_eq!(
        serde_json::to_string(&delta).unwrap(),
        r#"{"transcript":["hi"],"next":"tools","type":[7]}"#
    );
    assert_eq!(serde_json::to_value(Chat::delta()).unwrap(), json!({}));
}

#[test]
fn an_overwrite_serializes_as_the_langgraph_marker() {
    let delta = Chat::delta()
        .overwrite_transcript(vec![s("only")])
        .overwrite_type(vec![]);
    assert_eq!(
        serde_json::to_value(&delta).unwrap(),
        json!({"transcript": {"__overwrite__": ["only"]}, "type": {"__overwrite__": []}})
    );
}

#[test]
fn round_trips_through_json() {
    let deltas = [
        Chat::delta(),
        Chat::delta().next("a").retries(3u32),
        Chat::delta()
            .transcript(vec![s("x")])
            .diagnostics(BTreeMap::from([(s("t"), 0.5)]))
            .best_score(-2)
            .raw(json!({"any": [1, null]}))
            .meta(json!({"k": 1}).as_object().unwrap().clone()),
        Chat::delta()
            .overwrite_transcript(vec![])
            .overwrite_best_score(1)
            .overwrite_meta(serde_json::Map::new())
            .overwrite_type(vec![1, 2]),
    ];
    for delta in deltas {
        let json = serde_json::to_value(&delta).unwrap();
        let back = decode(json.clone()).unwrap();
        assert_eq!(back, delta, "{json}");
        let text = serde_json::to_string(&delta).unwrap();
        assert_eq!(decode_str(&text).unwrap(), delta, "{text}");
    }
}

#[test]
fn deserialized_delta_equals_the_one_built_with_setters() {
    let delta = decode(json!({
        "next": "tools",
        "transcript": ["a", "b"],
        "diagnostics": {"ms": 1.5},
        "type": [1],
    }))
    .unwrap();
    assert_eq!(
        delta,
        Chat::delta()
            .next("tools")
            .transcript(vec![s("a"), s("b")])
            .diagnostics(BTreeMap::from([(s("ms"), 1.5)]))
            .r#type(vec![1])
    );
    assert_eq!(
        delta.fields(),
        ["transcript", "diagnostics", "next", "type"]
    );
}

#[test]
fn both_overwrite_forms_are_read() {
    let short = decode(json!({"transcript": {"__overwrite__": ["x"]}})).unwrap();
    let typed = decode(json!({"transcript": {"type": "__overwrite__", "value": ["x"]}})).unwrap();
    // LangGraph ignores other keys of the typed form.
    let typed_extra = decode(json!({
        "transcript": {"type": "__overwrite__", "value": ["x"], "note": "ignored"}
    }))
    .unwrap();
    let expected = Chat::delta().overwrite_transcript(vec![s("x")]);
    assert_eq!(short, expected);
    assert_eq!(typed, expected);
    assert_eq!(typed_extra, expected);

    let mut state = Chat {
        transcript: vec![s("old")],
        best_score: 10,
        ..Chat::default()
    };
    state
        .apply(
            decode(
                json!({"transcript": {"__overwrite__": ["x"]}, "best_score": {"__overwrite__": 1}}),
            )
            .unwrap(),
        )
        .unwrap();
    assert_eq!(state.transcript, ["x"]);
    assert_eq!(state.best_score, 1, "the overwrite bypasses keep_max");
}

#[test]
fn a_marker_with_other_keys_is_a_plain_update() {
    // `{"__overwrite__": v}` must be the only key; otherwise it is data.
    let delta = decode(json!({"meta": {"__overwrite__": 1, "other": 2}})).unwrap();
    let mut state = Chat::default();
    state.meta.insert(s("kept"), json!(true));
    state.apply(delta).unwrap();
    assert_eq!(
        serde_json::Value::Object(state.meta),
        json!({"kept": true, "__overwrite__": 1, "other": 2})
    );
    // The typed form needs a "value".
    let delta = decode(json!({"meta": {"type": "__overwrite__"}})).unwrap();
    assert_eq!(
        delta,
        Chat::delta().meta(
            json!({"type": "__overwrite__"})
                .as_object()
                .unwrap()
                .clone()
        )
    );
}

#[test]
fn a_replace_field_stores_the_marker_as_a_plain_value() {
    // LangGraph's LastValue does not know Overwrite: the dict is the value.
    let delta = decode(json!({"raw": {"__overwrite__": [1]}})).unwrap();
    assert_eq!(delta, Chat::delta().raw(json!({"__overwrite__": [1]})));
    // And for a String field the marker is a type error.
    let err = decode(json!({"next": {"__overwrite__": "x"}})).unwrap_err();
    assert!(err.starts_with(r#"field "next": "#), "{err}");
}

#[test]
fn unknown_key_is_rejected_with_a_suggestion() {
    let err = decode(json!({"nxt": "tools"})).unwrap_err();
    assert_eq!(err, r#"`Chat` has no field `nxt`; did you mean `next`?"#);
    let err = decode(json!({"transcrpit": []})).unwrap_err();
    assert!(
        err.contains(r#"`Chat` has no field `transcrpit`; did you mean `transcript`?"#),
        "{err}"
    );
    // From text, serde_json appends the position.
    let err = decode_str(r#"{"next": "a", "best_scores": 1}"#).unwrap_err();
    assert!(
        err.starts_with(r#"`Chat` has no field `best_scores`; did you mean `best_score`?"#),
        "{err}"
    );
    // An unknown key is an error even beside valid ones, and without a
    // plausible suggestion there is none.
    let err = decode(json!({"transcript": [], "zzzz": 1})).unwrap_err();
    assert_eq!(err, r#"`Chat` has no field `zzzz`"#);
    // The raw identifier's key is `type`, not `r#type`.
    let err = decode(json!({"r#type": []})).unwrap_err();
    assert!(err.starts_with(r#"`Chat` has no field `r#type`"#), "{err}");
}

#[test]
fn a_key_written_twice_is_rejected() {
    for text in [
        r#"{"next": "a", "next": "b"}"#,
        r#"{"next": "a", "next": "a"}"#,
        r#"{"transcript": ["a"], "transcript": ["b"]}"#,
        r#"{"transcript": {"__overwrite__": []}, "transcript": ["b"]}"#,
        r#"{"transcript": ["b"], "transcript": {"__overwrite__": []}}"#,
        r#"{"type": [1], "type": [2]}"#,
    ] {
        let err = decode_str(text).unwrap_err();
        let field = if text.contains("next") {
            "next"
        } else if text.contains("type") {
            "type"
        } else {
            "transcript"
        };
        assert!(
            err.starts_with(&format!(r#"field "{field}" is written twice in one delta"#)),
            "{text}: {err}"
        );
    }
}

#[test]
fn a_wrong_value_type_names_the_field() {
    for (value, field) in [
        (json!({"transcript": "not a list"}), "transcript"),
        (json!({"transcript": [1]}), "transcript"),
        (json!({"retries": -1}), "retries"),
        (json!({"next": 5}), "next"),
        (json!({"next": null}), "next"),
        (json!({"diagnostics": {"ms": "slow"}}), "diagnostics"),
        (
            json!({"best_score": {"__overwrite__": "high"}}),
            "best_score",
        ),
        (json!({"transcript": null}), "transcript"),
    ] {
        let err = decode(value.clone()).unwrap_err();
        assert!(
            err.starts_with(&format!(r#"field "{field}": "#)),
            "{value}: {err}"
        );
    }
}

#[test]
fn a_delta_must_be_a_json_object() {
    for value in [json!([1, 2]), json!("next"), json!(3), json!(null)] {
        let err = decode(value.clone()).unwrap_err();
        assert!(
            err.contains("a map of field names to updates"),
            "{value}: {err}"
        );
    }
}

#[test]
fn a_decoded_delta_applies_like_a_built_one() {
    let mut via_json = Chat::default();
    via_json
        .apply(
            decode(json!({"transcript": ["a"], "next": "tools", "best_score": 3, "raw": [1]}))
                .unwrap(),
        )
        .unwrap();
    let mut via_setters = Chat::default();
    via_setters
        .apply(
            Chat::delta()
                .transcript(vec![s("a")])
                .next("tools")
                .best_score(3)
                .raw(json!([1])),
        )
        .unwrap();
    assert_eq!(via_json, via_setters);
}
