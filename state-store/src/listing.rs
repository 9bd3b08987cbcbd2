//! Threads listed a page at a time: [`Store::list_threads`] and what it
//! answers.

use crate::backend::{ThreadKey, ThreadRow, ThreadsPage};
use crate::error::StoreError;
use crate::handle::Store;
use crate::step::from_millis;
use futures::future::BoxFuture;
use std::future::IntoFuture;
use std::time::SystemTime;

/// A thread, as listed by [`Store::list_threads`] and [`Store::threads`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ThreadInfo {
    /// Its id.
    pub id: String,
    /// Its last committed step (0: none yet).
    pub seq: u64,
    /// When it was opened for the first time (or forked).
    pub created_at: SystemTime,
    /// When its last step was committed.
    pub updated_at: SystemTime,
    /// The thread and step it was forked from, if it was.
    pub forked_from: Option<(String, u64)>,
}

impl ThreadInfo {
    pub(crate) fn from_row(row: ThreadRow) -> ThreadInfo {
        ThreadInfo {
            id: row.id,
            seq: row.head,
            created_at: from_millis(row.created_at),
            updated_at: from_millis(row.updated_at),
            forked_from: row.parent,
        }
    }
}

/// The order of a listing of threads ([`Store::list_threads`]). Ties are
/// broken by the id, in the same direction; ids compare bytewise, on every
/// backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum ThreadOrder {
    /// The thread whose last step is newest first (`updated_at`
    /// descending): what the inspector lists.
    #[default]
    UpdatedDesc,
    /// `updated_at` ascending.
    UpdatedAsc,
    /// The newest thread first (`created_at` descending).
    CreatedDesc,
    /// `created_at` ascending.
    CreatedAsc,
    /// By id, ascending.
    IdAsc,
    /// By id, descending.
    IdDesc,
}

impl ThreadOrder {
    fn key(self) -> (ThreadKey, bool) {
        match self {
            ThreadOrder::UpdatedDesc => (ThreadKey::Updated, true),
            ThreadOrder::UpdatedAsc => (ThreadKey::Updated, false),
            ThreadOrder::CreatedDesc => (ThreadKey::Created, true),
            ThreadOrder::CreatedAsc => (ThreadKey::Created, false),
            ThreadOrder::IdAsc => (ThreadKey::Id, false),
            ThreadOrder::IdDesc => (ThreadKey::Id, true),
        }
    }
}

/// Where a page of threads ended: the next page starts after this
/// position ([`ListThreads::after`]). It is the last thread's time in the
/// listing's order (milliseconds since the Unix epoch; 0 in the id
/// orders) and its id, so a client can carry it as text
/// (`"<millis>:<id>"`, say) and give it back with [`ThreadCursor::new`].
/// It means something only in the order that made it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ThreadCursor {
    millis: u64,
    id: String,
}

impl ThreadCursor {
    /// The position after the thread `id` whose time in the listing's
    /// order is `millis` (ignored in the id orders).
    pub fn new(millis: u64, id: impl Into<String>) -> ThreadCursor {
        ThreadCursor {
            millis,
            id: id.into(),
        }
    }

    /// The time of the last thread, in milliseconds (0 in the id orders).
    pub fn millis(&self) -> u64 {
        self.millis
    }

    /// The id of the last thread.
    pub fn id(&self) -> &str {
        &self.id
    }
}

/// One page of threads ([`Store::list_threads`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ThreadPage {
    /// The threads, in the listing's order.
    pub threads: Vec<ThreadInfo>,
    /// Where the next page starts, when there are more threads to list
    /// (`None`: this page is the last).
    pub next: Option<ThreadCursor>,
}

/// Default page size of [`ListThreads`].
const DEFAULT_LIMIT: usize = 100;

/// Rows read at a time while a filter refuses some.
const BATCH: usize = 256;

/// A page of threads, when awaited: [`Store::list_threads`].
///
/// In [`order`](ListThreads::order) (newest `updated_at` first by
/// default), after [`after`](ListThreads::after) (the previous page's
/// [`next`](ThreadPage::next)), only those whose id contains
/// [`id_contains`](ListThreads::id_contains), skipping
/// [`offset`](ListThreads::offset) of them, at most
/// [`limit`](ListThreads::limit) (100 unless set). Paging by cursor is
/// stable while threads are added or move (a thread that moves past the
/// cursor is listed again or not at all, never twice in one page); an
/// offset is for clients that count (LangGraph's thread search).
///
/// What a page costs: in the id orders, the rows it returns (the thread
/// ids' index); in the time orders, a sort of the threads' rows in the
/// database (no index on the times, which every step would pay to keep
/// up), of which only the page comes back. A filter reads on until the
/// page is full: up to every row after the cursor when few ids match.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), state_store::StoreError> {
/// # use state_core::{AgentState, State};
/// # #[derive(AgentState, Debug)]
/// # struct S { n: u32 }
/// use state_store::ThreadOrder;
///
/// let store = state_store::Store::memory();
/// for id in ["user-1", "user-2", "user-3", "bot-1"] {
///     store.thread::<S>(id).await?;
/// }
/// let first = store.list_threads().order(ThreadOrder::IdAsc).limit(2).await?;
/// let ids: Vec<_> = first.threads.iter().map(|t| t.id.as_str()).collect();
/// assert_eq!(ids, ["bot-1", "user-1"]);
///
/// let cursor = first.next.expect("more threads");
/// let rest = store.list_threads().order(ThreadOrder::IdAsc).after(cursor).await?;
/// assert_eq!(rest.threads.len(), 2);
/// assert!(rest.next.is_none());
///
/// let users = store.list_threads().id_contains("USER").limit(10).await?;
/// assert_eq!(users.threads.len(), 3);
/// # Ok(())
/// # }
/// ```
#[must_use = "a listing does nothing until it is awaited"]
#[derive(Debug)]
pub struct ListThreads<'a> {
    store: &'a Store,
    order: ThreadOrder,
    after: Option<ThreadCursor>,
    id_contains: Option<String>,
    offset: usize,
    limit: usize,
}

