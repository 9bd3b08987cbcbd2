//! The persistence requirement, seed by seed: for the run of every seed
//! example, the state reloaded from the store equals the live state.
//!
//! Each module below drives one seed's lifecycle (the turns and nodes its
//! runnable example, `examples/<seed>.rs`, and its seed test walk through)
//! through a `state_store::Thread` instead of a bare state: every delta a
//! node returns goes through `apply`, `apply_nodes` (a superstep),
//! `begin_turn` or `set`. The nodes are the seed's own delta-returning
//! functions; where the seed's runner applies to `&mut S` internally, its
//! loop is repeated here around those functions.
//!
//! After the run, [`assert_reloads`] checks, for every thread:
//! 1. a fresh `Store` (a new connection on the same SQLite file; another
//!    handle on the same memory store) opens the thread at the same `seq()`
//!    with a state `==` the live one, and `state_at(n)` equals the live
//!    state right after step n, for every n;
//! 2. the history lists exactly the steps taken (kind and node metadata),
//!    with at least one of every kind the seed uses.
//!
//! Each seed module also runs the example on a bare state with the seed's
//! own runner and compares: exactly where the run is deterministic, and
//! with the random parts (UUIDs, clock readings, process-wide id counters)
//! blanked where it is not; each comparison says which.
//!
//! Every lifecycle runs on three backends: memory (no snapshots: loading
//! replays the whole log), SQLite in a temporary directory with the
//! default snapshot policy, and SQLite with a snapshot every other step
//! (loading is a snapshot, the state's own JSON, plus at most one step).

use serde::Serialize;
use serde_json::{Map, Value, json};
use state_core::{Delta, Message, State};
use state_store::{SnapshotPolicy, StepKind, Store, Thread};
use std::fmt::Debug;
use std::num::NonZeroU64;
use std::path::PathBuf;

// ---------------------------------------------------------------------------
// The harness: a backend, a thread that remembers its live states, the
// reload checks.
// ---------------------------------------------------------------------------

/// What a seed state needs to be stored and compared.
trait Seed:
    State<Delta: Serialize + Send + Clone> + Serialize + Clone + PartialEq + Debug + Send + 'static
{
}

impl<S> Seed for S where
    S: State<Delta: Serialize + Send + Clone>
        + Serialize
        + Clone
        + PartialEq
        + Debug
        + Send
        + 'static
{
}

/// A store, and how to open it afresh.
struct Backend {
    store: Store,
    /// The SQLite file (its directory is deleted with the backend).
    file: Option<(tempfile::TempDir, PathBuf)>,
}

impl Backend {
    /// Memory, never snapshotting on its own: loading replays every step.
    fn memory() -> Backend {
        Backend {
            store: Store::memory().with_snapshot_policy(SnapshotPolicy::never()),
            file: None,
        }
    }

    /// A SQLite file in a new temporary directory.
    async fn sqlite(policy: SnapshotPolicy) -> Backend {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("seeds.db");
        let store = Store::sqlite(&path)
            .await
            .expect("the SQLite store opens")
            .with_snapshot_policy(policy);
        Backend {
            store,
            file: Some((dir, path)),
        }
    }

    async fn sqlite_default() -> Backend {
        Backend::sqlite(SnapshotPolicy::default()).await
    }

    async fn sqlite_snapshot_every_other_step() -> Backend {
        Backend::sqlite(SnapshotPolicy::every(NonZeroU64::new(2).unwrap())).await
    }

    /// The same data through a new `Store`: a new connection pool on the
    /// same file, or (memory) another handle, which shares only the data.
    async fn reopened(&self) -> Store {
        match &self.file {
            Some((_, path)) => Store::sqlite(path).await.expect("the SQLite store reopens"),
            None => self.store.clone(),
        }
    }
}

/// The three backends every lifecycle runs on, one test each.
macro_rules! on_every_backend {
    ($lifecycle:ident) => {
        #[tokio::test]
        async fn memory() {
            $lifecycle(Backend::memory()).await;
        }

        #[tokio::test]
        async fn sqlite() {
            $lifecycle(Backend::sqlite_default().await).await;
        }

        #[tokio::test]
        async fn sqlite_with_a_snapshot_every_other_step() {
            $lifecycle(Backend::sqlite_snapshot_every_other_step().await).await;
        }
    };
}

/// A thread, driven step by step, that keeps what each step was (for the
/// history check) and the live state after it (for time travel).
struct Recorded<S: Seed> {
    thread: Thread<S>,
    /// `after[n]`: the live state right after step n (`after[0]`: before
    /// the first).
    after: Vec<S>,
    /// Each step's kind and the metadata it was logged with.
    logged: Vec<(StepKind, Map<String, Value>)>,
}

impl<S: Seed> Recorded<S> {
    async fn open(store: &Store, id: &str) -> Recorded<S> {
        let thread = store.thread::<S>(id).await.expect("the thread opens");
        assert_eq!(thread.seq(), 0, "{id} is a new thread");
        let after = vec![thread.state().clone()];
        Recorded {
            thread,
            after,
            logged: Vec::new(),
        }
    }

    fn state(&self) -> &S {
        self.thread.state()
    }

    fn seq(&self) -> u64 {
        self.thread.seq()
    }

    fn stepped(&mut self, seq: u64, kind: StepKind, metadata: Value) {
        assert_eq!(seq as usize, self.after.len(), "one step, one number");
        self.after.push(self.thread.state().clone());
        let Value::Object(metadata) = metadata else {
            unreachable!("metadata is an object")
        };
        self.logged.push((kind, metadata));
    }

    /// One node's delta: an `apply` step, metadata `{"node": node}`.
    async fn apply(&mut self, node: &str, delta: S::Delta) {
        let metadata = json!({ "node": node });
        let seq = self
            .thread
            .with_metadata(metadata.clone())
            .apply(delta)
            .await
            .unwrap_or_else(|e| panic!("{}: {node}'s delta is stored: {e}", self.thread.id()));
        self.stepped(seq, StepKind::Apply, metadata);
    }

    /// Nodes that ran in parallel: one `superstep` step, their names in the
    /// metadata under `"nodes"`.
    async fn superstep(&mut self, writes: Vec<(&str, S::Delta)>) {
        let names: Vec<&str> = writes.iter().map(|(node, _)| *node).collect();
        let metadata = json!({ "nodes": names });
        let seq =
            self.thread.apply_nodes(writes).await.unwrap_or_else(|e| {
                panic!("{}: superstep {names:?} is stored: {e}", self.thread.id())
            });
        self.stepped(seq, StepKind::Superstep, metadata);
    }

    /// A turn reset.
    async fn begin_turn(&mut self) {
        let seq = self
            .thread
            .begin_turn()
            .await
            .unwrap_or_else(|e| panic!("{}: begin_turn is stored: {e}", self.thread.id()));
        self.stepped(seq, StepKind::BeginTurn, json!({}));
    }

