use state_core::AgentState;

#[derive(AgentState)]
pub struct S {
    #[scope(turn, persistent)]
    pub next: String,
}

fn main() {}
