//! One reducer field's writes in a delta: nothing, one update (the common
//! case, kept inline), or, out of line, the unfolded writes of a merged
//! step or a wholesale overwrite. A `replace` field's slot is a plain
//! `Option`: it never holds more than one write.
//!
//! The slot is generic over the field and update types only, so each
//! runtime function here is compiled once per field type, whichever states
//! use it. Its serde form is in `serde_delta.rs`, and staging it for a
//! commit in `apply.rs`: both build on the slot, which knows neither.

use crate::error::StateError;
use crate::into_update::IntoUpdate;
use crate::reducer::{Fold, Reducer, Writes};
use std::fmt;

/// A reducer field's writes in a delta, read through the delta's `get_x`
/// accessor as a [`Written`].
pub struct Slot<T, U>(Repr<T, U>);

enum Repr<T, U> {
    Empty,
    One(U),
    Rare(Box<Rare<T, U>>),
}

enum Rare<T, U> {
    /// At least two writes, in order, that the reducer could not fold.
    Many(Vec<U>),
    /// A replacement that bypasses the reducer.
    Overwrite(T),
}

/// What a delta writes to one reducer field, as its `get_x` accessor
/// reads it.
///
/// ```
/// use state_core::{AgentState, Message, Messages, State, Written};
///
/// #[derive(AgentState)]
/// struct Chat {
///     #[reducer(add_messages)]
///     messages: Messages,
/// }
///
/// let delta = Chat::delta().overwrite_messages(Messages::new());
/// assert!(matches!(delta.get_messages(), Some(Written::Overwrite(m)) if m.is_empty()));
///
/// let delta = Chat::delta().messages(vec![Message::human("hi")]);
/// assert!(matches!(delta.get_messages(), Some(Written::Update(m)) if m.len() == 1));
/// ```
#[derive(Debug, PartialEq)]
pub enum Written<'a, T, U> {
    /// One update, reduced into the field when the delta applies.
    Update(&'a U),
    /// Several updates of a merged step that the reducer could not fold
    /// into one, reduced in this order.
    Updates(&'a [U]),
    /// A wholesale replacement that bypasses the reducer (LangGraph's
    /// `Overwrite`).
    Overwrite(&'a T),
}

impl<'a, T, U> Written<'a, T, U> {
    /// The one update written, if that is what is written.
    pub fn update(self) -> Option<&'a U> {
        match self {
            Written::Update(update) => Some(update),
            _ => None,
        }
    }

    /// Every update written, in order: none for an overwrite.
    pub fn updates(self) -> &'a [U] {
        match self {
            Written::Update(update) => std::slice::from_ref(update),
            Written::Updates(updates) => updates,
            Written::Overwrite(_) => &[],
        }
    }

    /// The overwrite written, if that is what is written.
    pub fn overwrite(self) -> Option<&'a T> {
        match self {
            Written::Overwrite(value) => Some(value),
            _ => None,
        }
    }
}

impl<T, U> Clone for Written<'_, T, U> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T, U> Copy for Written<'_, T, U> {}

/// What a slot holds, taken out of it.
pub(crate) enum Taken<T, U> {
    Nothing,
    Overwrite(T),
    Writes(Writes<U>),
}

/// A `replace` field's setter: the slot holds what the node passed.
#[inline]
pub fn write<U>(slot: &mut Option<U>, value: impl IntoUpdate<U>) {
    *slot = Some(value.into_update());
}

impl<T, U> Slot<T, U> {
    /// True when the slot writes nothing.
    #[inline]
    pub fn is_empty(&self) -> bool {
        matches!(self.0, Repr::Empty)
    }

