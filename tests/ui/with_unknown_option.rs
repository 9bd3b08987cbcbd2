use state_core::AgentState;

fn keep_max(current: &mut i64, new: i64) {
    *current = (*current).max(new);
}

#[derive(AgentState)]
pub struct S {
    #[reducer(with = keep_max, updat = i64)]
    pub best: i64,
}

fn main() {}
