//! One field of a delta, written to and read from JSON or any serde format.
//!
//! In JSON (and every human-readable format) a field's value is its update,
//! `{"__overwrite__": value}` (or LangGraph's `{"type": "__overwrite__",
//! "value": value}`) replacing a reducer field wholesale, or
//! `{"__writes__": [update, ...]}`, the writes of a merged step that the
//! field's reducer could not fold into one, in order. Telling a marker from
//! an update that is itself a map takes reading the value first, so these
//! formats go through a JSON value, as serde's untagged enums do.
//!
//! A compact format (`!is_human_readable()`: postcard, bincode,
//! MessagePack) cannot be read ahead: a reducer field's value carries a tag
//! instead, the enum [`Wire`], written by the slot's `Serialize`, and every
//! value is read straight into its type.

use super::slot::{Slot, Written};
use crate::dynamic::{describe, from_json};
use crate::error::StateError;
use crate::field_type::DecodeUpdate;
use crate::reducer::{Reducer, Writes};
use serde::de::DeserializeOwned;
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// The key LangGraph uses to mark an overwrite.
pub const OVERWRITE_KEY: &str = "__overwrite__";

/// The key that marks the several writes of a merged step to one field.
pub const WRITES_KEY: &str = "__writes__";

/// Where one field's value is read from.
pub enum UpdateInput<'a, 'de> {
    /// A JSON value: `from_json`, and `Deserialize` from a human-readable
    /// format.
    Json(Value),
    /// A compact format's deserializer, positioned on the value.
    Compact(&'a mut dyn erased_serde::Deserializer<'de>),
}

impl From<Value> for UpdateInput<'_, '_> {
    fn from(value: Value) -> Self {
        UpdateInput::Json(value)
    }
}

/// A reducer field's value in a compact format, tagged: one enum both
/// ways, so that its variants' order (the format) is written once. `Slot`'s
/// `Serialize` writes `Wire<&T, &U, &[U]>`; [`decode_reduced`] reads
/// `Wire<T, Compact<U>, Vec<Compact<U>>>`.
#[derive(Serialize, Deserialize)]
#[serde(rename = "Slot")]
pub(crate) enum Wire<T, U, W> {
    /// One update.
    Update(U),
    /// A wholesale replacement.
    Overwrite(T),
    /// The writes of a merged step, in order.
    Writes(W),
}

/// The update itself, `{"__overwrite__": value}`, or, for the writes of a
/// merged step that did not fold into one, `{"__writes__": [update, ...]}`.
/// A compact format (`!is_human_readable()`), which cannot read ahead to
/// tell a marker from an update, gets the tagged enum [`Wire`].
impl<T: Serialize, U: Serialize> Serialize for Slot<T, U> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if !serializer.is_human_readable() {
            let wire: Wire<&T, &U, &[U]> = match self.written() {
                None => return serializer.serialize_none(),
                Some(Written::Update(update)) => Wire::Update(update),
                Some(Written::Overwrite(value)) => Wire::Overwrite(value),
                Some(Written::Updates(updates)) => Wire::Writes(updates),
            };
            return wire.serialize(serializer);
        }
        match self.written() {
            None => serializer.serialize_none(),
            Some(Written::Update(update)) => update.serialize(serializer),
            Some(Written::Updates(updates)) => marker(serializer, WRITES_KEY, updates),
            Some(Written::Overwrite(value)) => marker(serializer, OVERWRITE_KEY, value),
        }
    }
}

fn marker<S: Serializer, V: Serialize + ?Sized>(
    serializer: S,
    key: &'static str,
    value: &V,
) -> Result<S::Ok, S::Error> {
    let mut map = serializer.serialize_map(Some(1))?;
    map.serialize_entry(key, value)?;
    map.end()
}

/// An update read through [`DecodeUpdate`], which every deserializable
/// update type implements.
struct Compact<U>(U);

impl<'de, U: DecodeUpdate> Deserialize<'de> for Compact<U> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut erased = <dyn erased_serde::Deserializer>::erase(d);
        U::decode_compact(&mut erased)
            .map(Compact)
            .map_err(serde::de::Error::custom)
    }
}

/// A compact format's value that is not of the field's type, named.
fn compact_error(field: &str, ty: &'static str) -> impl FnOnce(erased_serde::Error) -> StateError {
    move |e| super::state_serde::type_error(field, ty, &e)
}

/// Reads a last-write-wins field's update. A present key always becomes
/// `Some(update)`: for an `Option` field, `null` is `Some(None)` (clear it).
pub fn decode_replace<U: DeserializeOwned>(
    field: &str,
    ty: &'static str,
    slot: &mut Option<U>,
    input: UpdateInput<'_, '_>,
) -> Result<(), StateError> {
    *slot = Some(match input {
        UpdateInput::Json(value) => from_json(field, ty, value)?,
        UpdateInput::Compact(d) => {
            erased_serde::deserialize(d).map_err(compact_error(field, ty))?
        }
    });
    Ok(())
}

