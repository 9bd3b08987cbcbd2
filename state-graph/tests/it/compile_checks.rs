//! `compile` refuses a wrong graph with an error naming what is wrong, and
//! accepts every node and router form.

use serde_json::json;
use state_core::{AgentState, State};
use state_graph::{Ctx, END, GraphError, NodeError, START, StateGraph};
use std::sync::Arc;

#[derive(AgentState, Debug, Clone, PartialEq)]
struct S {
    #[reducer(append)]
    log: Vec<String>,
    next: String,
}

fn node(name: &'static str) -> impl Fn(&S) -> SDelta + Send + Sync + 'static {
    move |_| S::delta().log(vec![name.to_owned()])
}

fn invalid(g: StateGraph<S>) -> String {
    match g.compile() {
        Err(GraphError::Invalid(message)) => message,
        Err(other) => panic!("expected an invalid graph, got {other}"),
        Ok(_) => panic!("expected an invalid graph, it compiled"),
    }
}

#[test]
fn an_edge_to_a_misspelt_node_is_named_with_a_suggestion() {
    let mut g = StateGraph::<S>::new();
    g.add_node("agent", node("agent"));
    g.add_edge(START, "agent");
    g.add_edge("agent", "agnet");
    assert_eq!(
        invalid(g),
        "the target of edge \"agent\" -> \"agnet\" \"agnet\" is not a node (did you mean \"agent\"?)"
    );
}

#[test]
fn a_router_target_that_is_not_a_node_is_named() {
    let mut g = StateGraph::<S>::new();
    g.add_node("agent", node("agent"));
    g.add_edge(START, "agent");
    g.add_conditional_edges("agent", |_: &S| END, ["tools", END]);
    let message = invalid(g);
    assert!(
        message.contains("the conditional edges of \"agent\" \"tools\" is not a node"),
        "{message}"
    );
}

#[test]
fn duplicate_and_reserved_names_are_refused() {
    let mut g = StateGraph::<S>::new();
    g.add_node("a", node("a"));
    g.add_node("a", node("a"));
    g.add_node(END, node("end"));
    g.add_edge(START, "a");
    g.add_edge("a", END);
    let message = invalid(g);
    assert!(message.contains("two nodes are named \"a\""), "{message}");
    assert!(message.contains("\"__end__\" is reserved"), "{message}");
}

#[test]
fn a_graph_without_an_entry_is_refused() {
    let mut g = StateGraph::<S>::new();
    g.add_node("a", node("a"));
    g.add_edge("a", END);
    assert!(invalid(g).contains("no edge leaves START"));
}

#[test]
fn unreachable_and_dead_end_nodes_are_named() {
    let mut g = StateGraph::<S>::new();
    g.add_node("a", node("a"));
    g.add_node("orphan", node("orphan"));
    g.add_node("dead_end", node("dead_end"));
    g.add_edge(START, "a");
    g.add_edge("a", "dead_end");
    g.add_edge("a", END);
    g.add_edge("orphan", END);
    let message = invalid(g);
    assert!(
        message.contains("node \"dead_end\" has no edge out"),
        "{message}"
    );
    assert!(
        message.contains("no edge reaches node \"orphan\""),
        "{message}"
    );
}

#[test]
fn a_loop_with_no_exit_is_refused_instead_of_running_forever() {
    let mut g = StateGraph::<S>::new();
    g.add_node("a", node("a"));
    g.add_node("b", node("b"));
    g.add_edge(START, "a");
    g.add_edge("a", "b");
    g.add_edge("b", "a");
    let message = invalid(g);
    assert!(
        message.contains("nodes \"a\", \"b\" can never reach END")
            || message.contains("nodes \"b\", \"a\" can never reach END"),
        "{message}"
    );
}

#[test]
fn a_worker_is_reached_only_through_a_fan_out() {
    let mut g = StateGraph::<S>::new();
    g.add_node("a", node("a"));
    let w = g.add_worker("w", |item: &String| S::delta().log(vec![item.clone()]));
    g.add_edge(START, "a");
    g.add_edge("a", "w");
    g.add_edge("w", END);
    let message = invalid(g);
    assert!(message.contains("leads to worker \"w\""), "{message}");
    let _ = w;
}

#[test]
fn every_problem_is_reported_at_once() {
    let mut g = StateGraph::<S>::new();
    g.add_node("a", node("a"));
    g.add_edge(START, "x");
    g.add_edge("a", "y");
    let message = invalid(g);
    assert!(message.contains("\"x\""), "{message}");
    assert!(message.contains("\"y\""), "{message}");
}

#[derive(Debug, thiserror::Error)]
#[error("tool broke")]
struct ToolError;

fn sync_plain(_: &S) -> SDelta {
    S::delta().log(vec!["sync_plain".into()])
}
fn sync_fallible(_: &S) -> Result<SDelta, ToolError> {
    Ok(S::delta().log(vec!["sync_fallible".into()]))
}
fn sync_ctx(_: &S, ctx: &Ctx) -> Result<SDelta, NodeError> {
    Ok(S::delta().log(vec![format!("{} with ctx", ctx.node())]))
}
fn sync_ctx_plain(_: &S, _: &Ctx) -> SDelta {
    S::delta().log(vec!["sync_ctx_plain".into()])
}
async fn async_fallible(s: Arc<S>) -> Result<SDelta, ToolError> {
    Ok(S::delta().log(vec![format!("async after {}", s.log.len())]))
}
async fn async_ctx(_: Arc<S>, ctx: Ctx) -> Result<SDelta, NodeError> {
    Ok(S::delta().log(vec![format!("{} async with ctx", ctx.node())]))
}
async fn async_plain(_: Arc<S>) -> SDelta {
    S::delta().log(vec!["async_plain".into()])
}
fn route_borrowed(s: &S) -> &str {
    &s.next
}

#[tokio::test]
async fn every_node_form_and_a_capturing_closure_run() {
    let greeting = String::from("captured");
    let mut g = StateGraph::<S>::new();
    g.add_node("a_sync_plain", sync_plain);
    g.add_node("b_sync_fallible", sync_fallible);
    g.add_node("c", sync_ctx);
    g.add_node("d_sync_ctx_plain", sync_ctx_plain);
    g.add_node("e_async", async_fallible);
    g.add_node("f", async_ctx);
    g.add_node("g_async_plain", async_plain);
    g.add_node("h_closure", move |_: &S| {
        S::delta().log(vec![greeting.clone()])
    });
    g.add_node("route", |_: &S| S::delta().next("done_node"));
    for name in [
        "a_sync_plain",
        "b_sync_fallible",
        "c",
        "d_sync_ctx_plain",
        "e_async",
        "f",
        "g_async_plain",
        "h_closure",
    ] {
        g.add_edge(START, name);
        g.add_edge(name, "route");
    }
    g.add_conditional_edges("route", route_borrowed, ["done_node", END]);
    g.add_node("done_node", |_: &S| S::delta().log(vec!["done".into()]));
    g.add_edge("done_node", END);
    let app = g.compile().unwrap();
    let s = app.invoke(S::delta()).await.unwrap();
    assert_eq!(
        s.log,
        [
            "sync_plain",
            "sync_fallible",
            "c with ctx",
            "sync_ctx_plain",
            "async after 0",
            "f async with ctx",
            "async_plain",
            "captured",
            "done",
        ]
    );
}

#[tokio::test]
async fn a_router_returning_an_undeclared_name_is_an_error_naming_it() {
    let mut g = StateGraph::<S>::new();
    g.add_node("a", |_: &S| S::delta().next("elsewhere"));
    g.add_node("b", node("b"));
    g.add_edge(START, "a");
    g.add_conditional_edges("a", route_borrowed, ["b", END]);
    g.add_edge("b", END);
    let app = g.compile().unwrap();
    let err = app.invoke(S::delta()).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "the router of \"a\" returned \"elsewhere\", which is not one of its declared targets [\"b\", \"__end__\"]"
    );
}

#[test]
fn a_run_is_send_so_it_can_be_spawned() {
    fn assert_send<T: Send>(_: &T) {}
    let mut g = StateGraph::<S>::new();
    g.add_node("a", node("a"));
    g.add_edge(START, "a");
    g.add_edge("a", END);
    let app = g.compile().unwrap();
    let run = app.invoke(S::delta());
    assert_send(&run);
    let stream = app.stream(S::delta(), state_graph::StreamMode::ALL);
    assert_send(&stream);
    let threaded = app.clone().with_store(state_store::Store::memory());
    let run = threaded.invoke_thread("t", S::delta());
    assert_send(&run);
    let resume = threaded.resume("t", json!(1));
    assert_send(&resume);
}
