//! [`ObjectText`]: a JSON object written field by field as text, for a
//! step's body or metadata made from typed data. The store takes it as it
//! is: it is an object by construction, so it is neither built as a
//! `Value` nor read through again to be checked.

use serde::Serialize;

/// A JSON object written as text, one field at a time, each value through
/// serde (with `state_core::json`'s rule: a non-finite float is an error,
/// not a `null`). What [`Thread::log_subgraph_object`] and
/// [`Thread::with_metadata_text`] take: a body or metadata made from typed
/// data without a [`serde_json::Value`] in between, which the store need
/// not check (nothing else can be made with this type).
///
/// A key written twice is kept twice in the text; reading it back keeps the
/// last value, as `serde_json` does.
///
/// [`Thread::log_subgraph_object`]: crate::Thread::log_subgraph_object
/// [`Thread::with_metadata_text`]: crate::Thread::with_metadata_text
///
/// ```
/// use state_store::ObjectText;
///
/// let mut tags = ObjectText::new();
/// tags.field("ns", "inner:1")?.field("base", &3)?;
/// let mut metadata = tags.clone();
/// metadata.array_field("nodes", ["agent"].iter())?;
/// assert_eq!(metadata.into_string(), r#"{"ns":"inner:1","base":3,"nodes":["agent"]}"#);
///
/// assert!(ObjectText::new().field("x", &f64::NAN).is_err());
/// assert_eq!(ObjectText::new().into_string(), "{}");
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectText {
    /// `{` and the fields so far, comma-separated, or nothing before the
    /// first field (an empty object allocates nothing); the closing brace
    /// is added by [`into_string`](ObjectText::into_string).
    text: Vec<u8>,
}

impl Default for ObjectText {
    fn default() -> Self {
        ObjectText::new()
    }
}

impl ObjectText {
    /// An object with no field yet; nothing is allocated until one is
    /// written.
    pub fn new() -> ObjectText {
        ObjectText { text: Vec::new() }
    }

    /// An object with no field yet, with room for `bytes` of text.
    pub fn with_capacity(bytes: usize) -> ObjectText {
        ObjectText {
            text: Vec::with_capacity(bytes),
        }
    }

    /// Whether no field was written.
    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// Writes `key: value`. On error (a value serde cannot write, or a
    /// non-finite float in it) the object is as before.
    pub fn field<T: Serialize + ?Sized>(
        &mut self,
        key: &str,
        value: &T,
    ) -> Result<&mut Self, serde_json::Error> {
        let mark = self.key(key);
        let start = self.text.len();
        let written = serde_json::to_writer(&mut self.text, value).and_then(|()| {
            // A non-finite float is written as `null`: only text with one
            // is looked at again (state_core's check names the float).
            if has_null(&self.text[start..]) {
                state_core::json::to_string(value).map(drop)
            } else {
                Ok(())
            }
        });
        self.settle(mark, written)
    }

