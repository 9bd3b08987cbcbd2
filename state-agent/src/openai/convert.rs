//! The OpenAI Chat Completions adapter as pure functions, as
//! `langchain-openai` converts (`_convert_message_to_dict`,
//! `_create_chat_result`, `_convert_chunk_to_generation_chunk`), and pinned
//! against it by vectors it wrote from the same provider JSON:
//!
//! - [`to_wire`]: messages, tools and options to the request body;
//!   [`message_to_wire`] one message.
//! - [`from_response`]: a [`ChatCompletion`] to the AI message.
//! - [`StreamState`]: each [`ChatCompletionChunk`] of a stream to a
//!   [`MessageChunk`]; the chunks merge into the reply.
//!
//! ```
//! use serde_json::json;
//! use state_agent::openai::convert::{StreamState, from_response};
//! use state_agent::openai::wire::{ChatCompletion, ChatCompletionChunk};
//! use state_agent::MessageChunk;
//!
//! let response: ChatCompletion = serde_json::from_value(json!({
//!     "id": "chatcmpl-1", "model": "gpt-4o-mini",
//!     "choices": [{"index": 0, "finish_reason": "stop",
//!                  "message": {"role": "assistant", "content": "Hi!"}}],
//!     "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}
//! }))
//! .unwrap();
//! let reply = from_response(&response).unwrap();
//! assert_eq!(reply.text(), "Hi!");
//! assert_eq!(reply.extra()["usage_metadata"]["total_tokens"], 7);
//!
//! let mut state = StreamState::new();
//! let mut merged = MessageChunk::default();
//! for data in [
//!     json!({"choices": [{"delta": {"role": "assistant", "content": "H"}}]}),
//!     json!({"choices": [{"delta": {"content": "i!"}, "finish_reason": "stop"}]}),
//! ] {
//!     let chunk: ChatCompletionChunk = serde_json::from_value(data).unwrap();
//!     if let Some(piece) = state.on_chunk(chunk) {
//!         merged += piece;
//!     }
//! }
//! assert_eq!(merged.into_message().text(), "Hi!");
//! ```

use super::wire::{ChatCompletion, ChatCompletionChunk, WireToolCall};
use crate::chunk::{MessageChunk, ToolCallChunk, Usage};
use crate::error::{ModelError, ModelErrorKind};
use crate::tool_spec::{ToolChoice, ToolSpec};
use serde_json::{Map, Value, json};
use state_core::{Content, Message, MessageKind, ToolCall};
use std::collections::HashMap;

/// The provider's name, as errors and `response_metadata` say it.
pub const PROVIDER: &str = "openai";

/// The request's options besides messages and tools.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct WireOptions {
    /// The model's name.
    pub model: String,
    /// The sampling temperature, when set.
    pub temperature: Option<f64>,
    /// The most tokens to write, sent as `max_completion_tokens` (as
    /// `ChatOpenAI` does since OpenAI deprecated `max_tokens`).
    pub max_tokens: Option<u32>,
    /// Whether the reply streams.
    pub stream: bool,
    /// Whether a stream ends with the usage (`stream_options.include_usage`).
    pub stream_usage: bool,
}

impl WireOptions {
    /// Options for `model`, nothing else set.
    pub fn new(model: impl Into<String>) -> WireOptions {
        WireOptions {
            model: model.into(),
            ..WireOptions::default()
        }
    }
}

/// The request body of `POST /chat/completions`: `model`, `stream`, the
/// options set, `messages` ([`message_to_wire`] each), and `tools` and
/// `tool_choice` when tools are bound.
///
/// ```
/// use serde_json::json;
/// use state_agent::openai::convert::{WireOptions, to_wire};
/// use state_agent::{ToolChoice, ToolSpec};
/// use state_core::Message;
///
/// let weather = ToolSpec::new("weather", "The weather.", json!({"type": "object"}));
/// let body = to_wire(
///     &[Message::system("Be brief."), Message::human("Oslo?")],
///     &[weather],
///     Some(&ToolChoice::Required),
///     &WireOptions::new("gpt-4o-mini"),
/// );
/// assert_eq!(body["messages"][0], json!({"content": "Be brief.", "role": "system"}));
/// assert_eq!(body["tools"][0]["function"]["name"], "weather");
/// assert_eq!(body["tool_choice"], "required");
/// ```
pub fn to_wire(
    messages: &[Message],
    tools: &[ToolSpec],
    tool_choice: Option<&ToolChoice>,
    options: &WireOptions,
) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(options.model));
    body.insert("stream".into(), json!(options.stream));
    if let Some(t) = options.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(n) = options.max_tokens {
        body.insert("max_completion_tokens".into(), json!(n));
    }
    if options.stream && options.stream_usage {
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    body.insert(
        "messages".into(),
        Value::Array(messages.iter().map(message_to_wire).collect()),
    );
    if !tools.is_empty() {
        body.insert(
            "tools".into(),
            Value::Array(tools.iter().map(tool_to_wire).collect()),
        );
    }
    if let Some(choice) = tool_choice {
        body.insert("tool_choice".into(), tool_choice_to_wire(choice));
    }
    Value::Object(body)
}

