use state_core::AgentState;

#[derive(AgentState)]
#[derive(Default)]
pub struct S {
    pub next: String,
}

fn main() {}
