use state_core::AgentState;

#[derive(AgentState)]
pub struct S {
    #[default(3)]
    pub next: String,
}

fn main() {}
