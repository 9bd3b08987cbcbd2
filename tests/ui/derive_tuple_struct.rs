use state_core::AgentState;

#[derive(AgentState)]
pub struct S(String, u32);

fn main() {}
