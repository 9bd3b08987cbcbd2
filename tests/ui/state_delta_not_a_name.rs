use state_core::AgentState;

#[derive(AgentState)]
#[state(delta = "S Patch")]
pub struct S {
    pub next: String,
}

fn main() {}
