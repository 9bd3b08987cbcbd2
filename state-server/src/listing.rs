//! Pages of threads, newest first: what `GET /threads` answers as JSON and
//! the inspector's thread list shows, with the same order and cursors.

use crate::error::ApiError;
use crate::json::millis;
use state_store::{Store, ThreadCursor, ThreadInfo, ThreadOrder};

/// One page of threads, and where the next one starts.
pub(crate) struct ThreadPage {
    /// The threads, newest first, each with its `updated_at` in
    /// milliseconds.
    pub threads: Vec<(u64, ThreadInfo)>,
    /// The cursor of the next page (`<updated millis>:<id>`, the last
    /// thread of this one), when there are more.
    pub next: Option<String>,
}

/// The threads after `before` (a cursor, as [`ThreadPage::next`] gives it)
/// whose id contains `filter` (case-insensitively, when given), at most
/// `limit` of them, newest `updated_at` first (then id, both descending):
/// a page of the store's own listing ([`Store::list_threads`]), which
/// reads only what the page needs.
pub(crate) async fn page(
    store: &Store,
    before: Option<&str>,
    limit: usize,
    filter: Option<&str>,
) -> Result<ThreadPage, ApiError> {
    let before = before.map(Cursor::parse).transpose()?;
    let mut listing = store
        .list_threads()
        .order(ThreadOrder::UpdatedDesc)
        .limit(limit);
    if let Some(cursor) = before {
        listing = listing.after(ThreadCursor::new(cursor.updated, cursor.id));
    }
    if let Some(filter) = filter {
        listing = listing.id_contains(filter);
    }
    let listed = listing.await?;
    Ok(ThreadPage {
        threads: listed
            .threads
            .into_iter()
            .map(|info| (millis(info.updated_at), info))
            .collect(),
        next: listed
            .next
            .map(|cursor| format!("{}:{}", cursor.millis(), cursor.id())),
    })
}

/// Where a page of threads starts: after this thread.
struct Cursor {
    updated: u64,
    id: String,
}

impl Cursor {
    fn parse(text: &str) -> Result<Cursor, ApiError> {
        let bad = || {
            ApiError::bad_query(
                "before must be <updated_at in milliseconds>:<thread id>, \
                 as the link to the next page gives it",
            )
        };
        let (updated, id) = text.split_once(':').ok_or_else(bad)?;
        Ok(Cursor {
            updated: updated.parse().map_err(|_| bad())?,
            id: id.to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_split_at_the_first_colon() {
        let cursor = Cursor::parse("17:a:b").ok().unwrap();
        assert_eq!((cursor.updated, cursor.id.as_str()), (17, "a:b"));
        assert!(Cursor::parse("17").is_err());
        assert!(Cursor::parse("x:a").is_err());
        assert!(Cursor::parse("-1:a").is_err());
    }
}
