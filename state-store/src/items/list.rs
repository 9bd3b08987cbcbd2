//! [`ListNamespaces`]: the namespaces that hold items, what
//! [`Store::list_namespaces`](crate::Store::list_namespaces) returns.

use super::IntoNamespace;
use super::namespace::{check_labels, matches, prefix_range};
use crate::Store;
use crate::error::StoreError;
use futures::future::BoxFuture;
use std::collections::BTreeSet;
use std::future::IntoFuture;

/// LangGraph's default page size for a listing.
const DEFAULT_LIMIT: usize = 100;

/// The namespaces that hold at least one item, when awaited, in order
/// (label by label, bytewise: `["a", "b"]` before `["a-b"]`, as Python
/// sorts tuples); LangGraph's `list_namespaces`. The prefix and
/// [`suffix`](ListNamespaces::suffix) match whole labels, where a `"*"`
/// label matches any one; [`max_depth`](ListNamespaces::max_depth) cuts
/// longer namespaces to that many labels (and lists each cut once);
/// [`limit`](ListNamespaces::limit) (100 unless set) and
/// [`offset`](ListNamespaces::offset) page through the list.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), state_store::StoreError> {
/// use serde_json::json;
/// let store = state_store::Store::memory();
/// for ns in [["a", "b", "c"], ["a", "b", "d"], ["a", "c", "f"]] {
///     store.put_item(&ns, "k", json!({})).await?;
/// }
/// store.put_item(&["a", "b", "d", "e"], "k", json!({})).await?;
/// let listed = store.list_namespaces(&["a", "b"]).max_depth(3).await?;
/// assert_eq!(listed, [["a", "b", "c"], ["a", "b", "d"]]);
/// let ending = store.list_namespaces(&["a", "*"]).suffix(&["f"]).await?;
/// assert_eq!(ending, [["a", "c", "f"]]);
/// assert_eq!(store.list_namespaces(..).limit(2).offset(1).await?.len(), 2);
/// # Ok(())
/// # }
/// ```
#[must_use = "a listing does nothing until it is awaited"]
#[derive(Debug)]
pub struct ListNamespaces<'a> {
    store: &'a Store,
    prefix: Vec<String>,
    suffix: Vec<String>,
    max_depth: Option<usize>,
    limit: usize,
    offset: usize,
}

impl<'a> ListNamespaces<'a> {
    pub(crate) fn new(store: &'a Store, prefix: Vec<String>) -> Self {
        ListNamespaces {
            store,
            prefix,
            suffix: Vec::new(),
            max_depth: None,
            limit: DEFAULT_LIMIT,
            offset: 0,
        }
    }

    /// Only the namespaces that end with these labels (`"*"` matches any
    /// one).
    pub fn suffix(mut self, suffix: impl IntoNamespace) -> Self {
        self.suffix = suffix.into_namespace();
        self
    }

    /// Cuts namespaces to their first `depth` labels.
    pub fn max_depth(mut self, depth: usize) -> Self {
        self.max_depth = Some(depth);
        self
    }

    /// At most `limit` namespaces (100 unless set).
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }

    /// Skips the first `offset` namespaces.
    pub fn offset(mut self, offset: usize) -> Self {
        self.offset = offset;
        self
    }

    async fn run(self) -> Result<Vec<Vec<String>>, StoreError> {
        check_labels(&self.prefix)?;
        check_labels(&self.suffix)?;
        // The database narrows to the labels before the first wildcard;
        // the patterns decide.
        let literal: Vec<String> = self
            .prefix
            .iter()
            .take_while(|label| *label != "*")
            .cloned()
            .collect();
        let range = prefix_range(&literal);
        let stored = self.store.backend.item_namespaces(range.as_ref()).await?;
        let mut listed = BTreeSet::new();
        for text in stored {
            let mut labels: Vec<String> = text.split('.').map(str::to_owned).collect();
            if !matches(&labels, &self.prefix, false) || !matches(&labels, &self.suffix, true) {
                continue;
            }
            if let Some(depth) = self.max_depth {
                labels.truncate(depth);
            }
            listed.insert(labels);
        }
        Ok(listed
            .into_iter()
            .skip(self.offset)
            .take(self.limit)
            .collect())
    }
}

impl<'a> IntoFuture for ListNamespaces<'a> {
    type Output = Result<Vec<Vec<String>>, StoreError>;
    type IntoFuture = BoxFuture<'a, Result<Vec<Vec<String>>, StoreError>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.run())
    }
}
