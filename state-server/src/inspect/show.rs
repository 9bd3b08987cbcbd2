//! How the inspector shows a JSON value: a message as a chat bubble (role,
//! content, tool calls), a list of messages as a conversation, anything
//! else as indented JSON, cut short past a bound so that no value makes a
//! page heavy.

use maud::{Markup, html};
use serde_json::Value;

/// The most characters of one JSON value shown before it is cut short.
pub(crate) const MAX_JSON_CHARS: usize = 4000;

/// The most items of one list shown; the rest are counted, not shown.
pub(crate) const MAX_ITEMS: usize = 50;

/// `value` as indented JSON, at most [`MAX_JSON_CHARS`] characters.
pub(crate) fn json(value: &Value) -> Markup {
    let text = serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string());
    let (shown, cut) = cut(&text, MAX_JSON_CHARS);
    html! {
        pre.json { code { (shown) } }
        @if cut > 0 { p.cut { "… " (cut) " more characters" } }
    }
}

/// `value` on one line, short: a string as itself, anything else as
/// compact JSON, at most `max` characters.
pub(crate) fn inline(value: &Value, max: usize) -> String {
    let text = match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    match cut(&text, max) {
        (shown, 0) => shown.to_owned(),
        (shown, _) => format!("{shown}…"),
    }
}

/// The first `max` characters of `text`, and how many were left out.
fn cut(text: &str, max: usize) -> (&str, usize) {
    match text.char_indices().nth(max) {
        Some((end, _)) => (&text[..end], text[end..].chars().count()),
        None => (text, 0),
    }
}

/// The role of a message in LangChain's shape (`{"type": "human", ..}`)
/// or OpenAI's (`{"role": "user", ..}`), when `value` is one.
pub(crate) fn message_role(value: &Value) -> Option<&str> {
    let object = value.as_object()?;
    if !object.contains_key("content") && !object.contains_key("tool_calls") {
        // A removal has no content to speak of, but is one.
        return (object.get("type")?.as_str()? == "remove").then_some("remove");
    }
    let role = object
        .get("type")
        .or_else(|| object.get("role"))?
        .as_str()?;
    matches!(
        role,
        "human"
            | "user"
            | "ai"
            | "assistant"
            | "system"
            | "developer"
            | "tool"
            | "function"
            | "chat"
            | "remove"
            | "AIMessageChunk"
            | "HumanMessageChunk"
    )
    .then_some(role)
}

/// Whether `value` is a non-empty list of messages.
pub(crate) fn is_messages(value: &Value) -> bool {
    value.as_array().is_some_and(|list| all_messages(list))
}

/// Whether `list` is non-empty and every item is a message.
fn all_messages(list: &[Value]) -> bool {
    !list.is_empty() && list.iter().all(|item| message_role(item).is_some())
}

/// The class and label of a role: people see "user", "assistant".
fn role_label(role: &str) -> (&'static str, &'static str) {
    match role {
        "human" | "user" | "HumanMessageChunk" => ("user", "user"),
        "ai" | "assistant" | "AIMessageChunk" => ("assistant", "assistant"),
        "system" | "developer" => ("system", "system"),
        "tool" | "function" => ("tool", "tool"),
        "remove" => ("remove", "removed"),
        _ => ("other", "message"),
    }
}

/// One message as a chat bubble.
pub(crate) fn bubble(message: &Value) -> Markup {
    let role = message_role(message).unwrap_or("other");
    let (class, label) = role_label(role);
    let id = message.get("id").and_then(Value::as_str);
    if role == "remove" {
        return html! {
            div.bubble.remove {
                span.role { "removed" }
                @match id {
                    Some("__remove_all__") => " every message before this update",
                    Some(id) => { " message " code { (id) } },
                    None => " a message",
                }
            }
        };
    }
    let name = message.get("name").and_then(Value::as_str);
    let tool_calls = message
        .get("tool_calls")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    html! {
        div class={ "bubble " (class) } {
            div.who {
                span.role { (label) }
                @if let Some(name) = name { " " span.name { (name) } }
                @if let Some(call) = message.get("tool_call_id").and_then(Value::as_str) {
                    " " span.reply-to { "answers " code { (call) } }
                }
                @if let Some(id) = id { " " span.id { "id " code { (id) } } }
            }
            (content(message.get("content").unwrap_or(&Value::Null)))
            @for call in tool_calls {
                div.tool-call {
                    span.tool { "calls " code { (inline(call.get("name").unwrap_or(&Value::Null), 200)) } }
                    @if let Some(args) = call.get("args") { " " code.args { (inline(args, 400)) } }
                    @if let Some(id) = call.get("id").and_then(Value::as_str) { " " span.id { "id " code { (id) } } }
                }
            }
        }
    }
}

/// A message's content: text as text, a list of blocks as their text (and
/// any other block as JSON).
fn content(content: &Value) -> Markup {
    match content {
        Value::String(text) if text.is_empty() => html! {},
        Value::String(text) => html! { div.content { (cut(text, MAX_JSON_CHARS).0) } },
        Value::Array(blocks) => html! {
            @for block in blocks {
                @match block.get("text").and_then(Value::as_str) {
                    Some(text) => div.content { (cut(text, MAX_JSON_CHARS).0) },
                    None => div.block { (json(block)) },
                }
            }
        },
        Value::Null => html! {},
        other => json(other),
    }
}

