use state_core::AgentState;

#[derive(AgentState)]
pub struct S {
    #[reducer()]
    pub items: Vec<String>,
}

fn main() {}
