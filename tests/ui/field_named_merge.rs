use state_core::AgentState;

#[derive(AgentState)]
pub struct S {
    pub merge: bool,
    pub fields: Vec<String>,
}

fn main() {}
