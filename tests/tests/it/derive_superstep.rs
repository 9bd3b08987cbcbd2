//! `State::apply_all` (one LangGraph superstep) and `Delta::merge`: parallel
//! writes reduce in order, a `replace` field written twice is a conflict, an
//! overwrite wins over the other writes of its step, and merging two deltas
//! has the effect of applying both in one step.

use proptest::prelude::*;
use state_core::reducer::{Fold, Reducer};
use state_core::{AgentState, Delta, ReduceError, State, StateError};
use std::collections::BTreeMap;

/// Order-dependent and not foldable: the runtime must keep both writes.
fn concat(text: &mut String, more: String) {
    text.push_str(&more);
}

const COUNTER_MAX: u32 = 100;

/// Fallible, not foldable.
fn bounded_add(counter: &mut u32, n: u32) -> Result<(), String> {
    let next = *counter + n;
    if next > COUNTER_MAX {
        return Err(format!("{next} is over {COUNTER_MAX}"));
    }
    *counter = next;
    Ok(())
}

/// Folds two writes into one when the sum fits in the update type.
pub struct Total;

impl Reducer<u64> for Total {
    type Update = u16;

    fn apply(&self, target: &mut u64, update: u16) {
        *target += u64::from(update);
    }

    fn fold(&self, first: u16, second: u16) -> Fold<u16> {
        match first.checked_add(second) {
            Some(sum) => Fold::One(sum),
            None => Fold::Both(first, second),
        }
    }
}

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Step {
    pub next: String,
    pub note: Option<String>,
    #[reducer(append)]
    pub items: Vec<u32>,
    #[reducer(merge)]
    pub meta: BTreeMap<String, u32>,
    #[reducer(with = concat)]
    pub text: String,
    #[reducer(with = bounded_add)]
    pub counter: u32,
    #[reducer(with = Total, update = u16)]
    pub total: u64,
}

fn s(v: &str) -> String {
    v.to_owned()
}

fn meta(pairs: &[(&str, u32)]) -> BTreeMap<String, u32> {
    pairs.iter().map(|(k, v)| (s(k), *v)).collect()
}

fn start() -> Step {
    Step {
        next: s("start"),
        note: Some(s("n0")),
        items: vec![0],
        meta: meta(&[("k", 0)]),
        text: s(">"),
        counter: 1,
        total: 1,
    }
}

#[test]
fn reducer_fields_reduce_every_write_in_order() {
    let mut state = start();
    state
        .apply_all([
            Step::delta()
                .items(vec![1, 2])
                .meta(meta(&[("k", 1), ("a", 1)]))
                .text("a")
                .counter(10u32)
                .total(2u16),
            Step::delta()
                .items(vec![3])
                .meta(meta(&[("k", 2), ("b", 2)]))
                .text("b")
                .counter(20u32)
                .total(3u16),
        ])
        .unwrap();
    assert_eq!(state.items, [0, 1, 2, 3]);
    assert_eq!(state.meta, meta(&[("k", 2), ("a", 1), ("b", 2)]));
    assert_eq!(state.text, ">ab");
    assert_eq!(state.counter, 31);
    assert_eq!(state.total, 6);
    // The order of the deltas is the order of the writes.
    let mut reversed = start();
    reversed
        .apply_all([Step::delta().text("b"), Step::delta().text("a")])
        .unwrap();
    assert_eq!(reversed.text, ">ba");
}

#[test]
fn apply_all_of_one_delta_is_apply() {
    let delta = Step::delta().next("x").items(vec![1]).text("t");
    let mut one = start();
    one.apply(delta.clone()).unwrap();
    let mut all = start();
    all.apply_all([delta]).unwrap();
    assert_eq!(one, all);
}

#[test]
fn apply_all_of_nothing_changes_nothing() {
    let mut state = start();
    state.apply_all(Vec::<StepDelta>::new()).unwrap();
    state.apply_all([Step::delta(), Step::delta()]).unwrap();
    assert_eq!(state, start());
}

#[test]
fn two_writes_to_a_replace_field_conflict_even_when_equal() {
    for (a, b) in [("same", "same"), ("a", "b")] {
        let mut state = start();
        let err = state
            .apply_all([
                Step::delta().next(a).items(vec![1]),
                Step::delta().next(b).text("t"),
            ])
            .unwrap_err();
        assert_eq!(err, StateError::ConcurrentWrite { field: s("next") });
        assert_eq!(err.field(), Some("next"));
        assert_eq!(
            err.to_string(),
            r#"concurrent writes to "next" in one step; give the field a reducer"#
        );
        assert_eq!(state, start(), "nothing of the failed step is applied");
    }
}

