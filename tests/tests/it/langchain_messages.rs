//! Every message shape real langchain-core writes is read: the fixtures in
//! `tests/fixtures/langchain/messages.json` were written by langchain-core
//! 1.7 (`generate.py`) for every message class, chunks included, in its three
//! shapes (`model_dump()`, `messages_to_dict()`, `dumpd()`). The reverse
//! direction, langchain-core loading what we write, is checked by
//! `generate.py check --written` in `.ci/run`.

use serde_json::{Map, Value, json};
use state_core::{Content, Message, MessageKind, Messages};
use std::collections::BTreeSet;

const FIXTURES: &str = include_str!("../../fixtures/langchain/messages.json");

const SHAPES: [&str; 3] = ["model_dump", "messages_to_dict", "dumpd"];

struct Fixture {
    name: String,
    class: String,
    shapes: Map<String, Value>,
}

impl Fixture {
    fn input(&self, shape: &str) -> Value {
        self.shapes[shape].clone()
    }

    fn read(&self, shape: &str) -> Message {
        serde_json::from_value(self.input(shape))
            .unwrap_or_else(|e| panic!("{} in {shape}: {e}", self.name))
    }

    /// The `model_dump()` of the message LangGraph keeps: the chunk's
    /// message class for a chunk.
    fn as_message(&self) -> &Map<String, Value> {
        let dump = self
            .shapes
            .get("as_message")
            .unwrap_or(&self.shapes["model_dump"]);
        dump.as_object().expect("a model_dump is an object")
    }

    fn is_chunk(&self) -> bool {
        self.class.ends_with("Chunk")
    }
}

fn fixtures() -> Vec<Fixture> {
    let document: Value = serde_json::from_str(FIXTURES).expect("the fixtures are JSON");
    assert_eq!(document["langchain_core"], "1.7.2");
    let Value::Array(entries) = &document["messages"] else {
        panic!("the fixtures have a \"messages\" list");
    };
    entries
        .iter()
        .map(|entry| {
            let Value::Object(shapes) = entry.clone() else {
                panic!("a fixture is an object: {entry}");
            };
            Fixture {
                name: shapes["name"].as_str().unwrap().to_owned(),
                class: shapes["class"].as_str().unwrap().to_owned(),
                shapes,
            }
        })
        .collect()
}

/// The kind LangGraph reads a class as.
fn kind_of_class(class: &str) -> MessageKind {
    match class.trim_end_matches("Chunk") {
        "HumanMessage" => MessageKind::Human,
        "AIMessage" => MessageKind::Ai,
        "SystemMessage" => MessageKind::System,
        "ToolMessage" => MessageKind::Tool,
        "FunctionMessage" => MessageKind::Function,
        "ChatMessage" => MessageKind::Chat,
        "RemoveMessage" => MessageKind::Remove,
        other => panic!("unexpected class {other}"),
    }
}

/// A message's JSON without the keys whose value is LangChain's default,
/// which `dumpd()` leaves out and `model_dump()` writes.
fn without_defaults(value: &Value) -> Value {
    let mut object = value.as_object().expect("a message is an object").clone();
    object.retain(|key, value| {
        let default = match key.as_str() {
            "additional_kwargs" | "response_metadata" => json!({}),
            "invalid_tool_calls" | "tool_calls" => json!([]),
            "name" | "usage_metadata" | "artifact" => Value::Null,
            "status" => json!("success"),
            _ => return true,
        };
        *value != default
    });
    Value::Object(object)
}

fn write(message: &Message) -> Value {
    serde_json::to_value(message).unwrap()
}

#[test]
fn the_fixtures_cover_every_class_chunks_included() {
    let classes: BTreeSet<String> = fixtures().into_iter().map(|f| f.class).collect();
    let expected = [
        "AIMessage",
        "AIMessageChunk",
        "ChatMessage",
        "ChatMessageChunk",
        "FunctionMessage",
        "FunctionMessageChunk",
        "HumanMessage",
        "HumanMessageChunk",
        "RemoveMessage",
        "SystemMessage",
        "SystemMessageChunk",
        "ToolMessage",
        "ToolMessageChunk",
    ];
    assert_eq!(classes, expected.map(String::from).into());
}

#[test]
fn every_message_is_read_from_every_shape_as_its_message_class() {
    let mut read = 0;
    for fixture in fixtures() {
        for shape in SHAPES {
            let message = fixture.read(shape);
            let kind = kind_of_class(&fixture.class);
            assert_eq!(message.kind(), kind, "{} in {shape}", fixture.name);
            let dump = fixture.as_message();
            if kind != MessageKind::Remove {
                let content: Content = serde_json::from_value(dump["content"].clone()).unwrap();
                assert_eq!(message.content(), &content, "{}", fixture.name);
            }
            assert_eq!(message.id(), dump["id"].as_str(), "{}", fixture.name);
            assert_eq!(message.role(), dump.get("role").and_then(Value::as_str));
            read += 1;
        }
    }
    assert_eq!(read, 15 * 3, "every fixture in every shape");
}

