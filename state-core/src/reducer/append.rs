//! `append`: extend a collection (LangGraph's `operator.add` on lists).

use super::{Fold, Reducer};

/// Extends `target` with every item of `update`, keeping order.
///
/// ```
/// let mut items = vec![1, 2];
/// state_core::reducer::append(&mut items, vec![3]);
/// assert_eq!(items, [1, 2, 3]);
/// ```
pub fn append<C>(target: &mut C, update: C)
where
    C: Extend<<C as IntoIterator>::Item> + IntoIterator,
{
    target.extend(update);
}

/// The `append` reducer for any collection that can extend itself: `Vec`,
/// `VecDeque`, `HashSet`, `BTreeSet`, `String` is not one (use `Vec<String>`).
/// Two writes in one step are appended in order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Append;

// Errors name `Reducer` itself, with its note on what each reducer needs,
// rather than this impl's unmet bound.
#[diagnostic::do_not_recommend]
impl<C> Reducer<C> for Append
where
    C: Extend<<C as IntoIterator>::Item> + IntoIterator,
{
    type Update = C;

    fn apply(&self, target: &mut C, update: C) {
        append(target, update);
    }

    fn fold(&self, mut first: C, second: C) -> Fold<C> {
        first.extend(second);
        Fold::One(first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeSet, VecDeque};

    #[test]
    fn appends_to_vec_in_order() {
        let mut v = vec!["a"];
        Append.reduce(&mut v, vec!["b", "c"]).unwrap();
        assert_eq!(v, ["a", "b", "c"]);
    }

    #[test]
    fn empty_update_changes_nothing() {
        let mut v = vec![1];
        Append.reduce(&mut v, vec![]).unwrap();
        assert_eq!(v, [1]);
    }

    #[test]
    fn works_on_other_collections() {
        let mut d = VecDeque::from([1]);
        Append.reduce(&mut d, VecDeque::from([2])).unwrap();
        assert_eq!(d, [1, 2]);
        let mut s = BTreeSet::from([1, 2]);
        Append.reduce(&mut s, BTreeSet::from([2, 3])).unwrap();
        assert_eq!(s, BTreeSet::from([1, 2, 3]));
    }

    #[test]
    fn fold_concatenates_like_two_applies() {
        let Fold::One(folded) = Append.fold(vec![1], vec![2, 3]) else {
            panic!("append folds exactly");
        };
        assert_eq!(folded, [1, 2, 3]);
    }
}
