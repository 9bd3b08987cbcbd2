use state_core::AgentState;

#[derive(AgentState)]
#[state(scop = turn)]
pub struct S {
    #[reducer(apend)]
    pub items: Vec<String>,
    #[scope(trun)]
    #[scope(turn)]
    pub next: String,
    #[default]
    pub count: u32,
}

fn main() {}
