//! [`tools_condition`]: LangGraph's router to the tool node.

use crate::messages_field::{MessagesField, asks_for_tools};
use state_core::{MessageKind, State};
use state_graph::END;

/// LangGraph's `tools_condition`: `"tools"` when the last message of the
/// state is an AI message with tool calls (or calls whose arguments were
/// not JSON, which the tool node answers), else [`END`]. A router for any
/// state with a messages field (see [`ToolNode`](crate::ToolNode)):
///
/// ```
/// use state_agent::{ToolNode, tool, tools_condition};
/// use state_core::{MessagesState, State};
/// use state_graph::{END, START, StateGraph};
///
/// /// Adds two numbers.
/// #[tool]
/// fn add(a: i64, b: i64) -> i64 {
///     a + b
/// }
///
/// let mut g = StateGraph::<MessagesState>::new();
/// g.add_node("agent", |_: &MessagesState| MessagesState::delta());
/// g.add_node("tools", ToolNode::new([add]));
/// g.add_edge(START, "agent");
/// g.add_conditional_edges("agent", tools_condition, ["tools", END]);
/// g.add_edge("tools", "agent");
/// assert!(g.compile().is_ok());
/// ```
///
/// # Panics
///
/// When the state has no messages field, or several `add_messages`
/// fields none of which is named `messages` (route with a closure over
/// the one you mean then).
pub fn tools_condition<S: State + 'static>(state: &S) -> &'static str {
    let field = MessagesField::of::<S>(None).unwrap_or_else(|e| panic!("tools_condition: {e}"));
    route(field, state)
}

/// [`tools_condition`] on a known field.
pub(crate) fn route<S: State + 'static>(field: MessagesField, state: &S) -> &'static str {
    match field.read(state).last() {
        Some(m) if m.kind() == MessageKind::Ai && asks_for_tools(m) => "tools",
        _ => END,
    }
}
