use state_core::AgentState;

#[derive(AgentState)]
pub struct Base {
    pub step: u32,
}

#[derive(AgentState)]
pub struct Extended {
    #[state(flatten)]
    pub fields: Base,
}

fn main() {}
