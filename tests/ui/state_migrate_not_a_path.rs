use state_core::AgentState;

#[derive(AgentState)]
#[state(migrate = "upgrade")]
pub struct S {
    pub next: String,
}

fn main() {}
