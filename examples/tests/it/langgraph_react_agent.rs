//! The agents quickstart (`create_react_agent` with a weather tool):
//! offline, the scripted model's run (model → tools → model), its tokens
//! streamed and printed as they come; the model chosen from the
//! environment's values (passed in, never the process's); and the online
//! path, `ChatOpenAI` against a local server on 127.0.0.1 that speaks
//! OpenAI's Chat Completions (streamed `chat.completion.chunk`s), its
//! requests recorded.

use crate::openai_server::{chunk, serve};
use futures::StreamExt;
use serde_json::{Value, json};
use state_core::{Message, MessageKind, MessagesState, State};
use state_examples::langgraph::react_agent::{
    AgentModel, ModelEnv, PROMPT, QUESTION, build_agent, choose_model, stream_answer,
};
use state_graph::{Event, StreamMode};
use std::collections::HashMap;

fn offline() -> AgentModel {
    let (model, line) = choose_model(&ModelEnv::default());
    assert!(line.starts_with("the scripted model"), "{line}");
    assert!(matches!(model, AgentModel::Scripted(_)));
    model
}

async fn printed(model: AgentModel, question: &str) -> (String, MessagesState) {
    let app = build_agent(model).unwrap();
    let mut out = Vec::new();
    let state = stream_answer(&app, question, &mut out)
        .await
        .expect("the run ends");
    (String::from_utf8(out).unwrap(), state)
}

#[tokio::test]
async fn offline_the_agent_calls_the_tool_then_answers_from_it() {
    let (out, state) = printed(offline(), QUESTION).await;
    assert_eq!(
        out,
        "agent: Let me check the weather in sf.\n\
         agent: -> get_weather {\"city\":\"sf\"}\n\
         tools: get_weather (call_1_0): It's always sunny in sf!\n\
         agent: Here is what I found: It's always sunny in sf!\n"
    );
    let kinds: Vec<MessageKind> = state.messages.iter().map(Message::kind).collect();
    assert_eq!(
        kinds,
        [
            MessageKind::Human,
            MessageKind::Ai,
            MessageKind::Tool,
            MessageKind::Ai
        ]
    );
    let call = &state.messages[1].tool_calls()[0];
    assert_eq!(call.name, "get_weather");
    assert_eq!(call.args, json!({"city": "sf"}));
    // The ToolNode answered the call, by its id.
    let answer = &state.messages[2];
    assert_eq!(answer.tool_call_id(), call.id.as_deref());
    assert_eq!(answer.name(), Some("get_weather"));
    assert_eq!(answer.text(), "It's always sunny in sf!");
    // The replies keep the ids their tokens streamed under.
    assert_eq!(state.messages[1].id(), Some("scripted-1"));
    assert_eq!(state.messages[3].id(), Some("scripted-2"));
    assert_eq!(
        state.messages[3].extra()["response_metadata"]["finish_reason"],
        "stop"
    );
}

#[tokio::test]
async fn offline_the_tokens_stream_as_they_come_and_merge_into_the_reply() {
    let app = build_agent(offline()).unwrap();
    let input = MessagesState::delta().messages(vec![Message::human(QUESTION)]);
    let mut events = app.stream(input, StreamMode::MESSAGES | StreamMode::UPDATES);
    // (node, text, id) of each message event, and the node of each update,
    // in the order they came.
    let mut tokens: Vec<(String, String, String)> = Vec::new();
    let mut order: Vec<String> = Vec::new();
    let mut last = None;
    while let Some(event) = events.next().await {
        match event.unwrap() {
            Event::Message {
                node,
                chunk,
                metadata,
            } => {
                assert_eq!(metadata.node, node);
                order.push(format!("token:{node}"));
                let id = chunk.id().unwrap_or_default().to_owned();
                tokens.push((node, chunk.text(), id));
            }
            Event::Update { node, .. } => order.push(format!("update:{node}")),
            Event::End(outcome) => last = Some(outcome.state().clone()),
            _ => {}
        }
    }
    let state = last.unwrap();
    // The final answer came in several chunks, under one id, before the
    // node's update; they merge into the stored reply.
    let answer = state.messages.last().unwrap();
    let pieces: Vec<&(String, String, String)> = tokens
        .iter()
        .filter(|(_, _, id)| Some(id.as_str()) == answer.id())
        .collect();
    assert!(pieces.len() > 5, "{pieces:?}");
    assert!(pieces.iter().all(|(node, _, _)| node == "agent"));
    let text: String = pieces.iter().map(|(_, text, _)| text.as_str()).collect();
    assert_eq!(text, answer.text());
    // The loop: the model, its tools, the model again, each node's tokens
    // before its update.
    order.dedup();
    assert_eq!(
        order,
        [
            "token:agent",
            "update:agent",
            "token:tools",
            "update:tools",
            "token:agent",
            "update:agent"
        ]
    );
}

