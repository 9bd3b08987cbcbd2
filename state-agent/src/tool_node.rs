//! [`ToolNode`]: LangGraph's prebuilt `ToolNode`, typed: it runs every
//! tool call of the last AI message, concurrently, and answers each, in
//! call order, with a tool message.

use crate::messages_field::{MessagesField, invalid_calls};
use crate::tool::{Tool, ToolError, ToolInput, ToolOutput};
use crate::tool_spec::ToolSpec;
use futures::StreamExt;
use serde_json::{Value, json};
use state_core::{Content, Delta, Message, State, ToolCall};
use state_graph::{Command, Ctx, GraphState, IntoNode, Node, NodeError};
use std::sync::Arc;

/// What a [`ToolNode`] does when a call goes wrong (LangGraph's
/// `handle_tool_errors`).
///
/// The default, [`Answer`](ToolErrors::Answer), answers every failed call
/// with an error tool message (`status: "error"`) that the model reads and
/// can act on: in Rust, a tool's `Err` is an ordinary result, not a crash.
/// LangGraph 1.x answers only invalid calls and re-raises a tool's own
/// error ([`AnswerInvalidCalls`](ToolErrors::AnswerInvalidCalls) here).
/// An interrupt in a tool always pauses the run, whatever the policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ToolErrors {
    /// Every error is answered: unknown tools, arguments that do not fit
    /// the schema, and the tools' own errors (the default).
    #[default]
    Answer,
    /// Unknown tools and arguments that do not fit are answered; a tool's
    /// own error fails the run (LangGraph 1.x's default).
    AnswerInvalidCalls,
    /// Every error fails the run, naming the tool and the call.
    Fail,
}

/// A tool call that failed the run: its tool, its id, and why (see
/// [`ToolErrors`]).
#[derive(Debug, thiserror::Error)]
#[error("tool `{tool}` (call {call_id}) failed: {error}")]
pub struct ToolCallError {
    /// The tool's name, as the model called it.
    pub tool: String,
    /// The call's id.
    pub call_id: String,
    /// What went wrong.
    #[source]
    pub error: ToolError,
}

/// The default bound on the calls a [`ToolNode`] runs at once.
pub const DEFAULT_MAX_CONCURRENCY: usize = 16;

/// LangGraph's `ToolNode`: a node that runs every tool call of the last AI
/// message of the state, at most [`max_concurrency`] at once, and answers
/// each with a tool message (its `tool_call_id` and the tool's name), in
/// the order of the calls. Add it with `add_node`; route to it with
/// [`tools_condition`](crate::tools_condition).
///
/// It works on any state with a messages field: `MessagesState`, a state
/// that flattens it, or one with its own `#[reducer(add_messages)]` field
/// (a `Messages` or a `Vec<Message>`; the one named `messages`, or the
/// only one, or the one [`messages_key`] names).
///
/// A call of a tool it does not have, arguments that do not fit the
/// tool's schema (the message says which field and why), the model's
/// unparsable arguments (LangChain's `invalid_tool_calls`) and a tool's
/// own error are answered with an error message the model reads, or fail
/// the run: see [`ToolErrors`]. A tool returning a [`Command`] answers its
/// call in the command's update (LangGraph's rule: without a tool message
/// for its call there, the run fails); the node returns one command with
/// every answer and update (merged as parallel writes) and every target
/// (declare them with `destinations`). A command sent to the parent graph
/// takes the whole node's update with it.
///
/// An interrupt in a tool ([`Ctx::interrupt`]) pauses the run; on resume
/// the node runs again, every call of the message with it, as LangGraph's
/// `ToolNode` does as a node (its `create_react_agent` v2 sends one task
/// per call instead). So put a tool's interrupt before its side effects,
/// and before its first `.await`: the calls start in call order, so each
/// call's interrupt then gets its own answer on resume.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use serde_json::json;
/// use state_agent::{ToolNode, tool, tools_condition};
/// use state_core::{Message, MessagesState, State, ToolCall};
/// use state_graph::{END, START, StateGraph};
///
/// /// Adds two numbers.
/// #[tool]
/// fn add(a: i64, b: i64) -> i64 {
///     a + b
/// }
///
/// let mut g = StateGraph::<MessagesState>::new();
/// g.add_node("tools", ToolNode::new([add]));
/// g.add_edge(START, "tools").add_edge("tools", END);
/// let app = g.compile()?;
/// let call = ToolCall::new("add", json!({"a": 2, "b": 3})).with_id("c1");
/// let out = app
///     .invoke(MessagesState::delta().messages(vec![Message::ai("").with_tool_calls([call])]))
///     .await?;
/// assert_eq!(out.messages[1].text(), "5");
/// assert_eq!(out.messages[1].tool_call_id(), Some("c1"));
/// # let _ = tools_condition::<MessagesState>;
/// # Ok(())
/// # }
/// ```
///
/// # Panics
///
/// Adding it to a graph (`add_node`) panics when the state has no
/// messages field (or not the one [`messages_key`] names), or when two of
/// its tools have one name: mistakes in building the graph, not in running
/// it.
///
/// [`max_concurrency`]: ToolNode::max_concurrency
/// [`messages_key`]: ToolNode::messages_key
pub struct ToolNode<S: State, C = ()> {
    tools: Vec<Arc<dyn Tool<S, C>>>,
    messages_key: Option<String>,
    errors: ToolErrors,
    max_concurrency: usize,
}

