use state_core::AgentState;

#[derive(AgentState)]
pub struct S<C: Default + Clone + PartialEq + std::fmt::Debug> {
    // `append` needs `C` to be a collection, which the struct does not say.
    #[reducer(append)]
    pub items: C,
}

fn main() {}
