//! The agent half of the runner on real stores (memory, a SQLite file, a
//! PostgreSQL server the tests start), across handles and processes:
//! subgraphs paused and resumed, a process killed inside a subgraph, a
//! command's route logged, breakpoints and edits, time travel at every
//! step, per-run context, and the errors that name what is wrong.

use crate::on_every_backend;
use crate::support;
use crate::support::Count;
use crate::support::backends::TestStore;
use serde_json::{Value, json};
use state_core::{AgentState, State};
use state_graph::{
    Command, CompiledGraph, Ctx, END, GraphError, NodeError, Resume, START, StateGraph, StreamMode,
};
use state_store::{StepKind, Store};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(AgentState, Debug, Clone, PartialEq)]
struct Team {
    #[reducer(append)]
    log: Vec<String>,
    last: Option<String>,
}

#[derive(AgentState, Debug, Clone, PartialEq)]
struct Notes {
    subject: String,
    #[reducer(append)]
    notes: Vec<String>,
}

fn wrote(entry: impl Into<String>) -> TeamDelta {
    let entry = entry.into();
    Team::delta().log(vec![entry.clone()]).last(entry)
}

/// A node appending its name to the log, counting its calls.
fn node(name: &'static str, calls: &Count) -> impl Fn(&Team) -> TeamDelta + Send + Sync + 'static {
    let calls = calls.clone();
    move |_| {
        calls.hit();
        Team::delta().log(vec![name.to_owned()])
    }
}

/// A node that asks `question` and writes `name:answer`.
fn asks(
    name: &'static str,
    question: &'static str,
    calls: &Count,
) -> impl Fn(&Team, &Ctx) -> Result<TeamDelta, NodeError> + Send + Sync + 'static {
    let calls = calls.clone();
    move |_, ctx| {
        calls.hit();
        let answer = ctx.interrupt(json!(question))?;
        Ok(wrote(format!("{name}:{}", answer.as_str().unwrap_or("?"))))
    }
}

/// Calls per node of [`team`].
#[derive(Default, Clone)]
struct Calls {
    plan: Count,
    budget: Count,
    search: Count,
    review: Count,
    summarize: Count,
    write: Count,
}

/// START -> plan -> {budget, research} -> write -> END, where research is
/// a subgraph: search -> review (asks) -> summarize.
fn team(store: Store, calls: &Calls) -> CompiledGraph<Team> {
    let mut research = StateGraph::<Team>::new();
    research.add_node("search", node("search", &calls.search));
    research.add_node("review", asks("review", "publish?", &calls.review));
    research.add_node("summarize", node("summarize", &calls.summarize));
    research.add_edge(START, "search");
    research.add_edge("search", "review");
    research.add_edge("review", "summarize");
    research.add_edge("summarize", END);

    let mut g = StateGraph::<Team>::new();
    g.add_node("plan", node("plan", &calls.plan));
    g.add_node("budget", node("budget", &calls.budget));
    g.add_subgraph("research", research.compile().unwrap());
    g.add_node("write", node("write", &calls.write));
    g.add_edge(START, "plan");
    g.add_edge("plan", "budget");
    g.add_edge("plan", "research");
    g.add_edge(["budget", "research"], "write");
    g.add_edge("write", END);
    g.compile().unwrap().with_store(store)
}

fn team_input() -> TeamDelta {
    Team::delta()
}

async fn a_pause_inside_a_subgraph_is_resumed_by_another_worker(ts: TestStore) {
    let calls = Calls::default();
    let app = team(ts.store.clone(), &calls);
    let out = app.invoke_thread("t", team_input()).await.unwrap();
    assert!(out.is_interrupted(), "{}", ts.name);
    assert_eq!(out.next(), ["research"]);
    let interrupt = &out.interrupts()[0];
    assert_eq!(
        (interrupt.node.as_str(), &interrupt.value),
        ("review", &json!("publish?"))
    );
    assert_eq!(interrupt.namespace.len(), 1);
    assert!(
        interrupt.namespace[0].starts_with("research:"),
        "{:?}",
        interrupt.namespace
    );
    // The parent's state: the child's writes are not the parent's until the
    // subgraph node is done.
    assert_eq!(out.state().log, ["plan"]);

    // The snapshot says the same, from another worker.
    let other = ts.another_worker().await;
    let calls2 = Calls::default();
    let again = team(other, &calls2);
    let snap = again.get_state("t").await.unwrap();
    assert_eq!(snap.next(), ["research"]);
    assert_eq!(snap.interrupts(), out.interrupts());
    // Inside the subgraph: its own state, what runs next there.
    let [inside] = snap.subgraphs() else {
        panic!("one subgraph paused: {:?}", snap.subgraphs());
    };
    assert_eq!(inside.node, "research");
    assert_eq!(inside.namespace, interrupt.namespace);
    assert_eq!(
        inside.state["log"],
        json!(["plan", "search"]),
        "{}",
        ts.name
    );
    assert_eq!(inside.next, ["review"]);
    assert_eq!(inside.interrupts, out.interrupts());
    assert!(inside.subgraphs.is_empty());
    assert_eq!(
        again.pending_interrupts("t").await.unwrap(),
        out.interrupts()
    );

    // Resumed by id there: nothing the child or the parent finished runs
    // again.
    let id = interrupt.id.clone();
    let done = again
        .resume("t", Resume::by_id([(id.as_str(), json!("yes"))]))
        .await
        .unwrap();
    assert!(!done.is_interrupted());
    assert_eq!(
        done.state().log,
        [
            "plan",
            "budget",
            "search",
            "review:yes",
            "summarize",
            "write"
        ],
        "{}",
        ts.name
    );
    // The subgraph's plain field, written by two of its steps: the later.
    assert_eq!(done.state().last.as_deref(), Some("review:yes"));
    assert_eq!(
        (calls.plan.get(), calls.budget.get(), calls.search.get()),
        (1, 1, 1)
    );
    assert_eq!((calls.review.get(), calls.summarize.get()), (1, 0));
    assert_eq!(
        (calls2.plan.get(), calls2.budget.get(), calls2.search.get()),
        (0, 0, 0),
        "{}: finished work is not done again",
        ts.name
    );
    assert_eq!((calls2.review.get(), calls2.summarize.get()), (1, 1));

    // The child's steps are in the parent's log, under its namespace.
    let steps = ts.store.history("t", ..).await.unwrap();
    let child: Vec<(&str, Vec<&str>)> = steps
        .iter()
        .filter(|s| s.kind == StepKind::Subgraph)
        .map(|s| (s.metadata["ns"].as_str().unwrap(), s.nodes()))
        .collect();
    assert_eq!(child.len(), 3, "{child:?}");
    assert!(child.iter().all(|(ns, _)| *ns == interrupt.namespace[0]));
    assert_eq!(
        child.iter().map(|c| c.1.clone()).collect::<Vec<_>>(),
        [vec!["search"], vec!["review"], vec!["summarize"]]
    );
    // The history lists the parent's steps only.
    let history = again.get_state_history("t").await.unwrap();
    assert!(history.iter().all(|s| s.metadata()["source"] != "subgraph"));
    assert_eq!(history[0].state().log.len(), 6);
}

