//! JSON Schemas for messages (feature `schemars`), so a state holding a
//! history can describe itself with `#[state(json_schema)]`.

use super::{Message, Messages};
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use std::borrow::Cow;

/// The LangChain shape written by `Message`'s `Serialize`. Input is more
/// lenient (chunk types, OpenAI `role` objects, LangChain's `{type, data}`
/// and constructor wrappers, strings, `[role, content]` pairs), which
/// `anyOf` lists too.
impl JsonSchema for Message {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("Message")
    }

    fn json_schema(_generator: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A chat message in LangChain's shape; OpenAI's role shape, LangChain's {type, data} and {lc, type: constructor} wrappers, a bare string (a human message) and a [role, content] pair are accepted too.",
            "anyOf": [
                {
                    "type": "object",
                    "properties": {
                        "type": {"enum": [
                            "human", "ai", "system", "tool", "function", "chat", "remove",
                            "HumanMessageChunk", "AIMessageChunk", "SystemMessageChunk",
                            "ToolMessageChunk", "FunctionMessageChunk", "ChatMessageChunk"
                        ]},
                        "content": {"anyOf": [{"type": "string"}, {"type": "array"}, {"type": "null"}]},
                        "id": {"type": ["string", "number", "null"]},
                        "role": {"type": "string", "description": "A chat message's free role."},
                        "name": {"type": ["string", "null"]},
                        "tool_calls": {"type": "array"},
                        "tool_call_id": {"type": ["string", "null"]}
                    },
                    "required": ["type"]
                },
                {
                    "type": "object",
                    "properties": {
                        "role": {"enum": ["user", "assistant", "system", "developer", "tool", "function", "human", "ai"]},
                        "content": {"anyOf": [{"type": "string"}, {"type": "array"}, {"type": "null"}]}
                    },
                    "required": ["role"]
                },
                {
                    "type": "object",
                    "properties": {"type": {"type": "string"}, "data": {"type": "object"}},
                    "required": ["type", "data"]
                },
                {
                    "type": "object",
                    "properties": {
                        "lc": {"const": 1},
                        "type": {"const": "constructor"},
                        "id": {"type": "array", "items": {"type": "string"}},
                        "kwargs": {"type": "object"}
                    },
                    "required": ["lc", "type", "id"]
                },
                {"type": "string"},
                {"type": "array", "minItems": 2, "maxItems": 2}
            ]
        })
    }
}

/// A JSON array of messages.
impl JsonSchema for Messages {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("Messages")
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let item = generator.subschema_for::<Message>();
        json_schema!({
            "type": "array",
            "items": item,
        })
    }
}
