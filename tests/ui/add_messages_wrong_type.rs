use state_core::AgentState;

#[derive(AgentState)]
pub struct S {
    #[reducer(add_messages)]
    pub history: Vec<String>,
}

fn main() {}
