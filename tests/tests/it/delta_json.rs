//! Every delta has a JSON form, merged ones included: writes a reducer
//! cannot fold into one are `{"field": {"__writes__": [first, second]}}`,
//! and `from_json(to_json(d)) == d`. The property test merges random deltas
//! of a state with every kind of field and checks the round trip and its
//! effect.

use proptest::prelude::*;
use serde_json::{Value, json};
use state_core::{AgentState, Delta, Message, Messages, State, StateError};
use std::collections::BTreeMap;

/// Order-dependent, cannot fold: a merged step keeps both writes.
fn concat(text: &mut String, more: String) {
    text.push_str(&more);
}

/// Fallible, cannot fold.
fn bounded(total: &mut u32, n: u32) -> Result<(), String> {
    let next = *total + n;
    if next > 20 {
        return Err(format!("{next} is over 20"));
    }
    *total = next;
    Ok(())
}

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Inner {
    pub stage: String,
    #[reducer(append)]
    pub done: Vec<u8>,
    #[reducer(with = concat)]
    pub trail: String,
}

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Wide {
    pub next: String,
    pub note: Option<String>,
    #[reducer(append)]
    pub items: Vec<u8>,
    #[reducer(merge)]
    pub meta: BTreeMap<String, u8>,
    #[reducer(add_messages)]
    pub messages: Messages,
    #[reducer(with = concat)]
    pub text: String,
    #[reducer(with = bounded)]
    pub total: u32,
    #[reducer(merge)]
    pub inner: Inner,
}

fn start() -> Wide {
    Wide {
        messages: Messages::from(vec![
            Message::human("zero").with_id("0"),
            Message::ai("one").with_id("1"),
        ]),
        total: 3,
        ..Wide::default()
    }
}

#[test]
fn unfoldable_writes_serialize_as_a_list() {
    let merged = Wide::delta()
        .text("a")
        .total(1u32)
        .merge(Wide::delta().text("b").total(2u32))
        .unwrap();
    let json = serde_json::to_value(&merged).unwrap();
    assert_eq!(
        json,
        json!({"text": {"__writes__": ["a", "b"]}, "total": {"__writes__": [1, 2]}})
    );
    assert_eq!(WideDelta::from_json(json).unwrap(), merged);
    let three = merged.merge(Wide::delta().text("c")).unwrap();
    assert_eq!(
        serde_json::to_value(&three).unwrap()["text"],
        json!({"__writes__": ["a", "b", "c"]})
    );
}

#[test]
fn nested_and_message_writes_round_trip() {
    let merged = Wide::delta()
        .inner(Inner::delta().trail("x").done(vec![1]))
        .messages(vec![Message::remove("0")])
        .merge(
            Wide::delta()
                .inner(Inner::delta().trail("y").done(vec![2]))
                .messages(vec![Message::human("again").with_id("0")]),
        )
        .unwrap();
    let json = serde_json::to_value(&merged).unwrap();
    assert_eq!(
        json["inner"],
        json!({"done": [1, 2], "trail": {"__writes__": ["x", "y"]}})
    );
    assert_eq!(
        json["messages"]["__writes__"].as_array().map(Vec::len),
        Some(2)
    );
    let text = serde_json::to_string(&merged).unwrap();
    let back: WideDelta = serde_json::from_str(&text).unwrap();
    assert_eq!(back, merged);
}

#[test]
fn one_write_in_the_list_is_a_plain_write() {
    let d = WideDelta::from_json(json!({"text": {"__writes__": ["a"]}})).unwrap();
    assert_eq!(d, Wide::delta().text("a"));
}

#[test]
fn a_bad_list_of_writes_names_the_field() {
    for (bad, got) in [
        (json!([]), "an array of 0 item(s)"),
        (json!("a"), "a string (\"a\")"),
        (json!({"x": 1}), "an object with 1 key(s)"),
    ] {
        let err = WideDelta::from_json(json!({"text": {"__writes__": bad}})).unwrap_err();
        assert_eq!(
            err,
            StateError::Type {
                field: "text".into(),
                expected: "a non-empty list of updates under \"__writes__\"".into(),
                got: got.into(),
            }
        );
    }
    // Inside a nested state, with the path; an element of the wrong type
    // names the field as a plain update does.
    let err = WideDelta::from_json(json!({"inner": {"trail": {"__writes__": []}}})).unwrap_err();
    assert!(
        matches!(&err, StateError::Type { field, .. } if field == "inner.trail"),
        "{err}"
    );
    let err = WideDelta::from_json(json!({"total": {"__writes__": [1, "two"]}})).unwrap_err();
    assert!(
        matches!(&err, StateError::Type { field, .. } if field == "total"),
        "{err}"
    );
}

// --- The property ---------------------------------------------------------

/// A write to one field: none, an update, or an overwrite.
#[derive(Debug, Clone)]
enum W<U, T> {
    No,
    Up(U),
    Over(T),
}

fn w<U: std::fmt::Debug + Clone, T: std::fmt::Debug + Clone>(
    up: impl Strategy<Value = U>,
    over: impl Strategy<Value = T>,
) -> impl Strategy<Value = W<U, T>> {
    prop_oneof![
        4 => Just(W::No),
        4 => up.prop_map(W::Up),
        1 => over.prop_map(W::Over),
    ]
}

