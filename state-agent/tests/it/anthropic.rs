//! ChatAnthropic over real HTTP against a local server that speaks
//! Anthropic's wire format: the requests it posts (headers, tools, tool
//! results), replies whole and streamed (tool-call arguments split across
//! deltas, usage), failures (400, 401, 403, 404, 413, 429 with
//! `retry-after`, 500, 529, an error event, a stream cut in the middle, a
//! timeout), cancellation, and a model's tokens reaching a graph's stream.

use super::anthropic_server::{Reply, Server, error_body, events, message};
use futures::StreamExt;
use serde_json::{Value, json};
use state_agent::anthropic::ChatAnthropic;
use state_agent::{ChatModelExt, ChunkStream, MessageChunk, ModelError, ModelErrorKind, ToolSpec};
use state_core::{Message, MessagesState, State, ToolCall};
use state_graph::{END, NodeError, START, StateGraph, StreamMode};
use std::sync::Arc;
use std::time::{Duration, Instant};

const KEY: &str = "sk-ant-test-secret-0123456789";

fn model(server: &Server) -> ChatAnthropic {
    ChatAnthropic::new("claude-test-1")
        .base_url(&server.url)
        .api_key(KEY)
        .max_tokens(512)
}

fn weather() -> ToolSpec {
    ToolSpec::new(
        "get_weather",
        "Get the current weather for a city.",
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
    )
}

async fn merge(mut chunks: ChunkStream) -> Result<(Vec<MessageChunk>, MessageChunk), ModelError> {
    let mut all = Vec::new();
    let mut reply = MessageChunk::default();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk?;
        all.push(chunk.clone());
        reply += chunk;
    }
    Ok((all, reply))
}

#[tokio::test]
async fn posts_anthropics_request_and_reads_its_reply() {
    let reply = message(
        json!([{"type": "text", "text": "Checking."},
               {"type": "tool_use", "id": "toolu_03", "name": "get_weather", "input": {"city": "Bergen"}}]),
        "tool_use",
    );
    let server = Server::start([Reply::Json(200, vec![], reply)]).await;
    let conversation = vec![
        Message::system("Use tools."),
        Message::human("Weather in Oslo and Rome?"),
        Message::ai("").with_tool_calls([
            ToolCall::new("get_weather", json!({"city": "Oslo"})).with_id("toolu_01"),
            ToolCall::new("get_weather", json!({"city": "Rome"})).with_id("toolu_02"),
        ]),
        Message::tool("Mild", "toolu_01"),
        Message::tool("no such city", "toolu_02").with_extra("status", json!("error")),
        Message::human("And Bergen?"),
    ];
    let answer = model(&server)
        .temperature(0.5)
        .bind_tools([weather()])
        .invoke(conversation)
        .await
        .unwrap();

    let seen = &server.seen()[0];
    assert_eq!(seen.header("x-api-key"), Some(KEY));
    assert_eq!(seen.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(seen.header("content-type"), Some("application/json"));
    assert_eq!(seen.header("authorization"), None);
    assert_eq!(
        seen.body,
        json!({
            "model": "claude-test-1",
            "max_tokens": 512,
            "temperature": 0.5,
            "system": "Use tools.",
            "tools": [{"name": "get_weather", "description": "Get the current weather for a city.",
                       "input_schema": {"type": "object", "properties": {"city": {"type": "string"}},
                                        "required": ["city"]}}],
            "messages": [
                {"role": "user", "content": "Weather in Oslo and Rome?"},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "name": "get_weather", "input": {"city": "Oslo"}, "id": "toolu_01"},
                    {"type": "tool_use", "name": "get_weather", "input": {"city": "Rome"}, "id": "toolu_02"},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "content": "Mild", "tool_use_id": "toolu_01", "is_error": false},
                    {"type": "tool_result", "content": "no such city", "tool_use_id": "toolu_02", "is_error": true},
                    {"type": "text", "text": "And Bergen?"},
                ]},
            ],
        })
    );

    assert_eq!(answer.text(), "Checking.");
    assert_eq!(answer.tool_calls()[0].name, "get_weather");
    assert_eq!(answer.tool_calls()[0].id.as_deref(), Some("toolu_03"));
    assert_eq!(answer.tool_calls()[0].args, json!({"city": "Bergen"}));
    let extra = answer.extra();
    assert_eq!(
        extra["usage_metadata"],
        json!({"input_tokens": 25, "output_tokens": 9, "total_tokens": 34,
               "input_token_details": {"cache_read": 4}})
    );
    let metadata = &extra["response_metadata"];
    assert_eq!(metadata["id"], "msg_T1");
    assert_eq!(metadata["model_name"], "claude-test-1");
    assert_eq!(metadata["stop_reason"], "tool_use");
    assert_eq!(metadata["model_provider"], "anthropic");
}

