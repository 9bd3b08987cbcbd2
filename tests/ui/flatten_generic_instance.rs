// A base's type must not use the state's own parameters: `Slot<T>` is one
// error here, at the type (it was seven in generated code); `Slot<u8>`
// flattens.
use state_core::{AgentState, StateField};

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Slot<T: StateField + Default> {
    pub held: T,
}

#[derive(AgentState)]
pub struct Extended<T: StateField + Default> {
    #[state(flatten)]
    pub base: Slot<T>,
    pub step: u32,
}

fn main() {}
