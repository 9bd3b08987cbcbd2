//! A nested state behaves the same whether its field's type is concrete or
//! a type parameter bounded by `State`, and whether it is merged or
//! replaced whole: the same reset, paths, typed access, keys, schema and
//! errors. (Before, a field of type `T: State` was a plain value to all
//! but its reducer.)

use serde_json::json;
use state_core::{AgentState, Delta, State};

/// The nested state.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Inner {
    /// Counted, persistent.
    #[reducer(with = add)]
    pub count: u32,
    /// Reset each turn.
    #[scope(turn)]
    pub scratch: Option<String>,
}

fn add(total: &mut u32, more: u32) {
    *total += more;
}

/// Holds a nested state of a concrete type.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Concrete {
    /// The nested state.
    #[reducer(merge)]
    pub inner: Inner,
}

/// Holds a nested state of any state type.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Generic<T: State + Clone + PartialEq + std::fmt::Debug + 'static> {
    /// The nested state.
    #[reducer(merge)]
    pub inner: T,
}

/// Holds a nested state of a concrete type, replaced whole.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct ConcreteWhole {
    /// The nested state.
    pub inner: Inner,
}

/// Holds a nested state of any state type, replaced whole.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct GenericWhole<T: State + Clone + PartialEq + std::fmt::Debug + 'static> {
    /// The nested state.
    pub inner: T,
}

/// A generic field that is not a state stays a plain value.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Plain<T: state_core::StateField + Default + 'static> {
    /// A plain value of the parameter's type.
    pub value: T,
}

/// Runs `$body` with `$S` each of the four holders (`$merged` only the
/// two that merge).
macro_rules! both {
    ($name:ident, |$s:ident: $S:ident| $body:block) => {
        both!(@ $name, [Concrete, Generic<Inner>, ConcreteWhole, GenericWhole<Inner>], |$s: $S| $body);
    };
    ($name:ident, merged |$s:ident: $S:ident| $body:block) => {
        both!(@ $name, [Concrete, Generic<Inner>], |$s: $S| $body);
    };
    (@ $name:ident, [$($ty:ty),*], |$s:ident: $S:ident| $body:block) => {
        #[test]
        fn $name() {
            $({
                type $S = $ty;
                #[allow(unused_mut)]
                let mut $s = $S::default();
                $body
            })*
        }
    };
}

both!(merge_applies_the_inner_delta, merged |s: S| {
    s.apply_json(json!({"inner": {"count": 2, "scratch": "x"}})).unwrap();
    s.apply_json(json!({"inner": {"count": 3}})).unwrap();
    assert_eq!(s.get("inner.count").unwrap(), json!(5));
    assert_eq!(s.get("inner.scratch").unwrap(), json!("x"));
});

both!(begin_turn_resets_inside, |s: S| {
    s.set("inner", json!({"count": 2, "scratch": "x"})).unwrap();
    s.begin_turn();
    assert_eq!(
        s.get("inner").unwrap(),
        json!({"count": 2, "scratch": null})
    );
});

both!(field_ref_follows_a_dotted_path, |s: S| {
    s.set("inner.count", json!(4)).unwrap();
    assert_eq!(s.field_ref::<u32>("inner.count"), Some(&4));
    *s.field_mut::<u32>("inner.count").unwrap() += 1;
    assert_eq!(s.field_ref::<Inner>("inner").map(|i| i.count), Some(5));
    assert_eq!(
        s.to_json().unwrap(),
        json!({"inner": {"count": 5, "scratch": null}})
    );
    assert!(s.contains_key("inner.scratch"));
    assert!(!s.contains_key("inner.nope"));
});

both!(leaf_keys_go_inside, |s: S| {
    let _ = &s;
    assert_eq!(S::leaf_keys(), ["inner.count", "inner.scratch"]);
});

both!(schema_links_the_nested_schema, |s: S| {
    let _ = &s;
    let field = S::schema().field("inner").unwrap();
    assert_eq!(field.nested().map(|n| n.name), Some("Inner"));
    assert!(S::schema().to_markdown().contains("inner.count"));
});

both!(errors_name_the_inner_path, |s: S| {
    let err = s.set("inner.count", json!(-1)).unwrap_err();
    assert!(err.to_string().contains("inner.count"), "{err}");
    let err = S::from_json(json!({"inner": {"count": -1}})).unwrap_err();
    assert!(err.to_string().contains("inner.count"), "{err}");
});

both!(json_round_trips, |s: S| {
    s.set("inner.scratch", json!("kept")).unwrap();
    let back = S::from_json(s.to_json().unwrap()).unwrap();
    assert_eq!(back, s);
});