#[tokio::test]
async fn a_streamed_reply_merges_into_the_whole_one() {
    let tool = Some((
        "toolu_01",
        "get_weather",
        &["", "{\"ci", "ty\": \"Os", "lo\"}"][..],
    ));
    let whole = message(
        json!([{"type": "text", "text": "Let me check."},
               {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"city": "Oslo"}}]),
        "tool_use",
    );
    let server = Server::start([
        Reply::Sse(events(&["Let me", " check."], tool, "tool_use")),
        Reply::Json(200, vec![], whole),
    ])
    .await;
    let model = model(&server).bind_tools([weather()]);
    let (chunks, streamed) = merge(model.stream(vec![Message::human("Weather?")]))
        .await
        .unwrap();
    let invoked = model
        .invoke(vec![Message::human("Weather?")])
        .await
        .unwrap();

    // The stream asked for events; the call without a listener did not.
    assert_eq!(server.seen()[0].body["stream"], true);
    assert_eq!(server.seen()[1].body.get("stream"), None);
    // The arguments came in pieces, tied to their call by the block index.
    let pieces: Vec<(Option<usize>, Option<&str>, Option<&str>)> = chunks
        .iter()
        .flat_map(|c| &c.tool_call_chunks)
        .map(|t| (t.index, t.id.as_deref(), t.args.as_deref()))
        .collect();
    assert_eq!(
        pieces,
        [
            (Some(1), Some("toolu_01"), Some("")),
            (Some(1), None, Some("")),
            (Some(1), None, Some("{\"ci")),
            (Some(1), None, Some("ty\": \"Os")),
            (Some(1), None, Some("lo\"}")),
        ]
    );
    assert!(chunks.last().unwrap().last);
    let streamed = streamed.into_message();
    assert_eq!(streamed.text(), invoked.text());
    assert_eq!(streamed.tool_calls(), invoked.tool_calls());
    for key in ["usage_metadata", "response_metadata"] {
        assert_eq!(streamed.extra()[key], invoked.extra()[key], "{key}");
    }
}

#[tokio::test]
async fn plain_text_streams_as_strings_and_equals_the_whole_reply() {
    let server = Server::start([
        Reply::Sse(events(&["Hel", "lo", "!"], None, "end_turn")),
        Reply::Json(
            200,
            vec![],
            message(json!([{"type": "text", "text": "Hello!"}]), "end_turn"),
        ),
    ])
    .await;
    let model = model(&server);
    let (chunks, streamed) = merge(model.stream(vec![Message::human("hi")]))
        .await
        .unwrap();
    let texts: Vec<String> = chunks
        .iter()
        .filter_map(|c| {
            c.content
                .as_ref()
                .and_then(|c| c.as_text())
                .map(str::to_owned)
        })
        .collect();
    assert_eq!(texts, ["", "Hel", "lo", "!", ""]);
    let invoked = model.invoke(vec![Message::human("hi")]).await.unwrap();
    assert_eq!(streamed.into_message(), invoked);
}

async fn failure(status: u16, kind: &str, text: &str) -> ModelError {
    let server = Server::start([Reply::Json(status, vec![], error_body(kind, text))]).await;
    let err = model(&server)
        .max_retries(0)
        .invoke(vec![Message::human("hi")])
        .await
        .unwrap_err();
    assert_eq!(server.seen().len(), 1);
    err
}

