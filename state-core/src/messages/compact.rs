//! Messages in formats that are not human-readable (postcard, bincode,
//! MessagePack): a fixed layout. Such formats cannot be asked "what shape
//! is this?", which reading LangChain's JSON shapes needs, so a message is
//! written field by field in one order; the JSON values inside it (tool
//! arguments, content blocks, extra keys) travel as JSON text, since
//! `serde_json::Value` cannot be read without asking either.

use super::Content;
use super::message::{Message, ToolCall, is_reserved_key};
use super::tag;
use serde::de::{self, Deserializer};
use serde::ser::{self, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A message as written.
#[derive(Serialize)]
struct MessageOut<'a> {
    kind: &'static str,
    content: ContentOut<'a>,
    id: Option<&'a str>,
    role: Option<&'a str>,
    name: Option<&'a str>,
    tool_calls: Vec<ToolCallOut<'a>>,
    tool_call_id: Option<&'a str>,
    /// The extra keys, as a JSON object's text; `None` when there are none.
    extra: Option<String>,
}

/// A message as read: the same fields, owned.
#[derive(Deserialize)]
struct MessageIn {
    kind: String,
    content: ContentIn,
    id: Option<String>,
    role: Option<String>,
    name: Option<String>,
    tool_calls: Vec<ToolCallIn>,
    tool_call_id: Option<String>,
    extra: Option<String>,
}

/// Variant order is the layout: `ContentIn` must list the same ones.
#[derive(Serialize)]
enum ContentOut<'a> {
    Text(&'a str),
    Blocks(String),
}

#[derive(Deserialize)]
enum ContentIn {
    Text(String),
    Blocks(String),
}

#[derive(Serialize)]
struct ToolCallOut<'a> {
    id: Option<&'a str>,
    name: &'a str,
    args: String,
}

#[derive(Deserialize)]
struct ToolCallIn {
    id: Option<String>,
    name: String,
    args: String,
}

fn json_text<T: Serialize + ?Sized, E: ser::Error>(value: &T) -> Result<String, E> {
    serde_json::to_string(value).map_err(E::custom)
}

fn from_json_text<T: serde::de::DeserializeOwned, E: de::Error>(
    text: &str,
    what: &str,
) -> Result<T, E> {
    serde_json::from_str(text).map_err(|e| E::custom(format_args!("a message's {what}: {e}")))
}

fn content_out<E: ser::Error>(content: &Content) -> Result<ContentOut<'_>, E> {
    Ok(match content {
        Content::Text(text) => ContentOut::Text(text),
        Content::Blocks(blocks) => ContentOut::Blocks(json_text(blocks)?),
    })
}

fn content_in<E: de::Error>(content: ContentIn) -> Result<Content, E> {
    Ok(match content {
        ContentIn::Text(text) => Content::Text(text),
        ContentIn::Blocks(text) => Content::Blocks(from_json_text(&text, "content blocks")?),
    })
}

fn tool_call_out<E: ser::Error>(call: &ToolCall) -> Result<ToolCallOut<'_>, E> {
    Ok(ToolCallOut {
        id: call.id.as_deref(),
        name: &call.name,
        args: json_text(&call.args)?,
    })
}

fn tool_call_in<E: de::Error>(call: ToolCallIn) -> Result<ToolCall, E> {
    Ok(ToolCall {
        id: call.id,
        name: call.name,
        args: from_json_text(&call.args, "tool call arguments")?,
    })
}

/// A message's extra keys but the reserved ones, as a JSON object, read
/// in place (no copy of the keys or values).
struct Extras<'a>(&'a Map<String, Value>);

impl Serialize for Extras<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().filter(|(key, _)| !is_reserved_key(key)))
    }
}

pub(super) fn serialize_message<S: Serializer>(message: &Message, s: S) -> Result<S::Ok, S::Error> {
    let has_extras = message.extra.keys().any(|key| !is_reserved_key(key));
    MessageOut {
        kind: message.kind.as_str(),
        content: content_out(&message.content)?,
        id: message.id.as_deref(),
        role: message.role.as_deref(),
        name: message.name.as_deref(),
        tool_calls: message
            .tool_calls
            .iter()
            .map(tool_call_out)
            .collect::<Result<_, _>>()?,
        tool_call_id: message.tool_call_id.as_deref(),
        extra: if has_extras {
            Some(json_text(&Extras(&message.extra))?)
        } else {
            None
        },
    }
    .serialize(s)
}

pub(super) fn deserialize_message<'de, D: Deserializer<'de>>(d: D) -> Result<Message, D::Error> {
    let wire = MessageIn::deserialize(d)?;
    let kind = match tag::from_type(&wire.kind) {
        Some(tag) if !tag.chunk && !tag.developer && tag.kind.as_str() == wire.kind => tag.kind,
        _ => {
            return Err(de::Error::custom(format_args!(
                "a message's kind must be one of \"human\", \"ai\", \"system\", \"tool\", \"function\", \"chat\" or \"remove\", got {:?}",
                wire.kind
            )));
        }
    };
    let extra = match wire.extra {
        Some(text) => from_json_text(&text, "extra keys")?,
        None => Map::new(),
    };
    let mut message = Message::bare(kind, content_in(wire.content)?);
    message.id = wire.id;
    message.role = wire.role;
    message.name = wire.name;
    message.tool_calls = wire
        .tool_calls
        .into_iter()
        .map(tool_call_in)
        .collect::<Result<_, _>>()?;
    message.tool_call_id = wire.tool_call_id;
    message.extra = extra;
    Ok(message)
}

pub(super) fn serialize_content<S: Serializer>(content: &Content, s: S) -> Result<S::Ok, S::Error> {
    content_out(content)?.serialize(s)
}

pub(super) fn deserialize_content<'de, D: Deserializer<'de>>(d: D) -> Result<Content, D::Error> {
    content_in(ContentIn::deserialize(d)?)
}

pub(super) fn serialize_tool_call<S: Serializer>(call: &ToolCall, s: S) -> Result<S::Ok, S::Error> {
    tool_call_out(call)?.serialize(s)
}

pub(super) fn deserialize_tool_call<'de, D: Deserializer<'de>>(d: D) -> Result<ToolCall, D::Error> {
    tool_call_in(ToolCallIn::deserialize(d)?)
}

/// The kind is written by name, so that adding a kind never shifts the
/// others: checked here against every kind.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::MessageKind;

    #[test]
    fn every_kind_reads_back_by_its_name() {
        for kind in [
            MessageKind::Human,
            MessageKind::Ai,
            MessageKind::System,
            MessageKind::Tool,
            MessageKind::Function,
            MessageKind::Chat,
            MessageKind::Remove,
        ] {
            let tag = tag::from_type(kind.as_str()).unwrap();
            assert_eq!(tag.kind, kind);
            assert!(!tag.chunk && !tag.developer);
        }
    }
}
