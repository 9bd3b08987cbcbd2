//! JSON for messages. Out: LangChain's `model_dump()` shape. In: that
//! shape (`type`), OpenAI's (`role`), LangChain's wrappers around the former
//! (read in `envelope.rs`), a bare string (a human message) and a `[role,
//! content]` pair (LangGraph's tuple form).

use super::Content;
use super::compact;
use super::envelope;
use super::message::{Message, MessageKind, ToolCall, is_reserved_key};
use super::object::{TakeKey, describe, read_tag};
use super::pair::{pair_message, pair_tag};
use super::tag::{self, ROLES, TYPES, Tag};
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;

/// What the message visitor expects, for serde's `invalid type` errors.
const EXPECTING: &str =
    "a message: a LangChain or OpenAI message object, a string, or a [role, content] pair";

impl Serialize for Content {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if !s.is_human_readable() {
            return compact::serialize_content(self, s);
        }
        match self {
            Content::Text(text) => s.serialize_str(text),
            Content::Blocks(blocks) => s.collect_seq(blocks),
        }
    }
}

impl<'de> Deserialize<'de> for Content {
    /// A string, a list of blocks, or `null` (empty text).
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        if !d.is_human_readable() {
            return compact::deserialize_content(d);
        }
        struct ContentVisitor;
        impl<'de> Visitor<'de> for ContentVisitor {
            type Value = Content;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("message content: a string or a list of content blocks")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Content, E> {
                Ok(Content::from(v))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Content, E> {
                Ok(Content::from(v))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Content, E> {
                Ok(Content::default())
            }
            fn visit_none<E: de::Error>(self) -> Result<Content, E> {
                Ok(Content::default())
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Content, A::Error> {
                let mut blocks = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
                while let Some(block) = seq.next_element::<Value>()? {
                    blocks.push(block);
                }
                Ok(Content::Blocks(blocks))
            }
        }
        d.deserialize_any(ContentVisitor)
    }
}

impl Serialize for ToolCall {
    /// `{"name", "args", "id", "type": "tool_call"}`, as LangChain's `ToolCall`.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if !s.is_human_readable() {
            return compact::serialize_tool_call(self, s);
        }
        let mut map = s.serialize_map(Some(4))?;
        map.serialize_entry("name", &self.name)?;
        map.serialize_entry("args", &self.args)?;
        map.serialize_entry("id", &self.id)?;
        map.serialize_entry("type", "tool_call")?;
        map.end()
    }
}

impl<'de> Deserialize<'de> for ToolCall {
    /// LangChain's shape (`name`, `args`, `id`) or OpenAI's (`id`,
    /// `function: {name, arguments}` where `arguments` is a JSON string).
    /// Missing or `null` arguments read as `{}`.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        if !d.is_human_readable() {
            return compact::deserialize_tool_call(d);
        }
        tool_call_from_value(Value::deserialize(d)?).map_err(de::Error::custom)
    }
}

impl Serialize for Message {
    /// LangChain's shape: `type`, `content`, `id` (`null` when none), then
    /// `role` (a chat message's), `name`, `tool_calls` (when not empty) and
    /// `tool_call_id` when set,
    /// then every extra key. A removal is `{"type": "remove", "content": "",
    /// "id": ...}`.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if !s.is_human_readable() {
            return compact::serialize_message(self, s);
        }
        if self.is_removal() {
            let mut map = s.serialize_map(Some(3))?;
            map.serialize_entry("type", MessageKind::Remove.as_str())?;
            map.serialize_entry("content", "")?;
            map.serialize_entry("id", &self.id)?;
            return map.end();
        }
        let extras = self.extra.iter().filter(|(key, _)| !is_reserved_key(key));
        let len = 3
            + usize::from(self.role.is_some())
            + usize::from(self.name.is_some())
            + usize::from(!self.tool_calls.is_empty())
            + usize::from(self.tool_call_id.is_some())
            + extras.clone().count();
        let mut map = s.serialize_map(Some(len))?;
        map.serialize_entry("type", self.kind.as_str())?;
        map.serialize_entry("content", &self.content)?;
        map.serialize_entry("id", &self.id)?;
        if let Some(role) = &self.role {
            map.serialize_entry("role", role)?;
        }
        if let Some(name) = &self.name {
            map.serialize_entry("name", name)?;
        }
        if !self.tool_calls.is_empty() {
            map.serialize_entry("tool_calls", &self.tool_calls)?;
        }
        if let Some(tool_call_id) = &self.tool_call_id {
            map.serialize_entry("tool_call_id", tool_call_id)?;
        }
        for (key, value) in extras {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Message {
    /// Any accepted input shape: see the `messages` module documentation.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        if !d.is_human_readable() {
            return compact::deserialize_message(d);
        }
        d.deserialize_any(MessageVisitor)
    }
}

