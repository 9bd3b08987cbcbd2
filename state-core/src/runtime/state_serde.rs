//! `Deserialize` for a state, with `State::from_json`'s rules (missing
//! fields take defaults, unknown and repeated fields are errors), for any
//! serde format: each value is read straight into its field's type through
//! the state's table, with no JSON in between, so that non-self-describing
//! formats (postcard, bincode) read what the state's `Serialize` wrote.

use super::fields::{FieldMut, Fields, field_for_key_mut};
use crate::error::StateError;
use crate::state::State;
use serde::Deserializer;
use serde::de::{self, DeserializeSeed, MapAccess, Visitor};
use std::fmt;

/// `Deserialize` for a generated state: a map of its keys (flattened bases'
/// included) to values of the fields' own types.
pub fn deserialize_state<'de, D, S>(d: D) -> Result<S, D::Error>
where
    D: Deserializer<'de>,
    S: State + Fields,
{
    let mut state = S::default();
    let top = state.name();
    d.deserialize_map(StateVisitor {
        state: &mut state,
        path: "",
        top,
    })?;
    Ok(state)
}

/// Reads the fields of a nested state at `path` (a dotted path from the
/// state named `top`) from `d`.
pub(crate) fn deserialize_nested(
    state: &mut dyn Fields,
    d: &mut dyn erased_serde::Deserializer<'_>,
    path: &str,
    top: &'static str,
) -> Result<(), erased_serde::Error> {
    d.deserialize_map(StateVisitor { state, path, top })
}

/// Reads a map into `state`, which sits at `path` (empty at the top) in
/// the state named `top`: errors name a nested field by its dotted path
/// from there, as `set` and `apply_json` do.
struct StateVisitor<'s, 'p> {
    state: &'s mut dyn Fields,
    path: &'p str,
    top: &'static str,
}

impl StateVisitor<'_, '_> {
    /// `key`'s dotted path from the top.
    fn path_of(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_owned()
        } else {
            format!("{}.{key}", self.path)
        }
    }
}

impl<'de> Visitor<'de> for StateVisitor<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "a map of `{}`'s field names to values",
            self.state.name()
        )
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen: Vec<String> = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            let path = self.path_of(&key);
            if seen.contains(&key) {
                return Err(de::Error::custom(format_args!(
                    "field \"{path}\" appears twice"
                )));
            }
            let Some((field, ty)) = field_for_key_mut(self.state, &key) else {
                let err = StateError::unknown_field(self.state.name(), &key, self.state.keys());
                let err = match self.path {
                    "" => err,
                    prefix => err.within(prefix),
                };
                return Err(de::Error::custom(err.seen_from(self.top)));
            };
            map.next_value_seed(FieldSeed {
                field,
                ty,
                path: &path,
                top: self.top,
            })?;
            seen.push(key);
        }
        Ok(())
    }
}

/// One field's value, read into the field.
struct FieldSeed<'f, 'p> {
    field: FieldMut<'f>,
    ty: &'static str,
    path: &'p str,
    top: &'static str,
}

impl<'de> DeserializeSeed<'de> for FieldSeed<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        let mut erased = <dyn erased_serde::Deserializer>::erase(d);
        match self.field {
            // A nested state reads its own fields, named from the top.
            FieldMut::State(nested) => nested
                .deserialize_fields(&mut erased, self.path, self.top)
                .map_err(de::Error::custom),
            FieldMut::Value(value) => value
                .deserialize_erased(&mut erased)
                .map_err(|e| de::Error::custom(type_error(self.path, self.ty, &e))),
        }
    }
}

/// A field's value of the wrong type, in `StateError::Type`'s words:
/// serde's "invalid type: string \"x\", expected u32" becomes "expected
/// u32, got string \"x\"".
pub(crate) fn type_error(path: &str, ty: &str, error: &erased_serde::Error) -> StateError {
    let message = error.to_string();
    let got = ["invalid type: ", "invalid value: "]
        .iter()
        .find_map(|prefix| message.strip_prefix(prefix))
        .and_then(|rest| rest.split_once(", expected"))
        .map_or_else(|| message.clone(), |(got, _)| got.to_owned());
    StateError::Type {
        field: path.to_owned(),
        expected: ty.to_owned(),
        got,
    }
}
