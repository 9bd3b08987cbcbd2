//! Our request as the JSON body of Anthropic's `POST /v1/messages`, as
//! langchain-anthropic writes it (`_merge_messages`, `_format_messages`,
//! `bind_tools`): system messages hoisted to `system`, runs of tool results
//! and human messages merged into one user turn of blocks (`tool_result`
//! with `is_error`), tool calls as `tool_use` blocks, images in Anthropic's
//! `source` shape. Names are not sent (Anthropic has no place for them).
//! Pure functions: pinned against langchain-anthropic's own output in the
//! tests.

use crate::error::{ModelError, ModelErrorKind};
use crate::model::ModelRequest;
use crate::tool_spec::{ToolChoice, ToolSpec};
use serde_json::{Map, Value, json};
use state_core::{Content, Message, MessageKind, ToolCall};

/// What a request carries besides the conversation: the model's settings.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Settings {
    pub(crate) model: String,
    pub(crate) max_tokens: u32,
    pub(crate) temperature: Option<f64>,
}

/// The JSON body for `request` (`stream` asks for server-sent events).
pub(crate) fn request_body(
    settings: &Settings,
    request: &ModelRequest,
    stream: bool,
) -> Result<Value, ModelError> {
    let (system, messages) = format_messages(&request.messages)?;
    let mut body = Map::new();
    body.insert("model".into(), json!(settings.model));
    body.insert("max_tokens".into(), json!(settings.max_tokens));
    body.insert("messages".into(), Value::Array(messages));
    match system {
        Some(Value::Array(blocks)) if blocks.is_empty() => {}
        Some(system) => {
            body.insert("system".into(), system);
        }
        None => {}
    }
    if let Some(temperature) = settings.temperature {
        body.insert("temperature".into(), json!(temperature));
    }
    if !request.tools.is_empty() {
        body.insert(
            "tools".into(),
            request.tools.iter().map(tool).collect::<Vec<_>>().into(),
        );
    }
    if let Some(choice) = &request.tool_choice {
        body.insert("tool_choice".into(), tool_choice(choice));
    }
    if stream {
        body.insert("stream".into(), json!(true));
    }
    Ok(Value::Object(body))
}

/// Whether a streamed reply's text comes as plain strings
/// (langchain-anthropic's `coerce_content_to_string`): when no tools are
/// offered and no document asks for citations; else as blocks with their
/// `index`.
pub(crate) fn streams_plain_text(body: &Value) -> bool {
    let tools = body.get("tools").is_some();
    let cited_document = body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .any(|b| b["type"] == "document" && b["citations"]["enabled"] == true);
    !tools && !cited_document
}

/// A tool as Anthropic declares one (`convert_to_anthropic_tool`).
fn tool(spec: &ToolSpec) -> Value {
    let mut tool = Map::new();
    tool.insert("name".into(), json!(spec.name));
    tool.insert("input_schema".into(), spec.parameters.clone());
    if !spec.description.is_empty() {
        tool.insert("description".into(), json!(spec.description));
    }
    Value::Object(tool)
}

fn tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!({"type": "auto"}),
        ToolChoice::Required => json!({"type": "any"}),
        ToolChoice::None => json!({"type": "none"}),
        ToolChoice::Tool(name) => json!({"type": "tool", "name": name}),
    }
}

fn bad_request(message: impl Into<String>) -> ModelError {
    ModelError::new("anthropic", ModelErrorKind::BadRequest).with_message(message)
}

/// A message after `_merge_messages`: a role, its content, and an AI
/// message's tool calls.
struct Turn<'a> {
    role: Role,
    content: Content,
    message: Option<&'a Message>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    System,
    User,
    Assistant,
}

