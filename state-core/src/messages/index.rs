//! The id-indexed list behind [`Messages`](super::Messages): a `Vec` plus an
//! index from id to position that does not store the ids a second time.
//!
//! The index maps a 64-bit keyed hash of each id (`RandomState`, so ids
//! chosen by an adversary cannot force collisions) to the id's position. A
//! lookup checks the id stored at that position, so a hash collision can
//! never return the wrong message; colliding ids (astronomically rare) go
//! to a small overflow map. Per message the index costs one `(u64, usize)`
//! entry of a hash table: about 20-40 bytes, and no copy of the id string.

use super::like::MessageLike;
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, BuildHasherDefault, Hasher, RandomState};

/// Hashes a `u64` key that is already a keyed hash to itself.
#[derive(Default, Clone, Copy)]
pub(crate) struct Prehashed(u64);

impl Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `write_u64` is used; fold anything else in, to stay correct.
        for &byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(byte);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

type PrehashedMap<V> = HashMap<u64, V, BuildHasherDefault<Prehashed>>;

/// A list of messages whose ids are unique, with their positions indexed.
///
/// Items without an id may be stored (an overwrite keeps what it is given);
/// they are not indexed, and `unindexed` counts them so that
/// `add_messages` can give them ids without scanning a list that has none.
#[derive(Clone)]
pub(crate) struct IdList<M, S = RandomState> {
    items: Vec<M>,
    hasher: S,
    /// Hash of an id -> the position of the (first) message with that hash.
    slots: PrehashedMap<usize>,
    /// Hash -> positions of further ids with the same hash (collisions).
    overflow: PrehashedMap<Vec<usize>>,
    /// How many items have no id.
    unindexed: usize,
}

impl<M, S: Default> Default for IdList<M, S> {
    fn default() -> Self {
        IdList {
            items: Vec::new(),
            hasher: S::default(),
            slots: PrehashedMap::default(),
            overflow: PrehashedMap::default(),
            unindexed: 0,
        }
    }
}

impl<M, S> IdList<M, S> {
    pub(crate) fn items(&self) -> &[M] {
        &self.items
    }

    pub(crate) fn into_items(self) -> Vec<M> {
        self.items
    }

    pub(crate) fn len(&self) -> usize {
        self.items.len()
    }

    /// How many messages have no id (none is indexed).
    pub(crate) fn unindexed(&self) -> usize {
        self.unindexed
    }
}

impl<M: MessageLike, S: BuildHasher> IdList<M, S> {
    /// Builds the list from `items`: a message whose id was already seen
    /// replaces the earlier one at its position. No ids are assigned.
    pub(crate) fn from_items(items: impl IntoIterator<Item = M>) -> Self
    where
        S: Default,
    {
        let mut list = IdList::default();
        for item in items {
            list.upsert(item);
        }
        list
    }

    /// Puts `item` in place of the message with its id, or appends it (as
    /// one without an id). Its id is hashed once for both.
    pub(crate) fn upsert(&mut self, item: M) {
        let Some(id) = item.id() else {
            self.unindexed += 1;
            return self.items.push(item);
        };
        let hash = self.hasher.hash_one(id);
        match self.position_hashed(hash, id) {
            Some(at) => self.items[at] = item,
            None => {
                self.index(hash, self.items.len());
                self.items.push(item);
            }
        }
    }

    /// The position of the message with this id. O(1).
    pub(crate) fn position(&self, id: &str) -> Option<usize> {
        self.position_hashed(self.hasher.hash_one(id), id)
    }

    /// [`position`](IdList::position), the id's hash given.
    fn position_hashed(&self, hash: u64, id: &str) -> Option<usize> {
        let holds = |at: &usize| self.items.get(*at).and_then(MessageLike::id) == Some(id);
        if let Some(at) = self.slots.get(&hash).filter(|at| holds(at)) {
            return Some(*at);
        }
        self.overflow
            .get(&hash)?
            .iter()
            .copied()
            .find(|at| holds(at))
    }

