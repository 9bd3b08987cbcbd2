//! LangGraph's recorded superstep behaviour (`tests/vectors/supersteps.json`,
//! produced by running compiled `StateGraph`s of langgraph 1.2.22) replayed
//! through a derived state's `apply_all`.
//!
//! A case is run when its graph is one parallel step: every node is on an
//! edge from START and goes to END. As LangGraph does (SEMANTICS.md 5.1),
//! the input is applied first, as a step of its own, through the reducers;
//! then the nodes' returns, decoded with serde into deltas, are applied as
//! one `apply_all` in code-point order of the node names (LangGraph's
//! `apply_writes` order). The final state, as JSON, is compared with
//! `final`, or the error with `error`.
//!
//! Every case is accounted for: run, or listed by name below, with the
//! reason and, where we differ on purpose, an assertion of what we do. A
//! case that fits none of these fails the test until it is run or listed.
//! Some listed names belong to the half of LangGraph's vectors held back
//! from this file (SEMANTICS.md names them); they are handled the same way
//! when they appear.

use crate::placeholders::matches;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use state_core::{AgentState, Delta, Messages, ReduceError, State, StateError};
use std::collections::{BTreeSet, HashMap};
use std::fmt::Debug;

const VECTORS: &str = include_str!("../../vectors/supersteps.json");

/// The state keys of every graph case (the file's `schema`).
const KEYS: [&str; 4] = ["last", "items", "meta", "messages"];

// ---------------------------------------------------------------------------
// The Rust mirror of the file's schema.
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

/// The same graph with an untyped `last`, as Python stores anything in a
/// `str` key: for the overwrite marker written to a LastValue key.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct LooseGraph {
    pub last: Option<Value>,
    #[reducer(append)]
    pub items: Vec<Value>,
    #[reducer(merge)]
    pub meta: Map<String, Value>,
    #[reducer(add_messages)]
    pub messages: Messages,
}

