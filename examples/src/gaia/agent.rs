//! GAIA's agent: a chat model with the calendar tool bound, called with a
//! system prompt made from the state and the run's config, and the tool
//! node that runs its calls.
//!
//! - [`custom_fetch_events`](struct@custom_fetch_events) is the calendar tool, a `#[tool]` named
//!   `CUSTOM_FETCH_EVENTS` (GAIA's Composio name), run by [`tool_node`], a
//!   `ToolNode`, which answers each call with a tool message (its
//!   `tool_call_id` and the tool's name; its id is `add_messages`' UUID,
//!   as in LangGraph).
//! - [`call_model`] is the agent node's body (the document's
//!   `my_node(state, config)`): the [`system_prompt`] (the user's name,
//!   timezone and time from `config["configurable"]`, the request, the
//!   memories found), then the conversation; the tools offered are the
//!   user's `selected_tool` alone when they picked one in the UI, else
//!   every tool. Its reply is the node's update; called inside a graph run
//!   streamed with `StreamMode::MESSAGES`, its tokens reach the stream as
//!   they come.
//! - Any `ChatModel` can be the model ([`Gaia::with_model`](super::Gaia::with_model):
//!   `ChatOpenAI`, `ChatAnthropic`). The offline one, [`GaiaModel`], reads
//!   its prompt and decides as GAIA's simulated agent always did: a
//!   request about the calendar (with the calendar tool offered) gets a
//!   `CUSTOM_FETCH_EVENTS` call from the user's time on; the events get an
//!   answer counting them, in the user's timezone; anything else a
//!   greeting by name, with the memories found.

use super::{FETCH_EVENTS, GaiaState, GaiaStateDelta, RunnableConfig};
use serde_json::{Value, json};
use state_agent::{
    ChatModel, ChatModelExt, ChunkStream, FilterOptions, ModelError, ModelRequest, ToolNode,
    filter_messages, tool,
};
use state_core::{Message, MessageKind, State, ToolCall};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The simulated calendar: the events `CUSTOM_FETCH_EVENTS` returns, from
/// `time_min` on.
pub fn fetch_events(time_min: Option<&str>) -> Value {
    json!({
        "time_min": time_min,
        "events": [
            {"summary": "Team standup", "start": "2024-01-02T09:00:00Z"},
            {"summary": "Design review", "start": "2024-01-02T14:00:00Z"}
        ]
    })
}

/// Fetch the user's calendar events.
#[tool(name = "CUSTOM_FETCH_EVENTS")]
pub fn custom_fetch_events(
    /// The earliest start time, ISO 8601 (the user's current time).
    time_min: Option<String>,
) -> Value {
    fetch_events(time_min.as_deref())
}

/// The agent's tools, as a node (`"tools"`): a `ToolNode` over GAIA's
/// state, in graphs whose runs carry the [`RunnableConfig`].
pub fn tool_node() -> ToolNode<GaiaState, RunnableConfig> {
    ToolNode::new([custom_fetch_events])
}

/// The lines of the system prompt, by their labels: what [`GaiaModel`]
/// reads back.
const ASSISTANT: &str = "You are GAIA, a personal assistant.";
const USER: &str = "User: ";
const TIMEZONE: &str = "Timezone: ";
const NOW: &str = "Current time: ";
const REQUEST: &str = "Request: ";
const MEMORY: &str = "Memory: ";

/// The agent's system prompt: who the user is and where (from the run's
/// config, never the state), their request and what the memory found.
pub fn system_prompt(state: &GaiaState, config: &RunnableConfig) -> String {
    let user = &config.configurable;
    let mut lines = vec![ASSISTANT.to_owned()];
    if let Some(name) = &user.user_name {
        lines.push(format!("{USER}{name}"));
    }
    lines.push(format!("{TIMEZONE}{}", user.user_timezone));
    if let Some(now) = &state.current_datetime {
        lines.push(format!("{NOW}{now}"));
    }
    lines.push(format!("{REQUEST}{}", state.query.replace('\n', " ")));
    for memory in &state.memories {
        lines.push(format!("{MEMORY}{}", memory.replace('\n', " ")));
    }
    lines.join("\n")
}

/// The request the agent node makes: the prompt, the conversation, and
/// the tools the user may use (`selected_tool` alone when picked).
///
/// The conversation leaves out its system messages (the memory node's
/// "Found N relevant memories" notes; the memories are in the prompt):
/// one system message, first, is what every provider takes (Anthropic,
/// as `langchain-anthropic`, refuses system messages that are not
/// consecutive).
pub fn model_request(state: &GaiaState, config: &RunnableConfig) -> ModelRequest {
    let conversation = filter_messages(
        state.messages.as_slice(),
        &FilterOptions::new().exclude_types([MessageKind::System]),
    );
    let mut messages = Vec::with_capacity(conversation.len() + 1);
    messages.push(Message::system(system_prompt(state, config)));
    messages.extend(conversation);
    let mut request = ModelRequest::new(messages);
    let selected = config.configurable.selected_tool.as_deref();
    request.tools = tool_node()
        .specs()
        .into_iter()
        .filter(|spec| selected.is_none_or(|tool| spec.name == tool))
        .collect();
    request
}

