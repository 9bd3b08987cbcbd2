//! [`count_tokens_approximately`] and its options, [`ApproxTokenCounter`]:
//! LangChain's `count_tokens_approximately`, to the same number.

use super::python::{json_dumps, repr_len};
use serde_json::Value;
use state_core::{Content, Message, MessageKind};

/// About how many tokens `messages` take, as LangChain's
/// `count_tokens_approximately` counts them with its defaults (see
/// [`ApproxTokenCounter`] for the options and the rule).
///
/// ```
/// use state_agent::count_tokens_approximately;
/// use state_core::Message;
///
/// // "user" + 20 characters = 24 characters: 6 tokens, plus 3 per message.
/// let messages = [Message::human("What is the weather?")];
/// assert_eq!(count_tokens_approximately(&messages), 9);
/// assert_eq!(count_tokens_approximately(&[]), 0);
/// ```
pub fn count_tokens_approximately(messages: &[Message]) -> usize {
    ApproxTokenCounter::new().count(messages)
}

/// LangChain's `count_tokens_approximately` with its options (all of
/// langchain-core 1.7's): characters per token, extra tokens per message,
/// whether names count, tokens per image, scaling by the usage the model
/// reported, and tool schemas.
///
/// A message counts `ceil(chars / chars_per_token) + extra_tokens_per_message`,
/// where `chars` is the characters of its text (a string block, or a
/// `"text"` block's text; any other block counts the characters of its
/// Python `repr`, an `"image"` or `"image_url"` block `tokens_per_image`
/// tokens instead), of its tool calls' Python `repr` (an AI message whose
/// content is a string), of its `tool_call_id` (a tool message), of its
/// OpenAI role (`user`, `assistant`, `system` or `developer`, `tool`,
/// `function`, or a chat message's role) and of its name; the total is
/// rounded up. Characters are Unicode code points, as Python counts them.
///
/// Where LangChain raises, this counts on: a removal's role counts as
/// `"remove"`, a non-string `text` as its `repr`, and a `chars_per_token`
/// of 0 gives `usize::MAX`.
///
/// ```
/// use state_agent::ApproxTokenCounter;
/// use state_core::Message;
///
/// let messages = [Message::system("Be brief."), Message::human("Hi!").with_name("ann")];
/// let counter = ApproxTokenCounter::new().chars_per_token(3.0).extra_tokens_per_message(0.5);
/// // ceil(15 / 3) + 0.5 + ceil(10 / 3) + 0.5 = 10
/// assert_eq!(counter.count(&messages), 10);
/// assert_eq!(counter.count_name(false).count(&messages), 9);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ApproxTokenCounter {
    chars_per_token: f64,
    extra_tokens_per_message: f64,
    count_name: bool,
    tokens_per_image: u64,
    use_usage_metadata_scaling: bool,
    tools: Vec<Value>,
}

impl Default for ApproxTokenCounter {
    fn default() -> Self {
        ApproxTokenCounter::new()
    }
}

/// The running count of a list's fold: LangChain's `token_count` and what
/// the usage scaling tracks.
#[derive(Debug, Clone, Default)]
pub(crate) struct Tally {
    tokens: f64,
    messages: usize,
    provider: Option<Option<Value>>,
    mixed_providers: bool,
    last_ai_total: Option<i64>,
    tokens_at_last_ai: Option<f64>,
}

impl ApproxTokenCounter {
    /// LangChain's defaults: 4 characters per token, 3 extra tokens per
    /// message, names counted, 85 tokens per image, no scaling, no tools.
    pub fn new() -> Self {
        ApproxTokenCounter {
            chars_per_token: 4.0,
            extra_tokens_per_message: 3.0,
            count_name: true,
            tokens_per_image: 85,
            use_usage_metadata_scaling: false,
            tools: Vec::new(),
        }
    }

    /// Characters per token (4.0).
    #[must_use]
    pub fn chars_per_token(mut self, chars: f64) -> Self {
        self.chars_per_token = chars;
        self
    }

    /// Tokens added per message (3.0).
    #[must_use]
    pub fn extra_tokens_per_message(mut self, tokens: f64) -> Self {
        self.extra_tokens_per_message = tokens;
        self
    }

    /// Whether a message's name counts (true).
    #[must_use]
    pub fn count_name(mut self, count: bool) -> Self {
        self.count_name = count;
        self
    }