#[test]
fn an_option_field_written_none_twice_conflicts() {
    let mut state = start();
    let err = state
        .apply_all([Step::delta().note(None), Step::delta().note(None)])
        .unwrap_err();
    assert_eq!(err, StateError::ConcurrentWrite { field: s("note") });
    assert_eq!(state, start());
}

#[test]
fn one_writer_of_a_replace_field_among_others_is_fine() {
    let mut state = start();
    state
        .apply_all([
            Step::delta().items(vec![1]),
            Step::delta().next("only"),
            Step::delta(),
            Step::delta().items(vec![2]),
        ])
        .unwrap();
    assert_eq!(state.next, "only");
    assert_eq!(state.items, [0, 1, 2]);
    // Sequential steps may write the field again.
    state.apply_all([Step::delta().next("again")]).unwrap();
    assert_eq!(state.next, "again");
}

#[test]
fn an_overwrite_wins_over_the_writes_before_and_after_it() {
    let mut state = start();
    state
        .apply_all([
            Step::delta().items(vec![1]).text("a"),
            Step::delta().overwrite_items(vec![9]).overwrite_text("X"),
            Step::delta().items(vec![2]).text("b"),
        ])
        .unwrap();
    assert_eq!(state.items, [9]);
    assert_eq!(state.text, "X");
    // Other fields of the same step reduce normally.
    let mut state = start();
    state
        .apply_all([
            Step::delta()
                .overwrite_meta(meta(&[("only", 1)]))
                .total(2u16),
            Step::delta().meta(meta(&[("lost", 1)])).total(3u16),
        ])
        .unwrap();
    assert_eq!(state.meta, meta(&[("only", 1)]));
    assert_eq!(state.total, 6);
}

#[test]
fn an_overwrite_hides_a_plain_write_that_would_fail() {
    // The refused write is lost to the overwrite either way, so the step
    // succeeds in both orders. LangGraph differs when the plain write comes
    // first: it folds that write before meeting the overwrite, so its error
    // (or a missing-id removal, for messages) fails the step. `merge` never
    // sees the field's current value, so it drops the write unchecked.
    for order in [0, 1] {
        let failing = Step::delta().counter(COUNTER_MAX + 1);
        let overwrite = Step::delta().overwrite_counter(5u32);
        let deltas = if order == 0 {
            [failing, overwrite]
        } else {
            [overwrite, failing]
        };
        let mut state = start();
        state.apply_all(deltas).unwrap();
        assert_eq!(state.counter, 5);
    }
}

#[test]
fn two_overwrites_of_one_field_conflict() {
    let mut state = start();
    let err = state
        .apply_all([
            Step::delta().overwrite_items(vec![1]).next("x"),
            Step::delta().items(vec![2]),
            Step::delta().overwrite_items(vec![1]),
        ])
        .unwrap_err();
    assert_eq!(err, StateError::ConcurrentOverwrite { field: s("items") });
    assert_eq!(err.field(), Some("items"));
    assert!(err.to_string().contains(r#""items""#), "{err}");
    assert_eq!(state, start());
}

#[test]
fn merge_reports_the_same_conflicts() {
    let err = Step::delta()
        .next("a")
        .merge(Step::delta().next("a"))
        .unwrap_err();
    assert_eq!(err, StateError::ConcurrentWrite { field: s("next") });
    let err = Step::delta()
        .overwrite_meta(BTreeMap::new())
        .merge(Step::delta().overwrite_meta(BTreeMap::new()))
        .unwrap_err();
    assert_eq!(err, StateError::ConcurrentOverwrite { field: s("meta") });
}

#[test]
fn merged_fields_and_emptiness() {
    let a = Step::delta().text("a").items(vec![1]);
    let b = Step::delta().next("n").overwrite_counter(3u32);
    let merged = a.merge(b).unwrap();
    assert_eq!(merged.fields(), ["next", "items", "text", "counter"]);
    assert!(!merged.is_empty());
    let empty = Step::delta().merge(Step::delta()).unwrap();
    assert!(empty.is_empty());
    assert_eq!(empty, Step::delta());
}

#[test]
fn an_unfoldable_merge_keeps_both_writes() {
    let merged = Step::delta()
        .text("a")
        .counter(1u32)
        .merge(Step::delta().text("b").counter(2u32))
        .unwrap();
    let mut state = start();
    state.apply(merged.clone()).unwrap();
    assert_eq!(state.text, ">ab");
    assert_eq!(state.counter, 4);
    // Both writes are kept apart, in JSON as a list of writes.
    let json = serde_json::to_value(&merged).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"text": {"__writes__": ["a", "b"]}, "counter": {"__writes__": [1, 2]}})
    );
    assert_eq!(StepDelta::from_json(json).unwrap(), merged);
    // A foldable field folds into one write, which serializes.
    let folded = Step::delta()
        .items(vec![1])
        .total(2u16)
        .merge(Step::delta().items(vec![2]).total(3u16))
        .unwrap();
    assert_eq!(
        serde_json::to_value(&folded).unwrap(),
        serde_json::json!({"items": [1, 2], "total": 5})
    );
    // A fold that does not fit keeps both (u16 overflow).
    let kept = Step::delta()
        .total(u16::MAX)
        .merge(Step::delta().total(1u16))
        .unwrap();
    assert_eq!(
        serde_json::to_value(&kept).unwrap(),
        serde_json::json!({"total": {"__writes__": [u16::MAX, 1]}})
    );
    let mut state = start();
    state.apply(kept).unwrap();
    assert_eq!(state.total, 1 + u64::from(u16::MAX) + 1);
}

