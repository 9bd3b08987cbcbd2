//! `State::check` and `State::commit`, the two phases of `apply`: check
//! finds every error without changing the state, commit cannot fail, and
//! the two together do exactly what `apply` does (plain fields, reducers,
//! nested states, flattened bases, merged deltas).

use state_core::{AgentState, Delta, Message, Messages, ReduceError, State, StateError};
use std::collections::BTreeMap;

/// Fallible and not foldable: check runs it on a copy of the field.
fn spend(budget: &mut u32, cost: u32) -> Result<(), String> {
    *budget = budget
        .checked_sub(cost)
        .ok_or_else(|| format!("{cost} is over the budget of {budget}"))?;
    Ok(())
}

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Progress {
    #[scope(turn)]
    pub stage: String,
    #[reducer(append)]
    pub done: Vec<String>,
    #[reducer(add_messages)]
    pub notes: Messages,
}

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Base {
    #[reducer(add_messages)]
    pub messages: Messages,
    #[reducer(append)]
    pub log: Vec<String>,
}

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Run {
    #[state(flatten)]
    pub base: Base,
    pub next: String,
    pub note: Option<String>,
    #[reducer(merge)]
    pub scores: BTreeMap<String, u32>,
    #[default(10)]
    #[reducer(with = spend)]
    pub budget: u32,
    #[reducer(merge)]
    pub progress: Progress,
}

fn s(v: &str) -> String {
    v.to_owned()
}

fn started() -> Run {
    let mut run = Run::default();
    run.apply(
        Run::delta()
            .next("plan")
            .note(Some(s("first")))
            .scores(BTreeMap::from([(s("a"), 1)]))
            .progress(
                Progress::delta()
                    .stage("intro")
                    .notes(vec![Message::ai("n").with_id("n1")]),
            )
            .base(Base::delta().messages(vec![Message::human("hi").with_id("0")])),
    )
    .unwrap();
    run
}

/// `check` then `commit`, as a store does.
fn check_then_commit(state: &mut Run, delta: RunDelta) -> Result<(), StateError> {
    let checked = state.check(delta)?;
    state.commit(checked);
    Ok(())
}

/// `check` refuses `delta` with `expected`, and the state is as before.
fn refused(delta: RunDelta, expected: &StateError) {
    let state = started();
    let before = state.clone();
    let err = state.check(delta.clone()).unwrap_err();
    assert_eq!(&err, expected);
    assert_eq!(state, before, "check changes nothing");
    // apply refuses it the same way, and leaves the state as it was.
    let mut applied = started();
    assert_eq!(applied.apply(delta).unwrap_err(), err);
    assert_eq!(applied, before);
}

/// Check-then-commit and apply reach the same state from `started()`.
fn same_as_apply(delta: RunDelta) -> Run {
    let mut via_apply = started();
    via_apply.apply(delta.clone()).unwrap();
    let mut via_phases = started();
    check_then_commit(&mut via_phases, delta).unwrap();
    assert_eq!(via_phases, via_apply);
    via_phases
}

#[test]
fn plain_fields_commit_what_was_checked() {
    let state = started();
    let checked = state.check(Run::delta().next("act").note(None)).unwrap();
    assert_eq!(state, started(), "check changes nothing");
    let mut state = state;
    state.commit(checked);
    assert_eq!((state.next.as_str(), state.note.as_deref()), ("act", None));
    same_as_apply(Run::delta().next("act").note(Some(s("x"))));
}

#[test]
fn reducer_fields_commit_what_was_checked() {
    let state = same_as_apply(
        Run::delta()
            .scores(BTreeMap::from([(s("b"), 2)]))
            .budget(3u32)
            .base(Base::delta().log(vec![s("one")])),
    );
    assert_eq!(state.scores, BTreeMap::from([(s("a"), 1), (s("b"), 2)]));
    assert_eq!(state.budget, 7);
    assert_eq!(state.base.log, ["one"]);
}

#[test]
fn removing_a_missing_message_is_refused_by_check() {
    let delta = Run::delta()
        .next("lost")
        .base(Base::delta().messages(vec![Message::ai("x"), Message::remove("nope")]));
    refused(
        delta,
        &StateError::Reduce {
            field: s("messages"),
            source: ReduceError::MissingMessageId { id: s("nope") },
        },
    );
}

