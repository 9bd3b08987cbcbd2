//! LangChain's two wrappers around a message's `model_dump()` fields:
//! `dumpd()`'s constructor envelope `{"lc": 1, "type": "constructor", "id":
//! [..., "AIMessage"], "kwargs": {...}}` and `messages_to_dict()`'s
//! `{"type": "ai", "data": {...}}`. Both are read; the latter is also
//! written, by [`LangChainDict`].

use super::message::Message;
use super::object::{TakeKey, describe, read_tag};
use super::tag::{self, CLASSES, TYPES, Tag};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};

/// A wrapper's contents: the kind it names and the message's fields.
pub(super) type Unwrapped = (Tag, Map<String, Value>);

/// For a constructor envelope: the kind its class stands for and the
/// fields (its `kwargs`). `None` for any other object.
pub(super) fn constructor(object: &mut Map<String, Value>) -> Result<Option<Unwrapped>, String> {
    let is_envelope = object.contains_key("lc")
        && object.get("type").and_then(Value::as_str) == Some("constructor");
    if !is_envelope {
        return Ok(None);
    }
    let class = object
        .get("id")
        .and_then(Value::as_array)
        .and_then(|path| path.last())
        .and_then(Value::as_str)
        .unwrap_or_default();
    let tag = tag::from_class(class).ok_or_else(|| {
        format!("unsupported LangChain serialized message class \"{class}\"; expected {CLASSES}")
    })?;
    let mut kwargs = match object.take_key("kwargs") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(kwargs)) => kwargs,
        Some(other) => {
            return Err(format!(
                "serialized message \"kwargs\" must be an object, got {}",
                describe(&other)
            ));
        }
    };
    let tag = agree(tag, &mut kwargs).map_err(|e| format!("in \"kwargs\": {e}"))?;
    Ok(Some((tag, kwargs)))
}

/// For `messages_to_dict()`'s shape (an object with `data` and neither
/// `content` nor `role`, which every message object in another shape has):
/// the kind its `type` names and the fields (its `data`). `None` for any
/// other object.
pub(super) fn type_and_data(object: &mut Map<String, Value>) -> Result<Option<Unwrapped>, String> {
    let is_wrapper = object.contains_key("data")
        && !object.contains_key("content")
        && !object.contains_key("role");
    if !is_wrapper {
        return Ok(None);
    }
    let tag = match object.take_key("type") {
        Some(name) => read_tag(&name, "type", tag::from_type, TYPES)?,
        None => {
            return Err(
                r#"a message as {"type", "data"} (messages_to_dict's shape) needs a "type""#.into(),
            );
        }
    };
    let mut data = match object.take_key("data") {
        Some(Value::Object(data)) => data,
        other => {
            return Err(format!(
                "message \"data\" must be an object of the message's fields, got {}",
                describe(&other.unwrap_or_default())
            ));
        }
    };
    if let Some(key) = object.keys().next() {
        return Err(format!(
            "a message as {{\"type\", \"data\"}} (messages_to_dict's shape) has no other keys, got \"{key}\""
        ));
    }
    let tag = agree(tag, &mut data).map_err(|e| format!("in \"data\": {e}"))?;
    Ok(Some((tag, data)))
}

/// Takes the `type` out of a wrapper's fields: it must name the wrapper's
/// kind, as LangChain's class refuses any other.
fn agree(outer: Tag, fields: &mut Map<String, Value>) -> Result<Tag, String> {
    let Some(name) = fields.take_key("type") else {
        return Ok(outer);
    };
    let inner = read_tag(&name, "type", tag::from_type, TYPES)?;
    if inner.kind != outer.kind {
        return Err(format!(
            "the \"type\" {name} disagrees with the wrapper, which holds a \"{}\" message",
            outer.kind
        ));
    }
    Ok(Tag {
        chunk: outer.chunk || inner.chunk,
        developer: outer.developer || inner.developer,
        ..outer
    })
}

/// A message in LangChain's `messages_to_dict()` shape, `{"type": ...,
/// "data": {...}}`, where `data` is the message's usual JSON (its
/// `model_dump()` shape), for services that load messages with
/// `messages_from_dict()`. Made by [`Message::as_langchain_dict`]; it only
/// serializes.
///
/// ```
/// use state_core::Message;
/// use serde_json::json;
///
/// let history = [Message::human("hi").with_id("1"), Message::chat("critic", "no").with_id("2")];
/// let dicts: Vec<_> = history.iter().map(Message::as_langchain_dict).collect();
/// assert_eq!(
///     serde_json::to_value(&dicts).unwrap(),
///     json!([
///         {"type": "human", "data": {"type": "human", "content": "hi", "id": "1"}},
///         {"type": "chat", "data": {"type": "chat", "content": "no", "id": "2", "role": "critic"}},
///     ])
/// );
/// // Either shape reads back as the same message.
/// let back: Message = serde_json::from_value(serde_json::to_value(dicts[1]).unwrap()).unwrap();
/// assert_eq!(back, history[1]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LangChainDict<'a>(&'a Message);

impl LangChainDict<'_> {
    /// The message wrapped.
    pub fn message(&self) -> &Message {
        self.0
    }
}

impl Serialize for LangChainDict<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(2))?;
        map.serialize_entry("type", self.0.kind().as_str())?;
        map.serialize_entry("data", self.0)?;
        map.end()
    }
}

