//! `#[tool]` and `ToolNode`: calls answered in call order, every kind of
//! mistake answered (or failing the run when asked), tools that read the
//! state, pause for a person, use the store, and hand off.

use serde_json::{Value, json};
use state_agent::{ToolCallId, ToolErrors, ToolNode, tool, tools_condition};
use state_core::{
    AgentState, Message, MessageKind, Messages, MessagesState, MessagesStateDelta, State, ToolCall,
};
use state_graph::{Command, Ctx, END, NodeError, START, StateGraph};
use std::time::Duration;

/// Get the current weather for a city.
#[tool]
async fn get_weather(
    /// The city name.
    city: String,
) -> Result<String, std::io::Error> {
    if city == "Atlantis" {
        return Err(std::io::Error::other("no weather station in Atlantis"));
    }
    Ok(format!("It is sunny in {city}."))
}

/// Waits, then echoes: calls finish out of order.
#[tool]
async fn slow_echo(text: String, millis: u64) -> String {
    tokio::time::sleep(Duration::from_millis(millis)).await;
    text
}

/// Adds two numbers.
#[tool(name = "add_numbers")]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn call(name: &str, args: Value, id: &str) -> ToolCall {
    ToolCall::new(name, args).with_id(id)
}

fn ai(calls: impl IntoIterator<Item = ToolCall>) -> Message {
    Message::ai("").with_tool_calls(calls)
}

/// A graph running only the tool node, on an input whose last message
/// calls tools.
async fn run_tools(node: ToolNode<MessagesState>, reply: Message) -> Result<Vec<Message>, String> {
    let mut g = StateGraph::<MessagesState>::new();
    g.add_node("tools", node);
    g.add_edge(START, "tools").add_edge("tools", END);
    let app = g.compile().unwrap();
    let out = app
        .invoke(MessagesState::delta().messages(vec![Message::human("go"), reply]))
        .await
        .map_err(|e| chain(&e))?;
    Ok(out.messages.iter().skip(2).cloned().collect())
}

/// An error and its sources, as one line.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        text.push_str(": ");
        text.push_str(&e.to_string());
        source = e.source();
    }
    text
}

#[tokio::test]
async fn parallel_calls_are_answered_in_call_order() {
    let reply = ai([
        call("slow_echo", json!({"text": "first", "millis": 60}), "c1"),
        call("slow_echo", json!({"text": "second", "millis": 1}), "c2"),
        call("add_numbers", json!({"a": 2, "b": 3}), "c3"),
    ]);
    let started = std::time::Instant::now();
    let answers = run_tools(ToolNode::new([slow_echo, add]), reply)
        .await
        .unwrap();
    let got: Vec<(String, Option<&str>, Option<&str>)> = answers
        .iter()
        .map(|m| (m.text(), m.tool_call_id(), m.name()))
        .collect();
    assert_eq!(
        got,
        [
            ("first".into(), Some("c1"), Some("slow_echo")),
            ("second".into(), Some("c2"), Some("slow_echo")),
            ("5".into(), Some("c3"), Some("add_numbers")),
        ]
    );
    assert!(answers.iter().all(|m| m.kind() == MessageKind::Tool));
    assert!(answers.iter().all(|m| !m.extra().contains_key("status")));
    // Concurrently: not 60 + 1 ms one after the other... and not more.
    assert!(started.elapsed() < Duration::from_millis(500));
}

#[tokio::test]
async fn one_at_a_time_when_bounded_to_one() {
    let reply = ai([
        call("slow_echo", json!({"text": "a", "millis": 30}), "c1"),
        call("slow_echo", json!({"text": "b", "millis": 30}), "c2"),
    ]);
    let started = std::time::Instant::now();
    let answers = run_tools(ToolNode::new([slow_echo]).max_concurrency(1), reply)
        .await
        .unwrap();
    assert!(started.elapsed() >= Duration::from_millis(60));
    assert_eq!(answers.len(), 2);
}

fn error_texts(answers: &[Message]) -> Vec<String> {
    assert!(
        answers
            .iter()
            .all(|m| m.extra().get("status") == Some(&json!("error")))
    );
    answers.iter().map(Message::text).collect()
}

#[tokio::test]
async fn mistakes_are_answered_for_the_model_to_read() {
    let reply = ai([
        call("get_wether", json!({"city": "Oslo"}), "c1"),
        call("get_weather", json!({"city": 3, "days": 2}), "c2"),
        call("get_weather", json!({}), "c3"),
        call("get_weather", json!({"city": "Atlantis"}), "c4"),
    ]);
    let answers = run_tools(ToolNode::new([get_weather, add]), reply)
        .await
        .unwrap();
    assert_eq!(
        error_texts(&answers),
        [
            "Error: get_wether is not a valid tool, try one of [get_weather, add_numbers].",
            "Error invoking tool 'get_weather' with kwargs {\"city\":3,\"days\":2} with error:\n\
             city: invalid type: integer `3`, expected a string\n\
             days: unknown field; expected one of `city`\n \
             Please fix the error and try again.",
            "Error invoking tool 'get_weather' with kwargs {} with error:\n\
             city: missing\n Please fix the error and try again.",
            "Error: no weather station in Atlantis\n Please fix your mistakes.",
        ]
    );
    let ids: Vec<_> = answers.iter().map(|m| m.tool_call_id().unwrap()).collect();
    assert_eq!(ids, ["c1", "c2", "c3", "c4"]);
}

