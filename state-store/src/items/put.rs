//! [`PutItem`]: storing an item, what [`Store::put_item`] returns.

use super::embed::parse_fields;
use super::filter::kind;
use super::namespace::{check_for_put, check_key, shown, to_text};
use super::paths::{FieldPath, texts_at};
use super::time::now_micros;
use super::vector::to_bytes;
use crate::Store;
use crate::backend::{ItemWrite, Vectors};
use crate::error::StoreError;
use futures::future::BoxFuture;
use serde_json::Value;
use std::future::IntoFuture;

/// Stores an item when awaited: a new one, or a new value for an existing
/// one (which keeps its `created_at`). Made by
/// [`Store::put_item`](crate::Store::put_item); with an index
/// ([`Store::with_index`](crate::Store::with_index)), the item's fields
/// are embedded first, and nothing is stored if that fails.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), state_store::StoreError> {
/// use serde_json::json;
/// let store = state_store::Store::memory();
/// store.put_item(&["users", "u-7"], "prefs", json!({"theme": "dark"})).await?;
/// // Searchable by its fields, never by meaning:
/// store.put_item(&["users", "u-7"], "token", json!({"secret": "..."})).no_index().await?;
/// # Ok(())
/// # }
/// ```
#[must_use = "a put does nothing until it is awaited"]
#[derive(Debug)]
pub struct PutItem<'a> {
    store: &'a Store,
    namespace: Vec<String>,
    key: String,
    value: Value,
    index: Index,
}

/// Which fields a put embeds (LangGraph's `index` argument).
#[derive(Debug, Clone)]
enum Index {
    /// The index's own fields.
    Default,
    /// None (`index=False`).
    No,
    /// These (`index=[...]`).
    Fields(Vec<(String, FieldPath)>),
}

impl<'a> PutItem<'a> {
    pub(crate) fn new(store: &'a Store, namespace: Vec<String>, key: &str, value: Value) -> Self {
        PutItem {
            store,
            namespace,
            key: key.to_owned(),
            value,
            index: Index::Default,
        }
    }

    /// Embeds nothing for this item (LangGraph's `index=False`): it is
    /// still found by [`get_item`](crate::Store::get_item) and by searches
    /// without a query, and ranks after every embedded item in a search
    /// with one. Any vectors it had are removed.
    pub fn no_index(mut self) -> Self {
        self.index = Index::No;
        self
    }

    /// Embeds these fields of this item instead of the index's (LangGraph's
    /// `index=["text", ...]`). Without an index on the store, ignored, as
    /// in LangGraph.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// # use serde_json::json;
    /// # let store = state_store::Store::memory();
    /// store
    ///     .put_item(&["docs"], "d1", json!({"title": "Rust", "chapters": [{"text": "..."}]}))
    ///     .index_fields(["title", "chapters[*].text"])
    ///     .await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn index_fields<I, S>(mut self, fields: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.index = Index::Fields(parse_fields(fields));
        self
    }

    async fn run(self) -> Result<(), StoreError> {
        let PutItem {
            store,
            namespace,
            key,
            value,
            index,
        } = self;
        check_for_put(&namespace)?;
        check_key(&namespace, &key, true)?;
        let what = || format!("item {key:?} in namespace {}", shown(&namespace));
        if !value.is_object() {
            return Err(StoreError::InvalidItem {
                what: what(),
                reason: format!(
                    "the value must be a JSON object (LangGraph stores a dict), got {}",
                    kind(&value)
                ),
            });
        }
        // Serializing a map of JSON values cannot fail.
        let text = serde_json::to_string(&value).unwrap_or_default();
        // Only a NUL in a string or a key is written `\u0000`.
        if text.contains("\\u0000") && holds_nul(&value) {
            return Err(StoreError::InvalidItem {
                what: what(),
                reason: "a string in the value holds a NUL character (\\u0000), which PostgreSQL cannot store".to_owned(),
            });
        }
        let vectors = match (&store.index, &index) {
            (None, _) | (_, Index::No) => None,
            (Some(config), index) => {
                let fields = match index {
                    Index::Fields(fields) => fields.as_slice(),
                    _ => config.default_fields(),
                };
                let mut texts: Vec<String> = Vec::new();
                for (_, path) in fields {
                    for text in texts_at(&value, path) {
                        // The same text twice embeds to the same vector.
                        if !texts.contains(&text) {
                            texts.push(text);
                        }
                    }
                }
                if texts.is_empty() {
                    None
                } else {
                    let embedding = || format!("embedding {}", what());
                    let vectors = config.embed(texts, &embedding).await?;
                    Some((config.dims(), to_bytes(&vectors)))
                }
            }
        };
        let prefix = to_text(&namespace);
        let write = ItemWrite {
            prefix: &prefix,
            key: &key,
            value: &text,
            now: now_micros(),
            vectors: vectors.as_ref().map(|(dims, bytes)| Vectors {
                dims: i64::try_from(*dims).unwrap_or(i64::MAX),
                bytes,
            }),
        };
        store.backend.put_item(&write).await
    }
}

/// Whether a string or key in `value` holds a NUL.
fn holds_nul(value: &Value) -> bool {
    match value {
        Value::String(s) => s.contains('\0'),
        Value::Array(items) => items.iter().any(holds_nul),
        Value::Object(map) => map.iter().any(|(k, v)| k.contains('\0') || holds_nul(v)),
        _ => false,
    }
}

impl<'a> IntoFuture for PutItem<'a> {
    type Output = Result<(), StoreError>;
    type IntoFuture = BoxFuture<'a, Result<(), StoreError>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.run())
    }
}
