use state_core::AgentState;

#[derive(AgentState)]
pub struct S {
    #[reducer(append, foo)]
    pub items: Vec<String>,
}

fn main() {}
