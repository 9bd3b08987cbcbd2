//! Compile-time probes of a field's type, by autoref specialisation: the
//! schema links a nested state's own. (The field table probes the same
//! way: see `table`.)

use crate::state::State;

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
