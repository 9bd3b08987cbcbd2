//! The schema of each instance of a generic state that flattens a base.
//!
//! Such a schema is joined at run time from the state's own rows and its
//! bases' schemas, which may differ from one instance to the next (a field
//! of type `T` links the schema of the state `T` is). A `static` in a
//! generic function is one for all instances, so the joined schemas are
//! kept here instead, one per type, built on first use and kept for the
//! rest of the program, as a static one would be.

use crate::schema::Schema;
use std::any::TypeId;
use std::sync::RwLock;

/// The schemas built so far, by type: one per instance of a generic state
/// with bases that the program asks for, so a short list.
static SCHEMAS: RwLock<Vec<(TypeId, &'static Schema)>> = RwLock::new(Vec::new());

/// The schema of the state `S`, built by `build` the first time it is
/// asked for.
pub fn schema_of<S: ?Sized>(build: impl FnOnce() -> Schema) -> &'static Schema {
    let id = typeid::of::<S>();
    let find = |list: &[(TypeId, &'static Schema)]| {
        list.iter()
            .find(|(t, _)| *t == id)
            .map(|&(_, schema)| schema)
    };
    // A panic elsewhere while the lock was held leaves the list as it was:
    // every entry is complete when pushed.
    if let Some(schema) = find(&SCHEMAS.read().unwrap_or_else(|e| e.into_inner())) {
        return schema;
    }
    // Built without the lock: building asks for the bases' schemas, which
    // may be kept here too. Two threads may both build; the first to store
    // its schema wins, and every caller gets that one.
    let built = build();
    let mut list = SCHEMAS.write().unwrap_or_else(|e| e.into_inner());
    if let Some(schema) = find(&list) {
        return schema;
    }
    let schema: &'static Schema = Box::leak(Box::new(built));
    list.push((id, schema));
    schema
}

#[cfg(test)]
mod tests {
    use super::schema_of;
    use crate::schema::Schema;

    struct Outer<T>(T);
    struct Inner;

    #[test]
    fn one_schema_per_type_built_once_and_building_may_ask_for_another() {
        let mut builds = 0;
        let outer = schema_of::<Outer<u8>>(|| {
            builds += 1;
            // A base's schema, kept here too: asked for while building.
            let inner = schema_of::<Inner>(|| Schema::new("Inner", "", &[]));
            Schema::new("Outer<u8>", inner.name, &[])
        });
        assert_eq!((outer.name, outer.doc), ("Outer<u8>", "Inner"));
        let again = schema_of::<Outer<u8>>(|| unreachable!("built once"));
        assert!(std::ptr::eq(outer, again));
        let other = schema_of::<Outer<u16>>(|| Schema::new("Outer<u16>", "", &[]));
        assert_eq!(other.name, "Outer<u16>", "another instance, another schema");
        assert_eq!(builds, 1);
    }
}
