//! Steps: what one write to a thread did, as it is logged (JSON text) and
//! replayed (through the state's own reducers).

use crate::backend::StepRow;
use crate::error::StoreError;
use serde::Serialize;
use serde_json::{Map, Value};
use state_core::{Delta, State, StateError};
use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What a logged step did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StepKind {
    /// One delta through the reducers ([`Thread::apply`](crate::Thread::apply)).
    /// Body: the delta's JSON.
    Apply,
    /// The deltas of one superstep, in order
    /// ([`Thread::apply_all`](crate::Thread::apply_all)). Body: a JSON array
    /// of deltas; node names, where given, are in the metadata's `"nodes"`.
    Superstep,
    /// A turn reset ([`Thread::begin_turn`](crate::Thread::begin_turn)).
    /// Body: `null`.
    BeginTurn,
    /// A value written at a key, bypassing the reducer
    /// ([`Thread::set`](crate::Thread::set)). Body: `{"key": .., "value": ..}`.
    Set,
}

impl StepKind {
    /// The name stored in the log.
    pub fn as_str(self) -> &'static str {
        match self {
            StepKind::Apply => "apply",
            StepKind::Superstep => "superstep",
            StepKind::BeginTurn => "begin_turn",
            StepKind::Set => "set",
        }
    }

    pub(crate) fn parse(name: &str) -> Option<StepKind> {
        [
            StepKind::Apply,
            StepKind::Superstep,
            StepKind::BeginTurn,
            StepKind::Set,
        ]
        .into_iter()
        .find(|kind| kind.as_str() == name)
    }
}

impl fmt::Display for StepKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// One step of a thread's history, as logged.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct StepRecord {
    /// Its sequence number: 1 for the thread's first step.
    pub seq: u64,
    /// What it did.
    pub kind: StepKind,
    /// When it was committed (the writer's clock, millisecond precision).
    pub recorded_at: SystemTime,
    /// The caller's metadata (node names of a superstep under `"nodes"`).
    pub metadata: Map<String, Value>,
    /// What was applied: see [`StepKind`] for each kind's shape.
    pub body: Value,
    /// The state's schema version when the step was written.
    pub state_version: u32,
}

impl StepRecord {
    pub(crate) fn from_row(thread: &str, row: StepRow) -> Result<StepRecord, StoreError> {
        let corrupt = |detail: String| StoreError::corrupt(thread, "step", row.seq, detail);
        let kind = StepKind::parse(&row.kind)
            .ok_or_else(|| corrupt(format!("unknown step kind {:?}", row.kind)))?;
        let body = serde_json::from_str(&row.body)
            .map_err(|e| corrupt(format!("body is not JSON: {e}")))?;
        let metadata = match serde_json::from_str(&row.metadata) {
            Ok(Value::Object(map)) => map,
            Ok(other) => return Err(corrupt(format!("metadata is {other}, not an object"))),
            Err(e) => return Err(corrupt(format!("metadata is not JSON: {e}"))),
        };
        let state_version = u32::try_from(row.state_version)
            .map_err(|_| corrupt(format!("state version {} out of range", row.state_version)))?;
        Ok(StepRecord {
            seq: row.seq,
            kind,
            recorded_at: from_millis(row.recorded_at),
            metadata,
            body,
            state_version,
        })
    }
}

/// A step about to be logged: its kind and JSON text.
pub(crate) struct Encoded {
    pub kind: StepKind,
    pub body: String,
}

impl Encoded {
    pub fn apply<S: State>(thread: &str, delta: &S::Delta) -> Result<Encoded, StoreError>
    where
        S::Delta: Serialize,
    {
        Ok(Encoded {
            kind: StepKind::Apply,
            body: to_text(thread, "delta", delta)?,
        })
    }

    pub fn superstep<S: State>(thread: &str, deltas: &[S::Delta]) -> Result<Encoded, StoreError>
    where
        S::Delta: Serialize,
    {
        Ok(Encoded {
            kind: StepKind::Superstep,
            body: to_text(thread, "superstep", deltas)?,
        })
    }

    pub fn begin_turn() -> Encoded {
        Encoded {
            kind: StepKind::BeginTurn,
            body: "null".to_owned(),
        }
    }

    pub fn set(thread: &str, key: &str, value: &Value) -> Result<Encoded, StoreError> {
        #[derive(Serialize)]
        struct SetBody<'a> {
            key: &'a str,
            value: &'a Value,
        }
        Ok(Encoded {
            kind: StepKind::Set,
            body: to_text(thread, "set", &SetBody { key, value })?,
        })
    }
}

