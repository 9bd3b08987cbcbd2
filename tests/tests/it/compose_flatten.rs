//! Inheritance: `#[state(flatten)]` embeds a base state whose fields become
//! the extended state's own, with their reducers and scopes. Ported from
//! AgentFlow (seed 004), where `class OrderState(AgentState)` extends the
//! framework's state.

use serde_json::json;
use state_core::{AgentState, Delta, Message, Messages, Scope, State, StateError};

/// The framework's state, as AgentFlow ships it.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct FrameworkState {
    /// The conversation.
    #[reducer(add_messages)]
    pub messages: Messages,
    /// The node that runs next.
    #[scope(turn)]
    #[default("start")]
    pub current_node: String,
    /// Steps taken in this run.
    pub step: u32,
}

/// An application's state: the framework's fields plus its own.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct OrderState {
    /// Everything the framework keeps.
    #[state(flatten)]
    pub base: FrameworkState,
    /// The order being handled.
    pub order_id: Option<String>,
    /// Items added by the order nodes.
    #[reducer(append)]
    pub items: Vec<String>,
}

/// A third level: an extension of the extension.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct AuditedOrderState {
    /// Reviewer notes.
    #[reducer(append)]
    pub notes: Vec<String>,
    /// The order state below.
    #[state(flatten)]
    pub order: OrderState,
}

/// A framework node, written against the base only.
fn count_step(state: &FrameworkState) -> FrameworkStateDelta {
    FrameworkState::delta()
        .step(state.step + 1)
        .current_node("agent")
}

#[test]
fn base_keys_sit_at_the_top_level() {
    assert_eq!(
        OrderState::keys(),
        ["messages", "current_node", "step", "order_id", "items"]
    );
    assert_eq!(
        AuditedOrderState::keys(),
        [
            "notes",
            "messages",
            "current_node",
            "step",
            "order_id",
            "items"
        ]
    );
    let state = OrderState::default();
    assert_eq!(state.get("current_node").unwrap(), json!("start"));
    assert_eq!(
        state.to_json().unwrap(),
        json!({"messages": [], "current_node": "start", "step": 0, "order_id": null, "items": []})
    );
}

#[test]
fn a_node_written_for_the_base_updates_the_extension() {
    let mut state = OrderState::default();
    let delta: OrderStateDelta = count_step(state.as_ref()).into();
    state.apply(delta.order_id("A-1")).unwrap();
    assert_eq!(state.base.step, 1);
    assert_eq!(state.base.current_node, "agent");
    assert_eq!(state.order_id.as_deref(), Some("A-1"));
    let base: &mut FrameworkState = state.as_mut();
    base.step = 7;
    assert_eq!(state.get("step").unwrap(), json!(7));
    let delta = OrderState::delta()
        .base(FrameworkState::delta().messages(vec![Message::human("hi").with_id("1")]))
        .items(vec!["tea".to_owned()]);
    assert_eq!(delta.fields(), ["messages", "items"]);
    state.apply(delta).unwrap();
    assert_eq!(state.base.messages.len(), 1);
}

#[test]
fn json_deltas_route_base_keys_to_the_base() {
    let mut state = AuditedOrderState::default();
    state
        .apply_json(json!({"messages": ["hello"], "step": 2, "items": ["tea"], "notes": ["ok"]}))
        .unwrap();
    assert_eq!(state.order.base.messages.len(), 1);
    assert_eq!(state.order.base.step, 2);
    assert_eq!(state.order.items, ["tea"]);
    let delta = AuditedOrderState::delta()
        .notes(vec!["n".to_owned()])
        .order(OrderState::delta().base(FrameworkState::delta().step(3)));
    let value = serde_json::to_value(&delta).unwrap();
    assert_eq!(value, json!({"notes": ["n"], "step": 3}));
    let back: AuditedOrderStateDelta = serde_json::from_value(value).unwrap();
    assert_eq!(back, delta);
}

