//! Thread records: what the Agent Server keeps about a thread beside its
//! log (LangGraph's `Thread`: metadata, status, owner, times), in a table
//! of their own keyed by the thread id. The log's thread row is created
//! by the first step ([`Store::thread`](crate::Store::thread)); a record
//! by [`Store::create_thread_record`] or a run created with
//! [`IfNotExists::Create`](crate::IfNotExists::Create).
//! [`Store::delete_thread`](crate::Store::delete_thread) removes both,
//! with the thread's runs and their events.

use crate::Store;
use crate::backend::{RecordScan, ThreadRecordRow};
use crate::error::StoreError;
use crate::ids::check_id;
use crate::items::time::{from_micros, iso, now_micros};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;
use std::time::SystemTime;

/// A thread's status (LangGraph's): `idle`, `busy` while a run is
/// pending or running on it, `interrupted` when its graph paused,
/// `error` when its last run failed.
///
/// ```
/// use state_store::ThreadStatus;
/// assert_eq!(ThreadStatus::Busy.to_string(), "busy");
/// assert_eq!(serde_json::to_value(ThreadStatus::Interrupted).unwrap(), "interrupted");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ThreadStatus {
    /// Nothing running.
    Idle,
    /// A run pending or running.
    Busy,
    /// Paused at an interrupt.
    Interrupted,
    /// The last run failed.
    Error,
}

impl ThreadStatus {
    /// Its lowercase name.
    ///
    /// ```
    /// assert_eq!(state_store::ThreadStatus::Idle.as_str(), "idle");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            ThreadStatus::Idle => "idle",
            ThreadStatus::Busy => "busy",
            ThreadStatus::Interrupted => "interrupted",
            ThreadStatus::Error => "error",
        }
    }

    fn parse(text: &str) -> Option<ThreadStatus> {
        Some(match text {
            "idle" => ThreadStatus::Idle,
            "busy" => ThreadStatus::Busy,
            "interrupted" => ThreadStatus::Interrupted,
            "error" => ThreadStatus::Error,
            _ => return None,
        })
    }
}

impl fmt::Display for ThreadStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What [`Store::create_thread_record`] does when the record exists
/// (LangGraph's `if_exists`).
///
/// ```
/// assert_eq!(state_store::IfExists::default(), state_store::IfExists::Raise);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IfExists {
    /// [`StoreError::ThreadExists`].
    #[default]
    Raise,
    /// Returns the existing record, unchanged.
    DoNothing,
}

/// A thread record. Serializes with the Agent Server's field names
/// (times as ISO 8601 with microseconds).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), state_store::StoreError> {
/// use serde_json::json;
/// use state_store::{IfExists, Store, ThreadStatus};
/// let store = Store::memory();
/// let record = store.create_thread_record("t", json!({"user": "ada"}), None, IfExists::Raise).await?;
/// assert_eq!((record.status, &record.metadata), (ThreadStatus::Idle, &json!({"user": "ada"})));
/// assert_eq!(serde_json::to_value(&record).unwrap()["thread_id"], "t");
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ThreadRecord {
    /// The thread.
    pub thread_id: String,
    /// Its metadata: a JSON object.
    pub metadata: Value,
    /// Its status.
    pub status: ThreadStatus,
    /// Who created it.
    pub owner: Option<String>,
    /// When it was created.
    #[serde(with = "iso")]
    pub created_at: SystemTime,
    /// When it last changed.
    #[serde(with = "iso")]
    pub updated_at: SystemTime,
}

impl ThreadRecord {
    fn from_row(row: ThreadRecordRow) -> Result<ThreadRecord, StoreError> {
        let corrupt = |column: &'static str, detail: String| StoreError::CorruptRun {
            what: format!("thread record \"{}\"", row.thread_id),
            column,
            detail,
        };
        let metadata: Value = serde_json::from_str(&row.metadata)
            .map_err(|e| corrupt("metadata", format!("not JSON: {e}")))?;
        if !metadata.is_object() {
            return Err(corrupt("metadata", "not a JSON object".into()));
        }
        let status = ThreadStatus::parse(&row.status)
            .ok_or_else(|| corrupt("status", format!("unknown status {:?}", row.status)))?;
        Ok(ThreadRecord {
            metadata,
            status,
            created_at: from_micros(row.created_at),
            updated_at: from_micros(row.updated_at),
            thread_id: row.thread_id,
            owner: row.owner,
        })
    }
}