/// Pairs (and a triple) of deltas: merging has the effect of `apply_all`.
#[test]
fn merge_has_the_effect_of_apply_all_on_examples() {
    let pairs: Vec<(StepDelta, StepDelta)> = vec![
        (Step::delta().items(vec![1]), Step::delta().items(vec![2])),
        (Step::delta().text("a"), Step::delta().text("b")),
        (Step::delta().counter(50u32), Step::delta().counter(60u32)),
        (Step::delta().next("a"), Step::delta().next("b")),
        (Step::delta().next("a"), Step::delta().items(vec![1])),
        (
            Step::delta().overwrite_text("o"),
            Step::delta().text("lost"),
        ),
        (
            Step::delta().text("lost"),
            Step::delta().overwrite_text("o"),
        ),
        (
            Step::delta().overwrite_items(vec![]),
            Step::delta().overwrite_items(vec![]),
        ),
        (
            Step::delta().meta(meta(&[("k", 1)])).total(u16::MAX),
            Step::delta().meta(meta(&[("k", 2)])).total(1u16),
        ),
        (Step::delta().note(None), Step::delta().text("x")),
    ];
    for (a, b) in pairs {
        let mut via_all = start();
        let all = via_all.apply_all([a.clone(), b.clone()]);
        let mut via_merge = start();
        let merged = a.clone().merge(b.clone()).and_then(|m| via_merge.apply(m));
        assert_eq!(all, merged, "{a:?} + {b:?}");
        assert_eq!(via_all, via_merge, "{a:?} + {b:?}");
    }
}

// ---------------------------------------------------------------------------
// Property: apply_all, merge and a reference model of LangGraph's superstep
// agree on random deltas.
// ---------------------------------------------------------------------------

#[derive(Debug, Clone)]
enum Write<T> {
    Plain(T),
    Overwrite(T),
}

#[derive(Debug, Clone, Default)]
struct Spec {
    next: Option<String>,
    note: Option<Option<String>>,
    items: Option<Write<Vec<u32>>>,
    meta: Option<Write<BTreeMap<String, u32>>>,
    text: Option<Write<String>>,
    counter: Option<Write<u32>>,
    total: Option<Write<u16>>,
}

impl Spec {
    fn delta(&self) -> StepDelta {
        let mut d = Step::delta();
        if let Some(v) = &self.next {
            d = d.next(v.clone());
        }
        if let Some(v) = &self.note {
            d = d.note(v.clone());
        }
        macro_rules! reduced {
            ($field:ident, $overwrite:ident) => {
                match self.$field.clone() {
                    Some(Write::Plain(v)) => d = d.$field(v),
                    Some(Write::Overwrite(v)) => d = d.$overwrite(v),
                    None => {}
                }
            };
        }
        reduced!(items, overwrite_items);
        reduced!(meta, overwrite_meta);
        reduced!(text, overwrite_text);
        reduced!(counter, overwrite_counter);
        match self.total {
            Some(Write::Plain(v)) => d = d.total(v),
            Some(Write::Overwrite(v)) => d = d.overwrite_total(u64::from(v)),
            None => {}
        }
        d
    }
}

