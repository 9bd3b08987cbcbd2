//! [`trim_messages`]: LangChain's `trim_messages`, to the same messages.

use super::rebuild::{is_kind, with_content};
use super::token_counter::{Prefixes, TokenCounter};
use super::tool_pairs::keep_tool_calls_whole;
use serde_json::Value;
use state_core::{Content, Message, MessageKind};
use std::fmt;
use std::sync::Arc;

/// Which end of the history [`trim_messages`] keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TrimStrategy {
    /// The first messages (LangChain's `strategy="first"`).
    First,
    /// The last messages, the usual choice for a chat history
    /// (`strategy="last"`, the default).
    #[default]
    Last,
}

/// A combination of [`TrimOptions`] that LangChain refuses (its
/// `ValueError`s); the message names the option.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TrimError {
    /// `start_on` was set with [`TrimStrategy::First`].
    #[error("trim_messages: the start_on option is only valid with TrimStrategy::Last")]
    StartOnWithFirst,
    /// `include_system` was set with [`TrimStrategy::First`].
    #[error("trim_messages: the include_system option is only valid with TrimStrategy::Last")]
    IncludeSystemWithFirst,
}

type SplitFn = dyn Fn(&str) -> Vec<String> + Send + Sync;

/// What [`trim_messages`] keeps: LangChain's keyword arguments, as a
/// builder that starts from the one it needs, `max_tokens`.
///
/// ```
/// use state_agent::{TokenCounter, TrimOptions, TrimStrategy};
/// use state_core::MessageKind;
///
/// let options = TrimOptions::max_tokens(1000)
///     .strategy(TrimStrategy::Last)
///     .token_counter(TokenCounter::approximate())
///     .start_on([MessageKind::Human])
///     .include_system(true);
/// # let _ = options;
/// ```
#[derive(Clone)]
pub struct TrimOptions {
    max_tokens: usize,
    token_counter: TokenCounter,
    strategy: TrimStrategy,
    allow_partial: bool,
    start_on: Vec<MessageKind>,
    end_on: Vec<MessageKind>,
    include_system: bool,
    text_splitter: Option<Arc<SplitFn>>,
}

impl TrimOptions {
    /// Keep at most `max_tokens` tokens, by default: the last messages,
    /// counted by [`TokenCounter::approximate`], whole messages only, no
    /// system message kept apart.
    pub fn max_tokens(max_tokens: usize) -> Self {
        TrimOptions {
            max_tokens,
            token_counter: TokenCounter::approximate(),
            strategy: TrimStrategy::Last,
            allow_partial: false,
            start_on: Vec::new(),
            end_on: Vec::new(),
            include_system: false,
            text_splitter: None,
        }
    }

    /// How tokens are counted ([`TokenCounter::approximate`]).
    #[must_use]
    pub fn token_counter(mut self, counter: impl Into<TokenCounter>) -> Self {
        self.token_counter = counter.into();
        self
    }

    /// Which end to keep ([`TrimStrategy::Last`]).
    #[must_use]
    pub fn strategy(mut self, strategy: TrimStrategy) -> Self {
        self.strategy = strategy;
        self
    }

    /// Whether the message at the cut may be kept in part (false): its
    /// first (strategy `First`) or last (`Last`) content blocks, or else
    /// the first or last pieces of its text, as the text splitter cuts it.
    #[must_use]
    pub fn allow_partial(mut self, allow: bool) -> Self {
        self.allow_partial = allow;
        self
    }

    /// The kinds the result must start with (`Last` only): the kept
    /// messages before the first of these kinds are dropped, after the cut
    /// (none: no constraint).
    #[must_use]
    pub fn start_on(mut self, kinds: impl IntoIterator<Item = MessageKind>) -> Self {
        self.start_on = kinds.into_iter().collect();
        self
    }

    /// The kinds the result must end with: the messages after the last of
    /// these kinds are dropped, before the cut with `Last` and after it
    /// with `First` (none: no constraint).
    #[must_use]
    pub fn end_on(mut self, kinds: impl IntoIterator<Item = MessageKind>) -> Self {
        self.end_on = kinds.into_iter().collect();
        self
    }

