// A reducer that does not fit is one error at the field, even where the
// state is used. (For `merge` and `add_messages`, whose update type is the
// reducer's own, a second error names that type: see merge_wrong_type.)
use state_core::{AgentState, State};

#[derive(AgentState)]
pub struct S {
    #[reducer(append)]
    pub count: u32,
    pub next: String,
}

fn main() {
    let mut state = S::default();
    state.apply(S::delta().next("x")).unwrap();
}
