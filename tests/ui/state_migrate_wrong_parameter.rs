use state_core::AgentState;

// The data by shared reference: a migration edits the JSON in place.
fn upgrade(_from: u32, data: &serde_json::Value) {
    let _ = data;
}

#[derive(AgentState)]
#[state(version = 2, migrate = upgrade)]
pub struct S {
    pub next: String,
}

fn main() {}
