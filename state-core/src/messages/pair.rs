//! A message given as a role and its content: LangGraph's JSON `[role,
//! content]` pair (read in `json.rs`) and LangChain's `(role, content)`
//! tuple (`From<(R, C)> for Message`), which read a role the same way.

use super::Content;
use super::message::{Message, MessageKind};
use super::tag::{self, ROLES, Tag};
use serde_json::{Map, Value};

/// The tag of a `[role, content]` pair's role (LangChain's tuple), or why
/// a pair cannot carry that role.
pub(super) fn pair_tag(role: &str) -> Result<Tag, String> {
    let tag = tag::from_role(role)
        .ok_or_else(|| format!("unknown message role \"{role}\"; expected one of {ROLES}"))?;
    match tag.kind {
        MessageKind::Tool => Err(r#"a "tool" message needs a "tool_call_id"; give it as an object, not a [role, content] pair"#.into()),
        MessageKind::Function => Err(r#"a "function" message needs a "name"; give it as an object, not a [role, content] pair"#.into()),
        MessageKind::Remove => Err(
            r#"a "remove" message needs an "id"; give it as {"type": "remove", "id": ...}"#.into(),
        ),
        _ => Ok(tag),
    }
}

/// The message of a `[role, content]` pair whose role [`pair_tag`] read.
pub(super) fn pair_message(tag: Tag, content: Content) -> Message {
    let mut message = Message::bare(tag.kind, content);
    if tag.developer {
        message.extra = developer_kwargs();
    }
    message
}

/// The extra keys of a bare developer message.
fn developer_kwargs() -> Map<String, Value> {
    let mut kwargs = Map::new();
    kwargs.insert("__openai_role__".into(), Value::from("developer"));
    let mut extra = Map::new();
    extra.insert("additional_kwargs".into(), Value::Object(kwargs));
    extra
}

impl<R: AsRef<str>, C: Into<Content>> From<(R, C)> for Message {
    /// LangChain's `(role, content)` tuple, read as the JSON `[role,
    /// content]` pair is: `"human"` or `"user"`, `"ai"` or `"assistant"`,
    /// `"system"`, and `"developer"` (a system message marked as OpenAI's
    /// developer). LangChain refuses every other role in a tuple (`"tool"`
    /// and `"function"` lack their call id or name, `"remove"` its id); here
    /// any other role gives a chat message with that role
    /// ([`Message::chat`]), so a conversion never fails.
    ///
    /// ```
    /// use state_core::{Message, MessageKind};
    ///
    /// assert_eq!(Message::from(("user", "hi")), Message::human("hi"));
    /// assert_eq!(Message::from(("assistant", "hello")).kind(), MessageKind::Ai);
    /// let critic = Message::from(("critic", "Too long."));
    /// assert_eq!(critic, Message::chat("critic", "Too long."));
    /// ```
    fn from((role, content): (R, C)) -> Self {
        let role = role.as_ref();
        let content = content.into();
        match pair_tag(role) {
            Ok(tag) => pair_message(tag, content),
            Err(_) => Message::chat(role, content),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tuples_convert_as_langchain_reads_them() {
        for (role, kind) in [
            ("human", MessageKind::Human),
            ("user", MessageKind::Human),
            ("ai", MessageKind::Ai),
            ("assistant", MessageKind::Ai),
            ("system", MessageKind::System),
        ] {
            let message = Message::from((role, "x"));
            assert_eq!(message, Message::bare(kind, "x".into()), "{role}");
        }
        let developer = Message::from(("developer", "be brief"));
        assert_eq!(developer.kind(), MessageKind::System);
        assert_eq!(
            developer.extra()["additional_kwargs"],
            json!({"__openai_role__": "developer"})
        );
        // The same as the JSON pair.
        let pair: Message = serde_json::from_value(json!(["developer", "be brief"])).unwrap();
        assert_eq!(developer, pair);
        // Owned roles and block content convert too.
        let blocks = vec![json!({"type": "text", "text": "b"})];
        let message = Message::from((String::from("user"), blocks.clone()));
        assert_eq!(message, Message::human(blocks));
    }

    #[test]
    fn tuples_with_roles_langchain_refuses_are_chat_messages() {
        // LangChain refuses these tuple roles: tool, function and remove
        // lack their call id, name or id; the others are no role it knows.
        for role in ["tool", "function", "remove", "chat", "critic", "", "User"] {
            let message = Message::from((role, "x"));
            assert_eq!(message, Message::chat(role, "x"), "{role}");
            assert_eq!(message.role(), Some(role));
        }
    }
}
