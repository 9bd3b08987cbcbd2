//! [`IntoUpdate`]: what a delta setter accepts.

use crate::messages::{Content, Message, Messages};
use std::borrow::Cow;

/// A value a delta setter accepts for an update of type `U`.
///
/// Like `Into<U>`, but with impls chosen so that an integer literal infers
/// the field's type (`.retries(3)` for a `u32` field; with `Into`, `3`
/// would be an `i32`), and with the conversions agents write most:
///
/// | you pass | update type |
/// |---|---|
/// | `U` itself | `U` |
/// | `&str`, `&String`, `char`, `Box<str>`, `Cow<str>` | `String` |
/// | `T` | `Option<T>` (so `.error("boom".to_string())` sets it) |
/// | `&str` | `Option<String>` |
/// | one item `T`, or an array `[T; N]` | `Vec<T>` |
/// | `&str`, `[&str; N]`, `&[&str]` | `Vec<String>` |
/// | `&str`, `String` | `Cow<str>` |
/// | a `(role, content)` tuple, or an array of them | `Vec<Message>` (a message field's update) |
/// | `Vec<Message>`, `[Message; N]`, an array of `(role, content)` tuples | `Messages` (`overwrite_messages`) |
///
/// A `Vec<&str>` or a `Vec` of tuples is not taken: a second `Vec` impl
/// would make `Vec::new()` and `vec![]` ambiguous for every list field.
/// Pass an array (`["a", "b"]`) or a slice (`&names[..]`) instead.
///
/// Other conversions (`&str` to `PathBuf`, `u8` to `u64`, ...) take an
/// explicit `.into()` at the call site: a blanket impl over `Into` would
/// overlap with the impls above and make `.retries(3)` ambiguous.
///
/// ```
/// use state_core::IntoUpdate;
///
/// fn set<U>(value: impl IntoUpdate<U>) -> U {
///     value.into_update()
/// }
/// let retries: u32 = set(3);
/// let next: String = set("tools");
/// let error: Option<String> = set("boom");
/// let items: Vec<u8> = set([1, 2]);
/// let one: Vec<&str> = set("a");
/// assert_eq!((retries, next.as_str(), error.as_deref(), items, one), (3, "tools", Some("boom"), vec![1, 2], vec!["a"]));
///
/// // LangChain's tuple form, and lists of strings without `.to_string()`.
/// use state_core::{Message, Messages};
/// let asked: Vec<Message> = set(("user", "What is 2 + 2?"));
/// assert_eq!(asked, [Message::human("What is 2 + 2?")]);
/// let history: Messages = set([Message::system("Be brief."), Message::ai("4")]);
/// assert_eq!(history.len(), 2);
/// let steps: Vec<String> = set(["plan", "act"]);
/// assert_eq!(steps, ["plan", "act"]);
/// ```
pub trait IntoUpdate<U> {
    /// Converts into the update.
    fn into_update(self) -> U;
}

impl<T> IntoUpdate<T> for T {
    fn into_update(self) -> T {
        self
    }
}

impl<T> IntoUpdate<Option<T>> for T {
    fn into_update(self) -> Option<T> {
        Some(self)
    }
}

impl<T> IntoUpdate<Vec<T>> for T {
    fn into_update(self) -> Vec<T> {
        vec![self]
    }
}

impl<T, const N: usize> IntoUpdate<Vec<T>> for [T; N] {
    fn into_update(self) -> Vec<T> {
        Vec::from(self)
    }
}

impl IntoUpdate<String> for &str {
    fn into_update(self) -> String {
        self.to_owned()
    }
}

impl IntoUpdate<String> for &String {
    fn into_update(self) -> String {
        self.clone()
    }
}

impl IntoUpdate<String> for char {
    fn into_update(self) -> String {
        self.to_string()
    }
}

impl IntoUpdate<String> for Box<str> {
    fn into_update(self) -> String {
        self.into()
    }
}

impl IntoUpdate<String> for Cow<'_, str> {
    fn into_update(self) -> String {
        self.into_owned()
    }
}

impl IntoUpdate<Option<String>> for &str {
    fn into_update(self) -> Option<String> {
        Some(self.to_owned())
    }
}

impl<'a> IntoUpdate<Cow<'a, str>> for &'a str {
    fn into_update(self) -> Cow<'a, str> {
        Cow::Borrowed(self)
    }
}

impl IntoUpdate<Cow<'_, str>> for String {
    fn into_update(self) -> Cow<'static, str> {
        Cow::Owned(self)
    }
}

// Lists of borrowed strings into an owned list (an `append` field of
// `Vec<String>`: `.steps(["plan", "act"])`). Arrays and slices, not
// `Vec<&str>`: with a second `Vec` impl, `.steps(Vec::new())` and
// `.steps(vec![])` would no longer infer their element type.

impl IntoUpdate<Vec<String>> for &str {
    fn into_update(self) -> Vec<String> {
        vec![self.to_owned()]
    }
}

impl<const N: usize> IntoUpdate<Vec<String>> for [&str; N] {
    fn into_update(self) -> Vec<String> {
        self.iter().map(|s| (*s).to_owned()).collect()
    }
}

impl IntoUpdate<Vec<String>> for &[&str] {
    fn into_update(self) -> Vec<String> {
        self.iter().map(|s| (*s).to_owned()).collect()
    }
}

// Messages as LangChain's `(role, content)` tuples (read as
// `Message::from((role, content))` reads them), one or an array, as a
// message field's update or as a whole history (`overwrite_messages`).
// (Not a `Vec` of tuples, for the same reason as `Vec<&str>` above.)

impl<R: AsRef<str>, C: Into<Content>> IntoUpdate<Vec<Message>> for (R, C) {
    fn into_update(self) -> Vec<Message> {
        vec![Message::from(self)]
    }
}

impl<R: AsRef<str>, C: Into<Content>, const N: usize> IntoUpdate<Vec<Message>> for [(R, C); N] {
    fn into_update(self) -> Vec<Message> {
        self.into_iter().map(Message::from).collect()
    }
}

impl IntoUpdate<Messages> for Vec<Message> {
    fn into_update(self) -> Messages {
        Messages::from(self)
    }
}

impl<const N: usize> IntoUpdate<Messages> for [Message; N] {
    fn into_update(self) -> Messages {
        Messages::from(self)
    }
}

impl<R: AsRef<str>, C: Into<Content>, const N: usize> IntoUpdate<Messages> for [(R, C); N] {
    fn into_update(self) -> Messages {
        self.into_iter().map(Message::from).collect()
    }
}
