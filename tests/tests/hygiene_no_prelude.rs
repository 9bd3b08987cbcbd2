//! The derive's output compiles in a crate without the implicit prelude:
//! every path it emits is absolute.
#![no_implicit_prelude]

extern crate std;

use ::state_core::{AgentState, State};

fn keep_max(current: &mut i64, new: i64) {
    if new > *current {
        *current = new;
    }
}

#[derive(AgentState)]
pub struct Plain {
    #[reducer(append)]
    pub items: std::vec::Vec<std::string::String>,
    #[scope(turn)]
    #[default("start")]
    pub next: std::string::String,
    pub note: std::option::Option<std::string::String>,
    #[reducer(with = keep_max)]
    pub best: i64,
    #[reducer(merge)]
    pub meta: std::collections::BTreeMap<std::string::String, i64>,
}

#[test]
fn derive_works_without_prelude() {
    let mut state = <Plain as std::default::Default>::default();
    let delta = Plain::delta()
        .items(std::vec![std::borrow::ToOwned::to_owned("a")])
        .next(std::borrow::ToOwned::to_owned("tools"))
        .best(3);
    let applied = state.apply(delta);
    std::assert!(applied.is_ok());
    std::assert_eq!(state.items.len(), 1);
    std::assert_eq!(state.best, 3);
    state.begin_turn();
    std::assert_eq!(state.next, "start");
}