/// Messages as a conversation, at most [`MAX_ITEMS`]: the last ones when
/// `latest` (a state's history), else the first ones (an update).
pub(crate) fn conversation(messages: &[Value], latest: bool) -> Markup {
    let (shown, left) = window(messages, latest);
    html! {
        @if latest && left > 0 { p.cut { (left) " earlier messages not shown" } }
        div.conversation { @for message in shown { (bubble(message)) } }
        @if !latest && left > 0 { p.cut { "… " (left) " more messages" } }
    }
}

/// List items, each shown as a value, at most [`MAX_ITEMS`] (as
/// [`conversation`] chooses them).
pub(crate) fn items(items: &[Value], latest: bool) -> Markup {
    let (shown, left) = window(items, latest);
    html! {
        @if latest && left > 0 { p.cut { (left) " earlier items not shown" } }
        ul.items { @for item in shown { li { (value(item)) } } }
        @if !latest && left > 0 { p.cut { "… " (left) " more items" } }
    }
}

/// A list: a conversation when every item is a message, else items (at
/// most [`MAX_ITEMS`], the last ones when `latest`).
pub(crate) fn list(list: &[Value], latest: bool) -> Markup {
    if all_messages(list) {
        conversation(list, latest)
    } else {
        items(list, latest)
    }
}

/// A map's keys and values, at most [`MAX_ITEMS`] of them.
pub(crate) fn keys(map: &serde_json::Map<String, Value>) -> Markup {
    html! {
        dl.keys {
            @for (key, value) in map.iter().take(MAX_ITEMS) {
                dt { (key) } dd { (self::value(value)) }
            }
            @if map.len() > MAX_ITEMS { dt { "…" } dd { (map.len() - MAX_ITEMS) " more keys" } }
        }
    }
}

/// At most [`MAX_ITEMS`] of `list`, from its end when `latest`; and how
/// many are left out.
fn window(list: &[Value], latest: bool) -> (&[Value], usize) {
    let left = list.len().saturating_sub(MAX_ITEMS);
    if latest {
        (&list[left..], left)
    } else {
        (&list[..list.len() - left], left)
    }
}

/// Any value: a message as a bubble, messages as a conversation, a scalar
/// inline, anything else as JSON.
pub(crate) fn value(value: &Value) -> Markup {
    if message_role(value).is_some() {
        return bubble(value);
    }
    match value {
        Value::Array(list) if is_messages(value) => conversation(list, false),
        Value::String(_) | Value::Number(_) | Value::Bool(_) | Value::Null => {
            html! { code.scalar { (inline(value, MAX_JSON_CHARS)) } }
        }
        other => json(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_is_cut_at_a_character_boundary() {
        assert_eq!(cut("héllo", 2), ("hé", 3));
        assert_eq!(cut("hé", 2), ("hé", 0));
        assert_eq!(inline(&json!("a long text"), 6), "a long…");
        assert_eq!(inline(&json!({"a": 1}), 100), r#"{"a":1}"#);
    }

    #[test]
    fn messages_are_told_by_their_role() {
        assert_eq!(
            message_role(&json!({"type": "human", "content": "hi"})),
            Some("human")
        );
        assert_eq!(
            message_role(&json!({"role": "user", "content": "hi"})),
            Some("user")
        );
        assert_eq!(
            message_role(&json!({"type": "remove", "id": "1"})),
            Some("remove")
        );
        assert_eq!(message_role(&json!({"type": "plan", "content": "x"})), None);
        assert_eq!(message_role(&json!({"content": "x"})), None);
        assert!(is_messages(
            &json!([{"type": "ai", "content": "", "tool_calls": []}])
        ));
        assert!(!is_messages(&json!([])));
        assert!(!is_messages(&json!([{"type": "ai", "content": ""}, 1])));
    }

    #[test]
    fn a_bubble_escapes_what_it_shows() {
        let markup = bubble(&json!({
            "type": "ai",
            "content": "<script>alert(1)</script>",
            "id": "m\"1",
            "tool_calls": [{"name": "search", "args": {"q": "<b>"}, "id": "c1"}],
        }))
        .into_string();
        assert!(!markup.contains("<script>"), "{markup}");
        assert!(
            markup.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{markup}"
        );
        assert!(markup.contains(r#"class="bubble assistant""#), "{markup}");
        assert!(markup.contains("search"), "{markup}");
    }

    #[test]
    fn long_lists_show_a_bounded_window() {
        let list: Vec<Value> = (0..120).map(|i| json!(i)).collect();
        let (shown, left) = window(&list, true);
        assert_eq!((shown.len(), left, &shown[0]), (MAX_ITEMS, 70, &json!(70)));
        let (shown, left) = window(&list, false);
        assert_eq!((shown.len(), left, &shown[0]), (MAX_ITEMS, 70, &json!(0)));
    }
}
