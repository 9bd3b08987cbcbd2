use state_core::AgentState;

#[derive(AgentState)]
pub struct S {
    #[scope(turn)]
    #[default("three")]
    pub count: u32,
}

fn main() {}
