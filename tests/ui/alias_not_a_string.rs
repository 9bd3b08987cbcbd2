use state_core::AgentState;

#[derive(AgentState)]
pub struct S {
    #[state(alias = old_name)]
    pub name: String,
}

fn main() {}
