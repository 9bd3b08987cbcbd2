//! String-keyed access helpers: JSON conversion of one field with errors
//! that name it, descriptions of JSON values for messages, and dotted-path
//! walks into a field's JSON value.

use crate::error::StateError;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// A short description of a JSON value, for "expected X, got Y" messages.
pub fn describe(value: &Value) -> String {
    fn clip(text: &str) -> String {
        let mut chars = text.chars();
        let head: String = chars.by_ref().take(40).collect();
        if chars.next().is_some() {
            format!("{head}…")
        } else {
            head
        }
    }
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => format!("a boolean ({b})"),
        Value::Number(n) => format!("a number ({n})"),
        Value::String(s) => format!("a string ({:?})", clip(s)),
        Value::Array(a) => format!("an array of {} item(s)", a.len()),
        Value::Object(o) => format!("an object with {} key(s)", o.len()),
    }
}

/// Writes one field as JSON; a value JSON cannot hold (a map key that is
/// not a string, a non-finite float) is an error naming the field. The
/// float check walks `value` erased: a state's fields have their erased
/// `Serialize` anyway (`ErasedValue::as_serialize`).
pub fn to_json<T: Serialize>(field: &str, value: &T) -> Result<Value, StateError> {
    let error = |e: serde_json::Error| StateError::Serialize {
        field: field.to_owned(),
        message: e.to_string(),
    };
    let json = serde_json::to_value(value).map_err(error)?;
    crate::json::refuse_hidden_floats(&json, value).map_err(error)?;
    Ok(json)
}

/// Reads one field from JSON; a mismatch names the field, the Rust type
/// expected and what was given.
#[inline]
pub fn from_json<T: DeserializeOwned>(
    field: &str,
    ty: &'static str,
    value: Value,
) -> Result<T, StateError> {
    // Only the value's kind is kept (no allocation): the happy path moves
    // the value into `T`, and serde's error already quotes a bad scalar.
    let kind = Kind::of(&value);
    T::deserialize(value).map_err(|e| type_error(field, ty, kind, &e))
}

/// The error of [`from_json`], built out of line: the happy path of a
/// `set` stays small (measured).
#[cold]
#[inline(never)]
fn type_error(field: &str, ty: &str, kind: Kind, error: &serde_json::Error) -> StateError {
    StateError::Type {
        field: field.to_owned(),
        expected: ty.to_owned(),
        got: kind.explain(&error.to_string()),
    }
}

/// The shape of a JSON value, for error messages.
#[derive(Clone, Copy)]
enum Kind {
    Scalar,
    Array(usize),
    Object(usize),
}

impl Kind {
    fn of(value: &Value) -> Kind {
        match value {
            Value::Array(a) => Kind::Array(a.len()),
            Value::Object(o) => Kind::Object(o.len()),
            _ => Kind::Scalar,
        }
    }

    /// "string \"high\"" from serde's `invalid type: string "high",
    /// expected i64` (and "integer `-1`" from `invalid value: integer
    /// `-1`, expected u32`); for arrays and objects, their shape and
    /// serde's message about what inside them is wrong.
    fn explain(self, serde_message: &str) -> String {
        let unexpected = serde_message
            .strip_prefix("invalid type: ")
            .or_else(|| serde_message.strip_prefix("invalid value: "))
            .and_then(|rest| rest.split_once(", expected"))
            .map(|(unexpected, _)| unexpected);
        match (self, unexpected) {
            (Kind::Scalar, Some(unexpected)) => unexpected.to_owned(),
            (Kind::Scalar, None) => serde_message.to_owned(),
            (Kind::Array(n), _) => format!("an array of {n} item(s): {serde_message}"),
            (Kind::Object(n), _) => format!("an object with {n} key(s): {serde_message}"),
        }
    }
}

/// Splits `"a.b.c"` into `("a", Some("b.c"))`.
#[inline]
pub fn split_path(path: &str) -> (&str, Option<&str>) {
    // A byte scan: keys are short, and `split_once`'s char searcher is not
    // inlined into the callers, where it cost a quarter of a `get`.
    match path.bytes().position(|b| b == b'.') {
        Some(dot) => (&path[..dot], Some(&path[dot + 1..])),
        None => (path, None),
    }
}

