use state_core::AgentState;

#[derive(AgentState)]
pub struct Base {
    pub next: String,
}

#[derive(AgentState)]
pub struct S {
    #[state(flatten, alias = "old")]
    pub base: Base,
}

fn main() {}
