//! LangGraph's multi-agent supervisor tutorial ("Multi-agent supervisor",
//! its `Command` version): a supervisor LLM picks the next worker (a
//! researcher that searches the web, a coder that runs Python) or
//! `FINISH`; each worker is a ReAct agent whose last message is handed
//! back to the supervisor. The Python original heads
//! `examples/langgraph/supervisor.rs`; [`build_graph`] is its `builder`.
//!
//! Every node routes with a [`Command`]: the supervisor's
//! `Command(goto=goto, update={"next": goto})` is
//! `Command::goto(goto).update(..)`, a worker's `Command(goto="supervisor",
//! update=..)` the same. Where the Python annotates a node's return type
//! (`Command[Literal[*members, "__end__"]]`) for LangGraph to draw and
//! check the graph, ours declares the targets with `.destinations([..])`,
//! which `compile()` checks: every node reachable, every loop able to end.
//!
//! Where the port differs:
//! - The models are canned: [`supervisor_llm`] routes by rule (research
//!   first when the request asks to find something, then the coder when it
//!   asks for math, then `FINISH`), the workers' models
//!   ([`research_llm`], [`code_llm`]) call their tool once and report.
//!   Tavily and the Python REPL are canned too ([`tavily_search`],
//!   [`python_repl`]): fixed answers, no network, no code execution.
//! - `create_react_agent` is LangGraph's prebuilt; here
//!   [`create_react_agent`] builds the same two-node loop (`agent` ⇄
//!   `tools`, `tools_condition`) as a [`StateGraph`] over
//!   `MessagesState`, and the worker node invokes it as the Python does
//!   (`research_agent.invoke(state)`), with the parent's messages.
//! - Python's `stream(.., subgraphs=True)` also shows the inner agents'
//!   steps, since LangGraph detects a graph invoked inside a node. Ours
//!   streams the supervisor's graph only: an agent invoked inside a node is
//!   a plain call (to stream its steps, add it with `add_subgraph`).
//! - The workers' `HumanMessage(content=.., name=..)` get ids from their
//!   position in the conversation (`researcher-1`), so runs are repeatable;
//!   LangGraph draws a random UUID.

use serde_json::{Value, json};
use state_core::{AgentState, Message, MessageKind, MessagesState, State, ToolCall};
use state_graph::{Command, CompiledGraph, END, GraphError, START, StateGraph};
use std::sync::Arc;

/// The workers (`members`).
pub const MEMBERS: [&str; 2] = ["researcher", "coder"];
/// What the supervisor answers when the work is done.
pub const FINISH: &str = "FINISH";

/// The supervisor's system prompt (the tutorial's `system_prompt`).
pub fn system_prompt() -> String {
    format!(
        "You are a supervisor tasked with managing a conversation between the \
         following workers: {MEMBERS:?}. Given the following user request, \
         respond with the worker to act next. Each worker will perform a \
         task and respond with their results and status. When finished, \
         respond with FINISH."
    )
}

/// Worker to route to next. If no workers needed, route to FINISH (the
/// supervisor's structured output, Python: `class Router(TypedDict)`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Router {
    /// One of [`MEMBERS`] or [`FINISH`] (Python: `Literal[*options]`).
    pub next: String,
}

/// The graph's state (Python: `class State(MessagesState): next: str`).
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct SupervisorState {
    /// The conversation: the user's request and each worker's report.
    #[state(flatten)]
    pub base: MessagesState,
    /// Where the supervisor sent the run last (`"__end__"` once done).
    pub next: String,
}

/// The user's request: the first human message that no worker wrote.
fn request(messages: &[Message]) -> String {
    messages
        .iter()
        .find(|m| m.kind() == MessageKind::Human && m.name().is_none())
        .map(Message::text)
        .unwrap_or_default()
        .to_lowercase()
}

/// Whether `worker` has reported in `messages`.
fn reported(messages: &[Message], worker: &str) -> bool {
    messages.iter().any(|m| m.name() == Some(worker))
}

/// The supervisor's model, canned (Python:
/// `llm.with_structured_output(Router).invoke(messages)`): the researcher
/// while the request asks to find something nobody searched yet, then the
/// coder while it asks for math nobody computed yet, then `FINISH`.
pub fn supervisor_llm(messages: &[Message]) -> Router {
    let request = request(messages);
    let research = ["find", "latest", "search"]
        .iter()
        .any(|w| request.contains(w));
    let math = ["square root", "calculate", "average"]
        .iter()
        .any(|w| request.contains(w));
    let next = if research && !reported(messages, "researcher") {
        "researcher"
    } else if math && !reported(messages, "coder") {
        "coder"
    } else {
        FINISH
    };
    Router {
        next: next.to_owned(),
    }
}

