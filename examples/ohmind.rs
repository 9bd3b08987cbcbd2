//! OHMind (seed 000) as a graph: `state_graph::StateGraph` over the
//! document's `AgentState`, the supervisor routing with `next` through
//! conditional edges, each specialist agent a node, human validation and
//! task-plan approval as real interrupts (`ctx.interrupt`) answered with
//! `resume`, a task plan executed step by step, MCP results and artifacts
//! merged by name, and retries up to the limit. Every run is on one thread
//! of a `state_store::Store` (LangGraph's checkpointer): each superstep is
//! a logged step, and a paused run is resumed from the store. The thread is
//! read as the Python reads it, `app.get_state(config)` (`get_state`,
//! `get_state_history`), and a decision without a message is written as
//! `human_validation`'s update (`update_state`).
//!
//! Each specialist agent is a ReAct agent: a chat model with its MCP tool
//! (a `#[tool]`) bound, looping through a `ToolNode` until it answers
//! (`state_examples::ohmind::agents`). With `OPENAI_API_KEY` or
//! `OPENAI_BASE_URL` (`OPENAI_MODEL`), or `ANTHROPIC_API_KEY`
//! (`ANTHROPIC_MODEL`), set, the model is `ChatOpenAI` or `ChatAnthropic`;
//! without, OHMind's offline model (`agents::OhmindModel`), which calls
//! its tool with the request and answers with the tool's summary, so the
//! run below is the same every time.
//!
//! The graph and its nodes are in `state_examples::ohmind::graph`.
//!
//! Run it with `cargo run --example ohmind`.
//!
//! The Python original (OHMind's "State Management" page), for comparison:
/*
stateDiagram-v2
    [*] --> Initial: User Message
    Initial --> Supervisor: next="supervisor"
    Supervisor --> AgentExecution: next="agent_name"
    Supervisor --> ValidationWait: validation_required=True
    Supervisor --> TaskPlanCreation: Complex Query
    Supervisor --> End: next="FINISH"
    AgentExecution --> Supervisor: Agent Complete
    AgentExecution --> Error: Tool Failure
    ValidationWait --> AgentExecution: validation_approved=True
    ValidationWait --> Supervisor: validation_approved=False
    TaskPlanCreation --> StepExecution: Auto-execute
    StepExecution --> StepExecution: Next Step
    StepExecution --> Summary: All Steps Complete
    Summary --> End
    Error --> Supervisor: Retry
    Error --> End: Max Retries
    End --> [*]

def should_continue_validation(state: AgentState) -> bool:
    """Check if validation is required and not yet approved/rejected."""
    return state["validation_required"] and state["validation_approved"] is None

def mark_validation_required(
    state: AgentState,
    operation_description: str,
    metadata: Dict[str, Any]
) -> AgentState:
    """Mark that an operation requires human validation."""
    updated = state.copy()
    updated["validation_required"] = True
    updated["validation_approved"] = None
    updated["validation_message"] = operation_description
    updated["operation_metadata"] = metadata
    updated["next"] = "FINISH"  # Wait for user approval
    return updated

def mark_validation_complete(
    state: AgentState,
    approved: bool,
    next_agent: str
) -> AgentState:
    """Mark validation as complete with user's decision."""
    updated = state.copy()
    updated["validation_required"] = False
    updated["validation_approved"] = approved
    updated["next"] = next_agent if approved else "supervisor"
    return updated

from langgraph.checkpoint.memory import MemorySaver

memory = MemorySaver()
app = workflow.compile(checkpointer=memory)

# Invoke with thread ID for state persistence
config = {"configurable": {"thread_id": "user-123-session-1"}}
result = await app.ainvoke(state, config)

# Get current state for a thread
state = app.get_state(config)
*/

use serde_json::{Value, json};
use state_core::{Delta, Message, Written};
use state_examples::langgraph::react_agent::{AgentModel, ModelEnv, choose_model};
use state_examples::ohmind::graph::{self, SharedOhmind};
use state_examples::ohmind::{self, AgentState, AgentStateDelta, MAX_RETRIES, Ohmind, Step};
use state_graph::{CompiledGraph, Outcome, Resume, START, Snapshot};
use state_store::Store;

/// The app, its agents on the model the environment names (the offline
/// one when it names none).
fn agents_app() -> Ohmind {
    match choose_model(&ModelEnv::from_env()) {
        (AgentModel::Scripted(_), _) => Ohmind::new(),
        (model, _) => Ohmind::with_model(model),
    }
}

