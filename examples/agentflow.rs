//! AgentFlow (seed 004): `OrderState` extends the framework's `AgentState`
//! by flattening it; framework nodes written for the base and order nodes
//! written for the extension update one state; AgentFlow's `add_messages`
//! drops duplicate ids and streaming chunks (unlike LangGraph's); the
//! execution metadata follows a run through an interrupt, a resume, a stop
//! request and an error; `append_items`, `replace_value` and
//! `replace_messages` close the tour.
//!
//! Run it with `cargo run --example agentflow`.

use serde_json::{Value, json};
use state_core::{Message, State};
use state_examples::agentflow::{
    self, AgentState, AnalysisState, Event, Finding, MyState, OrderState, Role, Run, StateGraph,
    reducers,
};

fn main() {
    println!("AgentFlow state, simulated\n");
    println!("OrderState(AgentState): the base's fields are OrderState's own.");
    println!("OrderState::keys() = {:?}\n", OrderState::keys());
    print!("{}", OrderState::schema().to_markdown());

    let graph = agentflow::order_graph();
    println!("\nThe graph: {}", graph.node_names().join(" -> "));
    println!("(interrupt before checkout; answer and summarise are written for AgentState only)");

    let seeded = agentflow::seeded_order();
    println!("\n1. Seeded state (OrderState(order_id=\"ORD-001\", cart=[...])):");
    println!("   {}", seeded.to_json().expect("an order has a JSON form"));
    println!(
        "   is_running() = {} before any run: ExecutionStatus defaults to RUNNING, as in AgentFlow",
        seeded.base.is_running()
    );

    println!("\n2. invoke: \"Process my order, use code save10\"");
    let run = graph
        .invoke(
            seeded,
            vec![agentflow::text_message(
                "Process my order, use code save10",
                Role::User,
            )],
        )
        .expect("the run applies");
    print_run(&run);

    let mut state = run.state;
    println!("\n3. compiled.stop() on the interrupted thread");
    let stopped = graph.stop(&mut state).expect("applies");
    println!(
        "   stop flag set: {stopped} (only a running, uninterrupted thread is stopped); \
         is_stopped_requested() = {}",
        state.base.is_stopped_requested()
    );

    println!("\n4. The checkpoint is JSON (to_json / from_json); execution_meta included:");
    let saved = state.to_json().expect("an order has a JSON form");
    println!("   execution_meta = {}", saved["execution_meta"]);
    let state = OrderState::from_json(saved).expect("the checkpoint decodes");

    println!("\n5. invoke again: \"Yes, confirm\" resumes at checkout");
    let run = graph
        .invoke(
            state,
            vec![agentflow::text_message("Yes, confirm", Role::User)],
        )
        .expect("the run applies");
    print_run(&run);
    println!(
        "   context ({} messages, no chunk among them):",
        run.state.base.context.len()
    );
    for message in &run.state.base.context {
        println!(
            "     {:<5} {:<16} {}",
            message.kind().as_str(),
            message.id().unwrap_or("-"),
            message.text()
        );
    }
    println!("   context_summary = {:?}", run.state.base.context_summary);
    let mut state = run.state;

    duplicates(&mut state);
    chunks();
    replace_messages(&state);
    stop_mid_run(&graph);
    failing_node(&graph);
    analysis();
}

/// A retried checkout repeats its message id: AgentFlow drops it; the
/// built-in (LangGraph) add_messages would replace the stored one.
fn duplicates(state: &mut OrderState) {
    println!("\n6. Duplicate ids: a retried checkout returns \"Order placed!\" again, same id");
    let id = agentflow::placed_message_id("ORD-001");
    let retry = vec![
        Message::ai("Order placed! (retry)").with_id(&id),
        agentflow::text_message("Anything else?", Role::Assistant),
    ];
    let mut builtin = state.base.context.clone();
    state_core::reducer::add_messages(&mut builtin, retry.clone()).expect("no removals");
    let before = state.base.context.len();
    state
        .apply(AgentState::delta().context(retry).into())
        .expect("applies");
    let kept = state
        .base
        .context
        .iter()
        .find(|m| m.id() == Some(id.as_str()))
        .map(Message::text);
    println!(
        "   AgentFlow add_messages: {before} -> {} messages; {id} still says {:?}",
        state.base.context.len(),
        kept.unwrap_or_default()
    );
    let replaced = builtin
        .iter()
        .find(|m| m.id() == Some(id.as_str()))
        .map(Message::text);
    println!(
        "   built-in add_messages:  {before} -> {} messages; {id} now says {:?}",
        builtin.len(),
        replaced.unwrap_or_default()
    );
}

