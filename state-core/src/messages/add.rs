//! `add_messages`: LangGraph's message reducer, on [`Messages`] (O(update))
//! and on `Vec<M>` for any [`MessageLike`] `M` (O(history), as LangGraph).

use super::index::IdList;
use super::like::MessageLike;
use super::{Message, Messages};
use crate::error::ReduceError;
use std::collections::{HashMap, HashSet};
use std::hash::BuildHasher;

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Messages {}
    impl<M: super::MessageLike> Sealed for Vec<M> {}
}

/// A history [`add_messages`] can merge into: [`Messages`] (updates are
/// `Vec<Message>`) or `Vec<M>` for any [`MessageLike`] `M` (updates are
/// `Vec<M>`). Sealed: the two are the only ones.
pub trait MessageHistory: sealed::Sealed {
    /// The type of the messages.
    type Message: MessageLike;

    #[doc(hidden)]
    fn __add_messages(&mut self, update: Vec<Self::Message>) -> Result<(), ReduceError>;
}

impl MessageHistory for Messages {
    type Message = Message;

    fn __add_messages(&mut self, update: Vec<Message>) -> Result<(), ReduceError> {
        add_to_list(self.list_mut(), update, new_id, HistoryIds::Fresh)
    }
}

impl<M: MessageLike> MessageHistory for Vec<M> {
    type Message = M;

    fn __add_messages(&mut self, update: Vec<M>) -> Result<(), ReduceError> {
        add_to_vec(self, update, new_id, HistoryIds::Fresh)
    }
}

/// Where the id comes from that a message of the history without one gets
/// when an update is merged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HistoryIds {
    /// A new UUID v4, as LangGraph (the function [`add_messages`]).
    Fresh,
    /// Derived from the update's first id and the message's position (the
    /// reducer): the same update on the same history gives the same ids,
    /// so replaying a logged step rebuilds them. An update that brings no
    /// id leaves such messages as they are.
    Derived,
}

/// Merges `update` into `history`, as LangGraph's `add_messages`; all or
/// nothing: on error `history` is unchanged.
///
/// For each message of `update`, in order:
/// - a message without an id gets a new UUID v4 (only a missing id: `""` is
///   an id); messages of the history without an id get one too, as in
///   LangGraph (the reducer a state uses, [`AddMessages`](super::AddMessages),
///   fixes these ids so that a replayed step gives the same ones; see its
///   docs);
/// - a message whose id is in the history (or was appended earlier in this
///   update) replaces that message **in place**; otherwise it is appended;
/// - a removal ([`Message::remove`]) marks its id; marked messages are
///   dropped at the **end** of the update. So `[remove(2), X(id 2)]` cancels
///   the removal and X takes 2's place, and `[X(id 9), remove(9)]` appends
///   then drops X. Removing an id that is neither in the history nor
///   appended earlier in the update is
///   [`ReduceError::MissingMessageId`]. Removing an id twice is fine.
/// - [`Message::remove_all`] (id
///   [`REMOVE_ALL_MESSAGES`](super::REMOVE_ALL_MESSAGES)) drops everything
///   before it: the whole history and the earlier messages of the update
///   (which are not checked). The rest of the update is then applied
///   normally to the empty history.
///
/// **Differences from LangGraph** (deliberate, all tested):
/// - After `__remove_all__`, LangGraph returns the rest of the update
///   verbatim: duplicate ids both survive, and a removal in it is kept *as a
///   message* in the state (even with an unknown id). Here the rest is
///   merged like any update: duplicates collapse, and a removal must name an
///   id added after the sentinel, or it is an error.
/// - On [`Messages`], ids are unique: a history built with duplicate ids
///   keeps one message per id (see [`Messages`]), where LangGraph's list
///   can hold both and updates the last one. On `Vec<M>` duplicates in the
///   history behave exactly as in LangGraph (an update replaces the last
///   one; a removal drops all).
/// - A removal without an id (possible only for your own `MessageLike`
///   type) is refused as `MissingMessageId` with an empty id.
/// - LangGraph's `format` argument and its `None` arguments have no
///   counterpart.
///
/// Cost: on [`Messages`], an append or an update by id costs O(size of
/// the update), independent of the history's length; removals cost
/// O(history). On `Vec<M>` every call costs O(history), as in LangGraph.
///
/// ```
/// use state_core::{Message, Messages};
/// use state_core::reducer::add_messages;
///
/// let mut history = Messages::new();
/// add_messages(&mut history, vec![Message::human("hi").with_id("1"), Message::ai("hello")])?;
/// assert_eq!(history.len(), 2);
/// assert!(history[1].id().is_some(), "a new id was assigned");
///
/// // Same id: replaced in place. Removal: dropped at the end of the update.
/// add_messages(&mut history, vec![Message::human("hi!").with_id("1")])?;
/// assert_eq!(history[0].text(), "hi!");
/// let reply = history[1].id().unwrap().to_owned();
/// add_messages(&mut history, vec![Message::remove(reply)])?;
/// assert_eq!(history.len(), 1);
///
/// // Removing an unknown id is an error, and nothing changes.
/// let err = add_messages(&mut history, vec![Message::ai("x"), Message::remove("nope")]);
/// assert!(err.is_err());
/// assert_eq!(history.len(), 1);
///
/// // Start over.
/// add_messages(&mut history, vec![Message::remove_all(), Message::system("fresh")])?;
/// assert_eq!(history.len(), 1);
/// assert_eq!(history[0].text(), "fresh");
/// # Ok::<(), state_core::ReduceError>(())
/// ```
pub fn add_messages<H: MessageHistory>(
    history: &mut H,
    update: Vec<H::Message>,
) -> Result<(), ReduceError> {
    history.__add_messages(update)
}

