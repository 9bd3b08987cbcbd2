//! Replay exactness: whatever applying would choose at random (message
//! ids) is fixed when an update enters a delta, by a setter or by JSON
//! decoding (`Reducer::prepare`). So a state rebuilt by replaying the JSON
//! of every step applied to a live state equals the live state, as a store
//! that logs steps and replays them needs.

use serde_json::{Value, json};
use state_core::reducer::{AddMessages, Reducer};
use state_core::{AgentState, Delta, Message, Messages, State, Written};

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Notes {
    #[reducer(add_messages)]
    pub notes: Messages,
    #[scope(turn)]
    pub stage: String,
}

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Chat {
    #[reducer(add_messages)]
    pub messages: Messages,
    #[reducer(append)]
    pub log: Vec<String>,
}

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Agent {
    #[state(flatten)]
    pub chat: Chat,
    /// `add_messages` on a plain Vec.
    #[reducer(add_messages)]
    pub drafts: Vec<Message>,
    #[reducer(merge)]
    pub side: Notes,
    pub next: String,
}

fn id_of(delta_json: &Value, pointer: &str) -> String {
    delta_json
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("no id at {pointer} in {delta_json}"))
        .to_owned()
}

#[test]
fn a_setter_fixes_the_id_before_the_delta_is_logged() {
    let d = Chat::delta().messages(vec![Message::ai("x")]);
    let id = d.get_messages().and_then(Written::update).unwrap()[0]
        .id()
        .expect("the setter gave it an id")
        .to_owned();
    assert!(uuid::Uuid::parse_str(&id).is_ok_and(|u| u.get_version_num() == 4));
    let json = serde_json::to_value(&d).unwrap();
    assert_eq!(id_of(&json, "/messages/0/id"), id);
    let mut chat = Chat::default();
    chat.apply(d).unwrap();
    assert_eq!(chat.messages[0].id(), Some(id.as_str()));
    // A removal gets no id of its own; a message with an id keeps it.
    let d = Chat::delta().messages(vec![
        Message::remove(id.clone()),
        Message::ai("y").with_id("y"),
    ]);
    let ids: Vec<_> = d
        .get_messages()
        .and_then(Written::update)
        .unwrap()
        .iter()
        .map(Message::id)
        .collect();
    assert_eq!(ids, [Some(id.as_str()), Some("y")]);
}

#[test]
fn conversions_vec_fields_and_nested_states_are_prepared_too() {
    let d = Agent::delta()
        .drafts(vec![Message::human("draft")])
        .side(Notes::delta().notes(vec![Message::ai("note")]));
    assert!(
        d.get_drafts().and_then(Written::update).unwrap()[0]
            .id()
            .is_some()
    );
    let side = d.get_side().and_then(Written::update).unwrap();
    assert!(
        side.get_notes().and_then(Written::update).unwrap()[0]
            .id()
            .is_some()
    );
    let d = AgentDelta::from(Chat::delta().messages(vec![Message::from("a bare string")]));
    let chat = d.get_chat();
    assert!(
        chat.get_messages().and_then(Written::update).unwrap()[0]
            .id()
            .is_some()
    );
}

#[test]
fn decoding_fixes_the_id() {
    let d = ChatDelta::from_json(json!({"messages": [{"type": "ai", "content": "x"}]})).unwrap();
    let id = d.get_messages().and_then(Written::update).unwrap()[0]
        .id()
        .expect("decoding gave it an id")
        .to_owned();
    // The decoded delta is what is applied, and what a log would hold.
    let json = serde_json::to_value(&d).unwrap();
    assert_eq!(id_of(&json, "/messages/0/id"), id);
    assert_eq!(ChatDelta::from_json(json).unwrap(), d, "an id is kept");
    let mut chat = Chat::default();
    chat.apply(d).unwrap();
    assert_eq!(chat.messages[0].id(), Some(id.as_str()));

    // serde's Deserialize, one message for a list, nested states, bases and
    // the writes of a merged step: all decoded through the same path.
    let d: AgentDelta = serde_json::from_value(json!({
        "messages": {"type": "human", "content": "one"},
        "drafts": {"__writes__": [[{"type": "ai", "content": "a"}], "b"]},
        "side": {"notes": [{"type": "ai", "content": "n"}]},
    }))
    .unwrap();
    let json = serde_json::to_value(&d).unwrap();
    for pointer in [
        "/messages/0/id",
        "/drafts/__writes__/0/0/id",
        "/drafts/__writes__/1/0/id",
        "/side/notes/0/id",
    ] {
        id_of(&json, pointer);
    }
    assert_eq!(AgentDelta::from_json(json).unwrap(), d);
}

#[test]
fn prepare_is_the_reducers_and_the_function_still_assigns_at_apply() {
    let mut update = vec![Message::ai("a"), Message::remove("r")];
    <AddMessages as Reducer<Vec<Message>>>::prepare(&AddMessages, &mut update);
    assert!(update[0].id().is_some());
    assert_eq!(update[1].id(), Some("r"));
    // Calling the function directly: ids are drawn as it merges.
    let mut history = Messages::new();
    state_core::reducer::add_messages(&mut history, vec![Message::ai("b")]).unwrap();
    assert!(history[0].id().is_some());
}

