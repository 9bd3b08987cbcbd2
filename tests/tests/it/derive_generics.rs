//! Generic states: type parameters with bounds and where clauses carry over
//! to every generated item; a generic state applies, merges, resets and
//! (de)serializes its delta.

use serde::{Serialize, de::DeserializeOwned};
use serde_json::json;
use state_core::{AgentState, Delta, State, StateError};
use std::collections::BTreeMap;
use std::fmt::Debug;

/// A generic custom reducer, named without and with a turbofish.
fn keep_last_some<T>(current: &mut Option<T>, new: Option<T>) {
    if new.is_some() {
        *current = new;
    }
}

fn push_all<T>(list: &mut Vec<T>, more: Vec<T>) {
    list.extend(more);
}

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Pipeline<T: Clone + Debug + PartialEq + Serialize + DeserializeOwned, K>
where
    K: Ord + Clone + Debug + PartialEq + Serialize + DeserializeOwned,
{
    #[reducer(append)]
    pub items: Vec<T>,
    #[reducer(merge)]
    pub by_key: BTreeMap<K, T>,
    #[scope(turn)]
    pub current: Option<T>,
    #[reducer(with = keep_last_some)]
    pub last_some: Option<T>,
    #[reducer(with = push_all::<K>)]
    pub keys: Vec<K>,
    #[scope(turn)]
    #[default(7)]
    pub budget: u32,
}

type Words = Pipeline<String, u32>;

fn s(v: &str) -> String {
    v.to_owned()
}

#[test]
fn a_generic_state_applies_and_resets() {
    let mut state = Words::default();
    assert_eq!(state.budget, 7);
    state
        .apply(
            Words::delta()
                .items(vec![s("a")])
                .by_key(BTreeMap::from([(1, s("one"))]))
                .current(s("c"))
                .last_some(s("x"))
                .keys(vec![1])
                .budget(3u32),
        )
        .unwrap();
    state
        .apply(
            Words::delta()
                .items(vec![s("b")])
                .by_key(BTreeMap::from([(1, s("uno")), (2, s("two"))]))
                .last_some(None)
                .keys(vec![2]),
        )
        .unwrap();
    assert_eq!(state.items, ["a", "b"]);
    assert_eq!(state.by_key, BTreeMap::from([(1, s("uno")), (2, s("two"))]));
    assert_eq!(state.last_some.as_deref(), Some("x"));
    assert_eq!(state.keys, [1, 2]);
    state.begin_turn();
    assert_eq!(state.current, None);
    assert_eq!(state.budget, 7);
    assert_eq!(state.items, ["a", "b"]);
}

#[test]
fn a_generic_state_runs_a_superstep_and_merges() {
    let a = Pipeline::<i64, String>::delta().items(vec![1]).current(10);
    let b = Pipeline::<i64, String>::delta()
        .items(vec![2])
        .keys(vec![s("k")]);
    let mut via_all = Pipeline::<i64, String>::default();
    via_all.apply_all([a.clone(), b.clone()]).unwrap();
    let merged = a.clone().merge(b).unwrap();
    assert_eq!(merged.fields(), ["items", "current", "keys"]);
    let mut via_merge = Pipeline::<i64, String>::default();
    via_merge.apply(merged).unwrap();
    assert_eq!(via_all, via_merge);
    assert_eq!(via_all.items, [1, 2]);

    let err = a.clone().merge(a).unwrap_err();
    assert_eq!(
        err,
        StateError::ConcurrentWrite {
            field: s("current")
        }
    );
}

#[test]
fn a_generic_delta_serializes_and_deserializes() {
    let delta = Words::delta()
        .items(vec![s("a")])
        .overwrite_by_key(BTreeMap::from([(3, s("three"))]))
        .current(None);
    let value = serde_json::to_value(&delta).unwrap();
    assert_eq!(
        value,
        json!({"items": ["a"], "by_key": {"__overwrite__": {"3": "three"}}, "current": null})
    );
    let back: PipelineDelta<String, u32> = serde_json::from_value(value).unwrap();
    assert_eq!(back, delta);

    let err = serde_json::from_value::<PipelineDelta<String, u32>>(json!({"item": []}))
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        r#"`Pipeline` has no field `item`; did you mean `items`?"#
    );
    let err = serde_json::from_value::<PipelineDelta<String, u32>>(json!({"keys": ["x"]}))
        .unwrap_err()
        .to_string();
    assert!(err.starts_with(r#"field "keys": "#), "{err}");
}

/// Bounds only in the where clause, a defaulted type parameter, and a
/// parameter used only through an associated type.
pub trait Kind {
    type Payload: Clone + Debug + PartialEq + Default + Serialize + DeserializeOwned;
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Text;

impl Kind for Text {
    type Payload = String;
}

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Tagged<K, N = u8>
where
    K: Kind,
    N: Copy + Debug + PartialEq + Default + Serialize + DeserializeOwned,
{
    pub payload: K::Payload,
    #[reducer(append)]
    pub history: Vec<K::Payload>,
    pub n: N,
}

#[test]
fn associated_types_and_defaulted_parameters() {
    let mut state: Tagged<Text> = Tagged::default();
    state
        .apply(
            Tagged::<Text>::delta()
                .payload("p")
                .history(vec![s("h")])
                .n(4u8),
        )
        .unwrap();
    assert_eq!(state.payload, "p");
    assert_eq!(state.history, ["h"]);
    assert_eq!(state.n, 4);
    let value = serde_json::to_value(Tagged::<Text, u16>::delta().n(300u16)).unwrap();
    assert_eq!(value, json!({"n": 300}));
    let back: TaggedDelta<Text, u16> = serde_json::from_value(value).unwrap();
    assert_eq!(back.n, Some(300));
}

/// A const generic parameter.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Window<const N: usize> {
    #[reducer(append)]
    pub seen: Vec<u8>,
    #[default([0; N])]
    pub last: [u8; N],
}

#[test]
fn const_generics() {
    let mut state = Window::<3>::default();
    assert_eq!(state.last, [0, 0, 0]);
    state
        .apply(Window::<3>::delta().seen(vec![1]).last([1, 2, 3]))
        .unwrap();
    assert_eq!(state.last, [1, 2, 3]);
    let value = serde_json::to_value(Window::<3>::delta().last([4, 5, 6])).unwrap();
    assert_eq!(value, json!({"last": [4, 5, 6]}));
}

/// A lifetime parameter, with fields that deserialize for any lifetime.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Borrowing<'a> {
    #[default("anonymous")]
    pub name: std::borrow::Cow<'a, str>,
    #[reducer(append)]
    pub aliases: Vec<std::borrow::Cow<'a, str>>,
}

#[test]
fn lifetime_parameters() {
    let owned = String::from("borrowed");
    let mut state = Borrowing::default();
    assert_eq!(state.name, "anonymous");
    state
        .apply(
            Borrowing::delta()
                .name(owned.as_str())
                .aliases(vec![std::borrow::Cow::Borrowed(owned.as_str())]),
        )
        .unwrap();
    assert_eq!(state.name, "borrowed");
    let value = serde_json::to_value(Borrowing::delta().name("x")).unwrap();
    let back: BorrowingDelta<'_> = serde_json::from_value(value).unwrap();
    state.apply(back).unwrap();
    assert_eq!(state.name, "x");
    assert_eq!(state.aliases, ["borrowed"]);
    state.begin_turn();
    assert_eq!(state.name, "x", "persistent");
}
