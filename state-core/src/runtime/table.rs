//! A state's dynamic paths, driven by its field table instead of generated
//! code: `get`, `set`, `to_json`, `Serialize`, `field_ref` and `field_mut`.
//!
//! The derive writes only the table ([`Fields`], in `fields.rs`): the
//! field descriptors of the schema, and one projection from a field's index
//! to the field, erased behind [`ErasedValue`] (or [`ErasedState`] for a
//! nested state). Everything else here is ordinary code over `&dyn Fields`,
//! compiled once in this crate instead of once per state in every crate
//! that derives one.

use super::fields::{base_index, own_index};
use super::flatten::{Member, in_declaration_order, serialize_map, write_object};
use crate::dynamic::{split_path, walk, walk_mut};
use crate::error::StateError;
use crate::state::State;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use std::any::Any;

// The table's types, where generated code and the rest of the runtime
// have always named them.
pub use super::fields::{
    AnyMut, AnyRef, ErasedState, ErasedValue, FieldMut, FieldRef, Fields, StaticState, StaticValue,
};

// Every state is an erased nested state to the table that holds it: here,
// not beside the trait, since `State` names `Fields`.
impl<S: State + Serialize + DeserializeOwned> ErasedState for S {
    fn as_fields(&self) -> &dyn Fields {
        State::__fields(self)
    }

    fn as_fields_mut(&mut self) -> &mut dyn Fields {
        State::__fields_mut(self)
    }

    fn begin_turn(&mut self) {
        State::begin_turn(self);
    }

    fn get_at(&self, key: &str) -> Result<Value, StateError> {
        State::get(self, key)
    }

    fn set_at(&mut self, key: &str, value: Value) -> Result<(), StateError> {
        State::set(self, key, value)
    }

    fn replace_json(&mut self, key: &str, value: Value) -> Result<(), StateError> {
        *self = S::from_json(value).map_err(|e| e.within(key))?;
        Ok(())
    }

    fn deserialize_fields(
        &mut self,
        deserializer: &mut dyn erased_serde::Deserializer<'_>,
        path: &str,
        top: &'static str,
    ) -> Result<(), erased_serde::Error> {
        if State::__fields(self).user_serde() {
            // `#[state(serde = "user")]`: its own impl, as when it is alone.
            *self = S::deserialize(deserializer)?;
            return Ok(());
        }
        // Into a fresh state, so that an error leaves this one as it was
        // and keys absent from the input take their defaults.
        let mut fresh = S::default();
        super::state_serde::deserialize_nested(
            State::__fields_mut(&mut fresh),
            deserializer,
            path,
            top,
        )?;
        *self = fresh;
        Ok(())
    }
}

impl<T: ErasedState + State + Any> StaticState for T {
    fn as_static_fields(&self) -> &(dyn Fields + 'static) {
        State::__static_fields(self)
    }

    fn as_static_fields_mut(&mut self) -> &mut (dyn Fields + 'static) {
        State::__static_fields_mut(self)
    }
}

/// Autoref projection of the fields of type `T`: as nested states when `T`
/// is a derived state (preferred), else as plain values. Generated code
/// writes `(&Probe::<T>::new()).projection()` once per field type, with
/// both traits in scope, and calls the projection's functions for each
/// field of that type; the choice is made at compile time.
pub use super::access::Probe;

/// Projection of fields that are derived states (preferred).
pub trait ViaStateField<T> {
    /// The fields, as nested states.
    fn projection(&self) -> Projection<T>;
    /// The fields as `Any`, as nested states.
    fn any_projection(&self) -> AnyProjection<T>
    where
        T: 'static;
}

/// Projection of any other fields (fallback).
pub trait ViaValueField<T> {
    /// The fields, as plain values.
    fn projection(&self) -> Projection<T>;
    /// The fields as `Any`, as plain values.
    fn any_projection(&self) -> AnyProjection<T>
    where
        T: 'static;
}

impl<T: ErasedState + State> ViaStateField<T> for Probe<T> {
    #[inline]
    fn projection(&self) -> Projection<T> {
        Projection {
            field: |value| FieldRef::State(value),
            field_mut: |value| FieldMut::State(value),
        }
    }

    #[inline]
    fn any_projection(&self) -> AnyProjection<T>
    where
        T: 'static,
    {
        AnyProjection {
            any: |value| AnyRef::State(value),
            any_mut: |value| AnyMut::State(value),
        }
    }
}