/// Three levels: the team's research, whose review is a subgraph of
/// another state type that asks.
fn three_levels(store: Store, asked: &Count) -> CompiledGraph<Team> {
    let mut notes = StateGraph::<Notes>::new();
    let asked = asked.clone();
    notes.add_node("jot", |n: &Notes| {
        Notes::delta().notes(vec![format!("on {}", n.subject)])
    });
    notes.add_node(
        "check",
        move |_: &Notes, ctx: &Ctx| -> Result<NotesDelta, NodeError> {
            asked.hit();
            let answer = ctx.interrupt(json!("keep the notes?"))?;
            Ok(Notes::delta().notes(vec![format!("kept: {answer}")]))
        },
    );
    notes
        .add_edge(START, "jot")
        .add_edge("jot", "check")
        .add_edge("check", END);

    let mut research = StateGraph::<Team>::new();
    research.add_node("search", |_: &Team| wrote("search"));
    research.add_subgraph_mapped(
        "notes",
        notes.compile().unwrap(),
        |t: &Team| Notes::delta().subject(t.last.clone().unwrap_or_default()),
        |n: &Notes| Team::delta().log(n.notes.clone()),
    );
    research
        .add_edge(START, "search")
        .add_edge("search", "notes")
        .add_edge("notes", END);

    let mut g = StateGraph::<Team>::new();
    g.add_subgraph("research", research.compile().unwrap());
    g.add_node("write", |_: &Team| wrote("write"));
    g.add_edge(START, "research")
        .add_edge("research", "write")
        .add_edge("write", END);
    g.compile().unwrap().with_store(store)
}

async fn three_levels_deep_pause_and_resume(ts: TestStore) {
    let asked = Count::default();
    let app = three_levels(ts.store.clone(), &asked);
    let out = app.invoke_thread("t", team_input()).await.unwrap();
    let interrupt = &out.interrupts()[0];
    assert_eq!(interrupt.node, "check");
    assert_eq!(interrupt.namespace.len(), 2, "{:?}", interrupt.namespace);
    assert!(interrupt.namespace[0].starts_with("research:"));
    assert!(interrupt.namespace[1].starts_with("notes:"));
    let app = three_levels(ts.another_worker().await, &asked);
    let snap = app.get_state("t").await.unwrap();
    let [research] = snap.subgraphs() else {
        panic!("{:?}", snap.subgraphs())
    };
    assert_eq!(research.next, ["notes"]);
    let [notes] = research.subgraphs.as_slice() else {
        panic!("{:?}", research.subgraphs)
    };
    assert_eq!(
        (notes.node.as_str(), &notes.state),
        (
            "notes",
            &json!({"subject": "search", "notes": ["on search"]})
        ),
        "{}",
        ts.name
    );
    assert_eq!(notes.next, ["check"]);
    let done = app.resume("t", json!("yes")).await.unwrap();
    assert_eq!(
        done.state().log,
        ["search", "on search", "kept: \"yes\"", "write"],
        "{}",
        ts.name
    );
    assert_eq!(
        asked.get(),
        2,
        "the asking node runs again, once, when answered"
    );
}

async fn a_command_goes_where_it_was_logged(ts: TestStore) {
    // "pick" goes where a flag says; the flag changes before the run goes
    // on: it goes where the logged step says.
    fn graph(store: Store, to: &'static str) -> CompiledGraph<Team> {
        let mut g = StateGraph::<Team>::new();
        g.add_node("pick", move |_: &Team| {
            Command::goto(to).update(wrote("pick"))
        })
        .destinations(["left", "right"]);
        g.add_node("left", |_: &Team| wrote("left"));
        g.add_node("right", |_: &Team| wrote("right"));
        g.add_edge(START, "pick")
            .add_edge("left", END)
            .add_edge("right", END);
        g.interrupt_after(["pick"]);
        g.compile().unwrap().with_store(store)
    }
    let out = graph(ts.store.clone(), "left")
        .invoke_thread("t", team_input())
        .await
        .unwrap();
    assert_eq!(out.next(), ["left"]);
    let out = graph(ts.another_worker().await, "right")
        .continue_thread("t")
        .await
        .unwrap();
    assert_eq!(out.state().log, ["pick", "left"], "{}", ts.name);
}

/// LangGraph's review-a-tool-call: pause before "tools", edit what it
/// reads (as "agent"), go on.
async fn edit_before_a_breakpoint_then_go_on(ts: TestStore) {
    let tools = Count::default();
    let graph = |store: Store| {
        let mut g = StateGraph::<Team>::new();
        g.add_node("agent", |_: &Team| wrote("call: rm -rf /"));
        let tools = tools.clone();
        g.add_node("tools", move |s: &Team| {
            tools.hit();
            wrote(format!("ran {}", s.last.as_deref().unwrap_or("nothing")))
        });
        g.add_edge(START, "agent")
            .add_edge("agent", "tools")
            .add_edge("tools", END);
        g.interrupt_before(["tools"]);
        g.compile().unwrap().with_store(store)
    };
    let app = graph(ts.store.clone());
    let out = app.invoke_thread("t", team_input()).await.unwrap();
    assert!(out.is_interrupted());
    assert!(out.interrupts().is_empty(), "a breakpoint is no interrupt");
    assert_eq!(out.next(), ["tools"]);
    assert_eq!(tools.get(), 0);
    assert_eq!(app.get_state("t").await.unwrap().next(), ["tools"]);

    let app = graph(ts.another_worker().await);
    app.update_state("t", Team::delta().last("call: ls"), Some("agent"))
        .await
        .unwrap();
    let snap = app.get_state("t").await.unwrap();
    assert_eq!(snap.next(), ["tools"]);
    assert_eq!(snap.metadata()["source"], "update");
    let out = app.continue_thread("t").await.unwrap();
    assert!(
        !out.is_interrupted(),
        "{}: the breakpoint was passed",
        ts.name
    );
    assert_eq!(out.state().log, ["call: rm -rf /", "ran call: ls"]);
    assert_eq!(tools.get(), 1);
}

/// A run's own breakpoints (LangGraph's `invoke(.., interrupt_before=)`)
/// take the place of the compiled ones, for that run only: another
/// worker going on with the graph as compiled is not stopped by them, nor
/// by a compiled breakpoint right after the pause (LangGraph's: nothing
/// was written since its last interrupt).
async fn a_runs_own_breakpoints_replace_the_compiled_ones(ts: TestStore) {
    let graph = |store: Store| {
        let mut g = StateGraph::<Team>::new();
        g.add_node("agent", |_: &Team| wrote("agent"));
        g.add_node("tools", |_: &Team| wrote("tools"));
        g.add_node("answer", |_: &Team| wrote("answer"));
        g.add_edge(START, "agent")
            .add_edge("agent", "tools")
            .add_edge("tools", "answer")
            .add_edge("answer", END);
        g.interrupt_before(["tools"]);
        g.compile().unwrap().with_store(store)
    };
    let app = graph(ts.store.clone());
    // None before any node: the compiled one at "tools" is not kept.
    let debug = app
        .with_interrupt_before(Vec::<String>::new())
        .unwrap()
        .with_interrupt_after(["agent"])
        .unwrap();
    let out = debug.invoke_thread("t", team_input()).await.unwrap();
    assert_eq!(out.next(), ["tools"], "{}", ts.name);
    assert_eq!(out.state().log, ["agent"]);
    // Another worker, the graph as compiled: paused after "agent", the
    // thread goes on into "tools" (a breakpoint before it is passed when
    // the thread is already paused there), then to the end.
    let other = graph(ts.another_worker().await);
    let out = other.continue_thread("t").await.unwrap();
    assert!(!out.is_interrupted(), "{}", ts.name);
    assert_eq!(out.state().log, ["agent", "tools", "answer"]);
    // The same after an edit of the paused thread (LangGraph 1.2 runs
    // "tools" then too: its `update_state` then `invoke(None)`).
    debug.invoke_thread("w", team_input()).await.unwrap();
    other.update_state("w", wrote("edit"), None).await.unwrap();
    assert_eq!(other.get_state("w").await.unwrap().next(), ["tools"]);
    let out = other.continue_thread("w").await.unwrap();
    assert!(!out.is_interrupted(), "{}", ts.name);
    assert_eq!(out.state().log, ["agent", "edit", "tools", "answer"]);
    // Every node, and the names are checked.
    let every = app.with_interrupt_before(["*"]).unwrap();
    let out = every.invoke_thread("u", team_input()).await.unwrap();
    assert_eq!(out.next(), ["agent"], "{}", ts.name);
    let err = app.with_interrupt_after(["tool"]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "with_interrupt_after: \"tool\" is not a node of this graph"
    );
}

