//! The message utilities against vectors written by real langchain-core
//! (`tests/fixtures/langchain/message_utils/generate.py`, the version
//! pinned in `tests/fixtures/langchain/requirements.txt`): every case's
//! output must be LangChain's exactly, but for the one difference on
//! purpose: `trim_messages` never splits a tool call from its results.

use serde_json::{Map, Value};
use state_agent::{
    ApproxTokenCounter, FilterOptions, TokenCounter, TrimOptions, TrimStrategy, filter_messages,
    merge_message_runs_with_separator, trim_messages,
};
use state_core::{Content, Message, MessageKind};
use std::collections::BTreeMap;

const VECTORS: &str = include_str!("../../../tests/fixtures/langchain/message_utils/vectors.json");

struct Vectors {
    conversations: BTreeMap<String, Vec<Message>>,
    cases: Vec<Map<String, Value>>,
}

fn vectors() -> Vectors {
    let document: Value = serde_json::from_str(VECTORS).expect("the vectors are JSON");
    assert_eq!(document["langchain_core"], "1.7.2");
    let conversations = document["conversations"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(name, messages)| {
            (
                name.clone(),
                serde_json::from_value(messages.clone()).unwrap(),
            )
        })
        .collect();
    let cases = document["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|case| case.as_object().unwrap().clone())
        .collect();
    Vectors {
        conversations,
        cases,
    }
}

impl Vectors {
    fn cases<'a>(
        &'a self,
        function: &'a str,
    ) -> impl Iterator<Item = (Vec<Message>, &'a Map<String, Value>)> + 'a {
        self.cases
            .iter()
            .filter(move |case| case["fn"] == function)
            .map(|case| {
                let input = match case.get("input") {
                    Some(input) => serde_json::from_value(input.clone()).unwrap(),
                    None => self.conversations[case["conversation"].as_str().unwrap()].clone(),
                };
                (input, case)
            })
    }
}

/// A message's JSON without the keys whose value is LangChain's default
/// (`model_dump()` writes them, we may not).
fn without_defaults(message: &Message) -> Value {
    let mut value = serde_json::to_value(message).unwrap();
    value.as_object_mut().unwrap().retain(|key, value| {
        let default = match key.as_str() {
            "additional_kwargs" | "response_metadata" => serde_json::json!({}),
            "invalid_tool_calls" | "tool_calls" => serde_json::json!([]),
            "name" | "usage_metadata" | "artifact" => Value::Null,
            "status" => serde_json::json!("success"),
            _ => return true,
        };
        *value != default
    });
    value
}

/// The case's expected messages: an index is the input message as it was.
fn expected(input: &[Message], case: &Map<String, Value>) -> Vec<Value> {
    expected_messages(input, case)
        .iter()
        .map(without_defaults)
        .collect()
}

fn expected_messages(input: &[Message], case: &Map<String, Value>) -> Vec<Message> {
    case["expected"]
        .as_array()
        .unwrap_or_else(|| panic!("a list expected: {case:?}"))
        .iter()
        .map(|item| match item {
            Value::Number(i) => input[i.as_u64().unwrap() as usize].clone(),
            dump => serde_json::from_value(dump.clone()).unwrap(),
        })
        .collect()
}

/// Whether `kept` (a trim of `input`) splits a tool call from its results:
/// a result whose call is not kept, or a kept call one of whose results
/// is in `input` but not kept.
fn splits_a_tool_call(kept: &[Message], input: &[Message]) -> bool {
    let called: Vec<&str> = kept
        .iter()
        .flat_map(|m| m.tool_calls().iter().filter_map(|c| c.id.as_deref()))
        .collect();
    let answered = |messages: &[Message], id: &str| {
        messages
            .iter()
            .any(|m| m.kind() == MessageKind::Tool && m.tool_call_id() == Some(id))
    };
    let orphan = kept.iter().any(|m| {
        m.kind() == MessageKind::Tool && m.tool_call_id().is_some_and(|id| !called.contains(&id))
    });
    let cut = called
        .iter()
        .any(|id| answered(input, id) && !answered(kept, id));
    orphan || cut
}

/// Whether `short` is `long` with some items left out.
fn is_subsequence(short: &[Value], long: &[Value]) -> bool {
    let mut long = long.iter();
    short.iter().all(|item| long.any(|other| other == item))
}

fn check(got: &[Message], input: &[Message], case: &Map<String, Value>) {
    let got: Vec<Value> = got.iter().map(without_defaults).collect();
    let expected = expected(input, case);
    assert_eq!(got, expected, "case {}", Value::Object(case.clone()));
}

fn kinds(value: Option<&Value>) -> Vec<MessageKind> {
    match value {
        None => Vec::new(),
        Some(Value::String(kind)) => {
            vec![serde_json::from_value(Value::String(kind.clone())).unwrap()]
        }
        Some(list) => serde_json::from_value(list.clone()).unwrap(),
    }
}

fn strings(value: &Value) -> Vec<String> {
    serde_json::from_value(value.clone()).unwrap()
}

/// The docstring's counter: 10 for a text, 3 + 4 per block + 3 for blocks.
fn dummy(message: &Message) -> usize {
    match message.content() {
        Content::Text(_) => 10,
        Content::Blocks(blocks) => 6 + 4 * blocks.len(),
    }
}

/// The "words" text splitter: pieces that end after each space.
fn words(text: &str) -> Vec<String> {
    let mut pieces: Vec<String> = text.split_inclusive(' ').map(str::to_owned).collect();
    if text.is_empty() || text.ends_with(' ') {
        pieces.push(String::new());
    }
    pieces
}

#[test]
fn count_tokens_approximately_as_langchain() {
    let vectors = vectors();
    let mut n = 0;
    for (input, case) in vectors.cases("count") {
        let options = case["options"].as_object().unwrap();
        let mut counter = ApproxTokenCounter::new();
        for (key, value) in options {
            counter = match key.as_str() {
                "chars_per_token" => counter.chars_per_token(value.as_f64().unwrap()),
                "extra_tokens_per_message" => {
                    counter.extra_tokens_per_message(value.as_f64().unwrap())
                }
                "count_name" => counter.count_name(value.as_bool().unwrap()),
                "tokens_per_image" => counter.tokens_per_image(value.as_u64().unwrap()),
                "use_usage_metadata_scaling" => {
                    counter.use_usage_metadata_scaling(value.as_bool().unwrap())
                }
                "tools" => counter.tools(value.as_array().unwrap().iter().cloned()),
                other => panic!("unknown option {other}"),
            };
        }
        if options.is_empty() {
            assert_eq!(
                state_agent::count_tokens_approximately(&input),
                counter.count(&input)
            );
        }
        assert_eq!(
            counter.count(&input) as u64,
            case["expected"].as_u64().unwrap(),
            "case {}",
            Value::Object(case.clone())
        );
        n += 1;
    }
    assert!(n > 150, "{n} cases");
}

#[test]
fn trim_messages_as_langchain() {
    let vectors = vectors();
    let (mut n, mut split) = (0, 0);
    for (input, case) in vectors.cases("trim") {
        let o = case["options"].as_object().unwrap();
        let counter = match o["token_counter"].as_str().unwrap() {
            "approximate" => TokenCounter::approximate(),
            "len" => TokenCounter::list(|messages: &[Message]| messages.len()),
            "dummy" => TokenCounter::per_message(dummy),
            other => panic!("unknown counter {other}"),
        };
        let strategy = match o["strategy"].as_str().unwrap() {
            "first" => TrimStrategy::First,
            _ => TrimStrategy::Last,
        };
        let mut options = TrimOptions::max_tokens(o["max_tokens"].as_u64().unwrap() as usize)
            .token_counter(counter)
            .strategy(strategy)
            .allow_partial(
                o.get("allow_partial")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            )
            .include_system(
                o.get("include_system")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            )
            .start_on(kinds(o.get("start_on")))
            .end_on(kinds(o.get("end_on")));
        if o.get("text_splitter").is_some() {
            options = options.text_splitter(words);
        }
        let result = trim_messages(&input, &options);
        match case["expected"].get("error").and_then(Value::as_str) {
            Some(error) => {
                let option = if error.starts_with("start_on") {
                    "start_on"
                } else {
                    "include_system"
                };
                let err = result.expect_err(error).to_string();
                assert!(err.contains(option), "{err} names {option}");
            }
            None => {
                let got = result.unwrap();
                assert!(
                    !splits_a_tool_call(&got, &input),
                    "a tool call split from its results: case {}",
                    Value::Object(case.clone())
                );
                let theirs = expected_messages(&input, case);
                if splits_a_tool_call(&theirs, &input) {
                    // Ours is LangChain's cut without the split pieces.
                    let got: Vec<Value> = got.iter().map(without_defaults).collect();
                    let theirs: Vec<Value> = theirs.iter().map(without_defaults).collect();
                    assert!(
                        got.len() < theirs.len() && is_subsequence(&got, &theirs),
                        "case {}",
                        Value::Object(case.clone())
                    );
                    split += 1;
                } else {
                    check(&got, &input, case);
                }
            }
        }
        n += 1;
    }
    assert!(n > 2000, "{n} cases");
    assert!(
        split > 20,
        "{split} cases where LangChain splits a tool call"
    );
    assert!(n - split > 1500, "{} cases as LangChain's", n - split);
}

#[test]
fn filter_messages_as_langchain() {
    let vectors = vectors();
    let mut n = 0;
    for (input, case) in vectors.cases("filter") {
        let mut options = FilterOptions::new();
        for (key, value) in case["options"].as_object().unwrap() {
            options = match key.as_str() {
                "include_names" => options.include_names(strings(value)),
                "exclude_names" => options.exclude_names(strings(value)),
                "include_types" => options.include_types(kinds(Some(value))),
                "exclude_types" => options.exclude_types(kinds(Some(value))),
                "include_ids" => options.include_ids(strings(value)),
                "exclude_ids" => options.exclude_ids(strings(value)),
                "exclude_tool_calls" if value == &Value::Bool(true) => {
                    options.exclude_all_tool_calls()
                }
                "exclude_tool_calls" => options.exclude_tool_calls(strings(value)),
                other => panic!("unknown option {other}"),
            };
        }
        check(&filter_messages(&input, &options), &input, case);
        n += 1;
    }
    assert!(n >= 100, "{n} cases");
}

#[test]
fn merge_message_runs_as_langchain() {
    let vectors = vectors();
    let mut n = 0;
    for (input, case) in vectors.cases("merge") {
        let separator = case["options"]
            .get("chunk_separator")
            .and_then(Value::as_str)
            .unwrap_or("\n");
        check(
            &merge_message_runs_with_separator(&input, separator),
            &input,
            case,
        );
        if separator == "\n" {
            assert_eq!(
                state_agent::merge_message_runs(&input),
                merge_message_runs_with_separator(&input, "\n")
            );
        }
        n += 1;
    }
    assert!(n >= 20, "{n} cases");
}

/// The approximate and per-message counters stop counting at the first
/// message that does not fit; LangChain searches with the count of every
/// prefix, as a list counter does here: both keep the same messages.
#[test]
fn counting_until_full_keeps_what_the_search_keeps() {
    let vectors = vectors();
    let approximate = |ms: &[Message]| state_agent::count_tokens_approximately(ms);
    for messages in vectors.conversations.values() {
        for max_tokens in 0..160 {
            for strategy in [TrimStrategy::First, TrimStrategy::Last] {
                for allow_partial in [false, true] {
                    let options = TrimOptions::max_tokens(max_tokens)
                        .strategy(strategy)
                        .allow_partial(allow_partial);
                    let lists = [
                        (TokenCounter::approximate(), TokenCounter::list(approximate)),
                        (
                            TokenCounter::per_message(dummy),
                            TokenCounter::list(|ms: &[Message]| ms.iter().map(dummy).sum()),
                        ),
                    ];
                    for (counter, list) in lists {
                        let fast = trim_messages(messages, &options.clone().token_counter(counter));
                        let searched =
                            trim_messages(messages, &options.clone().token_counter(list));
                        assert_eq!(fast, searched, "{max_tokens} {strategy:?} {allow_partial}");
                    }
                }
            }
        }
    }
}
