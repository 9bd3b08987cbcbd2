//! [`Message`], its [`MessageKind`] and [`ToolCall`]: constructors, builders
//! and accessors. JSON lives in `json.rs`.

use super::Content;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;

/// The id of the removal that clears the whole history
/// ([`Message::remove_all`]), as LangGraph's `REMOVE_ALL_MESSAGES`.
pub const REMOVE_ALL_MESSAGES: &str = "__remove_all__";

/// What kind of message this is; its JSON name is LangChain's `type`.
///
/// Non-exhaustive: LangChain may add message classes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum MessageKind {
    /// From the user (`"human"`; OpenAI role `user`).
    Human,
    /// From the model (`"ai"`; OpenAI role `assistant`).
    Ai,
    /// Instructions (`"system"`; OpenAI roles `system` and `developer`).
    System,
    /// A tool's result, answering a tool call (`"tool"`).
    Tool,
    /// A function's result, OpenAI's legacy function calling (`"function"`).
    Function,
    /// A message with a free role (`"chat"`, LangChain's `ChatMessage`); the
    /// role is [`Message::role`].
    Chat,
    /// A request to delete the message with this id (`"remove"`, LangGraph's
    /// `RemoveMessage`). Only meaningful in an update.
    Remove,
}

impl MessageKind {
    /// The LangChain `type` string: `"human"`, `"ai"`, `"system"`, `"tool"`,
    /// `"function"`, `"chat"` or `"remove"`.
    pub fn as_str(self) -> &'static str {
        match self {
            MessageKind::Human => "human",
            MessageKind::Ai => "ai",
            MessageKind::System => "system",
            MessageKind::Tool => "tool",
            MessageKind::Function => "function",
            MessageKind::Chat => "chat",
            MessageKind::Remove => "remove",
        }
    }
}

/// The kind's JSON name; width and alignment apply (`{:<6}`).
///
/// ```
/// use state_core::MessageKind;
/// assert_eq!(format!("{:<5}|", MessageKind::Ai), "ai   |");
/// ```
impl fmt::Display for MessageKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// A tool call requested by an AI message, in LangChain's shape. In JSON:
/// `{"name": ..., "args": {...}, "id": ..., "type": "tool_call"}`; OpenAI's
/// `{"id", "type": "function", "function": {"name", "arguments": "<json>"}}`
/// is accepted on input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    /// The call's id, which the answering tool message names in its
    /// `tool_call_id`.
    pub id: Option<String>,
    /// The tool's name.
    pub name: String,
    /// The arguments, usually a JSON object.
    pub args: Value,
}

impl ToolCall {
    /// A call of tool `name` with `args`, without an id.
    ///
    /// ```
    /// use state_core::ToolCall;
    /// let call = ToolCall::new("search", serde_json::json!({"q": "rust"})).with_id("call_1");
    /// assert_eq!(call.id.as_deref(), Some("call_1"));
    /// ```
    pub fn new(name: impl Into<String>, args: Value) -> Self {
        ToolCall {
            id: None,
            name: name.into(),
            args,
        }
    }

    /// Sets the call's id.
    #[must_use]
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }
}

/// One chat message, LangChain-compatible: a kind, content, an optional id,
/// and the optional fields LangChain messages carry.
///
/// Build one with a constructor and builders; read it with accessors. In
/// JSON it has LangChain's shape (see [`Messages`](super::Messages) for the
/// history and the crate's `messages` module for the accepted input shapes).
///
/// ```
/// use state_core::{Message, MessageKind, ToolCall};
/// use serde_json::json;
///
/// let question = Message::human("What is 2 + 2?").with_id("q1");
/// assert_eq!(question.id(), Some("q1"));
/// assert_eq!(question.kind(), MessageKind::Human);
/// assert_eq!(question.text(), "What is 2 + 2?");
///
/// let call = Message::ai("")
///     .with_tool_calls([ToolCall::new("add", json!({"a": 2, "b": 2})).with_id("c1")]);
/// let answer = Message::tool("4", "c1");
/// assert_eq!(answer.tool_call_id(), Some("c1"));
/// assert_eq!(call.tool_calls()[0].name, "add");
///
/// // A removal travels as a message, as LangGraph's RemoveMessage.
/// assert!(Message::remove("q1").is_removal());
/// assert_eq!(Message::remove_all().id(), Some(state_core::REMOVE_ALL_MESSAGES));
///
/// assert_eq!(
///     serde_json::to_value(&question).unwrap(),
///     json!({"type": "human", "content": "What is 2 + 2?", "id": "q1"})
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub(super) kind: MessageKind,
    pub(super) content: Content,
    pub(super) id: Option<String>,
    /// The free role of a chat message; `None` for every other kind.
    pub(super) role: Option<String>,
    pub(super) name: Option<String>,
    pub(super) tool_calls: Vec<ToolCall>,
    pub(super) tool_call_id: Option<String>,
    pub(super) extra: Map<String, Value>,
}

