//! The graph runner when things go wrong, on real storage: a node that
//! fails or panics, retries, two workers on one thread, a run dropped
//! mid-superstep, a process killed mid-superstep.
//!
//! The killed process is this test binary run again: `crash_child` returns
//! at once unless `STATE_GRAPH_CRASH_CHILD` names a store, and then runs a
//! graph that blocks in its second superstep until it is killed.

use crate::on_every_backend;
use crate::support;
use crate::support::Count;
use crate::support::backends::TestStore;
use crate::support::log::{history, reloaded, summary};
use serde_json::{Value, json};
use state_core::{AgentState, State};
use state_graph::{
    CompiledGraph, Ctx, END, GraphError, NodeError, Panicked, RetryPolicy, START, StateGraph,
};
use state_store::{Durability, StepKind, Store};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::time::{Duration, Instant};
use tokio::sync::{Barrier, Notify, watch};

#[derive(AgentState, Debug, Clone, PartialEq)]
struct Run {
    /// Who ran, in the order the deltas were applied.
    #[reducer(append)]
    log: Vec<String>,
    #[reducer(append)]
    answers: Vec<String>,
}

fn log(entry: impl Into<String>) -> RunDelta {
    Run::delta().log(vec![entry.into()])
}

fn input() -> RunDelta {
    log("input")
}

/// A switch shared by a test and its nodes.
#[derive(Clone, Default)]
struct Flag(Arc<AtomicBool>);

impl Flag {
    fn on() -> Flag {
        Flag(Arc::new(AtomicBool::new(true)))
    }
    fn set(&self, on: bool) {
        self.0.store(on, SeqCst)
    }
    fn is_on(&self) -> bool {
        self.0.load(SeqCst)
    }
}

/// A node's own error type.
#[derive(Debug, PartialEq)]
struct Boom {
    code: u32,
}

impl std::fmt::Display for Boom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "boom {}", self.code)
    }
}

impl std::error::Error for Boom {}

/// What every run below logs first: its turn with its input, "prep".
fn prepared() -> Vec<(u64, StepKind, Value)> {
    vec![
        (1, StepKind::BeginTurn, json!([START])),
        (2, StepKind::Superstep, json!(["prep"])),
    ]
}

fn state(log: &[&str]) -> Run {
    Run {
        log: log.iter().map(|s| (*s).to_owned()).collect(),
        answers: Vec::new(),
    }
}

// ---------------------------------------------------------------------------
// A failing node.

/// START -> "prep" -> "flaky" (fails while `fail`) and "steady" -> "after".
fn failing_graph(store: Store, fail: &Flag, flaky: &Count, steady: &Count) -> CompiledGraph<Run> {
    let mut g = StateGraph::<Run>::new();
    g.add_node("prep", |_: &Run| log("prep"));
    let (fail, c) = (fail.clone(), flaky.clone());
    g.add_node("flaky", move |_: &Run| -> Result<RunDelta, Boom> {
        c.hit();
        if fail.is_on() {
            Err(Boom { code: 7 })
        } else {
            Ok(log("flaky"))
        }
    });
    let c = steady.clone();
    g.add_node("steady", move |_: &Run| {
        c.hit();
        log("steady")
    });
    g.add_node("after", |s: &Run| log(format!("after {}", s.log.len())));
    g.add_edge(START, "prep");
    g.add_edge("prep", "flaky");
    g.add_edge("prep", "steady");
    g.add_edge("flaky", "after");
    g.add_edge("steady", "after");
    g.add_edge("after", END);
    g.compile().unwrap().with_store(store)
}

