use state_core::AgentState;

#[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq, Default)]
pub struct Config {
    pub retries: u32,
}

#[derive(AgentState)]
pub struct S {
    #[reducer(append)]
    pub configs: Vec<Config>,
}

fn main() {}