impl Message {
    /// A message of `kind` with `content` and nothing else.
    pub(super) fn bare(kind: MessageKind, content: Content) -> Self {
        Message {
            kind,
            content,
            id: None,
            role: None,
            name: None,
            tool_calls: Vec::new(),
            tool_call_id: None,
            extra: Map::new(),
        }
    }

    /// A message from the user.
    pub fn human(content: impl Into<Content>) -> Self {
        Message::bare(MessageKind::Human, content.into())
    }

    /// A message from the model.
    pub fn ai(content: impl Into<Content>) -> Self {
        Message::bare(MessageKind::Ai, content.into())
    }

    /// Instructions for the model.
    pub fn system(content: impl Into<Content>) -> Self {
        Message::bare(MessageKind::System, content.into())
    }

    /// A tool's result, answering the tool call with id `tool_call_id`.
    pub fn tool(content: impl Into<Content>, tool_call_id: impl Into<String>) -> Self {
        let mut message = Message::bare(MessageKind::Tool, content.into());
        message.tool_call_id = Some(tool_call_id.into());
        message
    }

    /// A tool's result answering `call`: its `tool_call_id` is the call's id
    /// and its name the tool's, as LangGraph's `ToolNode` writes them.
    ///
    /// A call without an id (LangChain allows one, providers send ids) is
    /// answered with an empty `tool_call_id`: LangChain's `ToolMessage`
    /// needs a string there, and no call can be matched anyway.
    ///
    /// ```
    /// use state_core::{Message, ToolCall};
    /// use serde_json::json;
    ///
    /// let call = ToolCall::new("add", json!({"a": 2, "b": 2})).with_id("c1");
    /// let answer = Message::tool_result(&call, "4");
    /// assert_eq!(answer.tool_call_id(), Some("c1"));
    /// assert_eq!(answer.name(), Some("add"));
    ///
    /// let anonymous = ToolCall::new("now", json!({}));
    /// assert_eq!(Message::tool_result(&anonymous, "noon").tool_call_id(), Some(""));
    /// ```
    pub fn tool_result(call: &ToolCall, content: impl Into<Content>) -> Self {
        Message::tool(content, call.id.clone().unwrap_or_default()).with_name(call.name.clone())
    }

    /// A function's result (OpenAI's legacy function calling); `name` is the
    /// function's.
    pub fn function(content: impl Into<Content>, name: impl Into<String>) -> Self {
        let mut message = Message::bare(MessageKind::Function, content.into());
        message.name = Some(name.into());
        message
    }

    /// A message with a free `role` (LangChain's `ChatMessage`), for roles
    /// that are none of the other kinds, such as `"critic"`. In JSON it is
    /// `{"type": "chat", "content": ..., "id": ..., "role": ...}`.
    ///
    /// ```
    /// use state_core::{Message, MessageKind};
    ///
    /// let review = Message::chat("critic", "Too long.");
    /// assert_eq!(review.kind(), MessageKind::Chat);
    /// assert_eq!(review.role(), Some("critic"));
    /// assert_eq!(Message::human("hi").role(), None);
    /// ```
    pub fn chat(role: impl Into<String>, content: impl Into<Content>) -> Self {
        let mut message = Message::bare(MessageKind::Chat, content.into());
        message.role = Some(role.into());
        message
    }

