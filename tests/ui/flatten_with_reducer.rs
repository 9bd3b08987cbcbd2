// A flattened base keeps its own fields' reducers, scopes and defaults.
use state_core::AgentState;

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Base {
    pub step: u32,
}

#[derive(AgentState)]
pub struct Extended {
    #[state(flatten)]
    #[reducer(merge)]
    #[scope(turn)]
    pub base: Base,
}

fn main() {}
