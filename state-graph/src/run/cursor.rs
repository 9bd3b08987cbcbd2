//! A [`Cursor`] as it is logged: with each superstep step (in its
//! metadata) and each pending step (in its body), so that a run continued
//! or resumed in any process plans the same next superstep.
//!
//! ```json
//! {"nodes": ["a", "b"], "goto": {"a": ["x"]},
//!  "sends": [{"from": "a", "to": "w", "input": ..}], "joins": {"b+c:d": ["b"]}}
//! ```
//!
//! `nodes` are the step's tasks (as `Thread::apply_nodes` writes them);
//! the other keys appear only when not empty: the targets commands chose
//! (`END` is not listed: it adds no task), the workers they sent to with
//! the inputs, and the joins that have seen some of their sources. A
//! superstep's step whose tasks are all of one node logs its targets
//! alone, `{"nodes": ["a"], "goto": "x"}` (or `["x", "y"]`): a handoff
//! logs one at every superstep. Pending bodies always name the node.

use crate::plan::{Cursor, Plan, Sent, Target};
use crate::spec::START;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use state_core::State;
use state_store::ObjectText;
use std::collections::BTreeMap;

/// The cursor's keys, as logged; `nodes` is written by whoever logs the
/// step (a pending step calls it `from`).
#[derive(Debug, Default, Clone, Serialize, Deserialize, PartialEq)]
pub(crate) struct LoggedRoutes {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub goto: BTreeMap<String, Vec<String>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sends: Vec<LoggedSend>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub joins: BTreeMap<String, Vec<String>>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct LoggedSend {
    pub from: String,
    pub to: String,
    pub input: Value,
}

impl LoggedRoutes {
    /// The cursor's routes, named.
    pub fn of<S: State, C>(plan: &Plan<S, C>, cursor: &Cursor) -> LoggedRoutes {
        let name = |n: usize| plan.nodes[n].name.clone();
        let mut goto: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (from, target) in &cursor.goto {
            if let Target::Node(to) = target {
                goto.entry(name(*from)).or_default().push(name(*to));
            }
        }
        let sends = cursor
            .sends
            .iter()
            .map(|(from, sent)| LoggedSend {
                from: name(*from),
                to: name(sent.worker),
                input: sent.logged.clone(),
            })
            .collect();
        let joins = plan
            .joins
            .iter()
            .zip(&cursor.joins)
            .filter(|(_, seen)| seen.iter().any(|s| *s))
            .map(|(join, seen)| {
                let ran = join
                    .sources
                    .iter()
                    .zip(seen)
                    .filter(|(_, s)| **s)
                    .map(|(n, _)| name(*n))
                    .collect();
                (join.key.clone(), ran)
            })
            .collect();
        LoggedRoutes { goto, sends, joins }
    }

    /// Read from a step's metadata (absent keys: no routes); `nodes` are
    /// the step's tasks, whose node a `goto` without one is from.
    pub fn from_metadata(
        metadata: &Map<String, Value>,
        nodes: &[String],
    ) -> Result<LoggedRoutes, String> {
        let present = |key: &str| metadata.get(key).filter(|v| !v.is_null());
        let invalid = |e: serde_json::Error| format!("its routes: {e}");
        let mut routes = LoggedRoutes::default();
        if let Some(goto) = present("goto") {
            routes.goto = goto_of(goto, nodes)?;
        }
        if let Some(sends) = present("sends") {
            routes.sends = Vec::deserialize(sends).map_err(invalid)?;
        }
        if let Some(joins) = present("joins") {
            routes.joins = BTreeMap::deserialize(joins).map_err(invalid)?;
        }
        Ok(routes)
    }

