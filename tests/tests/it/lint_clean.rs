//! Generated code raises no clippy lint on ordinary field types: a nested
//! JSON object behind two `Option`s (the delta's slot) is as complex a type
//! as clippy's `type_complexity` lint flags. CI runs clippy with
//! `-D warnings` over this file.

use serde_json::{Map, Value, json};
use state_core::{AgentState, State};

/// Fields whose delta slots are deeply nested types.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Complex {
    /// An optional JSON object.
    pub meta: Option<Map<String, Value>>,
    /// A list of JSON objects, appended.
    #[reducer(append)]
    pub rows: Vec<Map<String, Value>>,
    /// Maps of lists, merged.
    #[reducer(merge)]
    pub index: std::collections::BTreeMap<String, Vec<Option<Map<String, Value>>>>,
}

#[test]
fn complex_field_types_work() {
    let mut state = Complex::default();
    state
        .apply_json(json!({"meta": {"a": 1}, "rows": [{"b": 2}], "index": {"k": [null]}}))
        .unwrap();
    assert_eq!(state.meta.as_ref().map(Map::len), Some(1));
    assert_eq!(state.rows.len(), 1);
    assert_eq!(state.index["k"], [None]);
}
