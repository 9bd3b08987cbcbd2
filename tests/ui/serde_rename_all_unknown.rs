use state_core::AgentState;

#[derive(AgentState)]
#[serde(rename_all = "camel")]
pub struct S {
    pub next_node: String,
}

fn main() {}
