//! ChatOpenAI against a local server speaking OpenAI's wire format
//! (`server.rs`): replies, streams, retries, timeouts, cancellation,
//! errors, structured output, and a graph's `messages` stream.

use crate::server::{Reply, Server, chunk, completion, error_body, usage_chunk};
use futures::StreamExt;
use serde::Deserialize;
use serde_json::{Value, json};
use state_agent::openai::ChatOpenAI;
use state_agent::{ChatModelExt, MessageChunk, ModelErrorKind, ToolSpec};
use state_core::{Message, MessagesState, State};
use state_graph::{END, NodeError, START, StateGraph, StreamMode};
use std::sync::Arc;
use std::time::{Duration, Instant};

const KEY: &str = "sk-test-4f9a2c7e1b";

fn model(server: &Server) -> ChatOpenAI {
    ChatOpenAI::new("gpt-4o-mini")
        .base_url(&server.url)
        .api_key(KEY)
}

fn ask() -> Vec<Message> {
    vec![
        Message::system("Be brief."),
        Message::human("What's the weather in Oslo?"),
    ]
}

fn weather_tool() -> ToolSpec {
    ToolSpec::new(
        "get_weather",
        "Get the current weather for a city.",
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
    )
}

/// One reply, as a chat completion and as the stream of the same reply:
/// text, then a tool call in fragments, then the usage.
fn same_reply() -> (Value, Vec<Value>) {
    let call = json!({"id": "call_7", "type": "function",
                      "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}});
    let json = completion(
        json!({"role": "assistant", "content": "Let me check.", "tool_calls": [call]}),
        "tool_calls",
    );
    let sse = vec![
        chunk(json!({"role": "assistant", "content": ""}), None),
        chunk(json!({"content": "Let me "}), None),
        chunk(json!({"content": "check."}), None),
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_7", "type": "function",
                                   "function": {"name": "get_weather", "arguments": ""}}]}),
            None,
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"city\": "}}]}),
            None,
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"Oslo\"}"}}]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
        usage_chunk(),
    ];
    (json, sse)
}

async fn merged(model: &ChatOpenAI, messages: Vec<Message>) -> Message {
    let mut stream = model.stream(messages);
    let mut reply = MessageChunk::default();
    while let Some(chunk) = stream.next().await {
        reply += chunk.unwrap();
    }
    reply.into_message()
}

#[tokio::test]
async fn invoke_returns_the_reply_with_usage_and_metadata() {
    let (json, _) = same_reply();
    let server = Server::start([Reply::Json(200, vec![], json)]).await;
    let reply = model(&server).invoke(ask()).await.unwrap();
    assert_eq!(reply.text(), "Let me check.");
    assert_eq!(reply.tool_calls()[0].name, "get_weather");
    assert_eq!(reply.tool_calls()[0].args, json!({"city": "Oslo"}));
    assert_eq!(reply.tool_calls()[0].id.as_deref(), Some("call_7"));
    let extra = reply.extra();
    assert_eq!(
        extra["usage_metadata"],
        json!({"input_tokens": 21, "output_tokens": 9, "total_tokens": 30,
               "input_token_details": {"cache_read": 5}})
    );
    let metadata = &extra["response_metadata"];
    assert_eq!(metadata["model_name"], "gpt-4o-mini-2024-07-18");
    assert_eq!(metadata["finish_reason"], "tool_calls");
    assert_eq!(metadata["model_provider"], "openai");
    assert_eq!(metadata["id"], "chatcmpl-T1");
    // What the server was sent.
    let seen = &server.seen()[0];
    assert_eq!(
        seen.header("authorization"),
        Some(&*format!("Bearer {KEY}"))
    );
    assert_eq!(seen.body["model"], "gpt-4o-mini");
    assert_eq!(seen.body["stream"], false);
    assert_eq!(
        seen.body["messages"],
        json!([{"content": "Be brief.", "role": "system"},
               {"content": "What's the weather in Oslo?", "role": "user"}])
    );
}

