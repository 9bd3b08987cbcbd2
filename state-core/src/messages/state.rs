//! LangGraph's `MessagesState`, built in.

use super::Messages;

/// LangGraph's `MessagesState`: one field, `messages`, merged with
/// `add_messages`. Use it alone, or extend it as LangGraph's
/// `class State(MessagesState)` does, by flattening it: its `messages`
/// becomes the extension's field, and so does its setter.
///
/// ```
/// use state_core::{AgentState, MessagesState, State};
///
/// #[derive(AgentState, Debug, Clone, PartialEq)]
/// pub struct Support {
///     #[state(flatten)]
///     pub base: MessagesState,
///     pub summary: String,
/// }
///
/// let mut state = Support::default();
/// state.apply(Support::delta().messages(("user", "hi")).summary("greeting")).unwrap();
/// // A node written for `MessagesState` applies to any state that extends it.
/// state.apply(MessagesState::delta().messages(("ai", "hello")).into()).unwrap();
/// assert_eq!(state.base.messages.len(), 2);
/// assert_eq!(Support::keys(), ["messages", "summary"]);
/// ```
#[derive(crate::AgentState, Debug, Clone, PartialEq)]
#[state(crate = crate)]
pub struct MessagesState {
    /// The conversation, merged by message id (LangGraph's `add_messages`).
    #[reducer(add_messages)]
    pub messages: Messages,
}
