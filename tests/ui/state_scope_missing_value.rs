use state_core::AgentState;

#[derive(AgentState)]
#[state(scope)]
pub struct S {
    pub next: String,
}

fn main() {}
