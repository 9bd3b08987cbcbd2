// `#[state(json_schema)]` does not combine with `#[state(flatten)]` yet.
use state_core::AgentState;

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Base {
    pub step: u32,
}

#[derive(AgentState)]
#[state(json_schema)]
pub struct Extended {
    #[state(flatten)]
    pub base: Base,
    pub order_id: String,
}

fn main() {}
