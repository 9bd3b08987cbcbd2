//! `State::apply`: every reducer attribute, applied once and in sequence, and
//! the all-or-nothing guarantee when a reducer refuses an update.

use state_core::reducer::{Fold, HasId, Reducer, Writes};
use state_core::{AgentState, Delta, ReduceError, State, StateError};
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::fmt;

// ---------------------------------------------------------------------------
// Reducers and item types used by the states below.
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Finding {
    id: Option<u32>,
    text: String,
}

fn finding(id: u32, text: &str) -> Finding {
    Finding {
        id: Some(id),
        text: text.to_owned(),
    }
}

impl HasId for Finding {
    type Id = u32;
    fn item_id(&self) -> Option<&u32> {
        self.id.as_ref()
    }
}

/// Reducers reached through a module path: `with = reducers::keep_max`.
mod reducers {
    /// Infallible custom reducer.
    pub fn keep_max(current: &mut i64, new: i64) {
        if new > *current {
            *current = new;
        }
    }
}

/// A custom error type: fallible reducers may return any error, which the
/// state's error keeps whole.
#[derive(Debug)]
pub struct NegativeItem(i32);

impl std::error::Error for NegativeItem {}

impl fmt::Display for NegativeItem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "negative item {}", self.0)
    }
}

/// Fallible custom reducer that mutates its target before it fails: the
/// runtime must not let that half-done change leak into the state.
fn push_non_negative(list: &mut Vec<i32>, items: Vec<i32>) -> Result<(), NegativeItem> {
    for item in items {
        if item < 0 {
            return Err(NegativeItem(item));
        }
        list.push(item);
    }
    Ok(())
}

/// Fallible custom reducer returning `Result<(), String>`.
fn spend(budget: &mut u32, cost: u32) -> Result<(), String> {
    match budget.checked_sub(cost) {
        Some(left) => {
            *budget = left;
            Ok(())
        }
        None => Err(format!("cost {cost} exceeds budget {budget}")),
    }
}

/// A unit-struct reducer whose update type (one line) differs from the field
/// type (all lines), and which refuses writes in `check`.
pub struct BoundedLog;

const LOG_CAP: usize = 3;

impl Reducer<Vec<String>> for BoundedLog {
    type Update = String;

    fn apply(&self, target: &mut Vec<String>, update: String) {
        target.push(update);
    }

    fn check(&self, target: &Vec<String>, writes: &Writes<String>) -> Result<(), ReduceError> {
        if target.len() + writes.len() > LOG_CAP {
            return Err(ReduceError::custom(format!(
                "log is full ({LOG_CAP} lines)"
            )));
        }
        Ok(())
    }
}

/// A unit-struct reducer with a different update type that folds two writes
/// into one when the sum fits its update type.
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

// ---------------------------------------------------------------------------
// A state with every built-in reducer (but add_messages, see derive_messages)
// and every form of custom reducer.
// ---------------------------------------------------------------------------

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Everything {
    /// `replace` by default.
    pub next: String,
    #[reducer(replace)]
    pub explicit_replace: u32,
    #[reducer(append)]
    pub transcript: Vec<String>,
    #[reducer(append)]
    pub queue: VecDeque<u8>,
    #[reducer(append)]
    pub tags: BTreeSet<String>,
    #[reducer(merge)]
    pub diagnostics: BTreeMap<String, f64>,
    #[reducer(merge)]
    pub hashed: HashMap<String, i32>,
    #[reducer(merge)]
    pub ordered: indexmap::IndexMap<String, i32>,
    #[reducer(merge)]
    pub json: serde_json::Map<String, serde_json::Value>,
    #[reducer(append_by_id)]
    pub findings: Vec<Finding>,
    #[reducer(with = reducers::keep_max)]
    pub best_score: i64,
    #[reducer(with = push_non_negative)]
    pub checked: Vec<i32>,
    #[reducer(with = BoundedLog, update = String)]
    pub log: Vec<String>,
    #[reducer(with = Total, update = u16)]
    pub total: u64,
}

fn s(v: &str) -> String {
    v.to_owned()
}

