//! The derive's output ignores local items that shadow std names.
#![allow(dead_code)]

use state_core::{AgentState, State};

struct Option;
struct Result;
struct String;
struct Vec;
struct Box;
struct Some;
struct None;
struct Ok;
struct Err;
trait Default {}
trait Clone {}
trait Into {}

#[derive(AgentState, Debug, std::clone::Clone, std::cmp::PartialEq)]
pub struct Shadowed {
    #[reducer(append)]
    pub items: std::vec::Vec<std::string::String>,
    #[scope(turn)]
    #[default("start")]
    pub next: std::string::String,
    pub note: std::option::Option<u8>,
}

#[test]
fn derive_ignores_shadowing_items() {
    let mut state = <Shadowed as std::default::Default>::default();
    state
        .apply(
            Shadowed::delta()
                .items(vec!["a".to_owned()])
                .note(std::option::Option::Some(1)),
        )
        .unwrap();
    assert_eq!(state.items, ["a"]);
    assert_eq!(state.note, std::option::Option::Some(1));
    assert_eq!(state.next, "start");
}

#[derive(AgentState, Debug)]
pub struct ShadowedExtended {
    #[state(flatten)]
    pub base: Shadowed,
    #[reducer(merge)]
    pub group: Shadowed,
}

#[test]
fn nested_and_flattened_states_ignore_shadowing_items() {
    let mut state = <ShadowedExtended as std::default::Default>::default();
    state
        .apply(
            ShadowedExtended::delta()
                .base(Shadowed::delta().items(vec!["b".to_owned()]))
                .group(Shadowed::delta().note(std::option::Option::Some(2))),
        )
        .unwrap();
    assert_eq!(state.base.items, ["b"]);
    assert_eq!(state.group.note, std::option::Option::Some(2));
}
