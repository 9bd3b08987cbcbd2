//! The therapy agent (seed 002) as a graph, turn by turn: the lifecycle
//! table, the public contract (`AgentInput` -> state -> `AgentOutput`), a
//! `state_graph::StateGraph` whose crisis gate routes each turn through a
//! conditional edge, a guided exercise that survives a crisis turn through
//! the `progress` merge, and the parallel extractors writing `diagnostics`
//! in one superstep. Each turn is one `invoke_thread` on the session's
//! thread of a `state_store::Store` (the checkpointer), in a SQLite file,
//! given the runtime context (`WorkflowContext`, the graph's context type:
//! `app.with_context(ctx)`, as the Python's `context=`; the nodes read
//! `ctx.context()`, its `runtime.context`).
//!
//! The graph is in `state_examples::therapy::graph`.
//!
//! Run it with `cargo run --example therapy`.
//!
//! The Python original: the seed documents `AgentState` (agent/state.py)
//! as a field table, not as code; its rows (name, type, lifecycle class)
//! and the lifecycle it describes, for comparison:
/*
message                          str                                            input
channel                          Channel                                        input
user_id                          str | None                                     input
session_id                       str | None                                     input
installed_skills                 list[str]                                      input
history                          Annotated[list[dict], operator.add]            reducer
transcript                       Annotated[list[dict], operator.add]            reducer
working_memory                   list[WorkingMemoryEntry]                       loaded
memory.summary                   str                                            loaded
memory.procedural_rules          list[str]                                      loaded
memory.proactive_recall_enabled  bool                                           loaded
progress                         Annotated[SessionProgressState, _merge_dicts]  reducer
progress.turn_count              int                                            reducer
progress.stage                   str                                            reducer
progress.exercise_type           str | None                                     reducer
progress.exercise_step           int | None                                     reducer
crisis                           CrisisAssessment                               turn-scoped
routing.route                    str                                            turn-scoped
routing.mode                     str                                            turn-scoped
routing.mode_source              str                                            turn-scoped
routing.mode_type                ModeType                                       turn-scoped
routing.modality                 str | None                                     turn-scoped
response.text                    str                                            turn-scoped
response.kind                    ResponseKind                                   turn-scoped
response.guidance                str                                            turn-scoped
diagnostics                      Annotated[dict, _merge_dicts]                  reducer

Input — set by build_initial_state() from AgentInput. Only the current user
turn is emitted into history and transcript — the operator.add reducer
appends it to the checkpoint's accumulated list.

Turn-scoped — reset at the start of each turn, then filled by nodes as the
graph executes:
  • crisis — safety assessment (level, confidence, reason, flags) from crisis_gate_node
  • routing.route — "therapeutic" or "crisis" from the gate
  ...

diagnostics — _merge_dicts lets all I/O nodes write their own timing/write-count
keys independently. Parallel extractors write simultaneously without racing.
*/

use serde_json::Value;
use state_core::{Delta, State};
use state_examples::therapy::graph::{self as therapy_graph, TherapyGraph};
use state_examples::therapy::{
    self, AgentInput, Channel, Diagnostics, Message, TherapyState, Turn, WorkflowContext,
};
use state_graph::START;
use state_store::Store;

const SESSION: &str = "session-42";