    /// Tokens per `"image"` or `"image_url"` block (85).
    #[must_use]
    pub fn tokens_per_image(mut self, tokens: u64) -> Self {
        self.tokens_per_image = tokens;
        self
    }

    /// LangChain's `use_usage_metadata_scaling` (false): when every AI
    /// message names the same `response_metadata["model_provider"]`, the
    /// count is scaled by the last AI message's reported
    /// `usage_metadata["total_tokens"]` over the approximate count up to it,
    /// the factor kept within 1.0..=1.25.
    #[must_use]
    pub fn use_usage_metadata_scaling(mut self, scale: bool) -> Self {
        self.use_usage_metadata_scaling = scale;
        self
    }

    /// Tool schemas to count as well, as LangChain counts dict tools: the
    /// characters of each one's `json.dumps`.
    #[must_use]
    pub fn tools(mut self, tools: impl IntoIterator<Item = Value>) -> Self {
        self.tools = tools.into_iter().collect();
        self
    }

    /// The approximate token count of `messages`.
    pub fn count(&self, messages: &[Message]) -> usize {
        self.count_iter(messages)
    }

    /// The count of any run of messages.
    pub(crate) fn count_iter<'a>(&self, messages: impl IntoIterator<Item = &'a Message>) -> usize {
        let mut tally = self.start();
        for message in messages {
            self.add(&mut tally, message);
        }
        self.finish(&tally)
    }

    /// Whether a list's count is the fold's state at its end without the
    /// scaling: the counts of a list's prefixes are then one fold.
    pub(crate) fn is_additive(&self) -> bool {
        !self.use_usage_metadata_scaling
    }

    /// Whether no message lowers the count: the characters per token are
    /// positive and the extra tokens per message not negative.
    pub(crate) fn is_monotone(&self) -> bool {
        self.chars_per_token > 0.0 && self.extra_tokens_per_message >= 0.0
    }

    /// The state before the first message: the tools' tokens.
    pub(crate) fn start(&self) -> Tally {
        let mut tally = Tally::default();
        if !self.tools.is_empty() {
            let chars: usize = self
                .tools
                .iter()
                .map(|t| json_dumps(t).chars().count())
                .sum();
            tally.tokens += (chars as f64 / self.chars_per_token).ceil();
        }
        tally
    }

    /// Adds one message, in LangChain's order of additions (the float sums
    /// are the same).
    pub(crate) fn add(&self, tally: &mut Tally, message: &Message) {
        tally.tokens = self.add_tokens(tally.tokens, message);
        tally.messages += 1;
        if self.use_usage_metadata_scaling && message.kind() == MessageKind::Ai {
            let provider = message
                .extra()
                .get("response_metadata")
                .and_then(|m| m.get("model_provider"))
                .cloned();
            match &tally.provider {
                None | Some(None) => tally.provider = Some(provider),
                Some(seen) if *seen != provider => tally.mixed_providers = true,
                Some(_) => {}
            }
            let total = message
                .extra()
                .get("usage_metadata")
                .and_then(|u| u.get("total_tokens"))
                .and_then(python_int);
            if let Some(total) = total {
                tally.last_ai_total = Some(total);
                tally.tokens_at_last_ai = Some(tally.tokens);
            }
        }
    }

    /// `token_count` after `message`, from `tokens` before it.
    pub(crate) fn add_tokens(&self, mut tokens: f64, message: &Message) -> f64 {
        let mut chars = 0usize;
        match message.content() {
            Content::Text(text) => chars += text.chars().count(),
            Content::Blocks(blocks) => {
                for block in blocks {
                    match block {
                        Value::String(text) => chars += text.chars().count(),
                        Value::Object(fields) => {
                            match fields.get("type").and_then(Value::as_str).unwrap_or("") {
                                "image" | "image_url" => tokens += self.tokens_per_image as f64,
                                "text" => {
                                    chars += match fields.get("text") {
                                        None => 0,
                                        Some(Value::String(text)) => text.chars().count(),
                                        Some(other) => repr_len(other),
                                    }
                                }
                                _ => chars += repr_len(block),
                            }
                        }
                        other => chars += repr_len(other),
                    }
                }
            }
        }
        if message.kind() == MessageKind::Ai
            && !matches!(message.content(), Content::Blocks(_))
            && !message.tool_calls().is_empty()
        {
            chars += tool_calls_repr_len(message);
        }
        if message.kind() == MessageKind::Tool {
            chars += message.tool_call_id().map_or(0, |id| id.chars().count());
        }
        chars += openai_role_len(message);
        if self.count_name {
            chars += message.name().map_or(0, |name| name.chars().count());
        }
        tokens += (chars as f64 / self.chars_per_token).ceil();
        tokens + self.extra_tokens_per_message
    }

    /// The count of the messages folded into `tally`.
    pub(crate) fn finish(&self, tally: &Tally) -> usize {
        let mut tokens = tally.tokens;
        if self.use_usage_metadata_scaling
            && tally.messages > 1
            && !tally.mixed_providers
            && matches!(tally.provider, Some(Some(_)))
            && let (Some(total), Some(at)) = (tally.last_ai_total, tally.tokens_at_last_ai)
            && at > 0.0
        {
            tokens *= (total as f64 / at).clamp(1.0, 1.25);
        }
        ceil_to_usize(tokens)
    }
}

