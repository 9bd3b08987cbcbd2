//! The names a message's kind goes by: LangChain's `type` (chunk classes
//! included), OpenAI's `role`, and the class names of LangChain's
//! serialized constructor envelope.

use super::MessageKind;

/// A kind as named in some input, and what the name implies beyond it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Tag {
    pub(super) kind: MessageKind,
    /// OpenAI's `developer`: a system message marked as such.
    pub(super) developer: bool,
    /// A `*MessageChunk` class, read as its message class.
    pub(super) chunk: bool,
}

impl Tag {
    const fn plain(kind: MessageKind) -> Self {
        Tag {
            kind,
            developer: false,
            chunk: false,
        }
    }

    const fn chunk(kind: MessageKind) -> Self {
        Tag {
            kind,
            developer: false,
            chunk: true,
        }
    }
}

/// The accepted OpenAI roles (and LangChain types that work as roles), for
/// error messages.
pub(super) const ROLES: &str =
    r#""human", "user", "ai", "assistant", "system", "developer", "tool", "function" or "remove""#;

/// The accepted LangChain types, for error messages.
pub(super) const TYPES: &str = r#""human", "ai", "system", "tool", "function", "chat", "remove", a chunk type ("HumanMessageChunk", "AIMessageChunk", "SystemMessageChunk", "ToolMessageChunk", "FunctionMessageChunk", "ChatMessageChunk") or an OpenAI role ("user", "assistant", "developer")"#;

/// The accepted serialized class names, for error messages.
pub(super) const CLASSES: &str = "HumanMessage, AIMessage, SystemMessage, ToolMessage, FunctionMessage, ChatMessage, RemoveMessage or one of their *MessageChunk classes";

/// An OpenAI role, or a LangChain type used as one (also the role of a
/// `[role, content]` pair). Not `chat`: LangChain refuses it as a role,
/// since a chat message's `role` is its free role.
pub(super) fn from_role(name: &str) -> Option<Tag> {
    Some(match name {
        "human" | "user" => Tag::plain(MessageKind::Human),
        "ai" | "assistant" => Tag::plain(MessageKind::Ai),
        "system" => Tag::plain(MessageKind::System),
        "developer" => Tag {
            developer: true,
            ..Tag::plain(MessageKind::System)
        },
        "tool" => Tag::plain(MessageKind::Tool),
        "function" => Tag::plain(MessageKind::Function),
        "remove" => Tag::plain(MessageKind::Remove),
        _ => return None,
    })
}

/// A LangChain `type`: a message type, a chunk class's type (which is its
/// class name), or any role [`from_role`] accepts.
pub(super) fn from_type(name: &str) -> Option<Tag> {
    Some(match name {
        "chat" => Tag::plain(MessageKind::Chat),
        "HumanMessageChunk" => Tag::chunk(MessageKind::Human),
        "AIMessageChunk" => Tag::chunk(MessageKind::Ai),
        "SystemMessageChunk" => Tag::chunk(MessageKind::System),
        "ToolMessageChunk" => Tag::chunk(MessageKind::Tool),
        "FunctionMessageChunk" => Tag::chunk(MessageKind::Function),
        "ChatMessageChunk" => Tag::chunk(MessageKind::Chat),
        _ => return from_role(name),
    })
}

/// The class at the end of a constructor envelope's `id` path.
pub(super) fn from_class(name: &str) -> Option<Tag> {
    Some(match name {
        "HumanMessage" => Tag::plain(MessageKind::Human),
        "AIMessage" => Tag::plain(MessageKind::Ai),
        "SystemMessage" => Tag::plain(MessageKind::System),
        "ToolMessage" => Tag::plain(MessageKind::Tool),
        "FunctionMessage" => Tag::plain(MessageKind::Function),
        "ChatMessage" => Tag::plain(MessageKind::Chat),
        "RemoveMessage" => Tag::plain(MessageKind::Remove),
        // A chunk class's type is its class name.
        _ if name.ends_with("MessageChunk") => return from_type(name),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chat_is_a_type_not_a_role() {
        assert_eq!(from_type("chat"), Some(Tag::plain(MessageKind::Chat)));
        assert_eq!(from_role("chat"), None);
    }

    #[test]
    fn chunks_are_types_and_classes_not_roles() {
        for (name, kind) in [
            ("HumanMessageChunk", MessageKind::Human),
            ("AIMessageChunk", MessageKind::Ai),
            ("SystemMessageChunk", MessageKind::System),
            ("ToolMessageChunk", MessageKind::Tool),
            ("FunctionMessageChunk", MessageKind::Function),
            ("ChatMessageChunk", MessageKind::Chat),
        ] {
            assert_eq!(from_type(name), Some(Tag::chunk(kind)), "{name}");
            assert_eq!(from_class(name), Some(Tag::chunk(kind)), "{name}");
            assert_eq!(from_role(name), None, "{name}");
        }
        assert_eq!(from_class("RemoveMessageChunk"), None);
    }

    #[test]
    fn classes_name_their_kind() {
        assert_eq!(from_class("AIMessage"), Some(Tag::plain(MessageKind::Ai)));
        assert_eq!(
            from_class("ChatMessage"),
            Some(Tag::plain(MessageKind::Chat))
        );
        assert_eq!(from_class("ai"), None, "a type is not a class");
        assert_eq!(from_class("BaseMessage"), None);
    }

    #[test]
    fn developer_is_a_marked_system_role() {
        let tag = from_role("developer").unwrap();
        assert_eq!(tag.kind, MessageKind::System);
        assert!(tag.developer && !tag.chunk);
        assert_eq!(from_type("developer"), Some(tag));
    }
}
