//! AgentFlow (seed 004): `OrderState(AgentState)` by flattening, AgentFlow's
//! `add_messages` (duplicate ids and streaming chunks dropped),
//! `replace_messages`, `append_items`, `replace_value`, and the
//! framework-managed execution metadata, run on `state_examples::agentflow`
//! (its order graph on a `state_graph` graph over a memory store).

use serde_json::json;
use state_core::{AgentState as DeriveAgentState, Delta, Message, Scope, State, StateError};
use state_examples::agentflow::{
    self, Agent, AgentState, AgentStateDelta, AnalysisState, Event, ExecutionState,
    ExecutionStatus, Finding, Flow, MyState, NodeReturn, OrderState, OrderStateDelta, Role,
    StopRequestStatus, reducers,
};
use state_graph::GraphError;
use state_store::Store;

fn ids(messages: &[Message]) -> Vec<&str> {
    messages.iter().map(|m| m.id().unwrap_or("-")).collect()
}

fn texts(messages: &[Message]) -> Vec<String> {
    messages.iter().map(Message::text).collect()
}

fn ai(id: &str, text: &str) -> Message {
    Message::ai(text).with_id(id)
}

fn user(id: &str, text: &str) -> Message {
    Message::human(text).with_id(id)
}

fn context(messages: Vec<Message>) -> AgentStateDelta {
    AgentState::delta().context(messages)
}

// --- Inheritance: the union of fields -----------------------------------------

#[test]
fn order_state_has_the_base_fields_then_its_own() {
    assert_eq!(
        AgentState::keys(),
        ["context", "context_summary", "execution_meta"]
    );
    assert_eq!(
        OrderState::keys(),
        [
            "context",
            "context_summary",
            "execution_meta",
            "order_id",
            "cart",
            "confirmed",
            "discount_code",
        ]
    );
    assert_eq!(
        AnalysisState::keys(),
        [
            "context",
            "context_summary",
            "execution_meta",
            "findings",
            "current_step",
        ]
    );
    let leaves = OrderState::leaf_keys();
    for path in [
        "context",
        "execution_meta.current_node",
        "execution_meta.step",
        "execution_meta.status",
        "execution_meta.interrupt_node",
        "execution_meta.interrupt_reason",
        "execution_meta.stop_current_execution",
        "discount_code",
    ] {
        assert!(leaves.iter().any(|leaf| leaf == path), "{path}");
    }
}

#[test]
fn defaults_and_json_are_flat() {
    let meta = json!({
        "current_node": "__start__",
        "step": 0,
        "status": "running",
        "interrupt_node": null,
        "interrupt_reason": null,
        "interrupt_data": null,
        "stop_current_execution": "none",
        "error": null,
    });
    assert_eq!(
        OrderState::default().to_json().unwrap(),
        json!({
            "context": [],
            "context_summary": null,
            "execution_meta": meta,
            "order_id": null,
            "cart": [],
            "confirmed": false,
            "discount_code": null,
        })
    );
    assert_eq!(
        AnalysisState::default().to_json().unwrap()["current_step"],
        json!("init")
    );
    let seeded = agentflow::seeded_order();
    assert_eq!(
        seeded.to_json().unwrap()["cart"],
        json!([{"sku": "ABC", "qty": 1}])
    );
    assert_eq!(seeded.get("order_id").unwrap(), json!("ORD-001"));
    assert_eq!(
        seeded.get("execution_meta.current_node").unwrap(),
        json!(agentflow::START)
    );
    assert_eq!(
        OrderState::from_json(seeded.to_json().unwrap()).unwrap(),
        seeded
    );
    let err = OrderState::from_json(json!({"base": {}})).unwrap_err();
    assert!(matches!(err, StateError::UnknownField { .. }), "{err}");
}

