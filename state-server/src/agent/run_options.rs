//! A run request's options beyond its input and stream modes, as the Agent
//! Server takes them (`RunCreateStateful`): its own breakpoints
//! (`interrupt_before`, `interrupt_after`), `durability`, the checkpoint
//! it starts from (the thread's latest only), and the fields this server
//! refuses rather than ignores (`webhook`, `feedback_keys`): a run that
//! would not do what it was asked is not created.
//!
//! They are stored in the run's `kwargs` under LangGraph's names, which the
//! worker reads back ([`breakpoints_of`]).

use super::checkpoint;
use crate::error::ApiError;
use serde_json::{Map, Value, json};

/// The options a run request may carry, as given.
#[derive(serde::Deserialize, Default)]
pub(crate) struct RunOptions {
    #[serde(default)]
    interrupt_before: Option<Value>,
    #[serde(default)]
    interrupt_after: Option<Value>,
    #[serde(default)]
    durability: Option<Value>,
    #[serde(default)]
    checkpoint_during: Option<Value>,
    #[serde(default)]
    checkpoint: Option<Value>,
    #[serde(default)]
    checkpoint_id: Option<Value>,
    #[serde(default)]
    webhook: Option<Value>,
    #[serde(default)]
    feedback_keys: Option<Value>,
}

/// A run's breakpoints, checked: the nodes it pauses before and after, in
/// place of its graph's (`None`: its graph's).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct RunBreakpoints {
    pub before: Option<Vec<String>>,
    pub after: Option<Vec<String>>,
}

impl RunOptions {
    /// The options checked: the breakpoints' shape (their nodes are the
    /// graph's to check), the refused fields refused (the checkpoint is
    /// [`checkpoint`](Self::checkpoint)'s).
    pub(crate) fn check(&self) -> Result<RunBreakpoints, ApiError> {
        if self.webhook.as_ref().is_some_and(|w| !w.is_null()) {
            return Err(ApiError::invalid_body(
                "webhook: not served here: this server makes no outbound requests; follow the \
                 run with `runs/join` or its stream",
            ));
        }
        if let Some(keys) = &self.feedback_keys
            && !matches!(keys, Value::Null)
            && keys.as_array().is_none_or(|keys| !keys.is_empty())
        {
            return Err(ApiError::invalid_body(
                "feedback_keys: LangSmith feedback is not served here; leave it out",
            ));
        }
        match &self.durability {
            None | Some(Value::Null) => {}
            Some(Value::String(d)) if ["sync", "async", "exit"].contains(&d.as_str()) => {}
            Some(other) => {
                return Err(ApiError::invalid_body(format!(
                    "durability: expected \"sync\", \"async\" or \"exit\", got {other}"
                )));
            }
        }
        if let Some(value) = &self.checkpoint_during
            && !matches!(value, Value::Null | Value::Bool(_))
        {
            return Err(ApiError::invalid_body(format!(
                "checkpoint_during: expected true or false, got {value}"
            )));
        }
        Ok(RunBreakpoints {
            before: nodes("interrupt_before", self.interrupt_before.as_ref())
                .map_err(ApiError::invalid_body)?,
            after: nodes("interrupt_after", self.interrupt_after.as_ref())
                .map_err(ApiError::invalid_body)?,
        })
    }

    /// The step the run is asked to start from (`checkpoint_id`, or
    /// `checkpoint` as LangGraph's clients send it), if it names one. A
    /// run starts from its thread's latest step here: the caller refuses
    /// any other (LangGraph would fork the thread there).
    pub(crate) fn checkpoint(&self) -> Result<Option<u64>, ApiError> {
        checkpoint::first_named(&[
            ("checkpoint_id", self.checkpoint_id.as_ref()),
            ("checkpoint", self.checkpoint.as_ref()),
        ])
    }

    /// The options' part of the run's `kwargs`, under LangGraph's names
    /// (`durability` is `"async"` unless given: the worker commits each
    /// superstep while the next one runs, or, `"sync"`, before it; `"exit"`
    /// is `"async"` here, every superstep logged; see
    /// `CompiledGraph::with_durability`).
    pub(crate) fn kwargs(&self, kwargs: &mut Map<String, Value>) {
        let or_null = |v: &Option<Value>| v.clone().unwrap_or(Value::Null);
        kwargs.insert("interrupt_before".into(), or_null(&self.interrupt_before));
        kwargs.insert("interrupt_after".into(), or_null(&self.interrupt_after));
        kwargs.insert("webhook".into(), Value::Null);
        kwargs.insert("feedback_keys".into(), Value::Null);
        kwargs.insert("temporary".into(), json!(false));
        let during = match &self.checkpoint_during {
            Some(Value::Bool(b)) => *b,
            _ => true,
        };
        kwargs.insert("checkpoint_during".into(), json!(during));
        let durability = match &self.durability {
            Some(Value::String(d)) => d.clone(),
            _ => "async".to_owned(),
        };
        kwargs.insert("durability".into(), json!(durability));
    }
}

