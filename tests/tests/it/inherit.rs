//! A flattened base's public setters (and `overwrite_` setters) are the
//! extension's, by the same names and with no import, for a base from
//! another crate too; a base's delta converts into the extension's.

use serde_json::json;
use state_core::{AgentState, Delta, Message, MessagesState, State};
use state_examples::agentflow::{AgentState as FlowState, AgentStateDelta as FlowDelta};

/// LangGraph's `class State(MessagesState)`, with a base from state-core.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Support {
    #[state(flatten)]
    pub base: MessagesState,
    pub summary: String,
}

/// Two bases, one from another crate of the workspace (AgentFlow's).
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Order {
    #[state(flatten)]
    pub flow: FlowState,
    #[state(flatten)]
    pub chat: MessagesState,
    pub order_id: Option<String>,
}

/// A generic extension.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Tagged<T>
where
    T: Clone + PartialEq + std::fmt::Debug + serde::Serialize + serde::de::DeserializeOwned,
{
    #[state(flatten)]
    pub base: MessagesState,
    #[reducer(append)]
    pub tags: Vec<T>,
}

#[test]
fn inherited_setters_write_the_base() {
    let mut state = Support::default();
    let delta = Support::delta()
        .messages(("user", "hi"))
        .summary("greeting");
    assert_eq!(delta.fields().collect::<Vec<_>>(), ["messages", "summary"]);
    state.apply(delta).unwrap();
    state
        .apply(
            Support::delta()
                .push_messages(("ai", "hello"))
                .push_messages(("user", "bye")),
        )
        .unwrap();
    assert_eq!(state.base.messages.len(), 3);
    assert_eq!(state.summary, "greeting");
    state
        .apply(Support::delta().overwrite_messages([Message::system("trimmed")]))
        .unwrap();
    assert_eq!(state.base.messages.len(), 1);
    assert_eq!(
        state.get("messages").unwrap()[0]["content"],
        json!("trimmed")
    );
}

#[test]
fn a_base_from_another_crate_flattens_with_its_setters() {
    let mut order = Order::default();
    order
        .apply(
            Order::delta()
                .context_summary(Some("so far".to_owned()))
                .messages(("user", "where is my order?"))
                .order_id("o-1"),
        )
        .unwrap();
    // The base's getters are the extension's too.
    let delta = Order::delta()
        .context_summary(Some("s".to_owned()))
        .messages(("user", "hi"));
    assert_eq!(delta.get_context_summary(), Some(&Some("s".to_owned())));
    let written = delta.get_messages().and_then(|w| w.update());
    assert_eq!(written.map(|messages| messages.len()), Some(1));
    assert_eq!(Order::delta().get_messages().map(|_| ()), None);
    assert_eq!(order.flow.context_summary.as_deref(), Some("so far"));
    assert_eq!(order.chat.messages.len(), 1);
    assert_eq!(order.order_id.as_deref(), Some("o-1"));
    assert_eq!(
        Order::keys(),
        [
            "context",
            "context_summary",
            "execution_meta",
            "messages",
            "order_id"
        ]
    );
}

#[test]
fn a_base_delta_converts_into_the_extension_delta() {
    // A node written for a base works in any state that extends it.
    let from_flow: OrderDelta = FlowDelta::default()
        .context_summary(Some("s".into()))
        .into();
    let from_chat: OrderDelta = MessagesState::delta().messages(("ai", "ok")).into();
    let mut order = Order::default();
    order.apply_all([from_flow, from_chat]).unwrap();
    assert_eq!(order.flow.context_summary.as_deref(), Some("s"));
    assert_eq!(order.chat.messages[0].text(), "ok");

    let mut tagged = Tagged::<u8>::default();
    let delta: TaggedDelta<u8> = MessagesState::delta().messages(("user", "x")).into();
    tagged.apply(delta).unwrap();
    tagged
        .apply(Tagged::<u8>::delta().messages(("ai", "y")).tags([1u8, 2]))
        .unwrap();
    assert_eq!(tagged.base.messages.len(), 2);
    assert_eq!(tagged.tags, [1, 2]);

    // The user's own conversion still applies next to the generated one.
    let mut support = Support::default();
    support.apply(String::from("by hand").into()).unwrap();
    assert_eq!(support.summary, "by hand");
}

