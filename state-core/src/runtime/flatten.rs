//! Flattened bases (`#[state(flatten)] base: Base`): the base's fields sit
//! at the top level of the extended state's key space. Keys are known at
//! compile time as a [`KeyTree`] (so that a name clash is a compile error);
//! the key list and the schema of an extended state are assembled once, on
//! first use.

use crate::const_str::str_eq;
use crate::schema::{FieldInfo, Schema};
use serde::ser::SerializeMap;

/// A state's keys: its own fields' names and its flattened bases' trees.
#[derive(Debug, Clone, Copy)]
pub struct KeyTree {
    /// The state's own field names.
    pub own: &'static [&'static str],
    /// The key trees of its flattened bases.
    pub bases: &'static [KeyTree],
}

impl KeyTree {
    /// Whether `key` is one of the tree's keys.
    pub const fn contains(&self, key: &str) -> bool {
        let mut i = 0;
        while i < self.own.len() {
            if str_eq(self.own[i], key) {
                return true;
            }
            i += 1;
        }
        let mut b = 0;
        while b < self.bases.len() {
            if self.bases[b].contains(key) {
                return true;
            }
            b += 1;
        }
        false
    }

    /// Whether the two trees share a key.
    pub const fn overlaps(&self, other: &KeyTree) -> bool {
        let mut i = 0;
        while i < self.own.len() {
            if other.contains(self.own[i]) {
                return true;
            }
            i += 1;
        }
        let mut b = 0;
        while b < self.bases.len() {
            if self.bases[b].overlaps(other) {
                return true;
            }
            b += 1;
        }
        false
    }

    /// Every key, own keys before the bases' (for error suggestions).
    pub fn collect(&self, out: &mut Vec<&'static str>) {
        out.extend_from_slice(self.own);
        for base in self.bases {
            base.collect(out);
        }
    }
}

/// The key list of an extended state, from its runs of keys in
/// declaration order (its own fields', and each flattened base's).
pub fn flat_keys(parts: &[&'static [&'static str]]) -> Vec<&'static str> {
    parts.concat()
}

/// The schema of an extended state: runs of its own fields and of its
/// bases' fields, in declaration order. Built once per type; the field table lives for
/// the rest of the program, as a static one would.
pub fn flat_schema(name: &'static str, doc: &'static str, parts: &[&[FieldInfo]]) -> Schema {
    let fields = parts.concat();
    Schema::new(name, doc, Box::leak(fields.into_boxed_slice()))
}

/// The position of `key` in `keys` (a state's or a delta's own keys).
#[inline]
pub fn key_index(keys: &[&str], key: &str) -> Option<usize> {
    // A byte loop, inlined, where `==` calls `memcmp`; most keys differ
    // in length and never get to it.
    let same =
        |name: &str| name.len() == key.len() && name.bytes().zip(key.bytes()).all(|(a, b)| a == b);
    keys.iter().position(|name| same(name))
}

/// A state's or a delta's member: own field `i`, or flattened base `i`.
pub enum Member {
    /// Own field, by index.
    Own(usize),
    /// Flattened base, by index.
    Base(usize),
}

/// Visits `own` fields and the flattened bases in declaration order
/// (`bases[b]` is how many own fields precede base `b`); stops at the
/// first `false`, which it returns.
pub fn in_declaration_order(
    own: usize,
    bases: &[usize],
    mut visit: impl FnMut(Member) -> bool,
) -> bool {
    let mut base = 0;
    for index in 0..=own {
        while let Some(&position) = bases.get(base)
            && position == index
        {
            if !visit(Member::Base(base)) {
                return false;
            }
            base += 1;
        }
        if index < own && !visit(Member::Own(index)) {
            return false;
        }
    }
    true
}

/// A serialized map of the entries `entries` hands to its callback, in
/// order; the first error stops it. `len` is their count when known:
/// formats that are not self-describing (postcard, bincode) need it.
pub fn serialize_map<S: serde::Serializer>(
    serializer: S,
    len: Option<usize>,
    entries: impl FnOnce(&mut dyn FnMut(&'static str, &dyn erased_serde::Serialize) -> bool),
) -> Result<S::Ok, S::Error> {
    let mut map = serializer.serialize_map(len)?;
    let mut error = None;
    entries(&mut |key, value| match map.serialize_entry(key, value) {
        Ok(()) => true,
        Err(e) => {
            error = Some(e);
            false
        }
    });
    match error {
        Some(e) => Err(e),
        None => map.end(),
    }
}

/// The JSON object text of the entries `entries` hands to its callback,
/// in order, each value written by its own function (on its own type, not
/// through `erased_serde`), appended to `out`; the first error stops it.
/// What `serialize_map` makes through `serde_json`, byte for byte.
pub fn write_object(
    out: &mut Vec<u8>,
    entries: impl FnOnce(&mut dyn FnMut(&'static str, WriteValue<'_>) -> bool),
) -> Result<(), serde_json::Error> {
    out.push(b'{');
    let mut first = true;
    let mut result = Ok(());
    entries(&mut |key, write| {
        if !first {
            out.push(b',');
        }
        first = false;
        result = serde_json::to_writer(&mut *out, key).and_then(|()| {
            out.push(b':');
            write(out)
        });
        result.is_ok()
    });
    out.push(b'}');
    result
}

/// How [`write_object`] is handed one value: a function appending its JSON.
pub type WriteValue<'a> = &'a dyn Fn(&mut Vec<u8>) -> Result<(), serde_json::Error>;

#[cfg(test)]
mod tests {
    use super::*;

    const C: KeyTree = KeyTree {
        own: &["messages", "step"],
        bases: &[],
    };
    const B: KeyTree = KeyTree {
        own: &["order_id"],
        bases: &[C],
    };

    #[test]
    fn trees_find_keys_at_any_depth() {
        assert!(B.contains("order_id"));
        assert!(B.contains("step"));
        assert!(!B.contains("ste"));
        const OTHER: KeyTree = KeyTree {
            own: &["total", "step"],
            bases: &[],
        };
        assert!(OTHER.overlaps(&B));
        assert!(!C.overlaps(&KeyTree {
            own: &["x"],
            bases: &[]
        }));
        let mut keys = Vec::new();
        B.collect(&mut keys);
        assert_eq!(keys, ["order_id", "messages", "step"]);
    }
}
