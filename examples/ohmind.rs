//! OHMind (seed 000) turn by turn: supervisor routing with `next`, human
//! validation, a task plan executed step by step, MCP results and artifacts
//! merged by name, and retries up to the limit, with every step
//! checkpointed in a `state_store` thread and the thread reopened from the
//! store at each turn; then task plans that wait for approval, and the
//! thread's log.
//!
//! Run it with `cargo run --example ohmind`.

use serde_json::{Value, json};
use state_core::{Delta, Message, State, Written};
use state_examples::ohmind::{self, AgentState, AgentStateDelta, MAX_RETRIES, Ohmind, Step};
use state_store::{StepRecord, Store, Thread};

const THREAD: &str = "user-123-session-1";

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mut app = Ohmind::new();
    // The checkpointer. LangGraph's MemorySaver ↔ `Store::memory()`: threads
    // live as long as the store. The durable ones take the same calls:
    // `Store::sqlite(path)` (SqliteSaver) and `Store::postgres(url)`
    // (PostgresSaver).
    let store = Store::memory();

    println!("OHMind state management, simulated");
    println!("Each node line: node → next [current_operation] and the flags its delta writes.\n");
    first_turn(&mut app, &store).await;

    helpers_as_deltas();

    let mut state = turn(
        &mut app,
        &store,
        "2. Validation requested",
        "Simulate the hydroxide conductivity of benzyltrimethylammonium with MD",
    )
    .await;
    println!(
        "   waiting for the user: should_continue_validation = {}",
        ohmind::should_continue_validation(&state)
    );
    println!("   validation_message  = {:?}", state.validation_message);

    state = turn(&mut app, &store, "3. The user approves", "yes, go ahead").await;
    println!(
        "   validation_required = {}, validation_approved = {:?} (consumed by md_agent)",
        state.validation_required, state.validation_approved
    );

    turn(
        &mut app,
        &store,
        "4a. Another long run ...",
        "Run a longer MD simulation",
    )
    .await;
    state = turn(
        &mut app,
        &store,
        "4b. ... which the user rejects",
        "no, cancel that",
    )
    .await;
    println!("   validation_approved = {:?}", state.validation_approved);

    app.fail_next("orca_single_point", 1);
    state = turn(
        &mut app,
        &store,
        "5. A complex query: a task plan (each agent ends with FINISH; the active plan sends it back to the supervisor), one failed tool call on the way",
        "Design new HEM cations, compute their HOMO LUMO gap, and find papers on their stability",
    )
    .await;
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

    app.fail_next("rag_search", 10);
    state = turn(
        &mut app,
        &store,
        "6. A tool that keeps failing",
        "Find literature on alkaline degradation",
    )
    .await;
    println!(
        "   error = {:?}, retry_count = {} (MAX_RETRIES = {MAX_RETRIES})",
        state.error, state.retry_count
    );

    let mut planner = Ohmind::new().with_plan_approval();
    plan_needing_approval(&mut planner);

    checkpoint_log(&store, &state).await;
}

/// Turn 1 starts from `create_initial_state`, as a new conversation does:
/// the state goes in as the graph's input, one step through the reducers
/// (LangGraph's `app.invoke(initial_state, config)`), then the nodes run.
async fn first_turn(app: &mut Ohmind, store: &Store) {
    let state =
        ohmind::create_initial_state("What is the HOMO-LUMO gap of benzyltrimethylammonium?");
    println!("1. create_initial_state(..): the #[default]s fill the other 17 keys");
    println!(
        "   next = {:?}, current_operation = {:?}, retry_count = {}, messages = {}",
        state.next,
        state.current_operation,
        state.retry_count,
        state.messages.len()
    );
    let mut thread = store
        .thread::<AgentState>(THREAD)
        .await
        .expect("the thread opens");
    let input = AgentStateDelta::from_json(state.to_json().expect("a state has a JSON form"))
        .expect("a state is a valid input");
    thread
        .with_metadata(json!({"node": ohmind::INPUT}))
        .apply(input)
        .await
        .expect("the input is checkpointed");
    println!(
        "   invoke(initial_state): the input is step {} of thread {THREAD:?}, then every node's delta is a step",
        thread.seq()
    );
    let steps = app
        .run_stored(&mut thread)
        .await
        .expect("the first turn runs");
    print_steps(&steps);
    println!(
        "   mcp_results = {}",
        Value::Object(thread.state().mcp_results.clone())
    );
}

