use state_core::AgentState;

#[derive(AgentState)]
#[state(scop = turn)]
pub struct S {
    pub next: String,
}

fn main() {}
