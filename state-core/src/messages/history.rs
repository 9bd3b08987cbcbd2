//! [`Messages`]: the id-indexed conversation history.

use super::Message;
use super::index::IdList;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::ops::Index;

/// A conversation history whose messages are indexed by id, so that
/// [`add_messages`](super::add_messages) appends or updates a message by id
/// in O(size of the update), however long the history.
///
/// Ids are unique. Building a history from a list (`From`, `FromIterator`,
/// deserializing) that repeats an id keeps the **later** message at the
/// **earlier** one's position, as merging the list into an empty history
/// would. Building assigns no ids: messages without one are kept as given
/// (as LangGraph's `Overwrite` stores its value untouched), are not
/// indexed, and get an id at the next `add_messages`.
///
/// There is no mutable access to the messages (changing an id would break
/// the index): change the history with `add_messages`, or take it apart
/// with [`into_vec`](Messages::into_vec).
///
/// In JSON it is an array of messages (LangChain's shape out; any accepted
/// message shape in).
///
/// ```
/// use state_core::{Message, Messages};
/// use state_core::reducer::add_messages;
///
/// let mut history = Messages::from(vec![
///     Message::system("be brief").with_id("s"),
///     Message::human("hi").with_id("u1"),
/// ]);
/// add_messages(&mut history, vec![Message::ai("hello").with_id("a1")]).unwrap();
///
/// assert_eq!(history.len(), 3);
/// assert_eq!(history.get("u1").map(Message::text).as_deref(), Some("hi"));
/// assert_eq!(history.position("a1"), Some(2));
/// assert_eq!(history[0].text(), "be brief");
/// assert_eq!(history.last().and_then(Message::id), Some("a1"));
///
/// let json = serde_json::to_value(&history).unwrap();
/// assert_eq!(json[2], serde_json::json!({"type": "ai", "content": "hello", "id": "a1"}));
/// let back: Messages = serde_json::from_value(json).unwrap();
/// assert_eq!(back, history);
/// ```
#[derive(Clone, Default)]
pub struct Messages {
    list: IdList<Message>,
}

impl Messages {
    /// An empty history.
    pub fn new() -> Self {
        Messages::default()
    }

    /// The number of messages.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// True when there are no messages.
    pub fn is_empty(&self) -> bool {
        self.list.len() == 0
    }

    /// The messages in order.
    pub fn iter(&self) -> std::slice::Iter<'_, Message> {
        self.list.items().iter()
    }

    /// The message with this id. O(1).
    pub fn get(&self, id: &str) -> Option<&Message> {
        self.position(id).and_then(|at| self.list.items().get(at))
    }

    /// The position of the message with this id. O(1).
    pub fn position(&self, id: &str) -> Option<usize> {
        self.list.position(id)
    }

    /// True when a message has this id. O(1).
    pub fn contains_id(&self, id: &str) -> bool {
        self.position(id).is_some()
    }

    /// The first message.
    pub fn first(&self) -> Option<&Message> {
        self.list.items().first()
    }

    /// The last message.
    pub fn last(&self) -> Option<&Message> {
        self.list.items().last()
    }

    /// The messages as a slice (for indexing without panics: `.as_slice().get(i)`).
    pub fn as_slice(&self) -> &[Message] {
        self.list.items()
    }

    /// The messages as a `Vec`, dropping the index.
    pub fn into_vec(self) -> Vec<Message> {
        self.list.into_items()
    }

    /// Removes every message.
    pub fn clear(&mut self) {
        self.list.clear();
    }

    pub(super) fn list_mut(&mut self) -> &mut IdList<Message> {
        &mut self.list
    }

    #[cfg(test)]
    pub(super) fn list(&self) -> &IdList<Message> {
        &self.list
    }
}

impl fmt::Debug for Messages {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl PartialEq for Messages {
    /// Equal when the messages are equal, in order.
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for Messages {}

impl Index<usize> for Messages {
    type Output = Message;

    /// The message at this position. Panics when out of range, as a slice
    /// does; use `as_slice().get(i)` to avoid that.
    fn index(&self, at: usize) -> &Message {
        &self.as_slice()[at]
    }
}

impl AsRef<[Message]> for Messages {
    fn as_ref(&self) -> &[Message] {
        self.as_slice()
    }
}

impl FromIterator<Message> for Messages {
    /// Keeps the later of two messages with the same id, at the earlier
    /// one's position; assigns no ids.
    fn from_iter<I: IntoIterator<Item = Message>>(messages: I) -> Self {
        Messages {
            list: IdList::from_items(messages),
        }
    }
}

impl From<Vec<Message>> for Messages {
    /// Keeps the later of two messages with the same id, at the earlier
    /// one's position; assigns no ids.
    fn from(messages: Vec<Message>) -> Self {
        messages.into_iter().collect()
    }
}

impl<const N: usize> From<[Message; N]> for Messages {
    /// As `From<Vec<Message>>`.
    fn from(messages: [Message; N]) -> Self {
        messages.into_iter().collect()
    }
}

impl From<Messages> for Vec<Message> {
    fn from(messages: Messages) -> Self {
        messages.into_vec()
    }
}

impl IntoIterator for Messages {
    type Item = Message;
    type IntoIter = std::vec::IntoIter<Message>;

