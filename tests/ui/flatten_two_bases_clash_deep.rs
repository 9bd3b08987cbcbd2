// Two flattened bases may not share a field name, at any depth: here a
// base's field and a field of the other base's base.
use state_core::AgentState;

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Root {
    pub step: u32,
}

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Framework {
    #[state(flatten)]
    pub root: Root,
}

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Tracking {
    pub step: u32,
    pub source: String,
}

#[derive(AgentState)]
pub struct Extended {
    #[state(flatten)]
    pub framework: Framework,
    #[state(flatten)]
    pub tracking: Tracking,
}

fn main() {}
