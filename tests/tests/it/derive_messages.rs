//! `#[reducer(add_messages)]` through the derive: on `Messages` and on
//! `Vec<Message>`, in one delta and across the deltas of one superstep,
//! with atomicity when a removal names an unknown id.

use serde_json::json;
use state_core::{
    AgentState, Delta, Message, MessageKind, Messages, ReduceError, State, StateError,
};

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Chat {
    #[reducer(add_messages)]
    pub messages: Messages,
    #[reducer(append)]
    pub transcript: Vec<String>,
    pub next: String,
    /// `add_messages` on a plain Vec of messages.
    #[reducer(add_messages)]
    pub log: Vec<Message>,
}

/// The messages field declared last, for the other order of atomicity.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct MessagesLast {
    pub next: String,
    #[reducer(append)]
    pub transcript: Vec<String>,
    #[reducer(add_messages)]
    pub messages: Messages,
}

fn h(id: &str, text: &str) -> Message {
    Message::human(text).with_id(id)
}

fn ai(id: &str, text: &str) -> Message {
    Message::ai(text).with_id(id)
}

fn ids(messages: &Messages) -> Vec<&str> {
    messages.iter().filter_map(Message::id).collect()
}

fn texts(messages: &Messages) -> Vec<String> {
    messages.iter().map(Message::text).collect()
}

fn started() -> Chat {
    let mut state = Chat::default();
    state
        .apply(
            Chat::delta()
                .messages(vec![h("0", "start"), ai("1", "x")])
                .log(vec![h("0", "start")])
                .transcript(vec!["t0".to_owned()])
                .next("a"),
        )
        .unwrap();
    state
}

#[test]
fn the_setter_takes_a_vec_of_messages_and_ids_are_assigned() {
    let mut state = Chat::default();
    state
        .apply(Chat::delta().messages(vec![Message::human("hi"), h("a", "with id")]))
        .unwrap();
    assert_eq!(state.messages.len(), 2);
    let generated = state.messages[0].id().expect("an id was assigned");
    assert_eq!(
        uuid::Uuid::parse_str(generated).map(|u| u.get_version_num()),
        Ok(4)
    );
    assert_eq!(state.messages[1].id(), Some("a"));
}

#[test]
fn same_id_replaces_in_place_and_removal_drops() {
    let mut state = started();
    state
        .apply(Chat::delta().messages(vec![h("0", "edited"), ai("2", "new")]))
        .unwrap();
    assert_eq!(ids(&state.messages), ["0", "1", "2"]);
    assert_eq!(texts(&state.messages), ["edited", "x", "new"]);
    state
        .apply(Chat::delta().messages(vec![Message::remove("1")]))
        .unwrap();
    assert_eq!(ids(&state.messages), ["0", "2"]);
    state
        .apply(Chat::delta().messages(vec![Message::remove_all(), ai("z", "fresh")]))
        .unwrap();
    assert_eq!(ids(&state.messages), ["z"]);
}

#[test]
fn a_vec_of_messages_field_reduces_the_same_way() {
    let mut state = started();
    state
        .apply(Chat::delta().log(vec![h("0", "edited"), ai("2", "new"), Message::remove("0")]))
        .unwrap();
    assert_eq!(state.log, [ai("2", "new")]);
}

#[test]
fn removal_of_an_unknown_id_fails_and_changes_nothing() {
    // Messages declared first.
    let mut state = started();
    let before = state.clone();
    let before_debug = format!("{state:?}");
    let err = state
        .apply(
            Chat::delta()
                .messages(vec![ai("2", "appended first"), Message::remove("nope")])
                .transcript(vec!["t1".to_owned()])
                .next("b")
                .log(vec![h("9", "x")]),
        )
        .unwrap_err();
    assert_eq!(
        err,
        StateError::Reduce {
            field: "messages".to_owned(),
            source: ReduceError::MissingMessageId {
                id: "nope".to_owned()
            },
        }
    );
    assert_eq!(
        state_tests::report(&err),
        r#"field "messages": the reducer refused the update: cannot remove message "nope": no message has that id"#
    );
    assert_eq!(format!("{state:?}"), before_debug);
    assert_eq!(state, before);

    // The Vec<Message> field, declared last, fails the same way.
    let err = state
        .apply(
            Chat::delta()
                .messages(vec![ai("2", "ok")])
                .log(vec![Message::remove("nope")]),
        )
        .unwrap_err();
    assert_eq!(err.field(), Some("log"));
    assert_eq!(state, before);

    // Messages declared last.
    let mut state = MessagesLast::default();
    state
        .apply(MessagesLast::delta().messages(vec![h("0", "start")]))
        .unwrap();
    let before = state.clone();
    let before_debug = format!("{state:?}");
    let err = state
        .apply(
            MessagesLast::delta()
                .next("b")
                .transcript(vec!["t1".to_owned()])
                .messages(vec![Message::remove("nope")]),
        )
        .unwrap_err();
    assert_eq!(err.field(), Some("messages"));
    assert_eq!(format!("{state:?}"), before_debug);
    assert_eq!(state, before);
}

