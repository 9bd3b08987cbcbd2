//! Long-term memory items as the backends store them: one row per item (its
//! namespace as text, labels joined by `.`, its key, its value as JSON text,
//! its times in microseconds) and, for an indexed item, one row of vectors.
//!
//! The backends store and scan rows; `crate::items` validates, decodes,
//! filters and ranks them, once for all three. A scan may be given
//! conditions SQL can check first ([`Pushed`]): they only narrow what is
//! read, the filter in Rust decides.

use super::Backend;
use crate::error::StoreError;

/// An item row, as stored.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ItemRow {
    /// The namespace, labels joined by `.`.
    pub prefix: String,
    pub key: String,
    /// The value's JSON text.
    pub value: String,
    /// Microseconds since the Unix epoch.
    pub created_at: i64,
    pub updated_at: i64,
}

/// A row met by a scan, borrowed from wherever the backend holds it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ScannedItem<'r> {
    pub prefix: &'r str,
    pub key: &'r str,
    pub value: &'r str,
    pub created_at: i64,
    pub updated_at: i64,
    /// The item's vectors, when the scan reads them and it has some.
    pub vectors: Option<Vectors<'r>>,
}

/// An item's stored vectors: `dims` little-endian `f32`s per embedded text.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Vectors<'r> {
    pub dims: i64,
    pub bytes: &'r [u8],
}

/// What a put writes: the item, and its vectors (`None`: it has none, and
/// any it had are removed).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ItemWrite<'a> {
    pub prefix: &'a str,
    pub key: &'a str,
    pub value: &'a str,
    pub now: i64,
    pub vectors: Option<Vectors<'a>>,
}

/// The namespaces under a prefix, as a range of stored namespace texts:
/// `exact` itself, and every text from `dot` (`exact` + `.`) up to `end`
/// (`exact` + `/`, the byte after `.`). No LIKE pattern, so no label
/// character is a wildcard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PrefixRange {
    pub exact: String,
    pub dot: String,
    pub end: String,
}

impl PrefixRange {
    /// Whether the namespace text `prefix` is in the range.
    pub fn contains(&self, prefix: &str) -> bool {
        prefix == self.exact || (prefix >= self.dot.as_str() && prefix < self.end.as_str())
    }
}

/// A comparison of a top-level field of the value, as SQL can check it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cmp {
    Eq,
    Gt,
    Ge,
    Lt,
    Le,
}

/// A condition on a top-level field of the value that SQL checks before
/// Rust does: every row the filter accepts passes it (rows it lets through
/// that the filter refuses are dropped in Rust).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Pushed {
    /// The field is a string that compares so with this one (bytewise).
    Text {
        field: String,
        cmp: Cmp,
        value: String,
    },
    /// The field is a number in this range (bounds widened so that no
    /// rounding in the database can drop a row).
    Number {
        field: String,
        min: Option<f64>,
        max: Option<f64>,
    },
    /// The field is this boolean.
    Bool { field: String, value: bool },
    /// The field is null or missing.
    Null { field: String },
}

// Memory leaves pushed conditions to Rust; only SQL reads them.
#[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
impl Pushed {
    /// The field the condition reads.
    pub fn field(&self) -> &str {
        match self {
            Pushed::Text { field, .. }
            | Pushed::Number { field, .. }
            | Pushed::Bool { field, .. }
            | Pushed::Null { field } => field,
        }
    }
}

/// Which rows a scan reads.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ItemScan<'a> {
    /// `None`: every namespace.
    pub prefix: Option<&'a PrefixRange>,
    #[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
    pub pushed: &'a [Pushed],
}

/// What a scan's visitor answers after each row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    More,
    Enough,
}

/// A scan's visitor: called once per row, in the scan's order.
pub(crate) type Visit<'v> = dyn FnMut(ScannedItem<'_>) -> Result<Flow, StoreError> + Send + 'v;

impl Backend {
    /// Inserts or replaces an item (a replaced item keeps its `created_at`)
    /// and replaces its vectors, atomically.
    pub async fn put_item(&self, write: &ItemWrite<'_>) -> Result<(), StoreError> {
        dispatch_split!(self, b => b.items.put(write), b.put_item(write))
    }

    /// One item's row.
    pub async fn get_item(&self, prefix: &str, key: &str) -> Result<Option<ItemRow>, StoreError> {
        dispatch_split!(self, b => b.items.get(prefix, key), b.get_item(prefix, key))
    }

    /// Deletes an item with its vectors. False: there was none.
    pub async fn delete_item(&self, prefix: &str, key: &str) -> Result<bool, StoreError> {
        dispatch_split!(self, b => b.items.delete(prefix, key), b.delete_item(prefix, key))
    }

    /// The rows `scan` selects, newest first (`updated_at`, then namespace
    /// and key, all descending), to `visit` until it has enough. SQL
    /// backends read the first `first_page` rows (what a search asks for
    /// when its filter refuses none), then, if the visitor wants more, the
    /// rest as a stream, in one read transaction.
    #[cfg_attr(
        not(any(feature = "sqlite", feature = "postgres")),
        allow(unused_variables)
    )]
    pub async fn scan_items(
        &self,
        scan: ItemScan<'_>,
        first_page: usize,
        visit: &mut Visit<'_>,
    ) -> Result<(), StoreError> {
        dispatch_split!(self, b => b.items.scan(scan, visit), b.scan_items(scan, first_page, visit))
    }

    /// Every row `scan` selects, with its vectors, in no particular order.
    pub async fn scan_vectors(
        &self,
        scan: ItemScan<'_>,
        visit: &mut Visit<'_>,
    ) -> Result<(), StoreError> {
        dispatch_split!(self, b => b.items.scan_vectors(scan, visit), b.scan_vectors(scan, visit))
    }

    /// The distinct namespace texts in `prefix` (`None`: all).
    pub async fn item_namespaces(
        &self,
        prefix: Option<&PrefixRange>,
    ) -> Result<Vec<String>, StoreError> {
        dispatch_split!(self, b => b.items.namespaces(prefix), b.item_namespaces(prefix))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_range_holds_the_namespace_and_its_descendants_only() {
        let range = PrefixRange {
            exact: "a_b".into(),
            dot: "a_b.".into(),
            end: "a_b/".into(),
        };
        for inside in ["a_b", "a_b.c", "a_b.c.d", "a_b.%"] {
            assert!(range.contains(inside), "{inside}");
        }
        for outside in ["a_", "a_bc", "a_b-c", "aXb", "a_c", "a_b/", "a%b.c", ""] {
            assert!(!range.contains(outside), "{outside}");
        }
    }
}