#[test]
fn empty_delta_changes_nothing() {
    let mut state = Everything {
        next: s("kept"),
        ..Everything::default()
    };
    let before = state.clone();
    let delta = Everything::delta();
    assert!(delta.is_empty());
    state.apply(delta).unwrap();
    assert_eq!(state, before);
}

#[test]
fn replace_takes_the_written_value() {
    let mut state = Everything::default();
    state
        .apply(Everything::delta().next("tools").explicit_replace(7u32))
        .unwrap();
    assert_eq!(state.next, "tools");
    assert_eq!(state.explicit_replace, 7);
    state.apply(Everything::delta().next("end")).unwrap();
    assert_eq!(state.next, "end");
    assert_eq!(
        state.explicit_replace, 7,
        "an unwritten field is left alone"
    );
}

#[test]
fn append_extends_in_order_across_applies() {
    let mut state = Everything::default();
    state
        .apply(
            Everything::delta()
                .transcript(vec![s("a"), s("b")])
                .queue(VecDeque::from([1, 2]))
                .tags(BTreeSet::from([s("x")])),
        )
        .unwrap();
    state
        .apply(
            Everything::delta()
                .transcript(vec![s("c")])
                .queue(VecDeque::from([3]))
                .tags(BTreeSet::from([s("x"), s("y")])),
        )
        .unwrap();
    assert_eq!(state.transcript, ["a", "b", "c"]);
    assert_eq!(state.queue, [1, 2, 3]);
    assert_eq!(state.tags, BTreeSet::from([s("x"), s("y")]));
}

#[test]
fn merge_right_keys_win_for_every_map_type() {
    let mut state = Everything::default();
    state
        .apply(
            Everything::delta()
                .diagnostics(BTreeMap::from([(s("a"), 1.0), (s("b"), 2.0)]))
                .hashed(HashMap::from([(s("a"), 1)]))
                .ordered(indexmap::IndexMap::from([(s("a"), 1), (s("b"), 2)]))
                .json(
                    serde_json::json!({"cfg": {"x": 1, "y": 2}, "k": 1})
                        .as_object()
                        .unwrap()
                        .clone(),
                ),
        )
        .unwrap();
    state
        .apply(
            Everything::delta()
                .diagnostics(BTreeMap::from([(s("b"), 5.0), (s("c"), 3.0)]))
                .hashed(HashMap::from([(s("a"), 9), (s("z"), 0)]))
                .ordered(indexmap::IndexMap::from([(s("c"), 3), (s("a"), 9)]))
                .json(
                    serde_json::json!({"cfg": {"x": 5}})
                        .as_object()
                        .unwrap()
                        .clone(),
                ),
        )
        .unwrap();
    assert_eq!(
        state.diagnostics,
        BTreeMap::from([(s("a"), 1.0), (s("b"), 5.0), (s("c"), 3.0)])
    );
    assert_eq!(state.hashed, HashMap::from([(s("a"), 9), (s("z"), 0)]));
    // A shared key keeps its position; new keys are appended.
    assert_eq!(
        state
            .ordered
            .iter()
            .map(|(k, v)| (k.as_str(), *v))
            .collect::<Vec<_>>(),
        [("a", 9), ("b", 2), ("c", 3)]
    );
    // Shallow, as `{**a, **b}`: the nested object is replaced whole.
    assert_eq!(
        serde_json::Value::Object(state.json.clone()),
        serde_json::json!({"cfg": {"x": 5}, "k": 1})
    );
}

#[test]
fn append_by_id_updates_in_place_and_appends_new_ids() {
    let mut state = Everything::default();
    state
        .apply(Everything::delta().findings(vec![finding(1, "draft"), finding(2, "two")]))
        .unwrap();
    state
        .apply(Everything::delta().findings(vec![
            finding(3, "three"),
            finding(1, "final"),
            Finding {
                id: None,
                text: s("anonymous"),
            },
        ]))
        .unwrap();
    assert_eq!(
        state.findings,
        [
            finding(1, "final"),
            finding(2, "two"),
            finding(3, "three"),
            Finding {
                id: None,
                text: s("anonymous")
            },
        ]
    );
}

#[test]
fn infallible_custom_reducer_by_module_path() {
    let mut state = Everything::default();
    state.apply(Everything::delta().best_score(5)).unwrap();
    state.apply(Everything::delta().best_score(3)).unwrap();
    assert_eq!(state.best_score, 5);
    state.apply(Everything::delta().best_score(8)).unwrap();
    assert_eq!(state.best_score, 8);
}

