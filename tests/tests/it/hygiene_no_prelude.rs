//! The derive's output compiles in a module without the implicit prelude:
//! every path it emits is absolute.
#![no_implicit_prelude]

// The attribute also hides the extern prelude: `std` is named here.
extern crate std;

use ::state_core::{AgentState, State};

fn keep_max(current: &mut i64, new: i64) {
    if new > *current {
        *current = new;
    }
}

#[derive(AgentState, std::fmt::Debug, std::clone::Clone, std::cmp::PartialEq)]
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

#[derive(AgentState)]
pub struct Extended {
    #[state(flatten)]
    pub base: Plain,
    #[reducer(merge)]
    pub group: Plain,
    pub flag: bool,
}

#[test]
fn nested_and_flattened_states_work_without_prelude() {
    let mut state = <Extended as std::default::Default>::default();
    let delta = Extended::delta()
        .base(Plain::delta().best(2))
        .group(Plain::delta().best(5))
        .flag(true);
    std::assert!(state.apply(delta).is_ok());
    std::assert_eq!(state.base.best, 2);
    std::assert_eq!(state.group.best, 5);
    std::assert!(Extended::keys().contains(&"items"));
}

/// A base of a base: its setters and `From` are written without the
/// prelude too.
#[derive(AgentState)]
pub struct Outer {
    #[state(flatten)]
    pub extended: Extended,
    pub done: bool,
}

#[test]
fn a_base_of_a_base_works_without_prelude() {
    let mut state = <Outer as std::default::Default>::default();
    let delta = Outer::delta().best(4).flag(true).done(true);
    std::assert!(state.apply(delta).is_ok());
    let from_plain: OuterDelta = std::convert::Into::into(Plain::delta().best(9));
    std::assert!(state.apply(from_plain).is_ok());
    std::assert_eq!(state.extended.base.best, 9);
    std::assert!(state.extended.flag && state.done);
}
