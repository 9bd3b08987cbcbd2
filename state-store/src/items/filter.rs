//! Search filters, in LangGraph's language: `{"field": value}` for
//! equality, `{"field": {"$op": value}}` with `$eq $ne $gt $gte $lt $lte`,
//! `{"field": {"nested": value}}` for a nested object (it may hold more
//! fields than the filter names), `{"field": [..]}` for an array of that
//! length, element by element. Fields are the value's top-level keys; a
//! missing field reads as `null`.
//!
//! The filter is decided here, in Rust, for every backend: SQL only
//! narrows what is read ([`Filter::pushed`]), so all three return the same
//! items. Where LangGraph's own stores disagree with each other, this
//! follows its `InMemoryStore`, except that:
//! - numbers compare exactly, integers against floats too (`InMemoryStore`
//!   compares `float()`s, `PostgresStore` compares `$gt` & co. as text,
//!   so there `"10" < "9"`);
//! - `$gt $gte $lt $lte` hold between two numbers or two strings
//!   (bytewise) and are false otherwise (`InMemoryStore` fails the whole
//!   search on an item that lacks the field, and reads `"5"` as 5);
//! - `true` is not the number 1 (Python's `True == 1` is).

use crate::backend::{Cmp, Pushed};
use crate::error::StoreError;
use serde_json::{Map, Number, Value};
use std::cmp::Ordering;

/// A parsed filter: conditions on the value's top-level fields, all of
/// which must hold.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Filter {
    fields: Vec<(String, Cond)>,
}

