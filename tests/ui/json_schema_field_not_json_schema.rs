use state_core::AgentState;

#[derive(serde::Serialize, serde::Deserialize, Debug, Clone, PartialEq, Default)]
pub struct Plain {
    pub x: u32,
}

#[derive(AgentState)]
#[state(json_schema)]
pub struct S {
    pub plain: Plain,
    pub next: String,
}

fn main() {}
