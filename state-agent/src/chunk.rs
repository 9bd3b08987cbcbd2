//! [`MessageChunk`]: a piece of a streamed reply, and the one merge that
//! folds a stream's chunks into the reply (LangChain's
//! `AIMessageChunk.__add__`): a model's `invoke` is the merge of what its
//! `stream` yields.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use state_core::{Content, Message, ToolCall};
use std::ops::AddAssign;

/// A piece of a streamed AI reply: some text (or content blocks), pieces
/// of tool calls, and, usually on the last chunk, the token usage and the
/// provider's metadata. `+=` merges the next chunk in; [`into_message`]
/// makes the reply.
///
/// ```
/// use state_agent::{MessageChunk, ToolCallChunk};
///
/// let mut reply = MessageChunk::text("Let me ").with_id("run-1");
/// reply += MessageChunk::text("check.");
/// reply += MessageChunk::tool_call(ToolCallChunk::start(0, "call_1", "weather").args("{\"ci"));
/// reply += MessageChunk::tool_call(ToolCallChunk::more(0).args("ty\": \"Oslo\"}"));
/// let message = reply.into_message();
/// assert_eq!(message.text(), "Let me check.");
/// assert_eq!(message.tool_calls()[0].args["city"], "Oslo");
/// ```
///
/// [`into_message`]: MessageChunk::into_message
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MessageChunk {
    /// The reply's id: the provider's, or one minted before the first
    /// chunk (`lc_run-..`), which a provider's replaces.
    pub id: Option<String>,
    /// The text or content blocks this chunk adds.
    pub content: Option<Content>,
    /// The pieces of tool calls this chunk adds.
    pub tool_call_chunks: Vec<ToolCallChunk>,
    /// Token usage (LangChain's `usage_metadata`), reported once per reply.
    pub usage: Option<Usage>,
    /// The provider's metadata (LangChain's `response_metadata`): the
    /// model's name, the finish reason, ...
    pub response_metadata: Map<String, Value>,
    /// What else the provider said (LangChain's `additional_kwargs`: a
    /// refusal, audio, ...), merged as metadata is.
    pub additional_kwargs: Map<String, Value>,
    /// The author's name, when the provider gives one (the first wins).
    pub name: Option<String>,
    /// Whether this is the reply's last chunk (LangChain's
    /// `chunk_position="last"`).
    pub last: bool,
}

/// A piece of one tool call: the call it belongs to is its `index` (the
/// provider's), its name and id come once, its arguments' JSON text in
/// pieces.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCallChunk {
    /// The call's place in the reply.
    pub index: Option<usize>,
    /// The call's id.
    pub id: Option<String>,
    /// The tool's name.
    pub name: Option<String>,
    /// A piece of the arguments' JSON text.
    pub args: Option<String>,
}

impl ToolCallChunk {
    /// The first piece of call `index`: its id and tool name.
    pub fn start(index: usize, id: impl Into<String>, name: impl Into<String>) -> ToolCallChunk {
        ToolCallChunk {
            index: Some(index),
            id: Some(id.into()),
            name: Some(name.into()),
            args: None,
        }
    }

    /// A later piece of call `index`.
    pub fn more(index: usize) -> ToolCallChunk {
        ToolCallChunk {
            index: Some(index),
            ..ToolCallChunk::default()
        }
    }

    /// With a piece of the arguments' JSON text.
    pub fn args(mut self, args: impl Into<String>) -> ToolCallChunk {
        self.args = Some(args.into());
        self
    }

    /// Whether `other` continues this call (LangChain's rule: the same
    /// index, and ids that agree: one missing, or equal).
    fn continues(&self, other: &ToolCallChunk) -> bool {
        self.index.is_some()
            && self.index == other.index
            && match (&self.id, &other.id) {
                (Some(a), Some(b)) => a == b,
                _ => true,
            }
    }
}

