use state_core::AgentState;
use state_core::reducer::Reducer;

pub struct Push;

impl Reducer<Vec<u32>> for Push {
    type Update = u32;

    fn apply(&self, target: &mut Vec<u32>, update: u32) {
        target.push(update);
    }
}

#[derive(AgentState)]
pub struct S {
    // `Push` takes a `u32`, but `update` says `String`.
    #[reducer(with = Push, update = String)]
    pub items: Vec<u32>,
}

fn main() {}
