//! LangChain's merges of JSON values (`langchain_core.utils._merge`):
//! `merge_dicts`, `merge_lists`, and `add_usage` of usage metadata.

use serde_json::{Map, Number, Value};

/// `merge_dicts(left, right)`. Where LangChain raises a `TypeError` (a key
/// with values of two types, two different booleans or floats), the left
/// value is kept.
pub(crate) fn merge_dicts(
    left: &Map<String, Value>,
    right: &Map<String, Value>,
) -> Map<String, Value> {
    let mut merged = left.clone();
    for (key, right_value) in right {
        let Some(left_value) = merged.get_mut(key) else {
            merged.insert(key.clone(), right_value.clone());
            continue;
        };
        if left_value.is_null() {
            if !right_value.is_null() {
                *left_value = right_value.clone();
            }
            continue;
        }
        match (left_value, right_value) {
            (_, Value::Null) => {}
            (Value::String(l), Value::String(r)) => {
                let keep = (key == "index" && l.starts_with("lc_"))
                    || (matches!(key.as_str(), "id" | "output_version" | "model_provider")
                        && l == r);
                if !keep {
                    l.push_str(r);
                }
            }
            (Value::Object(l), Value::Object(r)) => *l = merge_dicts(l, r),
            (Value::Array(l), Value::Array(r)) => *l = merge_lists(l, r),
            (Value::Number(l), Value::Number(r)) => {
                if let (Some(a), Some(b)) = (int(l), int(r)) {
                    if matches!(key.as_str(), "index" | "created" | "timestamp") {
                        *l = r.clone();
                    } else if let Some(sum) = a.checked_add(b) {
                        *l = Number::from(sum);
                    }
                }
            }
            _ => {}
        }
    }
    merged
}

/// An integer, as Python's `int` (not a float).
fn int(n: &Number) -> Option<i64> {
    n.as_i64()
}

/// Whether `value` is an `index` LangChain merges by: an integer, or a
/// string starting `lc_`.
fn merges_by_index(value: &Value) -> bool {
    match value {
        Value::Number(n) => n.is_i64() || n.is_u64(),
        Value::Bool(_) => true,
        Value::String(s) => s.starts_with("lc_"),
        _ => false,
    }
}

fn blank_id(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        _ => false,
    }
}

/// `merge_lists(left, right)`: the right list's dicts with an `index`
/// merge into the left one's of the same index (and ids that agree), the
/// rest are appended.
pub(crate) fn merge_lists(left: &[Value], right: &[Value]) -> Vec<Value> {
    let mut merged = left.to_vec();
    for item in right {
        let Some(fields) = item
            .as_object()
            .filter(|f| f.get("index").is_some_and(merges_by_index))
        else {
            merged.push(item.clone());
            continue;
        };
        let target = merged.iter().position(|left| {
            left.as_object().is_some_and(|l| {
                l.get("index") == fields.get("index")
                    && (blank_id(l.get("id"))
                        || blank_id(fields.get("id"))
                        || l.get("id") == fields.get("id"))
            })
        });
        let Some(target) = target else {
            merged.push(item.clone());
            continue;
        };
        let Some(left_fields) = merged[target].as_object() else {
            continue;
        };
        let left_type = left_fields.get("type").filter(|t| !is_falsy(t));
        let non_standard_value = (fields.get("type").and_then(Value::as_str)
            == Some("non_standard"))
        .then(|| fields.get("value"))
        .flatten();
        let new_fields = match (left_type, non_standard_value) {
            (Some(left_type), Some(value)) => {
                let inner: Map<String, Value> = value
                    .as_object()
                    .map(|v| {
                        v.iter()
                            .filter(|(k, _)| *k != "type")
                            .map(|(k, v)| (k.clone(), v.clone()))
                            .collect()
                    })
                    .unwrap_or_default();
                let mut new = Map::new();
                if left_type.as_str() != Some("non_standard") {
                    new.insert("extras".into(), Value::Object(inner));
                } else {
                    new.insert("value".into(), Value::Object(inner));
                    if let Some(index) = fields.get("index") {
                        new.insert("index".into(), index.clone());
                    }
                }
                new
            }
            _ => fields
                .iter()
                .filter(|(k, _)| *k != "type")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        };
        let merged_fields = merge_dicts(left_fields, &new_fields);
        merged[target] = Value::Object(merged_fields);
    }
    merged
}