async fn a_failed_node_keeps_its_siblings_write_and_continue_runs_only_it(ts: TestStore) {
    let (fail, flaky, steady) = (Flag::on(), Count::default(), Count::default());
    let app = failing_graph(ts.store.clone(), &fail, &flaky, &steady);
    let err = app.invoke_thread("t", input()).await.unwrap_err();
    let GraphError::Node { node, source } = &err else {
        panic!("{}: not a node error: {err:?}", ts.name)
    };
    assert_eq!(node, "flaky");
    assert_eq!(err.node(), Some("flaky"));
    assert_eq!(source.downcast_ref::<Boom>(), Some(&Boom { code: 7 }));
    assert!(!err.is_conflict());

    // As after "prep", plus the pending step, which changes nothing.
    let steps = history(&ts.store, "t").await;
    let mut expected = prepared();
    expected.push((3, StepKind::Pending, json!(["flaky", "steady"])));
    assert_eq!(summary(&steps), expected, "{}", ts.name);
    let after_prep = state(&["input", "prep"]);
    assert_eq!(
        reloaded::<Run>(&ts.store, "t").await,
        (3, after_prep.clone())
    );
    assert_eq!(ts.store.state_at::<Run>("t", 2).await.unwrap(), after_prep);
    assert_eq!((flaky.get(), steady.get()), (1, 1));

    fail.set(false);
    let out = app.continue_thread("t").await.unwrap();
    assert!(!out.is_interrupted());
    assert_eq!(flaky.get(), 2, "the failed node runs again");
    assert_eq!(
        steady.get(),
        1,
        "{}: its finished sibling does not",
        ts.name
    );
    assert_eq!(
        out.state().log,
        ["input", "prep", "flaky", "steady", "after 4"]
    );
    let steps = history(&ts.store, "t").await;
    expected.extend([
        (4, StepKind::Superstep, json!(["flaky", "steady"])),
        (5, StepKind::Superstep, json!(["after"])),
    ]);
    assert_eq!(summary(&steps), expected);
    assert_eq!(
        steps[3].body,
        json!([{"log": ["flaky"]}, {"log": ["steady"]}])
    );
    assert_eq!(out.seq(), 5);
    assert_eq!(
        reloaded::<Run>(&ts.store, "t").await,
        (5, out.state().clone())
    );
}

// ---------------------------------------------------------------------------
// A panicking node.

async fn a_panicking_node_fails_the_run_and_leaves_the_thread_intact(ts: TestStore) {
    let (armed, boom, calm) = (Flag::on(), Count::default(), Count::default());
    let mut g = StateGraph::<Run>::new();
    g.add_node("prep", |_: &Run| log("prep"));
    let (a, c) = (armed.clone(), boom.clone());
    g.add_node("boom", move |_: Arc<Run>| {
        let (armed, calls) = (a.clone(), c.clone());
        async move {
            calls.hit();
            if armed.is_on() {
                panic!("kaboom {}", 42);
            }
            Ok::<_, Boom>(log("boom"))
        }
    });
    let c = calm.clone();
    g.add_node("calm", move |_: &Run| {
        c.hit();
        log("calm")
    });
    g.add_edge(START, "prep");
    g.add_edge("prep", "boom");
    g.add_edge("prep", "calm");
    g.add_edge("boom", END);
    g.add_edge("calm", END);
    let app = g.compile().unwrap().with_store(ts.store.clone());

    let err = app.invoke_thread("t", input()).await.unwrap_err();
    let GraphError::Node { node, source } = &err else {
        panic!("{}: not a node error: {err:?}", ts.name)
    };
    assert_eq!(node, "boom");
    let panicked = source
        .downcast_ref::<Panicked>()
        .expect("the source is Panicked");
    assert_eq!(panicked.message, "kaboom 42");

    // The thread: as after "prep", whoever loads it.
    let (seq, reloaded_state) = reloaded::<Run>(&ts.store, "t").await;
    assert_eq!(reloaded_state, state(&["input", "prep"]), "{}", ts.name);
    assert_eq!(seq, 3);
    let mut expected = prepared();
    expected.push((3, StepKind::Pending, json!(["boom", "calm"])));
    assert_eq!(summary(&history(&ts.store, "t").await), expected);

    armed.set(false);
    let out = app.continue_thread("t").await.unwrap();
    assert_eq!(out.state().log, ["input", "prep", "boom", "calm"]);
    assert_eq!((boom.get(), calm.get()), (2, 1));
    assert_eq!(out.seq(), 4);
}