/// A new message id: a UUID v4, as LangGraph's `str(uuid.uuid4())`.
pub(crate) fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// The id for the message at `position` of a history, derived from
/// `anchor`: a UUID (version 8, "custom") whose bits are an FNV-1a hash of
/// both. Written out rather than `std`'s hasher, whose output may change
/// between Rust releases: a log written by one build replays in another.
fn derived_id(anchor: &str, position: usize) -> String {
    const OFFSET: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
    const PRIME: u128 = 0x0000_0000_0100_0000_0000_0000_0000_013b;
    let position = u64::try_from(position).unwrap_or(u64::MAX).to_le_bytes();
    // The separator keeps ("a", 1) and ("a\u{1}", 0)-like inputs apart.
    let bytes = anchor.bytes().chain([0xff]).chain(position);
    let hash = bytes.fold(OFFSET, |hash, byte| {
        (hash ^ u128::from(byte)).wrapping_mul(PRIME)
    });
    uuid::Builder::from_custom_bytes(hash.to_be_bytes())
        .into_uuid()
        .to_string()
}

/// How messages of the history without an id get one: for each position,
/// the id, or `None` to leave it without.
fn history_ids<'a, M: MessageLike>(
    mode: HistoryIds,
    update: &'a [M],
    new_id: &'a mut impl FnMut() -> String,
) -> impl FnMut(usize) -> Option<String> + 'a {
    // Every message of a prepared update has an id; removals name others.
    let anchor = update
        .iter()
        .filter(|m| !m.is_removal())
        .find_map(MessageLike::id);
    move |position| match mode {
        HistoryIds::Fresh => Some(new_id()),
        HistoryIds::Derived => anchor.map(|anchor| derived_id(anchor, position)),
    }
}

/// What applying one message of an update does.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Step {
    /// Replace the message at this position (same id).
    Replace(usize),
    /// Append.
    Append,
    /// A removal: nothing now (its id is in the plan's removed set).
    Mark,
}

/// The effect of an update, decided before anything changes.
struct Plan {
    steps: Vec<Step>,
    removed: HashSet<String>,
}

