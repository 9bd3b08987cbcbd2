//! A state's and a delta's `Serialize` and `Deserialize` work with any
//! serde format (issue 14, item 1): JSON, MessagePack (self-describing,
//! binary) and postcard (not self-describing: it cannot read a value
//! without knowing its type, so anything read through a JSON value in
//! between would fail), and bincode. Messages keep LangChain's JSON shapes
//! in human-readable formats and a fixed layout in the others (issue 29,
//! item 1).

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

/// A state with a message history: messages write LangChain's shapes in
/// JSON and a fixed layout in the binary formats.
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

/// Messages of every shape: a tool call with nested arguments, its answer,
/// content blocks, a chat role, a name, extra keys, and a removal.
fn rich_chat_delta() -> ChatDelta {
    use serde_json::json;
    use state_core::{Message, ToolCall};
    let call = ToolCall::new(
        "search",
        json!({"q": "beam current", "limit": 3, "nested": [1.5, null, {"a": true}]}),
    )
    .with_id("call-1");
    let asking = Message::ai("let me look")
        .with_id("m2")
        .with_tool_calls(vec![call.clone()]);
    let answer = Message::tool_result(&call, "500 mA").with_id("m3");
    let blocks: Message = serde_json::from_value(json!({
        "type": "human",
        "id": "m4",
        "content": [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "x"}}],
        "name": "ana",
        "response_metadata": {"model": "m", "tokens": 12},
        "custom_key": [1, 2, 3]
    }))
    .unwrap();
    let critic = Message::chat("critic", "too long").with_id("m5");
    Chat::delta()
        .messages(vec![
            Message::human("hi").with_id("m1"),
            asking,
            answer,
            blocks,
            critic,
        ])
        .summary("rich")
}

fn rich_chat() -> Chat {
    let mut chat = Chat::default();
    chat.apply(rich_chat_delta()).unwrap();
    chat
}

/// A state and deltas (with a removal) holding messages, through `write`
/// and `read` of one format: equal after the trip, and applying alike.
fn check_messages<E: std::fmt::Debug>(
    format: &str,
    write_state: impl Fn(&Chat) -> Vec<u8>,
    write: impl Fn(&ChatDelta) -> Vec<u8>,
    read_state: impl Fn(&[u8]) -> Result<Chat, E>,
    read_delta: impl Fn(&[u8]) -> Result<ChatDelta, E>,
) {
    let chat = rich_chat();
    let bytes = write_state(&chat);
    assert_eq!(read_state(&bytes).unwrap(), chat, "{format}: state");
    let removal = Chat::delta().messages(vec![state_core::Message::remove("m3")]);
    let remove_all = Chat::delta().messages(vec![state_core::Message::remove_all()]);
    for delta in [rich_chat_delta(), removal, remove_all] {
        let bytes = write(&delta);
        let back = read_delta(&bytes).unwrap();
        assert_eq!(back, delta, "{format}: delta");
        let (mut a, mut b) = (rich_chat(), rich_chat());
        a.apply(delta).unwrap();
        b.apply(back).unwrap();
        assert_eq!(a, b, "{format}: applied");
    }
}

/// `check_messages` for one format, given how it writes and reads.
macro_rules! check_format {
    ($format:expr, |$v:ident| $write:expr, |$b:ident| $read:expr) => {
        check_messages(
            $format,
            |$v: &Chat| $write,
            |$v: &ChatDelta| $write,
            |$b: &[u8]| $read,
            |$b: &[u8]| $read,
        )
    };
}

#[test]
fn messages_round_trip_through_every_format() {
    check_format!("json", |v| serde_json::to_vec(v).unwrap(), |b| {
        serde_json::from_slice(b)
    });
    check_format!("messagepack", |v| rmp_serde::to_vec(v).unwrap(), |b| {
        rmp_serde::from_slice(b)
    });
    check_format!("postcard", |v| postcard::to_allocvec(v).unwrap(), |b| {
        postcard::from_bytes(b)
    });
    let config = bincode::config::standard();
    check_format!(
        "bincode",
        |v| bincode::serde::encode_to_vec(v, config).unwrap(),
        |b| bincode::serde::decode_from_slice(b, config).map(|(v, _)| v)
    );
}

#[test]
fn json_keeps_langchains_shape_for_messages() {
    let json = serde_json::to_value(rich_chat()).unwrap();
    assert_eq!(json["messages"][1]["type"], "ai");
    assert_eq!(json["messages"][1]["tool_calls"][0]["args"]["limit"], 3);
    assert_eq!(
        json["messages"][3]["custom_key"],
        serde_json::json!([1, 2, 3])
    );
}

#[test]
fn a_single_message_and_its_parts_round_trip_through_postcard() {
    use state_core::{Content, Message, ToolCall};
    let message = rich_chat().messages.iter().nth(3).unwrap().clone();
    let bytes = postcard::to_allocvec(&message).unwrap();
    assert_eq!(postcard::from_bytes::<Message>(&bytes).unwrap(), message);
    let call = ToolCall::new("f", serde_json::json!({"x": 1}));
    let bytes = postcard::to_allocvec(&call).unwrap();
    assert_eq!(postcard::from_bytes::<ToolCall>(&bytes).unwrap(), call);
    let content = Content::from("text");
    let bytes = postcard::to_allocvec(&content).unwrap();
    assert_eq!(postcard::from_bytes::<Content>(&bytes).unwrap(), content);
}
