//! Steps: what one write to a thread did, as it is logged (JSON text) and
//! replayed (through the state's own reducers).

use crate::backend::StepRow;
use crate::error::StoreError;
use crate::migrations::Migrations;
use crate::object_text::{DeltasText, ObjectText};
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
    /// A node that ran a subgraph of the thread's state type
    /// ([`Thread::adopt_steps`](crate::Thread::adopt_steps)) writes, in
    /// place of its delta, its supersteps' deltas: an array of arrays
    /// (`[[{..}], [{..}, {..}]]`), each superstep's deltas merged and the
    /// supersteps composed in order (`Delta::then`) into its write.
    Superstep,
    /// A turn reset ([`Thread::begin_turn`](crate::Thread::begin_turn)).
    /// Body: `null`; or, for a turn begun with its input
    /// ([`Thread::start_turn`](crate::Thread::start_turn)), the input's
    /// delta, applied after the reset.
    BeginTurn,
    /// A value written at a key, bypassing the reducer
    /// ([`Thread::set`](crate::Thread::set)). Body: `{"key": .., "value": ..}`.
    Set,
    /// A step that changes no state: what a graph runner records when a
    /// superstep pauses (an interrupt) or fails
    /// ([`Thread::log_pending`](crate::Thread::log_pending)). Body: a JSON
    /// object chosen by the runner (the finished nodes' deltas, the pending
    /// interrupts, resume answers), opaque to the store.
    Pending,
    /// A step of a subgraph run inside one of the thread's supersteps
    /// ([`Thread::log_subgraph`](crate::Thread::log_subgraph)): the child
    /// graph's own superstep, logged so that a crash inside it goes on from
    /// there. Changes no state of the thread (the child's state is its
    /// own; the superstep that ran it applies what it wrote). Body: a JSON
    /// object chosen by the runner, opaque to the store.
    Subgraph,
    /// The thread back at its state after an earlier step, as a new step
    /// ([`Thread::branch`](crate::Thread::branch)): a branch of its history
    /// from there (LangGraph's run from a past checkpoint); the steps
    /// between stay in the log. Body: `{"from": <seq>, "state": <the whole
    /// state>}`, which replaces the state when replayed.
    Branch,
}

