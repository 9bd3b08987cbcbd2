//! [`SearchItems`]: the items under a namespace prefix, filtered, newest
//! first, or ranked by meaning when the search has a query.

use super::filter::Filter;
use super::namespace::{check_labels, prefix_range, shown};
use super::vector::{QueryVector, TopK};
use super::{Item, SearchItem, decode, decode_value};
use crate::Store;
use crate::backend::{Flow, ItemScan, ScannedItem};
use crate::error::StoreError;
use futures::future::BoxFuture;
use serde_json::Value;
use std::future::IntoFuture;

/// LangGraph's default page size for a search.
const DEFAULT_LIMIT: usize = 10;

/// Rows read beyond a page when a filter may refuse some.
const FILTER_SLACK: usize = 16;

/// A search of the items under a namespace prefix, run when awaited;
/// made by [`Store::search_items`](crate::Store::search_items).
///
/// Without a query, the items come newest first (by `updated_at`, as
/// LangGraph's `PostgresStore` orders them; ties, by namespace and key,
/// descending). With [`query`](SearchItems::query), they are ranked by
/// the cosine similarity of the query's embedding to theirs (highest
/// first, each item by the best of its vectors), and items that have no
/// vectors follow, newest first, with no score. [`filter`](SearchItems::filter)
/// applies before either; [`offset`](SearchItems::offset) and
/// [`limit`](SearchItems::limit) (10 unless set, as in LangGraph) page
/// through the result. The order is the same on every backend.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), state_store::StoreError> {
/// use serde_json::json;
/// let store = state_store::Store::memory();
/// for (user, n) in [("u-1", 2), ("u-2", 5), ("u-3", 9)] {
///     store.put_item(&["users", user], "prefs", json!({"kind": "pref", "n": n})).await?;
/// }
/// let found = store
///     .search_items(&["users"])
///     .filter(json!({"kind": "pref", "n": {"$gt": 3}}))
///     .limit(10)
///     .await?;
/// let users: Vec<&str> = found.iter().map(|i| i.namespace[1].as_str()).collect();
/// assert_eq!(users, ["u-3", "u-2"]); // newest first
/// assert_eq!(found[0].score, None);
/// # Ok(())
/// # }
/// ```
#[must_use = "a search does nothing until it is awaited"]
#[derive(Debug)]
pub struct SearchItems<'a> {
    store: &'a Store,
    prefix: Vec<String>,
    filter: Value,
    query: Option<String>,
    limit: usize,
    offset: usize,
}

impl<'a> SearchItems<'a> {
    pub(crate) fn new(store: &'a Store, prefix: Vec<String>) -> Self {
        SearchItems {
            store,
            prefix,
            filter: Value::Null,
            query: None,
            limit: DEFAULT_LIMIT,
            offset: 0,
        }
    }

    /// Keeps the items whose value passes `filter`, LangGraph's filter: a
    /// JSON object of top-level fields, each with a value it must equal or
    /// with operators (`{"n": {"$gt": 3}}`: `$eq $ne $gt $gte $lt $lte`),
    /// or with an object of nested fields (`{"meta": {"lang": "en"}}`).
    /// A missing field reads as `null`. An unknown operator is an error
    /// when the search runs. `null` (the default): no filter.
    ///
    /// Numbers compare exactly (`1` equals `1.0`), strings bytewise; the
    /// order operators hold only between two numbers or two strings.
    pub fn filter(mut self, filter: Value) -> Self {
        self.filter = filter;
        self
    }

    /// Ranks the items by meaning: the query is embedded by the store's
    /// index, and every item under the prefix (after the filter) is
    /// scored, exactly. An error when the store has no index (see
    /// [`IndexConfig`](crate::IndexConfig) for a store with one).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let store = state_store::Store::memory();
    /// let err = store.search_items(&["notes"]).query("cats").await.unwrap_err();
    /// assert!(err.to_string().ends_with("give it one with Store::with_index"));
    /// # }
    /// ```
    pub fn query(mut self, query: impl Into<String>) -> Self {
        self.query = Some(query.into());
        self
    }

    /// At most `limit` items (10 unless set).
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }

    /// Skips the first `offset` items of the result.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// # use serde_json::json;
    /// let store = state_store::Store::memory();
    /// for i in 0..25 {
    ///     store.put_item(&["log"], &format!("e{i}"), json!({"i": i})).await?;
    /// }
    /// let third_page = store.search_items(&["log"]).limit(10).offset(20).await?;
    /// let keys: Vec<&str> = third_page.iter().map(|i| i.key.as_str()).collect();
    /// assert_eq!(keys, ["e4", "e3", "e2", "e1", "e0"]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn offset(mut self, offset: usize) -> Self {
        self.offset = offset;
        self
    }

    async fn run(self) -> Result<Vec<SearchItem>, StoreError> {
        check_labels(&self.prefix)?;
        let filter = Filter::parse(self.filter)?;
        let range = prefix_range(&self.prefix);
        let pushed = filter.pushed();
        let scan = ItemScan {
            prefix: range.as_ref(),
            pushed: &pushed,
        };
        match &self.query {
            Some(query) => {
                let query = embed_query(self.store, &self.prefix, query).await?;
                if self.limit == 0 {
                    return Ok(Vec::new());
                }
                ranked(self.store, scan, &filter, &query, self.offset, self.limit).await
            }
            None if self.limit == 0 => Ok(Vec::new()),
            None => newest(self.store, scan, &filter, self.offset, self.limit).await,
        }
    }
}

