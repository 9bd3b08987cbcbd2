use state_core::AgentState;

#[derive(serde::Serialize, serde::Deserialize, Debug, Clone, Default)]
pub struct Config {
    pub retries: u32,
}

#[derive(AgentState)]
pub struct S {
    pub config: Config,
}

fn main() {}
