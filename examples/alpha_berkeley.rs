//! The Alpha Berkeley framework's state (seed 003) over three conversation
//! turns, run as a `state_graph::StateGraph`: each turn extracts a task,
//! classifies it, plans, and the router (conditional edges) sends each plan
//! step to its capability node; a step that runs Python code waits for the
//! operator's approval (a real interrupt, answered with `resume`). The
//! capability context accumulates across turns (its three-level merge), the
//! status and progress events accumulate within a turn, and every execution
//! field resets at the next one: each turn is an `invoke_thread`, which
//! begins a turn.
//!
//! Run it with `cargo run --example alpha_berkeley`.

use serde_json::Value;
use state_core::{Delta, Message, Scope, State};
use state_examples::alpha_berkeley::graph::{
    self, OPERATOR_ANSWER, Seen, context_summary, conversation, run_turn,
};
use state_examples::alpha_berkeley::{
    AgentState, JsonObject, StateUpdate, create_fresh_state, create_status_update, invoke_input,
    start_turn,
};
use state_store::{StepKind, Store};

/// Longest value printed on one line.
const WIDTH: usize = 72;

/// The conversation's thread.
const THREAD: &str = "als-operator";

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    print_schema();
    let store = Store::memory();
    let app = graph::build(conversation())?.with_store(store.clone());
    println!(
        "\nThe graph: START -> task_extraction -> classification -> orchestration, then the router\n\
         (conditional edges after orchestration, each capability and approval) picks one of\n\
         {}, approval, kill or END.",
        graph::CAPABILITIES.join(", ")
    );
    let mut previous: Option<AgentState> = None;
    for (number, turn) in conversation().iter().enumerate() {
        println!("\n=== Turn {}: user says {:?}", number + 1, turn.user_input);
        if let Some(state) = &previous {
            print_reset_table(state);
        }
        let first_step = store
            .thread::<AgentState>(THREAD)
            .await
            .map(|t| t.seq() + 1)?;
        let outcome = run_turn(&app, THREAD, turn, print_seen).await?;
        print_turn_end(outcome.state());
        if number == 1 {
            print_log(&store, first_step).await?;
        }
        previous = Some(outcome.into_state());
    }
    let state = previous.unwrap_or_default();
    print_context(&state);
    show_fresh_state_equivalence(&state);
    show_parallel_events(&state);
    Ok(())
}

/// The field table from `AgentState::schema()`, and the scope split.
fn print_schema() {
    let schema = AgentState::schema();
    let persistent: Vec<&str> = schema
        .fields
        .iter()
        .filter(|field| field.scope == Scope::Persistent)
        .map(|field| field.name)
        .collect();
    println!(
        "Alpha Berkeley AgentState: {} fields; {} persist across turns ({}), {} reset at every turn.\n",
        schema.fields.len(),
        persistent.len(),
        persistent.join(", "),
        schema.fields.len() - persistent.len()
    );
    println!("| field | type | reducer | scope | default |");
    println!("|---|---|---|---|---|");
    for field in schema.fields {
        let default = field.default.unwrap_or("Default::default()");
        println!(
            "| {} | {} | {} | {} | {} |",
            field.name,
            field.ty,
            field.reducer,
            field.scope.as_str(),
            default
        );
    }
}

/// What `begin_turn` (the first thing `invoke_thread` does) does to the
/// thread's state: every field that held a value, before and after, with
/// its scope from the schema.
fn print_reset_table(state: &AgentState) {
    let mut after = state.clone();
    after.begin_turn();
    let fresh = AgentState::default();
    println!(
        "invoke_thread begins a turn: begin_turn() on the thread's state (fields not at their default):"
    );
    println!("  {:<34} {:<10} {:<30} after", "field", "scope", "before");
    for field in AgentState::schema().fields {
        let before = json(state, field.name);
        if before == json(&fresh, field.name) && field.scope == Scope::Turn {
            continue;
        }
        let now = json(&after, field.name);
        let verdict = if before == now { "kept" } else { "reset" };
        println!(
            "  {:<34} {:<10} {:<30} {verdict}: {}",
            field.name,
            field.scope.as_str(),
            short(&before, 30),
            short(&now, 24)
        );
    }
}

