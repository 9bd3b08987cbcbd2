//! The therapy agent (seed 002) turn by turn: the lifecycle table, the
//! public contract (`AgentInput` -> state -> `AgentOutput`), the crisis gate
//! routing, a guided exercise that survives a crisis turn through the
//! `progress` merge, and the parallel extractors writing `diagnostics` in
//! one superstep, with the state saved to a checkpoint between turns.
//!
//! Run it with `cargo run --example therapy`.

use serde_json::Value;
use state_core::{Delta, State};
use state_examples::therapy::{
    self, AgentInput, Channel, Checkpointer, Diagnostics, Message, TherapyAgent, TherapyState, Turn,
};

const SESSION: &str = "session-42";

fn main() {
    println!("Therapy agent state, simulated\n");
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

    let agent = TherapyAgent::new(therapy::demo_context());
    let mut saver = Checkpointer::default();
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
        let turn = run(&agent, &mut saver, title, message);
        if turn.state.routing.route == therapy::ROUTE_CRISIS {
            println!(
                "   (no extractors this turn: the extract_* timings above are the last turn's, \
                 kept by the persistent diagnostics merge)"
            );
        }
    }

    println!(
        "\nCrisis log: {:?}",
        agent.context.crisis_log_backend.entries()
    );
    println!(
        "Memory store: facts {:?}\n              rules {:?}",
        agent.context.memory_store.facts(),
        agent.context.memory_store.procedural_rules()
    );

    one_shot(&agent);
    parallel_writes();
}

/// One turn of the checkpointed session.
fn run(agent: &TherapyAgent, saver: &mut Checkpointer, title: &str, message: &str) -> Turn {
    println!("\n{title}\n   user: {message}");
    if let Some(saved) = saver.get(SESSION).expect("the checkpoint decodes") {
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
    let turn = saver.run_turn(agent, &input).expect("the turn runs");
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
/// `turn_count` is counted from them.
fn one_shot(agent: &TherapyAgent) {
    println!("\n7. A one-shot caller (no session, history in AgentInput); an ambiguous message");
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
    let turn = agent.run_turn(None, &input).expect("the turn runs");
    print_turn(&turn);
    println!(
        "   AgentOutput = {}",
        serde_json::to_string_pretty(&turn.output).expect("serializes")
    );
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
