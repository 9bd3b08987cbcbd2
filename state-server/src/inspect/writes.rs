//! What a step wrote, readable: per node, per field, the way the field's
//! reducer takes it (messages added as chat bubbles, items appended, keys
//! merged, a value overwritten); for a paused superstep, the questions
//! waiting for an answer and the writes held until it resumes.

use super::show;
use crate::json::pending_interrupts as interrupts;
use maud::{Markup, html};
use serde_json::{Map, Value};
use state_core::{ReducerKind, Schema, Scope};
use state_store::{StepKind, StepRecord};

/// A step's kind as people say it: "apply", "superstep", "turn reset",
/// "set", "interrupt", "failed", "pending writes", "subgraph" or "branch".
pub(crate) fn kind_label(step: &StepRecord) -> &'static str {
    match step.kind {
        StepKind::Apply => "apply",
        StepKind::Superstep => "superstep",
        StepKind::BeginTurn => "turn reset",
        StepKind::Set => "set",
        StepKind::Pending => {
            if !interrupts(&step.body).is_empty() {
                "interrupt"
            } else if step.body.get("failed").is_some_and(|f| !f.is_null()) {
                "failed"
            } else {
                "pending writes"
            }
        }
        StepKind::Subgraph => "subgraph",
        StepKind::Branch => "branch",
        _ => "step",
    }
}

/// The node a runner task names (`{"node", "send"}`): `node`, or
/// `node[send]` for one of several sends to a worker.
pub(crate) fn task_name(task: Option<&Value>) -> String {
    let node = task
        .and_then(|task| task.get("node"))
        .and_then(Value::as_str)
        .unwrap_or("?");
    match task
        .and_then(|task| task.get("send"))
        .and_then(Value::as_u64)
    {
        Some(send) => format!("{node}[{send}]"),
        None => node.to_owned(),
    }
}

/// What `step` wrote; `schema` (the typed router's) names each field's
/// reducer.
pub(crate) fn writes(step: &StepRecord, schema: Option<&Schema>) -> Markup {
    let nodes = step.nodes();
    let body = &step.body;
    match step.kind {
        StepKind::Apply => group(nodes.first().copied(), body, schema, None),
        StepKind::Superstep => match body.as_array() {
            Some(deltas) => html! {
                @for (i, delta) in deltas.iter().enumerate() {
                    (node_write(nodes.get(i).copied(), delta, schema))
                }
            },
            None => unreadable(body),
        },
        StepKind::BeginTurn => {
            let reset: Vec<&str> = schema
                .map(|schema| {
                    schema
                        .fields
                        .iter()
                        .filter(|field| field.scope == Scope::Turn)
                        .map(|field| field.name)
                        .collect()
                })
                .unwrap_or_default();
            html! {
                p.note {
                    "Turn-scoped fields back to their defaults"
                    @if !reset.is_empty() {
                        ": " @for (i, name) in reset.iter().enumerate() {
                            @if i > 0 { ", " } code { (name) }
                        }
                    }
                    "."
                }
                @if !body.is_null() { (group(Some("input"), body, schema, None)) }
            }
        }
        StepKind::Set => {
            let key = body.get("key").and_then(Value::as_str).unwrap_or("?");
            let value = body.get("value").unwrap_or(&Value::Null);
            html! {
                div.write {
                    (field(key, value, schema, Some(Op::Set)))
                }
            }
        }
        StepKind::Pending => pending(body, schema),
        // A subgraph's own superstep: its state type may be another, so
        // its writes are shown as written, under its namespace.
        StepKind::Subgraph => match body.get("deltas").and_then(Value::as_array) {
            Some(deltas) => {
                let namespace = step
                    .metadata
                    .get("ns")
                    .and_then(Value::as_str)
                    .unwrap_or("?");
                html! {
                    p.note { "Inside subgraph " code { (namespace) } }
                    @for (i, delta) in deltas.iter().enumerate() {
                        (group(nodes.get(i).copied(), delta, None, None))
                    }
                }
            }
            None => unreadable(body),
        },
        // The whole state, as it was after the step branched from: each
        // field set to it, not through its reducer.
        StepKind::Branch => match (
            step.branched_from(),
            body.get("state").and_then(Value::as_object),
        ) {
            (Some(from), Some(state)) => html! {
                p.note { "Back to the state after step " (from) ", as a new branch" }
                div.write {
                    @for (name, value) in state { (field(name, value, schema, Some(Op::Set))) }
                }
            },
            _ => unreadable(body),
        },
        _ => unreadable(body),
    }
}

/// One node's write in a superstep: its delta, or, for a node that ran a
/// subgraph of the thread's state type, its supersteps' deltas in order
/// (see `StepKind::Superstep`), each marked with the subgraph's step.
fn node_write(node: Option<&str>, write: &Value, schema: Option<&Schema>) -> Markup {
    html! {
        @for (step, delta) in crate::json::node_deltas(write) {
            @let note = step.map(|i| format!("subgraph step {}", i + 1));
            (group(node, delta, schema, note.as_deref()))
        }
    }
}

