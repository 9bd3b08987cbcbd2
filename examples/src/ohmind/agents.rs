//! OHMind's specialist agents: each a ReAct agent (LangGraph's
//! `create_react_agent(llm, tools=[its MCP tool], prompt=..)`), a chat
//! model with its tool bound, looping through a `ToolNode` until it
//! answers, run as a subgraph by the outer graph's node of that agent.
//!
//! - The MCP tools are `#[tool]`s: [`hem_design`](struct@hem_design), [`smiles_properties`](struct@smiles_properties),
//!   [`orca_single_point`](struct@orca_single_point), [`gromacs_md`](struct@gromacs_md), [`rag_search`](struct@rag_search) (each returns
//!   the fixed result of [`tool_output`]); the model reads their doc
//!   comments and JSON Schemas.
//! - [`Flaky`] wraps a tool with the app's injected failures (an MCP
//!   server that times out): the `ToolNode` answers the failed call with
//!   an error tool message (`status: "error"`), which the outer agent node
//!   turns into OHMind's `error` and a route to the error handler.
//! - [`run_agent`] is one agent's run: the prompt ([`prompt`]), the
//!   request, the model's tool calls and the tools' answers, the model's
//!   answer; it returns the messages the run added.
//! - Any `ChatModel` can be the model
//!   ([`Ohmind::with_model`](super::Ohmind::with_model): `ChatOpenAI`,
//!   `ChatAnthropic`); offline, [`OhmindModel`] calls the one tool it is
//!   offered with the request, then answers with the tool's summary (or,
//!   after an error, says the tool failed).

use super::{AgentSpec, ToolOutput as McpOutput, tool_output};
use serde_json::{Value, json};
use state_agent::{
    ChatModel, ChunkStream, ModelRequest, ReactAgent, Tool, ToolError, ToolFuture, ToolInput,
    ToolNode, ToolSpec, tool,
};
use state_core::{Message, MessageKind, MessagesState, State, ToolCall};
use state_graph::GraphError;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// What a failing MCP server answers (the injected failures).
pub const TIMED_OUT: &str = "MCP server timed out";

/// The MCP result of `tool`, as its `#[tool]` returns it.
fn result_of(tool: &str) -> Value {
    let McpOutput { result, .. } = tool_output(tool);
    result
}

/// Design candidate HEM cations for a goal (OHMind's HEM design MCP
/// server).
#[tool]
pub fn hem_design(
    /// What the cations are for, in the user's words.
    goal: String,
) -> Value {
    let _ = goal;
    result_of("hem_design")
}

/// Compute a molecule's properties (molecular weight, logP) from its
/// SMILES or name.
#[tool]
pub fn smiles_properties(
    /// The molecule: a SMILES string or a name.
    molecule: String,
) -> Value {
    let _ = molecule;
    result_of("smiles_properties")
}

/// Run a DFT single point with ORCA: the molecule's HOMO and LUMO
/// energies and their gap, in eV.
#[tool]
pub fn orca_single_point(
    /// The molecule: a SMILES string or a name.
    molecule: String,
) -> Value {
    let _ = molecule;
    result_of("orca_single_point")
}

/// Run a GROMACS molecular dynamics simulation of a membrane: hydroxide
/// conductivity and water uptake. Hours of compute.
#[tool]
pub fn gromacs_md(
    /// The system to simulate, in the user's words.
    system: String,
    /// Simulated nanoseconds (10 when not given).
    ns: Option<u32>,
) -> Value {
    let _ = (system, ns);
    result_of("gromacs_md")
}

/// Search the literature on anion exchange membranes.
#[tool]
pub fn rag_search(
    /// What to look for.
    query: String,
) -> Value {
    let _ = query;
    result_of("rag_search")
}

/// The `#[tool]` of each MCP tool name.
pub fn mcp_tool(name: &str) -> Option<&'static dyn Tool<MessagesState>> {
    let tool: &'static dyn Tool<MessagesState> = match name {
        "hem_design" => hem_design,
        "smiles_properties" => smiles_properties,
        "orca_single_point" => orca_single_point,
        "gromacs_md" => gromacs_md,
        "rag_search" => rag_search,
        _ => return None,
    };
    Some(tool)
}

/// The calls of each tool still to fail (the app's injected failures).
pub type Failures = Arc<Mutex<BTreeMap<String, u32>>>;

/// Takes one of `tool`'s injected failures, if any is left.
pub fn take_failure(failures: &Failures, tool: &str) -> bool {
    let mut failures = failures.lock().unwrap_or_else(|p| p.into_inner());
    match failures.get_mut(tool) {
        Some(left) if *left > 0 => {
            *left -= 1;
            true
        }
        _ => false,
    }
}

/// A tool whose next calls fail as [`Failures`] says ([`TIMED_OUT`]),
/// else run the tool: a hand-written [`Tool`] around a `#[tool]`.
pub struct Flaky {
    tool: &'static dyn Tool<MessagesState>,
    failures: Failures,
}

impl Flaky {
    /// `tool`, failing when `failures` say so.
    pub fn new(tool: &'static dyn Tool<MessagesState>, failures: Failures) -> Flaky {
        Flaky { tool, failures }
    }
}

