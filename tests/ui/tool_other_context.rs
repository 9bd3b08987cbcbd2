// A tool reading one context type is not a tool of a graph with
// another.
use state_agent::{ToolNode, tool};
use state_core::MessagesState;
use state_graph::{Ctx, StateGraph};

struct Admin {
    level: u8,
}
struct User;

/// Says the admin's level.
#[tool]
fn level(ctx: Ctx<Admin>) -> u8 {
    ctx.context().level
}

fn main() {
    let mut g = StateGraph::<MessagesState, User>::new();
    g.add_node("tools", ToolNode::new([level]));
    let _ = ToolNode::<MessagesState, User>::new([level]);
    let _ = User;
}