/// A tool as OpenAI takes it: `{"type": "function", "function": {"name",
/// "description", "parameters"}}` (no description when it has none).
///
/// ```
/// use serde_json::json;
/// use state_agent::ToolSpec;
/// use state_agent::openai::convert::tool_to_wire;
///
/// let tool = ToolSpec::new("now", "", json!({"type": "object"}));
/// assert_eq!(
///     tool_to_wire(&tool),
///     json!({"type": "function", "function": {"name": "now", "parameters": {"type": "object"}}})
/// );
/// ```
pub fn tool_to_wire(tool: &ToolSpec) -> Value {
    let mut function = Map::new();
    function.insert("name".into(), json!(tool.name));
    if !tool.description.is_empty() {
        function.insert("description".into(), json!(tool.description));
    }
    function.insert("parameters".into(), tool.parameters.clone());
    json!({"type": "function", "function": function})
}

/// A tool choice as OpenAI takes it (LangChain's `bind_tools`): `"auto"`,
/// `"required"` (LangChain's `"any"`), `"none"`, or `{"type": "function",
/// "function": {"name"}}`.
///
/// ```
/// use serde_json::json;
/// use state_agent::ToolChoice;
/// use state_agent::openai::convert::tool_choice_to_wire;
///
/// assert_eq!(tool_choice_to_wire(&ToolChoice::Required), json!("required"));
/// assert_eq!(
///     tool_choice_to_wire(&ToolChoice::Tool("get_weather".into())),
///     json!({"type": "function", "function": {"name": "get_weather"}})
/// );
/// ```
pub fn tool_choice_to_wire(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::Required => json!("required"),
        ToolChoice::None => json!("none"),
        ToolChoice::Tool(name) => json!({"type": "function", "function": {"name": name}}),
    }
}

