//! ChatAnthropic against real langchain-anthropic, both ways, over HTTP:
//! the vectors in `tests/fixtures/langchain_anthropic/vectors.json` were
//! written by it (`generate.py`, pinned by its `requirements.txt`) from the
//! same Anthropic JSON, and each is replayed here through the local server.
//!
//! - requests: the body we post for the same messages, tools and tool
//!   choice is exactly the one langchain-anthropic's SDK posted;
//! - responses: the message `invoke` returns is langchain-anthropic's;
//! - streams: each event gives the chunk it gave, and their merge its
//!   message.
//!
//! Compared after one normalisation, on both sides: keys whose value is
//! `null` are dropped (the SDK fills every field it knows with `null`; we
//! keep what Anthropic sent). Where we deliberately say more, the test says
//! so: a streamed reply's metadata also carries `id`, `model` and the whole
//! `usage` (so that it equals the reply invoked whole), its usage counts the
//! input tokens `message_start` reported when `message_delta` repeats none
//! (langchain-anthropic then says 0), and an invalid call's `error` is our
//! text (langchain-anthropic leaves it empty).

use super::anthropic_server::{Reply, Server};
use futures::StreamExt;
use serde_json::{Map, Value, json};
use state_agent::anthropic::ChatAnthropic;
use state_agent::{ChatModelExt, MessageChunk, ToolChoice, ToolSpec, Usage};
use state_core::Message;

const VECTORS: &str = include_str!("../fixtures/langchain_anthropic/vectors.json");

fn vectors(kind: &str) -> Vec<(String, Value)> {
    let all: Value = serde_json::from_str(VECTORS).unwrap();
    let cases = all[kind].as_object().unwrap().clone();
    assert!(!cases.is_empty());
    cases.into_iter().collect()
}

/// Drops `null` values, deep.
fn prune(value: &Value) -> Value {
    match value {
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), prune(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(prune).collect()),
        other => other.clone(),
    }
}

fn model(server: &Server, max_tokens: u64) -> ChatAnthropic {
    ChatAnthropic::new("claude-test-1")
        .base_url(&server.url)
        .api_key("sk-test")
        .max_tokens(u32::try_from(max_tokens).unwrap())
}

fn ok_reply() -> Reply {
    Reply::Json(
        200,
        vec![],
        json!({"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-test-1",
               "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
               "stop_sequence": null, "usage": {"input_tokens": 1, "output_tokens": 1}}),
    )
}

fn ok_events() -> Reply {
    Reply::Sse(vec![
        json!({"type": "message_start", "message": {"id": "msg_01", "type": "message",
               "role": "assistant", "model": "claude-test-1", "content": [],
               "stop_reason": null, "stop_sequence": null,
               "usage": {"input_tokens": 1, "output_tokens": 1}}}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null},
               "usage": {"output_tokens": 1}}),
        json!({"type": "message_stop"}),
    ])
}

