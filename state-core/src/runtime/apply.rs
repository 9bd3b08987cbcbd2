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
    match (slot, more) {
        (None, None) => Ok(Plan::Skip),
        (Some(update), None) => stage_one(reducer, target, field, update),
        (slot, more) => stage_more(reducer, target, field, slot, more),
    }
}

fn stage_more<T, R: Reducer<T>>(
    reducer: &R,
    target: &T,
    field: &'static str,
    slot: Option<R::Update>,
    more: Option<More<T, R::Update>>,
) -> Result<Plan<T, R::Update>, StateError> {
    let (overwrite, later) = match more {
        Some(more) => (more.overwrite, more.later),
        None => (None, Vec::new()),
    };
    if let Some(value) = overwrite {
        return Ok(Plan::Overwrite(value));
    }
    let mut rest = later.into_iter();
    let Some(first) = slot.or_else(|| rest.next()) else {
        return Ok(Plan::Skip);
    };
    let writes = Writes::new(first, rest.collect());
    reducer
        .stage(target, writes)
        .map(Plan::Reduce)
        .map_err(|source| StateError::reduce(field, source))
}

/// Stages one field's single plain write (the fast path of `apply`, for a
/// delta with no out-of-line writes): nothing to do without a write.
#[inline(always)]
pub fn stage_slot<T, R: Reducer<T>>(
    reducer: &R,
    target: &T,
    field: &'static str,
    slot: Option<R::Update>,
) -> Result<Plan<T, R::Update>, StateError> {
    match slot {
        None => Ok(Plan::Skip),
        Some(update) => stage_one(reducer, target, field, update),
    }
}

#[inline]
fn stage_one<T, R: Reducer<T>>(
    reducer: &R,
    target: &T,
    field: &'static str,
    update: R::Update,
) -> Result<Plan<T, R::Update>, StateError> {
    reducer
        .stage(target, Writes::one(update))
        .map(Plan::Reduce)
        .map_err(|source| StateError::reduce(field, source))
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
