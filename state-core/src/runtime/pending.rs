//! A delta's writes to one field beyond its first plain update: an
//! overwrite, or later updates that could not be folded into the first.

use crate::error::StateError;
use crate::reducer::{Fold, Reducer, Writes};

/// The rare part of a delta's slot for one field, kept out of line (boxed in
/// the delta) so that ordinary deltas stay small.
#[derive(Debug, Clone, PartialEq)]
pub struct More<T, U> {
    /// A wholesale replacement that bypasses the reducer (LangGraph's
    /// `Overwrite`). When set, the field has no other writes.
    pub overwrite: Option<T>,
    /// Updates to reduce after the delta's slot, in order.
    pub later: Vec<U>,
}

impl<T, U> Default for More<T, U> {
    fn default() -> Self {
        More {
            overwrite: None,
            later: Vec::new(),
        }
    }
}

impl<T, U> More<T, U> {
    /// True when there is an overwrite.
    pub fn has_overwrite(&self) -> bool {
        self.overwrite.is_some()
    }
}

/// Equality of two deltas' out-of-line parts, where an absent box equals an
/// empty one (setters may leave an emptied box behind).
pub fn more_eq<C: PartialEq + Default>(a: &Option<Box<C>>, b: &Option<Box<C>>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a == b,
        (Some(x), None) | (None, Some(x)) => **x == C::default(),
        (None, None) => true,
    }
}

/// Finds the out-of-line part of one field, creating the box on first use.
pub fn more_mut<C: Default, T, U>(
    more: &mut Option<Box<C>>,
    project: fn(&mut C) -> &mut More<T, U>,
) -> &mut More<T, U> {
    project(more.get_or_insert_with(Box::default))
}

/// Sets an overwrite: the field's plain update and later writes are dropped,
/// as they would be lost to the overwrite anyway.
pub fn set_overwrite<C: Default, T, U>(
    slot: &mut Option<U>,
    more: &mut Option<Box<C>>,
    project: fn(&mut C) -> &mut More<T, U>,
    value: T,
) {
    *slot = None;
    let more = more_mut(more, project);
    more.later.clear();
    more.overwrite = Some(value);
}

/// Sets a plain update, dropping any earlier overwrite or later writes of
/// the same field in this delta (a setter called again replaces). The
/// reducer [prepares](Reducer::prepare) it first: the delta holds what
/// applying will use (message ids), so a logged delta replays exactly.
pub fn set_update<C, T, R: Reducer<T>>(
    reducer: &R,
    slot: &mut Option<R::Update>,
    more: &mut Option<Box<C>>,
    project: fn(&mut C) -> &mut More<T, R::Update>,
    mut value: R::Update,
) {
    reducer.prepare(&mut value);
    if let Some(more) = more.as_mut() {
        let more = project(more);
        more.overwrite = None;
        more.later.clear();
    }
    *slot = Some(value);
}

/// Sets a field's writes of a merged step, in order, each
/// [prepared](Reducer::prepare), replacing whatever the delta held for it:
/// the first in the slot, the rest as later writes. They are not folded,
/// so the delta is the one that was written out.
pub fn set_writes<C: Default, T, R: Reducer<T>>(
    reducer: &R,
    slot: &mut Option<R::Update>,
    more: &mut Option<Box<C>>,
    project: fn(&mut C) -> &mut More<T, R::Update>,
    writes: Writes<R::Update>,
) {
    let (first, mut later) = writes.into_parts();
    set_update(reducer, slot, more, project, first);
    if later.is_empty() {
        return;
    }
    for update in &mut later {
        reducer.prepare(update);
    }
    more_mut(more, project).later = later;
}

/// Merges the writes `(b_slot, b_more)` of a later delta into one field of an
/// earlier delta, with the effect of applying the two in order.
///
/// An overwrite wins over every plain write of the step and two overwrites
/// conflict (LangGraph's `Overwrite`). Plain writes fold pairwise through
/// the reducer; what cannot fold exactly is kept as a later write, and a
/// conflict (a `replace` field written twice) is an error naming the field.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub fn merge_field<T, R, C>(
    reducer: &R,
    field: &'static str,
    slot: &mut Option<R::Update>,
    more: &mut Option<Box<C>>,
    project: fn(&mut C) -> &mut More<T, R::Update>,
    b_slot: Option<R::Update>,
    b_more: Option<More<T, R::Update>>,
) -> Result<(), StateError>
where
    R: Reducer<T>,
    C: Default,
{
    // Most fields are not written by a given delta: nothing to merge.
    if b_slot.is_none() && b_more.is_none() {
        return Ok(());
    }
    merge_writes(reducer, field, slot, more, project, b_slot, b_more)
}

#[allow(clippy::too_many_arguments)]
fn merge_writes<T, R, C>(
    reducer: &R,
    field: &'static str,
    slot: &mut Option<R::Update>,
    more: &mut Option<Box<C>>,
    project: fn(&mut C) -> &mut More<T, R::Update>,
    b_slot: Option<R::Update>,
    b_more: Option<More<T, R::Update>>,
) -> Result<(), StateError>
where
    R: Reducer<T>,
    C: Default,
{
    let (b_overwrite, b_later) = match b_more {
        Some(m) => (m.overwrite, m.later),
        None => (None, Vec::new()),
    };
    let a_overwrites = more.as_mut().is_some_and(|m| project(m).has_overwrite());
    if let Some(value) = b_overwrite {
        if a_overwrites {
            return Err(StateError::ConcurrentOverwrite {
                field: field.to_owned(),
            });
        }
        set_overwrite(slot, more, project, value);
        return Ok(());
    }
    if a_overwrites {
        // The earlier overwrite wins over these plain writes.
        return Ok(());
    }
    for update in b_slot.into_iter().chain(b_later) {
        push_write(reducer, field, slot, more, project, update)?;
    }
    Ok(())
}

