//! Chat messages: [`Message`], the id-indexed history [`Messages`], and
//! [`add_messages`], LangGraph's message reducer (also as the
//! [`AddMessages`] reducer, `#[reducer(add_messages)]`).
//!
//! # JSON
//!
//! Messages are written in LangChain's shape, so states travel between Rust
//! and LangGraph services:
//! `{"type": "human"|"ai"|"system"|"tool"|"function", "content": ..., "id":
//! ... (null when none), "name"?, "tool_calls"? (when not empty),
//! "tool_call_id"?, ...extra keys}`; a removal is `{"type": "remove",
//! "content": "", "id": ...}`.
//!
//! They are read from:
//! - LangChain's shape (`type`), unknown keys kept as they came (so
//!   `additional_kwargs`, `response_metadata`, `usage_metadata`, ... round
//!   trip), also inside LangChain's serialized envelope
//!   `{"lc": 1, "type": "constructor", "id": [..., "AIMessage"], "kwargs": {...}}`;
//! - OpenAI's shape (`role`: `user`, `assistant`, `system`, `developer`,
//!   `tool`, `function`; LangChain's type names work as roles too). When
//!   both `role` and `type` are present, `role` wins. As in LangChain's
//!   `convert_to_messages`, the keys that are not fields (including a losing
//!   `type`) go under `additional_kwargs`, and `developer` is a system
//!   message with `additional_kwargs["__openai_role__"] = "developer"`;
//! - a bare string: a human message;
//! - a `[role, content]` pair (LangGraph's tuple form).
//!
//! `content: null` reads as `""`; numeric ids become strings; a tool message
//! needs `tool_call_id` and a function message `name`; a removal needs an id
//! and keeps nothing else. Anything else is a serde error that says what was
//! expected.

mod add;
mod content;
mod history;
mod index;
mod json;
mod message;
mod reducer;
#[cfg(feature = "schemars")]
mod schema;

pub use add::{MessageHistory, MessageLike, add_messages};
pub use content::Content;
pub use history::Messages;
pub use message::{Message, MessageKind, REMOVE_ALL_MESSAGES, ToolCall};
pub use reducer::AddMessages;