/// Which model the agents run on.
fn model_line() -> String {
    match choose_model(&ModelEnv::from_env()) {
        (AgentModel::Scripted(_), _) => "OHMind's scripted model, offline (set OPENAI_API_KEY, \
                                         OPENAI_BASE_URL or ANTHROPIC_API_KEY for a real one)"
            .to_owned(),
        (_, line) => line,
    }
}

const THREAD: &str = "user-123-session-1";
const PLAN_THREAD: &str = "user-123-session-2";

#[tokio::main(flavor = "current_thread")]
async fn main() {
    // The checkpointer. LangGraph's MemorySaver ↔ `Store::memory()`: threads
    // live as long as the store. The durable ones take the same calls:
    // `Store::sqlite(path)` (SqliteSaver) and `Store::postgres(url)`
    // (PostgresSaver).
    let store = Store::memory();
    let sim = graph::shared(agents_app());
    let app = graph::compile(&sim, store.clone()).expect("the graph compiles");

    println!("OHMind state management, as a state_graph::StateGraph");
    println!("The agents' model: {}", model_line());
    println!("{}", shape());
    println!("Each node line: node → next [current_operation] and the flags its delta writes.\n");
    let mut session = Session::new(app.clone(), store.clone(), THREAD);
    first_turn(&mut session).await;

    helpers_as_deltas();

    session
        .invoke(
            &sim,
            "2. Validation requested: md_agent asks, the router sends the run to human_validation, which pauses it",
            "Simulate the hydroxide conductivity of benzyltrimethylammonium with MD",
        )
        .await;
    let state = session.state().await;
    println!(
        "   the thread waits: should_continue_validation = {}, validation_message = {:?}",
        ohmind::should_continue_validation(&state),
        state.validation_message
    );
    // state = app.get_state(config)
    let snapshot = app.get_state(THREAD).await.expect("the thread reads");
    println!(
        "   app.get_state(THREAD) reads the pause back from the store: next = {:?}, {} interrupt pending, in node {:?}",
        snapshot.next(),
        snapshot.interrupts().len(),
        snapshot
            .interrupts()
            .first()
            .map(|i| i.node.as_str())
            .unwrap_or("-")
    );

    // Any process with the store can answer: here a graph compiled anew on
    // the same store, as another worker would.
    let worker = graph::compile(&sim, store.clone()).expect("the graph compiles");
    let mut answered = Session::new(worker, store.clone(), THREAD);
    answered.seq = session.seq;
    let out = answered
        .resume(
            "3. The user approves: resume(THREAD, json!(\"yes, go ahead\")), from a graph compiled anew on the same store",
            json!("yes, go ahead"),
        )
        .await;
    session.seq = answered.seq;
    session.sections.append(&mut answered.sections);
    println!(
        "   validation_required = {}, validation_approved = {:?} (consumed by md_agent)",
        out.state().validation_required,
        out.state().validation_approved
    );

    session
        .invoke(
            &sim,
            "4a. Another long run ...",
            "Run a longer MD simulation",
        )
        .await;
    let out = session
        .resume("4b. ... which the user rejects", json!("no, cancel that"))
        .await;
    println!(
        "   validation_approved = {:?}",
        out.state().validation_approved
    );

    session
        .invoke(
            &sim,
            "4c. Asked once more, answered by a button instead of a message",
            "Simulate the conductivity overnight",
        )
        .await;
    let edited = graph::decide_validation(&session.app, THREAD, true)
        .await
        .expect("a validation is pending");
    println!(
        "   graph::decide_validation: app.get_state(THREAD) for the agent that asked, then\n   \
         app.update_state(THREAD, mark_validation_complete(true, \"md_agent\"), Some(\"human_validation\")): step {edited}"
    );
    let snapshot = app.get_state(THREAD).await.expect("the thread reads");
    println!(
        "   next = {:?}, interrupts = {}: human_validation counts as done, with that write",
        snapshot.next(),
        snapshot.interrupts().len()
    );
    let out = session
        .go_on("4d. app.continue_thread(THREAD): the approved agent runs, human_validation does not run again\n    (the first line is the update written as human_validation)")
        .await;
    println!(
        "   validation_approved = {:?} (consumed by md_agent), mcp_results has gromacs_md: {}",
        out.state().validation_approved,
        out.state().mcp_results.contains_key("gromacs_md")
    );

    graph::lock(&sim).fail_next("orca_single_point", 1);
    let out = session
        .invoke(
            &sim,
            "5. A complex query: a task plan (each agent ends with FINISH; the active plan sends it back to the supervisor), one failed tool call on the way",
            "Design new HEM cations, compute their HOMO LUMO gap, and find papers on their stability",
        )
        .await;
    let state = out.state();
    println!(
        "   after the summary: task_plan = {:?}, current_step = {}, completed_steps = {:?}",
        state.task_plan, state.current_step, state.completed_steps
    );
    println!(
        "   mcp_results keys: {:?}",
        state.mcp_results.keys().collect::<Vec<_>>()
    );
    println!(
        "   artifacts keys:   {:?}",
        state.artifacts.keys().collect::<Vec<_>>()
    );

    graph::lock(&sim).fail_next("rag_search", 10);
    let out = session
        .invoke(
            &sim,
            "6. A tool that keeps failing",
            "Find literature on alkaline degradation",
        )
        .await;
    println!(
        "   error = {:?}, retry_count = {} (MAX_RETRIES = {MAX_RETRIES})",
        out.state().error,
        out.state().retry_count
    );

    let planner = graph::shared(agents_app().with_plan_approval());
    let planner_app = graph::compile(&planner, store.clone()).expect("the graph compiles");
    let mut plans = Session::new(planner_app, store.clone(), PLAN_THREAD);
    plan_needing_approval(&planner, &mut plans).await;

    let live = session.state().await;
    checkpoint_log(&session, &plans, &live).await;
}

