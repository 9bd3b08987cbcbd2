//! `#[state(serde = "user")]` (issue 14, item 2): the user derives the
//! state's `Serialize` and `Deserialize`, with any `#[serde(...)]` option
//! (`with`, `skip`, ...), and the state's JSON goes through them on every
//! path: `to_json`, `from_json`, `get`, `set`, serde itself, a state that
//! nests it, and a store's snapshots.

use serde::{Deserialize, Serialize};
use serde_json::json;
use state_core::{AgentState, State, StateError};
use state_store::Store;
use std::time::Duration;

/// A `Duration` as a number of seconds, as a Python service writes it.
mod seconds {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(value: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(value.as_secs_f64())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let secs = f64::deserialize(d)?;
        Duration::try_from_secs_f64(secs).map_err(serde::de::Error::custom)
    }
}

/// `default` and `deny_unknown_fields` give the derive's own load rules:
/// missing fields take their defaults, unknown ones are errors.
#[derive(AgentState, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[state(serde = "user")]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct Session {
    #[serde(with = "seconds")]
    pub time_budget: Duration,
    #[reducer(append)]
    pub tool_log: Vec<String>,
    /// Worked out again after a restart: never stored.
    #[serde(skip)]
    pub scratch: String,
    #[scope(turn)]
    #[default("plan")]
    pub next_step: String,
}

/// A state that nests it: the nested state's JSON is still its own.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Agent {
    #[reducer(merge)]
    pub session: Session,
    pub name: String,
}

fn session() -> Session {
    let mut session = Session::default();
    session
        .apply(
            Session::delta()
                .time_budget(Duration::from_millis(1500))
                .tool_log(["search"])
                .scratch("cache"),
        )
        .unwrap();
    session
}

#[test]
fn to_json_and_from_json_are_the_users_serde() {
    let session = session();
    let json = session.to_json().unwrap();
    assert_eq!(
        json,
        json!({"timeBudget": 1.5, "toolLog": ["search"], "nextStep": "plan"})
    );
    assert_eq!(serde_json::to_value(&session).unwrap(), json);

    // `skip` and `default`: the skipped field comes back empty.
    let back = Session::from_json(json).unwrap();
    assert_eq!(back.time_budget, Duration::from_millis(1500));
    assert_eq!(back.scratch, "");
    assert_eq!(
        Session::from_json(json!({"toolLog": ["a"]}))
            .unwrap()
            .next_step,
        "plan",
        "a missing field takes its default"
    );

    let err = Session::from_json(json!({"timeBudgt": 2})).unwrap_err();
    assert!(matches!(err, StateError::UserSerde { .. }), "{err}");
    assert!(
        err.to_string()
            .starts_with("`Session` (its own serde impls): unknown field `timeBudgt`"),
        "{err}"
    );
    let err = Session::from_json(json!([1])).unwrap_err();
    assert!(matches!(err, StateError::NotAnObject { .. }), "{err}");
}

/// `State::write_json` (what a store snapshots) is the user's serde text,
/// alone and nested in a derived state.
#[test]
fn write_json_is_the_users_serde_text() {
    let session = session();
    let mut text = Vec::new();
    session.write_json(&mut text).unwrap();
    assert_eq!(text, serde_json::to_vec(&session).unwrap());
    let agent = Agent {
        session,
        name: "planner".into(),
    };
    let mut text = Vec::new();
    agent.write_json(&mut text).unwrap();
    assert_eq!(text, serde_json::to_vec(&agent).unwrap());
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&text).unwrap()["session"]["timeBudget"],
        json!(1.5)
    );
}

#[test]
fn get_and_set_read_and_write_the_same_json() {
    let mut session = session();
    assert_eq!(session.get("timeBudget").unwrap(), json!(1.5));
    assert_eq!(session.get("toolLog.0").unwrap(), json!("search"));

    session.set("timeBudget", json!(2.25)).unwrap();
    assert_eq!(session.time_budget, Duration::from_millis(2250));

    // Refused by the user's `Deserialize`: nothing changes.
    let before = session.clone();
    let err = session.set("timeBudget", json!(-1.0)).unwrap_err();
    assert!(matches!(err, StateError::UserSerde { .. }), "{err}");
    assert_eq!(session, before);
    // A key the user's `Serialize` leaves out is not there to read.
    let err = session.get("scratch").unwrap_err();
    assert!(matches!(err, StateError::UnknownField { .. }), "{err}");
}

#[test]
fn deltas_and_turns_work_as_for_any_state() {
    let mut session = session();
    session
        .apply_all([
            Session::delta().tool_log(["fetch"]).next_step("answer"),
            Session::delta().tool_log(["cite"]),
        ])
        .unwrap();
    assert_eq!(session.tool_log, ["search", "fetch", "cite"]);
    session.begin_turn();
    assert_eq!(session.next_step, "plan");
    // A delta's JSON is the fields' own types' (the user's `with` is on
    // the state's JSON, not on updates): a `Duration` update is serde's.
    let delta: SessionDelta =
        serde_json::from_value(json!({"timeBudget": {"secs": 4, "nanos": 0}})).unwrap();
    session.apply(delta).unwrap();
    assert_eq!(session.time_budget, Duration::from_secs(4));
}

#[test]
fn a_nested_user_serde_state_keeps_its_json() {
    let mut agent = Agent::default();
    agent
        .apply(
            Agent::delta()
                .session(Session::delta().time_budget(Duration::from_secs(3)))
                .name("a"),
        )
        .unwrap();
    let json = agent.to_json().unwrap();
    assert_eq!(json["session"]["timeBudget"], json!(3.0));
    assert_eq!(Agent::from_json(json.clone()).unwrap(), agent);
    // The outer state's own serde reads the nested state with its impls.
    let text = serde_json::to_string(&agent).unwrap();
    assert_eq!(serde_json::from_str::<Agent>(&text).unwrap(), agent);
    assert_eq!(agent.get("session.timeBudget").unwrap(), json!(3.0));
    agent.set("session.timeBudget", json!(0.5)).unwrap();
    assert_eq!(agent.session.time_budget, Duration::from_millis(500));
    let before = agent.clone();
    assert!(agent.set("session.timeBudget", json!("soon")).is_err());
    assert_eq!(agent, before);
}

#[tokio::test]
async fn a_store_snapshots_and_reloads_through_the_users_serde() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("user-serde.db");
    let store = Store::sqlite(&path).await.unwrap();
    let mut thread = store.thread::<Session>("s").await.unwrap();
    thread
        .apply(
            Session::delta()
                .time_budget(Duration::from_millis(1500))
                .tool_log(["search"]),
        )
        .await
        .unwrap();
    thread.snapshot().await.unwrap();
    thread
        .apply(Session::delta().tool_log(["more"]))
        .await
        .unwrap();
    let expected = thread.state().clone();

    let reopened = Store::sqlite(&path)
        .await
        .unwrap()
        .thread::<Session>("s")
        .await
        .unwrap();
    assert_eq!(reopened.state(), &expected);
}