/// The query's vector, by the store's index.
async fn embed_query(
    store: &Store,
    prefix: &[String],
    query: &str,
) -> Result<QueryVector, StoreError> {
    let what = || format!("search of {} by the query {query:?}", shown(prefix));
    let Some(index) = &store.index else {
        return Err(StoreError::InvalidItem {
            what: what(),
            reason: "this store has no index to rank items by meaning; give it one with Store::with_index".to_owned(),
        });
    };
    let embedding = || format!("embedding the {}", what());
    let mut vectors = index.embed(vec![query.to_owned()], &embedding).await?;
    Ok(QueryVector::new(vectors.pop().unwrap_or_default()))
}

/// Without a query: the filtered items, newest first, read page by page
/// until the page asked for is full.
async fn newest(
    store: &Store,
    scan: ItemScan<'_>,
    filter: &Filter,
    offset: usize,
    limit: usize,
) -> Result<Vec<SearchItem>, StoreError> {
    let mut found = Vec::new();
    let mut skipped = 0;
    let mut visit = |row: ScannedItem<'_>| {
        // The value decides; the item is built only for a result.
        let value = decode_value(row.prefix, row.key, row.value)?;
        if filter.matches(&value) {
            if skipped < offset {
                skipped += 1;
            } else {
                let item = super::item(row.prefix, row.key, value, row.created_at, row.updated_at)?;
                found.push(SearchItem::from_item(item, None));
            }
        }
        Ok(if found.len() >= limit {
            Flow::Enough
        } else {
            Flow::More
        })
    };
    // A filter may refuse rows SQL let through (a number equal to a
    // widened bound, a condition only Rust checks): a few rows more in the
    // first read save a second one.
    let slack = if filter.is_empty() { 0 } else { FILTER_SLACK };
    let first_page = offset.saturating_add(limit).saturating_add(slack);
    store
        .backend
        .scan_items(scan, first_page, &mut visit)
        .await?;
    Ok(found)
}

/// A candidate kept for a page: the row, and its value if the filter
/// decoded it already.
struct Candidate {
    value: String,
    created_at: i64,
    decoded: Option<Value>,
}

/// With a query: every filtered item scored, the best kept.
async fn ranked(
    store: &Store,
    scan: ItemScan<'_>,
    filter: &Filter,
    query: &QueryVector,
    offset: usize,
    limit: usize,
) -> Result<Vec<SearchItem>, StoreError> {
    let wanted = offset.saturating_add(limit);
    let mut scored = TopK::new(wanted);
    let mut unscored = TopK::new(wanted);
    let mut visit = |row: ScannedItem<'_>| {
        let decoded = if filter.is_empty() {
            None
        } else {
            let value = decode_value(row.prefix, row.key, row.value)?;
            if !filter.matches(&value) {
                return Ok(Flow::More);
            }
            Some(value)
        };
        let candidate = || Candidate {
            value: row.value.to_owned(),
            created_at: row.created_at,
            decoded,
        };
        match row.vectors {
            Some(vectors) => {
                let score = query
                    .score(vectors)
                    .map_err(|detail| super::corrupt(row.prefix, row.key, detail))?;
                scored.offer(score, row.updated_at, row.prefix, row.key, candidate);
            }
            None => unscored.offer(0.0, row.updated_at, row.prefix, row.key, candidate),
        }
        Ok(Flow::More)
    };
    store.backend.scan_vectors(scan, &mut visit).await?;
    let scored = scored.into_sorted().into_iter().map(|(rank, c)| {
        let score = Some(f64::from(rank.score));
        (rank, score, c)
    });
    let unscored = unscored
        .into_sorted()
        .into_iter()
        .map(|(rank, c)| (rank, None, c));
    scored
        .chain(unscored)
        .skip(offset)
        .take(limit)
        .map(|(rank, score, candidate)| {
            let item: Item = match candidate.decoded {
                Some(value) => super::item(
                    &rank.prefix,
                    &rank.key,
                    value,
                    candidate.created_at,
                    rank.updated_at,
                )?,
                None => decode(
                    &rank.prefix,
                    &rank.key,
                    &candidate.value,
                    candidate.created_at,
                    rank.updated_at,
                )?,
            };
            Ok(SearchItem::from_item(item, score))
        })
        .collect()
}

impl<'a> IntoFuture for SearchItems<'a> {
    type Output = Result<Vec<SearchItem>, StoreError>;
    type IntoFuture = BoxFuture<'a, Result<Vec<SearchItem>, StoreError>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.run())
    }
}