#[test]
fn fallible_custom_reducer_success_and_failure() {
    let mut state = Everything::default();
    state
        .apply(Everything::delta().checked(vec![1, 2]))
        .unwrap();
    assert_eq!(state.checked, [1, 2]);
    let before = state.clone();
    // The function pushes 3 before it meets -4: that must not show.
    let err = state
        .apply(Everything::delta().checked(vec![3, -4, 5]))
        .unwrap_err();
    assert_eq!(
        err,
        StateError::Reduce {
            field: s("checked"),
            source: ReduceError::custom(s("negative item -4")),
        }
    );
    assert_eq!(err.field(), Some("checked"));
    assert_eq!(
        err.to_string(),
        r#"field "checked": the reducer refused the update"#
    );
    // The reducer's own error, whole: in the chain and by its type.
    let source = std::error::Error::source(&err).map(ToString::to_string);
    assert_eq!(source.as_deref(), Some("negative item -4"));
    let StateError::Reduce {
        source: ReduceError::Custom(custom),
        ..
    } = &err
    else {
        panic!("not a custom reducer's error: {err:?}");
    };
    assert_eq!(custom.downcast_ref::<NegativeItem>().map(|e| e.0), Some(-4));
    assert_eq!(state, before);
}

#[test]
fn unit_struct_reducer_with_a_different_update_type() {
    let mut state = Everything::default();
    state
        .apply(Everything::delta().log("one").total(40u16))
        .unwrap();
    state
        .apply(Everything::delta().log(s("two")).total(2u16))
        .unwrap();
    assert_eq!(state.log, ["one", "two"]);
    assert_eq!(state.total, 42);

    state.apply(Everything::delta().log("three")).unwrap();
    let before = state.clone();
    let err = state.apply(Everything::delta().log("four")).unwrap_err();
    assert_eq!(
        err,
        StateError::Reduce {
            field: s("log"),
            source: ReduceError::custom(format!("log is full ({LOG_CAP} lines)")),
        }
    );
    assert_eq!(state, before);
}

#[test]
fn overwrite_setters_bypass_the_reducer() {
    let mut state = Everything::default();
    state
        .apply(
            Everything::delta()
                .transcript(vec![s("a"), s("b")])
                .best_score(10)
                .findings(vec![finding(1, "x")])
                .log("l1"),
        )
        .unwrap();
    state
        .apply(
            Everything::delta()
                .overwrite_transcript(vec![s("only")])
                // keep_max would refuse to lower the score; an overwrite does not.
                .overwrite_best_score(1)
                .overwrite_findings(Vec::new())
                // The update type is String; the overwrite takes the field type.
                .overwrite_log(vec![s("fresh")])
                .overwrite_total(7u64),
        )
        .unwrap();
    assert_eq!(state.transcript, ["only"]);
    assert_eq!(state.best_score, 1);
    assert!(state.findings.is_empty());
    assert_eq!(state.log, ["fresh"]);
    assert_eq!(state.total, 7);
}

#[test]
fn overwrite_of_a_fallible_field_skips_its_check() {
    let mut state = Everything::default();
    state
        .apply(Everything::delta().log("replaced").log("1"))
        .unwrap();
    assert_eq!(
        state.log,
        ["1"],
        "a setter called again replaces the earlier value"
    );
    // Four lines through the reducer would be refused; an overwrite is not reduced.
    let lines = vec![s("a"), s("b"), s("c"), s("d")];
    state
        .apply(Everything::delta().overwrite_log(lines.clone()))
        .unwrap();
    assert_eq!(state.log, lines);
}

#[test]
fn setter_and_overwrite_setter_replace_each_other() {
    let state = Everything {
        transcript: vec![s("old")],
        ..Everything::default()
    };
    // A plain write after an overwrite in the same delta replaces it ...
    let mut plain_last = state.clone();
    plain_last
        .apply(
            Everything::delta()
                .overwrite_transcript(vec![s("over")])
                .transcript(vec![s("plain")]),
        )
        .unwrap();
    assert_eq!(plain_last.transcript, ["old", "plain"]);
    // ... and an overwrite after a plain write replaces that.
    let mut over_last = state.clone();
    over_last
        .apply(
            Everything::delta()
                .transcript(vec![s("plain")])
                .overwrite_transcript(vec![s("over")]),
        )
        .unwrap();
    assert_eq!(over_last.transcript, ["over"]);
}

