//! LangGraph's superstep semantics, in memory: every node of a superstep
//! sees the same state, their deltas apply in name order whichever finished
//! first, a node triggered twice runs once, fan-outs reduce in send order,
//! conflicts and failures name the nodes, and the recursion limit stops a
//! run that would not end.

use serde_json::json;
use state_core::{AgentState, State};
use state_graph::{
    Ctx, DEFAULT_RECURSION_LIMIT, END, GraphError, NodeError, Panicked, RetryPolicy, START,
    StateGraph,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

#[derive(AgentState, Debug, Clone, PartialEq)]
struct S {
    #[reducer(append)]
    log: Vec<String>,
    count: u32,
    #[scope(turn)]
    #[default("start")]
    phase: String,
    owner: Option<String>,
}

/// Runs `app` in memory and on a thread of a real SQLite file: both runs
/// must agree (the same final state, or the same error); returns the
/// in-memory one.
async fn run_both(app: state_graph::CompiledGraph<S>, input: SDelta) -> Result<S, GraphError> {
    let memory = app.invoke(input.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let store = state_store::Store::sqlite(dir.path().join("graph.db"))
        .await
        .unwrap();
    let stored = app
        .with_store(store.clone())
        .invoke_thread("t", input)
        .await
        .map(|out| out.into_state());
    match (&memory, &stored) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a, b, "memory and SQLite runs agree");
            let reloaded = store.thread::<S>("t").await.unwrap();
            assert_eq!(reloaded.state(), a, "the log replays to the same state");
        }
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
        _ => panic!("memory {memory:?} but SQLite {stored:?}"),
    }
    memory
}

/// A node that logs its name and the count it saw.
fn saw(name: &'static str) -> impl Fn(&S) -> SDelta + Send + Sync + 'static {
    move |s| S::delta().log(vec![format!("{name} saw {}", s.count)])
}

#[tokio::test]
async fn nodes_of_a_superstep_see_the_same_state_and_apply_in_name_order() {
    let mut g = StateGraph::<S>::new();
    // Added out of name order; "z" finishes first, "a" last.
    g.add_node("z", |s: &S| {
        S::delta()
            .log(vec![format!("z saw {}", s.count)])
            .count(s.count + 10)
    });
    g.add_node("m", saw("m"));
    g.add_node("a", |s: Arc<S>| async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        Ok::<_, std::io::Error>(S::delta().log(vec![format!("a saw {}", s.count)]))
    });
    for n in ["z", "m", "a"] {
        g.add_edge(START, n);
        g.add_edge(n, "after");
    }
    g.add_node("after", saw("after"));
    g.add_edge("after", END);
    let s = run_both(g.compile().unwrap(), S::delta().count(1u32))
        .await
        .unwrap();
    assert_eq!(s.log, ["a saw 1", "m saw 1", "z saw 1", "after saw 11"]);
}

#[tokio::test]
async fn a_node_triggered_by_several_edges_runs_once() {
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    let mut g = StateGraph::<S>::new();
    g.add_node("a", saw("a"));
    g.add_node("b", saw("b"));
    g.add_node("join", move |s: &S| {
        counted.fetch_add(1, Ordering::SeqCst);
        S::delta().log(vec![format!("join after {}", s.log.len())])
    });
    g.add_edge(START, "a");
    g.add_edge(START, "b");
    g.add_edge("a", "join");
    g.add_edge("b", "join");
    g.add_edge("join", END);
    let s = g.compile().unwrap().invoke(S::delta()).await.unwrap();
    assert_eq!(s.log, ["a saw 0", "b saw 0", "join after 2"]);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_router_returning_a_list_fans_out_and_end_stops_its_branch() {
    let mut g = StateGraph::<S>::new();
    g.add_node("plan", |_: &S| S::delta().phase("fan"));
    g.add_node("x", saw("x"));
    g.add_node("y", saw("y"));
    g.add_edge(START, "plan");
    g.add_conditional_edges(
        "plan",
        |s: &S| {
            if s.phase == "fan" {
                vec!["y", "x", END]
            } else {
                vec![END]
            }
        },
        ["x", "y", END],
    );
    g.add_edge("x", END);
    g.add_edge("y", END);
    let s = run_both(g.compile().unwrap(), S::delta()).await.unwrap();
    assert_eq!(s.log, ["x saw 0", "y saw 0"]);
}

#[tokio::test]
async fn fan_out_workers_get_their_own_input_and_reduce_in_send_order() {
    #[derive(Debug)]
    struct Job {
        id: u32,
        delay_ms: u64,
    }
    let mut g = StateGraph::<S>::new();
    let worker = g.add_worker("work", |job: Arc<Job>| async move {
        // Later sends finish first: the order is still the send order.
        tokio::time::sleep(Duration::from_millis(job.delay_ms)).await;
        Ok::<_, std::io::Error>(S::delta().log(vec![format!("job {}", job.id)]))
    });
    g.add_node("plan", saw("plan"));
    g.add_node("review", |s: &S| {
        S::delta().log(vec![format!("reviewed {}", s.log.len())])
    });
    g.add_edge(START, "plan");
    g.add_fan_out("plan", &worker, |_: &S| {
        (1..=5).map(|id| Job {
            id,
            delay_ms: 5 * (6 - u64::from(id)),
        })
    });
    g.add_edge("plan", "review");
    g.add_edge("work", END);
    g.add_edge("review", END);
    let s = run_both(g.compile().unwrap(), S::delta()).await.unwrap();
    // The ordinary node first, then the sends in order.
    assert_eq!(
        s.log,
        [
            "plan saw 0",
            "reviewed 1",
            "job 1",
            "job 2",
            "job 3",
            "job 4",
            "job 5"
        ]
    );
}

#[tokio::test]
async fn a_fan_out_of_nothing_runs_no_worker() {
    let mut g = StateGraph::<S>::new();
    let worker = g.add_worker("work", |n: &u32| S::delta().log(vec![n.to_string()]));
    g.add_fan_out(START, &worker, |_: &S| Vec::<u32>::new());
    g.add_edge("work", END);
    let s = run_both(g.compile().unwrap(), S::delta()).await.unwrap();
    assert!(s.log.is_empty());
}

#[tokio::test]
async fn two_writes_to_a_plain_field_name_the_field_and_both_nodes() {
    let mut g = StateGraph::<S>::new();
    g.add_node("writer_b", |_: &S| S::delta().owner(Some("b".to_owned())));
    g.add_node("writer_a", |_: &S| {
        S::delta().owner(Some("a".to_owned())).log(vec!["a".into()])
    });
    g.add_edge(START, "writer_a");
    g.add_edge(START, "writer_b");
    g.add_edge("writer_a", END);
    g.add_edge("writer_b", END);
    let err = run_both(g.compile().unwrap(), S::delta())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, GraphError::ConcurrentWrite { field, first, second }
            if field == "owner" && first == "writer_a" && second == "writer_b"),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "nodes \"writer_a\" and \"writer_b\" both wrote \"owner\" in one superstep; give the field a reducer, or let one node write it"
    );
}

