use state_core::AgentState;

#[derive(AgentState, Default)]
pub struct S {
    pub next: String,
}

fn main() {}
