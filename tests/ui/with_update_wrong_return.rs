use state_core::AgentState;

// A reducer returns `()` or `Result<(), E>`, not whether it changed anything.
fn push(current: &mut Vec<u32>, new: u32) -> bool {
    current.push(new);
    true
}

#[derive(AgentState)]
pub struct S {
    #[reducer(with = push, update = u32)]
    pub items: Vec<u32>,
}

fn main() {}
