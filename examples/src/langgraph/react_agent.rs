//! LangGraph's agents quickstart: `create_react_agent(model, tools,
//! prompt=..)` with a weather tool, its run streamed token by token
//! (`stream_mode="messages"`). The Python original heads
//! `examples/react_agent.rs`; [`build_agent`] is its `agent`.
//!
//! LangGraph's calls and ours:
//! - `def get_weather(city: str) -> str: """Get weather for a given
//!   city."""`: [`get_weather`](struct@get_weather), a `#[tool]` function (its doc comment is
//!   the description the model reads, its argument the JSON Schema).
//! - `create_react_agent(model=.., tools=[get_weather], prompt=..)`:
//!   `react_agent(model, [get_weather]).prompt(..).compile()?`: the
//!   `"agent"` node (the model, tools bound), the `"tools"` node (a
//!   `ToolNode`) and `tools_condition` between them.
//! - `init_chat_model("openai:gpt-4o-mini")`,
//!   `init_chat_model("anthropic:..")`: [`choose_model`] picks
//!   `ChatOpenAI` or `ChatAnthropic` from the environment's keys
//!   ([`ModelEnv`]), or, with none, [`ScriptedModel`], which runs offline.
//! - `for token, metadata in agent.stream(.., stream_mode="messages")`:
//!   `app.stream(input, StreamMode::MESSAGES | StreamMode::UPDATES)`:
//!   `Event::Message { chunk, metadata, .. }` for each token
//!   (`metadata.node` is `langgraph_node`), printed as it comes by
//!   [`stream_answer`]; the updates give the whole tool calls and the tool
//!   results.
//!
//! Where the port differs:
//! - `model="anthropic:claude-3-7-sonnet-latest"` names a provider and a
//!   model in one string; ours builds the provider's model
//!   (`ChatAnthropic::new(model)`), or any other `ChatModel`.
//! - The offline model is ours (LangChain has `GenericFakeChatModel`,
//!   which replays a list and cannot call tools): [`ScriptedModel`] reads
//!   the conversation, calls `get_weather` for the cities it knows, and
//!   answers from the tool's result, streaming its text a word at a time
//!   and its tool call's arguments in two pieces, as a provider does.

use futures::StreamExt;
use serde_json::{Value, json};
use state_agent::anthropic::ChatAnthropic;
use state_agent::openai::ChatOpenAI;
use state_agent::{ChatModel, ChunkStream, ModelRequest, react_agent, tool};
use state_core::{Message, MessageKind, MessagesState, State};
use state_graph::{CompiledGraph, Event, GraphError, StreamMode};
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// The quickstart's question.
pub const QUESTION: &str = "what is the weather in sf";

/// The quickstart's system prompt.
pub const PROMPT: &str = "You are a helpful assistant";

/// The OpenAI model used when `OPENAI_MODEL` is not set.
pub const DEFAULT_OPENAI_MODEL: &str = "gpt-4o-mini";

/// The Anthropic model used when `ANTHROPIC_MODEL` is not set.
pub const DEFAULT_ANTHROPIC_MODEL: &str = "claude-sonnet-4-5";

/// Get weather for a given city.
#[tool]
pub fn get_weather(
    /// The city, as the user named it.
    city: String,
) -> String {
    format!("It's always sunny in {city}!")
}

/// The agent (the quickstart's `create_react_agent(model, tools=[get_weather],
/// prompt="You are a helpful assistant")`), compiled.
///
/// # Errors
///
/// When the graph does not compile (it does: the tests build it).
pub fn build_agent(model: impl ChatModel) -> Result<CompiledGraph<MessagesState>, GraphError> {
    react_agent(model, [get_weather]).prompt(PROMPT).compile()
}

// ---------------------------------------------------------------------------
// Choosing the model.
// ---------------------------------------------------------------------------

