//! JSON recorded from LangGraph against ours, where the recording has
//! `"<gen:N>"` for an id generated at run time (a message's, an
//! interrupt's, a task's): ours must be a UUID there (v4 for a random one,
//! v8 for a task's, derived from what identifies the task), the same for
//! equal N and different for different N.
//!
//! The conformance vectors' one matcher: the supersteps and add_messages
//! vectors here, and state-graph's graph vectors, which include this file
//! with `#[path]` (neither crate can depend on the other's tests).

use serde_json::Value;
use std::collections::{BTreeSet, HashMap};

/// What each `"<gen:N>"` stands for so far: the placeholder -> our id.
pub type Ids = HashMap<String, String>;

/// Matches `expected` against `actual`; `at` names where, in the error.
/// Each placeholder seen for the first time is bound to the id in its
/// place, and the bindings stay in `ids` (for the next comparison of the
/// same run) only when everything matched.
pub fn matches(at: &str, expected: &Value, actual: &Value, ids: &mut Ids) -> Result<(), String> {
    let mut bound = ids.clone();
    matches_in(at, expected, actual, &mut bound)?;
    *ids = bound;
    Ok(())
}

fn matches_in(at: &str, expected: &Value, actual: &Value, ids: &mut Ids) -> Result<(), String> {
    match (expected, actual) {
        (Value::String(p), _) if p.starts_with("<gen:") => {
            let Value::String(id) = actual else {
                return Err(format!("{at}: expected a generated id, got {actual}"));
            };
            is_generated(id).map_err(|why| format!("{at}: {why}"))?;
            let first = ids.entry(p.clone()).or_insert_with(|| id.clone());
            if first != id {
                return Err(format!("{at}: {p} is {first} elsewhere, here {id}"));
            }
            if ids.values().filter(|v| *v == id).count() > 1 {
                return Err(format!("{at}: {id} stands for two placeholders"));
            }
            Ok(())
        }
        (Value::Object(e), Value::Object(a)) => {
            let (ek, ak): (BTreeSet<_>, BTreeSet<_>) = (e.keys().collect(), a.keys().collect());
            if ek != ak {
                return Err(format!("{at}: keys {ek:?} != {ak:?}"));
            }
            e.iter()
                .try_for_each(|(k, v)| matches_in(&format!("{at}.{k}"), v, &a[k], ids))
        }
        (Value::Array(e), Value::Array(a)) => {
            if e.len() != a.len() {
                return Err(format!("{at}: {} items != {}", e.len(), a.len()));
            }
            e.iter()
                .zip(a)
                .enumerate()
                .try_for_each(|(i, (e, a))| matches_in(&format!("{at}[{i}]"), e, a, ids))
        }
        _ if expected == actual => Ok(()),
        _ => Err(format!("{at}: expected {expected}, got {actual}")),
    }
}

/// Whether `id` is one we generate: a UUID v4 (random) or v8 (a task's),
/// written as `Uuid::to_string()` writes it (hyphenated, lowercase).
fn is_generated(id: &str) -> Result<(), String> {
    let uuid = uuid::Uuid::parse_str(id).map_err(|e| format!("{id:?} is not a UUID: {e}"))?;
    if !matches!(uuid.get_version_num(), 4 | 8) || uuid.hyphenated().to_string() != id {
        return Err(format!("{id} is not a canonical lowercase UUID v4 or v8"));
    }
    Ok(())
}