/// `_merge_messages`: tool results become user turns of `tool_result`
/// blocks, and consecutive system or user turns merge into one of blocks.
fn merge_messages(messages: &[Message]) -> Result<Vec<Turn<'_>>, ModelError> {
    let mut merged: Vec<Turn<'_>> = Vec::new();
    for message in messages {
        let turn = match message.kind() {
            MessageKind::System => Turn {
                role: Role::System,
                content: message.content().clone(),
                message: None,
            },
            MessageKind::Human => Turn {
                role: Role::User,
                content: message.content().clone(),
                message: None,
            },
            MessageKind::Ai => Turn {
                role: Role::Assistant,
                content: message.content().clone(),
                message: Some(message),
            },
            MessageKind::Tool => Turn {
                role: Role::User,
                content: tool_result(message),
                message: None,
            },
            MessageKind::Chat if message.role() == Some("user") => Turn {
                role: Role::User,
                content: message.content().clone(),
                message: None,
            },
            MessageKind::Chat if message.role() == Some("assistant") => Turn {
                role: Role::Assistant,
                content: message.content().clone(),
                message: Some(message),
            },
            kind => {
                return Err(bad_request(format!(
                    "Anthropic takes no {kind} messages{}",
                    message
                        .role()
                        .map(|r| format!(" (role {r:?})"))
                        .unwrap_or_default()
                )));
            }
        };
        match merged.last_mut() {
            Some(last) if last.role == turn.role && turn.role != Role::Assistant => {
                let mut blocks = as_blocks(std::mem::take(&mut last.content));
                blocks.extend(as_blocks(turn.content));
                last.content = Content::Blocks(blocks);
            }
            _ => merged.push(turn),
        }
    }
    Ok(merged)
}

/// A tool message as the content of a user turn: its `tool_result` block
/// (or its own blocks, when they are all `tool_result` blocks already).
fn tool_result(message: &Message) -> Content {
    if let Content::Blocks(blocks) = message.content()
        && !blocks.is_empty()
        && blocks.iter().all(|b| b["type"] == "tool_result")
    {
        return message.content().clone();
    }
    // Anthropic takes no cache_control inside a tool result's blocks: it
    // moves up to the tool_result.
    let mut cache_control = None;
    let content = match message.content() {
        Content::Text(text) => json!(text),
        Content::Blocks(blocks) => Value::Array(
            blocks
                .iter()
                .map(|block| {
                    let mut block = block.clone();
                    if let Some(fields) = block.as_object_mut()
                        && let Some(cc) = fields.remove("cache_control")
                    {
                        cache_control = Some(cc);
                    }
                    block
                })
                .collect(),
        ),
    };
    let mut result = json!({
        "type": "tool_result",
        "content": content,
        "tool_use_id": message.tool_call_id().unwrap_or_default(),
        "is_error": message.extra().get("status").and_then(Value::as_str) == Some("error"),
    });
    if let Some(cc) = cache_control.filter(|cc| !cc.is_null()) {
        result["cache_control"] = cc;
    }
    Content::Blocks(vec![result])
}

/// Content as blocks: text becomes one text block.
fn as_blocks(content: Content) -> Vec<Value> {
    match content {
        Content::Text(text) => vec![json!({"type": "text", "text": text})],
        Content::Blocks(blocks) => blocks,
    }
}

/// `_format_messages`: the `system` value and the `messages` array.
fn format_messages(messages: &[Message]) -> Result<(Option<Value>, Vec<Value>), ModelError> {
    let merged = merge_messages(messages)?;
    let last_non_system = merged.iter().rposition(|t| t.role != Role::System);
    let mut system = None;
    let mut formatted = Vec::new();
    for (i, turn) in merged.into_iter().enumerate() {
        if turn.role == Role::System {
            if i != 0 && system.is_some() {
                return Err(bad_request(
                    "Anthropic takes one system prompt: the system messages are not consecutive",
                ));
            }
            system = Some(system_content(&turn.content));
            continue;
        }
        let mut content = match &turn.content {
            Content::Text(text) => json!(text),
            Content::Blocks(blocks) => Value::Array(format_blocks(blocks, turn.message)?),
        };
        if let Some(message) = turn.message {
            add_tool_use_blocks(&mut content, message);
        }
        let last = Some(i) == last_non_system;
        if turn.role == Role::Assistant && last {
            // Anthropic refuses a final assistant turn ending in whitespace.
            trim_end(&mut content);
        }
        let empty = match &content {
            Value::String(text) => text.is_empty(),
            Value::Array(blocks) => blocks.is_empty(),
            _ => false,
        };
        if empty && turn.role == Role::Assistant && !last {
            // Anthropic refuses empty turns, but for a final assistant one.
            continue;
        }
        let role = if turn.role == Role::User {
            "user"
        } else {
            "assistant"
        };
        formatted.push(json!({"role": role, "content": content}));
    }
    Ok((system, formatted))
}

