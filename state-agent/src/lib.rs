#![doc = include_str!("../README.md")]
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod anthropic;
mod chunk;
mod error;
mod fake;
mod http_client;
mod messages;
mod model;
pub mod openai;
mod retry;
mod structured;
mod tool_spec;

pub use chunk::{MessageChunk, ToolCallChunk, Usage};
pub use error::{BoxError, ModelError, ModelErrorKind};
pub use fake::FakeChatModel;
pub use messages::{
    ApproxTokenCounter, FilterOptions, TokenCounter, TrimError, TrimOptions, TrimStrategy,
    count_tokens_approximately, filter_messages, merge_message_runs,
    merge_message_runs_with_separator, trim_messages,
};
pub use model::{Bound, ChatModel, ChatModelExt, ChunkStream, ModelRequest};
pub use structured::{Structured, StructuredReply};
pub use tool_spec::{ToolChoice, ToolSpec};
