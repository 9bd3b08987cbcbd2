use state_core::AgentState;

#[derive(AgentState)]
pub struct S {
    #[reducer(append, update = Vec<u32>)]
    pub items: Vec<u32>,
}

fn main() {}
