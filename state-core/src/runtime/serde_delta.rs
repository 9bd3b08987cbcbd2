//! Deltas in JSON (or any self-describing serde format): `{field: update}`,
//! with `{"__overwrite__": value}` (or LangGraph's `{"type":
//! "__overwrite__", "value": value}`) replacing a reducer field wholesale.

use super::pending::{More, more_mut};
use crate::error::StateError;
use serde::de::{self, DeserializeOwned, MapAccess, Visitor};
use serde::ser::{self, SerializeMap};
use serde::{Deserialize, Deserializer, Serialize};
use std::fmt;
use std::marker::PhantomData;

/// The key LangGraph uses to mark an overwrite.
pub const OVERWRITE_KEY: &str = "__overwrite__";

/// Implemented by generated deltas: decodes the value of one key.
pub trait DecodeDelta: Default {
    /// The field names, in declaration order.
    const FIELDS: &'static [&'static str];

    /// Reads the value of `key` from `map` into the matching slot.
    fn decode_field<'de, A: MapAccess<'de>>(
        &mut self,
        key: &str,
        map: &mut A,
    ) -> Result<(), A::Error>;
}

/// Deserializes a generated delta from a map, rejecting unknown and
/// repeated keys.
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
        while let Some(key) = map.next_key::<KeyBuf<'de>>()? {
            delta.decode_field(key.as_str(), &mut map)?;
        }
        Ok(delta)
    }
}

/// A map key, borrowed from the input when the format allows.
enum KeyBuf<'de> {
    Borrowed(&'de str),
    Owned(String),
}

impl KeyBuf<'_> {
    fn as_str(&self) -> &str {
        match self {
            KeyBuf::Borrowed(s) => s,
            KeyBuf::Owned(s) => s,
        }
    }
}

impl<'de> Deserialize<'de> for KeyBuf<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = KeyBuf<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a field name")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(KeyBuf::Borrowed(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(KeyBuf::Owned(v.to_owned()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(KeyBuf::Owned(v))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

/// The error for a key that is not a field, with a did-you-mean.
pub fn unknown_field<E: de::Error>(key: &str, fields: &[&str]) -> E {
    E::custom(StateError::unknown_field(key, fields))
}

fn duplicate<E: de::Error>(field: &str) -> E {
    E::custom(format_args!(
        "field \"{field}\" is written twice in one delta"
    ))
}

fn in_field<E: de::Error>(field: &str, error: impl fmt::Display) -> E {
    E::custom(format_args!("field \"{field}\": {error}"))
}

/// Reads a last-write-wins field's update. A present key always becomes
/// `Some(update)`: for an `Option` field, `null` is `Some(None)` (clear it).
pub fn decode_replace<'de, A, U>(
    map: &mut A,
    field: &str,
    slot: &mut Option<U>,
) -> Result<(), A::Error>
where
    A: MapAccess<'de>,
    U: Deserialize<'de>,
{
    if slot.is_some() {
        return Err(duplicate(field));
    }
    let value = map
        .next_value::<U>()
        .map_err(|e| in_field::<A::Error>(field, e))?;
    *slot = Some(value);
    Ok(())
}

/// Reads a reducer field's update, or an overwrite of the whole field.
pub fn decode_reduced<'de, A, C, T, U>(
    map: &mut A,
    field: &str,
    slot: &mut Option<U>,
    more: &mut Option<Box<C>>,
    project: fn(&mut C) -> &mut More<T, U>,
) -> Result<(), A::Error>
where
    A: MapAccess<'de>,
    C: Default,
    T: DeserializeOwned,
    U: DeserializeOwned,
{
    let written = slot.is_some() || more.as_mut().is_some_and(|m| project(m).has_overwrite());
    if written {
        return Err(duplicate(field));
    }
    let value = map.next_value::<serde_json::Value>()?;
    match split_overwrite(value) {
        Ok(inner) => {
            let value = T::deserialize(inner).map_err(|e| in_field::<A::Error>(field, e))?;
            more_mut(more, project).overwrite = Some(value);
        }
        Err(plain) => {
            let value = U::deserialize(plain).map_err(|e| in_field::<A::Error>(field, e))?;
            *slot = Some(value);
        }
    }
    Ok(())
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

/// Writes one field's slot: the update, or `{"__overwrite__": value}`.
/// A merged delta that keeps several writes to one field has no single
/// JSON form and fails with an error naming the field.
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
    if let Some(more) = more {
        if let Some(value) = &more.overwrite {
            return map.serialize_entry(field, &Overwrite(value));
        }
        if !more.later.is_empty() {
            return Err(ser::Error::custom(format_args!(
                "field \"{field}\" holds {} writes from a merged step, which one JSON object cannot express; apply the delta instead",
                more.later.len() + 1
            )));
        }
    }
    match slot {
        Some(update) => map.serialize_entry(field, update),
        None => Ok(()),
    }
}

/// Serializes as `{"__overwrite__": value}`.
struct Overwrite<'a, T>(&'a T);

impl<T: Serialize> Serialize for Overwrite<'_, T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(1))?;
        map.serialize_entry(OVERWRITE_KEY, self.0)?;
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
