//! AgentFlow (seed 004): `OrderState` extends the framework's `AgentState`
//! by flattening it; framework nodes written for the base and order nodes
//! written for the extension update one state; AgentFlow's `add_messages`
//! drops duplicate ids and streaming chunks (unlike LangGraph's); the
//! order agent runs as a `state_graph` graph on a store, and the execution
//! metadata follows a run through an interrupt (a real one, resumed by the
//! next invoke), a stop request and an error; `append_items`,
//! `replace_value` and `replace_messages` close the tour.
//!
//! Run it with `cargo run --example agentflow`.

use serde_json::{Value, json};
use state_core::{Delta, Message, State};
use state_examples::agentflow::{
    self, Agent, AgentState, AnalysisState, AnalysisStateDelta, Event, Finding, Flow, MyState,
    OrderState, Role, Run, reducers,
};
use state_store::{StepKind, Store};

type Error = Box<dyn std::error::Error>;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    println!("AgentFlow state, run as a state_graph graph\n");
    println!("OrderState(AgentState): the base's fields are OrderState's own.");
    println!("OrderState::keys() = {:?}\n", OrderState::keys());
    print!("{}", OrderState::schema().to_markdown());

    let store = Store::memory();
    let flow = agentflow::order_graph();
    println!(
        "\nThe graph: START -> {} -> END",
        flow.node_names().join(" -> ")
    );
    println!(
        "(interrupt before checkout; answer and summarise are written for AgentState only;\n \
         after each node a router ends the run early on a stop request or an error)"
    );
    let agent = flow.compile(store.clone())?;

    let seeded = agentflow::seeded_order();
    println!(
        "\n1. Seeded state (OrderState(order_id=\"ORD-001\", cart=[...])), the first invoke's input:"
    );
    println!("   {}", seeded.to_json()?);
    println!(
        "   is_running() = {} before any run: ExecutionStatus defaults to RUNNING, as in AgentFlow",
        seeded.base.is_running()
    );

    println!("\n2. invoke on thread ORD-001: \"Process my order, use code save10\"");
    let said = agentflow::text_message("Process my order, use code save10", Role::User);
    let run = agent
        .invoke("ORD-001", agentflow::order_input(&seeded, vec![said]))
        .await?;
    print_run(&run);

    println!("\n3. compiled.stop() on the interrupted thread");
    let stopped = agent.stop("ORD-001").await?;
    println!("   stop requested: {stopped} (only a running, uninterrupted thread is stopped)");

    println!("\n4. The thread in the store: its log, and what it waits for");
    for step in store.history("ORD-001", ..).await? {
        let nodes = step.metadata.get("nodes").map(Value::to_string);
        let what = match step.kind {
            StepKind::Pending => {
                "the pause: the interrupt, stored for any process to resume".into()
            }
            _ => nodes.unwrap_or_default(),
        };
        println!("   {:>2} {:<10} {what}", step.seq, step.kind);
    }
    let thread = store.thread::<OrderState>("ORD-001").await?;
    println!(
        "   execution_meta = {}",
        serde_json::to_value(thread.state().base.execution_meta())?
    );
    for interrupt in agent.graph().pending_interrupts("ORD-001").await? {
        println!(
            "   pending interrupt at {}: {}",
            interrupt.node, interrupt.value
        );
    }

    println!("\n5. invoke again: \"Yes, confirm\" resumes at checkout");
    let confirm = agentflow::text_message("Yes, confirm", Role::User);
    let run = agent
        .invoke("ORD-001", agentflow::say(vec![confirm]))
        .await?;
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
    stop_mid_run(&agent).await?;
    failing_node(&agent).await?;
    analysis(&store).await?;
    Ok(())
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