    /// A request to delete the message with this id, for
    /// [`add_messages`](super::add_messages). Its content is empty; in JSON it
    /// is `{"type": "remove", "id": ..., "content": ""}`.
    pub fn remove(id: impl Into<String>) -> Self {
        let mut message = Message::bare(MessageKind::Remove, Content::default());
        message.id = Some(id.into());
        message
    }

    /// A request to delete every message before it
    /// ([`REMOVE_ALL_MESSAGES`]).
    pub fn remove_all() -> Self {
        Message::remove(REMOVE_ALL_MESSAGES)
    }

    /// Sets the id.
    #[must_use]
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// Sets the name of the author (LangChain's `name`).
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Sets the tool calls (meaningful on AI messages).
    #[must_use]
    pub fn with_tool_calls(mut self, tool_calls: impl IntoIterator<Item = ToolCall>) -> Self {
        self.tool_calls = tool_calls.into_iter().collect();
        self
    }

    /// Sets the id of the tool call this message answers.
    #[must_use]
    pub fn with_tool_call_id(mut self, tool_call_id: impl Into<String>) -> Self {
        self.tool_call_id = Some(tool_call_id.into());
        self
    }

    /// Adds a JSON key that this type has no field for (LangChain's
    /// `additional_kwargs`, `response_metadata`, `usage_metadata`, ...). It is
    /// written as a top-level key of the message's JSON. The keys that are
    /// fields (`type`, `role`, `content`, `id`, `name`, `tool_calls`,
    /// `tool_call_id`) are ignored here: use the builders (a role is a chat
    /// message's, [`Message::chat`]).
    #[must_use]
    pub fn with_extra(mut self, key: impl Into<String>, value: Value) -> Self {
        let key = key.into();
        if !is_reserved_key(&key) {
            self.extra.insert(key, value);
        }
        self
    }

    /// The kind of message.
    pub fn kind(&self) -> MessageKind {
        self.kind
    }

    /// The content, as given.
    pub fn content(&self) -> &Content {
        &self.content
    }

    /// The text of the content (see [`Content::text`]).
    pub fn text(&self) -> String {
        self.content.text()
    }

    /// The id, if it has one. `add_messages` gives every message it stores
    /// an id.
    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// The free role of a chat message ([`Message::chat`]); `None` for
    /// every other kind.
    pub fn role(&self) -> Option<&str> {
        self.role.as_deref()
    }

    /// The author's name, if set.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// The tool calls (empty unless set).
    pub fn tool_calls(&self) -> &[ToolCall] {
        &self.tool_calls
    }

    /// The id of the tool call this message answers, if set (always set on a
    /// tool message).
    pub fn tool_call_id(&self) -> Option<&str> {
        self.tool_call_id.as_deref()
    }

    /// The JSON keys this type has no field for, in the order they came.
    /// Input in LangChain's shape keeps them as they were; input in OpenAI's
    /// shape (with `role`) puts them under `additional_kwargs`, as LangChain
    /// does.
    pub fn extra(&self) -> &Map<String, Value> {
        &self.extra
    }

    /// True for a removal ([`Message::remove`], [`Message::remove_all`]).
    pub fn is_removal(&self) -> bool {
        self.kind == MessageKind::Remove
    }

    /// True for the removal of everything ([`Message::remove_all`]).
    pub fn is_remove_all(&self) -> bool {
        self.is_removal() && self.id() == Some(REMOVE_ALL_MESSAGES)
    }
}

/// Keys of a message's JSON that are fields of [`Message`] (`role` is a
/// chat message's, or OpenAI's), never kept among its extra keys.
pub(super) fn is_reserved_key(key: &str) -> bool {
    matches!(
        key,
        "type" | "role" | "content" | "id" | "name" | "tool_calls" | "tool_call_id"
    )
}

impl From<&str> for Message {
    /// A human message, as a bare string is in LangChain.
    fn from(content: &str) -> Self {
        Message::human(content)
    }
}

