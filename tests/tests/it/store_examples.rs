//! The checkpointed runners of the OHMind and GAIA examples
//! (`Ohmind::run_stored`, `Ohmind::run_turn_stored`, `Gaia::run_stored`):
//! on the same input they take the same steps (node names, deltas) and end
//! in the same state as the seeds' bare-state runners (`run`, `run_turn`),
//! log one step per input and per node with the node's name in its
//! metadata, and a fresh `Store` on the same SQLite file reopens the thread
//! with an equal state.

use serde_json::{Value, json};
use state_core::{Delta, Message, State};
use state_store::{StepKind, StepRecord, Store};
use std::path::{Path, PathBuf};

/// A SQLite store in a new temporary directory (deleted with the guard).
async fn sqlite() -> (tempfile::TempDir, PathBuf, Store) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("checkpoints.db");
    let store = Store::sqlite(&path).await.expect("the SQLite store opens");
    (dir, path, store)
}

/// `metadata["node"]` of every logged step of `thread`, in order.
async fn logged_nodes(store: &Store, thread: &str) -> Vec<String> {
    let history = store.history(thread, ..).await.expect("the log reads");
    history.iter().map(node_of).collect()
}

fn node_of(step: &StepRecord) -> String {
    step.metadata
        .get("node")
        .and_then(Value::as_str)
        .unwrap_or("?")
        .to_owned()
}

/// A new connection on the same file: the thread as a restarted process
/// sees it.
async fn reopen<S>(path: &Path, thread: &str) -> state_store::Thread<S>
where
    S: State + serde::Serialize + Send + 'static,
    S::Delta: serde::Serialize + Send,
{
    Store::sqlite(path)
        .await
        .expect("the file reopens")
        .thread::<S>(thread)
        .await
        .expect("the thread reopens")
}

mod ohmind {
    use super::*;
    use state_examples::ohmind::{
        self as seed, AgentState, AgentStateDelta, INPUT, Ohmind, RunError, Step,
    };

    const THREAD: &str = "user-123-session-1";
    const FIRST: &str = "What is the HOMO-LUMO gap of benzyltrimethylammonium?";

    /// The user turns of `examples/ohmind.rs` after the first, with the
    /// tool failures injected before each.
    const TURNS: [(&str, Option<(&str, u32)>); 6] = [
        (
            "Simulate the hydroxide conductivity of benzyltrimethylammonium with MD",
            None,
        ),
        ("yes, go ahead", None),
        ("Run a longer MD simulation", None),
        ("no, cancel that", None),
        (
            "Design new HEM cations, compute their HOMO LUMO gap, and find papers on their stability",
            Some(("orca_single_point", 1)),
        ),
        (
            "Find literature on alkaline degradation",
            Some(("rag_search", 10)),
        ),
    ];

    /// The example's conversation on a bare state: `Ohmind::run` from
    /// `create_initial_state`, then `Ohmind::run_turn` per turn.
    fn bare(app: &mut Ohmind) -> (AgentState, Vec<Vec<Step>>) {
        let mut state = seed::create_initial_state(FIRST);
        let mut turns = vec![app.run(&mut state).expect("the first turn runs")];
        for (text, failures) in TURNS {
            if let Some((tool, times)) = failures {
                app.fail_next(tool, times);
            }
            turns.push(app.run_turn(&mut state, text).expect("the turn runs"));
        }
        (state, turns)
    }

    /// The same conversation through the store, as the example runs it:
    /// `create_initial_state` as the graph's input (one step), then
    /// `run_stored`; each later turn on the thread reopened from the store,
    /// with `run_turn_stored`.
    async fn stored(app: &mut Ohmind, store: &Store) -> (AgentState, Vec<Vec<Step>>) {
        let mut thread = store.thread::<AgentState>(THREAD).await.unwrap();
        let input =
            AgentStateDelta::from_json(seed::create_initial_state(FIRST).to_json().unwrap())
                .expect("a state is a valid input");
        thread
            .with_metadata(json!({"node": INPUT}))
            .apply(input)
            .await
            .unwrap();
        let mut turns = vec![app.run_stored(&mut thread).await.expect("the first turn")];
        for (text, failures) in TURNS {
            if let Some((tool, times)) = failures {
                app.fail_next(tool, times);
            }
            let mut thread = store.thread::<AgentState>(THREAD).await.unwrap();
            let steps = app.run_turn_stored(&mut thread, text).await;
            turns.push(steps.expect("the turn runs"));
        }
        let state = store.thread::<AgentState>(THREAD).await.unwrap();
        (state.into_state(), turns)
    }

