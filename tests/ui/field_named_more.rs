use state_core::AgentState;

#[derive(AgentState)]
pub struct S {
    pub __more: String,
}

fn main() {}
