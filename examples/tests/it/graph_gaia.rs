//! GAIA's graph end to end on a SQLite file: the run streamed with
//! `stream_thread(.., StreamMode::UPDATES)`, each node's update the one the
//! hand-written loop records, in the same order; the document's
//! `execute_graph_streaming` as SSE frames; the pruning route for a long
//! history; the stored log, one step per superstep with its node; the
//! config as each run's context: one compiled graph, two users, each run
//! reading its own, none stored; and the users' long-term memories, the
//! store's items, found by meaning across threads and runs, per user, on
//! `Store::memory()` and a SQLite file.

use crate::stores::TestStore;
use futures::StreamExt;
use serde_json::json;
use state_core::{Delta, Message, State};
use state_examples::gaia::graph::{self, AGENT, MEMORY_RETRIEVAL, STORE_MEMORY, TOOLS};
use state_examples::gaia::{
    self, Gaia, GaiaState, GaiaStateDelta, KEEP_LAST, MessageRequestWithHistory, RunnableConfig,
    SSE_DONE,
};
use state_graph::{CompiledGraph, Event, GraphError, START, StreamMode};
use state_store::{StepKind, Store};

use gaia::demo::{
    EARLIER, EARLIER_THREAD, NOW, OTHER_THREAD, OTHER_USER_ID, THREAD, USER_ID, config,
    other_config, remember_earlier,
};

/// `store`, indexed for the memories, holding what the demo user said
/// earlier.
async fn with_earlier_memories(store: Store) -> Store {
    let store = gaia::memory::indexed(store);
    remember_earlier(&store)
        .await
        .expect("the memories are put");
    store
}

/// The hand-written loop's own memories: a fresh in-memory store with the
/// same earlier memories.
async fn loop_memories() -> Store {
    with_earlier_memories(Store::memory()).await
}

/// Every memory of `user` in `store`, newest first.
async fn memories_of(store: &Store, user: &str) -> Vec<String> {
    let items = store
        .search_items(&gaia::memory::namespace(user))
        .await
        .expect("the memories read");
    items
        .iter()
        .map(|item| item.value["text"].as_str().unwrap().to_owned())
        .collect()
}

fn first_input() -> GaiaStateDelta {
    let request = MessageRequestWithHistory {
        message: "Schedule a meeting for tomorrow".into(),
    };
    let history = vec![Message::human(request.message.as_str()).with_id("user-1")];
    gaia::build_initial_state(&request, USER_ID, THREAD, history, None, NOW)
}

fn second_input() -> GaiaStateDelta {
    GaiaStateDelta::from_json(json!({"messages": [
        {"type": "human", "content": "Continue from where we left off", "id": "user-2"}
    ]}))
    .expect("a partial input")
}

/// The nodes of each logged step (`__start__` for the run's input, which
/// starts the turn), with its kind. A turn start logged apart from the
/// input, without nodes, is left out.
async fn log(store: &Store, thread: &str) -> Vec<(StepKind, Vec<String>)> {
    let history = store.history(thread, ..).await.expect("the log reads");
    history
        .iter()
        .map(|step| {
            let nodes: Vec<String> = step.nodes().into_iter().map(str::to_owned).collect();
            (step.kind, nodes)
        })
        .filter(|(kind, nodes)| !(*kind == StepKind::BeginTurn && nodes.is_empty()))
        .collect()
}

/// The thread's last step.
async fn outcome_seq(store: &Store) -> u64 {
    store.thread_info(THREAD).await.unwrap().seq
}

/// The nodes of each logged step, the input as `__start__`.
fn nodes_of(log: &[(StepKind, Vec<String>)]) -> Vec<String> {
    log.iter()
        .map(|(kind, nodes)| {
            if nodes != &[START] {
                assert_eq!(*kind, StepKind::Superstep, "{nodes:?}");
            }
            nodes.join("+")
        })
        .collect()
}