/// If `update` holds a remove-all, drops everything up to and including the
/// last one and returns true.
fn take_tail<M: MessageLike>(update: &mut Vec<M>) -> bool {
    match update.iter().rposition(MessageLike::is_remove_all) {
        Some(last) => {
            update.drain(..=last);
            true
        }
        None => false,
    }
}

/// Gives the messages of `update` that lack an id a new UUID v4, before the
/// update is logged or applied (`Reducer::prepare` of `add_messages`).
pub(crate) fn prepare_ids<M: MessageLike>(update: &mut [M]) {
    assign_ids(update, &mut new_id);
}

/// Gives the messages of `update` that lack an id a new one (not removals:
/// an id-less removal is refused by [`plan`]).
fn assign_ids<M: MessageLike>(update: &mut [M], new_id: &mut impl FnMut() -> String) {
    for message in update {
        if message.id().is_none() && !message.is_removal() {
            message.set_id(new_id());
        }
    }
}

/// Plans `update` (after the last remove-all, ids assigned) against a
/// history of `base_len` messages where `base(id)` finds an id's position.
/// Fails, changing nothing, on a removal of an id that is not there.
fn plan<M: MessageLike>(
    update: &[M],
    base_len: usize,
    base: impl Fn(&str) -> Option<usize>,
) -> Result<Plan, ReduceError> {
    // Ids appended by this update, with their future positions.
    let mut appended: HashMap<&str, usize> = HashMap::new();
    let mut marked: HashSet<&str> = HashSet::new();
    let mut len = base_len;
    let mut steps = Vec::with_capacity(update.len());
    for message in update {
        let id = message.id();
        let found = id.and_then(|id| appended.get(id).copied().or_else(|| base(id)));
        if message.is_removal() {
            match (id, found) {
                (Some(id), Some(_)) => {
                    marked.insert(id);
                    steps.push(Step::Mark);
                }
                (id, _) => {
                    return Err(ReduceError::MissingMessageId {
                        id: id.unwrap_or_default().to_owned(),
                    });
                }
            }
            continue;
        }
        match (id, found) {
            (Some(id), Some(at)) => {
                marked.remove(id);
                steps.push(Step::Replace(at));
            }
            (id, _) => {
                if let Some(id) = id {
                    appended.insert(id, len);
                }
                len += 1;
                steps.push(Step::Append);
            }
        }
    }
    let removed = marked.into_iter().map(str::to_owned).collect();
    Ok(Plan { steps, removed })
}

/// `add_messages` on the id-indexed list: O(update) unless it removes.
pub(crate) fn add_to_list<M: MessageLike, S: BuildHasher + Default>(
    list: &mut IdList<M, S>,
    mut update: Vec<M>,
    mut new_id: impl FnMut() -> String,
    history: HistoryIds,
) -> Result<(), ReduceError> {
    let clear = take_tail(&mut update);
    assign_ids(&mut update, &mut new_id);
    // The common update (appends and replacements on a history whose
    // messages all have ids) cannot fail and has no history ids to give:
    // each message goes in as it comes, its id hashed once, no plan.
    if (clear || list.unindexed() == 0) && !update.iter().any(MessageLike::is_removal) {
        if clear {
            list.clear();
        }
        for message in update {
            list.upsert(message);
        }
        return Ok(());
    }
    let plan = if clear {
        plan(&update, 0, |_| None)?
    } else {
        plan(&update, list.len(), |id| list.position(id))?
    };
    if clear {
        list.clear();
    } else {
        list.assign_missing_ids(history_ids(history, &update, &mut new_id));
    }
    for (message, step) in update.into_iter().zip(plan.steps) {
        match step {
            Step::Replace(at) => list.replace_at(at, message),
            Step::Append => list.push_new(message),
            Step::Mark => {}
        }
    }
    if !plan.removed.is_empty() {
        list.remove_ids(&plan.removed);
    }
    Ok(())
}

