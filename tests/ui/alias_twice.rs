use state_core::AgentState;

#[derive(AgentState)]
pub struct S {
    #[state(alias = "old")]
    pub name: String,
    #[state(alias = "old")]
    pub title: String,
}

fn main() {}