/// A base wider than the 64 field indices state-core names (`I0`..`I63`).
macro_rules! wide {
    ($($field:ident)*) => {
        // Its 70 setters, and its accessors, are mostly not called.
        #[allow(dead_code)]
        mod wide {
            #[derive(state_core::AgentState, Debug, Clone, PartialEq)]
            pub struct Wide {
                $(pub $field: u32,)*
            }
        }
        use wide::Wide;
    };
}

wide!(f0 f1 f2 f3 f4 f5 f6 f7 f8 f9 f10 f11 f12 f13 f14 f15 f16 f17 f18 f19 f20 f21 f22 f23 f24 f25 f26 f27 f28 f29 f30 f31 f32 f33 f34 f35 f36 f37 f38 f39 f40 f41 f42 f43 f44 f45 f46 f47 f48 f49 f50 f51 f52 f53 f54 f55 f56 f57 f58 f59 f60 f61 f62 f63 f64 f65 f66 f67 f68 f69);

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct OnWide {
    #[state(flatten)]
    pub wide: Wide,
    pub note: String,
}

#[test]
fn every_field_of_a_base_wider_than_the_named_indices_has_its_setter() {
    let mut state = OnWide::default();
    state
        .apply(OnWide::delta().f0(1).f63(63).f64(64).f69(69).note("n"))
        .unwrap();
    assert_eq!(
        (
            state.wide.f0,
            state.wide.f63,
            state.wide.f64,
            state.wide.f69
        ),
        (1, 63, 64, 69)
    );
    assert_eq!(state.note, "n");
}

/// The generated `From` leaves room for the user's own conversions, from a
/// foreign type too.
impl From<String> for SupportDelta {
    fn from(summary: String) -> Self {
        Support::delta().summary(summary)
    }
}

/// Two states written alike, with one name, in two modules of one crate:
/// each is a base of its own.
mod first {
    #[derive(state_core::AgentState, Debug, Clone, PartialEq)]
    pub struct Twin {
        pub x: u32,
    }
}

mod second {
    #[derive(state_core::AgentState, Debug, Clone, PartialEq)]
    pub struct Twin {
        pub x: u32,
    }
}

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct OnFirst {
    #[state(flatten)]
    pub twin: first::Twin,
}

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct OnSecond {
    #[state(flatten)]
    pub twin: second::Twin,
}

#[test]
fn states_written_alike_in_two_modules_are_bases_each() {
    let mut on_first = OnFirst::default();
    on_first.apply(OnFirst::delta().x(1)).unwrap();
    let mut on_second = OnSecond::default();
    on_second.apply(OnSecond::delta().x(2)).unwrap();
    assert_eq!((on_first.twin.x, on_second.twin.x), (1, 2));
}

fn push_or_pop(stack: &mut Vec<String>, update: Option<String>) {
    match update {
        Some(item) => stack.push(item),
        None => {
            stack.pop();
        }
    }
}

/// A base whose setters take each kind of update: the field's own type, a
/// reducer's update (`merge`) and a custom one (`update = U`).
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Dialog {
    #[reducer(with = push_or_pop, update = Option<String>)]
    pub stack: Vec<String>,
    #[reducer(merge)]
    pub scores: std::collections::BTreeMap<String, u32>,
    #[reducer(append)]
    pub log: Vec<String>,
    pub mode: String,
}

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Desk {
    #[state(flatten)]
    pub dialog: Dialog,
    pub desk: u8,
}

#[test]
fn inherited_setters_take_each_kind_of_update() {
    let mut desk = Desk::default();
    desk.apply(
        Desk::delta()
            .stack(Some("book".to_owned()))
            .scores(
                [("a".to_owned(), 1)]
                    .into_iter()
                    .collect::<std::collections::BTreeMap<_, _>>(),
            )
            .log(["one"])
            .mode("triage")
            .desk(3),
    )
    .unwrap();
    desk.apply(Desk::delta().stack(Some("pay".to_owned())))
        .unwrap();
    desk.apply(Desk::delta().stack(None)).unwrap();
    assert_eq!(desk.dialog.stack, ["book"]);
    assert_eq!(desk.dialog.scores["a"], 1);
    assert_eq!(desk.dialog.log, ["one"]);
    assert_eq!(desk.dialog.mode, "triage");
    desk.apply(Desk::delta().overwrite_stack(vec![])).unwrap();
    assert!(desk.dialog.stack.is_empty());
    let delta = Desk::delta().stack(None);
    assert_eq!(delta.get_stack().and_then(|w| w.update()), Some(&None));
}

