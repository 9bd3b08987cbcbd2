// A tool taking one state is not a tool of a graph over another. Where
// the tool node's state is known (a typed `ToolNode`, `react_agent`), the
// error is at the tool, naming both; where the tool decides it, at the
// node, naming both states.
use state_agent::{FakeChatModel, ToolNode, react_agent, tool};
use state_core::{AgentState, MessagesState};
use state_graph::StateGraph;

#[derive(AgentState, Debug, Clone)]
struct Support {
    #[state(flatten)]
    base: MessagesState,
    customer: String,
}

/// Says who the customer is.
#[tool]
fn whoami(state: &Support) -> String {
    state.customer.clone()
}

/// Adds.
#[tool]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn main() {
    let mut g = StateGraph::<MessagesState>::new();
    g.add_node("tools", ToolNode::new([add, whoami]));
    let _ = ToolNode::<MessagesState>::new([add, whoami]);
    let _ = react_agent(FakeChatModel::new([]), [whoami]);
}
