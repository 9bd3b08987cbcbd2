use state_core::AgentState;

#[derive(AgentState)]
pub struct S {
    #[reducer(append)]
    #[reducer(replace)]
    pub items: Vec<String>,
}

fn main() {}