#[test]
fn remove_then_re_add_in_one_superstep_appends_at_the_end() {
    // Two deltas of one step: two add_messages calls, as in LangGraph.
    let mut state = started();
    state
        .apply_all([
            Chat::delta().messages(vec![Message::remove("0")]),
            Chat::delta().messages(vec![h("0", "again")]),
        ])
        .unwrap();
    assert_eq!(ids(&state.messages), ["1", "0"]);
    assert_eq!(texts(&state.messages), ["x", "again"]);

    // Both in one update: the removal is cancelled, the message keeps its place.
    let mut state = started();
    state
        .apply(Chat::delta().messages(vec![Message::remove("0"), h("0", "again")]))
        .unwrap();
    assert_eq!(ids(&state.messages), ["0", "1"]);
    assert_eq!(texts(&state.messages), ["again", "x"]);
}

#[test]
fn merged_deltas_keep_the_superstep_semantics() {
    let a = Chat::delta().messages(vec![Message::remove("0")]);
    let b = Chat::delta().messages(vec![h("0", "again")]);
    let merged = a.clone().merge(b.clone()).unwrap();
    let mut via_merge = started();
    via_merge.apply(merged.clone()).unwrap();
    let mut via_all = started();
    via_all.apply_all([a, b]).unwrap();
    assert_eq!(via_merge, via_all);
    assert_eq!(ids(&via_merge.messages), ["1", "0"]);
    // The two writes stay apart in JSON too, and read back as they were.
    let json = serde_json::to_value(&merged).unwrap();
    assert_eq!(
        json,
        json!({"messages": {"__writes__": [
            [{"type": "remove", "content": "", "id": "0"}],
            [{"type": "human", "content": "again", "id": "0"}],
        ]}})
    );
    assert_eq!(ChatDelta::from_json(json).unwrap(), merged);

    // Without a removal in the first write they fold into one.
    let folded = Chat::delta()
        .messages(vec![ai("2", "a")])
        .merge(Chat::delta().messages(vec![Message::remove("2")]))
        .unwrap();
    assert_eq!(
        serde_json::to_value(&folded).unwrap(),
        json!({"messages": [
            {"type": "ai", "content": "a", "id": "2"},
            {"type": "remove", "content": "", "id": "2"},
        ]})
    );
    let mut state = started();
    state.apply(folded).unwrap();
    assert_eq!(ids(&state.messages), ["0", "1"]);
}

#[test]
fn two_deltas_removing_the_same_id_fail_and_change_nothing() {
    let mut state = started();
    let before = state.clone();
    let err = state
        .apply_all([
            Chat::delta()
                .messages(vec![Message::remove("0")])
                .transcript(vec!["t".to_owned()]),
            Chat::delta().next("b"),
            Chat::delta().messages(vec![Message::remove("0")]),
        ])
        .unwrap_err();
    assert_eq!(
        err,
        StateError::Reduce {
            field: "messages".to_owned(),
            source: ReduceError::MissingMessageId { id: "0".to_owned() },
        }
    );
    assert_eq!(state, before);
    // Removing it twice in one update is fine.
    state
        .apply(Chat::delta().messages(vec![Message::remove("0"), Message::remove("0")]))
        .unwrap();
    assert_eq!(ids(&state.messages), ["1"]);
}

#[test]
fn parallel_updates_of_one_id_later_delta_wins_in_place() {
    let mut state = started();
    state
        .apply_all([
            Chat::delta().messages(vec![h("0", "by a")]),
            Chat::delta().messages(vec![h("0", "by b")]),
        ])
        .unwrap();
    assert_eq!(ids(&state.messages), ["0", "1"]);
    assert_eq!(texts(&state.messages), ["by b", "x"]);
}

#[test]
fn overwrite_bypasses_add_messages() {
    let mut state = started();
    state
        .apply_all([
            Chat::delta().messages(vec![ai("2", "lost")]),
            Chat::delta().overwrite_messages(Messages::from(vec![Message::human("no id")])),
        ])
        .unwrap();
    assert_eq!(state.messages.len(), 1);
    assert_eq!(state.messages[0].id(), None, "an overwrite assigns no id");
    // The next add_messages gives it one.
    state
        .apply(Chat::delta().messages(vec![ai("3", "next")]))
        .unwrap();
    assert!(state.messages[0].id().is_some());
    assert_eq!(state.messages[1].id(), Some("3"));
}

