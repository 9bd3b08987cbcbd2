// `#[state(flatten)]` needs a type that derives `AgentState`.
use state_core::AgentState;

#[derive(Default, Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Settings {
    pub verbose: bool,
}

#[derive(AgentState)]
pub struct S {
    #[state(flatten)]
    pub settings: Settings,
    pub next: String,
}

fn main() {}
