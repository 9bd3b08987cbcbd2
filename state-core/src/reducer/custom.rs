//! Functions as reducers: `fn(&mut T, T)` and `fn(&mut T, T) -> Result<(), E>`.
//! (A function `fn(&mut T, U)` whose update type is not the field's is one
//! through `#[reducer(with = f, update = U)]`, which wraps it.)

use super::{Reducer, Staged, Writes};
use crate::error::ReduceError;
use std::error::Error;

/// What a custom reducer function may return: `()` when it cannot fail, or
/// `Result<(), E>` with an error (`E: Error + Send + Sync + 'static`, or a
/// message as `String` or `&'static str`), kept whole in
/// [`ReduceError::Custom`].
#[diagnostic::on_unimplemented(
    message = "a custom reducer must return `()` or `Result<(), E>` where `E: Error + Send + Sync + 'static` (or a `String`), not `{Self}`",
    label = "this reducer function returns the wrong type"
)]
pub trait ReduceOutcome<T>: Sized {
    /// Runs `f` over every write, all-or-nothing.
    #[doc(hidden)]
    fn stage<U, F: Fn(&mut T, U) -> Self>(
        f: &F,
        target: &T,
        writes: Writes<U>,
    ) -> Result<Staged<T, U>, ReduceError>;

    /// Runs `f` once, for [`Reducer::apply`] callers that skipped staging.
    #[doc(hidden)]
    fn run<U, F: Fn(&mut T, U) -> Self>(f: &F, target: &mut T, update: U);
}

#[diagnostic::do_not_recommend]
impl<T> ReduceOutcome<T> for () {
    fn stage<U, F: Fn(&mut T, U)>(
        _f: &F,
        _target: &T,
        writes: Writes<U>,
    ) -> Result<Staged<T, U>, ReduceError> {
        Ok(Staged::writes(writes))
    }

    fn run<U, F: Fn(&mut T, U)>(f: &F, target: &mut T, update: U) {
        f(target, update);
    }
}

/// A fallible reducer runs on a copy of the field, which replaces the field
/// only when every write succeeded: a function that fails half-way cannot
/// leave a half-updated state behind.
#[diagnostic::do_not_recommend]
impl<T: Clone, E: Into<Box<dyn Error + Send + Sync>>> ReduceOutcome<T> for Result<(), E> {
    fn stage<U, F: Fn(&mut T, U) -> Self>(
        f: &F,
        target: &T,
        writes: Writes<U>,
    ) -> Result<Staged<T, U>, ReduceError> {
        let mut copy = target.clone();
        for update in writes {
            f(&mut copy, update).map_err(ReduceError::custom)?;
        }
        Ok(Staged::value(copy))
    }

    fn run<U, F: Fn(&mut T, U) -> Self>(f: &F, target: &mut T, update: U) {
        let mut copy = target.clone();
        if f(&mut copy, update).is_ok() {
            *target = copy;
        }
    }
}

/// Any `fn(&mut T, T)` or `fn(&mut T, T) -> Result<(), E>` is a reducer whose
/// update is a `T`. Two writes in one step are applied one after the other.
///
/// ```
/// use state_core::reducer::Reducer;
///
/// fn keep_max(current: &mut i64, new: i64) {
///     *current = (*current).max(new);
/// }
/// let mut best = 3;
/// keep_max.reduce(&mut best, 7).unwrap();
/// keep_max.reduce(&mut best, 5).unwrap();
/// assert_eq!(best, 7);
///
/// fn non_negative(current: &mut i64, delta: i64) -> Result<(), String> {
///     let next = *current + delta;
///     if next < 0 { return Err(format!("would go below zero ({next})")); }
///     *current = next;
///     Ok(())
/// }
/// let mut budget = 2;
/// assert!(non_negative.reduce(&mut budget, -5).is_err());
/// assert_eq!(budget, 2);
/// ```
impl<T, F, O> Reducer<T> for F
where
    F: Fn(&mut T, T) -> O,
    O: ReduceOutcome<T>,
{
    type Update = T;

    fn apply(&self, target: &mut T, update: T) {
        O::run(self, target, update);
    }

    fn stage(&self, target: &T, writes: Writes<T>) -> Result<Staged<T, T>, ReduceError> {
        O::stage(self, target, writes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn push_checked(list: &mut Vec<i32>, items: Vec<i32>) -> Result<(), String> {
        for item in items {
            if item < 0 {
                return Err(format!("negative item {item}"));
            }
            // Mutates before a later item fails: staging must hide this.
            list.push(item);
        }
        Ok(())
    }

    #[test]
    fn failing_function_leaves_target_unchanged() {
        let mut v = vec![1];
        let err = push_checked.reduce(&mut v, vec![2, -1]).unwrap_err();
        assert_eq!(err, ReduceError::custom("negative item -1"));
        assert_eq!(v, [1]);
    }

    #[test]
    fn staged_writes_apply_in_order() {
        let mut v = vec![1];
        let staged = push_checked
            .stage(&v, Writes::new(vec![2], vec![vec![3]]))
            .unwrap();
        push_checked.commit(&mut v, staged);
        assert_eq!(v, [1, 2, 3]);
    }

    #[test]
    fn second_write_failing_fails_the_whole_stage() {
        let v = vec![1];
        let err = push_checked.stage(&v, Writes::new(vec![2], vec![vec![-3]]));
        assert!(err.is_err());
    }

    #[test]
    fn infallible_closure_is_a_reducer() {
        let add = |a: &mut u32, b: u32| *a += b;
        let mut n = 1;
        add.reduce(&mut n, 2).unwrap();
        assert_eq!(n, 3);
    }
}