#[test]
fn the_schema_is_the_union_with_the_documents_reducers() {
    let schema = OrderState::schema();
    let names: Vec<&str> = schema.fields.iter().map(|f| f.name).collect();
    assert_eq!(names, OrderState::keys());
    let row = |name: &str| {
        let field = schema.field(name).unwrap();
        (field.reducer, field.scope)
    };
    assert_eq!(
        row("context"),
        ("with = reducers::AddMessages", Scope::Persistent)
    );
    assert_eq!(row("context_summary"), ("replace", Scope::Persistent));
    assert_eq!(row("execution_meta"), ("merge", Scope::Persistent));
    for name in ["order_id", "cart", "confirmed", "discount_code"] {
        assert_eq!(row(name), ("replace", Scope::Persistent), "{name}");
    }
    let md = schema.to_markdown();
    for fragment in [
        "| `context` | `Vec<Message>` | with = reducers::AddMessages | persistent |",
        "| `execution_meta.step` | `u32` | replace | persistent |",
        "| `execution_meta.current_node` | `String` | replace | persistent | `\"__start__\"` |",
        "| `cart` | `Vec<Dict>` | replace | persistent |",
    ] {
        assert!(md.contains(fragment), "missing {fragment}\n{md}");
    }
    let analysis = AnalysisState::schema();
    assert_eq!(
        analysis.field("findings").unwrap().reducer,
        "with = reducers::append_items"
    );
    assert_eq!(analysis.field("current_step").unwrap().reducer, "replace");
    assert_eq!(
        MyState::schema().field("context").unwrap().reducer,
        "with = reducers::replace_messages"
    );
}

// --- Framework nodes and order nodes update one state -------------------------

#[test]
fn a_base_delta_and_an_order_delta_update_one_order_state() {
    let mut state = agentflow::seeded_order();
    // Framework node: written against AgentState only.
    let framework: OrderStateDelta = state
        .base
        .set_current_node("process_order")
        .merge(state.base.advance_step())
        .unwrap()
        .into();
    // Order node: its own fields, and the base's through `.base(...)`.
    let order = OrderState::delta()
        .confirmed(true)
        .discount_code("SAVE10")
        .base(AgentState::delta().context_summary("ordered ABC"));
    assert_eq!(
        serde_json::to_value(&framework).unwrap(),
        json!({"execution_meta": {"current_node": "process_order", "step": 1}})
    );
    assert_eq!(
        order.fields(),
        ["context_summary", "confirmed", "discount_code"]
    );
    state.apply_all([framework, order]).unwrap();
    assert_eq!(state.base.execution_meta().current_node, "process_order");
    assert_eq!(state.base.execution_meta().step, 1);
    assert!(state.confirmed);
    assert_eq!(state.discount_code.as_deref(), Some("SAVE10"));
    assert_eq!(state.base.context_summary.as_deref(), Some("ordered ABC"));
    let base: &AgentState = state.as_ref();
    assert!(base.is_running());

    // The same updates as a dict (JSON), flat keys routed to the base.
    let mut other = agentflow::seeded_order();
    other
        .apply_json(json!({
            "context": [{"type": "ai", "content": "Order placed!", "id": "p"}],
            "confirmed": true,
            "context_summary": "ordered ABC",
        }))
        .unwrap();
    assert_eq!(ids(&other.base.context), ["p"]);
    assert!(other.confirmed);
}

#[test]
fn a_node_returns_messages_a_dict_or_none() {
    let graph = agentflow::order_graph();
    assert_eq!(
        graph.node_names(),
        [
            "apply_discount",
            "process_order",
            "checkout",
            "answer",
            "summarise"
        ]
    );
    let mut state = agentflow::seeded_order();
    state
        .apply(context(vec![user("u", "Process my order")]).into())
        .unwrap();
    assert_eq!(agentflow::apply_discount(&state), Ok(NodeReturn::Nothing));
    let Ok(NodeReturn::Messages(messages)) = agentflow::process_order(&state) else {
        panic!("process_order returns list[Message]")
    };
    assert_eq!(
        texts(&messages),
        ["Order ORD-001: 1 x ABC. Shall I place it?"]
    );
    state
        .apply(context(vec![user("u2", "yes please")]).into())
        .unwrap();
    let Ok(NodeReturn::Dict(dict)) = agentflow::checkout(&state) else {
        panic!("checkout returns a dict")
    };
    assert_eq!(
        dict,
        json!({"context": [{"type": "ai", "content": "Order placed!", "id": "ORD-001-placed"}], "confirmed": true})
    );
    let Ok(NodeReturn::Update(summary)) = agentflow::summarise_node(&state.base) else {
        panic!("summarise returns a dict")
    };
    assert_eq!(summary.fields(), ["context_summary"]);
}

// --- add_messages: AgentFlow's, not LangGraph's -------------------------------

