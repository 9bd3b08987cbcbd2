//! JSON that keeps every value or says why it cannot.
//!
//! `serde_json` writes a non-finite float (`NaN`, `inf`) as `null`, which
//! reads back as an error (`f64`) or as `None` (`Option<f64>`): in a
//! checkpoint, that is a value lost without a word. [`to_value`] and
//! [`to_string`] are `serde_json`'s, except that such a value is an error
//! naming it. [`State::to_json`] and the stores write
//! through them.
//!
//! The common case costs one scan: only output that contains a `null` is
//! walked again, looking for the float behind it.

use crate::State;
use serde::Serialize;
use serde::ser::{self, Error as _};
use serde_json::{Error, Value};

/// [`serde_json::to_value`], refusing values JSON cannot hold.
///
/// ```
/// let ok = state_core::json::to_value(&[1.5, 2.0]).unwrap();
/// assert_eq!(ok, serde_json::json!([1.5, 2.0]));
///
/// let err = state_core::json::to_value(&[1.5, f64::NAN]).unwrap_err();
/// assert_eq!(err.to_string(), "NaN has no JSON form (JSON numbers are finite), at [1]");
/// ```
///
/// # Errors
///
/// Whatever `serde_json::to_value` refuses (a map key that is not a string
/// or a number, a `Serialize` impl that fails), and a non-finite `f32` or
/// `f64` anywhere in the value.
pub fn to_value<T: Serialize + ?Sized>(value: &T) -> Result<Value, Error> {
    let json = serde_json::to_value(value)?;
    refuse_hidden_floats(&json, &ByRef(value))?;
    Ok(json)
}

/// [`serde_json::to_string`], refusing values JSON cannot hold (see
/// [`to_value`]).
///
/// # Errors
///
/// As [`to_value`].
pub fn to_string<T: Serialize + ?Sized>(value: &T) -> Result<String, Error> {
    refuse_hidden_in_text(serde_json::to_string(value)?, value)
}

/// [`to_string`] of a state, written by [`State::write_json`]: each field
/// on its own type (the derive's), not through `erased_serde`. The same
/// text, the same refusal of values JSON cannot hold.
///
/// ```
/// use state_core::{AgentState, State};
///
/// #[derive(AgentState)]
/// struct Eval {
///     answer: String,
///     score: f64,
/// }
///
/// let mut eval = Eval::default();
/// eval.answer = "42".into();
/// let text = state_core::json::state_to_string(&eval).unwrap();
/// assert_eq!(text, state_core::json::to_string(&eval).unwrap());
///
/// eval.score = f64::NAN;
/// let err = state_core::json::state_to_string(&eval).unwrap_err();
/// assert_eq!(err.to_string(), "NaN has no JSON form (JSON numbers are finite), at score");
/// ```
///
/// # Errors
///
/// As [`to_value`].
pub fn state_to_string<S: State + Serialize>(state: &S) -> Result<String, Error> {
    let mut out = Vec::with_capacity(128);
    state.write_json(&mut out)?;
    // `serde_json` writes UTF-8 only (bytes as arrays of numbers).
    let text = String::from_utf8(out)
        .map_err(|e| Error::custom(format!("the state's JSON is not UTF-8: {e}")))?;
    refuse_hidden_in_text(text, state)
}

/// `text` is what `serde_json` wrote of `value`: an error if one of its
/// `null`s stands for a non-finite float (text without one has none).
fn refuse_hidden_in_text<T: Serialize + ?Sized>(text: String, value: &T) -> Result<String, Error> {
    if text.contains("null") {
        check_finite(&ByRef(value))?;
    }
    Ok(text)
}

/// `json` is what `serde_json` wrote of `value`: an error if one of its
/// `null`s stands for a non-finite float. Scalars, the common case, are
/// decided inline, without a call.
#[inline]
pub(crate) fn refuse_hidden_floats(
    json: &Value,
    value: &dyn erased_serde::Serialize,
) -> Result<(), Error> {
    let may_hide = match json {
        Value::Null => true,
        Value::Array(_) | Value::Object(_) => contains_null(json),
        Value::Bool(_) | Value::Number(_) | Value::String(_) => false,
    };
    if may_hide {
        check_finite(value)
    } else {
        Ok(())
    }
}

#[inline(never)]
fn contains_null(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Array(items) => items.iter().any(contains_null),
        Value::Object(map) => map.values().any(contains_null),
        Value::Bool(_) | Value::Number(_) | Value::String(_) => false,
    }
}