#[derive(Debug, thiserror::Error)]
#[error("the search backend is down")]
struct SearchDown;

#[tokio::test]
async fn a_failing_node_ends_the_run_with_its_error_as_the_source() {
    let mut g = StateGraph::<S>::new();
    g.add_node("search", |_: &S| Err::<SDelta, _>(SearchDown));
    g.add_edge(START, "search");
    g.add_edge("search", END);
    let err = run_both(g.compile().unwrap(), S::delta())
        .await
        .unwrap_err();
    assert_eq!(err.node(), Some("search"));
    assert_eq!(err.to_string(), "node \"search\" failed");
    let source = std::error::Error::source(&err).unwrap();
    assert!(source.downcast_ref::<SearchDown>().is_some());
}

#[tokio::test]
async fn a_panicking_node_is_an_error_naming_it() {
    let mut g = StateGraph::<S>::new();
    g.add_node("sync_panics", |_: &S| -> SDelta {
        panic!("index out of range")
    });
    g.add_edge(START, "sync_panics");
    g.add_edge("sync_panics", END);
    let err = g.compile().unwrap().invoke(S::delta()).await.unwrap_err();
    let GraphError::Node { node, source } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(node, "sync_panics");
    let panicked = source.downcast_ref::<Panicked>().unwrap();
    assert_eq!(panicked.message, "index out of range");

    let mut g = StateGraph::<S>::new();
    g.add_node("async_panics", |s: Arc<S>| async move {
        if s.count == 0 {
            panic!("async {}", "boom");
        }
        S::delta()
    });
    g.add_edge(START, "async_panics");
    g.add_edge("async_panics", END);
    let err = g.compile().unwrap().invoke(S::delta()).await.unwrap_err();
    assert_eq!(err.node(), Some("async_panics"));
    let source = std::error::Error::source(&err).unwrap();
    assert_eq!(source.to_string(), "the node panicked: async boom");
}

#[tokio::test]
async fn a_retry_policy_runs_a_flaky_node_again() {
    let attempts = Arc::new(AtomicUsize::new(0));
    let counted = attempts.clone();
    let mut g = StateGraph::<S>::new();
    g.add_node("flaky", move |_: &S| {
        if counted.fetch_add(1, Ordering::SeqCst) < 2 {
            Err(SearchDown)
        } else {
            Ok(S::delta().log(vec!["finally".into()]))
        }
    })
    .retry(
        RetryPolicy::new(3)
            .initial_interval(Duration::from_millis(1))
            .jitter(false),
    );
    g.add_edge(START, "flaky");
    g.add_edge("flaky", END);
    let app = g.compile().unwrap();
    let s = app.invoke(S::delta()).await.unwrap();
    assert_eq!(s.log, ["finally"]);
    assert_eq!(attempts.load(Ordering::SeqCst), 3);

    // Out of attempts: the last error ends the run.
    attempts.store(0, Ordering::SeqCst);
    let mut g = StateGraph::<S>::new();
    let counted = attempts.clone();
    g.add_node("flaky", move |_: &S| {
        counted.fetch_add(1, Ordering::SeqCst);
        Err::<SDelta, _>(SearchDown)
    })
    .retry(
        RetryPolicy::new(2)
            .initial_interval(Duration::from_millis(1))
            .retry_on(|e| e.downcast_ref::<SearchDown>().is_some()),
    );
    g.add_edge(START, "flaky");
    g.add_edge("flaky", END);
    let err = g.compile().unwrap().invoke(S::delta()).await.unwrap_err();
    assert_eq!(err.node(), Some("flaky"));
    assert_eq!(attempts.load(Ordering::SeqCst), 2);
}