#[tokio::test]
async fn arguments_that_are_not_json_are_answered_too() {
    let reply = ai([call("add_numbers", json!({"a": 1, "b": 1}), "c1")]).with_extra(
        "invalid_tool_calls",
        json!([{"name": "add_numbers", "args": "{\"a\": 1,", "id": "c2",
                "error": "the arguments are not JSON", "type": "invalid_tool_call"}]),
    );
    let answers = run_tools(ToolNode::new([add]), reply).await.unwrap();
    assert_eq!(answers[0].text(), "2");
    assert_eq!(answers[1].tool_call_id(), Some("c2"));
    assert_eq!(
        answers[1].text(),
        "Error invoking tool 'add_numbers' with kwargs {\"a\": 1, with error:\n\
         the arguments are not JSON\n Please fix the error and try again."
    );
}

#[tokio::test]
async fn a_tools_own_error_fails_the_run_when_asked() {
    let failing = ai([call("get_weather", json!({"city": "Atlantis"}), "c1")]);
    let bad_args = ai([call("get_weather", json!({"town": "Oslo"}), "c1")]);
    // LangGraph 1.x's default: invalid calls answered, a tool's error raised.
    let node = || ToolNode::new([get_weather]).handle_tool_errors(ToolErrors::AnswerInvalidCalls);
    let err = run_tools(node(), failing.clone()).await.unwrap_err();
    assert!(
        err.contains("tool `get_weather` (call c1) failed: no weather station in Atlantis"),
        "{err}"
    );
    let answers = run_tools(node(), bad_args.clone()).await.unwrap();
    assert!(answers[0].text().contains("town: unknown field"));
    // Everything fails the run.
    let node = || ToolNode::new([get_weather]).handle_tool_errors(ToolErrors::Fail);
    let err = run_tools(node(), bad_args).await.unwrap_err();
    assert!(err.contains("city: missing"), "{err}");
    let unknown = ai([call("nope", json!({}), "c9")]);
    let err = run_tools(node(), unknown).await.unwrap_err();
    assert!(err.contains("tool `nope` (call c9)"), "{err}");
}

#[derive(AgentState, Debug, Clone)]
struct Support {
    #[state(flatten)]
    base: MessagesState,
    customer: String,
    #[reducer(append)]
    log: Vec<String>,
}

/// Says who the customer is.
#[tool]
fn whoami(
    state: &Support,
    /// How to greet.
    greeting: Option<String>,
) -> String {
    format!(
        "{}, {}",
        greeting.as_deref().unwrap_or("hello"),
        state.customer
    )
}

#[tokio::test]
async fn a_tool_reads_the_state_outside_its_schema() {
    let spec = state_agent::Tool::<Support>::spec(whoami);
    assert_eq!(spec.parameters["required"], json!([]));
    assert!(spec.parameters["properties"].get("state").is_none());
    let mut g = StateGraph::<Support>::new();
    g.add_node("tools", ToolNode::new([whoami, add]));
    g.add_edge(START, "tools").add_edge("tools", END);
    let out = g
        .compile()
        .unwrap()
        .invoke(Support::delta().customer("Ada").messages(vec![ai([call(
            "whoami",
            json!({"greeting": "hi"}),
            "c1",
        )])]))
        .await
        .unwrap();
    assert_eq!(out.base.messages[1].text(), "hi, Ada");
    // The function stays callable.
    assert_eq!(whoami::run(&out, None), "hello, Ada");
}

#[derive(AgentState, Debug, Clone)]
struct OwnHistory {
    #[reducer(add_messages)]
    history: Vec<Message>,
}

#[tokio::test]
async fn a_state_with_its_own_messages_field_works_too() {
    let mut g = StateGraph::<OwnHistory>::new();
    g.add_node("tools", ToolNode::new([add]));
    g.add_edge(START, "tools");
    g.add_conditional_edges("tools", tools_condition, ["tools", END]);
    let out = g
        .compile()
        .unwrap()
        .invoke(OwnHistory::delta().history(vec![ai([call(
            "add_numbers",
            json!({"a": 1, "b": 2}),
            "c1",
        )])]))
        .await
        .unwrap();
    assert_eq!(out.history[1].text(), "3");
}

#[derive(Debug)]
struct Approver {
    user: String,
}

/// Deletes a file, once a person approves.
#[tool]
async fn delete_file(path: String, ctx: Ctx<Approver>) -> Result<String, NodeError> {
    let answer = ctx.interrupt(json!({"approve": format!("delete {path}?")}))?;
    if answer != "yes" {
        return Ok(format!("{} declined deleting {path}", ctx.context().user));
    }
    ctx.store()?
        .put_item(&["deleted"], &path, json!({"by": ctx.context().user}))
        .await?;
    Ok(format!("deleted {path}"))
}

