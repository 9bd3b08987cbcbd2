//! [`react_agent`]: LangGraph's `create_react_agent`, as a graph you can
//! still add to: a model node that calls tools, a tool node, and the loop
//! between them.

use crate::condition::route;
use crate::messages_field::{MessagesField, asks_for_tools};
use crate::model::{ChatModel, ChatModelExt};
use crate::tool::Tool;
use crate::tool_node::{ToolErrors, ToolNode};
use state_core::{Message, MessagesState, State};
use state_graph::{
    CompiledGraph, Ctx, END, GraphError, GraphState, NodeError, NodeResult, START, StateGraph,
};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// What the agent answers when the run has too few supersteps left to
/// call its tools and read their answers (LangGraph's words).
pub const NEED_MORE_STEPS: &str = "Sorry, need more steps to process this request.";

/// The node that makes the structured response.
const STRUCTURED_RESPONSE: &str = "generate_structured_response";

type PromptFn<S> = Arc<dyn Fn(&S) -> Vec<Message> + Send + Sync>;

/// The structured response's node, erased: the model and the
/// conversation in, the delta out.
type RespondFn<D> = Arc<
    dyn Fn(Arc<dyn ChatModel>, Vec<Message>) -> Pin<Box<dyn Future<Output = NodeResult<D>> + Send>>
        + Send
        + Sync,
>;

/// A shared model, as a sized one (what `with_structured_output` takes).
struct Shared(Arc<dyn ChatModel>);

impl ChatModel for Shared {
    fn provider(&self) -> &str {
        self.0.provider()
    }

    fn model(&self) -> &str {
        self.0.model()
    }

    fn stream_reply(&self, request: crate::model::ModelRequest) -> crate::model::ChunkStream {
        self.0.stream_reply(request)
    }
}

/// LangGraph's `create_react_agent(model, tools)` on `MessagesState`: a
/// model that calls `tools` until it answers without a tool call. See
/// [`ReactAgent`] for the graph and its options; [`ReactAgent::new`] for
/// another state (one that extends `MessagesState`) or a context.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use serde_json::json;
/// use state_agent::{FakeChatModel, react_agent, tool};
/// use state_core::{Message, MessagesState, State, ToolCall};
///
/// /// Get the current weather for a city.
/// #[tool]
/// async fn get_weather(
///     /// The city name.
///     city: String,
/// ) -> Result<String, std::io::Error> {
///     Ok(format!("It is sunny in {city}."))
/// }
///
/// let model = FakeChatModel::new([
///     Message::ai("").with_tool_calls([
///         ToolCall::new("get_weather", json!({"city": "Oslo"})).with_id("c1"),
///     ]),
///     Message::ai("Sunny in Oslo."),
/// ]);
/// let app = react_agent(model.clone(), [get_weather])
///     .prompt("You are a weather bot.")
///     .compile()?;
/// let out = app
///     .invoke(MessagesState::delta().messages(vec![Message::human("weather in Oslo?")]))
///     .await?;
/// let texts: Vec<String> = out.messages.iter().map(Message::text).collect();
/// assert_eq!(texts, ["weather in Oslo?", "", "It is sunny in Oslo.", "Sunny in Oslo."]);
/// // The model saw the prompt first, and the tool's schema.
/// let asked = &model.requests()[0];
/// assert_eq!(asked.messages[0].text(), "You are a weather bot.");
/// assert_eq!(asked.tools[0].name, "get_weather");
/// # Ok(())
/// # }
/// ```
pub fn react_agent<M: ChatModel, const N: usize>(
    model: M,
    tools: [&'static dyn Tool<MessagesState>; N],
) -> ReactAgent<MessagesState> {
    ReactAgent::new(model, tools)
}

/// A ReAct agent being built (LangGraph's `create_react_agent`): two
/// nodes, `"agent"` (the model, with the tools bound, after the prompt)
/// and `"tools"` (a [`ToolNode`]), from `START` to `"agent"`, from
/// `"agent"` to `"tools"` when its reply calls tools (else to `END`), and
/// from `"tools"` back to `"agent"`. [`compile`](ReactAgent::compile) it,
/// or take the [`StateGraph`] ([`into_graph`](ReactAgent::into_graph)) to
/// add nodes, breakpoints or a subgraph first.
///
/// As LangGraph's, when the reply calls tools but the run has fewer than
/// two supersteps left (its recursion limit; LangGraph's
/// `remaining_steps`), the agent answers [`NEED_MORE_STEPS`] instead, so
/// the run ends with an answer rather than a recursion error.
///
/// With [`response_format`](ReactAgent::response_format), a third node,
/// `"generate_structured_response"`, runs when the loop ends (LangGraph's
/// `response_format`). Not yet: `pre_model_hook`, `post_model_hook` and
/// `return_direct` tools.
pub struct ReactAgent<S: State, C = ()> {
    /// The model as given, for the structured response.
    raw: Arc<dyn ChatModel>,
    /// The model with the tools bound.
    model: Arc<dyn ChatModel>,
    tools: ToolNode<S, C>,
    prompt: Option<PromptFn<S>>,
    interrupt_before_tools: bool,
    respond: Option<RespondFn<S::Delta>>,
}

impl<S: State + 'static, C: 'static> std::fmt::Debug for ReactAgent<S, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReactAgent")
            .field("model", &self.model.model())
            .field("tools", &self.tools)
            .field("prompt", &self.prompt.is_some())
            .field("interrupt_before_tools", &self.interrupt_before_tools)
            .field("response_format", &self.respond.is_some())
            .finish()
    }
}

