// An async closure node that returns `Ok(delta)` leaves its error type
// open: rustc asks for it, and the IntoNode docs say what to write
// (`Ok::<_, NodeError>(..)` or `NodeResult`).
use state_core::{AgentState, State};
use state_graph::StateGraph;
use std::sync::Arc;

#[derive(AgentState, Debug, Clone)]
struct Chat {
    reply: String,
}

fn main() {
    let mut g = StateGraph::<Chat>::new();
    g.add_node("reply", |_: Arc<Chat>| async move { Ok(Chat::delta().reply("hi")) });
}