    /// Writes `key: [items...]`, each item as [`field`](ObjectText::field)
    /// writes a value (no collection of them made first).
    pub fn array_field<'a, T, I>(
        &mut self,
        key: &str,
        items: I,
    ) -> Result<&mut Self, serde_json::Error>
    where
        T: Serialize + ?Sized + 'a,
        I: IntoIterator<Item = &'a T>,
    {
        self.items_field(key, items, |item, text| serde_json::to_writer(text, item))
    }

    /// Writes `key: [strings...]`, each a JSON string (a step's node
    /// names): the same text as [`array_field`](ObjectText::array_field)
    /// gives them, without its check for a non-finite float, which a
    /// string cannot hold. Never fails: serde writes any string.
    ///
    /// ```
    /// use state_store::ObjectText;
    ///
    /// let mut metadata = ObjectText::new();
    /// metadata.strings_field("nodes", ["agent", "say \"hi\""]);
    /// assert_eq!(metadata.into_string(), r#"{"nodes":["agent","say \"hi\""]}"#);
    /// ```
    pub fn strings_field<I>(&mut self, key: &str, strings: I) -> &mut Self
    where
        I: IntoIterator,
        I::Item: AsRef<str>,
    {
        self.key(key);
        self.text.push(b'[');
        for (i, string) in strings.into_iter().enumerate() {
            if i > 0 {
                self.text.push(b',');
            }
            write_string(&mut self.text, string.as_ref());
        }
        self.text.push(b']');
        self
    }

    /// Writes `key: [deltas...]`, each delta written by
    /// [`Delta::write_json`](state_core::Delta::write_json) (on its
    /// fields' own types, faster than through its `Serialize`); the same
    /// text and the same errors as [`array_field`](ObjectText::array_field).
    pub fn delta_array_field<'a, D, I>(
        &mut self,
        key: &str,
        deltas: I,
    ) -> Result<&mut Self, serde_json::Error>
    where
        D: state_core::Delta + Serialize + 'a,
        I: IntoIterator<Item = &'a D>,
    {
        self.items_field(key, deltas, |delta, text| delta.write_json(text))
    }

    /// Writes `key: [items...]`, each item by `write`; an item whose text
    /// holds a `null` is checked as [`field`](ObjectText::field) checks a
    /// value (a non-finite float is refused).
    fn items_field<'a, T, I>(
        &mut self,
        key: &str,
        items: I,
        write: impl Fn(&T, &mut Vec<u8>) -> Result<(), serde_json::Error>,
    ) -> Result<&mut Self, serde_json::Error>
    where
        T: Serialize + ?Sized + 'a,
        I: IntoIterator<Item = &'a T>,
    {
        let mark = self.key(key);
        let written = write_array(&mut self.text, items, write);
        self.settle(mark, written)
    }

    /// Writes `key: [deltas...]` from deltas already written as text
    /// ([`DeltasText`]), copied as they are.
    pub fn deltas_text_field(&mut self, key: &str, deltas: &DeltasText) -> &mut Self {
        self.key(key);
        self.text.extend_from_slice(deltas.text.as_bytes());
        self
    }

    /// A copy of this object with room for `more` bytes of fields after
    /// it (a `clone` has none: the next field would grow it).
    pub fn clone_with_room(&self, more: usize) -> ObjectText {
        let mut text = Vec::with_capacity(self.text.len() + more);
        text.extend_from_slice(&self.text);
        ObjectText { text }
    }

    /// Writes every field of `other` after this object's own.
    pub fn extend(&mut self, other: &ObjectText) -> &mut Self {
        // `other`'s fields, after its `{`.
        if let Some(fields) = other.text.get(1..) {
            self.open_field();
            self.text.extend_from_slice(fields);
        }
        self
    }

    /// The object's text.
    pub fn into_string(mut self) -> String {
        if self.text.is_empty() {
            return "{}".to_owned();
        }
        self.text.push(b'}');
        utf8(self.text)
    }

    /// Starts a field: `{` before the first (with room for a few small
    /// fields, allocated once), `,` before any other.
    fn open_field(&mut self) {
        if self.text.is_empty() {
            if self.text.capacity() == 0 {
                self.text.reserve(64);
            }
            self.text.push(b'{');
        } else {
            self.text.push(b',');
        }
    }

    /// Writes `,"key":` (or `"key":` first); returns where the field
    /// starts, to undo it.
    fn key(&mut self, key: &str) -> usize {
        let mark = self.text.len();
        self.open_field();
        write_string(&mut self.text, key);
        self.text.push(b':');
        mark
    }

    fn settle(
        &mut self,
        mark: usize,
        written: Result<(), serde_json::Error>,
    ) -> Result<&mut Self, serde_json::Error> {
        match written {
            Ok(()) => Ok(self),
            Err(e) => {
                self.text.truncate(mark);
                Err(e)
            }
        }
    }
}

