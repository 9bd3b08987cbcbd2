//! A list field's `push_x` adds one item, and no setter wraps a value of
//! any type into a list or an `Option` (issue 14, item 5): a JSON array
//! for a `Vec<Value>` field is not silently one item.

use serde_json::{Value, json};
use state_core::reducer::HasId;
use state_core::{AgentState, Message, Messages, State, Written};

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Finding {
    pub id: String,
    pub score: u32,
}

impl HasId for Finding {
    type Id = String;
    fn item_id(&self) -> Option<&String> {
        Some(&self.id)
    }
}

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Research {
    #[reducer(add_messages)]
    pub messages: Messages,
    #[reducer(append)]
    pub items: Vec<Value>,
    #[reducer(append)]
    pub chunks: Vec<Vec<u8>>,
    #[reducer(append)]
    pub steps: Vec<String>,
    #[reducer(append_by_id)]
    pub findings: Vec<Finding>,
    pub note: Option<Value>,
}

#[test]
fn push_adds_one_item_however_it_looks() {
    let mut state = Research::default();
    state
        .apply(
            Research::delta()
                .push_items(json!([1, 2, 3]))
                .push_items(json!("x"))
                .push_chunks(vec![1u8, 2])
                .push_steps("plan")
                .push_steps("act"),
        )
        .unwrap();
    assert_eq!(state.items, [json!([1, 2, 3]), json!("x")]);
    assert_eq!(state.chunks, [vec![1u8, 2]]);
    assert_eq!(state.steps, ["plan", "act"]);
    // The plain setter takes the list, element by element.
    state
        .apply(Research::delta().items(vec![json!(4), json!(5)]))
        .unwrap();
    assert_eq!(state.items.len(), 4);
}

#[test]
fn push_follows_the_setter_and_an_overwrite() {
    let delta = Research::delta().steps(["a", "b"]).push_steps("c");
    let written = delta.get_steps().and_then(Written::update).cloned();
    assert_eq!(
        written,
        Some(vec!["a".to_owned(), "b".to_owned(), "c".to_owned()])
    );
    let mut state = Research::default();
    state.apply(Research::delta().steps(["old"])).unwrap();
    // After an overwrite, the item is added to the new value.
    state
        .apply(
            Research::delta()
                .overwrite_steps(vec!["new".to_owned()])
                .push_steps("more"),
        )
        .unwrap();
    assert_eq!(state.steps, ["new", "more"]);
}

#[test]
fn push_messages_takes_a_message_or_a_tuple_and_gives_it_an_id() {
    let delta = Research::delta()
        .push_messages(("user", "hi"))
        .push_messages(Message::ai("hello").with_id("a1"));
    let written = delta.get_messages().and_then(Written::update).unwrap();
    assert_eq!(written.len(), 2);
    assert!(written[0].id().is_some(), "an id, fixed in the delta");
    let mut state = Research::default();
    state.apply(delta).unwrap();
    // A message with a known id replaces it, as `add_messages` does.
    state
        .apply(Research::delta().push_messages(Message::ai("edited").with_id("a1")))
        .unwrap();
    assert_eq!(state.messages.len(), 2);
    assert_eq!(state.messages[1].text(), "edited");
    // A single message still goes through the plain setter.
    state
        .apply(Research::delta().messages(Message::human("again")))
        .unwrap();
    assert_eq!(state.messages.len(), 3);
}

#[test]
fn push_of_an_item_with_an_id_updates_it_in_place() {
    let finding = |id: &str, score| Finding {
        id: id.to_owned(),
        score,
    };
    let mut state = Research::default();
    state
        .apply(
            Research::delta()
                .push_findings(finding("f1", 1))
                .push_findings(finding("f2", 2)),
        )
        .unwrap();
    state
        .apply(Research::delta().push_findings(finding("f1", 9)))
        .unwrap();
    assert_eq!(state.findings, [finding("f1", 9), finding("f2", 2)]);
}

#[test]
fn an_option_of_json_is_set_with_some_or_none() {
    let mut state = Research::default();
    state
        .apply(Research::delta().note(Some(Value::Null)))
        .unwrap();
    assert_eq!(state.note, Some(Value::Null));
    state.apply(Research::delta().note(None)).unwrap();
    assert_eq!(state.note, None);
}