    /// The cursor of a step whose tasks were `nodes`, with these routes.
    pub fn cursor<S: State, C>(
        &self,
        plan: &Plan<S, C>,
        nodes: &[String],
    ) -> Result<Cursor, String> {
        let node = |name: &str| {
            plan.node(name).ok_or_else(|| {
                format!("the log names node \"{name}\", which this graph does not have")
            })
        };
        let mut cursor = Cursor::default();
        for name in nodes {
            let source = if name == START {
                None
            } else {
                Some(node(name)?)
            };
            if !cursor.sources.contains(&source) {
                cursor.sources.push(source);
            }
        }
        for (from, targets) in &self.goto {
            let from = node(from)?;
            for to in targets {
                let target = plan.target(to).ok_or_else(|| {
                    format!("the log names node \"{to}\", which this graph does not have")
                })?;
                cursor.goto.push((from, target));
            }
        }
        for send in &self.sends {
            let from = node(&send.from)?;
            let worker = node(&send.to)?;
            let decode = plan.destinations[from]
                .workers
                .iter()
                .find(|(w, _)| *w == worker)
                .map(|(_, decode)| *decode)
                .ok_or_else(|| {
                    format!(
                        "the log has \"{}\" sending to \"{}\", which is not among its destinations",
                        send.from, send.to
                    )
                })?;
            let input = decode(send.input.clone()).map_err(|e| {
                format!(
                    "the input \"{}\" sent to \"{}\" does not fit the worker: {e}",
                    send.from, send.to
                )
            })?;
            cursor.sends.push((
                from,
                Sent {
                    worker,
                    input,
                    logged: send.input.clone(),
                },
            ));
        }
        cursor.joins = plan
            .joins
            .iter()
            .map(|join| {
                let ran = self.joins.get(&join.key);
                join.sources
                    .iter()
                    .map(|s| ran.is_some_and(|r| r.contains(&plan.nodes[*s].name)))
                    .collect()
            })
            .collect();
        if let Some(unknown) = self
            .joins
            .keys()
            .find(|key| !plan.joins.iter().any(|j| &j.key == *key))
        {
            return Err(format!(
                "the log has join \"{unknown}\", which this graph does not have"
            ));
        }
        Ok(cursor)
    }
}

/// `cursor`'s routes as a step's metadata text, written straight from it
/// (no map of values made and dropped): a command's targets are logged at
/// every superstep it routes, so this is kept small. A step whose tasks
/// are all of one node logs its targets alone (`"goto": "worker"`, or a
/// list of names); others name the node each target is from
/// (`{"a": ["x"]}`, which [`LoggedRoutes::from_metadata`] reads in either
/// case). The keys are written in the order `goto`, `sends`, `joins`.
pub(crate) fn step_metadata<S: State, C>(
    plan: &Plan<S, C>,
    cursor: &Cursor,
) -> Result<ObjectText, serde_json::Error> {
    let name = |n: usize| plan.nodes[n].name.as_str();
    let mut metadata = ObjectText::new();
    write_goto(&mut metadata, plan, cursor)?;
    if !cursor.sends.is_empty() {
        #[derive(Serialize)]
        struct Send<'a> {
            from: &'a str,
            to: &'a str,
            input: &'a Value,
        }
        let sends = cursor.sends.iter().map(|(from, sent)| Send {
            from: name(*from),
            to: name(sent.worker),
            input: &sent.logged,
        });
        metadata.array_field("sends", sends.collect::<Vec<_>>().iter())?;
    }
    let seen = || {
        plan.joins
            .iter()
            .zip(&cursor.joins)
            .filter(|(_, seen)| seen.iter().any(|s| *s))
    };
    // Most steps have no join waiting: nothing built for them.
    if seen().next().is_some() {
        let joins: BTreeMap<&str, Vec<&str>> = seen()
            .map(|(join, seen)| {
                let ran = join.sources.iter().zip(seen).filter(|(_, s)| **s);
                (join.key.as_str(), ran.map(|(n, _)| name(*n)).collect())
            })
            .collect();
        metadata.field("joins", &joins)?;
    }
    Ok(metadata)
}

/// The `goto` of [`step_metadata`], if a command chose a node (`END` adds
/// no task, so it is not logged).
fn write_goto<S: State, C>(
    metadata: &mut ObjectText,
    plan: &Plan<S, C>,
    cursor: &Cursor,
) -> Result<(), serde_json::Error> {
    let name = |n: usize| plan.nodes[n].name.as_str();
    let routed = || {
        cursor
            .goto
            .iter()
            .filter_map(|(from, target)| match target {
                Target::Node(to) => Some((*from, *to)),
                Target::End => None,
            })
    };
    let Some((first, _)) = routed().next() else {
        return Ok(());
    };
    if cursor.sources == [Some(first)] {
        let mut targets = routed().map(|(_, to)| name(to));
        match (targets.next(), targets.next()) {
            (Some(one), None) => metadata.field("goto", one)?,
            (one, two) => metadata.strings_field("goto", one.into_iter().chain(two).chain(targets)),
        };
        return Ok(());
    }
    let mut by_source: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (from, to) in routed() {
        by_source.entry(name(from)).or_default().push(name(to));
    }
    metadata.field("goto", &by_source)?;
    Ok(())
}

