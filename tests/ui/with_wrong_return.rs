use state_core::AgentState;

fn keep_max(current: &mut i64, new: i64) -> bool {
    *current = (*current).max(new);
    true
}

#[derive(AgentState)]
pub struct S {
    #[reducer(with = keep_max)]
    pub best: i64,
}

fn main() {}
