//! The difference between two states, field by field, as JSON: what the
//! inspector shows between any two steps. Lists are compared by their
//! common beginning and end (an append, the usual change, is the items
//! after the old end); maps key by key, one level deep.

use serde_json::{Map, Value};

/// How one top-level field differs.
#[derive(Debug, PartialEq)]
pub(crate) enum Change<'a> {
    /// Only in the newer state.
    Added(&'a Value),
    /// Only in the older state.
    Removed(&'a Value),
    /// Both lists: the newer one is the older one with `removed` (at
    /// `at`) replaced by `added`; an append has nothing removed and `at`
    /// at the old end.
    Items {
        at: usize,
        removed: &'a [Value],
        added: &'a [Value],
    },
    /// Both maps: the keys that differ.
    Keys(Vec<(&'a str, KeyChange<'a>)>),
    /// Anything else: the old value and the new one.
    Replaced { old: &'a Value, new: &'a Value },
}

/// How one key of a map differs.
#[derive(Debug, PartialEq)]
pub(crate) enum KeyChange<'a> {
    Added(&'a Value),
    Removed(&'a Value),
    Changed { old: &'a Value, new: &'a Value },
}

/// The fields of `new` that differ from `old`, in `new`'s key order (then
/// the fields only `old` has); equal fields are left out. Two values
/// that are not objects differ as one change named `""`.
pub(crate) fn diff<'a>(old: &'a Value, new: &'a Value) -> Vec<(&'a str, Change<'a>)> {
    match (old, new) {
        (Value::Object(old), Value::Object(new)) => fields(old, new),
        _ if old == new => Vec::new(),
        _ => vec![("", Change::Replaced { old, new })],
    }
}

fn fields<'a>(
    old: &'a Map<String, Value>,
    new: &'a Map<String, Value>,
) -> Vec<(&'a str, Change<'a>)> {
    let mut changes = Vec::new();
    for (name, value) in new {
        match old.get(name) {
            None => changes.push((name.as_str(), Change::Added(value))),
            Some(before) if before == value => {}
            Some(before) => changes.push((name.as_str(), change(before, value))),
        }
    }
    for (name, value) in old {
        if !new.contains_key(name) {
            changes.push((name.as_str(), Change::Removed(value)));
        }
    }
    changes
}

/// How `old` became `new` (which differ).
fn change<'a>(old: &'a Value, new: &'a Value) -> Change<'a> {
    match (old, new) {
        (Value::Array(old), Value::Array(new)) => {
            let prefix = old.iter().zip(new).take_while(|(a, b)| a == b).count();
            let room = old.len().min(new.len()) - prefix;
            let suffix = old
                .iter()
                .rev()
                .zip(new.iter().rev())
                .take(room)
                .take_while(|(a, b)| a == b)
                .count();
            Change::Items {
                at: prefix,
                removed: &old[prefix..old.len() - suffix],
                added: &new[prefix..new.len() - suffix],
            }
        }
        (Value::Object(old), Value::Object(new)) => {
            let mut keys = Vec::new();
            for (key, value) in new {
                match old.get(key) {
                    None => keys.push((key.as_str(), KeyChange::Added(value))),
                    Some(before) if before == value => {}
                    Some(before) => keys.push((
                        key.as_str(),
                        KeyChange::Changed {
                            old: before,
                            new: value,
                        },
                    )),
                }
            }
            for (key, value) in old {
                if !new.contains_key(key) {
                    keys.push((key.as_str(), KeyChange::Removed(value)));
                }
            }
            Change::Keys(keys)
        }
        _ => Change::Replaced { old, new },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn equal_states_have_no_changes() {
        let state = json!({"log": [1, 2], "title": "a", "meta": {"k": 1}});
        assert!(diff(&state, &state).is_empty());
    }

    #[test]
    fn an_append_is_the_items_after_the_old_end() {
        let (old, new) = (json!({"log": [1, 2]}), json!({"log": [1, 2, 3, 4]}));
        assert_eq!(
            diff(&old, &new),
            [(
                "log",
                Change::Items {
                    at: 2,
                    removed: &[],
                    added: &[json!(3), json!(4)]
                }
            )]
        );
    }

    #[test]
    fn a_change_in_the_middle_keeps_the_common_ends() {
        let (old, new) = (json!({"l": [1, 2, 3, 4]}), json!({"l": [1, 9, 4]}));
        assert_eq!(
            diff(&old, &new),
            [(
                "l",
                Change::Items {
                    at: 1,
                    removed: &[json!(2), json!(3)],
                    added: &[json!(9)]
                }
            )]
        );
        // Repeated items: the common ends never overlap.
        let (old, new) = (json!({"l": [1, 1]}), json!({"l": [1, 1, 1]}));
        assert_eq!(
            diff(&old, &new),
            [(
                "l",
                Change::Items {
                    at: 2,
                    removed: &[],
                    added: &[json!(1)]
                }
            )]
        );
        let (old, new) = (json!({"l": [1, 2, 3]}), json!({"l": []}));
        assert_eq!(
            diff(&old, &new),
            [(
                "l",
                Change::Items {
                    at: 0,
                    removed: &[json!(1), json!(2), json!(3)],
                    added: &[]
                }
            )]
        );
    }

    #[test]
    fn maps_differ_key_by_key_and_scalars_are_replaced() {
        let old = json!({"m": {"a": 1, "b": 2}, "s": "x", "gone": 1});
        let new = json!({"m": {"a": 1, "b": 3, "c": 4}, "s": "y", "new": true});
        // Key order is serde_json's (sorted, or insertion order with its
        // `preserve_order`, which feature unification may turn on).
        let mut changes = diff(&old, &new);
        changes.sort_by_key(|(name, _)| *name);
        assert_eq!(
            changes,
            [
                ("gone", Change::Removed(&json!(1))),
                (
                    "m",
                    Change::Keys(vec![
                        (
                            "b",
                            KeyChange::Changed {
                                old: &json!(2),
                                new: &json!(3)
                            }
                        ),
                        ("c", KeyChange::Added(&json!(4))),
                    ])
                ),
                ("new", Change::Added(&json!(true))),
                (
                    "s",
                    Change::Replaced {
                        old: &json!("x"),
                        new: &json!("y")
                    }
                ),
            ]
        );
    }

    #[test]
    fn values_that_are_not_objects_differ_as_one_change() {
        assert_eq!(
            diff(&json!(1), &json!(2)),
            [(
                "",
                Change::Replaced {
                    old: &json!(1),
                    new: &json!(2)
                }
            )]
        );
        assert!(diff(&json!([1]), &json!([1])).is_empty());
    }
}