    /// Whether a system message at index 0 is always kept, its tokens
    /// counted first (`Last` only; false).
    #[must_use]
    pub fn include_system(mut self, include: bool) -> Self {
        self.include_system = include;
        self
    }

    /// How the text of a message kept in part is cut into pieces that join
    /// back into it (by default after every `\n`, as LangChain's).
    #[must_use]
    pub fn text_splitter(
        mut self,
        split: impl Fn(&str) -> Vec<String> + Send + Sync + 'static,
    ) -> Self {
        self.text_splitter = Some(Arc::new(split));
        self
    }

    fn split(&self, text: &str) -> Vec<String> {
        match &self.text_splitter {
            Some(split) => split(text),
            None => split_lines(text),
        }
    }
}

impl fmt::Debug for TrimOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TrimOptions")
            .field("max_tokens", &self.max_tokens)
            .field("token_counter", &self.token_counter)
            .field("strategy", &self.strategy)
            .field("allow_partial", &self.allow_partial)
            .field("start_on", &self.start_on)
            .field("end_on", &self.end_on)
            .field("include_system", &self.include_system)
            .field("text_splitter", &self.text_splitter.as_ref().map(|_| ".."))
            .finish()
    }
}

/// LangChain's default text splitter: pieces that end after each `\n`.
fn split_lines(text: &str) -> Vec<String> {
    text.split_inclusive('\n')
        .map(str::to_owned)
        .collect::<Vec<_>>()
        .tap_empty(text)
}

trait TapEmpty {
    fn tap_empty(self, text: &str) -> Self;
}

impl TapEmpty for Vec<String> {
    /// Python's `"".split("\n")` is `[""]`, and `"a\n".split("\n")` ends
    /// with `""`: the pieces are the same but for that empty last one.
    fn tap_empty(mut self, text: &str) -> Self {
        if text.is_empty() || text.ends_with('\n') {
            self.push(String::new());
        }
        self
    }
}

/// The messages that fit in `options.max_tokens`, as LangChain's
/// `trim_messages` keeps them: strategy `Last` keeps the most recent ones
/// (after dropping those after the last `end_on` kind; the system message
/// at index 0 first when `include_system`; then drops those before the
/// first `start_on` kind), `First` the earliest (then drops those after the
/// last `end_on` kind). With `allow_partial`, the message at the cut may
/// be kept in part.
///
/// Unlike LangChain's, the cut never splits a tool call from its results
/// (providers refuse a tool result without its call, and a call whose
/// results follow it but are missing): where LangChain's cut would, the
/// split pieces are dropped too (the tool results whose call was cut; the
/// AI message whose results were cut, with those kept of them), then
/// `start_on`/`end_on` are applied again. A call whose results are not in
/// the history at all (the model's latest turn, its tools not run yet)
/// stays. Everything else is LangChain's cut, message for message.
///
/// # Errors
///
/// [`TrimError`] for `start_on` or `include_system` with
/// [`TrimStrategy::First`], as LangChain's `ValueError`s.
///
/// ```
/// use state_agent::{trim_messages, TrimOptions, TrimStrategy};
/// use state_core::{Message, MessageKind};
///
/// let history = [
///     Message::system("You are brief."),
///     Message::human("What is Rust?"),
///     Message::ai("A systems language."),
///     Message::human("And Python?"),
///     Message::ai("A scripting language."),
/// ];
/// let options = TrimOptions::max_tokens(30)
///     .start_on([MessageKind::Human])
///     .include_system(true);
/// let kept = trim_messages(&history, &options)?;
/// assert_eq!(kept, [history[0].clone(), history[3].clone(), history[4].clone()]);
///
/// let first = TrimOptions::max_tokens(30).strategy(TrimStrategy::First).include_system(true);
/// let err = trim_messages(&history, &first).unwrap_err();
/// assert!(err.to_string().contains("include_system"));
/// # Ok::<(), state_agent::TrimError>(())
/// ```
pub fn trim_messages(
    messages: &[Message],
    options: &TrimOptions,
) -> Result<Vec<Message>, TrimError> {
    if options.strategy == TrimStrategy::First {
        if !options.start_on.is_empty() {
            return Err(TrimError::StartOnWithFirst);
        }
        if options.include_system {
            return Err(TrimError::IncludeSystemWithFirst);
        }
    }
    let kept = match options.strategy {
        TrimStrategy::First => {
            let seq: Vec<&Message> = messages.iter().collect();
            let kept = first_max_tokens(
                &seq,
                options.max_tokens,
                options,
                TrimStrategy::First,
                &options.end_on,
            );
            kept.collect(&seq, false)
        }
        TrimStrategy::Last => last_max_tokens(messages, options),
    };
    Ok(whole_turns(kept, messages, options))
}

