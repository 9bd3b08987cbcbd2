//! Custom reducer functions whose update type is not the field's:
//! `#[reducer(with = f, update = U)]` with `fn(&mut T, U)` or
//! `fn(&mut T, U) -> Result<(), E>`. The port is LangGraph's customer-support
//! bot, whose `dialog_state: list[str]` is reduced by
//! `update_dialog_stack(left, right: Optional[str])`: `None` leaves the
//! stack, `"pop"` pops, any other name is pushed.

use serde_json::json;
use state_core::{AgentState, Delta, ReduceError, State, StateError};

/// LangGraph's `update_dialog_stack`.
fn update_dialog_stack(stack: &mut Vec<String>, update: Option<String>) {
    match update.as_deref() {
        None => {}
        Some("pop") => {
            stack.pop();
        }
        Some(_) => stack.extend(update),
    }
}

/// The same, refusing to pop an empty stack; it pops before it looks, so a
/// refused write must not leave its half-done change behind.
fn checked_dialog_stack(stack: &mut Vec<String>, update: Option<String>) -> Result<(), String> {
    if update.as_deref() == Some("pop") && stack.pop().is_none() {
        return Err("nothing to pop: the dialog stack is empty".to_owned());
    }
    update_dialog_stack(stack, update.filter(|name| name != "pop"));
    Ok(())
}

/// The customer-support bot's state (the fields that matter here).
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct SupportState {
    pub user_info: String,
    /// The assistants entered, innermost last.
    #[reducer(with = update_dialog_stack, update = Option<String>)]
    pub dialog_state: Vec<String>,
    #[reducer(with = checked_dialog_stack, update = Option<String>)]
    pub checked_state: Vec<String>,
}

fn s(v: &str) -> String {
    v.to_owned()
}

fn stack(state: &SupportState) -> Vec<&str> {
    state.dialog_state.iter().map(String::as_str).collect()
}

#[test]
fn typed_deltas_push_pop_and_leave_the_stack() {
    let mut state = SupportState::default();
    state
        .apply(SupportState::delta().dialog_state("update_flight"))
        .unwrap();
    state
        .apply(SupportState::delta().dialog_state(s("book_hotel")))
        .unwrap();
    assert_eq!(stack(&state), ["update_flight", "book_hotel"]);
    state
        .apply(SupportState::delta().dialog_state(None::<String>))
        .unwrap();
    assert_eq!(stack(&state), ["update_flight", "book_hotel"]);
    state
        .apply(SupportState::delta().dialog_state("pop"))
        .unwrap();
    assert_eq!(stack(&state), ["update_flight"]);
    // The delta holds the update, not the stack.
    let delta = SupportState::delta().dialog_state("pop");
    assert_eq!(
        delta.get_dialog_state().and_then(|w| w.update()),
        Some(&Some(s("pop")))
    );
}

#[test]
fn json_deltas_decode_the_update_type() {
    let mut state = SupportState::default();
    state
        .apply_json(json!({"dialog_state": "book_car_rental", "user_info": "Ann"}))
        .unwrap();
    state
        .apply_json(json!({"dialog_state": "book_excursion"}))
        .unwrap();
    assert_eq!(stack(&state), ["book_car_rental", "book_excursion"]);
    state.apply_json(json!({"dialog_state": "pop"})).unwrap();
    assert_eq!(stack(&state), ["book_car_rental"]);
    // `null` is the update `None`: the stack stays.
    state.apply_json(json!({"dialog_state": null})).unwrap();
    assert_eq!(stack(&state), ["book_car_rental"]);
    assert_eq!(state.user_info, "Ann");

    let err = state
        .apply_json(json!({"dialog_state": ["a"]}))
        .unwrap_err();
    assert!(
        matches!(&err, StateError::Type { field, .. } if field == "dialog_state"),
        "{err:?}"
    );
    assert_eq!(stack(&state), ["book_car_rental"]);

    // A delta's JSON is its updates.
    let delta = SupportState::delta().dialog_state("pop");
    let json = serde_json::to_value(&delta).unwrap();
    assert_eq!(json, json!({"dialog_state": "pop"}));
    assert_eq!(SupportStateDelta::from_json(json).unwrap(), delta);
    let none = SupportState::delta().dialog_state(None::<String>);
    let json = serde_json::to_value(&none).unwrap();
    assert_eq!(json, json!({"dialog_state": null}));
    assert_eq!(SupportStateDelta::from_json(json).unwrap(), none);
}

