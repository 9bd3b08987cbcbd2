use state_core::AgentState;

#[derive(AgentState)]
pub struct S {
    #[default = 3]
    pub count: u32,
}

fn main() {}
