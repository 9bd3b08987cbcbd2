//! LangGraph's agents quickstart ported: a ReAct agent
//! (`create_react_agent`) with a weather tool, its tokens printed as they
//! come (`stream_mode="messages"`). Run it with `cargo run -p
//! state-examples --example react_agent [-- "your question"]`.
//!
//! The model comes from the environment:
//! - `OPENAI_API_KEY` and/or `OPENAI_BASE_URL` (any server that speaks
//!   OpenAI's Chat Completions: Ollama at `http://127.0.0.1:11434/v1`,
//!   vLLM, llama.cpp's server, LM Studio, ...), with `OPENAI_MODEL`
//!   (`gpt-4o-mini` by default): `ChatOpenAI`;
//! - else `ANTHROPIC_API_KEY` (and `ANTHROPIC_BASE_URL`, `ANTHROPIC_MODEL`,
//!   `claude-sonnet-4-5` by default): `ChatAnthropic`;
//! - else a scripted model that runs offline.
//!
//! The agent is in `state_examples::langgraph::react_agent` (whose docs
//! list what differs from the Python).
//!
//! The Python original (the quickstart, and its "Stream LLM tokens"), for
//! comparison:
/*
from langgraph.prebuilt import create_react_agent
from langchain.chat_models import init_chat_model

def get_weather(city: str) -> str:
    """Get weather for a given city."""
    return f"It's always sunny in {city}!"

model = init_chat_model(
    "anthropic:claude-3-7-sonnet-latest",
    temperature=0
)

agent = create_react_agent(
    model=model,
    tools=[get_weather],
    prompt="You are a helpful assistant"
)

# Run the agent
agent.invoke(
    {"messages": [{"role": "user", "content": "what is the weather in sf"}]}
)

for token, metadata in agent.stream(
    {"messages": [{"role": "user", "content": "what is the weather in sf"}]},
    stream_mode="messages"
):
    print("Token", token)
    print("Metadata", metadata)
    print("\n")
*/

use state_examples::langgraph::react_agent::{
    AgentModel, ModelEnv, QUESTION, build_agent, choose_model, stream_answer,
};
use std::time::Duration;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let question = std::env::args()
        .nth(1)
        .unwrap_or_else(|| QUESTION.to_owned());
    let (model, which) = choose_model(&ModelEnv::from_env());
    println!("Model: {which}");
    // Offline, the tokens come a little apart, as a provider's do.
    let model = match model {
        AgentModel::Scripted(scripted) => {
            AgentModel::Scripted(scripted.delay(Duration::from_millis(40)))
        }
        other => other,
    };
    let agent = build_agent(model)?;
    println!("{}", agent.draw_mermaid());
    println!("user: {question}");
    let state = stream_answer(&agent, &question, &mut std::io::stdout()).await?;

    let last = state.messages.last().map(|m| m.text()).unwrap_or_default();
    println!(
        "\nThe run ended with {} messages in the state; the answer: {last}",
        state.messages.len()
    );
    if let Some(usage) = state
        .messages
        .last()
        .and_then(|m| m.extra().get("usage_metadata").cloned())
    {
        println!("Its usage_metadata: {usage}");
    }
    Ok(())
}
