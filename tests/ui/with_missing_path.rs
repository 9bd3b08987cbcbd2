use state_core::AgentState;

#[derive(AgentState)]
pub struct S {
    #[reducer(with)]
    pub best: i64,
}

fn main() {}