#[tokio::test]
async fn request_bodies_are_langchain_anthropics() {
    for (name, case) in vectors("requests") {
        let server = Server::start([if case["stream"] == true {
            ok_events()
        } else {
            ok_reply()
        }])
        .await;
        let mut model = model(&server, case["max_tokens"].as_u64().unwrap());
        if let Some(t) = case["temperature"].as_f64() {
            model = model.temperature(t);
        }
        let messages: Vec<Message> = serde_json::from_value(case["messages"].clone())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let tools: Vec<ToolSpec> = serde_json::from_value(case["tools"].clone()).unwrap();
        let mut bound = model.bind_tools(tools);
        if let Some(choice) = case["tool_choice"].as_str() {
            bound = bound.tool_choice(match choice {
                "auto" => ToolChoice::Auto,
                "any" => ToolChoice::Required,
                name => ToolChoice::Tool(name.to_owned()),
            });
        }
        if case["stream"] == true {
            let mut stream = bound.stream(messages);
            while let Some(chunk) = stream.next().await {
                chunk.unwrap_or_else(|e| panic!("{name}: {e}"));
            }
        } else {
            bound
                .invoke(messages)
                .await
                .unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        assert_eq!(server.seen()[0].body, case["body"], "{name}");
    }
}

/// The parts of a message both sides have: content, tool calls, invalid
/// calls (without their error text), usage.
fn common(message: &Value) -> Value {
    let invalid: Vec<Value> = message["invalid_tool_calls"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| json!({"name": c["name"], "args": c["args"], "id": c["id"]}))
        .collect();
    let calls: Vec<Value> = message["tool_calls"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| json!({"name": c["name"], "args": c["args"], "id": c["id"]}))
        .collect();
    json!({
        "content": prune(&message["content"]),
        "tool_calls": calls,
        "invalid_tool_calls": invalid,
        "usage": usage(&message["usage_metadata"]),
    })
}

fn usage(value: &Value) -> Value {
    if value.is_null() {
        return Value::Null;
    }
    let usage: Usage = serde_json::from_value(value.clone()).unwrap();
    serde_json::to_value(usage).unwrap()
}

fn metadata(message: &Value) -> Map<String, Value> {
    prune(&message["response_metadata"])
        .as_object()
        .cloned()
        .unwrap_or_default()
}

#[tokio::test]
async fn replies_are_langchain_anthropics() {
    for (name, case) in vectors("responses") {
        let server = Server::start([Reply::Json(200, vec![], case["response"].clone())]).await;
        let reply = model(&server, 1024)
            .invoke(vec![Message::human("hi")])
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let ours = serde_json::to_value(&reply).unwrap();
        let theirs = &case["message"];
        assert_eq!(common(&ours), common(theirs), "{name}");
        assert_eq!(metadata(&ours), metadata(theirs), "{name}");
    }
}

#[tokio::test]
async fn streamed_events_are_langchain_anthropics_chunks() {
    for (name, case) in vectors("streams") {
        let events = case["events"].as_array().unwrap().clone();
        let server = Server::start([Reply::Sse(events.clone())]).await;
        let mut model_tools = Vec::new();
        if case["tools"] == true {
            model_tools.push(ToolSpec::new(
                "get_weather",
                "",
                json!({"type": "object", "properties": {"city": {"type": "string"}}}),
            ));
        }
        let mut stream = model(&server, 1024)
            .bind_tools(model_tools)
            .stream(vec![Message::human("hi")]);
        let mut chunks = Vec::new();
        while let Some(chunk) = stream.next().await {
            chunks.push(chunk.unwrap_or_else(|e| panic!("{name}: {e}")));
        }
        let theirs = case["chunks"].as_array().unwrap();
        assert_eq!(
            chunks.len(),
            theirs.len(),
            "{name}: one chunk per event that gives one"
        );

        // message_delta's usage: whole, or output tokens only (older servers).
        let delta_usage = events
            .iter()
            .find(|e| e["type"] == "message_delta")
            .map(|e| e["usage"].clone())
            .unwrap();
        let start_input = events[0]["message"]["usage"]["input_tokens"]
            .as_u64()
            .unwrap();
        let expected_usage = |theirs: &Value| {
            let mut usage = usage(theirs);
            if !usage.is_null() && delta_usage.get("input_tokens").is_none() {
                // Deliberate: the input tokens message_start reported.
                usage["input_tokens"] = json!(start_input);
                let total = start_input + usage["output_tokens"].as_u64().unwrap();
                usage["total_tokens"] = json!(total);
            }
            usage
        };

        for (i, (ours, theirs)) in chunks.iter().zip(theirs).enumerate() {
            let at = format!("{name}, chunk {i}");
            let content = serde_json::to_value(ours.as_message()).unwrap()["content"].clone();
            assert_eq!(prune(&content), prune(&theirs["content"]), "{at}");
            let pieces: Vec<Value> = ours
                .tool_call_chunks
                .iter()
                .map(|c| json!({"name": c.name, "args": c.args, "id": c.id, "index": c.index}))
                .collect();
            let their_pieces: Vec<Value> = theirs["tool_call_chunks"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| json!({"name": c["name"], "args": c["args"], "id": c["id"], "index": c["index"]}))
                .collect();
            assert_eq!(pieces, their_pieces, "{at}");
            let our_usage = ours
                .usage
                .clone()
                .map_or(Value::Null, |u| serde_json::to_value(u).unwrap());
            assert_eq!(our_usage, expected_usage(&theirs["usage_metadata"]), "{at}");
            assert_eq!(ours.last, theirs["chunk_position"] == "last", "{at}");
            assert_superset(
                &prune(&Value::Object(ours.response_metadata.clone())),
                theirs,
                &at,
            );
        }

        let mut merged = MessageChunk::default();
        for chunk in chunks {
            merged += chunk;
        }
        let ours = serde_json::to_value(merged.into_message()).unwrap();
        let theirs = &case["message"];
        let mut expected = common(theirs);
        expected["usage"] = expected_usage(&theirs["usage_metadata"]);
        assert_eq!(common(&ours), expected, "{name}: the merged message");
        assert_superset(
            &ours["response_metadata"],
            theirs,
            &format!("{name}: merged"),
        );
    }
}

/// Our metadata has every key theirs has, equal, and besides at most the
/// reply's `id`, `model` and whole `usage`.
fn assert_superset(ours: &Value, theirs: &Value, at: &str) {
    let ours = prune(ours);
    let ours = ours.as_object().unwrap();
    let theirs = metadata(theirs);
    for (key, value) in &theirs {
        assert_eq!(ours.get(key), Some(value), "{at}: response_metadata.{key}");
    }
    for key in ours.keys().filter(|k| !theirs.contains_key(*k)) {
        assert!(
            ["id", "model", "usage"].contains(&key.as_str()),
            "{at}: we add {key}"
        );
    }
}