/// The graph's nodes and edges, in words.
fn shape() -> String {
    let agents: Vec<&str> = ohmind::AGENTS.iter().map(|spec| spec.name).collect();
    format!(
        "  nodes: supervisor, task_planner, {}, error_handler, summary, human_validation, plan_approval\n  \
         START → entry_node → supervisor (or an asking node, when a question is pending)\n  \
         every node → next_node: the node `next` names, human_validation / plan_approval when the user must answer \
         (they pause the run with ctx.interrupt), supervisor after FINISH with an active plan, else END",
        agents.join(", ")
    )
}

/// The runs on one thread: each call prints the nodes that ran (read back
/// from the store's log) and any interrupt, and remembers which steps of
/// the log it wrote.
struct Session {
    app: CompiledGraph<AgentState>,
    store: Store,
    thread: &'static str,
    /// The thread's last step.
    seq: u64,
    /// Each printed section and the steps it logged.
    sections: Vec<(String, u64, u64)>,
}

impl Session {
    fn new(app: CompiledGraph<AgentState>, store: Store, thread: &'static str) -> Session {
        Session {
            app,
            store,
            thread,
            seq: 0,
            sections: Vec::new(),
        }
    }

    /// A new user message: one `invoke_thread`.
    async fn invoke(&mut self, sim: &SharedOhmind, title: &str, user: &str) -> Outcome<AgentState> {
        println!("\n{title}\n   user: {user}");
        let input = graph::user_input(sim, user);
        let out = self
            .app
            .invoke_thread(self.thread, input)
            .await
            .expect("the run goes on");
        self.report(title, &out).await;
        out
    }

    /// The user's answer to the pending interrupt: one `resume`.
    async fn resume(&mut self, title: &str, answer: Value) -> Outcome<AgentState> {
        println!("\n{title}\n   answer: {answer}");
        let out = self
            .app
            .resume(self.thread, Resume::from(answer))
            .await
            .expect("the run resumes");
        self.report(title, &out).await;
        out
    }

    /// The run goes on from its last step, no input (Python's
    /// `app.invoke(None, config)`): one `continue_thread`.
    async fn go_on(&mut self, title: &str) -> Outcome<AgentState> {
        println!("\n{title}");
        let out = self
            .app
            .continue_thread(self.thread)
            .await
            .expect("the run goes on");
        self.report(title, &out).await;
        out
    }

    async fn report(&mut self, title: &str, out: &Outcome<AgentState>) {
        let steps = graph::logged_steps(&self.store, self.thread, self.seq)
            .await
            .expect("the log reads");
        print_steps(&steps);
        for interrupt in out.interrupts() {
            println!(
                "   {:<16} ⏸ ctx.interrupt({}): the run pauses, stored on the thread",
                interrupt.node, interrupt.value["kind"]
            );
            if let Some(message) = interrupt.value["message"].as_str() {
                println!("   {:<16}   shows: {message}", "");
            }
            if let Some(markdown) = interrupt.value["markdown"].as_str() {
                println!("   {:<16}   shows:\n{}", "", indent(markdown));
            }
        }
        let label = title.split(' ').next().unwrap_or("").trim_end_matches('.');
        self.sections
            .push((label.to_owned(), self.seq + 1, out.seq()));
        self.seq = out.seq();
    }

    /// The thread's state (`app.get_state(config).values`).
    async fn state(&self) -> AgentState {
        self.app
            .get_state(self.thread)
            .await
            .expect("the thread reads")
            .into_state()
    }
}

