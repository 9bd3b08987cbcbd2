//! JSON Schemas (via schemars) for a state and for its delta, built from
//! the state's [`Schema`](crate::Schema) and its fields' own schemas.

use crate::runtime::serde_delta::{OVERWRITE_KEY, WRITES_KEY};
use crate::schema::Schema as StateSchema;
use schemars::Schema;
use serde_json::{Map, Value, json};

/// The schema of a whole state: an object of its fields, none required
/// (missing fields take their defaults), no other keys.
pub fn state_json_schema(
    info: &StateSchema,
    fields: impl IntoIterator<Item = (&'static str, Schema)>,
) -> Schema {
    let properties = fields
        .into_iter()
        .map(|(key, schema)| (key.to_owned(), described(info, key, schema.to_value())))
        .collect();
    object_schema(info.name, info.doc, properties)
}

/// The schema of a delta: each field optional, holding its update; a
/// reducer field may instead hold `{"__overwrite__": value}` or the writes
/// of a merged step, `{"__writes__": [update, ...]}`.
pub fn delta_json_schema(
    info: &StateSchema,
    fields: impl IntoIterator<Item = (&'static str, Schema, Option<Schema>)>,
) -> Schema {
    let properties = fields
        .into_iter()
        .map(|(key, update, overwrite)| {
            let update = update.to_value();
            let value = match overwrite {
                None => update,
                Some(field) => json!({
                    "anyOf": [
                        update,
                        {
                            "type": "object",
                            "properties": { OVERWRITE_KEY: field.to_value() },
                            "required": [OVERWRITE_KEY],
                            "additionalProperties": false,
                        },
                        {
                            "type": "object",
                            "properties": {
                                WRITES_KEY: { "type": "array", "items": update, "minItems": 1 },
                            },
                            "required": [WRITES_KEY],
                            "additionalProperties": false,
                        },
                    ]
                }),
            };
            (key.to_owned(), described(info, key, value))
        })
        .collect();
    let title = format!("{}Delta", info.name);
    let doc = format!(
        "A partial update of {}: each key present is applied through its field's reducer.",
        info.name
    );
    object_schema(&title, &doc, properties)
}

fn described(info: &StateSchema, key: &str, mut value: Value) -> Value {
    let doc = info.field(key).map(|f| f.doc).unwrap_or_default();
    if let (Value::Object(map), false) = (&mut value, doc.is_empty()) {
        map.entry("description").or_insert_with(|| Value::from(doc));
    }
    value
}

fn object_schema(title: &str, doc: &str, properties: Map<String, Value>) -> Schema {
    let mut schema = json!({
        "type": "object",
        "title": title,
        "properties": properties,
        "additionalProperties": false,
    });
    if let (Value::Object(map), false) = (&mut schema, doc.is_empty()) {
        map.insert("description".to_owned(), Value::from(doc));
    }
    Schema::try_from(schema).unwrap_or_default()
}

/// Adds the properties of flattened bases' schemas (each the base's own
/// state or delta schema) to an extended state's or delta's schema.
pub fn with_base_properties(schema: Schema, bases: impl IntoIterator<Item = Schema>) -> Schema {
    let mut value = schema.to_value();
    if let Some(Value::Object(properties)) = value.get_mut("properties") {
        for base in bases {
            if let Some(Value::Object(more)) = base.to_value().get("properties") {
                for (key, property) in more {
                    properties.insert(key.clone(), property.clone());
                }
            }
        }
    }
    Schema::try_from(value).unwrap_or_default()
}
