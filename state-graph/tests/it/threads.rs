//! The graph runner on real storage (memory, a SQLite file, a PostgreSQL
//! server): what a run logs on its thread, and interrupts answered from
//! another worker, each on every backend.

use crate::on_every_backend;
use crate::support::Count;
use crate::support::backends::TestStore;
use crate::support::log::{history, reloaded, summary};
use serde_json::{Value, json};
use state_core::{AgentState, State};
use state_graph::{CompiledGraph, Ctx, END, GraphError, NodeError, Resume, START, StateGraph};
use state_store::{StepKind, StepRecord, Store};
use std::sync::{Arc, Mutex};

#[derive(AgentState, Debug, Clone, PartialEq)]
struct Run {
    /// Who ran, in the order the deltas were applied.
    #[reducer(append)]
    log: Vec<String>,
    /// What people answered.
    #[reducer(append)]
    answers: Vec<String>,
    /// What the fan-outs send.
    subjects: Vec<String>,
    /// Reset by every turn.
    #[scope(turn)]
    #[default("calm")]
    mood: String,
}

fn log(entry: impl Into<String>) -> RunDelta {
    Run::delta().log(vec![entry.into()])
}

fn answer_text(v: &Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_owned)
}

// ---------------------------------------------------------------------------
// What invoke_thread logs.

/// START fans out to "b", "a", "Z" (added in that order); all three lead to
/// "merge"; "a" also sends each subject to the worker "joke".
fn logged_graph(store: Store) -> CompiledGraph<Run> {
    let mut g = StateGraph::<Run>::new();
    g.add_node("b", |_: &Run| log("b"));
    g.add_node("a", |_: &Run| log("a"));
    g.add_node("Z", |s: &Run| log(format!("Z saw {}", s.mood)));
    g.add_node("merge", |_: &Run| log("merge"));
    let joke = g.add_worker("joke", |subject: &String| log(format!("joke {subject}")));
    for n in ["b", "a", "Z"] {
        g.add_edge(START, n);
        g.add_edge(n, "merge");
    }
    g.add_fan_out("a", &joke, |s: &Run| s.subjects.clone());
    g.add_edge("merge", END);
    g.add_edge("joke", END);
    g.compile().unwrap().with_store(store)
}

async fn invoke_thread_logs_turn_input_and_one_step_per_superstep(ts: TestStore) {
    let app = logged_graph(ts.store.clone());
    let input = Run::delta()
        .log(vec!["input 1".into()])
        .subjects(vec!["x".into(), "y".into()])
        .mood("sunny");
    let out = app.invoke_thread("t", input).await.unwrap();
    assert!(!out.is_interrupted());
    assert_eq!(out.thread(), "t");
    let turn1 = [
        "input 1",
        "Z saw sunny",
        "a",
        "b",
        "merge",
        "joke x",
        "joke y",
    ];
    assert_eq!(out.state().log, turn1, "{}", ts.name);
    assert_eq!(out.state().mood, "sunny");

    let steps = history(&ts.store, "t").await;
    assert_eq!(
        summary(&steps),
        [
            (1, StepKind::BeginTurn, json!([START])),
            (2, StepKind::Superstep, json!(["Z", "a", "b"])),
            (3, StepKind::Superstep, json!(["merge", "joke", "joke"])),
        ],
        "{}",
        ts.name
    );
    assert_eq!(steps[0].body["log"], json!(["input 1"]));
    assert_eq!(steps[0].body["mood"], json!("sunny"));
    // Each superstep keeps its deltas apart, in write order.
    let logged = |step: &StepRecord| -> Vec<Value> {
        let deltas = step
            .body
            .as_array()
            .expect("a superstep's body is an array");
        deltas.iter().map(|d| d["log"].clone()).collect()
    };
    assert_eq!(
        logged(&steps[1]),
        [json!(["Z saw sunny"]), json!(["a"]), json!(["b"])]
    );
    assert_eq!(
        logged(&steps[2]),
        [json!(["merge"]), json!(["joke x"]), json!(["joke y"])]
    );
    assert_eq!(out.seq(), 3);
    let (seq, state) = reloaded::<Run>(&ts.store, "t").await;
    assert_eq!(seq, out.seq(), "{}: out.seq() is the thread's seq", ts.name);
    assert_eq!(
        &state,
        out.state(),
        "{}: the replay is the outcome",
        ts.name
    );

    // A second run begins a new turn: the turn-scoped mood is back to its
    // default before any node reads it; the persistent log goes on.
    let out = app
        .invoke_thread("t", Run::delta().log(vec!["input 2".into()]))
        .await
        .unwrap();
    assert_eq!(out.state().mood, "calm");
    let mut both: Vec<&str> = turn1.to_vec();
    both.extend([
        "input 2",
        "Z saw calm",
        "a",
        "b",
        "merge",
        "joke x",
        "joke y",
    ]);
    assert_eq!(out.state().log, both);
    let steps = history(&ts.store, "t").await;
    assert_eq!(
        summary(&steps[3..]),
        [
            (4, StepKind::BeginTurn, json!([START])),
            (5, StepKind::Superstep, json!(["Z", "a", "b"])),
            (6, StepKind::Superstep, json!(["merge", "joke", "joke"])),
        ]
    );
    assert_eq!(out.seq(), 6);
    let (seq, state) = reloaded::<Run>(&ts.store, "t").await;
    assert_eq!((seq, &state), (6, out.state()));
}

