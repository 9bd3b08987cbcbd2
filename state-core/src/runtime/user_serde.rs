//! A state's JSON paths under `#[state(serde = "user")]`: the user derives
//! the state's `Serialize` and `Deserialize` (with whatever `#[serde(...)]`
//! options they like), and `to_json`, `from_json`, `get` and `set` go
//! through them, so the state's JSON is the same on every path. `get` and
//! `set` read or rewrite the whole state's JSON: the price of options
//! (`with`, `skip`, ...) that only the user's impls know.

use super::table::{Fields, unknown};
use crate::dynamic::{split_path, walk, walk_mut};
use crate::error::StateError;
use crate::state::State;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// What `#[state(serde = "user")]` needs of the state: serde impls of its
/// own. One trait, so a state without them is one error, at the attribute.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has `#[state(serde = \"user\")]`, so it needs `Serialize` and `Deserialize` of its own",
    label = "derive `Serialize, Deserialize` on the struct, or remove `serde = \"user\"`"
)]
pub trait OwnSerde: Serialize + DeserializeOwned {}

#[diagnostic::do_not_recommend]
impl<T: Serialize + DeserializeOwned> OwnSerde for T {}

/// `State::to_json`: the user's `Serialize`, refusing values JSON cannot
/// hold as [`crate::json::to_value`] does.
pub fn to_json<S: OwnSerde + Fields>(state: &S) -> Result<Value, StateError> {
    crate::json::to_value(state).map_err(|e| StateError::UserSerde {
        state: state.name().to_owned(),
        message: e.to_string(),
    })
}

/// `State::from_json`: the user's `Deserialize`.
pub fn from_json<S: State + OwnSerde>(value: Value) -> Result<S, StateError> {
    if !value.is_object() {
        return Err(StateError::NotAnObject {
            got: crate::dynamic::describe(&value),
        });
    }
    serde_json::from_value(value).map_err(|e| StateError::UserSerde {
        state: S::schema().name.to_owned(),
        message: e.to_string(),
    })
}

/// `State::get`: the value at `key` (a key or a dotted path) in the
/// state's JSON.
pub fn get<S: OwnSerde + Fields>(state: &S, key: &str) -> Result<Value, StateError> {
    let (head, rest) = split_path(key);
    let mut json = to_json(state)?;
    let field = json.get_mut(head).ok_or_else(|| unknown(state, head))?;
    match rest {
        // The JSON is ours: a whole field is taken out of it, not copied.
        None => Ok(field.take()),
        Some(rest) => walk(key, field, rest).cloned(),
    }
}

/// `State::set`: the state's JSON with `value` at `key`, read back whole
/// through the user's `Deserialize`; on error nothing changes.
pub fn set<S: State + OwnSerde + Fields>(
    state: &mut S,
    key: &str,
    value: Value,
) -> Result<(), StateError> {
    let (head, rest) = split_path(key);
    let mut json = to_json(state)?;
    let field = json.get_mut(head).ok_or_else(|| unknown(state, head))?;
    match rest {
        None => *field = value,
        Some(rest) => *walk_mut(key, field, rest)? = value,
    }
    *state = from_json(json)?;
    Ok(())
}
