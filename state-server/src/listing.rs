//! Pages of threads, newest first: what `GET /threads` answers as JSON and
//! the inspector's thread list shows, with the same order and cursors.

use crate::error::ApiError;
use crate::json::millis;
use state_store::{Store, ThreadInfo};
use std::cmp::Ordering;

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
/// `limit` of them.
pub(crate) async fn page(
    store: &Store,
    before: Option<&str>,
    limit: usize,
    filter: Option<&str>,
) -> Result<ThreadPage, ApiError> {
    let before = before.map(Cursor::parse).transpose()?;
    let filter = filter.map(str::to_lowercase).filter(|f| !f.is_empty());
    let mut listed: Vec<(u64, ThreadInfo)> = store
        .threads()
        .await?
        .into_iter()
        .map(|info| (millis(info.updated_at), info))
        .filter(|(updated, info)| {
            before.as_ref().is_none_or(|cursor| {
                newest_first((*updated, &info.id), (cursor.updated, &cursor.id))
                    == Ordering::Greater
            }) && filter
                .as_deref()
                .is_none_or(|f| info.id.to_lowercase().contains(f))
        })
        .collect();
    let more = listed.len() > limit;
    if more {
        // The page's threads, unordered, in O(threads); then sort the page.
        listed.select_nth_unstable_by(limit, |(ua, a), (ub, b)| {
            newest_first((*ua, &a.id), (*ub, &b.id))
        });
        listed.truncate(limit);
    }
    listed.sort_unstable_by(|(ua, a), (ub, b)| newest_first((*ua, &a.id), (*ub, &b.id)));
    let next = match listed.last() {
        Some((updated, last)) if more => Some(format!("{updated}:{}", last.id)),
        _ => None,
    };
    Ok(ThreadPage {
        threads: listed,
        next,
    })
}

/// The order of the lists: `Less` when `a` is listed before `b` (newest
/// `updated_at` first, then id descending).
fn newest_first(a: (u64, &str), b: (u64, &str)) -> Ordering {
    b.cmp(&a)
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

    #[test]
    fn newest_first_breaks_ties_by_id_descending() {
        assert_eq!(newest_first((2, "a"), (1, "z")), Ordering::Less);
        assert_eq!(newest_first((1, "b"), (1, "a")), Ordering::Less);
        assert_eq!(newest_first((1, "a"), (1, "a")), Ordering::Equal);
    }
}