#[test]
fn unknown_keys_suggest_over_the_union_of_keys_and_change_nothing() {
    let mut state = OrderState::default();
    let before = state.clone();
    let err = state
        .apply_json(json!({"items": ["x"], "setp": 1}))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"`OrderState` has no field `setp`; did you mean `step`?"#
    );
    let err = state.get("curent_node").unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"`OrderState` has no field `curent_node`; did you mean `current_node`?"#
    );
    let err = state.apply_json(json!({"step": "two"})).unwrap_err();
    assert_eq!(err.field(), Some("step"));
    assert_eq!(state, before);
}

#[test]
fn state_json_round_trips_flat() {
    let mut state = AuditedOrderState::default();
    state.set("order_id", json!("B-2")).unwrap();
    state.set("step", json!(4)).unwrap();
    let json = state.to_json().unwrap();
    assert_eq!(json["step"], json!(4));
    assert_eq!(AuditedOrderState::from_json(json.clone()).unwrap(), state);
    assert_eq!(serde_json::to_value(&state).unwrap(), json);
    let back: AuditedOrderState = serde_json::from_value(json).unwrap();
    assert_eq!(back, state);
    let err = AuditedOrderState::from_json(json!({"base": {}})).unwrap_err();
    assert!(matches!(err, StateError::UnknownField { .. }), "{err}");
}

#[test]
fn reducers_scopes_and_supersteps_of_the_base_are_intact() {
    let mut state = AuditedOrderState::default();
    state
        .apply_json(json!({"current_node": "tools", "notes": ["a"], "messages": ["hi"]}))
        .unwrap();
    state.begin_turn();
    assert_eq!(
        state.order.base.current_node, "start",
        "turn-scoped base field reset"
    );
    assert_eq!(state.notes, ["a"]);
    assert_eq!(state.order.base.messages.len(), 1);

    let before = state.clone();
    let err = state
        .apply_all([
            AuditedOrderState::delta()
                .order(OrderStateDelta::from(FrameworkState::delta().step(1))),
            AuditedOrderState::delta()
                .order(OrderStateDelta::from(FrameworkState::delta().step(2))),
        ])
        .unwrap_err();
    assert_eq!(
        err,
        StateError::ConcurrentWrite {
            field: "step".into()
        }
    );
    assert_eq!(state, before);

    state
        .apply_all([
            AuditedOrderState::delta().order(OrderState::delta().items(vec!["a".to_owned()])),
            AuditedOrderState::delta().order(OrderState::delta().items(vec!["b".to_owned()])),
        ])
        .unwrap();
    assert_eq!(state.order.items, ["a", "b"]);
    // A failing base reducer rolls back the extension's writes too.
    let err = state
        .apply_json(json!({"notes": ["x"], "messages": [{"type": "remove", "id": "nope"}]}))
        .unwrap_err();
    assert_eq!(err.field(), Some("messages"));
    assert_eq!(state.notes, ["a"]);
}

#[test]
fn schema_and_typed_access_show_the_union() {
    let schema = AuditedOrderState::schema();
    let names = schema.fields.iter().map(|f| f.name).collect::<Vec<_>>();
    assert_eq!(names, AuditedOrderState::keys());
    let node = schema.field("current_node").unwrap();
    assert_eq!((node.reducer, node.scope), ("replace", Scope::Turn));
    assert_eq!(schema.field("messages").unwrap().reducer, "add_messages");
    assert!(schema.to_markdown().contains("| `order_id` |"));
    let mut state = AuditedOrderState::default();
    assert_eq!(state.field_ref::<u32>("step"), Some(&0));
    *state.field_mut::<u32>("step").unwrap() = 5;
    assert_eq!(state.order.base.step, 5);
    assert!(state.contains_key("messages"));
}

/// A generic extension and a generic nested group.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Tagged<T>
where
    T: Clone
        + PartialEq
        + std::fmt::Debug
        + serde::Serialize
        + serde::de::DeserializeOwned
        + 'static,
{
    /// The framework's fields.
    #[state(flatten)]
    pub base: FrameworkState,
    /// Tags of the application's own type.
    #[reducer(append)]
    pub tags: Vec<T>,
    /// A nested group.
    #[reducer(merge)]
    pub group: FrameworkState,
}