/// A state whose JSON can be compared with LangGraph's output: reducer keys
/// always (their channels start at `[]`/`{}`), a LastValue key once written.
trait Mirror: State + Clone + PartialEq + Debug {
    fn written_json(&self, written: &BTreeSet<&'static str>) -> Value;
}

fn graph_json(
    last: Option<Value>,
    items: &[Value],
    meta: &Map<String, Value>,
    messages: &Messages,
    written: &BTreeSet<&'static str>,
) -> Value {
    let mut out = Map::new();
    if written.contains("last") {
        out.insert("last".into(), last.unwrap_or(Value::Null));
    }
    out.insert("items".into(), Value::Array(items.to_vec()));
    out.insert("meta".into(), Value::Object(meta.clone()));
    out.insert(
        "messages".into(),
        serde_json::to_value(messages).expect("messages serialize"),
    );
    Value::Object(out)
}

impl Mirror for Graph {
    fn written_json(&self, written: &BTreeSet<&'static str>) -> Value {
        let last = self.last.clone().map(Value::String);
        graph_json(last, &self.items, &self.meta, &self.messages, written)
    }
}

impl Mirror for LooseGraph {
    fn written_json(&self, written: &BTreeSet<&'static str>) -> Value {
        graph_json(
            self.last.clone(),
            &self.items,
            &self.meta,
            &self.messages,
            written,
        )
    }
}

// ---------------------------------------------------------------------------
// Running a one-step graph.
// ---------------------------------------------------------------------------

#[derive(Debug)]
enum Failure {
    /// A node's return (or the input) is not a valid delta.
    Decode { who: String, error: String },
    /// The step failed; the state was checked to be unchanged.
    Step(StateError),
}

struct Run<S> {
    state: S,
    written: BTreeSet<&'static str>,
}

/// One message in the file's encoding (add_messages.json's `encoding`) as
/// the JSON our `Message` reads: `{"raw": KIND, "value": V}` marks a value
/// that is not a message object.
fn decode_message(value: &Value) -> Value {
    let Some(object) = value.as_object() else {
        return value.clone();
    };
    let (Some(Value::String(kind)), Some(inner), 2) =
        (object.get("raw"), object.get("value"), object.len())
    else {
        return value.clone();
    };
    match kind.as_str() {
        "string" | "dict" | "int" => inner.clone(),
        "tuple" | "list" => match inner {
            Value::Array(items) => Value::Array(items.iter().map(decode_message).collect()),
            other => other.clone(),
        },
        // Rust has no chunk type: LangGraph turns the chunk into this message.
        "ai_chunk" => json!({
            "type": "ai",
            "content": inner.get("content").cloned().unwrap_or(Value::Null),
            "id": inner.get("id").cloned().unwrap_or(Value::Null),
        }),
        other => panic!("unknown raw kind {other:?}: teach this test to decode it"),
    }
}

/// A node's return as a delta. `null` is a node returning None: no writes.
fn decode<S: State>(who: &str, value: &Value) -> Result<S::Delta, Failure>
where
    S::Delta: DeserializeOwned,
{
    if value.is_null() {
        return Ok(S::delta());
    }
    let mut value = value.clone();
    if let Some(Value::Array(messages)) = value.get_mut("messages") {
        messages.iter_mut().for_each(|m| *m = decode_message(m));
    }
    serde_json::from_value(value).map_err(|e| Failure::Decode {
        who: who.to_owned(),
        error: e.to_string(),
    })
}

/// One superstep; a failed step must leave the state exactly as it was.
fn step<S: Mirror>(
    state: &mut S,
    deltas: Vec<S::Delta>,
    written: &mut BTreeSet<&'static str>,
) -> Result<(), Failure> {
    let fields: Vec<&'static str> = deltas.iter().flat_map(|d| d.fields()).collect();
    let before = state.clone();
    match state.apply_all(deltas) {
        Ok(()) => {
            written.extend(fields);
            Ok(())
        }
        Err(error) => {
            assert_eq!(*state, before, "a failed step changes nothing");
            Err(Failure::Step(error))
        }
    }
}

/// Node names in LangGraph's write order: code-point order (`"Z" < "a"`).
fn node_order(nodes: &Map<String, Value>) -> Vec<&String> {
    let mut names: Vec<&String> = nodes.keys().collect();
    names.sort();
    names
}

/// The input as step one, then every node as one parallel step.
fn run_graph<S: Mirror>(input: &Value, nodes: &Map<String, Value>) -> Result<Run<S>, Failure>
where
    S::Delta: DeserializeOwned,
{
    assert!(!input.is_null(), "invoke(None) is not a step");
    let mut state = S::default();
    let mut written = BTreeSet::new();
    let input = decode::<S>("input", input)?;
    step(&mut state, vec![input], &mut written)?;
    let deltas = node_order(nodes)
        .into_iter()
        .map(|name| decode::<S>(name, &nodes[name]))
        .collect::<Result<Vec<_>, _>>()?;
    step(&mut state, deltas, &mut written)?;
    Ok(Run { state, written })
}

fn nodes_of(case: &Value) -> &Map<String, Value> {
    case["nodes"].as_object().expect("nodes is an object")
}

/// Why a case is not one parallel step from START, if it is not.
fn not_one_step(case: &Value) -> Option<&'static str> {
    if case.get("turns").is_some() || case.get("checkpointer").is_some() {
        return Some("multi-turn");
    }
    if case.get("input").is_none_or(Value::is_null) {
        return Some("invoke(None)");
    }
    let nodes = nodes_of(case);
    let mut from_start = BTreeSet::new();
    for edge in case["edges"].as_array().expect("edges") {
        let (Some(from), Some(to)) = (edge[0].as_str(), edge[1].as_str()) else {
            return Some("multi-step (join edge)");
        };
        match (from, to) {
            ("__start__", node) if nodes.contains_key(node) => {
                from_start.insert(node);
            }
            (node, "__end__") if nodes.contains_key(node) => {}
            _ => return Some("multi-step"),
        }
    }
    if nodes.keys().any(|n| !from_start.contains(n.as_str())) {
        return Some("multi-step");
    }
    if case.get("error").is_none() && case.get("final").is_none_or(Value::is_null) {
        return Some("invoke returned None");
    }
    None
}

