//! The shortest tour of state-core: declare a state, apply a node's delta,
//! run a superstep (and see a conflict caught), start a new turn.
//!
//! Run it with `cargo run --example quickstart`.

use state_core::{AgentState, Delta, Message, Messages, State};
use std::collections::BTreeMap;

/// The state one conversation thread carries through the graph.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct ChatState {
    /// Conversation history: appended, or updated and removed by message id.
    #[reducer(add_messages)]
    pub messages: Messages,
    /// Durable record: every write appends.
    #[reducer(append)]
    pub transcript: Vec<String>,
    /// Timings written by parallel nodes; the later node wins on a shared key.
    #[reducer(merge)]
    pub diagnostics: BTreeMap<String, f64>,
    /// Where to route next; back to "supervisor" at every new turn.
    #[scope(turn)]
    #[default("supervisor")]
    pub next: String,
    /// The last error of this turn, if any.
    #[scope(turn)]
    pub error: Option<String>,
}

fn main() {
    let mut state = ChatState::default();
    println!("1. A fresh state starts from its defaults:");
    show(&state);

    // A node returns a delta: only the fields it writes.
    let greet = ChatState::delta()
        .messages(vec![Message::human("What's the weather in Paris?")])
        .transcript(vec!["user asked about weather".to_string()])
        .next("weather_tool");
    println!(
        "\n2. The supervisor node writes {:?}; apply it:",
        greet.fields()
    );
    state.apply(greet).expect("a valid delta applies");
    show(&state);

    // Two nodes ran in parallel: their writes form one superstep.
    let tool = ChatState::delta()
        .messages(vec![Message::ai("It's 18°C and sunny.")])
        .diagnostics(BTreeMap::from([("weather_ms".to_string(), 112.0)]));
    let audit = ChatState::delta()
        .transcript(vec!["tool answered".to_string()])
        .diagnostics(BTreeMap::from([("audit_ms".to_string(), 3.5)]));
    println!("\n3. Two parallel nodes in one superstep (writes to reducer fields combine):");
    state.apply_all([tool, audit]).expect("no conflict");
    show(&state);

    // Two parallel nodes both set `next`, a last-write-wins field: that is
    // a conflict, reported before anything changes.
    let before = state.clone();
    let a = ChatState::delta().next("summarize");
    let b = ChatState::delta().next("end");
    let err = state
        .apply_all([a, b])
        .expect_err("two writes to `next` conflict");
    println!("\n4. Two parallel nodes both route: the superstep is refused:");
    println!("   error: {err}");
    println!("   state unchanged: {}", state == before);

    // A new user turn: turn-scoped fields reset, persistent ones stay.
    state
        .apply(ChatState::delta().error("rate limited".to_string()))
        .unwrap();
    state.begin_turn();
    println!("\n5. begin_turn(): `next` and `error` reset, history and transcript kept:");
    show(&state);

    // Deltas travel as JSON too, e.g. from a Python service.
    let json = serde_json::json!({"next": "weather_tool", "messages": [{"role": "user", "content": "And tomorrow?"}]});
    let delta: ChatStateDelta = serde_json::from_value(json).expect("valid JSON delta");
    state.apply(delta).unwrap();
    println!("\n6. A delta decoded from JSON (OpenAI-style message) applied:");
    show(&state);
    let typo = serde_json::from_value::<ChatStateDelta>(serde_json::json!({"nxt": "end"}));
    println!(
        "   and a typo is caught: {}",
        typo.expect_err("unknown key")
    );
}

fn show(state: &ChatState) {
    println!("   next        = {:?}", state.next);
    println!("   error       = {:?}", state.error);
    println!("   transcript  = {:?}", state.transcript);
    println!("   diagnostics = {:?}", state.diagnostics);
    println!("   messages    = {} message(s)", state.messages.len());
    for message in state.messages.iter() {
        println!("     - {:?}: {}", message.kind(), message.text());
    }
}
