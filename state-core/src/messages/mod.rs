//! Chat messages: [`Message`], the id-indexed history [`Messages`], and
//! [`add_messages`], LangGraph's message reducer (also as the
//! [`AddMessages`] reducer, `#[reducer(add_messages)]`).
//!
//! # JSON
//!
//! Messages are written in LangChain's `model_dump()` shape, so states
//! travel between Rust and LangGraph services:
//! `{"type": "human"|"ai"|"system"|"tool"|"function"|"chat", "content": ...,
//! "id": ... (null when none), "role"? (a chat message's), "name"?,
//! "tool_calls"? (when not empty), "tool_call_id"?, ...extra keys}`; a
//! removal is `{"type": "remove", "content": "", "id": ...}`.
//! [`Message::as_langchain_dict`] writes `messages_to_dict()`'s shape
//! instead, `{"type": ..., "data": {...}}`.
//!
//! They are read from:
//! - LangChain's shape (`type`), unknown keys kept as they came (so
//!   `additional_kwargs`, `response_metadata`, `usage_metadata`,
//!   `invalid_tool_calls`, a tool message's `artifact` and `status`, ...
//!   round trip), as `model_dump()` writes it, inside `messages_to_dict()`'s
//!   `{"type": ..., "data": {...}}`, or inside `dumpd()`'s serialized
//!   envelope `{"lc": 1, "type": "constructor", "id": [..., "AIMessage"],
//!   "kwargs": {...}}`. Every message class is read, `ChatMessage`
//!   (`"chat"`, with its free `role`) included;
//! - the chunk classes (`"AIMessageChunk"`, ..., `"ChatMessageChunk"`), read
//!   as their message class, as LangGraph's `add_messages` does
//!   (`message_chunk_to_message`): an AI chunk's streaming state,
//!   `tool_call_chunks` and `chunk_position`, is dropped (its calls are in
//!   `tool_calls`), and that it was a chunk is not kept;
//! - OpenAI's shape (`role`: `user`, `assistant`, `system`, `developer`,
//!   `tool`, `function`; LangChain's type names work as roles too). When
//!   both `role` and `type` are present, `role` wins, unless `type` is
//!   `"chat"`. As in LangChain's `convert_to_messages`, the keys that are
//!   not fields (including a losing `type`) go under `additional_kwargs`,
//!   and `developer` is a system message with
//!   `additional_kwargs["__openai_role__"] = "developer"`;
//! - a bare string: a human message;
//! - a `[role, content]` pair (LangGraph's tuple form).
//!
//! `content: null` reads as `""`; numeric ids become strings; a tool message
//! needs `tool_call_id`, a function message `name` and a chat message
//! `role`; a removal needs an id and keeps nothing else. Anything else is a
//! serde error that says what was expected and, inside a wrapper, where
//! (`in "data": a "human" message needs "content"`).

mod add;
mod compact;
mod content;
mod envelope;
mod history;
mod index;
mod json;
mod like;
mod message;
mod object;
mod pair;
mod reducer;
#[cfg(feature = "schemars")]
mod schema;
mod state;
mod tag;

pub use add::{MessageHistory, add_messages};
pub use content::Content;
pub use envelope::LangChainDict;
pub use history::Messages;
pub use like::MessageLike;
pub use message::{Message, MessageKind, REMOVE_ALL_MESSAGES, ToolCall};
pub use reducer::AddMessages;
pub use state::{MessagesState, MessagesStateDelta};
