//! A state's `Serialize` and `Deserialize` work with any serde format
//! (issue 14, item 1): JSON, MessagePack (self-describing, binary) and
//! postcard (not self-describing: it cannot read a value without knowing
//! its type, so a state read through a JSON value in between would fail).

use serde::{Deserialize, Serialize};
use state_core::{AgentState, Messages, State};
use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub enum Stage {
    #[default]
    Opening,
    Closing {
        reason: String,
    },
}

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Progress {
    #[scope(turn)]
    pub turn_count: u32,
    pub stage: Stage,
}

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Base {
    pub user_id: Option<String>,
}

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Plan {
    #[state(flatten)]
    pub base: Base,
    #[reducer(append)]
    pub steps: Vec<String>,
    #[reducer(merge)]
    pub scores: BTreeMap<String, f64>,
    #[reducer(merge)]
    pub progress: Progress,
    pub retries: u8,
    pub done: bool,
}

/// A state with a message history, for the self-describing formats.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Chat {
    #[reducer(add_messages)]
    pub messages: Messages,
    pub summary: String,
}

fn plan() -> Plan {
    let mut plan = Plan::default();
    plan.apply(
        Plan::delta()
            .user_id("u-1")
            .steps(["search", "answer"])
            .scores(
                [("a".to_owned(), 0.5)]
                    .into_iter()
                    .collect::<BTreeMap<_, _>>(),
            )
            .progress(Progress::delta().turn_count(2).stage(Stage::Closing {
                reason: "done".into(),
            }))
            .retries(3)
            .done(true),
    )
    .unwrap();
    plan
}

fn chat() -> Chat {
    let mut chat = Chat::default();
    chat.apply(
        Chat::delta()
            .messages([("user", "hi"), ("ai", "hello")])
            .summary("greeting"),
    )
    .unwrap();
    chat
}

#[test]
fn a_state_round_trips_through_json() {
    let plan = plan();
    let text = serde_json::to_string(&plan).unwrap();
    assert_eq!(serde_json::from_str::<Plan>(&text).unwrap(), plan);
    let chat = chat();
    let text = serde_json::to_string(&chat).unwrap();
    assert_eq!(serde_json::from_str::<Chat>(&text).unwrap(), chat);
}

#[test]
fn a_state_round_trips_through_messagepack() {
    let plan = plan();
    let bytes = rmp_serde::to_vec(&plan).unwrap();
    assert_eq!(rmp_serde::from_slice::<Plan>(&bytes).unwrap(), plan);
    let chat = chat();
    let bytes = rmp_serde::to_vec(&chat).unwrap();
    assert_eq!(rmp_serde::from_slice::<Chat>(&bytes).unwrap(), chat);
}

#[test]
fn a_state_round_trips_through_postcard() {
    let plan = plan();
    let bytes = postcard::to_allocvec(&plan).unwrap();
    assert_eq!(postcard::from_bytes::<Plan>(&bytes).unwrap(), plan);
    // The default state too (every field at its default).
    let bytes = postcard::to_allocvec(&Plan::default()).unwrap();
    assert_eq!(
        postcard::from_bytes::<Plan>(&bytes).unwrap(),
        Plan::default()
    );
}

#[test]
fn reading_follows_from_jsons_rules_in_every_format() {
    // A missing field takes its default, an unknown one is an error naming
    // the state, and a bad value inside a nested state names its path.
    let partial: Plan = rmp_serde::from_slice(
        &rmp_serde::to_vec_named(&serde_json::json!({"retries": 1})).unwrap(),
    )
    .unwrap();
    assert_eq!((partial.retries, partial.done), (1, false));
    let unknown = rmp_serde::to_vec(&serde_json::json!({"retires": 1})).unwrap();
    let err = rmp_serde::from_slice::<Plan>(&unknown)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("`Plan` has no field `retires`; did you mean `retries`?"),
        "{err}"
    );
    let bad = rmp_serde::to_vec(&serde_json::json!({"progress": {"turn_count": "x"}})).unwrap();
    let err = rmp_serde::from_slice::<Plan>(&bad).unwrap_err().to_string();
    assert!(
        err.contains(r#"field "progress.turn_count": expected u32"#),
        "{err}"
    );
    let twice = br#"{"retries": 1, "retries": 2}"#;
    let err = serde_json::from_slice::<Plan>(twice)
        .unwrap_err()
        .to_string();
    assert!(err.starts_with(r#"field "retries" appears twice"#), "{err}");
}