    /// What the slot writes, if anything.
    #[inline]
    pub fn written(&self) -> Option<Written<'_, T, U>> {
        match &self.0 {
            Repr::Empty => None,
            Repr::One(update) => Some(Written::Update(update)),
            Repr::Rare(rare) => Some(match &**rare {
                Rare::Many(updates) => Written::Updates(updates),
                Rare::Overwrite(value) => Written::Overwrite(value),
            }),
        }
    }

    /// Sets one update, [prepared](Reducer::prepare) by the field's
    /// reducer, replacing whatever the slot held (a setter called again
    /// replaces). The delta holds what applying will use (message ids), so
    /// a logged delta replays exactly.
    #[inline]
    pub fn set<R: Reducer<T, Update = U>>(&mut self, reducer: &R, mut update: U) {
        reducer.prepare(&mut update);
        self.0 = Repr::One(update);
    }

    /// A reducer field's setter: [`Slot::set`] of what the node passed.
    /// (One call, so the generated setter is one line.)
    #[inline]
    pub fn write<R: Reducer<T, Update = U>>(&mut self, reducer: &R, value: impl IntoUpdate<U>) {
        self.set(reducer, value.into_update());
    }

    /// The `overwrite_x` setter: [`Slot::overwrite`] of what the node passed.
    #[inline]
    pub fn write_overwrite(&mut self, value: impl IntoUpdate<T>) {
        self.overwrite(value.into_update());
    }

    /// Sets a wholesale replacement, dropping any plain writes: they would
    /// be lost to it anyway.
    pub fn overwrite(&mut self, value: T) {
        self.0 = Repr::Rare(Box::new(Rare::Overwrite(value)));
    }

    /// Sets the writes of a merged step, in order, each prepared; they are
    /// not folded, so the delta is the one that was written out.
    pub fn set_writes<R: Reducer<T, Update = U>>(&mut self, reducer: &R, writes: Writes<U>) {
        let (mut first, mut later) = writes.into_parts();
        for update in std::iter::once(&mut first).chain(&mut later) {
            reducer.prepare(update);
        }
        *self = Slot::from_writes(Writes::new(first, later));
    }

    /// A slot of `writes`, in order, without preparing them: one write
    /// stays inline, with no allocation.
    pub(super) fn from_writes(writes: Writes<U>) -> Self {
        let (first, later) = writes.into_parts();
        if later.is_empty() {
            return Slot(Repr::One(first));
        }
        let mut all = Vec::with_capacity(1 + later.len());
        all.push(first);
        all.extend(later);
        Slot(Repr::Rare(Box::new(Rare::Many(all))))
    }

    /// A slot of `writes`, in order, without preparing them.
    fn from_vec(mut writes: Vec<U>) -> Self {
        Slot(match writes.len() {
            0 => Repr::Empty,
            1 => match writes.pop() {
                Some(one) => Repr::One(one),
                None => Repr::Empty,
            },
            _ => Repr::Rare(Box::new(Rare::Many(writes))),
        })
    }

    /// What the slot holds, as one write list or an overwrite.
    pub(crate) fn take(self) -> Taken<T, U> {
        match self.0 {
            Repr::Empty => Taken::Nothing,
            Repr::One(update) => Taken::Writes(Writes::one(update)),
            Repr::Rare(rare) => match *rare {
                Rare::Overwrite(value) => Taken::Overwrite(value),
                Rare::Many(updates) => {
                    let mut updates = updates.into_iter();
                    match updates.next() {
                        Some(first) => Taken::Writes(Writes::new(first, updates.collect())),
                        None => Taken::Nothing,
                    }
                }
            },
        }
    }

    fn is_overwrite(&self) -> bool {
        matches!(&self.0, Repr::Rare(rare) if matches!(**rare, Rare::Overwrite(_)))
    }

    pub(super) fn overwritten(value: T) -> Self {
        Slot(Repr::Rare(Box::new(Rare::Overwrite(value))))
    }
}

impl<T, I> Slot<T, Vec<I>> {
    /// The `push_x` setter of a list field: adds one item, prepared, to
    /// what the slot writes (after the last write, or applied to the
    /// overwrite), so that `.push_x(a).push_x(b)` writes both.
    pub fn push<R: Reducer<T, Update = Vec<I>>>(&mut self, reducer: &R, item: I) {
        let mut one = vec![item];
        reducer.prepare(&mut one);
        match &mut self.0 {
            Repr::Empty => self.0 = Repr::One(one),
            Repr::One(update) => update.append(&mut one),
            Repr::Rare(rare) => match &mut **rare {
                Rare::Many(updates) => match updates.last_mut() {
                    Some(last) => last.append(&mut one),
                    None => updates.push(one),
                },
                Rare::Overwrite(value) => reducer.apply(value, one),
            },
        }
    }
}

impl<T, U> Default for Slot<T, U> {
    #[inline]
    fn default() -> Self {
        Slot(Repr::Empty)
    }
}

impl<T: Clone, U: Clone> Clone for Slot<T, U> {
    fn clone(&self) -> Self {
        Slot(match &self.0 {
            Repr::Empty => Repr::Empty,
            Repr::One(update) => Repr::One(update.clone()),
            Repr::Rare(rare) => Repr::Rare(Box::new(match &**rare {
                Rare::Many(updates) => Rare::Many(updates.clone()),
                Rare::Overwrite(value) => Rare::Overwrite(value.clone()),
            })),
        })
    }
}

