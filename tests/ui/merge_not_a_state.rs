// `merge` on a struct that does not derive `AgentState` (nor is a map).
use state_core::AgentState;

#[derive(Default, Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Progress {
    pub stage: String,
}

#[derive(AgentState)]
pub struct S {
    #[reducer(merge)]
    pub progress: Progress,
}

fn main() {}
