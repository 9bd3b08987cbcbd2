//! LangGraph's recorded `add_messages` behaviour (`tests/vectors/add_messages.json`,
//! produced by running langgraph 1.2.22) replayed through our `add_messages`,
//! on `Messages` and on `Vec<Message>`.
//!
//! Every case in the file is accounted for: it is either run and compared
//! with LangGraph's result, or listed below as Python-only or as a
//! deliberate difference, with the reason and an assertion of what we do
//! instead. A new case that fits neither fails this test until it is run
//! or listed.

use crate::placeholders::{self, Ids};
use serde_json::{Value, json};
use state_core::reducer::add_messages;
use state_core::{Message, Messages, REMOVE_ALL_MESSAGES, ReduceError};
use std::collections::BTreeSet;

const VECTORS: &str = include_str!("../../vectors/add_messages.json");

/// Cases that exercise Python-only API: `None` arguments and the `format`
/// keyword. Some names are from the half of LangGraph's vectors that is held
/// back from this file (SEMANTICS.md names them); they are handled the same
/// way if they appear. What we assert instead depends on the case's shape
/// (see `python_only`).
const PYTHON_ONLY: &[(&str, &str)] = &[
    (
        "right_none_empty_left",
        "add_messages(left, None): Rust has no None argument; a JSON null is not a list of messages",
    ),
    (
        "right_none",
        "add_messages(left, None): Rust has no None argument; a JSON null is not a list of messages",
    ),
    (
        "left_none",
        "add_messages(None, right): Rust has no None argument; a JSON null is not a history",
    ),
    (
        "format_invalid",
        "the `format` keyword does not exist; without it the merge succeeds",
    ),
    (
        "format_invalid_with_missing_remove",
        "the `format` keyword does not exist; the missing-id error is ours too",
    ),
    (
        "format_invalid_with_remove_all",
        "the `format` keyword does not exist; without it the merge succeeds",
    ),
    (
        "format_openai",
        "the `format` keyword does not exist; we keep the ids LangGraph's OpenAI round trip drops",
    ),
];

/// Where we differ from LangGraph on purpose (documented on `add_messages`
/// and `Messages`), with what we assert instead.
const DEVIATIONS: &[(&str, &str)] = &[
    (
        "remove_all_then_remove_message_kept",
        "after __remove_all__ LangGraph returns the rest verbatim, keeping a RemoveMessage as a state \
         entry; we merge the rest normally, so removing an id not added after the sentinel is an error",
    ),
    (
        "duplicate_ids_in_left_update",
        "Messages holds one message per id (the later one, at the earlier position), so the update \
         replaces that one; Vec<Message> keeps LangGraph's duplicates and is compared as usual",
    ),
];