/// One message as OpenAI takes it (LangChain's `_convert_message_to_dict`):
///
/// - `role`: `user`, `assistant`, `system` (or `developer` when LangChain
///   marked it, `additional_kwargs.__openai_role__`), `tool`, `function`, or
///   a chat message's own role;
/// - `content`: text as is; blocks with LangChain's standard image, audio and
///   file blocks (by `url` or `base64`) and Anthropic's image blocks made
///   OpenAI's (`image_url`, `input_audio`, `file`), reasoning and tool-use
///   blocks dropped, and others as they are;
/// - `name` (from the message or `additional_kwargs.name`), except on a tool
///   message, which has only `role`, `tool_call_id` and `content`;
/// - an AI message's tool calls (and invalid ones) as `{"type": "function",
///   "id", "function": {"name", "arguments": <JSON text>}}`, its content
///   `null` when empty.
///
/// ```
/// use serde_json::json;
/// use state_agent::openai::convert::message_to_wire;
/// use state_core::{Message, ToolCall};
///
/// let call = Message::ai("").with_tool_calls([ToolCall::new("add", json!({"a": 2})).with_id("c1")]);
/// assert_eq!(
///     message_to_wire(&call),
///     json!({"content": null, "role": "assistant", "tool_calls": [
///         {"type": "function", "id": "c1", "function": {"name": "add", "arguments": "{\"a\": 2}"}}
///     ]})
/// );
/// assert_eq!(
///     message_to_wire(&Message::tool("4", "c1").with_name("add")),
///     json!({"content": "4", "role": "tool", "tool_call_id": "c1"})
/// );
/// ```
pub fn message_to_wire(message: &Message) -> Value {
    let extra = message.extra();
    let kwargs = extra.get("additional_kwargs").and_then(Value::as_object);
    let kwarg = |key: &str| kwargs.and_then(|k| k.get(key));
    let mut out = Map::new();
    out.insert(
        "content".into(),
        content_to_wire(message.content(), message.kind()),
    );
    let name = message
        .name()
        .map(|n| json!(n))
        .or_else(|| kwarg("name").filter(|n| !n.is_null()).cloned());
    if let Some(name) = name {
        out.insert("name".into(), name);
    }
    match message.kind() {
        MessageKind::Chat => {
            out.insert("role".into(), json!(message.role().unwrap_or_default()));
        }
        MessageKind::Human => {
            out.insert("role".into(), json!("user"));
        }
        MessageKind::Ai => {
            out.insert("role".into(), json!("assistant"));
            let invalid = extra
                .get("invalid_tool_calls")
                .and_then(Value::as_array)
                .filter(|calls| !calls.is_empty());
            if !message.tool_calls().is_empty() || invalid.is_some() {
                let mut calls: Vec<Value> =
                    message.tool_calls().iter().map(tool_call_to_wire).collect();
                for call in invalid.into_iter().flatten() {
                    calls.push(json!({
                        "type": "function",
                        "id": call.get("id").cloned().unwrap_or(Value::Null),
                        "function": {
                            "name": call.get("name").cloned().unwrap_or(Value::Null),
                            "arguments": call.get("args").cloned().unwrap_or(Value::Null),
                        },
                    }));
                }
                out.insert("tool_calls".into(), Value::Array(calls));
            } else if let Some(Value::Array(calls)) = kwarg("tool_calls") {
                let calls = calls
                    .iter()
                    .map(|call| match call {
                        Value::Object(fields) => Value::Object(
                            fields
                                .iter()
                                .filter(|(k, _)| matches!(k.as_str(), "id" | "type" | "function"))
                                .map(|(k, v)| (k.clone(), v.clone()))
                                .collect(),
                        ),
                        other => other.clone(),
                    })
                    .collect();
                out.insert("tool_calls".into(), Value::Array(calls));
            } else if let Some(function_call) = kwarg("function_call") {
                out.insert("function_call".into(), function_call.clone());
            }
            if out.contains_key("tool_calls") || out.contains_key("function_call") {
                let content = &out["content"];
                if is_falsy(content) {
                    out.insert("content".into(), Value::Null);
                }
            }
            let audio_id = message.content().blocks().and_then(|blocks| {
                blocks.iter().rev().find_map(|b| {
                    (b.get("type").and_then(Value::as_str) == Some("audio"))
                        .then(|| b.get("id").filter(|id| !is_falsy(id)))
                        .flatten()
                })
            });
            let audio = match (audio_id, kwarg("audio")) {
                (Some(id), _) => Some(json!({"id": id})),
                (None, Some(raw)) if !is_falsy(raw) => Some(match raw.get("id") {
                    Some(id) => json!({"id": id}),
                    None => raw.clone(),
                }),
                _ => None,
            };
            if let Some(audio) = audio {
                out.insert("audio".into(), audio);
            }
        }
        MessageKind::System => {
            let role = kwarg("__openai_role__").cloned().unwrap_or(json!("system"));
            out.insert("role".into(), role);
        }
        MessageKind::Function => {
            out.insert("role".into(), json!("function"));
        }
        MessageKind::Tool | MessageKind::Remove | _ => {
            let content = sanitize_tool_content(out.remove("content").unwrap_or(Value::Null));
            let mut tool = Map::new();
            tool.insert("content".into(), content);
            tool.insert("role".into(), json!("tool"));
            tool.insert(
                "tool_call_id".into(),
                json!(message.tool_call_id().unwrap_or_default()),
            );
            return Value::Object(tool);
        }
    }
    Value::Object(out)
}

/// A tool call as OpenAI takes it; the arguments as Python's `json.dumps`
/// writes them (`", "` and `": "`), as LangChain sends them.
fn tool_call_to_wire(call: &ToolCall) -> Value {
    json!({
        "type": "function",
        "id": call.id,
        "function": {"name": call.name, "arguments": python_json(&call.args)},
    })
}

/// Python's truthiness of a JSON value.
fn is_falsy(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
    }
}

/// LangChain's `_format_message_content` for Chat Completions.
fn content_to_wire(content: &Content, kind: MessageKind) -> Value {
    let blocks = match content {
        Content::Text(text) => return json!(text),
        Content::Blocks(blocks) if blocks.is_empty() => return json!([]),
        Content::Blocks(blocks) => blocks,
    };
    let _ = kind;
    let mut out = Vec::with_capacity(blocks.len());
    for block in blocks {
        let Some(fields) = block.as_object() else {
            out.push(block.clone());
            continue;
        };
        let kind = fields.get("type").and_then(Value::as_str);
        if matches!(
            kind,
            Some(
                "tool_use"
                    | "thinking"
                    | "reasoning_content"
                    | "function_call"
                    | "code_interpreter_call"
            )
        ) {
            continue;
        }
        if is_data_block(fields) {
            let mut formatted = data_block_to_wire(fields);
            cache_breakpoint(fields, &mut formatted);
            out.push(formatted);
        } else if kind == Some("text")
            && fields.contains_key("text")
            && fields
                .get("extras")
                .and_then(Value::as_object)
                .is_some_and(|e| e.contains_key("prompt_cache_breakpoint"))
        {
            let mut formatted = json!({"type": "text", "text": fields["text"]});
            cache_breakpoint(fields, &mut formatted);
            out.push(formatted);
        } else if kind == Some("image") && fields.get("source").is_some_and(Value::is_object) {
            let source = &fields["source"];
            let field = |k: &str| source.get(k).filter(|v| !is_falsy(v));
            match source.get("type").and_then(Value::as_str) {
                Some("base64") if field("media_type").is_some() && field("data").is_some() => {
                    let url = format!(
                        "data:{};base64,{}",
                        plain(&source["media_type"]),
                        plain(&source["data"])
                    );
                    out.push(json!({"type": "image_url", "image_url": {"url": url}}));
                }
                Some("url") if field("url").is_some() => {
                    out.push(json!({"type": "image_url", "image_url": {"url": source["url"]}}));
                }
                _ => {}
            }
        } else {
            out.push(block.clone());
        }
    }
    Value::Array(out)
}