#[tokio::test]
async fn the_run_streams_each_nodes_update_and_logs_each_superstep() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("checkpoints.db");
    let store = with_earlier_memories(Store::sqlite(&path).await.unwrap()).await;
    let services = graph::shared(Gaia::default());
    let app = graph::compile(&services, store.clone()).unwrap();

    // Turn 1, streamed: the updates as the runner sends them.
    let mut events =
        app.with_context(config())
            .stream_thread(THREAD, first_input(), StreamMode::UPDATES);
    let mut updates = Vec::new();
    let mut chunks = Vec::new();
    let mut outcome = None;
    while let Some(event) = events.next().await {
        let event = event.expect("the run goes on");
        match event {
            Event::Update { ref node, .. } => {
                assert_eq!(event.mode(), "updates");
                chunks.push(event.data().unwrap());
                updates.push(node.clone());
            }
            Event::End(out) => outcome = Some(out),
            other => panic!("only updates were asked for: {}", other.mode()),
        }
    }
    let outcome = outcome.expect("the stream ends with its outcome");
    assert_eq!(
        updates,
        [MEMORY_RETRIEVAL, AGENT, TOOLS, AGENT, STORE_MEMORY],
        "the agent calls the calendar, reads its answer, then the memory is stored"
    );
    assert_eq!(
        chunks[0][MEMORY_RETRIEVAL]["memories"],
        json!(["Prefers meeting slots in the afternoon"]),
        "the earlier memory that shares a word with the query"
    );
    assert_eq!(
        chunks[1][AGENT]["messages"][0]["tool_calls"][0]["name"],
        gaia::FETCH_EVENTS
    );
    assert_eq!(chunks[4], json!({STORE_MEMORY: {"memories_stored": true}}));
    assert!(outcome.state().memories_stored);

    // The hand-written loop on a bare state records the same updates.
    let legacy_memories = loop_memories().await;
    let mut legacy = Gaia::default();
    let mut expected = GaiaState::default();
    let run = legacy
        .run(&legacy_memories, &mut expected, first_input(), &config())
        .await
        .unwrap();
    assert_eq!(chunks, run.updates().unwrap());
    assert_eq!(outcome.state(), &expected);

    // Turn 2, resumed from the checkpoint, as GAIA's SSE endpoint sends
    // it: the frames of each update, then [DONE].
    let frames: Vec<String> = graph::execute_graph_streaming(&app, second_input(), &config())
        .map(|frame| frame.expect("the resumed turn runs"))
        .collect()
        .await;
    expected.begin_turn();
    let resumed = legacy
        .run(&legacy_memories, &mut expected, second_input(), &config())
        .await
        .unwrap();
    assert_eq!(frames, resumed.sse_events());
    // The resumed turn found turn 1's memory: the query itself.
    assert_eq!(
        expected.memories,
        [
            "Schedule a meeting for tomorrow",
            "Prefers meeting slots in the afternoon"
        ]
    );
    assert_eq!(frames.last().map(String::as_str), Some(SSE_DONE));
    assert!(frames[0].contains("I'll check your calendar"), "{frames:?}");

    // The log: per turn, the input (which starts the turn), then one
    // superstep per node.
    let mut expected_log = Vec::new();
    for _ in 0..2 {
        expected_log.push(START.to_owned());
        for node in [MEMORY_RETRIEVAL, AGENT, TOOLS, AGENT, STORE_MEMORY] {
            expected_log.push(node.to_owned());
        }
    }
    assert_eq!(nodes_of(&log(&store, THREAD).await), expected_log);

    // Another process on the same file sees the thread as the run left it.
    let reopened = Store::sqlite(&path)
        .await
        .unwrap()
        .thread::<GaiaState>(THREAD)
        .await
        .unwrap();
    assert_eq!(reopened.state(), &expected);
    assert_eq!(reopened.seq(), outcome_seq(&store).await);

    // The memories, newest first: the query, put by each turn (the same
    // words, so the same item: the second put replaced the first), then
    // the earlier ones. The loop's store holds the same.
    let mine = memories_of(&store, USER_ID).await;
    assert_eq!(
        mine,
        ["Schedule a meeting for tomorrow", EARLIER[1], EARLIER[0]]
    );
    assert_eq!(memories_of(&legacy_memories, USER_ID).await, mine);
    let namespace = gaia::memory::namespace(USER_ID);
    let query = store
        .get_item(
            &namespace,
            &gaia::memory::key("Schedule a meeting for tomorrow"),
        )
        .await
        .unwrap()
        .expect("the query is remembered");
    assert_eq!(query.value["conversation_id"], THREAD);
    assert!(query.updated_at > query.created_at, "put again by turn 2");
    let earlier = store
        .get_item(&namespace, &gaia::memory::key(EARLIER[0]))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(earlier.value["conversation_id"], EARLIER_THREAD);
}

