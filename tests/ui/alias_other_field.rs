use state_core::AgentState;

#[derive(AgentState)]
pub struct S {
    #[state(alias = "title")]
    pub name: String,
    pub title: String,
}

fn main() {}
