use state_core::AgentState;

fn push(current: &mut Vec<u32>, new: u32) {
    current.push(new);
}

#[derive(AgentState)]
pub struct S {
    // The function takes a `u32`, but `update` says `String`.
    #[reducer(with = push, update = String)]
    pub items: Vec<u32>,
}

fn main() {}
