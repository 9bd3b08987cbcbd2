//! Long-term memory: JSON items by namespace and key, shared across
//! threads (a user's preferences, what an agent learned), with filtered
//! and semantic search. LangGraph's `BaseStore` (`store=` when a graph is
//! compiled), on all three backends, in tables of their own.
//!
//! - `namespace.rs`: what a namespace may be, how it is stored and matched.
//! - `filter.rs`: search filters, decided in Rust, narrowed in SQL.
//! - `paths.rs`: the texts at an index's field paths.
//! - `embed.rs`: the index (embedding function, dimensions, fields).
//! - `vector.rs`: stored vectors, cosine similarity, the best k.
//! - `put.rs`, `search.rs`, `list.rs`: the builders the store returns.
//! - `time.rs`: microsecond times, written as LangGraph writes them.

mod embed;
mod filter;
mod list;
mod namespace;
mod paths;
mod put;
mod search;
pub(crate) mod time;
mod vector;

pub use embed::{Embeddings, IndexConfig};
pub use list::ListNamespaces;
pub use namespace::IntoNamespace;
pub use put::PutItem;
pub use search::SearchItems;

pub(crate) use namespace::shown_text;

use crate::Store;
use crate::error::StoreError;
use namespace::{check_key, check_labels, from_text, to_text};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;
use std::time::SystemTime;

/// A stored item (LangGraph's `Item`). Serializes as LangGraph's
/// `Item.dict()` and the Agent Server's `/store/items` do:
/// `{"namespace": [..], "key": .., "value": {..}, "created_at":
/// "2026-11-27T10:40:29.480913+00:00", "updated_at": ..}`.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), state_store::StoreError> {
/// use serde_json::json;
/// let store = state_store::Store::memory();
/// store.put_item(&["users", "u-7"], "prefs", json!({"theme": "dark"})).await?;
/// let item = store.get_item(&["users", "u-7"], "prefs").await?.unwrap();
/// assert_eq!(item.value["theme"], "dark");
/// assert_eq!(item.namespace, ["users", "u-7"]);
///
/// let shape = serde_json::to_value(&item).unwrap();
/// assert_eq!(shape["namespace"], json!(["users", "u-7"]));
/// assert!(shape["created_at"].as_str().unwrap().ends_with("+00:00"));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Item {
    /// Its namespace, most general label first.
    pub namespace: Vec<String>,
    /// Its key, unique in the namespace.
    pub key: String,
    /// Its value: always a JSON object.
    pub value: Value,
    /// When it was first put (microseconds).
    #[serde(with = "time::iso")]
    pub created_at: SystemTime,
    /// When it was last put.
    #[serde(with = "time::iso")]
    pub updated_at: SystemTime,
}

/// An item found by a search (LangGraph's `SearchItem`): the item and,
/// when the search had a query, its similarity to it. Serializes as
/// LangGraph's `SearchItem.dict()`: the item's fields and `"score"`
/// (`null` without a query).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), state_store::StoreError> {
/// use serde_json::json;
/// let store = state_store::Store::memory();
/// store.put_item(&["users", "u-7"], "prefs", json!({"theme": "dark"})).await?;
/// let found = store.search_items(&["users"]).await?;
/// assert_eq!((found[0].key.as_str(), found[0].score), ("prefs", None));
/// assert_eq!(serde_json::to_value(&found[0]).unwrap()["score"], json!(null));
/// let item: state_store::Item = found[0].clone().into_item();
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SearchItem {
    /// Its namespace, most general label first.
    pub namespace: Vec<String>,
    /// Its key.
    pub key: String,
    /// Its value: always a JSON object.
    pub value: Value,
    /// When it was first put.
    #[serde(with = "time::iso")]
    pub created_at: SystemTime,
    /// When it was last put.
    #[serde(with = "time::iso")]
    pub updated_at: SystemTime,
    /// Its cosine similarity to the search's query (the best of its
    /// vectors); `None` without a query, or for an item without vectors.
    pub score: Option<f64>,
}