    /// A write at a key, bypassing the reducer (`state["key"] = value`).
    async fn set(&mut self, node: &str, key: &str, value: Value) {
        let metadata = json!({ "node": node });
        let seq = self
            .thread
            .with_metadata(metadata.clone())
            .set(key, value)
            .await
            .unwrap_or_else(|e| panic!("{}: set {key:?} is stored: {e}", self.thread.id()));
        self.stepped(seq, StepKind::Set, metadata);
    }
}

/// The checks of the requirement, for one thread: reloaded from a fresh
/// store it is the live state, at every step; its history is the steps
/// taken, with every kind in `kinds` among them.
async fn assert_reloads<S: Seed>(backend: &Backend, run: &Recorded<S>, kinds: &[StepKind]) {
    let id = run.thread.id();
    let store = backend.reopened().await;
    let reloaded = store
        .thread::<S>(id)
        .await
        .unwrap_or_else(|e| panic!("{id}: the thread reopens: {e}"));
    assert_eq!(reloaded.seq(), run.seq(), "{id}: the reloaded seq");
    assert_same(
        &format!("{id}: the reloaded state (seq {})", run.seq()),
        run.state(),
        reloaded.state(),
    );

    for (seq, live) in run.after.iter().enumerate() {
        let past = store
            .state_at::<S>(id, seq as u64)
            .await
            .unwrap_or_else(|e| panic!("{id}: state_at({seq}): {e}"));
        assert_same(&format!("{id}: state_at({seq})"), live, &past);
    }

    let history = store
        .history(id, ..)
        .await
        .unwrap_or_else(|e| panic!("{id}: its history: {e}"));
    let seqs: Vec<u64> = history.iter().map(|step| step.seq).collect();
    let expected: Vec<u64> = (1..=run.seq()).collect();
    assert_eq!(seqs, expected, "{id}: every step is in the history");
    let logged: Vec<(StepKind, Map<String, Value>)> = history
        .iter()
        .map(|step| (step.kind, step.metadata.clone()))
        .collect();
    assert_eq!(logged, run.logged, "{id}: the history is the steps taken");
    for kind in kinds {
        assert!(
            history.iter().any(|step| step.kind == *kind),
            "{id}: no {kind} step in the history"
        );
    }
}

/// `live == other`, or a panic naming the fields (as JSON paths) that
/// differ.
fn assert_same<S: Seed>(what: &str, live: &S, other: &S) {
    if live == other {
        return;
    }
    let mut found = Vec::new();
    differences(
        "$",
        &live.to_json().unwrap(),
        &other.to_json().unwrap(),
        &mut found,
    );
    if found.is_empty() {
        panic!("{what}: != the live state, though both have the same JSON");
    }
    panic!(
        "{what}: != the live state; {} difference(s), first ones (live / other):\n  {}",
        found.len(),
        found
            .iter()
            .take(12)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n  ")
    );
}

/// The JSON paths where `left` and `right` differ.
fn differences(path: &str, left: &Value, right: &Value, found: &mut Vec<String>) {
    match (left, right) {
        (Value::Object(a), Value::Object(b)) => {
            let keys = a.keys().chain(b.keys().filter(|key| !a.contains_key(*key)));
            for key in keys {
                let (l, r) = (a.get(key), b.get(key));
                let (l, r) = (l.unwrap_or(&Value::Null), r.unwrap_or(&Value::Null));
                differences(&format!("{path}.{key}"), l, r, found);
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (l, r)) in a.iter().zip(b).enumerate() {
                differences(&format!("{path}[{i}]"), l, r, found);
            }
        }
        _ if left != right => found.push(format!("{path}: {left} / {right}")),
        _ => {}
    }
}

/// `value` with every object member named in `keys` set to null, at any
/// depth: for comparing runs whose clock readings or random ids differ.
fn blank(value: &Value, keys: &[&str]) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, v)| {
                    let v = if keys.contains(&key.as_str()) {
                        Value::Null
                    } else {
                        blank(v, keys)
                    };
                    (key.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(|v| blank(v, keys)).collect()),
        other => other.clone(),
    }
}

// ---------------------------------------------------------------------------
// OHMind (seed 000): examples/ohmind.rs. All fields persist, no parallel
// nodes; the document's helpers overwrite `completed_steps` (an `append`
// field) wholesale when a plan is created or cleared.
// ---------------------------------------------------------------------------

mod ohmind {
    use super::*;
    use state_examples::ohmind::{self as seed, AgentState, MemorySaver, Ohmind, Step};

    const THREAD: &str = "user-123-session-1";
    const FIRST: &str = "What is the HOMO-LUMO gap of benzyltrimethylammonium?";

