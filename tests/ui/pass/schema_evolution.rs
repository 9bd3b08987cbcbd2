use state_core::{AgentState, State};

fn upgrade(_from: u32, _data: &mut serde_json::Value) {}

#[derive(AgentState)]
#[state(version = 3, migrate = upgrade)]
pub struct S {
    #[state(alias = "old_next", alias = "older_next")]
    pub next: String,
}

fn main() {
    assert_eq!(S::schema().version(), 3);
    assert_eq!(S::schema().fields[0].aliases(), ["old_next", "older_next"]);
}