#[tokio::test]
async fn a_tool_pauses_for_approval_and_resumes_on_a_store() {
    let store = state_store::Store::memory();
    let mut g = StateGraph::<MessagesState, Approver>::new();
    g.add_node("tools", ToolNode::new([delete_file]));
    g.add_edge(START, "tools").add_edge("tools", END);
    let app = g
        .compile()
        .unwrap()
        .with_store(store.clone())
        .with_context(Approver { user: "ada".into() });
    let input = MessagesState::delta().messages(vec![ai([
        call("delete_file", json!({"path": "a.txt"}), "c1"),
        call("delete_file", json!({"path": "b.txt"}), "c2"),
    ])]);
    let out = app.invoke_thread("t1", input).await.unwrap();
    assert!(out.is_interrupted());
    assert_eq!(
        out.interrupts()[0].value,
        json!({"approve": "delete a.txt?"})
    );
    // The first answer goes to the first call; the second call asks next.
    let out = app.resume("t1", json!("yes")).await.unwrap();
    assert_eq!(
        out.interrupts()[0].value,
        json!({"approve": "delete b.txt?"})
    );
    let out = app.resume("t1", json!("no")).await.unwrap();
    assert!(!out.is_interrupted());
    let texts: Vec<String> = out
        .state()
        .messages
        .iter()
        .skip(1)
        .map(Message::text)
        .collect();
    assert_eq!(texts, ["deleted a.txt", "ada declined deleting b.txt"]);
    let item = store
        .get_item(&["deleted"], "a.txt")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(item.value, json!({"by": "ada"}));
    assert!(
        store
            .get_item(&["deleted"], "b.txt")
            .await
            .unwrap()
            .is_none()
    );
}

/// Hands the conversation to the billing specialist.
#[tool]
fn transfer_to_billing(
    /// Why the customer needs billing.
    reason: String,
    call_id: ToolCallId,
) -> Command<SupportDelta> {
    Command::goto("billing").update(
        Support::delta()
            .messages(vec![Message::tool("Transferred to billing.", call_id)])
            .log(vec![format!("handoff: {reason}")]),
    )
}

#[tokio::test]
async fn a_handoff_tool_returns_a_command() {
    let mut g = StateGraph::<Support>::new();
    g.add_node("tools", ToolNode::new([transfer_to_billing, whoami]))
        .destinations(["billing"]);
    g.add_node("billing", |_: &Support| {
        Support::delta().messages(vec![Message::ai("Billing here.")])
    });
    g.add_edge(START, "tools").add_edge("billing", END);
    let out = g
        .compile()
        .unwrap()
        .invoke(Support::delta().customer("Ada").messages(vec![ai([
            call("whoami", json!({}), "c1"),
            call("transfer_to_billing", json!({"reason": "refund"}), "c2"),
        ])]))
        .await
        .unwrap();
    let texts: Vec<String> = out.base.messages.iter().map(Message::text).collect();
    assert_eq!(
        texts,
        ["", "hello, Ada", "Transferred to billing.", "Billing here."]
    );
    assert_eq!(out.base.messages[2].tool_call_id(), Some("c2"));
    assert_eq!(out.log, ["handoff: refund"]);
}

/// Forgets to answer its call.
#[tool]
fn rude_handoff() -> Command<MessagesStateDelta> {
    Command::goto(END)
}

#[tokio::test]
async fn a_command_must_answer_its_call() {
    let err = run_tools(
        ToolNode::new([rude_handoff]),
        ai([call("rude_handoff", json!({}), "c1")]),
    )
    .await
    .unwrap_err();
    assert!(err.contains("does not answer its call c1"), "{err}");
}

#[tokio::test]
async fn tools_condition_routes_on_the_last_message() {
    let with_calls = ai([call("add_numbers", json!({}), "c1")]);
    let mut s = MessagesState::default();
    assert_eq!(tools_condition(&s), END);
    s.apply(MessagesState::delta().messages(vec![with_calls]))
        .unwrap();
    assert_eq!(tools_condition(&s), "tools");
    s.apply(MessagesState::delta().messages(vec![Message::tool("3", "c1")]))
        .unwrap();
    assert_eq!(tools_condition(&s), END);
    let _: &Messages = &s.messages;
}

#[test]
fn a_tool_without_a_messages_field_panics_when_added() {
    #[derive(AgentState, Debug, Clone)]
    struct NoMessages {
        n: u32,
    }
    let result = std::panic::catch_unwind(|| {
        let mut g = StateGraph::<NoMessages>::new();
        g.add_node("tools", ToolNode::new([add]));
    });
    let panic = result.unwrap_err();
    let text = panic.downcast_ref::<String>().unwrap();
    assert!(
        text.contains("`NoMessages` has no messages field"),
        "{text}"
    );
}