#[tokio::main(flavor = "current_thread")]
async fn main() {
    println!("Therapy agent state, simulated, as a state_graph::StateGraph\n");
    println!("The lifecycle table (TherapyState::schema().to_markdown()):\n");
    print!("{}", TherapyState::schema().to_markdown());
    println!("\nGroups written whole (no reducer) show as one row above; their fields:\n");
    for schema in [
        therapy::Memory::schema(),
        therapy::Routing::schema(),
        therapy::Response::schema(),
    ] {
        println!("{}:", schema.name);
        print!("{}", schema.to_markdown());
        println!();
    }

    println!("The graph (state_examples::therapy::graph):");
    println!("   START → load_memory → crisis_gate → route_after_crisis_gate → crisis_response");
    println!(
        "                                                              | select_mode → therapeutic_response"
    );
    println!("   crisis_response | therapeutic_response → finalize_turn");
    println!(
        "   finalize_turn → extractors → [extract_facts || extract_procedural] (one superstep) | END"
    );

    // The checkpointer: a SQLite file in a fresh temporary directory,
    // removed at the end (`Store::postgres(url)` takes the same calls).
    let dir = tempfile::tempdir().expect("a temporary directory");
    let store = Store::sqlite(dir.path().join("sessions.db"))
        .await
        .expect("the SQLite store opens");
    // One compiled graph; each turn is given the runtime context
    // (`graph.invoke(input, context=ctx)`): `run_turn` binds it with
    // `app.with_context(ctx)`.
    let ctx = therapy::demo_context();
    let app = therapy_graph::compile(store.clone()).expect("the graph compiles");

    let turns = [
        (
            "1. Opening: memory recalled, a rule extracted",
            "Hi. I've been feeling low since my dog Biscuit died. Please keep your answers short.",
        ),
        (
            "2. A guided exercise starts",
            "Could we try a breathing exercise?",
        ),
        ("3. The exercise goes on (progress persists)", "Okay, done."),
        (
            "4. The crisis gate routes to the crisis branch",
            "Honestly, some days I want to end my life.",
        ),
        (
            "5. Back to the exercise: it survived the crisis turn",
            "I'm safe now, my sister Sarah is here. Let's finish.",
        ),
        ("6. Closing", "Thank you, goodbye."),
    ];
    for (title, message) in turns {
        let turn = run(&app, &ctx, title, message).await;
        if turn.state.routing.route == therapy::ROUTE_CRISIS {
            println!(
                "   (no extractors this turn: the extract_* timings above are the last turn's, \
                 kept by the persistent diagnostics merge)"
            );
        }
    }

    println!("\nCrisis log: {:?}", ctx.crisis_log_backend.entries());
    println!(
        "Memory store: facts {:?}\n              rules {:?}",
        ctx.memory_store.facts(),
        ctx.memory_store.procedural_rules()
    );

    one_shot(&app, &ctx).await;
    parallel_writes();
    stored_log(&store).await;

    drop((app, store));
    dir.close().expect("the temporary directory is removed");
}

/// One turn of the checkpointed session: one `invoke_thread`.
async fn run(app: &TherapyGraph, ctx: &WorkflowContext, title: &str, message: &str) -> Turn {
    println!("\n{title}\n   user: {message}");
    let saved = therapy_graph::checkpoint(app, SESSION)
        .await
        .expect("the checkpoint reads");
    if let Some(saved) = saved {
        let mut reset = saved.clone();
        reset.begin_turn();
        println!(
            "   begin_turn on the checkpoint resets message ({:?} -> {:?}), working_memory ({} -> {}), \
             crisis.level ({} -> {}), routing.mode ({:?} -> {:?}), response.text ({} chars -> {})",
            cut(&saved.message, 24),
            reset.message,
            saved.working_memory.len(),
            reset.working_memory.len(),
            saved.crisis.level,
            reset.crisis.level,
            saved.routing.mode,
            reset.routing.mode,
            saved.response.text.len(),
            reset.response.text.len(),
        );
        println!(
            "   and keeps history ({} entries), progress {}",
            reset.history.len(),
            compact(&reset.get("progress").expect("a field")),
        );
    }
    let input = AgentInput {
        channel: Channel::Web,
        user_id: Some("user-7".into()),
        installed_skills: vec!["breathing".into()],
        ..AgentInput::new(message, Some(SESSION))
    };
    let turn = therapy_graph::run_turn(app, ctx, &input)
        .await
        .expect("the turn runs");
    print_turn(&turn);
    turn
}