/// Where LangChain's cut split a tool call from its results, the pieces
/// go (see `tool_pairs.rs`), and `start_on`/`end_on` hold again on what
/// is left.
fn whole_turns(kept: Vec<Message>, input: &[Message], options: &TrimOptions) -> Vec<Message> {
    let before = kept.len();
    let mut kept = keep_tool_calls_whole(kept, input);
    if kept.len() == before {
        return kept;
    }
    if !options.end_on.is_empty() {
        while kept.last().is_some_and(|m| !is_kind(m, &options.end_on)) {
            kept.pop();
        }
    }
    if !options.start_on.is_empty() {
        let system = usize::from(
            options.include_system
                && kept
                    .first()
                    .is_some_and(|m| m.kind() == MessageKind::System),
        );
        let skip = kept[system..]
            .iter()
            .position(|m| is_kind(m, &options.start_on))
            .unwrap_or(kept.len() - system);
        kept.drain(system..system + skip);
    }
    kept
}

/// What `_first_max_tokens` keeps of its list: its first `whole` messages,
/// then the part of the next one, if any.
struct Kept {
    whole: usize,
    partial: Option<Message>,
}

impl Kept {
    fn collect(self, seq: &[&Message], reversed: bool) -> Vec<Message> {
        let mut out: Vec<Message> = Vec::with_capacity(self.whole + 1);
        out.extend(seq[..self.whole].iter().map(|m| (*m).clone()));
        out.extend(self.partial);
        if reversed {
            out.reverse();
        }
        out
    }
}

/// LangChain's `_last_max_tokens`: `_first_max_tokens` on the reversed
/// list.
fn last_max_tokens(messages: &[Message], options: &TrimOptions) -> Vec<Message> {
    let mut end = messages.len();
    if !options.end_on.is_empty() {
        while end > 0 && !is_kind(&messages[end - 1], &options.end_on) {
            end -= 1;
        }
    }
    let mut rest = &messages[..end];
    let mut system = None;
    if options.include_system
        && let Some((first, after)) = rest.split_first()
        && first.kind() == MessageKind::System
    {
        system = Some(first);
        rest = after;
    }
    let reversed: Vec<&Message> = rest.iter().rev().collect();
    let budget = match system {
        Some(system) => options
            .max_tokens
            .saturating_sub(options.token_counter.count_one(system)),
        None => options.max_tokens,
    };
    let kept = first_max_tokens(
        &reversed,
        budget,
        options,
        TrimStrategy::Last,
        &options.start_on,
    );
    let kept = kept.collect(&reversed, true);
    match system {
        Some(system) => std::iter::once(system.clone()).chain(kept).collect(),
        None => kept,
    }
}

/// LangChain's `_first_max_tokens`; `side` is which end of a message kept
/// in part is kept (`First`: its beginning; `Last`: its end, the list
/// being reversed).
fn first_max_tokens(
    seq: &[&Message],
    max_tokens: usize,
    options: &TrimOptions,
    side: TrimStrategy,
    end_on: &[MessageKind],
) -> Kept {
    if seq.is_empty() {
        return Kept {
            whole: 0,
            partial: None,
        };
    }
    let counts = options.token_counter.prefixes(seq, max_tokens);
    if counts.fit().map_or_else(
        || counts.prefix(seq.len()) <= max_tokens,
        |fit| fit == seq.len(),
    ) {
        let mut whole = seq.len();
        if !end_on.is_empty() {
            while whole > 0 && !is_kind(seq[whole - 1], end_on) {
                whole -= 1;
            }
        }
        return Kept {
            whole,
            partial: None,
        };
    }
    // The longest prefix that fits, by LangChain's binary search (its
    // number of rounds too, for counters whose counts may shrink).
    let left = counts.fit().unwrap_or_else(|| {
        let (mut left, mut right) = (0usize, seq.len());
        for _ in 0..bit_length(seq.len()) {
            if left >= right {
                break;
            }
            let mid = (left + right).div_ceil(2);
            if counts.prefix(mid) <= max_tokens {
                left = mid;
            } else {
                right = mid - 1;
            }
        }
        left
    });
    let mut kept = Kept {
        whole: left,
        partial: None,
    };
    if options.allow_partial && left < seq.len() {
        kept.partial = partial(seq[left], left, &counts, max_tokens, options, side);
    }
    if !end_on.is_empty() {
        if kept.partial.as_ref().is_some_and(|p| !is_kind(p, end_on)) {
            kept.partial = None;
        }
        if kept.partial.is_none() {
            while kept.whole > 0 && !is_kind(seq[kept.whole - 1], end_on) {
                kept.whole -= 1;
            }
        }
    }
    kept
}