#[tokio::test]
async fn a_long_history_is_filtered_then_trimmed_by_the_start_router() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::sqlite(dir.path().join("checkpoints.db"))
        .await
        .unwrap();
    let store = with_earlier_memories(store).await;
    let services = graph::shared(Gaia::default());
    let app = graph::compile(&services, store.clone()).unwrap();

    let mut history: Vec<Message> = (1..=14)
        .map(|i| Message::human(format!("message {i}")).with_id(format!("h{i}")))
        .collect();
    history.insert(3, Message::ai("x".repeat(12_000)).with_id("huge"));
    let request = MessageRequestWithHistory {
        message: "What did we say?".into(),
    };
    let input = gaia::build_initial_state(&request, USER_ID, "long", history, None, NOW);

    // stream_run records what the hand-written loop records: each update
    // and the state after it.
    let mut seen = Vec::new();
    let mut long = config();
    long.configurable.thread_id = "long".to_owned();
    let (run, outcome) = graph::stream_run(&app, input.clone(), &long, |event| {
        seen.push(event.mode());
    })
    .await
    .unwrap();
    let nodes: Vec<&str> = run.steps.iter().map(|step| step.node).collect();
    assert_eq!(
        nodes,
        [
            graph::FILTER_MESSAGES,
            graph::TRIM_MESSAGES,
            MEMORY_RETRIEVAL,
            AGENT,
            STORE_MEMORY
        ]
    );
    assert_eq!(seen.first(), Some(&"values"), "the state after the input");
    assert_eq!(seen.last(), Some(&"end"));
    let after_trim = &run.steps[1].values["messages"];
    assert_eq!(after_trim.as_array().unwrap().len(), KEEP_LAST);
    assert_eq!(after_trim[0]["id"], "h5");
    assert!(
        !outcome.state().messages.contains_id("huge"),
        "filtered out by the overwrite"
    );

    let mut legacy = Gaia::default();
    let expected = legacy
        .run(
            &loop_memories().await,
            &mut GaiaState::default(),
            input,
            &config(),
        )
        .await
        .unwrap();
    assert_eq!(run, expected);

    let mut expected = vec![START];
    expected.extend(nodes);
    assert_eq!(nodes_of(&log(&store, "long").await), expected);
}

fn kenji_input() -> GaiaStateDelta {
    let request = MessageRequestWithHistory {
        message: "Schedule a meeting for tomorrow".into(),
    };
    let history = vec![Message::human(request.message.as_str()).with_id("kenji-1")];
    let config = other_config();
    let user = &config.configurable.user_id;
    gaia::build_initial_state(&request, user, OTHER_THREAD, history, None, NOW)
}