// ---------------------------------------------------------------------------
// Retries.

#[derive(Debug)]
struct Transient;

impl std::fmt::Display for Transient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("transient")
    }
}

impl std::error::Error for Transient {}

/// START -> "flaky" -> END; "flaky" fails `failures` times with
/// `error()`, then succeeds.
fn retrying_graph<E>(
    store: Store,
    policy: RetryPolicy,
    failures: usize,
    error: fn() -> E,
    calls: &Count,
) -> CompiledGraph<Run>
where
    E: std::error::Error + Send + Sync + 'static,
{
    let c = calls.clone();
    let mut g = StateGraph::<Run>::new();
    g.add_node("flaky", move |_: &Run| -> Result<RunDelta, E> {
        if c.hit() <= failures {
            Err(error())
        } else {
            Ok(log("flaky"))
        }
    })
    .retry(policy);
    g.add_edge(START, "flaky");
    g.add_edge("flaky", END);
    g.compile().unwrap().with_store(store)
}

fn quick_policy() -> RetryPolicy {
    RetryPolicy::new(3)
        .initial_interval(Duration::from_millis(1))
        .jitter(false)
}

async fn a_retried_node_succeeds_on_its_third_attempt(ts: TestStore) {
    let calls = Count::default();
    let app = retrying_graph(ts.store.clone(), quick_policy(), 2, || Transient, &calls);
    let out = app.invoke_thread("t", input()).await.unwrap();
    assert_eq!(calls.get(), 3);
    assert_eq!(out.state().log, ["input", "flaky"]);
    assert_eq!(
        summary(&history(&ts.store, "t").await),
        [
            (1, StepKind::BeginTurn, json!([START])),
            (2, StepKind::Superstep, json!(["flaky"])),
        ],
        "{}: the retries log nothing",
        ts.name
    );
    assert_eq!(out.seq(), 2);
}

async fn retries_stop_at_an_error_retry_on_refuses_or_after_the_last_attempt(ts: TestStore) {
    // retry_on refuses Boom: one attempt.
    let calls = Count::default();
    let policy = quick_policy().retry_on(|e| e.downcast_ref::<Transient>().is_some());
    let app = retrying_graph(ts.store.clone(), policy, 5, || Boom { code: 1 }, &calls);
    let err = app.invoke_thread("refused", input()).await.unwrap_err();
    assert_eq!(calls.get(), 1, "{}: not retried", ts.name);
    match &err {
        GraphError::Node { node, source } => {
            assert_eq!(node, "flaky");
            assert!(source.downcast_ref::<Boom>().is_some());
        }
        other => panic!("not a node error: {other:?}"),
    }
    // Retried, but it keeps failing: three attempts, then its error.
    let calls = Count::default();
    let app = retrying_graph(ts.store.clone(), quick_policy(), 5, || Transient, &calls);
    let err = app.invoke_thread("exhausted", input()).await.unwrap_err();
    assert_eq!(calls.get(), 3);
    assert_eq!(err.node(), Some("flaky"));
    for thread in ["refused", "exhausted"] {
        let kinds: Vec<StepKind> = history(&ts.store, thread)
            .await
            .iter()
            .map(|s| s.kind)
            .collect();
        assert_eq!(kinds, [StepKind::BeginTurn, StepKind::Pending]);
    }
}

// ---------------------------------------------------------------------------
// An answer, then a failure.