impl<'a> ListThreads<'a> {
    pub(crate) fn new(store: &'a Store) -> Self {
        ListThreads {
            store,
            order: ThreadOrder::default(),
            after: None,
            id_contains: None,
            offset: 0,
            limit: DEFAULT_LIMIT,
        }
    }

    /// In this order ([`ThreadOrder::UpdatedDesc`] unless set).
    pub fn order(mut self, order: ThreadOrder) -> Self {
        self.order = order;
        self
    }

    /// After this position: the [`next`](ThreadPage::next) of the page
    /// before, in the same order.
    pub fn after(mut self, cursor: ThreadCursor) -> Self {
        self.after = Some(cursor);
        self
    }

    /// Only the threads whose id contains `text`, ignoring case (Unicode
    /// lowercase on both sides); an empty text keeps every thread.
    pub fn id_contains(mut self, text: impl Into<String>) -> Self {
        self.id_contains = Some(text.into().to_lowercase()).filter(|text| !text.is_empty());
        self
    }

    /// Skips the first `offset` threads (after the cursor and the filter).
    pub fn offset(mut self, offset: usize) -> Self {
        self.offset = offset;
        self
    }

    /// At most `limit` threads (100 unless set; 0 lists none).
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }

    async fn run(self) -> Result<ThreadPage, StoreError> {
        let (key, descending) = self.order.key();
        let position = |row: &ThreadRow| {
            let time = match key {
                ThreadKey::Updated => row.updated_at,
                ThreadKey::Created => row.created_at,
                ThreadKey::Id => 0,
            };
            ThreadCursor::new(u64::try_from(time).unwrap_or(0), row.id.clone())
        };
        fn page(
            (key, descending): (ThreadKey, bool),
            after: Option<&ThreadCursor>,
            offset: usize,
            limit: usize,
        ) -> ThreadsPage<'_> {
            ThreadsPage {
                key,
                descending,
                after: after.map(|c| (to_db(c.millis), c.id.as_str())),
                offset,
                limit,
            }
        }
        let order = (key, descending);
        if self.limit == 0 {
            return Ok(finish(Vec::new(), 0, position));
        }
        // One more than the page: whether there is a next one.
        let wanted = self.limit.saturating_add(1);
        let backend = &self.store.backend;
        let Some(filter) = &self.id_contains else {
            let rows = backend
                .threads_page(page(order, self.after.as_ref(), self.offset, wanted))
                .await?;
            return Ok(finish(rows, self.limit, position));
        };
        // A filter: read in order, a batch at a time, until the page is full.
        let mut rows = Vec::new();
        let mut cursor = self.after.clone();
        let mut skip = self.offset;
        let limit = BATCH.max(wanted);
        loop {
            let batch = backend
                .threads_page(page(order, cursor.as_ref(), 0, limit))
                .await?;
            let last_batch = batch.len() < limit;
            cursor = batch.last().map(position);
            for row in batch {
                if !row.id.to_lowercase().contains(filter.as_str()) {
                    continue;
                }
                if skip > 0 {
                    skip -= 1;
                    continue;
                }
                rows.push(row);
                if rows.len() == wanted {
                    return Ok(finish(rows, self.limit, position));
                }
            }
            if last_batch {
                return Ok(finish(rows, self.limit, position));
            }
        }
    }
}

/// The page of `limit` threads from `rows` (one more when there is a next
/// page), with the position after its last.
fn finish(
    mut rows: Vec<ThreadRow>,
    limit: usize,
    position: impl Fn(&ThreadRow) -> ThreadCursor,
) -> ThreadPage {
    let more = rows.len() > limit;
    rows.truncate(limit);
    let next = match rows.last() {
        Some(last) if more => Some(position(last)),
        _ => None,
    };
    ThreadPage {
        threads: rows.into_iter().map(ThreadInfo::from_row).collect(),
        next,
    }
}

/// A cursor's time as stored (milliseconds fit in an `i64`).
fn to_db(millis: u64) -> i64 {
    i64::try_from(millis).unwrap_or(i64::MAX)
}

impl<'a> IntoFuture for ListThreads<'a> {
    type Output = Result<ThreadPage, StoreError>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.run())
    }
}