/// What the environment says about the model to use: the variables
/// [`ModelEnv::from_env`] reads, an empty one as unset. A value of its own
/// so that tests choose without touching the process's environment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelEnv {
    /// `OPENAI_API_KEY`.
    pub openai_api_key: Option<String>,
    /// `OPENAI_BASE_URL`: any server that speaks OpenAI's Chat
    /// Completions (Ollama, vLLM, llama.cpp's server, LM Studio, ...).
    pub openai_base_url: Option<String>,
    /// `OPENAI_MODEL` ([`DEFAULT_OPENAI_MODEL`] when unset).
    pub openai_model: Option<String>,
    /// `ANTHROPIC_API_KEY`.
    pub anthropic_api_key: Option<String>,
    /// `ANTHROPIC_BASE_URL`.
    pub anthropic_base_url: Option<String>,
    /// `ANTHROPIC_MODEL` ([`DEFAULT_ANTHROPIC_MODEL`] when unset).
    pub anthropic_model: Option<String>,
}

impl ModelEnv {
    /// The process's environment.
    pub fn from_env() -> ModelEnv {
        ModelEnv::from_lookup(|name| std::env::var(name).ok())
    }

    /// The variables as `get` gives them (`std::env::var`, or a map).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> ModelEnv {
        let var = |name: &str| get(name).filter(|value| !value.trim().is_empty());
        ModelEnv {
            openai_api_key: var("OPENAI_API_KEY"),
            openai_base_url: var("OPENAI_BASE_URL"),
            openai_model: var("OPENAI_MODEL"),
            anthropic_api_key: var("ANTHROPIC_API_KEY"),
            anthropic_base_url: var("ANTHROPIC_BASE_URL"),
            anthropic_model: var("ANTHROPIC_MODEL"),
        }
    }
}

/// The model the example runs with: a provider's, or the offline one.
#[derive(Debug, Clone)]
pub enum AgentModel {
    /// OpenAI's Chat Completions, or a server that speaks them.
    OpenAi(ChatOpenAI),
    /// Anthropic's Messages API.
    Anthropic(ChatAnthropic),
    /// The offline model.
    Scripted(ScriptedModel),
}

impl AgentModel {
    fn inner(&self) -> &dyn ChatModel {
        match self {
            AgentModel::OpenAi(model) => model,
            AgentModel::Anthropic(model) => model,
            AgentModel::Scripted(model) => model,
        }
    }
}

impl ChatModel for AgentModel {
    fn provider(&self) -> &str {
        self.inner().provider()
    }

    fn model(&self) -> &str {
        self.inner().model()
    }

    fn stream_reply(&self, request: ModelRequest) -> ChunkStream {
        self.inner().stream_reply(request)
    }
}

/// The model `env` asks for, and a line saying which it is:
/// `ChatOpenAI` when `OPENAI_API_KEY` or `OPENAI_BASE_URL` is set (a local
/// server may take no key), else `ChatAnthropic` when `ANTHROPIC_API_KEY`
/// or `ANTHROPIC_BASE_URL` is, else the offline [`ScriptedModel`]. The
/// line never shows a key.
pub fn choose_model(env: &ModelEnv) -> (AgentModel, String) {
    if env.openai_api_key.is_some() || env.openai_base_url.is_some() {
        let name = env.openai_model.as_deref().unwrap_or(DEFAULT_OPENAI_MODEL);
        let mut model = ChatOpenAI::new(name).temperature(0.0);
        if let Some(url) = &env.openai_base_url {
            model = model.base_url(url.as_str());
        }
        if let Some(key) = &env.openai_api_key {
            model = model.api_key(key.as_str());
        }
        let at = env.openai_base_url.as_deref().unwrap_or("OpenAI's API");
        let line = format!("ChatOpenAI, model {name}, at {at}");
        return (AgentModel::OpenAi(model), line);
    }
    if env.anthropic_api_key.is_some() || env.anthropic_base_url.is_some() {
        let name = env
            .anthropic_model
            .as_deref()
            .unwrap_or(DEFAULT_ANTHROPIC_MODEL);
        let mut model = ChatAnthropic::new(name).temperature(0.0).max_tokens(1024);
        if let Some(url) = &env.anthropic_base_url {
            model = model.base_url(url.as_str());
        }
        if let Some(key) = &env.anthropic_api_key {
            model = model.api_key(key.as_str());
        }
        let at = env
            .anthropic_base_url
            .as_deref()
            .unwrap_or("Anthropic's API");
        let line = format!("ChatAnthropic, model {name}, at {at}");
        return (AgentModel::Anthropic(model), line);
    }
    let line = "the scripted model, offline (set OPENAI_API_KEY, OPENAI_BASE_URL or \
                ANTHROPIC_API_KEY for a real one)"
        .to_owned();
    (AgentModel::Scripted(ScriptedModel::new()), line)
}