/// Time travel: a fork at every step of a run that paused and was
/// answered goes on from there to the same end, and the original is
/// untouched.
async fn a_fork_at_every_step_goes_on_from_there(ts: TestStore) {
    let calls = Calls::default();
    let app = team(ts.store.clone(), &calls);
    app.invoke_thread("t", team_input()).await.unwrap();
    let done = app.resume("t", json!("ok")).await.unwrap();
    let original = ts.store.history("t", ..).await.unwrap();
    let end = done.state().clone();
    for step in &original {
        let fork = format!("t@{}", step.seq);
        ts.store.fork::<Team>("t", step.seq, &fork).await.unwrap();
        let mut out = app.continue_thread(&fork).await.unwrap();
        if out.is_interrupted() {
            // Forked where the run was paused: the fork is paused too.
            out = app.resume(&fork, json!("ok")).await.unwrap();
        }
        assert_eq!(
            out.state(),
            &end,
            "{}: forked at {} ({})",
            ts.name,
            step.seq,
            step.kind
        );
    }
    assert_eq!(ts.store.history("t", ..).await.unwrap(), original);
}

/// Time travel in place (LangGraph's run from a past `checkpoint_id`):
/// from every step of a run that paused inside a subgraph and was
/// answered, on a copy of the whole thread, `continue_thread` goes on from
/// there to the same end; the steps after it stay in the history,
/// unchanged. From inside the subgraph's run (its own steps, the pause
/// inside it), the branch goes back to the parent's last committed step
/// and copies the subgraph's steps since, so the run goes on inside it.
async fn a_run_from_every_step_in_place_goes_on_from_there(ts: TestStore) {
    let calls = Calls::default();
    let app = team(ts.store.clone(), &calls);
    app.invoke_thread("t", team_input()).await.unwrap();
    let done = app.resume("t", json!("ok")).await.unwrap();
    let original = ts.store.history("t", ..).await.unwrap();
    let head = done.seq();
    let mut inside = 0;
    for step in &original {
        let copy = format!("t~{}", step.seq);
        ts.store.fork_log("t", head, &copy).await.unwrap();
        let at = format!("{}: from step {} ({})", ts.name, step.seq, step.kind);
        let before = (calls.search.get(), calls.review.get());
        let mut out = app
            .with_checkpoint(step.seq)
            .continue_thread(&copy)
            .await
            .unwrap_or_else(|e| panic!("{at}: {e}"));
        if out.is_interrupted() {
            out = app.resume(&copy, json!("ok")).await.unwrap();
        }
        assert_eq!(out.state(), done.state(), "{at}");
        let history = ts.store.history(&copy, ..).await.unwrap();
        if step.seq == head {
            assert_eq!(
                history.len(),
                original.len(),
                "{at}: the latest step, no branch"
            );
            continue;
        }
        let branch = &history[original.len()];
        assert_eq!(branch.kind, StepKind::Branch, "{at}");
        assert_eq!(branch.metadata["source"], "fork", "{at}");
        let from = branch.branched_from().expect("a branch");
        if from < step.seq {
            // Inside the subgraph's run: its steps since `from` copied,
            // its search not run again.
            inside += 1;
            let copies = &history[original.len() + 1..][..(step.seq - from) as usize];
            let kinds: Vec<StepKind> = copies.iter().map(|c| c.kind).collect();
            let was: Vec<StepKind> = original[from as usize..step.seq as usize]
                .iter()
                .map(|o| o.kind)
                .collect();
            assert_eq!(kinds, was, "{at}");
            assert_eq!(calls.search.get(), before.0, "{at}: search ran again");
        } else {
            assert_eq!(from, step.seq, "{at}");
        }
        for (kept, was) in history.iter().zip(&original) {
            assert_eq!(
                (kept.seq, kept.kind, &kept.body),
                (was.seq, was.kind, &was.body),
                "{at}"
            );
        }
        // The snapshot of the branch: the state it went back to, its
        // parent the step it branched from.
        let snaps = app.get_state_history(&copy).await.unwrap();
        let fork = snaps
            .iter()
            .find(|s| s.seq() == branch.seq)
            .expect("the branch's snapshot");
        assert_eq!(fork.parent(), Some(from), "{at}");
        assert_eq!(
            fork.state(),
            &ts.store.state_at::<Team>("t", step.seq).await.unwrap(),
            "{at}"
        );
    }
    assert!(inside > 0, "{}: steps inside the subgraph's run", ts.name);
    assert_eq!(ts.store.history("t", ..).await.unwrap(), original);
}

/// START -> ask (asks) -> finish -> END, on a flat graph.
fn asking(store: Store, calls: &Count) -> CompiledGraph<Team> {
    let mut g = StateGraph::<Team>::new();
    g.add_node("ask", asks("ask", "name?", calls));
    g.add_node("finish", |s: &Team| wrote(format!("done:{}", s.log.len())));
    g.add_edge(START, "ask");
    g.add_edge("ask", "finish");
    g.add_edge("finish", END);
    g.compile().unwrap().with_store(store)
}

/// In place, at a pause: resumed again with another answer (the pause's
/// interrupt pending on the branch, by its id), new input from an earlier
/// step, an edit there (LangGraph's fork) then on; a step past the end
/// is refused with nothing written.
async fn a_pause_answered_again_in_place(ts: TestStore) {
    let calls = Count::default();
    let app = asking(ts.store.clone(), &calls);
    let paused = app.invoke_thread("t", wrote("hi")).await.unwrap();
    let pause = paused.seq();
    let asked = paused.interrupts()[0].clone();
    let first = app.resume("t", json!("ada")).await.unwrap();
    assert_eq!(first.state().last.as_deref(), Some("done:2"));

    // The same question, answered again from the pause.
    let from_pause = app.with_checkpoint(pause);
    assert_eq!(
        from_pause.pending_interrupts("t").await.unwrap(),
        [],
        "with_checkpoint changes no read: the thread's head has none"
    );
    let again = from_pause
        .resume("t", Resume::by_id([(asked.id.clone(), json!("bob"))]))
        .await
        .unwrap();
    assert_eq!(
        again.state().log,
        ["hi", "ask:bob", "done:2"],
        "{}",
        ts.name
    );
    assert_eq!(
        calls.get(),
        3,
        "{}: ask ran once more for the new answer",
        ts.name
    );
    // Both answers are in the history, each on its branch.
    let history = app.get_state_history("t").await.unwrap();
    assert!(
        history
            .iter()
            .any(|s| s.state().log == ["hi", "ask:ada", "done:2"])
    );
    let fork = history
        .iter()
        .find(|s| s.metadata()["source"] == "fork")
        .unwrap();
    assert_eq!(
        (fork.parent(), fork.next()),
        (Some(pause), &["ask".to_owned()][..])
    );
    assert_eq!(fork.interrupts(), std::slice::from_ref(&asked));
    // From the branch step itself: a branch of a branch, paused the same.
    let zed = app
        .with_checkpoint(fork.seq())
        .resume("t", json!("zed"))
        .await
        .unwrap();
    assert_eq!(zed.state().log, ["hi", "ask:zed", "done:2"], "{}", ts.name);

    // New input from the step before the first run's input: a fresh turn
    // on the empty thread's state.
    let before = app
        .with_checkpoint(0)
        .invoke_thread("t", wrote("hey"))
        .await
        .unwrap();
    assert!(before.is_interrupted());
    assert_eq!(before.state().log, ["hey"], "{}", ts.name);

    // An edit at the pause, as the paused node: it counts as done.
    let seq = app
        .with_checkpoint(pause)
        .update_state("t", wrote("ask:eve"), Some("ask"))
        .await
        .unwrap();
    let edited = app.get_state("t").await.unwrap();
    assert_eq!(
        (edited.seq(), edited.next()),
        (seq, &["finish".to_owned()][..])
    );
    let on = app.continue_thread("t").await.unwrap();
    assert_eq!(on.state().log, ["hi", "ask:eve", "done:2"], "{}", ts.name);

    // Refused, nothing written: past the end.
    let steps = ts.store.history("t", ..).await.unwrap();
    let past = steps.len() as u64 + 5;
    let error = app
        .with_checkpoint(past)
        .continue_thread("t")
        .await
        .unwrap_err();
    assert!(
        matches!(&error, GraphError::Checkpoint { seq, .. } if *seq == past),
        "{error}"
    );
    assert_eq!(
        error.to_string(),
        format!(
            "cannot run thread \"t\" from step {past}: its last step is {}",
            steps.len()
        )
    );
    let error = app
        .with_checkpoint(past)
        .update_state("t", wrote("x"), None)
        .await
        .unwrap_err();
    assert!(matches!(error, GraphError::Checkpoint { .. }), "{error}");
    assert!(matches!(
        app.with_checkpoint(1)
            .invoke_thread("nowhere", wrote("x"))
            .await,
        Err(GraphError::Store(
            state_store::StoreError::ThreadNotFound { .. }
        ))
    ));
    assert!(
        ts.store.thread_info("nowhere").await.is_err(),
        "not created"
    );
    assert_eq!(ts.store.history("t", ..).await.unwrap(), steps);
}