#[test]
fn one_apply_reduces_every_written_field() {
    let mut state = Everything::default();
    state
        .apply(
            Everything::delta()
                .next("n")
                .transcript(vec![s("t")])
                .diagnostics(BTreeMap::from([(s("d"), 1.0)]))
                .findings(vec![finding(9, "f")])
                .best_score(4)
                .checked(vec![1])
                .log("l")
                .total(3u16),
        )
        .unwrap();
    let expected = Everything {
        next: s("n"),
        transcript: vec![s("t")],
        diagnostics: BTreeMap::from([(s("d"), 1.0)]),
        findings: vec![finding(9, "f")],
        best_score: 4,
        checked: vec![1],
        log: vec![s("l")],
        total: 3,
        ..Everything::default()
    };
    assert_eq!(state, expected);
}

// ---------------------------------------------------------------------------
// Atomicity: the failing field declared last, and declared first.
// ---------------------------------------------------------------------------

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct FailLast {
    pub next: String,
    #[reducer(append)]
    pub transcript: Vec<String>,
    #[reducer(merge)]
    pub meta: BTreeMap<String, i32>,
    #[reducer(with = reducers::keep_max)]
    pub best: i64,
    #[reducer(with = spend)]
    pub budget: u32,
}

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct FailFirst {
    #[reducer(with = spend)]
    #[default(10)]
    pub budget: u32,
    pub next: String,
    #[reducer(append)]
    pub transcript: Vec<String>,
    #[reducer(merge)]
    pub meta: BTreeMap<String, i32>,
    #[reducer(with = reducers::keep_max)]
    pub best: i64,
}

fn fail_last_state() -> FailLast {
    let mut state = FailLast {
        budget: 10,
        ..FailLast::default()
    };
    state
        .apply(
            FailLast::delta()
                .next("start")
                .transcript(vec![s("t0")])
                .meta(BTreeMap::from([(s("k"), 0)])),
        )
        .unwrap();
    state
}

fn fail_first_state() -> FailFirst {
    let mut state = FailFirst::default();
    state
        .apply(
            FailFirst::delta()
                .next("start")
                .transcript(vec![s("t0")])
                .meta(BTreeMap::from([(s("k"), 0)])),
        )
        .unwrap();
    state
}

fn assert_unchanged<S: State + fmt::Debug + PartialEq + Clone>(
    state: &mut S,
    run: impl FnOnce(&mut S) -> Result<(), StateError>,
    field: &str,
) {
    let before = state.clone();
    let before_debug = format!("{state:?}");
    let err = run(state).expect_err("the update must fail");
    assert!(
        matches!(&err, StateError::Reduce { field: f, .. } if f == field),
        "unexpected error {err:?}"
    );
    assert_eq!(format!("{state:?}"), before_debug);
    assert_eq!(*state, before);
}

#[test]
fn apply_is_atomic_when_the_last_field_fails() {
    let mut state = fail_last_state();
    let delta = FailLast::delta()
        .next("changed")
        .transcript(vec![s("t1")])
        .meta(BTreeMap::from([(s("k"), 1), (s("new"), 1)]))
        .best(99)
        .budget(11u32);
    assert_unchanged(&mut state, |st| st.apply(delta), "budget");
    // The same delta within budget goes through whole.
    let delta = FailLast::delta()
        .next("changed")
        .transcript(vec![s("t1")])
        .best(99)
        .budget(10u32);
    state.apply(delta).unwrap();
    assert_eq!(
        (
            state.next.as_str(),
            state.transcript.len(),
            state.best,
            state.budget
        ),
        ("changed", 2, 99, 0)
    );
}

#[test]
fn apply_is_atomic_when_the_first_field_fails() {
    let mut state = fail_first_state();
    let delta = FailFirst::delta()
        .budget(11u32)
        .next("changed")
        .transcript(vec![s("t1")])
        .meta(BTreeMap::from([(s("k"), 1)]))
        .best(99);
    assert_unchanged(&mut state, |st| st.apply(delta), "budget");
}

