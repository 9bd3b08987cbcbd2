use state_core::AgentState;

#[derive(AgentState)]
#[state(scope = weekly)]
pub struct S {
    pub next: String,
}

fn main() {}