// ---------------------------------------------------------------------------
// Comparing results.
// ---------------------------------------------------------------------------

fn is_overwrite_marker(value: &Value) -> bool {
    let Some(object) = value.as_object() else {
        return false;
    };
    (object.len() == 1 && object.contains_key("__overwrite__"))
        || (object.get("type") == Some(&json!("__overwrite__")) && object.contains_key("value"))
}

/// Asserts that our error is the one LangGraph raised.
fn assert_same_error(name: &str, langgraph: &str, ours: &StateError, nodes: &Map<String, Value>) {
    if let Some(rest) = langgraph.strip_prefix("InvalidUpdateError: At key '") {
        let key = rest.split('\'').next().unwrap_or_default();
        assert!(
            rest.contains("Can receive only one value per step"),
            "{name}: {langgraph}"
        );
        assert_eq!(
            *ours,
            StateError::ConcurrentWrite { field: key.into() },
            "{name}"
        );
    } else if langgraph
        .starts_with("InvalidUpdateError: Can receive only one Overwrite value per super-step.")
    {
        let StateError::ConcurrentOverwrite { field } = ours else {
            panic!("{name}: expected ConcurrentOverwrite, got {ours:?}");
        };
        let overwriters = nodes
            .values()
            .filter(|v| v.get(field).is_some_and(is_overwrite_marker))
            .count();
        assert!(
            overwriters >= 2,
            "{name}: {field} is overwritten {overwriters} times"
        );
    } else if let Some(rest) = langgraph
        .strip_prefix("ValueError: Attempting to delete a message with an ID that doesn't exist ('")
    {
        let id = rest.strip_suffix("')").expect("the id is quoted");
        assert_eq!(
            *ours,
            StateError::Reduce {
                field: "messages".into(),
                source: ReduceError::MissingMessageId { id: id.into() },
            },
            "{name}"
        );
    } else {
        panic!("{name}: teach this test LangGraph's error {langgraph:?}, or list the case");
    }
}

/// Runs a one-step case on `S` and compares with `final` or `error`.
fn run_and_compare<S: Mirror>(name: &str, case: &Value)
where
    S::Delta: DeserializeOwned,
{
    let nodes = nodes_of(case);
    let outcome = run_graph::<S>(&case["input"], nodes);
    match (case.get("error").and_then(Value::as_str), outcome) {
        (Some(langgraph), Err(Failure::Step(ours))) => {
            assert_same_error(name, langgraph, &ours, nodes);
        }
        (None, Ok(run)) => {
            let actual = run.state.written_json(&run.written);
            if let Err(diff) = matches("final", &case["final"], &actual, &mut HashMap::new()) {
                panic!(
                    "{name}: {diff}\n expected {}\n got      {actual}",
                    case["final"]
                );
            }
        }
        (Some(langgraph), Ok(run)) => panic!(
            "{name}: LangGraph failed ({langgraph}) but we got {}",
            run.state.written_json(&run.written)
        ),
        (None, Err(failure)) => panic!("{name}: LangGraph succeeded but we failed: {failure:?}"),
        (Some(langgraph), Err(Failure::Decode { who, error })) => panic!(
            "{name}: LangGraph failed in the step ({langgraph}); we failed decoding {who}: \
             {error}; list the case as a difference"
        ),
    }
}

// ---------------------------------------------------------------------------
// Cases we do not run as they are, with the reason.
// ---------------------------------------------------------------------------