    /// `create_initial_state`'s message has no id; the first pass through
    /// `add_messages` (decoding the input, or the first node's delta) gives
    /// it a random one. Every other id comes from the app's counter.
    fn first_id_blanked(state: &AgentState) -> Value {
        let mut json = state.to_json().unwrap();
        assert!(json["messages"][0]["id"].is_string(), "an id was assigned");
        json["messages"][0]["id"] = Value::Null;
        json
    }

    #[tokio::test]
    async fn stored_runs_take_the_bare_runs_steps_and_reopen_equal() {
        let (_dir, path, store) = sqlite().await;
        // Fresh apps: the message ids come from their counters.
        let (live, turns) = stored(&mut Ohmind::new(), &store).await;
        let (expected, expected_turns) = bare(&mut Ohmind::new());
        assert_eq!(turns, expected_turns, "the nodes and their deltas");
        assert_eq!(first_id_blanked(&live), first_id_blanked(&expected));

        // One step per input and per node, each named in its metadata.
        let mut nodes = Vec::new();
        for turn in &turns {
            nodes.push(INPUT.to_owned());
            nodes.extend(turn.iter().map(|step| step.node.clone()));
        }
        assert_eq!(logged_nodes(&store, THREAD).await, nodes);
        let history = store.history(THREAD, ..).await.unwrap();
        assert!(history.iter().all(|step| step.kind == StepKind::Apply));

        let reopened = reopen::<AgentState>(&path, THREAD).await;
        assert_eq!(reopened.seq(), nodes.len() as u64);
        assert_eq!(reopened.state(), &live);
    }

    #[tokio::test]
    async fn run_turn_stored_logs_the_users_message_as_its_own_step() {
        let store = Store::memory();
        let mut thread = store.thread::<AgentState>("t").await.unwrap();
        let mut app = Ohmind::new();
        let steps = app
            .run_turn_stored(&mut thread, "Find papers on membranes' stability")
            .await
            .unwrap();
        let history = store.history("t", ..).await.unwrap();
        assert_eq!(history.len(), 1 + steps.len());
        assert_eq!(node_of(&history[0]), INPUT);
        let message = &history[0].body["messages"][0];
        assert_eq!(message["type"], "human");
        assert_eq!(message["id"], "m1", "the id run_turn would give it");

        let mut state = AgentState::default();
        let expected = Ohmind::new()
            .run_turn(&mut state, "Find papers on membranes' stability")
            .unwrap();
        assert_eq!(steps, expected);
        assert_eq!(thread.state(), &state);
    }

    #[tokio::test]
    async fn a_stale_thread_is_a_store_error_and_nothing_is_written() {
        let store = Store::memory();
        let mut stale = store.thread::<AgentState>("t").await.unwrap();
        let mut other = store.thread::<AgentState>("t").await.unwrap();
        Ohmind::new()
            .run_turn_stored(&mut other, "hi")
            .await
            .unwrap();

        let error = Ohmind::new()
            .run_turn_stored(&mut stale, "hello")
            .await
            .unwrap_err();
        let RunError::Store(store_error) = &error else {
            panic!("expected a store error, got {error:?}");
        };
        assert!(store_error.is_conflict(), "{store_error}");
        assert!(
            error.to_string().starts_with("checkpoint failed: "),
            "{error}"
        );
        let source = std::error::Error::source(&error).expect("the store error");
        assert_eq!(source.to_string(), store_error.to_string());
        assert_eq!(stale.seq(), 0);
        assert_eq!(stale.state(), &AgentState::default());
        assert_eq!(
            store.history("t", ..).await.unwrap().len() as u64,
            other.seq()
        );
    }
}

mod gaia {
    use super::*;
    use state_examples::gaia::{
        self as seed, AgentOptions, Gaia, GaiaState, GaiaStateDelta, INPUT,
        MessageRequestWithHistory, Run, RunnableConfig, User, memory,
    };

    const THREAD: &str = "conversation_123";
    const USER_ID: &str = "user_456";
    const NOW: &str = "2024-01-01T18:30:00+01:00";

    fn config() -> RunnableConfig {
        let user = User {
            user_id: USER_ID.into(),
            name: Some("Ada".into()),
            timezone: Some("Europe/Paris".into()),
            ..User::default()
        };
        seed::build_agent_config(THREAD, &user, NOW, AgentOptions::default())
    }

    /// `store`, indexed for the memories, remembering one thing about the
    /// user.
    async fn with_memories(store: Store) -> Store {
        let store = memory::indexed(store);
        let said = "Prefers meeting slots in the afternoon";
        memory::store_user_message_memory(&store, USER_ID, said, "old")
            .await
            .unwrap();
        store
    }

