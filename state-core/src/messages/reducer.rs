//! [`AddMessages`]: `add_messages` as a [`Reducer`], with an exact check of
//! a whole step's writes and exact folding of two writes.

use super::add::{HistoryIds, add_to_list, add_to_vec, new_id, prepare_ids};
use super::{Message, MessageLike, Messages};
use crate::error::ReduceError;
use crate::reducer::{Fold, Reducer, Writes};
use std::cell::OnceCell;
use std::collections::HashSet;

/// The `add_messages` reducer (`#[reducer(add_messages)]`), for a
/// [`Messages`] field (updates are `Vec<Message>`) or a `Vec<M>` field of
/// any [`MessageLike`] `M` (updates are `Vec<M>`).
///
/// The writes of one step are separate `add_messages` calls, in order, as
/// in a LangGraph superstep: a removal in one write and a re-add of the same
/// id in a later one puts the message at the **end**; two writes removing
/// the same id fail on the second. [`check`](Reducer::check) finds that
/// without touching (or copying) the history; [`apply`](Reducer::apply) of
/// a checked update cannot fail. [`fold`](Reducer::fold) concatenates two
/// writes when that is exactly equivalent: when the first contains no
/// removal of an id (a remove-all is fine).
///
/// Ids are fixed before applying, so that replaying a logged step gives the
/// same state: [`prepare`](Reducer::prepare) gives a message of an update
/// that lacks an id a UUID v4 (a delta's setters and its JSON decoding call
/// it), and a message already in the history without an id (written by
/// `set` or an overwrite, say) gets one derived from the update's first id
/// and its position, a UUID too. The function
/// [`add_messages`](super::add_messages) draws fresh UUID v4s for both
/// instead, as LangGraph.
///
/// ```
/// use state_core::{Message, Messages};
/// use state_core::reducer::{AddMessages, Reducer, Writes};
///
/// let mut history = Messages::from(vec![
///     Message::human("start").with_id("0"),
///     Message::ai("x").with_id("1"),
/// ]);
/// // Two nodes of one step: `a` removes 0, `b` writes 0 again.
/// let writes = Writes::new(
///     vec![Message::remove("0")],
///     vec![vec![Message::human("again").with_id("0")]],
/// );
/// let staged = AddMessages.stage(&history, writes).unwrap();
/// AddMessages.commit(&mut history, staged);
/// let ids: Vec<_> = history.iter().filter_map(Message::id).collect();
/// assert_eq!(ids, ["1", "0"]);
///
/// // Both remove 0: the second write fails, and nothing changes.
/// let writes = Writes::new(vec![Message::remove("0")], vec![vec![Message::remove("0")]]);
/// assert!(AddMessages.stage(&history, writes).is_err());
/// assert_eq!(history.len(), 2);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AddMessages;

#[diagnostic::do_not_recommend]
impl Reducer<Messages> for AddMessages {
    type Update = Vec<Message>;

    /// Merges `update`. An update that [`check`](Reducer::check) would
    /// refuse changes nothing.
    fn apply(&self, target: &mut Messages, update: Vec<Message>) {
        // Checked updates cannot fail; an unchecked bad one is a no-op.
        let _ = add_to_list(target.list_mut(), update, new_id, HistoryIds::Derived);
    }

    /// O(total size of the writes): ids are looked up in the history's index.
    fn check(&self, target: &Messages, writes: &Writes<Vec<Message>>) -> Result<(), ReduceError> {
        check_writes(writes, |id| target.contains_id(id))
    }

    fn fold(&self, first: Vec<Message>, second: Vec<Message>) -> Fold<Vec<Message>> {
        fold(first, second)
    }

    /// Gives the update's messages that lack an id (removals aside) a new
    /// UUID v4, so that the update holds the ids applying will use.
    fn prepare(&self, update: &mut Vec<Message>) {
        prepare_ids(update);
    }
}

#[diagnostic::do_not_recommend]
impl<M: MessageLike> Reducer<Vec<M>> for AddMessages {
    type Update = Vec<M>;

    /// Merges `update`. An update that [`check`](Reducer::check) would
    /// refuse changes nothing.
    fn apply(&self, target: &mut Vec<M>, update: Vec<M>) {
        // Checked updates cannot fail; an unchecked bad one is a no-op.
        let _ = add_to_vec(target, update, new_id, HistoryIds::Derived);
    }

