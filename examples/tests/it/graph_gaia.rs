//! GAIA's graph end to end on a SQLite file: the run streamed with
//! `stream_thread(.., StreamMode::UPDATES)`, each node's update the one the
//! hand-written loop records, in the same order; the document's
//! `execute_graph_streaming` as SSE frames; the pruning route for a long
//! history; the stored log, one step per superstep with its node; and the
//! config as each run's context: one compiled graph, two users, each run
//! reading its own, none stored.

use futures::StreamExt;
use serde_json::json;
use state_core::{Delta, Message, State};
use state_examples::gaia::graph::{self, AGENT, MEMORY_RETRIEVAL, STORE_MEMORY, TOOLS};
use state_examples::gaia::{
    self, Gaia, GaiaState, GaiaStateDelta, KEEP_LAST, MessageRequestWithHistory, SSE_DONE,
};
use state_graph::{Event, GraphError, START, StreamMode};
use state_store::{StepKind, Store};

use gaia::demo::{NOW, OTHER_THREAD, THREAD, USER_ID, config, other_config, remembered};

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
    let store = Store::sqlite(&path).await.unwrap();
    let services = graph::shared(Gaia::new(remembered()));
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
        json!(["Prefers meeting slots in the afternoon"])
    );
    assert_eq!(
        chunks[1][AGENT]["messages"][0]["tool_calls"][0]["name"],
        gaia::FETCH_EVENTS
    );
    assert_eq!(chunks[4], json!({STORE_MEMORY: {"memories_stored": true}}));
    assert!(outcome.state().memories_stored);

    // The hand-written loop on a bare state records the same updates.
    let mut legacy = Gaia::new(remembered());
    let mut expected = GaiaState::default();
    let run = legacy.run(&mut expected, first_input(), &config()).unwrap();
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
        .run(&mut expected, second_input(), &config())
        .unwrap();
    assert_eq!(frames, resumed.sse_events());
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
    // Mem0 got the query once per turn.
    assert_eq!(graph::lock(&services).memory.entries().len(), 2 + 2);
}

#[tokio::test]
async fn a_long_history_is_filtered_then_trimmed_by_the_start_router() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::sqlite(dir.path().join("checkpoints.db"))
        .await
        .unwrap();
    let services = graph::shared(Gaia::new(remembered()));
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

    let mut legacy = Gaia::new(remembered());
    let expected = legacy
        .run(&mut GaiaState::default(), input, &config())
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
    let services = graph::shared(Gaia::new(remembered()));
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
    let stored = graph::lock(&services)
        .memory
        .entries()
        .last()
        .cloned()
        .unwrap();
    assert_eq!(
        (stored.user_id.as_str(), stored.conversation_id.as_str()),
        ("user_789", OTHER_THREAD),
        "stored for the run's user, config[\"configurable\"][\"user_id\"]"
    );

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