    /// The example's two turns: a calendar request, then a resumed turn
    /// whose input writes only a message.
    fn inputs() -> [GaiaStateDelta; 2] {
        let request = MessageRequestWithHistory {
            message: "Schedule a meeting for tomorrow".into(),
        };
        let history = vec![Message::human(request.message.as_str()).with_id("user-1")];
        let first = seed::build_initial_state(&request, USER_ID, THREAD, history, None, NOW);
        let resume = GaiaStateDelta::from_json(json!({"messages": [
            {"type": "human", "content": "Continue from where we left off", "id": "user-2"}
        ]}))
        .expect("a partial input");
        [first, resume]
    }

    /// On a bare state: `Gaia::run`, `begin_turn`, `Gaia::run`, the
    /// memories in a store of their own.
    async fn bare() -> (GaiaState, Vec<Run>) {
        let config = config();
        let store = with_memories(Store::memory()).await;
        let mut graph = Gaia::default();
        let [first, resume] = inputs();
        let mut state = GaiaState::default();
        let mut runs = vec![graph.run(&store, &mut state, first, &config).await.unwrap()];
        state.begin_turn();
        runs.push(
            graph
                .run(&store, &mut state, resume, &config)
                .await
                .unwrap(),
        );
        (state, runs)
    }

    #[tokio::test]
    async fn stored_runs_record_the_bare_runs_and_reopen_equal() {
        let (_dir, path, store) = sqlite().await;
        // The memories in the same file as the thread.
        let store = with_memories(store).await;
        let config = config();
        let mut graph = Gaia::default();
        let [first, resume] = inputs();

        let mut thread = store.thread::<GaiaState>(THREAD).await.unwrap();
        let mut runs = vec![
            graph
                .run_stored(&store, &mut thread, first, &config)
                .await
                .unwrap(),
        ];
        let turn_one = thread.seq();
        // Resumed from the store, as the example's section 7.
        let mut thread = store.thread::<GaiaState>(THREAD).await.unwrap();
        assert_eq!(thread.seq(), turn_one);
        thread.begin_turn().await.unwrap();
        assert!(!thread.state().memories_stored, "reset by begin_turn");
        runs.push(
            graph
                .run_stored(&store, &mut thread, resume, &config)
                .await
                .unwrap(),
        );

        // Deterministic: every id comes from the inputs or the graph's
        // counter, so the whole Run (updates and values) is the same.
        let (expected, expected_runs) = bare().await;
        assert_eq!(runs, expected_runs);
        assert_eq!(thread.state(), &expected);

        let mut nodes = vec![INPUT.to_owned()];
        nodes.extend(runs[0].steps.iter().map(|step| step.node.to_owned()));
        nodes.push("?".to_owned()); // begin_turn, no metadata
        nodes.push(INPUT.to_owned());
        nodes.extend(runs[1].steps.iter().map(|step| step.node.to_owned()));
        assert_eq!(logged_nodes(&store, THREAD).await, nodes);
        let history = store.history(THREAD, ..).await.unwrap();
        let begin = history[turn_one as usize].kind;
        assert_eq!(begin, StepKind::BeginTurn);
        assert_eq!(
            history
                .iter()
                .filter(|step| step.kind == StepKind::Apply)
                .count(),
            history.len() - 1
        );

        let reopened = reopen::<GaiaState>(&path, THREAD).await;
        assert_eq!(reopened.seq(), thread.seq());
        assert_eq!(reopened.state(), thread.state());
        // And the turn-1 checkpoint is still there: time travel.
        let at_turn_one: GaiaState = store.state_at(THREAD, turn_one).await.unwrap();
        assert!(at_turn_one.memories_stored);
        assert_eq!(
            at_turn_one.to_json().unwrap(),
            *runs[0].values().last().unwrap(),
            "the last values chunk of turn 1"
        );
    }

    #[tokio::test]
    async fn a_refused_input_is_a_store_error_and_nothing_is_written() {
        let store = with_memories(Store::memory()).await;
        let mut thread = store.thread::<GaiaState>("t").await.unwrap();
        // Removing a message that is not there: add_messages refuses it.
        let input = GaiaState::delta().messages(vec![Message::remove("nope")]);
        let error = Gaia::default()
            .run_stored(&store, &mut thread, input, &config())
            .await
            .unwrap_err();
        assert!(
            matches!(&error, seed::RunError::Store(e) if !e.is_conflict()),
            "{error:?}"
        );
        assert_eq!(thread.seq(), 0);
        assert!(store.history("t", ..).await.unwrap().is_empty());
    }
}
