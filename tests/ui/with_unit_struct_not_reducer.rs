use state_core::AgentState;

pub struct Tally;

#[derive(AgentState)]
pub struct S {
    #[reducer(with = Tally)]
    pub count: u32,
}

fn main() {}