fn reason(list: &[(&str, &'static str)], name: &str) -> Option<&'static str> {
    list.iter().find(|(n, _)| *n == name).map(|(_, r)| *r)
}

#[test]
fn every_vector_is_run_or_listed() {
    let file: Value = serde_json::from_str(VECTORS).expect("the vectors are JSON");
    assert_eq!(file["remove_all_sentinel"], json!(REMOVE_ALL_MESSAGES));
    let encoding = file["encoding"].as_str().unwrap_or_default();
    for kind in ["string", "tuple", "list", "dict", "int", "ai_chunk"] {
        assert!(
            encoding.contains(&format!("\"{kind}\"")),
            "raw kind {kind} documented"
        );
    }
    let cases = file["cases"].as_array().expect("cases");
    assert_eq!(file["count"], json!(cases.len()));

    let mut names = BTreeSet::new();
    let (mut ran, mut python_only_count, mut deviation_count) = (0, 0, 0);
    for case in cases {
        let name = case["name"].as_str().expect("a case has a name");
        assert!(names.insert(name), "case {name} appears twice");
        let structurally_python_only = case.get("kwargs").is_some()
            || case.get("left") == Some(&Value::Null)
            || case.get("right") == Some(&Value::Null);
        if let Some(why) = reason(PYTHON_ONLY, name) {
            assert!(
                structurally_python_only,
                "{name} is listed as Python-only ({why}) but is not"
            );
            python_only(name, case);
            python_only_count += 1;
        } else if let Some(why) = reason(DEVIATIONS, name) {
            deviation(name, why, case);
            deviation_count += 1;
        } else {
            assert!(
                !structurally_python_only,
                "{name} uses a Python-only argument: list it in PYTHON_ONLY with a reason"
            );
            run(name, case);
            ran += 1;
        }
    }
    assert_eq!(ran + python_only_count + deviation_count, cases.len());
    println!(
        "{ran} vectors run on Messages and Vec<Message>, {python_only_count} Python-only, \
         {deviation_count} deliberate differences"
    );
    assert!(ran >= 30, "most vectors are run, not listed");
}

// --- Decoding the file's encoding ---------------------------------------------

/// One encoded message as the JSON our `Message` deserializer reads.
fn decode(value: &Value) -> Value {
    let Some(object) = value.as_object() else {
        return value.clone();
    };
    let (Some(Value::String(kind)), Some(inner), 2) =
        (object.get("raw"), object.get("value"), object.len())
    else {
        // A message object in LangChain's shape.
        return value.clone();
    };
    match kind.as_str() {
        "string" | "dict" | "int" => inner.clone(),
        "tuple" | "list" => match inner {
            Value::Array(items) => Value::Array(items.iter().map(decode).collect()),
            other => other.clone(),
        },
        // AIMessageChunk(content, id): LangGraph turns it into an AIMessage;
        // Rust has no chunk type, so it is that AI message.
        "ai_chunk" => json!({
            "type": "ai",
            "content": inner.get("content").cloned().unwrap_or(Value::Null),
            "id": inner.get("id").cloned().unwrap_or(Value::Null),
        }),
        other => panic!("unknown raw kind {other:?}: teach this test to decode it"),
    }
}

/// `left`/`right`: a list, or one message (Python's non-list argument, which
/// LangGraph wraps in a list; in Rust the caller writes `vec![m]`).
fn side(value: &Value) -> Result<Vec<Message>, String> {
    let items = match value {
        Value::Array(items) => items.iter().map(decode).collect(),
        one => vec![decode(one)],
    };
    items
        .into_iter()
        .map(|item| serde_json::from_value(item).map_err(|e| e.to_string()))
        .collect()
}

fn to_json(messages: &[Message]) -> Value {
    serde_json::to_value(messages).expect("messages serialize")
}

/// The id in LangGraph's "Attempting to delete a message with an ID that
/// doesn't exist ('<id>')".
fn missing_id(error: &str) -> Option<&str> {
    let rest =
        error.split_once("Attempting to delete a message with an ID that doesn't exist ('")?;
    rest.1.strip_suffix("')")
}

/// Merges on both targets; on error checks both are unchanged.
fn merge_both(
    name: &str,
    left: &[Message],
    right: &[Message],
) -> (
    Result<Messages, ReduceError>,
    Result<Vec<Message>, ReduceError>,
) {
    let mut history = Messages::from(left.to_vec());
    let before = history.clone();
    let on_history = add_messages(&mut history, right.to_vec());
    let on_history = match on_history {
        Ok(()) => Ok(history),
        Err(err) => {
            assert_eq!(history, before, "{name}: Messages unchanged on error");
            Err(err)
        }
    };
    let mut vec = left.to_vec();
    let on_vec = match add_messages(&mut vec, right.to_vec()) {
        Ok(()) => Ok(vec),
        Err(err) => {
            assert_eq!(vec, left, "{name}: Vec<Message> unchanged on error");
            Err(err)
        }
    };
    (on_history, on_vec)
}

// --- Comparing with `<gen:N>` placeholders ----------------------------------

/// Matches `expected` against `actual` (`"<gen:N>"`: a fresh UUID v4,
/// equal N for one id), each comparison with placeholders of its own.
fn assert_matches(name: &str, target: &str, expected: &Value, actual: &Value) {
    if let Err(why) = placeholders::matches(name, expected, actual, &mut Ids::new()) {
        panic!("{name} on {target}: {why}\nexpected {expected}\n     got {actual}");
    }
}

// --- Running a case ---------------------------------------------------------

fn run(name: &str, case: &Value) {
    let decoded = side(&case["left"]).and_then(|left| Ok((left, side(&case["right"])?)));
    if let Some(error) = case.get("error").and_then(Value::as_str) {
        if let Some(id) = missing_id(error) {
            // The merge refuses it, naming the id, on both targets.
            let (left, right) = decoded.unwrap_or_else(|e| panic!("{name}: decodes: {e}"));
            let (on_history, on_vec) = merge_both(name, &left, &right);
            let missing = ReduceError::MissingMessageId { id: id.to_owned() };
            assert_eq!(
                on_history.err(),
                Some(missing.clone()),
                "{name} on Messages"
            );
            assert_eq!(
                on_vec.err(),
                Some(missing.clone()),
                "{name} on Vec<Message>"
            );
            assert!(missing.to_string().contains(&format!("\"{id}\"")));
        } else {
            // LangChain's coercion refuses the input: so does our decoding.
            let err = decoded.err();
            assert!(
                err.is_some(),
                "{name}: LangGraph says {error:?}, we decode it"
            );
        }
        return;
    }
    let expected = case.get("expected").expect("a case has expected or error");
    let (left, right) = decoded.unwrap_or_else(|e| panic!("{name}: decodes: {e}"));
    let (on_history, on_vec) = merge_both(name, &left, &right);
    let on_history = on_history.unwrap_or_else(|e| panic!("{name} on Messages: {e}"));
    let on_vec = on_vec.unwrap_or_else(|e| panic!("{name} on Vec<Message>: {e}"));
    assert_matches(
        name,
        "Messages",
        expected,
        &serde_json::to_value(&on_history).unwrap(),
    );
    assert_matches(name, "Vec<Message>", expected, &to_json(&on_vec));
    if case["generated_ids"] == json!(true) {
        assert!(expected.to_string().contains("<gen:"), "{name}");
    }
}

fn python_only(name: &str, case: &Value) {
    for (key, what) in [("left", "history"), ("right", "update")] {
        if case.get(key) == Some(&Value::Null) {
            // No None in Rust: a JSON null is refused where a history or an
            // update is read.
            assert!(
                serde_json::from_value::<Messages>(Value::Null).is_err(),
                "{name}: null {what}"
            );
            assert!(
                serde_json::from_value::<Vec<Message>>(Value::Null).is_err(),
                "{name}: null {what}"
            );
        }
    }
    if case.get("kwargs").is_none() {
        return;
    }
    // Without the `format` keyword: the plain merge.
    let left = side(&case["left"]).unwrap_or_else(|e| panic!("{name}: {e}"));
    let right = side(&case["right"]).unwrap_or_else(|e| panic!("{name}: {e}"));
    let (on_history, on_vec) = merge_both(name, &left, &right);
    let error = case.get("error").and_then(Value::as_str);
    if let Some(id) = error.and_then(missing_id) {
        let missing = ReduceError::MissingMessageId { id: id.to_owned() };
        assert_eq!(on_history.err(), Some(missing.clone()), "{name}");
        assert_eq!(on_vec.err(), Some(missing), "{name}");
        return;
    }
    let on_history = on_history.unwrap_or_else(|e| panic!("{name}: {e}"));
    let on_vec = on_vec.unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(on_history.as_slice(), on_vec.as_slice(), "{name}");
    if let Some(expected) = case.get("expected") {
        // LangGraph's result differs only by its dropped ids.
        let without_ids = |v: &Value| {
            let mut v = v.clone();
            for m in v.as_array_mut().into_iter().flatten() {
                if let Some(m) = m.as_object_mut() {
                    m.remove("id");
                }
            }
            v
        };
        assert_eq!(
            without_ids(&to_json(&on_vec)),
            without_ids(expected),
            "{name}"
        );
        assert!(on_vec.iter().all(|m| m.id().is_some()), "{name}: ids kept");
    }
}

fn deviation(name: &str, why: &str, case: &Value) {
    let left = side(&case["left"]).unwrap_or_else(|e| panic!("{name}: {e}"));
    let right = side(&case["right"]).unwrap_or_else(|e| panic!("{name}: {e}"));
    let (on_history, on_vec) = merge_both(name, &left, &right);
    match name {
        "remove_all_then_remove_message_kept" => {
            // right = [remove_all, remove("9")]: 9 was not added after the
            // sentinel, so it is a missing id, on both targets.
            let missing = ReduceError::MissingMessageId { id: "9".into() };
            assert_eq!(on_history.err(), Some(missing.clone()), "{name}: {why}");
            assert_eq!(on_vec.err(), Some(missing), "{name}: {why}");
        }
        "duplicate_ids_in_left_update" => {
            // left = [1:a, 2:h, 1:b] is one message per id in Messages:
            // [1:b, 2:h]; the update 1:c replaces it.
            let expected = json!([
                {"type": "human", "id": "1", "content": "c"},
                {"type": "human", "id": "2", "content": "h"},
            ]);
            let on_history = on_history.unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_matches(
                name,
                "Messages",
                &expected,
                &serde_json::to_value(&on_history).unwrap(),
            );
            // Vec<Message> reproduces LangGraph.
            let on_vec = on_vec.unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_matches(name, "Vec<Message>", &case["expected"], &to_json(&on_vec));
        }
        other => panic!("{other} is listed as a deviation but has no assertion: add one"),
    }
}

// --- Round trips ---------------------------------------------------------------

#[test]
fn langchain_shape_round_trips() {
    let history = json!([
        {"type": "system", "content": "be brief", "id": "s"},
        {"type": "human", "content": [{"type": "text", "text": "hi"}], "id": "u1", "name": "ann"},
        {"type": "ai", "content": "", "id": "a1",
         "tool_calls": [{"name": "search", "args": {"q": "x"}, "id": "c1", "type": "tool_call"}],
         "additional_kwargs": {}, "response_metadata": {"model_name": "m"},
         "usage_metadata": {"input_tokens": 3, "output_tokens": 1, "total_tokens": 4}},
        {"type": "tool", "content": "found", "id": "t1", "tool_call_id": "c1", "status": "success"},
        {"type": "ai", "content": "done", "id": "a2"},
    ]);
    let messages: Messages = serde_json::from_value(history.clone()).unwrap();
    assert_eq!(serde_json::to_value(&messages).unwrap(), history);
    let again: Messages = serde_json::from_value(serde_json::to_value(&messages).unwrap()).unwrap();
    assert_eq!(again, messages);
}

#[test]
fn openai_shape_and_strings_read_as_langchain_messages() {
    let input = json!([
        "plain text is a human message",
        ["assistant", "a [role, content] pair"],
        {"role": "developer", "content": "be brief"},
        {"role": "user", "content": "hi", "id": 7, "cache": true},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": "{\"a\":1}"}}
        ]},
        {"role": "tool", "content": "2", "tool_call_id": "call_1"},
    ]);
    let messages: Vec<Message> = serde_json::from_value(input).unwrap();
    let mut history = Messages::new();
    add_messages(&mut history, messages).unwrap();
    let out = serde_json::to_value(&history).unwrap();
    let expected = json!([
        {"type": "human", "content": "plain text is a human message", "id": "<gen:0>"},
        {"type": "ai", "content": "a [role, content] pair", "id": "<gen:1>"},
        {"type": "system", "content": "be brief", "id": "<gen:2>",
         "additional_kwargs": {"__openai_role__": "developer"}},
        {"type": "human", "content": "hi", "id": "7", "additional_kwargs": {"cache": true}},
        {"type": "ai", "content": "", "id": "<gen:3>",
         "tool_calls": [{"name": "add", "args": {"a": 1}, "id": "call_1", "type": "tool_call"}]},
        {"type": "tool", "content": "2", "id": "<gen:4>", "tool_call_id": "call_1"},
    ]);
    assert_matches("openai", "Messages", &expected, &out);
    // What we write reads back to the same messages.
    let back: Messages = serde_json::from_value(out).unwrap();
    assert_eq!(back, history);
}
