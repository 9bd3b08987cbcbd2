//! Dotted-path access below a field. A field that is itself a [`State`]
//! is entered through its own typed methods; any other field through its
//! JSON value. Generated code picks between the two with autoref
//! specialisation: `Field(&self.f).get_below(..)` resolves to
//! [`ViaState`] when the field's type implements `State`, else to
//! [`ViaJson`].

use crate::dynamic::{from_json, to_json, walk, walk_mut};
use crate::error::StateError;
use crate::state::{FieldAny, State};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::any::Any;

/// A shared borrow of one field, for path access below it.
pub struct Field<'a, T>(pub &'a T);

/// A mutable borrow of one field, for path writes below it.
pub struct FieldMut<'a, T>(pub &'a mut T);

/// Path access into a field that is a nested state (preferred).
pub trait ViaState<'a> {
    /// `get` below this field.
    fn get_below(self, path: &str, rest: &str) -> Result<Value, StateError>;
}

/// Mutable path access into a field that is a nested state (preferred).
pub trait ViaStateMut<'a> {
    /// `set` below this field.
    fn set_below(self, path: &str, rest: &str, value: Value) -> Result<(), StateError>;
}

impl<'a, T: State> ViaState<'a> for Field<'a, T> {
    fn get_below(self, path: &str, rest: &str) -> Result<Value, StateError> {
        self.0.get(rest).map_err(|e| e.within(field_of(path, rest)))
    }
}

impl<'a, T: State> ViaStateMut<'a> for FieldMut<'a, T> {
    fn set_below(self, path: &str, rest: &str, value: Value) -> Result<(), StateError> {
        self.0
            .set(rest, value)
            .map_err(|e| e.within(field_of(path, rest)))
    }
}

/// Path access into any other field, through its JSON value (fallback).
pub trait ViaJson<'a> {
    /// `get` below this field.
    fn get_below(self, path: &str, rest: &str) -> Result<Value, StateError>;
}

/// Mutable path access into any other field (fallback).
pub trait ViaJsonMut<'a> {
    /// `set` below this field: the field's JSON value is edited and read
    /// back, so the field changes only if the result is still valid.
    fn set_below(self, path: &str, rest: &str, value: Value) -> Result<(), StateError>;
}

/// The field's name: `path` without `.rest`.
fn field_of<'p>(path: &'p str, rest: &str) -> &'p str {
    path.get(..path.len().saturating_sub(rest.len() + 1))
        .unwrap_or(path)
}

impl<'a, T: Serialize> ViaJson<'a> for &Field<'a, T> {
    fn get_below(self, path: &str, rest: &str) -> Result<Value, StateError> {
        let value = to_json(field_of(path, rest), self.0)?;
        walk(path, &value, rest).cloned()
    }
}

impl<'a, T: Serialize + DeserializeOwned> ViaJsonMut<'a> for &mut FieldMut<'a, T> {
    fn set_below(self, path: &str, rest: &str, value: Value) -> Result<(), StateError> {
        let mut json = to_json(field_of(path, rest), &*self.0)?;
        *walk_mut(path, &mut json, rest)? = value;
        *self.0 = from_json(path, std::any::type_name::<T>(), json)?;
        Ok(())
    }
}

/// Typed access below a field that is a nested state (preferred).
pub trait ViaAny<'a> {
    /// The value at `rest` inside this field, type-erased.
    fn any_below(self, rest: &str) -> Option<&'a dyn Any>;
}

/// Typed mutable access below a field that is a nested state (preferred).
pub trait ViaAnyMut<'a> {
    /// The value at `rest` inside this field, type-erased.
    fn any_below_mut(self, rest: &str) -> Option<&'a mut dyn Any>;
}

impl<'a, T: FieldAny> ViaAny<'a> for Field<'a, T> {
    fn any_below(self, rest: &str) -> Option<&'a dyn Any> {
        self.0.field_any(rest)
    }
}

impl<'a, T: FieldAny> ViaAnyMut<'a> for FieldMut<'a, T> {
    fn any_below_mut(self, rest: &str) -> Option<&'a mut dyn Any> {
        self.0.field_any_mut(rest)
    }
}

/// No typed access below a plain value (fallback).
pub trait NoAny<'a> {
    /// Always `None`.
    fn any_below(self, rest: &str) -> Option<&'a dyn Any>;
}

/// No typed access below a plain value (fallback).
pub trait NoAnyMut<'a> {
    /// Always `None`.
    fn any_below_mut(self, rest: &str) -> Option<&'a mut dyn Any>;
}

impl<'a, T> NoAny<'a> for &Field<'a, T> {
    fn any_below(self, _rest: &str) -> Option<&'a dyn Any> {
        None
    }
}

impl<'a, T> NoAnyMut<'a> for &mut FieldMut<'a, T> {
    fn any_below_mut(self, _rest: &str) -> Option<&'a mut dyn Any> {
        None
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::BTreeMap;

    #[test]
    fn json_fallback_reads_and_writes_below_a_map_field() {
        let mut scores = BTreeMap::from([("a".to_string(), 1.0)]);
        let got = Field(&scores).get_below("scores.a", "a").unwrap();
        assert_eq!(got, json!(1.0));
        FieldMut(&mut scores)
            .set_below("scores.b", "b", json!(2.5))
            .unwrap();
        assert_eq!(scores["b"], 2.5);
    }

    #[test]
    fn json_fallback_write_of_wrong_type_changes_nothing() {
        let mut scores = BTreeMap::from([("a".to_string(), 1.0)]);
        let err = FieldMut(&mut scores)
            .set_below("scores.a", "a", json!("high"))
            .unwrap_err();
        assert!(
            matches!(err, StateError::Type { ref field, .. } if field == "scores.a"),
            "{err}"
        );
        assert_eq!(scores["a"], 1.0);
    }
}