// ---------------------------------------------------------------------------
// The offline model.
// ---------------------------------------------------------------------------

/// The cities the scripted model recognizes, as the user may write them.
const CITIES: &[&str] = &[
    "san francisco",
    "sf",
    "new york",
    "nyc",
    "london",
    "paris",
    "tokyo",
    "oslo",
    "berlin",
];

/// A chat model that runs offline: it reads the conversation as a model
/// would and answers by rule. To the last human message it answers with a
/// `get_weather` call for each city it names (when the tool is offered),
/// after a sentence saying so; to tool results, with what they said; to
/// anything else, with what it can do. Its text streams a word per chunk,
/// each tool call's arguments in two pieces, and the last chunk carries
/// the finish reason and a rough token count, as a provider's stream does.
/// Its replies are numbered (`scripted-1`, and calls `call_1_0`), so a run
/// is the same every time.
#[derive(Debug, Default)]
pub struct ScriptedModel {
    replies: AtomicUsize,
    delay: Option<Duration>,
}

impl Clone for ScriptedModel {
    fn clone(&self) -> Self {
        ScriptedModel {
            replies: AtomicUsize::new(self.replies.load(Ordering::Relaxed)),
            delay: self.delay,
        }
    }
}

impl ScriptedModel {
    /// A model whose chunks come at once.
    pub fn new() -> ScriptedModel {
        ScriptedModel::default()
    }

    /// Waits `delay` before each chunk, so that a person sees the tokens
    /// arrive (the example's binary does).
    pub fn delay(mut self, delay: Duration) -> ScriptedModel {
        self.delay = Some(delay);
        self
    }

    /// The reply to `request`, whole (what its chunks merge into), the
    /// `n`th.
    fn reply(&self, request: &ModelRequest, n: usize) -> Message {
        let offered = request.tools.iter().any(|t| t.name == "get_weather");
        let answered: Vec<&Message> = request
            .messages
            .iter()
            .rev()
            .take_while(|m| m.kind() == MessageKind::Tool)
            .collect();
        let reply = if !answered.is_empty() {
            let said: Vec<String> = answered.iter().rev().map(|m| m.text()).collect();
            Message::ai(format!("Here is what I found: {}", said.join(" ")))
        } else {
            let asked = request
                .messages
                .iter()
                .rev()
                .find(|m| m.kind() == MessageKind::Human)
                .map(Message::text)
                .unwrap_or_default();
            let cities = cities_in(&asked);
            match cities.as_slice() {
                [] => Message::ai(
                    "I can tell you the weather: ask me about a city, such as San Francisco.",
                ),
                _ if !offered => Message::ai("I have no weather tool to ask, sorry."),
                _ => {
                    let calls = cities.iter().enumerate().map(|(i, city)| {
                        state_core::ToolCall::new("get_weather", json!({ "city": city }))
                            .with_id(format!("call_{n}_{i}"))
                    });
                    Message::ai(format!(
                        "Let me check the weather in {}.",
                        cities.join(" and ")
                    ))
                    .with_tool_calls(calls)
                }
            }
        };
        reply.with_id(format!("scripted-{n}"))
    }
}