async fn the_context_is_given_to_every_run(ts: TestStore) {
    struct User {
        name: &'static str,
    }
    fn greet(_: &Team, ctx: &Ctx<User>) -> Result<TeamDelta, NodeError> {
        let answer = ctx.interrupt(json!("hello?"))?;
        Ok(wrote(format!("{} said {answer}", ctx.context().name)))
    }
    let mut g = StateGraph::<Team, User>::new();
    g.add_node("greet", greet);
    g.add_edge(START, "greet");
    g.add_conditional_edges(
        "greet",
        |_: &Team, user: &User| if user.name == "Ada" { END } else { "greet" },
        ["greet", END],
    );
    let app = g.compile().unwrap().with_store(ts.store.clone());
    let err = app.invoke_thread("t", team_input()).await.unwrap_err();
    assert!(matches!(err, GraphError::NoContext { .. }), "{err}");
    assert!(err.to_string().contains("with_context"), "{err}");
    assert!(
        ts.store.thread_info("t").await.is_err(),
        "nothing was written"
    );

    let ada = app.with_context(User { name: "Ada" });
    let out = ada.invoke_thread("t", team_input()).await.unwrap();
    assert!(out.is_interrupted());
    // Not stored: the resume is given it again.
    let out = ada.resume("t", json!("hi")).await.unwrap();
    assert_eq!(out.state().log, ["Ada said \"hi\""], "{}", ts.name);
}

on_every_backend!(
    a_pause_inside_a_subgraph_is_resumed_by_another_worker,
    three_levels_deep_pause_and_resume,
    a_command_goes_where_it_was_logged,
    edit_before_a_breakpoint_then_go_on,
    a_runs_own_breakpoints_replace_the_compiled_ones,
    a_fork_at_every_step_goes_on_from_there,
    a_run_from_every_step_in_place_goes_on_from_there,
    a_pause_answered_again_in_place,
    the_context_is_given_to_every_run,
);

// ---------------------------------------------------------------------------
// Processes: a run paused inside a subgraph by one process is resumed by
// another; a process killed inside a subgraph goes on there.

/// `sqlite:<path>` or `postgres:<url>`: the store the child process runs on.
const CHILD_ENV: &str = "STATE_GRAPH_AGENT_CHILD";
/// What the child does: `pause` (run until the subgraph asks, then exit) or
/// `block` (run until the subgraph's second step, then wait to be killed).
const MODE_ENV: &str = "STATE_GRAPH_AGENT_MODE";
/// The file the blocking node creates once it runs.
const MARK_ENV: &str = "STATE_GRAPH_AGENT_MARK";

/// START -> intro -> crew (a subgraph: first -> second -> third) -> outro
/// -> END. With `block`, "second" creates that file and waits forever.
fn crash_team(store: Store, block: Option<PathBuf>, first: &Count) -> CompiledGraph<Team> {
    let mut crew = StateGraph::<Team>::new();
    crew.add_node("first", node("first", first));
    crew.add_node("second", move |_: Arc<Team>| {
        let block = block.clone();
        async move {
            if let Some(mark) = block {
                std::fs::write(&mark, b"running").unwrap();
                tokio::time::sleep(Duration::from_secs(120)).await;
                // Never reached: the parent kills this process first.
                std::process::abort();
            }
            Ok::<_, NodeError>(wrote("second"))
        }
    });
    crew.add_node("third", |s: &Team| {
        wrote(format!("third after {}", s.log.len()))
    });
    crew.add_edge(START, "first").add_edge("first", "second");
    crew.add_edge("second", "third").add_edge("third", END);
    let mut g = StateGraph::<Team>::new();
    g.add_node("intro", |_: &Team| wrote("intro"));
    g.add_subgraph("crew", crew.compile().unwrap());
    g.add_node("outro", |_: &Team| wrote("outro"));
    g.add_edge(START, "intro").add_edge("intro", "crew");
    g.add_edge("crew", "outro").add_edge("outro", END);
    g.compile().unwrap().with_store(store)
}

/// The child process: see [`MODE_ENV`]; without [`CHILD_ENV`] (a normal
/// test run), returns at once.
#[tokio::test]
async fn agent_child_process() {
    let Ok(target) = std::env::var(CHILD_ENV) else {
        return;
    };
    let store = match target.split_once(':') {
        Some(("sqlite", path)) => Store::sqlite(path).await.unwrap(),
        Some(("postgres", url)) => Store::postgres(url).await.unwrap(),
        _ => panic!("{CHILD_ENV}={target}: not sqlite:<path> nor postgres:<url>"),
    };
    match std::env::var(MODE_ENV).as_deref() {
        Ok("pause") => {
            let out = team(store, &Calls::default())
                .invoke_thread("t", team_input())
                .await
                .unwrap();
            assert!(out.is_interrupted());
        }
        Ok("block") => {
            let mark = PathBuf::from(std::env::var(MARK_ENV).expect("the mark file"));
            let app = crash_team(store, Some(mark), &Count::default());
            let result = app.invoke_thread("t", team_input()).await;
            panic!("the child's run ended instead of blocking: {result:?}");
        }
        other => panic!("{MODE_ENV}={other:?}"),
    }
}

/// Kills the child when dropped, so that a failing test leaves none behind.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn(ts: &TestStore, mode: &str, mark: &Path, stderr: &Path) -> KillOnDrop {
    let child = support::child::only(module_path!(), "agent_child_process")
        .env(CHILD_ENV, format!("{}:{}", ts.name, ts.location))
        .env(MODE_ENV, mode)
        .env(MARK_ENV, mark)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(stderr).unwrap())
        .spawn()
        .unwrap();
    KillOnDrop(child)
}