#[test]
fn apply_all_is_atomic_when_a_later_delta_fails() {
    // The reducer accepts the first write (10 - 6) and refuses the second.
    let mut state = fail_last_state();
    let ok = FailLast::delta()
        .next("changed")
        .transcript(vec![s("t1")])
        .budget(6u32);
    let bad = FailLast::delta()
        .meta(BTreeMap::from([(s("new"), 1)]))
        .best(7)
        .budget(6u32);
    assert_unchanged(&mut state, |st| st.apply_all([ok, bad]), "budget");

    let mut state = fail_first_state();
    let ok = FailFirst::delta()
        .next("changed")
        .transcript(vec![s("t1")])
        .budget(6u32);
    let bad = FailFirst::delta()
        .meta(BTreeMap::from([(s("new"), 1)]))
        .best(7)
        .budget(6u32);
    assert_unchanged(&mut state, |st| st.apply_all([ok, bad]), "budget");
}

#[test]
fn apply_all_succeeds_when_the_writes_fit() {
    let mut state = fail_first_state();
    state
        .apply_all([
            FailFirst::delta().budget(6u32).transcript(vec![s("a")]),
            FailFirst::delta().budget(4u32).transcript(vec![s("b")]),
        ])
        .unwrap();
    assert_eq!(state.budget, 0);
    assert_eq!(state.transcript, ["t0", "a", "b"]);
}

#[test]
fn check_based_reducer_is_atomic_in_a_superstep() {
    let mut state = Everything::default();
    state.apply(Everything::delta().log("1").next("x")).unwrap();
    // Two more lines fit; three do not, even spread over three deltas.
    let fits = [Everything::delta().log("2"), Everything::delta().log("3")];
    let mut ok = state.clone();
    ok.apply_all(fits).unwrap();
    assert_eq!(ok.log, ["1", "2", "3"]);

    let too_many = [
        Everything::delta().log("2").transcript(vec![s("t")]),
        Everything::delta().log("3"),
        Everything::delta().log("4").best_score(5),
    ];
    assert_unchanged(&mut state, |st| st.apply_all(too_many), "log");
}

#[test]
fn an_overwrite_is_rolled_back_when_another_field_fails() {
    // An overwrite is never reduced, so it cannot fail; the failure of
    // another field still rolls it back, and an overwrite of the fallible
    // field itself is not checked.
    let mut state = fail_last_state();
    let delta = FailLast::delta()
        .overwrite_transcript(vec![s("wiped")])
        .budget(100u32);
    assert_unchanged(&mut state, |st| st.apply(delta), "budget");
    let delta = FailLast::delta()
        .overwrite_transcript(vec![s("wiped")])
        .overwrite_budget(100u32);
    state.apply(delta).unwrap();
    assert_eq!(state.transcript, ["wiped"]);
    assert_eq!(state.budget, 100);
}

/// A map type of the user's: `merge` reaches it through `MergeMap` and the
/// function reducer (the `Merge` reducer is implemented for the library's
/// map types by name).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Tags(std::collections::BTreeMap<String, u32>);

impl state_core::reducer::MergeMap for Tags {
    fn merge_from(&mut self, other: Self) {
        self.0.extend(other.0);
    }
}

#[derive(AgentState, Debug)]
pub struct Tagged {
    #[reducer(with = state_core::reducer::merge)]
    pub tags: Tags,
}

#[test]
fn a_user_map_merges_through_the_merge_function() {
    let mut state = Tagged::default();
    let first = Tags([("a".to_owned(), 1)].into());
    let second = Tags([("a".to_owned(), 2), ("b".to_owned(), 3)].into());
    state.apply(Tagged::delta().tags(first)).unwrap();
    state.apply(Tagged::delta().tags(second.clone())).unwrap();
    assert_eq!(state.tags, second);
    let json = serde_json::json!({"tags": {"c": 4}});
    state.apply_json(json).unwrap();
    assert_eq!(state.tags.0.get("c"), Some(&4));
    assert_eq!(state.tags.0.len(), 3);
}
