use state_core::AgentState;

#[derive(AgentState)]
pub struct S {
    #[reducer(with = keep_maxx)]
    pub best: i64,
}

fn main() {}