/// The deltas of one superstep as a JSON array's text (`[{..},{..}]`),
/// written once from their types: a subgraph's step as its runner logs it
/// ([`ObjectText::deltas_text_field`]) and, kept, as its parent's step logs
/// it again ([`Thread::adopt_steps`]), copied rather than written twice.
/// Made only from typed deltas, so the store need not check it.
///
/// [`Thread::adopt_steps`]: crate::Thread::adopt_steps
///
/// ```
/// use state_core::{AgentState, State};
/// use state_store::{DeltasText, ObjectText};
///
/// #[derive(AgentState)]
/// struct S {
///     n: u32,
/// }
///
/// let step = DeltasText::write([S::delta().n(1u32)].iter())?;
/// assert_eq!(step.as_str(), r#"[{"n":1}]"#);
/// let mut body = ObjectText::new();
/// body.deltas_text_field("deltas", &step);
/// assert_eq!(body.into_string(), r#"{"deltas":[{"n":1}]}"#);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeltasText {
    text: String,
}

impl DeltasText {
    /// Writes `deltas` as a JSON array, each by
    /// [`Delta::write_json`](state_core::Delta::write_json): the text and
    /// the errors of [`ObjectText::delta_array_field`] (a non-finite float
    /// is refused, not written as `null`).
    pub fn write<'a, D, I>(deltas: I) -> Result<DeltasText, serde_json::Error>
    where
        D: state_core::Delta + Serialize + 'a,
        I: IntoIterator<Item = &'a D>,
    {
        let mut text = Vec::with_capacity(256);
        write_array(&mut text, deltas, |delta: &D, text| delta.write_json(text))?;
        Ok(DeltasText { text: utf8(text) })
    }

    /// The array's text.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    pub(crate) fn into_string(self) -> String {
        self.text
    }
}

/// Writes `[items...]` after `text`, each item by `write`; an item whose
/// text holds a `null` is checked again through serde, with
/// `state_core::json`'s rule (a non-finite float is an error, not a
/// `null`). On error the caller drops what was written.
fn write_array<'a, T, I>(
    text: &mut Vec<u8>,
    items: I,
    write: impl Fn(&T, &mut Vec<u8>) -> Result<(), serde_json::Error>,
) -> Result<(), serde_json::Error>
where
    T: Serialize + ?Sized + 'a,
    I: IntoIterator<Item = &'a T>,
{
    text.push(b'[');
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            text.push(b',');
        }
        let start = text.len();
        write(item, text)?;
        if has_null(&text[start..]) {
            state_core::json::to_string(item)?;
        }
    }
    text.push(b']');
    Ok(())
}