#[tokio::test]
async fn failures_name_the_provider_the_status_and_anthropics_message() {
    for (status, kind, text, expected) in [
        (
            400,
            "invalid_request_error",
            "max_tokens: must be positive",
            ModelErrorKind::BadRequest,
        ),
        (
            400,
            "invalid_request_error",
            "prompt is too long: 300000 tokens > 200000 maximum",
            ModelErrorKind::ContextOverflow,
        ),
        (
            401,
            "authentication_error",
            "invalid x-api-key",
            ModelErrorKind::Auth,
        ),
        (403, "permission_error", "not allowed", ModelErrorKind::Auth),
        (
            404,
            "not_found_error",
            "model: claude-nope",
            ModelErrorKind::BadRequest,
        ),
        (
            413,
            "request_too_large",
            "Request exceeds the maximum size",
            ModelErrorKind::BadRequest,
        ),
        (
            429,
            "rate_limit_error",
            "Number of requests has exceeded your rate limit",
            ModelErrorKind::RateLimited,
        ),
        (
            500,
            "api_error",
            "Internal server error",
            ModelErrorKind::Server,
        ),
        (
            529,
            "overloaded_error",
            "Overloaded",
            ModelErrorKind::Server,
        ),
    ] {
        let err = failure(status, kind, text).await;
        assert_eq!(err.kind(), expected, "{status} {text}");
        assert_eq!(err.provider(), "anthropic");
        assert_eq!(err.status(), Some(status));
        assert_eq!(err.message(), Some(text));
        let shown = err.to_string();
        assert!(shown.starts_with("anthropic: ") && shown.contains(&format!("(HTTP {status})")));
        assert!(shown.ends_with(text), "{shown}");
    }
}

#[tokio::test]
async fn the_key_is_never_shown() {
    // A server that echoes the key it was given.
    let err = failure(
        401,
        "authentication_error",
        &format!("invalid x-api-key: {KEY}"),
    )
    .await;
    for shown in [err.to_string(), format!("{err:?}")] {
        assert!(!shown.contains(KEY), "{shown}");
        assert!(shown.contains("[redacted]"), "{shown}");
    }
    let model = ChatAnthropic::new("claude-test-1").api_key(KEY);
    assert!(!format!("{model:?}").contains(KEY));
}

#[tokio::test]
async fn a_rate_limit_waits_its_retry_after_then_succeeds() {
    let server = Server::start([
        Reply::Json(
            429,
            vec![("retry-after", "1")],
            error_body("rate_limit_error", "slow down"),
        ),
        Reply::Json(
            200,
            vec![],
            message(json!([{"type": "text", "text": "ok"}]), "end_turn"),
        ),
    ])
    .await;
    let started = Instant::now();
    let reply = model(&server)
        .invoke(vec![Message::human("hi")])
        .await
        .unwrap();
    assert_eq!(reply.text(), "ok");
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(server.seen().len(), 2);
}

#[tokio::test]
async fn overloaded_and_server_errors_are_retried_with_backoff() {
    let server = Server::start([
        Reply::Json(529, vec![], error_body("overloaded_error", "Overloaded")),
        Reply::Json(
            500,
            vec![],
            error_body("api_error", "Internal server error"),
        ),
        Reply::Sse(events(&["fine"], None, "end_turn")),
    ])
    .await;
    let (_, reply) = merge(model(&server).stream(vec![Message::human("hi")]))
        .await
        .unwrap();
    assert_eq!(reply.into_message().text(), "fine");
    assert_eq!(server.seen().len(), 3);

    // Out of retries: the last failure is the error.
    let server = Server::start([
        Reply::Json(500, vec![], error_body("api_error", "first")),
        Reply::Json(529, vec![], error_body("overloaded_error", "second")),
    ])
    .await;
    let err = model(&server)
        .max_retries(1)
        .invoke(vec![Message::human("hi")])
        .await
        .unwrap_err();
    assert_eq!((err.status(), err.message()), (Some(529), Some("second")));
    assert_eq!(server.seen().len(), 2);
}

