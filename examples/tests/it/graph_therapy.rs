//! The therapy agent's graph end to end on a SQLite file: six turns of one
//! session, each one `invoke_thread`; the crisis gate's routing per turn
//! (the crisis branch on turn 4, the therapeutic one otherwise), the two
//! extractors in one superstep when memories are kept; each turn's
//! supersteps and output the same as the hand-written sequence's; the
//! stored log, one step per superstep, its nodes in the metadata; and the
//! runtime context given per run: one compiled graph, two contexts.

use state_core::State;
use state_examples::therapy::graph;
use state_examples::therapy::{
    self, AgentInput, CRISIS_GATE, CRISIS_RESPONSE, Channel, Checkpointer, EXTRACT_FACTS,
    EXTRACT_PROCEDURAL, FINALIZE_TURN, LOAD_MEMORY, Message, ROUTE_CRISIS, ROUTE_THERAPEUTIC,
    SELECT_MODE, THERAPEUTIC_RESPONSE, TherapyAgent, TherapyState, Turn,
};
use state_graph::{GraphError, START};
use state_store::{StepKind, Store};

const SESSION: &str = "session-42";

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

/// The nodes of each superstep of a turn, after its input.
fn supersteps(turn: &Turn) -> Vec<Vec<&'static str>> {
    turn.steps[1..]
        .iter()
        .map(|step| step.writes.iter().map(|(node, _)| *node).collect())
        .collect()
}

fn therapeutic_path(extract: bool) -> Vec<Vec<&'static str>> {
    let mut path = vec![
        vec![LOAD_MEMORY],
        vec![CRISIS_GATE],
        vec![SELECT_MODE],
        vec![THERAPEUTIC_RESPONSE],
        vec![FINALIZE_TURN],
    ];
    if extract {
        path.push(vec![EXTRACT_FACTS, EXTRACT_PROCEDURAL]);
    }
    path
}

#[tokio::test]
async fn each_turn_is_one_run_routed_by_the_crisis_gate_and_logged() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let store = Store::sqlite(&path).await.unwrap();
    let ctx = therapy::demo_context();
    let app = graph::compile(store.clone()).unwrap();

    // The hand-written sequence, on its own context (the stores fill up).
    let legacy = TherapyAgent::new(therapy::demo_context());
    let mut saver = Checkpointer::default();

    let mut turns = Vec::new();
    for (i, message) in TURNS.into_iter().enumerate() {
        let before = store.thread_info(SESSION).await.map_or(0, |info| info.seq);
        let turn = graph::run_turn(&app, &ctx, &input(message)).await.unwrap();
        let expected = saver.run_turn(&legacy, &input(message)).unwrap();
        assert_eq!(turn.steps, expected.steps, "turn {}: the supersteps", i + 1);
        assert_eq!(turn.output, expected.output, "turn {}: the output", i + 1);
        assert_eq!(turn.state, expected.state, "turn {}: the state", i + 1);
        assert_eq!(turn.state.progress.turn_count, i as u32 + 1);

        // This turn's steps in the log: the input (which starts the turn),
        // then one step per superstep, its nodes in the metadata.
        let logged = store.history(SESSION, before + 1..).await.unwrap();
        let input = logged
            .iter()
            .position(|step| step.nodes() == [START])
            .expect("the input is logged");
        assert!(
            logged[..input]
                .iter()
                .all(|step| step.kind == StepKind::BeginTurn),
            "nothing but a turn start before it"
        );
        let nodes: Vec<Vec<&str>> = logged[input + 1..]
            .iter()
            .map(|step| {
                assert_eq!(step.kind, StepKind::Superstep);
                step.nodes()
            })
            .collect();
        assert_eq!(nodes, supersteps(&turn), "turn {}: the log", i + 1);
        turns.push(turn);
    }

    // The routing per turn.
    for (i, turn) in turns.iter().enumerate() {
        let crisis = i == 3;
        let route = if crisis {
            ROUTE_CRISIS
        } else {
            ROUTE_THERAPEUTIC
        };
        assert_eq!(turn.state.routing.route, route, "turn {}", i + 1);
        assert_eq!(turn.output.should_persist_memory, !crisis);
        if crisis {
            assert_eq!(
                supersteps(turn),
                [
                    vec![LOAD_MEMORY],
                    vec![CRISIS_GATE],
                    vec![CRISIS_RESPONSE],
                    vec![FINALIZE_TURN]
                ]
            );
        } else {
            assert_eq!(supersteps(turn), therapeutic_path(true), "turn {}", i + 1);
        }
    }
    let modes: Vec<&str> = turns.iter().map(|t| t.output.mode.as_str()).collect();
    assert_eq!(
        modes,
        [
            "supportive",
            "guided_exercise",
            "guided_exercise",
            "supportive",
            "guided_exercise",
            "closing"
        ]
    );
    // The exercise survived the crisis turn (progress merges) and ended
    // on its last step.
    assert_eq!(turns[3].state.progress.exercise_step, Some(2));
    assert_eq!(turns[4].state.progress.exercise_step, None);
    assert!(
        turns[4]
            .output
            .response_text
            .contains("That was the last step.")
    );
    assert_eq!(ctx.crisis_log_backend.entries().len(), 1);
    assert_eq!(
        ctx.memory_store.procedural_rules(),
        ["Please keep your answers short."]
    );

    // The session's history holds every turn, twice the turns, and a new
    // connection on the file reads the same state.
    let last = &turns[5].state;
    assert_eq!(last.history.len(), 2 * TURNS.len());
    let reopened = Store::sqlite(&path)
        .await
        .unwrap()
        .thread::<TherapyState>(SESSION)
        .await
        .unwrap();
    assert_eq!(reopened.state(), last);
    assert_eq!(reopened.state(), &saver.get(SESSION).unwrap().unwrap());
}