/// Runs one user turn on the thread reopened from the store (LangGraph's
/// `app.get_state(config)`): the user's message and each node's delta are
/// checkpointed as they happen.
async fn turn(app: &mut Ohmind, store: &Store, title: &str, user: &str) -> AgentState {
    let mut thread: Thread<AgentState> = store.thread(THREAD).await.expect("the thread reopens");
    println!("\n{title}\n   user: {user}");
    let steps = app
        .run_turn_stored(&mut thread, user)
        .await
        .expect("the turn runs");
    print_steps(&steps);
    thread.into_state()
}

/// The checkpointer's log of the thread: one step per input and per node,
/// with the node in its metadata; and the thread reopened once more.
async fn checkpoint_log(store: &Store, live: &AgentState) {
    let history = store.history(THREAD, ..).await.expect("the log reads");
    println!(
        "\n9. The checkpoints of {THREAD:?}: store.history(..) lists {} steps, one per input and per node",
        history.len()
    );
    println!("   by section: the steps' kind, then each step's number and metadata[\"node\"]");
    let mut turns: Vec<Vec<&StepRecord>> = Vec::new();
    for step in &history {
        match turns.last_mut() {
            Some(turn) if node_of(step) != ohmind::INPUT => turn.push(step),
            _ => turns.push(vec![step]),
        }
    }
    // The turns of sections 1 to 6 (7 and 8 ran on a bare state).
    let sections = ["1", "2", "3", "4a", "4b", "5", "6"];
    for (section, turn) in sections.iter().zip(&turns) {
        // One kind for the whole turn (here always `apply`): say it once.
        let kind = turn[0].kind;
        let same_kind = turn.iter().all(|step| step.kind == kind);
        let shown: Vec<String> = turn
            .iter()
            .map(|step| {
                if same_kind {
                    format!("{} {}", step.seq, node_of(step))
                } else {
                    format!("{} {} {}", step.seq, step.kind, node_of(step))
                }
            })
            .collect();
        let label = if same_kind {
            format!("{section}. {kind}:")
        } else {
            format!("{section}.")
        };
        println!("   {label:<11}{}", wrap(&shown.join(" · "), 88));
    }
    let reopened = store
        .thread::<AgentState>(THREAD)
        .await
        .expect("the thread reopens");
    println!(
        "   reopened from the store: seq = {}, state == the live one: {}",
        reopened.seq(),
        reopened.state() == live
    );
}

fn node_of(step: &StepRecord) -> &str {
    step.metadata
        .get("node")
        .and_then(Value::as_str)
        .unwrap_or("?")
}

/// Wraps a line at ` · ` separators, continuation lines indented.
fn wrap(line: &str, width: usize) -> String {
    let mut out = String::new();
    let mut current = String::new();
    for part in line.split(" · ") {
        if !current.is_empty() && current.chars().count() + 3 + part.chars().count() > width {
            out.push_str(&current);
            out.push_str(" ·\n              ");
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

/// The task planner can also wait for the user's approval of the plan.
fn plan_needing_approval(app: &mut Ohmind) {
    let mut state =
        ohmind::create_initial_state("Design HEM cations and simulate their conductivity");
    println!("\n7. A plan that needs approval (task_plan_needs_approval)");
    print_steps(&app.run(&mut state).expect("planning runs"));
    println!(
        "   task_plan_needs_approval = {}, task_plan_approved = {:?}",
        state.task_plan_needs_approval, state.task_plan_approved
    );
    if let Some(markdown) = state.plan_markdown() {
        println!(
            "   {} holds:\n{}",
            state.task_plan_path.as_deref().unwrap_or("?"),
            indent(&markdown)
        );
    }
    println!("   user: no");
    print_steps(&app.run_turn(&mut state, "no").expect("the answer runs"));
    println!(
        "   task_plan = {:?}, task_plan_approved = {:?}",
        state.task_plan, state.task_plan_approved
    );

    println!("\n8. Another plan, and this time the user approves it (task_plan_approved=True)");
    let request = "Design HEM cations and compute their properties";
    println!("   user: {request}");
    print_steps(&app.run_turn(&mut state, request).expect("planning runs"));
    println!("   user: yes");
    print_steps(&app.run_turn(&mut state, "yes").expect("the plan runs"));
    println!(
        "   task_plan_approved = {:?}, task_plan = {:?}, completed_steps = {:?}",
        state.task_plan_approved, state.task_plan, state.completed_steps
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
            let author = message.name().unwrap_or("");
            let text = message.text().replace('\n', "\n                        ");
            println!("   {:<16}   {}({author}): {text}", "", message.kind());
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
