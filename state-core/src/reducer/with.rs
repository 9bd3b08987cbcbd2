//! `#[reducer(with = path)]` and `#[reducer(with = path, update = U)]`:
//! what the path names, decided at compile time.
//!
//! The path is a value that implements `Reducer<Field>` (a unit struct, or
//! a function `fn(&mut Field, Field)`, which `Reducer` covers), or, with
//! `update = U`, a function `fn(&mut Field, U)`, which [`FnReducer`]
//! adapts. A function `fn(&mut Field, Field)` with `update = Field` (spelt
//! through an alias, say) is both, so the choice cannot be left to trait
//! selection (two impls would apply). Generated code first asks, by autoref
//! specialisation (the probe `Pick`, in `runtime/with.rs`), which of the
//! three the value is:
//!
//! ```text
//! let reducer = path;
//! let kind = Pick::<Field, Update, _>::new(&reducer).kind();   // IsReducer, IsFunction or Mismatched
//! <_ as FieldReducer<Field, _, _>>::reducer(kind, reducer)   // or UpdateReducer<Field, Update, _, _>
//! ```
//!
//! and then [`FieldReducer`] (no `update =`) or [`UpdateReducer`] turns the
//! value into the reducer. Their impls exist in pairs for each kind that
//! can fail, so that a value that fits none is reported as not
//! implementing the trait itself, with its message, at the path: with a
//! single impl, rustc would report the impl's own failing bound, and for a
//! function with the wrong parameter types that is E0631 ("type mismatch
//! in function arguments") naming `Fn`, not the attribute. (One failure
//! is left to the impl's bound on purpose: a function `fn(&mut T, T)`
//! with the wrong return type, without `update =`, is returned as it is,
//! and the generated function's `impl Reducer<T>` return type reports it
//! in [`ReduceOutcome`]'s words.)

use super::{ReduceOutcome, Reducer, Staged, Writes};
use crate::error::ReduceError;
use std::marker::PhantomData;

/// The value implements `Reducer<T, Update = U>`.
pub struct IsReducer;

/// The value is a function `fn(&mut T, U) -> O`, but not a reducer: its
/// return type is not a [`ReduceOutcome`], or `U` is not `T`.
pub struct IsFunction;

/// Neither of the above: the value does not fit the field (the error
/// names this kind, so it says so).
pub struct Mismatched;

/// The kinds a value that is not a reducer itself may be.
pub trait NotReducer {}

impl NotReducer for IsFunction {}
impl NotReducer for Mismatched {}

/// Selects [`FieldReducer`]'s and [`UpdateReducer`]'s impl for a reducer.
pub struct ViaReducer;

/// Selects [`FieldReducer`]'s and [`UpdateReducer`]'s impl for a function
/// returning `O`.
pub struct ViaFunction<O>(PhantomData<O>);

/// `#[reducer(with = path)]`: the value `path` names, as the reducer of a
/// field of type `T` whose update is a `T`. `M` is the value's kind
/// (what the probe found), `K` the impl that applies.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot reduce a field of type `{T}`",
    label = "expected `fn(&mut {T}, {T})`, `fn(&mut {T}, {T}) -> Result<(), E>`, or a type implementing `Reducer<{T}>`",
    note = "for a function whose update is not a `{T}`, add the update's type: \
            `#[reducer(with = f, update = U)]` takes `fn(&mut {T}, U)`"
)]
pub trait FieldReducer<T, M, K>: Sized {
    /// The reducer.
    type Reducer;

    /// `value`, as the reducer.
    fn reducer(kind: M, value: Self) -> Self::Reducer;
}

/// A reducer of `T` whose update is a `T`: itself.
#[diagnostic::do_not_recommend]
impl<T, M, R: Reducer<T, Update = T>> FieldReducer<T, M, ViaReducer> for R {
    type Reducer = R;

    #[inline]
    fn reducer(_: M, value: R) -> R {
        value
    }
}

/// A function `fn(&mut T, T) -> O` that is no reducer: itself, so that the
/// generated function's `impl Reducer<T>` return type reports its return
/// type (`O` is not a [`ReduceOutcome`]) in `ReduceOutcome`'s words.
#[diagnostic::do_not_recommend]
impl<T, M: NotReducer, F, O> FieldReducer<T, M, ViaFunction<O>> for F
where
    F: Fn(&mut T, T) -> O,
{
    type Reducer = F;

    #[inline]
    fn reducer(_: M, value: F) -> F {
        value
    }
}

/// `#[reducer(with = path, update = U)]`: the value `path` names, as the
/// reducer of a field of type `T` whose update is a `U`. `M` is the
/// value's kind (what the probe found), `K` the impl that applies.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot reduce a field of type `{T}` with updates of type `{U}`",
    label = "expected `fn(&mut {T}, {U})`, `fn(&mut {T}, {U}) -> Result<(), E>`, or a type implementing `Reducer<{T}, Update = {U}>`",
    note = "`update = {U}` names the type of the function's second parameter; \
            a function that can fail returns `Result<(), E>` with `E: Error + Send + Sync + 'static` (or a `String`)"
)]
pub trait UpdateReducer<T, U, M, K>: Sized {
    /// The reducer.
    type Reducer: Reducer<T, Update = U>;

