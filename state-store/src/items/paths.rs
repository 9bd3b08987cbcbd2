//! What an index embeds: the texts at a field path of an item's value, as
//! LangGraph's `tokenize_path` and `get_text_at_path` find them (`$` the
//! whole value; `a.b` nested fields; `a[0]`, `a[-1]`, `a[*]` array
//! elements; `*` every value; `{a,b.c}` several fields), written as Python
//! writes them (`str()` of a leaf, `json.dumps(.., sort_keys=True,
//! ensure_ascii=False)` of an object or array), so that the same item
//! gives the same texts to the same model in both.

use serde_json::{Number, Value};

/// A parsed field path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FieldPath {
    /// `$` (or an empty path): the whole value.
    Whole,
    Tokens(Vec<String>),
}

impl FieldPath {
    pub fn parse(path: &str) -> FieldPath {
        if path.is_empty() || path == "$" {
            FieldPath::Whole
        } else {
            FieldPath::Tokens(tokenize(path))
        }
    }
}

/// LangGraph's `tokenize_path`: fields split at `.`, with `[..]` and
/// `{..}` groups (nested brackets included) as tokens of their own. It
/// never fails: a path that names nothing finds no text.
pub(crate) fn tokenize(path: &str) -> Vec<String> {
    let chars: Vec<char> = path.chars().collect();
    let mut tokens = Vec::new();
    let mut current = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '[' || c == '{' {
            let close = if c == '[' { ']' } else { '}' };
            if !current.is_empty() {
                tokens.push(std::mem::take(&mut current));
            }
            let mut depth = 1;
            let mut group = String::from(c);
            i += 1;
            while i < chars.len() && depth > 0 {
                if chars[i] == c {
                    depth += 1;
                } else if chars[i] == close {
                    depth -= 1;
                }
                group.push(chars[i]);
                i += 1;
            }
            tokens.push(group);
            continue;
        }
        if c == '.' {
            if !current.is_empty() {
                tokens.push(std::mem::take(&mut current));
            }
        } else {
            current.push(c);
        }
        i += 1;
    }
    if !current.is_empty() {
        tokens.push(current);
    }
    tokens
}

/// The texts at `path` in `value`, in LangGraph's order.
pub(crate) fn texts_at(value: &Value, path: &FieldPath) -> Vec<String> {
    match path {
        FieldPath::Whole => vec![python_dumps(value)],
        FieldPath::Tokens(tokens) => {
            let mut texts = Vec::new();
            extract(value, tokens, &mut texts);
            texts
        }
    }
}

fn extract(value: &Value, tokens: &[String], texts: &mut Vec<String>) {
    let Some((token, rest)) = tokens.split_first() else {
        texts.extend(leaf_text(value));
        return;
    };
    if let Some(index) = token.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
        let Value::Array(items) = value else { return };
        if index == "*" {
            for item in items {
                extract(item, rest, texts);
            }
        } else if let Some(item) = python_int(index).and_then(|i| element(items, i)) {
            extract(item, rest, texts);
        }
    } else if let Some(fields) = token.strip_prefix('{').and_then(|t| t.strip_suffix('}')) {
        let Value::Object(_) = value else { return };
        for field in fields.split(',') {
            let mut current = Some(value);
            for key in tokenize(field.trim()) {
                current = current
                    .and_then(|v| v.as_object())
                    .and_then(|o| o.get(&key));
            }
            if let Some(found) = current {
                texts.extend(leaf_text(found));
            }
        }
    } else if token == "*" {
        match value {
            Value::Object(map) => map.values().for_each(|v| extract(v, rest, texts)),
            Value::Array(items) => items.iter().for_each(|v| extract(v, rest, texts)),
            _ => {}
        }
    } else if let Some(field) = value.as_object().and_then(|o| o.get(token.as_str())) {
        extract(field, rest, texts);
    }
}

/// Python's `int()` of an index (surrounding spaces, a sign, `_` between
/// digits).
fn python_int(text: &str) -> Option<i64> {
    let text = text.trim();
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    if digits.is_empty()
        || digits.starts_with('_')
        || digits.ends_with('_')
        || digits.contains("__")
        || !digits.chars().all(|c| c.is_ascii_digit() || c == '_')
    {
        return None;
    }
    text.replace('_', "").parse().ok()
}

/// `items[index]`, counting a negative index from the end.
fn element(items: &[Value], index: i64) -> Option<&Value> {
    let len = i64::try_from(items.len()).ok()?;
    let index = if index < 0 { len + index } else { index };
    usize::try_from(index).ok().and_then(|i| items.get(i))
}

/// A path's end: a scalar's `str()`, an object's or array's JSON; nothing
/// for null.
fn leaf_text(value: &Value) -> Option<String> {
    match value {
        Value::Null => None,
        Value::Bool(true) => Some("True".to_owned()),
        Value::Bool(false) => Some("False".to_owned()),
        Value::Number(n) => Some(python_number(n)),
        Value::String(s) => Some(s.clone()),
        Value::Array(_) | Value::Object(_) => Some(python_dumps(value)),
    }
}

/// `json.dumps(value, sort_keys=True, ensure_ascii=False)`.
pub(crate) fn python_dumps(value: &Value) -> String {
    let mut out = String::new();
    dump(value, &mut out);
    out
}

fn dump(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&python_number(n)),
        Value::String(s) => dump_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                dump(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                dump_string(key, out);
                out.push_str(": ");
                dump(item, out);
            }
            out.push('}');
        }
    }
}

/// JSON's escapes, as Python's `ensure_ascii=False` writes them (the same
/// set serde_json escapes: quote, backslash, control characters).
fn dump_string(text: &str, out: &mut String) {
    // A string always serializes.
    out.push_str(&serde_json::to_string(text).unwrap_or_default());
}

