use state_core::AgentState;

pub struct Opaque;

#[derive(AgentState)]
pub struct S {
    pub thing: Opaque,
}

fn main() {}