impl<S, C> ReactAgent<S, C>
where
    S: GraphState,
    C: Send + Sync + 'static,
{
    /// An agent over the state `S` (any state with a messages field: one
    /// that flattens `MessagesState`, say), in graphs whose runs carry a
    /// context `C`, calling `model` with `tools`.
    ///
    /// ```
    /// use state_agent::{FakeChatModel, ReactAgent, tool};
    /// use state_core::{AgentState, MessagesState};
    ///
    /// #[derive(AgentState, Debug, Clone)]
    /// struct Support {
    ///     #[state(flatten)]
    ///     base: MessagesState,
    ///     customer: String,
    /// }
    ///
    /// /// Reads the customer's name from the state.
    /// #[tool]
    /// fn whoami(state: &Support) -> String {
    ///     state.customer.clone()
    /// }
    ///
    /// let agent = ReactAgent::<Support>::new(FakeChatModel::new([]), [whoami]);
    /// assert!(agent.compile().is_ok());
    /// ```
    pub fn new<M: ChatModel, const N: usize>(
        model: M,
        tools: [&'static dyn Tool<S, C>; N],
    ) -> Self {
        Self::with_tools(model, ToolNode::new(tools))
    }

    /// An agent calling `model` with the tools of `tools` (a tool node
    /// built with its own options: tools that hold clients, an error
    /// policy, a concurrency bound).
    pub fn with_tools<M: ChatModel>(model: M, tools: ToolNode<S, C>) -> Self {
        let specs = tools.specs();
        let raw: Arc<dyn ChatModel> = Arc::new(model);
        let model: Arc<dyn ChatModel> = if specs.is_empty() {
            raw.clone()
        } else {
            Arc::new(Shared(raw.clone()).bind_tools(specs))
        };
        ReactAgent {
            raw,
            model,
            tools,
            prompt: None,
            interrupt_before_tools: false,
            respond: None,
        }
    }

    /// A structured final response (LangGraph's `response_format`): when
    /// the model answers without calling a tool, the conversation is given
    /// once more to the model, made to answer with a `T`
    /// ([`with_structured_output`](ChatModelExt::with_structured_output)),
    /// and `write` makes the delta that stores it (LangGraph's
    /// `structured_response` key: a field of your state). A reply that
    /// does not fit `T` fails the run with the model's parse error.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use serde::{Deserialize, Serialize};
    /// use serde_json::json;
    /// use state_agent::{FakeChatModel, ReactAgent, tool};
    /// use state_core::{AgentState, Message, MessagesState, State, ToolCall};
    ///
    /// /// The answer.
    /// #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
    /// struct Sum {
    ///     value: i64,
    /// }
    ///
    /// #[derive(AgentState, Debug, Clone)]
    /// struct Math {
    ///     #[state(flatten)]
    ///     base: MessagesState,
    ///     sum: Option<Sum>,
    /// }
    ///
    /// /// Adds two numbers.
    /// #[tool]
    /// fn add(a: i64, b: i64) -> i64 {
    ///     a + b
    /// }
    ///
    /// let model = FakeChatModel::new([
    ///     Message::ai("").with_tool_calls([ToolCall::new("add", json!({"a": 2, "b": 2})).with_id("c1")]),
    ///     Message::ai("It is 4."),
    ///     Message::ai("").with_tool_calls([ToolCall::new("Sum", json!({"value": 4})).with_id("c2")]),
    /// ]);
    /// let app = ReactAgent::<Math>::new(model, [add])
    ///     .response_format(|sum: Sum| Math::delta().sum(Some(sum)))
    ///     .compile()?;
    /// let out = app.invoke(Math::delta().messages(vec![Message::human("2 + 2?")])).await?;
    /// assert_eq!(out.sum, Some(Sum { value: 4 }));
    /// assert_eq!(out.base.messages.last().unwrap().text(), "It is 4.");
    /// # Ok(())
    /// # }
    /// ```
    pub fn response_format<T, F>(mut self, write: F) -> Self
    where
        T: serde::de::DeserializeOwned + schemars::JsonSchema + Send + 'static,
        F: Fn(T) -> S::Delta + Send + Sync + 'static,
    {
        let write = Arc::new(write);
        self.respond = Some(Arc::new(move |model, messages| {
            let write = write.clone();
            Box::pin(async move {
                let value = Shared(model)
                    .with_structured_output::<T>()
                    .invoke(messages)
                    .await?;
                Ok(write(value))
            })
        }));
        self
    }

    /// A system message put before the conversation on every model call
    /// (LangGraph's `prompt="..."`).
    pub fn prompt(mut self, system: impl Into<String>) -> Self {
        let system = Message::system(system.into());
        self.prompt = Some(Arc::new(move |_| vec![system.clone()]));
        self
    }

    /// Messages made from the state, put before the conversation on every
    /// model call (LangGraph's callable `prompt`).
    pub fn prompt_with(
        mut self,
        prompt: impl Fn(&S) -> Vec<Message> + Send + Sync + 'static,
    ) -> Self {
        self.prompt = Some(Arc::new(prompt));
        self
    }

    /// Pauses before the tools run (LangGraph's
    /// `interrupt_before=["tools"]`), for a person to approve the calls:
    /// resume with `continue_thread`, or edit the calls first with
    /// `update_state`. Needs a store: a run in memory cannot pause.
    pub fn interrupt_before_tools(mut self) -> Self {
        self.interrupt_before_tools = true;
        self
    }

    /// What the tool node does when a call goes wrong ([`ToolErrors`]).
    pub fn handle_tool_errors(mut self, policy: ToolErrors) -> Self {
        self.tools = self.tools.handle_tool_errors(policy);
        self
    }

    /// The graph: `"agent"` and `"tools"`, wired as described above, to
    /// add to before compiling.
    ///
    /// # Panics
    ///
    /// When the state has no messages field (see [`ToolNode`]).
    pub fn into_graph(self) -> StateGraph<S, C> {
        let field = MessagesField::of::<S>(None).unwrap_or_else(|e| panic!("react_agent: {e}"));
        let has_tools = !self.tools.specs().is_empty();
        let model = self.model;
        let prompt = self.prompt;
        let raw = self.raw;
        let respond = self.respond;
        let agent = move |state: Arc<S>, ctx: Ctx<C>| {
            let model = model.clone();
            let prompt = prompt.clone();
            async move {
                let history = field.read(&*state);
                let mut messages = match &prompt {
                    Some(prompt) => prompt(&state),
                    None => Vec::with_capacity(history.len()),
                };
                messages.extend(history.iter().cloned());
                let mut reply = model.invoke(messages).await?;
                if asks_for_tools(&reply) && ctx.remaining_steps() < 2 {
                    let id = reply.id().map(str::to_owned);
                    reply = Message::ai(NEED_MORE_STEPS);
                    if let Some(id) = id {
                        reply = reply.with_id(id);
                    }
                }
                field.delta::<S>(vec![reply]).map_err(NodeError::new)
            }
        };
        let mut g = StateGraph::<S, C>::new();
        g.add_node("agent", agent);
        g.add_edge(START, "agent");
        // Where the loop ends: END, or the structured response first.
        let end = match respond {
            Some(respond) => {
                g.add_node(STRUCTURED_RESPONSE, move |state: Arc<S>| {
                    respond(raw.clone(), field.read(&*state).to_vec())
                });
                g.add_edge(STRUCTURED_RESPONSE, END);
                STRUCTURED_RESPONSE
            }
            None => END,
        };
        if has_tools {
            g.add_node("tools", self.tools);
            g.add_conditional_edges(
                "agent",
                move |s: &S| match route(field, s) {
                    "tools" => "tools",
                    _ => end,
                },
                ["tools", end],
            );
            g.add_edge("tools", "agent");
            if self.interrupt_before_tools {
                g.interrupt_before(["tools"]);
            }
        } else {
            g.add_edge("agent", end);
        }
        g
    }

    /// The agent, compiled: [`into_graph`](ReactAgent::into_graph), then
    /// `compile`.
    pub fn compile(self) -> Result<CompiledGraph<S, C>, GraphError> {
        self.into_graph().compile()
    }
}
