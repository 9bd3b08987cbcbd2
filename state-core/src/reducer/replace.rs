//! `replace`: last write wins (LangGraph's default `LastValue` channel).

use super::{Fold, Reducer};

/// Replaces `target` with `update`.
///
/// ```
/// let mut next = "supervisor".to_string();
/// state_core::reducer::replace(&mut next, "tools".to_string());
/// assert_eq!(next, "tools");
/// ```
pub fn replace<T>(target: &mut T, update: T) {
    *target = update;
}

/// The `replace` reducer: the field takes the written value. Two writes in
/// one step conflict, even when equal, as in LangGraph.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Replace;

// Not offered as an alternative in errors about the other reducers.
#[diagnostic::do_not_recommend]
impl<T> Reducer<T> for Replace {
    type Update = T;

    fn apply(&self, target: &mut T, update: T) {
        replace(target, update);
    }

    fn fold(&self, _first: T, _second: T) -> Fold<T> {
        Fold::Conflict
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_value() {
        let mut v = 1;
        Replace.reduce(&mut v, 2).unwrap();
        assert_eq!(v, 2);
    }

    #[test]
    fn two_writes_conflict_even_when_equal() {
        assert_eq!(Reducer::<i32>::fold(&Replace, 1, 1), Fold::Conflict);
    }
}