fn print_turn(turn: &Turn) {
    for step in &turn.steps {
        let parallel = step.writes.len() > 1;
        for (node, delta) in &step.writes {
            let mark = if parallel { "||" } else { "  " };
            println!("   {mark} {node:<21} {}", summary(delta));
        }
    }
    let state = &turn.state;
    let routing = &state.routing;
    println!(
        "   => crisis level {} | route {} | mode {} ({}, {:?}, modality {:?})",
        state.crisis.level,
        routing.route,
        routing.mode,
        routing.mode_source,
        routing.mode_type,
        routing.modality
    );
    println!(
        "   => progress {} | memory.summary {:?}",
        compact(&state.get("progress").expect("a field")),
        state.memory.summary
    );
    if !state.working_memory.is_empty() {
        let formatted = therapy::format_working_memory_entries(&state.working_memory);
        println!(
            "   => working_memory, formatted:\n{}",
            formatted
                .lines()
                .map(|line| format!("        {line}"))
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
    println!(
        "   agent ({:?}): {}",
        turn.output.response_type, turn.output.response_text
    );
    println!("   response.guidance: {:?}", state.response.guidance);
    println!(
        "   output: should_persist_memory={} diagnostics={}",
        turn.output.should_persist_memory,
        compact(&serde_json::to_value(&turn.output.diagnostics).expect("serializes"))
    );
}

/// A caller without a checkpoint sends the earlier turns itself;
/// `turn_count` is counted from them. The run is in memory (no thread).
async fn one_shot(app: &TherapyGraph, ctx: &WorkflowContext) {
    println!(
        "\n7. A one-shot caller (no session, history in AgentInput, the run in memory); an ambiguous message"
    );
    let input = AgentInput {
        channel: Channel::Sms,
        history: vec![
            Message::user("Work has been brutal."),
            Message::assistant("That sounds exhausting.", "supportive"),
        ],
        ..AgentInput::new("I can't go on like this.", None)
    };
    println!(
        "   AgentInput = {}",
        serde_json::to_string(&input).expect("serializes")
    );
    let turn = therapy_graph::run_turn(app, ctx, &input)
        .await
        .expect("the turn runs");
    print_turn(&turn);
    println!(
        "   AgentOutput = {}",
        serde_json::to_string_pretty(&turn.output).expect("serializes")
    );
}

/// The session's log: per turn (from its input, the step that starts it),
/// the supersteps and their nodes, from each step's metadata.
async fn stored_log(store: &Store) {
    let history = store.history(SESSION, ..).await.expect("the log reads");
    println!(
        "\n9. The log of {SESSION:?}: {} steps; per turn, each step's nodes (metadata[\"nodes\"])",
        history.len()
    );
    let mut turns: Vec<Vec<String>> = Vec::new();
    for step in &history {
        let nodes = step.nodes();
        if nodes == [START] {
            turns.push(vec![format!("input ({})", step.kind)]);
        } else if let Some(turn) = turns.last_mut().filter(|_| !nodes.is_empty()) {
            turn.push(nodes.join(" || "));
        }
    }
    for (i, turn) in turns.iter().enumerate() {
        println!("   turn {}: {}", i + 1, turn.join(" → "));
    }
}

/// The extractors write different `diagnostics` keys in one superstep;
/// two writes to the same key would be refused, not silently overwritten.
fn parallel_writes() {
    println!("\n8. Parallel writes to diagnostics");
    let facts = TherapyState::delta().diagnostics(Diagnostics::delta().extract_facts_ms(12.0));
    let rules = TherapyState::delta().diagnostics(Diagnostics::delta().extract_procedural_ms(9.0));
    let mut state = TherapyState::default();
    state
        .apply_all([facts.clone(), rules])
        .expect("different keys merge");
    println!(
        "   different keys, one step: diagnostics = {}",
        compact(&state.get("diagnostics").expect("a field"))
    );
    let again = TherapyState::delta().diagnostics(Diagnostics::delta().extract_facts_ms(13.0));
    println!(
        "   the same key twice:        {}",
        facts.merge(again).expect_err("one key, two writers")
    );
}

/// A delta as `field=value` pairs, long values cut.
fn summary(delta: &therapy::TherapyStateDelta) -> String {
    let json = serde_json::to_value(delta).expect("a delta serializes");
    json.as_object()
        .into_iter()
        .flatten()
        .map(|(key, value)| format!("{key}={}", cut(&compact(value), 70)))
        .collect::<Vec<_>>()
        .join(" ")
}

fn compact(value: &Value) -> String {
    value.to_string()
}

fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_owned()
    } else {
        let head: String = text.chars().take(max).collect();
        format!("{head}…")
    }
}
