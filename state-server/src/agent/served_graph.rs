//! [`ServedGraph`]: a compiled graph as [`Server::assistant`] serves it,
//! and where its runs' context comes from.
//!
//! [`Server::assistant`]: crate::Server::assistant

use super::served::Decode;
use serde::de::DeserializeOwned;
use state_graph::{CompiledGraph, GraphState};
use std::sync::Arc;

/// A compiled graph as [`Server::assistant`](crate::Server::assistant)
/// serves it. Made from the graph alone (`ServedGraph::new(graph)`, or the
/// graph itself where one is expected), its runs get the context bound in
/// code ([`CompiledGraph::with_context`]) and a run that sends a
/// `context` is refused (422): a context type need not come from JSON (a
/// client, a connection pool). With
/// [`context_from_json`](Self::context_from_json), each run's context
/// (LangGraph's `context`, or its older `config.configurable`, merged key
/// by key over its assistant's) is decoded into the graph's `C` and
/// reaches its nodes as [`Ctx::context`](state_graph::Ctx::context).
///
/// ```
/// use serde::Deserialize;
/// use state_core::{AgentState, State};
/// use state_graph::{Ctx, END, START, StateGraph};
/// use state_server::{Server, ServedGraph};
/// # #[derive(AgentState, Debug, Clone, PartialEq)]
/// # struct Chat { greeting: String }
///
/// #[derive(Deserialize)]
/// struct User { name: String }
///
/// let mut g = StateGraph::<Chat, User>::new();
/// g.add_node("greet", |_: &Chat, ctx: &Ctx<User>| {
///     Chat::delta().greeting(format!("hello, {}", ctx.context().name))
/// });
/// g.add_edge(START, "greet");
/// g.add_edge("greet", END);
/// let routes = Server::new(state_store::Store::memory())
///     // POST /threads/{id}/runs/wait {"assistant_id": "greeter", "context": {"name": "Ada"}}
///     .assistant("greeter", ServedGraph::new(g.compile()?).context_from_json())
///     .router::<Chat>();
/// # Ok::<(), state_graph::GraphError>(())
/// ```
pub struct ServedGraph<S: GraphState, C> {
    pub(crate) graph: CompiledGraph<S, C>,
    pub(crate) decode: Option<Decode<C>>,
    /// The context's JSON Schema, if given
    /// ([`context_schema`](Self::context_schema)).
    pub(crate) context_schema: Option<serde_json::Value>,
}

impl<S, C> ServedGraph<S, C>
where
    S: GraphState,
    C: Send + Sync + 'static,
{
    /// `graph`, its runs given the context bound in code.
    ///
    /// ```
    /// # use state_core::{AgentState, State};
    /// # #[derive(AgentState, Debug, Clone, PartialEq)]
    /// # struct Chat { turns: u32 }
    /// # let mut g = state_graph::StateGraph::<Chat>::new();
    /// # g.add_node("a", |_: &Chat| Chat::delta());
    /// # g.add_edge(state_graph::START, "a");
    /// # g.add_edge("a", state_graph::END);
    /// let served = state_server::ServedGraph::new(g.compile()?);
    /// # Ok::<(), state_graph::GraphError>(())
    /// ```
    pub fn new(graph: CompiledGraph<S, C>) -> ServedGraph<S, C> {
        ServedGraph {
            graph,
            decode: None,
            context_schema: None,
        }
    }

    /// Each run's JSON context, merged over its assistant's, decoded into
    /// `C`. One that does not decode is a 422 naming the field and what
    /// was expected, before the run is created. A run with no context at
    /// all gets the context bound in code if there is one, else `{}`
    /// decoded (a `C` whose fields have defaults).
    ///
    /// ```
    /// # use state_core::{AgentState, State};
    /// # #[derive(AgentState, Debug, Clone, PartialEq)]
    /// # struct Chat { turns: u32 }
    /// #[derive(serde::Deserialize, Default)]
    /// struct Settings { #[serde(default)] verbose: bool }
    /// # let mut g = state_graph::StateGraph::<Chat, Settings>::new();
    /// # g.add_node("a", |_: &Chat| Chat::delta());
    /// # g.add_edge(state_graph::START, "a");
    /// # g.add_edge("a", state_graph::END);
    /// let served = state_server::ServedGraph::new(g.compile()?).context_from_json();
    /// # Ok::<(), state_graph::GraphError>(())
    /// ```
    #[must_use]
    pub fn context_from_json(mut self) -> ServedGraph<S, C>
    where
        C: DeserializeOwned,
    {
        self.decode = Some(Arc::new(|json| {
            serde_path_to_error::deserialize::<_, C>(json).map_err(|error| {
                let path = error.path().to_string();
                match path.as_str() {
                    "." | "?" => format!("context: {}", error.into_inner()),
                    _ => format!("context.{path}: {}", error.into_inner()),
                }
            })
        }));
        self
    }
}

#[cfg(feature = "schemars")]
impl<S, C> ServedGraph<S, C>
where
    S: GraphState,
    C: Send + Sync + 'static,
{
    /// [`context_from_json`](Self::context_from_json), and `C`'s JSON
    /// Schema as the assistant's `context_schema` (`GET
    /// /assistants/{id}/schemas`; LangGraph's is its context class's
    /// pydantic schema), so a client or LangGraph Studio knows what
    /// context to send. One call, since a schema only means something
    /// for a context that comes from JSON. Feature `schemars`.
    ///
    /// ```
    /// # use state_core::{AgentState, State};
    /// # #[derive(AgentState, Debug, Clone, PartialEq)]
    /// # struct Chat { turns: u32 }
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct User {
    ///     /// Who is asking.
    ///     name: String,
    /// }
    /// # let mut g = state_graph::StateGraph::<Chat, User>::new();
    /// # g.add_node("a", |_: &Chat| Chat::delta());
    /// # g.add_edge(state_graph::START, "a");
    /// # g.add_edge("a", state_graph::END);
    /// let served = state_server::ServedGraph::new(g.compile()?).context_schema();
    /// // GET /assistants/{id}/schemas: "context_schema": {"title": "User", "type": "object",
    /// //   "properties": {"name": {"description": "Who is asking.", "type": "string"}}, ...}
    /// # Ok::<(), state_graph::GraphError>(())
    /// ```
    #[must_use]
    pub fn context_schema(self) -> ServedGraph<S, C>
    where
        C: DeserializeOwned + schemars::JsonSchema,
    {
        let mut served = self.context_from_json();
        let mut schema = schemars::schema_for!(C).to_value();
        // A document's `$schema` dialect line: pydantic's schemas have none.
        if let serde_json::Value::Object(map) = &mut schema {
            map.remove("$schema");
        }
        served.context_schema = Some(schema);
        served
    }
}

impl<S, C> From<CompiledGraph<S, C>> for ServedGraph<S, C>
where
    S: GraphState,
    C: Send + Sync + 'static,
{
    fn from(graph: CompiledGraph<S, C>) -> Self {
        ServedGraph::new(graph)
    }
}
