// Every form `#[tool]` accepts: sync and async, plain and fallible
// returns, the state, the context (by value and by reference), the call's
// id, a handoff returning a Command, options, raw names; one ToolNode holds
// tools of different types, and a plain tool fits any graph.
use serde::Deserialize;
use state_agent::{ToolCallId, ToolNode, react_agent, tool, tools_condition};
use state_core::{AgentState, Message, MessagesState, State};
use state_graph::{Command, Ctx, END, NodeError, START, StateGraph};

#[derive(AgentState, Debug, Clone)]
struct Support {
    #[state(flatten)]
    base: MessagesState,
    customer: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
enum Units {
    Celsius,
    Fahrenheit,
}

/// Get the weather.
#[tool]
async fn weather(
    /// The city.
    city: String,
    /// The units.
    units: Option<Units>,
) -> Result<String, std::io::Error> {
    let _ = units;
    Ok(city)
}

/// Adds.
#[tool(name = "add-two", description = "Adds two numbers.")]
pub fn add(a: i64, r#b: i64) -> i64 {
    a + b
}

/// Reads the state.
#[tool]
fn whoami(state: &Support) -> String {
    state.customer.clone()
}

/// Asks a person.
#[tool]
async fn ask(question: String, ctx: Ctx) -> Result<String, NodeError> {
    Ok(ctx.interrupt(question)?.to_string())
}

/// Asks a person, synchronously.
#[tool]
fn ask_sync(question: String, ctx: &Ctx) -> anyhow::Result<String> {
    Ok(ctx.interrupt(question)?.to_string())
}

/// Hands off.
#[tool]
fn handoff(id: ToolCallId) -> Command<SupportDelta> {
    Command::goto("billing").update(Support::delta().messages(vec![Message::tool("ok", id)]))
}

/// Returns nothing.
#[tool]
fn noop() {}

fn main() {
    let mut g = StateGraph::<Support>::new();
    g.add_node("agent", |_: &Support| Support::delta());
    g.add_node("tools", ToolNode::new([weather, add, whoami, ask, ask_sync, handoff, noop]))
        .destinations(["billing"]);
    g.add_node("billing", |_: &Support| Support::delta());
    g.add_edge(START, "agent");
    g.add_conditional_edges("agent", tools_condition, ["tools", END]);
    g.add_edge("tools", "agent").add_edge("billing", END);
    let _ = g.compile();
    let _ = react_agent(state_agent::FakeChatModel::new([]), [weather, add, ask]).compile();
    let _ = add::run(1, 2);
}