/// Turn 1 starts from `create_initial_state`, as a new conversation does:
/// the state goes in as the graph's input, one step through the reducers
/// (LangGraph's `app.invoke(initial_state, config)`), then the nodes run.
async fn first_turn(session: &mut Session) {
    let state =
        ohmind::create_initial_state("What is the HOMO-LUMO gap of benzyltrimethylammonium?");
    let title = "1. create_initial_state(..): the #[default]s fill the other 17 keys";
    println!("{title}");
    println!(
        "   next = {:?}, current_operation = {:?}, retry_count = {}, messages = {}",
        state.next,
        state.current_operation,
        state.retry_count,
        state.messages.len()
    );
    let input = graph::state_input(&state).expect("a state is a valid input");
    let out = session
        .app
        .invoke_thread(THREAD, input)
        .await
        .expect("the first turn runs");
    println!(
        "   app.invoke_thread({THREAD:?}, initial_state): the turn starts with the input, one logged step, then one step per superstep ({} steps)",
        out.seq()
    );
    session.report(title, &out).await;
    println!(
        "   mcp_results = {}",
        Value::Object(out.state().mcp_results.clone())
    );
}

/// The task planner can also wait for the user's approval of the plan:
/// `plan_approval` pauses the run with the plan, and `resume` answers.
async fn plan_needing_approval(sim: &SharedOhmind, plans: &mut Session) {
    let out = plans
        .invoke(
            sim,
            "7a. A plan that needs approval (task_plan_needs_approval), on thread user-123-session-2",
            "Design HEM cations and simulate their conductivity",
        )
        .await;
    println!(
        "   task_plan_needs_approval = {}, task_plan_approved = {:?}, is_interrupted() = {}",
        out.state().task_plan_needs_approval,
        out.state().task_plan_approved,
        out.is_interrupted()
    );
    let out = plans.resume("7b. The user says no", json!("no")).await;
    println!(
        "   task_plan = {:?}, task_plan_approved = {:?}",
        out.state().task_plan,
        out.state().task_plan_approved
    );

    plans
        .invoke(
            sim,
            "8a. Another plan, and this time the user approves it (task_plan_approved=True)",
            "Design HEM cations and compute their properties",
        )
        .await;
    let out = plans.resume("8b. The user says yes", json!("yes")).await;
    println!(
        "   task_plan_approved = {:?}, task_plan = {:?}, completed_steps = {:?}",
        out.state().task_plan_approved,
        out.state().task_plan,
        out.state().completed_steps
    );
}

/// The checkpoints of the threads (`app.get_state_history(config)`): one
/// snapshot per logged step, each superstep with its nodes, a pause with
/// its interrupt; and the thread read once more by a graph compiled anew
/// on the store (`app.get_state(config)` on reconnection).
async fn checkpoint_log(session: &Session, plans: &Session, live: &AgentState) {
    for s in [session, plans] {
        let mut history = s
            .app
            .get_state_history(s.thread)
            .await
            .expect("the history reads");
        history.reverse();
        println!(
            "\n9. The checkpoints of {:?}: app.get_state_history(..) lists {} snapshots (seq, then what wrote it)",
            s.thread,
            history.len()
        );
        for (label, from, to) in &s.sections {
            let shown: Vec<String> = history
                .iter()
                .filter(|snapshot| (*from..=*to).contains(&snapshot.seq()))
                .map(describe)
                .collect();
            println!(
                "   {:<4}{}",
                format!("{label}."),
                wrap(&shown.join(" · "), 92)
            );
        }
    }
    // State recovery: a graph compiled anew on the store reads the thread.
    let reconnected = graph::compile(&graph::shared(Ohmind::new()), session.store.clone())
        .expect("the graph compiles");
    let recovered = reconnected
        .get_state(THREAD)
        .await
        .expect("the thread reads");
    println!(
        "   recovered on reconnection (app.get_state): seq = {}, state == the live one: {}",
        recovered.seq(),
        recovered.state() == live
    );
}

