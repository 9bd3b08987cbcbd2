//! A state's and a delta's `Serialize` and `Deserialize` work with any
//! serde format (issue 14, item 1): JSON, MessagePack (self-describing,
//! binary) and postcard (not self-describing: it cannot read a value
//! without knowing its type, so anything read through a JSON value in
//! between would fail).

use serde::{Deserialize, Serialize};
use state_core::{AgentState, Delta, Messages, State};
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
    /// A reducer that cannot fold two writes into one: a merged step keeps
    /// both (`{"__writes__": [..]}` in JSON).
    #[reducer(with = keep_max)]
    pub best: u32,
}

fn keep_max(best: &mut u32, new: u32) {
    *best = (*best).max(new);
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

/// Deltas with every kind of write: plain updates of replace and reducer
/// fields, a nested state's delta, a flattened base's field, an overwrite,
/// and a merged step whose writes did not fold.
fn deltas() -> Vec<PlanDelta> {
    let full = Plan::delta()
        .user_id("u-1")
        .steps(["search"])
        .scores(BTreeMap::from([("a".to_owned(), 0.5)]))
        .progress(Progress::delta().stage(Stage::Closing {
            reason: "done".into(),
        }))
        .retries(3)
        .done(false)
        .best(4);
    let overwrite = Plan::delta()
        .overwrite_steps(vec!["only".to_owned()])
        .overwrite_progress(Progress {
            turn_count: 1,
            stage: Stage::Opening,
        });
    let merged = Plan::delta()
        .best(2)
        .merge(Plan::delta().best(7).steps(["more"]))
        .unwrap();
    vec![Plan::delta(), full, overwrite, merged]
}

/// Each delta reads back equal, and applies as the original does.
fn check_round_trip(format: &str, read_back: impl Fn(&PlanDelta) -> PlanDelta) {
    for delta in deltas() {
        let back = read_back(&delta);
        assert_eq!(back, delta, "{format}");
        let (mut a, mut b) = (plan(), plan());
        a.apply(delta).unwrap();
        b.apply(back).unwrap();
        assert_eq!(a, b, "{format}");
    }
}

#[test]
fn a_delta_round_trips_through_json_messagepack_and_postcard() {
    check_round_trip("json", |d| {
        serde_json::from_str(&serde_json::to_string(d).unwrap()).unwrap()
    });
    check_round_trip("messagepack", |d| {
        rmp_serde::from_slice(&rmp_serde::to_vec(d).unwrap()).unwrap()
    });
    check_round_trip("postcard", |d| {
        postcard::from_bytes(&postcard::to_allocvec(d).unwrap()).unwrap()
    });
    // Messages keep the ids the setter fixed, so a logged delta replays
    // exactly. (A message reads LangChain's shapes, which takes a
    // self-describing format: not postcard.)
    let delta = Chat::delta().messages([("user", "hi")]).summary("s");
    let bytes = rmp_serde::to_vec(&delta).unwrap();
    assert_eq!(rmp_serde::from_slice::<ChatDelta>(&bytes).unwrap(), delta);
}

#[test]
fn a_compact_delta_is_read_with_from_jsons_rules() {
    // A bad value names its field; so does an unknown key.
    let bad = rmp_serde::to_vec(&BTreeMap::from([("retries", "x")])).unwrap();
    let err = rmp_serde::from_slice::<PlanDelta>(&bad)
        .unwrap_err()
        .to_string();
    assert!(err.contains(r#"field "retries": expected u8"#), "{err}");
    let unknown = rmp_serde::to_vec(&BTreeMap::from([("retires", 1)])).unwrap();
    let err = rmp_serde::from_slice::<PlanDelta>(&unknown)
        .unwrap_err()
        .to_string();
    assert!(err.contains("did you mean `retries`?"), "{err}");
    // A reducer field carries its tag: a bare update is refused, not
    // guessed at.
    let untagged = rmp_serde::to_vec(&BTreeMap::from([("steps", ["a"])])).unwrap();
    let err = rmp_serde::from_slice::<PlanDelta>(&untagged)
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(r#"field "steps": expected Vec<String>"#),
        "{err}"
    );
    // JSON-shaped input in a compact format goes through a JSON value.
    let value: serde_json::Value = rmp_serde::from_slice(&untagged).unwrap();
    let delta = PlanDelta::from_json(value).unwrap();
    assert_eq!(delta, Plan::delta().steps(["a"]));
}
