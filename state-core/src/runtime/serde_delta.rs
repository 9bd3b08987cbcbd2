//! Deltas in JSON (or any self-describing serde format): `{field: update}`,
//! with `{"__overwrite__": value}` (or LangGraph's `{"type":
//! "__overwrite__", "value": value}`) replacing a reducer field wholesale,
//! and `{"__writes__": [update, ...]}` holding the writes of a merged step
//! that the field's reducer could not fold into one, in order.

use super::flatten::KeyTree;
use super::pending::{More, set_overwrite, set_update, set_writes};
use crate::dynamic::{describe, from_json};
use crate::error::StateError;
use crate::reducer::{Reducer, Writes};
use serde::de::{self, DeserializeOwned, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserializer, Serialize};
use serde_json::Value;
use std::fmt;
use std::marker::PhantomData;

/// The key LangGraph uses to mark an overwrite.
pub const OVERWRITE_KEY: &str = "__overwrite__";

/// The key that marks the several writes of a merged step to one field.
pub const WRITES_KEY: &str = "__writes__";

/// Implemented by generated deltas: decodes the JSON value of one key.
pub trait DecodeDelta: Default {
    /// The keys: own field names and flattened bases' keys.
    const KEYS: KeyTree;

    /// Whether `key` is a key of this delta (a generated `match`).
    fn has_field(key: &str) -> bool;

    /// Reads `value` into the slot of `key`.
    fn decode_field(&mut self, key: &str, value: Value) -> Result<(), StateError>;
}

/// A delta from a JSON object, every key decoded before returning.
pub fn delta_from_json<T: DecodeDelta>(value: Value) -> Result<T, StateError> {
    let Value::Object(object) = value else {
        return Err(StateError::NotAnObject {
            got: describe(&value),
        });
    };
    let mut delta = T::default();
    for (key, value) in object {
        delta.decode_field(&key, value)?;
    }
    Ok(delta)
}

/// Deserializes a generated delta from any self-describing format: the map
/// is read into JSON values first (a repeated key is an error), then decoded
/// as [`delta_from_json`] does.
pub fn deserialize_delta<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: DecodeDelta,
{
    deserializer.deserialize_map(DeltaVisitor(PhantomData))
}

struct DeltaVisitor<T>(PhantomData<T>);

impl<'de, T: DecodeDelta> Visitor<'de> for DeltaVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map of field names to updates")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<T, A::Error> {
        let mut delta = T::default();
        let mut seen: Vec<String> = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            if seen.contains(&key) {
                return Err(de::Error::custom(format_args!(
                    "field \"{key}\" is written twice in one delta"
                )));
            }
            let value = map.next_value::<Value>()?;
            delta.decode_field(&key, value).map_err(de::Error::custom)?;
            seen.push(key);
        }
        Ok(delta)
    }
}

/// The error for a key that is not a field, with a did-you-mean.
pub fn unknown_field(key: &str, fields: &[&str]) -> StateError {
    StateError::unknown_field(key, fields)
}

/// The error for a key that is not a field of the delta `D`, with a
/// did-you-mean over all its keys, flattened bases' included.
pub fn unknown_delta_field<D: DecodeDelta>(key: &str) -> StateError {
    let mut keys = Vec::new();
    D::KEYS.collect(&mut keys);
    StateError::unknown_field(key, &keys)
}

/// Reads a last-write-wins field's update. A present key always becomes
/// `Some(update)`: for an `Option` field, `null` is `Some(None)` (clear it).
pub fn decode_replace<U: DeserializeOwned>(
    field: &str,
    ty: &'static str,
    slot: &mut Option<U>,
    value: Value,
) -> Result<(), StateError> {
    *slot = Some(from_json(field, ty, value)?);
    Ok(())
}

/// Reads a reducer field's update, an overwrite of the whole field, or the
/// writes of a merged step. Every update is [prepared](Reducer::prepare),
/// so ids a decoded delta needs are fixed once, here.
pub fn decode_reduced<C, T, U, R>(
    reducer: &R,
    field: &str,
    (ty, update_ty, one_or_many): (&'static str, &'static str, bool),
    slot: &mut Option<U>,
    more: &mut Option<Box<C>>,
    project: fn(&mut C) -> &mut More<T, U>,
    value: Value,
) -> Result<(), StateError>
where
    C: Default,
    T: DeserializeOwned,
    U: DeserializeOwned,
    R: Reducer<T, Update = U>,
{
    let decode = |value| decode_update(reducer, field, (update_ty, one_or_many), value);
    let plain = match split_overwrite(value) {
        Ok(inner) => {
            let value = from_json(field, ty, inner)?;
            set_overwrite(slot, more, project, value);
            return Ok(());
        }
        Err(plain) => plain,
    };
    match split_writes(plain) {
        Ok(list) => {
            let (first, rest) = writes_list(field, list)?;
            let first = decode(first)?;
            let later = rest.into_iter().map(decode).collect::<Result<_, _>>()?;
            set_writes(reducer, slot, more, project, Writes::new(first, later));
        }
        Err(plain) => set_update(reducer, slot, more, project, decode(plain)?),
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
    R::Update: DeserializeOwned,
{
    let value = match value {
        Value::Array(_) => value,
        single if one_or_many => Value::Array(vec![single]),
        other => other,
    };
    reducer.decode_update(field, update_ty, value)
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

/// Writes one field's slot: the update, `{"__overwrite__": value}`, or,
/// for the writes of a merged step that did not fold into one,
/// `{"__writes__": [update, ...]}` in order.
pub fn serialize_slot<M, T, U>(
    map: &mut M,
    field: &'static str,
    slot: &Option<U>,
    more: Option<&More<T, U>>,
) -> Result<(), M::Error>
where
    M: SerializeMap,
    T: Serialize,
    U: Serialize,
{
    let later = match more {
        Some(More {
            overwrite: Some(value),
            ..
        }) => return map.serialize_entry(field, &Marker(OVERWRITE_KEY, value)),
        Some(more) => more.later.as_slice(),
        None => &[],
    };
    if later.is_empty() {
        return match slot {
            Some(update) => map.serialize_entry(field, update),
            None => Ok(()),
        };
    }
    let writes = slot.iter().chain(later).collect::<Vec<_>>();
    match writes.as_slice() {
        // (A lone later write: setters keep the slot filled, but a hand-made
        // delta may not.)
        [one] => map.serialize_entry(field, one),
        _ => map.serialize_entry(field, &Marker(WRITES_KEY, &writes)),
    }
}

/// Serializes as `{key: value}`: an overwrite or a list of writes.
struct Marker<'a, T>(&'static str, &'a T);

impl<T: Serialize> Serialize for Marker<'_, T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(1))?;
        map.serialize_entry(self.0, self.1)?;
        map.end()
    }
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
