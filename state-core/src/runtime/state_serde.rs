//! `Deserialize` for a state, with `State::from_json`'s rules (missing
//! fields take defaults, unknown fields are errors).

use crate::state::State;
use serde::Deserializer;
use serde::de::{self, MapAccess, Visitor};
use serde_json::{Map, Value};
use std::fmt;
use std::marker::PhantomData;

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