/// The cities `text` names, in order, each once, as written.
fn cities_in(text: &str) -> Vec<String> {
    let words: Vec<&str> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let mut found: Vec<String> = Vec::new();
    for i in 0..words.len() {
        let pair = words.get(i + 1).map(|next| format!("{} {next}", words[i]));
        let named = [pair, Some(words[i].to_owned())].into_iter().flatten();
        let hit = named
            .into_iter()
            .find(|name| CITIES.contains(&name.to_lowercase().as_str()));
        if let Some(city) = hit.filter(|c| !found.iter().any(|f| f.eq_ignore_ascii_case(c))) {
            found.push(city);
        }
    }
    found
}

impl ChatModel for ScriptedModel {
    fn provider(&self) -> &str {
        "scripted"
    }

    fn model(&self) -> &str {
        "scripted-weather"
    }

    fn stream_reply(&self, request: ModelRequest) -> ChunkStream {
        let n = self.replies.fetch_add(1, Ordering::Relaxed) + 1;
        let reply = self.reply(&request, n);
        crate::scripted::stream(self.model(), &reply, &request, self.delay)
    }
}

// ---------------------------------------------------------------------------
// The run, streamed.
// ---------------------------------------------------------------------------

/// Why [`stream_answer`] stopped.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The run failed (the model's error among them, naming the provider).
    #[error(transparent)]
    Graph(#[from] GraphError),
    /// The output could not be written.
    #[error("writing the output: {0}")]
    Io(#[from] std::io::Error),
}

/// Asks `app` `question` and writes the run to `out` as it happens
/// (`agent.stream(.., stream_mode="messages")`): the model's tokens as
/// they come, after `agent: `; then, from the node's update, each tool
/// call it made (`-> get_weather {"city":"sf"}`); each tool result
/// (`tools: get_weather (call_1_0): ...`). Returns the state the run
/// ended with.
///
/// # Errors
///
/// The run's error (a model's: unreachable, a bad key, ...), or `out`'s.
pub async fn stream_answer(
    app: &CompiledGraph<MessagesState>,
    question: &str,
    out: &mut impl Write,
) -> Result<MessagesState, RunError> {
    let input = MessagesState::delta().messages(vec![Message::human(question)]);
    let mut events = app.stream(input, StreamMode::MESSAGES | StreamMode::UPDATES);
    // The reply whose tokens the open line shows.
    let mut streaming: Option<String> = None;
    while let Some(event) = events.next().await {
        match event? {
            Event::Message {
                chunk, metadata, ..
            } if chunk.kind() != MessageKind::Tool => {
                // A piece of a tool call has no text: the update shows the
                // whole call.
                let text = chunk.text();
                if text.is_empty() {
                    continue;
                }
                let id = chunk.id().map(str::to_owned);
                if streaming.is_none() || streaming != id {
                    if streaming.is_some() {
                        writeln!(out)?;
                    }
                    write!(out, "{}: ", metadata.node)?;
                    streaming = id;
                }
                write!(out, "{text}")?;
                out.flush()?;
            }
            Event::Update { node, delta } => {
                let written = delta.get_messages().map_or(&[][..], |w| w.updates());
                for message in written.iter().flatten() {
                    if streaming.take().is_some() {
                        writeln!(out)?;
                    }
                    show(out, &node, message)?;
                }
            }
            Event::End(outcome) => {
                if streaming.is_some() {
                    writeln!(out)?;
                }
                return Ok(outcome.state().clone());
            }
            _ => {}
        }
    }
    Err(GraphError::Invalid("the run's stream ended without its outcome".to_owned()).into())
}

/// A message of a node's update, as the streamed run shows it: an AI
/// message's tool calls (its text was streamed), a tool message whole.
fn show(out: &mut impl Write, node: &str, message: &Message) -> std::io::Result<()> {
    match message.kind() {
        MessageKind::Tool => writeln!(
            out,
            "{node}: {} ({}): {}",
            message.name().unwrap_or("?"),
            message.tool_call_id().unwrap_or("?"),
            message.text()
        ),
        _ => {
            for call in message.tool_calls() {
                writeln!(out, "{node}: -> {} {}", call.name, args_line(&call.args))?;
            }
            Ok(())
        }
    }
}

fn args_line(args: &Value) -> String {
    serde_json::to_string(args).unwrap_or_default()
}
