use state_core::AgentState;

#[derive(AgentState)]
pub struct S {
    #[reducer(append_by_id)]
    pub items: Vec<String>,
}

fn main() {}
