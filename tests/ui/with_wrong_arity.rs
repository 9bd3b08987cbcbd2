use state_core::AgentState;

// A reducer takes the field and an update; this function takes no update.
fn clear(current: &mut Vec<u32>) {
    current.clear();
}

#[derive(AgentState)]
pub struct S {
    #[reducer(with = clear)]
    pub items: Vec<u32>,
}

fn main() {}
