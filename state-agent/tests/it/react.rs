//! `react_agent`: LangGraph's `create_react_agent` loop with a scripted
//! model: tools bound, prompt first, the loop until an answer, the
//! remaining-steps rule, approval before tools, and a graph to add to.

use serde_json::json;
use state_agent::{FakeChatModel, NEED_MORE_STEPS, ReactAgent, react_agent, tool};
use state_core::{AgentState, Message, MessageKind, MessagesState, State, ToolCall};
use state_graph::{END, GraphError};

/// Get the current weather for a city.
#[tool]
async fn get_weather(
    /// The city name.
    city: String,
) -> Result<String, std::io::Error> {
    Ok(format!("It is sunny in {city}."))
}

/// Adds two numbers.
#[tool]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn calls(calls: &[(&str, serde_json::Value, &str)]) -> Message {
    Message::ai("").with_tool_calls(
        calls
            .iter()
            .map(|(name, args, id)| ToolCall::new(*name, args.clone()).with_id(*id)),
    )
}

fn texts(messages: &[Message]) -> Vec<String> {
    messages.iter().map(Message::text).collect()
}

#[tokio::test]
async fn the_loop_runs_tools_until_the_model_answers() {
    let model = FakeChatModel::new([
        calls(&[
            ("get_weather", json!({"city": "Oslo"}), "c1"),
            ("add", json!({"a": 20, "b": 1}), "c2"),
        ]),
        calls(&[("get_weather", json!({"city": "Bergen"}), "c3")]),
        Message::ai("Sunny in Oslo and Bergen, 21 degrees."),
    ]);
    let app = react_agent(model.clone(), [get_weather, add])
        .prompt("You are a weather bot.")
        .compile()
        .unwrap();
    let out = app
        .invoke(MessagesState::delta().messages(vec![Message::human("weather?")]))
        .await
        .unwrap();
    assert_eq!(
        texts(out.messages.as_slice()),
        [
            "weather?",
            "",
            "It is sunny in Oslo.",
            "21",
            "",
            "It is sunny in Bergen.",
            "Sunny in Oslo and Bergen, 21 degrees."
        ]
    );
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    // Each call: the prompt, then the whole conversation; the tools bound.
    assert_eq!(requests[2].messages.len(), 7);
    assert_eq!(requests[2].messages[0].kind(), MessageKind::System);
    assert_eq!(requests[2].messages[4].tool_call_id(), Some("c2"));
    let names: Vec<&str> = requests[0].tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["get_weather", "add"]);
}

#[tokio::test]
async fn too_few_steps_left_ends_with_an_answer() {
    let model = FakeChatModel::new([
        calls(&[("add", json!({"a": 1, "b": 1}), "c1")]),
        calls(&[("add", json!({"a": 2, "b": 2}), "c2")]),
    ]);
    // agent, tools, agent: the second reply would need two more steps.
    let app = react_agent(model, [add])
        .compile()
        .unwrap()
        .with_recursion_limit(3);
    let out = app
        .invoke(MessagesState::delta().messages(vec![Message::human("add")]))
        .await
        .unwrap();
    let last = out.messages.last().unwrap();
    assert_eq!(last.text(), NEED_MORE_STEPS);
    assert!(last.tool_calls().is_empty());
}

#[tokio::test]
async fn a_person_approves_before_the_tools_run() {
    let model = FakeChatModel::new([
        calls(&[("add", json!({"a": 1, "b": 2}), "c1")]),
        Message::ai("It is 3."),
    ]);
    let app = react_agent(model, [add])
        .interrupt_before_tools()
        .compile()
        .unwrap()
        .with_store(state_store::Store::memory());
    let input = MessagesState::delta().messages(vec![Message::human("1 + 2?")]);
    let out = app.invoke_thread("t", input).await.unwrap();
    assert!(out.is_interrupted());
    assert_eq!(out.state().messages.len(), 2, "the tool has not run");
    let out = app.continue_thread("t").await.unwrap();
    assert_eq!(
        texts(out.state().messages.as_slice()),
        ["1 + 2?", "", "3", "It is 3."]
    );
}

#[derive(AgentState, Debug, Clone)]
struct Support {
    #[state(flatten)]
    base: MessagesState,
    customer: String,
    #[reducer(append)]
    audit: Vec<String>,
}

