//! Nested states: a field whose type derives `AgentState`, reduced with
//! `#[reducer(merge)]`, takes the inner state's delta as its update.
//! `Reducer<S>` for `Merge`, for every state `S`, is implemented here (once,
//! not by the derive for each state); the inner delta is checked
//! ([`State::check`]) with the outer one, so the whole update stays
//! all-or-nothing.

use crate::error::{ReduceError, StateError};
use crate::reducer::{Fold, Merge, Reducer, Sealed, Staged, Writes};
use crate::state::{Checked, Delta, State};
use serde_json::Value;

// Errors name `Reducer` itself, with its note on what each reducer needs
// (a map or a nested state), rather than `State`.
#[diagnostic::do_not_recommend]
impl<S: State> Reducer<S> for Merge {
    type Update = S::Delta;

    fn apply(&self, target: &mut S, update: S::Delta) {
        apply(target, update)
    }

    fn stage(
        &self,
        target: &S,
        writes: Writes<S::Delta>,
    ) -> Result<Staged<S, S::Delta>, ReduceError> {
        stage(target, writes)
    }

    fn commit(&self, target: &mut S, staged: Staged<S, S::Delta>) {
        commit(target, staged)
    }

    fn fold(&self, first: S::Delta, second: S::Delta) -> Fold<S::Delta> {
        fold::<S>(first, second)
    }

    fn try_fold(
        &self,
        first: S::Delta,
        second: S::Delta,
        _: Sealed,
    ) -> Result<Fold<S::Delta>, StateError> {
        try_fold::<S>(first, second)
    }

    fn decode_update(
        &self,
        field: &str,
        _update_ty: &'static str,
        value: Value,
        _: Sealed,
    ) -> Result<S::Delta, StateError> {
        decode::<S>(field, value)
    }
}

/// `Reducer::apply` of a nested state: the delta applies atomically, or
/// (if it would fail) not at all.
pub fn apply<S: State>(target: &mut S, delta: S::Delta) {
    let _ = target.apply(delta);
}

/// `Reducer::stage` of a nested state: the step's deltas, merged, then
/// checked against the nested state. Errors name the inner field.
pub fn stage<S: State>(
    target: &S,
    writes: Writes<S::Delta>,
) -> Result<Staged<S, S::Delta>, ReduceError> {
    let (first, later) = writes.into_parts();
    let mut delta = first;
    for next in later {
        delta = delta.merge(next).map_err(nested)?;
    }
    let checked = target.check(delta).map_err(nested)?;
    Ok(Staged::writes(Writes::one(checked.into_inner())))
}

/// `Reducer::commit` of a nested state: [`stage`] checked the delta.
pub fn commit<S: State>(target: &mut S, staged: Staged<S, S::Delta>) {
    staged.commit(target, |target, checked| {
        target.commit(Checked::new(checked))
    });
}

/// `Reducer::fold` of a nested state: one delta with the effect of both,
/// unless they conflict.
pub fn fold<S: State>(first: S::Delta, second: S::Delta) -> Fold<S::Delta> {
    try_fold::<S>(first, second).unwrap_or(Fold::Conflict)
}

/// `Reducer::try_fold` of a nested state: as [`fold`], with the inner
/// field's error.
pub fn try_fold<S: State>(first: S::Delta, second: S::Delta) -> Result<Fold<S::Delta>, StateError> {
    first.merge(second).map(Fold::One)
}

/// `Reducer::decode_update` of a nested state: its delta, with errors under
/// the field's path.
pub fn decode<S: State>(field: &str, value: Value) -> Result<S::Delta, StateError> {
    S::Delta::from_json(value).map_err(|e| e.within(field))
}

fn nested(error: StateError) -> ReduceError {
    ReduceError::Nested(Box::new(error))
}
