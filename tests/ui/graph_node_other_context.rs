// A node reading another context type than its graph's is not a node of
// that graph: the error names the node and says whose context it must be.
use state_core::{AgentState, State};
use state_graph::{Ctx, StateGraph};

#[derive(AgentState, Debug, Clone)]
struct Chat {
    reply: String,
}

struct User {
    name: String,
}

struct Admin {
    level: u8,
}

fn greet(_: &Chat, ctx: &Ctx<Admin>) -> ChatDelta {
    Chat::delta().reply(format!("level {}", ctx.context().level))
}

fn main() {
    let mut g = StateGraph::<Chat, User>::new();
    g.add_node("greet", greet);
    let _ = User { name: String::new() }.name;
}