async fn an_answered_node_that_fails_keeps_its_answer(ts: TestStore) {
    let (fail, asked) = (Flag::default(), Count::default());
    let mut g = StateGraph::<Run>::new();
    let (f, c) = (fail.clone(), asked.clone());
    g.add_node(
        "ask",
        move |_: &Run, ctx: &Ctx| -> Result<RunDelta, NodeError> {
            c.hit();
            let answer = ctx.interrupt(json!("go?"))?;
            if f.is_on() {
                return Err(Boom { code: 3 }.into());
            }
            Ok(Run::delta().answers(vec![answer.as_str().unwrap_or("?").to_owned()]))
        },
    );
    g.add_edge(START, "ask");
    g.add_edge("ask", END);
    let app = g.compile().unwrap().with_store(ts.store.clone());

    let out = app.invoke_thread("t", input()).await.unwrap();
    assert!(out.is_interrupted());
    fail.set(true);
    let err = app.resume("t", json!("yes")).await.unwrap_err();
    assert_eq!(err.node(), Some("ask"));

    // The person answered; the node then failed after the interrupt call.
    // Continuing after the failure runs it again with the answer given,
    // as LangGraph keeps a resume value as a pending write of its task.
    fail.set(false);
    let out = app.continue_thread("t").await.unwrap();
    assert!(
        !out.is_interrupted(),
        "{}: the answer \"yes\" was lost with the failure; the node asks again: {:?}",
        ts.name,
        out.interrupts()
    );
    assert_eq!(out.state().answers, ["yes"]);
    assert_eq!(asked.get(), 3);
}

// ---------------------------------------------------------------------------
// Steps committed while the run goes on (`Durability::Async`).

/// Under `Durability::Async` a run answers, ended, paused or failed, with
/// every step it wrote durable: another worker's store reads them all,
/// and the log is the one `Durability::Sync` writes.
async fn an_async_run_answers_with_its_steps_durable(ts: TestStore) {
    let (fail, other) = (Flag::default(), ts.another_worker().await);
    let mut g = StateGraph::<Run>::new();
    let f = fail.clone();
    g.add_node("first", |_: &Run| log("first"));
    g.add_node("ask", |_: &Run, ctx: &Ctx| -> Result<RunDelta, NodeError> {
        let answer = ctx.interrupt(json!("go?"))?;
        Ok(Run::delta().answers(vec![answer.as_str().unwrap_or("?").to_owned()]))
    });
    g.add_node("last", move |_: &Run| -> Result<RunDelta, Boom> {
        match f.is_on() {
            true => Err(Boom { code: 9 }),
            false => Ok(log("last")),
        }
    });
    g.add_edge(START, "first");
    g.add_edge("first", "ask");
    g.add_edge("ask", "last");
    g.add_edge("last", END);
    let app = g.compile().unwrap().with_store(ts.store.clone());
    let eager = app.with_durability(Durability::Async);

    for (thread, app) in [("sync", &app), ("async", &eager)] {
        fail.set(false);
        let out = app.invoke_thread(thread, input()).await.unwrap();
        assert!(out.is_interrupted(), "{}", ts.name);
        assert_eq!(
            reloaded::<Run>(&other, thread).await,
            (3, out.state().clone())
        );
        fail.set(true);
        let err = app.resume(thread, json!("yes")).await.unwrap_err();
        assert_eq!(err.node(), Some("last"), "{err}");
        // The answered superstep and the failed one's pending step are
        // durable when it returns.
        let (seq, _) = reloaded::<Run>(&other, thread).await;
        assert_eq!(seq, 5, "{}: {thread}", ts.name);
        fail.set(false);
        let out = app.continue_thread(thread).await.unwrap();
        assert_eq!(out.state().log, ["input", "first", "last"]);
        assert_eq!(out.state().answers, ["yes"]);
        assert_eq!(
            reloaded::<Run>(&other, thread).await,
            (out.seq(), out.state().clone())
        );
    }
    assert_eq!(
        summary(&history(&other, "async").await),
        summary(&history(&other, "sync").await),
        "{}",
        ts.name
    );
}

// ---------------------------------------------------------------------------
// Input the reducers refuse.

/// Refuses to spend more than is left.
fn spend(budget: &mut i64, cost: i64) -> Result<(), String> {
    if cost > *budget {
        return Err(format!("cost {cost} exceeds the budget left ({budget})"));
    }
    *budget -= cost;
    Ok(())
}

