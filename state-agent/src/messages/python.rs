//! The lengths of Python's `repr()` and `json.dumps()` of JSON values, which
//! LangChain's `count_tokens_approximately` counts characters of: code
//! points, as Python's `len` counts them.

use serde_json::{Number, Value};

/// `len(repr(value))` for the Python object `json.loads` makes of `value`.
///
/// Integers beyond 64 bits are read by serde_json as floats, so count as a
/// float's `repr`; a code point counts as printable unless it is a control
/// character, a separator other than the space, a format character, a
/// private-use one or a noncharacter (unassigned code points, which Python
/// escapes, count as printable).
pub(crate) fn repr_len(value: &Value) -> usize {
    match value {
        Value::Null => 4, // None
        Value::Bool(b) => {
            if *b {
                4
            } else {
                5
            }
        } // True, False
        Value::Number(n) => number_len(n),
        Value::String(s) => str_repr_len(s),
        Value::Array(items) => {
            2 + items.iter().map(repr_len).sum::<usize>() + 2 * items.len().saturating_sub(1)
        }
        Value::Object(fields) => {
            2 + fields
                .iter()
                .map(|(k, v)| str_repr_len(k) + 2 + repr_len(v))
                .sum::<usize>()
                + 2 * fields.len().saturating_sub(1)
        }
    }
}

/// `len(repr(s))`: quotes, and the escapes Python writes.
pub(crate) fn str_repr_len(s: &str) -> usize {
    if s.is_ascii() {
        return ascii_repr_len(s.as_bytes());
    }
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut len = 2;
    for c in s.chars() {
        len += match c {
            '\\' | '\t' | '\n' | '\r' => 2,
            c if c == quote => 2,
            ' '..='~' => 1,
            c if (c as u32) < 0x20 || c == '\u{7f}' => 4,
            c if c.is_ascii() => 1,
            c if is_printable(c) => 1,
            c if (c as u32) <= 0xff => 4,
            c if (c as u32) <= 0xffff => 6,
            _ => 10,
        };
    }
    len
}

/// [`str_repr_len`] of ASCII text, in one pass over its bytes.
fn ascii_repr_len(bytes: &[u8]) -> usize {
    let (mut single, mut double, mut escaped, mut hex) = (0, 0, 0, 0);
    for &b in bytes {
        match b {
            b'\'' => single += 1,
            b'"' => double += 1,
            b'\\' | b'\t' | b'\n' | b'\r' => escaped += 1,
            0x20..=0x7e => {}
            _ => hex += 1,
        }
    }
    // Single quotes unless the text has some and no double ones; the
    // quote chosen is escaped.
    let quotes = if single > 0 && double == 0 { 0 } else { single };
    2 + bytes.len() + escaped + quotes + 3 * hex
}

/// Python's `str.isprintable` for a non-ASCII code point, but for
/// unassigned ones (see [`repr_len`]).
fn is_printable(c: char) -> bool {
    let u = c as u32;
    !matches!(u,
        0x80..=0xa0 // C1 controls, no-break space
        | 0xad
        | 0x600..=0x605 | 0x61c | 0x6dd | 0x70f | 0x890..=0x891 | 0x8e2
        | 0x1680 | 0x180e
        | 0x2000..=0x200f | 0x2028..=0x202f | 0x205f..=0x2064 | 0x2066..=0x206f
        | 0x3000
        | 0xd800..=0xf8ff // surrogates, private use
        | 0xfdd0..=0xfdef | 0xfeff | 0xfff9..=0xfffb
        | 0x110bd | 0x110cd | 0x13430..=0x1343f | 0x1bca0..=0x1bca3 | 0x1d173..=0x1d17a
        | 0xe0001 | 0xe0020..=0xe007f
        | 0xf0000..=0x10ffff)
        && (u & 0xfffe) != 0xfffe
}

