use state_core::AgentState;

#[derive(AgentState)]
pub union S {
    a: u32,
    b: f32,
}

fn main() {}