#[derive(AgentState, Debug, Clone, PartialEq)]
struct Budget {
    #[reducer(with = spend)]
    #[default(100)]
    budget: i64,
    #[scope(turn)]
    #[default("calm")]
    mood: String,
    #[reducer(append)]
    answers: Vec<String>,
}

async fn refused_input_leaves_the_paused_thread_as_it_was(ts: TestStore) {
    let mut g = StateGraph::<Budget>::new();
    g.add_node(
        "ask",
        |_: &Budget, ctx: &Ctx| -> Result<BudgetDelta, NodeError> {
            let answer = ctx.interrupt(json!("go?"))?;
            Ok(Budget::delta().answers(vec![answer.to_string()]))
        },
    );
    g.add_edge(START, "ask");
    g.add_edge("ask", END);
    let app = g.compile().unwrap().with_store(ts.store.clone());
    let out = app
        .invoke_thread("t", Budget::delta().mood("sunny"))
        .await
        .unwrap();
    assert!(out.is_interrupted());
    let pending = out.interrupts().to_vec();
    assert_eq!(out.seq(), 2);
    let logged = summary(&history(&ts.store, "t").await);

    // New input the reducers refuse: an error, and, as for a refused step
    // of the store, the thread as it was: its turn, its pause.
    let err = app
        .invoke_thread("t", Budget::delta().budget(1000))
        .await
        .unwrap_err();
    assert!(matches!(err, GraphError::State { .. }), "{err:?}");
    let t = ts.store.thread::<Budget>("t").await.unwrap();
    assert_eq!(
        (t.seq(), t.state().mood.as_str()),
        (2, "sunny"),
        "{}: the refused input changed the thread: {:?}",
        ts.name,
        summary(&history(&ts.store, "t").await)
    );
    assert_eq!(summary(&history(&ts.store, "t").await), logged);
    assert_eq!(app.pending_interrupts("t").await.unwrap(), pending);
    let out = app.resume("t", json!("yes")).await.unwrap();
    assert_eq!(out.state().answers, ["\"yes\""]);
}

// ---------------------------------------------------------------------------
// Two workers on one thread.

/// The two racing workers' runs: at most one of them succeeds, and the
/// thread's log is one line, ending with the winner's outcome.
async fn one_wins(
    ts: &TestStore,
    results: Vec<(&'static str, Result<state_graph::Outcome<Run>, GraphError>)>,
) -> (&'static str, state_graph::Outcome<Run>) {
    let mut winner = None;
    for (who, result) in results {
        match result {
            Ok(out) => {
                assert!(winner.is_none(), "{}: both workers succeeded", ts.name);
                winner = Some((who, out));
            }
            Err(e) => assert!(
                e.is_conflict(),
                "{}: {who} failed otherwise: {e:?}",
                ts.name
            ),
        }
    }
    let (who, out) = winner.unwrap_or_else(|| panic!("{}: neither worker succeeded", ts.name));
    let steps = history(&ts.store, "t").await;
    let seqs: Vec<u64> = steps.iter().map(|s| s.seq).collect();
    assert_eq!(
        seqs,
        (1..=out.seq()).collect::<Vec<_>>(),
        "{}: no fork",
        ts.name
    );
    let (seq, stored) = reloaded::<Run>(&ts.store, "t").await;
    assert_eq!(seq, out.seq());
    assert_eq!(
        &stored,
        out.state(),
        "{}: the thread is the winner's",
        ts.name
    );
    let loser = if who == "A" { "B" } else { "A" };
    assert!(
        !stored.log.contains(&format!("slow by {loser}")),
        "{}: {:?}",
        ts.name,
        stored.log
    );
    (who, out)
}

async fn two_workers_invoking_one_thread_never_fork_it(ts: TestStore) {
    // Counts the workers whose "slow" node started or whose run ended: a
    // node waits until the other worker is past its own loading (at its
    // node, or done), so neither run can end before the other has begun.
    let (tx, rx) = watch::channel(0usize);
    let tx = Arc::new(tx);
    let graph = |store: Store, who: &'static str| {
        let (tx, rx) = (tx.clone(), rx.clone());
        let mut g = StateGraph::<Run>::new();
        g.add_node("slow", move |_: Arc<Run>| {
            let (tx, mut rx) = (tx.clone(), rx.clone());
            async move {
                tx.send_modify(|n| *n += 1);
                tokio::time::timeout(Duration::from_secs(20), rx.wait_for(|n| *n >= 2))
                    .await
                    .expect("the other worker reached its node or ended")
                    .unwrap();
                Ok::<_, Boom>(log(format!("slow by {who}")))
            }
        });
        g.add_edge(START, "slow");
        g.add_edge("slow", END);
        g.compile().unwrap().with_store(store)
    };
    let start = Arc::new(Barrier::new(2));
    let mut runs = Vec::new();
    for who in ["A", "B"] {
        let app = graph(ts.another_worker().await, who);
        let (start, tx) = (start.clone(), tx.clone());
        runs.push(tokio::spawn(async move {
            start.wait().await;
            let result = app.invoke_thread("t", log(format!("input {who}"))).await;
            tx.send_modify(|n| *n += 1);
            (who, result)
        }));
    }
    let mut results = Vec::new();
    for run in runs {
        results.push(
            tokio::time::timeout(Duration::from_secs(30), run)
                .await
                .expect("the runs end")
                .unwrap(),
        );
    }
    let (who, out) = one_wins(&ts, results).await;
    assert_eq!(out.state().log.last(), Some(&format!("slow by {who}")));
}

