// A field of the extended state may not share a name with a base's field:
// both fields are pointed at.
use state_core::AgentState;

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Base {
    pub step: u32,
    pub next: String,
}

#[derive(AgentState)]
pub struct Extended {
    #[state(flatten)]
    pub base: Base,
    pub order_id: String,
    pub step: u32,
}

fn main() {}