// ---------------------------------------------------------------------------
// Interrupt, then resume in another worker.

#[derive(Clone, Default)]
struct ApprovalCounts {
    approve: Count,
    sibling: Count,
    after: Count,
}

/// START -> "approve" (asks) and "sibling" (does not), both -> "after".
fn approval_graph(store: Store, counts: &ApprovalCounts) -> CompiledGraph<Run> {
    let mut g = StateGraph::<Run>::new();
    let c = counts.approve.clone();
    g.add_node(
        "approve",
        move |_: &Run, ctx: &Ctx| -> Result<RunDelta, NodeError> {
            c.hit();
            let answer = ctx.interrupt(json!({"question": "ship it?"}))?;
            Ok(log("approve").answers(vec![answer_text(&answer)]))
        },
    );
    let c = counts.sibling.clone();
    g.add_node("sibling", move |_: &Run| {
        c.hit();
        log("sibling")
    });
    let c = counts.after.clone();
    g.add_node("after", move |s: &Run| {
        c.hit();
        log(format!("after saw {:?} and {:?}", s.answers, s.log))
    });
    g.add_edge(START, "approve");
    g.add_edge(START, "sibling");
    g.add_edge("approve", "after");
    g.add_edge("sibling", "after");
    g.add_edge("after", END);
    g.compile().unwrap().with_store(store)
}

async fn resume_in_another_worker_reruns_only_the_paused_node(ts: TestStore) {
    let here = ApprovalCounts::default();
    let app = approval_graph(ts.store.clone(), &here);
    let out = app
        .invoke_thread("t", Run::delta().log(vec!["input".into()]))
        .await
        .unwrap();
    assert!(out.is_interrupted());
    let [interrupt] = out.interrupts() else {
        panic!("one interrupt: {:?}", out.interrupts())
    };
    assert_eq!(interrupt.node, "approve");
    assert_eq!(interrupt.value, json!({"question": "ship it?"}));
    assert_eq!(
        out.state().log,
        ["input"],
        "nothing of the superstep applied"
    );
    assert_eq!(out.seq(), 2);
    assert_eq!((here.approve.get(), here.sibling.get()), (1, 1));

    // The pause is a pending step, and it changes no state.
    let steps = history(&ts.store, "t").await;
    assert_eq!(
        summary(&steps).into_iter().map(|s| s.1).collect::<Vec<_>>(),
        [StepKind::BeginTurn, StepKind::Pending]
    );
    let before: Run = ts.store.state_at("t", 1).await.unwrap();
    let at_pending: Run = ts.store.state_at("t", 2).await.unwrap();
    assert_eq!(at_pending, before);
    assert_eq!(reloaded::<Run>(&ts.store, "t").await, (2, before.clone()));

    // Another worker: its own store connection, its own compiled graph.
    let there = ApprovalCounts::default();
    let other = approval_graph(ts.another_worker().await, &there);
    let pending = other.pending_interrupts("t").await.unwrap();
    assert_eq!(pending, out.interrupts(), "{}", ts.name);

    let out = other.resume("t", json!("yes")).await.unwrap();
    assert!(!out.is_interrupted());
    assert_eq!(there.approve.get(), 1, "the paused node runs again");
    assert_eq!(there.sibling.get(), 0, "the finished sibling does not");
    assert_eq!(there.after.get(), 1);
    assert_eq!(
        (here.approve.get(), here.sibling.get(), here.after.get()),
        (1, 1, 0)
    );
    assert_eq!(
        out.state().answers,
        ["yes"],
        "ctx.interrupt returned the answer"
    );
    assert_eq!(
        out.state().log,
        [
            "input",
            "approve",
            "sibling",
            r#"after saw ["yes"] and ["input", "approve", "sibling"]"#
        ]
    );

    let steps = history(&ts.store, "t").await;
    assert_eq!(
        summary(&steps),
        [
            (1, StepKind::BeginTurn, json!([START])),
            (2, StepKind::Pending, json!(["approve", "sibling"])),
            (3, StepKind::Superstep, json!(["approve", "sibling"])),
            (4, StepKind::Superstep, json!(["after"])),
        ],
        "{}",
        ts.name
    );
    // Both deltas in the one superstep step: the sibling's from the
    // pending step, the resumed node's from its run.
    assert_eq!(
        steps[2].body,
        json!([
            {"log": ["approve"], "answers": ["yes"]},
            {"log": ["sibling"]},
        ])
    );
    assert_eq!(out.seq(), 4);
    assert_eq!(
        reloaded::<Run>(&ts.store, "t").await,
        (4, out.state().clone())
    );
    assert!(other.pending_interrupts("t").await.unwrap().is_empty());
    assert!(app.pending_interrupts("t").await.unwrap().is_empty());
}