/// Says who the customer is.
#[tool]
fn whoami(state: &Support) -> String {
    state.customer.clone()
}

#[tokio::test]
async fn an_extended_state_and_a_node_added_to_the_graph() {
    let model = FakeChatModel::new([
        calls(&[("whoami", json!({}), "c1")]),
        Message::ai("You are Ada."),
    ]);
    let mut g = ReactAgent::<Support>::new(model.clone(), [whoami, add])
        .prompt_with(|s: &Support| vec![Message::system(format!("Serve {}.", s.customer))])
        .into_graph();
    // A breakpoint-free extra: an audit node after every tool run.
    g.add_node("audit", |s: &Support| {
        Support::delta().audit(vec![format!("{} messages", s.base.messages.len())])
    });
    g.add_edge("tools", "audit").add_edge("audit", END);
    let app = g.compile().unwrap();
    let out = app
        .invoke(
            Support::delta()
                .customer("Ada")
                .messages(vec![Message::human("who am I?")]),
        )
        .await
        .unwrap();
    assert_eq!(out.base.messages.last().unwrap().text(), "You are Ada.");
    assert_eq!(out.audit, ["3 messages"]);
    assert_eq!(model.requests()[0].messages[0].text(), "Serve Ada.");
}

#[tokio::test]
async fn without_tools_the_agent_only_answers() {
    let app = react_agent(FakeChatModel::new([Message::ai("hi")]), [])
        .compile()
        .unwrap();
    let out = app
        .invoke(MessagesState::delta().messages(vec![Message::human("hello")]))
        .await
        .unwrap();
    assert_eq!(texts(out.messages.as_slice()), ["hello", "hi"]);
}

#[tokio::test]
async fn a_model_error_fails_the_run() {
    let app = react_agent(FakeChatModel::new([]), [add])
        .compile()
        .unwrap();
    let err: GraphError = app
        .invoke(MessagesState::delta().messages(vec![Message::human("hello")]))
        .await
        .unwrap_err();
    assert_eq!(err.node(), Some("agent"));
}

/// The forecast, as the agent's final, structured answer.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct Forecast {
    /// The city.
    city: String,
    /// Whether it is sunny.
    sunny: bool,
}

#[derive(AgentState, Debug, Clone)]
struct Weather {
    #[state(flatten)]
    base: MessagesState,
    forecast: Option<Forecast>,
}

#[tokio::test]
async fn a_structured_response_ends_the_loop() {
    let model = FakeChatModel::new([
        calls(&[("get_weather", json!({"city": "Oslo"}), "c1")]),
        Message::ai("Sunny in Oslo."),
        calls(&[("Forecast", json!({"city": "Oslo", "sunny": true}), "c2")]),
    ]);
    let app = ReactAgent::<Weather>::new(model.clone(), [get_weather])
        .response_format(|f: Forecast| Weather::delta().forecast(Some(f)))
        .compile()
        .unwrap();
    let out = app
        .invoke(Weather::delta().messages(vec![Message::human("Oslo?")]))
        .await
        .unwrap();
    assert_eq!(
        out.forecast,
        Some(Forecast {
            city: "Oslo".into(),
            sunny: true
        })
    );
    // The structured call: the conversation, one tool (the type), forced;
    // its reply is not added to the conversation (LangGraph's neither).
    let last = model.requests().pop().unwrap();
    assert_eq!(last.messages.len(), 4);
    let names: Vec<&str> = last.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["Forecast"]);
    assert_eq!(out.base.messages.len(), 4);
    assert!(app.draw_mermaid().contains("generate_structured_response"));
}

#[tokio::test]
async fn a_reply_that_does_not_fit_the_response_format_fails_the_run() {
    let model = FakeChatModel::new([Message::ai("Sunny."), Message::ai("I will not.")]);
    let app = ReactAgent::<Weather>::new(model, [get_weather])
        .response_format(|f: Forecast| Weather::delta().forecast(Some(f)))
        .compile()
        .unwrap();
    let err = app
        .invoke(Weather::delta().messages(vec![Message::human("Oslo?")]))
        .await
        .unwrap_err();
    assert_eq!(err.node(), Some("generate_structured_response"));
}