/// A message from a small alphabet of ids, so that writes meet; some
/// without an id, which the setter fixes.
fn message() -> impl Strategy<Value = Message> {
    (0..8u8, 0..3u8).prop_map(|(what, id)| match what {
        0..=2 => Message::human(format!("h{id}")).with_id(id.to_string()),
        3 | 4 => Message::ai("no id"),
        5 | 6 => Message::remove(id.to_string()),
        _ => Message::remove_all(),
    })
}

fn short() -> impl Strategy<Value = String> {
    "[a-c]{0,2}"
}

fn inner_delta() -> impl Strategy<Value = InnerDelta> {
    (
        w(short(), short()),
        w(
            prop::collection::vec(0..4u8, 0..3),
            prop::collection::vec(0..4u8, 0..2),
        ),
        w(short(), short()),
    )
        .prop_map(|(stage, done, trail)| {
            let mut d = Inner::delta();
            if let W::Up(v) | W::Over(v) = stage {
                d = d.stage(v);
            }
            d = match done {
                W::No => d,
                W::Up(v) => d.done(v),
                W::Over(v) => d.overwrite_done(v),
            };
            match trail {
                W::No => d,
                W::Up(v) => d.trail(v),
                W::Over(v) => d.overwrite_trail(v),
            }
        })
}

prop_compose! {
    fn wide_delta()(
        next in w(short(), short()),
        note in w(prop::option::of(short()), prop::option::of(short())),
        items in w(prop::collection::vec(0..4u8, 0..3), prop::collection::vec(0..4u8, 0..2)),
        meta in w(
            prop::collection::btree_map("[a-c]", 0..4u8, 0..3),
            prop::collection::btree_map("[a-c]", 0..4u8, 0..2),
        ),
        messages in w(
            prop::collection::vec(message(), 0..3),
            prop::collection::vec(message().prop_filter("no removals", |m| !m.is_removal()), 0..2),
        ),
        text in w(short(), short()),
        total in w(0..12u32, 0..12u32),
        inner in prop::option::weighted(0.5, inner_delta()),
        overwrite_inner in prop::option::weighted(0.1, Just(Inner { stage: "o".into(), ..Inner::default() })),
    ) -> WideDelta {
        let mut d = Wide::delta();
        if let W::Up(v) | W::Over(v) = next {
            d = d.next(v);
        }
        if let W::Up(v) | W::Over(v) = note {
            d = d.note(v);
        }
        d = match items { W::No => d, W::Up(v) => d.items(v), W::Over(v) => d.overwrite_items(v) };
        d = match meta { W::No => d, W::Up(v) => d.meta(v), W::Over(v) => d.overwrite_meta(v) };
        d = match messages {
            W::No => d,
            W::Up(v) => d.messages(v),
            W::Over(v) => d.overwrite_messages(Messages::from(v)),
        };
        d = match text { W::No => d, W::Up(v) => d.text(v), W::Over(v) => d.overwrite_text(v) };
        d = match total { W::No => d, W::Up(v) => d.total(v), W::Over(v) => d.overwrite_total(v) };
        if let Some(inner) = inner {
            d = d.inner(inner);
        }
        if let Some(value) = overwrite_inner {
            d = d.overwrite_inner(value);
        }
        d
    }
}

/// `from_json(to_json(d)) == d`, through a JSON value and through text.
fn round_trips(d: &WideDelta) -> Result<(), TestCaseError> {
    let value = serde_json::to_value(d).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let back = WideDelta::from_json(value.clone())
        .map_err(|e| TestCaseError::fail(format!("{e}: {value}")))?;
    prop_assert_eq!(&back, d, "via {}", value);
    let text = serde_json::to_string(d).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let back: WideDelta =
        serde_json::from_str(&text).map_err(|e| TestCaseError::fail(format!("{e}: {text}")))?;
    prop_assert_eq!(&back, d, "via {}", text);
    // What a store logs: the same text, written without `erased_serde`.
    let mut written = Vec::new();
    d.write_json(&mut written)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(String::from_utf8_lossy(&written), text);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn every_delta_round_trips(d in wide_delta()) {
        round_trips(&d)?;
    }

    #[test]
    fn merged_deltas_round_trip_and_apply_as_apply_all(
        a in wide_delta(),
        b in wide_delta(),
        c in wide_delta(),
    ) {
        let Ok(merged) = a.clone().merge(b.clone()) else {
            return Ok(());
        };
        round_trips(&merged)?;
        let decoded = WideDelta::from_json(serde_json::to_value(&merged).unwrap()).unwrap();

        let mut via_all = start();
        let all = via_all.apply_all([a, b]);
        let mut via_json = start();
        let one = via_json.apply(decoded);
        prop_assert_eq!(&one, &all);
        prop_assert_eq!(&via_json, &via_all);
        if all.is_err() {
            prop_assert_eq!(&via_all, &start(), "all or nothing");
        }
        // What a store snapshots: the state's text `Serialize` writes,
        // written field by field on their own types.
        let text = state_core::json::to_string(&via_all).unwrap();
        prop_assert_eq!(state_core::json::state_to_string(&via_all).unwrap(), text);

        // A third delta: lists of three writes, and merges of merges.
        if let Ok(three) = merged.merge(c) {
            round_trips(&three)?;
        }
    }
}

#[test]
fn the_value_form_is_what_serde_writes() {
    // `Value` and text agree: the `__writes__` marker is one key.
    let merged = Wide::delta()
        .text("a")
        .merge(Wide::delta().text("b"))
        .unwrap();
    let value: Value = serde_json::from_str(&serde_json::to_string(&merged).unwrap()).unwrap();
    assert_eq!(value, serde_json::to_value(&merged).unwrap());
}