#[test]
fn messages_in_a_json_delta() {
    let delta: ChatDelta = serde_json::from_value(json!({
        "messages": [
            "a bare string is a human message",
            {"role": "assistant", "content": "openai shape", "id": "o"},
            {"type": "human", "content": "langchain shape", "id": "l"},
            {"type": "remove", "id": "0"},
        ],
    }))
    .unwrap();
    let mut state = started();
    state.apply(delta).unwrap();
    let texts = texts(&state.messages);
    assert_eq!(
        texts,
        [
            "x",
            "a bare string is a human message",
            "openai shape",
            "langchain shape"
        ]
    );
    assert_eq!(state.messages[2].id(), Some("o"));

    let delta: ChatDelta = serde_json::from_value(json!({
        "messages": {"__overwrite__": [{"type": "ai", "content": "only", "id": "k"}]},
    }))
    .unwrap();
    assert_eq!(
        delta,
        Chat::delta().overwrite_messages(Messages::from(vec![ai("k", "only")]))
    );
    assert_eq!(
        serde_json::to_value(&delta).unwrap(),
        json!({"messages": {"__overwrite__": [{"type": "ai", "content": "only", "id": "k"}]}})
    );
    let err = serde_json::from_value::<ChatDelta>(json!({"messages": [{"type": "nope"}]}))
        .unwrap_err()
        .to_string();
    assert!(err.starts_with(r#"field "messages": "#), "{err}");
    let err = serde_json::from_value::<ChatDelta>(json!({"mesages": []}))
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        r#"`Chat` has no field `mesages`; did you mean `messages`?"#
    );
}

/// Setters take the values a LangGraph node writes, without `.to_string()`
/// or `vec![]`: LangChain's `(role, content)` tuples, one or a list, a list
/// of messages as a whole new history, and lists of `&str` for a list of
/// strings.
#[test]
fn setters_take_natural_update_values() {
    let mut chat = Chat::default();
    chat.apply(Chat::delta().messages(("user", "hi"))).unwrap();
    chat.apply(Chat::delta().messages([("ai", "hello"), ("system", "be brief")]))
        .unwrap();
    chat.apply(Chat::delta().messages([("human", "and you?")]))
        .unwrap();
    let kinds = chat.messages.iter().map(|m| m.kind()).collect::<Vec<_>>();
    assert_eq!(
        kinds,
        [
            MessageKind::Human,
            MessageKind::Ai,
            MessageKind::System,
            MessageKind::Human
        ]
    );
    assert_eq!(chat.messages[1].text(), "hello");
    assert!(
        chat.messages.iter().all(|m| m.id().is_some()),
        "ids assigned"
    );

    chat.apply(Chat::delta().overwrite_messages(vec![Message::human("again")]))
        .unwrap();
    assert_eq!(chat.messages.len(), 1);
    chat.apply(Chat::delta().overwrite_messages([Message::ai("a"), Message::ai("b")]))
        .unwrap();
    assert_eq!(chat.messages.len(), 2);
    chat.apply(Chat::delta().overwrite_messages([("user", "fresh start")]))
        .unwrap();
    assert_eq!(chat.messages[0].text(), "fresh start");

    chat.apply(Chat::delta().transcript(["a", "b"])).unwrap();
    chat.apply(Chat::delta().transcript(["c"])).unwrap();
    // `Vec::new()` still infers its element type.
    chat.apply(Chat::delta().transcript(Vec::new())).unwrap();
    chat.apply(Chat::delta().transcript(&["d", "e"][..]))
        .unwrap();
    chat.apply(Chat::delta().transcript("f")).unwrap();
    assert_eq!(chat.transcript, ["a", "b", "c", "d", "e", "f"]);
    // A `Vec<Message>` field takes tuples too.
    chat.apply(Chat::delta().log(("ai", "noted"))).unwrap();
    assert_eq!(chat.log[0].kind(), MessageKind::Ai);
}

/// A tool call is answered without unwrapping its optional id.
#[test]
fn a_tool_call_is_answered_with_tool_result() {
    let call = state_core::ToolCall::new("add", json!({"a": 2, "b": 2})).with_id("c1");
    let mut chat = Chat::default();
    chat.apply(Chat::delta().messages([
        Message::ai("").with_tool_calls(vec![call.clone()]),
        Message::tool_result(&call, "4"),
    ]))
    .unwrap();
    assert_eq!(chat.messages[1].tool_call_id(), Some("c1"));
    assert_eq!(chat.messages[1].kind(), MessageKind::Tool);
}
