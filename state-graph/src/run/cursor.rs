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
//! the inputs, and the joins that have seen some of their sources.

use crate::plan::{Cursor, Plan, Sent, Target};
use crate::spec::{END, START};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use state_core::State;
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

    /// Into a step's metadata: what serializing it writes, built directly
    /// (a command's `goto` is logged at every superstep it routes).
    pub fn into_metadata(self) -> Map<String, Value> {
        let names = |map: BTreeMap<String, Vec<String>>| {
            Value::Object(
                map.into_iter()
                    .map(|(k, v)| (k, Value::Array(v.into_iter().map(Value::String).collect())))
                    .collect(),
            )
        };
        let mut metadata = Map::new();
        if !self.goto.is_empty() {
            metadata.insert("goto".to_owned(), names(self.goto));
        }
        if !self.sends.is_empty() {
            // Names and logged inputs (already JSON): always serializable.
            if let Ok(sends) = serde_json::to_value(self.sends) {
                metadata.insert("sends".to_owned(), sends);
            }
        }
        if !self.joins.is_empty() {
            metadata.insert("joins".to_owned(), names(self.joins));
        }
        metadata
    }

    /// Read from a step's metadata (absent keys: no routes).
    pub fn from_metadata(metadata: &Map<String, Value>) -> Result<LoggedRoutes, String> {
        let pick = |key: &str| metadata.get(key).cloned().unwrap_or(Value::Null);
        let routes = serde_json::json!({
            "goto": pick("goto"),
            "sends": pick("sends"),
            "joins": pick("joins"),
        });
        let routes: Map<String, Value> = match routes {
            Value::Object(map) => map.into_iter().filter(|(_, v)| !v.is_null()).collect(),
            _ => Map::new(),
        };
        serde_json::from_value(Value::Object(routes)).map_err(|e| format!("its routes: {e}"))
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
                let target = if to == END {
                    Target::End
                } else {
                    Target::Node(node(to)?)
                };
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `into_metadata` writes what serializing the routes writes.
    #[test]
    fn into_metadata_is_the_serialized_routes() {
        let cases = [
            LoggedRoutes::default(),
            LoggedRoutes {
                goto: BTreeMap::from([
                    ("supervisor".to_owned(), vec!["worker".to_owned()]),
                    ("a".to_owned(), vec!["x".to_owned(), "y".to_owned()]),
                ]),
                sends: vec![LoggedSend {
                    from: "a".to_owned(),
                    to: "w".to_owned(),
                    input: serde_json::json!({"subject": "cats"}),
                }],
                joins: BTreeMap::from([("b+c:d".to_owned(), vec!["b".to_owned()])]),
            },
        ];
        for routes in cases {
            let serialized = serde_json::to_value(&routes).expect("routes serialize");
            let built = Value::Object(routes.clone().into_metadata());
            assert_eq!(built, serialized);
            assert_eq!(
                serde_json::to_string(&built).expect("as text"),
                serde_json::to_string(&serialized).expect("as text")
            );
            let Value::Object(map) = built else {
                unreachable!()
            };
            assert_eq!(LoggedRoutes::from_metadata(&map), Ok(routes));
        }
    }
}