impl StepKind {
    /// The name stored in the log.
    pub fn as_str(self) -> &'static str {
        match self {
            StepKind::Apply => "apply",
            StepKind::Superstep => "superstep",
            StepKind::BeginTurn => "begin_turn",
            StepKind::Set => "set",
            StepKind::Pending => "pending",
            StepKind::Subgraph => "subgraph",
            StepKind::Branch => "branch",
        }
    }

    pub(crate) fn parse(name: &str) -> Option<StepKind> {
        [
            StepKind::Apply,
            StepKind::Superstep,
            StepKind::BeginTurn,
            StepKind::Set,
            StepKind::Pending,
            StepKind::Subgraph,
            StepKind::Branch,
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
    /// The node names in its metadata's `"nodes"` ([`Thread::apply_nodes`],
    /// a graph run's supersteps, its input as `"__start__"`, a paused
    /// superstep's tasks), in order; empty when there are none.
    ///
    /// [`Thread::apply_nodes`]: crate::Thread::apply_nodes
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// # use state_core::{AgentState, State};
    /// # #[derive(AgentState, Debug)]
    /// # struct S { #[reducer(append)] log: Vec<String> }
    /// let store = state_store::Store::memory();
    /// let mut t = store.thread::<S>("t").await?;
    /// t.apply_nodes([("a", S::delta()), ("b", S::delta())]).await?;
    /// t.begin_turn().await?;
    /// let history = store.history("t", ..).await?;
    /// assert_eq!(history[0].nodes(), ["a", "b"]);
    /// assert!(history[1].nodes().is_empty());
    /// # Ok(())
    /// # }
    /// ```
    pub fn nodes(&self) -> Vec<&str> {
        match self.metadata.get("nodes") {
            Some(Value::Array(nodes)) => nodes.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        }
    }

    /// For a [`StepKind::Branch`], the step whose state it brought back
    /// (the branch's parent in the thread's history); `None` for any other
    /// step.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// # use state_core::{AgentState, State};
    /// # #[derive(AgentState, Debug)]
    /// # struct S { #[reducer(append)] log: Vec<String> }
    /// let store = state_store::Store::memory();
    /// let mut t = store.thread::<S>("t").await?;
    /// t.apply(S::delta().log(vec!["a".into()])).await?;
    /// t.apply(S::delta().log(vec!["b".into()])).await?;
    /// t.branch(1).await?;
    /// let history = store.history("t", ..).await?;
    /// assert_eq!(history[2].branched_from(), Some(1));
    /// assert_eq!(history[1].branched_from(), None);
    /// # Ok(())
    /// # }
    /// ```
    pub fn branched_from(&self) -> Option<u64> {
        match self.kind {
            StepKind::Branch => self.body.get("from").and_then(Value::as_u64),
            _ => None,
        }
    }

    /// Applies this step, logged in thread `thread` (named in errors), to
    /// `state`, the state right before it, as loading the thread does: the
    /// same replay through the reducers, with the stored data migrated to
    /// the current schema of `S` (a step written by a newer version of `S`
    /// is refused, as loading refuses it). A pending step changes nothing.
    ///
    /// All or nothing, with one exception: on error `state` is unchanged,
    /// except when a turn begun with input ([`StepKind::BeginTurn`] with a
    /// body) has input the reducers refuse: the turn-scoped fields are
    /// then already reset (undoing that would need `S: Clone`). A
    /// committed step is never refused so, since its input was checked on
    /// the reset state before it was logged; only a damaged row or a
    /// reducer changed since can be. After any error, rebuild the state
    /// ([`state_at`](crate::Store::state_at)), as this crate's callers do.
    ///
    /// Replaying a thread's
    /// [`history`](crate::Store::history) in order from `S::default()`
    /// (or from [`state_at`](crate::Store::state_at) the step before)
    /// reaches the state after each step without loading the thread again,
    /// which is how a follower of [`watch`](crate::Store::watch) keeps a
    /// thread's state current.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// # use state_core::{AgentState, State};
    /// # #[derive(AgentState, Debug, PartialEq)]
    /// # struct S { #[reducer(append)] log: Vec<String>, next: String }
    /// let store = state_store::Store::memory();
    /// let mut t = store.thread::<S>("t").await?;
    /// t.apply(S::delta().log(vec!["a".into()]).next("x")).await?;
    /// t.apply_nodes([("x", S::delta().log(vec!["b".into()])), ("y", S::delta().next("z"))])
    ///     .await?;
    ///
    /// let mut state = S::default();
    /// for step in store.history("t", ..).await? {
    ///     step.replay_onto("t", &mut state)?;
    /// }
    /// assert_eq!(&state, t.state());
    /// assert_eq!((state.log.len(), state.next.as_str()), (2, "z"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn replay_onto<S: State>(&self, thread: &str, state: &mut S) -> Result<(), StoreError> {
        let migrations = Migrations::of::<S>();
        let migrate = migrations.for_step::<S>(thread, self.seq, i64::from(self.state_version))?;
        replay_value(
            thread,
            self.seq,
            self.kind,
            self.body.clone(),
            state,
            migrate,
        )
    }

    /// What this step wrote, decoded as `S`'s deltas (each brought up to
    /// the current schema, as [`replay_onto`](StepRecord::replay_onto)
    /// does): a superstep's, one per node in the order of
    /// [`nodes`](StepRecord::nodes), a node that ran a subgraph logged as
    /// its supersteps giving their composition (see
    /// [`StepKind::Superstep`]); an apply's, its one delta; none for
    /// another kind.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use state_core::{AgentState, Delta, State};
    /// use state_store::DeltasText;
    /// use std::sync::Arc;
    ///
    /// #[derive(AgentState, Debug, Clone, PartialEq)]
    /// struct S {
    ///     #[reducer(append)]
    ///     log: Vec<String>,
    /// }
    ///
    /// let store = state_store::Store::memory();
    /// let mut t = store.thread::<S>("t").await?;
    /// let write = |w: &str| S::delta().log(vec![w.to_string()]);
    /// let steps = vec![DeltasText::write([&write("a")])?, DeltasText::write([&write("b")])?];
    /// let mut made = t.state().clone();
    /// made.apply(write("a").then(write("b"))?)?;
    /// t.adopt_steps("crew", steps, Arc::new(made)).await?;
    ///
    /// let step = &store.history("t", ..).await?[0];
    /// assert_eq!(step.nodes(), ["crew"]);
    /// let mut deltas = step.deltas::<S>("t")?;
    /// let mut state = S::default();
    /// state.apply(deltas.remove(0))?;
    /// assert_eq!(state.log, ["a", "b"]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn deltas<S: State>(&self, thread: &str) -> Result<Vec<S::Delta>, StoreError> {
        let corrupt = |detail: String| StoreError::corrupt(thread, "step", self.seq, detail);
        let migrations = Migrations::of::<S>();
        let migrate = migrations.for_step::<S>(thread, self.seq, i64::from(self.state_version))?;
        let migrated = migrating(thread, self.seq, migrate);
        match self.kind {
            StepKind::Superstep => superstep_deltas(self.body.clone(), &migrated, &corrupt),
            StepKind::Apply => {
                let delta = S::Delta::from_json(migrated(self.body.clone())?)
                    .map_err(|e| corrupt(e.to_string()))?;
                Ok(vec![delta])
            }
            _ => Ok(Vec::new()),
        }
    }

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
            body: deltas_text(thread, "superstep", deltas)?,
        })
    }

    /// A superstep of one node whose write is a sequence of supersteps
    /// (see [`StepKind::Superstep`]): `[[step, step, ..]]`.
    pub fn sequence(steps: &[DeltasText]) -> Encoded {
        let length: usize = steps.iter().map(|s| s.as_str().len() + 1).sum();
        let mut body = String::with_capacity(length + 4);
        body.push_str("[[");
        for (i, step) in steps.iter().enumerate() {
            if i > 0 {
                body.push(',');
            }
            body.push_str(step.as_str());
        }
        body.push_str("]]");
        Encoded {
            kind: StepKind::Superstep,
            body,
        }
    }

    pub fn begin_turn() -> Encoded {
        Encoded {
            kind: StepKind::BeginTurn,
            body: "null".to_owned(),
        }
    }

    pub fn start_turn<S: State>(thread: &str, input: &S::Delta) -> Result<Encoded, StoreError>
    where
        S::Delta: Serialize,
    {
        Ok(Encoded {
            kind: StepKind::BeginTurn,
            body: to_text(thread, "delta", input)?,
        })
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

    /// A pending step: its body must be a JSON object.
    pub fn pending(thread: &str, body: &Value) -> Result<Encoded, StoreError> {
        if !body.is_object() {
            return Err(StoreError::PendingBody {
                thread: thread.to_owned(),
                got: describe(body),
            });
        }
        Ok(Encoded {
            kind: StepKind::Pending,
            body: to_text(thread, "pending step", body)?,
        })
    }

    /// A branch back to the state after step `from`, which is `state`.
    pub fn branch<S: Serialize>(thread: &str, from: u64, state: &S) -> Result<Encoded, StoreError> {
        #[derive(Serialize)]
        struct BranchBody<'a, S> {
            from: u64,
            state: &'a S,
        }
        Ok(Encoded {
            kind: StepKind::Branch,
            body: to_text(thread, "state", &BranchBody { from, state })?,
        })
    }

    /// A subgraph's step: its body must be a JSON object.
    pub fn subgraph(thread: &str, body: &Value) -> Result<Encoded, StoreError> {
        if !body.is_object() {
            return Err(StoreError::PendingBody {
                thread: thread.to_owned(),
                got: describe(body),
            });
        }
        Ok(Encoded {
            kind: StepKind::Subgraph,
            body: to_text(thread, "subgraph step", body)?,
        })
    }
}

