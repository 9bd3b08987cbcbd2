//! The autoref probe generated code runs first for `#[reducer(with =
//! path)]`: is the value `path` names a reducer of the field, a function
//! of the field and some update, or neither? The answer is one of the
//! kinds in [`crate::reducer`] (`IsReducer`, `IsFunction`, `Mismatched`),
//! and the reducer's own adapters (`FieldReducer`, `UpdateReducer`, in
//! `reducer/with.rs`, where the whole scheme is described) turn the value
//! into the field's reducer:
//!
//! ```text
//! let reducer = path;
//! let kind = Pick::<Field, Update, _>::new(&reducer).kind();   // IsReducer, IsFunction or Mismatched
//! <_ as FieldReducer<Field, _, _>>::reducer(kind, reducer)   // or UpdateReducer<Field, Update, _, _>
//! ```
//!
//! Only the probe lives here, beside the other support generated code
//! calls; reducers do not depend on it.

use crate::reducer::{IsFunction, IsReducer, Mismatched, Reducer};
use std::marker::PhantomData;

/// The value a custom reducer attribute names, with the field type `T` and
/// the update type `U`, probed for what it is. See the module docs.
pub struct Pick<T, U, R>(PhantomData<fn(&R, &mut T, U)>);

impl<T, U, R> Pick<T, U, R> {
    /// A probe of `reducer`.
    #[inline]
    pub fn new(reducer: &R) -> Self {
        let _ = reducer;
        Pick(PhantomData)
    }
}

/// Probe, first choice: a reducer.
pub trait PickReducer: Sized {
    /// [`IsReducer`].
    #[inline]
    fn kind(self) -> IsReducer {
        IsReducer
    }
}

impl<T, U, R: Reducer<T, Update = U>> PickReducer for Pick<T, U, R> {}

/// Probe, second choice: a function of the field and the update.
pub trait PickFunction: Sized {
    /// [`IsFunction`].
    #[inline]
    fn kind(self) -> IsFunction {
        IsFunction
    }
}

impl<T, U, R, O> PickFunction for &Pick<T, U, R> where R: Fn(&mut T, U) -> O {}

/// Probe, last choice: anything else.
pub trait PickOther: Sized {
    /// [`Mismatched`].
    #[inline]
    fn kind(self) -> Mismatched {
        Mismatched
    }
}

impl<T, U, R> PickOther for &mut Pick<T, U, R> {}
