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
/// | a `String`, `&str`, `bool`, `char` or number | `Option` of it (so `.error("boom")` and `.step(3)` set it) |
/// | an array `[T; N]` | `Vec<T>` |
/// | `&str`, `[&str; N]`, `&[&str]` | `Vec<String>` |
/// | `&str`, `String` | `Cow<str>` |
/// | a `Message`, a `(role, content)` tuple, or an array of either | `Vec<Message>` (a message field's update) |
/// | a `(role, content)` tuple | `Message` (`push_messages`) |
/// | `Vec<Message>`, `[Message; N]`, an array of `(role, content)` tuples | `Messages` (`overwrite_messages`) |
///
/// Nothing wraps a value of any type into a list or an `Option`: for a
/// `Vec<serde_json::Value>` field, `.items(json!([1, 2]))` would be one
/// item or two, and for an `Option<Value>` field `.x(json!(null))` would be
/// `None` or `Some(Null)`. Such a value does not compile; write the list
/// (`vec![..]`), `Some(..)`, or add one item with the list field's
/// `push_x` setter (`.push_items(json!([1, 2]))` is one item; a `Vec`
/// under `append` or `append_by_id`, and `Messages`, have one).
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
/// let step: Option<u32> = set(3);
/// let items: Vec<u8> = set([1, 2]);
/// let one: Vec<String> = set("a");
/// assert_eq!((retries, next.as_str(), error.as_deref(), step, items, one), (3, "tools", Some("boom"), Some(3), vec![1, 2], vec!["a".to_owned()]));
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
#[diagnostic::on_unimplemented(
    message = "this setter takes a `{U}`, not a `{Self}`",
    label = "expected a `{U}`, or a value that converts to one",
    note = "nothing is wrapped implicitly: add one item to a list field with its `push_` setter, and wrap an optional value in `Some(..)`"
)]
pub trait IntoUpdate<U> {
    /// Converts into the update.
    fn into_update(self) -> U;
}

impl<T> IntoUpdate<T> for T {
    fn into_update(self) -> T {
        self
    }
}

// `Some` of the values that cannot be read as `None` themselves (a JSON
// `null` could, an `Option` could): no blanket `T -> Option<T>`.
macro_rules! some {
    ($($ty:ty),* $(,)?) => {
        $(
            impl IntoUpdate<Option<$ty>> for $ty {
                fn into_update(self) -> Option<$ty> {
                    Some(self)
                }
            }
        )*
    };
}

some!(
    String, bool, char, u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize, f32, f64,
);

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

impl IntoUpdate<Vec<Message>> for Message {
    fn into_update(self) -> Vec<Message> {
        vec![self]
    }
}

impl<R: AsRef<str>, C: Into<Content>> IntoUpdate<Message> for (R, C) {
    fn into_update(self) -> Message {
        Message::from(self)
    }
}

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
