use state_core::AgentState;

#[derive(AgentState)]
pub struct S {
    #[scope(trun)]
    pub next: String,
}

fn main() {}