/// Appends one plain write to a field's writes, folding it into the last
/// one when the reducer can do so exactly.
fn push_write<T, R, C>(
    reducer: &R,
    field: &'static str,
    slot: &mut Option<R::Update>,
    more: &mut Option<Box<C>>,
    project: fn(&mut C) -> &mut More<T, R::Update>,
    update: R::Update,
) -> Result<(), StateError>
where
    R: Reducer<T>,
    C: Default,
{
    let Some(first) = slot.take() else {
        *slot = Some(update);
        return Ok(());
    };
    let later = more.as_mut().map(|m| &mut project(m).later);
    let last = match later {
        Some(later) if !later.is_empty() => later.pop(),
        _ => None,
    };
    let (last, rest_is_slot) = match last {
        Some(last) => {
            *slot = Some(first);
            (last, false)
        }
        None => (first, true),
    };
    let folded = reducer
        .try_fold(last, update)
        .map_err(|e| e.within(field))?;
    let kept = match folded {
        Fold::One(folded) => [Some(folded), None],
        Fold::Both(a, b) => [Some(a), Some(b)],
        Fold::Conflict => {
            return Err(StateError::ConcurrentWrite {
                field: field.to_owned(),
            });
        }
    };
    for write in kept.into_iter().flatten() {
        if rest_is_slot && slot.is_none() {
            *slot = Some(write);
        } else {
            more_mut(more, project).later.push(write);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reducer::{Append, Replace};

    #[derive(Default, Debug)]
    struct Companion {
        f: More<Vec<i32>, Vec<i32>>,
    }

    fn project(c: &mut Companion) -> &mut More<Vec<i32>, Vec<i32>> {
        &mut c.f
    }

    /// Keeps both writes, as a reducer that cannot fold would.
    fn no_fold(target: &mut Vec<i32>, update: Vec<i32>) {
        target.extend(update);
    }

    #[test]
    fn folding_reducer_keeps_one_slot() {
        let (mut slot, mut more) = (Some(vec![1]), None::<Box<Companion>>);
        merge_field(
            &Append,
            "f",
            &mut slot,
            &mut more,
            project,
            Some(vec![2]),
            None,
        )
        .unwrap();
        assert_eq!(slot, Some(vec![1, 2]));
        assert!(more.is_none(), "no out-of-line storage needed");
    }

    #[test]
    fn replace_written_twice_conflicts() {
        let (mut slot, mut more) = (Some(vec![1]), None::<Box<Companion>>);
        let err = merge_field(
            &Replace,
            "f",
            &mut slot,
            &mut more,
            project,
            Some(vec![1]),
            None,
        );
        assert_eq!(err, Err(StateError::ConcurrentWrite { field: "f".into() }));
    }

    #[test]
    fn unfoldable_writes_are_kept_in_order() {
        let (mut slot, mut more) = (Some(vec![1]), None::<Box<Companion>>);
        let f = no_fold as fn(&mut Vec<i32>, Vec<i32>);
        merge_field(&f, "f", &mut slot, &mut more, project, Some(vec![2]), None).unwrap();
        merge_field(&f, "f", &mut slot, &mut more, project, Some(vec![3]), None).unwrap();
        assert_eq!(slot, Some(vec![1]));
        assert_eq!(more.unwrap().f.later, vec![vec![2], vec![3]]);
    }

    #[test]
    fn later_overwrite_wins_and_drops_earlier_writes() {
        let (mut slot, mut more) = (Some(vec![1]), None::<Box<Companion>>);
        let b_more = More {
            overwrite: Some(vec![9]),
            later: vec![],
        };
        merge_field(
            &Append,
            "f",
            &mut slot,
            &mut more,
            project,
            None,
            Some(b_more),
        )
        .unwrap();
        assert_eq!(slot, None);
        assert_eq!(more.unwrap().f.overwrite, Some(vec![9]));
    }

    #[test]
    fn earlier_overwrite_ignores_later_plain_writes() {
        let (mut slot, mut more) = (None, None::<Box<Companion>>);
        set_overwrite(&mut slot, &mut more, project, vec![9]);
        merge_field(
            &Append,
            "f",
            &mut slot,
            &mut more,
            project,
            Some(vec![2]),
            None,
        )
        .unwrap();
        assert_eq!(slot, None);
        assert_eq!(more.unwrap().f.overwrite, Some(vec![9]));
    }

    #[test]
    fn two_overwrites_conflict() {
        let (mut slot, mut more) = (None, None::<Box<Companion>>);
        set_overwrite(&mut slot, &mut more, project, vec![1]);
        let b_more = More {
            overwrite: Some(vec![2]),
            later: vec![],
        };
        let err = merge_field(
            &Append,
            "f",
            &mut slot,
            &mut more,
            project,
            None,
            Some(b_more),
        );
        assert_eq!(
            err,
            Err(StateError::ConcurrentOverwrite { field: "f".into() })
        );
    }
}