/// Token usage of one reply (LangChain's `UsageMetadata`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens read (the prompt), cached ones included.
    pub input_tokens: u64,
    /// Tokens written (the reply), reasoning included.
    pub output_tokens: u64,
    /// Their sum.
    pub total_tokens: u64,
    /// LangChain's `input_token_details` (`cache_read`, `cache_creation`,
    /// `audio`), when the provider says.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub input_token_details: Map<String, Value>,
    /// LangChain's `output_token_details` (`reasoning`, `audio`), when the
    /// provider says.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub output_token_details: Map<String, Value>,
}

impl AddAssign for Usage {
    /// Sums (LangChain's `add_usage`).
    fn add_assign(&mut self, other: Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.total_tokens += other.total_tokens;
        add_counts(&mut self.input_token_details, other.input_token_details);
        add_counts(&mut self.output_token_details, other.output_token_details);
    }
}

fn add_counts(into: &mut Map<String, Value>, more: Map<String, Value>) {
    for (key, value) in more {
        let sum = match (into.get(&key).and_then(Value::as_u64), value.as_u64()) {
            (Some(a), Some(b)) => json!(a + b),
            _ => value,
        };
        into.insert(key, sum);
    }
}

impl MessageChunk {
    /// A chunk of text.
    pub fn text(text: impl Into<String>) -> MessageChunk {
        MessageChunk {
            content: Some(Content::Text(text.into())),
            ..MessageChunk::default()
        }
    }

    /// A chunk with a piece of a tool call.
    pub fn tool_call(chunk: ToolCallChunk) -> MessageChunk {
        MessageChunk {
            tool_call_chunks: vec![chunk],
            ..MessageChunk::default()
        }
    }

    /// With the reply's id.
    pub fn with_id(mut self, id: impl Into<String>) -> MessageChunk {
        self.id = Some(id.into());
        self
    }

    /// With the reply's token usage.
    pub fn with_usage(mut self, usage: Usage) -> MessageChunk {
        self.usage = Some(usage);
        self
    }

    /// A whole reply as one chunk (a provider's answer to a call that did
    /// not stream): its content, id, name, tool calls (as whole pieces,
    /// their arguments as JSON text; LangChain's `invalid_tool_calls` with
    /// their text as it was), usage, `response_metadata` and
    /// `additional_kwargs`; marked last. [`into_message`] makes the message
    /// back.
    ///
    /// ```
    /// use serde_json::json;
    /// use state_agent::MessageChunk;
    /// use state_core::{Message, ToolCall};
    ///
    /// let reply = Message::ai("Checking.")
    ///     .with_id("r1")
    ///     .with_tool_calls([ToolCall::new("weather", json!({"city": "Oslo"})).with_id("c1")]);
    /// assert_eq!(MessageChunk::from_message(reply.clone()).into_message(), reply);
    /// ```
    ///
    /// [`into_message`]: MessageChunk::into_message
    pub fn from_message(message: Message) -> MessageChunk {
        let mut chunk = MessageChunk {
            id: message.id().map(str::to_owned),
            content: Some(message.content().clone()),
            name: message.name().map(str::to_owned),
            last: true,
            ..MessageChunk::default()
        };
        for call in message.tool_calls() {
            chunk.tool_call_chunks.push(ToolCallChunk {
                index: Some(chunk.tool_call_chunks.len()),
                id: call.id.clone(),
                name: Some(call.name.clone()),
                args: Some(call.args.to_string()),
            });
        }
        let extra = message.extra();
        for call in extra
            .get("invalid_tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let text = |key: &str| call.get(key).and_then(Value::as_str).map(str::to_owned);
            chunk.tool_call_chunks.push(ToolCallChunk {
                index: Some(chunk.tool_call_chunks.len()),
                id: text("id"),
                name: text("name"),
                args: text("args"),
            });
        }
        chunk.usage = extra
            .get("usage_metadata")
            .and_then(|u| serde_json::from_value(u.clone()).ok());
        if let Some(Value::Object(metadata)) = extra.get("response_metadata") {
            chunk.response_metadata = metadata.clone();
        }
        if let Some(Value::Object(kwargs)) = extra.get("additional_kwargs") {
            chunk.additional_kwargs = kwargs.clone();
        }
        chunk
    }

