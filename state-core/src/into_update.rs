//! [`IntoUpdate`]: what a delta setter accepts.

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
/// | `&str`, `String` | `Cow<str>` |
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
