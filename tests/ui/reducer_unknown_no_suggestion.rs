use state_core::AgentState;

#[derive(AgentState)]
pub struct S {
    #[reducer(sum)]
    pub total: i64,
}

fn main() {}
