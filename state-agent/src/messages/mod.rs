//! LangChain's message utilities, to the same results as langchain-core
//! 1.7 (pinned by vectors it wrote): [`count_tokens_approximately`],
//! [`trim_messages`], [`filter_messages`] and [`merge_message_runs`].
//!
//! Message kinds stand for LangChain's type names (`start_on="human"` is
//! `.start_on([MessageKind::Human])`); LangChain's functions that take a
//! model as the token counter take a [`TokenCounter::list`] here.

mod count;
mod filter;
mod merge;
mod merge_json;
mod partial_json;
mod python;
mod rebuild;
mod token_counter;
mod tool_pairs;
mod trim;

pub use count::{ApproxTokenCounter, count_tokens_approximately};
pub use filter::{FilterOptions, filter_messages};
pub use merge::{merge_message_runs, merge_message_runs_with_separator};
pub use token_counter::TokenCounter;
pub use trim::{TrimError, TrimOptions, TrimStrategy, trim_messages};