/// The writes of one node (`None`: unnamed).
fn group(node: Option<&str>, delta: &Value, schema: Option<&Schema>, note: Option<&str>) -> Markup {
    html! {
        div.write data-node=[node] {
            @if let Some(node) = node {
                h4.node { (node) @if let Some(note) = note { " " span.note { (note) } } }
            }
            @match delta.as_object() {
                Some(fields) if fields.is_empty() => p.note { "wrote nothing" },
                Some(fields) => (fields_of(fields, schema)),
                None => (show::value(delta)),
            }
        }
    }
}

fn fields_of(fields: &Map<String, Value>, schema: Option<&Schema>) -> Markup {
    html! { @for (name, update) in fields { (field(name, update, schema, None)) } }
}

/// How an update is taken, as the inspector labels it.
#[derive(Clone, Copy, PartialEq)]
enum Op {
    Messages,
    Append,
    Merge,
    Overwrite,
    Set,
    Custom(&'static str),
    Wrote,
}

impl Op {
    fn of(kind: Option<ReducerKind>) -> Op {
        match kind {
            Some(ReducerKind::AddingMessages) => Op::Messages,
            Some(ReducerKind::Appending | ReducerKind::AppendingById) => Op::Append,
            Some(ReducerKind::Merging) => Op::Merge,
            Some(ReducerKind::Replacing) => Op::Overwrite,
            Some(ReducerKind::Custom(with)) => Op::Custom(with),
            // A reducer kind added later, or no state type: say "wrote".
            _ => Op::Wrote,
        }
    }
}

/// One field's update: its name, what the reducer does with it, the value.
fn field(name: &str, update: &Value, schema: Option<&Schema>, op: Option<Op>) -> Markup {
    let op =
        op.unwrap_or_else(|| Op::of(schema.and_then(|s| s.field(name)).map(|f| f.reducer_kind())));
    let list = update.as_array();
    let (class, label): (&str, String) = match (op, list) {
        (Op::Messages, Some(list)) => ("messages", count(list.len(), "message", "added")),
        (Op::Messages, None) => ("messages", "added a message".to_owned()),
        (Op::Append, Some(list)) => ("append", count(list.len(), "item", "appended")),
        (Op::Append, None) => ("append", "appended".to_owned()),
        (Op::Merge, _) => match update.as_object() {
            Some(map) => ("merge", count(map.len(), "key", "merged")),
            None => ("merge", "merged".to_owned()),
        },
        (Op::Overwrite, _) => ("overwrite", "overwritten".to_owned()),
        (Op::Set, _) => ("overwrite", "set (no reducer)".to_owned()),
        (Op::Custom(with), _) => ("custom", format!("reduced ({with})")),
        (Op::Wrote, _) => ("wrote", "wrote".to_owned()),
    };
    html! {
        div class={ "field op-" (class) } data-field=(name) {
            span.field-name { (name) } " " span.op { (label) } " "
            @match (op, update) {
                (Op::Merge, Value::Object(map)) => (show::keys(map)),
                (Op::Append | Op::Messages, Value::Array(list)) => (show::list(list, false)),
                _ => (show::value(update)),
            }
        }
    }
}

/// "added 3 messages", "appended 1 item".
fn count(n: usize, what: &str, verb: &str) -> String {
    let s = if n == 1 { "" } else { "s" };
    format!("{verb} {n} {what}{s}")
}

/// A paused or failed superstep: its questions, its failure, the writes it
/// holds and the answers given so far.
fn pending(body: &Value, schema: Option<&Schema>) -> Markup {
    let writes = body
        .get("writes")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let answers = body
        .get("answers")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let failed = body.get("failed").filter(|f| !f.is_null());
    html! {
        @for interrupt in interrupts(body) { (question(interrupt)) }
        @if let Some(failed) = failed {
            div.failure {
                span.node { (task_name(failed.get("task"))) } " failed: "
                (show::inline(failed.get("error").unwrap_or(&Value::Null), show::MAX_JSON_CHARS))
            }
        }
        @for write in writes {
            (group(
                Some(&task_name(write.get("task"))),
                write.get("delta").unwrap_or(&Value::Null),
                schema,
                Some("(finished; applied when the superstep resumes)"),
            ))
        }
        @for answer in answers {
            div.answers {
                span.node { (task_name(answer.get("task"))) } " was answered: "
                @for value in answer.get("values").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default() {
                    code { (show::inline(value, 400)) } " "
                }
            }
        }
    }
}

/// One pending interrupt: the node that asks, and its question.
pub(crate) fn question(interrupt: &Value) -> Markup {
    let id = interrupt.get("id").and_then(Value::as_str).unwrap_or("");
    let value = interrupt.get("value").unwrap_or(&Value::Null);
    html! {
        div.interrupt data-interrupt=(id) {
            span.node { (task_name(interrupt.get("task"))) } " asks:"
            blockquote.question {
                @match value {
                    Value::String(text) => (text),
                    other => (show::json(other)),
                }
            }
            p.id { "interrupt id " code { (id) } }
        }
    }
}

/// A body of a shape this version does not know: shown as it is.
fn unreadable(body: &Value) -> Markup {
    html! { div.write { (show::json(body)) } }
}