impl<S: State + 'static, C: 'static> std::fmt::Debug for ToolNode<S, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolNode")
            .field(
                "tools",
                &self
                    .tools
                    .iter()
                    .map(|t| t.spec().name.as_str())
                    .collect::<Vec<_>>(),
            )
            .field("errors", &self.errors)
            .field("max_concurrency", &self.max_concurrency)
            .finish_non_exhaustive()
    }
}

impl<S, C> ToolNode<S, C>
where
    S: GraphState,
    C: Send + Sync + 'static,
{
    /// A node running `tools`: `#[tool]` functions by name
    /// (`ToolNode::new([get_weather, search])`), or any `&'static` value
    /// implementing [`Tool`].
    pub fn new<const N: usize>(tools: [&'static dyn Tool<S, C>; N]) -> Self {
        Self::from_tools(tools.map(|t| Arc::new(Static(t)) as Arc<dyn Tool<S, C>>))
    }

    /// A node running `tools`, shared.
    pub fn from_tools(tools: impl IntoIterator<Item = Arc<dyn Tool<S, C>>>) -> Self {
        ToolNode {
            tools: tools.into_iter().collect(),
            messages_key: None,
            errors: ToolErrors::default(),
            max_concurrency: DEFAULT_MAX_CONCURRENCY,
        }
    }

    /// With one more tool: a value implementing [`Tool`] (one that holds a
    /// client, say).
    pub fn with_tool(mut self, tool: impl Tool<S, C>) -> Self {
        self.tools.push(Arc::new(tool));
        self
    }

    /// Reads and writes the messages field `key` (LangGraph's
    /// `messages_key`), for a state with several `add_messages` fields.
    pub fn messages_key(mut self, key: impl Into<String>) -> Self {
        self.messages_key = Some(key.into());
        self
    }

    /// What to do when a call goes wrong: [`ToolErrors`] (every error is
    /// answered by default).
    pub fn handle_tool_errors(mut self, policy: ToolErrors) -> Self {
        self.errors = policy;
        self
    }

    /// Runs at most `n` calls at once ([`DEFAULT_MAX_CONCURRENCY`] by
    /// default; 1 runs them one after the other).
    pub fn max_concurrency(mut self, n: usize) -> Self {
        self.max_concurrency = n.max(1);
        self
    }

    /// The tools' specs, for a model's `bind_tools`.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools.iter().map(|t| t.spec().clone()).collect()
    }

    /// The runner this node is: its messages field found and its tools
    /// checked.
    pub(crate) fn runner(self) -> Arc<Runner<S, C>> {
        let field = MessagesField::of::<S>(self.messages_key.as_deref())
            .unwrap_or_else(|e| panic!("ToolNode: {e}"));
        for (i, tool) in self.tools.iter().enumerate() {
            let name = &tool.spec().name;
            if self.tools[..i].iter().any(|t| &t.spec().name == name) {
                panic!("ToolNode: two tools are named `{name}`");
            }
        }
        Arc::new(Runner {
            tools: self.tools,
            field,
            errors: self.errors,
            max_concurrency: self.max_concurrency,
        })
    }
}