fn counter(limit_hits: u32) -> StateGraph<S> {
    let mut g = StateGraph::<S>::new();
    g.add_node("inc", |s: &S| S::delta().count(s.count + 1));
    g.add_edge(START, "inc");
    g.add_conditional_edges(
        "inc",
        move |s: &S| if s.count < limit_hits { "inc" } else { END },
        ["inc", END],
    );
    g
}

#[tokio::test]
async fn the_recursion_limit_stops_a_run_that_would_take_more_supersteps() {
    assert_eq!(DEFAULT_RECURSION_LIMIT, 25);
    // Exactly the limit: fine (LangGraph raises here too; we do not).
    let app = counter(3).compile().unwrap().with_recursion_limit(3);
    assert_eq!(run_both(app, S::delta()).await.unwrap().count, 3);
    // One more: refused, naming the limit.
    let app = counter(4).compile().unwrap().with_recursion_limit(3);
    let err = run_both(app, S::delta()).await.unwrap_err();
    assert!(matches!(err, GraphError::RecursionLimit { limit: 3 }));
    assert!(
        err.to_string()
            .starts_with("recursion limit of 3 supersteps reached")
    );
    // The default.
    let err = counter(1000).compile().unwrap().invoke(S::delta()).await;
    assert!(matches!(err, Err(GraphError::RecursionLimit { limit: 25 })));
}

#[tokio::test]
async fn invoke_on_begins_a_turn_and_applies_the_input_through_the_reducers() {
    let mut g = StateGraph::<S>::new();
    g.add_node("a", |s: &S| {
        S::delta().log(vec![format!("phase {}", s.phase)])
    });
    g.add_edge(START, "a");
    g.add_edge("a", END);
    let app = g.compile().unwrap();
    let mut state = S {
        phase: "finished".into(),
        log: vec!["earlier".into()],
        ..S::default()
    };
    state = app
        .invoke_on(state, S::delta().log(vec!["input".into()]))
        .await
        .unwrap();
    assert_eq!(state.log, ["earlier", "input", "phase start"]);
}

#[tokio::test]
async fn an_interrupt_without_a_store_says_a_store_is_needed() {
    let mut g = StateGraph::<S>::new();
    g.add_node("ask", |_: &S, ctx: &Ctx| -> Result<SDelta, NodeError> {
        ctx.interrupt(json!("sure?"))?;
        Ok(S::delta())
    });
    g.add_edge(START, "ask");
    g.add_edge("ask", END);
    let err = g.compile().unwrap().invoke(S::delta()).await.unwrap_err();
    assert!(matches!(&err, GraphError::InterruptWithoutStore { node } if node == "ask"));
    assert!(err.to_string().contains("interrupts need a store"), "{err}");
}

#[tokio::test]
async fn thread_methods_without_a_store_say_so() {
    let app = counter(1).compile().unwrap();
    let err = app.invoke_thread("t", S::delta()).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "invoke_thread needs a store: call with_store(..) on the compiled graph first"
    );
    assert!(matches!(
        app.resume("t", json!(1)).await,
        Err(GraphError::NoStore { method: "resume" })
    ));
}

#[tokio::test]
async fn a_run_spawned_on_tokio_completes() {
    let app = counter(5).compile().unwrap();
    let handle = tokio::spawn(async move { app.invoke(S::delta()).await });
    assert_eq!(handle.await.unwrap().unwrap().count, 5);
}

#[tokio::test]
async fn a_nodes_context_names_its_node_and_thread() {
    let mut g = StateGraph::<S>::new();
    g.add_node("where", |_: &S, ctx: &Ctx| {
        S::delta().owner(Some(format!("{} on {:?}", ctx.node(), ctx.thread())))
    });
    g.add_edge(START, "where");
    g.add_edge("where", END);
    let app = g.compile().unwrap();
    let s = app.invoke(S::delta()).await.unwrap();
    assert_eq!(s.owner.as_deref(), Some("where on None"));
    let app = app.with_store(state_store::Store::memory());
    let out = app.invoke_thread("user-7", S::delta()).await.unwrap();
    assert_eq!(
        out.state().owner.as_deref(),
        Some("where on Some(\"user-7\")")
    );
    // Nothing pending on a thread that does not exist, and it is not made.
    assert!(app.pending_interrupts("nobody").await.unwrap().is_empty());
    assert!(app.store().unwrap().thread_info("nobody").await.is_err());
}