async fn a_process_resumes_what_another_paused_inside_a_subgraph(ts: TestStore) {
    let dir = tempfile::tempdir().unwrap();
    let stderr = dir.path().join("child.stderr");
    let mut child = spawn(&ts, "pause", &dir.path().join("unused"), &stderr);
    let status = child.0.wait().unwrap();
    assert!(
        status.success(),
        "{status}:\n{}",
        std::fs::read_to_string(&stderr).unwrap_or_default()
    );
    let calls = Calls::default();
    let app = team(ts.another_worker().await, &calls);
    let done = app.resume("t", json!("yes")).await.unwrap();
    assert_eq!(
        done.state().log,
        [
            "plan",
            "budget",
            "search",
            "review:yes",
            "summarize",
            "write"
        ],
        "{}",
        ts.name
    );
    assert_eq!(
        (calls.plan.get(), calls.budget.get(), calls.search.get()),
        (0, 0, 0)
    );
}

async fn a_process_killed_inside_a_subgraph_goes_on_there(ts: TestStore) {
    let dir = tempfile::tempdir().unwrap();
    let mark = dir.path().join("running");
    let stderr = dir.path().join("child.stderr");
    let mut child = spawn(&ts, "block", &mark, &stderr);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !mark.exists() {
        if let Some(status) = child.0.try_wait().unwrap() {
            panic!(
                "the child exited ({status}) before its node ran:\n{}",
                std::fs::read_to_string(&stderr).unwrap_or_default()
            );
        }
        assert!(Instant::now() < deadline, "the child's node did not start");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    child.0.kill().unwrap(); // SIGKILL
    assert!(!child.0.wait().unwrap().success());
    drop(child);

    // The intro and the subgraph's first step were committed.
    let store = ts.another_worker().await;
    let kinds: Vec<(StepKind, Value)> = store
        .history("t", ..)
        .await
        .unwrap()
        .iter()
        .map(|s| (s.kind, s.metadata["nodes"].clone()))
        .collect();
    assert_eq!(
        kinds,
        [
            (StepKind::BeginTurn, json!([START])),
            (StepKind::Superstep, json!(["intro"])),
            (StepKind::Subgraph, json!(["first"])),
        ],
        "{}",
        ts.name
    );
    let first = Count::default();
    let app = crash_team(store.clone(), None, &first);
    assert_eq!(app.get_state("t").await.unwrap().next(), ["crew"]);
    let out = app.continue_thread("t").await.unwrap();
    assert_eq!(
        first.get(),
        0,
        "the subgraph's committed step does not run again"
    );
    assert_eq!(
        out.state().log,
        ["intro", "first", "second", "third after 3", "outro"],
        "{}",
        ts.name
    );
}

/// SQLite and PostgreSQL only: a memory store dies with its process.
mod processes {
    use super::support::backends::TestStore;

    #[tokio::test]
    async fn resumed_by_another_process_sqlite() {
        super::a_process_resumes_what_another_paused_inside_a_subgraph(TestStore::sqlite().await)
            .await;
    }

    #[tokio::test]
    async fn resumed_by_another_process_postgres() {
        super::a_process_resumes_what_another_paused_inside_a_subgraph(TestStore::postgres().await)
            .await;
    }

    #[tokio::test]
    async fn killed_inside_a_subgraph_sqlite() {
        super::a_process_killed_inside_a_subgraph_goes_on_there(TestStore::sqlite().await).await;
    }

    #[tokio::test]
    async fn killed_inside_a_subgraph_postgres() {
        super::a_process_killed_inside_a_subgraph_goes_on_there(TestStore::postgres().await).await;
    }
}

// ---------------------------------------------------------------------------
// Errors that name what is wrong.

#[test]
fn compile_names_a_wrong_destination_join_or_breakpoint() {
    let mut g = StateGraph::<Team>::new();
    g.add_node("a", |_: &Team| Command::<TeamDelta>::goto("b"))
        .destinations(["bb", END]);
    g.add_node("b", |_: &Team| wrote("b"));
    g.add_edge(START, "a").add_edge("b", END);
    g.add_edge(["a", "b"], END);
    g.interrupt_before(["tool"]);
    let err = g.compile().unwrap_err().to_string();
    for part in [
        "the target of the destinations of \"a\" \"bb\" is not a node (did you mean \"b\"?)",
        "leads to END",
        "interrupt_before \"tool\" is not a node",
    ] {
        assert!(err.contains(part), "{part:?} in {err}");
    }

    let mut g = StateGraph::<Team>::new();
    let worker = g.add_worker("w", |n: &u32| wrote(format!("w{n}")));
    g.add_node("a", move |_: &Team| {
        Command::<TeamDelta>::goto(worker.send(1))
    })
    .destinations(["w"]);
    g.add_edge(START, "a").add_edge("w", END);
    let err = g.compile().unwrap_err().to_string();
    assert!(err.contains("Destination::from(&worker)"), "{err}");
}

#[tokio::test]
async fn a_command_to_an_undeclared_target_fails_naming_it() {
    let mut g = StateGraph::<Team>::new();
    g.add_node("a", |_: &Team| Command::goto("c").update(wrote("a")))
        .destinations(["b"]);
    g.add_node("b", |_: &Team| wrote("b"));
    g.add_node("c", |_: &Team| wrote("c"));
    g.add_edge(START, "a").add_edge("b", "c").add_edge("c", END);
    let err = g.compile().unwrap().invoke(team_input()).await.unwrap_err();
    assert!(
        matches!(err, GraphError::UndeclaredDestination { .. }),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "node \"a\" returned a Command going to \"c\", which is not among its destinations [\"b\"]; declare it with .destinations([..])"
    );
}

#[tokio::test]
async fn to_parent_outside_a_subgraph_and_breakpoints_in_memory_are_errors() {
    let mut g = StateGraph::<Team>::new();
    g.add_node("a", |_: &Team| {
        Command::goto("b").update(wrote("a")).to_parent()
    });
    g.add_node("b", |_: &Team| wrote("b"));
    g.add_edge(START, "a").add_edge("a", "b").add_edge("b", END);
    let err = g.compile().unwrap().invoke(team_input()).await.unwrap_err();
    assert!(matches!(err, GraphError::NoParent { .. }), "{err}");

    let mut g = StateGraph::<Team>::new();
    g.add_node("a", |_: &Team| wrote("a"));
    g.add_edge(START, "a").add_edge("a", END);
    g.interrupt_before(["a"]);
    let err = g.compile().unwrap().invoke(team_input()).await.unwrap_err();
    assert!(err.to_string().contains("breakpoint at \"a\""), "{err}");
}

/// A subgraph's events reach the stream with its namespace when asked for
/// (`StreamMode::SUBGRAPHS`), and only then.
#[tokio::test]
async fn subgraph_events_carry_their_namespace() {
    use futures::StreamExt;
    let mut crew = StateGraph::<Team>::new();
    crew.add_node("inner", |_: &Team| wrote("inner"));
    crew.add_edge(START, "inner").add_edge("inner", END);
    let mut g = StateGraph::<Team>::new();
    g.add_subgraph("crew", crew.compile().unwrap());
    g.add_edge(START, "crew").add_edge("crew", END);
    let app = g.compile().unwrap();
    let events: Vec<(Vec<String>, String, Value)> = app
        .stream(team_input(), StreamMode::UPDATES | StreamMode::SUBGRAPHS)
        .map(|e| {
            let e = e.unwrap();
            (
                e.namespace().to_vec(),
                e.mode().to_owned(),
                e.data().unwrap(),
            )
        })
        .collect()
        .await;
    assert_eq!(events.len(), 3, "{events:?}");
    assert_eq!(events[0].0.len(), 1);
    assert!(events[0].0[0].starts_with("crew:"));
    assert_eq!(
        (&events[0].1[..], &events[0].2),
        (
            "updates",
            &json!({"inner": {"log": ["inner"], "last": "inner"}})
        )
    );
    assert_eq!(events[1].0, Vec::<String>::new());
    assert_eq!(
        events[1].2,
        json!({"crew": {"log": ["inner"], "last": "inner"}})
    );
    let plain: Vec<Value> = app
        .stream(team_input(), StreamMode::UPDATES)
        .map(|e| e.unwrap().data().unwrap())
        .collect()
        .await;
    assert_eq!(
        plain.len(),
        2,
        "without SUBGRAPHS, the parent's only: {plain:?}"
    );
}

/// A state whose `tally` counts its reducer's calls in [`TALLIED`].
#[derive(AgentState, Debug, Clone, PartialEq)]
struct Tallied {
    #[reducer(append)]
    log: Vec<String>,
    last: Option<String>,
    #[reducer(with = tally)]
    tally: u64,
}

/// Calls of [`tally`], the reducer of [`Tallied::tally`].
static TALLIED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn tally(total: &mut u64, n: u64) {
    TALLIED.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    *total += n;
}

/// START -> pre -> middle -> notes -> post -> END; `middle` a subgraph
/// START -> m1 -> inner, whose last node hands off to `m2` in `middle`
/// (`to_parent`); `inner` a subgraph START -> a -> b, both writing the
/// plain field `last` and the tally; `notes` a subgraph of another state
/// type.
fn nested_teams() -> CompiledGraph<Tallied> {
    let says = |name: &'static str| {
        move |_: &Tallied| {
            Tallied::delta()
                .log(vec![name.to_owned()])
                .last(name.to_owned())
        }
    };
    let mut inner = StateGraph::<Tallied>::new();
    inner.add_node("a", |_: &Tallied| {
        Tallied::delta()
            .log(vec!["a".to_owned()])
            .last("a".to_owned())
            .tally(1)
    });
    inner.add_node("b", |_: &Tallied| {
        let update = Tallied::delta()
            .log(vec!["b".to_owned()])
            .last("b".to_owned())
            .tally(2);
        Command::goto("m2").update(update).to_parent()
    });
    inner
        .add_edge(START, "a")
        .add_edge("a", "b")
        .add_edge("b", END);
    let mut middle = StateGraph::<Tallied>::new();
    middle.add_node("m1", says("m1"));
    middle
        .add_subgraph("inner", inner.compile().unwrap())
        .destinations(["m2"]);
    middle.add_node("m2", says("m2"));
    middle
        .add_edge(START, "m1")
        .add_edge("m1", "inner")
        .add_edge("m2", END);
    // Of another state type: never adopted.
    let mut notes = StateGraph::<Notes>::new();
    notes.add_node("jot", |n: &Notes| {
        Notes::delta().notes(vec![format!("noted {}", n.subject)])
    });
    notes.add_edge(START, "jot").add_edge("jot", END);
    let mut g = StateGraph::<Tallied>::new();
    g.add_node("pre", says("pre"));
    g.add_subgraph("middle", middle.compile().unwrap());
    g.add_subgraph_mapped(
        "notes",
        notes.compile().unwrap(),
        |t: &Tallied| Notes::delta().subject(t.last.clone().unwrap_or_default()),
        |n: &Notes| Tallied::delta().log(n.notes.clone()),
    );
    g.add_node("post", says("post"));
    g.add_edge(START, "pre")
        .add_edge("pre", "middle")
        .add_edge("middle", "notes")
        .add_edge("notes", "post")
        .add_edge("post", END);
    g.compile().unwrap()
}