/// The order of [`Store::search_thread_records`].
///
/// ```
/// assert_eq!(state_store::ThreadSortBy::default(), state_store::ThreadSortBy::CreatedAt);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThreadSortBy {
    /// By thread id (bytewise).
    ThreadId,
    /// By creation time, then id.
    #[default]
    CreatedAt,
    /// By last change, then id.
    UpdatedAt,
}

/// Which thread records [`Store::search_thread_records`] and
/// [`Store::count_thread_records`] select: by metadata (every top-level
/// key of the filter equal in the record's metadata), status and owner;
/// a page (`limit` 10, `offset` 0) in an order (newest first by
/// default).
///
/// ```
/// use serde_json::json;
/// use state_store::{ThreadSearch, ThreadSortBy, ThreadStatus};
/// let search = ThreadSearch::default()
///     .metadata(json!({"user": "ada"}))
///     .status(ThreadStatus::Idle)
///     .sort_by(ThreadSortBy::UpdatedAt, true)
///     .limit(20);
/// assert_eq!(search.limit, 20);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ThreadSearch {
    /// Top-level keys the metadata must have, with these values.
    pub metadata: Option<Value>,
    /// Only records in this status.
    pub status: Option<ThreadStatus>,
    /// Only records of this owner (`None`: any).
    pub owner: Option<String>,
    /// At most this many.
    pub limit: usize,
    /// After skipping this many.
    pub offset: usize,
    /// The order.
    pub sort_by: ThreadSortBy,
    /// Descending (newest first).
    pub descending: bool,
}

impl Default for ThreadSearch {
    fn default() -> Self {
        ThreadSearch {
            metadata: None,
            status: None,
            owner: None,
            limit: 10,
            offset: 0,
            sort_by: ThreadSortBy::CreatedAt,
            descending: true,
        }
    }
}

impl ThreadSearch {
    /// Metadata the records must contain (top-level keys equal).
    ///
    /// ```
    /// use serde_json::json;
    /// use state_store::{ThreadSearch, ThreadSortBy, ThreadStatus};
    /// assert_eq!(ThreadSearch::default().metadata(json!({"a": 1})).metadata, Some(json!({"a": 1})));
    /// ```
    pub fn metadata(mut self, metadata: Value) -> Self {
        self.metadata = Some(metadata);
        self
    }

    /// Only records in `status`.
    ///
    /// ```
    /// use serde_json::json;
    /// use state_store::{ThreadSearch, ThreadSortBy, ThreadStatus};
    /// assert_eq!(ThreadSearch::default().status(ThreadStatus::Busy).status, Some(ThreadStatus::Busy));
    /// ```
    pub fn status(mut self, status: ThreadStatus) -> Self {
        self.status = Some(status);
        self
    }

    /// Only records of `owner`.
    ///
    /// ```
    /// use serde_json::json;
    /// use state_store::{ThreadSearch, ThreadSortBy, ThreadStatus};
    /// assert_eq!(ThreadSearch::default().owner("ada").owner.as_deref(), Some("ada"));
    /// ```
    pub fn owner(mut self, owner: impl Into<String>) -> Self {
        self.owner = Some(owner.into());
        self
    }

    /// At most `limit`.
    ///
    /// ```
    /// use serde_json::json;
    /// use state_store::{ThreadSearch, ThreadSortBy, ThreadStatus};
    /// assert_eq!(ThreadSearch::default().limit(3).limit, 3);
    /// ```
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }

    /// Skipping the first `offset`.
    ///
    /// ```
    /// use serde_json::json;
    /// use state_store::{ThreadSearch, ThreadSortBy, ThreadStatus};
    /// assert_eq!(ThreadSearch::default().offset(3).offset, 3);
    /// ```
    pub fn offset(mut self, offset: usize) -> Self {
        self.offset = offset;
        self
    }

    /// In this order.
    ///
    /// ```
    /// use serde_json::json;
    /// use state_store::{ThreadSearch, ThreadSortBy, ThreadStatus};
    /// assert_eq!(ThreadSearch::default().sort_by(ThreadSortBy::ThreadId, false).sort_by, ThreadSortBy::ThreadId);
    /// ```
    pub fn sort_by(mut self, sort_by: ThreadSortBy, descending: bool) -> Self {
        self.sort_by = sort_by;
        self.descending = descending;
        self
    }

    fn matches(&self, record: &ThreadRecord) -> bool {
        match &self.metadata {
            Some(Value::Object(filter)) => filter
                .iter()
                .all(|(key, value)| record.metadata.get(key) == Some(value)),
            _ => true,
        }
    }
}