impl Encoded {
    /// A subgraph's step written as an [`ObjectText`]: an object by
    /// construction, nothing to check.
    pub fn subgraph_object(body: ObjectText) -> Encoded {
        Encoded {
            kind: StepKind::Subgraph,
            body: body.into_string(),
        }
    }

    /// A subgraph's step already written as JSON text: it must be an
    /// object, checked by reading it through (no `Value` built).
    pub fn subgraph_text(thread: &str, body: String) -> Result<Encoded, StoreError> {
        let got = match body.trim_start().as_bytes().first() {
            Some(b'{') => match serde_json::from_str::<serde::de::IgnoredAny>(&body) {
                Ok(_) => None,
                Err(_) => Some("not JSON"),
            },
            Some(b'[') => Some("an array"),
            Some(b'"') => Some("a string"),
            Some(b'n') => Some("null"),
            Some(b't' | b'f') => Some("a boolean"),
            Some(_) => Some("a number, or not JSON"),
            None => Some("nothing"),
        };
        if let Some(got) = got {
            return Err(StoreError::PendingBody {
                thread: thread.to_owned(),
                got,
            });
        }
        Ok(Encoded {
            kind: StepKind::Subgraph,
            body,
        })
    }
}

/// `deltas` as the JSON array [`to_text`] writes of them, written by
/// [`DeltasText::write`] (each by [`Delta::write_json`], on its fields' own
/// types, not through `erased_serde`). A delta that cannot be written goes
/// through [`to_text`], which names what is wrong.
fn deltas_text<D: Delta + Serialize>(
    thread: &str,
    what: &'static str,
    deltas: &[D],
) -> Result<String, StoreError> {
    match DeltasText::write(deltas) {
        Ok(text) => Ok(text.into_string()),
        Err(_) => to_text(thread, what, deltas),
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

/// Replays one logged step, as stored (its text), onto `state`: decodes
/// it, then [`replay_value`]. `migrate` brings a stored field map up to the
/// current schema (the caller has checked the row's version). On error the
/// state is unchanged.
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
    replay_value(thread, row.seq, kind, body, state, migrate)
}

/// Replays one decoded step (step `seq` of `thread`, its `kind` and JSON
/// `body`) onto `state` through its reducers, each stored field map first
/// brought up to the current schema by `migrate`: the one implementation
/// behind loading a thread and [`StepRecord::replay_onto`]. On error the
/// state is unchanged (every entry point used is all-or-nothing).
fn replay_value<S: State>(
    thread: &str,
    seq: u64,
    kind: StepKind,
    body: Value,
    state: &mut S,
    migrate: impl Fn(&mut Value) -> Result<(), String>,
) -> Result<(), StoreError> {
    let corrupt = |detail: String| StoreError::corrupt(thread, "step", seq, detail);
    let refused = |e: StateError| corrupt(e.to_string());
    let migrated = migrating(thread, seq, migrate);
    match kind {
        StepKind::Apply => {
            let delta = S::Delta::from_json(migrated(body)?).map_err(refused)?;
            state.apply(delta).map_err(refused)
        }
        StepKind::Superstep => {
            let deltas = superstep_deltas::<S::Delta>(body, &migrated, &corrupt)?;
            state.apply_all(deltas).map_err(refused)
        }
        StepKind::BeginTurn => {
            // The input is decoded before the reset; if it is refused
            // after it, the replay fails and its state is thrown away.
            let input = match body {
                Value::Null => None,
                delta => Some(S::Delta::from_json(migrated(delta)?).map_err(refused)?),
            };
            state.begin_turn();
            match input {
                Some(delta) => state.apply(delta).map_err(refused),
                None => Ok(()),
            }
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
        StepKind::Branch => {
            let Some(whole) = branch_state(body) else {
                return Err(corrupt(
                    "a branch's body must be {\"from\": <step>, \"state\": {..}}".into(),
                ));
            };
            *state = S::from_json(migrated(whole)?).map_err(refused)?;
            Ok(())
        }
        // Opaque to the store: nothing to migrate, nothing to apply.
        StepKind::Pending | StepKind::Subgraph => match body {
            Value::Object(_) => Ok(()),
            other => Err(corrupt(format!(
                "a {kind} step's body must be a JSON object, got {}",
                describe(&other)
            ))),
        },
    }
}

/// `migrate` as a step's decoding calls it: a stored field map brought up
/// to the current schema, or an error naming the step.
fn migrating(
    thread: &str,
    seq: u64,
    migrate: impl Fn(&mut Value) -> Result<(), String>,
) -> impl Fn(Value) -> Result<Value, StoreError> {
    move |mut data: Value| {
        migrate(&mut data).map_err(|message| StoreError::Migration {
            thread: thread.to_owned(),
            what: "step",
            seq,
            message,
        })?;
        Ok(data)
    }
}

/// A superstep's body decoded: a delta per node, in order (see
/// [`StepKind::Superstep`]).
fn superstep_deltas<D: Delta>(
    body: Value,
    migrated: &impl Fn(Value) -> Result<Value, StoreError>,
    corrupt: &impl Fn(String) -> StoreError,
) -> Result<Vec<D>, StoreError> {
    let refused = |e: StateError| corrupt(e.to_string());
    let Value::Array(items) = body else {
        return Err(corrupt("a superstep's body must be a JSON array".into()));
    };
    let mut deltas = Vec::with_capacity(items.len());
    for item in items {
        deltas.push(match item {
            Value::Array(steps) => sequence::<D>(steps, migrated, corrupt)?,
            item => D::from_json(migrated(item)?).map_err(refused)?,
        });
    }
    Ok(deltas)
}

/// One node's write given as the supersteps of the subgraph it ran (see
/// [`StepKind::Superstep`]): each superstep's deltas merged, the
/// supersteps composed in order.
fn sequence<D: Delta>(
    steps: Vec<Value>,
    migrated: &impl Fn(Value) -> Result<Value, StoreError>,
    corrupt: &impl Fn(String) -> StoreError,
) -> Result<D, StoreError> {
    let refused = |e: StateError| corrupt(e.to_string());
    let mut written = D::default();
    for (i, step) in steps.into_iter().enumerate() {
        let Value::Array(deltas) = step else {
            return Err(corrupt(format!(
                "superstep {i} of a subgraph's write must be a JSON array of deltas, got {}",
                describe(&step)
            )));
        };
        let mut merged = D::default();
        for delta in deltas {
            let delta = D::from_json(migrated(delta)?).map_err(refused)?;
            merged = merged.merge(delta).map_err(refused)?;
        }
        written = written.then(merged).map_err(refused)?;
    }
    Ok(written)
}

/// The state a branch's body holds, if it is one.
fn branch_state(body: Value) -> Option<Value> {
    let Value::Object(mut object) = body else {
        return None;
    };
    object.get("from").and_then(Value::as_u64)?;
    match object.remove("state")? {
        state @ Value::Object(_) => Some(state),
        _ => None,
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

/// A step's metadata as its caller gave it: a map, or an object already
/// written as text ([`ObjectText`], stored as it is).
pub(crate) enum Metadata {
    Map(Map<String, Value>),
    Text(ObjectText),
}

impl Metadata {
    pub fn none() -> Metadata {
        Metadata::Map(Map::new())
    }

    /// Adds the node names of a superstep under `"nodes"`.
    pub fn nodes(&mut self, names: Vec<String>) {
        match self {
            Metadata::Map(map) => {
                let names = names.into_iter().map(Value::String).collect();
                map.insert("nodes".to_owned(), Value::Array(names));
            }
            Metadata::Text(text) => {
                text.strings_field("nodes", &names);
            }
        }
    }

    /// As stored: a JSON object's text.
    pub fn into_text(self) -> String {
        match self {
            // A map of JSON values always serializes.
            Metadata::Map(map) => serde_json::to_string(&map).unwrap_or_else(|_| "{}".to_owned()),
            Metadata::Text(text) => text.into_string(),
        }
    }
}

impl fmt::Debug for Metadata {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Metadata::Map(map) => map.fmt(f),
            Metadata::Text(text) => text.fmt(f),
        }
    }
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
            StepKind::Pending,
        ] {
            assert_eq!(StepKind::parse(kind.as_str()), Some(kind));
        }
        assert_eq!(StepKind::parse("Apply"), None);
    }

    #[test]
    fn a_pending_body_must_be_an_object() {
        let encoded = Encoded::pending("t", &serde_json::json!({"interrupts": []})).unwrap();
        assert_eq!(encoded.kind, StepKind::Pending);
        assert_eq!(encoded.body, r#"{"interrupts":[]}"#);
        let err = Encoded::pending("t", &serde_json::json!("x"))
            .err()
            .unwrap();
        assert_eq!(
            err.to_string(),
            "thread \"t\": a pending step's body must be a JSON object, got a string"
        );
        let err = Encoded::pending("t", &Value::Null).err().unwrap();
        assert!(matches!(err, StoreError::PendingBody { got: "null", .. }));
    }

    #[test]
    fn replaying_a_pending_step_changes_nothing() {
        use state_core::AgentState;

        #[derive(AgentState, Debug, Clone, PartialEq)]
        struct S {
            #[reducer(append)]
            log: Vec<String>,
        }

        let row = |body: &str| StepRow {
            seq: 2,
            kind: "pending".to_owned(),
            body: body.to_owned(),
            metadata: "{}".to_owned(),
            state_version: 0,
            recorded_at: 0,
        };
        let mut state = S {
            log: vec!["one".to_owned()],
        };
        let before = state.clone();
        let body = r#"{"writes": {"agent": {"log": ["two"]}}, "interrupts": []}"#;
        replay("t", &mut state, &row(body), |_| Err("not called".into())).unwrap();
        assert_eq!(state, before);

        for (body, got) in [("[1]", "an array"), ("null", "null"), ("\"x\"", "a string")] {
            let err = replay("t", &mut state, &row(body), |_| Ok(())).unwrap_err();
            assert!(matches!(err, StoreError::Corrupt { seq: 2, .. }), "{err}");
            assert_eq!(
                err.to_string(),
                format!(
                    "thread \"t\", step 2: stored data is corrupt: a pending step's body must be a JSON object, got {got}"
                )
            );
            assert_eq!(state, before);
        }

        let record = StepRecord::from_row("t", row(body)).unwrap();
        assert_eq!(record.kind, StepKind::Pending);
        assert_eq!(record.body["interrupts"], serde_json::json!([]));
    }

    #[test]
    fn a_subgraphs_supersteps_replay_as_their_composition() {
        use state_core::AgentState;

        #[derive(AgentState, Debug, Clone, PartialEq)]
        struct S {
            #[reducer(append)]
            log: Vec<String>,
            last: String,
            other: u32,
        }

        let row = |body: &str| StepRow {
            seq: 3,
            kind: "superstep".to_owned(),
            body: body.to_owned(),
            metadata: "{}".to_owned(),
            state_version: 0,
            recorded_at: 0,
        };
        let write = |name: &str| S::delta().log(vec![name.to_owned()]).last(name.to_owned());
        // Two supersteps of a subgraph, the second of two nodes (merged):
        // `last` written in both is not a conflict, the later one wins.
        let steps = [
            DeltasText::write([&write("a")]).unwrap(),
            DeltasText::write([&write("b"), &S::delta().other(7u32)]).unwrap(),
        ];
        let encoded = Encoded::sequence(&steps);
        assert_eq!(encoded.kind, StepKind::Superstep);
        assert_eq!(
            encoded.body,
            r#"[[[{"log":["a"],"last":"a"}],[{"log":["b"],"last":"b"},{"other":7}]]]"#
        );
        let mut state = S {
            log: vec!["in".to_owned()],
            last: String::new(),
            other: 0,
        };
        let mut expected = state.clone();
        for delta in [
            write("a"),
            write("b").merge(S::delta().other(7u32)).unwrap(),
        ] {
            expected.apply(delta).unwrap();
        }
        replay("t", &mut state, &row(&encoded.body), |_| Ok(())).unwrap();
        assert_eq!(state, expected);
        assert_eq!(state.log, ["in", "a", "b"]);
        // Decoded as the node's one write; an apply's is its delta, a
        // turn's start none.
        let record = StepRecord::from_row("t", row(&encoded.body)).unwrap();
        let mut decoded = S::default();
        decoded.apply_all(record.deltas::<S>("t").unwrap()).unwrap();
        assert_eq!(
            (decoded.log, decoded.last, decoded.other),
            (vec!["a".to_owned(), "b".to_owned()], "b".to_owned(), 7)
        );
        let mut apply = row(r#"{"other":3}"#);
        apply.kind = "apply".to_owned();
        let record = StepRecord::from_row("t", apply).unwrap();
        assert_eq!(record.deltas::<S>("t").unwrap().len(), 1);
        let mut begin = row("null");
        begin.kind = "begin_turn".to_owned();
        let record = StepRecord::from_row("t", begin).unwrap();
        assert!(record.deltas::<S>("t").unwrap().is_empty());
        assert_eq!(Encoded::sequence(&[]).body, "[[]]");

        // A superstep of the subgraph that is not an array of deltas, or
        // two of its nodes writing one plain field: corrupt, state as it
        // was.
        let before = state.clone();
        for (body, says) in [
            (
                r#"[[{"last":"x"}]]"#,
                "superstep 0 of a subgraph's write must be a JSON array of deltas, got an object",
            ),
            (r#"[[[{"last":"x"},{"last":"y"}]]]"#, "last"),
        ] {
            let err = replay("t", &mut state, &row(body), |_| Ok(())).unwrap_err();
            assert!(matches!(err, StoreError::Corrupt { seq: 3, .. }), "{err}");
            assert!(err.to_string().contains(says), "{err}");
            assert_eq!(state, before);
        }
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