    /// `value`, as the reducer.
    fn reducer(kind: M, value: Self) -> Self::Reducer;
}

/// A reducer of `T` whose update is a `U`: itself.
#[diagnostic::do_not_recommend]
impl<T, U, M, R: Reducer<T, Update = U>> UpdateReducer<T, U, M, ViaReducer> for R {
    type Reducer = R;

    #[inline]
    fn reducer(_: M, value: R) -> R {
        value
    }
}

/// A function `fn(&mut T, U)` or `fn(&mut T, U) -> Result<(), E>`: a
/// [`FnReducer`].
#[diagnostic::do_not_recommend]
impl<T, U, M: NotReducer, F, O> UpdateReducer<T, U, M, ViaFunction<O>> for F
where
    F: Fn(&mut T, U) -> O,
    O: ReduceOutcome<T>,
{
    type Reducer = FnReducer<F, U>;

    #[inline]
    fn reducer(_: M, value: F) -> FnReducer<F, U> {
        FnReducer(value, PhantomData)
    }
}

/// A function `fn(&mut T, U)` or `fn(&mut T, U) -> Result<(), E>` as the
/// reducer of `T` whose update is a `U`, as a function `fn(&mut T, T)` is
/// one whose update is a `T`: an infallible function applies each write
/// in place; a fallible one runs on a copy of the field, which replaces it
/// only when every write succeeded.
pub struct FnReducer<F, U>(F, PhantomData<fn(U)>);

// Not offered when a function is no reducer of its field: that error is
// about the function.
#[diagnostic::do_not_recommend]
impl<T, U, F, O> Reducer<T> for FnReducer<F, U>
where
    F: Fn(&mut T, U) -> O,
    O: ReduceOutcome<T>,
{
    type Update = U;

    #[inline]
    fn apply(&self, target: &mut T, update: U) {
        O::run(&self.0, target, update);
    }

    #[inline]
    fn stage(&self, target: &T, writes: Writes<U>) -> Result<Staged<T, U>, ReduceError> {
        O::stage(&self.0, target, writes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// LangGraph's `update_dialog_stack`: `None` leaves the stack,
    /// `"pop"` pops, anything else is pushed.
    fn update_dialog_stack(stack: &mut Vec<String>, update: Option<String>) {
        match update.as_deref() {
            None => {}
            Some("pop") => {
                stack.pop();
            }
            Some(_) => stack.extend(update),
        }
    }

    fn pop_checked(stack: &mut Vec<String>, update: Option<String>) -> Result<(), String> {
        match update.as_deref() {
            Some("pop") if stack.is_empty() => Err("nothing to pop".to_owned()),
            _ => {
                update_dialog_stack(stack, update);
                Ok(())
            }
        }
    }

    fn reducer<F, U, O>(f: F) -> FnReducer<F, U>
    where
        F: Fn(&mut Vec<String>, U) -> O,
        O: ReduceOutcome<Vec<String>>,
    {
        <F as UpdateReducer<Vec<String>, U, IsFunction, _>>::reducer(IsFunction, f)
    }

    fn pushes(items: &[&str]) -> Writes<Option<String>> {
        let mut writes = Writes::one(None);
        for item in items {
            writes.push(Some((*item).to_owned()));
        }
        writes
    }

    #[test]
    fn infallible_function_applies_each_write_in_place() {
        let r = reducer(update_dialog_stack);
        let mut stack = vec!["assistant".to_owned()];
        let staged = r
            .stage(&stack, pushes(&["flight", "pop", "hotel"]))
            .unwrap();
        r.commit(&mut stack, staged);
        assert_eq!(stack, ["assistant", "hotel"]);
        r.reduce(&mut stack, None).unwrap();
        assert_eq!(stack, ["assistant", "hotel"]);
    }

    #[test]
    fn fallible_function_commits_only_when_every_write_succeeded() {
        let r = reducer(pop_checked);
        let mut stack = vec!["assistant".to_owned()];
        // The second pop fails after the first emptied the copy.
        let err = r.stage(&stack, pushes(&["pop", "pop"])).unwrap_err();
        assert_eq!(err, ReduceError::custom("nothing to pop"));
        assert_eq!(stack, ["assistant"]);
        let staged = r.stage(&stack, pushes(&["pop", "car"])).unwrap();
        r.commit(&mut stack, staged);
        assert_eq!(stack, ["car"]);
        r.apply(&mut stack, Some("pop".into()));
        assert!(stack.is_empty());
        // `apply` of a refused update (one `check` would have refused)
        // leaves the field as it was.
        r.apply(&mut stack, Some("pop".into()));
        assert!(stack.is_empty());
    }
}