/// One compiled graph, two users: each run's nodes read that run's config
/// (`ctx.context()`), as GAIA's read `config["configurable"]`: the time
/// zone in the answer, the picked tool in the route. The config is not
/// stored: a run without one is refused before it writes anything, and
/// the next turn reads the config it is given.
#[tokio::test]
async fn each_run_reads_its_own_config_from_one_graph() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::sqlite(dir.path().join("checkpoints.db"))
        .await
        .unwrap();
    let store = with_earlier_memories(store).await;
    let services = graph::shared(Gaia::default());
    let app = graph::compile(&services, store.clone()).unwrap();

    let err = app.invoke_thread(THREAD, first_input()).await.unwrap_err();
    assert!(matches!(err, GraphError::NoContext { .. }), "{err}");
    assert!(store.thread_info(THREAD).await.is_err(), "nothing written");

    // Ada, in Paris, with no tool picked: the calendar, in her time zone.
    let (ada, _) = graph::stream_run(&app, first_input(), &config(), |_| {})
        .await
        .unwrap();
    let nodes: Vec<&str> = ada.steps.iter().map(|s| s.node).collect();
    assert_eq!(nodes, [MEMORY_RETRIEVAL, AGENT, TOOLS, AGENT, STORE_MEMORY]);
    let answer = ada.steps[3].values["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()["content"]
        .clone();
    assert!(
        answer.as_str().unwrap().ends_with("in Europe/Paris."),
        "{answer}"
    );

    // Kenji, in Tokyo, who picked the mail tool, on the same graph.
    let (kenji, outcome) = graph::stream_run(&app, kenji_input(), &other_config(), |_| {})
        .await
        .unwrap();
    let nodes: Vec<&str> = kenji.steps.iter().map(|s| s.node).collect();
    assert_eq!(
        nodes,
        [MEMORY_RETRIEVAL, AGENT, STORE_MEMORY],
        "no calendar"
    );
    assert_eq!(
        outcome.state().messages.last().unwrap().text(),
        "Hi Kenji! How can I help?"
    );
    assert_eq!(outcome.state().mem0_user_id.as_deref(), Some("user_789"));
    // Ada's run put the same words under her namespace: Kenji's search
    // does not see them.
    assert!(outcome.state().memories.is_empty(), "none of Ada's");
    let stored = store
        .get_item(
            &gaia::memory::namespace(OTHER_USER_ID),
            &gaia::memory::key("Schedule a meeting for tomorrow"),
        )
        .await
        .unwrap()
        .expect("stored for the run's user, config[\"configurable\"][\"user_id\"]");
    assert_eq!(stored.value["conversation_id"], OTHER_THREAD);

    // Ada's next turn with another config: the run reads the one it is
    // given, not one kept from before.
    let mut tokyo = config();
    tokyo.configurable.user_timezone = "Asia/Tokyo".to_owned();
    let frames: Vec<String> = graph::execute_graph_streaming(&app, second_input(), &tokyo)
        .map(|frame| frame.unwrap())
        .collect()
        .await;
    assert!(
        frames
            .iter()
            .any(|f| f.contains("a free slot in Asia/Tokyo")),
        "{frames:?}"
    );

    // The snapshot (GAIA's `aget_state(config)`): its values, nothing next,
    // the last step's metadata.
    let snapshot = app.with_context(config()).get_state(THREAD).await.unwrap();
    assert!(snapshot.next().is_empty());
    assert!(snapshot.state().memories_stored);
    assert_eq!(snapshot.metadata()["nodes"], json!([STORE_MEMORY]));
    assert_eq!(snapshot.seq(), outcome_seq(&store).await);
}

/// A turn of `config`'s user on `thread`, asking `question`: the memories its
/// search found, and the agent's answer.
async fn ask(
    app: &CompiledGraph<GaiaState, RunnableConfig>,
    config: &RunnableConfig,
    thread: &str,
    question: &str,
) -> (Vec<String>, String) {
    let request = MessageRequestWithHistory {
        message: question.into(),
    };
    let user = &config.configurable.user_id;
    let history = vec![Message::human(question).with_id(format!("{thread}-1"))];
    let input = gaia::build_initial_state(&request, user, thread, history, None, NOW);
    let mut config = config.clone();
    config.configurable.thread_id = thread.to_owned();
    let (run, outcome) = graph::stream_run(app, input, &config, |_| {})
        .await
        .expect("the turn runs");
    let nodes: Vec<&str> = run.steps.iter().map(|step| step.node).collect();
    assert_eq!(nodes, [MEMORY_RETRIEVAL, AGENT, STORE_MEMORY]);
    let state = outcome.into_state();
    let answer = state.messages.last().map(Message::text).unwrap_or_default();
    (state.memories, answer)
}