/// A snapshot: its step, and what wrote it (the nodes of a superstep, the
/// input, an update as a node) or the pause it holds.
fn describe(snapshot: &Snapshot<AgentState>) -> String {
    let metadata = snapshot.metadata();
    let nodes: Vec<&str> = metadata
        .get("nodes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let seq = snapshot.seq();
    if let Some(interrupt) = snapshot.interrupts().first() {
        return format!("{seq} paused ({} asks)", interrupt.node);
    }
    match (
        metadata.get("source").and_then(Value::as_str),
        nodes.as_slice(),
    ) {
        (_, [START]) => format!("{seq} input"),
        (Some("update"), _) => format!("{seq} update as {}", nodes.join("+")),
        (_, []) => format!("{seq} turn"),
        _ => format!("{seq} {}", nodes.join("+")),
    }
}

/// Wraps a line at ` · ` separators, continuation lines indented.
fn wrap(line: &str, width: usize) -> String {
    let mut out = String::new();
    let mut current = String::new();
    for part in line.split(" · ") {
        if !current.is_empty() && current.chars().count() + 3 + part.chars().count() > width {
            out.push_str(&current);
            out.push_str(" ·\n       ");
            current.clear();
        } else if !current.is_empty() {
            current.push_str(" · ");
        }
        current.push_str(part);
    }
    out.push_str(&current);
    out
}

/// The Python helpers copy all 18 keys; a delta carries only its writes.
fn helpers_as_deltas() {
    println!("\n   Helpers return deltas, not modified copies of the state:");
    let mut metadata = ohmind::Dict::new();
    metadata.insert("next_agent".into(), json!("md_agent"));
    let required = ohmind::mark_validation_required("Run a 10 ns MD simulation", metadata);
    println!("   mark_validation_required(..) = {}", to_json(&required));
    let result = ohmind::add_mcp_result("hem_design", json!({"candidates": 2}));
    println!(
        "   add_mcp_result(..)           = {}  (merged by key)",
        to_json(&result)
    );
    let message = Message::ai("done");
    println!(
        "   update_state_with_message(..) writes {:?}, and needs no state",
        ohmind::update_state_with_message(message.clone(), Some("FINISH")).fields()
    );
    // Two helpers that both route: the Python's second copy would win silently.
    let clash = ohmind::mark_validation_complete(true, "md_agent").merge(
        ohmind::update_state_with_message(message, Some("supervisor")),
    );
    println!(
        "   combining two deltas that both set `next`: {}",
        clash.expect_err("both write next")
    );
}

/// One line per node: where it routes (`next`), its `[current_operation]`,
/// the routing, validation, retry and plan fields it writes, and its
/// messages.
fn print_steps(steps: &[Step]) {
    for step in steps {
        let json = to_json(&step.delta);
        let next = json.get("next").and_then(Value::as_str).unwrap_or("-");
        let operation = json
            .get("current_operation")
            .and_then(Value::as_str)
            .map(|op| format!("[{op}] "))
            .unwrap_or_default();
        println!(
            "   {:<16} → {:<16} {operation}{}",
            step.node,
            next,
            highlights(&json)
        );
        for message in step
            .delta
            .get_messages()
            .map_or(&[][..], Written::updates)
            .iter()
            .flatten()
        {
            let author = message.name().map(|name| format!("({name})"));
            let mut text = message.text().replace('\n', "\n                        ");
            for call in message.tool_calls() {
                text.push_str(&format!("→ {} {}", call.name, call.args));
            }
            println!(
                "   {:<16}   {}{}: {text}",
                "",
                message.kind(),
                author.unwrap_or_default()
            );
        }
    }
}

fn highlights(delta: &Value) -> String {
    const SHOWN: [&str; 8] = [
        "validation_required",
        "validation_approved",
        "error",
        "retry_count",
        "current_step",
        "task_plan_needs_approval",
        "task_plan_approved",
        "task_plan_path",
    ];
    let mut parts = Vec::new();
    for (key, value) in delta.as_object().into_iter().flatten() {
        if key == "completed_steps" {
            // The `append` reducer's update, or an overwrite that resets it.
            match value.get("__overwrite__") {
                Some(all) => parts.push(format!("completed_steps={all} (overwrite)")),
                None => parts.push(format!("completed_steps+={value}")),
            }
        } else if SHOWN.contains(&key.as_str()) {
            // JSON null is Python's None: the delta clears the field.
            let shown = if value.is_null() {
                "None".to_owned()
            } else {
                value.to_string()
            };
            parts.push(format!("{key}={shown}"));
        } else if key == "mcp_results" || key == "artifacts" {
            let names: Vec<&String> = value
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, _)| k)
                .collect();
            parts.push(format!("{key}+={names:?}"));
        } else if key == "task_plan" {
            parts.push(if value.is_null() {
                "task_plan=None".into()
            } else {
                "task_plan=<plan>".into()
            });
        }
    }
    parts.join(" ")
}

fn to_json(delta: &AgentStateDelta) -> Value {
    serde_json::to_value(delta).expect("a delta of JSON-able fields serializes")
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|line| format!("     {line}"))
        .collect::<Vec<_>>()
        .join("\n")
}