/// Reads a reducer field's update, an overwrite of the whole field, or the
/// writes of a merged step. Every update is [prepared](Reducer::prepare),
/// so ids a decoded delta needs are fixed once, here.
pub fn decode_reduced<T, R>(
    reducer: &R,
    field: &str,
    (ty, update_ty, one_or_many): (&'static str, &'static str, bool),
    slot: &mut Slot<T, R::Update>,
    input: UpdateInput<'_, '_>,
) -> Result<(), StateError>
where
    T: DeserializeOwned,
    R: Reducer<T>,
    R::Update: DecodeUpdate,
{
    let value = match input {
        UpdateInput::Json(value) => value,
        UpdateInput::Compact(d) => {
            let wire = erased_serde::deserialize::<Wire<T, Compact<R::Update>, Vec<_>>>(d);
            match wire.map_err(compact_error(field, update_ty))? {
                Wire::Update(Compact(update)) => slot.set(reducer, update),
                Wire::Overwrite(value) => slot.overwrite(value),
                Wire::Writes(list) => {
                    let mut list = list.into_iter().map(|Compact(update)| update);
                    let first = list
                        .next()
                        .ok_or_else(|| not_a_writes_list(field, &Value::Array(Vec::new())))?;
                    slot.set_writes(reducer, Writes::new(first, list.collect()));
                }
            }
            return Ok(());
        }
    };
    let decode = |value| decode_update(reducer, field, (update_ty, one_or_many), value);
    let plain = match split_overwrite(value) {
        Ok(inner) => {
            slot.overwrite(from_json(field, ty, inner)?);
            return Ok(());
        }
        Err(plain) => plain,
    };
    match split_writes(plain) {
        Ok(list) => {
            let (first, rest) = writes_list(field, list)?;
            let first = decode(first)?;
            let later = rest.into_iter().map(decode).collect::<Result<_, _>>()?;
            slot.set_writes(reducer, Writes::new(first, later));
        }
        Err(plain) => slot.set(reducer, decode(plain)?),
    }
    Ok(())
}

/// One update of a reducer field; LangGraph's single message where a list
/// is expected (`one_or_many`) becomes a list of one.
fn decode_update<T, R: Reducer<T>>(
    reducer: &R,
    field: &str,
    (update_ty, one_or_many): (&'static str, bool),
    value: Value,
) -> Result<R::Update, StateError>
where
    R::Update: DecodeUpdate,
{
    let value = match value {
        Value::Array(_) => value,
        single if one_or_many => Value::Array(vec![single]),
        other => other,
    };
    reducer.decode_update(field, update_ty, value, crate::reducer::Sealed)
}

/// `Ok(list)` when `value` is a `{"__writes__": ...}` marker, else
/// `Err(value)` back.
pub fn split_writes(value: Value) -> Result<Value, Value> {
    match value {
        Value::Object(mut object) if object.len() == 1 && object.contains_key(WRITES_KEY) => {
            Ok(object.remove(WRITES_KEY).unwrap_or_default())
        }
        other => Err(other),
    }
}

/// The updates under a `__writes__` marker, first and rest: a non-empty
/// array, or an error naming the field.
fn writes_list(field: &str, list: Value) -> Result<(Value, Vec<Value>), StateError> {
    if let Value::Array(items) = list {
        let mut items = items.into_iter();
        if let Some(first) = items.next() {
            return Ok((first, items.collect()));
        }
        return Err(not_a_writes_list(field, &Value::Array(Vec::new())));
    }
    Err(not_a_writes_list(field, &list))
}

fn not_a_writes_list(field: &str, got: &Value) -> StateError {
    StateError::Type {
        field: field.to_owned(),
        expected: format!("a non-empty list of updates under \"{WRITES_KEY}\""),
        got: describe(got),
    }
}

/// `Ok(inner)` when `value` is an overwrite marker, else `Err(value)` back.
pub fn split_overwrite(value: serde_json::Value) -> Result<serde_json::Value, serde_json::Value> {
    let serde_json::Value::Object(mut object) = value else {
        return Err(value);
    };
    if object.len() == 1 && object.contains_key(OVERWRITE_KEY) {
        return Ok(object.remove(OVERWRITE_KEY).unwrap_or_default());
    }
    let typed = object.get("type").and_then(|t| t.as_str()) == Some(OVERWRITE_KEY);
    if typed && object.contains_key("value") {
        return Ok(object.remove("value").unwrap_or_default());
    }
    Err(serde_json::Value::Object(object))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn overwrite_markers_are_recognised() {
        assert_eq!(
            split_overwrite(json!({"__overwrite__": [1]})),
            Ok(json!([1]))
        );
        assert_eq!(
            split_overwrite(json!({"type": "__overwrite__", "value": 2, "other": 0})),
            Ok(json!(2))
        );
        assert_eq!(split_overwrite(json!({"a": 1})), Err(json!({"a": 1})));
        assert_eq!(
            split_overwrite(json!({"__overwrite__": 1, "b": 2})),
            Err(json!({"__overwrite__": 1, "b": 2}))
        );
    }
}