/// A logged `goto`: by source (`{"a": ["x"]}`), or the targets alone of a
/// step whose tasks are all of one node (`"x"`, `["x", "y"]`).
fn goto_of(goto: &Value, nodes: &[String]) -> Result<BTreeMap<String, Vec<String>>, String> {
    let invalid = |e: serde_json::Error| format!("its routes: {e}");
    let targets = match goto {
        Value::Object(_) => return BTreeMap::deserialize(goto).map_err(invalid),
        Value::String(one) => vec![one.clone()],
        _ => Vec::deserialize(goto).map_err(invalid)?,
    };
    match nodes.split_first() {
        Some((from, rest)) if rest.iter().all(|n| n == from) => {
            Ok(BTreeMap::from([(from.clone(), targets)]))
        }
        _ => Err(format!(
            "its routes: a goto ({goto}) without its node, in a step of nodes {nodes:?}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Command, END, START, StateGraph};

    #[derive(state_core::AgentState, Debug, Clone)]
    struct S {
        #[reducer(append)]
        log: Vec<String>,
    }

    fn plan() -> std::sync::Arc<Plan<S, ()>> {
        let mut g = StateGraph::<S>::new();
        let command = |_: &S| Command::<SDelta>::goto(["x", "y"]);
        g.add_node("a", command).destinations(["x", "y", END]);
        g.add_node("b", command).destinations(["x", "y", END]);
        for node in ["x", "y", "c", "d"] {
            g.add_node(node, |_: &S| S::delta());
        }
        g.add_edge(START, "a");
        g.add_edge(START, "b");
        g.add_edge(START, "c");
        g.add_edge(["b", "c"], "d");
        for node in ["x", "y", "d"] {
            g.add_edge(node, END);
        }
        g.compile().expect("compiles").plan
    }

    /// A cursor's routes as metadata read back to the same cursor, and
    /// the metadata's text.
    #[test]
    fn step_metadata_reads_back() {
        let plan = plan();
        let node = |name: &str| plan.node(name).expect("a node");
        let (a, b, c, x, y) = (node("a"), node("b"), node("c"), node("x"), node("y"));
        let cases = [
            (vec![a], vec![(a, Target::Node(x))], r#"{"goto":"x"}"#),
            (
                vec![a],
                vec![(a, Target::Node(x)), (a, Target::End), (a, Target::Node(y))],
                r#"{"goto":["x","y"]}"#,
            ),
            (vec![a], vec![(a, Target::End)], r#"{}"#),
            (
                vec![b, a, c],
                vec![
                    (b, Target::Node(y)),
                    (a, Target::Node(x)),
                    (b, Target::Node(x)),
                ],
                r#"{"goto":{"a":["x"],"b":["y","x"]},"joins":{"b+c:d":["b","c"]}}"#,
            ),
        ];
        for (sources, goto, text) in cases {
            let nodes: Vec<String> = sources
                .iter()
                .map(|n| plan.nodes[*n].name.clone())
                .collect();
            let cursor = Cursor {
                joins: plan.mark_joins(Vec::new(), &sources),
                sources: sources.into_iter().map(Some).collect(),
                goto,
                sends: Vec::new(),
            };
            let written = step_metadata(&plan, &cursor).expect("writes").into_string();
            assert_eq!(written, text);
            let metadata: Map<String, Value> = serde_json::from_str(&written).expect("an object");
            let read = LoggedRoutes::from_metadata(&metadata, &nodes)
                .and_then(|routes| routes.cursor(&plan, &nodes))
                .expect("reads back");
            let named = |c: &Cursor| {
                let routes = LoggedRoutes::of(&plan, c);
                (c.sources.clone(), routes.goto, routes.joins)
            };
            assert_eq!(named(&read), named(&cursor), "{text}");
        }
    }

    /// A step's `Send`s are logged with their inputs, and read back.
    #[test]
    fn sends_are_written_and_read_back() {
        let plan = plan();
        let node = |name: &str| plan.node(name).expect("a node");
        let (a, x, y) = (node("a"), node("x"), node("y"));
        let sent = |worker: usize, logged: Value| Sent {
            worker,
            input: std::sync::Arc::new(()),
            logged,
        };
        let cursor = Cursor {
            joins: plan.mark_joins(Vec::new(), &[a]),
            sources: vec![Some(a)],
            goto: vec![(a, Target::Node(y))],
            sends: vec![
                (a, sent(x, serde_json::json!({"topic": "tea \"green\""}))),
                (a, sent(y, Value::Null)),
            ],
        };
        let written = step_metadata(&plan, &cursor).expect("writes").into_string();
        assert_eq!(
            written,
            r#"{"goto":"y","sends":[{"from":"a","to":"x","input":{"topic":"tea \"green\""}},{"from":"a","to":"y","input":null}]}"#
        );
        let metadata: Map<String, Value> = serde_json::from_str(&written).expect("an object");
        let read = LoggedRoutes::from_metadata(&metadata, &["a".to_owned()]).expect("reads");
        assert_eq!(read, LoggedRoutes::of(&plan, &cursor));
    }

    /// The log before the targets alone: every `goto` by source.
    #[test]
    fn goto_by_source_still_reads() {
        let plan = plan();
        let nodes = vec!["a".to_owned()];
        let old = serde_json::json!({"nodes": ["a"], "goto": {"a": ["x", "y"]}});
        let new = serde_json::json!({"nodes": ["a"], "goto": ["x", "y"]});
        let read = |v: Value| {
            let Value::Object(m) = v else { unreachable!() };
            LoggedRoutes::from_metadata(&m, &nodes)
        };
        assert_eq!(read(old.clone()), read(new));
        let routes = read(old).expect("reads");
        assert_eq!(routes.goto["a"], ["x", "y"]);
        assert!(routes.cursor(&plan, &nodes).is_ok());
        // Targets alone name no node in a step of several.
        let Value::Object(m) = serde_json::json!({"goto": "x"}) else {
            unreachable!()
        };
        let two = vec!["a".to_owned(), "b".to_owned()];
        assert!(LoggedRoutes::from_metadata(&m, &two).is_err());
    }
}
