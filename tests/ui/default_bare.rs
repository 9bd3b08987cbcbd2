use state_core::AgentState;

#[derive(AgentState)]
pub struct S {
    #[default]
    pub next: String,
}

fn main() {}
