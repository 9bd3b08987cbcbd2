#![doc = include_str!("../README.md")]
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod anthropic;
mod args;
mod chunk;
mod condition;
mod error;
mod fake;
mod http_client;
mod messages;
mod messages_field;
mod model;
pub mod openai;
mod react;
mod retry;
mod structured;
mod tool;
mod tool_node;
mod tool_spec;

pub use chunk::{MessageChunk, ToolCallChunk, Usage};
pub use condition::tools_condition;
pub use error::{BoxError, ModelError, ModelErrorKind};
pub use fake::FakeChatModel;
pub use messages::{
    ApproxTokenCounter, FilterOptions, TokenCounter, TrimError, TrimOptions, TrimStrategy,
    count_tokens_approximately, filter_messages, merge_message_runs,
    merge_message_runs_with_separator, trim_messages,
};
pub use model::{Bound, ChatModel, ChatModelExt, ChunkStream, ModelRequest};
pub use react::{NEED_MORE_STEPS, ReactAgent, react_agent};
pub use structured::{Structured, StructuredReply};
pub use tool::{
    ArgError, ArgsError, Tool, ToolCallId, ToolError, ToolFuture, ToolInput, ToolOutput,
};
pub use tool_node::{DEFAULT_MAX_CONCURRENCY, ToolCallError, ToolErrors, ToolNode};
pub use tool_spec::{ToolChoice, ToolSpec};

/// The `schemars` crate, whose `JsonSchema` a tool's argument types
/// derive (`#[derive(Deserialize, JsonSchema)]`; with
/// `#[schemars(crate = "state_agent::schemars")]` when your crate does
/// not depend on schemars itself).
pub use schemars;

#[doc = include_str!("../docs/tool.md")]
pub use state_derive::tool;

/// Everything `#[tool]`'s generated code names, behind one hidden path.
/// Not a public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::args::{
        Args, IntoToolError, Param, ToolArg, ToolReturn, content, fallible, got, spec,
    };
    pub use crate::tool::{Tool, ToolCallId, ToolError, ToolFuture, ToolInput, ToolOutput};
    pub use crate::tool_spec::ToolSpec;
    pub use ::core::marker::{Send, Sync};
    pub use ::std::boxed::Box;
    pub use ::std::sync::OnceLock;
    pub use state_core::State;
    pub use state_graph::{Command, Ctx, GraphState};

    /// The context type of a `Ctx<C>` parameter: `C`.
    pub trait CtxType {
        /// `C`.
        type Context;
    }

    impl<C> CtxType for Ctx<C> {
        type Context = C;
    }
}
