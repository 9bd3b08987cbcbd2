//! LangChain's `parse_partial_json`: JSON that may lack its closing quotes
//! and brackets, as a streamed tool call's arguments.

use serde_json::Value;

/// The value `text` parses to, closing what is left open; `None` where
/// LangChain's raises or returns `None`.
pub(crate) fn parse_partial_json(text: &str) -> Option<Value> {
    if let Ok(value) = serde_json::from_str(text) {
        return Some(value);
    }
    let mut chars: Vec<char> = Vec::with_capacity(text.len() + 8);
    let mut stack = Vec::new();
    let mut in_string = false;
    let mut escaped = false;
    for c in text.chars() {
        if in_string {
            if c == '"' && !escaped {
                in_string = false;
            } else if c == '\n' && !escaped {
                chars.extend(['\\', 'n']);
                continue;
            } else if c == '\\' {
                escaped = !escaped;
            } else {
                escaped = false;
            }
        } else if c == '"' {
            in_string = true;
            escaped = false;
        } else if c == '{' {
            stack.push('}');
        } else if c == '[' {
            stack.push(']');
        } else if c == '}' || c == ']' {
            if stack.last() == Some(&c) {
                stack.pop();
            } else {
                return None;
            }
        }
        chars.push(c);
    }
    if in_string {
        if escaped {
            chars.pop();
        }
        chars.push('"');
    }
    let closing: String = stack.iter().rev().collect();
    while !chars.is_empty() {
        let candidate: String = chars.iter().collect::<String>() + &closing;
        if let Ok(value) = serde_json::from_str(&candidate) {
            return Some(value);
        }
        chars.pop();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn closes_what_is_open() {
        assert_eq!(parse_partial_json(r#"{"a": 1"#), Some(json!({"a": 1})));
        assert_eq!(parse_partial_json(r#"{"a": "x"#), Some(json!({"a": "x"})));
        assert_eq!(parse_partial_json("{oops"), Some(json!({})));
        assert_eq!(parse_partial_json("]"), None);
        assert_eq!(parse_partial_json("oops"), None);
    }
}
