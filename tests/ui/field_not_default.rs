use state_core::AgentState;

#[derive(serde::Serialize, serde::Deserialize, Debug, Clone, PartialEq)]
pub struct NoDefault(u32);

#[derive(AgentState)]
pub struct S {
    pub thing: NoDefault,
}

fn main() {}