/// A JSON value as Python's `str()` shows a string (other values as JSON).
fn plain(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn cache_breakpoint(source: &Map<String, Value>, formatted: &mut Value) {
    let value = source.get("prompt_cache_breakpoint").or_else(|| {
        source
            .get("extras")
            .and_then(Value::as_object)
            .and_then(|e| e.get("prompt_cache_breakpoint"))
    });
    if let (Some(value), Some(formatted)) = (value, formatted.as_object_mut()) {
        formatted.insert("prompt_cache_breakpoint".into(), value.clone());
    }
}

/// LangChain's `is_data_content_block`: a standard (v0 or v1) multimodal
/// block.
fn is_data_block(block: &Map<String, Value>) -> bool {
    let Some(kind) = block.get("type").and_then(Value::as_str) else {
        return false;
    };
    if !matches!(kind, "image" | "video" | "audio" | "text-plain" | "file") {
        return false;
    }
    if ["url", "base64", "file_id", "text"]
        .iter()
        .any(|k| block.contains_key(*k))
    {
        return true;
    }
    match block.get("source_type").and_then(Value::as_str) {
        Some("url") => block.contains_key("url"),
        Some("base64") => block.contains_key("data"),
        Some("id") => block.contains_key("id"),
        Some("text") => block.contains_key("url"),
        _ => false,
    }
}

/// LangChain's `convert_to_openai_data_block` for Chat Completions. A block
/// it rejects (a video, a file by URL) goes as it is: the server says what
/// it makes of it.
fn data_block_to_wire(block: &Map<String, Value>) -> Value {
    let get = |k: &str| block.get(k);
    let v0 = block.contains_key("source_type");
    let base64 = || {
        if v0 {
            get("data").or(get("base64"))
        } else {
            get("base64")
        }
    };
    let unchanged = || Value::Object(block.clone());
    match get("type").and_then(Value::as_str) {
        Some("image") => {
            if let Some(url) = get("url") {
                json!({"type": "image_url", "image_url": {"url": url}})
            } else if get("base64").is_some()
                || get("source_type").and_then(Value::as_str) == Some("base64")
            {
                match (get("mime_type"), get("data").or(get("base64"))) {
                    (Some(mime), Some(data)) => json!({"type": "image_url", "image_url": {
                        "url": format!("data:{};base64,{}", plain(mime), plain(data))
                    }}),
                    _ => unchanged(),
                }
            } else {
                unchanged()
            }
        }
        Some("file") => {
            if get("source_type").and_then(Value::as_str) == Some("base64")
                || get("base64").is_some()
            {
                let (Some(mime), Some(data)) = (get("mime_type"), base64()) else {
                    return unchanged();
                };
                let mut file = Map::new();
                file.insert(
                    "file_data".into(),
                    json!(format!("data:{};base64,{}", plain(mime), plain(data))),
                );
                let filename = get("filename")
                    .filter(|f| !is_falsy(f))
                    .or_else(|| {
                        get("extras")
                            .filter(|e| !is_falsy(e))
                            .and_then(|e| e.get("filename"))
                    })
                    .or_else(|| {
                        get("metadata")
                            .filter(|e| !is_falsy(e))
                            .and_then(|e| e.get("filename"))
                    });
                file.insert(
                    "filename".into(),
                    filename.cloned().unwrap_or(json!("LC_AUTOGENERATED")),
                );
                json!({"type": "file", "file": file})
            } else if get("source_type").and_then(Value::as_str) == Some("id")
                || get("file_id").is_some()
            {
                let id = if v0 { get("id") } else { get("file_id") };
                json!({"type": "file", "file": {"file_id": id}})
            } else {
                unchanged()
            }
        }
        Some("audio") => {
            if get("base64").is_some()
                || get("source_type").and_then(Value::as_str) == Some("base64")
            {
                let (Some(mime), Some(data)) = (get("mime_type"), base64()) else {
                    return unchanged();
                };
                let mime = plain(mime);
                let format = mime.rsplit('/').next().unwrap_or_default().to_owned();
                json!({"type": "input_audio", "input_audio": {"data": data, "format": format}})
            } else {
                unchanged()
            }
        }
        _ => unchanged(),
    }
}

/// A tool message's content blocks: text blocks keep only `type`, `text`
/// (and a cache breakpoint).
fn sanitize_tool_content(content: Value) -> Value {
    let Value::Array(blocks) = content else {
        return content;
    };
    Value::Array(
        blocks
            .into_iter()
            .map(|block| match &block {
                Value::Object(f)
                    if f.get("type").and_then(Value::as_str) == Some("text")
                        && f.contains_key("text") =>
                {
                    let mut clean = json!({"type": "text", "text": f["text"]});
                    if let Some(b) = f.get("prompt_cache_breakpoint") {
                        clean["prompt_cache_breakpoint"] = b.clone();
                    }
                    clean
                }
                _ => block,
            })
            .collect(),
    )
}

/// JSON text as Python's `json.dumps(value, ensure_ascii=False)` writes it:
/// `", "` between items and `": "` after keys.
///
/// ```
/// use serde_json::json;
/// use state_agent::openai::convert::python_json;
///
/// assert_eq!(python_json(&json!({"city": "Oslo", "days": [1, 2]})), r#"{"city": "Oslo", "days": [1, 2]}"#);
/// ```
pub fn python_json(value: &Value) -> String {
    struct PythonFormatter;
    impl serde_json::ser::Formatter for PythonFormatter {
        fn begin_array_value<W: ?Sized + std::io::Write>(
            &mut self,
            writer: &mut W,
            first: bool,
        ) -> std::io::Result<()> {
            if first {
                Ok(())
            } else {
                writer.write_all(b", ")
            }
        }
        fn begin_object_key<W: ?Sized + std::io::Write>(
            &mut self,
            writer: &mut W,
            first: bool,
        ) -> std::io::Result<()> {
            if first {
                Ok(())
            } else {
                writer.write_all(b", ")
            }
        }
        fn begin_object_value<W: ?Sized + std::io::Write>(
            &mut self,
            writer: &mut W,
        ) -> std::io::Result<()> {
            writer.write_all(b": ")
        }
    }
    let mut out = Vec::new();
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, PythonFormatter);
    serde::Serialize::serialize(value, &mut serializer).expect("a JSON value serializes");
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

/// The reply in a chat completion (its first choice) as LangChain makes it
/// (`_create_chat_result`): an AI message with its content (`null` becomes
/// `""`), name, tool calls (a call whose arguments are not JSON goes to
/// `invalid_tool_calls`, with the error), `additional_kwargs` (`refusal`,
/// and `audio` and a legacy `function_call` when given),
/// `usage_metadata`, and `response_metadata` (`token_usage`,
/// `model_provider`, `model_name`, `system_fingerprint`, `id`,
/// `service_tier`, `finish_reason`, `logprobs`). A tool call without an id
/// gets one (`call_<uuid>`), so its answer can name it.
///
/// An answer with an `error`, or without choices, is an error.
pub fn from_response(response: &ChatCompletion) -> Result<Message, ModelError> {
    if let Some(error) = response.error.as_ref().filter(|e| !is_falsy(e)) {
        let message = error
            .get("message")
            .and_then(Value::as_str)
            .map_or_else(|| error.to_string(), str::to_owned);
        return Err(ModelError::new(PROVIDER, ModelErrorKind::Server).with_message(message));
    }
    let Some(choice) = response.choices.as_ref().and_then(|c| c.first()) else {
        return Err(ModelError::new(PROVIDER, ModelErrorKind::Decode)
            .with_message("the answer has no choices"));
    };
    let wire = choice.message.clone().unwrap_or_default();
    let content = match wire.content {
        None | Some(Value::Null) => Content::Text(String::new()),
        Some(Value::String(text)) => Content::Text(text),
        Some(Value::Array(blocks)) => Content::Blocks(blocks),
        Some(other) if is_falsy(&other) => Content::Text(String::new()),
        Some(other) => Content::Text(other.to_string()),
    };
    let mut calls = Vec::new();
    let mut invalid = Vec::new();
    for raw in wire.tool_calls.iter().flatten() {
        let Some(function) = &raw.function else {
            continue;
        };
        let name = function.name.clone().unwrap_or_default();
        let id = raw
            .id
            .clone()
            .filter(|id| !id.is_empty())
            .unwrap_or_else(mint_call_id);
        let arguments = function.arguments.as_deref().unwrap_or_default();
        if arguments.is_empty() {
            calls.push(ToolCall::new(name, json!({})).with_id(id));
            continue;
        }
        match serde_json::from_str::<Value>(arguments) {
            Ok(args) => {
                let args = if is_falsy(&args) { json!({}) } else { args };
                calls.push(ToolCall::new(name, args).with_id(id));
            }
            Err(e) => invalid.push(json!({
                "name": function.name, "args": function.arguments, "id": id,
                "error": format!(
                    "Function {name} arguments:\n\n{arguments}\n\nare not valid JSON. {e}"
                ),
                "type": "invalid_tool_call",
            })),
        }
    }
    let mut kwargs = Map::new();
    if let Some(call) = wire.function_call.filter(|f| !is_falsy(f)) {
        kwargs.insert("function_call".into(), call);
    }
    if let Some(audio) = wire.audio.filter(|a| !is_falsy(a)) {
        kwargs.insert("audio".into(), audio);
    }
    kwargs.insert("refusal".into(), wire.refusal.unwrap_or(Value::Null));

    let mut metadata = Map::new();
    metadata.insert(
        "token_usage".into(),
        response.usage.clone().unwrap_or(Value::Null),
    );
    metadata.insert("model_provider".into(), json!(PROVIDER));
    metadata.insert("model_name".into(), json!(response.model));
    metadata.insert(
        "system_fingerprint".into(),
        json!(response.system_fingerprint),
    );
    if let Some(id) = &response.id {
        metadata.insert("id".into(), json!(id));
    }
    if let Some(tier) = response.service_tier.as_ref().filter(|t| !t.is_empty()) {
        metadata.insert("service_tier".into(), json!(tier));
    }
    metadata.insert("finish_reason".into(), json!(choice.finish_reason));
    metadata.insert(
        "logprobs".into(),
        choice.logprobs.clone().unwrap_or(Value::Null),
    );

    let mut message = Message::ai(content).with_tool_calls(calls);
    if let Some(name) = wire.name {
        message = message.with_name(name);
    }
    message = message.with_extra("additional_kwargs", Value::Object(kwargs));
    if !invalid.is_empty() {
        message = message.with_extra("invalid_tool_calls", Value::Array(invalid));
    }
    if let Some(usage) = response.usage.as_ref().filter(|u| !is_falsy(u)) {
        let usage = usage_metadata(usage, response.service_tier.as_deref());
        message = message.with_extra(
            "usage_metadata",
            serde_json::to_value(usage).unwrap_or(Value::Null),
        );
    }
    Ok(message.with_extra("response_metadata", Value::Object(metadata)))
}

/// A tool call id for a server that sent none.
fn mint_call_id() -> String {
    format!("call_{}", uuid::Uuid::new_v4().simple())
}

/// OpenAI's `usage` as LangChain's usage (`_create_usage_metadata`):
/// `prompt_tokens` in, `completion_tokens` out; `cached_tokens` is
/// `cache_read`, `cache_write_tokens` `cache_creation`, `reasoning_tokens`
/// `reasoning`, `audio_tokens` `audio`; with the `priority` or `flex` service
/// tier, the keys take its prefix and the tier's own count is added.
///
/// ```
/// use serde_json::json;
/// use state_agent::openai::convert::usage_metadata;
///
/// let usage = usage_metadata(
///     &json!({"prompt_tokens": 10, "completion_tokens": 4, "total_tokens": 14,
///             "prompt_tokens_details": {"cached_tokens": 6}}),
///     None,
/// );
/// assert_eq!((usage.input_tokens, usage.output_tokens), (10, 4));
/// assert_eq!(usage.input_token_details["cache_read"], 6);
/// ```
pub fn usage_metadata(usage: &Value, service_tier: Option<&str>) -> Usage {
    let count = |v: Option<&Value>| v.and_then(Value::as_u64);
    let input = count(usage.get("prompt_tokens")).unwrap_or(0);
    let output = count(usage.get("completion_tokens")).unwrap_or(0);
    let total = count(usage.get("total_tokens")).unwrap_or(input + output);
    let tier = service_tier.filter(|t| matches!(*t, "priority" | "flex"));
    let prefix = tier.map(|t| format!("{t}_")).unwrap_or_default();
    let details = |key: &str| usage.get(key).filter(|d| d.is_object());
    let prompt = details("prompt_tokens_details");
    let completion = details("completion_tokens_details");
    let mut input_details = Map::new();
    let mut output_details = Map::new();
    let put = |into: &mut Map<String, Value>, key: String, v: Option<&Value>| {
        if let Some(v) = v.filter(|v| !v.is_null()) {
            into.insert(key, v.clone());
        }
    };
    put(
        &mut input_details,
        "audio".into(),
        prompt.and_then(|d| d.get("audio_tokens")),
    );
    put(
        &mut input_details,
        format!("{prefix}cache_read"),
        prompt.and_then(|d| d.get("cached_tokens")),
    );
    put(
        &mut input_details,
        format!("{prefix}cache_creation"),
        prompt.and_then(|d| d.get("cache_write_tokens")),
    );
    put(
        &mut output_details,
        "audio".into(),
        completion.and_then(|d| d.get("audio_tokens")),
    );
    put(
        &mut output_details,
        format!("{prefix}reasoning"),
        completion.and_then(|d| d.get("reasoning_tokens")),
    );
    if let Some(tier) = tier {
        let read = count(input_details.get(&format!("{prefix}cache_read"))).unwrap_or(0);
        let reasoning = count(output_details.get(&format!("{prefix}reasoning"))).unwrap_or(0);
        input_details.insert(tier.into(), json!(input.saturating_sub(read)));
        output_details.insert(tier.into(), json!(output.saturating_sub(reasoning)));
    }
    Usage {
        input_tokens: input,
        output_tokens: output,
        total_tokens: total,
        input_token_details: input_details,
        output_token_details: output_details,
    }
}

/// What a stream has shown so far: which tool calls (by the server's
/// index) have begun and under which id, so pieces without an id join their
/// call and a call the server gave no id gets one.
#[derive(Debug, Clone, Default)]
pub struct StreamState {
    /// Per index: the call's id and name.
    calls: HashMap<u64, (String, Option<String>)>,
    /// The index the last piece went to.
    last_index: Option<u64>,
}

impl StreamState {
    /// The state before the first chunk.
    pub fn new() -> StreamState {
        StreamState::default()
    }

    /// The [`MessageChunk`] one server-sent chunk makes (as LangChain's
    /// `_convert_chunk_to_generation_chunk`), or `None` for a chunk that adds
    /// nothing (a choice without a delta):
    ///
    /// - the delta's text; its tool-call pieces by their `index` (a piece
    ///   without an index continues the last call, or begins the next one
    ///   when it has an id or a name);
    /// - a call's first piece without an id gets one (`call_<uuid>`); a
    ///   piece that reuses an index under another id or tool name begins a
    ///   new call;
    /// - `response_metadata`: `model_provider`, and with the `finish_reason`
    ///   the `model_name`, `system_fingerprint` and `service_tier`;
    /// - `usage` (the last chunk when usage is asked for: no choices, only
    ///   `usage`) as LangChain's usage.
    pub fn on_chunk(&mut self, chunk: ChatCompletionChunk) -> Option<MessageChunk> {
        let usage = chunk
            .usage
            .as_ref()
            .filter(|u| !is_falsy(u))
            .map(|u| usage_metadata(u, chunk.service_tier.as_deref()));
        let Some(choice) = chunk.choices.into_iter().next() else {
            return Some(MessageChunk {
                content: Some(Content::Text(String::new())),
                usage,
                ..MessageChunk::default()
            });
        };
        let delta = choice.delta?;
        let mut out = MessageChunk {
            content: Some(Content::Text(delta.content.unwrap_or_default())),
            usage,
            ..MessageChunk::default()
        };
        for piece in delta.tool_calls.into_iter().flatten() {
            out.tool_call_chunks.push(self.tool_piece(piece));
        }
        let metadata = &mut out.response_metadata;
        if let Some(reason) = choice.finish_reason.filter(|r| !r.is_empty()) {
            metadata.insert("finish_reason".into(), json!(reason));
            let mut put = |key: &str, value: Option<String>| {
                if let Some(v) = value.filter(|v| !v.is_empty()) {
                    metadata.insert(key.into(), json!(v));
                }
            };
            put("model_name", chunk.model);
            put("system_fingerprint", chunk.system_fingerprint);
            put("service_tier", chunk.service_tier);
        }
        if let Some(logprobs) = choice.logprobs.filter(|l| !is_falsy(l)) {
            metadata.insert("logprobs".into(), logprobs);
        }
        metadata.insert("model_provider".into(), json!(PROVIDER));
        Some(out)
    }

    fn tool_piece(&mut self, piece: WireToolCall) -> ToolCallChunk {
        let function = piece.function.unwrap_or_default();
        let id = piece.id.filter(|id| !id.is_empty());
        let name = function.name.filter(|n| !n.is_empty());
        let index = match piece.index {
            Some(index) => index,
            None if id.is_some() || name.is_some() || self.last_index.is_none() => self
                .calls
                .keys()
                .max()
                .map_or(0, |max| max + 1)
                .max(self.last_index.map_or(0, |l| l + 1)),
            None => self.last_index.unwrap_or(0),
        };
        self.last_index = Some(index);
        let begins = match self.calls.get(&index) {
            None => true,
            Some((known, _)) if id.as_ref().is_some_and(|id| id != known) => true,
            Some((_, Some(known))) if name.as_ref().is_some_and(|n| n != known) => true,
            _ => false,
        };
        let id = if begins {
            let id = id.unwrap_or_else(mint_call_id);
            self.calls.insert(index, (id.clone(), name.clone()));
            Some(id)
        } else {
            id
        };
        ToolCallChunk {
            index: usize::try_from(index).ok(),
            id,
            name,
            args: function.arguments,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(state: &mut StreamState, calls: Value) -> Vec<ToolCallChunk> {
        let chunk: ChatCompletionChunk =
            serde_json::from_value(json!({"choices": [{"delta": {"tool_calls": calls}}]})).unwrap();
        state.on_chunk(chunk).unwrap().tool_call_chunks
    }

    #[test]
    fn tool_call_pieces_keep_their_call_and_get_ids_when_the_server_sends_none() {
        let mut state = StreamState::new();
        // No id: one is minted for the call's first piece only.
        let first = pieces(
            &mut state,
            json!([{"index": 0, "function": {"name": "f", "arguments": "{"}}]),
        );
        let minted = first[0].id.clone().unwrap();
        assert!(minted.starts_with("call_"));
        let more = pieces(
            &mut state,
            json!([{"index": 0, "function": {"arguments": "}"}}]),
        );
        assert_eq!(more[0].id, None);
        // The same index reused for another tool: a new call, a new id.
        let other = pieces(
            &mut state,
            json!([{"index": 0, "function": {"name": "g", "arguments": "{}"}}]),
        );
        assert_ne!(other[0].id.as_deref(), Some(&*minted));
        // No index: a piece with a name begins the next call; one without
        // continues the last.
        let next = pieces(
            &mut state,
            json!([{"id": "c9", "function": {"name": "h", "arguments": "{\"a\""}}]),
        );
        assert_eq!(
            (next[0].index, next[0].id.as_deref()),
            (Some(1), Some("c9"))
        );
        let rest = pieces(&mut state, json!([{"function": {"arguments": ": 1}"}}]));
        assert_eq!((rest[0].index, rest[0].id.as_deref()), (Some(1), None));
        let mut merged = MessageChunk::default();
        for piece in [first, more, other, next, rest] {
            merged += MessageChunk {
                tool_call_chunks: piece,
                ..MessageChunk::default()
            };
        }
        let message = merged.into_message();
        let calls: Vec<(&str, &Value)> = message
            .tool_calls()
            .iter()
            .map(|c| (c.name.as_str(), &c.args))
            .collect();
        assert_eq!(
            calls,
            [
                ("f", &json!({})),
                ("g", &json!({})),
                ("h", &json!({"a": 1}))
            ]
        );
    }

    #[test]
    fn a_choice_without_a_delta_adds_nothing_and_usage_comes_alone() {
        let mut state = StreamState::new();
        let none: ChatCompletionChunk =
            serde_json::from_value(json!({"choices": [{"delta": null}]})).unwrap();
        assert!(state.on_chunk(none).is_none());
        let usage: ChatCompletionChunk = serde_json::from_value(json!({
            "choices": null, "usage": {"prompt_tokens": 2, "completion_tokens": 1}
        }))
        .unwrap();
        let chunk = state.on_chunk(usage).unwrap();
        assert_eq!(chunk.usage.unwrap().total_tokens, 3);
        assert!(chunk.response_metadata.is_empty());
    }

    #[test]
    fn python_json_spaces_as_json_dumps() {
        assert_eq!(
            python_json(&json!({"a": [1, {"b": "ü"}], "c": null})),
            r#"{"a": [1, {"b": "ü"}], "c": null}"#
        );
    }

    #[test]
    fn an_answer_with_an_error_or_no_choices_is_an_error() {
        let error: ChatCompletion =
            serde_json::from_value(json!({"error": {"message": "model crashed"}})).unwrap();
        let err = from_response(&error).unwrap_err();
        assert_eq!(err.to_string(), "openai: server error: model crashed");
        let empty: ChatCompletion = serde_json::from_value(json!({"choices": null})).unwrap();
        assert_eq!(
            from_response(&empty).unwrap_err().kind(),
            ModelErrorKind::Decode
        );
    }
}