impl Tool<MessagesState> for Flaky {
    fn spec(&self) -> &ToolSpec {
        self.tool.spec()
    }

    fn call(
        &self,
        input: ToolInput<MessagesState, ()>,
    ) -> ToolFuture<<MessagesState as State>::Delta> {
        if take_failure(&self.failures, &self.tool.spec().name) {
            return Box::pin(async { Err(ToolError::failed(TIMED_OUT)) });
        }
        self.tool.call(input)
    }
}

/// A shared model as a `ChatModel` (what `ReactAgent` takes).
#[derive(Clone)]
pub struct SharedModel(pub Arc<dyn ChatModel>);

impl ChatModel for SharedModel {
    fn provider(&self) -> &str {
        self.0.provider()
    }

    fn model(&self) -> &str {
        self.0.model()
    }

    fn stream_reply(&self, request: ModelRequest) -> ChunkStream {
        self.0.stream_reply(request)
    }
}

/// The system prompt of `spec`'s agent.
pub fn prompt(spec: &AgentSpec) -> String {
    format!(
        "You are OHMind's {}, an expert in hydroxide exchange membranes. Your task: {}. \
         Call the {} tool to get the data, then answer the user in one or two sentences \
         from its result.",
        spec.name, spec.task, spec.tool
    )
}

/// One run of `spec`'s agent on `request`: the messages it added (the
/// model's tool calls, the `ToolNode`'s answers, the model's answer), in
/// order.
///
/// # Errors
///
/// The inner run's: the model's error (a provider's), or the recursion
/// limit when the model keeps calling tools.
pub async fn run_agent(
    model: Arc<dyn ChatModel>,
    spec: &AgentSpec,
    request: &str,
    failures: Failures,
) -> Result<Vec<Message>, GraphError> {
    let tool = mcp_tool(spec.tool).expect("every agent's tool is a #[tool]");
    let tools = ToolNode::<MessagesState>::from_tools([]).with_tool(Flaky::new(tool, failures));
    let agent = ReactAgent::with_tools(SharedModel(model), tools)
        .prompt(prompt(spec))
        .compile()?;
    let input = MessagesState::delta().messages(vec![Message::human(request)]);
    let out = agent.invoke(input).await?;
    Ok(out.messages.iter().skip(1).cloned().collect())
}

/// OHMind's agents' model, offline: offered one tool, it calls it with
/// the request (`call_<tool>_<n>`), then answers from its result with the
/// tool's summary, or, after an error, says the tool failed. Its replies
/// are numbered from one counter (`ai-<n>`), so two models from the same
/// start write the same ids; its text streams a word per chunk.
#[derive(Debug, Default)]
pub struct OhmindModel {
    calls: AtomicU64,
}

impl OhmindModel {
    /// The offline model.
    pub fn new() -> OhmindModel {
        OhmindModel::default()
    }

    fn next(&self) -> u64 {
        self.calls.fetch_add(1, Ordering::Relaxed) + 1
    }

    fn reply(&self, request: &ModelRequest) -> Message {
        let reply = self.decide(request);
        reply.with_id(format!("ai-{}", self.next()))
    }

    fn decide(&self, request: &ModelRequest) -> Message {
        let Some(tool) = request.tools.first() else {
            return Message::ai("I have no tool for that.");
        };
        match request.messages.last() {
            Some(last) if last.kind() == MessageKind::Tool => {
                if last.extra().get("status") == Some(&json!("error")) {
                    Message::ai(format!("{} failed: {}", tool.name, error_reason(last)))
                } else {
                    Message::ai(tool_output(&tool.name).summary)
                }
            }
            _ => {
                let asked = request
                    .messages
                    .iter()
                    .rev()
                    .find(|m| m.kind() == MessageKind::Human)
                    .map(Message::text)
                    .unwrap_or_default();
                let param = first_required(&tool.parameters).unwrap_or("input");
                let n = self.next();
                let call = ToolCall::new(tool.name.as_str(), json!({ param: asked }))
                    .with_id(format!("call_{}_{n}", tool.name));
                Message::ai("").with_tool_calls([call])
            }
        }
    }
}

impl ChatModel for OhmindModel {
    fn provider(&self) -> &str {
        "scripted"
    }

    fn model(&self) -> &str {
        "ohmind-scripted"
    }

    fn stream_reply(&self, request: ModelRequest) -> ChunkStream {
        let reply = self.reply(&request);
        crate::scripted::stream(self.model(), &reply, &request, None)
    }
}

/// The first required parameter of a tool's JSON Schema.
fn first_required(schema: &Value) -> Option<&str> {
    schema["required"].as_array()?.first()?.as_str()
}

/// Why a tool call failed, from the `ToolNode`'s error message (`Error:
/// <reason>\n Please fix your mistakes.`): its first line, without the
/// `Error: `.
pub fn error_reason(message: &Message) -> String {
    let text = message.text();
    let line = text.lines().next().unwrap_or_default();
    line.strip_prefix("Error: ").unwrap_or(line).to_owned()
}
