use state_core::AgentState;

#[derive(AgentState)]
pub struct S {
    #[reducer(append)]
    pub count: u32,
}

fn main() {}