/// A `&'static` tool, shared.
struct Static<S: State + 'static, C: 'static>(&'static dyn Tool<S, C>);

impl<S: State + 'static, C: 'static> Tool<S, C> for Static<S, C> {
    fn spec(&self) -> &ToolSpec {
        self.0.spec()
    }

    fn call(&self, input: ToolInput<S, C>) -> crate::ToolFuture<S::Delta> {
        self.0.call(input)
    }
}

/// Tells [`ToolNode`]'s node form apart from the function forms
/// (inferred; never written).
#[doc(hidden)]
pub struct AsNode;

impl<S, C> IntoNode<S, C, S::Delta, AsNode> for ToolNode<S, C>
where
    S: GraphState,
    C: Send + Sync + 'static,
{
    fn into_node(self) -> Node<S, C, S::Delta> {
        let runner = self.runner();
        let node = move |state: Arc<S>, ctx: Ctx<C>| {
            let runner = runner.clone();
            async move { runner.run(state, ctx).await }
        };
        node.into_node()
    }
}

/// A [`ToolNode`] ready to run.
pub(crate) struct Runner<S: State, C> {
    tools: Vec<Arc<dyn Tool<S, C>>>,
    pub(crate) field: MessagesField,
    errors: ToolErrors,
    max_concurrency: usize,
}

/// How one call was answered.
enum Answer<D> {
    Message(Message),
    Command(Command<D>, String),
}

impl<S, C> Runner<S, C>
where
    S: GraphState,
    C: Send + Sync + 'static,
{
    /// Answers every call of the last AI message of `state`.
    pub(crate) async fn run(
        &self,
        state: Arc<S>,
        ctx: Ctx<C>,
    ) -> Result<Command<S::Delta>, NodeError> {
        let Some(message) = self.field.last_ai(&*state) else {
            return Ok(Command::default());
        };
        let calls: Vec<ToolCall> = message.tool_calls().to_vec();
        let invalid: Vec<Value> = invalid_calls(message).to_vec();
        let answers: Vec<Result<Answer<S::Delta>, NodeError>> = if calls.len() <= 1 {
            // One call (or none): no stream to set up.
            let mut out = Vec::with_capacity(1);
            for call in calls {
                out.push(self.one(call, &state, &ctx).await);
            }
            out
        } else {
            futures::stream::iter(calls.into_iter().map(|call| self.one(call, &state, &ctx)))
                .buffered(self.max_concurrency)
                .collect()
                .await
        };
        let mut messages = Vec::with_capacity(answers.len() + invalid.len());
        let mut commands = Vec::new();
        let mut failed = None;
        for answer in answers {
            match answer {
                Ok(Answer::Message(m)) => messages.push(m),
                Ok(Answer::Command(c, id)) => commands.push((c, id)),
                Err(e) if e.is_interrupt() => return Err(e),
                Err(e) => {
                    failed.get_or_insert(e);
                }
            }
        }
        if let Some(e) = failed {
            return Err(e);
        }
        for call in &invalid {
            messages.push(self.invalid_call(call)?);
        }
        self.combine(messages, commands)
    }

    /// Answers one call.
    async fn one(
        &self,
        call: ToolCall,
        state: &Arc<S>,
        ctx: &Ctx<C>,
    ) -> Result<Answer<S::Delta>, NodeError> {
        let call_id = call.id.clone().unwrap_or_default();
        let Some(tool) = self.tools.iter().find(|t| t.spec().name == call.name) else {
            let available: Vec<&str> = self.tools.iter().map(|t| t.spec().name.as_str()).collect();
            if self.errors == ToolErrors::Fail {
                return Err(NodeError::msg(format!(
                    "the model called tool `{}` (call {call_id}), which is not one of [{}]",
                    call.name,
                    available.join(", ")
                )));
            }
            let text = format!(
                "Error: {} is not a valid tool, try one of [{}].",
                call.name,
                available.join(", ")
            );
            return Ok(Answer::Message(error_message(&call, text)));
        };
        let input = ToolInput {
            args: call.args.clone(),
            call_id: call_id.clone(),
            state: state.clone(),
            ctx: ctx.clone(),
        };
        match tool.call(input).await {
            Ok(ToolOutput::Content(content)) => Ok(Answer::Message(answer(&call, content))),
            Ok(ToolOutput::Command(command)) => Ok(Answer::Command(command, call_id)),
            Err(e) if e.is_interrupt() => Err(NodeError::new(state_graph::Interrupted)),
            Err(ToolError::InvalidArgs(e)) if self.errors != ToolErrors::Fail => {
                let text = format!(
                    "Error invoking tool '{}' with kwargs {} with error:\n{e}\n Please fix the error and try again.",
                    call.name, call.args
                );
                Ok(Answer::Message(error_message(&call, text)))
            }
            Err(ToolError::Failed(e)) if self.errors == ToolErrors::Answer => {
                let text = format!("Error: {e}\n Please fix your mistakes.");
                Ok(Answer::Message(error_message(&call, text)))
            }
            Err(error) => Err(NodeError::new(crate::ToolCallError {
                tool: call.name,
                call_id,
                error,
            })),
        }
    }

    /// The answer to a call whose arguments were not JSON.
    fn invalid_call(&self, call: &Value) -> Result<Message, NodeError> {
        let name = call["name"].as_str().unwrap_or_default();
        let id = call["id"].as_str().unwrap_or_default();
        let args = call["args"].as_str().unwrap_or_default();
        let error = call["error"]
            .as_str()
            .unwrap_or("the arguments are not JSON");
        if self.errors == ToolErrors::Fail {
            return Err(NodeError::msg(format!(
                "the model called tool `{name}` (call {id}) with arguments that are not JSON: {error}"
            )));
        }
        let text = format!(
            "Error invoking tool '{name}' with kwargs {args} with error:\n{error}\n Please fix the error and try again."
        );
        Ok(Message::tool(text, id)
            .with_name(name)
            .with_extra("status", json!("error")))
    }

    /// One command: the answers, then each command's update (merged as
    /// parallel writes), and every command's targets.
    fn combine(
        &self,
        messages: Vec<Message>,
        commands: Vec<(Command<S::Delta>, String)>,
    ) -> Result<Command<S::Delta>, NodeError> {
        let mut update = if messages.is_empty() {
            None
        } else {
            Some(self.field.delta::<S>(messages).map_err(NodeError::new)?)
        };
        if commands.is_empty() {
            return Ok(update.map_or_else(Command::default, |u| Command::default().update(u)));
        }
        let mut targets = Vec::new();
        let mut parent = false;
        for (command, call_id) in commands {
            parent |= command.is_to_parent();
            let to_parent = command.is_to_parent();
            let (more, goto) = command.into_parts();
            if !to_parent && !answers_call(more.as_ref(), self.field.key(), &call_id) {
                return Err(NodeError::msg(format!(
                    "a tool returned a Command that does not answer its call {call_id}: \
                     put a tool message for it in the update (`Message::tool(content, id)`, \
                     the id from a `ToolCallId` parameter)"
                )));
            }
            targets.extend(goto);
            update = match (update, more) {
                (Some(a), Some(b)) => Some(a.merge(b).map_err(NodeError::new)?),
                (a, b) => a.or(b),
            };
        }
        let mut command = Command::goto(targets);
        if let Some(update) = update {
            command = command.update(update);
        }
        Ok(if parent { command.to_parent() } else { command })
    }
}

/// The tool message answering `call` with `content`.
fn answer(call: &ToolCall, content: Content) -> Message {
    Message::tool_result(call, content)
}

/// The error tool message answering `call` (`status: "error"`).
fn error_message(call: &ToolCall, text: String) -> Message {
    Message::tool_result(call, text).with_extra("status", json!("error"))
}

/// Whether `update` writes a tool message answering `call_id` to the
/// messages field `key`.
fn answers_call<D: serde::Serialize>(update: Option<&D>, key: &str, call_id: &str) -> bool {
    fn find(value: &Value, call_id: &str) -> bool {
        match value {
            Value::Array(items) => items.iter().any(|v| find(v, call_id)),
            Value::Object(map) => {
                map.get("tool_call_id").and_then(Value::as_str) == Some(call_id)
                    || map.values().any(|v| find(v, call_id))
            }
            _ => false,
        }
    }
    let Some(update) = update else {
        return false;
    };
    match serde_json::to_value(update) {
        Ok(value) => value.get(key).is_some_and(|v| find(v, call_id)),
        Err(_) => false,
    }
}