    /// O(total size of the writes) when no write removes an id; otherwise
    /// the history's ids are collected once, O(history).
    fn check(&self, target: &Vec<M>, writes: &Writes<Vec<M>>) -> Result<(), ReduceError> {
        let ids: OnceCell<HashSet<&str>> = OnceCell::new();
        check_writes(writes, |id| {
            ids.get_or_init(|| target.iter().filter_map(MessageLike::id).collect())
                .contains(id)
        })
    }

    fn fold(&self, first: Vec<M>, second: Vec<M>) -> Fold<Vec<M>> {
        fold(first, second)
    }

    /// Gives the update's messages that lack an id (removals aside) a new
    /// UUID v4, so that the update holds the ids applying will use.
    fn prepare(&self, update: &mut Vec<M>) {
        prepare_ids(update);
    }
}

/// Simulates `writes` as successive `add_messages` calls on a history whose
/// ids `in_history` recognizes, tracking only the ids the writes change
/// (overlay sets; the history is neither changed nor copied). Fails exactly
/// when one of the calls would.
fn check_writes<M: MessageLike>(
    writes: &Writes<Vec<M>>,
    in_history: impl Fn(&str) -> bool,
) -> Result<(), ReduceError> {
    // Only the removal of an id can fail.
    let removes_an_id = |m: &M| m.is_removal() && !m.is_remove_all();
    if !writes.iter().flatten().any(removes_an_id) {
        return Ok(());
    }
    // The history was cleared by a remove-all of an earlier write.
    let mut cleared = false;
    // Ids added by the writes so far (not counting the history's).
    let mut added: HashSet<&str> = HashSet::new();
    // History ids removed by earlier writes.
    let mut gone: HashSet<&str> = HashSet::new();
    for write in writes.iter() {
        let tail = match write.iter().rposition(MessageLike::is_remove_all) {
            Some(last) => {
                cleared = true;
                added.clear();
                gone.clear();
                write.get(last + 1..).unwrap_or_default()
            }
            None => write.as_slice(),
        };
        // Ids this call removes at its end.
        let mut marked: HashSet<&str> = HashSet::new();
        for message in tail {
            let Some(id) = message.id() else {
                if message.is_removal() {
                    return Err(ReduceError::MissingMessageId { id: String::new() });
                }
                // It gets a fresh id that nothing can name.
                continue;
            };
            let present = added.contains(id) || (!cleared && !gone.contains(id) && in_history(id));
            if message.is_removal() {
                if !present {
                    return Err(ReduceError::MissingMessageId { id: id.to_owned() });
                }
                marked.insert(id);
            } else if present {
                marked.remove(id);
            } else {
                added.insert(id);
            }
        }
        for id in marked {
            if !added.remove(id) {
                gone.insert(id);
            }
        }
    }
    Ok(())
}