/// The agent node (the document's `my_node(state, config)`): `model`'s
/// reply to [`model_request`], as the update.
///
/// # Errors
///
/// The model's (a provider's HTTP error, a timeout; never the offline
/// model).
pub async fn call_model(
    model: &dyn ChatModel,
    state: &GaiaState,
    config: &RunnableConfig,
) -> Result<GaiaStateDelta, ModelError> {
    let reply = model.invoke_request(model_request(state, config)).await?;
    Ok(GaiaState::delta().messages(vec![reply]))
}

/// GAIA's model, offline: it reads its system prompt and the conversation
/// and decides by rule (see the module's docs). Its replies and calls are
/// numbered from one counter (`call-1`, `ai-2`), so two models from the
/// same start write the same ids; its text streams a word per chunk.
#[derive(Debug, Default)]
pub struct GaiaModel {
    next_id: AtomicU64,
    delay: Option<Duration>,
}

impl GaiaModel {
    /// A model whose chunks come at once.
    pub fn new() -> GaiaModel {
        GaiaModel::default()
    }

    /// Waits `delay` before each chunk.
    pub fn delay(mut self, delay: Duration) -> GaiaModel {
        self.delay = Some(delay);
        self
    }

    fn id(&self, kind: &str) -> String {
        format!(
            "{kind}-{}",
            self.next_id.fetch_add(1, Ordering::Relaxed) + 1
        )
    }

    /// The reply to `request`.
    fn reply(&self, request: &ModelRequest) -> Message {
        let prompt = Prompt::read(request);
        let offered = request.tools.iter().any(|t| t.name == FETCH_EVENTS);
        match request.messages.last() {
            Some(last) if last.kind() == MessageKind::Tool => {
                let events: Value = serde_json::from_str(&last.text()).unwrap_or(Value::Null);
                let count = events["events"].as_array().map_or(0, Vec::len);
                let text = format!(
                    "You have {count} events tomorrow; I'll suggest a free slot in {}.",
                    prompt.timezone
                );
                Message::ai(text).with_id(self.id("ai"))
            }
            _ if offered && about_calendar(prompt.request) => {
                let args = json!({"time_min": prompt.now});
                let call = ToolCall::new(FETCH_EVENTS, args).with_id(self.id("call"));
                Message::ai("I'll check your calendar")
                    .with_tool_calls([call])
                    .with_id(self.id("ai"))
            }
            _ => {
                let name = prompt.user.unwrap_or("there");
                let text = match prompt.memories.as_slice() {
                    [] => format!("Hi {name}! How can I help?"),
                    memories => format!("Hi {name}! I remember: {}.", memories.join("; ")),
                };
                Message::ai(text).with_id(self.id("ai"))
            }
        }
    }
}

impl ChatModel for GaiaModel {
    fn provider(&self) -> &str {
        "scripted"
    }

    fn model(&self) -> &str {
        "gaia-scripted"
    }

    fn stream_reply(&self, request: ModelRequest) -> ChunkStream {
        let reply = self.reply(&request);
        crate::scripted::stream(self.model(), &reply, &request, self.delay)
    }
}

/// What the model reads in its system prompt.
#[derive(Debug, Default)]
struct Prompt<'a> {
    user: Option<&'a str>,
    timezone: &'a str,
    now: Option<&'a str>,
    request: &'a str,
    memories: Vec<&'a str>,
}

impl<'a> Prompt<'a> {
    fn read(request: &'a ModelRequest) -> Prompt<'a> {
        let mut prompt = Prompt::default();
        let Some(system) = request
            .messages
            .first()
            .filter(|m| m.kind() == MessageKind::System)
        else {
            return prompt;
        };
        let Some(text) = system.content().as_text() else {
            return prompt;
        };
        for line in text.lines() {
            if let Some(name) = line.strip_prefix(USER) {
                prompt.user = Some(name);
            } else if let Some(zone) = line.strip_prefix(TIMEZONE) {
                prompt.timezone = zone;
            } else if let Some(now) = line.strip_prefix(NOW) {
                prompt.now = Some(now);
            } else if let Some(asked) = line.strip_prefix(REQUEST) {
                prompt.request = asked;
            } else if let Some(memory) = line.strip_prefix(MEMORY) {
                prompt.memories.push(memory);
            }
        }
        prompt
    }
}

/// Whether the request is about the calendar: one of its words of four
/// letters or more is.
fn about_calendar(request: &str) -> bool {
    super::keywords(request)
        .iter()
        .any(|word| ["schedule", "meeting", "calendar", "events"].contains(&word.as_str()))
}