#[test]
fn history_messages_without_an_id_get_the_same_id_on_replay() {
    // `set` and overwrites write messages as they are, ids or not.
    let history = json!([{"type": "human", "content": "no id"}]);
    let step = Chat::delta().messages(vec![Message::ai("reply")]);
    let run = || {
        let mut chat = Chat::default();
        chat.set("messages", history.clone()).unwrap();
        assert_eq!(chat.messages[0].id(), None);
        chat.apply(step.clone()).unwrap();
        chat
    };
    let (first, second) = (run(), run());
    let given = first.messages[0]
        .id()
        .expect("the history message got an id");
    assert_eq!(
        second, first,
        "the same step on the same history: the same ids"
    );
    assert_ne!(Some(given), first.messages[1].id());
    // An update that brings no id leaves such messages as they are.
    let mut chat = Chat::default();
    chat.set("messages", history.clone()).unwrap();
    chat.apply(Chat::delta().messages(vec![])).unwrap();
    assert_eq!(chat.messages[0].id(), None);
}

/// One step a store would log: its JSON text, and how to replay it.
enum Step {
    Apply(AgentDelta),
    ApplyAll(Vec<AgentDelta>),
    Set(&'static str, Value),
    BeginTurn,
}

/// Applies `step` to `live` and returns the JSON text a store would log.
fn live_step(live: &mut Agent, step: Step) -> (char, String) {
    match step {
        Step::Apply(delta) => {
            let text = serde_json::to_string(&delta).unwrap();
            live.apply(delta).unwrap();
            ('a', text)
        }
        Step::ApplyAll(deltas) => {
            let merged = deltas
                .iter()
                .cloned()
                .try_fold(Agent::delta(), Delta::merge)
                .unwrap();
            let text = serde_json::to_string(&merged).unwrap();
            live.apply_all(deltas).unwrap();
            ('a', text)
        }
        Step::Set(key, value) => {
            live.set(key, value.clone()).unwrap();
            ('s', json!([key, value]).to_string())
        }
        Step::BeginTurn => {
            live.begin_turn();
            ('t', String::new())
        }
    }
}

/// Replays one logged step, from its text alone.
fn replay_step(state: &mut Agent, (kind, text): &(char, String)) {
    match kind {
        'a' => state
            .apply_json(serde_json::from_str(text).unwrap())
            .unwrap(),
        's' => {
            let [key, value]: [Value; 2] = serde_json::from_str(text).unwrap();
            state.set(key.as_str().unwrap(), value).unwrap();
        }
        _ => state.begin_turn(),
    }
}

#[test]
fn replaying_the_logged_json_rebuilds_the_live_state() {
    let steps = vec![
        Step::Set(
            "messages",
            json!([{"type": "system", "content": "be brief"}]),
        ),
        Step::Apply(
            Agent::delta()
                .next("think")
                .drafts(vec![Message::ai("draft"), Message::human("q")])
                .side(Notes::delta().stage("s1").notes(vec![Message::ai("n1")])),
        ),
        Step::Apply(AgentDelta::from(
            Chat::delta()
                .messages(vec![Message::human("hi"), "hello".into()])
                .log(vec!["greeted".into()]),
        )),
        Step::ApplyAll(vec![
            Agent::delta()
                .side(Notes::delta().notes(vec![Message::ai("n2")]))
                .chat(Chat::delta().messages(vec![Message::ai("a")])),
            Agent::delta()
                .side(Notes::delta().notes(vec![Message::ai("n3")]))
                .drafts(vec![Message::remove_all(), Message::ai("fresh")]),
        ]),
        Step::BeginTurn,
        Step::Apply(
            Agent::delta()
                .overwrite_drafts(vec![Message::ai("kept, no id")])
                .side(Notes::delta().overwrite_notes(Messages::from(vec![Message::ai("bare")]))),
        ),
        Step::Apply(
            Agent::delta()
                .drafts(vec![Message::ai("after overwrite")])
                .side(Notes::delta().notes(vec![Message::ai("after")])),
        ),
        Step::Apply(
            AgentDelta::from_json(json!({
                "messages": [{"role": "user", "content": "from JSON, no id"}],
                "side": {"notes": "a bare string"},
            }))
            .unwrap(),
        ),
    ];
    let mut live = Agent::default();
    let mut log = Vec::new();
    for step in steps {
        log.push(live_step(&mut live, step));
    }
    let mut replayed = Agent::default();
    for logged in &log {
        replay_step(&mut replayed, logged);
    }
    assert_eq!(replayed, live);
    // Every message ended up with an id, and the ids are the live ones.
    let all = live
        .chat
        .messages
        .iter()
        .chain(&live.drafts)
        .chain(live.side.notes.iter());
    assert!(all.clone().all(|m| m.id().is_some()), "{live:#?}");
    assert!(all.count() > 8);
}