/// Chunks streamed one update at a time: AgentFlow stores none, so the
/// final message (same id) is not mistaken for a duplicate.
fn chunks() {
    println!("\n7. Streaming chunks written one update at a time (delta=True on each)");
    let chunk = agentflow::chunk("Hel", "reply-1");
    println!(
        "   a chunk in JSON: {}",
        serde_json::to_value(&chunk).expect("serializes")
    );
    let updates = vec![
        vec![chunk],
        vec![agentflow::chunk("lo!", "reply-1")],
        vec![Message::ai("Hello!").with_id("reply-1")],
    ];
    let mut agentflow_state = AgentState::default();
    let mut builtin: Vec<Message> = Vec::new();
    for (i, update) in updates.into_iter().enumerate() {
        agentflow_state
            .apply(AgentState::delta().context(update.clone()))
            .expect("applies");
        state_core::reducer::add_messages(&mut builtin, update).expect("no removals");
        println!(
            "   after update {}: AgentFlow add_messages {:<12} built-in add_messages {:?}",
            i + 1,
            format!("{:?}", texts(&agentflow_state.context)),
            texts(&builtin)
        );
    }
    println!(
        "   (the built-in stores each chunk, marked \"delta\": true, until the final message replaces it)"
    );
    let mut no_skip: Vec<Message> = Vec::new();
    for text in ["Hel", "Hello!"] {
        let message = Message::ai(text).with_id("reply-1");
        if no_skip.iter().all(|m| m.id() != message.id()) {
            no_skip.push(message);
        }
    }
    println!(
        "   dropping duplicates without skipping chunks would keep {:?}: why chunks are skipped",
        texts(&no_skip)
    );
}

/// replace_messages: per write with an overwrite, or as a field reducer
/// on a state that redeclares the base's fields.
fn replace_messages(state: &OrderState) {
    println!("\n8. replace_messages");
    let mut trimmed = state.clone();
    let summary = trimmed.base.context_summary.clone().unwrap_or_default();
    let fresh = vec![Message::system(format!("Summary: {summary}")).with_id("summary")];
    trimmed
        .apply(AgentState::delta().overwrite_context(fresh).into())
        .expect("applies");
    println!(
        "   overwrite_context: {} -> {} messages: {:?}",
        state.base.context.len(),
        trimmed.base.context.len(),
        texts(&trimmed.base.context)
    );
    trimmed
        .apply_json(json!({"context": {"__overwrite__": ["Start over"]}}))
        .expect("applies");
    println!(
        "   JSON {{\"context\": {{\"__overwrite__\": [...]}}}}: {:?}",
        texts(&trimmed.base.context)
    );
    let mut mine = MyState::default();
    for text in ["first", "second"] {
        mine.apply(MyState::delta().context(vec![Message::human(text)]))
            .expect("applies");
    }
    println!(
        "   MyState, context under `{}`: {:?}",
        MyState::schema()
            .field("context")
            .map(|f| f.reducer)
            .unwrap_or_default(),
        texts(&mine.context)
    );
    let mut list = vec![Message::human("old")];
    reducers::replace_messages(&mut list, vec![Message::human("new")]);
    println!(
        "   reducers::replace_messages([old], [new]) = {:?}",
        texts(&list)
    );
}