// ---------------------------------------------------------------------------
// A node that interrupts twice.

async fn a_node_that_interrupts_twice_gets_each_answer_in_call_order(ts: TestStore) {
    let calls = Count::default();
    let seen: Arc<Mutex<Vec<(&'static str, Value)>>> = Arc::default();
    let graph = |store: Store| {
        let (calls, seen) = (calls.clone(), seen.clone());
        let mut g = StateGraph::<Run>::new();
        g.add_node(
            "ask",
            move |_: &Run, ctx: &Ctx| -> Result<RunDelta, NodeError> {
                calls.hit();
                let first = ctx.interrupt(json!("first?"))?;
                seen.lock().unwrap().push(("first", first.clone()));
                let second = ctx.interrupt(json!("second?"))?;
                seen.lock().unwrap().push(("second", second.clone()));
                Ok(Run::delta().answers(vec![answer_text(&first), answer_text(&second)]))
            },
        );
        g.add_edge(START, "ask");
        g.add_edge("ask", END);
        g.compile().unwrap().with_store(store)
    };
    let app = graph(ts.store.clone());
    let out = app.invoke_thread("t", Run::delta()).await.unwrap();
    assert_eq!(out.interrupts().len(), 1);
    assert_eq!(out.interrupts()[0].value, json!("first?"));
    assert!(seen.lock().unwrap().is_empty());

    let out = app.resume("t", json!("A1")).await.unwrap();
    assert!(
        out.is_interrupted(),
        "{}: it pauses at the second call",
        ts.name
    );
    assert_eq!(out.interrupts().len(), 1);
    assert_eq!(out.interrupts()[0].node, "ask");
    assert_eq!(out.interrupts()[0].value, json!("second?"));
    assert_eq!(*seen.lock().unwrap(), [("first", json!("A1"))]);
    assert_eq!(out.state().answers, Vec::<String>::new());
    assert_eq!(out.seq(), 3);

    // The second answer, from another worker.
    let other = graph(ts.another_worker().await);
    let out = other.resume("t", json!("A2")).await.unwrap();
    assert!(!out.is_interrupted());
    assert_eq!(
        *seen.lock().unwrap(),
        [
            ("first", json!("A1")),
            ("first", json!("A1")),
            ("second", json!("A2"))
        ],
        "{}: the first call returns the first answer again",
        ts.name
    );
    assert_eq!(out.state().answers, ["A1", "A2"]);
    assert_eq!(calls.get(), 3);
    let steps = history(&ts.store, "t").await;
    assert_eq!(
        summary(&steps),
        [
            (1, StepKind::BeginTurn, json!([START])),
            (2, StepKind::Pending, json!(["ask"])),
            (3, StepKind::Pending, json!(["ask"])),
            (4, StepKind::Superstep, json!(["ask"])),
        ]
    );
    assert_eq!(
        reloaded::<Run>(&ts.store, "t").await,
        (4, out.state().clone())
    );
}

// ---------------------------------------------------------------------------
// Two parallel interrupts.

fn two_askers(store: Store, left: &Count, right: &Count) -> CompiledGraph<Run> {
    let mut g = StateGraph::<Run>::new();
    for (name, count) in [("left", left.clone()), ("right", right.clone())] {
        g.add_node(
            name,
            move |_: &Run, ctx: &Ctx| -> Result<RunDelta, NodeError> {
                count.hit();
                let answer = ctx.interrupt(json!({"who": name}))?;
                Ok(Run::delta().answers(vec![format!("{name}: {}", answer_text(&answer))]))
            },
        );
        g.add_edge(START, name);
        g.add_edge(name, END);
    }
    g.compile().unwrap().with_store(store)
}

async fn parallel_interrupts_are_answered_by_id(ts: TestStore) {
    let (left, right) = (Count::default(), Count::default());
    let app = two_askers(ts.store.clone(), &left, &right);
    let out = app.invoke_thread("t", Run::delta()).await.unwrap();
    let interrupts = out.interrupts().to_vec();
    assert_eq!(interrupts.len(), 2, "{}", ts.name);
    assert_eq!(interrupts[0].node, "left");
    assert_eq!(interrupts[0].value, json!({"who": "left"}));
    assert_eq!(interrupts[1].node, "right");
    assert_ne!(interrupts[0].id, interrupts[1].id);
    let (left_id, right_id) = (interrupts[0].id.clone(), interrupts[1].id.clone());
    assert_eq!(app.pending_interrupts("t").await.unwrap(), interrupts);
    assert_eq!(out.seq(), 2);

    // One plain value for two interrupts: refused, nothing logged.
    let err = app.resume("t", json!("yes")).await.unwrap_err();
    assert!(matches!(err, GraphError::Resume { .. }), "{err:?}");
    assert!(err.to_string().contains("Resume::by_id"), "{err}");
    // An id that is not pending: refused, naming it.
    let err = app
        .resume("t", Resume::by_id([("no-such-id", json!("yes"))]))
        .await
        .unwrap_err();
    assert!(matches!(err, GraphError::Resume { .. }), "{err:?}");
    assert!(err.to_string().contains("\"no-such-id\""), "{err}");
    // One interrupt answered twice: refused.
    let err = app
        .resume(
            "t",
            Resume::by_id([(left_id.as_str(), json!(1)), (left_id.as_str(), json!(2))]),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, GraphError::Resume { .. }), "{err:?}");
    // Continuing a paused thread: the interrupts stay pending, as they
    // were, and nothing runs or is logged.
    let again = app.continue_thread("t").await.unwrap();
    assert_eq!(again.interrupts(), interrupts, "{}", ts.name);
    assert_eq!(again.seq(), 2);
    assert_eq!(ts.store.thread::<Run>("t").await.unwrap().seq(), 2);
    assert_eq!((left.get(), right.get()), (1, 1));

    // Answer "right" only: "left" stays pending, with its id.
    let out = app
        .resume("t", Resume::by_id([(right_id.as_str(), json!("R"))]))
        .await
        .unwrap();
    assert!(out.is_interrupted());
    assert_eq!(out.interrupts().len(), 1);
    assert_eq!(out.interrupts()[0].id, left_id);
    assert_eq!(out.interrupts()[0].node, "left");
    assert_eq!(out.state().answers, Vec::<String>::new());
    assert_eq!((left.get(), right.get()), (1, 2));
    assert_eq!(
        app.pending_interrupts("t").await.unwrap(),
        out.interrupts(),
        "{}",
        ts.name
    );
    assert_eq!(out.seq(), 3);

    // Answer "left" (from another worker): the run ends, both answers in
    // one superstep, "right" not run again.
    let other = two_askers(ts.another_worker().await, &left, &right);
    let out = other
        .resume("t", Resume::by_id([(left_id.as_str(), json!("L"))]))
        .await
        .unwrap();
    assert!(!out.is_interrupted());
    assert_eq!(out.state().answers, ["left: L", "right: R"]);
    assert_eq!((left.get(), right.get()), (2, 2));
    let steps = history(&ts.store, "t").await;
    assert_eq!(
        summary(&steps),
        [
            (1, StepKind::BeginTurn, json!([START])),
            (2, StepKind::Pending, json!(["left", "right"])),
            (3, StepKind::Pending, json!(["left", "right"])),
            (4, StepKind::Superstep, json!(["left", "right"])),
        ]
    );
    assert!(app.pending_interrupts("t").await.unwrap().is_empty());
    assert_eq!(
        reloaded::<Run>(&ts.store, "t").await,
        (4, out.state().clone())
    );
}

