// A base must be a concrete state type, not a type parameter.
use state_core::AgentState;

#[derive(AgentState)]
pub struct Extended<B> {
    #[state(flatten)]
    pub base: B,
    pub step: u32,
}

fn main() {}