impl<T: ErasedValue> ViaValueField<T> for &Probe<T> {
    #[inline]
    fn projection(&self) -> Projection<T> {
        Projection {
            field: |value| FieldRef::Value(value),
            field_mut: |value| FieldMut::Value(value),
        }
    }

    #[inline]
    fn any_projection(&self) -> AnyProjection<T>
    where
        T: 'static,
    {
        AnyProjection {
            any: |value| AnyRef::Value(value),
            any_mut: |value| AnyMut::Value(value),
        }
    }
}

/// How a table reaches its fields of one type `T`, as nested states or as
/// plain values: chosen once per type by the autoref probe, then called
/// for each field of that type (one probe per type instead of one per
/// field: measured, compile time).
pub struct Projection<T> {
    /// The field.
    pub field: for<'a> fn(&'a T) -> FieldRef<'a>,
    /// The field, mutably.
    pub field_mut: for<'a> fn(&'a mut T) -> FieldMut<'a>,
}

/// [`Projection`] of a `'static` type's fields as `Any`.
pub struct AnyProjection<T: 'static> {
    /// The field as `Any`.
    pub any: for<'a> fn(&'a T) -> AnyRef<'a>,
    /// The field as `Any`, mutably.
    pub any_mut: for<'a> fn(&'a mut T) -> AnyMut<'a>,
}

/// `State::get`: the value at `key`, a field name or a dotted path.
///
/// Inlined into each state's `get`, where the table is a known type: the
/// common case, an own field by name, then makes no dynamic call to find
/// the field. Everything else is `get_path`, compiled once.
#[inline]
pub fn get(state: &dyn Fields, key: &str) -> Result<Value, StateError> {
    if let Some(field) = own_index(state, key).and_then(|index| state.field(index)) {
        return field.value().to_json(key);
    }
    get_path(state, key)
}

/// [`get`] of a dotted path or a flattened base's key.
fn get_path(state: &dyn Fields, key: &str) -> Result<Value, StateError> {
    let (head, rest) = split_path(key);
    if let Some(index) = own_index(state, head) {
        let field = state.field(index).ok_or_else(|| unknown(state, head))?;
        return match (field, rest) {
            (field, None) => field.value().to_json(head),
            (FieldRef::State(nested), Some(rest)) => nested
                .get_at(rest)
                .map_err(|e| e.within(head).seen_from(state.name())),
            (FieldRef::Value(value), Some(rest)) => {
                let json = value.to_json(head)?;
                walk(key, &json, rest).cloned()
            }
        };
    }
    match base_index(state, head).and_then(|i| state.base(i)) {
        Some(base) => get(base.as_fields(), key).map_err(|e| e.seen_from(state.name())),
        None => Err(unknown(state, head)),
    }
}

/// `State::set`: replaces the value at `key`, bypassing the reducer; on
/// error nothing changes. Inlined, as [`get`] is, for an own field by name.
#[inline]
pub fn set(state: &mut dyn Fields, key: &str, value: Value) -> Result<(), StateError> {
    if let Some(index) = own_index(state, key)
        && let Some(ty) = state.fields().get(index).map(|info| info.ty)
        && let Some(field) = state.field_mut(index)
    {
        let result = field.set_json(key, ty, value);
        return result.map_err(|e| e.seen_from(state.name()));
    }
    set_path(state, key, value)
}

/// [`set`] of a dotted path or a flattened base's key.
fn set_path(state: &mut dyn Fields, key: &str, value: Value) -> Result<(), StateError> {
    let (head, rest) = split_path(key);
    let state_name = state.name();
    if let Some(index) = own_index(state, head) {
        let ty = state.fields().get(index).map_or("", |info| info.ty);
        let Some(field) = state.field_mut(index) else {
            return Err(unknown(state, head));
        };
        return match (field, rest) {
            (field, None) => field
                .set_json(head, ty, value)
                .map_err(|e| e.seen_from(state_name)),
            (FieldMut::State(nested), Some(rest)) => nested
                .set_at(rest, value)
                .map_err(|e| e.within(head).seen_from(state_name)),
            (FieldMut::Value(field), Some(rest)) => {
                // Edit the field's JSON and read it back: the field changes
                // only if the result is still a valid value.
                let mut json = field.to_json(head)?;
                *walk_mut(key, &mut json, rest)? = value;
                let ty = field.type_name();
                field.set_json(key, ty, json)
            }
        };
    }
    match base_index(state, head).and_then(|i| state.base_mut(i)) {
        Some(base) => set(base.as_fields_mut(), key, value).map_err(|e| e.seen_from(state_name)),
        None => Err(unknown(state, head)),
    }
}