// ---------------------------------------------------------------------------
// Nothing to resume; nothing to continue.

async fn resume_without_a_pause_fails_and_continue_after_end_adds_nothing(ts: TestStore) {
    let ran = Count::default();
    let c = ran.clone();
    let mut g = StateGraph::<Run>::new();
    g.add_node("only", move |_: &Run| {
        c.hit();
        log("only")
    });
    g.add_edge(START, "only");
    g.add_edge("only", END);
    let app = g.compile().unwrap().with_store(ts.store.clone());

    // A thread that does not exist: an error, and it is not created.
    let err = app.resume("nowhere", json!("yes")).await.unwrap_err();
    assert!(err.to_string().contains("nowhere"), "{err}");
    assert!(app.continue_thread("nowhere").await.is_err());
    let threads = ts.store.threads().await.unwrap();
    assert!(threads.iter().all(|t| t.id != "nowhere"), "{threads:?}");
    // A thread with no run yet.
    ts.store.thread::<Run>("new").await.unwrap();
    let err = app.resume("new", json!("yes")).await.unwrap_err();
    assert!(matches!(err, GraphError::Resume { .. }), "{err:?}");
    assert_eq!(ts.store.thread::<Run>("new").await.unwrap().seq(), 0);

    let out = app.invoke_thread("t", Run::delta()).await.unwrap();
    assert_eq!(out.seq(), 2);
    let err = app.resume("t", json!("yes")).await.unwrap_err();
    assert!(matches!(err, GraphError::Resume { .. }), "{err:?}");
    assert!(err.to_string().contains("no interrupt is pending"), "{err}");
    assert!(app.pending_interrupts("t").await.unwrap().is_empty());

    let again = app.continue_thread("t").await.unwrap();
    assert!(!again.is_interrupted());
    assert_eq!(again.seq(), 2, "{}: no new step", ts.name);
    assert_eq!(again.state(), out.state());
    assert_eq!(ran.get(), 1, "no node ran again");
    assert_eq!(history(&ts.store, "t").await.len(), 2);
}

