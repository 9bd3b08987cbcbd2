//! What the LangGraph conformance tests share (`conformance.rs` for
//! `vectors/graphs.json`, `agent_conformance.rs` for
//! `vectors/agent_graphs.json`): the vectors' state schema, their update
//! templates, the routing values their routers read, and matching JSON
//! that holds generated ids (`"<gen:N>"`).
#![allow(dead_code)]

use serde_json::{Map, Value, json};
use state_core::{AgentState, Messages, State};
use state_graph::Interrupt;
use std::collections::HashMap;

/// The file's schema, in order.
pub const KEYS: [&str; 4] = ["last", "items", "meta", "messages"];

/// The suffix of the worker that stands for the Send half of a node that is
/// both pulled and sent (see conformance.rs's `Difference::PulledAndSent`).
pub const SEND_SUFFIX: &str = "@send";

// ---------------------------------------------------------------------------
// The state: the file's schema.
// ---------------------------------------------------------------------------

/// `last: str` (LastValue), `items: Annotated[list, operator.add]`,
/// `meta: Annotated[dict, merge_dicts]`, `messages: Annotated[list, add_messages]`.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Graph {
    pub last: Option<String>,
    #[reducer(append)]
    pub items: Vec<Value>,
    #[reducer(merge)]
    pub meta: Map<String, Value>,
    #[reducer(add_messages)]
    pub messages: Messages,
}

/// Our state as LangGraph shows it: a LastValue key that was never written
/// is not shown. No case writes `null` to `last` (nor can ours: `None` is
/// not a value a delta writes here), so `None` means never written.
pub fn lg_json(state: &Graph) -> Value {
    strip_unwritten_last(state.to_json().expect("the state is JSON"))
}

pub fn strip_unwritten_last(mut value: Value) -> Value {
    if let Some(object) = value.as_object_mut()
        && object.get("last").is_some_and(Value::is_null)
    {
        object.remove("last");
    }
    value
}

pub fn interrupt_json(i: &Interrupt) -> Value {
    json!({"node": lg_name(&i.node), "value": i.value, "id": i.id})
}

/// A node name of ours as LangGraph's: the worker standing for a node's
/// Send half is that node.
pub fn lg_name(name: &str) -> String {
    name.strip_suffix(SEND_SUFFIX).unwrap_or(name).to_owned()
}

// ---------------------------------------------------------------------------
// Templates: `$item`, `$answer`, `$answer<N>` (the format's TEMPLATES).
// ---------------------------------------------------------------------------

/// The tokens of `text`: (start, end, name without the `$`), left to right,
/// as Python's `re.sub(r"\$(item|answer[0-9]*|remaining)", ...)` finds them
/// (`$remaining` is agent_graphs.json's; graphs.json has none).
pub fn tokens(text: &str) -> Vec<(usize, usize, &str)> {
    let mut found = Vec::new();
    let mut at = 0;
    while let Some(offset) = text[at..].find('$') {
        let start = at + offset;
        let rest = &text[start + 1..];
        let len = if rest.starts_with("item") {
            4
        } else if rest.starts_with("remaining") {
            9
        } else if let Some(digits) = rest.strip_prefix("answer") {
            6 + digits.bytes().take_while(u8::is_ascii_digit).count()
        } else {
            0
        };
        if len == 0 {
            at = start + 1;
        } else {
            found.push((start, start + 1 + len, &rest[..len]));
            at = start + 1 + len;
        }
    }
    found
}

/// What a template's tokens stand for in one invocation.
#[derive(Clone, Copy, Default)]
pub struct Vars<'v> {
    /// `$item`: the Send input's item.
    pub item: Option<&'v Value>,
    /// `$answer<N>`, `$answer`: the interrupt answers so far.
    pub answers: &'v [Value],
    /// `$remaining`: the node's remaining steps (agent_graphs.json).
    pub remaining: Option<&'v Value>,
}

/// A token's value in this invocation, if it has one.
pub fn token_value<'v>(token: &str, vars: &Vars<'v>) -> Option<&'v Value> {
    match token {
        "item" => vars.item,
        "remaining" => vars.remaining,
        "answer" => vars.answers.last(),
        // The generator's names are `$answer0`, `$answer1`, ...: `$answer01`
        // names none.
        _ => {
            let digits = token.strip_prefix("answer")?;
            let n = digits.parse::<usize>().ok()?;
            (n.to_string() == digits).then(|| vars.answers.get(n))?
        }
    }
}