/// A subgraph that is its superstep's only task runs on the superstep's
/// state and hands back its final state when nothing reads its writes (no
/// store, no `updates` or `messages` stream), or its final state with its
/// writes when they are streamed or logged: the same state and the same
/// `values` events either way, and as a stored run, whose log is the
/// composed writes'. Its steps' writes are applied once, not once per
/// level. (That the state handed back is the one its logged writes make
/// on every backend: `a_handed_back_state_is_what_its_logged_writes_make`.)
#[tokio::test]
async fn an_adopted_subgraph_state_is_what_applying_its_writes_makes() {
    use futures::StreamExt;
    use std::sync::atomic::Ordering::SeqCst;
    let app = nested_teams();
    let input = || Tallied::delta().log(vec!["in".to_owned()]);
    let expected = Tallied {
        log: ["in", "pre", "m1", "a", "b", "m2", "noted m2", "post"]
            .map(str::to_owned)
            .to_vec(),
        last: Some("post".to_owned()),
        tally: 3,
    };

    TALLIED.store(0, SeqCst);
    assert_eq!(app.invoke(input()).await.unwrap(), expected);
    assert_eq!(TALLIED.load(SeqCst), 2, "each write applied once");

    // Values events and their state, with and without the writes applied
    // again (updates streamed).
    let values = |modes| {
        app.stream(input(), modes)
            .filter_map(|e| async move {
                let e = e.unwrap();
                (e.mode() == "values").then(|| e.data().unwrap())
            })
            .collect::<Vec<Value>>()
    };
    TALLIED.store(0, SeqCst);
    let adopted = values(StreamMode::VALUES).await;
    assert_eq!(TALLIED.load(SeqCst), 2);
    // With updates streamed the writes are composed for the stream, and
    // the state handed back with them: still applied once.
    TALLIED.store(0, SeqCst);
    let streamed = values(StreamMode::VALUES | StreamMode::UPDATES).await;
    assert_eq!(TALLIED.load(SeqCst), 2, "handed back, not applied again");
    assert_eq!(adopted, streamed);
    assert_eq!(
        adopted.len(),
        5,
        "input, pre, middle, notes, post: {adopted:?}"
    );
    assert_eq!(adopted.last(), Some(&expected.to_json().unwrap()));

    // A stored run applies the writes as logged: the same state, and the
    // subgraph's writes in its parent's step as before.
    let stored = app.with_store(Store::memory());
    TALLIED.store(0, SeqCst);
    let out = stored.invoke_thread("t", input()).await.unwrap();
    assert_eq!(TALLIED.load(SeqCst), 2, "logged, not applied again");
    assert_eq!(out.state(), &expected);
    let history = stored.get_state_history("t").await.unwrap();
    let middle = history
        .iter()
        .find(|s| s.metadata()["nodes"] == json!(["middle"]))
        .expect("the parent's step of middle");
    assert_eq!(
        middle.state(),
        &Tallied {
            log: ["in", "pre", "m1", "a", "b", "m2"]
                .map(str::to_owned)
                .to_vec(),
            last: Some("m2".to_owned()),
            tally: 3,
        }
    );

    // A node failing inside (after a step that wrote): the same error.
    let mut failing = StateGraph::<Tallied>::new();
    failing.add_node("a", |_: &Tallied| Tallied::delta().tally(1));
    failing.add_node("x", |_: &Tallied| -> Result<TalliedDelta, NodeError> {
        Err(NodeError::msg("no tool"))
    });
    failing
        .add_edge(START, "a")
        .add_edge("a", "x")
        .add_edge("x", END);
    let mut g = StateGraph::<Tallied>::new();
    g.add_subgraph("crew", failing.compile().unwrap());
    g.add_edge(START, "crew").add_edge("crew", END);
    let app = g.compile().unwrap();
    let adopted = format!("{:?}", app.invoke(input()).await.unwrap_err());
    let applied = app
        .stream(input(), StreamMode::UPDATES)
        .filter_map(|e| async move { e.err() })
        .collect::<Vec<_>>()
        .await;
    let applied = format!("{:?}", applied.first().expect("the run's error"));
    assert_eq!(adopted, applied);
    assert!(adopted.contains("no tool"), "{adopted}");
}

/// A state with an appended list, a plain field and a counter, for
/// [`a_handed_back_state_is_what_its_logged_writes_make`].
#[derive(AgentState, Debug, Clone, PartialEq)]
struct Kept {
    #[reducer(append)]
    items: Vec<String>,
    last: Option<String>,
    n: u64,
}