#[tokio::test]
async fn a_one_shot_caller_runs_in_memory_and_the_gate_asks_first() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::sqlite(dir.path().join("sessions.db")).await.unwrap();
    let ctx = therapy::demo_context();
    let app = graph::compile(store.clone()).unwrap();
    let input = AgentInput {
        channel: Channel::Sms,
        history: vec![
            Message::user("Work has been brutal."),
            Message::assistant("That sounds exhausting.", "supportive"),
        ],
        ..AgentInput::new("I can't go on like this.", None)
    };
    let turn = graph::run_turn(&app, &ctx, &input).await.unwrap();
    assert_eq!(supersteps(&turn), therapeutic_path(true));
    assert_eq!(turn.output.mode, "clarifying");
    assert_eq!(turn.output.mode_source, "crisis_gate");
    assert_eq!(
        turn.state.progress.turn_count, 2,
        "counted from the history"
    );
    assert!(
        store.threads().await.unwrap().is_empty(),
        "no thread written"
    );

    let legacy = TherapyAgent::new(therapy::demo_context());
    let expected = legacy.run_turn(None, &input).unwrap();
    assert_eq!(turn.steps, expected.steps);
    assert_eq!(turn.output, expected.output);
    assert_eq!(turn.state, expected.state);
}

/// One compiled graph, its context given per run: a read-only context
/// ends the turn after `finalize_turn` (the router reads the context), the
/// next turn with a read-write copy of it (sharing its stores) extracts
/// into the same memory store; a run without a context is refused before
/// it writes anything.
#[tokio::test]
async fn the_context_is_given_per_run_on_one_graph() {
    let store = Store::memory();
    let app = graph::compile(store.clone()).unwrap();

    let err = app
        .invoke_thread(SESSION, TherapyState::delta())
        .await
        .unwrap_err();
    assert!(matches!(err, GraphError::NoContext { .. }), "{err}");
    assert!(store.thread_info(SESSION).await.is_err(), "nothing written");

    let read_write = therapy::demo_context();
    let read_only = therapy::WorkflowContext {
        memory_mode: therapy::MemoryMode::ReadOnly,
        ..read_write.clone()
    };
    let turn = graph::run_turn(&app, &read_only, &input(TURNS[0]))
        .await
        .unwrap();
    assert_eq!(supersteps(&turn), therapeutic_path(false));
    assert!(!turn.output.should_persist_memory);
    assert_eq!(turn.state.diagnostics.extract_facts_ms, None);
    assert!(read_write.memory_store.procedural_rules().is_empty());

    // The same session, the next turn, with the read-write context: the
    // extractors run, and what they keep is in the store both copies
    // share.
    let turn = graph::run_turn(&app, &read_write, &input(TURNS[0]))
        .await
        .unwrap();
    assert_eq!(turn.state.progress.turn_count, 2);
    assert_eq!(supersteps(&turn), therapeutic_path(true));
    assert_eq!(
        read_only.memory_store.procedural_rules(),
        ["Please keep your answers short."]
    );
}