/// Three levels in one crate, written in three modules: `Top` flattens
/// `Mid`, which flattens `Root`. Each base's setters, getters and
/// `overwrite_` setters are the extension's, at any depth.
mod levels {
    pub mod root {
        #[derive(state_core::AgentState, Debug, Clone, PartialEq)]
        pub struct Root {
            pub topic: String,
            #[reducer(append)]
            pub log: Vec<String>,
        }
    }

    pub mod mid {
        #[derive(state_core::AgentState, Debug, Clone, PartialEq)]
        pub struct Mid {
            #[state(flatten)]
            pub root: super::root::Root,
            #[reducer(merge)]
            pub scores: std::collections::BTreeMap<String, u32>,
        }
    }

    #[derive(state_core::AgentState, Debug, Clone, PartialEq)]
    pub struct Top {
        #[state(flatten)]
        pub mid: mid::Mid,
        pub step: u32,
    }
}

use levels::mid::{Mid, MidDelta};
use levels::root::{Root, RootDelta};
use levels::{Top, TopDelta};

/// A fourth level, and a second base beside it.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Deep {
    #[state(flatten)]
    pub top: Top,
    #[state(flatten)]
    pub chat: MessagesState,
    pub done: bool,
}

#[test]
fn setters_of_a_base_of_a_base_are_the_extensions_at_any_depth() {
    let mut deep = Deep::default();
    deep.apply(
        Deep::delta()
            .topic("tides")
            .log(["asked"])
            .scores(
                [("a".to_owned(), 1)]
                    .into_iter()
                    .collect::<std::collections::BTreeMap<_, _>>(),
            )
            .step(2)
            .messages(("user", "hi"))
            .done(true),
    )
    .unwrap();
    deep.apply(Deep::delta().push_log("answered")).unwrap();
    let root = &deep.top.mid.root;
    assert_eq!(
        (root.topic.as_str(), root.log.clone()),
        ("tides", vec!["asked".to_owned(), "answered".to_owned()])
    );
    assert_eq!(deep.top.mid.scores["a"], 1);
    assert_eq!(
        (deep.top.step, deep.chat.messages.len(), deep.done),
        (2, 1, true)
    );

    // `overwrite_` and the getters, three levels down.
    deep.apply(Deep::delta().overwrite_log(vec!["reset".to_owned()]))
        .unwrap();
    assert_eq!(deep.top.mid.root.log, ["reset"]);
    let delta = Deep::delta().topic("waves").log(["x"]);
    assert_eq!(delta.get_topic().map(String::as_str), Some("waves"));
    assert_eq!(
        delta.get_log().and_then(|w| w.update()).map(Vec::len),
        Some(1)
    );
    assert_eq!(Deep::delta().get_topic(), None);

    // The same setters on the middle levels' deltas.
    let mut top = Top::default();
    top.apply(Top::delta().topic("t").step(1)).unwrap();
    assert_eq!((top.mid.root.topic.as_str(), top.step), ("t", 1));
    assert_eq!(
        Deep::keys(),
        ["topic", "log", "scores", "step", "messages", "done"]
    );
}

#[test]
fn a_delta_of_a_base_of_a_base_converts_into_the_extensions() {
    // A node written for `Root` works in a state that extends it two or
    // three levels up.
    let from_root: DeepDelta = Root::delta().topic("r").log(["1"]).into();
    let from_mid: DeepDelta = MidDelta::default().log(["2"]).into();
    let from_top: DeepDelta = TopDelta::default().step(3).into();
    let from_chat: DeepDelta = MessagesState::delta().messages(("ai", "ok")).into();
    let mut deep = Deep::default();
    deep.apply_all([from_root, from_mid, from_top, from_chat])
        .unwrap();
    assert_eq!(deep.top.mid.root.topic, "r");
    assert_eq!(deep.top.mid.root.log, ["1", "2"]);
    assert_eq!(deep.top.step, 3);
    assert_eq!(deep.chat.messages.len(), 1);
    let into_top: TopDelta = RootDelta::default().topic("t").into();
    let mut top = Top::default();
    top.apply(into_top).unwrap();
    assert_eq!(top.mid.root.topic, "t");
    let _: &Mid = &top.mid;
}