#[test]
fn add_messages_drops_ids_already_in_the_history() {
    let mut state = AgentState::default();
    state
        .apply(context(vec![user("1", "hi"), ai("2", "hello")]))
        .unwrap();
    state
        .apply(context(vec![ai("2", "HELLO (edited)"), user("3", "bye")]))
        .unwrap();
    assert_eq!(ids(&state.context), ["1", "2", "3"]);
    assert_eq!(state.context[1].text(), "hello", "the stored one is kept");

    // The document's example: add_messages([msg1], [msg2, msg1]) == [msg1, msg2].
    let mut list = vec![user("m1", "one")];
    reducers::add_messages(&mut list, vec![ai("m2", "two"), user("m1", "again")]).unwrap();
    assert_eq!(texts(&list), ["one", "two"]);

    // The built-in (LangGraph) add_messages replaces in place instead.
    let mut builtin = vec![user("1", "hi"), ai("2", "hello")];
    state_core::reducer::add_messages(&mut builtin, vec![ai("2", "HELLO (edited)")]).unwrap();
    assert_eq!(builtin[1].text(), "HELLO (edited)");
}

#[test]
fn ids_are_checked_against_the_history_only_and_missing_ids_are_generated() {
    let mut list = Vec::new();
    reducers::add_messages(
        &mut list,
        vec![ai("x", "first"), ai("x", "second"), Message::human("no id")],
    )
    .unwrap();
    assert_eq!(
        texts(&list),
        ["first", "second", "no id"],
        "as AgentFlow: the update is not deduplicated against itself"
    );
    let generated = list[2].id().expect("an id was generated").to_owned();
    assert!(generated.starts_with("msg-"), "{generated}");
    let text = agentflow::text_message("hello", Role::User);
    assert!(text.id().is_some_and(|id| id.starts_with("msg-")));
    assert_ne!(text.id(), Some(generated.as_str()));
    assert_eq!(
        agentflow::text_message("x", Role::Assistant).kind(),
        state_core::MessageKind::Ai
    );
    assert_eq!(
        agentflow::text_message("x", Role::System).kind(),
        state_core::MessageKind::System
    );
    // Two writes in one step apply in order: the second's duplicate is dropped.
    let mut state = AgentState::default();
    state
        .apply_all([
            context(vec![ai("y", "from a")]),
            context(vec![ai("y", "from b"), ai("z", "z")]),
        ])
        .unwrap();
    assert_eq!(texts(&state.context), ["from a", "z"]);
}

#[test]
fn a_removal_is_refused_and_changes_nothing() {
    let mut state = agentflow::seeded_order();
    state.apply(context(vec![user("1", "hi")]).into()).unwrap();
    let before = state.clone();
    let err = state
        .apply(
            OrderState::delta()
                .confirmed(true)
                .base(context(vec![ai("2", "x"), Message::remove("1")])),
        )
        .unwrap_err();
    assert_eq!(err.field(), Some("context"));
    assert!(state_tests::report(&err).contains("no removals"), "{err}");
    assert_eq!(state, before, "all or nothing");
}

#[test]
fn streaming_chunks_are_not_stored() {
    let chunk = agentflow::chunk("Hel", "r1");
    assert!(agentflow::is_chunk(&chunk));
    assert!(!agentflow::is_chunk(&ai("r1", "Hello")));
    assert!(agentflow::is_chunk(&agentflow::as_chunk(Message::ai("x"))));
    let json = serde_json::to_value(&chunk).unwrap();
    assert_eq!(
        json,
        json!({"type": "ai", "content": "Hel", "id": "r1", "delta": true})
    );
    let back: Message = serde_json::from_value(json).unwrap();
    assert!(agentflow::is_chunk(&back));
    // Role-shaped JSON (AgentFlow's own message shape uses `role`) keeps
    // unknown keys under additional_kwargs: still a chunk.
    let role_shaped: Message =
        serde_json::from_value(json!({"role": "assistant", "content": "Hel", "delta": true}))
            .unwrap();
    assert!(agentflow::is_chunk(&role_shaped));
    let not_chunk: Message =
        serde_json::from_value(json!({"role": "assistant", "content": "Hel", "delta": false}))
            .unwrap();
    assert!(!agentflow::is_chunk(&not_chunk));

    // Chunks written one update at a time, then the final message (same id).
    let mut state = AgentState::default();
    state.apply(context(vec![chunk])).unwrap();
    assert!(state.context.is_empty());
    state
        .apply_json(
            json!({"context": [{"type": "ai", "content": "lo", "id": "r1", "delta": true}]}),
        )
        .unwrap();
    assert!(state.context.is_empty());
    state.apply(context(vec![ai("r1", "Hello")])).unwrap();
    assert_eq!(
        texts(&state.context),
        ["Hello"],
        "not dropped as a duplicate"
    );

    // The built-in stores a chunk like any message.
    let mut builtin = Vec::new();
    state_core::reducer::add_messages(&mut builtin, vec![agentflow::chunk("Hel", "r2")]).unwrap();
    assert_eq!(builtin.len(), 1);
}

