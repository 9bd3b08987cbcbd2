//! Atomic application of a delta: every field is staged (all errors found,
//! nothing changed), then every field is committed (cannot fail).

use super::pending::More;
use crate::error::StateError;
use crate::reducer::{Reducer, Staged, Writes};

/// What committing one field will do.
pub enum Plan<T, U> {
    /// The delta does not write this field.
    Skip,
    /// Replace the field wholesale, bypassing the reducer.
    Overwrite(T),
    /// Reduce the staged writes.
    Reduce(Staged<T, U>),
}

/// Stages one field's writes: the delta's slot, then any later writes, or an
/// overwrite. Fails, naming the field, when the reducer refuses; changes
/// nothing either way.
#[inline(always)]
pub fn stage<T, R: Reducer<T>>(
    reducer: &R,
    target: &T,
    field: &'static str,
    slot: Option<R::Update>,
    more: Option<More<T, R::Update>>,
) -> Result<Plan<T, R::Update>, StateError> {
    match written(slot, more) {
        Written::Nothing => Ok(Plan::Skip),
        Written::Overwrite(value) => Ok(Plan::Overwrite(value)),
        Written::Writes(writes) => stage_writes(reducer, target, field, writes),
    }
}

/// The plan of one field of a delta that was checked already (see
/// [`State::check`](crate::State::check)): its writes, without checking
/// them again.
#[inline(always)]
pub fn restage<T, U>(slot: Option<U>, more: Option<More<T, U>>) -> Plan<T, U> {
    match written(slot, more) {
        Written::Nothing => Plan::Skip,
        Written::Overwrite(value) => Plan::Overwrite(value),
        Written::Writes(writes) => Plan::Reduce(Staged::writes(writes)),
    }
}

fn stage_writes<T, R: Reducer<T>>(
    reducer: &R,
    target: &T,
    field: &'static str,
    writes: Writes<R::Update>,
) -> Result<Plan<T, R::Update>, StateError> {
    reducer
        .stage(target, writes)
        .map(Plan::Reduce)
        .map_err(|source| StateError::reduce(field, source))
}

/// What a delta writes to one field, before any check.
enum Written<T, U> {
    Nothing,
    Overwrite(T),
    Writes(Writes<U>),
}

/// The slot and the out-of-line part of one field, as one write list. The
/// common cases (no write, one plain write) need no look at `more`.
#[inline(always)]
fn written<T, U>(slot: Option<U>, more: Option<More<T, U>>) -> Written<T, U> {
    match (slot, more) {
        (None, None) => Written::Nothing,
        (Some(update), None) => Written::Writes(Writes::one(update)),
        (slot, Some(more)) => written_more(slot, more),
    }
}

fn written_more<T, U>(slot: Option<U>, more: More<T, U>) -> Written<T, U> {
    if let Some(value) = more.overwrite {
        return Written::Overwrite(value);
    }
    let mut rest = more.later.into_iter();
    match slot.or_else(|| rest.next()) {
        Some(first) => Written::Writes(Writes::new(first, rest.collect())),
        None => Written::Nothing,
    }
}

/// Commits a staged field.
#[inline]
pub fn commit<T, R: Reducer<T>>(reducer: &R, target: &mut T, plan: Plan<T, R::Update>) {
    match plan {
        Plan::Skip => {}
        Plan::Overwrite(value) => *target = value,
        Plan::Reduce(staged) => reducer.commit(target, staged),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ReduceError;
    use crate::reducer::Append;

    fn refuse_negative(target: &mut i32, update: i32) -> Result<(), String> {
        if update < 0 {
            return Err("negative".into());
        }
        *target += update;
        Ok(())
    }

    #[test]
    fn skip_when_nothing_written() {
        let plan = stage(&Append, &vec![1], "f", None, None).unwrap();
        assert!(matches!(plan, Plan::Skip));
    }

    #[test]
    fn overwrite_bypasses_reducer() {
        let mut v = vec![1, 2];
        let more = More {
            overwrite: Some(vec![7]),
            later: vec![],
        };
        let plan = stage(&Append, &v, "f", None, Some(more)).unwrap();
        commit(&Append, &mut v, plan);
        assert_eq!(v, [7]);
    }

    #[test]
    fn failing_reducer_names_field() {
        let err = stage(&refuse_negative, &1, "budget", Some(-1), None)
            .err()
            .unwrap();
        assert_eq!(
            err,
            StateError::Reduce {
                field: "budget".into(),
                source: ReduceError::Custom("negative".into())
            }
        );
    }

    #[test]
    fn slot_then_later_writes_in_order() {
        let mut v = vec![0];
        let more = More {
            overwrite: None,
            later: vec![vec![2], vec![3]],
        };
        let plan = stage(&Append, &v, "f", Some(vec![1]), Some(more)).unwrap();
        commit(&Append, &mut v, plan);
        assert_eq!(v, [0, 1, 2, 3]);
    }
}
