use state_core::AgentState;

#[derive(AgentState)]
pub struct S {
    pub name: String,
    pub get_name: bool,
}

fn main() {}
