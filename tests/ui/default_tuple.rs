use state_core::AgentState;

#[derive(AgentState)]
pub struct S {
    #[default(1, 2)]
    pub pair: (u32, u32),
}

fn main() {}
