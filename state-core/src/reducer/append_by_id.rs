//! `append_by_id`: a list of items with ids, where a write with a known id
//! updates that item in place and a new id appends (AgentFlow's
//! `append_items`, with updates instead of drops).

use super::{Fold, Reducer};
use std::collections::HashMap;
use std::hash::Hash;

/// An item with an identity, for [`append_by_id`].
pub trait HasId {
    /// The id's type.
    type Id: Eq + Hash + Clone;
    /// The item's id; an item without one is always appended.
    fn item_id(&self) -> Option<&Self::Id>;
}

/// For each item of `update` in order: if an item of `target` (or an earlier
/// item of `update`) has its id, it takes that item's place; otherwise it is
/// appended. Items without an id are appended. O(len(target) + len(update)).
///
/// ```
/// use state_core::reducer::{append_by_id, HasId};
///
/// #[derive(Debug, PartialEq)]
/// struct Finding { id: u32, text: &'static str }
/// impl HasId for Finding {
///     type Id = u32;
///     fn item_id(&self) -> Option<&u32> { Some(&self.id) }
/// }
///
/// let mut findings = vec![Finding { id: 1, text: "draft" }];
/// append_by_id(&mut findings, vec![Finding { id: 2, text: "new" }, Finding { id: 1, text: "final" }]);
/// assert_eq!(findings, [Finding { id: 1, text: "final" }, Finding { id: 2, text: "new" }]);
/// ```
pub fn append_by_id<T: HasId>(target: &mut Vec<T>, update: Vec<T>) {
    if update.is_empty() {
        return;
    }
    let mut positions: HashMap<T::Id, usize> = target
        .iter()
        .enumerate()
        .filter_map(|(i, item)| item.item_id().map(|id| (id.clone(), i)))
        .collect();
    for item in update {
        let known = item.item_id().and_then(|id| positions.get(id).copied());
        match known {
            Some(i) => target[i] = item,
            None => {
                if let Some(id) = item.item_id() {
                    positions.insert(id.clone(), target.len());
                }
                target.push(item);
            }
        }
    }
}

/// The `append_by_id` reducer for `Vec<T>` where `T: HasId`. Two writes in
/// one step concatenate, which has the same effect as applying them in order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AppendById;

// Errors name `Reducer` itself, with its note on what each reducer needs,
// rather than this impl's unmet bound.
#[diagnostic::do_not_recommend]
impl<T: HasId> Reducer<Vec<T>> for AppendById {
    type Update = Vec<T>;

    fn apply(&self, target: &mut Vec<T>, update: Vec<T>) {
        append_by_id(target, update);
    }

    fn fold(&self, mut first: Vec<T>, second: Vec<T>) -> Fold<Vec<T>> {
        first.extend(second);
        Fold::One(first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, PartialEq)]
    struct Item(Option<&'static str>, u32);

    impl HasId for Item {
        type Id = &'static str;
        fn item_id(&self) -> Option<&&'static str> {
            self.0.as_ref()
        }
    }

    #[test]
    fn updates_in_place_and_appends_new() {
        let mut v = vec![Item(Some("a"), 1), Item(Some("b"), 1)];
        AppendById
            .reduce(&mut v, vec![Item(Some("c"), 1), Item(Some("a"), 2)])
            .unwrap();
        assert_eq!(
            v,
            [Item(Some("a"), 2), Item(Some("b"), 1), Item(Some("c"), 1)]
        );
    }

    #[test]
    fn duplicate_ids_in_one_update_later_wins_at_first_position() {
        let mut v = vec![];
        AppendById
            .reduce(
                &mut v,
                vec![Item(Some("x"), 1), Item(Some("y"), 1), Item(Some("x"), 2)],
            )
            .unwrap();
        assert_eq!(v, [Item(Some("x"), 2), Item(Some("y"), 1)]);
    }

    #[test]
    fn items_without_id_always_append() {
        let mut v = vec![Item(None, 1)];
        AppendById.reduce(&mut v, vec![Item(None, 1)]).unwrap();
        assert_eq!(v.len(), 2);
    }

    #[test]
    fn fold_equals_sequential_application() {
        let base = vec![Item(Some("a"), 0)];
        let first = vec![Item(Some("a"), 1), Item(Some("b"), 1)];
        let second = vec![Item(Some("b"), 2), Item(Some("c"), 2)];
        let mut sequential = base.clone();
        append_by_id(&mut sequential, first.clone());
        append_by_id(&mut sequential, second.clone());
        let Fold::One(folded) = AppendById.fold(first, second) else {
            panic!("append_by_id folds exactly")
        };
        let mut once = base;
        append_by_id(&mut once, folded);
        assert_eq!(once, sequential);
    }
}
