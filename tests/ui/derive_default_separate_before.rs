use state_core::AgentState;

#[derive(Default)]
#[derive(AgentState)]
pub struct S {
    pub next: String,
}

fn main() {}