/// compiled.stop(): the runtime records it at the next node boundary and
/// the router ends the run there.
async fn stop_mid_run(agent: &Agent<OrderState>) -> Result<(), Error> {
    println!("\n9. compiled.stop() on thread ORD-001-stopped, as its run starts");
    let set = agent.stop("ORD-001-stopped").await?;
    println!("   [caller] stop(): requested = {set} (a new thread is RUNNING)");
    let said = agentflow::text_message("Process my order", Role::User);
    let run = agent
        .invoke(
            "ORD-001-stopped",
            agentflow::order_input(&agentflow::seeded_order(), vec![said]),
        )
        .await?;
    print_run(&run);
    println!(
        "   (the document has no STOPPED status: the flag is the record; status stays running)"
    );
    let again = agent.invoke("ORD-001-stopped", OrderState::delta()).await?;
    println!(
        "   the next invoke starts a new run: is_stopped_requested() = {}, visited {:?}, paused before {:?}",
        again.state.base.is_stopped_requested(),
        again.visited,
        again.state.base.execution_meta().interrupt_node
    );
    Ok(())
}

/// A node that fails: the runtime records it with error(...), and the
/// router ends the run.
async fn failing_node(agent: &Agent<OrderState>) -> Result<(), Error> {
    println!("\n10. A failing node: checkout with an empty cart (thread ORD-002)");
    let empty = OrderState {
        order_id: Some("ORD-002".into()),
        ..OrderState::default()
    };
    let said = agentflow::text_message("Order please", Role::User);
    agent
        .invoke("ORD-002", agentflow::order_input(&empty, vec![said]))
        .await?;
    let yes = agentflow::text_message("yes", Role::User);
    let run = agent.invoke("ORD-002", agentflow::say(vec![yes])).await?;
    print_run(&run);
    Ok(())
}

/// AnalysisState: append_items by id; current_step replaced; a base node
/// reused on another extension.
async fn analysis(store: &Store) -> Result<(), Error> {
    println!("\n11. AnalysisState(AgentState): findings under append_items, current_step replaced");
    println!("   keys() = {:?}", AnalysisState::keys());
    let mut thread = store.thread::<AnalysisState>("analysis").await?;
    thread
        .apply(
            AnalysisState::delta()
                .findings(vec![Finding::new("f1", "draft"), Finding::new("f2", "new")])
                .current_step("search"),
        )
        .await?;
    thread
        .apply(AnalysisStateDelta::from_json(json!({
            "findings": [{"id": "f1", "text": "revised"}, {"id": "f3", "text": "late"}],
            "current_step": "review",
        }))?)
        .await?;
    let state = thread.state();
    let findings: Vec<String> = state
        .findings
        .iter()
        .map(|f| format!("{}:{}", f.id, f.text))
        .collect();
    println!(
        "   append_items: {findings:?} (f1 kept as first written; the built-in append_by_id would make it \"revised\")"
    );
    println!("   current_step = {:?}", state.current_step);
    let agent = Flow::<AnalysisState>::new()
        .base_node("summarise", agentflow::summarise_node)
        .compile(store.clone())?;
    let said = agentflow::text_message("Analyse the logs", Role::User);
    let run = agent.invoke("analysis", agentflow::say(vec![said])).await?;
    println!(
        "   the same summarise node on AnalysisState: context_summary = {:?}, step {}, status {:?}",
        run.state.base.context_summary,
        run.state.base.execution_meta().step,
        run.state.base.execution_meta().status
    );
    Ok(())
}

fn print_run(run: &Run<OrderState>) {
    for event in &run.events {
        match event {
            Event::Node { node, update } => {
                // The runtime's lifecycle writes travel in the node's superstep.
                let mut update = update.clone();
                let runtime = update
                    .as_object_mut()
                    .and_then(|fields| fields.remove("execution_meta"));
                println!("   [{node}] writes {}", compact(&update));
                if let Some(runtime) = runtime {
                    println!(
                        "   {:<w$} runtime: execution_meta {}",
                        "",
                        compact(&runtime),
                        w = node.len() + 2
                    );
                }
            }
            Event::Chunk { node, text } => println!("   [{node}] streamed chunk {text:?}"),
            Event::Paused { node, value } => {
                println!(
                    "   paused before {node} (ctx.interrupt): {}",
                    compact(value)
                );
            }
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
        serde_json::to_value(base.execution_meta()).unwrap_or_default()
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