#[tokio::test]
async fn a_stream_cut_in_the_middle_is_a_clean_error_and_not_retried() {
    let mut cut = events(&["Hel", "lo"], None, "end_turn");
    cut.truncate(5); // message_start, block start, ping, two deltas
    let server = Server::start([Reply::SseThenBreak(cut.clone()), Reply::Sse(cut)]).await;
    let mut stream = model(&server).stream(vec![Message::human("hi")]);
    let mut text = String::new();
    let err = loop {
        match stream.next().await.expect("an error ends the stream") {
            Ok(chunk) => text += &chunk.content.map(|c| c.text()).unwrap_or_default(),
            Err(err) => break err,
        }
    };
    assert_eq!(text, "Hello");
    assert_eq!(err.kind(), ModelErrorKind::Connection);
    assert!(stream.next().await.is_none());
    assert_eq!(server.seen().len(), 1);

    // A body that ends cleanly before the reply did is cut too.
    let err = merge(model(&server).stream(vec![Message::human("hi")]))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ModelErrorKind::Connection);
    assert!(err.to_string().contains("ended before"), "{err}");
}

#[tokio::test]
async fn an_error_event_ends_the_stream_with_anthropics_error() {
    let mut failing = events(&["Hel"], None, "end_turn");
    failing.truncate(4);
    failing.push(error_body("overloaded_error", "Overloaded"));
    let server = Server::start([Reply::Sse(failing)]).await;
    let err = merge(model(&server).stream(vec![Message::human("hi")]))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ModelErrorKind::Server);
    assert_eq!(err.to_string(), "anthropic: server error: Overloaded");
    assert_eq!(server.seen().len(), 1);
}

#[tokio::test]
async fn timeouts_are_clean() {
    let slow = Reply::Slow(
        Duration::from_secs(5),
        Box::new(Reply::Json(200, vec![], message(json!([]), "end_turn"))),
    );
    let mut stalling = events(&["Hel"], None, "end_turn");
    stalling.truncate(4);
    let server = Server::start([slow, Reply::SseThenStall(stalling)]).await;
    let model = model(&server)
        .timeout(Duration::from_millis(300))
        .max_retries(0);
    let started = Instant::now();
    let err = model.invoke(vec![Message::human("hi")]).await.unwrap_err();
    assert_eq!(err.kind(), ModelErrorKind::Timeout);
    assert!(started.elapsed() < Duration::from_secs(3));

    let err = merge(model.stream(vec![Message::human("hi")]))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ModelErrorKind::Timeout);
}

#[tokio::test]
async fn dropping_the_stream_closes_the_connection() {
    let mut stalling = events(&["Hel"], None, "end_turn");
    stalling.truncate(4);
    let server = Server::start([Reply::SseThenStall(stalling)]).await;
    let mut stream = model(&server).stream(vec![Message::human("hi")]);
    stream.next().await.unwrap().unwrap();
    assert_eq!(server.open_streams(), 1);
    drop(stream);
    for _ in 0..50 {
        if server.open_streams() == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the server still streams to a client that went away");
}

#[tokio::test]
async fn its_tokens_reach_a_graphs_messages_stream() {
    let server = Server::start([Reply::Sse(events(
        &["The weather ", "in Oslo ", "is mild."],
        None,
        "end_turn",
    ))])
    .await;
    let model = model(&server);
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
            MessagesState::delta().messages(vec![Message::human("weather?")]),
            StreamMode::MESSAGES | StreamMode::VALUES,
        )
        .map(|e| {
            let e = e.unwrap();
            (e.mode().to_owned(), e.data().unwrap())
        })
        .collect()
        .await;
    // The graph listened, so the model streamed.
    assert_eq!(server.seen()[0].body["stream"], true);
    let tokens: Vec<&Value> = events
        .iter()
        .filter(|(mode, _)| mode == "messages")
        .map(|(_, data)| data)
        .collect();
    let text: String = tokens
        .iter()
        .map(|t| t[0]["content"].as_str().unwrap())
        .collect();
    assert_eq!(text, "The weather in Oslo is mild.");
    assert!(tokens.len() >= 3);
    assert!(tokens.iter().all(|t| t[1]["langgraph_node"] == "agent"));
    let ids: Vec<&Value> = tokens.iter().map(|t| &t[0]["id"]).collect();
    assert!(ids.iter().all(|id| *id == ids[0]), "{ids:?}");
    let last = &events
        .iter()
        .rev()
        .find(|(mode, _)| mode == "values")
        .unwrap()
        .1;
    assert_eq!(
        last["messages"][1]["content"],
        "The weather in Oslo is mild."
    );
    assert_eq!(&last["messages"][1]["id"], ids[0]);
    assert_eq!(last["messages"][1]["usage_metadata"]["output_tokens"], 9);
}
