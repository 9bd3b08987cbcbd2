use state_core::AgentState;

// Two fields with one key would be one JSON entry.
#[derive(AgentState)]
#[serde(rename_all = "camelCase")]
pub struct S {
    pub next_node: String,
    #[serde(rename = "nextNode")]
    pub fallback: String,
}

fn main() {}