impl Tally {
    /// LangChain's `token_count` so far.
    pub(crate) fn tokens_so_far(&self) -> f64 {
        self.tokens
    }
}

/// Rounds a count up; a negative count is 0, an infinite one `usize::MAX`.
pub(crate) fn ceil_to_usize(tokens: f64) -> usize {
    // `as` saturates, and NaN becomes 0.
    tokens.ceil() as usize
}

/// An integer as Python's `isinstance(x, int)` sees one (bools included).
fn python_int(value: &Value) -> Option<i64> {
    match value {
        Value::Number(n) => n.as_i64(),
        Value::Bool(b) => Some(i64::from(*b)),
        _ => None,
    }
}

/// `len(repr(message.tool_calls))`: a list of
/// `{'name': .., 'args': .., 'id': .., 'type': 'tool_call'}`.
fn tool_calls_repr_len(message: &Message) -> usize {
    let calls = message.tool_calls();
    // [ ... ] and ", " between calls.
    let mut len = 2 + 2 * calls.len().saturating_sub(1);
    for call in calls {
        // {'name': , 'args': , 'id': , 'type': 'tool_call'}
        len += 49 + super::python::str_repr_len(&call.name) + repr_len(&call.args);
        len += call.id.as_deref().map_or(4, super::python::str_repr_len);
    }
    len
}

/// The length of LangChain's `_get_message_openai_role`.
fn openai_role_len(message: &Message) -> usize {
    match message.kind() {
        MessageKind::Ai => "assistant".len(),
        MessageKind::Human => "user".len(),
        MessageKind::Tool => "tool".len(),
        MessageKind::Function => "function".len(),
        MessageKind::Chat => message.role().map_or(0, |role| role.chars().count()),
        MessageKind::System => message
            .extra()
            .get("additional_kwargs")
            .and_then(|kwargs| kwargs.get("__openai_role__"))
            .and_then(Value::as_str)
            .map_or("system".len(), |role| role.chars().count()),
        _ => "remove".len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use state_core::ToolCall;

    #[test]
    fn tool_call_repr_length() {
        let message =
            Message::ai("").with_tool_calls([ToolCall::new("f", json!({"a": 1})).with_id("c")]);
        // [{'name': 'f', 'args': {'a': 1}, 'id': 'c', 'type': 'tool_call'}]
        assert_eq!(tool_calls_repr_len(&message), 65);
        let message = Message::ai("")
            .with_tool_calls([ToolCall::new("f", json!({})), ToolCall::new("g", json!({}))]);
        // [{'name': 'f', 'args': {}, 'id': None, 'type': 'tool_call'}, {...}]
        assert_eq!(tool_calls_repr_len(&message), 2 + 2 * 58 + 2);
    }

    #[test]
    fn odd_settings_never_panic() {
        let messages = [Message::human("x"), Message::remove("r")];
        assert_eq!(
            ApproxTokenCounter::new()
                .chars_per_token(0.0)
                .count(&messages),
            usize::MAX
        );
        assert_eq!(
            ApproxTokenCounter::new()
                .extra_tokens_per_message(-100.0)
                .count(&messages),
            0
        );
        assert_eq!(
            ApproxTokenCounter::new()
                .chars_per_token(f64::NAN)
                .count(&messages),
            0
        );
    }
}