pub(crate) fn unknown(state: &dyn Fields, head: &str) -> StateError {
    StateError::unknown_field(state.name(), head, state.keys())
}

/// Calls `visit` on every field, flattened bases' in place, in declaration
/// order; stops at the first `false`.
fn visit(
    state: &dyn Fields,
    visit_field: &mut dyn FnMut(&'static str, &dyn ErasedValue) -> bool,
) -> bool {
    let fields = state.fields();
    in_declaration_order(fields.len(), state.bases(), |member| match member {
        Member::Own(index) => match (fields.get(index), state.field(index)) {
            (Some(info), Some(field)) => visit_field(info.name, field.value()),
            _ => true,
        },
        Member::Base(index) => state
            .base(index)
            .is_none_or(|nested| visit(nested.as_fields(), visit_field)),
    })
}

/// `State::begin_turn` below the persistent own fields `indices`: each
/// that holds a nested state resets that state's turn-scoped fields.
#[inline]
pub fn begin_turn_below(state: &mut dyn Fields, indices: &[usize]) {
    for &index in indices {
        if let Some(FieldMut::State(nested)) = state.field_mut(index) {
            nested.begin_turn();
        }
    }
}

/// `State::to_json`: every field in declaration order; the first field
/// without a JSON form is the error.
pub fn to_json_object(state: &dyn Fields) -> Result<Value, StateError> {
    let mut map = Map::new();
    let mut failed = None;
    visit(state, &mut |key, value| match value.to_json(key) {
        Ok(json) => {
            map.insert(key.to_owned(), json);
            true
        }
        Err(err) => {
            failed = Some(err);
            false
        }
    });
    match failed {
        Some(err) => Err(err),
        None => Ok(Value::Object(map)),
    }
}

/// `Serialize` for a state: a map of every field, in declaration order.
pub fn serialize<S: serde::Serializer>(
    state: &dyn Fields,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    // Every key is written, flattened bases' included.
    serialize_map(serializer, Some(state.keys().len()), |entry| {
        visit(state, &mut |key, value| entry(key, value.as_serialize()));
    })
}

/// `State::write_json`: the text `serialize` writes through `serde_json`
/// (every field, flattened bases' included, in declaration order), each
/// value written on its own type (see [`ErasedValue::write_json`]).
pub fn write_json(state: &dyn Fields, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
    write_object(out, |entry| {
        visit(state, &mut |key, value| {
            entry(key, &|out| value.write_json(out))
        });
    })
}

/// `field_ref::<T>`: the field at `key` (a name or a dotted path into
/// nested states) as `&T`, if it is one.
pub fn field_ref<'s, T: Any>(state: &'s (dyn Fields + 'static), key: &str) -> Option<&'s T> {
    let (head, rest) = split_path(key);
    if let Some(index) = own_index(state, head) {
        return match (state.field_any(index)?, rest) {
            (AnyRef::Value(value), None) => (value as &dyn Any).downcast_ref(),
            (AnyRef::State(nested), None) => (nested as &dyn Any).downcast_ref(),
            (AnyRef::State(nested), Some(rest)) => field_ref(nested.as_static_fields(), rest),
            (AnyRef::Value(_), Some(_)) => None,
        };
    }
    let base = base_index(state, head)?;
    field_ref(state.base_any(base)?, key)
}

/// `field_mut::<T>`: the field at `key` as `&mut T`, if it is one.
pub fn field_mut<'s, T: Any>(
    state: &'s mut (dyn Fields + 'static),
    key: &str,
) -> Option<&'s mut T> {
    let (head, rest) = split_path(key);
    if let Some(index) = own_index(state, head) {
        return match (state.field_any_mut(index)?, rest) {
            (AnyMut::Value(value), None) => (value as &mut dyn Any).downcast_mut(),
            (AnyMut::State(nested), None) => (nested as &mut dyn Any).downcast_mut(),
            (AnyMut::State(nested), Some(rest)) => field_mut(nested.as_static_fields_mut(), rest),
            (AnyMut::Value(_), Some(_)) => None,
        };
    }
    let base = base_index(state, head)?;
    field_mut(state.base_any_mut(base)?, key)
}
