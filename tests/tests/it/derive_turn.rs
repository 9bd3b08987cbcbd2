//! `Default` from `#[default(EXPR)]`, and `begin_turn` with `#[scope(...)]`
//! and the struct-level `#[state(scope = turn)]`.

use state_core::{AgentState, State};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};

const MAX_RETRIES: u8 = 5;

static FRESH_CALLS: AtomicUsize = AtomicUsize::new(0);

/// Counts its calls: a default expression is evaluated at every reset, not
/// evaluated once and cloned.
fn fresh_plan() -> Vec<String> {
    let n = FRESH_CALLS.fetch_add(1, Ordering::SeqCst);
    vec![format!("plan #{n}")]
}

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Chat {
    /// Persistent by default.
    #[reducer(append)]
    pub transcript: Vec<String>,
    /// A string literal goes through `Into` into a String.
    #[scope(turn)]
    #[default("supervisor")]
    pub next: String,
    /// An integer literal is typed by the field.
    #[scope(turn)]
    #[default(3)]
    pub retries: u32,
    /// Turn-scoped without a default: `Default::default()`.
    #[scope(turn)]
    pub error: Option<String>,
    /// Any expression: a constant, a macro, a call.
    #[scope(turn)]
    #[default(MAX_RETRIES)]
    pub max_retries: u8,
    #[scope(persistent)]
    #[default(vec![1, 2])]
    pub kept: Vec<u8>,
    #[scope(turn)]
    #[default(Some("none yet".to_owned()))]
    pub summary: Option<String>,
    #[scope(turn)]
    #[default(fresh_plan())]
    pub plan: Vec<String>,
    /// Any type a `&str` converts into takes a string literal too.
    #[default("static")]
    pub label: Cow<'static, str>,
    #[reducer(merge)]
    #[scope(turn)]
    #[default(BTreeMap::from([("seed".to_owned(), 1)]))]
    pub scratch: BTreeMap<String, i32>,
}

#[test]
fn default_comes_from_the_default_attributes() {
    let state = Chat::default();
    assert_eq!(state.transcript, Vec::<String>::new());
    assert_eq!(state.next, "supervisor");
    assert_eq!(state.retries, 3u32);
    assert_eq!(state.error, None);
    assert_eq!(state.max_retries, MAX_RETRIES);
    assert_eq!(state.kept, [1, 2]);
    assert_eq!(state.summary.as_deref(), Some("none yet"));
    assert_eq!(state.plan.len(), 1);
    assert!(state.plan[0].starts_with("plan #"));
    assert_eq!(state.label, "static");
    assert_eq!(state.scratch, BTreeMap::from([("seed".to_owned(), 1)]));
}

fn dirty() -> Chat {
    let mut state = Chat::default();
    state
        .apply(
            Chat::delta()
                .transcript(vec!["hello".to_owned()])
                .next("tools")
                .retries(0u32)
                .error(Some("boom".to_owned()))
                .max_retries(1u8)
                .kept(vec![9])
                .summary(None)
                .plan(vec!["custom".to_owned()])
                .label("changed")
                .scratch(BTreeMap::from([("k".to_owned(), 2)])),
        )
        .unwrap();
    state
}

#[test]
fn begin_turn_resets_turn_fields_and_keeps_persistent_ones() {
    let mut state = dirty();
    assert_ne!(state.next, "supervisor");
    state.begin_turn();
    // Turn-scoped: back to their defaults.
    assert_eq!(state.next, "supervisor");
    assert_eq!(state.retries, 3);
    assert_eq!(state.error, None);
    assert_eq!(state.max_retries, MAX_RETRIES);
    assert_eq!(state.summary.as_deref(), Some("none yet"));
    assert!(state.plan[0].starts_with("plan #"));
    assert_eq!(state.scratch, BTreeMap::from([("seed".to_owned(), 1)]));
    // Persistent (by default, and explicitly): untouched.
    assert_eq!(state.transcript, ["hello"]);
    assert_eq!(state.kept, [9]);
    assert_eq!(state.label, "changed");
}

#[test]
fn default_expressions_are_evaluated_at_each_reset() {
    let mut state = Chat::default();
    let first = state.plan.clone();
    state.begin_turn();
    let second = state.plan.clone();
    state.begin_turn();
    let third = state.plan.clone();
    assert_ne!(first, second);
    assert_ne!(second, third);
}

#[test]
fn begin_turn_on_a_fresh_state_keeps_it_fresh() {
    let mut state = Chat::default();
    state.begin_turn();
    // `plan` differs by construction (a counter); compare the rest.
    let fresh = Chat {
        plan: state.plan.clone(),
        ..Chat::default()
    };
    assert_eq!(state, fresh);
}

#[test]
fn a_reset_field_reduces_from_its_default_again() {
    let mut state = dirty();
    state.begin_turn();
    state
        .apply(Chat::delta().scratch(BTreeMap::from([("x".to_owned(), 3)])))
        .unwrap();
    assert_eq!(
        state.scratch,
        BTreeMap::from([("seed".to_owned(), 1), ("x".to_owned(), 3)])
    );
}

/// The Alpha Berkeley style: every field resets but the ones marked
/// persistent.
#[derive(AgentState, Debug, Clone, PartialEq)]
#[state(scope = turn)]
pub struct Execution {
    #[default("start")]
    pub task: String,
    pub step: u32,
    #[reducer(append)]
    pub trace: Vec<String>,
    #[scope(persistent)]
    #[reducer(merge)]
    pub context: BTreeMap<String, String>,
    #[scope(persistent)]
    #[default(7)]
    pub budget: u64,
}

#[test]
fn struct_scope_turn_flips_the_default() {
    let mut state = Execution::default();
    assert_eq!((state.task.as_str(), state.budget), ("start", 7));
    state
        .apply(
            Execution::delta()
                .task("plan")
                .step(4u32)
                .trace(vec!["t".to_owned()])
                .context(BTreeMap::from([("user".to_owned(), "ada".to_owned())]))
                .budget(3u64),
        )
        .unwrap();
    state.begin_turn();
    assert_eq!(state.task, "start");
    assert_eq!(state.step, 0);
    assert!(state.trace.is_empty());
    assert_eq!(
        state.context,
        BTreeMap::from([("user".to_owned(), "ada".to_owned())])
    );
    assert_eq!(state.budget, 3);
}

/// `#[state(scope = persistent)]` and the string form `scope = "turn"`.
#[derive(AgentState, Debug, Clone, PartialEq)]
#[state(scope = "turn")]
pub struct StringScope {
    pub a: u8,
    #[scope(persistent)]
    pub b: u8,
}

#[derive(AgentState, Debug, Clone, PartialEq)]
#[state(scope = persistent)]
pub struct ExplicitPersistent {
    pub a: u8,
    #[scope(turn)]
    pub b: u8,
}

#[test]
fn struct_scope_forms() {
    let mut s = StringScope { a: 1, b: 1 };
    s.begin_turn();
    assert_eq!((s.a, s.b), (0, 1));
    let mut p = ExplicitPersistent { a: 1, b: 1 };
    p.begin_turn();
    assert_eq!((p.a, p.b), (1, 0));
}
