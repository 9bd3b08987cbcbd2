#![doc = include_str!("../README.md")]
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod const_str;
mod dynamic;
pub mod error;
mod field_type;
mod into_update;
pub mod json;
pub mod messages;
pub mod reducer;
mod runtime;
pub mod schema;
pub mod state;

#[doc(hidden)]
pub mod __private;

pub use error::{CustomError, ReduceError, StateError};
pub use field_type::StateField;
pub use into_update::IntoUpdate;
pub use messages::{
    Content, Message, MessageKind, MessageLike, Messages, MessagesState, MessagesStateDelta,
    REMOVE_ALL_MESSAGES, ToolCall,
};
pub use reducer::Reducer;
pub use runtime::migrate::{MigrationFn, MigrationOutcome};
pub use runtime::slot::Written;
pub use schema::{FieldInfo, ReducerKind, Schema, Scope};
pub use state::{Checked, Delta, FieldNames, State};

/// The `schemars` crate (feature `schemars`), whose `JsonSchema`
/// `#[state(json_schema)]` implements and needs of every field type.
#[cfg(feature = "schemars")]
pub use schemars;
/// Derives [`State`] for a struct with named fields, and its `{Name}Delta`.
///
/// # Field attributes
///
/// | attribute | meaning |
/// |---|---|
/// | `#[reducer(replace)]` | last write wins (the default); two writes in one step are a [`StateError::ConcurrentWrite`] |
/// | `#[reducer(append)]` | extend a `Vec`, `VecDeque`, set... (LangGraph's `operator.add`) |
/// | `#[reducer(merge)]` | maps: keys of the update win (`HashMap`, `BTreeMap`, `serde_json::Map`, and `IndexMap` with the default feature `indexmap`); a nested state (a type that also derives `AgentState`): the update is its delta, and only the inner fields it writes change, each through its own reducer |
/// | `#[reducer(append_by_id)]` | `Vec<T: HasId>`: update the item with the same id in place, else append |
/// | `#[reducer(add_messages)]` | LangGraph's `add_messages` on [`Messages`] or `Vec<M: MessageLike>` |
/// | `#[reducer(with = path)]` | a custom `fn(&mut T, T)` or `fn(&mut T, T) -> Result<(), E>`, or a unit struct implementing [`Reducer<T>`]; add `update = U` when its update is not a `T`: `fn(&mut T, U)` (LangGraph's `update_dialog_stack`: `fn(&mut Vec<String>, Option<String>)`, `update = Option<String>`), or `Reducer<T, Update = U>`. It must be deterministic (see below) |
/// | `#[scope(turn)]` / `#[scope(persistent)]` | reset by [`State::begin_turn`], or kept (the default) |
/// | `#[default(EXPR)]` | initial and turn-reset value, typed as the field; a string literal alone goes through `Into` |
/// | `#[state(flatten)]` | embed a base state: its fields become this state's fields (keys, JSON, schema, deltas), with their own reducers and scopes |
/// | `#[serde(rename = "key")]` | the field's key, where it differs from its Rust name: in JSON, `get`/`set`/`apply_json`, `keys`, dotted paths, the schema and errors (the setter keeps the Rust name); another serde option is an error, unless the state has `#[state(serde = "user")]` (below) |
///
/// A custom reducer must be deterministic: its effect depends only on the
/// field and the update. Stores log each step's delta and rebuild a state by
/// replaying the log through the same reducers, which must do exactly what
/// they did the first time. Anything random (an id, a timestamp) belongs in
/// the update, built by the node, or in [`Reducer::prepare`], which a
/// delta's setters and its JSON decoding call on every update (that is
/// where `add_messages` gives a message without an id its UUID).
///
/// # Composition
///
/// A nested state with `#[reducer(merge)]` is a group of fields with its
/// own reducers and scopes: deltas nest (`{"progress": {"stage": "closing"}}`
/// in JSON, `S::delta().progress(Progress::delta().stage("closing"))` in
/// Rust), `begin_turn` resets a turn-scoped group wholesale and the
/// turn-scoped fields inside a persistent one, two parallel writes to one
/// inner `replace` field conflict with the full path (`progress.stage`), and
/// dotted paths reach inside (`get("progress.stage")`).
///
/// The field's type may be a type parameter: a parameter bounded by
/// `State` is a nested state in every instance, as a concrete one is.
///
/// ```
/// use state_core::{AgentState, State, StateField};
///
/// #[derive(AgentState, Debug, Clone, PartialEq)]
/// struct Progress {
///     stage: String,
///     #[scope(turn)]
///     retries: u32,
/// }
///
/// #[derive(AgentState, Debug, Clone, PartialEq)]
/// struct Session<P: State + StateField> {
///     #[reducer(merge)]
///     progress: P,
/// }
///
/// let mut s = Session::<Progress>::default();
/// s.apply(Session::delta().progress(Progress::delta().stage("closing").retries(2u32)))?;
/// s.begin_turn();
/// assert_eq!(s.field_ref::<String>("progress.stage").map(String::as_str), Some("closing"));
/// assert_eq!(s.progress.retries, 0, "turn-scoped inside: reset");
/// assert_eq!(Session::<Progress>::leaf_keys(), ["progress.stage", "progress.retries"]);
/// # Ok::<(), state_core::StateError>(())
/// ```
///
/// A `#[state(flatten)]` base is inheritance (AgentFlow's
/// `class OrderState(AgentState)`): `OrderStateDelta: From<BaseDelta>`, so
/// a node written for the base applies to the extension, and
/// `OrderState: AsRef<Base> + AsMut<Base>`. A field named like one of the
/// base's is a compile error.
///
/// ```
/// use state_core::{AgentState, State};
///
/// #[derive(AgentState, Debug, Clone, PartialEq)]
/// struct Progress {
///     #[scope(turn)]
///     stage: String,
///     exercise: Option<String>,
/// }
///
/// #[derive(AgentState, Debug, Clone, PartialEq)]
/// struct Base {
///     #[reducer(append)]
///     log: Vec<String>,
/// }
///
/// #[derive(AgentState, Debug)]
/// struct Session {
///     #[state(flatten)]
///     base: Base,
///     #[reducer(merge)]
///     progress: Progress,
/// }
///
/// let mut s = Session::default();
/// s.apply(Session::delta().progress(Progress::delta().stage("breathing").exercise("box"))).unwrap();
/// s.apply(BaseDelta::from(Base::delta().log(vec!["started".into()])).into()).unwrap();
/// assert_eq!(Session::keys(), ["log", "progress"]);
/// assert_eq!(s.get("progress.stage").unwrap(), "breathing");
/// s.begin_turn();
/// assert_eq!((s.progress.stage.as_str(), s.progress.exercise.as_deref()), ("", Some("box")));
/// ```
///
/// # Struct attributes
///
/// `#[state(crate = "path")]` when state-core is re-exported under another
/// path, `#[state(scope = turn)]` to make turn the default scope,
/// `#[state(delta = "Name")]` to rename the delta type, and
/// `#[state(json_schema)]` to implement `schemars::JsonSchema` for the state
/// and its delta (feature `schemars`; a flattened base needs it too, and
/// its properties join the extension's). `#[serde(rename_all = "camelCase")]`
/// (or any of serde's rules) renames every field's key as serde would, for
/// keys shared with a JavaScript front end; a field's own `rename` wins,
/// and two fields with one key are a compile error.
///
/// # Your own serde: `#[state(serde = "user")]`
///
/// The derive writes the state's `Serialize` and `Deserialize` unless the
/// struct says `#[state(serde = "user")]`: then you derive them (deriving
/// them without it is `E0119 conflicting implementations`), with any of
/// serde's options (`with`, `skip`, `serialize_with`, `default`, ...), and
/// the state's JSON is theirs on every path: `to_json`, `from_json`,
/// `get`/`set` (which read or rewrite the whole state's JSON to do so),
/// a state that nests it, and the stores' snapshots.
/// `#[serde(default, deny_unknown_fields)]` gives the derive's own load
/// rules: a missing field takes its default (the derive's `Default`, from
/// `#[default(...)]`), an unknown one is an error.
///
/// ```
/// use serde::{Deserialize, Serialize};
/// use state_core::{AgentState, State};
///
/// #[derive(AgentState, Serialize, Deserialize, Debug, Clone, PartialEq)]
/// #[state(serde = "user")]
/// #[serde(default, deny_unknown_fields)]
/// struct Session {
///     #[reducer(append)]
///     log: Vec<String>,
///     /// Rebuilt after a restart: never stored.
///     #[serde(skip)]
///     cache: String,
/// }
///
/// let mut s = Session::default();
/// s.apply(Session::delta().log(["hi"]).cache("warm"))?;
/// assert_eq!(s.to_json()?, serde_json::json!({"log": ["hi"]}));
/// assert!(Session::from_json(serde_json::json!({"lgo": []})).is_err());
/// # Ok::<(), state_core::StateError>(())
/// ```
///
/// What the derive still does and checks: keys (with `rename` and
/// `rename_all`, which it reads as serde does), reducers, scopes, defaults
/// and the delta, whose JSON is the field types' own (an update is not
/// shaped by the state's `#[serde(with)]`). Every field type is still a
/// [`StateField`]. A flattened base needs `#[serde(flatten)]` as well, for
/// your impls to give its keys. Errors from your impls are
/// [`StateError::UserSerde`].
///
/// # What is generated
///
/// `Default` (from the `#[default]` values: do not also derive it),
/// `Serialize`/`Deserialize` (the `to_json` shape; not with `serde =
/// "user"`), the delta type (its
/// slots are private: `get_<field>` reads what it writes), chainable
/// setters named after the fields, `overwrite_<field>` setters for reducer
/// fields, `Delta` and serde impls for it, and `impl State`. Every field
/// type must be a [`StateField`] (`Debug`, `Clone`, `PartialEq` and serde's
/// `Serialize` and `DeserializeOwned`); `field_ref` / `field_mut` exist when
/// the state is `'static`.
///
/// ```
/// use state_core::{AgentState, State};
///
/// fn keep_max(best: &mut i64, new: i64) {
///     *best = (*best).max(new);
/// }
///
/// #[derive(AgentState, Debug)]
/// struct Search {
///     #[reducer(append)]
///     queries: Vec<String>,
///     #[reducer(with = keep_max)]
///     best_score: i64,
///     #[scope(turn)]
///     #[default(3)]
///     retries_left: u32,
/// }
///
/// let mut state = Search::default();
/// state.apply_all([
///     Search::delta().queries(vec!["rust".to_string()]).best_score(7),
///     Search::delta().queries(vec!["serde".to_string()]).best_score(5),
/// ]).unwrap();
/// assert_eq!(state.queries, ["rust", "serde"]);
/// assert_eq!(state.best_score, 7);
/// state.retries_left = 0;
/// state.begin_turn();
/// assert_eq!(state.retries_left, 3);
/// ```
pub use state_derive::AgentState;