struct MessageVisitor;

impl<'de> Visitor<'de> for MessageVisitor {
    type Value = Message;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(EXPECTING)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Message, E> {
        Ok(Message::human(v))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Message, E> {
        Ok(Message::human(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Message, A::Error> {
        let count_error = |n: usize| {
            de::Error::custom(format_args!(
                "a message given as a list must be [role, content], got {n} element{}",
                if n == 1 { "" } else { "s" }
            ))
        };
        let Some(role) = seq.next_element::<Value>()? else {
            return Err(count_error(0));
        };
        let Some(content) = seq.next_element::<Value>()? else {
            return Err(count_error(1));
        };
        if seq.next_element::<IgnoredAny>()?.is_some() {
            let mut n = 3;
            while seq.next_element::<IgnoredAny>()?.is_some() {
                n += 1;
            }
            return Err(count_error(n));
        }
        message_from_pair(role, content).map_err(de::Error::custom)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Message, A::Error> {
        let mut object = Map::new();
        while let Some((key, value)) = map.next_entry::<String, Value>()? {
            object.insert(key, value);
        }
        message_from_object(object).map_err(de::Error::custom)
    }
}

/// Removes `key` from `object` as an optional string; numbers become their
/// decimal text (as pydantic's `coerce_numbers_to_str` in LangChain).
fn take_string(
    object: &mut Map<String, Value>,
    key: &str,
    what: &str,
) -> Result<Option<String>, String> {
    match object.take_key(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(Value::Number(number)) => Ok(Some(number.to_string())),
        Some(other) => Err(format!(
            "{what} \"{key}\" must be a string, got {}",
            describe(&other)
        )),
    }
}

fn content_from_value(value: Value) -> Result<Content, String> {
    match value {
        Value::Null => Ok(Content::default()),
        Value::String(text) => Ok(Content::Text(text)),
        Value::Array(blocks) => Ok(Content::Blocks(blocks)),
        other => Err(format!(
            "message \"content\" must be a string or a list of content blocks, got {}",
            describe(&other)
        )),
    }
}

/// LangGraph's `[role, content]` form.
fn message_from_pair(role: Value, content: Value) -> Result<Message, String> {
    let Value::String(role) = role else {
        return Err(format!(
            "a message given as a list must be [role, content] with a string role, got {} as the role",
            describe(&role)
        ));
    };
    let tag = pair_tag(&role)?;
    Ok(pair_message(tag, content_from_value(content)?))
}

/// How a message object names its fields.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// LangChain's (`type`; `role` only on a chat message): keys that are
    /// not fields are kept as they came.
    LangChain,
    /// OpenAI's (`role`): keys that are not fields go under
    /// `additional_kwargs`, as in LangChain's `convert_to_messages`.
    OpenAi,
}

/// A message object: LangChain's `model_dump()` shape, OpenAI's, or one
/// of LangChain's wrappers around the former (`dumpd()`'s constructor
/// envelope, `messages_to_dict()`'s `{"type", "data"}`).
pub(super) fn message_from_object(mut object: Map<String, Value>) -> Result<Message, String> {
    if let Some((tag, kwargs)) = envelope::constructor(&mut object)? {
        return message_from_fields(tag, Shape::LangChain, kwargs)
            .map_err(|e| format!("in \"kwargs\": {e}"));
    }
    if let Some((tag, data)) = envelope::type_and_data(&mut object)? {
        return message_from_fields(tag, Shape::LangChain, data)
            .map_err(|e| format!("in \"data\": {e}"));
    }
    // A chat message's `role` is its free role, not OpenAI's; elsewhere
    // `role` wins over `type`, as in LangChain's `convert_to_messages`.
    let chat = object
        .get("type")
        .and_then(Value::as_str)
        .and_then(tag::from_type)
        .filter(|tag| tag.kind == MessageKind::Chat);
    if let Some(tag) = chat {
        object.take_key("type");
        return message_from_fields(tag, Shape::LangChain, object);
    }
    if let Some(role) = object.take_key("role") {
        let tag = read_tag(&role, "role", tag::from_role, ROLES)?;
        return message_from_fields(tag, Shape::OpenAi, object);
    }
    match object.take_key("type") {
        Some(name) => {
            let tag = read_tag(&name, "type", tag::from_type, TYPES)?;
            message_from_fields(tag, Shape::LangChain, object)
        }
        None => Err(r#"a message object needs a "type" (LangChain) or a "role" (OpenAI)"#.into()),
    }
}

/// The message of kind `tag` from the rest of its object (its `type`, or
/// its OpenAI `role`, already taken out).
fn message_from_fields(
    tag: Tag,
    shape: Shape,
    mut object: Map<String, Value>,
) -> Result<Message, String> {
    let kind = tag.kind;
    let id = take_string(&mut object, "id", "message")?;
    if kind == MessageKind::Remove {
        // A removal is only its id; LangChain drops its content too.
        let id = id.ok_or(r#"a "remove" message needs an "id""#)?;
        return Ok(Message::remove(id));
    }
    let content = match object.take_key("content") {
        Some(content) => content_from_value(content)?,
        None => return Err(format!("a \"{kind}\" message needs \"content\"")),
    };
    let role = take_string(&mut object, "role", "message")?;
    let role = match (kind, role) {
        (MessageKind::Chat, None) => return Err(r#"a "chat" message needs a "role""#.into()),
        (MessageKind::Chat, role) => role,
        (_, None) => None,
        (_, Some(role)) => {
            return Err(format!(
                "a \"{kind}\" message has a \"role\" (\"{role}\"); only a \"chat\" message has one"
            ));
        }
    };
    let name = take_string(&mut object, "name", "message")?;
    let tool_call_id = take_string(&mut object, "tool_call_id", "message")?;
    let tool_calls = match object.take_key("tool_calls") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(calls)) => calls
            .into_iter()
            .map(tool_call_from_value)
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err(format!(
                "message \"tool_calls\" must be a list, got {}",
                describe(&other)
            ));
        }
    };
    if kind == MessageKind::Tool && tool_call_id.is_none() {
        return Err(r#"a "tool" message needs a "tool_call_id""#.into());
    }
    if kind == MessageKind::Function && name.is_none() {
        return Err(r#"a "function" message needs a "name""#.into());
    }
    if tag.chunk && kind == MessageKind::Ai {
        // What LangChain's `message_chunk_to_message` drops: the streaming
        // state, whose calls are already in `tool_calls`.
        object.take_key("tool_call_chunks");
        object.take_key("chunk_position");
    }
    let extra = match shape {
        Shape::OpenAi => openai_extra(kind, object)?,
        Shape::LangChain => object,
    };
    let extra = if tag.developer {
        mark_developer(extra)?
    } else {
        extra
    };
    Ok(Message {
        kind,
        content,
        id,
        role,
        name,
        tool_calls,
        tool_call_id,
        extra,
    })
}

/// The keys of an OpenAI-shaped message that are not fields, arranged as
/// LangChain's `convert_to_messages` does: they go under
/// `additional_kwargs` (merged with a given `additional_kwargs` object),
/// except `response_metadata` (and `example` for human and AI messages,
/// `artifact` and `status` for tool messages), which stay top-level when
/// set.
fn openai_extra(
    kind: MessageKind,
    mut object: Map<String, Value>,
) -> Result<Map<String, Value>, String> {
    let nested = object.take_key("additional_kwargs");
    let response_metadata = object.take_key("response_metadata");
    let mut kwargs = object;
    match nested {
        None | Some(Value::Null) => {}
        Some(Value::Object(nested)) => kwargs.extend(nested),
        Some(other) => {
            return Err(format!(
                "message \"additional_kwargs\" must be an object, got {}",
                describe(&other)
            ));
        }
    }
    let mut extra = Map::new();
    if let Some(metadata) = response_metadata.filter(truthy) {
        extra.insert("response_metadata".into(), metadata);
    }
    let lifted: &[&str] = match kind {
        MessageKind::Human | MessageKind::Ai => &["example"],
        MessageKind::Tool => &["artifact", "status"],
        _ => &[],
    };
    for key in lifted {
        if let Some(value) = kwargs.take_key(key).filter(truthy) {
            extra.insert((*key).to_owned(), value);
        }
    }
    if !kwargs.is_empty() {
        extra.insert("additional_kwargs".into(), Value::Object(kwargs));
    }
    Ok(extra)
}

/// Python truthiness of a JSON value.
fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|n| n != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// LangChain reads the `developer` role as a system message with
/// `additional_kwargs["__openai_role__"] = "developer"`.
fn mark_developer(mut extra: Map<String, Value>) -> Result<Map<String, Value>, String> {
    let kwargs = extra
        .entry("additional_kwargs")
        .or_insert_with(|| Value::Object(Map::new()));
    if kwargs.is_null() {
        *kwargs = Value::Object(Map::new());
    }
    let Value::Object(kwargs) = kwargs else {
        return Err(format!(
            "message \"additional_kwargs\" must be an object, got {}",
            describe(kwargs)
        ));
    };
    kwargs.insert("__openai_role__".into(), Value::from("developer"));
    Ok(extra)
}

fn tool_call_from_value(value: Value) -> Result<ToolCall, String> {
    let Value::Object(mut object) = value else {
        return Err(format!(
            "a tool call must be an object, got {}",
            describe(&value)
        ));
    };
    let id = take_string(&mut object, "id", "tool call")?;
    let (name, args) = match object.take_key("function") {
        Some(Value::Object(mut function)) => {
            let name = take_string(&mut function, "name", "tool call function")?
                .ok_or(r#"a tool call's "function" needs a "name""#)?;
            let args = match function.take_key("arguments") {
                None | Some(Value::Null) => Value::Object(Map::new()),
                Some(Value::String(text)) if text.trim().is_empty() => Value::Object(Map::new()),
                Some(Value::String(text)) => serde_json::from_str(&text).map_err(|e| {
                    format!("tool call \"{name}\": \"arguments\" is not valid JSON: {e}")
                })?,
                Some(args) => args,
            };
            (name, args)
        }
        Some(other) => {
            return Err(format!(
                "a tool call's \"function\" must be an object, got {}",
                describe(&other)
            ));
        }
        None => {
            let name = take_string(&mut object, "name", "tool call")?
                .ok_or(r#"a tool call needs a "name""#)?;
            let args = match object.take_key("args") {
                None | Some(Value::Null) => Value::Object(Map::new()),
                Some(args) => args,
            };
            (name, args)
        }
    };
    Ok(ToolCall { id, name, args })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(value: Value) -> Result<Message, String> {
        serde_json::from_value(value).map_err(|e| e.to_string())
    }

    fn out(message: &Message) -> Value {
        serde_json::to_value(message).unwrap()
    }

    #[test]
    fn langchain_shape_round_trips() {
        let inputs = [
            json!({"type": "human", "content": "hi", "id": "1"}),
            json!({"type": "ai", "content": "", "id": "2", "name": "bot",
                   "tool_calls": [{"name": "f", "args": {"x": 1}, "id": "c1", "type": "tool_call"}],
                   "additional_kwargs": {}, "response_metadata": {"model": "m"},
                   "usage_metadata": {"input_tokens": 1}, "invalid_tool_calls": []}),
            json!({"type": "system", "content": [{"type": "text", "text": "s"}], "id": null}),
            json!({"type": "tool", "content": "42", "id": "3", "tool_call_id": "c1", "status": "success"}),
            json!({"type": "function", "content": "r", "id": "4", "name": "fn"}),
            json!({"type": "remove", "content": "", "id": "5"}),
        ];
        for input in inputs {
            let message = read(input.clone()).unwrap();
            assert_eq!(out(&message), input);
        }
    }

    #[test]
    fn output_always_has_type_content_and_id() {
        assert_eq!(
            out(&Message::human("x")),
            json!({"type": "human", "content": "x", "id": null})
        );
        assert_eq!(
            out(&Message::remove("9")),
            json!({"type": "remove", "content": "", "id": "9"})
        );
        assert_eq!(
            out(&Message::tool("r", "c")),
            json!({"type": "tool", "content": "r", "id": null, "tool_call_id": "c"})
        );
    }

    #[test]
    fn a_bare_string_is_a_human_message() {
        assert_eq!(read(json!("hello")).unwrap(), Message::human("hello"));
        let from_text: Message = serde_json::from_str(r#""hello""#).unwrap();
        assert_eq!(from_text, Message::human("hello"));
    }

    #[test]
    fn role_content_pairs() {
        for (role, kind) in [
            ("human", MessageKind::Human),
            ("user", MessageKind::Human),
            ("ai", MessageKind::Ai),
            ("assistant", MessageKind::Ai),
            ("system", MessageKind::System),
        ] {
            let message = read(json!([role, "x"])).unwrap();
            assert_eq!(message.kind(), kind);
            assert_eq!(message.text(), "x");
            assert_eq!(message.id(), None);
        }
        let developer = read(json!(["developer", "be brief"])).unwrap();
        assert_eq!(developer.kind(), MessageKind::System);
        assert_eq!(
            developer.extra()["additional_kwargs"],
            json!({"__openai_role__": "developer"})
        );
        let blocks = read(json!(["user", [{"type": "text", "text": "b"}]])).unwrap();
        assert_eq!(blocks.text(), "b");
    }

    #[test]
    fn bad_pairs_are_errors() {
        let err = read(json!(["tool", "x"])).unwrap_err();
        assert!(err.contains("tool_call_id"), "{err}");
        let err = read(json!(["user", "b", "c"])).unwrap_err();
        assert!(
            err.contains("[role, content]") && err.contains("3 elements"),
            "{err}"
        );
        let err = read(json!(["user"])).unwrap_err();
        assert!(err.contains("1 element"), "{err}");
        let err = read(json!([])).unwrap_err();
        assert!(err.contains("0 elements"), "{err}");
        let err =
            read(json!([{"type": "human", "content": "a"}, {"type": "human", "content": "b"}]))
                .unwrap_err();
        assert!(err.contains("string role"), "{err}");
        let err = read(json!(["remove", "x"])).unwrap_err();
        assert!(err.contains("\"id\""), "{err}");
        let err = read(json!(["function", "x"])).unwrap_err();
        assert!(err.contains("name"), "{err}");
        let err = read(json!(["robot", "x"])).unwrap_err();
        assert!(err.contains("unknown message role \"robot\""), "{err}");
    }

    #[test]
    fn openai_shape() {
        let message =
            read(json!({"role": "user", "content": "x", "id": "e1", "extra": 1})).unwrap();
        assert_eq!(
            out(&message),
            json!({"type": "human", "content": "x", "id": "e1", "additional_kwargs": {"extra": 1}})
        );
        let message = read(json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": "{\"a\": 1}"}},
            {"id": "call_2", "type": "function", "function": {"name": "now", "arguments": ""}}
        ]}))
        .unwrap();
        assert_eq!(message.kind(), MessageKind::Ai);
        assert_eq!(message.content(), &Content::default());
        assert_eq!(
            message.tool_calls(),
            [
                ToolCall::new("add", json!({"a": 1})).with_id("call_1"),
                ToolCall::new("now", json!({})).with_id("call_2"),
            ]
        );
        let message = read(
            json!({"role": "tool", "content": "3", "tool_call_id": "call_1",
                                  "status": "error", "artifact": null}),
        )
        .unwrap();
        assert_eq!(message.tool_call_id(), Some("call_1"));
        assert_eq!(
            message.extra(),
            json!({"status": "error"}).as_object().unwrap()
        );
        let message = read(json!({"role": "system", "content": "s"})).unwrap();
        assert_eq!(message.kind(), MessageKind::System);
        assert!(message.extra().is_empty());
    }

    #[test]
    fn role_wins_over_type_and_type_is_kept_in_additional_kwargs() {
        let message = read(json!({"role": "user", "type": "ai", "content": "x"})).unwrap();
        assert_eq!(message.kind(), MessageKind::Human);
        assert_eq!(message.extra()["additional_kwargs"], json!({"type": "ai"}));
    }

    #[test]
    fn openai_additional_kwargs_are_merged_and_metadata_lifted() {
        let message = read(json!({"role": "assistant", "content": "x", "a": 1,
            "additional_kwargs": {"b": 2, "a": 3}, "response_metadata": {"m": 1}, "example": false}))
        .unwrap();
        assert_eq!(
            out(&message),
            json!({"type": "ai", "content": "x", "id": null,
                   "response_metadata": {"m": 1}, "additional_kwargs": {"a": 3, "b": 2}})
        );
        let err =
            read(json!({"role": "user", "content": "x", "additional_kwargs": 1})).unwrap_err();
        assert!(err.contains("additional_kwargs"), "{err}");
    }

    #[test]
    fn developer_role_is_a_marked_system_message() {
        let message = read(json!({"role": "developer", "content": "d"})).unwrap();
        assert_eq!(message.kind(), MessageKind::System);
        assert_eq!(
            out(&message),
            json!({"type": "system", "content": "d", "id": null,
                   "additional_kwargs": {"__openai_role__": "developer"}})
        );
        let message =
            read(json!({"type": "developer", "content": "d", "additional_kwargs": {"k": 1}}))
                .unwrap();
        assert_eq!(
            message.extra()["additional_kwargs"],
            json!({"k": 1, "__openai_role__": "developer"})
        );
        let err = read(json!({"type": "developer", "content": "d", "additional_kwargs": "no"}))
            .unwrap_err();
        assert!(err.contains("additional_kwargs"), "{err}");
    }

    #[test]
    fn langchain_shape_keeps_unknown_keys_as_they_came() {
        let input =
            json!({"type": "ai", "content": "x", "id": "1", "zeta": [1], "alpha": {"b": 2}});
        let message = read(input.clone()).unwrap();
        let keys = message.extra().keys().collect::<Vec<_>>();
        if cfg!(feature = "preserve_order") {
            assert_eq!(keys, ["zeta", "alpha"]);
        } else {
            // Sorted, unless another crate turns serde_json's
            // `preserve_order` on.
            assert!(
                keys == ["alpha", "zeta"] || keys == ["zeta", "alpha"],
                "{keys:?}"
            );
        }
        assert_eq!(out(&message), input);
    }

    #[test]
    fn null_content_is_empty_and_numeric_ids_are_strings() {
        let message = read(json!({"role": "user", "content": null, "id": 5})).unwrap();
        assert_eq!(message.id(), Some("5"));
        assert_eq!(message.content(), &Content::default());
        let message =
            read(json!({"type": "tool", "content": "x", "tool_call_id": 7, "name": 1.5})).unwrap();
        assert_eq!(message.tool_call_id(), Some("7"));
        assert_eq!(message.name(), Some("1.5"));
    }

    #[test]
    fn removal_keeps_only_its_id() {
        let message =
            read(json!({"type": "remove", "id": "1", "content": "abc", "name": "n"})).unwrap();
        assert_eq!(message, Message::remove("1"));
        let message = read(json!({"role": "remove", "id": 2})).unwrap();
        assert_eq!(message, Message::remove("2"));
        let err = read(json!({"type": "remove", "content": ""})).unwrap_err();
        assert!(err.contains("needs an \"id\""), "{err}");
        let err = read(json!({"type": "remove", "id": null})).unwrap_err();
        assert!(err.contains("needs an \"id\""), "{err}");
    }

    #[test]
    fn object_errors_say_what_is_wrong() {
        let cases = [
            (
                json!({"role": "robot", "content": "x"}),
                r#"unknown message role "robot"; expected one of "human", "user", "ai", "assistant", "system", "developer", "tool", "function" or "remove""#,
            ),
            (
                json!({"type": "robot", "content": "x"}),
                r#"unknown message type "robot""#,
            ),
            (
                json!({"content": "x"}),
                r#"needs a "type" (LangChain) or a "role" (OpenAI)"#,
            ),
            (
                json!({"type": "human"}),
                r#"a "human" message needs "content""#,
            ),
            (
                json!({"type": 1, "content": "x"}),
                r#"message "type" must be a string, got a number"#,
            ),
            (
                json!({"type": "tool", "content": "x"}),
                r#"a "tool" message needs a "tool_call_id""#,
            ),
            (
                json!({"type": "function", "content": "x"}),
                r#"a "function" message needs a "name""#,
            ),
            (
                json!({"type": "human", "content": 1}),
                r#"message "content" must be a string or a list of content blocks, got a number"#,
            ),
            (
                json!({"type": "human", "content": "x", "id": {}}),
                r#"message "id" must be a string, got an object"#,
            ),
            (
                json!({"type": "ai", "content": "x", "tool_calls": {}}),
                r#"message "tool_calls" must be a list, got an object"#,
            ),
            (
                json!({"type": "ai", "content": "x", "tool_calls": [1]}),
                "a tool call must be an object, got a number",
            ),
            (
                json!({"type": "ai", "content": "x", "tool_calls": [{"args": {}}]}),
                r#"a tool call needs a "name""#,
            ),
            (
                json!({"type": "ai", "content": "x", "tool_calls": [{"function": {"name": "f", "arguments": "{"}}]}),
                r#"tool call "f": "arguments" is not valid JSON"#,
            ),
            (
                json!({"type": "ai", "content": "x", "tool_calls": [{"function": {}}]}),
                r#"a tool call's "function" needs a "name""#,
            ),
            (
                json!({"type": "ai", "content": "x", "tool_calls": [{"function": 1}]}),
                r#"a tool call's "function" must be an object"#,
            ),
        ];
        for (input, expected) in cases {
            let err = read(input.clone()).unwrap_err();
            assert!(err.contains(expected), "{input}: {err}");
        }
    }

    #[test]
    fn non_messages_are_invalid_types() {
        for input in [json!(5), json!(true), json!(null), json!(1.5)] {
            let err = read(input.clone()).unwrap_err();
            assert!(
                err.starts_with("invalid type") && err.contains(EXPECTING),
                "{input}: {err}"
            );
        }
    }

    #[test]
    fn langchain_constructor_envelope() {
        let message = read(json!({"lc": 1, "type": "constructor",
            "id": ["langchain", "schema", "messages", "AIMessage"],
            "kwargs": {"content": "hi", "type": "ai", "id": "a1", "tool_calls": []}}))
        .unwrap();
        assert_eq!(message, Message::ai("hi").with_id("a1"));
        let chunk = read(json!({"lc": 1, "type": "constructor",
            "id": ["langchain", "schema", "messages", "AIMessageChunk"],
            "kwargs": {"content": "c", "type": "AIMessageChunk"}}))
        .unwrap();
        assert_eq!(chunk, Message::ai("c"));
        let chat = read(json!({"lc": 1, "type": "constructor",
            "id": ["langchain", "schema", "messages", "ChatMessage"],
            "kwargs": {"content": "c", "type": "chat", "role": "critic"}}))
        .unwrap();
        assert_eq!(chat, Message::chat("critic", "c"));
        let err =
            read(json!({"lc": 1, "type": "constructor", "id": ["x", "ChatPrompt"], "kwargs": {}}))
                .unwrap_err();
        assert!(err.contains("class \"ChatPrompt\""), "{err}");
    }

    #[test]
    fn chat_messages_keep_their_free_role() {
        let input = json!({"content": "too long", "additional_kwargs": {}, "response_metadata": {},
            "type": "chat", "name": null, "id": "c1", "role": "critic"});
        let message = read(input).unwrap();
        assert_eq!(message.kind(), MessageKind::Chat);
        assert_eq!(message.role(), Some("critic"));
        assert_eq!(
            out(&message),
            json!({"type": "chat", "content": "too long", "id": "c1", "role": "critic",
                   "additional_kwargs": {}, "response_metadata": {}})
        );
        assert_eq!(read(out(&message)).unwrap(), message);
        // With `type: "chat"`, `role` is the chat role even when it is an
        // OpenAI role.
        let message = read(json!({"type": "chat", "role": "user", "content": "x"})).unwrap();
        assert_eq!(message, Message::chat("user", "x"));
        // Without it, `role` is OpenAI's, which has no free roles.
        let err = read(json!({"role": "critic", "content": "x"})).unwrap_err();
        assert!(err.contains("unknown message role \"critic\""), "{err}");
        let err = read(json!({"role": "chat", "content": "x"})).unwrap_err();
        assert!(err.contains("unknown message role \"chat\""), "{err}");
        let err = read(json!({"type": "chat", "content": "x"})).unwrap_err();
        assert!(err.contains(r#"a "chat" message needs a "role""#), "{err}");
        let err = read(json!({"type": "chat", "content": "x", "role": ["a"]})).unwrap_err();
        assert!(
            err.contains(r#"message "role" must be a string, got a list"#),
            "{err}"
        );
    }

    #[test]
    fn chunk_types_read_as_their_message_class() {
        for (chunk, kind) in [
            ("HumanMessageChunk", MessageKind::Human),
            ("AIMessageChunk", MessageKind::Ai),
            ("SystemMessageChunk", MessageKind::System),
        ] {
            let message = read(json!({"type": chunk, "content": "x", "id": "1"})).unwrap();
            assert_eq!(message, Message::bare(kind, "x".into()).with_id("1"));
        }
        let message = read(json!({"type": "ToolMessageChunk", "content": "x",
            "tool_call_id": "c", "artifact": null, "status": "success"}))
        .unwrap();
        assert_eq!(
            out(&message),
            json!({"type": "tool", "content": "x", "id": null,
            "tool_call_id": "c", "artifact": null, "status": "success"})
        );
        let message =
            read(json!({"type": "ChatMessageChunk", "content": "x", "role": "critic"})).unwrap();
        assert_eq!(message, Message::chat("critic", "x"));
        let message = read(json!({"type": "AIMessageChunk", "content": "", "usage_metadata": null,
            "tool_calls": [{"name": "f", "args": {}, "id": "c", "type": "tool_call"}],
            "tool_call_chunks": [{"name": "f", "args": "{}", "id": "c", "index": 0, "type": "tool_call_chunk"}],
            "chunk_position": "last"}))
        .unwrap();
        assert_eq!(
            out(&message),
            json!({"type": "ai", "content": "", "id": null,
                   "tool_calls": [{"name": "f", "args": {}, "id": "c", "type": "tool_call"}],
                   "usage_metadata": null})
        );
        // A chunk type is not an OpenAI role.
        let err = read(json!({"role": "AIMessageChunk", "content": "x"})).unwrap_err();
        assert!(err.contains("unknown message role"), "{err}");
    }

    #[test]
    fn tool_calls_accept_both_shapes_and_write_langchain_shape() {
        let call: ToolCall = serde_json::from_value(
            json!({"name": "f", "args": {"a": 1}, "id": null, "type": "tool_call"}),
        )
        .unwrap();
        assert_eq!(call, ToolCall::new("f", json!({"a": 1})));
        assert_eq!(
            serde_json::to_value(&call).unwrap(),
            json!({"name": "f", "args": {"a": 1}, "id": null, "type": "tool_call"})
        );
        let call: ToolCall = serde_json::from_value(json!({"id": "c", "type": "function",
            "function": {"name": "g", "arguments": {"b": 2}}}))
        .unwrap();
        assert_eq!(call, ToolCall::new("g", json!({"b": 2})).with_id("c"));
        let call: ToolCall = serde_json::from_value(json!({"name": "h"})).unwrap();
        assert_eq!(call.args, json!({}));
    }

    #[test]
    fn content_json() {
        let content: Content = serde_json::from_value(json!(null)).unwrap();
        assert_eq!(content, "");
        let content: Content =
            serde_json::from_value(json!(["a", {"type": "text", "text": "b"}])).unwrap();
        assert_eq!(content.text(), "ab");
        assert_eq!(
            serde_json::to_value(&content).unwrap(),
            json!(["a", {"type": "text", "text": "b"}])
        );
        assert!(serde_json::from_value::<Content>(json!(1)).is_err());
    }

    #[test]
    fn extra_keys_never_shadow_fields_on_output() {
        let mut message = Message::human("x");
        message.extra.insert("type".into(), json!("ai"));
        assert_eq!(
            out(&message),
            json!({"type": "human", "content": "x", "id": null})
        );
    }
}