/// `first ++ second` when applying it is exactly applying `first` then
/// `second`, which holds when `first` removes no id:
/// - without removals, one call over `first` leaves no pending removal and
///   an id -> position map equal to that of the history it produces (new ids
///   are appended once; known ids keep their positions), so continuing with
///   `second` in the same call is a fresh call on that history;
/// - a remove-all in `first` clears before the rest of `first` in both
///   cases; a remove-all in `second` drops everything before it in both
///   cases, and `first` alone cannot fail, so no error is hidden;
/// - errors come only from `second`'s removals, against the same ids.
///
/// With a removal of an id in `first` it is not exact: `[remove(x)]` then
/// `[X]` puts X at the end, while `[remove(x), X]` keeps x's place; and a
/// remove-all in `second` would hide an error of `first`.
fn fold<M: MessageLike>(mut first: Vec<M>, second: Vec<M>) -> Fold<Vec<M>> {
    if first.iter().any(|m| m.is_removal() && !m.is_remove_all()) {
        return Fold::Both(first, second);
    }
    first.extend(second);
    Fold::One(first)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::add_messages;
    use proptest::prelude::*;

    fn h(id: &str, text: &str) -> Message {
        Message::human(text).with_id(id)
    }

    fn rm(id: &str) -> Message {
        Message::remove(id)
    }

    fn fold_messages(first: Vec<Message>, second: Vec<Message>) -> Fold<Vec<Message>> {
        let on_list = Reducer::<Messages>::fold(&AddMessages, first.clone(), second.clone());
        let on_vec = Reducer::<Vec<Message>>::fold(&AddMessages, first, second);
        assert_eq!(on_list, on_vec);
        on_list
    }

    fn ids(messages: &[Message]) -> Vec<&str> {
        messages.iter().filter_map(Message::id).collect()
    }

    fn writes(all: Vec<Vec<Message>>) -> Writes<Vec<Message>> {
        let mut all = all.into_iter();
        let first = all.next().unwrap_or_default();
        Writes::new(first, all.collect())
    }

    /// Stages and commits on both targets; they must agree.
    fn step(left: &[Message], all: Vec<Vec<Message>>) -> Result<Vec<Message>, ReduceError> {
        let mut list = Messages::from(left.to_vec());
        let mut vec = left.to_vec();
        let on_list = AddMessages.stage(&list, writes(all.clone()));
        let on_vec = AddMessages.stage(&vec, writes(all));
        match (on_list, on_vec) {
            (Ok(a), Ok(b)) => {
                AddMessages.commit(&mut list, a);
                AddMessages.commit(&mut vec, b);
                assert_eq!(list.as_slice(), vec.as_slice());
                Ok(vec)
            }
            (Err(a), Err(b)) => {
                assert_eq!(a, b);
                Err(a)
            }
            (a, b) => panic!("targets disagree: {:?} vs {:?}", a.is_ok(), b.is_ok()),
        }
    }

    #[test]
    fn remove_in_one_write_and_re_add_in_the_next_appends_at_the_end() {
        let left = [h("0", "start"), h("1", "x")];
        let out = step(&left, vec![vec![rm("0")], vec![h("0", "by b")]]).unwrap();
        assert_eq!(ids(&out), ["1", "0"]);
        // Within one write it would keep its place.
        let out = step(&left, vec![vec![rm("0"), h("0", "by b")]]).unwrap();
        assert_eq!(ids(&out), ["0", "1"]);
    }

    #[test]
    fn two_writes_removing_the_same_id_fail_on_the_second() {
        let left = [h("0", "start")];
        let err = step(&left, vec![vec![rm("0")], vec![rm("0")]]);
        assert_eq!(err, Err(ReduceError::MissingMessageId { id: "0".into() }));
    }

    #[test]
    fn writes_see_ids_added_and_cleared_by_earlier_writes() {
        let left = [h("0", "start")];
        let out = step(&left, vec![vec![h("9", "a")], vec![rm("9")]]).unwrap();
        assert_eq!(ids(&out), ["0"]);
        let err = step(&left, vec![vec![Message::remove_all()], vec![rm("0")]]);
        assert_eq!(err, Err(ReduceError::MissingMessageId { id: "0".into() }));
        let out = step(
            &left,
            vec![vec![Message::remove_all(), h("5", "")], vec![rm("5")]],
        );
        assert_eq!(out.map(|v| v.len()), Ok(0));
        let out = step(
            &left,
            vec![vec![h("1", "")], vec![rm("1"), rm("0")], vec![h("1", "")]],
        );
        assert_eq!(out.map(|v| ids(&v).join(",")), Ok("1".into()));
    }

    #[test]
    fn update_same_id_later_write_wins_in_place() {
        let left = [h("0", "start"), h("1", "x")];
        let out = step(&left, vec![vec![h("0", "by a")], vec![h("0", "by b")]]).unwrap();
        assert_eq!(out, [h("0", "by b"), h("1", "x")]);
    }

    #[test]
    fn a_refused_step_changes_nothing_and_apply_of_a_bad_update_is_a_no_op() {
        let mut history = Messages::from(vec![h("0", "a")]);
        let before = history.clone();
        assert!(
            AddMessages
                .reduce(&mut history, vec![h("1", "b"), rm("9")])
                .is_err()
        );
        assert_eq!(history, before);
        AddMessages.apply(&mut history, vec![h("1", "b"), rm("9")]);
        assert_eq!(history, before);
        let mut vec = vec![h("0", "a")];
        AddMessages.apply(&mut vec, vec![rm("9")]);
        assert_eq!(vec, [h("0", "a")]);
    }

    #[test]
    fn fold_concatenates_unless_the_first_removes_an_id() {
        let Fold::One(folded) = fold_messages(vec![h("1", "a")], vec![rm("1")]) else {
            panic!("no removal in the first write: exact")
        };
        assert_eq!(folded, [h("1", "a"), rm("1")]);
        let folded = fold_messages(vec![Message::remove_all(), h("1", "a")], vec![h("2", "")]);
        assert!(matches!(folded, Fold::One(_)));
        let folded = fold_messages(vec![rm("1")], vec![h("1", "a")]);
        assert!(matches!(folded, Fold::Both(..)));
    }

    #[test]
    fn checking_appends_never_reads_the_history() {
        // `in_history` is not consulted when no write removes an id.
        let all = writes(vec![
            vec![h("1", "")],
            vec![Message::remove_all(), h("2", "")],
        ]);
        assert_eq!(check_writes(&all, |_| unreachable!()), Ok(()));
    }

    // --- Properties: check and fold against sequential add_messages -------

    /// Small alphabets so that ids collide often.
    fn message() -> impl Strategy<Value = Message> {
        (0..10u8, 0..4u8, 0..3u8).prop_map(|(what, id, text)| {
            let id = id.to_string();
            match what {
                0..=5 => Message::human(text.to_string()).with_id(id),
                6..=8 => Message::remove(id),
                _ => Message::remove_all(),
            }
        })
    }

    fn history() -> impl Strategy<Value = Vec<Message>> {
        prop::collection::vec((0..4u8, 0..3u8), 0..6).prop_map(|items| {
            items
                .into_iter()
                .map(|(id, text)| Message::ai(text.to_string()).with_id(id.to_string()))
                .collect()
        })
    }

    fn update() -> impl Strategy<Value = Vec<Message>> {
        prop::collection::vec(message(), 0..5)
    }

    /// Applies the writes one `add_messages` call at a time, stopping at the
    /// first error.
    fn sequential<H: super::super::MessageHistory<Message = Message>>(
        mut target: H,
        all: &[Vec<Message>],
    ) -> Result<H, ReduceError> {
        for write in all {
            add_messages(&mut target, write.clone())?;
        }
        Ok(target)
    }

    proptest! {
        #[test]
        fn check_accepts_exactly_what_sequential_calls_accept(
            left in history(),
            all in prop::collection::vec(update(), 1..4),
        ) {
            // On Vec<Message>, with duplicate ids in the history.
            let expected = sequential(left.clone(), &all);
            let mut vec = left.clone();
            match AddMessages.stage(&vec, writes(all.clone())) {
                Ok(staged) => {
                    AddMessages.commit(&mut vec, staged);
                    prop_assert_eq!(Ok(vec), expected);
                }
                Err(err) => prop_assert_eq!(Err(err), expected.map(|_| ())),
            }
            // On Messages.
            let list = Messages::from(left);
            let expected = sequential(list.clone(), &all);
            let mut target = list;
            match AddMessages.stage(&target, writes(all)) {
                Ok(staged) => {
                    AddMessages.commit(&mut target, staged);
                    prop_assert_eq!(Ok(target), expected);
                }
                Err(err) => prop_assert_eq!(Err(err), expected.map(|_| ())),
            }
        }

        #[test]
        fn fold_one_is_exactly_sequential(
            left in history(),
            first in update(),
            second in update(),
        ) {
            let both = [first.clone(), second.clone()];
            let expected_vec = sequential(left.clone(), &both);
            let expected_list = sequential(Messages::from(left.clone()), &both);
            match fold_messages(first, second) {
                Fold::One(folded) => {
                    let once = [folded];
                    prop_assert_eq!(sequential(left.clone(), &once), expected_vec);
                    prop_assert_eq!(sequential(Messages::from(left), &once), expected_list);
                }
                Fold::Both(a, b) => {
                    prop_assert_eq!(&[a, b], &both);
                    prop_assert!(both[0].iter().any(|m| m.is_removal() && !m.is_remove_all()));
                }
                Fold::Conflict => prop_assert!(false, "add_messages never conflicts"),
            }
        }
    }
}
