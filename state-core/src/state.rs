//! The two traits `#[derive(AgentState)]` implements: [`State`] for the
//! struct and [`Delta`] for its generated partial update.

use crate::dynamic::{describe, split_path};
use crate::error::StateError;
use crate::schema::Schema;
use serde_json::Value;
use std::any::Any;

/// An agent's state: one struct whose fields each say how updates merge.
///
/// Implemented by `#[derive(AgentState)]`; see the crate docs for the
/// attributes. Nodes return a [`State::Delta`], and the graph runtime applies
/// it with [`apply`](State::apply) (one node) or [`apply_all`](State::apply_all)
/// (several nodes in one superstep).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an agent state",
    label = "this type does not derive `AgentState`",
    note = "`#[state(flatten)]` embeds a type with `#[derive(AgentState)]`; for a plain struct, \
            make it an ordinary field (replaced whole) instead"
)]
pub trait State: Default {
    /// The partial update for this state: one optional slot per field.
    type Delta: Delta;

    /// An empty delta, to fill with its chainable setters.
    fn delta() -> Self::Delta {
        Self::Delta::default()
    }

    /// Applies one delta through each field's reducer. All-or-nothing: on
    /// `Err` the state is exactly as before.
    fn apply(&mut self, delta: Self::Delta) -> Result<(), StateError>;

    /// One superstep, all-or-nothing: the deltas of nodes that ran in
    /// parallel, in the order given (LangGraph applies them in node-name
    /// order). Each field's writes reduce one after another; two writes to a
    /// `replace` field are a [`StateError::ConcurrentWrite`].
    fn apply_all(
        &mut self,
        deltas: impl IntoIterator<Item = Self::Delta>,
    ) -> Result<(), StateError> {
        let mut merged = Self::Delta::default();
        for delta in deltas {
            merged = merged.merge(delta)?;
        }
        self.apply(merged)
    }

    /// Starts a new turn: every turn-scoped field goes back to its default;
    /// persistent fields are untouched.
    fn begin_turn(&mut self);

    /// The value at `key` as JSON. Keys are field names; a dotted path
    /// (`progress.turn_count`, `diagnostics.latency`) reaches into a nested
    /// state or into a field's JSON value.
    fn get(&self, key: &str) -> Result<Value, StateError>;

    /// Replaces the value at `key`, bypassing the field's reducer. The value
    /// is checked against the field's type; on error nothing changes.
    fn set(&mut self, key: &str, value: Value) -> Result<(), StateError>;

    /// Applies a JSON object `{field: update}` through the reducers, exactly
    /// as the typed delta would be (LangGraph-style updates from another
    /// service included). Everything is decoded before anything is applied,
    /// so on error the state is unchanged.
    fn apply_json(&mut self, delta: Value) -> Result<(), StateError> {
        let delta = Self::Delta::from_json(delta)?;
        self.apply(delta)
    }

    /// The whole state as a JSON object, fields in declaration order. A
    /// field whose value has no JSON form (a map with non-string keys, say)
    /// is written as `null`; `serde_json::to_value(&state)` reports it instead.
    fn to_json(&self) -> Value;

    /// A state from a JSON object: missing fields take their defaults;
    /// unknown fields and values of the wrong type are errors.
    fn from_json(value: Value) -> Result<Self, StateError> {
        let Value::Object(object) = value else {
            return Err(StateError::NotAnObject {
                got: describe(&value),
            });
        };
        let mut state = Self::default();
        for (key, value) in object {
            // A dotted path names a value inside a field, not a field; any
            // other unknown key is refused by `set` with the same error.
            if key.contains('.') {
                return Err(StateError::unknown_field(&key, Self::keys()));
            }
            state.set(&key, value)?;
        }
        Ok(state)
    }

    /// The field names, in declaration order.
    fn keys() -> &'static [&'static str];

    /// The fields' names, types, reducers, scopes, defaults and docs.
    fn schema() -> &'static Schema;

    /// Every leaf field's dotted path, in declaration order: a nested
    /// state's fields instead of the state itself (`progress.turn_count`,
    /// `progress.stage`, ...).
    fn leaf_keys() -> Vec<String> {
        Self::schema()
            .leaves()
            .into_iter()
            .map(|(path, _)| path)
            .collect()
    }

    /// Whether `key` (a field name or dotted path) names a value.
    fn contains_key(&self, key: &str) -> bool {
        match split_path(key) {
            (head, None) => Self::keys().contains(&head),
            _ => self.get(key).is_ok(),
        }
    }
}

/// A partial update of a [`State`]: what one node writes.
pub trait Delta: Default {
    /// True when the delta writes nothing.
    fn is_empty(&self) -> bool;

    /// The names of the fields this delta writes, in declaration order.
    fn fields(&self) -> Vec<&'static str>;

    /// Combines two deltas written in the same step (as by parallel
    /// branches) into one with the effect of `apply_all([self, other])`.
    /// Two writes to a `replace` field are a [`StateError::ConcurrentWrite`];
    /// two overwrites of one field are a [`StateError::ConcurrentOverwrite`].
    fn merge(self, other: Self) -> Result<Self, StateError>;

    /// A delta from a JSON object `{field: update}`; a reducer field also
    /// accepts `{"__overwrite__": value}`. Unknown keys are an error with a
    /// did-you-mean; a value of the wrong type names the field.
    fn from_json(value: Value) -> Result<Self, StateError>;
}

/// Type-erased access to a state's fields, behind the `field_ref` and
/// `field_mut` methods that `#[derive(AgentState)]` generates (for states
/// whose field types are all `'static`).
#[doc(hidden)]
pub trait FieldAny {
    /// The field at `key` (a name or dotted path), type-erased.
    fn field_any(&self, key: &str) -> Option<&dyn Any>;

    /// The field at `key` (a name or dotted path), type-erased.
    fn field_any_mut(&mut self, key: &str) -> Option<&mut dyn Any>;
}