fn bit_length(n: usize) -> u32 {
    usize::BITS - n.leading_zeros()
}

/// The part of `message` (the list's `idx`-th, the first that does not
/// fit) that fits after the `idx` before it: LangChain drops its blocks
/// from the far end one at a time, else keeps the pieces of one text of it
/// that fit.
fn partial(
    message: &Message,
    idx: usize,
    counts: &Prefixes<'_>,
    max_tokens: usize,
    options: &TrimOptions,
    side: TrimStrategy,
) -> Option<Message> {
    // What LangChain's copy of the message holds after the blocks' loop.
    let mut content = message.content().clone();
    if let Content::Blocks(blocks) = &mut content {
        if side == TrimStrategy::Last {
            blocks.reverse();
        }
        for _ in 1..blocks.len() {
            blocks.pop();
            // Counted in search order (the last blocks reversed), as
            // LangChain counts them, and kept in their own order.
            let candidate = with_content(message, Content::Blocks(blocks.clone()));
            if counts.prefix_with(idx, &candidate) <= max_tokens {
                if side == TrimStrategy::Last {
                    blocks.reverse();
                    return Some(with_content(message, Content::Blocks(blocks.clone())));
                }
                return Some(candidate);
            }
        }
    }
    let text = match &content {
        Content::Text(text) => Some(text.as_str()),
        Content::Blocks(blocks) => blocks.iter().find_map(|block| match block {
            Value::String(text) => Some(Some(text.as_str())),
            Value::Object(fields) if fields.get("type").and_then(Value::as_str) == Some("text") => {
                Some(fields.get("text").and_then(Value::as_str))
            }
            _ => None,
        })?,
    };
    let text = text.filter(|t| !t.is_empty())?;
    let mut pieces = options.split(text);
    let base = counts.prefix(idx);
    if side == TrimStrategy::Last {
        pieces.reverse();
    }
    let joined = |n: usize| -> String {
        if side == TrimStrategy::Last {
            pieces[..n].iter().rev().map(String::as_str).collect()
        } else {
            pieces[..n].concat()
        }
    };
    let (mut left, mut right) = (0usize, pieces.len());
    for _ in 0..bit_length(pieces.len()) {
        if left >= right {
            break;
        }
        let mid = (left + right).div_ceil(2);
        // Counted in search order (the last pieces reversed), as LangChain
        // counts them, and kept in their own order.
        let candidate = with_content(message, Content::Text(joined_search(&pieces, mid)));
        if base.saturating_add(options.token_counter.count_one(&candidate)) <= max_tokens {
            left = mid;
        } else {
            right = mid - 1;
        }
    }
    (left > 0).then(|| with_content(message, Content::Text(joined(left))))
}

/// `"".join(split_texts[:n])`, the pieces in search order.
fn joined_search(pieces: &[String], n: usize) -> String {
    pieces[..n].concat()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_split_as_python() {
        assert_eq!(split_lines(""), [""]);
        assert_eq!(split_lines("a"), ["a"]);
        assert_eq!(split_lines("a\nb"), ["a\n", "b"]);
        assert_eq!(split_lines("a\n"), ["a\n", ""]);
        assert_eq!(split_lines("\n\n"), ["\n", "\n", ""]);
    }

    #[test]
    fn bit_lengths() {
        assert_eq!(bit_length(0), 0);
        assert_eq!(bit_length(1), 1);
        assert_eq!(bit_length(10_000), 14);
    }
}
