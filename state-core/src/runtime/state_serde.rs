//! The state itself in JSON: `to_json` and the generated `Serialize` /
//! `Deserialize` impls, which share `from_json`'s rules (missing fields
//! take defaults, unknown fields are errors).

use crate::dynamic::to_json;
use crate::state::State;
use serde::Deserializer;
use serde::de::{self, MapAccess, Visitor};
use serde_json::{Map, Value};
use std::fmt;
use std::marker::PhantomData;

/// Adds one field to `to_json`'s object; a field without a JSON form
/// becomes `null`.
pub fn json_field(map: &mut Map<String, Value>, key: &'static str, value: &dyn erased::Field) {
    map.insert(key.to_owned(), value.json(key).unwrap_or(Value::Null));
}

/// Adds a flattened base's `to_json` object to the extended state's.
pub fn json_base(map: &mut Map<String, Value>, base: Value) {
    if let Value::Object(base) = base {
        map.extend(base);
    }
}

/// A serializable field behind a trait object, so `json_field` takes any
/// field type without a generic instance per type.
pub mod erased {
    use super::*;

    /// One field, able to write itself as JSON.
    pub trait Field {
        /// The field as JSON, or the error naming `key`.
        fn json(&self, key: &str) -> Result<Value, crate::StateError>;
    }

    impl<T: serde::Serialize> Field for T {
        fn json(&self, key: &str) -> Result<Value, crate::StateError> {
            to_json(key, self)
        }
    }
}

/// `Deserialize` for a generated state: reads a map of JSON values, then
/// applies [`State::from_json`]'s rules.
pub fn deserialize_state<'de, D: Deserializer<'de>, S: State>(d: D) -> Result<S, D::Error> {
    struct StateVisitor<S>(PhantomData<S>);
    impl<'de, S: State> Visitor<'de> for StateVisitor<S> {
        type Value = S;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a map of field names to values")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<S, A::Error> {
            let mut object = Map::new();
            while let Some((key, value)) = map.next_entry::<String, Value>()? {
                if object.insert(key.clone(), value).is_some() {
                    return Err(de::Error::custom(format_args!(
                        "field \"{key}\" appears twice"
                    )));
                }
            }
            S::from_json(Value::Object(object)).map_err(de::Error::custom)
        }
    }
    d.deserialize_map(StateVisitor(PhantomData))
}
