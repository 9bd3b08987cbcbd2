use state_core::AgentState;

#[derive(AgentState)]
#[state(crate = 5)]
pub struct S {
    pub next: String,
}

fn main() {}