/// Depth across three crates: state-core's `MessagesState`, flattened by
/// the examples' `SummaryState`, flattened here; and AgentFlow's
/// `AgentState`, flattened by its `OrderState`, flattened here.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Audited {
    #[state(flatten)]
    pub bot: state_examples::langgraph::summary_bot::SummaryState,
    #[state(flatten)]
    pub order: state_examples::agentflow::OrderState,
    pub auditor: String,
}

#[test]
fn bases_of_bases_from_other_crates_give_their_setters() {
    let mut audited = Audited::default();
    audited
        .apply(
            Audited::delta()
                .messages(("user", "where is my order?"))
                .summary("asked about an order")
                .context_summary(Some("so far".to_owned()))
                .order_id("o-7")
                .auditor("ann"),
        )
        .unwrap();
    assert_eq!(audited.bot.base.messages.len(), 1);
    assert_eq!(audited.bot.summary, "asked about an order");
    assert_eq!(
        audited.order.base.context_summary.as_deref(),
        Some("so far")
    );
    assert_eq!(audited.order.order_id.as_deref(), Some("o-7"));
    let from_chat: AuditedDelta = MessagesState::delta().messages(("ai", "shipped")).into();
    let from_flow: AuditedDelta = FlowDelta::default().context_summary(None).into();
    audited.apply_all([from_chat, from_flow]).unwrap();
    assert_eq!(audited.bot.base.messages.len(), 2);
    assert_eq!(audited.order.base.context_summary, None);
}

/// A generic extension of a base of a base.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct TaggedTop<T>
where
    T: Clone + PartialEq + std::fmt::Debug + serde::Serialize + serde::de::DeserializeOwned,
{
    #[state(flatten)]
    pub top: Top,
    #[reducer(append)]
    pub tags: Vec<T>,
}

#[test]
fn a_generic_extension_inherits_at_any_depth() {
    let mut tagged = TaggedTop::<u8>::default();
    tagged
        .apply(TaggedTop::<u8>::delta().topic("g").tags([7u8]))
        .unwrap();
    let from_root: TaggedTopDelta<u8> = Root::delta().log(["l"]).into();
    tagged.apply(from_root).unwrap();
    assert_eq!(tagged.top.mid.root.topic, "g");
    assert_eq!(tagged.top.mid.root.log, ["l"]);
    assert_eq!(tagged.tags, [7]);
}

/// A generic base: its setters are the extension's, with the types of
/// the instance flattened.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Slot<T>
where
    T: Clone + PartialEq + std::fmt::Debug + serde::Serialize + serde::de::DeserializeOwned,
{
    pub item: Option<T>,
    #[reducer(append)]
    pub history: Vec<T>,
}

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct OnSlot {
    #[state(flatten)]
    pub slot: Slot<u8>,
    pub label: String,
}

/// And one level up.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct OnOnSlot {
    #[state(flatten)]
    pub on: OnSlot,
}

#[test]
fn a_generic_base_gives_its_setters_for_the_instance_flattened() {
    let mut state = OnSlot::default();
    state
        .apply(OnSlot::delta().item(Some(3)).history([1u8, 2]).label("l"))
        .unwrap();
    assert_eq!(
        (state.slot.item, state.slot.history.clone()),
        (Some(3), vec![1, 2])
    );
    state
        .apply(OnSlot::delta().overwrite_history(vec![9]))
        .unwrap();
    assert_eq!(state.slot.history, [9]);
    let from_slot: OnSlotDelta = Slot::<u8>::delta().item(None).into();
    state.apply(from_slot).unwrap();
    assert_eq!(state.slot.item, None);
    assert_eq!(OnSlot::keys(), ["item", "history", "label"]);

    let mut top = OnOnSlot::default();
    let from_slot: OnOnSlotDelta = Slot::<u8>::delta().history([5u8]).into();
    top.apply_all([OnOnSlot::delta().item(Some(1)).label("t"), from_slot])
        .unwrap();
    assert_eq!(top.on.slot.item, Some(1));
    assert_eq!(top.on.slot.history, [5]);
}