/// Node `supervisor` (Python: `supervisor_node`): asks the model who acts
/// next and goes there, writing it to `next`; `FINISH` ends the run.
pub fn supervisor_node(state: &SupervisorState) -> Command<SupervisorStateDelta> {
    let mut messages = vec![Message::system(system_prompt())];
    messages.extend(state.base.messages.iter().cloned());
    let response = supervisor_llm(&messages);
    let mut goto = response.next;
    if goto == FINISH {
        goto = END.to_owned();
    }
    Command::goto(goto.clone()).update(SupervisorState::delta().next(goto))
}

/// A tool an agent can call: its name and what it returns for the call's
/// arguments.
#[derive(Debug, Clone, Copy)]
pub struct Tool {
    /// The tool's name, as the model calls it.
    pub name: &'static str,
    /// Runs it.
    pub run: fn(&Value) -> String,
}

/// The canned Tavily search (`TavilySearchResults(max_results=5)`): the
/// GDP figures the tutorial's question needs, nothing for anything else.
pub fn tavily_search(args: &Value) -> String {
    let query = args["query"].as_str().unwrap_or_default().to_lowercase();
    if query.contains("gdp") {
        "[{\"url\": \"https://www.bea.gov/data/gdp/gdp-state\", \"content\": \
         \"New York's GDP in 2023 was $2.28 trillion; California's was $3.87 trillion.\"}]"
            .to_owned()
    } else {
        "[]".to_owned()
    }
}

/// Code the canned coder writes for the square root.
pub const SQRT_CODE: &str = "import math\nprint(math.sqrt(42))";
/// Code the canned coder writes for the average of the two GDPs.
pub const AVERAGE_CODE: &str = "print((2.28 + 3.87) / 2)";

/// The canned Python REPL (`python_repl_tool`): the output of the two
/// snippets the canned coder writes; anything else fails, as code the REPL
/// cannot run does. Nothing is executed.
pub fn python_repl(args: &Value) -> String {
    let code = args["code"].as_str().unwrap_or_default();
    let stdout = match code {
        SQRT_CODE => "6.48074069840786",
        AVERAGE_CODE => "3.075",
        _ => {
            return "Failed to execute. Error: NameError('the canned REPL knows two snippets')"
                .into();
        }
    };
    format!("Successfully executed:\n```python\n{code}\n```\nStdout: {stdout}")
}

/// The researcher's tools (`[tavily_tool]`).
pub const RESEARCH_TOOLS: &[Tool] = &[Tool {
    name: "tavily_search_results_json",
    run: tavily_search,
}];
/// The coder's tools (`[python_repl_tool]`).
pub const CODE_TOOLS: &[Tool] = &[Tool {
    name: "python_repl_tool",
    run: python_repl,
}];

/// An AI message calling one tool, its id and the call's from the
/// conversation's length (repeatable runs).
fn call(messages: &[Message], name: &str, args: Value) -> Message {
    let n = messages.len();
    Message::ai("")
        .with_tool_calls([ToolCall::new(name, args).with_id(format!("call_{n}"))])
        .with_id(format!("ai-{n}"))
}

/// The researcher's model, canned: searches once, then reports what it
/// found ("DO NOT do any math").
pub fn research_llm(messages: &[Message]) -> Message {
    match messages.last() {
        Some(last) if last.kind() == MessageKind::Tool => {
            let found: Value = serde_json::from_str(&last.text()).unwrap_or(Value::Null);
            let text = found[0]["content"]
                .as_str()
                .unwrap_or("I found nothing on that.");
            Message::ai(format!("{text} (source: BEA)")).with_id(format!("ai-{}", messages.len()))
        }
        _ => call(
            messages,
            "tavily_search_results_json",
            json!({"query": request(messages)}),
        ),
    }
}

/// The coder's model, canned: writes the snippet the request needs, runs
/// it, then reports the output.
pub fn code_llm(messages: &[Message]) -> Message {
    match messages.last() {
        Some(last) if last.kind() == MessageKind::Tool => {
            let output = last.text();
            let stdout = output.rsplit("Stdout: ").next().unwrap_or_default();
            Message::ai(format!("The result is {stdout}."))
                .with_id(format!("ai-{}", messages.len()))
        }
        _ => {
            let code = if request(messages).contains("square root") {
                SQRT_CODE
            } else {
                AVERAGE_CODE
            };
            call(messages, "python_repl_tool", json!({"code": code}))
        }
    }
}

/// A chat model with its tools bound: the conversation in, a reply out.
pub type Model = fn(&[Message]) -> Message;