/// Follows `rest` (dot-separated object keys or array indices) into a
/// field's JSON value.
pub fn walk<'v>(path: &str, mut value: &'v Value, rest: &str) -> Result<&'v Value, StateError> {
    for step in rest.split('.') {
        value = match value {
            Value::Object(map) => map.get(step).ok_or_else(|| missing(path, step, value))?,
            Value::Array(items) => step
                .parse::<usize>()
                .ok()
                .and_then(|i| items.get(i))
                .ok_or_else(|| missing(path, step, value))?,
            other => return Err(missing(path, step, other)),
        };
    }
    Ok(value)
}

/// Like [`walk`], for writing: the last step may add a new key to an object.
pub fn walk_mut<'v>(
    path: &str,
    mut value: &'v mut Value,
    rest: &str,
) -> Result<&'v mut Value, StateError> {
    let steps: Vec<&str> = rest.split('.').collect();
    let Some((last, init)) = steps.split_last() else {
        return Ok(value);
    };
    for step in init {
        value = step_mut(path, value, step)?;
    }
    match value {
        Value::Object(map) => Ok(map.entry(*last).or_insert(Value::Null)),
        other => step_mut(path, other, last),
    }
}

/// One step down into an existing key or index.
fn step_mut<'v>(path: &str, value: &'v mut Value, step: &str) -> Result<&'v mut Value, StateError> {
    let index = |len: usize| step.parse::<usize>().ok().filter(|i| *i < len);
    let found = match &*value {
        Value::Object(map) => map.contains_key(step),
        Value::Array(items) => index(items.len()).is_some(),
        _ => false,
    };
    if !found {
        return Err(missing(path, step, value));
    }
    let next = match value {
        Value::Object(map) => map.get_mut(step),
        Value::Array(items) => index(items.len()).and_then(|i| items.get_mut(i)),
        _ => None,
    };
    next.ok_or_else(|| missing_key(path, step, "the value"))
}

fn missing(path: &str, step: &str, inside: &Value) -> StateError {
    missing_key(path, step, &describe(inside))
}

fn missing_key(path: &str, step: &str, inside: &str) -> StateError {
    StateError::Path {
        path: path.to_owned(),
        reason: format!("no \"{step}\" inside {inside}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn describes_values_briefly() {
        assert_eq!(describe(&json!("fast")), "a string (\"fast\")");
        assert_eq!(describe(&json!(3)), "a number (3)");
        assert_eq!(describe(&json!([1, 2])), "an array of 2 item(s)");
        assert_eq!(describe(&json!({"a": 1})), "an object with 1 key(s)");
        assert_eq!(describe(&json!(null)), "null");
    }

    #[test]
    fn type_error_names_field_type_and_value() {
        let err = from_json::<Vec<f64>>("scores", "Vec<f64>", json!("fast")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "field \"scores\": expected Vec<f64>, got string \"fast\""
        );
        let err = from_json::<Vec<f64>>("scores", "Vec<f64>", json!([1, "x"])).unwrap_err();
        assert!(
            err.to_string()
                .contains("an array of 2 item(s): invalid type: string \"x\""),
            "{err}"
        );
        let err = from_json::<u32>("n", "u32", json!(null)).unwrap_err();
        assert_eq!(err.to_string(), "field \"n\": expected u32, got null");
        let err = from_json::<u8>("n", "u8", json!(300)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "field \"n\": expected u8, got integer `300`"
        );
    }

    #[test]
    fn walks_objects_and_arrays() {
        let v = json!({"a": {"b": [10, 20]}});
        assert_eq!(walk("x.a.b.1", &v, "a.b.1").unwrap(), &json!(20));
        let err = walk("x.a.c", &v, "a.c").unwrap_err();
        assert_eq!(
            err.to_string(),
            "path \"x.a.c\": no \"c\" inside an object with 1 key(s)"
        );
        assert!(walk("x.a.b.9", &v, "a.b.9").is_err());
        assert!(walk("x.a.b.0.z", &v, "a.b.0.z").is_err());
    }

    #[test]
    fn walk_mut_adds_a_key_at_the_end_only() {
        let mut v = json!({"a": {}});
        *walk_mut("p", &mut v, "a.new").unwrap() = json!(1);
        assert_eq!(v, json!({"a": {"new": 1}}));
        assert!(walk_mut("p", &mut v, "b.c").is_err());
    }

    #[test]
    fn split_path_at_first_dot() {
        assert_eq!(split_path("a.b.c"), ("a", Some("b.c")));
        assert_eq!(split_path("a"), ("a", None));
    }
}