    /// One user turn: the message's id and text, and the tool failures the
    /// example injects before it.
    type UserTurn = (&'static str, &'static str, Option<(&'static str, u32)>);

    /// The example's turns 2 to 6, after `create_initial_state`: a
    /// validation asked, approved; another asked, rejected; a task plan
    /// with one failed tool call on the way; a tool that keeps failing
    /// until the retries run out.
    const TURNS: [UserTurn; 6] = [
        (
            "user-2",
            "Simulate the hydroxide conductivity of benzyltrimethylammonium with MD",
            None,
        ),
        ("user-3", "yes, go ahead", None),
        ("user-4", "Run a longer MD simulation", None),
        ("user-5", "no, cancel that", None),
        (
            "user-6",
            "Design new HEM cations, compute their HOMO LUMO gap, and find papers on their stability",
            Some(("orca_single_point", 1)),
        ),
        (
            "user-7",
            "Find literature on alkaline degradation",
            Some(("rag_search", 10)),
        ),
    ];

    /// The example's sections 7 and 8, a second conversation on an app
    /// whose plans wait for approval: a plan rejected, another approved.
    const PLAN_THREAD: &str = "user-123-session-2";
    const PLAN_FIRST: &str = "Design HEM cations and simulate their conductivity";
    const PLAN_TURNS: [UserTurn; 3] = [
        ("plan-2", "no", None),
        (
            "plan-3",
            "Design HEM cations and compute their properties",
            None,
        ),
        ("plan-4", "yes", None),
    ];

    /// The example on a bare state, with the seed's own runner
    /// (`Ohmind::run`) and its `MemorySaver` between turns. The user's
    /// message is added as `Ohmind::run_turn` adds it, with the id given
    /// here (`run_turn` draws it from a private counter, which the thread
    /// run cannot reach).
    fn plain(app: &mut Ohmind, first: &str, turns: &[UserTurn]) -> (AgentState, Vec<Vec<Step>>) {
        let mut memory = MemorySaver::default();
        let mut state = seed::create_initial_state(first);
        let mut steps = vec![app.run(&mut state).expect("the first turn runs")];
        memory.put(THREAD, &state).unwrap();
        for &(id, text, failures) in turns {
            if let Some((tool, times)) = failures {
                app.fail_next(tool, times);
            }
            let mut state = memory.get_state(THREAD).unwrap().unwrap();
            let message = Message::human(text).with_id(id);
            state
                .apply(seed::update_state_with_message(message, None))
                .unwrap();
            steps.push(app.run(&mut state).expect("the turn runs"));
            memory.put(THREAD, &state).unwrap();
        }
        (memory.get_state(THREAD).unwrap().unwrap(), steps)
    }

    /// `Ohmind::run`'s loop: nodes from `entry_node` until `route` ends the
    /// turn, each node's delta one step.
    async fn run_nodes(t: &mut Recorded<AgentState>, app: &mut Ohmind) -> Vec<Step> {
        let mut node = seed::entry_node(t.state()).to_owned();
        let mut steps = Vec::new();
        loop {
            assert!(steps.len() < seed::RECURSION_LIMIT, "a runaway turn");
            let delta = app.run_node(&node, t.state()).expect("the node runs");
            t.apply(&node, delta.clone()).await;
            steps.push(Step {
                node: node.clone(),
                delta,
            });
            match seed::route(t.state()) {
                Some(next) => node = next,
                None => return steps,
            }
        }
    }

    /// The same conversation on a thread. The first message is written as
    /// `create_initial_state` writes it: set whole, and without an id.
    /// Every later turn starts with `begin_turn` (a no-op here: every
    /// field persists) and the user's message.
    async fn on_thread(
        store: &Store,
        id: &str,
        app: &mut Ohmind,
        first: &str,
        turns: &[UserTurn],
    ) -> (Recorded<AgentState>, Vec<Vec<Step>>) {
        let mut t = Recorded::open(store, id).await;
        let initial = seed::create_initial_state(first);
        assert_eq!(
            initial.messages[0].id(),
            None,
            "the first message has no id"
        );
        t.set(
            "create_initial_state",
            "messages",
            initial.get("messages").unwrap(),
        )
        .await;
        assert_eq!(t.state(), &initial, "set wrote create_initial_state");
        let mut steps = vec![run_nodes(&mut t, app).await];
        for &(message_id, text, failures) in turns {
            if let Some((tool, times)) = failures {
                app.fail_next(tool, times);
            }
            t.begin_turn().await;
            let message = Message::human(text).with_id(message_id);
            t.apply("__input__", seed::update_state_with_message(message, None))
                .await;
            steps.push(run_nodes(&mut t, app).await);
        }
        (t, steps)
    }

    async fn lifecycle(backend: Backend) {
        let kinds = [StepKind::Set, StepKind::BeginTurn, StepKind::Apply];
        for (id, first, turns, approval) in [
            (THREAD, FIRST, &TURNS[..], false),
            (PLAN_THREAD, PLAN_FIRST, &PLAN_TURNS[..], true),
        ] {
            let app = || {
                let app = Ohmind::new();
                if approval {
                    app.with_plan_approval()
                } else {
                    app
                }
            };
            let (t, steps) = on_thread(&backend.store, id, &mut app(), first, turns).await;

            // Deterministic but for one id: the seed's come from the app's
            // counter, but create_initial_state's message has none, and the
            // first add_messages gives it a random UUID (LangGraph gives the
            // history's id-less messages one too).
            let (expected, expected_steps) = plain(&mut app(), first, turns);
            assert_eq!(steps, expected_steps, "{id}: the nodes and their deltas");
            assert_eq!(
                first_id_blanked(t.state()),
                first_id_blanked(&expected),
                "{id}: the plain run"
            );

            assert_reloads(&backend, &t, &kinds).await;
        }
    }

    fn first_id_blanked(state: &AgentState) -> Value {
        let mut json = state.to_json().unwrap();
        json["messages"][0]["id"] = Value::Null;
        json
    }

    /// The lifecycle walks every node the example shows.
    #[test]
    fn the_example_visits_every_node() {
        let (_, steps) = plain(&mut Ohmind::new(), FIRST, &TURNS);
        let (_, plan_steps) = plain(
            &mut Ohmind::new().with_plan_approval(),
            PLAN_FIRST,
            &PLAN_TURNS,
        );
        let visited: Vec<&str> = steps
            .iter()
            .chain(&plan_steps)
            .flatten()
            .map(|step| step.node.as_str())
            .collect();
        for node in [
            seed::SUPERVISOR,
            seed::TASK_PLANNER,
            seed::SUMMARY,
            seed::ERROR_HANDLER,
            seed::HUMAN_VALIDATION,
            seed::PLAN_APPROVAL,
            "md_agent",
            "hem_agent",
            "rag_agent",
        ] {
            assert!(visited.contains(&node), "{node} never runs");
        }
    }

    on_every_backend!(lifecycle);
}

// ---------------------------------------------------------------------------
// GAIA (seed 001): examples/gaia.rs. A first turn through the calendar
// tool, a dict-like write, a resumed turn whose input message has no id, and
// a long history filtered and trimmed with overwrites.
// ---------------------------------------------------------------------------

mod gaia {
    use super::*;
    use state_examples::gaia::{
        self as seed, Checkpointer, Gaia, GaiaState, GaiaStateDelta, MessageRequestWithHistory,
        RunnableConfig, memory,
    };

    use seed::demo::{NOW, THREAD, USER_ID, config, remember_earlier};
    const LONG_THREAD: &str = "thread_long";

    /// One node's name and its update.
    type NodeWrite = (&'static str, GaiaStateDelta);

    /// The inputs, each built once and given to both runs (an id a message
    /// gets when its delta is built is then the same in both).
    struct Inputs {
        first: GaiaStateDelta,
        resume: GaiaStateDelta,
        long: GaiaStateDelta,
    }

    fn inputs() -> Inputs {
        let request = MessageRequestWithHistory {
            message: "Schedule a meeting for tomorrow".into(),
        };
        let history = vec![Message::human(request.message.as_str()).with_id("user-1")];
        let first = seed::build_initial_state(&request, USER_ID, THREAD, history, None, NOW);
        // The seed test's resumed input: OpenAI's shape, and no id.
        let resume = GaiaStateDelta::from_json(
            json!({"messages": [{"role": "user", "content": "Continue from where we left off"}]}),
        )
        .expect("a partial input");
        let mut history: Vec<Message> = (1..=14)
            .map(|i| Message::human(format!("message {i}")).with_id(format!("h{i}")))
            .collect();
        history.insert(3, Message::ai("x".repeat(12_000)).with_id("huge"));
        let request = MessageRequestWithHistory {
            message: "What did we say?".into(),
        };
        let long = seed::build_initial_state(&request, USER_ID, LONG_THREAD, history, None, NOW);
        Inputs {
            first,
            resume,
            long,
        }
    }

    /// The dict-like write of the example's section 5, on the thread:
    /// `state["memories"] = [...]`.
    fn memories() -> Value {
        json!(["Likes Thai food"])
    }

    /// The seed test's superstep: a trim and an append in one step, where
    /// the overwrite wins.
    fn reply() -> GaiaStateDelta {
        GaiaState::delta().messages(vec![Message::ai("new").with_id("new")])
    }

    /// `store`, indexed for the memories, holding what the user said
    /// earlier (the example's).
    async fn with_earlier_memories(store: Store) -> Store {
        let store = memory::indexed(store);
        remember_earlier(&store)
            .await
            .expect("the memories are put");
        store
    }

    /// The example on bare states, with the seed's runner (`Gaia::run`)
    /// and checkpointer, its memories in a store of its own.
    async fn plain(inputs: &Inputs) -> (GaiaState, GaiaState, Vec<Vec<NodeWrite>>) {
        let config = config();
        let store = with_earlier_memories(Store::memory()).await;
        let mut graph = Gaia::default();
        let mut runs = Vec::new();
        let mut state = GaiaState::default();
        let mut record = |run: seed::Run| {
            runs.push(run.steps.into_iter().map(|s| (s.node, s.delta)).collect());
        };
        record(
            graph
                .run(&store, &mut state, inputs.first.clone(), &config)
                .await
                .unwrap(),
        );
        state.set("memories", memories()).unwrap();
        let mut checkpoints = Checkpointer::default();
        checkpoints.put(THREAD, &state).unwrap();
        let mut state = checkpoints.get(THREAD).unwrap().unwrap();
        state.begin_turn();
        record(
            graph
                .run(&store, &mut state, inputs.resume.clone(), &config)
                .await
                .unwrap(),
        );

        let mut long = GaiaState::default();
        record(
            graph
                .run(&store, &mut long, inputs.long.clone(), &config)
                .await
                .unwrap(),
        );
        let trim = seed::trim_messages_node(&long);
        long.apply_all([trim, reply()]).unwrap();
        (state, long, runs)
    }

    /// `Gaia::run`'s loop: the input, then the nodes from `__start__`,
    /// each update one step.
    async fn run(
        t: &mut Recorded<GaiaState>,
        graph: &mut Gaia,
        store: &Store,
        input: GaiaStateDelta,
        config: &RunnableConfig,
    ) -> Vec<NodeWrite> {
        t.apply("__input__", input).await;
        let mut writes = Vec::new();
        let mut node = seed::next_node("__start__", t.state());
        while let Some(name) = node {
            assert!(writes.len() < seed::RECURSION_LIMIT, "a runaway run");
            let delta = graph
                .run_node(store, name, t.state(), config)
                .await
                .expect("the node runs");
            t.apply(name, delta.clone()).await;
            writes.push((name, delta));
            node = seed::next_node(name, t.state());
        }
        writes
    }

    async fn lifecycle(backend: Backend) {
        let inputs = inputs();
        let config = config();
        let mut graph = Gaia::default();
        // The user's memories, in the backend's store beside the threads.
        let store = with_earlier_memories(backend.store.clone()).await;

        // Turn 1: memory_retrieval -> agent -> tools -> agent -> store_memory.
        let mut t = Recorded::open(&backend.store, THREAD).await;
        let mut runs = vec![run(&mut t, &mut graph, &store, inputs.first.clone(), &config).await];
        t.set("dict_access", "memories", memories()).await;
        // Turn 2, resumed: memories_stored (turn scope) resets, the input
        // message gets an id.
        t.begin_turn().await;
        assert!(!t.state().memories_stored, "reset by begin_turn");
        runs.push(run(&mut t, &mut graph, &store, inputs.resume.clone(), &config).await);
        assert_eq!(
            t.state().memories,
            [
                "Schedule a meeting for tomorrow",
                "Prefers meeting slots in the afternoon"
            ],
            "turn 1's memory, found by turn 2"
        );
        let resumed = t
            .state()
            .messages
            .iter()
            .find(|m| m.text() == "Continue from where we left off")
            .expect("the resumed message is stored");
        assert!(resumed.id().is_some(), "add_messages gave it an id");

        // A long history: filter_messages and trim_messages overwrite it,
        // then the trim-and-append superstep.
        let mut long = Recorded::open(&backend.store, LONG_THREAD).await;
        runs.push(run(&mut long, &mut graph, &store, inputs.long.clone(), &config).await);
        let nodes: Vec<&str> = runs[2].iter().map(|(node, _)| *node).collect();
        assert_eq!(nodes[..2], ["filter_messages", "trim_messages"]);
        let trim = seed::trim_messages_node(long.state());
        long.superstep(vec![("trim_messages", trim), ("agent", reply())])
            .await;
        assert!(!long.state().messages.contains_id("new"), "the trim wins");
        assert_eq!(long.state().messages.len(), seed::KEEP_LAST);

        // Deterministic: the seed's ids come from its counter, and the one
        // message without an id is in an input both runs share.
        let (state, long_state, expected_runs) = plain(&inputs).await;
        assert_eq!(runs, expected_runs, "the nodes and their updates");
        assert_same("conversation_123: the plain run", t.state(), &state);
        assert_same("thread_long: the plain run", long.state(), &long_state);

        assert_reloads(
            &backend,
            &t,
            &[StepKind::Apply, StepKind::Set, StepKind::BeginTurn],
        )
        .await;
        assert_reloads(&backend, &long, &[StepKind::Apply, StepKind::Superstep]).await;
    }

    on_every_backend!(lifecycle);
}

// ---------------------------------------------------------------------------
// The therapy agent (seed 002): examples/therapy.rs. Six checkpointed turns
// (opening, an exercise started and continued, a crisis turn, back to the
// exercise, closing) and a one-shot caller; each turn resets the turn
// scope, and the two extractors write in one superstep.
// ---------------------------------------------------------------------------

mod therapy {
    use super::*;
    use state_examples::therapy::{
        self as seed, AgentInput, AgentOutput, Channel, Checkpointer, Step, TherapyAgent,
        TherapyState, WorkflowContext,
    };

    const SESSION: &str = "session-42";
    const ONE_SHOT: &str = "one-shot";

    const TURNS: [&str; 6] = [
        "Hi. I've been feeling low since my dog Biscuit died. Please keep your answers short.",
        "Could we try a breathing exercise?",
        "Okay, done.",
        "Honestly, some days I want to end my life.",
        "I'm safe now, my sister Sarah is here. Let's finish.",
        "Thank you, goodbye.",
    ];

    fn input(message: &str) -> AgentInput {
        AgentInput {
            channel: Channel::Web,
            user_id: Some("user-7".into()),
            installed_skills: vec!["breathing".into()],
            ..AgentInput::new(message, Some(SESSION))
        }
    }

    /// The example's section 7: no session, the history in the input.
    fn one_shot_input() -> AgentInput {
        AgentInput {
            channel: Channel::Sms,
            history: vec![
                seed::Message::user("Work has been brutal."),
                seed::Message::assistant("That sounds exhausting.", "supportive"),
            ],
            ..AgentInput::new("I can't go on like this.", None)
        }
    }

    /// One finished turn: what the caller sees, and the supersteps.
    type TurnRecord = (AgentOutput, Vec<Step>);

    /// The example with the seed's runner (`Checkpointer::run_turn`,
    /// `TherapyAgent::run_turn`).
    fn plain() -> (TherapyState, TherapyState, Vec<TurnRecord>) {
        let agent = TherapyAgent::new(seed::demo_context());
        let mut saver = Checkpointer::default();
        let mut turns = Vec::new();
        for message in TURNS {
            let turn = saver.run_turn(&agent, &input(message)).unwrap();
            turns.push((turn.output, turn.steps));
        }
        let state = saver.get(SESSION).unwrap().unwrap();
        let one_shot = agent.run_turn(None, &one_shot_input()).unwrap();
        turns.push((one_shot.output, one_shot.steps));
        (state, one_shot.state, turns)
    }

    /// `TherapyAgent::run_turn` on a thread: `begin_turn`, then one step per
    /// node, the extractors in one superstep. A thread with no step yet is
    /// a caller without a checkpoint.
    async fn turn(
        t: &mut Recorded<TherapyState>,
        ctx: &WorkflowContext,
        input: &AgentInput,
    ) -> TurnRecord {
        let checkpoint = (t.seq() > 0).then(|| t.state().clone());
        let mut steps = Vec::new();
        t.begin_turn().await;

        let initial = seed::build_initial_state(input, checkpoint.as_ref());
        node(t, &mut steps, seed::BUILD_INITIAL_STATE, initial).await;
        let delta = seed::load_memory_node(t.state(), ctx);
        node(t, &mut steps, seed::LOAD_MEMORY, delta).await;
        let delta = seed::crisis_gate_node(t.state(), ctx);
        node(t, &mut steps, seed::CRISIS_GATE, delta).await;
        if seed::route_after_crisis_gate(t.state()) == seed::CRISIS_RESPONSE {
            let delta = seed::crisis_response_node(t.state());
            node(t, &mut steps, seed::CRISIS_RESPONSE, delta).await;
        } else {
            let delta = seed::select_mode_node(t.state(), ctx);
            node(t, &mut steps, seed::SELECT_MODE, delta).await;
            let delta = seed::therapeutic_response_node(t.state());
            node(t, &mut steps, seed::THERAPEUTIC_RESPONSE, delta).await;
        }
        let delta = seed::finalize_turn_node(t.state());
        node(t, &mut steps, seed::FINALIZE_TURN, delta).await;

        let persist = seed::should_persist_memory(t.state(), ctx);
        if persist {
            // Both read the same state and write in the same superstep.
            let facts = seed::extract_facts_node(t.state(), ctx);
            let procedural = seed::extract_procedural_node(t.state(), ctx);
            let writes = vec![
                (seed::EXTRACT_FACTS, facts),
                (seed::EXTRACT_PROCEDURAL, procedural),
            ];
            t.superstep(writes.clone()).await;
            steps.push(Step { writes });
        }
        (seed::state_to_output(t.state(), persist), steps)
    }

    /// A superstep of one node (the seed's `run` uses `apply_all` for
    /// every step): one `apply` step.
    async fn node(
        t: &mut Recorded<TherapyState>,
        steps: &mut Vec<Step>,
        name: &'static str,
        delta: seed::TherapyStateDelta,
    ) {
        t.apply(name, delta.clone()).await;
        steps.push(Step {
            writes: vec![(name, delta)],
        });
    }

    async fn lifecycle(backend: Backend) {
        let agent = TherapyAgent::new(seed::demo_context());
        let kinds = [StepKind::BeginTurn, StepKind::Apply, StepKind::Superstep];
        let mut turns = Vec::new();

        let mut t = Recorded::open(&backend.store, SESSION).await;
        for message in TURNS {
            turns.push(turn(&mut t, &agent.context, &input(message)).await);
        }
        assert_eq!(t.state().history.len(), 2 * TURNS.len(), "appended");
        let mut one_shot = Recorded::open(&backend.store, ONE_SHOT).await;
        turns.push(turn(&mut one_shot, &agent.context, &one_shot_input()).await);

        // Deterministic: no ids, and the simulated timings are fixed.
        let (state, one_shot_state, expected) = plain();
        assert_eq!(turns, expected, "each turn's output and supersteps");
        assert_same("session-42: the plain run", t.state(), &state);
        assert_same("one-shot: the plain run", one_shot.state(), &one_shot_state);
        let crisis_turn = &turns[3].1;
        assert!(
            crisis_turn.iter().all(|step| step.writes.len() == 1),
            "no extractors on the crisis turn"
        );

        assert_reloads(&backend, &t, &kinds).await;
        assert_reloads(&backend, &one_shot, &kinds).await;
    }

    on_every_backend!(lifecycle);
}

// ---------------------------------------------------------------------------
// Alpha Berkeley (seed 003): examples/alpha_berkeley.rs. Three turns, each
// `start_turn` (begin_turn, then the user's message, which has no id), the
// planning nodes and the routed steps, with an approval and a retried step;
// then two nodes reporting in one superstep.
// ---------------------------------------------------------------------------

mod alpha_berkeley {
    use super::*;
    use state_examples::alpha_berkeley::graph::{self, Route, Turn};
    use state_examples::alpha_berkeley::{AgentState, StateUpdate, create_status_update};

    const THREAD: &str = "als-operator";

    /// The example's closing superstep: two nodes' status events.
    fn parallel_events() -> Vec<(&'static str, StateUpdate)> {
        vec![
            (
                "archiver_retrieval",
                create_status_update("Archiver: 1440 samples", 0.5, false, []),
            ),
            (
                "python_executor",
                create_status_update("Python: figure saved", 0.5, false, []),
            ),
        ]
    }

    /// The example with the seed's runner (`graph::run_turn`: the graph,
    /// on a thread of its own memory store).
    async fn plain() -> (AgentState, Vec<Vec<String>>) {
        let app = graph::build(graph::conversation())
            .unwrap()
            .with_store(Store::memory());
        let mut state = AgentState::default();
        let mut turns = Vec::new();
        for turn in graph::conversation() {
            let mut nodes = Vec::new();
            let outcome = graph::run_turn(&app, THREAD, &turn, |seen| {
                if let graph::Seen::Node { name, .. } = seen {
                    nodes.push(name.to_owned());
                }
            })
            .await
            .unwrap();
            state = outcome.into_state();
            turns.push(nodes);
        }
        let events = parallel_events().into_iter().map(|(_, update)| update);
        state.apply_all(events).unwrap();
        (state, turns)
    }

    /// `graph::run_turn` on a thread: `start_turn` as two steps
    /// (`begin_turn`, the message), the planning nodes, then the router's
    /// choices until the plan is done.
    async fn turn(t: &mut Recorded<AgentState>, turn: &Turn) -> Vec<String> {
        t.begin_turn().await;
        let message = AgentState::delta().messages(vec![Message::human(turn.user_input)]);
        t.apply("__input__", message).await;
        let mut nodes = Vec::new();
        type Planner = fn(&AgentState, &Turn) -> Result<StateUpdate, state_core::StateError>;
        let planning: [(&str, Planner); 3] = [
            ("task_extraction", graph::task_extraction),
            ("classification", graph::classification),
            ("orchestration", graph::orchestration),
        ];
        for (name, node) in planning {
            let update = node(t.state(), turn).expect("the planner runs");
            t.apply(name, update).await;
            nodes.push(name.to_owned());
        }
        loop {
            let (name, update) = match graph::route(t.state()) {
                Route::End => return nodes,
                Route::Kill => ("kill".to_owned(), graph::kill(t.state())),
                Route::RequestApproval => {
                    let update = graph::request_approval(t.state());
                    t.apply("approval", update).await;
                    nodes.push("approval".to_owned());
                    // The interrupt resumes with the user's answer: approved.
                    (
                        "approval".to_owned(),
                        graph::resume_approval(t.state(), true),
                    )
                }
                Route::Execute => {
                    let name = graph::current_step(t.state())
                        .map_or_else(|| "router".to_owned(), |step| step.capability.clone());
                    let update = graph::execute_step(t.state(), turn).expect("the step runs");
                    (name, update)
                }
            };
            t.apply(&name, update).await;
            nodes.push(name);
        }
    }

    /// Clock readings (`time.time()`) and the UUIDs given to messages
    /// without an id: the parts of a state that differ from run to run.
    fn without_clock_and_ids(state: &AgentState) -> Value {
        blank(
            &state.to_json().unwrap(),
            &[
                "timestamp",
                "execution_start_time",
                "execution_total_time",
                "execution_time",
                "id",
            ],
        )
    }

    async fn lifecycle(backend: Backend) {
        let mut t = Recorded::open(&backend.store, THREAD).await;
        let mut turns = Vec::new();
        for scripted in graph::conversation() {
            turns.push(turn(&mut t, &scripted).await);
        }
        t.superstep(parallel_events()).await;
        assert!(
            t.state().messages.iter().all(|m| m.id().is_some()),
            "every message has an id once stored"
        );

        // Not deterministic: events and timings carry clock readings, and
        // the messages (the user's and the answers) get random UUIDs. Those
        // blanked, the thread's run is the seed runner's.
        let (state, expected_turns) = plain().await;
        assert_eq!(turns, expected_turns, "the nodes of each turn");
        assert!(turns[1].contains(&"approval".to_owned()), "turn 2 asks");
        assert_eq!(
            without_clock_and_ids(t.state()),
            without_clock_and_ids(&state),
            "the plain run, clock and ids aside"
        );

        assert_reloads(
            &backend,
            &t,
            &[StepKind::BeginTurn, StepKind::Apply, StepKind::Superstep],
        )
        .await;
    }

    on_every_backend!(lifecycle);
}

// ---------------------------------------------------------------------------
// AgentFlow (seed 004): examples/agentflow.rs. The order graph paused before
// checkout and resumed, streaming chunks, duplicate ids, a refused removal,
// the history overwritten; a run stopped midway and started again; a
// failing node; and the same base node on AnalysisState.
// ---------------------------------------------------------------------------

mod agentflow {
    use super::*;
    use state_examples::agentflow::{
        self as seed, AgentState, AgentStateDelta, AnalysisState, ExecutionStatus, Finding, Node,
        NodeReturn, OrderState, Role,
    };

    /// The order graph's nodes, as `order_graph()` wires them (its node
    /// list is private; the test checks the names).
    fn order_nodes() -> Vec<(&'static str, Node<OrderState>)> {
        vec![
            ("apply_discount", Node::App(seed::apply_discount)),
            ("process_order", Node::App(seed::process_order)),
            ("checkout", Node::App(seed::checkout)),
            ("answer", Node::Base(seed::answer_node)),
            ("summarise", Node::Base(seed::summarise_node)),
        ]
    }

    const INTERRUPTS: [(&str, &str); 1] = [("checkout", "awaiting the customer's confirmation")];

    /// `StateGraph::invoke_with` on a thread: every lifecycle delta the
    /// runtime writes and every node's return is one step; `stop_after`
    /// plays the caller who calls `compiled.stop()` after that node.
    /// Returns the nodes visited.
    async fn invoke<S>(
        t: &mut Recorded<S>,
        nodes: &[(&'static str, Node<S>)],
        interrupts: &[(&'static str, &'static str)],
        input: Vec<Message>,
        stop_after: Option<&str>,
    ) -> Vec<&'static str>
    where
        S: Seed + AsRef<AgentState>,
        S::Delta: From<AgentStateDelta>,
    {
        let base = t.state().as_ref();
        let (resume_at, start, what) = match base.execution_meta().interrupt_node.clone() {
            Some(node) if base.is_interrupted() => {
                (Some(node), base.clear_interrupt(), "clear_interrupt")
            }
            _ => (None, base.begin_run(), "begin_run"),
        };
        t.apply(what, start.into()).await;
        if !input.is_empty() {
            let delta = AgentState::delta().context(input);
            t.apply("input -> context", delta.into()).await;
        }
        let first = resume_at
            .as_deref()
            .and_then(|node| nodes.iter().position(|(name, _)| *name == node))
            .unwrap_or(0);
        let mut visited = Vec::new();
        for (name, node) in &nodes[first..] {
            let name = *name;
            if t.state().as_ref().is_stopped_requested() {
                return visited;
            }
            let interrupt = interrupts.iter().find(|(node, _)| *node == name);
            if let Some((_, reason)) = interrupt
                && resume_at.as_deref() != Some(name)
            {
                let mut data = Map::new();
                data.insert("pending_node".into(), json!(name));
                let delta = t.state().as_ref().set_interrupt(
                    name,
                    reason,
                    ExecutionStatus::Interrupted,
                    Some(data),
                );
                t.apply("set_interrupt", delta.into()).await;
                return visited;
            }
            let base = t.state().as_ref();
            let enter = base
                .set_current_node(name)
                .merge(base.advance_step())
                .unwrap();
            t.apply("set_current_node+advance_step", enter.into()).await;
            visited.push(name);
            let returned = match node {
                Node::App(f) => f(t.state()),
                Node::Base(f) => f(t.state().as_ref()).map(NodeReturn::convert),
            };
            match returned {
                Ok(NodeReturn::Messages(messages)) => {
                    t.apply(name, AgentState::delta().context(messages).into())
                        .await;
                }
                Ok(NodeReturn::Update(delta)) => t.apply(name, delta).await,
                // `apply_json`: the dict decoded to a delta, then applied.
                Ok(NodeReturn::Dict(dict)) => {
                    t.apply(name, S::Delta::from_json(dict).expect("a valid dict"))
                        .await;
                }
                Ok(NodeReturn::Nothing) => {}
                Err(message) => {
                    let delta = t.state().as_ref().error(&message);
                    t.apply("error", delta.into()).await;
                    return visited;
                }
            }
            if stop_after == Some(name)
                && let Some(stop) = t.state().as_ref().request_stop()
            {
                t.apply("compiled.stop()", stop.into()).await;
            }
        }
        let done = t.state().as_ref().complete();
        t.apply("complete", done.into()).await;
        visited
    }

    /// `OrderState(order_id="ORD-001", cart=[...])`, written as one step.
    fn seeded() -> seed::OrderStateDelta {
        let seeded = seed::seeded_order();
        OrderState::delta()
            .order_id(seeded.order_id)
            .cart(seeded.cart)
    }

    /// The retried checkout of the example's section 6: its "Order placed!"
    /// repeats an id (dropped), the other message is new.
    fn retry() -> Vec<Message> {
        vec![
            Message::ai("Order placed! (retry)").with_id(seed::placed_message_id("ORD-001")),
            seed::text_message("Anything else?", Role::Assistant),
        ]
    }

    /// The example's section 8 and the seed test's overwrites: the history
    /// replaced by a summary, by a message without an id (a JSON
    /// overwrite: the reducer, which would give it one, is bypassed), and
    /// an overwrite beside an add in one superstep.
    fn overwrites(summary: &str) -> (seed::OrderStateDelta, Value, [seed::OrderStateDelta; 2]) {
        let fresh = vec![Message::system(format!("Summary: {summary}")).with_id("summary")];
        let overwrite = AgentState::delta().overwrite_context(fresh).into();
        let start_over = json!({"context": {"__overwrite__": ["Start over"]}});
        let superstep = [
            AgentState::delta()
                .context(vec![Message::ai("added").with_id("3")])
                .into(),
            AgentState::delta()
                .overwrite_context(vec![Message::ai("only").with_id("4")])
                .into(),
        ];
        (overwrite, start_over, superstep)
    }

    fn analysis_findings() -> [Value; 2] {
        [
            json!({"findings": [{"id": "f1", "text": "draft"}, {"id": "f2", "text": "new"}], "current_step": "search"}),
            json!({"findings": [{"id": "f1", "text": "revised"}, {"id": "f3", "text": "late"}], "current_step": "review"}),
        ]
    }

    /// The inputs, each message built once and given to both runs.
    struct Inputs {
        order: Message,
        confirm: Message,
        stop: Message,
        empty_order: Message,
        empty_yes: Message,
        analyse: Message,
        retry: Vec<Message>,
    }

    fn inputs() -> Inputs {
        Inputs {
            order: seed::text_message("Process my order, use code save10", Role::User),
            confirm: seed::text_message("Yes, confirm", Role::User),
            stop: seed::text_message("Process my order", Role::User),
            empty_order: seed::text_message("Order please", Role::User),
            empty_yes: seed::text_message("yes", Role::User),
            analyse: seed::text_message("Analyse the logs", Role::User),
            retry: retry(),
        }
    }

    /// The final states of the example's four conversations.
    struct Finals {
        order: OrderState,
        stopped: OrderState,
        failed: OrderState,
        analysis: AnalysisState,
        visited: Vec<Vec<&'static str>>,
    }

    /// The example with the seed's runner (`Agent::invoke`: the graph, on
    /// threads of its own memory store).
    async fn plain(inputs: &Inputs) -> Finals {
        let store = Store::memory();
        let agent = seed::order_graph().compile(store.clone()).unwrap();
        let mut visited = Vec::new();
        let order = vec![inputs.order.clone()];
        let run = agent
            .invoke("ORD-001", seed::order_input(&seed::seeded_order(), order))
            .await
            .unwrap();
        visited.push(run.visited);
        assert!(
            !agent.stop("ORD-001").await.unwrap(),
            "a paused thread is not stopped"
        );
        let confirm = seed::say(vec![inputs.confirm.clone()]);
        let run = agent.invoke("ORD-001", confirm).await.unwrap();
        visited.push(run.visited);
        let mut order = run.state;
        order
            .apply(AgentState::delta().context(inputs.retry.clone()).into())
            .unwrap();
        let summary = order.base.context_summary.clone().unwrap_or_default();
        let (overwrite, start_over, superstep) = overwrites(&summary);
        order.apply(overwrite).unwrap();
        order.apply_json(start_over).unwrap();
        order.apply_all(superstep).unwrap();

        // compiled.stop(), taken at the first node boundary (apply_discount).
        assert!(agent.stop("ORD-001-stopped").await.unwrap());
        let stop = vec![inputs.stop.clone()];
        let input = seed::order_input(&seed::seeded_order(), stop);
        let run = agent.invoke("ORD-001-stopped", input).await.unwrap();
        visited.push(run.visited);
        let run = agent
            .invoke("ORD-001-stopped", OrderState::delta())
            .await
            .unwrap();
        visited.push(run.visited);
        let stopped = run.state;

        let empty = OrderState {
            order_id: Some("ORD-002".into()),
            ..OrderState::default()
        };
        let input = seed::order_input(&empty, vec![inputs.empty_order.clone()]);
        let run = agent.invoke("ORD-002", input).await.unwrap();
        visited.push(run.visited);
        let yes = seed::say(vec![inputs.empty_yes.clone()]);
        let run = agent.invoke("ORD-002", yes).await.unwrap();
        visited.push(run.visited);
        let failed = run.state;

        let mut analysis = store.thread::<AnalysisState>("analysis").await.unwrap();
        for update in analysis_findings() {
            let delta = seed::AnalysisStateDelta::from_json(update).unwrap();
            analysis.apply(delta).await.unwrap();
        }
        let agent = seed::Flow::<AnalysisState>::new()
            .base_node("summarise", seed::summarise_node)
            .compile(store)
            .unwrap();
        let analyse = seed::say(vec![inputs.analyse.clone()]);
        let run = agent.invoke("analysis", analyse).await.unwrap();
        visited.push(run.visited);
        Finals {
            order,
            stopped,
            failed,
            analysis: run.state,
            visited,
        }
    }

    /// Message ids minted by the nodes (`generate_id`, a counter shared by
    /// every test of this process) differ between two runs; the inputs'
    /// ids and the fixed "ORD-001-placed" do not.
    fn without_generated_ids<S: Seed>(state: &S, inputs: &Inputs) -> Value {
        let kept: Vec<&str> = [
            &inputs.order,
            &inputs.confirm,
            &inputs.stop,
            &inputs.empty_order,
            &inputs.empty_yes,
            &inputs.analyse,
        ]
        .into_iter()
        .chain(&inputs.retry)
        .filter_map(Message::id)
        .collect();
        let mut json = state.to_json().unwrap();
        for message in json["context"].as_array_mut().into_iter().flatten() {
            let id = message["id"].as_str().unwrap_or_default();
            if id.starts_with("msg-") && !kept.contains(&id) {
                message["id"] = json!("<generated>");
            }
        }
        json
    }

    async fn lifecycle(backend: Backend) {
        let inputs = inputs();
        let nodes = order_nodes();
        let names: Vec<&str> = nodes.iter().map(|(name, _)| *name).collect();
        assert_eq!(names, seed::order_graph().node_names());
        let mut visited = Vec::new();

        // ORD-001: paused before checkout, resumed; a retried checkout; a
        // refused removal; the history overwritten.
        let mut t = Recorded::<OrderState>::open(&backend.store, "ORD-001").await;
        t.apply("__input__", seeded()).await;
        assert_eq!(t.state(), &seed::seeded_order());
        visited.push(
            invoke(
                &mut t,
                &nodes,
                &INTERRUPTS,
                vec![inputs.order.clone()],
                None,
            )
            .await,
        );
        assert!(t.state().base.is_interrupted());
        assert!(
            t.state().base.request_stop().is_none(),
            "a paused thread is not stopped"
        );
        visited.push(
            invoke(
                &mut t,
                &nodes,
                &INTERRUPTS,
                vec![inputs.confirm.clone()],
                None,
            )
            .await,
        );
        assert!(t.state().confirmed);
        assert!(
            !t.state().base.context.iter().any(seed::is_chunk),
            "no chunk stored"
        );
        t.apply(
            "checkout (retried)",
            AgentState::delta().context(inputs.retry.clone()).into(),
        )
        .await;

        // A removal is refused by AgentFlow's add_messages: no step.
        let before = (t.seq(), t.state().clone());
        let removal =
            AgentState::delta().context(vec![Message::remove(seed::placed_message_id("ORD-001"))]);
        let refused = t.thread.apply(removal.into()).await;
        assert!(refused.is_err(), "the removal is refused");
        assert!(!refused.unwrap_err().is_conflict());
        assert_eq!(
            (t.seq(), t.state()),
            (before.0, &before.1),
            "nothing changed"
        );

        let summary = t.state().base.context_summary.clone().unwrap_or_default();
        let (overwrite, start_over, superstep) = overwrites(&summary);
        t.apply("replace_messages", overwrite).await;
        let start_over = seed::OrderStateDelta::from_json(start_over).unwrap();
        t.apply("replace_messages (dict)", start_over).await;
        assert_eq!(
            t.state().base.context[0].id(),
            None,
            "an overwrite adds no id"
        );
        let [add, only] = superstep;
        t.superstep(vec![("respond", add), ("replace_messages", only)])
            .await;
        assert_eq!(t.state().base.context.len(), 1, "the overwrite wins");

        // ORD-001-stopped: compiled.stop() after apply_discount, then a new run.
        let mut stopped = Recorded::<OrderState>::open(&backend.store, "ORD-001-stopped").await;
        stopped.apply("__input__", seeded()).await;
        let input = vec![inputs.stop.clone()];
        let first = invoke(
            &mut stopped,
            &nodes,
            &INTERRUPTS,
            input,
            Some("apply_discount"),
        )
        .await;
        assert!(stopped.state().base.is_stopped_requested());
        visited.push(first);
        visited.push(invoke(&mut stopped, &nodes, &INTERRUPTS, Vec::new(), None).await);

        // ORD-002: an empty cart, so checkout fails and error(...) records it.
        let mut failed = Recorded::<OrderState>::open(&backend.store, "ORD-002").await;
        failed
            .apply("__input__", OrderState::delta().order_id("ORD-002"))
            .await;
        let input = vec![inputs.empty_order.clone()];
        visited.push(invoke(&mut failed, &nodes, &INTERRUPTS, input, None).await);
        let input = vec![inputs.empty_yes.clone()];
        visited.push(invoke(&mut failed, &nodes, &INTERRUPTS, input, None).await);
        let meta = failed.state().base.execution_meta();
        assert_eq!(meta.status, ExecutionStatus::Error);

        // AnalysisState: append_items by id, and a base node on it.
        let mut analysis = Recorded::<AnalysisState>::open(&backend.store, "analysis").await;
        for update in analysis_findings() {
            let delta = seed::AnalysisStateDelta::from_json(update).unwrap();
            analysis.apply("findings", delta).await;
        }
        assert_eq!(analysis.state().findings[0], Finding::new("f1", "draft"));
        let summarise = [("summarise", Node::Base(seed::summarise_node))];
        let input = vec![inputs.analyse.clone()];
        visited.push(invoke(&mut analysis, &summarise, &[], input, None).await);

        // Deterministic but for the ids the nodes mint (see above).
        let expected = plain(&inputs).await;
        assert_eq!(visited, expected.visited, "the nodes of each run");
        assert_eq!(
            without_generated_ids(t.state(), &inputs),
            without_generated_ids(&expected.order, &inputs),
            "ORD-001: the plain run"
        );
        assert_eq!(
            without_generated_ids(stopped.state(), &inputs),
            without_generated_ids(&expected.stopped, &inputs),
            "ORD-001-stopped: the plain run"
        );
        assert_eq!(
            without_generated_ids(failed.state(), &inputs),
            without_generated_ids(&expected.failed, &inputs),
            "ORD-002: the plain run"
        );
        assert_eq!(
            without_generated_ids(analysis.state(), &inputs),
            without_generated_ids(&expected.analysis, &inputs),
            "analysis: the plain run"
        );

        assert_reloads(&backend, &t, &[StepKind::Apply, StepKind::Superstep]).await;
        assert_reloads(&backend, &stopped, &[StepKind::Apply]).await;
        assert_reloads(&backend, &failed, &[StepKind::Apply]).await;
        assert_reloads(&backend, &analysis, &[StepKind::Apply]).await;
    }

    on_every_backend!(lifecycle);

    /// The seed test's `missing_ids_are_generated`, on a thread: a message
    /// without an id reaches AgentFlow's add_messages, which gives it one
    /// (`generate_id`) when it reduces it. The log holds the delta, so the
    /// reloaded state is only the live one if the replay gives it the same
    /// id.
    async fn an_id_less_message(backend: Backend) {
        let mut t = Recorded::<OrderState>::open(&backend.store, "ORD-003").await;
        let question = Message::human("Where is my order?");
        assert_eq!(question.id(), None);
        t.apply(
            "__input__",
            AgentState::delta().context(vec![question]).into(),
        )
        .await;
        let generated = t.state().base.context[0].id().map(str::to_owned);
        assert!(generated.is_some(), "the message was given an id");
        assert_reloads(&backend, &t, &[StepKind::Apply]).await;
    }

    mod id_less_message {
        use super::*;
        on_every_backend!(an_id_less_message);
    }
}