/// GAIA's long-term memory through the run's store (`ctx.store()`): what
/// a user says on one thread, a later run of theirs finds on another, by
/// meaning, and a graph on another worker finds it too; another user finds
/// none of it.
async fn memories_are_found_across_threads_and_runs_per_user(ts: TestStore) {
    let store = gaia::memory::indexed(ts.store.clone());
    let app = graph::compile(&graph::shared(Gaia::default()), store.clone()).unwrap();
    let ada = config();
    let kenji = other_config();

    // Monday: nothing remembered yet; the question is put.
    let (found, answer) = ask(&app, &ada, "monday", "Book a table for lunch with Grace").await;
    assert!(found.is_empty(), "{}", ts.name);
    assert_eq!(answer, "Hi Ada! How can I help?");

    // Tuesday, another thread: Monday's question shares "lunch".
    let (found, answer) = ask(&app, &ada, "tuesday", "Where is lunch today?").await;
    assert_eq!(found, ["Book a table for lunch with Grace"], "{}", ts.name);
    assert_eq!(
        answer,
        "Hi Ada! I remember: Book a table for lunch with Grace."
    );

    // Kenji asks the same on his own thread: Ada's memories are not his.
    let (found, answer) = ask(&app, &kenji, "kenji-tuesday", "Where is lunch today?").await;
    assert!(found.is_empty(), "{}: {found:?}", ts.name);
    assert_eq!(answer, "Hi Kenji! How can I help?");

    // Wednesday, a graph on another worker (a new connection to the
    // SQLite file): both lunch memories, the closer first; nothing that
    // shares no word with the query.
    let other = gaia::memory::indexed(ts.another_worker().await);
    let app = graph::compile(&graph::shared(Gaia::default()), other.clone()).unwrap();
    let (found, _) = ask(&app, &ada, "wednesday", "Lunch plans?").await;
    assert_eq!(
        found,
        ["Where is lunch today?", "Book a table for lunch with Grace"],
        "{}",
        ts.name
    );
    assert_eq!(
        memories_of(&other, USER_ID).await,
        [
            "Lunch plans?",
            "Where is lunch today?",
            "Book a table for lunch with Grace"
        ]
    );
    assert_eq!(
        memories_of(&other, OTHER_USER_ID).await,
        ["Where is lunch today?"]
    );
    let users = other
        .list_namespaces(&[gaia::memory::NAMESPACE])
        .await
        .unwrap();
    assert_eq!(
        users,
        [
            ["memories".to_owned(), USER_ID.to_owned()],
            ["memories".to_owned(), OTHER_USER_ID.to_owned()]
        ]
    );
}

on_both_stores!(memories_are_found_across_threads_and_runs_per_user);

/// The search ranks by meaning: a store without the index fails the
/// memory node, and the error says what to do.
#[tokio::test]
async fn a_store_without_the_index_fails_the_memory_node_saying_so() {
    let store = Store::memory();
    let app = graph::compile(&graph::shared(Gaia::default()), store.clone()).unwrap();
    let err = app
        .with_context(config())
        .invoke_thread(THREAD, first_input())
        .await
        .unwrap_err();
    assert_eq!(err.node(), Some(MEMORY_RETRIEVAL), "{err}");
    let source = std::error::Error::source(&err).map(ToString::to_string);
    assert!(
        source
            .as_deref()
            .is_some_and(|s| s.contains("Store::with_index")),
        "{err}: {source:?}"
    );
}
