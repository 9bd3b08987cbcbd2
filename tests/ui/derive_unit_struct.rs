use state_core::AgentState;

#[derive(AgentState)]
pub struct S;

fn main() {}
