//! The Command-based supervisor, end to end: the routes each question
//! takes (the supervisor's commands, the workers' handoffs back), what the
//! workers report, the routes logged on a store, and a run whose worker
//! fails going on from its last step without asking the researcher again.

use crate::stores::TestStore;
use state_core::{Message, MessagesState, State};
use state_examples::langgraph::supervisor::{
    AgentFailed, FINISH, QUESTIONS, SupervisorState, build_graph, build_with, code_agent,
    research_agent, supervisor_llm,
};
use state_examples::langgraph::{supersteps, updates};
use state_graph::{CompiledGraph, END, GraphError, NodeError, START, StateGraph, StreamMode};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

fn question(text: &str) -> state_examples::langgraph::supervisor::SupervisorStateDelta {
    SupervisorState::delta().messages([("user", text)])
}

#[tokio::test]
async fn each_question_takes_the_supervisors_routes() {
    let graph = build_graph().unwrap();

    let (steps, outcome) = updates(graph.stream(question(QUESTIONS[0]), StreamMode::UPDATES))
        .await
        .unwrap();
    let path: Vec<&str> = steps.iter().map(|s| s.node.as_str()).collect();
    assert_eq!(path, ["supervisor", "coder", "supervisor"]);
    assert_eq!(steps[0].update["next"], "coder");
    assert_eq!(steps[2].update["next"], END);
    let state = outcome.into_state();
    let report = state.base.messages.last().unwrap();
    assert_eq!(report.name(), Some("coder"));
    assert_eq!(report.text(), "The result is 6.48074069840786.");
    assert_eq!(
        state.next, END,
        "FINISH is written as END, as the Python does"
    );

    let (steps, outcome) = updates(graph.stream(question(QUESTIONS[1]), StreamMode::UPDATES))
        .await
        .unwrap();
    let path: Vec<&str> = steps.iter().map(|s| s.node.as_str()).collect();
    assert_eq!(
        path,
        [
            "supervisor",
            "researcher",
            "supervisor",
            "coder",
            "supervisor"
        ]
    );
    let state = outcome.into_state();
    let names: Vec<Option<&str>> = state.base.messages.iter().map(Message::name).collect();
    assert_eq!(names, [None, Some("researcher"), Some("coder")]);
    assert!(
        state.base.messages[1].text().contains("$2.28 trillion"),
        "{:?}",
        state.base.messages[1]
    );
    assert_eq!(state.base.messages[2].text(), "The result is 3.075.");
}

#[test]
fn the_canned_supervisor_finishes_when_nothing_is_asked() {
    assert_eq!(supervisor_llm(&[]).next, FINISH);
    let asked = [Message::human("What's the square root of 42?")];
    assert_eq!(supervisor_llm(&asked).next, "coder");
    let answered = [
        asked[0].clone(),
        Message::human("The result is 6.48.").with_name("coder"),
    ];
    assert_eq!(supervisor_llm(&answered).next, FINISH);
}

#[test]
fn the_picture_shows_where_each_command_may_go() {
    let picture = build_graph().unwrap().draw_mermaid();
    for edge in [
        "\t__start__ --> supervisor;\n",
        "\tsupervisor -.-> researcher;\n",
        "\tsupervisor -.-> coder;\n",
        "\tsupervisor -.-> __end__;\n",
        "\tresearcher -.-> supervisor;\n",
        "\tcoder -.-> supervisor;\n",
    ] {
        assert!(picture.contains(edge), "{edge:?} in\n{picture}");
    }
}

/// A one-node agent answering `text`, counting its calls, failing while
/// `fail` is set (then clearing it).
fn scripted_agent(
    text: &'static str,
    calls: &Arc<AtomicUsize>,
    fail: &Arc<AtomicBool>,
) -> CompiledGraph<MessagesState> {
    let (calls, fail) = (calls.clone(), fail.clone());
    let mut g = StateGraph::<MessagesState>::new();
    g.add_node("agent", move |_: &MessagesState| {
        calls.fetch_add(1, Ordering::SeqCst);
        if fail.swap(false, Ordering::SeqCst) {
            return Err(NodeError::msg("the model is unavailable"));
        }
        Ok(MessagesState::delta().messages(vec![Message::ai(text)]))
    });
    g.add_edge(START, "agent").add_edge("agent", END);
    g.compile().unwrap()
}

/// The routes are logged per superstep; when the coder fails, the run
/// stops there, and another worker goes on from the last committed step:
/// the supervisor's and the researcher's work is not done again.
async fn a_failed_worker_goes_on_without_redoing_work(ts: TestStore) {
    let researched = Arc::new(AtomicUsize::new(0));
    let coded = Arc::new(AtomicUsize::new(0));
    let fail = Arc::new(AtomicBool::new(true));
    let never = Arc::new(AtomicBool::new(false));
    let graph = build_with(
        scripted_agent(
            "GDPs: $2.28 trillion and $3.87 trillion.",
            &researched,
            &never,
        ),
        scripted_agent("The result is 3.075.", &coded, &fail),
    )
    .unwrap()
    .with_store(ts.store.clone());

    let err = graph
        .invoke_thread("gdp", question(QUESTIONS[1]))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, GraphError::Node { node, source }
            if node == "coder" && source.downcast_ref::<AgentFailed>().is_some()),
        "{}: {err:?}",
        ts.name
    );
    assert_eq!(
        supersteps(&ts.store, "gdp", 0).await.unwrap(),
        [vec!["supervisor"], vec!["researcher"], vec!["supervisor"]]
    );

    // Another worker, the real coder this time.
    let other = ts.another_worker().await;
    let again = Arc::new(AtomicUsize::new(0));
    let worker = build_with(
        scripted_agent("unused", &again, &never),
        code_agent().unwrap(),
    )
    .unwrap()
    .with_store(other);
    assert_eq!(worker.get_state("gdp").await.unwrap().next(), ["coder"]);
    let out = worker.continue_thread("gdp").await.unwrap();
    assert_eq!(
        again.load(Ordering::SeqCst),
        0,
        "{}: the researcher is not asked again",
        ts.name
    );
    assert_eq!(researched.load(Ordering::SeqCst), 1);
    assert_eq!(coded.load(Ordering::SeqCst), 1, "the failed attempt");
    let path: Vec<String> = supersteps(&ts.store, "gdp", 0)
        .await
        .unwrap()
        .into_iter()
        .flatten()
        .collect();
    assert_eq!(
        path,
        [
            "supervisor",
            "researcher",
            "supervisor",
            "coder",
            "supervisor"
        ],
        "{}",
        ts.name
    );
    assert_eq!(out.state().next, END);
    assert_eq!(
        out.state().base.messages.last().unwrap().text(),
        "The result is 3.075."
    );
}

/// The real agents on a thread: the run and its snapshot.
async fn the_run_on_a_thread_ends_with_nothing_next(ts: TestStore) {
    let graph = build_with(research_agent().unwrap(), code_agent().unwrap())
        .unwrap()
        .with_store(ts.store.clone());
    let out = graph
        .invoke_thread("sqrt", question(QUESTIONS[0]))
        .await
        .unwrap();
    assert!(!out.is_interrupted());
    let snapshot = graph.get_state("sqrt").await.unwrap();
    assert!(snapshot.next().is_empty(), "{:?}", snapshot.next());
    assert_eq!(snapshot.state(), out.state());
    assert_eq!(
        snapshot.metadata()["nodes"],
        serde_json::json!(["supervisor"])
    );
}

on_both_stores!(
    a_failed_worker_goes_on_without_redoing_work,
    the_run_on_a_thread_ends_with_nothing_next,
);
