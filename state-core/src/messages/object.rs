//! What both readers of a message object (`json.rs`, and `envelope.rs` for
//! LangChain's wrappers around one) do to it: take keys out in order, name
//! a value's JSON type in errors, and read the tag a `type` or `role` names.

use super::tag::Tag;
use serde_json::{Map, Value};

/// Removing a key from a JSON object while the other keys keep their
/// order, so that a message's extra keys are written back as they came.
pub(super) trait TakeKey {
    fn take_key(&mut self, key: &str) -> Option<Value>;
}

#[cfg(feature = "preserve_order")]
impl TakeKey for Map<String, Value> {
    fn take_key(&mut self, key: &str) -> Option<Value> {
        self.shift_remove(key)
    }
}

/// Without the feature here, serde_json's `preserve_order` may still be on
/// through another crate, and `Map::remove` would then move the last key
/// into the gap; `retain` keeps the order of either map.
#[cfg(not(feature = "preserve_order"))]
impl TakeKey for Map<String, Value> {
    fn take_key(&mut self, key: &str) -> Option<Value> {
        let mut taken = None;
        if self.contains_key(key) {
            self.retain(|k, value| {
                let keep = k != key;
                if !keep {
                    taken = Some(value.take());
                }
                keep
            });
        }
        taken
    }
}

/// `null`, `a boolean`, ...: the JSON type of `value`, for error messages.
pub(super) fn describe(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// The tag named by `value`, the message's `key` (`"type"` or `"role"`).
pub(super) fn read_tag(
    value: &Value,
    key: &str,
    parse: fn(&str) -> Option<Tag>,
    expected: &str,
) -> Result<Tag, String> {
    let Value::String(name) = value else {
        return Err(format!(
            "message \"{key}\" must be a string, got {}",
            describe(value)
        ));
    };
    parse(name)
        .ok_or_else(|| format!("unknown message {key} \"{name}\"; expected one of {expected}"))
}