#[tokio::test]
async fn offline_a_question_without_a_city_ends_without_tools() {
    let (out, state) = printed(offline(), "hello there").await;
    assert!(
        out.starts_with("agent: I can tell you the weather"),
        "{out}"
    );
    assert_eq!(state.messages.len(), 2);
    assert!(state.messages[1].tool_calls().is_empty());

    let (out, state) = printed(offline(), "Weather in New York and Oslo?").await;
    assert!(
        out.contains("agent: -> get_weather {\"city\":\"New York\"}\nagent: -> get_weather {\"city\":\"Oslo\"}\n"),
        "{out}"
    );
    // Two calls, two answers, in call order.
    let answers: Vec<Option<&str>> = state.messages.as_slice()[2..4]
        .iter()
        .map(Message::tool_call_id)
        .collect();
    assert_eq!(answers, [Some("call_1_0"), Some("call_1_1")]);
}

fn env(vars: &[(&str, &str)]) -> ModelEnv {
    let vars: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    ModelEnv::from_lookup(|name| vars.get(name).cloned())
}

#[test]
fn the_model_is_chosen_from_the_environments_values() {
    let (model, line) = choose_model(&env(&[
        ("OPENAI_API_KEY", "sk-secret-1"),
        ("ANTHROPIC_API_KEY", "sk-ant-secret-2"),
    ]));
    assert!(matches!(model, AgentModel::OpenAi(_)), "OpenAI first");
    assert_eq!(line, "ChatOpenAI, model gpt-4o-mini, at OpenAI's API");
    assert!(!format!("{model:?}").contains("secret"));

    let (model, line) = choose_model(&env(&[
        ("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1"),
        ("OPENAI_MODEL", "llama3.2"),
    ]));
    assert!(matches!(model, AgentModel::OpenAi(_)), "a local server");
    assert_eq!(
        line,
        "ChatOpenAI, model llama3.2, at http://127.0.0.1:11434/v1"
    );

    let (model, line) = choose_model(&env(&[
        ("OPENAI_API_KEY", " "),
        ("ANTHROPIC_API_KEY", "sk-ant-secret-2"),
        ("ANTHROPIC_MODEL", "claude-haiku-4-5"),
    ]));
    assert!(
        matches!(model, AgentModel::Anthropic(_)),
        "an empty key is none"
    );
    assert_eq!(
        line,
        "ChatAnthropic, model claude-haiku-4-5, at Anthropic's API"
    );
    assert!(!line.contains("secret") && !format!("{model:?}").contains("secret"));

    let (model, _) = choose_model(&env(&[("OPENAI_MODEL", "gpt-4o")]));
    assert!(
        matches!(model, AgentModel::Scripted(_)),
        "a model name alone"
    );
}

// ---------------------------------------------------------------------------
// The local server speaking OpenAI's Chat Completions (`openai_server`).
// ---------------------------------------------------------------------------

/// The model's first reply: a `get_weather` call, its arguments split
/// across chunks.
fn tool_call_reply() -> Vec<Value> {
    let id = "chatcmpl-1";
    vec![
        chunk(id, json!({"role": "assistant", "content": null}), None),
        chunk(
            id,
            json!({"tool_calls": [{"index": 0, "id": "call_abc", "type": "function",
                "function": {"name": "get_weather", "arguments": ""}}]}),
            None,
        ),
        chunk(
            id,
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"city\":"}}]}),
            None,
        ),
        chunk(
            id,
            json!({"tool_calls": [{"index": 0, "function": {"arguments": " \"sf\"}"}}]}),
            None,
        ),
        chunk(id, json!({}), Some("tool_calls")),
    ]
}

