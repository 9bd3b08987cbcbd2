use state_core::AgentState;

#[derive(AgentState)]
pub struct S {
    #[reducer(apend)]
    pub items: Vec<String>,
}

fn main() {}
