use state_core::AgentState;

#[derive(AgentState)]
#[state(json_schema = true)]
pub struct S {
    pub next: String,
}

fn main() {}