/// Writes `string` as a JSON string. The common one (printable ASCII, no
/// quote or backslash: a key, a node's name) is its own JSON text, copied,
/// not escaped; any other is serde_json's.
fn write_string(text: &mut Vec<u8>, string: &str) {
    if string
        .bytes()
        .all(|b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\')
    {
        text.reserve(string.len() + 3);
        text.push(b'"');
        text.extend_from_slice(string.as_bytes());
        text.push(b'"');
        return;
    }
    // Writing a string into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *text, string);
}

/// Text serde_json wrote, which is UTF-8 only: the lossy branch is never
/// taken.
fn utf8(text: Vec<u8>) -> String {
    String::from_utf8(text).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Whether JSON text holds `null`: on every step's path, so a long text
/// is searched with SIMD (by two of its bytes at once, the searcher built
/// once), a short one byte by byte (cheaper than the searcher's call).
pub(crate) fn has_null(text: &[u8]) -> bool {
    static NULL: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"null"));
    if text.len() < 48 {
        return text.windows(4).any(|w| w == b"null");
    }
    NULL.find(text).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn null_is_found_wherever_it_stands() {
        for (text, found) in [
            (&b"null"[..], true),
            (b"[1,null]", true),
            (b"\"no nulls\"", true),
            (b"\"nul\"", false),
            (b"nnnul", false),
            (b"n", false),
            (b"", false),
            (b"{\"name\":\"nun\"}", false),
        ] {
            assert_eq!(has_null(text), found, "{}", String::from_utf8_lossy(text));
        }
    }

    #[test]
    fn reads_back_as_the_object_written() {
        let mut object = ObjectText::new();
        object
            .field("a \"quoted\" key", &json!({"x": [1, null]}))
            .unwrap()
            .field("tab\there é", &true)
            .unwrap()
            .array_field("list", [1u32, 2, 3].iter())
            .unwrap()
            .array_field("none", std::iter::empty::<&u8>())
            .unwrap();
        let mut more = ObjectText::new();
        more.field("b", "two").unwrap();
        object.extend(&more).extend(&ObjectText::new());
        let read: Value = serde_json::from_str(&object.into_string()).unwrap();
        assert_eq!(
            read,
            json!({"a \"quoted\" key": {"x": [1, null]}, "tab\there é": true, "list": [1, 2, 3], "none": [], "b": "two"})
        );
    }

    #[test]
    fn deltas_are_written_as_array_field_writes_them() {
        use state_core::{AgentState, Message, Messages, State};

        #[derive(AgentState, Debug)]
        struct Probe {
            #[reducer(add_messages)]
            messages: Messages,
            score: f64,
        }
        let deltas = [
            Probe::delta().messages([Message::ai("a \"quoted\" é").with_id("1")]),
            Probe::delta().score(2.5),
            Probe::delta(),
        ];
        let mut fast = ObjectText::new();
        fast.field("n", &1).unwrap();
        fast.delta_array_field("deltas", deltas.iter()).unwrap();
        let mut plain = ObjectText::new();
        plain.field("n", &1).unwrap();
        plain.array_field("deltas", deltas.iter()).unwrap();
        assert_eq!(fast, plain);
        // A non-finite float is refused, and the object is as before.
        let before = fast.clone();
        let nan = [Probe::delta().score(f64::NAN)];
        assert!(fast.delta_array_field("more", nan.iter()).is_err());
        assert_eq!(fast, before);
    }

    #[test]
    fn an_empty_object_is_written_whatever_led_to_it() {
        let text = |o: ObjectText| o.into_string();
        assert_eq!(text(ObjectText::new()), "{}");
        assert_eq!(text(ObjectText::with_capacity(64)), "{}");
        // Its first field refused: still empty, and extended later.
        let mut object = ObjectText::new();
        assert!(object.field("x", &f64::NAN).is_err());
        assert!(object.is_empty());
        assert_eq!(text(object.clone()), "{}");
        object.extend(&ObjectText::new());
        assert_eq!(text(object.clone()), "{}");
        let mut one = ObjectText::new();
        one.field("a", &1).unwrap();
        object.extend(&one);
        assert_eq!(text(object.clone()), r#"{"a":1}"#);
        object.extend(&one).strings_field("nodes", ["n"]);
        assert_eq!(text(object), r#"{"a":1,"a":1,"nodes":["n"]}"#);
        // A copy with room of an empty one is empty too.
        let mut copy = ObjectText::new().clone_with_room(8);
        assert!(copy.is_empty());
        copy.strings_field("nodes", Vec::<String>::new());
        assert_eq!(text(copy), r#"{"nodes":[]}"#);
    }

    #[test]
    fn a_refused_value_leaves_the_object_as_it_was() {
        let mut object = ObjectText::new();
        object.field("a", &1).unwrap();
        let before = object.clone();
        let err = object.field("b", &[1.0, f64::INFINITY]).unwrap_err();
        assert!(err.to_string().contains("inf"), "{err}");
        assert_eq!(object, before);
        assert!(object.array_field("c", [1.0, f64::NAN].iter()).is_err());
        assert_eq!(object, before);
        let mut empty = ObjectText::new();
        assert!(empty.field("x", &f32::NAN).is_err());
        assert!(empty.is_empty());
        assert_eq!(empty.into_string(), "{}");
        assert_eq!(object.into_string(), r#"{"a":1}"#);
    }
}
