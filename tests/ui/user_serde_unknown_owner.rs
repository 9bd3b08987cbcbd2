use serde::{Deserialize, Serialize};
use state_core::AgentState;

// The derive writes the state's serde impls unless told `serde = "user"`.
#[derive(AgentState, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[state(serde = "serde")]
pub struct S {
    pub count: u32,
}

fn main() {}