fn to_text<T: Serialize + ?Sized>(
    thread: &str,
    what: &'static str,
    value: &T,
) -> Result<String, StoreError> {
    state_core::json::to_string(value).map_err(|source| StoreError::Encode {
        thread: thread.to_owned(),
        what,
        source,
    })
}

/// Replays one logged step onto `state` through its reducers, each stored
/// field map first brought up to the current schema by `migrate`. On error
/// the state is unchanged (every entry point used is all-or-nothing).
pub(crate) fn replay<S: State>(
    thread: &str,
    state: &mut S,
    row: &StepRow,
    migrate: impl Fn(&mut Value) -> Result<(), String>,
) -> Result<(), StoreError> {
    let corrupt = |detail: String| StoreError::corrupt(thread, "step", row.seq, detail);
    let kind = StepKind::parse(&row.kind)
        .ok_or_else(|| corrupt(format!("unknown step kind {:?}", row.kind)))?;
    let body: Value =
        serde_json::from_str(&row.body).map_err(|e| corrupt(format!("body is not JSON: {e}")))?;
    let refused = |e: StateError| corrupt(e.to_string());
    let migrated = |mut data: Value| {
        migrate(&mut data).map_err(|message| StoreError::Migration {
            thread: thread.to_owned(),
            what: "step",
            seq: row.seq,
            message,
        })?;
        Ok::<Value, StoreError>(data)
    };
    match kind {
        StepKind::Apply => {
            let delta = S::Delta::from_json(migrated(body)?).map_err(refused)?;
            state.apply(delta).map_err(refused)
        }
        StepKind::Superstep => {
            let Value::Array(items) = body else {
                return Err(corrupt("a superstep's body must be a JSON array".into()));
            };
            let mut deltas = Vec::with_capacity(items.len());
            for item in items {
                deltas.push(S::Delta::from_json(migrated(item)?).map_err(refused)?);
            }
            state.apply_all(deltas).map_err(refused)
        }
        StepKind::BeginTurn => {
            state.begin_turn();
            Ok(())
        }
        StepKind::Set => {
            let (key, value) = set_parts(body).ok_or_else(|| {
                corrupt("a set's body must be {\"key\": .., \"value\": ..}".into())
            })?;
            // A set is migrated as the one-key map it writes.
            let mut one = Map::new();
            one.insert(key, value);
            let Value::Object(one) = migrated(Value::Object(one))? else {
                return Err(corrupt(
                    "the migration turned a set into a non-object".into(),
                ));
            };
            let mut entries = one.into_iter();
            match (entries.next(), entries.next()) {
                (Some((key, value)), None) => state.set(&key, value).map_err(refused),
                _ => Err(corrupt(
                    "the migration turned a set into several keys".into(),
                )),
            }
        }
    }
}

fn set_parts(body: Value) -> Option<(String, Value)> {
    let Value::Object(mut object) = body else {
        return None;
    };
    let Some(Value::String(key)) = object.remove("key") else {
        return None;
    };
    Some((key, object.remove("value")?))
}

/// Milliseconds since the Unix epoch, now.
pub(crate) fn now_millis() -> i64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
}

pub(crate) fn from_millis(millis: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(u64::try_from(millis).unwrap_or(0))
}

/// Metadata as stored: a JSON object's text.
pub(crate) fn metadata_text(metadata: &Map<String, Value>) -> String {
    // A map of JSON values always serializes.
    serde_json::to_string(metadata).unwrap_or_else(|_| "{}".to_owned())
}

/// Checks that caller metadata is a JSON object.
pub(crate) fn metadata_object(value: Value) -> Result<Map<String, Value>, StoreError> {
    match value {
        Value::Object(map) => Ok(map),
        Value::Null => Ok(Map::new()),
        other => Err(StoreError::Metadata {
            got: describe(&other),
        }),
    }
}

fn describe(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_by_name() {
        for kind in [
            StepKind::Apply,
            StepKind::Superstep,
            StepKind::BeginTurn,
            StepKind::Set,
        ] {
            assert_eq!(StepKind::parse(kind.as_str()), Some(kind));
        }
        assert_eq!(StepKind::parse("Apply"), None);
    }

    #[test]
    fn metadata_must_be_an_object() {
        assert!(metadata_object(serde_json::json!({"node": "a"})).is_ok());
        assert!(metadata_object(Value::Null).unwrap().is_empty());
        let err = metadata_object(serde_json::json!([1])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "step metadata must be a JSON object, got an array"
        );
    }
}