// ---------------------------------------------------------------------------
// Fan-out workers that pause.

fn reviewers(store: Store, calls: &Arc<Mutex<Vec<String>>>) -> CompiledGraph<Run> {
    let mut g = StateGraph::<Run>::new();
    let calls = calls.clone();
    let review = g.add_worker(
        "review",
        move |item: &String, ctx: &Ctx| -> Result<RunDelta, NodeError> {
            calls.lock().unwrap().push(item.clone());
            // "auto" needs nobody.
            let verdict = if item == "auto" {
                "fine".to_owned()
            } else {
                answer_text(&ctx.interrupt(json!({"review": item}))?)
            };
            Ok(Run::delta().answers(vec![format!("{item}: {verdict}")]))
        },
    );
    g.add_fan_out(START, &review, |s: &Run| s.subjects.clone());
    g.add_edge("review", END);
    g.compile().unwrap().with_store(store)
}

async fn paused_fan_out_workers_resume_by_id(ts: TestStore) {
    let calls: Arc<Mutex<Vec<String>>> = Arc::default();
    let app = reviewers(ts.store.clone(), &calls);
    let subjects = vec!["x".to_owned(), "auto".to_owned(), "y".to_owned()];
    let out = app
        .invoke_thread("t", Run::delta().subjects(subjects))
        .await
        .unwrap();
    let interrupts = out.interrupts().to_vec();
    assert_eq!(interrupts.len(), 2, "{}: {interrupts:?}", ts.name);
    assert!(interrupts.iter().all(|i| i.node == "review"));
    assert_eq!(interrupts[0].value, json!({"review": "x"}));
    assert_eq!(interrupts[1].value, json!({"review": "y"}));
    assert_ne!(interrupts[0].id, interrupts[1].id);
    // pending_interrupts lists them as the outcome does: in send order.
    assert_eq!(
        app.pending_interrupts("t").await.unwrap(),
        interrupts,
        "{}",
        ts.name
    );
    let err = app.resume("t", json!("ok")).await.unwrap_err();
    assert!(err.to_string().contains("Resume::by_id"), "{err}");

    // "y" first, from another worker: "x" stays pending.
    let other = reviewers(ts.another_worker().await, &calls);
    let out = other
        .resume(
            "t",
            Resume::by_id([(interrupts[1].id.as_str(), json!("good"))]),
        )
        .await
        .unwrap();
    assert_eq!(out.interrupts(), &interrupts[..1], "{}", ts.name);

    let out = app
        .resume(
            "t",
            Resume::by_id([(interrupts[0].id.as_str(), json!("bad"))]),
        )
        .await
        .unwrap();
    assert!(!out.is_interrupted());
    // Send order, whatever the order of the answers.
    assert_eq!(out.state().answers, ["x: bad", "auto: fine", "y: good"]);
    // "auto" and "y" ran once each after finishing; "x" and "y" re-ran
    // only when answered.
    assert_eq!(*calls.lock().unwrap(), ["x", "auto", "y", "y", "x"]);
    let steps = history(&ts.store, "t").await;
    assert_eq!(
        summary(&steps),
        [
            (1, StepKind::BeginTurn, json!([START])),
            (2, StepKind::Pending, json!(["review", "review", "review"])),
            (3, StepKind::Pending, json!(["review", "review", "review"])),
            (
                4,
                StepKind::Superstep,
                json!(["review", "review", "review"])
            ),
        ]
    );
    assert_eq!(
        reloaded::<Run>(&ts.store, "t").await,
        (4, out.state().clone())
    );
}