#[tokio::test]
async fn the_streamed_chunks_merge_into_the_invoked_reply() {
    let (json, sse) = same_reply();
    let server = Server::start([Reply::Json(200, vec![], json), Reply::Sse(sse)]).await;
    let model = model(&server).stream_usage(true);
    let invoked = model.invoke(ask()).await.unwrap();
    let streamed = merged(&model, ask()).await;
    assert_eq!(streamed.text(), invoked.text());
    assert_eq!(streamed.tool_calls(), invoked.tool_calls());
    assert_eq!(
        streamed.extra()["usage_metadata"],
        invoked.extra()["usage_metadata"]
    );
    let (s, i) = (
        &streamed.extra()["response_metadata"],
        &invoked.extra()["response_metadata"],
    );
    for key in [
        "finish_reason",
        "model_name",
        "model_provider",
        "system_fingerprint",
    ] {
        assert_eq!(s[key], i[key], "{key}");
    }
    // As in LangChain, only the whole answer has the raw usage and the
    // completion's id in its metadata, and `additional_kwargs.refusal`.
    assert!(s.get("token_usage").is_none() && i.get("token_usage").is_some());
    let streamed_request = &server.seen()[1].body;
    assert_eq!(streamed_request["stream"], true);
    assert_eq!(
        streamed_request["stream_options"],
        json!({"include_usage": true})
    );
}

#[tokio::test]
async fn stream_usage_is_off_by_default_for_a_custom_base_url() {
    let (_, sse) = same_reply();
    let server = Server::start([Reply::Sse(sse)]).await;
    merged(&model(&server), ask()).await;
    assert!(server.seen()[0].body.get("stream_options").is_none());
}

#[tokio::test]
async fn tools_and_options_reach_the_request() {
    let (json, _) = same_reply();
    let server = Server::start([Reply::Json(200, vec![], json)]).await;
    let model = model(&server)
        .temperature(0.25)
        .max_tokens(64)
        .bind_tools([weather_tool()])
        .tool_choice(state_agent::ToolChoice::Required);
    model.invoke(ask()).await.unwrap();
    let body = &server.seen()[0].body;
    assert_eq!(body["temperature"], 0.25);
    assert_eq!(body["max_completion_tokens"], 64);
    assert_eq!(body["tool_choice"], "required");
    assert_eq!(
        body["tools"][0],
        json!({"type": "function", "function": {
            "name": "get_weather", "description": "Get the current weather for a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}})
    );
}

#[tokio::test]
async fn a_429_is_retried_after_its_retry_after() {
    let (json, _) = same_reply();
    let server = Server::start([
        Reply::Json(
            429,
            vec![("retry-after", "1")],
            error_body(
                "Rate limit reached for gpt-4o-mini",
                "requests",
                Some("rate_limit_exceeded"),
            ),
        ),
        Reply::Json(200, vec![], json),
    ])
    .await;
    let started = Instant::now();
    let reply = model(&server).invoke(ask()).await.unwrap();
    assert_eq!(reply.text(), "Let me check.");
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(server.seen().len(), 2);
}

#[tokio::test]
async fn a_server_error_is_retried_with_backoff_then_succeeds() {
    let (_, sse) = same_reply();
    let server = Server::start([Reply::Text(500, "upstream down"), Reply::Sse(sse)]).await;
    let started = Instant::now();
    let reply = merged(&model(&server), ask()).await;
    assert_eq!(reply.text(), "Let me check.");
    assert_eq!(server.seen().len(), 2);
    // The first backoff: 0.5 s less up to a quarter.
    assert!(started.elapsed() >= Duration::from_millis(375));
}

#[tokio::test]
async fn retries_stop_at_max_retries_with_the_last_error() {
    let server = Server::start([
        Reply::Json(502, vec![], error_body("bad gateway", "server_error", None)),
        Reply::Json(
            503,
            vec![],
            error_body("The server is overloaded", "server_error", None),
        ),
        Reply::Text(200, "never asked for"),
    ])
    .await;
    let err = model(&server)
        .max_retries(1)
        .invoke(ask())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ModelErrorKind::Server);
    assert_eq!(err.status(), Some(503));
    assert_eq!(err.message(), Some("The server is overloaded"));
    assert_eq!(server.seen().len(), 2);
}

#[tokio::test]
async fn an_error_body_names_provider_status_and_message_and_is_not_retried() {
    let server = Server::start([Reply::Json(
        404,
        vec![],
        error_body(
            "The model `gpt-9` does not exist",
            "invalid_request_error",
            Some("model_not_found"),
        ),
    )])
    .await;
    let err = model(&server).invoke(ask()).await.unwrap_err();
    assert_eq!(err.kind(), ModelErrorKind::BadRequest);
    assert_eq!(
        err.to_string(),
        "openai: bad request (HTTP 404): The model `gpt-9` does not exist"
    );
    assert_eq!(server.seen().len(), 1);
}

#[tokio::test]
async fn quota_and_context_overflow_have_their_own_kinds() {
    let server = Server::start([
        Reply::Json(
            429,
            vec![],
            error_body(
                "You exceeded your current quota",
                "insufficient_quota",
                Some("insufficient_quota"),
            ),
        ),
        Reply::Json(
            400,
            vec![],
            error_body(
                "This model's maximum context length is 128000 tokens.",
                "invalid_request_error",
                Some("context_length_exceeded"),
            ),
        ),
    ])
    .await;
    let quota = model(&server).invoke(ask()).await.unwrap_err();
    assert_eq!(quota.kind(), ModelErrorKind::Quota);
    assert!(!quota.is_retryable());
    let overflow = model(&server).invoke(ask()).await.unwrap_err();
    assert_eq!(overflow.kind(), ModelErrorKind::ContextOverflow);
    assert_eq!(server.seen().len(), 2, "neither is retried");
}

#[tokio::test]
async fn the_key_is_in_no_error_and_no_debug_output() {
    let echo: &'static str = Box::leak(
        format!("Incorrect API key provided: {KEY}. You can find your API key at ...")
            .into_boxed_str(),
    );
    let server = Server::start([
        Reply::Json(
            401,
            vec![],
            error_body(echo, "invalid_request_error", Some("invalid_api_key")),
        ),
        Reply::Text(500, echo),
    ])
    .await;
    let model = model(&server).max_retries(0);
    let auth = model.invoke(ask()).await.unwrap_err();
    assert_eq!(auth.kind(), ModelErrorKind::Auth);
    assert_eq!(auth.status(), Some(401));
    let server_error = model.invoke(ask()).await.unwrap_err();
    for shown in [
        auth.to_string(),
        format!("{auth:?}"),
        server_error.to_string(),
        format!("{server_error:?}"),
        format!("{model:?}"),
        format!("{:?}", model.clone().bind_tools([weather_tool()])),
    ] {
        assert!(!shown.contains(KEY), "the key shows in: {shown}");
    }
    assert!(
        auth.to_string()
            .contains("Incorrect API key provided: [redacted]")
    );
}

#[tokio::test]
async fn a_slow_answer_times_out_and_the_timeout_is_retried() {
    let (json, _) = same_reply();
    let slow = || {
        Reply::Slow(
            Duration::from_secs(3),
            Box::new(Reply::Json(200, vec![], json.clone())),
        )
    };
    let server = Server::start([slow(), slow(), slow()]).await;
    let started = Instant::now();
    let err = model(&server)
        .timeout(Duration::from_millis(200))
        .max_retries(1)
        .invoke(ask())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ModelErrorKind::Timeout);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(server.seen().len(), 2);
}

