//! Every accepted spelling of the attributes.
use state_core::{AgentState, Messages, State};
use std::collections::BTreeMap;

fn keep_max(current: &mut i64, new: i64) {
    *current = (*current).max(new);
}

fn bounded(current: &mut u32, add: u32) -> Result<(), String> {
    *current = current.checked_add(add).ok_or("overflow")?;
    Ok(())
}

/// A reducer whose update is not the field's type.
pub struct PushOne;

impl state_core::Reducer<Vec<u32>> for PushOne {
    type Update = u32;

    fn apply(&self, target: &mut Vec<u32>, update: u32) {
        target.push(update);
    }
}

#[derive(AgentState, Debug, Clone, PartialEq)]
#[state(scope = "turn", delta = Patch, crate = ::state_core)]
#[state(json_schema)]
pub struct S {
    #[reducer(add_messages)]
    #[scope(persistent)]
    pub messages: Messages,
    #[reducer(append,)]
    pub log: Vec<String>,
    #[reducer(merge)]
    pub meta: BTreeMap<String, f64>,
    #[reducer(with = keep_max)]
    pub best: i64,
    #[reducer(with = bounded)]
    pub total: u32,
    #[reducer(with = PushOne, update = u32,)]
    pub pushed: Vec<u32>,
    #[default("supervisor")]
    pub next: String,
    #[default((1, 2),)]
    pub pair: (u32, u32),
}

fn main() {
    let mut state = S::default();
    let patch: Patch = S::delta().pushed(3u32).best(4).log(vec!["x".to_string()]);
    state.apply(patch).unwrap();
    assert_eq!(state.pushed, [3]);
    state.begin_turn();
    assert_eq!(state.next, "supervisor");
}