/// Walks `value` as serde sees it; the first non-finite float is an error
/// that says where it is. Erased, so the walk is compiled once, not once
/// per type (a state's fields already have their erased `Serialize`).
#[cold]
#[inline(never)]
fn check_finite(value: &dyn erased_serde::Serialize) -> Result<(), Error> {
    let mut path = Vec::new();
    erased_serde::serialize(value, FiniteCheck { path: &mut path })
}

/// A value of any size behind a reference, so it can be erased.
struct ByRef<'a, T: ?Sized>(&'a T);

impl<T: Serialize + ?Sized> Serialize for ByRef<'_, T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

/// One step of the path to a value: a map key or struct field, or an index.
enum Step {
    Key(String),
    Index(usize),
}

fn describe(path: &[Step]) -> String {
    let mut out = String::new();
    for step in path {
        match step {
            Step::Key(key) if out.is_empty() => out.push_str(key),
            Step::Key(key) => {
                out.push('.');
                out.push_str(key);
            }
            Step::Index(index) => out.push_str(&format!("[{index}]")),
        }
    }
    out
}

fn non_finite(path: &[Step], value: f64) -> Error {
    let what = if value.is_nan() {
        "NaN"
    } else if value > 0.0 {
        "inf"
    } else {
        "-inf"
    };
    let at = if path.is_empty() {
        String::new()
    } else {
        format!(", at {}", describe(path))
    };
    Error::custom(format!(
        "{what} has no JSON form (JSON numbers are finite){at}"
    ))
}

/// A serializer that produces nothing and fails on a non-finite float.
struct FiniteCheck<'p> {
    path: &'p mut Vec<Step>,
}

/// Everything with nothing to check inside.
macro_rules! accept {
    ($($method:ident($($ty:ty)?)),* $(,)?) => {$(
        fn $method(self $(, _: $ty)?) -> Result<(), Error> {
            Ok(())
        }
    )*};
}

impl<'p> ser::Serializer for FiniteCheck<'p> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Compound<'p>;
    type SerializeTuple = Compound<'p>;
    type SerializeTupleStruct = Compound<'p>;
    type SerializeTupleVariant = Compound<'p>;
    type SerializeMap = Compound<'p>;
    type SerializeStruct = Compound<'p>;
    type SerializeStructVariant = Compound<'p>;

    accept! {
        serialize_bool(bool), serialize_i8(i8), serialize_i16(i16), serialize_i32(i32),
        serialize_i64(i64), serialize_i128(i128), serialize_u8(u8), serialize_u16(u16),
        serialize_u32(u32), serialize_u64(u64), serialize_u128(u128), serialize_char(char),
        serialize_str(&str), serialize_bytes(&[u8]), serialize_none(), serialize_unit(),
        serialize_unit_struct(&'static str),
    }

    fn serialize_f32(self, v: f32) -> Result<(), Error> {
        self.serialize_f64(f64::from(v))
    }

    fn serialize_f64(self, v: f64) -> Result<(), Error> {
        if v.is_finite() {
            Ok(())
        } else {
            Err(non_finite(self.path, v))
        }
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Error> {
        value.serialize(self)
    }

    fn serialize_unit_variant(self, _: &'static str, _: u32, _: &'static str) -> Result<(), Error> {
        Ok(())
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        self.path.push(Step::Key(variant.to_owned()));
        value.serialize(FiniteCheck { path: self.path })?;
        self.path.pop();
        Ok(())
    }

    fn serialize_seq(self, _: Option<usize>) -> Result<Compound<'p>, Error> {
        Ok(Compound::new(self.path))
    }

    fn serialize_tuple(self, _: usize) -> Result<Compound<'p>, Error> {
        Ok(Compound::new(self.path))
    }

    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Compound<'p>, Error> {
        Ok(Compound::new(self.path))
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Compound<'p>, Error> {
        Ok(Compound::variant(self.path, variant))
    }

    fn serialize_map(self, _: Option<usize>) -> Result<Compound<'p>, Error> {
        Ok(Compound::new(self.path))
    }

    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Compound<'p>, Error> {
        Ok(Compound::new(self.path))
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Compound<'p>, Error> {
        Ok(Compound::variant(self.path, variant))
    }
}

/// A sequence, map or struct being checked: its items extend the path.
struct Compound<'p> {
    path: &'p mut Vec<Step>,
    index: usize,
    /// The key of the map entry whose value comes next.
    key: Option<String>,
    /// An enum variant's name was pushed and is popped at the end.
    variant: bool,
}

impl<'p> Compound<'p> {
    fn new(path: &'p mut Vec<Step>) -> Self {
        Compound {
            path,
            index: 0,
            key: None,
            variant: false,
        }
    }