    /// The chunk as a message, as the `messages` stream carries it: its
    /// text (or blocks) and id, and its tool-call pieces under LangChain's
    /// `tool_call_chunks`.
    pub fn as_message(&self) -> Message {
        let mut message = Message::ai(self.content.clone().unwrap_or(Content::Text(String::new())));
        if let Some(id) = &self.id {
            message = message.with_id(id.clone());
        }
        if !self.tool_call_chunks.is_empty() {
            let chunks: Vec<Value> = self
                .tool_call_chunks
                .iter()
                .map(|c| {
                    json!({"name": c.name, "args": c.args, "id": c.id, "index": c.index,
                           "type": "tool_call_chunk"})
                })
                .collect();
            message = message.with_extra("tool_call_chunks", Value::Array(chunks));
        }
        message
    }

    /// The reply the merged chunks make: an AI message with its text (or
    /// blocks), its tool calls (arguments parsed; a call whose arguments
    /// are not JSON goes to LangChain's `invalid_tool_calls`, for the tool
    /// node to answer), `usage_metadata` and `response_metadata`.
    pub fn into_message(self) -> Message {
        let mut calls = Vec::new();
        let mut invalid = Vec::new();
        for chunk in self.tool_call_chunks {
            let name = chunk.name.unwrap_or_default();
            let text = chunk.args.unwrap_or_default();
            let args = if text.trim().is_empty() {
                Ok(json!({}))
            } else {
                serde_json::from_str::<Value>(&text)
            };
            match args {
                Ok(args) => {
                    let mut call = ToolCall::new(name, args);
                    call.id = chunk.id;
                    calls.push(call);
                }
                Err(e) => invalid.push(json!({
                    "name": name, "args": text, "id": chunk.id,
                    "error": format!("the arguments are not JSON: {e}"),
                    "type": "invalid_tool_call",
                })),
            }
        }
        let mut message = Message::ai(self.content.unwrap_or(Content::Text(String::new())))
            .with_tool_calls(calls);
        if let Some(id) = self.id {
            message = message.with_id(id);
        }
        if let Some(name) = self.name {
            message = message.with_name(name);
        }
        if !self.additional_kwargs.is_empty() {
            message =
                message.with_extra("additional_kwargs", Value::Object(self.additional_kwargs));
        }
        if !invalid.is_empty() {
            message = message.with_extra("invalid_tool_calls", Value::Array(invalid));
        }
        if let Some(usage) = self.usage {
            let usage = serde_json::to_value(usage).unwrap_or(Value::Null);
            message = message.with_extra("usage_metadata", usage);
        }
        if !self.response_metadata.is_empty() {
            message =
                message.with_extra("response_metadata", Value::Object(self.response_metadata));
        }
        message
    }
}

impl AddAssign for MessageChunk {
    /// Merges the next chunk in, as LangChain's `AIMessageChunk.__add__`
    /// does: text concatenates, blocks merge by their `index`, tool-call
    /// pieces join the call of the same index when their ids agree (else a
    /// new call begins), usage sums, metadata merges, and a provider's id
    /// replaces a minted one (`lc_..`).
    fn add_assign(&mut self, next: MessageChunk) {
        match (&self.id, next.id) {
            (None, id) => self.id = id,
            (Some(mine), Some(theirs)) if mine.starts_with("lc_") && !theirs.starts_with("lc_") => {
                self.id = Some(theirs)
            }
            _ => {}
        }
        self.content = match (self.content.take(), next.content) {
            (None, content) | (content, None) => content,
            (Some(Content::Text(mut a)), Some(Content::Text(b))) => {
                a.push_str(&b);
                Some(Content::Text(a))
            }
            (Some(a), Some(b)) => Some(Content::Blocks(merge_blocks(blocks(a), blocks(b)))),
        };
        for piece in next.tool_call_chunks {
            match self
                .tool_call_chunks
                .iter_mut()
                .rev()
                .find(|call| call.continues(&piece))
            {
                Some(call) => {
                    call.id = call.id.take().or(piece.id);
                    concat(&mut call.name, piece.name);
                    concat(&mut call.args, piece.args);
                }
                None => self.tool_call_chunks.push(piece),
            }
        }
        match (&mut self.usage, next.usage) {
            (Some(mine), Some(theirs)) => *mine += theirs,
            (mine @ None, theirs) => *mine = theirs,
            _ => {}
        }
        merge_metadata(&mut self.response_metadata, next.response_metadata);
        merge_metadata(&mut self.additional_kwargs, next.additional_kwargs);
        if self.name.is_none() {
            self.name = next.name;
        }
        self.last |= next.last;
    }
}