fn is_plain<T>(w: &Option<Write<T>>) -> bool {
    matches!(w, Some(Write::Plain(_)))
}

fn write<T: std::fmt::Debug + Clone + 'static>(
    value: impl Strategy<Value = T> + Clone + 'static,
) -> impl Strategy<Value = Option<Write<T>>> {
    prop_oneof![
        4 => Just(None),
        3 => value.clone().prop_map(|v| Some(Write::Plain(v))),
        1 => value.prop_map(|v| Some(Write::Overwrite(v))),
    ]
}

fn spec() -> impl Strategy<Value = Spec> {
    let word = prop::sample::select(vec!["a", "b", "c"]).prop_map(s);
    (
        prop::option::weighted(0.3, word.clone()),
        prop::option::weighted(0.3, prop::option::of(word.clone())),
        write(prop::collection::vec(0..10u32, 0..3)),
        write(prop::collection::btree_map(word.clone(), 0..5u32, 0..3)),
        write(word),
        write(0..70u32),
        write(prop_oneof![0..10u16, (u16::MAX - 5)..=u16::MAX]),
    )
        .prop_map(|(next, note, items, meta, text, counter, total)| Spec {
            next,
            note,
            items,
            meta,
            text,
            counter,
            total,
        })
}

/// What LangGraph does with one key's writes in a step, for a reducer
/// channel: fold plain writes in order; an overwrite wins; two overwrites
/// are an error. `Err(None)` is a conflict, `Err(Some(e))` a reducer error.
fn reference_reduce<T: Clone, U: Clone>(
    current: &T,
    writes: &[Write<U>],
    to_field: impl Fn(U) -> T,
    reduce: impl Fn(&mut T, U) -> Result<(), String>,
) -> Result<T, Option<String>> {
    let overwrites: Vec<&U> = writes
        .iter()
        .filter_map(|w| match w {
            Write::Overwrite(v) => Some(v),
            Write::Plain(_) => None,
        })
        .collect();
    match overwrites.as_slice() {
        [] => {}
        [one] => return Ok(to_field((*one).clone())),
        _ => return Err(None),
    }
    let mut value = current.clone();
    for w in writes {
        if let Write::Plain(u) = w {
            reduce(&mut value, u.clone()).map_err(Some)?;
        }
    }
    Ok(value)
}

/// The outcome the model predicts: the new state, or the errors that may be
/// reported (conflicts are found before any reducer runs).
fn reference(initial: &Step, specs: &[Spec]) -> Result<Step, Vec<StateError>> {
    let mut conflicts = Vec::new();
    let mut refusals = Vec::new();
    let mut out = initial.clone();

    let nexts: Vec<_> = specs.iter().filter_map(|s| s.next.clone()).collect();
    match nexts.as_slice() {
        [] => {}
        [one] => out.next = one.clone(),
        _ => conflicts.push(StateError::ConcurrentWrite { field: s("next") }),
    }
    let notes: Vec<_> = specs.iter().filter_map(|s| s.note.clone()).collect();
    match notes.as_slice() {
        [] => {}
        [one] => out.note = one.clone(),
        _ => conflicts.push(StateError::ConcurrentWrite { field: s("note") }),
    }

    macro_rules! reduced {
        ($field:ident, $to_field:expr, $reduce:expr) => {{
            let writes: Vec<_> = specs.iter().filter_map(|s| s.$field.clone()).collect();
            match reference_reduce(&initial.$field, &writes, $to_field, $reduce) {
                Ok(v) => out.$field = v,
                Err(None) => conflicts.push(StateError::ConcurrentOverwrite {
                    field: s(stringify!($field)),
                }),
                Err(Some(msg)) => refusals.push(StateError::Reduce {
                    field: s(stringify!($field)),
                    source: ReduceError::custom(msg),
                }),
            }
        }};
    }
    reduced!(items, |v| v, |t: &mut Vec<u32>, u| {
        t.extend(u);
        Ok(())
    });
    reduced!(meta, |v| v, |t: &mut BTreeMap<String, u32>, u| {
        t.extend(u);
        Ok(())
    });
    reduced!(text, |v| v, |t: &mut String, u: String| {
        t.push_str(&u);
        Ok(())
    });
    reduced!(counter, |v| v, bounded_add);
    reduced!(total, u64::from, |t: &mut u64, u: u16| {
        *t += u64::from(u);
        Ok(())
    });

    if !conflicts.is_empty() {
        Err(conflicts)
    } else if !refusals.is_empty() {
        Err(refusals)
    } else {
        Ok(out)
    }
}