#[tokio::test]
async fn a_stalled_stream_times_out_between_chunks() {
    let server = Server::start([Reply::SseThenStall(vec![chunk(
        json!({"role": "assistant", "content": "Hel"}),
        None,
    )])])
    .await;
    let model = model(&server).timeout(Duration::from_millis(300));
    let mut stream = model.stream(ask());
    let first = stream.next().await.unwrap().unwrap();
    assert_eq!(first.content, Some("Hel".into()));
    let err = stream.next().await.unwrap().unwrap_err();
    assert_eq!(err.kind(), ModelErrorKind::Timeout);
    assert!(stream.next().await.is_none());
}

#[tokio::test]
async fn a_broken_stream_is_an_error_and_not_retried() {
    let server = Server::start([
        Reply::SseThenBreak(vec![chunk(
            json!({"role": "assistant", "content": "Hel"}),
            None,
        )]),
        Reply::Sse(vec![chunk(json!({"content": "never"}), Some("stop"))]),
    ])
    .await;
    let mut stream = model(&server).stream(ask());
    let mut results = Vec::new();
    while let Some(item) = stream.next().await {
        results.push(item);
    }
    assert_eq!(results[0].as_ref().unwrap().content, Some("Hel".into()));
    let err = results.last().unwrap().as_ref().unwrap_err();
    assert_eq!(err.kind(), ModelErrorKind::Connection, "{err}");
    assert_eq!(
        server.seen().len(),
        1,
        "a stream that started is never retried"
    );
}