    /// Appends `item`, whose id (if any) must not be in the list yet.
    pub(crate) fn push_new(&mut self, item: M) {
        let at = self.items.len();
        match item.id() {
            Some(id) => {
                let hash = self.hasher.hash_one(id);
                self.index(hash, at);
            }
            None => self.unindexed += 1,
        }
        self.items.push(item);
    }

    fn index(&mut self, hash: u64, at: usize) {
        match self.slots.entry(hash) {
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(at);
            }
            std::collections::hash_map::Entry::Occupied(_) => {
                self.overflow.entry(hash).or_default().push(at);
            }
        }
    }

    /// Puts `item` at position `at`, in place of a message with the same id.
    /// (Should the ids differ, the index is rebuilt, so it stays right.)
    pub(crate) fn replace_at(&mut self, at: usize, item: M) {
        let Some(slot) = self.items.get_mut(at) else {
            return self.push_new(item);
        };
        let same_id = slot.id() == item.id();
        *slot = item;
        if !same_id {
            self.reindex();
        }
    }

    /// Gives every message without an id the one `new_id` returns for its
    /// position (none: it stays without). Free when there are none.
    pub(crate) fn assign_missing_ids(&mut self, mut new_id: impl FnMut(usize) -> Option<String>) {
        if self.unindexed == 0 {
            return;
        }
        for at in 0..self.items.len() {
            let Some(item) = self.items.get_mut(at) else {
                continue;
            };
            if item.id().is_some() {
                continue;
            }
            let Some(id) = new_id(at) else {
                continue;
            };
            item.set_id(id);
            if let Some(hash) = item.id().map(|id| self.hasher.hash_one(id)) {
                self.index(hash, at);
                self.unindexed -= 1;
            }
        }
    }

    /// Drops every message whose id is in `ids`. O(len).
    pub(crate) fn remove_ids(&mut self, ids: &HashSet<String>) {
        self.items
            .retain(|item| item.id().is_none_or(|id| !ids.contains(id)));
        self.reindex();
    }

    /// Empties the list.
    pub(crate) fn clear(&mut self) {
        self.items.clear();
        self.slots.clear();
        self.overflow.clear();
        self.unindexed = 0;
    }

    /// Rebuilds the index from the items. O(len).
    fn reindex(&mut self) {
        self.slots.clear();
        self.overflow.clear();
        self.unindexed = 0;
        for at in 0..self.items.len() {
            let hash = match self.items.get(at).and_then(MessageLike::id) {
                Some(id) => self.hasher.hash_one(id),
                None => {
                    self.unindexed += 1;
                    continue;
                }
            };
            self.index(hash, at);
        }
    }

    /// About how many heap bytes the index takes (hashbrown: one 16-byte
    /// entry and one control byte per bucket, buckets a power of two at
    /// most 7/8 full).
    #[cfg(test)]
    pub(crate) fn index_heap_bytes(&self) -> usize {
        let buckets = |capacity: usize| match capacity {
            0 => 0,
            c => (c * 8 / 7).next_power_of_two(),
        };
        buckets(self.slots.capacity()) * (16 + 1) + buckets(self.overflow.capacity()) * (8 + 24 + 1)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A message type for tests: an id and a payload.
    #[derive(Debug, Clone, PartialEq)]
    pub(crate) struct Item(pub Option<String>, pub u32);

    impl MessageLike for Item {
        fn id(&self) -> Option<&str> {
            self.0.as_deref()
        }
        fn set_id(&mut self, id: String) {
            self.0 = Some(id);
        }
        fn is_removal(&self) -> bool {
            false
        }
    }

    pub(crate) fn item(id: &str, n: u32) -> Item {
        Item(Some(id.to_owned()), n)
    }

    /// Hashes everything to 0: every id collides.
    #[derive(Default, Clone, Copy)]
    struct Colliding;

    impl Hasher for Colliding {
        fn finish(&self) -> u64 {
            0
        }
        fn write(&mut self, _: &[u8]) {}
    }

    type Collide = BuildHasherDefault<Colliding>;

    fn check_positions<S: BuildHasher>(list: &IdList<Item, S>) {
        for (at, item) in list.items().iter().enumerate() {
            if let Some(id) = item.id() {
                assert_eq!(list.position(id), Some(at), "id {id}");
            }
        }
    }

    #[test]
    fn positions_follow_pushes_replacements_and_removals() {
        let mut list: IdList<Item> = IdList::from_items([item("a", 1), item("b", 1), item("c", 1)]);
        check_positions(&list);
        assert_eq!(list.position("z"), None);
        list.replace_at(1, item("b", 2));
        assert_eq!(list.items()[1], item("b", 2));
        list.remove_ids(&HashSet::from(["a".to_owned()]));
        assert_eq!(list.items(), [item("b", 2), item("c", 1)]);
        check_positions(&list);
        assert_eq!(list.position("a"), None);
    }

    #[test]
    fn duplicates_keep_the_later_message_at_the_earlier_position() {
        let list: IdList<Item> =
            IdList::from_items([item("a", 1), item("b", 1), item("a", 2), Item(None, 3)]);
        assert_eq!(list.items(), [item("a", 2), item("b", 1), Item(None, 3)]);
        check_positions(&list);
    }

    #[test]
    fn colliding_hashes_still_find_the_right_message() {
        let mut list: IdList<Item, Collide> =
            IdList::from_items([item("a", 1), item("b", 1), item("a", 2), item("c", 1)]);
        assert_eq!(list.items(), [item("a", 2), item("b", 1), item("c", 1)]);
        check_positions(&list);
        assert_eq!(list.position("d"), None);
        list.remove_ids(&HashSet::from(["b".to_owned()]));
        check_positions(&list);
        assert_eq!(list.position("b"), None);
        list.push_new(item("d", 1));
        check_positions(&list);
        list.push_new(Item(None, 9));
        list.assign_missing_ids(|_| Some("e".to_owned()));
        check_positions(&list);
        assert_eq!(list.position("e"), Some(3));
    }

    #[test]
    fn ids_are_assigned_to_unindexed_items_only() {
        let mut list: IdList<Item> =
            IdList::from_items([Item(None, 1), item("x", 2), Item(None, 3)]);
        let mut n = 0;
        list.assign_missing_ids(|_| {
            n += 1;
            Some(format!("gen{n}"))
        });
        assert_eq!(
            list.items(),
            [item("gen1", 1), item("x", 2), item("gen2", 3)]
        );
        check_positions(&list);
        list.assign_missing_ids(|_| unreachable!("no message lacks an id"));
    }

    #[test]
    fn replacing_with_a_different_id_reindexes() {
        let mut list: IdList<Item> = IdList::from_items([item("a", 1), item("b", 1)]);
        list.replace_at(0, item("z", 1));
        check_positions(&list);
        assert_eq!(list.position("a"), None);
        list.replace_at(99, item("q", 1));
        assert_eq!(list.position("q"), Some(2));
    }

    #[test]
    fn clear_empties_everything() {
        let mut list: IdList<Item> = IdList::from_items([item("a", 1), Item(None, 1)]);
        list.clear();
        assert_eq!(list.len(), 0);
        assert_eq!(list.position("a"), None);
        assert_eq!(list.unindexed, 0);
    }

    #[test]
    fn the_index_is_one_small_entry_per_message() {
        // No copy of the id strings: one (u64, usize) entry per message.
        let list: IdList<Item> =
            IdList::from_items((0..100_000).map(|i| item(&format!("id-{i}"), i)));
        let per_message = list.index_heap_bytes() as f64 / 100_000.0;
        assert!(per_message <= 40.0, "{per_message} bytes per message");
    }
}
