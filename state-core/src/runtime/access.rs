//! Compile-time probes of a field's type, by autoref specialisation: a
//! persistent field holding a nested state resets that state's turn-scoped
//! fields in `begin_turn`, and the schema links a nested state's own.

use crate::state::State;

/// A mutable borrow of one field, for `begin_turn` below it.
pub struct FieldMut<'a, T>(pub &'a mut T);

/// `begin_turn` below a persistent field that holds a nested state
/// (preferred): the nested state resets its own turn-scoped fields.
pub trait ViaStateTurn {
    /// `State::begin_turn` of the nested state.
    fn begin_turn_below(self);
}

impl<T: State> ViaStateTurn for FieldMut<'_, T> {
    #[inline]
    fn begin_turn_below(self) {
        self.0.begin_turn();
    }
}

/// Any other field has nothing to reset (fallback).
pub trait NoStateTurn {
    /// Does nothing.
    fn begin_turn_below(self);
}

impl<T> NoStateTurn for &mut FieldMut<'_, T> {
    #[inline]
    fn begin_turn_below(self) {}
}

/// A type, probed for being a state: the schema of a field that holds a
/// nested state, whatever its reducer. Generated code picks between
/// [`ViaStateSchema`] and [`NoStateSchema`] with autoref specialisation.
pub struct Probe<T>(std::marker::PhantomData<T>);

impl<T> Probe<T> {
    /// A probe for `T`.
    pub const fn new() -> Self {
        Probe(std::marker::PhantomData)
    }
}

impl<T> Default for Probe<T> {
    fn default() -> Self {
        Probe::new()
    }
}

/// The schema of a type that is a state (preferred).
pub trait ViaStateSchema {
    /// `Some(T::schema())`.
    fn state_schema(&self) -> Option<&'static crate::schema::Schema>;
}

impl<T: State> ViaStateSchema for Probe<T> {
    fn state_schema(&self) -> Option<&'static crate::schema::Schema> {
        Some(T::schema())
    }
}

/// Any other type has no schema of its own (fallback).
pub trait NoStateSchema {
    /// `None`.
    fn state_schema(&self) -> Option<&'static crate::schema::Schema>;
}

impl<T> NoStateSchema for &Probe<T> {
    fn state_schema(&self) -> Option<&'static crate::schema::Schema> {
        None
    }
}