/// What the run showed: a node's update, or the approval's question.
fn print_seen(seen: Seen<'_>) {
    match seen {
        Seen::Node { name, update } => print_node(name, update),
        Seen::Asked(interrupt) => {
            println!(
                "  [{}] paused (ctx.interrupt): {}",
                interrupt.node,
                short(&interrupt.value, WIDTH)
            );
            println!(
                "  the operator answers {OPERATOR_ANSWER:?}: resume(thread, json!({OPERATOR_ANSWER:?}))"
            );
        }
    }
}

/// One node's update, as LangGraph's `stream_mode="updates"` shows it.
fn print_node(node: &str, update: &StateUpdate) {
    println!(
        "  [{node}] writes {}",
        update.fields().as_slice().join(", ")
    );
    let Ok(Value::Object(written)) = serde_json::to_value(update) else {
        return;
    };
    for (key, value) in &written {
        if let Some(line) = describe(key, value) {
            println!("      {line}");
        }
    }
}

/// A readable line for the writes worth reading.
fn describe(key: &str, value: &Value) -> Option<String> {
    match key {
        "status_updates" => event(value, "status", "message", "progress"),
        "progress_events" => event(value, "progress", "operation", "progress"),
        "planning_execution_plan" => Some(format!("plan: {}", plan_line(value))),
        "capability_context_data" => Some(format!("context += {}", context_line(value))),
        "messages" => Some(format!("AI: {}", value[0]["content"].as_str()?)),
        "execution_last_result" => Some(result_line(value)),
        "execution_step_results" | "execution_start_time" | "execution_total_time" => None,
        _ => Some(format!("{key} = {}", short(value, WIDTH))),
    }
}

fn event(events: &Value, label: &str, text: &str, fraction: &str) -> Option<String> {
    let first = events.get(0)?;
    let percent = first[fraction].as_f64().unwrap_or(0.0) * 100.0;
    Some(format!("{label}: {} ({percent:.0}%)", first[text]))
}

/// `TYPE/key {field, ...}` for each record written: the field names show
/// what a rewrite replaces.
fn context_line(update: &Value) -> String {
    let Some(types) = update.as_object() else {
        return short(update, WIDTH);
    };
    let mut records = Vec::new();
    for (context_type, contexts) in types {
        for (key, fields) in contexts.as_object().into_iter().flatten() {
            let names: Vec<&str> = fields
                .as_object()
                .map(|fields| fields.keys().map(String::as_str).collect())
                .unwrap_or_default();
            records.push(format!("{context_type}/{key} {{{}}}", names.join(", ")));
        }
    }
    records.join("; ")
}

fn result_line(result: &Value) -> String {
    match result["error"]["message"].as_str() {
        Some(message) => format!("last result: failed ({message})"),
        None => "last result: success".to_owned(),
    }
}