fn check_outcome(
    what: &str,
    initial: &Step,
    state: &Step,
    result: Result<(), StateError>,
    expected: &Result<Step, Vec<StateError>>,
) -> Result<(), TestCaseError> {
    match (result, expected) {
        (Ok(()), Ok(want)) => prop_assert_eq!(state, want, "{}", what),
        (Err(got), Err(allowed)) => {
            prop_assert!(
                allowed.contains(&got),
                "{}: error {:?} not among {:?}",
                what,
                got,
                allowed
            );
            prop_assert_eq!(state, initial, "{}: a failed step changes nothing", what);
        }
        (got, want) => prop_assert!(false, "{}: got {:?}, expected {:?}", what, got, want),
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn apply_all_and_merge_match_the_reference_model(
        counter in 0..60u32,
        specs in prop::collection::vec(spec(), 0..4),
    ) {
        let initial = Step { counter, ..start() };
        let expected = reference(&initial, &specs);
        let deltas: Vec<StepDelta> = specs.iter().map(Spec::delta).collect();

        // apply_all over the deltas, in order.
        let mut via_all = initial.clone();
        let result = via_all.apply_all(deltas.clone());
        check_outcome("apply_all", &initial, &via_all, result, &expected)?;

        // Left fold of merge, then one apply.
        let mut via_left = initial.clone();
        let result = deltas
            .iter()
            .cloned()
            .try_fold(Step::delta(), |acc, d| acc.merge(d))
            .and_then(|m| via_left.apply(m));
        check_outcome("merge (left fold)", &initial, &via_left, result, &expected)?;

        // Right fold of merge: merge is associative in effect.
        let mut via_right = initial.clone();
        let result = deltas
            .iter()
            .cloned()
            .rev()
            .try_fold(Step::delta(), |acc, d| d.merge(acc))
            .and_then(|m| via_right.apply(m));
        check_outcome("merge (right fold)", &initial, &via_right, result, &expected)?;
    }

    /// A merged delta without unfoldable writes survives a JSON round trip
    /// and still has the same effect.
    #[test]
    fn merged_deltas_round_trip_through_json_when_they_can(
        specs in prop::collection::vec(spec(), 0..3),
    ) {
        let Ok(merged) = specs
            .iter()
            .map(Spec::delta)
            .try_fold(Step::delta(), |acc, d| acc.merge(d))
        else {
            return Ok(());
        };
        let Ok(json) = serde_json::to_value(&merged) else {
            // Only a field whose reducer cannot fold may hold several writes.
            let text = specs.iter().filter(|s| is_plain(&s.text)).count();
            let counter = specs.iter().filter(|s| is_plain(&s.counter)).count();
            let total = specs.iter().filter(|s| is_plain(&s.total)).count();
            prop_assert!(
                text > 1 || counter > 1 || total > 1,
                "serialization failed though no field holds two writes: {:?}",
                merged
            );
            return Ok(());
        };
        let back: StepDelta = serde_json::from_value(json.clone()).unwrap();
        prop_assert_eq!(&back, &merged, "{}", json);
    }
}

#[test]
fn with_several_errors_the_first_field_in_declaration_order_is_reported() {
    // `next` and `counter` both conflict; `next` is declared first.
    let one = Step::delta().next("a").counter(1u32).items(vec![1]);
    let two = Step::delta()
        .next("b")
        .overwrite_counter(2u32)
        .items(vec![2]);
    let three = Step::delta().overwrite_counter(3u32);
    let merged = one.clone().merge(two.clone()).unwrap_err();
    assert_eq!(
        merged,
        StateError::ConcurrentWrite {
            field: "next".into()
        }
    );
    // Without `next`'s conflict, `counter`'s two overwrites are the first.
    let err = two.merge(three).unwrap_err();
    assert_eq!(
        err,
        StateError::ConcurrentOverwrite {
            field: "counter".into()
        }
    );

    // `apply` and `check` stage the reducer fields in declaration order:
    // `counter` refuses before `total` is reached, and nothing changes.
    let mut state = start();
    let before = state.clone();
    let refused = Step::delta()
        .items(vec![7])
        .counter(COUNTER_MAX + 1)
        .total(1u16)
        .next("moved");
    let err = state.check(refused.clone()).unwrap_err();
    assert!(matches!(&err, StateError::Reduce { field, .. } if field == "counter"));
    assert_eq!(state.apply(refused).unwrap_err(), err);
    assert_eq!(state, before);
}
