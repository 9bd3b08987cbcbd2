//! A flattened base's public setters (and `overwrite_` setters) are the
//! extension's, by the same names and with no import, for a base from
//! another crate too; a base's delta converts into the extension's.

use serde_json::json;
use state_core::{AgentState, Delta, Message, MessagesState, State};
use state_examples::agentflow::{AgentState as FlowState, AgentStateDelta as FlowDelta};

/// LangGraph's `class State(MessagesState)`, with a base from state-core.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Support {
    #[state(flatten)]
    pub base: MessagesState,
    pub summary: String,
}

/// Two bases, one from another crate of the workspace (AgentFlow's).
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Order {
    #[state(flatten)]
    pub flow: FlowState,
    #[state(flatten)]
    pub chat: MessagesState,
    pub order_id: Option<String>,
}

/// A generic extension.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Tagged<T>
where
    T: Clone + PartialEq + std::fmt::Debug + serde::Serialize + serde::de::DeserializeOwned,
{
    #[state(flatten)]
    pub base: MessagesState,
    #[reducer(append)]
    pub tags: Vec<T>,
}

#[test]
fn inherited_setters_write_the_base() {
    let mut state = Support::default();
    let delta = Support::delta()
        .messages(("user", "hi"))
        .summary("greeting");
    assert_eq!(delta.fields().collect::<Vec<_>>(), ["messages", "summary"]);
    state.apply(delta).unwrap();
    state
        .apply(Support::delta().messages([("ai", "hello"), ("user", "bye")]))
        .unwrap();
    assert_eq!(state.base.messages.len(), 3);
    assert_eq!(state.summary, "greeting");
    state
        .apply(Support::delta().overwrite_messages([Message::system("trimmed")]))
        .unwrap();
    assert_eq!(state.base.messages.len(), 1);
    assert_eq!(
        state.get("messages").unwrap()[0]["content"],
        json!("trimmed")
    );
}

#[test]
fn a_base_from_another_crate_flattens_with_its_setters() {
    let mut order = Order::default();
    order
        .apply(
            Order::delta()
                .context_summary(Some("so far".to_owned()))
                .messages(("user", "where is my order?"))
                .order_id("o-1"),
        )
        .unwrap();
    assert_eq!(order.flow.context_summary.as_deref(), Some("so far"));
    assert_eq!(order.chat.messages.len(), 1);
    assert_eq!(order.order_id.as_deref(), Some("o-1"));
    assert_eq!(
        Order::keys(),
        [
            "context",
            "context_summary",
            "execution_meta",
            "messages",
            "order_id"
        ]
    );
}

#[test]
fn a_base_delta_converts_into_the_extension_delta() {
    // A node written for a base works in any state that extends it.
    let from_flow: OrderDelta = FlowDelta::default()
        .context_summary(Some("s".into()))
        .into();
    let from_chat: OrderDelta = MessagesState::delta().messages(("ai", "ok")).into();
    let mut order = Order::default();
    order.apply_all([from_flow, from_chat]).unwrap();
    assert_eq!(order.flow.context_summary.as_deref(), Some("s"));
    assert_eq!(order.chat.messages[0].text(), "ok");

    let mut tagged = Tagged::<u8>::default();
    let delta: TaggedDelta<u8> = MessagesState::delta().messages(("user", "x")).into();
    tagged.apply(delta).unwrap();
    tagged
        .apply(Tagged::<u8>::delta().messages(("ai", "y")).tags([1u8, 2]))
        .unwrap();
    assert_eq!(tagged.base.messages.len(), 2);
    assert_eq!(tagged.tags, [1, 2]);
}
