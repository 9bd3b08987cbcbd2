use state_core::AgentState;

#[derive(AgentState)]
pub struct S {
    #[reducer("append")]
    pub items: Vec<String>,
}

fn main() {}