#[test]
fn a_superstep_applies_both_writes_in_order() {
    let mut state = SupportState {
        dialog_state: vec![s("assistant")],
        ..SupportState::default()
    };
    state
        .apply_all([
            SupportState::delta().dialog_state("update_flight"),
            SupportState::delta().dialog_state("book_hotel"),
        ])
        .unwrap();
    assert_eq!(stack(&state), ["assistant", "update_flight", "book_hotel"]);

    // Merged, the two writes stay two writes, in order.
    let merged = SupportState::delta()
        .dialog_state("pop")
        .merge(SupportState::delta().dialog_state("book_car_rental"))
        .unwrap();
    let json = serde_json::to_value(&merged).unwrap();
    assert_eq!(
        json,
        json!({"dialog_state": {"__writes__": ["pop", "book_car_rental"]}})
    );
    assert_eq!(SupportStateDelta::from_json(json).unwrap(), merged);
    state.apply(merged).unwrap();
    assert_eq!(
        stack(&state),
        ["assistant", "update_flight", "book_car_rental"]
    );

    // An overwrite takes the field's type and bypasses the function.
    state
        .apply(SupportState::delta().overwrite_dialog_state(vec![s("assistant")]))
        .unwrap();
    assert_eq!(stack(&state), ["assistant"]);
}

#[test]
fn a_fallible_function_leaves_the_state_unchanged_when_it_fails() {
    let mut state = SupportState::default();
    state
        .apply(SupportState::delta().checked_state("book_hotel"))
        .unwrap();
    let before = state.clone();

    // The second pop of the step fails: neither pop, nor the other field's
    // write, is applied.
    let err = state
        .apply_all([
            SupportState::delta().checked_state("pop").user_info("Bo"),
            SupportState::delta().checked_state("pop"),
        ])
        .unwrap_err();
    assert_eq!(
        err,
        StateError::Reduce {
            field: s("checked_state"),
            source: ReduceError::custom(s("nothing to pop: the dialog stack is empty")),
        }
    );
    assert_eq!(state, before);

    let err = state
        .apply_json(json!({"checked_state": {"__writes__": ["pop", "pop"]}}))
        .unwrap_err();
    assert!(matches!(err, StateError::Reduce { .. }), "{err:?}");
    assert_eq!(state, before);

    state
        .apply(SupportState::delta().checked_state("pop"))
        .unwrap();
    assert!(state.checked_state.is_empty());
    state
        .apply(SupportState::delta().checked_state(None::<String>))
        .unwrap();
    assert!(state.checked_state.is_empty());
}

#[test]
fn the_schema_shows_the_function_and_its_update_type() {
    let schema = SupportState::schema();
    let field = schema.field("dialog_state").unwrap();
    assert_eq!(field.ty, "Vec<String>");
    assert_eq!(
        field.reducer,
        "with = update_dialog_stack, update = Option<String>"
    );
    assert!(
        schema.to_markdown().contains(
            "| `dialog_state` | `Vec<String>` | with = update_dialog_stack, update = Option<String> |"
        ),
        "{}",
        schema.to_markdown()
    );
}

/// A function of the field's own type, with a redundant `update =` that
/// names the field type through an alias: still the function itself.
type Names = Vec<String>;

fn extend_names(names: &mut Vec<String>, more: Vec<String>) {
    names.extend(more);
}

fn push_one<T>(list: &mut Vec<T>, item: T) {
    list.push(item);
}

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Spelled<T: state_core::StateField + Default> {
    #[reducer(with = extend_names, update = Names)]
    pub names: Vec<String>,
    /// A generic function of a generic field, its parameter inferred.
    #[reducer(with = push_one, update = T)]
    pub items: Vec<T>,
}

#[test]
fn an_update_type_spelt_otherwise_and_generic_functions_work() {
    let mut state = Spelled::<u8>::default();
    state
        .apply_all([
            Spelled::delta().names(vec![s("a")]).items(1u8),
            Spelled::delta().names(vec![s("b")]).items(2u8),
        ])
        .unwrap();
    assert_eq!(state.names, ["a", "b"]);
    assert_eq!(state.items, [1, 2]);
    state.apply_json(json!({"items": 3})).unwrap();
    assert_eq!(state.items, [1, 2, 3]);
}