/// Not one parallel step: graph plumbing that is the graph runner's job,
/// not the state's. `not_one_step` must agree.
const NOT_ONE_STEP: &[(&str, &str)] = &[
    (
        "sequential_lastvalue_overwrite_ok",
        "multi-step: a -> b in two supersteps; scheduling steps is the graph runner's job; \
         asserted instead: the steps of SCHEDULES, state by state against values_stream",
    ),
    (
        "fan_out_fan_in",
        "multi-step with a join edge add_edge([b, c], d); scheduling is the graph runner's job; \
         asserted instead: the steps of SCHEDULES, state by state against values_stream",
    ),
    (
        "fan_out_plain_edges_to_same_node",
        "multi-step: how often a node reached by two edges runs is graph plumbing",
    ),
    (
        "checkpointer_multi_turn",
        "multi-turn with a checkpointer (InMemorySaver) and generated ids across turns; \
         asserted instead: each turn's input and node on the carried-over state, against its final",
    ),
    (
        "checkpointer_concurrent_lastvalue_error_poisons_thread",
        "checkpointer behaviour: pending writes of a failed step stored on the thread",
    ),
    (
        "empty_input_node_empty_dict",
        "invoke() returning None when no output key was written is output plumbing; \
         asserted instead: the step writes nothing and the state stays at its defaults",
    ),
    (
        "empty_input_no_writes_returns_none",
        "invoke() returning None when no output key was written is output plumbing; \
         asserted instead: the step writes nothing and the state stays at its defaults",
    ),
    (
        "none_input_error",
        "invoke(None) is EmptyInputError in the graph runner; asserted instead: \
         JSON null is not a delta",
    ),
];

/// How we deliberately differ, and the assertion of what we do instead.
#[derive(Debug, Clone, Copy)]
enum Difference {
    /// LangGraph drops unknown keys silently; we reject them, naming the
    /// key with a did-you-mean. With the unknown keys removed, the rest of
    /// the case must match LangGraph.
    UnknownKey,
    /// A node returning something other than a dict (or None): LangGraph
    /// raises InvalidUpdateError in the step; our delta does not decode.
    NotADict,
    /// `None` written to a list key: LangGraph fails in the reducer
    /// (TypeError / ValueError); for us `null` is not a list, so the delta
    /// does not decode, with an error naming the field.
    NullForAList,
    /// An overwrite marker written to a LastValue key: LangGraph stores the
    /// dict as the value of a `str` key; our `last` is typed, so the delta
    /// does not decode. An untyped `last` (LooseGraph) stores it as LangGraph.
    MarkerIntoLastValue,
}

const DIFFERENCES: &[(&str, Difference)] = &[
    ("input_unknown_key_ignored", Difference::UnknownKey),
    ("node_returns_only_unknown_key", Difference::UnknownKey),
    ("node_returns_unknown_key", Difference::UnknownKey),
    ("node_returns_list", Difference::NotADict),
    ("node_returns_int", Difference::NotADict),
    ("node_returns_string", Difference::NotADict),
    ("parallel_list_none_write", Difference::NullForAList),
    ("parallel_messages_none_write", Difference::NullForAList),
    (
        "overwrite_on_lastvalue_is_plain_value",
        Difference::MarkerIntoLastValue,
    ),
];

/// The input and the node returns, by who writes them.
fn writers(case: &Value) -> Vec<(String, &Value)> {
    let mut out = vec![("input".to_owned(), &case["input"])];
    let nodes = nodes_of(case);
    out.extend(
        node_order(nodes)
            .into_iter()
            .map(|n| (n.clone(), &nodes[n])),
    );
    out
}

fn unknown_keys(value: &Value) -> Vec<&str> {
    value
        .as_object()
        .map(|o| {
            o.keys()
                .map(String::as_str)
                .filter(|k| !KEYS.contains(k))
                .collect()
        })
        .unwrap_or_default()
}