/// A breakpoint field: `"*"` (every node) or a list of node names; null or
/// absent, none given.
fn nodes(field: &str, value: Option<&Value>) -> Result<Option<Vec<String>>, String> {
    let expected = || {
        format!(
            "{field}: expected \"*\" or a list of node names, got {}",
            value.map(Value::to_string).unwrap_or_default()
        )
    };
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(all)) if all == "*" => Ok(Some(vec!["*".to_owned()])),
        Some(Value::Array(list)) => list
            .iter()
            .map(|node| node.as_str().map(str::to_owned).ok_or_else(expected))
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(expected()),
    }
}

/// The breakpoints a stored run asked for (its `kwargs`).
pub(crate) fn breakpoints_of(kwargs: &Value) -> Result<RunBreakpoints, String> {
    Ok(RunBreakpoints {
        before: nodes("interrupt_before", kwargs.get("interrupt_before"))?,
        after: nodes("interrupt_after", kwargs.get("interrupt_after"))?,
    })
}

/// A flag of a stored run's `kwargs` under LangGraph's name, or under the
/// name runs stored by earlier versions kept it by (`stream_subgraphs`,
/// `stream_resumable`).
pub(crate) fn flag(kwargs: &Value, name: &str, older: &str) -> bool {
    kwargs
        .get(name)
        .or_else(|| kwargs.get(older))
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(json: Value) -> RunOptions {
        serde_json::from_value(json).expect("options")
    }

    #[test]
    fn breakpoints_are_a_star_or_names_and_anything_else_is_named() {
        let checked = options(json!({"interrupt_before": "*", "interrupt_after": ["a", "b"]}))
            .check()
            .expect("valid");
        assert_eq!(checked.before, Some(vec!["*".to_owned()]));
        assert_eq!(checked.after, Some(vec!["a".to_owned(), "b".to_owned()]));
        assert_eq!(
            options(json!({})).check().expect("valid"),
            RunBreakpoints::default()
        );
        for (field, bad) in [
            ("interrupt_before", json!("tools")),
            ("interrupt_after", json!([1])),
            ("interrupt_before", json!({"a": 1})),
        ] {
            let message = options(json!({ field: bad }))
                .check()
                .expect_err("refused")
                .message()
                .to_owned();
            assert!(
                message.contains(field) && message.contains("\"*\" or a list"),
                "{message}"
            );
        }
    }

    #[test]
    fn what_is_not_served_is_refused_by_name_and_null_is_absent() {
        let message = options(json!({"webhook": "x"}))
            .check()
            .expect_err("refused")
            .message()
            .to_owned();
        assert!(
            message.contains("webhook") && message.contains("not served"),
            "{message}"
        );
        assert!(options(json!({"webhook": null})).check().is_ok());
        // A checkpoint is named, by id or as LangGraph's clients send it.
        let id = checkpoint::id(4);
        let named = |json: Value| options(json).checkpoint().expect("named");
        assert_eq!(named(json!({"checkpoint_id": id})), Some(4));
        assert_eq!(named(json!({"checkpoint": {"checkpoint_id": id}})), Some(4));
        assert_eq!(named(json!({"checkpoint": {"thread_id": "t"}})), None);
        assert!(options(json!({"feedback_keys": ["k"]})).check().is_err());
        assert!(options(json!({"feedback_keys": []})).check().is_ok());
        assert!(options(json!({"durability": "later"})).check().is_err());
        assert!(
            options(json!({"durability": "exit", "checkpoint_during": false}))
                .check()
                .is_ok()
        );
        assert!(options(json!({"checkpoint_during": "no"})).check().is_err());
    }

    #[test]
    fn kwargs_carry_langgraphs_names_and_older_runs_are_read_too() {
        let mut kwargs = Map::new();
        options(json!({"interrupt_before": ["a"]})).kwargs(&mut kwargs);
        let kwargs = Value::Object(kwargs);
        assert_eq!(kwargs["interrupt_before"], json!(["a"]));
        assert_eq!(kwargs["interrupt_after"], Value::Null);
        assert_eq!(kwargs["durability"], json!("async"));
        assert_eq!(kwargs["checkpoint_during"], json!(true));
        assert_eq!(
            breakpoints_of(&kwargs).expect("stored").before,
            Some(vec!["a".to_owned()])
        );
        assert!(flag(
            &json!({"subgraphs": true}),
            "subgraphs",
            "stream_subgraphs"
        ));
        assert!(flag(
            &json!({"stream_subgraphs": true}),
            "subgraphs",
            "stream_subgraphs"
        ));
        assert!(!flag(&json!({}), "subgraphs", "stream_subgraphs"));
    }
}