#[derive(Debug, Clone, PartialEq)]
enum Cond {
    /// Equal to a string, number, boolean or null.
    Equals(Value),
    /// Every operator holds.
    Ops(Vec<(Op, Value)>),
    /// An object whose fields match these.
    Nested(Vec<(String, Cond)>),
    /// An array of this length whose elements match these.
    Array(Vec<Cond>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Eq,
    Ne,
    Gt,
    Gte,
    Lt,
    Lte,
}

const OPERATORS: &str = "$eq, $ne, $gt, $gte, $lt and $lte";

fn invalid(field: &str, reason: String) -> StoreError {
    StoreError::InvalidItem {
        what: if field.is_empty() {
            "search filter".to_owned()
        } else {
            format!("search filter on field {field:?}")
        },
        reason,
    }
}

/// `null`, `true`, `a number`...: a JSON value's kind, for messages.
pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

impl Filter {
    /// Reads a filter; `null` is none.
    pub fn parse(filter: Value) -> Result<Filter, StoreError> {
        match filter {
            Value::Null => Ok(Filter::default()),
            Value::Object(map) => Ok(Filter {
                fields: fields(map, "")?,
            }),
            other => Err(invalid(
                "",
                format!(
                    "expected a JSON object of field conditions, as {{\"kind\": \"pref\", \"n\": {{\"$gt\": 3}}}}, got {}",
                    kind(&other)
                ),
            )),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// Whether an item's value (a JSON object) passes.
    pub fn matches(&self, value: &Value) -> bool {
        let object = value.as_object();
        self.fields
            .iter()
            .all(|(field, cond)| cond.matches(object.and_then(|o| o.get(field))))
    }

    /// What SQL can check first: the conditions on top-level fields that
    /// compare with a string, a number, a boolean or null. Every value the
    /// filter accepts passes them.
    pub fn pushed(&self) -> Vec<Pushed> {
        let mut pushed = Vec::new();
        for (field, cond) in &self.fields {
            match cond {
                Cond::Equals(value) => pushed.extend(push(field, Op::Eq, value)),
                Cond::Ops(ops) => {
                    for (op, value) in ops {
                        pushed.extend(push(field, *op, value));
                    }
                }
                Cond::Nested(_) | Cond::Array(_) => {}
            }
        }
        pushed
    }
}

fn fields(map: Map<String, Value>, path: &str) -> Result<Vec<(String, Cond)>, StoreError> {
    map.into_iter()
        .map(|(field, value)| {
            let at = if path.is_empty() {
                field.clone()
            } else {
                format!("{path}.{field}")
            };
            Ok((field, cond(value, &at)?))
        })
        .collect()
}

fn cond(value: Value, path: &str) -> Result<Cond, StoreError> {
    Ok(match value {
        Value::Object(map) if map.keys().any(|k| k.starts_with('$')) => {
            let ops = map
                .into_iter()
                .map(|(name, operand)| {
                    let op = match name.as_str() {
                        "$eq" => Op::Eq,
                        "$ne" => Op::Ne,
                        "$gt" => Op::Gt,
                        "$gte" => Op::Gte,
                        "$lt" => Op::Lt,
                        "$lte" => Op::Lte,
                        _ if name.starts_with('$') => {
                            return Err(invalid(
                                path,
                                format!("unknown operator {name:?}; the operators are {OPERATORS}"),
                            ));
                        }
                        _ => {
                            return Err(invalid(
                                path,
                                format!(
                                    "{name:?} beside operators; a condition is either operators ({OPERATORS}) or an object of nested fields"
                                ),
                            ));
                        }
                    };
                    Ok((op, operand))
                })
                .collect::<Result<_, _>>()?;
            Cond::Ops(ops)
        }
        Value::Object(map) => Cond::Nested(fields(map, path)?),
        Value::Array(items) => Cond::Array(
            items
                .into_iter()
                .enumerate()
                .map(|(i, item)| cond(item, &format!("{path}[{i}]")))
                .collect::<Result<_, _>>()?,
        ),
        scalar => Cond::Equals(scalar),
    })
}

impl Cond {
    /// `value`: the field, `None` when missing (read as null).
    fn matches(&self, value: Option<&Value>) -> bool {
        let value = value.unwrap_or(&Value::Null);
        match self {
            Cond::Equals(wanted) => json_eq(value, wanted),
            Cond::Ops(ops) => ops.iter().all(|(op, operand)| op.holds(value, operand)),
            Cond::Nested(fields) => value.as_object().is_some_and(|object| {
                fields
                    .iter()
                    .all(|(field, cond)| cond.matches(object.get(field)))
            }),
            Cond::Array(conds) => value.as_array().is_some_and(|items| {
                items.len() == conds.len()
                    && items
                        .iter()
                        .zip(conds)
                        .all(|(item, cond)| cond.matches(Some(item)))
            }),
        }
    }
}

impl Op {
    fn holds(self, value: &Value, operand: &Value) -> bool {
        match self {
            Op::Eq => json_eq(value, operand),
            Op::Ne => !json_eq(value, operand),
            Op::Gt => order(value, operand) == Some(Ordering::Greater),
            Op::Gte => matches!(
                order(value, operand),
                Some(Ordering::Greater | Ordering::Equal)
            ),
            Op::Lt => order(value, operand) == Some(Ordering::Less),
            Op::Lte => matches!(
                order(value, operand),
                Some(Ordering::Less | Ordering::Equal)
            ),
        }
    }
}

/// JSON equality, numbers by value (`1 == 1.0`), objects whatever their
/// key order.
fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => compare_numbers(x, y) == Ordering::Equal,
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| json_eq(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

/// The order of two numbers or two strings; none between anything else.
fn order(a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => Some(compare_numbers(x, y)),
        (Value::String(x), Value::String(y)) => Some(x.as_bytes().cmp(y.as_bytes())),
        _ => None,
    }
}

/// Two JSON numbers, compared exactly (an integer against a float too).
fn compare_numbers(a: &Number, b: &Number) -> Ordering {
    fn integer(n: &Number) -> Option<i128> {
        n.as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from))
    }
    match (integer(a), integer(b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        (Some(x), None) => integer_vs_float(x, b.as_f64().unwrap_or(0.0)),
        (None, Some(y)) => integer_vs_float(y, a.as_f64().unwrap_or(0.0)).reverse(),
        // JSON numbers are finite.
        (None, None) => {
            let (x, y) = (a.as_f64().unwrap_or(0.0), b.as_f64().unwrap_or(0.0));
            x.partial_cmp(&y).unwrap_or(Ordering::Equal)
        }
    }
}

fn integer_vs_float(integer: i128, float: f64) -> Ordering {
    // Integers here are within ±2^64; floats beyond ±2^100 are past them.
    const FAR: f64 = 1.267_650_600_228_229_4e30; // 2^100
    if float >= FAR {
        return Ordering::Less;
    }
    if float <= -FAR {
        return Ordering::Greater;
    }
    let floor = float.floor();
    // Exact: an integral f64 within ±2^100 is an i128.
    match integer.cmp(&(floor as i128)) {
        Ordering::Equal if float > floor => Ordering::Less,
        other => other,
    }
}

/// SQL's version of one condition, when there is one.
fn push(field: &str, op: Op, operand: &Value) -> Option<Pushed> {
    let field = field.to_owned();
    let cmp = match op {
        Op::Eq => Cmp::Eq,
        Op::Gt => Cmp::Gt,
        Op::Gte => Cmp::Ge,
        Op::Lt => Cmp::Lt,
        Op::Lte => Cmp::Le,
        Op::Ne => return None,
    };
    match operand {
        Value::String(value) => Some(Pushed::Text {
            field,
            cmp,
            value: value.clone(),
        }),
        Value::Number(number) => {
            // Widened: the database's reading of a stored number may be
            // off in its last bits; Rust decides exactly afterwards.
            let at = number.as_f64()?;
            let margin = at.abs() * 1e-9 + 1e-300;
            let (low, high) = (at - margin, at + margin);
            let (min, max) = match cmp {
                Cmp::Eq => (Some(low), Some(high)),
                Cmp::Gt | Cmp::Ge => (Some(low), None),
                Cmp::Lt | Cmp::Le => (None, Some(high)),
            };
            Some(Pushed::Number { field, min, max })
        }
        Value::Bool(value) if cmp == Cmp::Eq => Some(Pushed::Bool {
            field,
            value: *value,
        }),
        Value::Null if cmp == Cmp::Eq => Some(Pushed::Null { field }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn passes(filter: Value, value: Value) -> bool {
        Filter::parse(filter).unwrap().matches(&value)
    }

    #[test]
    fn equality_and_every_operator() {
        let item = json!({"kind": "pref", "n": 5, "x": 2.5, "on": true, "gone": null});
        assert!(passes(json!({"kind": "pref"}), item.clone()));
        assert!(!passes(json!({"kind": "prefs"}), item.clone()));
        assert!(passes(json!({"n": 5.0}), item.clone()), "1 == 1.0");
        assert!(passes(json!({"n": {"$eq": 5}}), item.clone()));
        assert!(passes(json!({"n": {"$ne": 4}}), item.clone()));
        assert!(!passes(json!({"n": {"$ne": 5}}), item.clone()));
        assert!(passes(json!({"n": {"$gt": 4.5, "$lt": 6}}), item.clone()));
        assert!(!passes(json!({"n": {"$gt": 5}}), item.clone()));
        assert!(passes(json!({"n": {"$gte": 5, "$lte": 5}}), item.clone()));
        assert!(passes(json!({"x": {"$lt": 3}}), item.clone()));
        assert!(passes(json!({"kind": {"$gt": "pref-"}}), item.clone()) == ("pref" > "pref-"));
        assert!(passes(json!({"kind": {"$lt": "q"}}), item.clone()));
        assert!(passes(json!({"on": true}), item.clone()));
        assert!(!passes(json!({"on": 1}), item.clone()), "true is not 1");
        assert!(passes(json!({"gone": null, "missing": null}), item.clone()));
        assert!(passes(json!({"missing": {"$ne": "x"}}), item.clone()));
        assert!(!passes(json!({"missing": {"$gt": 0}}), item.clone()));
        assert!(
            !passes(json!({"kind": {"$gt": 0}}), item.clone()),
            "no order between a string and a number"
        );
    }

    #[test]
    fn nested_objects_and_arrays_match_as_langgraphs_memory_store() {
        let item = json!({"a": {"b": 1, "c": [1, {"d": "x", "e": 2}]}, "l": [1, 2]});
        assert!(
            passes(json!({"a": {"b": 1}}), item.clone()),
            "a nested object may hold more"
        );
        assert!(passes(json!({"a": {"b": {"$gt": 0}}}), item.clone()));
        assert!(passes(json!({"a": {"c": [1, {"d": "x"}]}}), item.clone()));
        assert!(
            !passes(json!({"a": {"c": [1]}}), item.clone()),
            "arrays match in length"
        );
        assert!(passes(json!({"l": [1, 2.0]}), item.clone()));
        assert!(!passes(json!({"l": {"b": 1}}), item.clone()));
        assert!(
            !passes(json!({"a": {"$eq": {"b": 1}}}), item.clone()),
            "$eq is whole equality"
        );
        assert!(
            passes(json!({"a.b": null}), item),
            "no dotted paths: a field named a.b"
        );
    }

    #[test]
    fn numbers_compare_exactly() {
        let big = json!({"n": 9_007_199_254_740_993_u64});
        assert!(passes(
            json!({"n": {"$gt": 9_007_199_254_740_992.0}}),
            big.clone()
        ));
        assert!(!passes(json!({"n": 9_007_199_254_740_992.0}), big.clone()));
        assert!(passes(
            json!({"n": {"$lt": 9_007_199_254_740_993.5}}),
            big.clone()
        ));
        assert!(passes(
            json!({"n": {"$gt": -1e300}}),
            json!({"n": u64::MAX})
        ));
        assert!(passes(json!({"n": {"$lt": 1e300}}), json!({"n": i64::MIN})));
        assert_eq!(
            compare_numbers(&Number::from(-3), &Number::from_f64(-2.5).unwrap()),
            Ordering::Less
        );
        assert_eq!(
            compare_numbers(&Number::from(-2), &Number::from_f64(-2.5).unwrap()),
            Ordering::Greater
        );
        assert_eq!(
            compare_numbers(&Number::from(2), &Number::from_f64(2.0).unwrap()),
            Ordering::Equal
        );
    }

    #[test]
    fn bad_filters_are_errors_that_say_what_is_expected() {
        let err = |filter: Value| Filter::parse(filter).unwrap_err().to_string();
        assert_eq!(
            err(json!({"n": {"$in": [1, 2]}})),
            "search filter on field \"n\": unknown operator \"$in\"; the operators are $eq, $ne, $gt, $gte, $lt and $lte"
        );
        assert!(
            err(json!({"a": {"b": {"$gt": 1, "c": 2}}}))
                .starts_with("search filter on field \"a.b\": \"c\" beside operators")
        );
        assert!(err(json!([1])).contains("expected a JSON object of field conditions"));
        assert!(Filter::parse(Value::Null).unwrap().is_empty());
    }

    #[test]
    fn sql_gets_the_simple_conditions_widened() {
        let filter = Filter::parse(json!({
            "kind": "pref", "n": {"$gt": 3, "$ne": 7}, "on": false, "gone": null,
            "nested": {"a": 1}, "s": {"$lte": "m"}
        }))
        .unwrap();
        let pushed = filter.pushed();
        assert_eq!(pushed.len(), 5, "{pushed:?}");
        assert!(pushed.contains(&Pushed::Text {
            field: "kind".into(),
            cmp: Cmp::Eq,
            value: "pref".into()
        }));
        assert!(pushed.contains(&Pushed::Bool {
            field: "on".into(),
            value: false
        }));
        assert!(pushed.contains(&Pushed::Null {
            field: "gone".into()
        }));
        assert!(pushed.contains(&Pushed::Text {
            field: "s".into(),
            cmp: Cmp::Le,
            value: "m".into()
        }));
        let Some(Pushed::Number {
            min: Some(min),
            max: None,
            ..
        }) = pushed.iter().find(|p| p.field() == "n")
        else {
            panic!("{pushed:?}")
        };
        assert!(*min < 3.0 && *min > 2.999_999);
    }
}