fn check_difference(name: &str, case: &Value, difference: Difference) {
    match difference {
        Difference::UnknownKey => {
            let mut seen = 0;
            for (who, value) in writers(case) {
                let Some(first) = unknown_keys(value).first().copied() else {
                    continue;
                };
                seen += 1;
                let err = decode::<Graph>(&who, value).expect_err("an unknown key is refused");
                let Failure::Decode { error, .. } = err else {
                    unreachable!()
                };
                let ours = StateError::unknown_field("Graph", first, &KEYS).to_string();
                assert!(ours.starts_with(&format!("`Graph` has no field `{first}`")));
                assert_eq!(error, ours, "{name}: {who}");
            }
            assert!(seen > 0, "{name}: listed for an unknown key, but has none");
            // What remains is what LangGraph applied.
            let mut stripped = case.clone();
            let strip = |value: &mut Value| {
                if let Some(o) = value.as_object_mut() {
                    o.retain(|k, _| KEYS.contains(&k.as_str()));
                }
            };
            strip(&mut stripped["input"]);
            if let Some(nodes) = stripped["nodes"].as_object_mut() {
                nodes.values_mut().for_each(strip);
            }
            assert!(not_one_step(&stripped).is_none(), "{name} is one step");
            run_and_compare::<Graph>(name, &stripped);
        }
        Difference::NotADict => {
            let langgraph = case["error"].as_str().expect("LangGraph fails too");
            assert!(langgraph.starts_with("InvalidUpdateError: Expected dict, got"));
            let bad: Vec<_> = writers(case)
                .into_iter()
                .filter(|(_, v)| !v.is_object() && !v.is_null())
                .collect();
            assert!(!bad.is_empty(), "{name}: no writer returns a non-dict");
            for (who, value) in bad {
                let Err(Failure::Decode { error, .. }) = decode::<Graph>(&who, value) else {
                    panic!("{name}: {who}'s {value} decoded");
                };
                assert!(
                    error.contains("expected a map of field names to updates"),
                    "{name}: {error}"
                );
            }
        }
        Difference::NullForAList => {
            assert!(case.get("error").is_some(), "{name}: LangGraph fails too");
            let mut seen = 0;
            for (who, value) in writers(case) {
                let nulls: Vec<&str> = ["items", "meta", "messages"]
                    .into_iter()
                    .filter(|k| value.get(k).is_some_and(Value::is_null))
                    .collect();
                for key in nulls {
                    seen += 1;
                    let one = json!({ key: null });
                    let Err(Failure::Decode { error, .. }) = decode::<Graph>(&who, &one) else {
                        panic!("{name}: null decoded for {key}");
                    };
                    assert!(
                        error.starts_with(&format!("field \"{key}\": expected "))
                            && error.ends_with("got null"),
                        "{name}: {error}"
                    );
                }
            }
            assert!(
                seen > 0,
                "{name}: listed for a null list write, but has none"
            );
        }
        Difference::MarkerIntoLastValue => {
            let mut seen = 0;
            for (who, value) in writers(case) {
                if value.get("last").is_some_and(is_overwrite_marker) {
                    seen += 1;
                    let Err(Failure::Decode { error, .. }) = decode::<Graph>(&who, value) else {
                        panic!("{name}: the marker decoded into a String");
                    };
                    assert!(error.starts_with("field \"last\": "), "{name}: {error}");
                }
            }
            assert!(seen > 0, "{name}: no overwrite marker written to last");
            run_and_compare::<LooseGraph>(name, case);
        }
    }
}

/// What we assert for a case that is not one step, where there is
/// something to assert.
fn check_not_one_step(name: &str, case: &Value, why: &str) {
    match not_one_step(case) {
        Some("invoke returned None") => {
            // Nothing was written: our step is a no-op too.
            let Ok(run) = run_graph::<Graph>(&case["input"], nodes_of(case)) else {
                panic!("{name}: the step failed");
            };
            assert!(run.written.is_empty(), "{name}: {:?} written", run.written);
            assert_eq!(run.state, Graph::default(), "{name}");
        }
        Some("invoke(None)") => {
            let err = serde_json::from_value::<GraphDelta>(Value::Null).unwrap_err();
            assert!(err.to_string().contains("a map of field names to updates"));
        }
        Some(_) => {
            if let Some(schedule) = reason(SCHEDULES, name) {
                run_schedule(name, case, schedule);
            }
        }
        None => panic!("{name} is listed as not one step ({why}) but is one: run it"),
    }
}