fn plan_line(plan: &Value) -> String {
    let steps = plan["steps"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    let names: Vec<String> = steps
        .iter()
        .map(|step| match step["expected_output"].as_str() {
            Some(output) => format!(
                "{} -> {output}/{}",
                step["capability"].as_str().unwrap_or("?"),
                step["context_key"].as_str().unwrap_or("?")
            ),
            None => step["capability"].as_str().unwrap_or("?").to_owned(),
        })
        .collect();
    names.join("; ")
}

fn print_turn_end(state: &AgentState) {
    let retries = state.control_retry_count;
    println!(
        "  end of turn: {} messages, {} plan(s) made, {retries} retr{}, {} figure(s)",
        state.messages.len(),
        state.control_plans_created_count,
        if retries == 1 { "y" } else { "ies" },
        state.ui_captured_figures.len()
    );
    println!(
        "  status_updates (appended this turn): {}",
        trail(&state.status_updates, "message")
    );
    println!(
        "  progress_events (appended this turn): {}",
        trail(&state.progress_events, "operation")
    );
    println!(
        "  context kept for the next turns: {}",
        context_summary(state)
    );
}

/// The turn's steps as the store logged them: the turn reset, the input,
/// one superstep per node (names in the metadata), and the pause.
async fn print_log(store: &Store, from: u64) -> Result<(), state_store::StoreError> {
    println!("  the stored log of this turn (store.history):");
    for step in store.history(THREAD, from..).await? {
        let what = match step.kind {
            StepKind::Pending => {
                "the pause: the interrupt, stored for any process to resume".to_owned()
            }
            _ => step
                .metadata
                .get("nodes")
                .map(Value::to_string)
                .unwrap_or_default(),
        };
        println!("    {:>3} {:<10} {what}", step.seq, step.kind);
    }
    Ok(())
}

/// `label (NN%) -> ...` for a turn's events.
fn trail(events: &[JsonObject], label: &str) -> String {
    let steps: Vec<String> = events
        .iter()
        .map(|event| {
            let text = event.get(label).and_then(Value::as_str).unwrap_or("?");
            let percent = event.get("progress").and_then(Value::as_f64).unwrap_or(0.0) * 100.0;
            format!("{text} ({percent:.0}%)")
        })
        .collect();
    format!("{} events: {}", events.len(), steps.join(" -> "))
}

/// The persistent context after all turns: every level of the merge.
fn print_context(state: &AgentState) {
    println!("\n=== capability_context_data after three turns");
    for (context_type, contexts) in &state.capability_context_data {
        println!("  {context_type}");
        for (key, fields) in contexts {
            let fields = Value::Object(fields.clone());
            println!("    {key}: {}", short(&fields, 2 * WIDTH));
        }
    }
    println!(
        "  Turn 2 added new types (level 1), turn 3 a key beside beam_current_pvs (level 2),\n  \
         and its rewrite of beam_current_pvs replaced the record whole: the turn-1 \"notes\" are gone (level 3)."
    );
}

/// `create_fresh_state` as the Python writes it, fed to the checkpointed
/// thread, against `begin_turn` plus the user's message.
fn show_fresh_state_equivalence(state: &AgentState) {
    let message = Message::human("What changed since yesterday?").with_id("turn-4");
    let mut python = state.clone();
    let fresh = create_fresh_state(message.clone(), Some(state));
    let mut rust = state.clone();
    if invoke_input(&mut python, &fresh).is_err() || start_turn(&mut rust, message).is_err() {
        println!("\n=== create_fresh_state: the input was refused");
        return;
    }
    println!(
        "\n=== create_fresh_state(user_input, current_state) fed to the thread vs begin_turn() + the message"
    );
    println!(
        "    status_updates: {} events vs {}; progress_events: {} vs {}",
        python.status_updates.len(),
        rust.status_updates.len(),
        python.progress_events.len(),
        rust.progress_events.len()
    );
    println!(
        "    (through operator.add the fresh [] is appended, so the last turn's events stay;\n     begin_turn resets a turn-scoped field whatever its reducer)"
    );
    python.status_updates.clear();
    python.progress_events.clear();
    println!("    every other field equal: {}", python == rust);
}

/// Two nodes of one superstep both report: the `append` reducer keeps
/// both events, in order. (With the seed's literal declaration, no
/// reducer, LangGraph would raise `InvalidUpdateError` here.)
fn show_parallel_events(state: &AgentState) {
    let mut probe = state.clone();
    let before = probe.status_updates.len();
    let a = create_status_update("Archiver: 1440 samples", 0.5, false, []);
    let b = create_status_update("Python: figure saved", 0.5, false, []);
    match probe.apply_all([a, b]) {
        Ok(()) => println!(
            "\n=== Two nodes reporting in one superstep (apply_all): status_updates {before} -> {} events, both kept by #[reducer(append)]",
            probe.status_updates.len()
        ),
        Err(err) => println!("\n=== Two nodes reporting in one superstep: {err}"),
    }
}

fn json(state: &AgentState, key: &str) -> Value {
    state.get(key).unwrap_or(Value::Null)
}

/// Compact JSON, cut to `width` characters.
fn short(value: &Value, width: usize) -> String {
    let text = value.to_string();
    if text.chars().count() <= width {
        return text;
    }
    let cut: String = text.chars().take(width.saturating_sub(1)).collect();
    format!("{cut}…")
}
