//! A state's field table, the part the derive writes and `State` names:
//! the [`Fields`] trait, the type-erased handles on one field
//! ([`FieldRef`], [`FieldMut`], and their `Any` forms for `'static`
//! states), and finding a field by key. It knows no `State`: what builds
//! on it (string-keyed access, `Serialize`, and the bridge from any `State`
//! to [`ErasedState`]) is in `table.rs`, and `Deserialize` in
//! `state_serde.rs`; `table.rs` re-exports all of it.

use super::flatten::key_index;
use crate::dynamic::{from_json, to_json};
use crate::error::StateError;
use crate::schema::FieldInfo;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::any::Any;

/// Any field's value, type-erased: what the table-driven paths need of it.
/// Implemented for every type that serializes and deserializes.
pub trait ErasedValue {
    /// The value as JSON; an error names `key`.
    fn to_json(&self, key: &str) -> Result<Value, StateError>;

    /// Replaces the value with `value` read as this type; an error names
    /// `key` and `ty`, and leaves the value as it was.
    fn set_json(&mut self, key: &str, ty: &'static str, value: Value) -> Result<(), StateError>;

    /// The value, for any serde serializer.
    fn as_serialize(&self) -> &dyn erased_serde::Serialize;

    /// Appends the value as JSON to `out`: `serde_json` called on its own
    /// type, not through `erased_serde`, whose dynamic call per value
    /// costs more than the writing (a state's `write_json`).
    fn write_json(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error>;

    /// Replaces the value with one read from any serde deserializer; on
    /// error the value is left as it was.
    fn deserialize_erased(
        &mut self,
        deserializer: &mut dyn erased_serde::Deserializer<'_>,
    ) -> Result<(), erased_serde::Error>;

    /// The Rust type's name, for errors.
    fn type_name(&self) -> &'static str;
}

impl<T: Serialize + DeserializeOwned> ErasedValue for T {
    fn to_json(&self, key: &str) -> Result<Value, StateError> {
        to_json(key, self)
    }

    fn set_json(&mut self, key: &str, ty: &'static str, value: Value) -> Result<(), StateError> {
        *self = from_json(key, ty, value)?;
        Ok(())
    }

    fn as_serialize(&self) -> &dyn erased_serde::Serialize {
        self
    }

    fn write_json(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        serde_json::to_writer(out, self)
    }

    fn deserialize_erased(
        &mut self,
        deserializer: &mut dyn erased_serde::Deserializer<'_>,
    ) -> Result<(), erased_serde::Error> {
        *self = T::deserialize(deserializer)?;
        Ok(())
    }

    fn type_name(&self) -> &'static str {
        std::any::type_name::<T>()
    }
}

/// A field that is itself a derived state: dotted paths below it go
/// through its own table.
pub trait ErasedState: ErasedValue {
    /// The nested state's table.
    fn as_fields(&self) -> &dyn Fields;

    /// The nested state's table, mutably.
    fn as_fields_mut(&mut self) -> &mut dyn Fields;

    /// `State::begin_turn` of the nested state.
    fn begin_turn(&mut self);

    /// `State::get` of the nested state: its own table's, or with
    /// `#[state(serde = "user")]` its own serde impls'.
    fn get_at(&self, key: &str) -> Result<Value, StateError>;

    /// `State::set` of the nested state, as [`get_at`](ErasedState::get_at).
    fn set_at(&mut self, key: &str, value: Value) -> Result<(), StateError>;

    /// Replaces the nested state with `value` read by its own
    /// `State::from_json`, so that an error inside it names its dotted
    /// path (`inner.n`), not only `key`; on error nothing changes.
    fn replace_json(&mut self, key: &str, value: Value) -> Result<(), StateError>;

    /// Reads the nested state's fields from any serde deserializer, into
    /// itself: errors name its fields by their dotted path from `path`, in
    /// the state named `top`.
    fn deserialize_fields(
        &mut self,
        deserializer: &mut dyn erased_serde::Deserializer<'_>,
        path: &str,
        top: &'static str,
    ) -> Result<(), erased_serde::Error>;
}

/// One field, reached through the table.
pub enum FieldRef<'a> {
    /// A plain value: dotted paths below it walk its JSON.
    Value(&'a dyn ErasedValue),
    /// A nested state: dotted paths below it use its own table.
    State(&'a dyn ErasedState),
}

/// One field, reached mutably through the table.
pub enum FieldMut<'a> {
    /// A plain value.
    Value(&'a mut dyn ErasedValue),
    /// A nested state.
    State(&'a mut dyn ErasedState),
}

impl<'a> FieldRef<'a> {
    /// The field as a value, nested state or not.
    pub(super) fn value(self) -> &'a dyn ErasedValue {
        match self {
            FieldRef::Value(value) => value,
            FieldRef::State(state) => state,
        }
    }
}

impl FieldMut<'_> {
    /// Replaces the field with `value`; an error names `key` and `ty`, or
    /// for a nested state the dotted path inside it.
    pub(super) fn set_json(
        self,
        key: &str,
        ty: &'static str,
        value: Value,
    ) -> Result<(), StateError> {
        match self {
            FieldMut::Value(field) => field.set_json(key, ty, value),
            FieldMut::State(nested) => nested.replace_json(key, value),
        }
    }
}

/// A state's field table, written by `#[derive(AgentState)]`: the
/// descriptors of its own fields, and a projection from a field's index in
/// that list to the field. Flattened bases are reached whole, by position.
pub trait Fields {
    /// The state's name, for errors.
    fn name(&self) -> &'static str;