/// LangGraph's prebuilt `create_react_agent(llm, tools, prompt=..)`: the
/// model (`agent`) and its tools (`tools`) in a loop over
/// `MessagesState`, until the model answers without calling a tool.
pub fn create_react_agent(
    model: Model,
    tools: &'static [Tool],
    prompt: Option<&'static str>,
) -> Result<CompiledGraph<MessagesState>, GraphError> {
    let mut g = StateGraph::<MessagesState>::new();
    g.add_node("agent", move |state: &MessagesState| {
        let mut messages: Vec<Message> = prompt.map(Message::system).into_iter().collect();
        messages.extend(state.messages.iter().cloned());
        MessagesState::delta().messages(vec![model(&messages)])
    });
    g.add_node("tools", move |state: &MessagesState| {
        let calls = state.messages.last().map_or(&[][..], Message::tool_calls);
        let results: Vec<Message> = calls
            .iter()
            .map(|call| {
                let out = match tools.iter().find(|t| t.name == call.name) {
                    Some(tool) => (tool.run)(&call.args),
                    None => format!("Error: {} is not a valid tool.", call.name),
                };
                Message::tool_result(call, out)
            })
            .collect();
        MessagesState::delta().messages(results)
    });
    g.add_edge(START, "agent");
    g.add_conditional_edges("agent", tools_condition, ["tools", END]);
    g.add_edge("tools", "agent");
    g.compile()
}

/// LangGraph's `tools_condition`: `tools` when the last message calls a
/// tool, else `END`.
pub fn tools_condition(state: &MessagesState) -> &'static str {
    match state.messages.last() {
        Some(last) if !last.tool_calls().is_empty() => "tools",
        _ => END,
    }
}

/// The research agent (`create_react_agent(llm, tools=[tavily_tool],
/// prompt="You are a researcher. DO NOT do any math.")`).
pub fn research_agent() -> Result<CompiledGraph<MessagesState>, GraphError> {
    create_react_agent(
        research_llm,
        RESEARCH_TOOLS,
        Some("You are a researcher. DO NOT do any math."),
    )
}

/// The code agent (`create_react_agent(llm, tools=[python_repl_tool])`).
pub fn code_agent() -> Result<CompiledGraph<MessagesState>, GraphError> {
    create_react_agent(code_llm, CODE_TOOLS, None)
}

/// A worker's agent failed: the worker node's error, the agent's run's
/// error its source.
#[derive(Debug, thiserror::Error)]
#[error("the {worker}'s agent failed")]
pub struct AgentFailed {
    /// The worker.
    pub worker: &'static str,
    /// What the agent's run returned.
    #[source]
    pub source: GraphError,
}

/// A worker node's body (Python: `research_node`, `code_node`): runs the
/// worker's agent on the conversation and reports its last message to the
/// supervisor as a human message named after the worker.
///
/// The agent's error is wrapped: a node returning a `GraphError` as it is
/// would be taken for the graph's own, naming the agent's node, not this
/// one.
pub async fn worker_node(
    name: &'static str,
    agent: &CompiledGraph<MessagesState>,
    state: &SupervisorState,
) -> Result<Command<SupervisorStateDelta>, AgentFailed> {
    let input =
        MessagesState::delta().messages(state.base.messages.iter().cloned().collect::<Vec<_>>());
    let result = agent.invoke(input).await.map_err(|source| AgentFailed {
        worker: name,
        source,
    })?;
    let content = result
        .messages
        .last()
        .map(Message::text)
        .unwrap_or_default();
    let report = Message::human(content)
        .with_name(name)
        .with_id(format!("{name}-{}", state.base.messages.len()));
    Ok(Command::goto("supervisor").update(SupervisorState::delta().messages(vec![report])))
}

/// The tutorial's graph (Python: `builder`, then `builder.compile()`):
///
/// ```text
/// START -> supervisor -cmd-> researcher | coder | END
/// researcher -cmd-> supervisor          coder -cmd-> supervisor
/// ```
pub fn build_graph() -> Result<CompiledGraph<SupervisorState>, GraphError> {
    build_with(research_agent()?, code_agent()?)
}

/// [`build_graph`] with the workers' agents given (a test swaps one).
pub fn build_with(
    research_agent: CompiledGraph<MessagesState>,
    code_agent: CompiledGraph<MessagesState>,
) -> Result<CompiledGraph<SupervisorState>, GraphError> {
    let mut builder = StateGraph::<SupervisorState>::new();
    builder.add_edge(START, "supervisor");
    builder
        .add_node("supervisor", supervisor_node)
        .destinations(["researcher", "coder", END]);
    builder
        .add_node("researcher", move |state: Arc<SupervisorState>| {
            let agent = research_agent.clone();
            async move { worker_node("researcher", &agent, &state).await }
        })
        .destinations(["supervisor"]);
    builder
        .add_node("coder", move |state: Arc<SupervisorState>| {
            let agent = code_agent.clone();
            async move { worker_node("coder", &agent, &state).await }
        })
        .destinations(["supervisor"]);
    builder.compile()
}

/// The tutorial's two questions.
pub const QUESTIONS: [&str; 2] = [
    "What's the square root of 42?",
    "Find the latest GDP of New York and California, then calculate the average",
];