async fn two_workers_continuing_one_thread_never_fork_it(ts: TestStore) {
    // A thread whose run failed at "slow", after "prep".
    let gate: Arc<Barrier> = Arc::new(Barrier::new(2));
    let graph = |store: Store, who: &'static str, fail: bool| {
        let gate = gate.clone();
        let mut g = StateGraph::<Run>::new();
        g.add_node("prep", |_: &Run| log("prep"));
        g.add_node("slow", move |_: Arc<Run>| {
            let gate = gate.clone();
            async move {
                if fail {
                    return Err(Boom { code: 0 });
                }
                // Both workers have loaded the thread before either commits.
                tokio::time::timeout(Duration::from_secs(20), gate.wait())
                    .await
                    .expect("both workers reach the node");
                Ok(log(format!("slow by {who}")))
            }
        });
        g.add_edge(START, "prep");
        g.add_edge("prep", "slow");
        g.add_edge("slow", END);
        g.compile().unwrap().with_store(store)
    };
    let err = graph(ts.store.clone(), "setup", true)
        .invoke_thread("t", input())
        .await
        .unwrap_err();
    assert_eq!(err.node(), Some("slow"));

    let mut runs = Vec::new();
    for who in ["A", "B"] {
        let app = graph(ts.another_worker().await, who, false);
        runs.push(tokio::spawn(async move {
            (who, app.continue_thread("t").await)
        }));
    }
    let mut results = Vec::new();
    for run in runs {
        results.push(
            tokio::time::timeout(Duration::from_secs(30), run)
                .await
                .expect("the runs end")
                .unwrap(),
        );
    }
    let (who, out) = one_wins(&ts, results).await;
    let mut expected = prepared();
    expected.extend([
        (3, StepKind::Pending, json!(["slow"])),
        (4, StepKind::Superstep, json!(["slow"])),
    ]);
    assert_eq!(summary(&history(&ts.store, "t").await), expected);
    assert_eq!(
        out.state(),
        &state(&["input", "prep", &format!("slow by {who}")])
    );
}

// ---------------------------------------------------------------------------
// A run dropped mid-superstep.