    /// An enum variant's fields: the variant's name is on the path until
    /// [`Compound::finish`].
    fn variant(path: &'p mut Vec<Step>, name: &'static str) -> Self {
        path.push(Step::Key(name.to_owned()));
        Compound {
            variant: true,
            ..Compound::new(path)
        }
    }

    fn item<T: Serialize + ?Sized>(&mut self, step: Step, value: &T) -> Result<(), Error> {
        self.path.push(step);
        value.serialize(FiniteCheck {
            path: &mut *self.path,
        })?;
        self.path.pop();
        Ok(())
    }

    fn next_index<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        let index = self.index;
        self.index += 1;
        self.item(Step::Index(index), value)
    }

    fn finish(self) -> Result<(), Error> {
        if self.variant {
            self.path.pop();
        }
        Ok(())
    }
}

macro_rules! sequence {
    ($($trait:ident :: $method:ident),* $(,)?) => {$(
        impl ser::$trait for Compound<'_> {
            type Ok = ();
            type Error = Error;

            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
                self.next_index(value)
            }

            fn end(self) -> Result<(), Error> {
                self.finish()
            }
        }
    )*};
}

sequence! {
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field,
}

macro_rules! fields {
    ($($trait:ident),* $(,)?) => {$(
        impl ser::$trait for Compound<'_> {
            type Ok = ();
            type Error = Error;

            fn serialize_field<T: Serialize + ?Sized>(
                &mut self,
                key: &'static str,
                value: &T,
            ) -> Result<(), Error> {
                self.item(Step::Key(key.to_owned()), value)
            }

            fn end(self) -> Result<(), Error> {
                self.finish()
            }
        }
    )*};
}

fields!(SerializeStruct, SerializeStructVariant);

impl ser::SerializeMap for Compound<'_> {
    type Ok = ();
    type Error = Error;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        // The key as JSON writes it, for the path. (`serde_json` refused
        // keys it cannot write, non-finite floats included, before this
        // check runs.)
        self.key = Some(match serde_json::to_value(key)? {
            Value::String(text) => text,
            other => other.to_string(),
        });
        Ok(())
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        let key = self.key.take().unwrap_or_default();
        self.item(Step::Key(key), value)
    }

    fn end(self) -> Result<(), Error> {
        self.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::BTreeMap;

    #[derive(Serialize)]
    struct Scores {
        name: String,
        by_judge: BTreeMap<String, Vec<f64>>,
        best: Option<f32>,
    }

    fn scores(value: f64, best: Option<f32>) -> Scores {
        Scores {
            name: "run".to_owned(),
            by_judge: BTreeMap::from([("alice".to_owned(), vec![1.0, value])]),
            best,
        }
    }

    #[test]
    fn finite_values_are_serde_jsons_output() {
        let value = scores(2.5, None);
        assert_eq!(
            to_value(&value).unwrap(),
            serde_json::to_value(&value).unwrap()
        );
        assert_eq!(
            to_string(&value).unwrap(),
            serde_json::to_string(&value).unwrap()
        );
        // A real `null` (None, unit, Value::Null) is not an error.
        assert_eq!(to_value(&json!({"a": null})).unwrap(), json!({"a": null}));
    }

    #[test]
    fn a_non_finite_float_is_refused_with_its_path() {
        for (value, what) in [
            (f64::NAN, "NaN"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
        ] {
            let expected =
                format!("{what} has no JSON form (JSON numbers are finite), at by_judge.alice[1]");
            assert_eq!(
                to_value(&scores(value, None)).unwrap_err().to_string(),
                expected
            );
            assert_eq!(
                to_string(&scores(value, None)).unwrap_err().to_string(),
                expected
            );
        }
        let err = to_string(&scores(1.0, Some(f32::NAN))).unwrap_err();
        assert_eq!(
            err.to_string(),
            "NaN has no JSON form (JSON numbers are finite), at best"
        );
    }

    #[test]
    fn enums_tuples_and_float_keys_are_walked() {
        #[derive(Serialize)]
        enum Shape {
            Point(f64, f64),
            Circle { r: f64 },
            Tag(f64),
        }
        let err = to_value(&vec![Shape::Point(0.0, 1.0), Shape::Point(0.0, f64::NAN)]);
        assert_eq!(
            err.unwrap_err().to_string(),
            "NaN has no JSON form (JSON numbers are finite), at [1].Point[1]"
        );
        let err = to_value(&Shape::Circle { r: f64::INFINITY }).unwrap_err();
        assert!(err.to_string().ends_with("at Circle.r"), "{err}");
        let err = to_value(&(1, Shape::Tag(f64::NAN))).unwrap_err();
        assert!(err.to_string().ends_with("at [1].Tag"), "{err}");
        assert!(to_value(&Shape::Tag(1.0)).is_ok());
    }
}
