use state_core::AgentState;

#[derive(AgentState)]
pub struct S {
    #[scope]
    pub next: String,
}

fn main() {}