// --- replace_messages, append_items, replace_value ---------------------------

#[test]
fn replace_messages_is_an_overwrite_of_context() {
    let mut state = agentflow::seeded_order();
    state
        .apply(context(vec![user("1", "a"), ai("2", "b")]).into())
        .unwrap();
    let delta: OrderStateDelta = AgentState::delta()
        .overwrite_context(vec![Message::system("summary").with_id("s")])
        .into();
    assert_eq!(
        serde_json::to_value(&delta).unwrap(),
        json!({"context": {"__overwrite__": [{"type": "system", "content": "summary", "id": "s"}]}})
    );
    state.apply(delta).unwrap();
    assert_eq!(ids(&state.base.context), ["s"]);
    // An overwrite of an id already there is stored: the reducer is bypassed.
    state
        .apply_json(json!({"context": {"__overwrite__": [{"type": "human", "content": "again", "id": "s"}]}}))
        .unwrap();
    assert_eq!(texts(&state.base.context), ["again"]);
    // In one step, the overwrite wins over an add.
    state
        .apply_all([
            context(vec![ai("3", "added")]).into(),
            AgentState::delta()
                .overwrite_context(vec![ai("4", "only")])
                .into(),
        ])
        .unwrap();
    assert_eq!(ids(&state.base.context), ["4"]);

    // MyState: replace_messages as the field's reducer.
    let mut mine = MyState::default();
    mine.apply(MyState::delta().context(vec![user("1", "a"), user("2", "b")]))
        .unwrap();
    mine.apply(MyState::delta().context(vec![user("3", "c")]))
        .unwrap();
    assert_eq!(ids(&mine.context), ["3"]);
    let mut list = vec![user("1", "old")];
    reducers::replace_messages(&mut list, vec![user("2", "new")]);
    assert_eq!(ids(&list), ["2"]);
}

#[test]
fn append_items_drops_ids_already_present() {
    let mut state = AnalysisState::default();
    state
        .apply(
            AnalysisState::delta()
                .findings(vec![Finding::new("f1", "draft"), Finding::new("f2", "new")]),
        )
        .unwrap();
    state
        .apply_json(
            json!({"findings": [{"id": "f1", "text": "revised"}, {"id": "f3", "text": "late"}]}),
        )
        .unwrap();
    assert_eq!(
        state.findings,
        [
            Finding::new("f1", "draft"),
            Finding::new("f2", "new"),
            Finding::new("f3", "late"),
        ]
    );
    // The document's example: append_items([item1], [item2, item1]) == [item1, item2].
    let mut items = vec![Finding::new("1", "one")];
    reducers::append_items(
        &mut items,
        vec![Finding::new("2", "two"), Finding::new("1", "one again")],
    );
    assert_eq!(items, [Finding::new("1", "one"), Finding::new("2", "two")]);
    // The built-in append_by_id updates in place instead.
    let mut builtin = vec![Finding::new("1", "one")];
    state_core::reducer::append_by_id(&mut builtin, vec![Finding::new("1", "one again")]);
    assert_eq!(builtin, [Finding::new("1", "one again")]);
}

/// `replace_value` named as a reducer, to compare with the default.
#[derive(DeriveAgentState, Debug, Clone, PartialEq)]
struct Explicit {
    #[reducer(with = reducers::replace_value)]
    #[default("init")]
    current_step: String,
}