impl Message {
    /// This message in LangChain's `messages_to_dict()` shape (see
    /// [`LangChainDict`]); serializing the message itself writes its
    /// `model_dump()` shape.
    pub fn as_langchain_dict(&self) -> LangChainDict<'_> {
        LangChainDict(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::MessageKind;
    use serde_json::json;

    fn read(value: Value) -> Result<Message, String> {
        serde_json::from_value(value).map_err(|e| e.to_string())
    }

    #[test]
    fn type_and_data_is_read_as_its_data() {
        let message = read(json!({"type": "ai", "data": {
            "content": "x", "type": "ai", "id": "1", "name": null, "response_metadata": {}}}))
        .unwrap();
        assert_eq!(
            message,
            Message::ai("x")
                .with_id("1")
                .with_extra("response_metadata", json!({}))
        );
        // `data` without its own `type` takes the wrapper's.
        let message = read(json!({"type": "chat", "data": {"content": "c", "role": "critic"}}));
        assert_eq!(message.unwrap(), Message::chat("critic", "c"));
    }

    #[test]
    fn chunks_are_read_as_their_message_class() {
        let message = read(json!({"type": "AIMessageChunk", "data": {"content": "a",
            "type": "AIMessageChunk", "tool_calls": [], "chunk_position": "last",
            "tool_call_chunks": [{"name": "f", "args": "{}", "id": "c", "index": 0}]}}))
        .unwrap();
        assert_eq!(message.kind(), MessageKind::Ai);
        assert!(message.extra().is_empty(), "{:?}", message.extra());
        let message = read(json!({"lc": 1, "type": "constructor",
            "id": ["langchain", "schema", "messages", "ChatMessageChunk"],
            "kwargs": {"content": "c", "type": "ChatMessageChunk", "role": "critic"}}))
        .unwrap();
        assert_eq!(message, Message::chat("critic", "c"));
        // Only an AI chunk has streaming state; elsewhere the keys are kept.
        let message =
            read(json!({"type": "HumanMessageChunk", "content": "h", "chunk_position": 1}))
                .unwrap();
        assert_eq!(message.extra()["chunk_position"], json!(1));
    }

    #[test]
    fn wrapper_errors_say_where() {
        let cases = [
            (
                json!({"type": "human", "data": {}}),
                r#"in "data": a "human" message needs "content""#,
            ),
            (
                json!({"type": "tool", "data": {"content": "x"}}),
                r#"in "data": a "tool" message needs a "tool_call_id""#,
            ),
            (
                json!({"type": "chat", "data": {"content": "x"}}),
                r#"in "data": a "chat" message needs a "role""#,
            ),
            (
                json!({"type": "human", "data": {"type": "ai", "content": "x"}}),
                r#"in "data": the "type" "ai" disagrees with the wrapper, which holds a "human" message"#,
            ),
            (
                json!({"type": "human", "data": {"content": "x", "role": "user"}}),
                r#"in "data": a "human" message has a "role" ("user"); only a "chat" message has one"#,
            ),
            (
                json!({"type": "human", "data": []}),
                r#"message "data" must be an object of the message's fields, got a list"#,
            ),
            (
                json!({"data": {"content": "x"}}),
                r#"(messages_to_dict's shape) needs a "type""#,
            ),
            (
                json!({"type": "robot", "data": {"content": "x"}}),
                r#"unknown message type "robot""#,
            ),
            (
                json!({"type": "human", "data": {"content": "x"}, "id": "1"}),
                r#"has no other keys, got "id""#,
            ),
            (
                json!({"lc": 1, "type": "constructor", "id": ["x", "ChatMessage"], "kwargs": {}}),
                r#"in "kwargs": a "chat" message needs "content""#,
            ),
            (
                json!({"lc": 1, "type": "constructor", "id": ["x", "AIMessage"],
                       "kwargs": {"type": "human", "content": "x"}}),
                r#"in "kwargs": the "type" "human" disagrees with the wrapper, which holds a "ai" message"#,
            ),
            (
                json!({"lc": 1, "type": "constructor", "id": ["x", "BaseMessage"]}),
                r#"unsupported LangChain serialized message class "BaseMessage"; expected HumanMessage"#,
            ),
            (
                json!({"lc": 1, "type": "constructor", "id": ["x", "AIMessage"], "kwargs": 1}),
                r#"serialized message "kwargs" must be an object, got a number"#,
            ),
        ];
        for (input, expected) in cases {
            let err = read(input.clone()).unwrap_err();
            assert!(err.contains(expected), "{input}: {err}");
        }
    }

    #[test]
    fn a_message_with_content_and_data_is_not_wrapped() {
        let message = read(json!({"type": "human", "content": "x", "data": [1]})).unwrap();
        assert_eq!(message.extra()["data"], json!([1]));
    }

    #[test]
    fn langchain_dict_wraps_the_model_dump_shape() {
        let message = Message::tool("42", "c1").with_id("t1");
        let dict = serde_json::to_value(message.as_langchain_dict()).unwrap();
        assert_eq!(
            dict,
            json!({"type": "tool", "data": {"type": "tool", "content": "42", "id": "t1", "tool_call_id": "c1"}})
        );
        assert_eq!(read(dict).unwrap(), message);
        assert_eq!(message.as_langchain_dict().message(), &message);
        let removal = serde_json::to_value(Message::remove("r").as_langchain_dict()).unwrap();
        assert_eq!(
            removal,
            json!({"type": "remove", "data": {"type": "remove", "content": "", "id": "r"}})
        );
    }
}