/// The model's answer, a few tokens at a time.
fn answer_reply() -> Vec<Value> {
    let id = "chatcmpl-2";
    let mut chunks = vec![chunk(id, json!({"role": "assistant", "content": ""}), None)];
    for token in ["It's", " always", " sunny", " in", " San", " Francisco."] {
        chunks.push(chunk(id, json!({"content": token}), None));
    }
    chunks.push(chunk(id, json!({}), Some("stop")));
    chunks
}

#[tokio::test]
async fn online_chat_openai_runs_the_loop_against_a_compatible_server() {
    let (url, script) = serve(vec![tool_call_reply(), answer_reply()]).await;
    let (model, line) = choose_model(&env(&[
        ("OPENAI_API_KEY", "sk-test-key"),
        ("OPENAI_BASE_URL", &url),
    ]));
    assert!(matches!(model, AgentModel::OpenAi(_)));
    assert_eq!(line, format!("ChatOpenAI, model gpt-4o-mini, at {url}"));

    let (out, state) = printed(model, QUESTION).await;
    assert_eq!(
        out,
        "agent: -> get_weather {\"city\":\"sf\"}\n\
         tools: get_weather (call_abc): It's always sunny in sf!\n\
         agent: It's always sunny in San Francisco.\n"
    );
    assert_eq!(state.messages.len(), 4);
    assert_eq!(state.messages[2].tool_call_id(), Some("call_abc"));
    assert_ne!(
        state.messages[1].id(),
        state.messages[3].id(),
        "two replies"
    );
    assert_eq!(
        state.messages[3].extra()["response_metadata"]["finish_reason"],
        "stop"
    );

    let seen = script.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    for request in &seen {
        assert_eq!(request.authorization.as_deref(), Some("Bearer sk-test-key"));
        assert_eq!(request.body["model"], "gpt-4o-mini");
        assert_eq!(request.body["stream"], true, "the run streams tokens");
        assert_eq!(request.body["messages"][0]["role"], "system");
        assert_eq!(request.body["messages"][0]["content"], PROMPT);
        let tool = &request.body["tools"][0];
        assert_eq!(tool["type"], "function");
        assert_eq!(tool["function"]["name"], "get_weather");
        assert_eq!(
            tool["function"]["description"],
            "Get weather for a given city."
        );
        assert_eq!(tool["function"]["parameters"]["required"], json!(["city"]));
    }
    // The second request carries the call and its answer.
    let messages = seen[1].body["messages"].as_array().unwrap();
    assert_eq!(messages[1]["content"], QUESTION);
    assert_eq!(messages[2]["tool_calls"][0]["id"], "call_abc");
    assert_eq!(
        messages[2]["tool_calls"][0]["function"]["arguments"], "{\"city\": \"sf\"}",
        "as langchain-openai writes them (json.dumps)"
    );
    assert_eq!(messages[3]["role"], "tool");
    assert_eq!(messages[3]["tool_call_id"], "call_abc");
    assert_eq!(messages[3]["content"], "It's always sunny in sf!");
}

#[tokio::test]
async fn online_a_failing_server_fails_the_run_naming_the_provider() {
    // No reply scripted: the server answers 400 with OpenAI's error body.
    let (url, _script) = serve(vec![]).await;
    let (model, _) = choose_model(&env(&[
        ("OPENAI_API_KEY", "sk-test-key"),
        ("OPENAI_BASE_URL", &url),
    ]));
    let app = build_agent(model).unwrap();
    let mut out = Vec::new();
    let error = stream_answer(&app, QUESTION, &mut out)
        .await
        .expect_err("the model's error fails the run");
    let text = format!("{error:#}");
    let chain = std::iter::successors(Some(&error as &dyn std::error::Error), |e| e.source())
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(": ");
    assert!(chain.contains("no reply left"), "{chain}");
    assert!(chain.to_lowercase().contains("openai"), "{chain}");
    assert!(!chain.contains("sk-test-key") && !text.contains("sk-test-key"));
}
