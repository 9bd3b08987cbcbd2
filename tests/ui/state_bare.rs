use state_core::AgentState;

#[derive(AgentState)]
#[state]
pub struct S {
    pub next: String,
}

fn main() {}
