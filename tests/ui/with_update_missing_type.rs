use state_core::AgentState;

fn add(current: &mut Vec<u32>, new: Vec<u32>) {
    current.extend(new);
}

#[derive(AgentState)]
pub struct S {
    #[reducer(with = add, update =)]
    pub items: Vec<u32>,
}

fn main() {}