pub fn substitute_str(text: &str, vars: &Vars<'_>, whole: bool) -> Value {
    let found = tokens(text);
    if whole
        && let [(0, end, token)] = found.as_slice()
        && *end == text.len()
        && let Some(value) = token_value(token, vars)
    {
        return value.clone();
    }
    let mut out = String::new();
    let mut at = 0;
    for (start, end, token) in found {
        out.push_str(&text[at..start]);
        match token_value(token, vars) {
            Some(Value::String(s)) => out.push_str(s),
            Some(other) => out.push_str(&other.to_string()),
            // No value here: the token stays as it is.
            None => out.push_str(&text[start..end]),
        }
        at = end;
    }
    out.push_str(&text[at..]);
    Value::String(out)
}

/// A template with its tokens replaced (`$item`, `$answer..`), object keys
/// included.
pub fn substitute(template: &Value, item: Option<&Value>, answers: &[Value]) -> Value {
    substitute_vars(
        template,
        &Vars {
            item,
            answers,
            remaining: None,
        },
    )
}

/// A template with its tokens replaced, object keys included.
pub fn substitute_vars(template: &Value, vars: &Vars<'_>) -> Value {
    match template {
        Value::String(text) => substitute_str(text, vars, true),
        Value::Array(list) => Value::Array(list.iter().map(|v| substitute_vars(v, vars)).collect()),
        Value::Object(object) => Value::Object(
            object
                .iter()
                .map(|(k, v)| {
                    let key = match substitute_str(k, vars, false) {
                        Value::String(key) => key,
                        other => other.to_string(),
                    };
                    (key, substitute_vars(v, vars))
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// `state[key]`, as the router reads it.
pub fn field(state: &Graph, key: &str) -> Value {
    state.to_json().expect("the state is JSON")[key].clone()
}

/// The routing value of a `by` router: `state[K]` if a string, or
/// `len(state[K])` in decimal.
pub fn routing_value(state: &Graph, by: &str) -> Option<String> {
    if let Some(key) = by.strip_prefix("len(").and_then(|r| r.strip_suffix(')')) {
        let len = match field(state, key) {
            Value::Array(list) => list.len(),
            Value::Object(object) => object.len(),
            Value::String(text) => text.chars().count(),
            other => panic!("len({key}) of {other}"),
        };
        Some(len.to_string())
    } else {
        field(state, by).as_str().map(str::to_owned)
    }
}

pub fn names(value: &Value) -> Vec<String> {
    match value {
        Value::String(name) => vec![name.clone()],
        Value::Array(list) => list
            .iter()
            .map(|n| n.as_str().expect("a target name").to_owned())
            .collect(),
        other => panic!("not a target: {other}"),
    }
}

pub fn str_list(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|list| {
            list.iter()
                .map(|v| v.as_str().expect("a name").to_owned())
                .collect()
        })
        .unwrap_or_default()
}

pub fn raw(list: &[Value]) -> Value {
    Value::Array(list.to_vec())
}

/// LangGraph's update chunk as ours: a node returning None (null) is our
/// empty delta; the `cached` marker is dropped.
pub fn normalize_update(update: &Value) -> Value {
    let mut update = update.as_object().expect("an update chunk").clone();
    // Known difference: LangGraph streams the saved update of a task that is
    // not re-run on resume with "__metadata__": {"cached": true}; ours emits
    // one update per task of the committed superstep, with no marker.
    update.remove("__metadata__");
    for value in update.values_mut() {
        if value.is_null() {
            *value = json!({});
        }
    }
    Value::Object(update)
}

// ---------------------------------------------------------------------------
// Comparing JSON with generated ids.
// ---------------------------------------------------------------------------

/// Matches `expected` against `actual` (the one matcher of the vectors:
/// `support::placeholders`), the failure showing both.
pub fn matches(
    at: &str,
    expected: &Value,
    actual: &Value,
    ids: &mut HashMap<String, String>,
) -> Result<(), String> {
    super::placeholders::matches(at, expected, actual, ids)
        .map_err(|diff| format!("{diff}\n  expected {expected}\n  ours     {actual}"))
}

/// `value` with the bound placeholders replaced by our ids.
pub fn resolve(value: &Value, ids: &HashMap<String, String>) -> Value {
    match value {
        Value::String(p) => ids
            .get(p)
            .map_or_else(|| value.clone(), |id| Value::String(id.clone())),
        Value::Array(list) => Value::Array(list.iter().map(|v| resolve(v, ids)).collect()),
        Value::Object(object) => Value::Object(
            object
                .iter()
                .map(|(k, v)| (k.clone(), resolve(v, ids)))
                .collect(),
        ),
        other => other.clone(),
    }
}
