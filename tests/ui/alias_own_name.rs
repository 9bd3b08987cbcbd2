use state_core::AgentState;

#[derive(AgentState)]
pub struct S {
    #[state(alias = "name")]
    pub name: String,
}

fn main() {}