impl<T: PartialEq, U: PartialEq> PartialEq for Slot<T, U> {
    fn eq(&self, other: &Self) -> bool {
        self.written() == other.written()
    }
}

/// The update itself, `Overwrite(value)`, or `Writes([update, ...])`.
impl<T: fmt::Debug, U: fmt::Debug> fmt::Debug for Slot<T, U> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.written() {
            None => f.write_str("Empty"),
            Some(Written::Update(update)) => update.fmt(f),
            Some(Written::Updates(updates)) => f.debug_tuple("Writes").field(&updates).finish(),
            Some(Written::Overwrite(value)) => f.debug_tuple("Overwrite").field(value).finish(),
        }
    }
}

/// How two deltas combine: written in the same step ([`Delta::merge`]),
/// or one after the other ([`Delta::then`]).
///
/// [`Delta::merge`]: crate::Delta::merge
/// [`Delta::then`]: crate::Delta::then
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MergeMode {
    /// The same step: two writes to a `replace` field conflict, and an
    /// overwrite wins over every plain write of the step.
    Concurrent,
    /// One after the other: a later write replaces, a later overwrite
    /// replaces all before it, and plain writes after an overwrite reduce
    /// into it.
    Sequential,
}

/// What a generated `merge` carries from field to field: its mode, and
/// the first error. Errors are kept, not returned: the generated `merge`
/// returns once, after every field (a `?` per field, each error path
/// dropping the writes not yet merged, measured 3% of a crate's compile
/// time), and a field is not merged once an error is held.
#[doc(hidden)]
#[derive(Debug)]
pub struct Merging {
    mode: MergeMode,
    result: Result<(), StateError>,
}

impl Merging {
    /// A merge in `mode`, with no error yet.
    #[inline]
    pub fn new(mode: MergeMode) -> Merging {
        Merging {
            mode,
            result: Ok(()),
        }
    }

    /// The mode.
    #[inline]
    pub fn mode(&self) -> MergeMode {
        self.mode
    }

    /// The first error, if any.
    #[inline]
    pub fn finish(self) -> Result<(), StateError> {
        self.result
    }
}

/// Merges a later delta's writes `b` to a reducer field into an earlier
/// delta's `a`, with the effect of applying the two in order.
///
/// Concurrently, an overwrite wins over every plain write of the step and
/// two overwrites conflict (LangGraph's `Overwrite`); in sequence, a later
/// overwrite replaces what came before, and later plain writes reduce into
/// an earlier overwrite. Plain writes fold pairwise through the reducer;
/// what cannot fold exactly is kept as a later write. The first error,
/// naming the field, goes to `merging`.
#[inline]
pub fn merge_slot<T, R: Reducer<T>>(
    reducer: &R,
    field: &'static str,
    a: &mut Slot<T, R::Update>,
    b: Slot<T, R::Update>,
    merging: &mut Merging,
) {
    // Most fields are not written by a given delta: nothing to merge.
    if b.is_empty() || merging.result.is_err() {
        return;
    }
    merging.result = match merging.mode {
        MergeMode::Concurrent => merge_writes(reducer, field, a, b),
        MergeMode::Sequential => then_writes(reducer, field, a, b),
    };
}

fn merge_writes<T, R: Reducer<T>>(
    reducer: &R,
    field: &'static str,
    a: &mut Slot<T, R::Update>,
    b: Slot<T, R::Update>,
) -> Result<(), StateError> {
    match b.take() {
        Taken::Nothing => Ok(()),
        Taken::Overwrite(_) if a.is_overwrite() => Err(StateError::ConcurrentOverwrite {
            field: field.to_owned(),
        }),
        Taken::Overwrite(value) => {
            a.overwrite(value);
            Ok(())
        }
        // The earlier overwrite wins over these plain writes.
        Taken::Writes(_) if a.is_overwrite() => Ok(()),
        Taken::Writes(writes) => {
            for update in writes {
                push_write(reducer, field, a, update)?;
            }
            Ok(())
        }
    }
}

