use state_core::AgentState;

#[derive(AgentState)]
pub struct S {
    #[reducer(merge)]
    pub tags: Vec<String>,
}

fn main() {}
