use state_core::AgentState;

#[derive(AgentState)]
pub struct S {
    #[default("a")]
    #[default("b")]
    pub next: String,
}

fn main() {}
