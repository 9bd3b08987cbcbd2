// A field named like the `push_` setter of a list field clashes with it.
use state_core::AgentState;

#[derive(AgentState)]
pub struct Research {
    #[reducer(append)]
    pub items: Vec<String>,
    pub push_items: bool,
}

fn main() {}
