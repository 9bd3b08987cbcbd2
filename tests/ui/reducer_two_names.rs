use state_core::AgentState;

#[derive(AgentState)]
pub struct S {
    #[reducer(append merge)]
    pub items: Vec<String>,
}

fn main() {}
