use state_core::AgentState;

#[derive(AgentState)]
pub struct S {
    #[scope("turn")]
    pub next: String,
}

fn main() {}
