#![doc = include_str!("../README.md")]
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod anthropic;
mod chunk;
mod error;
mod fake;
mod http_client;
mod model;
pub mod openai;
mod retry;
mod structured;
mod tool_spec;

pub use chunk::{MessageChunk, ToolCallChunk, Usage};
pub use error::{BoxError, ModelError, ModelErrorKind};
pub use fake::FakeChatModel;
pub use model::{Bound, ChatModel, ChatModelExt, ChunkStream, ModelRequest};
pub use structured::{Structured, StructuredReply};
pub use tool_spec::{ToolChoice, ToolSpec};