fn object(what: &str, metadata: &Value) -> Result<(), StoreError> {
    if metadata.is_object() {
        Ok(())
    } else {
        Err(StoreError::InvalidRun {
            what: what.to_owned(),
            reason: "metadata must be a JSON object".into(),
        })
    }
}

impl Store {
    /// Creates thread `id`'s record: `metadata` (a JSON object), status
    /// `idle`, owned by `owner`. When it exists: [`StoreError::ThreadExists`]
    /// for [`IfExists::Raise`] (or when another owner's), the existing
    /// record for [`IfExists::DoNothing`]. The log is not touched.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use serde_json::json;
    /// use state_store::{IfExists, Store};
    /// let store = Store::memory();
    /// store.create_thread_record("t", json!({"a": 1}), None, IfExists::Raise).await?;
    /// assert!(store.create_thread_record("t", json!({}), None, IfExists::Raise).await.is_err());
    /// let kept = store.create_thread_record("t", json!({}), None, IfExists::DoNothing).await?;
    /// assert_eq!(kept.metadata, json!({"a": 1}));
    /// # Ok(())
    /// # }
    /// ```
    pub async fn create_thread_record(
        &self,
        id: &str,
        metadata: Value,
        owner: Option<&str>,
        if_exists: IfExists,
    ) -> Result<ThreadRecord, StoreError> {
        check_id(id)?;
        object(&format!("thread \"{id}\""), &metadata)?;
        let now = now_micros();
        let row = ThreadRecordRow {
            thread_id: id.to_owned(),
            metadata: metadata.to_string(),
            status: ThreadStatus::Idle.as_str().to_owned(),
            owner: owner.map(str::to_owned),
            created_at: now,
            updated_at: now,
        };
        if self.backend.insert_thread_record(&row).await? {
            return ThreadRecord::from_row(row);
        }
        let exists = || StoreError::ThreadExists {
            thread: id.to_owned(),
        };
        match (if_exists, self.thread_record(id, owner).await?) {
            (IfExists::DoNothing, Some(record)) => Ok(record),
            _ => Err(exists()),
        }
    }