#[test]
fn replace_value_is_the_default_replace() {
    let mut state = AnalysisState::default();
    assert_eq!(state.current_step, "init");
    state
        .apply(AnalysisState::delta().current_step("search"))
        .unwrap();
    state.apply_json(json!({"current_step": "review"})).unwrap();
    assert_eq!(state.current_step, "review");
    let mut value = 1;
    reducers::replace_value(&mut value, 2);
    assert_eq!(value, 2);

    // Two writes in one step: the default refuses, replace_value takes the last.
    let err = state
        .apply_all([
            AnalysisState::delta().current_step("a"),
            AnalysisState::delta().current_step("b"),
        ])
        .unwrap_err();
    assert_eq!(
        err,
        StateError::ConcurrentWrite {
            field: "current_step".into()
        }
    );
    let mut explicit = Explicit::default();
    explicit
        .apply_all([
            Explicit::delta().current_step("a"),
            Explicit::delta().current_step("b"),
        ])
        .unwrap();
    assert_eq!(explicit.current_step, "b");
}

// --- Execution metadata ----------------------------------------------------------

#[test]
fn lifecycle_methods_return_deltas_that_move_the_status() {
    let mut state = OrderState::default();
    let base = &state.base;
    assert!(
        base.is_running(),
        "RUNNING is the initial status, as in AgentFlow"
    );
    assert!(!base.is_interrupted());
    assert!(!base.is_stopped_requested());

    // advance_step and set_current_node.
    let delta = base
        .set_current_node("a")
        .merge(base.advance_step())
        .unwrap();
    state.apply(delta.into()).unwrap();
    let delta = state.base.advance_step();
    assert_eq!(
        serde_json::to_value(&delta).unwrap(),
        json!({"execution_meta": {"step": 2}})
    );
    state.apply(delta.into()).unwrap();
    let meta = state.base.execution_meta();
    assert_eq!((meta.current_node.as_str(), meta.step), ("a", 2));

    // set_interrupt / clear_interrupt.
    let data = json!({"pending_node": "checkout"}).as_object().cloned();
    let delta = state.base.set_interrupt(
        "checkout",
        "approval required",
        ExecutionStatus::Interrupted,
        data.clone(),
    );
    state.apply(delta.into()).unwrap();
    let meta = state.base.execution_meta();
    assert!(state.base.is_interrupted() && !state.base.is_running());
    assert_eq!(meta.interrupt_node.as_deref(), Some("checkout"));
    assert_eq!(meta.interrupt_reason.as_deref(), Some("approval required"));
    assert_eq!(meta.interrupt_data, data);
    assert_eq!(meta.step, 2, "the interrupt leaves the counter alone");
    assert_eq!(
        state.base.request_stop(),
        None,
        "an interrupted thread is not stopped"
    );

    state.apply(state.base.clear_interrupt().into()).unwrap();
    let meta = state.base.execution_meta();
    assert!(state.base.is_running() && !state.base.is_interrupted());
    assert_eq!(
        (
            &meta.interrupt_node,
            &meta.interrupt_reason,
            &meta.interrupt_data
        ),
        (&None, &None, &None)
    );

    // The stop request.
    let stop = state.base.request_stop().expect("running: the flag is set");
    state.apply(stop.into()).unwrap();
    assert!(state.base.is_stopped_requested());
    assert_eq!(
        state.base.execution_meta().stop_current_execution,
        StopRequestStatus::StopRequested
    );

    // complete and error.
    let mut done = state.clone();
    done.apply(done.base.complete().into()).unwrap();
    assert_eq!(
        done.base.execution_meta().status,
        ExecutionStatus::Completed
    );
    assert!(!done.base.is_running());
    assert_eq!(done.base.request_stop(), None);
    let mut failed = state.clone();
    failed.apply(failed.base.error("boom").into()).unwrap();
    let meta = failed.base.execution_meta();
    assert_eq!(
        (meta.status, meta.error.as_deref()),
        (ExecutionStatus::Error, Some("boom"))
    );

    // begin_run: a new run clears the stop flag and the error, keeps the step.
    failed.apply(failed.base.begin_run().into()).unwrap();
    let meta = failed.base.execution_meta();
    assert_eq!(meta.status, ExecutionStatus::Running);
    assert_eq!(meta.stop_current_execution, StopRequestStatus::None);
    assert_eq!(meta.error, None);
    assert_eq!(meta.current_node, agentflow::START);
    assert_eq!(meta.step, 2);
}