/// `add_messages` on a plain `Vec`, exactly as LangGraph (an id -> last
/// position map built per call), except after a remove-all.
pub(crate) fn add_to_vec<M: MessageLike>(
    history: &mut Vec<M>,
    mut update: Vec<M>,
    mut new_id: impl FnMut() -> String,
    mode: HistoryIds,
) -> Result<(), ReduceError> {
    let clear = take_tail(&mut update);
    assign_ids(&mut update, &mut new_id);
    let plan = if clear {
        plan(&update, 0, |_| None)?
    } else {
        let positions: HashMap<&str, usize> = history
            .iter()
            .enumerate()
            .filter_map(|(at, message)| message.id().map(|id| (id, at)))
            .collect();
        plan(&update, history.len(), |id| positions.get(id).copied())?
    };
    if clear {
        history.clear();
    } else {
        let mut id_at = history_ids(mode, &update, &mut new_id);
        for (at, message) in history.iter_mut().enumerate() {
            if message.id().is_none()
                && let Some(id) = id_at(at)
            {
                message.set_id(id);
            }
        }
    }
    for (message, step) in update.into_iter().zip(plan.steps) {
        match step {
            Step::Replace(at) => {
                if let Some(slot) = history.get_mut(at) {
                    *slot = message;
                }
            }
            Step::Append => history.push(message),
            Step::Mark => {}
        }
    }
    if !plan.removed.is_empty() {
        history.retain(|message| message.id().is_none_or(|id| !plan.removed.contains(id)));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::{MessageKind, REMOVE_ALL_MESSAGES};

    fn h(id: &str, text: &str) -> Message {
        Message::human(text).with_id(id)
    }

    fn a(id: &str, text: &str) -> Message {
        Message::ai(text).with_id(id)
    }

    fn rm(id: &str) -> Message {
        Message::remove(id)
    }

    /// Ids `gen-1`, `gen-2`, ... so that runs can be compared.
    fn counter() -> impl FnMut() -> String {
        let mut n = 0;
        move || {
            n += 1;
            format!("gen-{n}")
        }
    }

    /// Runs one update on both targets, checks they agree, returns the result.
    fn run(left: Vec<Message>, right: Vec<Message>) -> Result<Vec<Message>, ReduceError> {
        let mut list = Messages::from(left.clone());
        let on_list = add_to_list(list.list_mut(), right.clone(), counter(), HistoryIds::Fresh);
        let mut vec = left.clone();
        let on_vec = add_to_vec(&mut vec, right, counter(), HistoryIds::Fresh);
        assert_eq!(on_list, on_vec.clone().map(|_| ()));
        match on_vec {
            Ok(()) => {
                assert_eq!(list.as_slice(), vec.as_slice());
                Ok(vec)
            }
            Err(err) => {
                assert_eq!(
                    list.as_slice(),
                    Messages::from(left.clone()).as_slice(),
                    "unchanged"
                );
                assert_eq!(vec, left, "unchanged");
                Err(err)
            }
        }
    }

    fn missing(id: &str) -> Result<Vec<Message>, ReduceError> {
        Err(ReduceError::MissingMessageId { id: id.into() })
    }

    fn is_uuid_v4(id: &str) -> bool {
        uuid::Uuid::parse_str(id).is_ok_and(|u| u.get_version_num() == 4 && u.to_string() == id)
    }

    #[test]
    fn appends_new_ids_and_replaces_known_ones_in_place() {
        let out = run(
            vec![h("1", "h"), a("2", "old"), h("3", "h")],
            vec![a("2", "new"), h("4", "n")],
        );
        assert_eq!(
            out,
            Ok(vec![h("1", "h"), a("2", "new"), h("3", "h"), h("4", "n")])
        );
    }

    #[test]
    fn replacement_may_change_the_kind() {
        let out = run(vec![h("1", "x"), h("2", "h")], vec![a("1", "now ai")]);
        assert_eq!(out, Ok(vec![a("1", "now ai"), h("2", "h")]));
    }

    #[test]
    fn empty_updates_change_nothing() {
        assert_eq!(run(vec![], vec![]), Ok(vec![]));
        assert_eq!(run(vec![h("1", "h")], vec![]), Ok(vec![h("1", "h")]));
    }

    #[test]
    fn missing_ids_get_distinct_uuid_v4s() {
        let out = run(
            vec![h("1", "h")],
            vec![Message::human("a"), Message::human("a")],
        );
        assert_eq!(
            out,
            Ok(vec![h("1", "h"), h("gen-1", "a"), h("gen-2", "a")]),
            "no content-based dedup"
        );
        let mut list = Messages::from(vec![h("1", "h")]);
        add_messages(&mut list, vec![Message::human("a"), Message::human("a")]).unwrap();
        let mut vec = vec![h("1", "h")];
        add_messages(&mut vec, vec![Message::human("a"), Message::human("a")]).unwrap();
        for out in [list.as_slice(), vec.as_slice()] {
            assert_eq!(out.len(), 3);
            let (x, y) = (out[1].id().unwrap(), out[2].id().unwrap());
            assert!(is_uuid_v4(x) && is_uuid_v4(y) && x != y);
            assert_eq!(out[0].id(), Some("1"));
        }
    }

    #[test]
    fn history_messages_without_id_get_one() {
        let mut list = Messages::from(vec![Message::human("a")]);
        add_messages(&mut list, vec![Message::human("a")]).unwrap();
        assert!(list.iter().all(|m| m.id().is_some_and(is_uuid_v4)));
        assert_ne!(list[0].id(), list[1].id());
        assert_eq!(list.position(list[0].id().unwrap()), Some(0));
        let mut vec = vec![Message::human("a")];
        add_messages(&mut vec, vec![]).unwrap();
        assert!(vec[0].id().is_some_and(is_uuid_v4));
    }

    #[test]
    fn empty_string_is_a_real_id() {
        assert_eq!(
            run(vec![h("", "a")], vec![h("", "b")]),
            Ok(vec![h("", "b")])
        );
    }

    #[test]
    fn duplicate_ids_in_one_update_collapse_at_the_first_position() {
        let out = run(
            vec![h("1", "orig"), h("2", "h")],
            vec![h("1", "a"), h("1", "b")],
        );
        assert_eq!(out, Ok(vec![h("1", "b"), h("2", "h")]));
        let out = run(vec![], vec![h("x", "1"), h("y", "1"), h("x", "2")]);
        assert_eq!(out, Ok(vec![h("x", "2"), h("y", "1")]));
    }

    #[test]
    fn removals() {
        let left = vec![h("1", "h"), a("2", "a"), h("3", "h"), a("4", "a")];
        assert_eq!(
            run(left.clone(), vec![rm("4"), rm("1")]),
            Ok(vec![a("2", "a"), h("3", "h")])
        );
        // Removing the same id twice is fine.
        assert_eq!(
            run(left.clone(), vec![rm("2"), rm("2")]).map(|v| v.len()),
            Ok(3)
        );
        assert_eq!(run(left.clone(), vec![rm("9")]), missing("9"));
        assert_eq!(run(left, vec![a("5", "a"), rm("9")]), missing("9"));
    }

    #[test]
    fn removals_are_deferred_to_the_end_of_the_update() {
        // Re-adding cancels the removal; the message keeps the old position.
        let left = vec![h("1", "h"), h("2", "old"), h("3", "h")];
        let out = run(left.clone(), vec![rm("2"), h("2", "new")]);
        assert_eq!(out, Ok(vec![h("1", "h"), h("2", "new"), h("3", "h")]));
        // Appended then removed in the same update.
        assert_eq!(
            run(vec![h("1", "h")], vec![h("9", "h"), rm("9")]),
            Ok(vec![h("1", "h")])
        );
        // A removal cannot come before the message it removes.
        assert_eq!(
            run(vec![h("1", "h")], vec![rm("9"), h("9", "h")]),
            missing("9")
        );
        // Appended, removed, appended again: it stays, at its first place.
        let out = run(
            vec![h("1", "h")],
            vec![h("9", "a"), h("8", "b"), rm("9"), h("9", "c")],
        );
        assert_eq!(out, Ok(vec![h("1", "h"), h("9", "c"), h("8", "b")]));
        // A mix.
        let left = vec![h("1", "h"), h("2", "h"), h("3", "h"), h("4", "h")];
        let out = run(left, vec![rm("2"), h("4", "x"), h("5", "h")]);
        assert_eq!(
            out,
            Ok(vec![h("1", "h"), h("3", "h"), h("4", "x"), h("5", "h")])
        );
    }

    #[test]
    fn remove_all_clears_everything_before_it() {
        let left = vec![h("1", "h"), a("2", "a")];
        let out = run(
            left.clone(),
            vec![Message::remove_all(), h("3", "h"), a("4", "a")],
        );
        assert_eq!(out, Ok(vec![h("3", "h"), a("4", "a")]));
        assert_eq!(run(left.clone(), vec![Message::remove_all()]), Ok(vec![]));
        // The last sentinel wins.
        let out = run(
            left.clone(),
            vec![
                Message::remove_all(),
                h("3", "h"),
                Message::remove_all(),
                a("4", "a"),
            ],
        );
        assert_eq!(out, Ok(vec![a("4", "a")]));
        // Earlier messages of the update are dropped unchecked.
        let out = run(left, vec![rm("nope"), Message::remove_all(), h("5", "h")]);
        assert_eq!(out, Ok(vec![h("5", "h")]));
    }

    #[test]
    fn after_remove_all_the_update_is_merged_normally() {
        // Our choice (d): duplicates after the sentinel collapse...
        let out = run(
            vec![h("1", "h")],
            vec![Message::remove_all(), h("x", "1"), h("x", "2")],
        );
        assert_eq!(out, Ok(vec![h("x", "2")]));
        // ...a removal after it must name an id added after it...
        assert_eq!(
            run(vec![h("1", "h")], vec![Message::remove_all(), rm("1")]),
            missing("1")
        );
        assert_eq!(
            run(vec![h("1", "h")], vec![Message::remove_all(), rm("9")]),
            missing("9")
        );
        // ...and then it works as usual.
        let out = run(
            vec![h("1", "h")],
            vec![Message::remove_all(), h("2", "h"), rm("2")],
        );
        assert_eq!(out, Ok(vec![]));
        // Ids are assigned after the sentinel too.
        let out = run(vec![], vec![Message::remove_all(), Message::ai("x")]);
        assert_eq!(out, Ok(vec![Message::ai("x").with_id("gen-1")]));
    }

    #[test]
    fn the_sentinel_is_plain_in_the_history_and_only_as_a_removal() {
        // In the history it is an ordinary entry (an overwrite can put it there).
        let out = run(vec![Message::remove_all()], vec![h("1", "h")]);
        assert_eq!(out, Ok(vec![Message::remove_all(), h("1", "h")]));
        // A non-removal with that id is an ordinary message.
        let out = run(vec![h("1", "h")], vec![h(REMOVE_ALL_MESSAGES, "x")]);
        assert_eq!(out, Ok(vec![h("1", "h"), h(REMOVE_ALL_MESSAGES, "x")]));
    }

    #[test]
    fn vec_history_with_duplicate_ids_behaves_as_langgraph() {
        let left = vec![h("1", "a"), h("2", "h"), h("1", "b")];
        let mut vec = left.clone();
        add_messages(&mut vec, vec![h("1", "c")]).unwrap();
        assert_eq!(
            vec,
            [h("1", "a"), h("2", "h"), h("1", "c")],
            "the last one is updated"
        );
        let mut vec = left.clone();
        add_messages(&mut vec, vec![rm("1")]).unwrap();
        assert_eq!(vec, [h("2", "h")], "a removal drops all");
        // Messages keeps one message per id.
        let mut list = Messages::from(left);
        assert_eq!(list.as_slice(), [h("1", "b"), h("2", "h")]);
        add_messages(&mut list, vec![h("1", "c")]).unwrap();
        assert_eq!(list.as_slice(), [h("1", "c"), h("2", "h")]);
    }

    #[derive(Debug, Clone, PartialEq)]
    enum Custom {
        Msg(Option<String>),
        Del(Option<String>),
    }

    impl MessageLike for Custom {
        fn id(&self) -> Option<&str> {
            match self {
                Custom::Msg(id) | Custom::Del(id) => id.as_deref(),
            }
        }
        fn set_id(&mut self, new: String) {
            if let Custom::Msg(id) = self {
                *id = Some(new);
            }
        }
        fn is_removal(&self) -> bool {
            matches!(self, Custom::Del(_))
        }
    }

    #[test]
    fn a_removal_without_id_is_refused() {
        let mut vec = vec![Custom::Msg(Some("1".into()))];
        let err = add_messages(&mut vec, vec![Custom::Del(None)]);
        assert_eq!(
            err,
            Err(ReduceError::MissingMessageId { id: String::new() })
        );
        assert_eq!(vec, [Custom::Msg(Some("1".into()))]);
    }

    /// A message whose `set_id` does nothing: never matched, never a panic.
    #[derive(Debug, Clone, PartialEq)]
    struct Stubborn(Option<&'static str>);

    impl MessageLike for Stubborn {
        fn id(&self) -> Option<&str> {
            self.0
        }
        fn set_id(&mut self, _: String) {}
        fn is_removal(&self) -> bool {
            false
        }
    }

    #[test]
    fn a_message_that_refuses_an_id_is_appended() {
        let mut vec = vec![Stubborn(None), Stubborn(Some("a"))];
        add_messages(&mut vec, vec![Stubborn(None), Stubborn(Some("a"))]).unwrap();
        assert_eq!(vec, [Stubborn(None), Stubborn(Some("a")), Stubborn(None)]);
        let mut list: IdList<Stubborn> = IdList::from_items([Stubborn(None)]);
        add_to_list(&mut list, vec![Stubborn(None)], new_id, HistoryIds::Fresh).unwrap();
        assert_eq!(list.len(), 2);
    }

    #[test]
    fn kinds_survive_a_merge() {
        let out = run(vec![], vec![Message::tool("r", "c1").with_id("t")]).unwrap();
        assert_eq!(out[0].kind(), MessageKind::Tool);
    }

    // --- Complexity, by counting -------------------------------------------

    use std::cell::Cell;

    thread_local! {
        /// Every call of a `MessageLike` method and every clone of a
        /// `Counted` message, on this thread.
        static TOUCHES: Cell<u64> = const { Cell::new(0) };
    }

    fn touches() -> u64 {
        TOUCHES.with(Cell::get)
    }

    fn touch() {
        TOUCHES.with(|t| t.set(t.get() + 1));
    }

    /// A message that counts how often `add_messages` looks at it.
    #[derive(Debug, PartialEq)]
    struct Counted {
        id: Option<String>,
        n: u32,
        removal: bool,
    }

    impl Clone for Counted {
        fn clone(&self) -> Self {
            touch();
            Counted {
                id: self.id.clone(),
                n: self.n,
                removal: self.removal,
            }
        }
    }

    impl MessageLike for Counted {
        fn id(&self) -> Option<&str> {
            touch();
            self.id.as_deref()
        }
        fn set_id(&mut self, id: String) {
            touch();
            self.id = Some(id);
        }
        fn is_removal(&self) -> bool {
            touch();
            self.removal
        }
    }

    fn counted(id: &str, n: u32) -> Counted {
        Counted {
            id: Some(id.to_owned()),
            n,
            removal: false,
        }
    }

    const BIG: u32 = 100_000;

    fn big_list() -> IdList<Counted> {
        IdList::from_items((0..BIG).map(|i| counted(&format!("m{i}"), i)))
    }

    /// How many times `add_messages` touched any message (of the history or
    /// of the update) while merging `update` into `list`.
    fn touches_of(list: &mut IdList<Counted>, update: Vec<Counted>) -> u64 {
        let before = touches();
        add_to_list(list, update, new_id, HistoryIds::Fresh).unwrap();
        touches() - before
    }

    #[test]
    fn appending_to_a_long_history_touches_only_the_update() {
        let mut list = big_list();
        // One append: a constant number of calls, not ~100,000.
        let cost = touches_of(&mut list, vec![counted("new", 0)]);
        assert!(cost <= 10, "append touched messages {cost} times");
        assert_eq!(list.len(), BIG as usize + 1);
        assert_eq!(list.items().last().map(|m| m.n), Some(0));
        // An id-less append (a UUID is assigned) costs the same.
        let cost = touches_of(
            &mut list,
            vec![Counted {
                id: None,
                n: 1,
                removal: false,
            }],
        );
        assert!(cost <= 10, "id-less append touched messages {cost} times");
        // An update in the middle, by id: constant too, and in place.
        let cost = touches_of(&mut list, vec![counted("m50000", 7)]);
        assert!(cost <= 10, "update touched messages {cost} times");
        assert_eq!(list.items()[50_000].n, 7);
        // 100 appends cost about 100 times one.
        let update = (0..100).map(|i| counted(&format!("k{i}"), i)).collect();
        let cost = touches_of(&mut list, update);
        assert!(
            cost <= 100 * 10,
            "100 appends touched messages {cost} times"
        );
        assert_eq!(list.len(), BIG as usize + 102);
    }

    thread_local! {
        /// Ids hashed by a `CountingHasher` list, on this thread.
        static HASHED: Cell<u64> = const { Cell::new(0) };
    }

    /// SipHash, as the default, counting each id it hashes.
    #[derive(Default, Clone)]
    struct CountingHasher(std::hash::RandomState);

    impl BuildHasher for CountingHasher {
        type Hasher = std::hash::DefaultHasher;
        fn build_hasher(&self) -> Self::Hasher {
            HASHED.with(|h| h.set(h.get() + 1));
            self.0.build_hasher()
        }
    }

    #[test]
    fn appends_and_replacements_hash_each_id_once() {
        let mut list: IdList<Message, CountingHasher> =
            IdList::from_items([h("1", "hi"), a("2", "hello")]);
        let hashed = |list: &mut IdList<Message, CountingHasher>, update| {
            let before = HASHED.with(Cell::get);
            add_to_list(list, update, counter(), HistoryIds::Fresh).unwrap();
            HASHED.with(Cell::get) - before
        };
        // Two appends, a replacement, and an id given twice in the update
        // (appended, then replaced in place): one hash per message.
        let update = vec![a("3", "x"), a("2", "hello!"), a("4", "y"), a("3", "x!")];
        assert_eq!(hashed(&mut list, update), 4);
        let texts: Vec<_> = list.items().iter().map(Message::text).collect();
        assert_eq!(texts, ["hi", "hello!", "x!", "y"]);
        // After a remove-all, the same.
        let update = vec![Message::remove_all(), a("5", "z"), a("5", "z!")];
        assert_eq!(hashed(&mut list, update), 2);
        assert_eq!(list.items().len(), 1);
        assert_eq!(list.position("5"), Some(0));
    }

    #[test]
    fn the_counter_does_see_whole_history_work() {
        // The same counter on the paths that are O(history), so the bounds
        // above are meaningful.
        let mut list = big_list();
        let removal = Counted {
            id: Some("m1".into()),
            n: 0,
            removal: true,
        };
        let cost = touches_of(&mut list, vec![removal]);
        assert!(cost >= u64::from(BIG), "a removal rescans: {cost}");
        let mut vec: Vec<Counted> = (0..BIG).map(|i| counted(&format!("m{i}"), i)).collect();
        let before = touches();
        add_to_vec(&mut vec, vec![counted("new", 0)], new_id, HistoryIds::Fresh).unwrap();
        assert!(
            touches() - before >= u64::from(BIG),
            "Vec<M> is O(history), as LangGraph"
        );
    }
}