#[test]
fn generic_states_flatten_and_nest() {
    let mut state = Tagged::<u8>::default();
    state
        .apply_json(json!({"step": 1, "tags": [1, 2], "group": {"step": 5}}))
        .unwrap();
    assert_eq!(state.base.step, 1);
    assert_eq!(state.tags, [1, 2]);
    assert_eq!(state.group.step, 5);
    assert_eq!(
        Tagged::<u8>::keys(),
        ["messages", "current_node", "step", "tags", "group"]
    );
    assert!(Tagged::<u8>::leaf_keys().contains(&"group.step".to_owned()));
    let delta: TaggedDelta<u8> = FrameworkState::delta().step(2).into();
    state.apply(delta).unwrap();
    assert_eq!(state.get("step").unwrap(), json!(2));
}

/// A base with a JSON Schema.
#[derive(AgentState, Debug, Clone, PartialEq)]
#[state(json_schema)]
pub struct SchemaBase {
    /// Steps taken.
    pub step: u32,
    /// Log lines, appended.
    #[reducer(append)]
    pub log: Vec<String>,
}

/// An extension with a JSON Schema: the base's properties are its own.
#[derive(AgentState, Debug, Clone, PartialEq)]
#[state(json_schema)]
pub struct SchemaExtended {
    /// The base.
    #[state(flatten)]
    pub base: SchemaBase,
    /// The order.
    pub order_id: Option<String>,
}

#[test]
fn json_schema_of_an_extended_state_has_the_base_properties() {
    let state = serde_json::to_value(schemars::schema_for!(SchemaExtended)).unwrap();
    let properties = state["properties"].as_object().unwrap();
    assert_eq!(
        properties.keys().collect::<Vec<_>>(),
        ["order_id", "step", "log"]
    );
    assert_eq!(state["additionalProperties"], json!(false));
    assert_eq!(properties["step"]["description"], json!("Steps taken."));
    let delta = serde_json::to_value(schemars::schema_for!(SchemaExtendedDelta)).unwrap();
    let log = &delta["properties"]["log"]["anyOf"];
    assert_eq!(log[1]["required"], json!(["__overwrite__"]));
    assert!(delta["properties"]["order_id"].is_object());
}

/// `Serialize` and `to_json` walk the field table: a flattened base's
/// fields sit in place, in declaration order, and the two agree.
#[test]
fn serialization_follows_declaration_order_with_bases_in_place() {
    let mut state = Tagged::<u8>::default();
    state
        .apply_json(json!({"step": 3, "tags": [7], "group": {"step": 4}}))
        .unwrap();
    let serialized = serde_json::to_value(&state).unwrap();
    let object = serialized.as_object().unwrap();
    assert_eq!(
        object.keys().map(String::as_str).collect::<Vec<_>>(),
        Tagged::<u8>::keys()
    );
    assert_eq!(serialized, state.to_json().unwrap());
    assert_eq!(serialized["group"]["step"], json!(4));
    // What a store snapshots: the same text, written field by field.
    let mut written = Vec::new();
    state.write_json(&mut written).unwrap();
    assert_eq!(written, serde_json::to_vec(&state).unwrap());
    let back: Tagged<u8> = serde_json::from_value(serialized).unwrap();
    assert_eq!(back, state);
}

/// `Delta::write_json` (what a store logs) writes the text `Serialize`
/// does: a flattened base's writes in place, a nested group's inside it.
#[test]
fn write_json_is_the_serialized_text_with_bases_in_place() {
    let mut delta = TaggedDelta::<u8>::default();
    for write in [
        json!({"step": 3}),
        json!({"tags": [7, 8]}),
        json!({"group": {"step": 4}}),
    ] {
        delta = delta
            .merge(TaggedDelta::<u8>::from_json(write).unwrap())
            .unwrap();
    }
    let mut written = Vec::new();
    delta.write_json(&mut written).unwrap();
    assert_eq!(written, serde_json::to_vec(&delta).unwrap());
    let read: serde_json::Value = serde_json::from_slice(&written).unwrap();
    assert_eq!(read["step"], json!(3));
    assert_eq!(read["group"]["step"], json!(4));
    let mut empty = Vec::new();
    TaggedDelta::<u8>::default().write_json(&mut empty).unwrap();
    assert_eq!(empty, b"{}");
}