impl SearchItem {
    fn from_item(item: Item, score: Option<f64>) -> SearchItem {
        SearchItem {
            namespace: item.namespace,
            key: item.key,
            value: item.value,
            created_at: item.created_at,
            updated_at: item.updated_at,
            score,
        }
    }

    /// The item, without its score.
    pub fn into_item(self) -> Item {
        Item {
            namespace: self.namespace,
            key: self.key,
            value: self.value,
            created_at: self.created_at,
            updated_at: self.updated_at,
        }
    }
}

/// A corrupt row's error.
fn corrupt(prefix: &str, key: &str, detail: impl std::fmt::Display) -> StoreError {
    StoreError::CorruptItem {
        namespace: shown_text(prefix),
        key: key.to_owned(),
        detail: detail.to_string(),
    }
}

/// A stored value, which must be a JSON object.
fn decode_value(prefix: &str, key: &str, value: &str) -> Result<Value, StoreError> {
    match serde_json::from_str(value) {
        Ok(value @ Value::Object(_)) => Ok(value),
        Ok(other) => Err(corrupt(
            prefix,
            key,
            format!("the value is {}, not a JSON object", filter::kind(&other)),
        )),
        Err(e) => Err(corrupt(prefix, key, format!("the value is not JSON: {e}"))),
    }
}

/// An item from its row.
fn decode(
    prefix: &str,
    key: &str,
    value: &str,
    created_at: i64,
    updated_at: i64,
) -> Result<Item, StoreError> {
    let value = decode_value(prefix, key, value)?;
    item(prefix, key, value, created_at, updated_at)
}

/// An item from its row, its value decoded.
fn item(
    prefix: &str,
    key: &str,
    value: Value,
    created_at: i64,
    updated_at: i64,
) -> Result<Item, StoreError> {
    let namespace = from_text(prefix)
        .ok_or_else(|| corrupt(prefix, key, "its namespace has an empty label"))?;
    Ok(Item {
        namespace,
        key: key.to_owned(),
        value,
        created_at: time::from_micros(created_at),
        updated_at: time::from_micros(updated_at),
    })
}

/// Long-term memory.
impl Store {
    /// This store, indexing items for search by meaning (LangGraph's
    /// `index=`): each put embeds the index's fields of the item, and a
    /// search with [`query`](SearchItems::query) ranks by them. See
    /// [`IndexConfig`] for an example.
    ///
    /// The vectors live with the items, in the store's database; a store
    /// opened later on the same database with another index (other
    /// dimensions) finds vectors that do not fit it, and says so when it
    /// searches: put the items again to embed them anew.
    ///
    /// ```
    /// use state_store::{IndexConfig, Store};
    /// let embed = |texts: Vec<String>| async move {
    ///     Ok::<_, std::convert::Infallible>(texts.iter().map(|t| vec![t.len() as f32]).collect())
    /// };
    /// let store = Store::memory().with_index(IndexConfig::new(1, embed));
    /// ```
    pub fn with_index(mut self, index: IndexConfig) -> Store {
        self.index = Some(Arc::new(index));
        self
    }