#[test]
fn a_fallible_custom_reducer_is_refused_by_check() {
    refused(
        Run::delta().next("lost").budget(11u32),
        &StateError::Reduce {
            field: s("budget"),
            source: ReduceError::custom(s("11 is over the budget of 10")),
        },
    );
}

#[test]
fn a_fallible_custom_reducer_runs_once_in_check() {
    let state = started();
    let checked = state.check(Run::delta().budget(4u32)).unwrap();
    // Its result is computed: the checked delta overwrites the field.
    let inner = checked.into_inner();
    assert_eq!(inner.fields(), ["budget"]);
    assert_eq!(
        serde_json::to_value(&inner).unwrap(),
        serde_json::json!({"budget": {"__overwrite__": 6}})
    );
}

#[test]
fn a_nested_state_is_checked_with_the_state_around_it() {
    let state = same_as_apply(
        Run::delta().progress(
            Progress::delta()
                .stage("work")
                .done(vec![s("a")])
                .notes(vec![Message::remove("n1")]),
        ),
    );
    assert_eq!(state.progress.stage, "work");
    assert!(state.progress.notes.is_empty());

    refused(
        Run::delta().next("lost").progress(
            Progress::delta()
                .done(vec![s("lost")])
                .notes(vec![Message::remove("n9")]),
        ),
        &StateError::Reduce {
            field: s("progress.notes"),
            source: ReduceError::MissingMessageId { id: s("n9") },
        },
    );
}

#[test]
fn a_flattened_base_is_checked_with_the_extension() {
    let state = same_as_apply(
        RunDelta::from(
            Base::delta()
                .log(vec![s("base")])
                .messages(vec![Message::remove("0")]),
        )
        .next("next"),
    );
    assert!(state.base.messages.is_empty());
    assert_eq!(state.base.log, ["base"]);
    // A base's error names its key, as the base's own fields are this state's.
    refused(
        RunDelta::from(
            Base::delta()
                .log(vec![s("lost")])
                .messages(vec![Message::remove("1")]),
        )
        .budget(1u32),
        &StateError::Reduce {
            field: s("messages"),
            source: ReduceError::MissingMessageId { id: s("1") },
        },
    );
}

#[test]
fn merged_deltas_check_and_commit_as_apply_all() {
    let deltas = || {
        [
            Run::delta()
                .budget(2u32)
                .scores(BTreeMap::from([(s("a"), 5)]))
                .progress(Progress::delta().done(vec![s("x")]))
                .base(Base::delta().messages(vec![Message::remove("0")])),
            Run::delta()
                .budget(3u32)
                .next("b")
                .progress(Progress::delta().stage("two").done(vec![s("y")]))
                .base(Base::delta().messages(vec![Message::human("again").with_id("0")])),
        ]
    };
    let mut via_all = started();
    via_all.apply_all(deltas()).unwrap();
    let [a, b] = deltas();
    let merged = a.merge(b).unwrap();
    let mut via_phases = started();
    check_then_commit(&mut via_phases, merged).unwrap();
    assert_eq!(via_phases, via_all);
    assert_eq!(via_phases.budget, 5);
    assert_eq!(via_phases.progress.done, ["x", "y"]);

    // The second write overspends: the whole step is refused by check.
    let [a, _] = deltas();
    let merged = a.merge(Run::delta().budget(9u32)).unwrap();
    let state = started();
    let err = state.check(merged).unwrap_err();
    assert!(
        matches!(&err, StateError::Reduce { field, .. } if field == "budget"),
        "{err}"
    );
    assert_eq!(state, started());
}

#[test]
fn a_dropped_check_leaves_no_trace() {
    // What a store does when persisting fails: drop the checked delta.
    let mut state = started();
    let checked = state
        .check(Run::delta().next("never").budget(1u32))
        .unwrap();
    drop(checked);
    assert_eq!(state, started());
    // The state still applies normally afterwards.
    state.apply(Run::delta().next("later")).unwrap();
    assert_eq!(state.next, "later");
}

#[test]
fn a_stale_commit_skips_writes_that_no_longer_fit() {
    // Checked against a history holding "0", committed after "0" is gone.
    let mut state = started();
    let checked = state
        .check(
            Run::delta()
                .next("stale")
                .base(Base::delta().messages(vec![Message::remove("0")])),
        )
        .unwrap();
    state
        .apply(Run::delta().base(Base::delta().messages(vec![Message::remove("0")])))
        .unwrap();
    state.commit(checked);
    assert_eq!(state.next, "stale");
    assert!(state.base.messages.is_empty());
}