/// The supersteps of the multi-step cases that a graph runner would drive
/// through `apply_all`, as LangGraph schedules them from their edges (read
/// off by hand): each inner list runs in parallel, every turn of a
/// multi-turn case runs the same schedule after its input.
const SCHEDULES: &[(&str, &[&[&str]])] = &[
    ("sequential_lastvalue_overwrite_ok", &[&["a"], &["b"]]),
    ("fan_out_fan_in", &[&["a"], &["b", "c"], &["d"]]),
    ("checkpointer_multi_turn", &[&["a"]]),
];

/// Runs a multi-step case step by step, comparing the state after every
/// step with `values_stream` (or, turn by turn, with each turn's `final`:
/// the state carries over between turns, as a checkpointer's thread does).
fn run_schedule(name: &str, case: &Value, schedule: &[&[&str]]) {
    let nodes = nodes_of(case);
    let mut state = Graph::default();
    let mut written = BTreeSet::new();
    let mut ids = HashMap::new();
    let mut run_steps = |input: &Value, expected_after: &mut dyn FnMut(usize, &Value)| {
        let input = decode::<Graph>("input", input).expect("input decodes");
        step(&mut state, vec![input], &mut written).expect("input step");
        expected_after(0, &state.written_json(&written));
        for (i, names) in schedule.iter().enumerate() {
            let deltas = names
                .iter()
                .map(|n| decode::<Graph>(n, &nodes[*n]).expect("node decodes"))
                .collect();
            step(&mut state, deltas, &mut written).expect("step succeeds");
            expected_after(i + 1, &state.written_json(&written));
        }
    };
    if let Some(turns) = case.get("turns").and_then(Value::as_array) {
        for (t, turn) in turns.iter().enumerate() {
            let last = schedule.len();
            run_steps(&turn["input"], &mut |i, actual| {
                if i == last
                    && let Err(diff) = matches("final", &turn["final"], actual, &mut ids)
                {
                    panic!("{name}, turn {t}: {diff}\n got {actual}");
                }
            });
        }
    } else {
        let stream = case["values_stream"].as_array().expect("values_stream");
        assert_eq!(
            stream.len(),
            schedule.len() + 1,
            "{name}: one value per step"
        );
        run_steps(&case["input"], &mut |i, actual| {
            if let Err(diff) = matches("values", &stream[i], actual, &mut ids) {
                panic!("{name}, after step {i}: {diff}\n got {actual}");
            }
        });
        let actual = state.written_json(&written);
        if let Err(diff) = matches("final", &case["final"], &actual, &mut ids) {
            panic!("{name}: {diff}");
        }
    }
}

fn reason<T: Copy>(list: &[(&str, T)], name: &str) -> Option<T> {
    list.iter().find(|(n, _)| *n == name).map(|(_, r)| *r)
}

