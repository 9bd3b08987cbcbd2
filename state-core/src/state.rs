//! The two traits `#[derive(AgentState)]` implements: [`State`] for the
//! struct and [`Delta`] for its generated partial update.

use crate::dynamic::{describe, split_path};
use crate::error::StateError;
use crate::runtime::fields::Fields;
use crate::schema::Schema;
use serde_json::Value;

/// An agent's state: one struct whose fields each say how updates merge.
///
/// Implemented by `#[derive(AgentState)]`, and only by it: its hidden
/// methods give the field table the derive writes, through which `get`,
/// `set`, dotted paths and `begin_turn` reach a nested state, also one
/// held in a field of a type parameter bounded by `State`. See the crate
/// docs for the attributes. Nodes return a [`State::Delta`], and the graph
/// runtime applies it with [`apply`](State::apply) (one node) or
/// [`apply_all`](State::apply_all) (several nodes in one superstep).
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
    ///
    /// Its effect is that of [`check`](State::check) followed by
    /// [`commit`](State::commit); the derive writes a faster path for the
    /// common delta.
    ///
    /// ```
    /// use state_core::{AgentState, Messages, State};
    ///
    /// #[derive(AgentState)]
    /// struct Chat {
    ///     #[reducer(add_messages)]
    ///     messages: Messages,
    ///     #[default("start")]
    ///     next: String,
    /// }
    ///
    /// let mut chat = Chat::default();
    /// chat.apply(Chat::delta().messages(("user", "hi")).next("tools"))?;
    /// chat.apply(Chat::delta().messages(("ai", "hello")))?;
    /// assert_eq!((chat.messages.len(), chat.next.as_str()), (2, "tools"));
    /// # Ok::<(), state_core::StateError>(())
    /// ```
    fn apply(&mut self, delta: Self::Delta) -> Result<(), StateError> {
        let checked = self.check(delta)?;
        self.commit(checked);
        Ok(())
    }

    /// Phase one of [`apply`](State::apply): finds every error `delta`
    /// would meet (a reducer refusing an update, say) without changing the
    /// state, and returns the accepted delta for [`commit`](State::commit).
    ///
    /// Between the two, the caller can do what must succeed before the
    /// state changes (a store logs the step), and drop the [`Checked`] if
    /// that fails: the state was never touched, and nothing was cloned. A
    /// fallible custom reducer runs here, on a copy of its field only, and
    /// its result is kept for `commit`.
    ///
    /// ```
    /// use state_core::{AgentState, Message, Messages, State};
    ///
    /// #[derive(AgentState, Debug, PartialEq)]
    /// struct Chat {
    ///     #[reducer(add_messages)]
    ///     messages: Messages,
    ///     next: String,
    /// }
    ///
    /// let mut chat = Chat::default();
    /// let checked = chat.check(Chat::delta().messages(vec![Message::human("hi")]).next("tools"))?;
    /// // ... persist the step here; on failure, drop `checked` ...
    /// chat.commit(checked);
    /// assert_eq!((chat.messages.len(), chat.next.as_str()), (1, "tools"));
    ///
    /// // Removing an id that is not there is refused, and nothing changes.
    /// let before = chat.messages.clone();
    /// let err = chat.check(Chat::delta().messages(vec![Message::remove("nope")]).next("end"));
    /// assert!(err.is_err());
    /// assert_eq!((&chat.messages, chat.next.as_str()), (&before, "tools"));
    /// # Ok::<(), state_core::StateError>(())
    /// ```
    fn check(&self, delta: Self::Delta) -> Result<Checked<Self::Delta>, StateError>;

    /// Phase two of [`apply`](State::apply): applies what
    /// [`check`](State::check) accepted. Cannot fail.
    ///
    /// `checked` must come from `check` on this same state, unchanged since
    /// (no other `apply`, `commit`, `set` or `begin_turn` in between):
    /// `check` validated the writes against the state as it was then.
    /// Otherwise a write that no longer fits (the removal of a message that
    /// is gone) is skipped, and a fallible custom reducer's result, computed
    /// by `check`, replaces its field as it was computed.
    ///
    /// ```
    /// use state_core::{AgentState, State};
    ///
    /// fn spend(budget: &mut u32, cost: u32) -> Result<(), String> {
    ///     *budget = budget.checked_sub(cost).ok_or("over budget")?;
    ///     Ok(())
    /// }
    ///
    /// #[derive(AgentState, Debug, PartialEq)]
    /// struct Run {
    ///     #[default(10)]
    ///     #[reducer(with = spend)]
    ///     budget: u32,
    ///     #[reducer(append)]
    ///     log: Vec<String>,
    /// }
    ///
    /// let mut run = Run::default();
    /// let checked = run.check(Run::delta().budget(4).log(vec!["search".into()]))?;
    /// assert_eq!(run.budget, 10, "check changes nothing");
    /// run.commit(checked);
    /// assert_eq!((run.budget, run.log.len()), (6, 1));
    ///
    /// // Refused by the reducer: no `Checked`, the state as it was.
    /// assert!(run.check(Run::delta().budget(7).log(vec!["fetch".into()])).is_err());
    /// assert_eq!((run.budget, run.log.len()), (6, 1));
    /// # Ok::<(), state_core::StateError>(())
    /// ```
    fn commit(&mut self, checked: Checked<Self::Delta>);

    /// One superstep, all-or-nothing: the deltas of nodes that ran in
    /// parallel, in the order given (LangGraph applies them in node-name
    /// order). Each field's writes reduce one after another; two writes to a
    /// `replace` field are a [`StateError::ConcurrentWrite`].
    ///
    /// ```
    /// use state_core::{AgentState, State, StateError};
    ///
    /// #[derive(AgentState)]
    /// struct Research {
    ///     #[reducer(append)]
    ///     findings: Vec<String>,
    ///     next: String,
    /// }
    ///
    /// let mut state = Research::default();
    /// // Two workers of one superstep: their findings add up.
    /// state.apply_all([
    ///     Research::delta().findings(["from web"]),
    ///     Research::delta().findings(["from docs"]).next("write"),
    /// ])?;
    /// assert_eq!(state.findings, ["from web", "from docs"]);
    ///
    /// // Both set `next`, which has no reducer: refused, nothing changes.
    /// let err = state
    ///     .apply_all([Research::delta().next("a"), Research::delta().next("b")])
    ///     .unwrap_err();
    /// assert!(matches!(err, StateError::ConcurrentWrite { ref field } if field == "next"));
    /// assert_eq!(state.next, "write");
    /// # Ok::<(), StateError>(())
    /// ```
    fn apply_all(
        &mut self,
        deltas: impl IntoIterator<Item = Self::Delta>,
    ) -> Result<(), StateError> {
        self.apply(Self::Delta::merge_all(deltas)?)
    }

    /// Starts a new turn: every turn-scoped field goes back to its default;
    /// persistent fields are untouched.
    ///
    /// ```
    /// use state_core::{AgentState, State};
    ///
    /// #[derive(AgentState)]
    /// struct Session {
    ///     #[scope(turn)]
    ///     #[default("classify")]
    ///     next: String,
    ///     #[reducer(append)]
    ///     history: Vec<String>,
    /// }
    ///
    /// let mut session = Session::default();
    /// session.apply(Session::delta().next("answer").history(["hi"]))?;
    /// session.begin_turn();
    /// assert_eq!(session.next, "classify", "turn-scoped: back to its default");
    /// assert_eq!(session.history, ["hi"], "persistent: kept");
    /// # Ok::<(), state_core::StateError>(())
    /// ```
    fn begin_turn(&mut self);

    /// The value at `key` as JSON. Keys are field names; a dotted path
    /// (`progress.turn_count`, `diagnostics.latency`) reaches into a nested
    /// state or into a field's JSON value.
    ///
    /// ```
    /// use serde_json::json;
    /// use state_core::{AgentState, State};
    /// use std::collections::BTreeMap;
    ///
    /// #[derive(AgentState)]
    /// struct Run {
    ///     #[reducer(merge)]
    ///     diagnostics: BTreeMap<String, f64>,
    ///     next: String,
    /// }
    ///
    /// let mut run = Run::default();
    /// let latency = BTreeMap::from([("latency".to_owned(), 1.5)]);
    /// run.apply(Run::delta().next("tools").diagnostics(latency))?;
    /// assert_eq!(run.get("next")?, json!("tools"));
    /// assert_eq!(run.get("diagnostics.latency")?, json!(1.5));
    /// let err = run.get("nxt").unwrap_err();
    /// assert_eq!(err.to_string(), "`Run` has no field `nxt`; did you mean `next`?");
    /// # Ok::<(), state_core::StateError>(())
    /// ```
    fn get(&self, key: &str) -> Result<Value, StateError>;

    /// The field at `key` (a name, or a dotted path into a nested state)
    /// as `&T`, without JSON; `None` if there is no such field or it is not
    /// a `T`. The same as the inherent `field_ref` the derive writes, for
    /// generic code: a tool node reading the messages of any state.
    ///
    /// ```
    /// use state_core::{Messages, MessagesState, State};
    ///
    /// fn history<S: State + 'static>(state: &S) -> usize {
    ///     state.field_ref::<Messages>("messages").map_or(0, Messages::len)
    /// }
    /// assert_eq!(history(&MessagesState::default()), 0);
    /// ```
    fn field_ref<T: std::any::Any>(&self, key: &str) -> Option<&T>
    where
        Self: Sized + 'static,
    {
        crate::runtime::table::field_ref(self.__static_fields(), key)
    }

    /// Replaces the value at `key`, bypassing the field's reducer. The value
    /// is checked against the field's type; on error nothing changes.
    ///
    /// ```
    /// use serde_json::json;
    /// use state_core::{AgentState, State};
    ///
    /// #[derive(AgentState)]
    /// struct Run {
    ///     #[reducer(append)]
    ///     log: Vec<String>,
    ///     retries: u32,
    /// }
    ///
    /// let mut run = Run::default();
    /// run.set("log", json!(["replaced", "wholesale"]))?;
    /// run.set("retries", json!(2))?;
    /// assert_eq!((run.log.len(), run.retries), (2, 2));
    /// let err = run.set("retries", json!("two")).unwrap_err();
    /// assert_eq!(err.to_string(), r#"field "retries": expected u32, got string "two""#);
    /// assert_eq!(run.retries, 2);
    /// # Ok::<(), state_core::StateError>(())
    /// ```
    fn set(&mut self, key: &str, value: Value) -> Result<(), StateError>;

    /// Applies a JSON object `{field: update}` through the reducers, exactly
    /// as the typed delta would be (LangGraph-style updates from another
    /// service included). Everything is decoded before anything is applied,
    /// so on error the state is unchanged.
    fn apply_json(&mut self, delta: Value) -> Result<(), StateError> {
        let delta = Self::Delta::from_json(delta)?;
        self.apply(delta)
    }

    /// The whole state as a JSON object, fields in declaration order (with
    /// the default feature `preserve_order`; without it, a `serde_json`
    /// object sorts its keys, and text from `serde_json::to_string(&state)`
    /// keeps the order).
    ///
    /// A value JSON cannot hold is an error naming its field, never a
    /// silent `null`: a map whose keys are not strings or numbers, a
    /// non-finite float (`NaN`, `inf`; `serde_json` writes those as `null`,
    /// which reads back as an error or as `None`), a `Serialize` impl that
    /// fails. [`crate::json`] has the same rule for any value.
    ///
    /// ```
    /// use state_core::{AgentState, State};
    ///
    /// #[derive(AgentState, Debug)]
    /// struct Eval {
    ///     answer: String,
    ///     score: f64,
    /// }
    ///
    /// let mut eval = Eval::default();
    /// eval.answer = "42".into();
    /// assert_eq!(eval.to_json()?, serde_json::json!({"answer": "42", "score": 0.0}));
    /// # #[cfg(feature = "preserve_order")]
    /// assert_eq!(eval.to_json()?.to_string(), r#"{"answer":"42","score":0.0}"#);
    ///
    /// eval.score = f64::NAN;
    /// let err = eval.to_json().unwrap_err();
    /// assert_eq!(
    ///     err.to_string(),
    ///     r#"field "score": cannot be written as JSON: NaN has no JSON form (JSON numbers are finite)"#
    /// );
    /// # Ok::<(), state_core::StateError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`StateError::Serialize`] for the first field, in declaration order,
    /// that has no JSON form.
    fn to_json(&self) -> Result<Value, StateError>;

    /// A state from a JSON object: missing fields take their defaults;
    /// unknown fields and values of the wrong type are errors.
    ///
    /// ```
    /// use serde_json::json;
    /// use state_core::{AgentState, State};
    ///
    /// #[derive(AgentState, Debug)]
    /// struct Run {
    ///     #[default(3)]
    ///     retries: u32,
    ///     next: String,
    /// }
    ///
    /// let run = Run::from_json(json!({"next": "tools"}))?;
    /// assert_eq!((run.retries, run.next.as_str()), (3, "tools"));
    /// let err = Run::from_json(json!({"nxet": "tools"})).unwrap_err();
    /// assert_eq!(err.to_string(), "`Run` has no field `nxet`; did you mean `next`?");
    /// # Ok::<(), state_core::StateError>(())
    /// ```
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
                return Err(StateError::unknown_field(
                    Self::schema().name,
                    &key,
                    Self::keys(),
                ));
            }
            state.set(&key, value)?;
        }
        Ok(state)
    }

    /// Appends this state as JSON text to `out`: the text
    /// `serde_json::to_writer` writes of it (a non-finite float as `null`,
    /// as `serde_json` writes one; [`json::state_to_string`](crate::json::state_to_string)
    /// refuses it). `#[derive(AgentState)]` writes each field on its own
    /// type, faster than through [`Serialize`](serde::Serialize), which
    /// goes through `erased_serde`; with `#[state(serde = "user")]` it is
    /// the user's `Serialize`. What a store writes as a snapshot.
    ///
    /// ```
    /// use state_core::{AgentState, Message, Messages, State};
    ///
    /// #[derive(AgentState)]
    /// struct Chat {
    ///     #[reducer(add_messages)]
    ///     messages: Messages,
    ///     turns: u32,
    /// }
    ///
    /// let mut chat = Chat::default();
    /// chat.apply(Chat::delta().messages(vec![Message::human("hi").with_id("m1")]).turns(1u32))?;
    /// let mut text = Vec::new();
    /// chat.write_json(&mut text)?;
    /// assert_eq!(text, serde_json::to_vec(&chat)?);
    /// assert!(text.starts_with(br#"{"messages":[{"#));
    /// assert!(text.ends_with(br#""turns":1}"#));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn write_json(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error>
    where
        Self: serde::Serialize,
    {
        serde_json::to_writer(out, self)
    }

    /// The field table the derive writes, erased. A method of `State`,
    /// so that a type parameter bounded by `State` is known to have one
    /// where the derive probes a field's type for being a nested state.
    #[doc(hidden)]
    fn __fields(&self) -> &dyn Fields;

    /// [`__fields`](State::__fields), mutably.
    #[doc(hidden)]
    fn __fields_mut(&mut self) -> &mut dyn Fields;

    /// [`__fields`](State::__fields) of a `'static` state, for `field_ref`.
    #[doc(hidden)]
    fn __static_fields(&self) -> &(dyn Fields + 'static)
    where
        Self: 'static;

    /// [`__static_fields`](State::__static_fields), mutably.
    #[doc(hidden)]
    fn __static_fields_mut(&mut self) -> &mut (dyn Fields + 'static)
    where
        Self: 'static;

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

/// A delta that [`State::check`] accepted, to be applied by
/// [`State::commit`] (which cannot fail) on the same, unchanged state.
///
/// Only `check` makes one. The delta inside may differ from the one that
/// was checked: a fallible custom reducer's result is already computed and
/// held as an overwrite of its field.
#[derive(Debug)]
#[must_use = "a checked delta does nothing until it is committed"]
pub struct Checked<D>(D);

impl<D> Checked<D> {
    /// Wraps a delta that was checked; for generated code, through
    /// `__private::checked`.
    pub(crate) fn new(delta: D) -> Self {
        Checked(delta)
    }

    /// The accepted delta (fallible custom reducers' writes already
    /// computed, as overwrites).
    pub fn into_inner(self) -> D {
        self.0
    }
}

/// A partial update of a [`State`]: what one node writes.
pub trait Delta: Default {
    /// True when the delta writes nothing.
    fn is_empty(&self) -> bool;

    /// The names of the fields this delta writes, in declaration order
    /// (a flattened base's where the base is declared).
    ///
    /// ```
    /// use state_core::{AgentState, Delta, State};
    ///
    /// #[derive(AgentState)]
    /// struct Route {
    ///     next: String,
    ///     hops: u32,
    /// }
    ///
    /// let delta = Route::delta().hops(2u32);
    /// assert_eq!(delta.fields(), ["hops"]);
    /// assert_eq!(delta.fields().next(), Some("hops"));
    /// ```
    fn fields(&self) -> FieldNames;

    /// Combines two deltas written in the same step (as by parallel
    /// branches) into one with the effect of `apply_all([self, other])`.
    /// Two writes to a `replace` field are a [`StateError::ConcurrentWrite`];
    /// two overwrites of one field are a [`StateError::ConcurrentOverwrite`].
    ///
    /// ```
    /// use state_core::{AgentState, Delta, State};
    ///
    /// #[derive(AgentState)]
    /// struct Research {
    ///     #[reducer(append)]
    ///     findings: Vec<String>,
    ///     next: String,
    /// }
    ///
    /// let a = Research::delta().findings(["web"]).next("write");
    /// let b = Research::delta().findings(["docs"]);
    /// let merged = a.merge(b)?;
    /// assert_eq!(merged.fields(), ["findings", "next"]);
    /// let mut state = Research::default();
    /// state.apply(merged)?;
    /// assert_eq!(state.findings, ["web", "docs"]);
    /// # Ok::<(), state_core::StateError>(())
    /// ```
    fn merge(self, other: Self) -> Result<Self, StateError> {
        self.merge_with(other, crate::__private::MergeMode::Concurrent)
    }

    /// The writes of one superstep combined, in order, as
    /// [`merge`](Delta::merge) combines two: what
    /// [`State::apply_all`] applies. A lone delta is returned as it is
    /// (merging it into an empty one would only move it); none gives the
    /// empty delta.
    ///
    /// ```
    /// use state_core::{AgentState, Delta, State, StateError};
    ///
    /// #[derive(AgentState)]
    /// struct Research {
    ///     #[reducer(append)]
    ///     findings: Vec<String>,
    ///     next: String,
    /// }
    ///
    /// let step = [
    ///     Research::delta().findings(["web"]).next("write"),
    ///     Research::delta().findings(["docs"]),
    /// ];
    /// let merged = ResearchDelta::merge_all(step)?;
    /// assert_eq!(merged.fields(), ["findings", "next"]);
    /// let mut state = Research::default();
    /// state.apply(merged)?;
    /// assert_eq!(state.findings, ["web", "docs"]);
    /// assert!(ResearchDelta::merge_all([]).is_ok_and(|d| d.is_empty()));
    ///
    /// let clash = [Research::delta().next("a"), Research::delta().next("b")];
    /// assert!(matches!(ResearchDelta::merge_all(clash), Err(StateError::ConcurrentWrite { .. })));
    /// # Ok::<(), StateError>(())
    /// ```
    fn merge_all(deltas: impl IntoIterator<Item = Self>) -> Result<Self, StateError> {
        let mut deltas = deltas.into_iter();
        let Some(first) = deltas.next() else {
            return Ok(Self::default());
        };
        deltas.try_fold(first, Delta::merge)
    }

    /// Combines two deltas written one after the other into one with the
    /// effect of applying `self`, then `later`: a later write to a
    /// `replace` field wins, a later overwrite replaces what came before,
    /// and later plain writes reduce into an earlier overwrite. Never a
    /// concurrent-write error; a reducer refusing a write into an earlier
    /// overwrite is the error applying would give.
    ///
    /// What a subgraph's steps become in its parent's superstep.
    ///
    /// ```
    /// use state_core::{AgentState, Delta, State};
    ///
    /// #[derive(AgentState)]
    /// struct Research {
    ///     #[reducer(append)]
    ///     findings: Vec<String>,
    ///     next: String,
    /// }
    ///
    /// let first = Research::delta().findings(["web"]).next("read");
    /// let second = Research::delta().findings(["docs"]).next("write");
    /// let both = first.then(second)?;
    /// let mut state = Research::default();
    /// state.apply(both)?;
    /// assert_eq!((state.findings.len(), state.next.as_str()), (2, "write"));
    /// # Ok::<(), state_core::StateError>(())
    /// ```
    fn then(self, later: Self) -> Result<Self, StateError> {
        self.merge_with(later, crate::__private::MergeMode::Sequential)
    }

    /// [`merge`](Delta::merge) or [`then`](Delta::then), as `mode` says:
    /// what `#[derive(AgentState)]` writes.
    #[doc(hidden)]
    fn merge_with(self, other: Self, mode: crate::__private::MergeMode)
    -> Result<Self, StateError>;

    /// A delta from a JSON object `{field: update}`. Unknown keys are an
    /// error with a did-you-mean; a value of the wrong type names the field.
    ///
    /// A reducer field also accepts two markers, each an object with one
    /// key:
    /// - `{"__overwrite__": value}` replaces the field wholesale (LangGraph's
    ///   `Overwrite`; its `{"type": "__overwrite__", "value": value}` too);
    /// - `{"__writes__": [update, ...]}` holds several writes of one step, in
    ///   order: what a merged delta keeps when the field's reducer cannot
    ///   fold its writes into one. A delta serializes this way, so
    ///   `from_json(to_json(d)) == d` for every delta. The list must not be
    ///   empty.
    ///
    /// Every update read is [prepared](crate::Reducer::prepare) by its
    /// reducer (a message without an id gets one), so the decoded delta
    /// holds exactly what applying it will use.
    ///
    /// ```
    /// use serde_json::json;
    /// use state_core::{AgentState, Delta, State};
    ///
    /// fn concat(text: &mut String, more: String) {
    ///     text.push_str(&more);
    /// }
    ///
    /// #[derive(AgentState, Debug)]
    /// struct Doc {
    ///     #[reducer(with = concat)]
    ///     text: String,
    /// }
    ///
    /// // Two parallel writes that `concat` cannot fold into one.
    /// let merged = Doc::delta().text("a").merge(Doc::delta().text("b"))?;
    /// let json = serde_json::to_value(&merged).unwrap();
    /// assert_eq!(json, json!({"text": {"__writes__": ["a", "b"]}}));
    /// assert_eq!(DocDelta::from_json(json)?, merged);
    /// # Ok::<(), state_core::StateError>(())
    /// ```
    fn from_json(value: Value) -> Result<Self, StateError>;

    /// Appends this delta as JSON text to `out`: the text
    /// `serde_json::to_writer` writes of it (a non-finite float as `null`,
    /// as `serde_json` writes one; [`json::to_string`](crate::json::to_string)
    /// refuses it). `#[derive(AgentState)]` writes each field's update on
    /// its own type, faster than through [`Serialize`](serde::Serialize),
    /// which goes through `erased_serde`; what a store logs.
    ///
    /// ```
    /// use state_core::{AgentState, Delta, State};
    ///
    /// #[derive(AgentState)]
    /// struct Route {
    ///     next: String,
    ///     hops: u32,
    /// }
    ///
    /// let delta = Route::delta().hops(2u32);
    /// let mut text = Vec::new();
    /// delta.write_json(&mut text).unwrap();
    /// assert_eq!(text, serde_json::to_vec(&delta).unwrap());
    /// assert_eq!(text, br#"{"hops":2}"#);
    /// ```
    fn write_json(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error>
    where
        Self: serde::Serialize,
    {
        serde_json::to_writer(out, self)
    }
}

/// The names of the fields a delta writes, in declaration order: an
/// iterator that also reads as the slice of the names not yet iterated
/// (`len`, `contains`, `join`, indexing) and compares equal to a list of
/// names, either way round.
///
/// ```
/// use state_core::{AgentState, Delta, State};
///
/// #[derive(AgentState)]
/// struct Route {
///     next: String,
///     hops: u32,
/// }
///
/// let delta = Route::delta().next("tools").hops(2u32);
/// let fields = delta.fields();
/// assert_eq!(fields, ["next", "hops"]);
/// assert_eq!(vec!["next", "hops"], fields);
/// assert!(fields.contains(&"hops"));
/// assert_eq!(fields.join(", "), "next, hops");
/// assert_eq!(format!("{fields:?}"), r#"["next", "hops"]"#);
/// assert_eq!(fields.map(str::len).sum::<usize>(), 8);
/// ```
#[derive(Clone, Default)]
pub struct FieldNames {
    names: std::vec::IntoIter<&'static str>,
}

/// Shows the names not yet iterated as a list: `["next", "hops"]`.
impl std::fmt::Debug for FieldNames {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

impl FieldNames {
    /// The names, in order.
    pub(crate) fn new(names: Vec<&'static str>) -> Self {
        FieldNames {
            names: names.into_iter(),
        }
    }

    /// The names not yet iterated, as a slice.
    pub fn as_slice(&self) -> &[&'static str] {
        self.names.as_slice()
    }

    /// True when there are no (more) names: the delta writes nothing.
    pub fn is_empty(&self) -> bool {
        self.names.len() == 0
    }
}

impl Iterator for FieldNames {
    type Item = &'static str;

    fn next(&mut self) -> Option<&'static str> {
        self.names.next()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.names.size_hint()
    }
}

impl DoubleEndedIterator for FieldNames {
    fn next_back(&mut self) -> Option<&'static str> {
        self.names.next_back()
    }
}

impl ExactSizeIterator for FieldNames {}

impl std::iter::FusedIterator for FieldNames {}

impl PartialEq for FieldNames {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for FieldNames {}

impl<S: AsRef<str>> PartialEq<[S]> for FieldNames {
    fn eq(&self, other: &[S]) -> bool {
        self.as_slice().len() == other.len()
            && self
                .as_slice()
                .iter()
                .zip(other)
                .all(|(a, b)| *a == b.as_ref())
    }
}

impl<S: AsRef<str>, const N: usize> PartialEq<[S; N]> for FieldNames {
    fn eq(&self, other: &[S; N]) -> bool {
        *self == other[..]
    }
}

impl<S: AsRef<str>> PartialEq<&[S]> for FieldNames {
    fn eq(&self, other: &&[S]) -> bool {
        *self == **other
    }
}

impl<S: AsRef<str>> PartialEq<Vec<S>> for FieldNames {
    fn eq(&self, other: &Vec<S>) -> bool {
        *self == other[..]
    }
}

impl std::ops::Deref for FieldNames {
    type Target = [&'static str];

    fn deref(&self) -> &[&'static str] {
        self.as_slice()
    }
}

impl PartialEq<FieldNames> for [&str] {
    fn eq(&self, other: &FieldNames) -> bool {
        *other == *self
    }
}

impl<const N: usize> PartialEq<FieldNames> for [&str; N] {
    fn eq(&self, other: &FieldNames) -> bool {
        *other == *self
    }
}

impl PartialEq<FieldNames> for &[&str] {
    fn eq(&self, other: &FieldNames) -> bool {
        *other == **self
    }
}

impl PartialEq<FieldNames> for Vec<&str> {
    fn eq(&self, other: &FieldNames) -> bool {
        *other == *self
    }
}