#[test]
fn model_dump_and_messages_to_dict_read_alike_and_write_langchains_fields() {
    for fixture in fixtures() {
        let from_dump = fixture.read("model_dump");
        let from_dict = fixture.read("messages_to_dict");
        assert_eq!(from_dump, from_dict, "{}", fixture.name);
        let written = write(&from_dump);
        if from_dump.is_removal() {
            // A removal keeps only its id.
            assert_eq!(
                written,
                json!({"type": "remove", "content": "", "id": fixture.as_message()["id"]})
            );
            continue;
        }
        // What LangChain wrote (for a chunk: what LangGraph keeps of it),
        // field for field; only `"name": null` and `"tool_calls": []` are
        // left out, as LangChain's defaults.
        let mut expected = fixture.as_message().clone();
        if expected.get("name") == Some(&Value::Null) {
            expected.shift_remove("name");
        }
        if expected.get("tool_calls") == Some(&json!([])) {
            expected.shift_remove("tool_calls");
        }
        assert_eq!(written, Value::Object(expected), "{}", fixture.name);
    }
}

#[test]
fn dumpd_reads_as_model_dump_does_but_for_langchains_defaults() {
    for fixture in fixtures() {
        let from_dumpd = write(&fixture.read("dumpd"));
        let from_dump = write(&fixture.read("model_dump"));
        assert_eq!(
            without_defaults(&from_dumpd),
            without_defaults(&from_dump),
            "{}",
            fixture.name
        );
    }
}

#[test]
fn what_is_read_is_written_back_and_read_again_unchanged() {
    for fixture in fixtures() {
        for shape in SHAPES {
            let message = fixture.read(shape);
            let back: Message = serde_json::from_value(write(&message)).unwrap();
            assert_eq!(back, message, "{} from {shape}", fixture.name);
            let dict = serde_json::to_value(message.as_langchain_dict()).unwrap();
            assert_eq!(dict["type"], write(&message)["type"]);
            assert_eq!(dict["data"], write(&message));
            let back: Message = serde_json::from_value(dict).unwrap();
            assert_eq!(back, message, "{} from {shape} via its dict", fixture.name);
        }
    }
}

#[test]
fn chunks_keep_what_langgraph_keeps() {
    let fixtures = fixtures();
    let chunks: Vec<_> = fixtures.iter().filter(|f| f.is_chunk()).collect();
    assert_eq!(chunks.len(), 6);
    for fixture in chunks {
        let message = fixture.read("model_dump");
        assert_eq!(write(&message)["type"], fixture.as_message()["type"]);
        assert!(!message.extra().contains_key("tool_call_chunks"));
        assert!(!message.extra().contains_key("chunk_position"));
    }
    let ai = fixtures.iter().find(|f| f.name == "ai_chunk").unwrap();
    let message = ai.read("dumpd");
    assert_eq!(message.tool_calls()[0].id.as_deref(), Some("call_1"));
    assert_eq!(message.tool_calls()[0].args, json!({"a": 2, "b": 2}));
}

#[test]
fn a_history_reads_from_any_mix_of_shapes() {
    let fixtures: Vec<_> = fixtures()
        .into_iter()
        .filter(|f| f.class != "RemoveMessage")
        .collect();
    let mixed: Vec<Value> = fixtures
        .iter()
        .enumerate()
        .map(|(i, fixture)| fixture.input(SHAPES[i % 3]))
        .collect();
    let history: Messages = serde_json::from_value(Value::Array(mixed)).unwrap();
    assert_eq!(history.len(), fixtures.len());
    for (message, fixture) in history.iter().zip(&fixtures) {
        assert_eq!(message.id(), fixture.as_message()["id"].as_str());
    }
}

/// A fixture's shape with one key of its fields taken out.
fn without(fixture: &Fixture, shape: &str, fields: &str, key: &str) -> Value {
    let mut input = fixture.input(shape);
    input[fields].as_object_mut().unwrap().shift_remove(key);
    input
}

#[test]
fn malformed_wrappers_say_what_is_missing_and_where() {
    let fixtures = fixtures();
    let get = |name: &str| fixtures.iter().find(|f| f.name == name).unwrap();
    let cases = [
        (
            json!({"type": "human", "data": {}}),
            r#"in "data": a "human" message needs "content""#.to_owned(),
        ),
        (
            without(get("human"), "messages_to_dict", "data", "content"),
            r#"in "data": a "human" message needs "content""#.to_owned(),
        ),
        (
            without(get("chat"), "messages_to_dict", "data", "role"),
            r#"in "data": a "chat" message needs a "role""#.to_owned(),
        ),
        (
            without(get("tool"), "dumpd", "kwargs", "tool_call_id"),
            r#"in "kwargs": a "tool" message needs a "tool_call_id""#.to_owned(),
        ),
        (
            without(get("function_chunk"), "messages_to_dict", "data", "name"),
            r#"in "data": a "function" message needs a "name""#.to_owned(),
        ),
        (
            without(get("chat_chunk"), "dumpd", "kwargs", "role"),
            r#"in "kwargs": a "chat" message needs a "role""#.to_owned(),
        ),
        (
            without(get("remove"), "messages_to_dict", "data", "id"),
            r#"in "data": a "remove" message needs an "id""#.to_owned(),
        ),
    ];
    for (input, expected) in cases {
        let err = serde_json::from_value::<Message>(input.clone())
            .unwrap_err()
            .to_string();
        assert!(err.contains(&expected), "{input}: {err}");
    }
    // The chat message's model_dump without its role: its "type" is still
    // LangChain's, so the error is about the role, not an OpenAI one.
    let input = without_key(get("chat").input("model_dump"), "role");
    let err = serde_json::from_value::<Message>(input)
        .unwrap_err()
        .to_string();
    assert!(err.contains(r#"a "chat" message needs a "role""#), "{err}");
}

fn without_key(mut value: Value, key: &str) -> Value {
    value.as_object_mut().unwrap().shift_remove(key);
    value
}
