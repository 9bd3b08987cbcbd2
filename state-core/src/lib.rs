#![doc = include_str!("../README.md")]
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod dynamic;
pub mod error;
pub mod messages;
pub mod reducer;
mod runtime;
pub mod schema;
pub mod state;

#[doc(hidden)]
pub mod __private;

pub use error::{ReduceError, StateError};
pub use messages::{
    Content, Message, MessageKind, MessageLike, Messages, REMOVE_ALL_MESSAGES, ToolCall,
};
pub use reducer::Reducer;
pub use schema::{FieldInfo, Schema, Scope};
pub use state::{Delta, State};
pub use state_derive::AgentState;
