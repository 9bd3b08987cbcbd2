use state_core::AgentState;

#[derive(AgentState)]
pub struct S {
    #[state(scope = turn)]
    pub inner: String,
}

fn main() {}
