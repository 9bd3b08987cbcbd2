use state_core::AgentState;

#[derive(AgentState)]
#[state(scope = turn, scope = persistent)]
pub struct S {
    pub next: String,
}

fn main() {}
