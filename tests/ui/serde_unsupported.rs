use state_core::AgentState;

// The derive writes the state's serde impls: it reads `rename` only.
#[derive(AgentState)]
pub struct S {
    #[serde(skip)]
    pub cache: String,
}

fn main() {}
