// A reducer that does not fit is one error at the field, even where the
// state is used.
use state_core::{AgentState, State};

#[derive(AgentState)]
pub struct S {
    #[reducer(merge)]
    pub tags: Vec<String>,
    pub next: String,
}

fn main() {
    let mut state = S::default();
    state.apply(S::delta().next("x")).unwrap();
}