fn concat(into: &mut Option<String>, more: Option<String>) {
    match (into.as_mut(), more) {
        (Some(a), Some(b)) => a.push_str(&b),
        (None, b) => *into = b,
        _ => {}
    }
}

/// Content as blocks: text becomes one text block.
fn blocks(content: Content) -> Vec<Value> {
    match content {
        Content::Blocks(blocks) => blocks,
        Content::Text(text) if text.is_empty() => Vec::new(),
        Content::Text(text) => vec![json!({"type": "text", "text": text})],
    }
}

/// LangChain's `merge_lists` for content blocks: a block with the `index`
/// of one already there merges into it (its text and partial JSON
/// concatenate; its `type` is the first piece's: an `input_json_delta`
/// joins its `tool_use` block); any other is appended.
fn merge_blocks(mut into: Vec<Value>, more: Vec<Value>) -> Vec<Value> {
    for block in more {
        let index = block.get("index").and_then(Value::as_u64);
        let same = index.and_then(|i| {
            into.iter_mut()
                .find(|b| b.get("index").and_then(Value::as_u64) == Some(i))
        });
        match (same, block) {
            (Some(Value::Object(existing)), Value::Object(mut piece)) => {
                piece.remove("type");
                merge_metadata(existing, piece);
            }
            (_, block) => into.push(block),
        }
    }
    into
}

