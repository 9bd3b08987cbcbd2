//! The OpenAI adapter against real langchain-openai, both ways: the vectors
//! in `tests/fixtures/langchain_openai/vectors.json` were written by it
//! (`generate.py`, pinned by its `requirements.txt`) from the same provider
//! JSON.
//!
//! Compared after one normalisation, the same on both sides: keys whose
//! value is `null`, `{}` or `[]` are dropped (the openai SDK fills every
//! field it knows with `null`, and LangChain writes empty usage details;
//! we keep what the provider sent), LangChain's run ids (`lc_run-..`, which
//! our `invoke` mints only while a graph streams) and an invalid call's
//! `error` text (Python's JSON error messages are not serde's) are left out.

use serde_json::{Map, Value};
use state_agent::openai::convert::{
    StreamState, WireOptions, from_response, message_to_wire, to_wire,
};
use state_agent::openai::wire::{ChatCompletion, ChatCompletionChunk};
use state_agent::{MessageChunk, ToolChoice, ToolSpec};
use state_core::Message;

const VECTORS: &str = include_str!("../fixtures/langchain_openai/vectors.json");

fn vectors(kind: &str) -> Vec<Value> {
    let all: Value = serde_json::from_str(VECTORS).unwrap();
    all[kind].as_array().unwrap().clone()
}

fn message(v: &Value) -> Message {
    serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("{v}: {e}"))
}

/// Drops `null`, `{}` and `[]` values, deep.
fn prune(value: Value) -> Value {
    match value {
        Value::Object(fields) => Value::Object(
            fields
                .into_iter()
                .map(|(k, v)| (k, prune(v)))
                .filter(|(_, v)| !is_empty(v))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(prune).collect()),
        other => other,
    }
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Object(o) => o.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

/// A message's JSON as compared: pruned, without LangChain's run id, a
/// chunk's class name or invalid calls' error texts.
fn normalized(message: &Value) -> Value {
    let mut fields: Map<String, Value> = message.as_object().unwrap().clone();
    if fields
        .get("id")
        .and_then(Value::as_str)
        .is_some_and(|id| id.starts_with("lc_run-"))
    {
        fields.remove("id");
    }
    fields.remove("chunk_position");
    fields.insert("type".into(), "ai".into());
    if let Some(Value::Array(calls)) = fields.get_mut("invalid_tool_calls") {
        for call in calls {
            call.as_object_mut().unwrap().remove("error");
        }
    }
    prune(Value::Object(fields))
}

#[test]
fn messages_go_on_the_wire_as_langchain_sends_them() {
    let cases = vectors("to_wire");
    assert!(cases.len() > 20);
    for case in cases {
        let ours = message_to_wire(&message(&case["message"]));
        assert_eq!(ours, case["wire"], "{}", case["name"]);
        // Byte for byte where it matters: the arguments' JSON text.
        assert_eq!(
            ours.to_string(),
            case["wire"].to_string(),
            "{}",
            case["name"]
        );
    }
}

#[test]
fn request_bodies_are_langchains() {
    for case in vectors("requests") {
        let messages: Vec<Message> = case["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(message)
            .collect();
        let tools: Vec<ToolSpec> = case["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                ToolSpec::new(
                    t["name"].as_str().unwrap(),
                    t["description"].as_str().unwrap(),
                    t["parameters"].clone(),
                )
            })
            .collect();
        let choice = match case["tool_choice"].as_str() {
            None => None,
            Some("auto") => Some(ToolChoice::Auto),
            Some("any" | "required") => Some(ToolChoice::Required),
            Some("none") => Some(ToolChoice::None),
            Some(name) => Some(ToolChoice::Tool(name.into())),
        };
        let options = &case["options"];
        let mut wire = WireOptions::new("gpt-4o-mini");
        wire.temperature = options["temperature"].as_f64();
        wire.max_tokens = options["max_tokens"].as_u64().map(|n| n as u32);
        wire.stream = case["stream"].as_bool().unwrap();
        // LangChain's default (on) holds for its own default client only;
        // the vectors' client is a mock, so unset means off there.
        wire.stream_usage = options["stream_usage"].as_bool().unwrap_or(false);
        let ours = to_wire(&messages, &tools, choice.as_ref(), &wire);
        assert_eq!(ours, case["body"], "{}", case["name"]);
    }
}

#[test]
fn responses_read_as_langchain_reads_them() {
    for case in vectors("responses") {
        let response: ChatCompletion = serde_json::from_value(case["response"].clone()).unwrap();
        let ours = from_response(&response).unwrap();
        let ours = serde_json::to_value(&ours).unwrap();
        assert_eq!(
            normalized(&ours),
            normalized(&case["message"]),
            "{}",
            case["name"]
        );
        // Through the chunk the model yields for it, the same message.
        let again = MessageChunk::from_message(from_response(&response).unwrap()).into_message();
        assert_eq!(
            normalized(&serde_json::to_value(&again).unwrap()),
            normalized(&case["message"]),
            "{} (as a chunk)",
            case["name"]
        );
    }
}

/// What a LangChain chunk and ours are compared on.
fn chunk_view(chunk: &Value) -> Value {
    let calls: Vec<Value> = chunk["tool_call_chunks"]
        .as_array()
        .map(|calls| {
            calls
                .iter()
                .map(|c| serde_json::json!([c["index"], c["id"], c["name"], c["args"]]))
                .collect()
        })
        .unwrap_or_default();
    prune(serde_json::json!({
        "content": chunk["content"],
        "tool_call_chunks": calls,
        "usage_metadata": chunk["usage_metadata"],
        "response_metadata": chunk["response_metadata"],
        "last": chunk["chunk_position"] == "last",
    }))
}

fn our_chunk_view(chunk: &MessageChunk) -> Value {
    let mut message = serde_json::to_value(chunk.as_message()).unwrap();
    message["usage_metadata"] = serde_json::to_value(&chunk.usage).unwrap();
    message["response_metadata"] = Value::Object(chunk.response_metadata.clone());
    if chunk.last {
        message["chunk_position"] = "last".into();
    }
    chunk_view(&message)
}

#[test]
fn streams_chunk_and_merge_as_langchains() {
    for case in vectors("streams") {
        let name = &case["name"];
        let mut state = StreamState::new();
        let mut ours: Vec<MessageChunk> = case["chunks"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|c| {
                state.on_chunk(serde_json::from_value::<ChatCompletionChunk>(c.clone()).unwrap())
            })
            .collect();
        // ChatOpenAI ends every stream with an empty last chunk, as
        // LangChain does when the provider marked none.
        ours.push(MessageChunk {
            last: true,
            ..MessageChunk::default()
        });
        let theirs = case["message_chunks"].as_array().unwrap();
        assert_eq!(ours.len(), theirs.len(), "{name}");
        for (i, (a, b)) in ours.iter().zip(theirs).enumerate() {
            assert_eq!(our_chunk_view(a), chunk_view(b), "{name}, chunk {i}");
        }
        let merged = ours.into_iter().fold(MessageChunk::default(), |mut m, c| {
            m += c;
            m
        });
        let message = serde_json::to_value(merged.into_message()).unwrap();
        assert_eq!(normalized(&message), normalized(&case["message"]), "{name}");
    }
}
