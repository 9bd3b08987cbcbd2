//! [`MessageLike`]: what `add_messages` (`add.rs`, `reducer.rs`) and the
//! id index behind [`Messages`](super::Messages) (`index.rs`) need of a
//! message.

use super::{Message, REMOVE_ALL_MESSAGES};

/// A message type `add_messages` can merge: it has an optional id that can
/// be set, and some of its values are removals (LangGraph's
/// `RemoveMessage`). [`Message`] implements it; implement it for your own
/// message type to use `add_messages` on a `Vec` of it.
///
/// ```
/// use state_core::MessageLike;
/// use state_core::reducer::add_messages;
///
/// #[derive(Debug, PartialEq)]
/// enum Turn { Said { id: Option<String>, text: String }, Unsay(String) }
///
/// impl MessageLike for Turn {
///     fn id(&self) -> Option<&str> {
///         match self { Turn::Said { id, .. } => id.as_deref(), Turn::Unsay(id) => Some(id) }
///     }
///     fn set_id(&mut self, new: String) {
///         if let Turn::Said { id, .. } = self { *id = Some(new) }
///     }
///     fn is_removal(&self) -> bool { matches!(self, Turn::Unsay(_)) }
/// }
///
/// let said = |id: &str, text: &str| Turn::Said { id: Some(id.into()), text: text.into() };
/// let mut log = vec![said("1", "hi"), said("2", "oops")];
/// add_messages(&mut log, vec![Turn::Unsay("2".into()), said("3", "bye")]).unwrap();
/// assert_eq!(log, [said("1", "hi"), said("3", "bye")]);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a message type",
    label = "`add_messages` cannot merge lists of `{Self}`",
    note = "add_messages needs a message type; implement MessageLike for it or use state_core::Message"
)]
pub trait MessageLike {
    /// The id, if the message has one. `Some("")` is an id like any other.
    fn id(&self) -> Option<&str>;

    /// Sets the id. `add_messages` calls it on messages without one, with a
    /// new UUID v4 (the reducer: when a delta is built, or derived for a
    /// message of the history); afterwards [`id`](MessageLike::id) must
    /// return it (a message that still has no id is appended and never
    /// matched).
    fn set_id(&mut self, id: String);

    /// True for a request to delete the message with this message's id.
    fn is_removal(&self) -> bool;

    /// True for the removal of everything before it: a removal whose id is
    /// [`REMOVE_ALL_MESSAGES`].
    fn is_remove_all(&self) -> bool {
        self.is_removal() && self.id() == Some(REMOVE_ALL_MESSAGES)
    }
}

impl MessageLike for Message {
    fn id(&self) -> Option<&str> {
        Message::id(self)
    }

    fn set_id(&mut self, id: String) {
        self.id = Some(id);
    }

    fn is_removal(&self) -> bool {
        Message::is_removal(self)
    }
}