/// [`merge_writes`] for writes that come after `a`'s, not beside them.
fn then_writes<T, R: Reducer<T>>(
    reducer: &R,
    field: &'static str,
    a: &mut Slot<T, R::Update>,
    b: Slot<T, R::Update>,
) -> Result<(), StateError> {
    match b.take() {
        Taken::Nothing => Ok(()),
        Taken::Overwrite(value) => {
            a.overwrite(value);
            Ok(())
        }
        Taken::Writes(writes) => {
            if let Repr::Rare(rare) = &mut a.0
                && let Rare::Overwrite(value) = &mut **rare
            {
                // Reduced into the overwrite now, as applying would: all
                // or nothing, like the apply it stands for.
                let staged = reducer
                    .stage(value, writes)
                    .map_err(|e| StateError::reduce(field, e))?;
                reducer.commit(value, staged);
                return Ok(());
            }
            // Kept apart, not folded: a fold means "in the same step"
            // (a nested state's would call its two writes a conflict).
            let mut all = match std::mem::take(a).0 {
                Repr::One(first) => vec![first],
                Repr::Rare(rare) => match *rare {
                    Rare::Many(updates) => updates,
                    Rare::Overwrite(_) => Vec::new(),
                },
                Repr::Empty => Vec::new(),
            };
            all.extend(writes);
            *a = Slot::from_vec(all);
            Ok(())
        }
    }
}

/// Appends one plain write to a slot with no overwrite, folding it into
/// the last write when the reducer can do so exactly. Two single writes
/// that fold stay inline: merging allocates only for writes it must keep
/// apart.
fn push_write<T, R: Reducer<T>>(
    reducer: &R,
    field: &'static str,
    slot: &mut Slot<T, R::Update>,
    update: R::Update,
) -> Result<(), StateError> {
    let earlier_and_last = match std::mem::take(slot).0 {
        Repr::One(last) => Some((Vec::new(), last)),
        Repr::Rare(rare) => match *rare {
            Rare::Many(mut updates) => updates.pop().map(|last| (updates, last)),
            // (Callers never push onto an overwrite: it wins.)
            Rare::Overwrite(_) => None,
        },
        Repr::Empty => None,
    };
    let Some((mut earlier, last)) = earlier_and_last else {
        *slot = Slot(Repr::One(update));
        return Ok(());
    };
    let (first, second) = match reducer
        .try_fold(last, update, crate::reducer::Sealed)
        .map_err(|e| e.within(field))?
    {
        Fold::One(folded) => (folded, None),
        Fold::Both(first, second) => (first, Some(second)),
        Fold::Conflict => {
            return Err(StateError::ConcurrentWrite {
                field: field.to_owned(),
            });
        }
    };
    *slot = match second {
        None if earlier.is_empty() => Slot(Repr::One(first)),
        second => {
            earlier.push(first);
            earlier.extend(second);
            Slot::from_vec(earlier)
        }
    };
    Ok(())
}

