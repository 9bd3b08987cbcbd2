use state_core::AgentState;

#[derive(AgentState)]
pub struct S {
    #[state(flatten)]
    pub inner: String,
}

fn main() {}