    /// Stores `value` under `namespace` and `key`, replacing the value
    /// there (the item keeps its `created_at`); awaited, or given options
    /// first ([`PutItem`]: which fields to embed).
    ///
    /// The namespace needs at least one label; labels are non-empty and
    /// hold no `.` and no NUL; the root `"langgraph"` is LangGraph's.
    /// `value` must be a JSON object (a LangGraph dict). Errors:
    /// [`StoreError::InvalidNamespace`], [`StoreError::InvalidItem`],
    /// [`StoreError::Embedding`]; nothing is written on error.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use serde_json::json;
    /// let store = state_store::Store::memory();
    /// store.put_item(&["users", "u-7"], "prefs", json!({"theme": "dark"})).await?;
    /// let first = store.get_item(&["users", "u-7"], "prefs").await?.unwrap();
    /// store.put_item(&["users", "u-7"], "prefs", json!({"theme": "light"})).await?;
    /// let now = store.get_item(&["users", "u-7"], "prefs").await?.unwrap();
    /// assert_eq!((now.value["theme"].as_str(), now.created_at), (Some("light"), first.created_at));
    ///
    /// let err = store.put_item(&["users", "u.7"], "prefs", json!({})).await.unwrap_err();
    /// assert!(err.to_string().starts_with("invalid namespace [\"users\", \"u.7\"]"));
    /// let err = store.put_item(&["users"], "prefs", json!("dark")).await.unwrap_err();
    /// assert!(err.to_string().contains("must be a JSON object"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn put_item(&self, namespace: impl IntoNamespace, key: &str, value: Value) -> PutItem<'_> {
        PutItem::new(self, namespace.into_namespace(), key, value)
    }

    /// The item under `namespace` and `key`, if there is one.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// # use serde_json::json;
    /// let store = state_store::Store::memory();
    /// assert!(store.get_item(&["users", "u-7"], "prefs").await?.is_none());
    /// store.put_item(&["users", "u-7"], "prefs", json!({"theme": "dark"})).await?;
    /// assert!(store.get_item(&["users", "u-7"], "prefs").await?.is_some());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn get_item(
        &self,
        namespace: impl IntoNamespace,
        key: &str,
    ) -> Result<Option<Item>, StoreError> {
        let namespace = namespace.into_namespace();
        check_labels(&namespace)?;
        check_key(&namespace, key, false)?;
        match self.backend.get_item(&to_text(&namespace), key).await? {
            Some(row) => decode(
                &row.prefix,
                &row.key,
                &row.value,
                row.created_at,
                row.updated_at,
            )
            .map(Some),
            None => Ok(None),
        }
    }

    /// Deletes the item under `namespace` and `key` with its vectors.
    /// Returns whether there was one.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// # use serde_json::json;
    /// let store = state_store::Store::memory();
    /// store.put_item(&["users", "u-7"], "prefs", json!({"theme": "dark"})).await?;
    /// assert!(store.delete_item(&["users", "u-7"], "prefs").await?);
    /// assert!(!store.delete_item(&["users", "u-7"], "prefs").await?);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn delete_item(
        &self,
        namespace: impl IntoNamespace,
        key: &str,
    ) -> Result<bool, StoreError> {
        let namespace = namespace.into_namespace();
        check_labels(&namespace)?;
        check_key(&namespace, key, false)?;
        self.backend.delete_item(&to_text(&namespace), key).await
    }

    /// The items under `prefix` (the namespace itself and every namespace
    /// below it, whole labels only; `..` or `&[]` for all), filtered,
    /// ranked and paged by the [`SearchItems`] it returns, run when
    /// awaited.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// # use serde_json::json;
    /// let store = state_store::Store::memory();
    /// store.put_item(&["users", "u-7"], "prefs", json!({"theme": "dark"})).await?;
    /// store.put_item(&["users_archive"], "old", json!({"theme": "dark"})).await?;
    /// let found = store.search_items(&["users"]).filter(json!({"theme": "dark"})).await?;
    /// assert_eq!(found.len(), 1);
    /// # Ok(())
    /// # }
    /// ```
    pub fn search_items(&self, prefix: impl IntoNamespace) -> SearchItems<'_> {
        SearchItems::new(self, prefix.into_namespace())
    }

    /// The namespaces holding items under `prefix` (`..` or `&[]` for
    /// all; a `"*"` label matches any one), as the [`ListNamespaces`] it
    /// returns narrows and pages them, when awaited.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// # use serde_json::json;
    /// let store = state_store::Store::memory();
    /// store.put_item(&["users", "u-7", "prefs"], "theme", json!({"v": "dark"})).await?;
    /// store.put_item(&["users", "u-8"], "prefs", json!({"v": 1})).await?;
    /// let namespaces = store.list_namespaces(&["users"]).max_depth(2).limit(10).await?;
    /// assert_eq!(namespaces, [["users", "u-7"], ["users", "u-8"]]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn list_namespaces(&self, prefix: impl IntoNamespace) -> ListNamespaces<'_> {
        ListNamespaces::new(self, prefix.into_namespace())
    }
}