#[test]
fn execution_state_is_a_nested_state_merged_field_by_field() {
    let status = |s: ExecutionStatus| serde_json::to_value(s).unwrap();
    assert_eq!(status(ExecutionStatus::Running), json!("running"));
    assert_eq!(status(ExecutionStatus::Interrupted), json!("interrupted"));
    assert_eq!(
        serde_json::to_value(StopRequestStatus::StopRequested).unwrap(),
        json!("stop_requested")
    );
    assert!(ExecutionState::keys().contains(&"stop_current_execution"));
    // Two framework writes to different metadata fields merge in one step;
    // two to the same field conflict.
    let state = AgentState::default();
    let merged = state.set_current_node("x").merge(state.complete()).unwrap();
    assert_eq!(
        serde_json::to_value(&merged).unwrap(),
        json!({"execution_meta": {"current_node": "x", "status": "completed"}})
    );
    let err = state.complete().merge(state.error("e")).unwrap_err();
    assert_eq!(
        err,
        StateError::ConcurrentWrite {
            field: "execution_meta.status".into()
        }
    );
}

// --- The graph: a run, an interrupt, a resume, a stop, an error ------------------

/// The order agent on a memory store.
fn order_agent() -> Agent<OrderState> {
    agentflow::order_graph()
        .compile(Store::memory())
        .expect("the graph compiles")
}

#[tokio::test]
async fn a_run_pauses_before_checkout_and_resumes_from_the_checkpoint() {
    let agent = order_agent();
    let said = agentflow::text_message("Process my order, use code save10", Role::User);
    let first = agent
        .invoke(
            "ORD-001",
            agentflow::order_input(&agentflow::seeded_order(), vec![said]),
        )
        .await
        .unwrap();
    assert_eq!(first.visited, ["apply_discount", "process_order"]);
    let state = &first.state;
    assert!(state.base.is_interrupted() && !state.base.is_running());
    let meta = state.base.execution_meta();
    assert_eq!(meta.step, 2, "one step per node transition");
    assert_eq!(meta.current_node, "process_order");
    assert_eq!(meta.interrupt_node.as_deref(), Some("checkout"));
    assert_eq!(
        meta.interrupt_data,
        json!({"pending_node": "checkout"}).as_object().cloned()
    );
    assert_eq!(state.discount_code.as_deref(), Some("SAVE10"));
    assert_eq!(state.base.context.len(), 2);
    assert!(matches!(
        first.events.last(),
        Some(Event::Paused { node, .. }) if node == "checkout"
    ));

    // Checkpointed in the store, as JSON; a stop request on the paused
    // thread does nothing.
    let store = agent.graph().store().unwrap().clone();
    let stored = store.thread::<OrderState>("ORD-001").await.unwrap();
    assert_eq!(stored.state(), &first.state);
    let restored = OrderState::from_json(stored.state().to_json().unwrap()).unwrap();
    assert_eq!(restored, first.state);
    assert!(!agent.stop("ORD-001").await.unwrap());

    let confirm = agentflow::text_message("Yes, confirm", Role::User);
    let second = agent
        .invoke("ORD-001", agentflow::say(vec![confirm]))
        .await
        .unwrap();
    assert_eq!(second.visited, ["checkout", "answer", "summarise"]);
    let state = &second.state;
    assert!(!state.base.is_stopped_requested());
    let meta = state.base.execution_meta();
    assert_eq!(meta.status, ExecutionStatus::Completed);
    assert_eq!((meta.step, meta.current_node.as_str()), (5, "summarise"));
    assert_eq!(meta.interrupt_node, None);
    assert!(state.confirmed);
    // The answer node streamed three chunks and stored one message.
    let chunks: Vec<&Event> = second
        .events
        .iter()
        .filter(|e| matches!(e, Event::Chunk { node: "answer", .. }))
        .collect();
    assert_eq!(chunks.len(), 3);
    assert!(!state.base.context.iter().any(agentflow::is_chunk));
    assert_eq!(
        texts(&state.base.context)[2..],
        [
            "Yes, confirm",
            "Order placed!",
            "Here is the answer: it ships tomorrow."
        ]
    );
    assert_eq!(
        state.base.context[3].id(),
        Some(agentflow::placed_message_id("ORD-001").as_str())
    );
    assert_eq!(
        state.base.context_summary.as_deref(),
        Some("5 message(s); the user asked: \"Process my order, use code save10\"")
    );

    // A retried checkout's message is dropped; a new run starts from START.
    let mut state = second.state;
    let retry = agentflow::checkout(&state).unwrap();
    let NodeReturn::Dict(dict) = retry else {
        panic!("a dict")
    };
    state.apply_json(dict).unwrap();
    assert_eq!(state.base.context.len(), 5);
    assert_eq!(state.base.context[3].text(), "Order placed!");
}