    /// The state's own fields (flattened bases' excluded), in order.
    fn fields(&self) -> &'static [FieldInfo];

    /// Every key, flattened bases' included (for suggestions).
    fn keys(&self) -> &'static [&'static str];

    /// The own fields' names, in order: `fields()[i].name` is `own_keys()[i]`.
    fn own_keys(&self) -> &'static [&'static str];

    /// Own field `index`.
    fn field(&self, index: usize) -> Option<FieldRef<'_>>;

    /// Own field `index`, mutably.
    fn field_mut(&mut self, index: usize) -> Option<FieldMut<'_>>;

    /// For each flattened base, how many own fields are declared before it.
    fn bases(&self) -> &'static [usize] {
        &[]
    }

    /// `#[state(serde = "user")]`: the state's JSON is its own serde
    /// impls', also where it is nested in another state.
    fn user_serde(&self) -> bool {
        false
    }

    /// Flattened base `index`.
    fn base(&self, index: usize) -> Option<&dyn ErasedState> {
        let _ = index;
        None
    }

    /// Flattened base `index`, mutably.
    fn base_mut(&mut self, index: usize) -> Option<&mut dyn ErasedState> {
        let _ = index;
        None
    }

    /// Own field `index` as `Any`, for `field_ref` (which needs `'static`).
    fn field_any(&self, index: usize) -> Option<AnyRef<'_>>
    where
        Self: 'static;

    /// Own field `index` as `Any`, mutably, for `field_mut`.
    fn field_any_mut(&mut self, index: usize) -> Option<AnyMut<'_>>
    where
        Self: 'static;

    /// Flattened base `index`, for `field_ref`.
    fn base_any(&self, index: usize) -> Option<&(dyn Fields + 'static)>
    where
        Self: 'static,
    {
        let _ = index;
        None
    }

    /// Flattened base `index`, mutably, for `field_mut`.
    fn base_any_mut(&mut self, index: usize) -> Option<&mut (dyn Fields + 'static)>
    where
        Self: 'static,
    {
        let _ = index;
        None
    }
}

/// A field's value of a `'static` type: erased as in [`ErasedValue`], and
/// also reachable as `Any` (by upcasting) for `field_ref`.
pub trait StaticValue: ErasedValue + Any {}

impl<T: ErasedValue + Any> StaticValue for T {}

/// A nested state of a `'static` type: its table, for paths below it.
pub trait StaticState: StaticValue + ErasedState {
    /// The nested state's table.
    fn as_static_fields(&self) -> &(dyn Fields + 'static);

    /// The nested state's table, mutably.
    fn as_static_fields_mut(&mut self) -> &mut (dyn Fields + 'static);
}

/// One field of a `'static` state: everything [`FieldRef`] gives, and the
/// field as `Any`.
pub enum AnyRef<'a> {
    /// A plain value.
    Value(&'a dyn StaticValue),
    /// A nested state.
    State(&'a dyn StaticState),
}

/// One field of a `'static` state, mutably.
pub enum AnyMut<'a> {
    /// A plain value.
    Value(&'a mut dyn StaticValue),
    /// A nested state.
    State(&'a mut dyn StaticState),
}

impl<'a> AnyRef<'a> {
    /// The field without its `Any` side: a non-generic state writes its
    /// `Fields::field` as this, and one projection serves both.
    #[inline]
    pub fn into_field(self) -> FieldRef<'a> {
        match self {
            AnyRef::Value(value) => FieldRef::Value(value),
            AnyRef::State(state) => FieldRef::State(state),
        }
    }
}

impl<'a> AnyMut<'a> {
    /// The field without its `Any` side, mutably.
    #[inline]
    pub fn into_field(self) -> FieldMut<'a> {
        match self {
            AnyMut::Value(value) => FieldMut::Value(value),
            AnyMut::State(state) => FieldMut::State(state),
        }
    }
}

/// Finds the own field named `key`, in the compact list of own names.
#[inline]
pub(super) fn own_index(state: &dyn Fields, key: &str) -> Option<usize> {
    key_index(state.own_keys(), key)
}

/// The field `key` names (an own field, or a flattened base's at any depth)
/// with its Rust type's name, mutably.
pub(crate) fn field_for_key_mut<'s>(
    state: &'s mut dyn Fields,
    key: &str,
) -> Option<(FieldMut<'s>, &'static str)> {
    if let Some(index) = own_index(state, key) {
        let ty = state.fields().get(index).map_or("", |info| info.ty);
        return state.field_mut(index).map(|field| (field, ty));
    }
    let base = base_index(state, key)?;
    field_for_key_mut(state.base_mut(base)?.as_fields_mut(), key)
}

/// The index of the flattened base that has `key`, if any.
pub(super) fn base_index(state: &dyn Fields, key: &str) -> Option<usize> {
    (0..state.bases().len()).find(|&i| {
        state
            .base(i)
            .is_some_and(|base| base.as_fields().keys().contains(&key))
    })
}