#[test]
fn every_graph_case_is_run_or_listed() {
    let file: Value = serde_json::from_str(VECTORS).expect("the vectors are JSON");
    let schema = file["schema"].as_object().expect("schema");
    assert_eq!(schema.keys().map(String::as_str).collect::<Vec<_>>(), KEYS);
    let cases = file["cases"].as_array().expect("cases");
    assert_eq!(file["count"], json!(cases.len()));

    let mut names = BTreeSet::new();
    let (mut ran, mut differences, mut not_run) = (Vec::new(), Vec::new(), Vec::new());
    for case in cases {
        let name = case["name"].as_str().expect("a case has a name");
        assert!(names.insert(name), "case {name} appears twice");
        if let Some(difference) = reason(DIFFERENCES, name) {
            check_difference(name, case, difference);
            differences.push(name);
        } else if let Some(why) = reason(NOT_ONE_STEP, name) {
            check_not_one_step(name, case, why);
            not_run.push(name);
        } else {
            if let Some(why) = not_one_step(case) {
                panic!("{name} is {why}: list it in NOT_ONE_STEP with the reason");
            }
            run_and_compare::<Graph>(name, case);
            ran.push(name);
        }
    }
    assert_eq!(ran.len() + differences.len() + not_run.len(), cases.len());
    println!("run: {ran:?}\ndeliberate differences: {differences:?}\nnot one step: {not_run:?}");
    assert!(ran.len() >= 10, "most one-step cases are run, not listed");
}

// ---------------------------------------------------------------------------
// reducer_detection: which channel an annotation gets, as Rust attributes.
// Each case is one step: the input, then nodes `a` and `b` in parallel.
// ---------------------------------------------------------------------------

fn add(total: &mut i64, n: i64) {
    *total += n;
}

/// A Python lambda `a + b` on lists: a custom reducer (not foldable).
fn concat(list: &mut Vec<Value>, more: Vec<Value>) {
    list.extend(more);
}

/// `Annotated[Optional[list], operator.add]`: `typ()` fails, so the channel
/// starts MISSING and stores the first write as it is; later writes are
/// added, and `list + None` is a TypeError.
fn add_optional(current: &mut Option<Vec<Value>>, new: Option<Vec<Value>>) -> Result<(), String> {
    match (current.as_mut(), new) {
        (None, new) => *current = new,
        (Some(list), Some(more)) => list.extend(more),
        (Some(_), None) => {
            return Err(r#"can only concatenate list (not "NoneType") to list"#.into());
        }
    }
    Ok(())
}

/// A key without a reducer (`LastValue`), of any type.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct LastValueKey {
    pub f: Option<Value>,
}

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct AddList {
    #[reducer(append)]
    pub f: Vec<Value>,
}

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct AddInt {
    #[reducer(with = add)]
    pub f: i64,
}

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct AddOptionalList {
    #[reducer(with = add_optional)]
    pub f: Option<Vec<Value>>,
}

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct LambdaList {
    #[reducer(with = concat)]
    pub f: Vec<Value>,
}

fn f_json(value: Value, written: &BTreeSet<&'static str>, always: bool) -> Value {
    if always || written.contains("f") {
        json!({ "f": value })
    } else {
        json!({})
    }
}

impl Mirror for LastValueKey {
    fn written_json(&self, written: &BTreeSet<&'static str>) -> Value {
        f_json(self.f.clone().unwrap_or(Value::Null), written, false)
    }
}

impl Mirror for AddList {
    fn written_json(&self, written: &BTreeSet<&'static str>) -> Value {
        f_json(json!(self.f), written, true)
    }
}

impl Mirror for AddInt {
    fn written_json(&self, written: &BTreeSet<&'static str>) -> Value {
        f_json(json!(self.f), written, true)
    }
}

impl Mirror for AddOptionalList {
    fn written_json(&self, written: &BTreeSet<&'static str>) -> Value {
        // MISSING until written.
        f_json(json!(self.f), written, false)
    }
}

impl Mirror for LambdaList {
    fn written_json(&self, written: &BTreeSet<&'static str>) -> Value {
        f_json(json!(self.f), written, true)
    }
}