#[tokio::test]
async fn a_stop_request_during_a_run_halts_before_the_next_node() {
    let agent = order_agent();
    // compiled.stop() as the run starts: apply_discount's superstep records
    // it, and the router ends the run before process_order.
    assert!(agent.stop("ORD-001").await.unwrap());
    let said = agentflow::text_message("Process my order", Role::User);
    let run = agent
        .invoke(
            "ORD-001",
            agentflow::order_input(&agentflow::seeded_order(), vec![said]),
        )
        .await
        .unwrap();
    assert_eq!(run.visited, ["apply_discount"]);
    assert!(run.state.base.is_stopped_requested());
    assert_eq!(run.state.base.execution_meta().step, 1);
    assert!(matches!(
        run.events.last(),
        Some(Event::Halt { reason }) if reason.contains("stop requested")
    ));
    // The next invoke is a new run: the flag is cleared.
    let next = agent.invoke("ORD-001", OrderState::delta()).await.unwrap();
    assert!(!next.state.base.is_stopped_requested());
    assert_eq!(next.visited, ["apply_discount", "process_order"]);
    assert_eq!(next.state.base.execution_meta().step, 3);
}

#[tokio::test]
async fn a_failing_node_is_recorded_with_error() {
    let agent = order_agent();
    let empty = OrderState {
        order_id: Some("ORD-002".into()),
        ..OrderState::default()
    };
    let said = agentflow::text_message("Order please", Role::User);
    let paused = agent
        .invoke("ORD-002", agentflow::order_input(&empty, vec![said]))
        .await
        .unwrap();
    assert!(paused.state.base.is_interrupted());
    let yes = agentflow::text_message("yes", Role::User);
    let run = agent
        .invoke("ORD-002", agentflow::say(vec![yes]))
        .await
        .unwrap();
    assert_eq!(run.visited, ["checkout"]);
    let meta = run.state.base.execution_meta();
    assert_eq!(meta.status, ExecutionStatus::Error);
    assert_eq!(
        meta.error.as_deref(),
        Some("cannot check out an empty cart")
    );
    assert_eq!(meta.current_node, "checkout");
    assert_eq!(meta.interrupt_node, None, "cleared on resume");
    assert!(!run.state.base.is_running());
    assert!(!run.state.confirmed);
}

#[tokio::test]
async fn a_node_return_that_does_not_apply_is_an_error() {
    fn bad(_: &OrderState) -> Result<NodeReturn<OrderStateDelta>, String> {
        Ok(NodeReturn::Dict(json!({"confirmed": true, "cofirmed": 1})))
    }
    let agent = Flow::<OrderState>::new()
        .node("bad", bad)
        .compile(Store::memory())
        .unwrap();
    let err = agent.invoke("t", OrderState::delta()).await.unwrap_err();
    let GraphError::Node { node, source } = err else {
        panic!("a node's error: {err}")
    };
    assert_eq!(node, "bad");
    assert_eq!(
        source.to_string(),
        r#"`OrderState` has no field `cofirmed`; did you mean `confirmed`?"#
    );
}

#[tokio::test]
async fn base_nodes_run_on_any_extension() {
    let agent = Flow::<AnalysisState>::new()
        .base_node("summarise", agentflow::summarise_node)
        .compile(Store::memory())
        .unwrap();
    let said = agentflow::text_message("Analyse the logs", Role::User);
    let run = agent
        .invoke("analysis", agentflow::say(vec![said]))
        .await
        .unwrap();
    assert_eq!(run.visited, ["summarise"]);
    assert_eq!(
        run.state.base.context_summary.as_deref(),
        Some("1 message(s); the user asked: \"Analyse the logs\"")
    );
    assert_eq!(
        run.state.base.execution_meta().status,
        ExecutionStatus::Completed
    );
    assert_eq!(run.state.current_step, "init");
}
