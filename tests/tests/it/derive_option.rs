//! `Option<T>` fields: the delta slot is `Option<Option<T>>`, so a delta can
//! say "set to None". In JSON, `null` clears the field and an absent key
//! leaves it alone. However the type is spelt: `Option<T>`,
//! `std::option::Option<T>`, or an alias.

use serde_json::json;
use state_core::{AgentState, Delta, State, StateError, Written};

type Maybe<T> = Option<T>;

fn keep_first(current: &mut Option<String>, new: Option<String>) {
    if current.is_none() {
        *current = new;
    }
}

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Opt {
    pub error: Option<String>,
    pub count: std::option::Option<u32>,
    pub alias: Maybe<Vec<u8>>,
    pub core_path: ::core::option::Option<bool>,
    #[reducer(with = keep_first)]
    pub first: Option<String>,
    /// Not optional: `null` is an error here.
    pub name: String,
}

fn filled() -> Opt {
    Opt {
        error: Some("boom".to_owned()),
        count: Some(3),
        alias: Some(vec![1]),
        core_path: Some(true),
        first: Some("one".to_owned()),
        name: "n".to_owned(),
    }
}

fn decode(value: serde_json::Value) -> Result<OptDelta, String> {
    serde_json::from_value::<OptDelta>(value).map_err(|e| e.to_string())
}

#[test]
fn the_slot_is_an_option_of_an_option() {
    // The annotations are the test: they compile only for these slot types.
    let delta = Opt::delta();
    let error: Option<&Option<String>> = delta.get_error();
    let count: Option<&Option<u32>> = delta.get_count();
    let alias: Option<&Option<Vec<u8>>> = delta.get_alias();
    let core_path: Option<&Option<bool>> = delta.get_core_path();
    let first: Option<Written<'_, Option<String>, Option<String>>> = delta.get_first();
    let name: Option<&String> = delta.get_name();
    assert!(error.is_none() && count.is_none() && alias.is_none());
    assert!(core_path.is_none() && first.is_none() && name.is_none());
}

#[test]
fn setters_take_a_value_or_none() {
    let delta = Opt::delta()
        .error(Some("e".to_owned()))
        .count(None)
        .alias(Some(vec![1, 2])) // a list is not wrapped: `Some` says it
        .core_path(false);
    assert_eq!(delta.error, Some(Some("e".to_owned())));
    assert_eq!(delta.count, Some(None));
    assert_eq!(delta.alias, Some(Some(vec![1, 2])));
    assert_eq!(delta.core_path, Some(Some(false)));
    assert_eq!(delta.fields(), ["error", "count", "alias", "core_path"]);
}

#[test]
fn a_delta_can_set_none() {
    let mut state = filled();
    state
        .apply(
            Opt::delta()
                .error(None)
                .count(None)
                .alias(None)
                .core_path(None),
        )
        .unwrap();
    assert_eq!(state.error, None);
    assert_eq!(state.count, None);
    assert_eq!(state.alias, None);
    assert_eq!(state.core_path, None);
    // Untouched.
    assert_eq!(state.first.as_deref(), Some("one"));
    assert_eq!(state.name, "n");
}

#[test]
fn json_null_clears_and_an_absent_key_leaves_alone() {
    let delta =
        decode(json!({"error": null, "count": null, "alias": null, "core_path": null})).unwrap();
    assert_eq!(
        delta,
        Opt::delta()
            .error(None)
            .count(None)
            .alias(None)
            .core_path(None)
    );
    assert_eq!(delta.fields(), ["error", "count", "alias", "core_path"]);
    let mut state = filled();
    state.apply(delta).unwrap();
    assert_eq!(
        state,
        Opt {
            error: None,
            count: None,
            alias: None,
            core_path: None,
            ..filled()
        }
    );

    let mut state = filled();
    let absent = decode(json!({})).unwrap();
    assert!(absent.is_empty());
    state.apply(absent).unwrap();
    assert_eq!(state, filled());

    let delta = decode(json!({"count": 7, "alias": [4]})).unwrap();
    let mut state = filled();
    state.apply(delta).unwrap();
    assert_eq!(state.count, Some(7));
    assert_eq!(state.alias, Some(vec![4]));
    assert_eq!(state.error.as_deref(), Some("boom"));
}

#[test]
fn null_into_a_custom_reducer_field_is_a_none_update() {
    let delta = decode(json!({"first": null})).unwrap();
    assert_eq!(delta.get_first(), Some(Written::Update(&None)));
    let mut state = Opt::default();
    state.apply(delta).unwrap();
    assert_eq!(state.first, None);
    state.apply(decode(json!({"first": "a"})).unwrap()).unwrap();
    state.apply(decode(json!({"first": "b"})).unwrap()).unwrap();
    assert_eq!(state.first.as_deref(), Some("a"));
}

#[test]
fn null_for_a_non_option_field_is_an_error() {
    let err = decode(json!({"name": null})).unwrap_err();
    assert!(err.starts_with(r#"field "name": "#), "{err}");
    assert!(err.contains("null"), "{err}");
}

#[test]
fn none_serializes_as_null_and_round_trips() {
    let delta = Opt::delta().error(None).count(4u32).alias(None);
    let value = serde_json::to_value(&delta).unwrap();
    assert_eq!(value, json!({"error": null, "count": 4, "alias": null}));
    assert_eq!(decode(value).unwrap(), delta);
}

#[test]
fn none_is_a_write_in_a_superstep() {
    // One node clearing the field while another leaves it alone: fine.
    let mut state = filled();
    state
        .apply_all([Opt::delta().error(None), Opt::delta().name("m")])
        .unwrap();
    assert_eq!(state.error, None);
    // Two nodes writing it, even both None: a conflict, as in LangGraph.
    let mut state = filled();
    let err = state
        .apply_all([Opt::delta().count(None), Opt::delta().count(None)])
        .unwrap_err();
    assert_eq!(
        err,
        StateError::ConcurrentWrite {
            field: "count".to_owned()
        }
    );
    assert_eq!(state, filled());
}
