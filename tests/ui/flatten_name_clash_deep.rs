// A field of the extended state may not share a name with a field of a
// base of its base: the clash is reported once, at the field.
use state_core::AgentState;

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Root {
    pub step: u32,
}

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Mid {
    #[state(flatten)]
    pub root: Root,
    pub note: String,
}

#[derive(AgentState)]
pub struct Extended {
    #[state(flatten)]
    pub mid: Mid,
    pub step: u32,
}

fn main() {}
