//! Atomic application of a delta: every field is staged (all errors found,
//! nothing changed), then every field is committed (cannot fail).

use super::slot::{Slot, Taken};
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

impl<T, U> Slot<T, U> {
    /// A staged field put back into a delta (what `State::check` hands
    /// back): accepted writes as writes, a value computed while staging as
    /// an overwrite.
    pub fn from_plan(plan: Plan<T, U>) -> Self {
        match plan {
            Plan::Skip => Slot::default(),
            Plan::Overwrite(value) => Slot::overwritten(value),
            Plan::Reduce(staged) => match staged.into_parts() {
                Ok(writes) => Slot::from_writes(writes),
                Err(value) => Slot::overwritten(value),
            },
        }
    }
}

/// Stages one reducer field's writes: one update, the writes of a merged
/// step, or an overwrite. When the reducer refuses, the error, naming the
/// field, goes to `result` and the plan is to skip; once `result` holds an
/// error, later fields are not staged. Changes nothing either way.
///
/// An accumulated error instead of `?` per field: generated `apply` and
/// `check` then have one early return, not one per reducer field that
/// drops everything not yet moved out of the delta (measured: compile
/// time).
#[inline(always)]
pub fn stage<T, R: Reducer<T>>(
    reducer: &R,
    target: &T,
    field: &'static str,
    slot: Slot<T, R::Update>,
    result: &mut Result<(), StateError>,
) -> Plan<T, R::Update> {
    match slot.take() {
        Taken::Nothing => Plan::Skip,
        Taken::Overwrite(value) => Plan::Overwrite(value),
        Taken::Writes(writes) => stage_writes(reducer, target, field, writes, result),
    }
}

/// The plan of one field of a delta that was checked already (see
/// [`State::check`](crate::State::check)): its writes, without checking
/// them again.
#[inline(always)]
pub fn restage<T, U>(slot: Slot<T, U>) -> Plan<T, U> {
    match slot.take() {
        Taken::Nothing => Plan::Skip,
        Taken::Overwrite(value) => Plan::Overwrite(value),
        Taken::Writes(writes) => Plan::Reduce(Staged::writes(writes)),
    }
}

/// Stages and commits one reducer field at once: the last step of an
/// `apply` that can fail, so on error nothing else has changed yet. Saves
/// holding a [`Plan`] while the other fields commit (measured: the message
/// field of a typical node delta).
#[inline(always)]
pub fn reduce_now<T, R: Reducer<T>>(
    reducer: &R,
    target: &mut T,
    field: &'static str,
    slot: Slot<T, R::Update>,
) -> Result<(), StateError> {
    match slot.take() {
        Taken::Nothing => {}
        Taken::Overwrite(value) => *target = value,
        Taken::Writes(writes) => {
            let staged = reducer
                .stage(target, writes)
                .map_err(|source| StateError::reduce(field, source))?;
            reducer.commit(target, staged);
        }
    }
    Ok(())
}

/// [`stage`] of writes, out of line: its error handling is compiled once
/// per field type, not at every field.
fn stage_writes<T, R: Reducer<T>>(
    reducer: &R,
    target: &T,
    field: &'static str,
    writes: Writes<R::Update>,
    result: &mut Result<(), StateError>,
) -> Plan<T, R::Update> {
    if result.is_err() {
        return Plan::Skip;
    }
    match reducer.stage(target, writes) {
        Ok(staged) => Plan::Reduce(staged),
        Err(source) => {
            *result = Err(StateError::reduce(field, source));
            Plan::Skip
        }
    }
}

/// Commits a staged reducer field.
#[inline]
pub fn commit<T, R: Reducer<T>>(reducer: &R, target: &mut T, plan: Plan<T, R::Update>) {
    match plan {
        Plan::Skip => {}
        Plan::Overwrite(value) => *target = value,
        Plan::Reduce(staged) => reducer.commit(target, staged),
    }
}

/// Commits a `replace` field's write, if any.
#[inline(always)]
pub fn put<T>(target: &mut T, write: Option<T>) {
    if let Some(value) = write {
        *target = value;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ReduceError;
    use crate::reducer::Append;

    /// `stage` with a fresh accumulator, as a `Result`.
    fn staged<T, R: Reducer<T>>(
        reducer: &R,
        target: &T,
        field: &'static str,
        slot: Slot<T, R::Update>,
    ) -> Result<Plan<T, R::Update>, StateError> {
        let mut result = Ok(());
        let plan = super::stage(reducer, target, field, slot, &mut result);
        result.map(|()| plan)
    }

    fn refuse_negative(target: &mut i32, update: i32) -> Result<(), String> {
        if update < 0 {
            return Err("negative".into());
        }
        *target += update;
        Ok(())
    }

    #[test]
    fn skip_when_nothing_written() {
        let plan = staged(&Append, &vec![1], "f", Slot::default()).unwrap();
        assert!(matches!(plan, Plan::Skip));
    }

    #[test]
    fn overwrite_bypasses_reducer() {
        let mut v = vec![1, 2];
        let mut slot = Slot::default();
        slot.overwrite(vec![7]);
        let plan = staged(&Append, &v, "f", slot).unwrap();
        commit(&Append, &mut v, plan);
        assert_eq!(v, [7]);
    }

    #[test]
    fn failing_reducer_names_field() {
        let f = refuse_negative as fn(&mut i32, i32) -> Result<(), String>;
        let mut slot = Slot::default();
        slot.set(&f, -1);
        let err = staged(&f, &1, "budget", slot).err().unwrap();
        assert_eq!(
            err,
            StateError::Reduce {
                field: "budget".into(),
                source: ReduceError::custom("negative")
            }
        );
    }

    #[test]
    fn after_an_error_later_fields_are_not_staged() {
        let f = refuse_negative as fn(&mut i32, i32) -> Result<(), String>;
        let (mut bad, mut good) = (Slot::default(), Slot::default());
        bad.set(&f, -1);
        good.set(&f, -2);
        let mut result = Ok(());
        assert!(matches!(stage(&f, &1, "a", bad, &mut result), Plan::Skip));
        assert!(matches!(stage(&f, &1, "b", good, &mut result), Plan::Skip));
        // The first error is kept; the second field was never staged.
        assert!(matches!(result, Err(StateError::Reduce { field, .. }) if field == "a"));
    }

    #[test]
    fn reduce_now_names_the_field_and_leaves_the_target_on_error() {
        let f = refuse_negative as fn(&mut i32, i32) -> Result<(), String>;
        let (mut target, mut bad, mut good) = (1, Slot::default(), Slot::default());
        bad.set_writes(&f, Writes::new(2, vec![-1]));
        let err = reduce_now(&f, &mut target, "budget", bad).err().unwrap();
        assert!(matches!(err, StateError::Reduce { field, .. } if field == "budget"));
        assert_eq!(target, 1);
        good.set_writes(&f, Writes::new(2, vec![3]));
        reduce_now(&f, &mut target, "budget", good).unwrap();
        assert_eq!(target, 6);
    }

    #[test]
    fn slot_then_later_writes_in_order() {
        let mut v = vec![0];
        let mut slot = Slot::default();
        slot.set_writes(&Append, Writes::new(vec![1], vec![vec![2], vec![3]]));
        let plan = staged(&Append, &v, "f", slot).unwrap();
        commit(&Append, &mut v, plan);
        assert_eq!(v, [0, 1, 2, 3]);
    }
}