    /// Thread `id`'s record, if it has one visible to `owner` (`None`:
    /// any owner).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use serde_json::json;
    /// use state_store::{IfExists, Store};
    /// let store = Store::memory();
    /// store.create_thread_record("t", json!({}), Some("ada"), IfExists::Raise).await?;
    /// assert!(store.thread_record("t", Some("ada")).await?.is_some());
    /// assert!(store.thread_record("t", Some("bob")).await?.is_none());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn thread_record(
        &self,
        id: &str,
        owner: Option<&str>,
    ) -> Result<Option<ThreadRecord>, StoreError> {
        check_id(id)?;
        match self.backend.thread_record(id).await? {
            Some(row) if owner.is_none() || row.owner.as_deref() == owner => {
                ThreadRecord::from_row(row).map(Some)
            }
            _ => Ok(None),
        }
    }

    /// Merges `metadata` (a JSON object) into thread `id`'s record's, key
    /// by key (LangGraph's `PATCH /threads/{id}`), in one transaction.
    /// `None`: no record visible to `owner`.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use serde_json::json;
    /// use state_store::{IfExists, Store};
    /// let store = Store::memory();
    /// store.create_thread_record("t", json!({"a": 1, "b": 2}), None, IfExists::Raise).await?;
    /// let record = store.update_thread_record("t", json!({"b": 3, "c": 4}), None).await?.unwrap();
    /// assert_eq!(record.metadata, json!({"a": 1, "b": 3, "c": 4}));
    /// # Ok(())
    /// # }
    /// ```
    pub async fn update_thread_record(
        &self,
        id: &str,
        metadata: Value,
        owner: Option<&str>,
    ) -> Result<Option<ThreadRecord>, StoreError> {
        check_id(id)?;
        object(&format!("thread \"{id}\""), &metadata)?;
        let patch: Map<String, Value> = match metadata {
            Value::Object(patch) => patch,
            _ => Map::new(),
        };
        let thread = id.to_owned();
        let merge = move |old: &str| -> Result<String, StoreError> {
            Ok(crate::backend::merged_metadata(&thread, old, &patch)?
                .unwrap_or_else(|| old.to_owned()))
        };
        let row = self
            .backend
            .update_thread_record(id, owner, &merge, now_micros())
            .await?;
        row.map(ThreadRecord::from_row).transpose()
    }

    /// Sets thread `id`'s status (runs set it themselves: this is for the
    /// rest, a state update that clears an interrupt, say). False: no
    /// record.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use serde_json::json;
    /// use state_store::{IfExists, Store, ThreadStatus};
    /// let store = Store::memory();
    /// assert!(!store.set_thread_status("t", ThreadStatus::Idle).await?);
    /// store.create_thread_record("t", json!({}), None, IfExists::Raise).await?;
    /// assert!(store.set_thread_status("t", ThreadStatus::Interrupted).await?);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn set_thread_status(
        &self,
        id: &str,
        status: ThreadStatus,
    ) -> Result<bool, StoreError> {
        check_id(id)?;
        self.backend
            .set_thread_status(id, status.as_str(), now_micros())
            .await
    }

    /// The thread records `search` selects, a page in its order. Status
    /// and owner are selected by the database; the metadata filter is
    /// applied as the rows are read.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use serde_json::json;
    /// use state_store::{IfExists, Store, ThreadSearch};
    /// let store = Store::memory();
    /// store.create_thread_record("a", json!({"user": "ada"}), None, IfExists::Raise).await?;
    /// store.create_thread_record("b", json!({"user": "bob"}), None, IfExists::Raise).await?;
    /// let found = store.search_thread_records(&ThreadSearch::default().metadata(json!({"user": "bob"}))).await?;
    /// assert_eq!(found.len(), 1);
    /// assert_eq!(found[0].thread_id, "b");
    /// # Ok(())
    /// # }
    /// ```
    pub async fn search_thread_records(
        &self,
        search: &ThreadSearch,
    ) -> Result<Vec<ThreadRecord>, StoreError> {
        let mut found = Vec::new();
        let mut skipped = 0;
        for row in self.scan_records(search).await? {
            if found.len() >= search.limit {
                break;
            }
            let record = ThreadRecord::from_row(row)?;
            if !search.matches(&record) {
                continue;
            }
            if skipped < search.offset {
                skipped += 1;
                continue;
            }
            found.push(record);
        }
        Ok(found)
    }

    /// How many thread records `search` selects (its limit and offset
    /// aside).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use serde_json::json;
    /// use state_store::{IfExists, Store, ThreadSearch};
    /// let store = Store::memory();
    /// store.create_thread_record("a", json!({}), None, IfExists::Raise).await?;
    /// assert_eq!(store.count_thread_records(&ThreadSearch::default()).await?, 1);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn count_thread_records(&self, search: &ThreadSearch) -> Result<u64, StoreError> {
        let mut count = 0;
        for row in self.scan_records(search).await? {
            if search.matches(&ThreadRecord::from_row(row)?) {
                count += 1;
            }
        }
        Ok(count)
    }

    async fn scan_records(
        &self,
        search: &ThreadSearch,
    ) -> Result<Vec<ThreadRecordRow>, StoreError> {
        if let Some(metadata) = &search.metadata {
            object("a thread search", metadata)?;
        }
        self.backend
            .thread_records(RecordScan {
                status: search.status.map(ThreadStatus::as_str),
                owner: search.owner.as_deref(),
                order_by: match search.sort_by {
                    ThreadSortBy::ThreadId => "thread_id",
                    ThreadSortBy::CreatedAt => "created_at",
                    ThreadSortBy::UpdatedAt => "updated_at",
                },
                descending: search.descending,
            })
            .await
    }
}
