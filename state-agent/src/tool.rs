//! [`Tool`]: what a [`ToolNode`](crate::ToolNode) runs, and what
//! `#[tool]` implements for a function: its [`ToolSpec`] and an async call
//! on the model's arguments, with the graph's state and the node's
//! [`Ctx`].

use crate::error::BoxError;
use crate::tool_spec::ToolSpec;
use serde_json::Value;
use state_core::{Content, State};
use state_graph::{Command, Ctx};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// What [`Tool::call`] returns: a boxed, `Send` future of the tool's
/// output or its error.
pub type ToolFuture<D> = Pin<Box<dyn Future<Output = Result<ToolOutput<D>, ToolError>> + Send>>;

/// A tool a model can call (LangChain's `BaseTool`), in a graph over the
/// state `S` whose runs carry the context `C`.
///
/// `#[tool]` implements it for a function; write it by hand for a tool
/// that holds something (a client, a connection) and add it with
/// [`ToolNode::with_tool`](crate::ToolNode::with_tool). A plain tool
/// implements it for every state and context; one that takes the state
/// (`&MyState`) or the context (`Ctx<MyCtx>`) only for those, so putting
/// it in another graph is a compile error that names both.
///
/// ```
/// use serde_json::{Value, json};
/// use state_agent::{Tool, ToolError, ToolFuture, ToolInput, ToolOutput, ToolSpec};
/// use state_core::State;
///
/// /// Looks a word up in a dictionary it holds.
/// struct Dictionary {
///     spec: ToolSpec,
///     words: std::collections::HashMap<String, String>,
/// }
///
/// impl<S: State, C> Tool<S, C> for Dictionary {
///     fn spec(&self) -> &ToolSpec {
///         &self.spec
///     }
///
///     fn call(&self, input: ToolInput<S, C>) -> ToolFuture<S::Delta> {
///         let word = input.args["word"].as_str().unwrap_or_default().to_owned();
///         let meaning = self.words.get(&word).cloned();
///         Box::pin(async move {
///             match meaning {
///                 Some(meaning) => Ok(ToolOutput::content(meaning)),
///                 None => Err(ToolError::failed(format!("no word {word:?}"))),
///             }
///         })
///     }
/// }
/// # let _ = Dictionary {
/// #     spec: ToolSpec::new("define", "Defines a word.", json!({"type": "object"})),
/// #     words: Default::default(),
/// # };
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tool of a graph over `{S}` with context `{C}`",
    label = "not a tool of this graph",
    note = "a tool taking the state (`&S`) fits only graphs over that state, and one taking `Ctx<C>` only graphs with that context type (`StateGraph<S, C>`)",
    note = "a plain `#[tool]` function (neither) fits every graph"
)]
pub trait Tool<S: State, C = ()>: Send + Sync + 'static {
    /// The tool as the model sees it: name, description and the JSON
    /// Schema of its arguments.
    fn spec(&self) -> &ToolSpec;

    /// Runs the tool on one call: its arguments as the model wrote them
    /// (JSON, not yet checked), the call's id, the state the node read
    /// and the node's context. Arguments that do not fit are
    /// [`ToolError::InvalidArgs`].
    fn call(&self, input: ToolInput<S, C>) -> ToolFuture<S::Delta>;
}

impl<S: State, C, T: Tool<S, C> + ?Sized> Tool<S, C> for Arc<T> {
    fn spec(&self) -> &ToolSpec {
        (**self).spec()
    }

    fn call(&self, input: ToolInput<S, C>) -> ToolFuture<S::Delta> {
        (**self).call(input)
    }
}

/// One call of a tool, as [`Tool::call`] receives it (made by the tool
/// node).
#[non_exhaustive]
pub struct ToolInput<S, C> {
    /// The arguments the model wrote (usually a JSON object).
    pub args: Value,
    /// The id of the call, which the answering tool message names.
    pub call_id: String,
    /// The state the tool node read.
    pub state: Arc<S>,
    /// The tool node's context: interrupts, the run's context, the store.
    pub ctx: Ctx<C>,
}

impl<S, C> fmt::Debug for ToolInput<S, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolInput")
            .field("args", &self.args)
            .field("call_id", &self.call_id)
            .finish_non_exhaustive()
    }
}

/// What a tool gives back: the content of the tool message that answers
/// the call, or a [`Command`] (an update and where the run goes: a
/// handoff), whose update answers the call itself.
#[non_exhaustive]
pub enum ToolOutput<D> {
    /// The answer's content.
    Content(Content),
    /// An update and targets (LangGraph's tool returning `Command`).
    Command(Command<D>),
}

impl<D> ToolOutput<D> {
    /// An answer with `content`.
    pub fn content(content: impl Into<Content>) -> ToolOutput<D> {
        ToolOutput::Content(content.into())
    }
}

impl<D: fmt::Debug> fmt::Debug for ToolOutput<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolOutput::Content(content) => f.debug_tuple("Content").field(content).finish(),
            ToolOutput::Command(command) => f.debug_tuple("Command").field(command).finish(),
        }
    }
}

/// Why a tool call gave no output: its arguments do not fit its schema,
/// or the tool itself failed. A [`ToolNode`](crate::ToolNode) answers
/// either with an error tool message the model can read (or fails the
/// run, as its [`ToolErrors`](crate::ToolErrors) policy says).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// The arguments do not fit: which fields, and why.
    #[error("{0}")]
    InvalidArgs(ArgsError),
    /// The tool's own error.
    #[error("{0}")]
    Failed(BoxError),
}

impl ToolError {
    /// The tool failed with `error` (any error type, a `String`, an
    /// `anyhow::Error`...).
    pub fn failed(error: impl Into<BoxError>) -> ToolError {
        ToolError::Failed(error.into())
    }

    /// Whether this is a pause ([`Ctx::interrupt`]) passed on as the
    /// tool's error: the run pauses, the model is not answered.
    pub fn is_interrupt(&self) -> bool {
        match self {
            ToolError::Failed(e) => e.is::<state_graph::Interrupted>(),
            ToolError::InvalidArgs(_) => false,
        }
    }
}

/// Arguments that do not fit a tool's schema: one [`ArgError`] per field
/// that is wrong, missing or unknown, in the order of the parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgsError {
    /// What is wrong, field by field.
    pub errors: Vec<ArgError>,
}

/// One field of a call's arguments that does not fit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgError {
    /// The field, as a dotted path into nested objects and lists
    /// (`filter.range.start`, `items.2.name`); empty when the arguments
    /// as a whole are wrong (not an object).
    pub field: String,
    /// Why: serde's message (`invalid type: integer `3`, expected a
    /// string`), `missing`, or `unknown field, expected one of ...`.
    pub message: String,
}

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.field, self.message)
        }
    }
}

impl fmt::Display for ArgsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, error) in self.errors.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{error}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ArgsError {}

/// The id of the tool call being answered (LangGraph's
/// `InjectedToolCallId`): a `#[tool]` function taking a parameter of this
/// type gets it, outside the schema. A tool returning a [`Command`] needs
/// it, to answer its call in the command's update.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct ToolCallId(pub String);

impl ToolCallId {
    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ToolCallId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<ToolCallId> for String {
    fn from(id: ToolCallId) -> String {
        id.0
    }
}