// ---------------------------------------------------------------------------
// A node that runs again later in the same run asks again.

/// "ask" asks once per visit and loops back to itself until it has two
/// answers.
fn asking_loop(store: Store, calls: &Count) -> CompiledGraph<Run> {
    let calls = calls.clone();
    let mut g = StateGraph::<Run>::new();
    g.add_node(
        "ask",
        move |s: &Run, ctx: &Ctx| -> Result<RunDelta, NodeError> {
            calls.hit();
            let answer = ctx.interrupt(json!({"round": s.answers.len() + 1}))?;
            Ok(Run::delta().answers(vec![answer_text(&answer)]))
        },
    );
    g.add_edge(START, "ask");
    g.add_conditional_edges(
        "ask",
        |s: &Run| if s.answers.len() < 2 { "ask" } else { END },
        ["ask", END],
    );
    g.compile().unwrap().with_store(store)
}

async fn a_node_visited_again_in_the_same_run_asks_again(ts: TestStore) {
    let calls = Count::default();
    let app = asking_loop(ts.store.clone(), &calls);
    let out = app.invoke_thread("t", Run::delta()).await.unwrap();
    assert_eq!(out.interrupts()[0].value, json!({"round": 1}));

    // The answer belongs to the first visit: the second visit, a later
    // superstep of the same run, must pause with its own question.
    let out = app.resume("t", json!("first")).await.unwrap();
    assert_eq!(out.state().answers, ["first"], "{}", ts.name);
    assert!(
        out.is_interrupted(),
        "{}: the second visit of \"ask\" reused the first visit's answer instead of asking",
        ts.name
    );
    assert_eq!(out.interrupts()[0].value, json!({"round": 2}));

    let out = app.resume("t", json!("second")).await.unwrap();
    assert!(!out.is_interrupted());
    assert_eq!(out.state().answers, ["first", "second"]);
    assert_eq!(calls.get(), 4);
}

on_every_backend!(
    invoke_thread_logs_turn_input_and_one_step_per_superstep,
    resume_in_another_worker_reruns_only_the_paused_node,
    a_node_that_interrupts_twice_gets_each_answer_in_call_order,
    parallel_interrupts_are_answered_by_id,
    resume_without_a_pause_fails_and_continue_after_end_adds_nothing,
    paused_fan_out_workers_resume_by_id,
    a_node_visited_again_in_the_same_run_asks_again,
);
