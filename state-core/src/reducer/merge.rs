//! `merge`: maps whose keys from the right overwrite keys on the left
//! (LangGraph's `{**a, **b}`).

use super::{Fold, Reducer};
use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasher, Hash};

/// A map that can take every entry of another map of its type, the new
/// value winning on a shared key.
pub trait MergeMap {
    /// Inserts every entry of `other`, overwriting values of shared keys.
    fn merge_from(&mut self, other: Self);
}

impl<K: Eq + Hash, V, S: BuildHasher> MergeMap for HashMap<K, V, S> {
    fn merge_from(&mut self, other: Self) {
        self.extend(other);
    }
}

impl<K: Ord, V> MergeMap for BTreeMap<K, V> {
    fn merge_from(&mut self, other: Self) {
        self.extend(other);
    }
}

/// Keys new to the map are appended in `other`'s order; a shared key keeps
/// its position and takes the new value (as a Python dict does).
#[cfg(feature = "indexmap")]
impl<K: Eq + Hash, V, S: BuildHasher> MergeMap for indexmap::IndexMap<K, V, S> {
    fn merge_from(&mut self, other: Self) {
        self.extend(other);
    }
}

/// Shallow, as LangGraph's `{**a, **b}`: a nested object under a shared key is
/// replaced whole, not merged.
impl MergeMap for serde_json::Map<String, serde_json::Value> {
    fn merge_from(&mut self, other: Self) {
        self.extend(other);
    }
}

/// Merges `update` into `target`; keys of `update` win.
///
/// ```
/// use std::collections::BTreeMap;
/// let mut timings = BTreeMap::from([("a", 1.0), ("b", 2.0)]);
/// state_core::reducer::merge(&mut timings, BTreeMap::from([("b", 5.0), ("c", 3.0)]));
/// assert_eq!(timings, BTreeMap::from([("a", 1.0), ("b", 5.0), ("c", 3.0)]));
/// ```
pub fn merge<M: MergeMap>(target: &mut M, update: M) {
    target.merge_from(update);
}

/// The `merge` reducer: for the maps that implement [`MergeMap`] here
/// (`HashMap`, `BTreeMap`, `serde_json::Map`, and `IndexMap` with the
/// `indexmap` feature, a default one), and for a nested
/// state (any [`State`](crate::State): its update is the state's delta).
/// Two writes in one step merge in order, so the later writer wins on a
/// shared key.
///
/// (One impl per map type rather than one for every `MergeMap`, so that
/// the impl for nested states cannot overlap it; another map type merges
/// with `#[reducer(with = state_core::reducer::merge)]`.)
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Merge;

/// `Reducer<Map>` for `Merge`, for each map type: `[generics] Map;`.
macro_rules! merge_maps {
    ($([$($generics:tt)*] $map:ty;)*) => {$(
        // Errors name `Reducer` itself, with its note on what each reducer
        // needs, rather than this impl's unmet bound.
        #[diagnostic::do_not_recommend]
        impl<$($generics)*> Reducer<$map> for Merge {
            type Update = $map;

            fn apply(&self, target: &mut $map, update: $map) {
                merge(target, update);
            }

            fn fold(&self, mut first: $map, second: $map) -> Fold<$map> {
                first.merge_from(second);
                Fold::One(first)
            }
        }
    )*};
}

merge_maps! {
    [K: Eq + Hash, V, S: BuildHasher] HashMap<K, V, S>;
    [K: Ord, V] BTreeMap<K, V>;
    [] serde_json::Map<String, serde_json::Value>;
}

#[cfg(feature = "indexmap")]
merge_maps! {
    [K: Eq + Hash, V, S: BuildHasher] indexmap::IndexMap<K, V, S>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn right_keys_overwrite() {
        let mut m = HashMap::from([("k", "in"), ("j", "in")]);
        Merge.reduce(&mut m, HashMap::from([("k", "b")])).unwrap();
        assert_eq!(m, HashMap::from([("k", "b"), ("j", "in")]));
    }

    #[test]
    #[cfg(feature = "indexmap")]
    fn index_map_keeps_first_position_of_shared_key() {
        let mut m = indexmap::IndexMap::from([("a", 1), ("b", 2)]);
        Merge
            .reduce(&mut m, indexmap::IndexMap::from([("c", 3), ("a", 9)]))
            .unwrap();
        assert_eq!(
            m.into_iter().collect::<Vec<_>>(),
            [("a", 9), ("b", 2), ("c", 3)]
        );
    }

    #[test]
    fn json_map_merge_is_shallow() {
        let mut m = json!({"cfg": {"x": 1, "y": 2}})
            .as_object()
            .unwrap()
            .clone();
        let update = json!({"cfg": {"x": 5}}).as_object().unwrap().clone();
        Merge.reduce(&mut m, update).unwrap();
        assert_eq!(serde_json::Value::Object(m), json!({"cfg": {"x": 5}}));
    }

    #[test]
    fn fold_later_wins_like_two_applies() {
        let a = BTreeMap::from([("k", "a"), ("only_a", "1")]);
        let b = BTreeMap::from([("k", "b"), ("only_b", "1")]);
        let Fold::One(m) = Reducer::<BTreeMap<_, _>>::fold(&Merge, a, b) else {
            panic!("merge folds exactly")
        };
        assert_eq!(
            m,
            BTreeMap::from([("k", "b"), ("only_a", "1"), ("only_b", "1")])
        );
    }
}