/// START -> pre -> {crew, side} -> post -> again -> END: `crew` and `again`
/// the same subgraph (START -> a -> inner -> d, `inner` START -> b -> c),
/// beside `side` in one superstep (its writes applied in the parent), then
/// alone in one (its final state handed back, its writes logged).
fn kept_teams() -> CompiledGraph<Kept> {
    let writes = |name: &'static str, n: Option<u64>| {
        move |_: &Kept| {
            let delta = Kept::delta()
                .items(vec![name.to_owned()])
                .last(name.to_owned());
            match n {
                Some(n) => delta.n(n),
                None => delta,
            }
        }
    };
    let mut inner = StateGraph::<Kept>::new();
    inner.add_node("b", writes("b", None));
    inner.add_node("c", writes("c", Some(2)));
    inner
        .add_edge(START, "b")
        .add_edge("b", "c")
        .add_edge("c", END);
    let mut crew = StateGraph::<Kept>::new();
    crew.add_node("a", writes("a", Some(1)));
    crew.add_subgraph("inner", inner.compile().unwrap());
    crew.add_node("d", |k: &Kept| {
        Kept::delta().items(vec![format!("d{}", k.n)])
    });
    crew.add_edge(START, "a")
        .add_edge("a", "inner")
        .add_edge("inner", "d")
        .add_edge("d", END);
    let crew = crew.compile().unwrap();
    let mut g = StateGraph::<Kept>::new();
    g.add_node("pre", writes("pre", None));
    g.add_subgraph("crew", crew.clone());
    g.add_node("side", |_: &Kept| {
        Kept::delta().items(vec!["side".to_owned()])
    });
    g.add_node("post", |k: &Kept| Kept::delta().n(k.n + 10));
    g.add_subgraph("again", crew);
    g.add_edge(START, "pre")
        .add_edge("pre", "crew")
        .add_edge("pre", "side")
        .add_edge("crew", "post")
        .add_edge("side", "post")
        .add_edge("post", "again")
        .add_edge("again", END);
    g.compile().unwrap()
}

/// The state a run keeps after a subgraph's superstep (handed back by the
/// subgraph, its writes logged and not applied again) is the state its
/// logged step makes: each parent step's state as the run streamed it is
/// the state rebuilt from the log at that step (`state_at`), the run's
/// final state is a fresh load's and `get_state`'s (the memory store's
/// kept state), streamed with `updates` or not.
async fn a_handed_back_state_is_what_its_logged_writes_make(ts: TestStore) {
    use futures::StreamExt;
    let app = kept_teams().with_store(ts.store.clone());
    let input = || Kept::delta().items(vec!["in".to_owned()]);
    let crew = |n: u64| ["a", "b", "c", &format!("d{n}")].map(str::to_owned);
    let mut items = vec!["in".to_owned(), "pre".to_owned()];
    items.extend(crew(2));
    items.push("side".to_owned());
    items.extend(crew(2));
    let expected = Kept {
        items,
        last: Some("c".to_owned()),
        n: 2,
    };
    for (thread, modes) in [
        ("values", StreamMode::VALUES),
        ("updates", StreamMode::VALUES | StreamMode::UPDATES),
    ] {
        let values: Vec<Value> = app
            .stream_thread(thread, input(), modes)
            .filter_map(|e| async move {
                let e = e.unwrap();
                (e.mode() == "values").then(|| e.data().unwrap())
            })
            .collect()
            .await;
        let steps: Vec<u64> = ts
            .store
            .history(thread, ..)
            .await
            .unwrap()
            .into_iter()
            .filter(|step| step.kind != StepKind::Subgraph)
            .map(|step| step.seq)
            .collect();
        // `again`, alone in its superstep, is logged as the subgraph's
        // three supersteps (a, inner, d) when nothing streams its writes,
        // and as their composition when `updates` does.
        let again = ts
            .store
            .history(thread, ..)
            .await
            .unwrap()
            .into_iter()
            .find(|step| step.kind == StepKind::Superstep && step.nodes() == ["again"])
            .expect("again's superstep");
        let write = &again.body[0];
        match thread {
            "values" => {
                let steps = write.as_array().expect("a sequence of supersteps");
                assert_eq!(steps.len(), 3, "{}: {write}", ts.name);
                assert_eq!(steps[0][0]["last"], "a", "{}: {write}", ts.name);
            }
            _ => assert_eq!(write["last"], "c", "{}: {write}", ts.name),
        }
        // The input, pre, crew and side, post, again.
        assert_eq!(values.len(), 5, "{}: {values:?}", ts.name);
        assert_eq!(steps.len(), 5, "{}: {steps:?}", ts.name);
        for (value, seq) in values.iter().zip(&steps) {
            let logged = ts.store.state_at::<Kept>(thread, *seq).await.unwrap();
            assert_eq!(value, &logged.to_json().unwrap(), "{} step {seq}", ts.name);
        }
        assert_eq!(values.last(), Some(&expected.to_json().unwrap()));
        let loaded = ts.store.thread::<Kept>(thread).await.unwrap();
        assert_eq!(loaded.state(), &expected, "{}", ts.name);
        let snapshot = app.get_state(thread).await.unwrap();
        assert_eq!(snapshot.state(), &expected, "{}", ts.name);
    }
    // Invoked without a stream: the state it returns, the state loaded.
    let out = app.invoke_thread("invoked", input()).await.unwrap();
    assert_eq!(out.state(), &expected);
    let loaded = ts
        .another_worker()
        .await
        .thread::<Kept>("invoked")
        .await
        .unwrap();
    assert_eq!(loaded.state(), &expected, "{}", ts.name);
}

on_every_backend!(a_handed_back_state_is_what_its_logged_writes_make);

// ---------------------------------------------------------------------------
// Edits of a thread paused inside a subgraph, and the order of interrupts.

#[derive(AgentState, Debug, Clone, PartialEq)]
struct Items {
    #[reducer(append)]
    items: Vec<String>,
}

fn push_item(name: &'static str) -> impl Fn(&Items) -> ItemsDelta {
    move |_| Items::delta().items(vec![name.to_owned()])
}

fn ask(name: &'static str) -> impl Fn(&Items, &Ctx) -> Result<ItemsDelta, NodeError> {
    move |_, ctx| {
        let answer = ctx.interrupt(json!(name))?;
        Ok(Items::delta().items(vec![format!("{name}:{}", answer.as_str().unwrap_or(""))]))
    }
}

/// A child `ca -> cb` where cb asks.
fn child() -> state_graph::CompiledGraph<Items> {
    let mut c = StateGraph::<Items>::new();
    c.add_node("ca", push_item("ca"));
    c.add_node("cb", ask("cb"));
    c.add_edge(START, "ca")
        .add_edge("ca", "cb")
        .add_edge("cb", END);
    c.compile().unwrap()
}

/// `update_state` as the subgraph node of a thread paused inside it: the
/// node counts as done with that write, as any paused node does.
#[tokio::test]
async fn update_state_as_the_paused_subgraph_node() {
    let mut g = StateGraph::<Items>::new();
    g.add_subgraph("child", child());
    g.add_node("z", push_item("z"));
    g.add_edge(START, "child")
        .add_edge("child", "z")
        .add_edge("z", END);
    let app = g.compile().unwrap().with_store(Store::memory());
    let out = app.invoke_thread("t", Items::delta()).await.unwrap();
    assert_eq!(out.next(), ["child"]);
    app.update_state(
        "t",
        Items::delta().items(vec!["as-child".into()]),
        Some("child"),
    )
    .await
    .unwrap();
    let snap = app.get_state("t").await.unwrap();
    assert_eq!(snap.next(), ["z"]);
    assert!(snap.interrupts().is_empty());
    let out = app.continue_thread("t").await.unwrap();
    assert_eq!(out.state().items, ["as-child", "z"]);
}