#[tokio::test]
async fn dropping_a_stream_closes_the_connection() {
    let server = Server::start([Reply::SseThenStall(vec![chunk(
        json!({"role": "assistant", "content": "Hel"}),
        None,
    )])])
    .await;
    let model = model(&server);
    let mut stream = model.stream(ask());
    stream.next().await.unwrap().unwrap();
    assert_eq!(server.open_streams(), 1);
    drop(stream);
    let deadline = Instant::now() + Duration::from_secs(5);
    while server.open_streams() != 0 {
        assert!(Instant::now() < deadline, "the server still streams");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn dropping_an_invoke_mid_call_cancels_it_cleanly() {
    let (json, _) = same_reply();
    let server = Server::start([
        Reply::Slow(
            Duration::from_secs(30),
            Box::new(Reply::Json(200, vec![], json.clone())),
        ),
        Reply::Json(200, vec![], json),
    ])
    .await;
    let model = model(&server);
    let cancelled = tokio::time::timeout(Duration::from_millis(200), model.invoke(ask())).await;
    assert!(cancelled.is_err());
    // The same model goes on working.
    assert_eq!(model.invoke(ask()).await.unwrap().text(), "Let me check.");
}

#[tokio::test]
async fn a_compatible_servers_quirks_are_read_leniently() {
    // finish_reason "", no tool-call ids, no index, unknown fields, no usage.
    let sse = vec![
        json!({"id": "x", "model": "llama3.2", "choices": [{"delta": {"role": "assistant", "content": "", "reasoning_content": "hmm"}}], "extra": 1}),
        json!({"id": "x", "model": "llama3.2", "choices": [{"delta": {"tool_calls": [
            {"function": {"name": "get_weather", "arguments": "{\"city\""}}]}}]}),
        json!({"id": "x", "model": "llama3.2", "choices": [{"delta": {"tool_calls": [
            {"function": {"arguments": ": \"Oslo\"}"}}]}}]}),
        json!({"id": "x", "model": "llama3.2", "choices": [{"delta": {}, "finish_reason": ""}]}),
    ];
    let json = json!({"id": "x", "model": "llama3.2", "choices": [{"message": {
        "role": "assistant", "content": null,
        "tool_calls": [{"function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]},
        "finish_reason": "eos_token"}]});
    let server = Server::start([Reply::Sse(sse), Reply::Json(200, vec![], json)]).await;
    let model = model(&server);
    for reply in [
        merged(&model, ask()).await,
        model.invoke(ask()).await.unwrap(),
    ] {
        let call = &reply.tool_calls()[0];
        assert_eq!(
            (call.name.as_str(), &call.args),
            ("get_weather", &json!({"city": "Oslo"}))
        );
        assert!(
            call.id.as_deref().unwrap().starts_with("call_"),
            "minted: {call:?}"
        );
    }
}

#[tokio::test]
async fn bad_arguments_are_an_invalid_call_not_an_error() {
    let sse = vec![
        chunk(
            json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                   "function": {"name": "get_weather", "arguments": "{\"city\": Oslo}"}}]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
    ];
    let server = Server::start([Reply::Sse(sse)]).await;
    let reply = merged(&model(&server), ask()).await;
    assert!(reply.tool_calls().is_empty());
    let invalid = &reply.extra()["invalid_tool_calls"][0];
    assert_eq!(invalid["id"], "call_1");
    assert_eq!(invalid["args"], "{\"city\": Oslo}");
}

#[tokio::test]
async fn a_model_without_a_key_for_openais_own_api_fails_before_any_request() {
    if std::env::var_os("OPENAI_API_KEY").is_some() {
        return; // it would take that key; never call the real API from a test
    }
    let err = ChatOpenAI::new("gpt-4o-mini")
        .invoke(ask())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ModelErrorKind::Auth);
    assert!(err.to_string().contains("OPENAI_API_KEY"), "{err}");
}

/// The weather, as the model reports it.
#[derive(Debug, PartialEq, Deserialize, schemars::JsonSchema)]
struct Weather {
    /// The city.
    city: String,
    /// Degrees Celsius.
    celsius: f64,
}

#[tokio::test]
async fn structured_output_forces_one_tool_and_parses_it() {
    let answer = |args: &str| {
        Reply::Json(
            200,
            vec![],
            completion(
                json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
                       "function": {"name": "Weather", "arguments": args}}]}),
                "stop",
            ),
        )
    };
    let server = Server::start([
        answer(r#"{"city": "Oslo", "celsius": 7.5}"#),
        answer(r#"{"city": "Oslo"}"#),
    ])
    .await;
    let structured = model(&server).with_structured_output::<Weather>();
    let weather = structured.invoke(ask()).await.unwrap();
    assert_eq!(
        weather,
        Weather {
            city: "Oslo".into(),
            celsius: 7.5
        }
    );
    let body = &server.seen()[0].body;
    assert_eq!(
        body["tool_choice"],
        json!({"type": "function", "function": {"name": "Weather"}})
    );
    let function = &body["tools"][0]["function"];
    assert_eq!(function["name"], "Weather");
    assert_eq!(
        function["description"],
        "The weather, as the model reports it."
    );
    assert_eq!(
        function["parameters"]["required"],
        json!(["city", "celsius"])
    );
    assert_eq!(
        function["parameters"]["properties"]["city"]["description"],
        "The city."
    );
    // A reply that does not fit: the raw reply and the parse error, as data.
    let raw = structured.invoke_raw(ask()).await.unwrap();
    assert!(raw.parsed.is_none());
    assert_eq!(raw.raw.tool_calls()[0].args, json!({"city": "Oslo"}));
    let error = raw.parsing_error.unwrap();
    assert_eq!(error.kind(), ModelErrorKind::Parse);
    assert!(error.to_string().contains("celsius"), "{error}");
}

#[tokio::test]
async fn a_nodes_tokens_reach_the_messages_stream() {
    let (_, sse) = same_reply();
    let server = Server::start([Reply::Sse(sse.clone()), Reply::Sse(sse)]).await;
    let model = model(&server).stream_usage(true);
    let streamed_model = model.clone();
    let mut g = StateGraph::<MessagesState>::new();
    g.add_node("agent", move |s: Arc<MessagesState>| {
        let model = model.clone();
        async move {
            let reply = model
                .invoke(s.messages.iter().cloned().collect::<Vec<_>>())
                .await?;
            Ok::<_, NodeError>(MessagesState::delta().messages(vec![reply]))
        }
    });
    g.add_edge(START, "agent").add_edge("agent", END);
    let app = g.compile().unwrap();
    let events: Vec<(String, Value)> = app
        .stream(
            MessagesState::delta().messages(ask()),
            StreamMode::MESSAGES | StreamMode::VALUES,
        )
        .map(|e| {
            let e = e.unwrap();
            (e.mode().to_owned(), e.data().unwrap())
        })
        .collect()
        .await;
    let tokens: Vec<&Value> = events
        .iter()
        .filter(|(mode, _)| mode == "messages")
        .map(|(_, data)| data)
        .collect();
    let text: String = tokens
        .iter()
        .filter_map(|t| t[0]["content"].as_str())
        .collect();
    assert_eq!(text, "Let me check.");
    assert!(tokens.iter().all(|t| t[1]["langgraph_node"] == "agent"));
    let ids: Vec<&str> = tokens
        .iter()
        .map(|t| t[0]["id"].as_str().unwrap())
        .collect();
    assert!(ids.iter().all(|id| *id == ids[0]), "{ids:?}");
    let args: String = tokens
        .iter()
        .filter_map(|t| t[0]["tool_call_chunks"].as_array())
        .flatten()
        .filter_map(|c| c["args"].as_str())
        .collect();
    assert_eq!(args, "{\"city\": \"Oslo\"}");
    // The stored reply is the merge of the streamed tokens, under their id.
    let state = &events.iter().rev().find(|(m, _)| m == "values").unwrap().1;
    let reply = &state["messages"][2];
    assert_eq!(reply["id"], ids[0]);
    assert_eq!(reply["content"], "Let me check.");
    assert_eq!(reply["tool_calls"][0]["args"], json!({"city": "Oslo"}));
    assert_eq!(reply["usage_metadata"]["total_tokens"], 30);
    assert_eq!(server.seen()[0].body["stream"], true);
    // Exactly the merge of `stream()` over the same script, but for the id
    // the node's call minted for its tokens.
    let mut stored = reply.clone();
    stored.as_object_mut().unwrap().remove("id");
    let mut streamed = serde_json::to_value(merged(&streamed_model, ask()).await).unwrap();
    streamed.as_object_mut().unwrap().remove("id");
    assert_eq!(stored, streamed);
}