/// A system message's content: a string as is; blocks narrowed to text
/// blocks (Anthropic takes no other in `system`).
fn system_content(content: &Content) -> Value {
    match content {
        Content::Text(text) => json!(text),
        Content::Blocks(blocks) => Value::Array(
            blocks
                .iter()
                .filter_map(|block| match block {
                    Value::Object(_) if block["type"] == "text" => Some(text_block(block)),
                    Value::Object(_) => None,
                    other => Some(json!({"type": "text", "text": other})),
                })
                .collect(),
        ),
    }
}

/// A text block narrowed to the fields Anthropic takes.
fn text_block(block: &Value) -> Value {
    let mut narrowed = pick(block, &["type", "text", "cache_control", "citations"]);
    if let Some(Value::Array(citations)) = narrowed.get_mut("citations") {
        for citation in citations.iter_mut().filter_map(Value::as_object_mut) {
            if citation.get("file_id") == Some(&Value::Null) {
                citation.remove("file_id");
            }
        }
    }
    narrowed
}

/// The fields of `block` named in `keys`, in `block`'s order.
fn pick(block: &Value, keys: &[&str]) -> Value {
    let fields = block.as_object().into_iter().flatten();
    Value::Object(
        fields
            .filter(|(k, _)| keys.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    )
}

/// The blocks of one turn, each in Anthropic's shape.
fn format_blocks(blocks: &[Value], message: Option<&Message>) -> Result<Vec<Value>, ModelError> {
    let mut out = Vec::new();
    for block in blocks {
        let fields = match block {
            Value::String(text) => {
                out.push(json!({"type": "text", "text": text}));
                continue;
            }
            Value::Object(fields) => fields,
            other => {
                return Err(bad_request(format!(
                    "a content block must be a string or an object, not {other}"
                )));
            }
        };
        let Some(kind) = fields.get("type").and_then(Value::as_str) else {
            return Err(bad_request("a content block has no \"type\""));
        };
        match kind {
            // Other providers' reasoning and calls do not go to Anthropic.
            "reasoning" | "function_call" if !from_anthropic(message) => {}
            "image_url" => {
                let url = block["image_url"]["url"].as_str().unwrap_or_default();
                out.push(json!({"type": "image", "source": image_source(url)?}));
            }
            _ if is_data_block(fields) => out.push(data_block(fields)?),
            "tool_use" => out.push(tool_use_block(fields, message)),
            "server_tool_use" | "mcp_tool_use" => {
                let mut formatted = pick(
                    block,
                    &[
                        "type",
                        "id",
                        "input",
                        "name",
                        "server_name",
                        "cache_control",
                    ],
                );
                let streamed = fields.get("input") == Some(&json!({}));
                if let (true, Some(partial)) = (streamed, fields.get("partial_json"))
                    && let Some(input) = partial
                        .as_str()
                        .and_then(|p| serde_json::from_str::<Value>(p).ok())
                        .filter(|v| v.as_object().is_some_and(|o| !o.is_empty()))
                {
                    formatted["input"] = input;
                }
                out.push(formatted);
            }
            "text" => {
                // Anthropic refuses empty text blocks.
                if !block["text"].as_str().unwrap_or_default().trim().is_empty() {
                    out.push(text_block(block));
                }
            }
            "thinking" => {
                let mut thinking = pick(block, &["type", "thinking", "cache_control", "signature"]);
                if thinking.get("signature").is_some() && thinking.get("thinking").is_none() {
                    thinking["thinking"] = json!("");
                }
                out.push(thinking);
            }
            "redacted_thinking" => out.push(pick(block, &["type", "cache_control", "data"])),
            "tool_result" => {
                let has_reference = block["content"]
                    .as_array()
                    .is_some_and(|c| c.iter().any(|i| i["type"] == "tool_reference"));
                if has_reference {
                    out.push(pick(
                        block,
                        &["type", "content", "tool_use_id", "cache_control"],
                    ));
                } else {
                    let mut result = block.clone();
                    result["content"] = nested_content(&block["content"])?;
                    out.push(result);
                }
            }
            "tool_search_tool_result" => out.push(pick(
                block,
                &["type", "content", "tool_use_id", "cache_control"],
            )),
            "code_execution_tool_result"
            | "bash_code_execution_tool_result"
            | "text_editor_code_execution_tool_result"
            | "mcp_tool_result"
            | "web_search_tool_result"
            | "web_fetch_tool_result" => out.push(pick(
                block,
                &[
                    "type",
                    "content",
                    "tool_use_id",
                    "is_error",
                    "cache_control",
                    "retrieved_at",
                ],
            )),
            "advisor_tool_result" => {
                let mut result = block.clone();
                if let Some(fields) = result.as_object_mut() {
                    fields.remove("index");
                }
                out.push(result);
            }
            _ => out.push(block.clone()),
        }
    }
    Ok(out)
}

/// A tool result's own content, formatted as a user turn's would be.
fn nested_content(content: &Value) -> Result<Value, ModelError> {
    match content {
        Value::Array(blocks) => Ok(Value::Array(format_blocks(blocks, None)?)),
        other => Ok(other.clone()),
    }
}

fn from_anthropic(message: Option<&Message>) -> bool {
    message.is_some_and(|m| {
        m.extra()
            .get("response_metadata")
            .and_then(|r| r.get("model_provider"))
            .and_then(Value::as_str)
            == Some("anthropic")
    })
}

/// A `tool_use` block: the AI message's tool call of the same id, when it
/// has one (its parsed arguments win over a streamed block's), else the
/// block's own input (or its streamed `partial_json`).
fn tool_use_block(fields: &Map<String, Value>, message: Option<&Message>) -> Value {
    let id = fields.get("id").and_then(Value::as_str);
    let call = message.and_then(|m| {
        m.tool_calls()
            .iter()
            .find(|c| c.id.is_some() && c.id.as_deref() == id)
    });
    if let (Some(call), None) = (call, fields.get("caller")) {
        let mut block = tool_use(call);
        if let Some(toolset) = fields.get("toolset_name") {
            block["toolset_name"] = toolset.clone();
        }
        return block;
    }
    let input = match fields.get("input") {
        Some(input) if is_truthy(input) => input.clone(),
        _ => match fields.get("partial_json") {
            Some(partial) => {
                let text = partial.as_str().filter(|p| !p.is_empty()).unwrap_or("{}");
                serde_json::from_str(text).unwrap_or_else(|_| json!({}))
            }
            None => json!({}),
        },
    };
    let mut block = json!({
        "type": "tool_use",
        "name": fields.get("name").cloned().unwrap_or(Value::Null),
        "input": input,
        "id": fields.get("id").cloned().unwrap_or(Value::Null),
    });
    for key in ["caller", "toolset_name"] {
        if let Some(value) = fields.get(key).filter(|v| is_truthy(v)) {
            block[key] = value.clone();
        }
    }
    block
}

/// Python's truthiness of a JSON value.
fn is_truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64() != Some(0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

fn tool_use(call: &ToolCall) -> Value {
    json!({"type": "tool_use", "name": call.name, "input": call.args, "id": call.id})
}

/// An AI message's tool calls that its blocks do not hold yet, appended as
/// `tool_use` blocks (its invalid calls too, with the arguments that parse,
/// so that their results have a call to answer).
fn add_tool_use_blocks(content: &mut Value, message: &Message) {
    let invalid: &[Value] = message
        .extra()
        .get("invalid_tool_calls")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    if message.tool_calls().is_empty() && invalid.is_empty() {
        return;
    }
    if let Value::String(text) = content {
        *content = if text.is_empty() {
            json!([])
        } else {
            json!([{"type": "text", "text": text}])
        };
    }
    let Value::Array(blocks) = content else {
        return;
    };
    let mut ids: Vec<Value> = blocks
        .iter()
        .filter(|b| b["type"] == "tool_use")
        .map(|b| b["id"].clone())
        .collect();
    for call in message.tool_calls() {
        let id = json!(call.id);
        if !ids.contains(&id) {
            blocks.push(tool_use(call));
            ids.push(id);
        }
    }
    for call in invalid {
        let (Some(id), Some(name)) = (
            call["id"].as_str().filter(|s| !s.is_empty()),
            call["name"].as_str().filter(|s| !s.is_empty()),
        ) else {
            continue;
        };
        if ids.contains(&json!(id)) {
            continue;
        }
        let args = call["args"]
            .as_str()
            .filter(|a| !a.is_empty())
            .unwrap_or("{}");
        let args = serde_json::from_str::<Value>(args)
            .ok()
            .filter(Value::is_object)
            .unwrap_or_else(|| json!({}));
        blocks.push(json!({"type": "tool_use", "name": name, "input": args, "id": id}));
        ids.push(json!(id));
    }
}

fn trim_end(content: &mut Value) {
    match content {
        Value::String(text) => *text = text.trim_end().to_owned(),
        Value::Array(blocks) => {
            if let Some(last) = blocks.last_mut().filter(|b| b["type"] == "text") {
                let text = last["text"]
                    .as_str()
                    .unwrap_or_default()
                    .trim_end()
                    .to_owned();
                last["text"] = json!(text);
            }
        }
        _ => {}
    }
}

/// `_format_image`: a `data:` URL as a base64 source, an http(s) URL as a
/// URL source.
fn image_source(url: &str) -> Result<Value, ModelError> {
    if let Some(rest) = url.strip_prefix("data:") {
        if let Some((media_type, data)) = rest.split_once(";base64,")
            && media_type.starts_with("image/")
            && !data.is_empty()
        {
            return Ok(json!({"type": "base64", "media_type": media_type, "data": data}));
        }
    } else if url.starts_with("http://") || url.starts_with("https://") {
        return Ok(json!({"type": "url", "url": url}));
    }
    Err(bad_request(
        "an image must be an http(s) URL or a base64 data URL (data:image/png;base64,...)",
    ))
}

/// LangChain's `is_data_content_block`: a standard image, file, audio,
/// video or plain-text block.
fn is_data_block(fields: &Map<String, Value>) -> bool {
    let kind = fields
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !matches!(kind, "image" | "audio" | "file" | "text-plain" | "video") {
        return false;
    }
    if ["url", "base64", "file_id", "text"]
        .iter()
        .any(|k| fields.contains_key(*k))
    {
        return true;
    }
    match fields.get("source_type").and_then(Value::as_str) {
        Some("url") => fields.contains_key("url"),
        Some("base64") => fields.contains_key("data"),
        Some("id") => fields.contains_key("id"),
        Some("text") => fields.contains_key("url"),
        _ => false,
    }
}

/// `_format_data_content_block`: a standard image or file block as
/// Anthropic's image or document block.
fn data_block(fields: &Map<String, Value>) -> Result<Value, ModelError> {
    let get = |k: &str| fields.get(k).and_then(Value::as_str);
    let base64 = fields.contains_key("base64") || get("source_type") == Some("base64");
    let data = || {
        get("base64")
            .filter(|s| !s.is_empty())
            .or(get("data"))
            .unwrap_or("")
    };
    let mut formatted = match get("type").unwrap_or_default() {
        "image" => {
            let source = if let Some(url) = get("url") {
                if url.starts_with("data:") {
                    image_source(url)?
                } else {
                    json!({"type": "url", "url": url})
                }
            } else if base64 {
                json!({"type": "base64", "media_type": fields.get("mime_type"), "data": data()})
            } else if let Some(id) = get("file_id") {
                json!({"type": "file", "file_id": id})
            } else if get("source_type") == Some("id") {
                json!({"type": "file", "file_id": fields.get("id")})
            } else {
                return Err(bad_request(
                    "an image block needs a url, base64 data or a file id",
                ));
            };
            json!({"type": "image", "source": source})
        }
        "file" => {
            let source = if let Some(url) = get("url") {
                json!({"type": "url", "url": url})
            } else if base64 {
                let media = get("mime_type").unwrap_or("application/pdf");
                json!({"type": "base64", "media_type": media, "data": data()})
            } else if get("source_type") == Some("text") {
                let media = get("mime_type").unwrap_or("text/plain");
                json!({"type": "text", "media_type": media, "data": fields.get("text")})
            } else if let Some(id) = get("file_id") {
                json!({"type": "file", "file_id": id})
            } else if get("source_type") == Some("id") {
                json!({"type": "file", "file_id": fields.get("id")})
            } else {
                return Err(bad_request(
                    "a file block needs a url, base64 data or a file id",
                ));
            };
            json!({"type": "document", "source": source})
        }
        "text-plain" => {
            let media = get("mime_type").unwrap_or("text/plain");
            json!({"type": "document",
                   "source": {"type": "text", "media_type": media, "data": fields.get("text")}})
        }
        other => return Err(bad_request(format!("Anthropic takes no {other} blocks"))),
    };
    for key in ["cache_control", "citations", "title", "context"] {
        let value = fields
            .get(key)
            .or_else(|| fields.get("extras").and_then(|e| e.get(key)))
            .or_else(|| fields.get("metadata").and_then(|e| e.get(key)));
        if let Some(value) = value {
            formatted[key] = value.clone();
        }
    }
    Ok(formatted)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> Settings {
        Settings {
            model: "m".into(),
            max_tokens: 10,
            temperature: None,
        }
    }

    #[test]
    fn a_late_system_message_after_another_is_refused() {
        let request = ModelRequest::new(vec![
            Message::system("a"),
            Message::human("b"),
            Message::system("c"),
        ]);
        let err = request_body(&settings(), &request, false).unwrap_err();
        assert_eq!(err.kind(), ModelErrorKind::BadRequest);
    }

    #[test]
    fn a_lone_late_system_message_is_hoisted() {
        let request = ModelRequest::new(vec![Message::human("b"), Message::system("c")]);
        let body = request_body(&settings(), &request, false).unwrap();
        assert_eq!(body["system"], "c");
        assert_eq!(body["messages"], json!([{"role": "user", "content": "b"}]));
    }

    #[test]
    fn tool_choices() {
        let mut request = ModelRequest::new(vec![Message::human("b")]);
        for (choice, wire) in [
            (ToolChoice::Auto, json!({"type": "auto"})),
            (ToolChoice::Required, json!({"type": "any"})),
            (ToolChoice::None, json!({"type": "none"})),
            (
                ToolChoice::Tool("f".into()),
                json!({"type": "tool", "name": "f"}),
            ),
        ] {
            request.tool_choice = Some(choice);
            assert_eq!(
                request_body(&settings(), &request, false).unwrap()["tool_choice"],
                wire
            );
        }
    }

    #[test]
    fn a_bad_image_url_is_a_bad_request() {
        let request = ModelRequest::new(vec![Message::human(vec![
            json!({"type": "image_url", "image_url": {"url": "ftp://x"}}),
        ])]);
        let err = request_body(&settings(), &request, false).unwrap_err();
        assert_eq!(err.kind(), ModelErrorKind::BadRequest);
    }

    #[test]
    fn invalid_tool_calls_still_get_a_tool_use_block() {
        let ai = Message::ai("").with_extra(
            "invalid_tool_calls",
            json!([{"name": "f", "args": "{oops", "id": "t1", "type": "invalid_tool_call"}]),
        );
        let request = ModelRequest::new(vec![Message::human("a"), ai, Message::tool("no", "t1")]);
        let body = request_body(&settings(), &request, false).unwrap();
        assert_eq!(
            body["messages"][1]["content"],
            json!([{"type": "tool_use", "name": "f", "input": {}, "id": "t1"}])
        );
    }
}