/// `get_state` lists the interrupts in the superstep's task order, a
/// paused subgraph's among the graph's own, as the run returned them.
#[tokio::test]
async fn get_state_interrupts_in_task_order() {
    let mut g = StateGraph::<Items>::new();
    g.add_subgraph("child", child());
    g.add_node("p", ask("p"));
    g.add_edge(START, "child").add_edge(START, "p");
    g.add_edge("child", END).add_edge("p", END);
    let app = g.compile().unwrap().with_store(Store::memory());
    let out = app.invoke_thread("t", Items::delta()).await.unwrap();
    let run: Vec<&str> = out
        .interrupts()
        .iter()
        .map(|i| i.value.as_str().unwrap())
        .collect();
    let snap = app.get_state("t").await.unwrap();
    let got: Vec<&str> = snap
        .interrupts()
        .iter()
        .map(|i| i.value.as_str().unwrap())
        .collect();
    assert_eq!(run, ["cb", "p"]);
    assert_eq!(run, got);
}

/// `update_state` (as_node None) on a thread paused inside a child keeps
/// the pause, and the child's finished steps stay the child's.
#[tokio::test]
async fn update_state_while_paused_in_child_keeps_its_steps() {
    let mut g = StateGraph::<Items>::new();
    g.add_subgraph("child", child());
    g.add_edge(START, "child").add_edge("child", END);
    let app = g.compile().unwrap().with_store(Store::memory());
    app.invoke_thread("t", Items::delta()).await.unwrap();
    app.update_state("t", Items::delta().items(vec!["u".into()]), None)
        .await
        .unwrap();
    let out = app.resume("t", json!("A")).await.unwrap();
    // ca does not run again, and its write is still the child's.
    assert_eq!(out.state().items, ["u", "ca", "cb:A"]);
}

// ---------------------------------------------------------------------------
// Reading a thread without the run's context; streaming a continue; a
// node's own GraphError.

#[tokio::test]
async fn get_state_needs_the_context_only_for_a_router_that_reads_it() {
    struct User {
        admin: bool,
    }
    let graph = |route_on_context: bool| {
        let mut g = StateGraph::<Team, User>::new();
        g.add_node(
            "ask",
            |_: &Team, ctx: &Ctx<User>| -> Result<TeamDelta, NodeError> {
                ctx.interrupt(json!("ok?"))?;
                Ok(wrote("asked"))
            },
        );
        g.add_node("admin", |_: &Team| wrote("admin"));
        g.add_edge(START, "ask").add_edge("admin", END);
        if route_on_context {
            g.add_conditional_edges(
                "ask",
                |_: &Team, u: &User| if u.admin { "admin" } else { END },
                ["admin", END],
            );
        } else {
            g.add_edge("ask", "admin");
        }
        g.compile().unwrap().with_store(Store::memory())
    };
    let app = graph(false);
    app.with_context(User { admin: true })
        .invoke_thread("t", team_input())
        .await
        .unwrap();
    // Read without a context: the pause, and what runs next.
    let snap = app.get_state("t").await.unwrap();
    assert_eq!(snap.next(), ["ask"]);
    assert_eq!(snap.interrupts().len(), 1);
    let history = app.get_state_history("t").await.unwrap();
    assert_eq!(history[0].metadata()["source"], "pause");

    let app = graph(true);
    let user = app.with_context(User { admin: true });
    user.invoke_thread("t", team_input()).await.unwrap();
    user.resume("t", json!("yes")).await.unwrap();
    // The last superstep's router reads the context: asked for without one,
    // the error says so; with one, it answers.
    app.update_state("t", Team::delta(), Some("ask"))
        .await
        .unwrap();
    let err = app.get_state("t").await.unwrap_err();
    assert!(matches!(err, GraphError::NoContext { .. }), "{err}");
    assert_eq!(user.get_state("t").await.unwrap().next(), ["admin"]);
}

#[tokio::test]
async fn a_continued_run_streams_and_a_nodes_graph_error_names_the_node() {
    use futures::StreamExt;
    let calls = Calls::default();
    let app = team(Store::memory(), &calls);
    app.invoke_thread("t", team_input()).await.unwrap();
    app.update_state("t", Team::delta(), Some("research"))
        .await
        .unwrap();
    let modes: Vec<String> = app
        .stream_continue("t", StreamMode::UPDATES)
        .map(|e| e.unwrap().mode().to_owned())
        .collect()
        .await;
    // The edit as the paused "research" committed the paused superstep
    // (budget's pending write with it): what goes on is "write".
    assert_eq!(modes, ["updates", "end"]);
    assert_eq!(
        app.get_state("t").await.unwrap().state().log,
        ["plan", "budget", "write"]
    );

    // A node that fails with a GraphError of its own (an inner graph's):
    // the run's error names the node, the inner error its source.
    let mut inner = StateGraph::<Team>::new();
    inner.add_node("deep", |_: &Team| {
        Err::<TeamDelta, _>(std::io::Error::other("no"))
    });
    inner.add_edge(START, "deep").add_edge("deep", END);
    let inner = inner.compile().unwrap();
    let mut g = StateGraph::<Team>::new();
    g.add_node("outer", move |_: Arc<Team>| {
        let inner = inner.clone();
        async move { inner.invoke(Team::delta()).await.map(|_| Team::delta()) }
    });
    g.add_edge(START, "outer").add_edge("outer", END);
    let err = g.compile().unwrap().invoke(team_input()).await.unwrap_err();
    assert_eq!(err.node(), Some("outer"), "{err:?}");
}

/// Long-term memory: a node reaches the store's items through its `Ctx`;
/// what one thread's run remembers, another thread's run finds.
async fn nodes_remember_across_threads(ts: TestStore) {
    struct User {
        id: &'static str,
    }
    let mut g = StateGraph::<Team, User>::new();
    g.add_node("remember", |s: Arc<Team>, ctx: Ctx<User>| async move {
        let store = ctx.store()?;
        let namespace = ["users", ctx.context().id];
        let known = store.search_items(&namespace).await?;
        if let Some(said) = s.last.as_deref() {
            store
                .put_item(
                    &namespace,
                    &format!("m{}", known.len()),
                    json!({"said": said}),
                )
                .await?;
        }
        let recalled: Vec<String> = known
            .iter()
            .map(|item| item.value["said"].as_str().unwrap_or("?").to_owned())
            .collect();
        Ok::<_, NodeError>(Team::delta().log(recalled))
    });
    g.add_edge(START, "remember").add_edge("remember", END);
    let app = g.compile().unwrap().with_store(ts.store.clone());
    let ada = app.with_context(User { id: "ada" });
    ada.invoke_thread("monday", Team::delta().last("I like tea"))
        .await
        .unwrap();
    // Another thread, another day: the memory is there.
    let out = ada.invoke_thread("tuesday", Team::delta()).await.unwrap();
    assert_eq!(out.state().log, ["I like tea"], "{}", ts.name);
    // Another user's namespace is theirs.
    let bob = app.with_context(User { id: "bob" });
    let out = bob.invoke_thread("wednesday", Team::delta()).await.unwrap();
    assert!(out.state().log.is_empty());
    // Without a store, the node's error says so.
    let mut g = StateGraph::<Team>::new();
    g.add_node("remember", |_: Arc<Team>, ctx: Ctx| async move {
        ctx.store()?;
        Ok::<_, NodeError>(Team::delta())
    });
    g.add_edge(START, "remember").add_edge("remember", END);
    let err = g
        .compile()
        .unwrap()
        .invoke(Team::delta())
        .await
        .unwrap_err();
    let chain = format!("{err}: {}", std::error::Error::source(&err).unwrap());
    assert!(chain.contains("has no store"), "{chain}");
}

on_every_backend!(nodes_remember_across_threads);