/// The length of [`number_text`], without writing an integer.
fn number_len(n: &Number) -> usize {
    if let Some(u) = n.as_u64() {
        return digits(u);
    }
    if let Some(i) = n.as_i64() {
        return 1 + digits(i.unsigned_abs());
    }
    number_text(n).len()
}

fn digits(mut n: u64) -> usize {
    let mut len = 1;
    while n >= 10 {
        n /= 10;
        len += 1;
    }
    len
}

/// A number as Python writes it (`repr` and `json.dumps` alike).
pub(crate) fn number_text(n: &Number) -> String {
    if let Some(i) = n.as_i64() {
        return i.to_string();
    }
    if let Some(u) = n.as_u64() {
        return u.to_string();
    }
    float_repr(n.as_f64().unwrap_or(0.0))
}

/// Python's `repr(float)`: the shortest digits that read back, in fixed
/// notation when the exponent is in -4..16, else `d.ddde+XX`.
pub(crate) fn float_repr(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    // Rust's `{:e}` writes the shortest round-tripping digits: `-1.5e-7`.
    let sci = format!("{x:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let decpt = exp + 1;
    let mut out = String::from(sign);
    if (-3..=16).contains(&decpt) {
        if decpt <= 0 {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-decpt) as usize));
            out.push_str(&digits);
        } else {
            let point = decpt as usize;
            if point >= digits.len() {
                out.push_str(&digits);
                out.extend(std::iter::repeat_n('0', point - digits.len()));
                out.push_str(".0");
            } else {
                out.push_str(&digits[..point]);
                out.push('.');
                out.push_str(&digits[point..]);
            }
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if exp < 0 { '-' } else { '+' });
        out.push_str(&format!("{:02}", exp.unsigned_abs()));
    }
    out
}

/// Python's `json.dumps(value)` with its defaults: `", "` and `": "`
/// between items, every non-ASCII character escaped (`ensure_ascii`).
pub(crate) fn json_dumps(value: &Value) -> String {
    let mut out = String::new();
    write_json(value, &mut out);
    out
}

fn write_json(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&number_text(n)),
        Value::String(s) => write_json_str(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_json(item, out);
            }
            out.push(']');
        }
        Value::Object(fields) => {
            out.push('{');
            for (i, (key, item)) in fields.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_json_str(key, out);
                out.push_str(": ");
                write_json(item, out);
            }
            out.push('}');
        }
    }
}

fn write_json_str(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn floats_as_python_writes_them() {
        for (x, text) in [
            (1.0, "1.0"),
            (1.5e-7, "1.5e-07"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (123456789012345680.0, "1.2345678901234568e+17"),
            (-0.0, "-0.0"),
            (2.5, "2.5"),
            (1e22, "1e+22"),
            (0.1, "0.1"),
            (12.345, "12.345"),
        ] {
            assert_eq!(float_repr(x), text, "{x}");
        }
    }

    #[test]
    fn repr_lengths() {
        let value = json!({"a": [1, 2.5, true, null], "b": "it's", "c": "x\"y'z", "d": "\u{1}\n"});
        // {'a': [1, 2.5, True, None], 'b': "it's", 'c': 'x"y\'z', 'd': '\x01\n'}
        assert_eq!(repr_len(&value), 70);
        assert_eq!(str_repr_len("naïve 😀\u{200b}"), 2 + 7 + 6);
        for (text, repr) in [
            ("it's", r#""it's""#),
            ("a'b\"c", r#"'a\'b"c'"#),
            ("x\ty\\\u{1}\u{7f}", r"'x\ty\\\x01\x7f'"),
            ("", "''"),
        ] {
            assert_eq!(str_repr_len(text), repr.len(), "{text:?}");
        }
    }

    #[test]
    fn json_dumps_escapes_non_ascii() {
        assert_eq!(
            json_dumps(&json!({"a": ["☃", 1.0, null], "b\t": "😀"})),
            r#"{"a": ["\u2603", 1.0, null], "b\t": "\ud83d\ude00"}"#
        );
    }
}
