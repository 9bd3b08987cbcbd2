use state_core::AgentState;

#[derive(AgentState)]
#[state(version = 0)]
pub struct S {
    pub next: String,
}

fn main() {}