/// Merges a later delta's write `b` to a `replace` field into an earlier
/// delta's `a`: concurrently, two writes in one step conflict, even when
/// equal, as in LangGraph; in sequence, the later wins. The first error
/// goes to `merging`, as in [`merge_slot`].
#[inline]
pub fn merge_replace<U>(
    field: &'static str,
    a: &mut Option<U>,
    b: Option<U>,
    merging: &mut Merging,
) {
    match (&a, b) {
        (_, None) => {}
        (None, b) => *a = b,
        (Some(_), b) if merging.mode == MergeMode::Sequential => *a = b,
        (Some(_), Some(_)) if merging.result.is_ok() => {
            merging.result = Err(StateError::ConcurrentWrite {
                field: field.to_owned(),
            });
        }
        (Some(_), Some(_)) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reducer::Append;

    /// `merge_slot` with a fresh accumulator, as a `Result`.
    fn merge_slot<T, R: Reducer<T>>(
        reducer: &R,
        field: &'static str,
        a: &mut Slot<T, R::Update>,
        b: Slot<T, R::Update>,
    ) -> Result<(), StateError> {
        let mut merging = Merging::new(MergeMode::Concurrent);
        super::merge_slot(reducer, field, a, b, &mut merging);
        merging.finish()
    }

    /// `merge_replace` with a fresh accumulator, as a `Result`.
    fn merge_replace<U>(
        field: &'static str,
        a: &mut Option<U>,
        b: Option<U>,
    ) -> Result<(), StateError> {
        let mut merging = Merging::new(MergeMode::Concurrent);
        super::merge_replace(field, a, b, &mut merging);
        merging.finish()
    }

    /// Keeps both writes, as a reducer that cannot fold would.
    fn no_fold(target: &mut Vec<i32>, update: Vec<i32>) {
        target.extend(update);
    }

    fn one(update: Vec<i32>) -> Slot<Vec<i32>, Vec<i32>> {
        Slot(Repr::One(update))
    }

    /// `merge_slot` in sequence, as a `Result`.
    fn then_slot<T, R: Reducer<T>>(
        reducer: &R,
        a: &mut Slot<T, R::Update>,
        b: Slot<T, R::Update>,
    ) -> Result<(), StateError> {
        let mut merging = Merging::new(MergeMode::Sequential);
        super::merge_slot(reducer, "f", a, b, &mut merging);
        merging.finish()
    }

    #[test]
    fn in_sequence_a_later_replace_wins_and_overwrites_take_later_writes() {
        let mut merging = Merging::new(MergeMode::Sequential);
        let mut a = Some(1);
        super::merge_replace("f", &mut a, Some(2), &mut merging);
        assert!(merging.finish().is_ok());
        assert_eq!(a, Some(2));

        // An overwrite, then a plain write: reduced into the overwrite.
        let mut a: Slot<Vec<i32>, Vec<i32>> = Slot::overwritten(vec![9]);
        then_slot(&Append, &mut a, one(vec![1])).unwrap();
        assert_eq!(a.written(), Some(Written::Overwrite(&vec![9, 1])));
        // A plain write, then an overwrite: the overwrite replaces it.
        let mut a = one(vec![1]);
        then_slot(&Append, &mut a, Slot::overwritten(vec![7])).unwrap();
        assert_eq!(a.written(), Some(Written::Overwrite(&vec![7])));
        // Two overwrites: the later one.
        let mut a: Slot<Vec<i32>, Vec<i32>> = Slot::overwritten(vec![1]);
        then_slot(&Append, &mut a, Slot::overwritten(vec![2])).unwrap();
        assert_eq!(a.written(), Some(Written::Overwrite(&vec![2])));
        // Plain writes are kept apart, in order.
        let mut a = one(vec![1]);
        then_slot(&Append, &mut a, one(vec![2])).unwrap();
        assert_eq!(a.written().unwrap().updates(), [vec![1], vec![2]]);
    }

    #[test]
    fn folding_reducer_keeps_one_write() {
        let mut a = one(vec![1]);
        merge_slot(&Append, "f", &mut a, one(vec![2])).unwrap();
        assert_eq!(a.written(), Some(Written::Update(&vec![1, 2])));
    }

    #[test]
    fn replace_written_twice_conflicts() {
        let mut a = Some(1);
        let err = merge_replace("f", &mut a, Some(1));
        assert_eq!(err, Err(StateError::ConcurrentWrite { field: "f".into() }));
        assert_eq!(merge_replace("f", &mut a, None), Ok(()));
    }

    #[test]
    fn unfoldable_writes_are_kept_in_order() {
        let f = no_fold as fn(&mut Vec<i32>, Vec<i32>);
        let mut a = one(vec![1]);
        merge_slot(&f, "f", &mut a, one(vec![2])).unwrap();
        merge_slot(&f, "f", &mut a, one(vec![3])).unwrap();
        let expected = [vec![1], vec![2], vec![3]];
        assert_eq!(a.written(), Some(Written::Updates(&expected)));
    }

    #[test]
    fn later_overwrite_wins_and_drops_earlier_writes() {
        let mut a = one(vec![1]);
        merge_slot(&Append, "f", &mut a, Slot::overwritten(vec![9])).unwrap();
        assert_eq!(a.written(), Some(Written::Overwrite(&vec![9])));
    }

    #[test]
    fn earlier_overwrite_ignores_later_plain_writes() {
        let mut a = Slot::overwritten(vec![9]);
        merge_slot(&Append, "f", &mut a, one(vec![2])).unwrap();
        assert_eq!(a.written(), Some(Written::Overwrite(&vec![9])));
    }

    #[test]
    fn two_overwrites_conflict() {
        let mut a = Slot::overwritten(vec![1]);
        let err = merge_slot(&Append, "f", &mut a, Slot::overwritten(vec![2]));
        assert_eq!(
            err,
            Err(StateError::ConcurrentOverwrite { field: "f".into() })
        );
    }

    #[test]
    fn serializes_markers() {
        let writes: Slot<Vec<i32>, Vec<i32>> = Slot::from_vec(vec![vec![1], vec![2]]);
        assert_eq!(
            serde_json::to_value(&writes).unwrap(),
            serde_json::json!({"__writes__": [[1], [2]]})
        );
        let over: Slot<Vec<i32>, Vec<i32>> = Slot::overwritten(vec![3]);
        assert_eq!(
            serde_json::to_value(&over).unwrap(),
            serde_json::json!({"__overwrite__": [3]})
        );
        assert_eq!(format!("{over:?}"), "Overwrite([3])");
        assert_eq!(format!("{:?}", one(vec![4])), "[4]");
    }
}
