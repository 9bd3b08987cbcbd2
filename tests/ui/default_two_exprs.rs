use state_core::AgentState;

#[derive(AgentState)]
pub struct S {
    #[default(1, 2)]
    pub retries: u32,
}

fn main() {}