/// compiled.stop() while a run is going on: the runtime stops before the
/// next node.
fn stop_mid_run(graph: &StateGraph<OrderState>) {
    println!("\n9. compiled.stop() during a run (called after apply_discount)");
    let run = graph
        .invoke_with(
            agentflow::seeded_order(),
            vec![agentflow::text_message("Process my order", Role::User)],
            |node, state| {
                if node == "apply_discount" {
                    let set = graph.stop(state).expect("applies");
                    println!("   [caller] stop() after {node}: flag set = {set}");
                }
            },
        )
        .expect("the run applies");
    print_run(&run);
    println!(
        "   (the document has no STOPPED status: the flag is the record; status stays running)"
    );
    let again = graph
        .invoke(run.state, Vec::new())
        .expect("the run applies");
    println!(
        "   the next invoke starts a new run: is_stopped_requested() = {}, halted at {:?}",
        again.state.base.is_stopped_requested(),
        again.state.base.execution_meta().interrupt_node
    );
}

/// A node that fails: the runtime records it with error(...).
fn failing_node(graph: &StateGraph<OrderState>) {
    println!("\n10. A failing node: checkout with an empty cart");
    let empty = OrderState {
        order_id: Some("ORD-002".into()),
        ..OrderState::default()
    };
    let paused = graph
        .invoke(
            empty,
            vec![agentflow::text_message("Order please", Role::User)],
        )
        .expect("the run applies");
    let run = graph
        .invoke(
            paused.state,
            vec![agentflow::text_message("yes", Role::User)],
        )
        .expect("the run applies");
    print_run(&run);
}

/// AnalysisState: append_items by id; current_step replaced; a base node
/// reused on another extension.
fn analysis() {
    println!("\n11. AnalysisState(AgentState): findings under append_items, current_step replaced");
    let mut state = AnalysisState::default();
    println!("   keys() = {:?}", AnalysisState::keys());
    state
        .apply(
            AnalysisState::delta()
                .findings(vec![Finding::new("f1", "draft"), Finding::new("f2", "new")])
                .current_step("search"),
        )
        .expect("applies");
    state
        .apply(
            AnalysisState::delta()
                .findings(vec![
                    Finding::new("f1", "revised"),
                    Finding::new("f3", "late"),
                ])
                .current_step("review"),
        )
        .expect("applies");
    let findings: Vec<String> = state
        .findings
        .iter()
        .map(|f| format!("{}:{}", f.id, f.text))
        .collect();
    println!(
        "   append_items: {findings:?} (f1 kept as first written; the built-in append_by_id would make it \"revised\")"
    );
    println!("   current_step = {:?}", state.current_step);
    let graph =
        StateGraph::<AnalysisState>::new().base_node("summarise", agentflow::summarise_node);
    let run = graph
        .invoke(
            state,
            vec![agentflow::text_message("Analyse the logs", Role::User)],
        )
        .expect("the run applies");
    println!(
        "   the same summarise node on AnalysisState: context_summary = {:?}, step {}, status {:?}",
        run.state.base.context_summary,
        run.state.base.execution_meta().step,
        run.state.base.execution_meta().status
    );
}

fn print_run(run: &Run<OrderState>) {
    for event in &run.events {
        match event {
            Event::Framework { what, update } => {
                println!("   [framework] {what:<30} {}", compact(update));
            }
            Event::Node {
                node,
                returned,
                update,
            } => println!("   [{node}] returned {returned:<13} {}", compact(update)),
            Event::Chunk { node, text } => println!("   [{node}] streamed chunk {text:?}"),
            Event::Halt { reason } => println!("   halted: {reason}"),
        }
    }
    let base = &run.state.base;
    println!(
        "   => is_running={} is_interrupted={} is_stopped_requested={} | order: confirmed={} discount_code={:?}",
        base.is_running(),
        base.is_interrupted(),
        base.is_stopped_requested(),
        run.state.confirmed,
        run.state.discount_code
    );
    println!(
        "   => execution_meta = {}",
        serde_json::to_value(base.execution_meta()).expect("serializes")
    );
}

fn texts(messages: &[Message]) -> Vec<String> {
    messages.iter().map(Message::text).collect()
}

fn compact(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() <= 110 {
        text
    } else {
        let head: String = text.chars().take(110).collect();
        format!("{head}…")
    }
}
