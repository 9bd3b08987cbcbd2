//! A delta's paths that need no reducer and no field type, driven by its
//! table instead of generated code: `is_empty`, `fields`, `Debug`,
//! `Serialize`, and the dispatch of `Deserialize` / `from_json` by key.
//!
//! The derive writes the table ([`DeltaTable`]): one projection from a
//! field's index to its slot, erased behind [`ErasedSlot`], and one from an
//! index to the decoding of that field (which needs the field's reducer).

use super::flatten::{
    KeyTree, Member, in_declaration_order, key_index, serialize_map, write_object,
};
use super::serde_delta::UpdateInput;
use crate::dynamic::describe;
use crate::error::StateError;
use serde::de::{self, DeserializeSeed, MapAccess, Visitor};
use serde::{Deserializer, Serialize};
use serde_json::Value;
use std::fmt;
use std::marker::PhantomData;

/// A delta's slot for one field, type-erased: what it writes, if anything,
/// for serializers and for `Debug`.
pub trait ErasedSlot {
    /// The write, or `None` when the slot writes nothing.
    fn written(&self) -> Option<(&dyn erased_serde::Serialize, &dyn fmt::Debug)>;

    /// Appends the write as JSON to `out` (nothing when it writes nothing):
    /// `serde_json` called on the slot's own type, not through
    /// `erased_serde`, whose dynamic calls per value cost more than the
    /// writing.
    fn write_json(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error>;
}

/// A `replace` field's slot.
impl<U: Serialize + fmt::Debug> ErasedSlot for Option<U> {
    #[inline]
    fn written(&self) -> Option<(&dyn erased_serde::Serialize, &dyn fmt::Debug)> {
        self.as_ref().map(|update| (update as _, update as _))
    }

    #[inline]
    fn write_json(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        match self {
            Some(update) => serde_json::to_writer(out, update),
            None => Ok(()),
        }
    }
}

/// A reducer field's slot, written with its markers.
impl<T, U> ErasedSlot for super::slot::Slot<T, U>
where
    T: Serialize + fmt::Debug,
    U: Serialize + fmt::Debug,
{
    #[inline]
    fn written(&self) -> Option<(&dyn erased_serde::Serialize, &dyn fmt::Debug)> {
        (!self.is_empty()).then_some((self as _, self as _))
    }

    #[inline]
    fn write_json(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        if self.is_empty() {
            return Ok(());
        }
        serde_json::to_writer(out, self)
    }
}

/// The keys of a delta, at compile time: a flattened state's key clashes
/// are compile errors.
pub trait DeltaKeys {
    /// The own field names (in order: a field's index is its position) and
    /// the flattened bases' trees.
    const KEYS: KeyTree;
}

/// A delta's table, written by `#[derive(AgentState)]`.
pub trait DeltaTable {
    /// The name of the state this is a delta of, for errors.
    fn state(&self) -> &'static str;

    /// [`DeltaKeys::KEYS`].
    fn keys(&self) -> KeyTree;

    /// For each flattened base, how many own fields are declared before it.
    fn bases(&self) -> &'static [usize] {
        &[]
    }

    /// The slot of own field `index`.
    fn slot(&self, index: usize) -> Option<&dyn ErasedSlot>;

    /// Reads `value` into the slot of own field `index`, through the
    /// field's reducer.
    fn decode(&mut self, index: usize, value: UpdateInput<'_, '_>) -> Result<(), StateError>;

    /// The delta of flattened base `index`.
    fn base(&self, index: usize) -> Option<&dyn DeltaTable> {
        let _ = index;
        None
    }

    /// The delta of flattened base `index`, mutably.
    fn base_mut(&mut self, index: usize) -> Option<&mut dyn DeltaTable> {
        let _ = index;
        None
    }
}