/// An integer as Python writes it; a float as its `repr`.
fn python_number(number: &Number) -> String {
    match number.as_f64() {
        Some(float) if number.is_f64() => python_float(float),
        _ => number.to_string(),
    }
}

/// Python's `repr(float)`: the shortest digits that read back, fixed
/// notation from 1e-4 up to 1e16 (always with a fraction, `1.0`),
/// scientific outside it with a signed exponent of two digits or more
/// (`1e+16`, `1.5e-07`).
fn python_float(float: f64) -> String {
    if float == 0.0 {
        return if float.is_sign_negative() {
            "-0.0"
        } else {
            "0.0"
        }
        .to_owned();
    }
    // Rust's `{:e}` writes the shortest digits that read back: `1.5e-7`.
    let scientific = format!("{float:e}");
    let (mantissa, exponent) = scientific
        .split_once('e')
        .unwrap_or((scientific.as_str(), "0"));
    let exponent: i64 = exponent.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let count = digits.len() as i64;
    if (-4..16).contains(&exponent) {
        let body = if exponent < 0 {
            format!("0.{}{digits}", "0".repeat((-exponent - 1) as usize))
        } else if count > exponent + 1 {
            let (whole, fraction) = digits.split_at((exponent + 1) as usize);
            format!("{whole}.{fraction}")
        } else {
            format!("{digits}{}.0", "0".repeat((exponent + 1 - count) as usize))
        };
        format!("{sign}{body}")
    } else {
        let (first, more) = digits.split_at(1);
        let fraction = if more.is_empty() {
            String::new()
        } else {
            format!(".{more}")
        };
        let exponent_sign = if exponent < 0 { '-' } else { '+' };
        format!(
            "{sign}{first}{fraction}e{exponent_sign}{:02}",
            exponent.abs()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The document LangGraph 1.2.22's `get_text_at_path` was run on; the
    /// expected texts below are what it returned.
    fn doc() -> Value {
        json!({"text": "hello", "n": 1.0, "big": 1e16, "small": 1e-7, "i": 3, "b": true, "none": null,
               "tags": ["x", "y"], "msgs": [{"content": "a"}, {"content": "b", "x": {"z": 1, "a": [1, 2.5]}}],
               "obj": {"zeta": "é\n", "alpha": [true, null]}})
    }

    fn at(path: &str) -> Vec<String> {
        texts_at(&doc(), &FieldPath::parse(path))
    }

    #[test]
    fn paths_find_the_texts_langgraph_finds() {
        assert_eq!(
            at("$"),
            [
                r#"{"b": true, "big": 1e+16, "i": 3, "msgs": [{"content": "a"}, {"content": "b", "x": {"a": [1, 2.5], "z": 1}}], "n": 1.0, "none": null, "obj": {"alpha": [true, null], "zeta": "é\n"}, "small": 1e-07, "tags": ["x", "y"], "text": "hello"}"#
            ]
        );
        assert_eq!(at("text"), ["hello"]);
        assert_eq!(at("n"), ["1.0"]);
        assert_eq!(at("big"), ["1e+16"]);
        assert_eq!(at("small"), ["1e-07"]);
        assert_eq!(at("i"), ["3"]);
        assert_eq!(at("b"), ["True"]);
        assert!(at("none").is_empty());
        assert_eq!(at("tags"), [r#"["x", "y"]"#]);
        assert_eq!(at("tags[*]"), ["x", "y"]);
        assert_eq!(at("tags[-1]"), ["y"]);
        assert!(at("tags[5]").is_empty());
        assert_eq!(at("msgs[*].content"), ["a", "b"]);
        assert_eq!(at("msgs[1].x"), [r#"{"a": [1, 2.5], "z": 1}"#]);
        assert_eq!(at("obj"), [r#"{"alpha": [true, null], "zeta": "é\n"}"#]);
        assert_eq!(at("{text,i}"), ["hello", "3"]);
        assert_eq!(at("{text,obj.zeta}"), ["hello", "é\n"]);
        assert!(at("missing").is_empty());
        assert_eq!(
            at("msgs[*]"),
            [
                r#"{"content": "a"}"#,
                r#"{"content": "b", "x": {"a": [1, 2.5], "z": 1}}"#
            ]
        );
    }

    #[test]
    fn tokens_are_langgraphs() {
        assert_eq!(
            tokenize("a.b[*].c{d,e.f}[0]"),
            ["a", "b", "[*]", "c", "{d,e.f}", "[0]"]
        );
        assert_eq!(tokenize("a[[1]]"), ["a", "[[1]]"]);
        assert_eq!(tokenize("a[unclosed"), ["a", "[unclosed"]);
        assert!(tokenize("..").is_empty());
    }

    #[test]
    fn floats_are_written_as_pythons_repr() {
        let cases = [
            (1.0, "1.0"),
            (-2.5, "-2.5"),
            (123.456, "123.456"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1e15, "1000000000000000.0"),
            (1e16, "1e+16"),
            (1.5e300, "1.5e+300"),
            (-0.0, "-0.0"),
            (0.1, "0.1"),
            (1e22, "1e+22"),
            (123456789.125, "123456789.125"),
        ];
        for (float, text) in cases {
            assert_eq!(python_float(float), text, "{float}");
        }
    }

    #[test]
    fn indices_read_as_pythons_int() {
        assert_eq!(python_int(" -1 "), Some(-1));
        assert_eq!(python_int("1_0"), Some(10));
        assert_eq!(python_int("+2"), Some(2));
        assert_eq!(python_int("1__0"), None);
        assert_eq!(python_int("x"), None);
        assert_eq!(python_int(""), None);
    }
}
