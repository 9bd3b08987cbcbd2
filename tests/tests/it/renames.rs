//! `#[serde(rename = "..")]` and `#[serde(rename_all = "..")]`: a field's
//! key differs from its Rust name everywhere a key appears (JSON of states
//! and deltas, `get`/`set`/`apply_json`, `keys`, dotted paths, the schema,
//! errors); the setters keep the Rust name.

use serde_json::json;
use state_core::{AgentState, Delta, Message, Messages, State};

/// A nested group whose own keys are renamed too.
#[derive(AgentState, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
#[state(json_schema)]
pub struct Progress {
    /// Turns so far.
    pub turn_count: u32,
}

/// A state shared with a JavaScript front end: camelCase keys.
#[derive(AgentState, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
#[state(json_schema)]
pub struct Session {
    /// The conversation.
    #[reducer(add_messages)]
    pub messages: Messages,
    /// Where the graph goes next.
    pub next_node: String,
    /// Steps taken, appended.
    #[reducer(append)]
    pub past_steps: Vec<String>,
    /// A key that is not an identifier at all.
    #[serde(rename = "user-id")]
    pub user_id: Option<String>,
    /// A nested group.
    #[reducer(merge)]
    pub progress_info: Progress,
}

#[test]
fn keys_schema_and_paths_use_the_renamed_keys() {
    assert_eq!(
        Session::keys(),
        [
            "messages",
            "nextNode",
            "pastSteps",
            "user-id",
            "progressInfo"
        ]
    );
    assert!(Session::leaf_keys().contains(&"progressInfo.turnCount".to_owned()));
    let schema = Session::schema();
    assert!(schema.field("nextNode").is_some());
    assert!(schema.field("next_node").is_none());
    let markdown = schema.to_markdown();
    assert!(markdown.contains("`nextNode`"), "{markdown}");
    assert!(markdown.contains("`user-id`"), "{markdown}");
    let json_schema = serde_json::to_value(schemars::schema_for!(Session)).unwrap();
    let properties = json_schema["properties"].as_object().unwrap();
    assert_eq!(
        properties.keys().collect::<Vec<_>>(),
        [
            "messages",
            "nextNode",
            "pastSteps",
            "user-id",
            "progressInfo"
        ]
    );
}

#[test]
fn json_get_set_and_apply_json_use_the_renamed_keys() {
    let mut state = Session::default();
    // Setters keep the Rust names.
    state
        .apply(
            Session::delta()
                .next_node("tools")
                .past_steps(["plan"])
                .user_id("u1")
                .progress_info(Progress::delta().turn_count(2u32)),
        )
        .unwrap();
    assert_eq!(state.get("nextNode").unwrap(), json!("tools"));
    assert_eq!(state.get("user-id").unwrap(), json!("u1"));
    assert_eq!(state.get("progressInfo.turnCount").unwrap(), json!(2));
    state.set("nextNode", json!("end")).unwrap();
    state.set("progressInfo.turnCount", json!(3)).unwrap();
    assert_eq!(
        (state.next_node.as_str(), state.progress_info.turn_count),
        ("end", 3)
    );
    state
        .apply_json(json!({
            "messages": [{"type": "human", "content": "hi", "id": "m1"}],
            "pastSteps": ["act"],
            "progressInfo": {"turnCount": 4}
        }))
        .unwrap();
    assert_eq!(state.past_steps, ["plan", "act"]);
    assert_eq!(state.messages[0], Message::human("hi").with_id("m1"));

    let json = state.to_json().unwrap();
    assert_eq!(json["nextNode"], json!("end"));
    assert_eq!(json["user-id"], json!("u1"));
    assert_eq!(json["progressInfo"], json!({"turnCount": 4}));
    assert!(json.get("next_node").is_none());
    assert_eq!(serde_json::to_value(&state).unwrap(), json);
    assert_eq!(Session::from_json(json.clone()).unwrap(), state);
    assert_eq!(serde_json::from_value::<Session>(json).unwrap(), state);
}

#[test]
fn deltas_read_and_write_the_renamed_keys() {
    let delta = Session::delta().next_node("tools").user_id("u2");
    let json = serde_json::to_value(&delta).unwrap();
    assert_eq!(json, json!({"nextNode": "tools", "user-id": "u2"}));
    assert_eq!(
        serde_json::from_value::<SessionDelta>(json.clone()).unwrap(),
        delta
    );
    assert_eq!(SessionDelta::from_json(json).unwrap(), delta);
    assert_eq!(delta.fields().collect::<Vec<_>>(), ["nextNode", "user-id"]);
}

#[test]
fn errors_name_the_renamed_keys() {
    let mut state = Session::default();
    let before = state.clone();
    let err = state.get("next_node").unwrap_err();
    assert_eq!(
        err.to_string(),
        "`Session` has no field `next_node`; did you mean `nextNode`?"
    );
    let err = state.apply_json(json!({"nextNode": 3})).unwrap_err();
    assert_eq!(err.field(), Some("nextNode"));
    let err = state
        .apply_json(json!({"progressInfo": {"turn_count": 1}}))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "`Session` has no field `progressInfo.turn_count`; did you mean `progressInfo.turnCount`?"
    );
    let err = state
        .apply_all([
            Session::delta().next_node("a"),
            Session::delta().next_node("b"),
        ])
        .unwrap_err();
    assert_eq!(err.field(), Some("nextNode"));
    assert_eq!(state, before);
}
