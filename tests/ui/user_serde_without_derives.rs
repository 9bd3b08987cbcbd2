use state_core::AgentState;

// `serde = "user"` says the user derives the state's serde impls: without
// them, the state has none.
#[derive(AgentState, Debug, Clone, PartialEq)]
#[state(serde = "user")]
pub struct S {
    pub count: u32,
}

fn main() {}
