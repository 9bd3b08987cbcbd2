use state_core::AgentState;

#[derive(Default, AgentState)]
pub struct S {
    pub next: String,
}

fn main() {}