/// Calls `visit` on every slot, flattened bases' in place, in declaration
/// order; stops at the first `false`.
fn visit(
    delta: &dyn DeltaTable,
    visit_slot: &mut dyn FnMut(&'static str, &dyn ErasedSlot) -> bool,
) -> bool {
    let own = delta.keys().own;
    in_declaration_order(own.len(), delta.bases(), |member| match member {
        Member::Own(index) => match (own.get(index), delta.slot(index)) {
            (Some(key), Some(slot)) => visit_slot(key, slot),
            _ => true,
        },
        Member::Base(index) => delta
            .base(index)
            .is_none_or(|nested| visit(nested, visit_slot)),
    })
}

/// `Delta::is_empty`.
pub fn is_empty(delta: &dyn DeltaTable) -> bool {
    visit(delta, &mut |_, slot| slot.written().is_none())
}

/// `Delta::fields`: the written keys, in declaration order.
pub fn fields(delta: &dyn DeltaTable) -> crate::state::FieldNames {
    let mut keys = Vec::new();
    visit(delta, &mut |key, slot| {
        if slot.written().is_some() {
            keys.push(key);
        }
        true
    });
    crate::state::FieldNames::new(keys)
}

/// `Debug` for a delta: only what it writes, `Name { key: update, .. }`.
pub fn debug(delta: &dyn DeltaTable, name: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let mut out = f.debug_struct(name);
    visit(delta, &mut |key, slot| {
        if let Some((_, value)) = slot.written() {
            out.field(key, value);
        }
        true
    });
    out.finish()
}

/// `Serialize` for a delta: a map of the fields it writes.
pub fn serialize<S: serde::Serializer>(
    delta: &dyn DeltaTable,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    // The count first: formats that are not self-describing need it.
    let mut len = 0;
    visit(delta, &mut |_, slot| {
        len += usize::from(slot.written().is_some());
        true
    });
    serialize_map(serializer, Some(len), |entry| {
        visit(delta, &mut |key, slot| match slot.written() {
            Some((value, _)) => entry(key, value),
            None => true,
        });
    })
}

/// `Delta::write_json`: the text `serialize` writes through `serde_json`,
/// each value written on its own type (see [`ErasedSlot::write_json`]).
/// A non-finite float is written as `null`, as `serde_json` writes it.
pub fn write_json(delta: &dyn DeltaTable, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
    write_object(out, |entry| {
        visit(delta, &mut |key, slot| {
            slot.written().is_none() || entry(key, &|out| slot.write_json(out))
        });
    })
}

/// Reads `value` into the slot of `key`, an own field's or a flattened
/// base's; an unknown key is an error with a did-you-mean over every key.
pub fn decode_key(
    delta: &mut dyn DeltaTable,
    key: &str,
    value: UpdateInput<'_, '_>,
) -> Result<(), StateError> {
    let keys = delta.keys();
    // An unknown key below a nested field or in a base is named from here
    // (the state's name is looked up on errors only).
    if let Some(index) = key_index(keys.own, key) {
        return delta
            .decode(index, value)
            .map_err(|e| e.seen_from(delta.state()));
    }
    let base = keys.bases.iter().position(|base| base.contains(key));
    match base.and_then(|index| delta.base_mut(index)) {
        Some(base) => decode_key(base, key, value).map_err(|e| e.seen_from(delta.state())),
        None => {
            let mut all = Vec::new();
            keys.collect(&mut all);
            Err(StateError::unknown_field(delta.state(), key, &all))
        }
    }
}

/// `Delta::from_json`: a delta from a JSON object, every key decoded
/// before returning.
pub fn from_json<D: DeltaTable + Default>(value: Value) -> Result<D, StateError> {
    let Value::Object(object) = value else {
        return Err(StateError::NotAnObject {
            got: describe(&value),
        });
    };
    let mut delta = D::default();
    for (key, value) in object {
        decode_key(&mut delta, &key, value.into())?;
    }
    Ok(delta)
}

/// `Deserialize` for a delta, from any serde format; a repeated key is an
/// error. A human-readable format's values are read as JSON, then decoded
/// as [`from_json`] does (markers included); a compact format's are read
/// straight into their slots (see `serde_delta`).
pub fn deserialize<'de, De, D>(deserializer: De) -> Result<D, De::Error>
where
    De: Deserializer<'de>,
    D: DeltaTable + Default,
{
    let human_readable = deserializer.is_human_readable();
    deserializer.deserialize_map(DeltaVisitor {
        human_readable,
        delta: PhantomData,
    })
}

struct DeltaVisitor<D> {
    human_readable: bool,
    delta: PhantomData<D>,
}

/// One field's value in a compact format, read into the delta's slot.
struct CompactValue<'d, 'k> {
    delta: &'d mut dyn DeltaTable,
    key: &'k str,
}

impl<'de> DeserializeSeed<'de> for CompactValue<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        let mut erased = <dyn erased_serde::Deserializer>::erase(d);
        decode_key(self.delta, self.key, UpdateInput::Compact(&mut erased))
            .map_err(de::Error::custom)
    }
}

impl<'de, D: DeltaTable + Default> Visitor<'de> for DeltaVisitor<D> {
    type Value = D;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map of field names to updates")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<D, A::Error> {
        let mut delta = D::default();
        let mut seen: Vec<String> = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            if seen.contains(&key) {
                return Err(de::Error::custom(format_args!(
                    "field \"{key}\" is written twice in one delta"
                )));
            }
            if self.human_readable {
                let value = map.next_value::<Value>()?;
                decode_key(&mut delta, &key, value.into()).map_err(de::Error::custom)?;
            } else {
                map.next_value_seed(CompactValue {
                    delta: &mut delta,
                    key: &key,
                })?;
            }
            seen.push(key);
        }
        Ok(delta)
    }
}
