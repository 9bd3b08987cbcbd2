//! [`TokenCounter`]: how `trim_messages` counts tokens, and the counts of a
//! list's prefixes it searches through.

use super::count::{ApproxTokenCounter, ceil_to_usize};
use state_core::Message;
use std::fmt;
use std::sync::Arc;

type PerMessageFn = dyn Fn(&Message) -> usize + Send + Sync;
type ListFn = dyn Fn(&[Message]) -> usize + Send + Sync;

/// How [`trim_messages`](super::trim_messages) counts tokens, as
/// LangChain's `token_counter`: the approximate count built in
/// (`"approximate"`), a function of one message (summed over a list), or a
/// function of a whole list (a model's `get_num_tokens_from_messages`, or
/// `len` to count messages).
///
/// ```
/// use state_agent::{ApproxTokenCounter, TokenCounter};
/// use state_core::Message;
///
/// let messages = [Message::human("one two"), Message::ai("three")];
/// assert_eq!(TokenCounter::approximate().count(&messages), 13);
/// let words = TokenCounter::per_message(|m: &Message| m.text().split_whitespace().count());
/// assert_eq!(words.count(&messages), 3);
/// assert_eq!(TokenCounter::list(|ms: &[Message]| ms.len()).count(&messages), 2);
/// let coarse = TokenCounter::from(ApproxTokenCounter::new().chars_per_token(8.0));
/// assert_eq!(coarse.count(&messages), 10);
/// ```
#[derive(Clone)]
pub struct TokenCounter(How);

#[derive(Clone)]
enum How {
    Approximate(ApproxTokenCounter),
    PerMessage(Arc<PerMessageFn>),
    List(Arc<ListFn>),
}

impl TokenCounter {
    /// [`count_tokens_approximately`](super::count_tokens_approximately)
    /// with LangChain's defaults (its `"approximate"` shortcut).
    pub fn approximate() -> Self {
        TokenCounter(How::Approximate(ApproxTokenCounter::new()))
    }

    /// A count per message, summed over a list.
    pub fn per_message(count: impl Fn(&Message) -> usize + Send + Sync + 'static) -> Self {
        TokenCounter(How::PerMessage(Arc::new(count)))
    }

    /// A count of a whole list, such as a tokenizer's for a model's chat
    /// template.
    pub fn list(count: impl Fn(&[Message]) -> usize + Send + Sync + 'static) -> Self {
        TokenCounter(How::List(Arc::new(count)))
    }

    /// The count of `messages`.
    pub fn count(&self, messages: &[Message]) -> usize {
        match &self.0 {
            How::Approximate(counter) => counter.count(messages),
            How::PerMessage(count) => messages
                .iter()
                .map(|m| count(m))
                .fold(0, usize::saturating_add),
            How::List(count) => count(messages),
        }
    }

    /// The count of one message.
    pub(crate) fn count_one(&self, message: &Message) -> usize {
        match &self.0 {
            How::Approximate(counter) => counter.count_iter([message]),
            How::PerMessage(count) => count(message),
            How::List(count) => count(std::slice::from_ref(message)),
        }
    }

