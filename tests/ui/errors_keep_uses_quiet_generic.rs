use state_core::{AgentState, State};

#[derive(AgentState)]
#[state(delta = "Patch")]
pub struct S<'a, T: Clone> {
    #[scope(trun)]
    pub items: Vec<T>,
    pub name: std::borrow::Cow<'a, str>,
}

fn main() {
    let mut state = S::<u32>::default();
    state.apply(S::delta().items(vec![1]).name("x")).unwrap();
    let _: Patch<u32> = S::<u32>::delta();
}
