use state_core::AgentState;

#[derive(AgentState)]
pub enum S {
    A,
    B,
}

fn main() {}