/// LangChain's `merge_dicts`, as it treats metadata: strings concatenate
/// (an equal one is kept once), numbers add (but an `index`, a time or a
/// `created` keeps the later), objects merge, anything else: the later.
fn merge_metadata(into: &mut Map<String, Value>, more: Map<String, Value>) {
    for (key, value) in more {
        let merged = match (into.remove(&key), value) {
            (None, value) => value,
            (Some(Value::String(a)), Value::String(b)) if a == b || b.is_empty() => json!(a),
            (Some(Value::String(a)), Value::String(b)) if a.is_empty() => json!(b),
            (Some(Value::String(a)), Value::String(b))
                if matches!(key.as_str(), "type" | "id" | "model_provider") =>
            {
                if a == b {
                    json!(a)
                } else {
                    json!(b)
                }
            }
            (Some(Value::String(a)), Value::String(b)) => json!(a + &b),
            (Some(Value::Number(a)), Value::Number(b))
                if !matches!(key.as_str(), "index" | "created" | "timestamp") =>
            {
                match (a.as_u64(), b.as_u64(), a.as_f64(), b.as_f64()) {
                    (Some(a), Some(b), _, _) => json!(a + b),
                    (_, _, Some(a), Some(b)) => json!(a + b),
                    _ => Value::Number(b),
                }
            }
            (Some(Value::Object(mut a)), Value::Object(b)) => {
                merge_metadata(&mut a, b);
                Value::Object(a)
            }
            (_, value) => value,
        };
        into.insert(key, merged);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_call_pieces_join_by_index_when_ids_agree() {
        // LangChain's own check: {0, c1, f, '{"a"'} + {0, ':1}'} + {1, c2, g, '{}'}.
        let mut reply = MessageChunk::tool_call(ToolCallChunk::start(0, "c1", "f").args("{\"a\""));
        reply += MessageChunk::tool_call(ToolCallChunk::more(0).args(":1}"));
        reply += MessageChunk::tool_call(ToolCallChunk::start(1, "c2", "g").args("{}"));
        let message = reply.into_message();
        let calls: Vec<(&str, &Value)> = message
            .tool_calls()
            .iter()
            .map(|c| (c.name.as_str(), &c.args))
            .collect();
        assert_eq!(calls, [("f", &json!({"a": 1})), ("g", &json!({}))]);
        assert_eq!(message.tool_calls()[1].id.as_deref(), Some("c2"));
    }

    #[test]
    fn a_reused_index_with_another_id_is_a_new_call() {
        let mut reply = MessageChunk::tool_call(ToolCallChunk::start(0, "c1", "f").args("{}"));
        reply += MessageChunk::tool_call(ToolCallChunk::start(0, "c2", "g").args("{}"));
        assert_eq!(reply.into_message().tool_calls().len(), 2);
    }

    #[test]
    fn bad_arguments_are_an_invalid_call_not_an_error() {
        let reply = MessageChunk::tool_call(ToolCallChunk::start(0, "c1", "f").args("{\"a\": "));
        let message = reply.into_message();
        assert!(message.tool_calls().is_empty());
        let invalid = &message.extra()["invalid_tool_calls"][0];
        assert_eq!(
            (&invalid["name"], &invalid["id"]),
            (&json!("f"), &json!("c1"))
        );
    }

    #[test]
    fn usage_sums_metadata_merges_and_a_provider_id_wins() {
        let mut reply = MessageChunk::text("a").with_id("lc_run-1");
        reply
            .response_metadata
            .insert("model_name".into(), json!("m"));
        let mut next = MessageChunk::text("b").with_id("chatcmpl-9");
        next.response_metadata
            .insert("model_name".into(), json!("m"));
        next.response_metadata
            .insert("finish_reason".into(), json!("stop"));
        next.usage = Some(Usage {
            input_tokens: 3,
            output_tokens: 2,
            total_tokens: 5,
            ..Usage::default()
        });
        reply += next;
        let message = reply.into_message();
        assert_eq!(message.id(), Some("chatcmpl-9"));
        assert_eq!(message.text(), "ab");
        assert_eq!(
            message.extra()["response_metadata"],
            json!({"model_name": "m", "finish_reason": "stop"})
        );
        assert_eq!(message.extra()["usage_metadata"]["total_tokens"], 5);
    }

    #[test]
    fn content_blocks_merge_by_index() {
        let block = |i: u64, text: &str| json!({"type": "text", "text": text, "index": i});
        let mut reply = MessageChunk {
            content: Some(Content::Blocks(vec![block(0, "Hel")])),
            ..MessageChunk::default()
        };
        reply += MessageChunk {
            content: Some(Content::Blocks(vec![block(0, "lo"), block(1, "!")])),
            ..MessageChunk::default()
        };
        assert_eq!(
            reply.content,
            Some(Content::Blocks(vec![block(0, "Hello"), block(1, "!")]))
        );
    }

    #[test]
    fn a_blocks_type_is_its_first_pieces() {
        // Anthropic's tool_use block, then its input_json_delta pieces
        // (LangChain's merge_lists drops the later pieces' type).
        let mut reply = MessageChunk {
            content: Some(Content::Blocks(vec![
                json!({"type": "tool_use", "id": "t1", "name": "f", "input": {}, "index": 1}),
            ])),
            ..MessageChunk::default()
        };
        reply += MessageChunk {
            content: Some(Content::Blocks(vec![
                json!({"type": "input_json_delta", "partial_json": "{}", "index": 1}),
            ])),
            ..MessageChunk::default()
        };
        assert_eq!(
            reply.content,
            Some(Content::Blocks(vec![json!({
                "type": "tool_use", "id": "t1", "name": "f", "input": {},
                "partial_json": "{}", "index": 1
            })]))
        );
    }
}