async fn a_run_dropped_mid_superstep_stores_nothing_of_it(ts: TestStore) {
    let (hang, started) = (Flag::on(), Arc::new(Notify::new()));
    let (slow, quick) = (Count::default(), Count::default());
    let mut g = StateGraph::<Run>::new();
    g.add_node("prep", |_: &Run| log("prep"));
    let (h, s, c) = (hang.clone(), started.clone(), slow.clone());
    g.add_node("slow", move |_: Arc<Run>| {
        let (hang, started, calls) = (h.clone(), s.clone(), c.clone());
        async move {
            calls.hit();
            if hang.is_on() {
                started.notify_one();
                tokio::time::sleep(Duration::from_secs(3600)).await;
            }
            Ok::<_, Boom>(log("slow"))
        }
    });
    let c = quick.clone();
    g.add_node("quick", move |_: &Run| {
        c.hit();
        log("quick")
    });
    g.add_edge(START, "prep");
    g.add_edge("prep", "slow");
    g.add_edge("prep", "quick");
    g.add_edge("slow", END);
    g.add_edge("quick", END);
    let app = g.compile().unwrap().with_store(ts.store.clone());

    // Dropped while "slow" runs ("quick" has finished by then).
    tokio::select! {
        result = app.invoke_thread("t", input()) => panic!("the run ended: {result:?}"),
        waited = tokio::time::timeout(Duration::from_secs(20), started.notified()) => {
            waited.expect("\"slow\" starts");
        }
    }
    assert_eq!(
        summary(&history(&ts.store, "t").await),
        prepared(),
        "{}",
        ts.name
    );
    assert_eq!(
        reloaded::<Run>(&ts.store, "t").await,
        (2, state(&["input", "prep"]))
    );

    hang.set(false);
    let out = app.continue_thread("t").await.unwrap();
    assert_eq!(out.state().log, ["input", "prep", "quick", "slow"]);
    // Nothing of the dropped superstep was kept: both nodes ran again.
    assert_eq!((slow.get(), quick.get()), (2, 2));
    let mut expected = prepared();
    expected.push((3, StepKind::Superstep, json!(["quick", "slow"])));
    assert_eq!(summary(&history(&ts.store, "t").await), expected);
    assert_eq!(
        reloaded::<Run>(&ts.store, "t").await,
        (3, out.state().clone())
    );
}

on_every_backend!(
    a_failed_node_keeps_its_siblings_write_and_continue_runs_only_it,
    a_panicking_node_fails_the_run_and_leaves_the_thread_intact,
    a_retried_node_succeeds_on_its_third_attempt,
    retries_stop_at_an_error_retry_on_refuses_or_after_the_last_attempt,
    an_answered_node_that_fails_keeps_its_answer,
    refused_input_leaves_the_paused_thread_as_it_was,
    two_workers_invoking_one_thread_never_fork_it,
    two_workers_continuing_one_thread_never_fork_it,
    a_run_dropped_mid_superstep_stores_nothing_of_it,
    an_async_run_answers_with_its_steps_durable,
);

// ---------------------------------------------------------------------------
// A process killed mid-superstep.

/// `sqlite:<path>` or `postgres:<url>`: the store the child runs on.
const CHILD_ENV: &str = "STATE_GRAPH_CRASH_CHILD";
/// The file the child's blocking node creates once it runs.
const MARK_ENV: &str = "STATE_GRAPH_CRASH_MARK";

/// START -> "first" -> "second" and "sibling" -> "third" -> END. With
/// `block`, "second" creates that file and then never finishes.
fn crash_graph(store: Store, block: Option<PathBuf>, first: &Count) -> CompiledGraph<Run> {
    let mut g = StateGraph::<Run>::new();
    let c = first.clone();
    g.add_node("first", move |_: &Run| {
        c.hit();
        log("first")
    });
    g.add_node("second", move |_: Arc<Run>| {
        let block = block.clone();
        async move {
            if let Some(mark) = block {
                std::fs::write(&mark, b"running").unwrap();
                tokio::time::sleep(Duration::from_secs(120)).await;
                // Never reached: the parent kills this process first. Should
                // it die instead, end without committing anything.
                std::process::abort();
            }
            Ok::<_, Boom>(log("second"))
        }
    });
    g.add_node("sibling", |_: &Run| log("sibling"));
    g.add_node("third", |s: &Run| {
        log(format!("third after {}", s.log.len()))
    });
    g.add_edge(START, "first");
    g.add_edge("first", "second");
    g.add_edge("first", "sibling");
    g.add_edge("second", "third");
    g.add_edge("sibling", "third");
    g.add_edge("third", END);
    g.compile().unwrap().with_store(store)
}