impl From<String> for Message {
    /// A human message, as a bare string is in LangChain.
    fn from(content: String) -> Self {
        Message::human(content)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn constructors_set_kind_and_content() {
        let cases = [
            (Message::human("h"), MessageKind::Human),
            (Message::ai("a"), MessageKind::Ai),
            (Message::system("s"), MessageKind::System),
            (Message::tool("t", "c"), MessageKind::Tool),
            (Message::function("f", "fname"), MessageKind::Function),
            (Message::chat("critic", "c"), MessageKind::Chat),
            (Message::remove("r"), MessageKind::Remove),
        ];
        for (message, kind) in cases {
            assert_eq!(message.kind(), kind);
            assert_eq!(message.is_removal(), kind == MessageKind::Remove);
        }
        assert_eq!(Message::tool("t", "c").tool_call_id(), Some("c"));
        assert_eq!(Message::function("f", "fname").name(), Some("fname"));
        assert_eq!(Message::human("h").id(), None);
        assert_eq!(Message::remove("r").id(), Some("r"));
        assert_eq!(Message::remove("r").content(), &Content::default());
    }

    #[test]
    fn remove_all_is_the_sentinel() {
        let all = Message::remove_all();
        assert!(all.is_remove_all());
        assert_eq!(all.id(), Some("__remove_all__"));
        assert!(!Message::remove("x").is_remove_all());
        // Only a removal is the sentinel, not any message with that id.
        assert!(
            !Message::human("x")
                .with_id(REMOVE_ALL_MESSAGES)
                .is_remove_all()
        );
    }

    #[test]
    fn builders_and_accessors() {
        let message = Message::ai(vec![json!({"type": "text", "text": "hi"})])
            .with_id("1")
            .with_name("bot")
            .with_tool_calls([ToolCall::new("f", json!({}))])
            .with_tool_call_id("tc")
            .with_extra("response_metadata", json!({"model": "m"}))
            .with_extra("type", json!("human"))
            .with_extra("id", json!("2"));
        assert_eq!(message.id(), Some("1"));
        assert_eq!(message.name(), Some("bot"));
        assert_eq!(message.text(), "hi");
        assert_eq!(message.tool_calls().len(), 1);
        assert_eq!(message.tool_call_id(), Some("tc"));
        assert_eq!(message.kind(), MessageKind::Ai);
        assert_eq!(message.extra().len(), 1, "reserved keys are not extras");
        assert_eq!(message.extra()["response_metadata"], json!({"model": "m"}));
    }

    #[test]
    fn empty_string_id_is_an_id() {
        assert_eq!(Message::human("x").with_id("").id(), Some(""));
    }

    #[test]
    fn kind_names_are_langchain_types() {
        for kind in [
            MessageKind::Human,
            MessageKind::Ai,
            MessageKind::System,
            MessageKind::Tool,
            MessageKind::Function,
            MessageKind::Chat,
            MessageKind::Remove,
        ] {
            assert_eq!(serde_json::to_value(kind).unwrap(), json!(kind.as_str()));
            assert_eq!(kind.to_string(), kind.as_str());
            let back: MessageKind = serde_json::from_value(json!(kind.as_str())).unwrap();
            assert_eq!(back, kind);
        }
    }

    #[test]
    fn strings_convert_to_human_messages() {
        assert_eq!(Message::from("hi"), Message::human("hi"));
        assert_eq!(Message::from(String::from("hi")), Message::human("hi"));
    }

    #[test]
    fn only_chat_messages_have_a_role() {
        assert_eq!(Message::chat("critic", "c").role(), Some("critic"));
        for message in [
            Message::human("h"),
            Message::ai("a"),
            Message::tool("t", "c"),
            Message::remove("r"),
        ] {
            assert_eq!(message.role(), None, "{message:?}");
        }
    }

    #[test]
    fn tool_result_answers_the_call() {
        let call = ToolCall::new("search", json!({"q": "rust"})).with_id("call_1");
        let answer = Message::tool_result(&call, "found");
        assert_eq!(answer, Message::tool("found", "call_1").with_name("search"));
        assert_eq!(answer.kind(), MessageKind::Tool);
        let answer = Message::tool_result(&ToolCall::new("now", json!({})), "noon");
        assert_eq!(answer.tool_call_id(), Some(""));
        assert_eq!(answer.name(), Some("now"));
    }
}