/// Python's falsiness of a JSON value.
pub(crate) fn is_falsy(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
    }
}

/// `add_usage(left, right)`: integers added key by key, nested dicts too.
/// Where LangChain raises (a value neither an integer nor a dict), the
/// left value is kept.
pub(crate) fn add_usage(left: Option<&Value>, right: Option<&Value>) -> Value {
    let left = left.filter(|v| !is_falsy(v));
    let right = right.filter(|v| !is_falsy(v));
    match (left, right) {
        (None, None) => {
            serde_json::json!({"input_tokens": 0, "output_tokens": 0, "total_tokens": 0})
        }
        (Some(one), None) | (None, Some(one)) => one.clone(),
        (Some(Value::Object(l)), Some(Value::Object(r))) => Value::Object(add_ints(l, r)),
        (Some(l), Some(_)) => l.clone(),
    }
}

fn add_ints(left: &Map<String, Value>, right: &Map<String, Value>) -> Map<String, Value> {
    let keys = left
        .keys()
        .chain(right.keys().filter(|k| !left.contains_key(*k)));
    let zero = Value::from(0);
    let empty = Value::Object(Map::new());
    let mut out = Map::new();
    for key in keys {
        let (l, r) = (left.get(key), right.get(key));
        let as_int = |v: Option<&Value>| match v.unwrap_or(&zero) {
            Value::Number(n) => n.as_i64(),
            Value::Bool(b) => Some(i64::from(*b)),
            _ => None,
        };
        let value = match (as_int(l), as_int(r)) {
            (Some(a), Some(b)) => Value::from(a.saturating_add(b)),
            _ => match (l.unwrap_or(&empty), r.unwrap_or(&empty)) {
                (Value::Object(a), Value::Object(b)) => Value::Object(add_ints(a, b)),
                _ => l.or(r).cloned().unwrap_or(Value::Null),
            },
        };
        out.insert(key.clone(), value);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn dicts_merge_as_langchain() {
        let merged = merge_dicts(
            &obj(
                json!({"s": "a", "n": 1, "index": 1, "id": "x", "none": null, "d": {"k": "1"}, "f": 1.5}),
            ),
            &obj(
                json!({"s": "b", "n": 2, "index": 5, "id": "x", "none": 3, "d": {"k": "2"}, "f": 2.5, "new": true}),
            ),
        );
        assert_eq!(
            Value::Object(merged),
            json!({"s": "ab", "n": 3, "index": 5, "id": "x", "none": 3, "d": {"k": "12"}, "f": 1.5, "new": true})
        );
    }

    #[test]
    fn lists_merge_by_index() {
        let merged = merge_lists(
            &[json!({"index": 0, "type": "text", "text": "a"}), json!("s")],
            &[
                json!({"index": 0, "type": "text", "text": "b"}),
                json!({"index": 1, "text": "c"}),
            ],
        );
        assert_eq!(
            merged,
            [
                json!({"index": 0, "type": "text", "text": "ab"}),
                json!("s"),
                json!({"index": 1, "text": "c"})
            ]
        );
    }

    #[test]
    fn usage_adds() {
        let sum = add_usage(
            Some(&json!({"input_tokens": 1, "output_tokens": 2, "total_tokens": 3})),
            Some(
                &json!({"input_tokens": 1, "output_tokens": 2, "total_tokens": 3, "input_token_details": {"cache_read": 1}}),
            ),
        );
        assert_eq!(
            sum,
            json!({"input_tokens": 2, "output_tokens": 4, "total_tokens": 6, "input_token_details": {"cache_read": 1}})
        );
        assert_eq!(add_usage(None, None)["total_tokens"], 0);
    }
}