/// The child: runs the crash graph on the store `CHILD_ENV` names until it
/// is killed; without it (a normal test run), returns at once.
#[tokio::test]
async fn crash_child() {
    let Ok(target) = std::env::var(CHILD_ENV) else {
        return;
    };
    let mark = PathBuf::from(std::env::var(MARK_ENV).expect("the mark file's path"));
    let store = match target.split_once(':') {
        Some(("sqlite", path)) => Store::sqlite(path).await.unwrap(),
        Some(("postgres", url)) => Store::postgres(url).await.unwrap(),
        _ => panic!("{CHILD_ENV}={target}: not sqlite:<path> nor postgres:<url>"),
    };
    let app = crash_graph(store, Some(mark), &Count::default());
    let result = app.invoke_thread("t", input()).await;
    panic!("the child's run ended instead of blocking: {result:?}");
}

/// Kills the child when dropped, so that a failing test leaves none behind.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn wait_for_mark(child: &mut Child, mark: &Path, stderr: &Path) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !mark.exists() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!(
                "the child exited ({status}) before its node ran:\n{}",
                std::fs::read_to_string(stderr).unwrap_or_default()
            );
        }
        assert!(
            Instant::now() < deadline,
            "the child's node did not start within 60 s"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn killed_mid_superstep(ts: TestStore) {
    let dir = tempfile::tempdir().unwrap();
    let mark = dir.path().join("running");
    let stderr = dir.path().join("child.stderr");
    let child = support::child::only(module_path!(), "crash_child")
        .env(CHILD_ENV, format!("{}:{}", ts.name, ts.location))
        .env(MARK_ENV, &mark)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .unwrap();
    let mut child = KillOnDrop(child);
    wait_for_mark(&mut child.0, &mark, &stderr).await;
    child.0.kill().unwrap(); // SIGKILL
    let status = child.0.wait().unwrap();
    assert!(!status.success(), "{status}");
    drop(child);

    // The first superstep was committed; nothing of the second.
    let store = ts.another_worker().await;
    assert_eq!(
        summary(&history(&store, "t").await),
        [
            (1, StepKind::BeginTurn, json!([START])),
            (2, StepKind::Superstep, json!(["first"])),
        ],
        "{}",
        ts.name
    );
    assert_eq!(
        reloaded::<Run>(&store, "t").await,
        (2, state(&["input", "first"]))
    );

    let first = Count::default();
    let app = crash_graph(store.clone(), None, &first);
    let out = app.continue_thread("t").await.unwrap();
    assert!(!out.is_interrupted());
    assert_eq!(first.get(), 0, "the committed superstep does not run again");
    let done = state(&["input", "first", "second", "sibling", "third after 4"]);
    assert_eq!(out.state(), &done, "{}", ts.name);
    assert_eq!(
        summary(&history(&store, "t").await),
        [
            (1, StepKind::BeginTurn, json!([START])),
            (2, StepKind::Superstep, json!(["first"])),
            (3, StepKind::Superstep, json!(["second", "sibling"])),
            (4, StepKind::Superstep, json!(["third"])),
        ]
    );
    assert_eq!(out.seq(), 4);
    assert_eq!(reloaded::<Run>(&store, "t").await, (4, done));
}

/// SQLite and PostgreSQL only: a memory store dies with its process.
mod killed_mid_superstep {
    use crate::support::backends::TestStore;

    #[tokio::test]
    async fn sqlite() {
        super::killed_mid_superstep(TestStore::sqlite().await).await;
    }

    #[tokio::test]
    async fn postgres() {
        super::killed_mid_superstep(TestStore::postgres().await).await;
    }
}