/// Detection cases with no Rust run, and why.
const DETECTION_NOT_RUN: &[(&str, &str)] = &[
    (
        "annotated_add_messages_partial",
        "add_messages(format='langchain-openai') has no counterpart (see add_messages_vectors.rs); \
         #[reducer(add_messages)] keeps the ids that format drops",
    ),
    (
        "annotated_kwonly_second_param",
        "a reducer of the wrong signature is refused when StateGraph is built; in Rust, \
         `with = f` must be `fn(&mut T, T)` (or `fn(&mut T, U)` with `update = U`), \
         a compile-time error (trybuild's concern)",
    ),
    (
        "annotated_three_params",
        "a reducer of the wrong signature is refused when StateGraph is built; in Rust, \
         `with = f` must be `fn(&mut T, T)` (or `fn(&mut T, U)` with `update = U`), \
         a compile-time error (trybuild's concern)",
    ),
    (
        "annotated_varargs",
        "a reducer of the wrong signature is refused when StateGraph is built; in Rust, \
         `with = f` must be `fn(&mut T, T)` (or `fn(&mut T, U)` with `update = U`), \
         a compile-time error (trybuild's concern)",
    ),
];

#[test]
fn every_reducer_detection_case_is_run_or_listed() {
    let file: Value = serde_json::from_str(VECTORS).expect("the vectors are JSON");
    let cases = file["reducer_detection"]
        .as_array()
        .expect("reducer_detection");
    let (mut ran, mut not_run) = (Vec::new(), Vec::new());
    for case in cases {
        let name = case["name"].as_str().expect("a case has a name");
        if let Some(why) = reason(DETECTION_NOT_RUN, name) {
            assert!(!why.is_empty());
            not_run.push(name);
            continue;
        }
        assert!(
            case.get("construct_error").is_none(),
            "{name}: a construction error; list it in DETECTION_NOT_RUN"
        );
        // The case as a graph: input, then a and b in one step.
        let mut graph = json!({
            "input": case["input"],
            "nodes": {"a": case["a_returns"], "b": case["b_returns"]},
        });
        for key in ["final", "error"] {
            if let Some(value) = case.get(key) {
                graph[key] = value.clone();
            }
        }
        let annotation = case["annotation"].as_str().expect("an annotation");
        let channel = case["channel"].as_str().expect("a channel");
        match (annotation, channel) {
            (_, "LastValue") => run_and_compare::<LastValueKey>(name, &graph),
            (
                "Annotated[list, 'doc', operator.add]" | "Annotated[list, operator.add]",
                "BinaryOperatorAggregate",
            ) => run_and_compare::<AddList>(name, &graph),
            ("Annotated[int, operator.add]", "BinaryOperatorAggregate") => {
                run_and_compare::<AddInt>(name, &graph)
            }
            ("Annotated[Optional[list], operator.add]", "BinaryOperatorAggregate") => {
                run_and_compare::<AddOptionalList>(name, &graph)
            }
            ("Annotated[list, lambda a, b: a + b]", "BinaryOperatorAggregate") => {
                run_and_compare::<LambdaList>(name, &graph)
            }
            _ => panic!(
                "{name}: map {annotation} ({channel}) to a Rust reducer, or list it in DETECTION_NOT_RUN"
            ),
        }
        ran.push(name);
    }
    println!("run: {ran:?}\nnot run: {not_run:?}");
    assert_eq!(ran.len() + not_run.len(), cases.len());
    assert!(ran.len() >= 5);
}

/// The Optional-list reducer mirrors LangGraph's MISSING start and its
/// TypeError: `list + None`.
#[test]
fn optional_list_add_refuses_none_after_a_list() {
    let mut state = AddOptionalList::default();
    state
        .apply(AddOptionalList::delta().f(Some(vec![json!(1)])))
        .unwrap();
    let err = state.apply(AddOptionalList::delta().f(None)).unwrap_err();
    assert_eq!(err.field(), Some("f"));
    assert_eq!(state.f, Some(vec![json!(1)]));
}

/// A typo in a node's update is caught, with a suggestion, where LangGraph
/// would drop the key silently.
#[test]
fn a_misspelt_key_suggests_the_field() {
    let err = serde_json::from_value::<GraphDelta>(json!({"itmes": [1]}))
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        r#"`Graph` has no field `itmes`; did you mean `items`?"#
    );
}