both!(delta_errors_name_the_inner_path, merged |s: S| {
    let err = s.apply_json(json!({"inner": {"count": "many"}})).unwrap_err();
    assert!(err.to_string().contains("\"inner.count\""), "{err}");
    let err = s.apply_json(json!({"inner": {"cuont": 1}})).unwrap_err();
    assert!(err.to_string().contains("`inner.cuont`"), "{err}");
    assert_eq!(s, S::default(), "nothing applied");
});

both!(concurrent_inner_writes_name_the_inner_field, merged |s: S| {
    let a = <S as State>::Delta::from_json(json!({"inner": {"scratch": "a"}})).unwrap();
    let b = <S as State>::Delta::from_json(json!({"inner": {"scratch": "b"}})).unwrap();
    let err = s.apply_all([a.clone(), b]).unwrap_err();
    assert!(err.to_string().contains("\"inner.scratch\""), "{err}");
    let folded = a.clone().merge(<S as State>::Delta::from_json(json!({"inner": {"count": 1}})).unwrap());
    assert!(folded.is_ok(), "writes to different inner fields fold");
});

#[test]
fn a_generic_field_that_is_no_state_stays_a_value() {
    type S = Plain<Vec<u8>>;
    let mut s = S::default();
    s.set("value", json!([1, 2])).unwrap();
    assert_eq!(S::leaf_keys(), ["value"]);
    assert!(S::schema().field("value").unwrap().nested().is_none());
    assert_eq!(s.field_ref::<Vec<u8>>("value"), Some(&vec![1, 2]));
    assert_eq!(s.get("value").unwrap(), json!([1, 2]));
    s.begin_turn();
    assert_eq!(s.value, [1, 2], "persistent: kept");
}

/// The fewest bounds: a state that is a field type (no `'static`).
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Minimal<T: State + state_core::StateField> {
    /// The nested state.
    #[reducer(merge)]
    pub inner: T,
    /// Reset each turn.
    #[scope(turn)]
    pub note: Option<String>,
}

#[test]
fn the_fewest_bounds_suffice() {
    let mut s = Minimal::<Inner>::default();
    s.apply(Minimal::<Inner>::delta().inner(Inner::delta().count(2u32)))
        .unwrap();
    assert_eq!(s.get("inner.count").unwrap(), json!(2));
    assert_eq!(
        Minimal::<Inner>::leaf_keys(),
        ["inner.count", "inner.scratch", "note"]
    );
}

/// Another nested state, to tell two instances apart.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Other {
    /// Its one field.
    pub label: String,
}

/// A generic base holding a nested state of its parameter's type.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Slot<T: State + state_core::StateField> {
    /// The nested state.
    #[reducer(merge)]
    pub held: T,
}

/// A generic state that flattens an instance of the generic base, with a
/// field of its parameter's type.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Extended<T: State + state_core::StateField> {
    /// The base.
    #[state(flatten)]
    pub base: Slot<Inner>,
    /// A nested state of the parameter's type.
    pub spare: T,
}

#[test]
fn each_instance_of_a_generic_state_with_a_base_has_its_own_schema() {
    // Asked in this order, the second must not get the first's schema.
    assert_eq!(
        Extended::<Inner>::leaf_keys(),
        ["held.count", "held.scratch", "spare.count", "spare.scratch"]
    );
    assert_eq!(
        Extended::<Other>::leaf_keys(),
        ["held.count", "held.scratch", "spare.label"]
    );
    let spare =
        |schema: &'static state_core::Schema| schema.field("spare").and_then(|f| f.nested());
    assert_eq!(
        spare(Extended::<Other>::schema()).map(|s| s.name),
        Some("Other")
    );
    assert_eq!(
        spare(Extended::<Inner>::schema()).map(|s| s.name),
        Some("Inner")
    );
    assert_eq!(Slot::<Other>::leaf_keys(), ["held.label"]);
    assert!(
        std::ptr::eq(Extended::<Inner>::schema(), Extended::<Inner>::schema()),
        "built once"
    );

    let mut s = Extended::<Inner>::default();
    s.set("held.scratch", json!("x")).unwrap();
    s.set("spare.scratch", json!("y")).unwrap();
    assert_eq!(
        s.field_ref::<Option<String>>("held.scratch"),
        Some(&Some("x".to_owned()))
    );
    s.begin_turn();
    assert_eq!(
        (s.base.held.scratch.clone(), s.spare.scratch.clone()),
        (None, None)
    );
}
