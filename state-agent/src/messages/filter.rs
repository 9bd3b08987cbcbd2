//! [`filter_messages`]: LangChain's `filter_messages`, to the same messages.

use super::rebuild::{is_kind, rebuilt};
use serde_json::Value;
use state_core::{Content, Message, MessageKind};

/// Which messages [`filter_messages`] keeps: LangChain's keyword
/// arguments. A message is kept when it matches none of the `exclude_*`
/// conditions and, if any `include_*` list is given (not empty), at least
/// one of them.
///
/// ```
/// use state_agent::FilterOptions;
/// use state_core::MessageKind;
///
/// let options = FilterOptions::new()
///     .include_types([MessageKind::Human, MessageKind::Ai])
///     .exclude_ids(["draft"])
///     .exclude_tool_calls(["call_7"]);
/// # let _ = options;
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FilterOptions {
    include_names: Vec<String>,
    exclude_names: Vec<String>,
    include_types: Vec<MessageKind>,
    exclude_types: Vec<MessageKind>,
    include_ids: Vec<String>,
    exclude_ids: Vec<String>,
    exclude_tool_calls: Option<ToolCallsOut>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum ToolCallsOut {
    All,
    Ids(Vec<String>),
}

fn strings<S: Into<String>>(items: impl IntoIterator<Item = S>) -> Vec<String> {
    items.into_iter().map(Into::into).collect()
}

impl FilterOptions {
    /// No conditions: every message is kept.
    pub fn new() -> Self {
        FilterOptions::default()
    }

    /// Keep messages with one of these names.
    #[must_use]
    pub fn include_names<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.include_names = strings(names);
        self
    }

    /// Drop messages with one of these names.
    #[must_use]
    pub fn exclude_names<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.exclude_names = strings(names);
        self
    }

    /// Keep messages of one of these kinds.
    #[must_use]
    pub fn include_types(mut self, kinds: impl IntoIterator<Item = MessageKind>) -> Self {
        self.include_types = kinds.into_iter().collect();
        self
    }

    /// Drop messages of one of these kinds.
    #[must_use]
    pub fn exclude_types(mut self, kinds: impl IntoIterator<Item = MessageKind>) -> Self {
        self.exclude_types = kinds.into_iter().collect();
        self
    }

    /// Keep messages with one of these ids.
    #[must_use]
    pub fn include_ids<S: Into<String>>(mut self, ids: impl IntoIterator<Item = S>) -> Self {
        self.include_ids = strings(ids);
        self
    }

    /// Drop messages with one of these ids.
    #[must_use]
    pub fn exclude_ids<S: Into<String>>(mut self, ids: impl IntoIterator<Item = S>) -> Self {
        self.exclude_ids = strings(ids);
        self
    }

    /// Drop every AI message with tool calls and every tool message
    /// (LangChain's `exclude_tool_calls=True`).
    #[must_use]
    pub fn exclude_all_tool_calls(mut self) -> Self {
        self.exclude_tool_calls = Some(ToolCallsOut::All);
        self
    }

    /// Drop the tool calls with these ids: the tool messages answering
    /// them, the calls from their AI messages (and their `tool_use` content
    /// blocks, Anthropic's), and an AI message left with no call.
    #[must_use]
    pub fn exclude_tool_calls<S: Into<String>>(mut self, ids: impl IntoIterator<Item = S>) -> Self {
        self.exclude_tool_calls = Some(ToolCallsOut::Ids(strings(ids)));
        self
    }
}

fn named(list: &[String], value: Option<&str>) -> bool {
    value.is_some_and(|v| list.iter().any(|item| item == v))
}

/// The messages that pass `options`, as LangChain's `filter_messages`
/// keeps them.
///
/// ```
/// use state_agent::{filter_messages, FilterOptions};
/// use state_core::{Message, MessageKind, ToolCall};
/// use serde_json::json;
///
/// let history = [
///     Message::system("Be brief."),
///     Message::human("Weather?").with_name("ann"),
///     Message::ai("").with_tool_calls([ToolCall::new("weather", json!({})).with_id("c1")]),
///     Message::tool("Sunny", "c1"),
///     Message::ai("Sunny."),
/// ];
/// let no_tools = filter_messages(&history, &FilterOptions::new().exclude_tool_calls(["c1"]));
/// assert_eq!(no_tools, [history[0].clone(), history[1].clone(), history[4].clone()]);
/// let ann = filter_messages(&history, &FilterOptions::new().include_names(["ann"]));
/// assert_eq!(ann, [history[1].clone()]);
/// let chat = FilterOptions::new().exclude_types([MessageKind::System, MessageKind::Tool]);
/// assert_eq!(filter_messages(&history, &chat).len(), 3);
/// ```
pub fn filter_messages(messages: &[Message], options: &FilterOptions) -> Vec<Message> {
    let mut kept = Vec::new();
    for message in messages {
        if named(&options.exclude_names, message.name())
            || is_kind(message, &options.exclude_types)
            || named(&options.exclude_ids, message.id())
        {
            continue;
        }
        let calls = !message.tool_calls().is_empty() && message.kind() == MessageKind::Ai;
        let mut changed = None;
        match &options.exclude_tool_calls {
            Some(ToolCallsOut::All) if calls || message.kind() == MessageKind::Tool => continue,
            Some(ToolCallsOut::Ids(ids)) if calls => {
                let left: Vec<_> = message
                    .tool_calls()
                    .iter()
                    .filter(|call| !named(ids, call.id.as_deref()))
                    .cloned()
                    .collect();
                if left.is_empty() {
                    continue;
                }
                let content = match message.content() {
                    Content::Blocks(blocks) => Content::Blocks(
                        blocks
                            .iter()
                            .filter(|block| !is_excluded_tool_use(block, ids))
                            .cloned()
                            .collect(),
                    ),
                    text => text.clone(),
                };
                changed = Some(rebuilt(message, content, left));
            }
            Some(ToolCallsOut::Ids(ids))
                if message.kind() == MessageKind::Tool && named(ids, message.tool_call_id()) =>
            {
                continue;
            }
            _ => {}
        }
        let included = (options.include_types.is_empty()
            && options.include_ids.is_empty()
            && options.include_names.is_empty())
            || named(&options.include_names, message.name())
            || is_kind(message, &options.include_types)
            || named(&options.include_ids, message.id());
        if included {
            kept.push(changed.unwrap_or_else(|| message.clone()));
        }
    }
    kept
}

/// An Anthropic `tool_use` block of an excluded call.
fn is_excluded_tool_use(block: &Value, ids: &[String]) -> bool {
    let Value::Object(fields) = block else {
        return false;
    };
    fields.get("type").and_then(Value::as_str) == Some("tool_use")
        && named(ids, fields.get("id").and_then(Value::as_str))
}