    fn into_iter(self) -> Self::IntoIter {
        self.into_vec().into_iter()
    }
}

impl<'a> IntoIterator for &'a Messages {
    type Item = &'a Message;
    type IntoIter = std::slice::Iter<'a, Message>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl Serialize for Messages {
    /// A JSON array of messages.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for Messages {
    /// A JSON array of messages in any accepted shape; repeated ids are
    /// handled as by `From<Vec<Message>>`.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Vec::<Message>::deserialize(d).map(Messages::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::add_messages;
    use serde_json::json;

    fn h(id: &str, text: &str) -> Message {
        Message::human(text).with_id(id)
    }

    #[test]
    fn accessors() {
        let history = Messages::from(vec![h("1", "a"), h("2", "b")]);
        assert_eq!(history.len(), 2);
        assert!(!history.is_empty());
        assert!(Messages::new().is_empty());
        assert_eq!(history.get("2"), Some(&h("2", "b")));
        assert_eq!(history.get("3"), None);
        assert_eq!(history.position("1"), Some(0));
        assert!(history.contains_id("1") && !history.contains_id("x"));
        assert_eq!(history.first(), Some(&h("1", "a")));
        assert_eq!(history.last(), Some(&h("2", "b")));
        assert_eq!(history[1], h("2", "b"));
        assert_eq!(history.as_slice().get(2), None);
        assert_eq!(history.iter().count(), 2);
        assert_eq!((&history).into_iter().count(), 2);
        assert_eq!(history.as_ref().len(), 2);
        let v: Vec<Message> = history.clone().into();
        assert_eq!(v, history.clone().into_vec());
        assert_eq!(history.clone().into_iter().collect::<Messages>(), history);
        assert_eq!(Messages::from([h("1", "a")]).len(), 1);
        let mut cleared = history.clone();
        cleared.clear();
        assert!(cleared.is_empty() && cleared.get("1").is_none());
    }

    #[test]
    fn duplicate_ids_keep_the_later_message_at_the_earlier_position() {
        let history: Messages = [h("1", "a"), h("2", "h"), h("1", "b")]
            .into_iter()
            .collect();
        assert_eq!(history.as_slice(), [h("1", "b"), h("2", "h")]);
        assert_eq!(history.position("1"), Some(0));
        assert_eq!(history.position("2"), Some(1));
        // The same as merging the list into an empty history.
        let mut merged = Messages::new();
        add_messages(&mut merged, vec![h("1", "a"), h("2", "h"), h("1", "b")]).unwrap();
        assert_eq!(merged, history);
    }

    #[test]
    fn building_assigns_no_ids() {
        let history = Messages::from(vec![Message::human("no id"), h("z", "z")]);
        assert_eq!(history[0].id(), None);
        assert_eq!(
            serde_json::to_value(&history).unwrap(),
            json!([{"type": "human", "content": "no id", "id": null},
                   {"type": "human", "content": "z", "id": "z"}])
        );
    }

    #[test]
    fn json_is_an_array_of_messages_in_any_shape() {
        let history: Messages = serde_json::from_value(json!([
            "hi",
            ["assistant", "hello"],
            {"role": "user", "content": "how are you", "id": "u2"},
            {"type": "ai", "content": "fine", "id": "a2"},
        ]))
        .unwrap();
        assert_eq!(history.len(), 4);
        assert_eq!(
            history.get("u2").map(Message::text).as_deref(),
            Some("how are you")
        );
        let out = serde_json::to_value(&history).unwrap();
        assert_eq!(out[3], json!({"type": "ai", "content": "fine", "id": "a2"}));
        assert_eq!(serde_json::from_value::<Messages>(out).unwrap(), history);
        let err = serde_json::from_value::<Messages>(json!({"type": "ai", "content": "x"}));
        assert!(err.is_err(), "a history is an array");
        let err = serde_json::from_value::<Messages>(json!(null)).unwrap_err();
        assert!(err.to_string().contains("invalid type: null"), "{err}");
        let err = serde_json::from_value::<Messages>(json!([{"role": "robot", "content": "x"}]))
            .unwrap_err();
        assert!(err.to_string().contains("robot"), "{err}");
    }

    #[test]
    fn debug_and_equality_look_at_the_messages_only() {
        let a = Messages::from(vec![h("1", "a")]);
        let b: Messages =
            serde_json::from_value(json!([{"type": "human", "content": "a", "id": "1"}])).unwrap();
        assert_eq!(a, b);
        assert_eq!(format!("{a:?}"), format!("{:?}", vec![h("1", "a")]));
    }

    #[test]
    fn is_send_and_sync() {
        fn check<T: Send + Sync + 'static>() {}
        check::<Messages>();
        check::<Message>();
    }

    #[test]
    fn index_overhead_is_modest() {
        // A later requirement: 100k messages within 1.5x the heap of a plain
        // Vec<Message>. The index adds one 16-byte entry per message (plus
        // hashbrown's slack), far less than a message itself.
        let history: Messages = (0..100_000)
            .map(|i| {
                Message::human(format!("message {i}")).with_id(uuid::Uuid::new_v4().to_string())
            })
            .collect();
        let index = history.list().index_heap_bytes();
        let plain = history.len() * std::mem::size_of::<Message>()
            + history
                .iter()
                .map(|m| m.id().map_or(0, str::len) + m.text().len())
                .sum::<usize>();
        assert!(
            (index as f64) < 0.25 * plain as f64,
            "index {index} bytes vs plain Vec heap {plain} bytes"
        );
    }
}
