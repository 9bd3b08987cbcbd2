//! [`Content`]: what a message says, as LangChain stores it (a string or a
//! list of content blocks).

use serde_json::Value;

/// A message's content: plain text, or a list of content blocks as
/// LangChain and OpenAI use for multimodal input (`{"type": "text", "text":
/// ...}`, `{"type": "image_url", ...}`, or bare strings).
///
/// In JSON it is a string or an array; `null` reads as empty text.
///
/// ```
/// use state_core::Content;
/// use serde_json::json;
///
/// let text = Content::from("hi");
/// assert_eq!(text, "hi");
/// let blocks = Content::from(vec![json!({"type": "text", "text": "a"}), json!("b")]);
/// assert_eq!(blocks.text(), "ab");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    /// Plain text.
    Text(String),
    /// Content blocks, kept exactly as given.
    Blocks(Vec<Value>),
}

impl Content {
    /// The text, when the content is plain text.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Content::Text(text) => Some(text),
            Content::Blocks(_) => None,
        }
    }

    /// The blocks, when the content is a list of blocks.
    pub fn blocks(&self) -> Option<&[Value]> {
        match self {
            Content::Text(_) => None,
            Content::Blocks(blocks) => Some(blocks),
        }
    }

    /// The text a reader sees: the string itself, or the concatenation of
    /// the string blocks and of the `text` of `{"type": "text"}` blocks, in
    /// order (LangChain's `message.text`). Other blocks are skipped.
    pub fn text(&self) -> String {
        match self {
            Content::Text(text) => text.clone(),
            Content::Blocks(blocks) => blocks.iter().filter_map(block_text).collect(),
        }
    }

    /// True for empty text or an empty list of blocks.
    pub fn is_empty(&self) -> bool {
        match self {
            Content::Text(text) => text.is_empty(),
            Content::Blocks(blocks) => blocks.is_empty(),
        }
    }
}

/// The text of one block, if it is a text block.
fn block_text(block: &Value) -> Option<&str> {
    match block {
        Value::String(text) => Some(text),
        Value::Object(fields) if fields.get("type").and_then(Value::as_str) == Some("text") => {
            fields.get("text").and_then(Value::as_str)
        }
        _ => None,
    }
}

impl Default for Content {
    /// Empty text.
    fn default() -> Self {
        Content::Text(String::new())
    }
}

impl From<String> for Content {
    fn from(text: String) -> Self {
        Content::Text(text)
    }
}

impl From<&str> for Content {
    fn from(text: &str) -> Self {
        Content::Text(text.to_owned())
    }
}

impl From<&String> for Content {
    fn from(text: &String) -> Self {
        Content::Text(text.clone())
    }
}

impl From<Box<str>> for Content {
    fn from(text: Box<str>) -> Self {
        Content::Text(text.into())
    }
}

impl From<std::borrow::Cow<'_, str>> for Content {
    fn from(text: std::borrow::Cow<'_, str>) -> Self {
        Content::Text(text.into_owned())
    }
}

impl From<Vec<Value>> for Content {
    fn from(blocks: Vec<Value>) -> Self {
        Content::Blocks(blocks)
    }
}

impl PartialEq<str> for Content {
    /// True when the content is exactly this plain text.
    fn eq(&self, other: &str) -> bool {
        self.as_text() == Some(other)
    }
}

impl PartialEq<&str> for Content {
    /// True when the content is exactly this plain text.
    fn eq(&self, other: &&str) -> bool {
        self.as_text() == Some(*other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_of_plain_content_is_itself() {
        assert_eq!(Content::from("abc").text(), "abc");
        assert_eq!(Content::default(), "");
        assert!(Content::default().is_empty());
    }

    #[test]
    fn text_of_blocks_joins_text_blocks_and_strings_only() {
        let content = Content::from(vec![
            json!({"type": "text", "text": "a"}),
            json!({"type": "image_url", "image_url": {"url": "x"}}),
            json!("b"),
            json!({"type": "text"}),
            json!(5),
            json!({"type": "text", "text": "c"}),
        ]);
        assert_eq!(content.text(), "abc");
        assert_eq!(content.as_text(), None);
        assert_eq!(content.blocks().map(<[_]>::len), Some(6));
        assert_ne!(content, "abc");
    }

    #[test]
    fn conversions() {
        let owned = String::from("x");
        assert_eq!(Content::from(&owned), "x");
        assert_eq!(Content::from(owned), "x");
        assert_eq!(Content::from(Box::<str>::from("y")), "y");
        assert_eq!(Content::from(std::borrow::Cow::Borrowed("z")), "z");
        assert!(Content::from(Vec::<Value>::new()).is_empty());
    }
}