    /// The counts of the prefixes of `seq`, for a search of the longest
    /// that fits in `max_tokens`.
    ///
    /// When the counts never shrink as a list grows (a per-message count,
    /// or the approximate one without scaling, with no negative extra
    /// tokens), LangChain's search finds the longest prefix that fits, and
    /// that is found here folding the messages until one does not fit: the
    /// messages past it are never counted. Else every prefix is counted as
    /// LangChain counts it.
    pub(crate) fn prefixes<'a>(
        &'a self,
        seq: &'a [&'a Message],
        max_tokens: usize,
    ) -> Prefixes<'a> {
        let mut fit = None;
        let way = match &self.0 {
            How::Approximate(counter) if counter.is_additive() => {
                let monotone = counter.is_monotone();
                let mut states = Vec::with_capacity(seq.len().min(1024) + 1);
                let mut tokens = counter.start().tokens_so_far();
                states.push(tokens);
                for (i, message) in seq.iter().enumerate() {
                    if monotone && ceil_to_usize(tokens) > max_tokens {
                        fit = Some(i.saturating_sub(1));
                        break;
                    }
                    tokens = counter.add_tokens(tokens, message);
                    states.push(tokens);
                }
                if monotone && fit.is_none() {
                    let last = states.len() - 1;
                    fit = Some(if ceil_to_usize(tokens) > max_tokens {
                        last.saturating_sub(1)
                    } else {
                        last
                    });
                }
                Way::Folds(counter, states)
            }
            How::Approximate(counter) => Way::Refold(counter),
            How::PerMessage(count) => {
                let mut sums = Vec::with_capacity(seq.len().min(1024) + 1);
                let mut sum = 0usize;
                sums.push(sum);
                for (i, message) in seq.iter().enumerate() {
                    if sum > max_tokens {
                        fit = Some(i.saturating_sub(1));
                        break;
                    }
                    sum = sum.saturating_add(count(message));
                    sums.push(sum);
                }
                if fit.is_none() {
                    let last = sums.len() - 1;
                    fit = Some(if sum > max_tokens {
                        last.saturating_sub(1)
                    } else {
                        last
                    });
                }
                Way::Sums(&**count, sums)
            }
            How::List(count) => Way::List(&**count, seq.iter().map(|m| (*m).clone()).collect()),
        };
        Prefixes { seq, way, fit }
    }
}

impl From<ApproxTokenCounter> for TokenCounter {
    fn from(counter: ApproxTokenCounter) -> Self {
        TokenCounter(How::Approximate(counter))
    }
}

impl Default for TokenCounter {
    /// [`TokenCounter::approximate`].
    fn default() -> Self {
        TokenCounter::approximate()
    }
}

impl fmt::Debug for TokenCounter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            How::Approximate(counter) => f.debug_tuple("Approximate").field(counter).finish(),
            How::PerMessage(_) => f.write_str("PerMessage(..)"),
            How::List(_) => f.write_str("List(..)"),
        }
    }
}

/// The counts of `seq[..n]`, and of `seq[..n]` followed by one more
/// message, each as the counter would count that list.
pub(crate) struct Prefixes<'a> {
    seq: &'a [&'a Message],
    way: Way<'a>,
    /// The length of the longest prefix that fits, when the counts never
    /// shrink (0 when none does); only the prefixes up to one past it
    /// are counted then.
    fit: Option<usize>,
}

enum Way<'a> {
    /// The approximate count without scaling: the fold's state after each
    /// message (a list's count is its state rounded up).
    Folds(&'a ApproxTokenCounter, Vec<f64>),
    /// The approximate count with scaling: folded again each time.
    Refold(&'a ApproxTokenCounter),
    /// Sums of a per-message count.
    Sums(&'a PerMessageFn, Vec<usize>),
    /// A list count, on owned copies of the list.
    List(&'a ListFn, Vec<Message>),
}

impl Prefixes<'_> {
    /// The length of the longest prefix that fits, when known without a
    /// search.
    pub(crate) fn fit(&self) -> Option<usize> {
        self.fit
    }

    /// The count of `seq[..n]`.
    pub(crate) fn prefix(&self, n: usize) -> usize {
        match &self.way {
            Way::Folds(_, states) => ceil_to_usize(states[n]),
            Way::Refold(counter) => counter.count_iter(self.seq[..n].iter().copied()),
            Way::Sums(_, sums) => sums[n],
            Way::List(count, owned) => count(&owned[..n]),
        }
    }

    /// The count of `seq[..n]` followed by `extra`.
    pub(crate) fn prefix_with(&self, n: usize, extra: &Message) -> usize {
        match &self.way {
            Way::Folds(counter, states) => ceil_to_usize(counter.add_tokens(states[n], extra)),
            Way::Refold(counter) => {
                counter.count_iter(self.seq[..n].iter().copied().chain(std::iter::once(extra)))
            }
            Way::Sums(count, sums) => sums[n].saturating_add(count(extra)),
            Way::List(count, owned) => {
                let mut list = owned[..n].to_vec();
                list.push(extra.clone());
                count(&list)
            }
        }
    }
}
