use state_core::AgentState;

fn upgrade(_from: u32, _data: &mut serde_json::Value) -> u32 {
    0
}

#[derive(AgentState)]
#[state(version = 2, migrate = upgrade)]
pub struct S {
    pub next: String,
}

fn main() {}
