//! Crons (LangGraph's `POST /runs/crons`): an assistant's run made on a
//! schedule, on a thread or stateless, kept in a table of its own so that
//! every process on one database sees the same ones. The server decides
//! what the schedule means and when a cron fires next; the store keeps
//! the rows, checks owners, finds the crons due and lets exactly one of
//! many schedulers advance each tick ([`Store::advance_cron`]). Times are
//! microseconds since the Unix epoch.

use crate::Store;
use crate::backend::{CronRow, CronScan};
use crate::error::StoreError;
use crate::ids::check_id;
use crate::items::time::now_micros;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A cron to create ([`Store::create_cron`]): its id, its assistant and
/// its schedule; enabled, with an empty payload and metadata, stateless,
/// with no time zone, end, next run or owner, unless set.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), state_store::StoreError> {
/// use serde_json::json;
/// use state_store::{NewCron, Store};
/// let store = Store::memory();
/// let new = NewCron::new("c1", "a1", "0 9 * * *")
///     .thread("t1")
///     .payload(json!({"input": {"ping": true}}))
///     .next_run_at(1_700_000_000_000_000);
/// let made = store.create_cron(new).await?;
/// assert_eq!((made.thread_id.as_deref(), made.enabled), (Some("t1"), true));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct NewCron {
    cron_id: String,
    assistant_id: String,
    thread_id: Option<String>,
    schedule: String,
    timezone: Option<String>,
    end_time: Option<i64>,
    payload: Value,
    metadata: Value,
    enabled: bool,
    on_run_completed: Option<String>,
    next_run_at: Option<i64>,
    owner: Option<String>,
}

impl NewCron {
    /// Cron `cron_id`, running assistant `assistant_id` on `schedule`.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use serde_json::json;
    /// use state_store::{NewCron, Store};
    /// let store = Store::memory();
    /// let made = store.create_cron(NewCron::new("c1", "a1", "*/5 * * * *")).await?;
    /// assert_eq!((made.schedule.as_str(), &made.payload), ("*/5 * * * *", &json!({})));
    /// assert_eq!((made.thread_id, made.next_run_at), (None, None));
    /// # Ok(())
    /// # }
    /// ```
    pub fn new(
        cron_id: impl Into<String>,
        assistant_id: impl Into<String>,
        schedule: impl Into<String>,
    ) -> NewCron {
        NewCron {
            cron_id: cron_id.into(),
            assistant_id: assistant_id.into(),
            thread_id: None,
            schedule: schedule.into(),
            timezone: None,
            end_time: None,
            payload: Value::Object(Map::new()),
            metadata: Value::Object(Map::new()),
            enabled: true,
            on_run_completed: None,
            next_run_at: None,
            owner: None,
        }
    }

    /// The thread its runs run on (none: each run is stateless).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use state_store::{NewCron, Store};
    /// let store = Store::memory();
    /// let made = store.create_cron(NewCron::new("c1", "a1", "@daily").thread("t1")).await?;
    /// assert_eq!(made.thread_id.as_deref(), Some("t1"));
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn thread(mut self, thread_id: impl Into<String>) -> NewCron {
        self.thread_id = Some(thread_id.into());
        self
    }

    /// The time zone its schedule is read in (an IANA name, say).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use state_store::{NewCron, Store};
    /// let store = Store::memory();
    /// let made = store.create_cron(NewCron::new("c1", "a1", "0 9 * * *").timezone("Europe/Paris")).await?;
    /// assert_eq!(made.timezone.as_deref(), Some("Europe/Paris"));
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn timezone(mut self, tz: impl Into<String>) -> NewCron {
        self.timezone = Some(tz.into());
        self
    }

    /// When it stops firing (microseconds since the epoch).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use state_store::{NewCron, Store};
    /// let store = Store::memory();
    /// let made = store.create_cron(NewCron::new("c1", "a1", "@hourly").end_time(42)).await?;
    /// assert_eq!(made.end_time, Some(42));
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn end_time(mut self, micros: i64) -> NewCron {
        self.end_time = Some(micros);
        self
    }

    /// What each run is made from (a JSON object: anything else is
    /// refused by [`Store::create_cron`]).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use serde_json::json;
    /// use state_store::{NewCron, Store};
    /// let store = Store::memory();
    /// let made = store.create_cron(NewCron::new("c1", "a1", "@hourly").payload(json!({"input": {}}))).await?;
    /// assert_eq!(made.payload, json!({"input": {}}));
    /// assert!(store.create_cron(NewCron::new("c2", "a1", "@hourly").payload(json!([1]))).await.is_err());
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn payload(mut self, payload: Value) -> NewCron {
        self.payload = payload;
        self
    }

    /// Its metadata (a JSON object: anything else is refused by
    /// [`Store::create_cron`]).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use serde_json::json;
    /// use state_store::{NewCron, Store};
    /// let store = Store::memory();
    /// let made = store.create_cron(NewCron::new("c1", "a1", "@hourly").metadata(json!({"team": "x"}))).await?;
    /// assert_eq!(made.metadata, json!({"team": "x"}));
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn metadata(mut self, metadata: Value) -> NewCron {
        self.metadata = metadata;
        self
    }

    /// Whether it fires (a disabled cron is never due).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use state_store::{NewCron, Store};
    /// let store = Store::memory();
    /// let made = store.create_cron(NewCron::new("c1", "a1", "@hourly").enabled(false)).await?;
    /// assert!(!made.enabled);
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn enabled(mut self, enabled: bool) -> NewCron {
        self.enabled = enabled;
        self
    }

    /// What becomes of a stateless run's thread once the run ended
    /// (LangGraph's `"delete"` or `"keep"`; the server decides).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use state_store::{NewCron, Store};
    /// let store = Store::memory();
    /// let made = store.create_cron(NewCron::new("c1", "a1", "@hourly").on_run_completed("keep")).await?;
    /// assert_eq!(made.on_run_completed.as_deref(), Some("keep"));
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn on_run_completed(mut self, what: impl Into<String>) -> NewCron {
        self.on_run_completed = Some(what.into());
        self
    }

    /// When it fires first (microseconds since the epoch; none: never).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use state_store::{NewCron, Store};
    /// let store = Store::memory();
    /// store.create_cron(NewCron::new("c1", "a1", "@hourly").next_run_at(100)).await?;
    /// assert_eq!(store.next_cron_due().await?, Some(100));
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn next_run_at(mut self, micros: i64) -> NewCron {
        self.next_run_at = Some(micros);
        self
    }

    /// Its owner: other owners do not see it.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use state_store::{NewCron, Store};
    /// let store = Store::memory();
    /// store.create_cron(NewCron::new("c1", "a1", "@hourly").owner("ada")).await?;
    /// assert!(store.cron("c1", Some("ada")).await?.is_some());
    /// assert!(store.cron("c1", Some("bo")).await?.is_none());
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn owner(mut self, owner: impl Into<String>) -> NewCron {
        self.owner = Some(owner.into());
        self
    }
}

/// A stored cron. Times are microseconds since the Unix epoch.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), state_store::StoreError> {
/// use state_store::{NewCron, Store};
/// let store = Store::memory();
/// let made = store.create_cron(NewCron::new("c1", "a1", "@hourly")).await?;
/// assert_eq!(made.created_at, made.updated_at);
/// assert_eq!(store.cron("c1", None).await?, Some(made));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct CronRecord {
    /// Its id.
    pub cron_id: String,
    /// The assistant its runs run.
    pub assistant_id: String,
    /// The thread its runs run on (`None`: stateless runs).
    pub thread_id: Option<String>,
    /// Its schedule.
    pub schedule: String,
    /// The time zone of its schedule.
    pub timezone: Option<String>,
    /// When it stops firing (`None`: never).
    pub end_time: Option<i64>,
    /// What each run is made from (a JSON object).
    pub payload: Value,
    /// Its metadata (a JSON object).
    pub metadata: Value,
    /// Whether it fires.
    pub enabled: bool,
    /// What becomes of a stateless run's thread once the run ended.
    pub on_run_completed: Option<String>,
    /// When it fires next (`None`: no more runs).
    pub next_run_at: Option<i64>,
    /// When it was created.
    pub created_at: i64,
    /// When it last changed.
    pub updated_at: i64,
    /// Who created it (`None`: no auth).
    pub owner: Option<String>,
}

impl CronRecord {
    fn from_row(row: CronRow) -> Result<CronRecord, StoreError> {
        let corrupt = |column: &'static str, detail: String| StoreError::CorruptRun {
            what: format!("cron \"{}\"", row.cron_id),
            column,
            detail,
        };
        let object = |column: &'static str, text: &str| -> Result<Value, StoreError> {
            let value: Value = serde_json::from_str(text)
                .map_err(|e| corrupt(column, format!("not JSON: {e}")))?;
            match value.is_object() {
                true => Ok(value),
                false => Err(corrupt(column, "not a JSON object".into())),
            }
        };
        let payload = object("payload", &row.payload)?;
        let metadata = object("metadata", &row.metadata)?;
        let enabled = match row.enabled {
            0 => false,
            1 => true,
            other => return Err(corrupt("enabled", format!("{other}, not 0 or 1"))),
        };
        Ok(CronRecord {
            payload,
            metadata,
            enabled,
            cron_id: row.cron_id,
            assistant_id: row.assistant_id,
            thread_id: row.thread_id,
            schedule: row.schedule,
            timezone: row.timezone,
            end_time: row.end_time,
            on_run_completed: row.on_run_completed,
            next_run_at: row.next_run_at,
            created_at: row.created_at,
            updated_at: row.updated_at,
            owner: row.owner,
        })
    }
}

/// Changes to a cron ([`Store::update_cron`]); fields left unset stay.
/// The payload and metadata given replace the cron's whole.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), state_store::StoreError> {
/// use state_store::{CronPatch, NewCron, Store};
/// let store = Store::memory();
/// store.create_cron(NewCron::new("c1", "a1", "@hourly").timezone("UTC")).await?;
/// let patch = CronPatch::default().schedule("@daily").enabled(false);
/// let changed = store.update_cron("c1", patch, None).await?.unwrap();
/// assert_eq!((changed.schedule.as_str(), changed.enabled), ("@daily", false));
/// assert_eq!(changed.timezone.as_deref(), Some("UTC"), "kept");
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Default)]
pub struct CronPatch {
    schedule: Option<String>,
    timezone: Option<Option<String>>,
    end_time: Option<Option<i64>>,
    payload: Option<Value>,
    metadata: Option<Value>,
    enabled: Option<bool>,
    on_run_completed: Option<Option<String>>,
    next_run_at: Option<Option<i64>>,
}

impl CronPatch {
    /// Another schedule.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use state_store::{CronPatch, NewCron, Store};
    /// let store = Store::memory();
    /// store.create_cron(NewCron::new("c1", "a1", "@hourly")).await?;
    /// let changed = store.update_cron("c1", CronPatch::default().schedule("@daily"), None).await?;
    /// assert_eq!(changed.unwrap().schedule, "@daily");
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn schedule(mut self, s: impl Into<String>) -> Self {
        self.schedule = Some(s.into());
        self
    }

    /// Another time zone (`None`: none).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use state_store::{CronPatch, NewCron, Store};
    /// let store = Store::memory();
    /// store.create_cron(NewCron::new("c1", "a1", "@hourly").timezone("UTC")).await?;
    /// let changed = store.update_cron("c1", CronPatch::default().timezone(None), None).await?;
    /// assert_eq!(changed.unwrap().timezone, None);
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn timezone(mut self, tz: Option<String>) -> Self {
        self.timezone = Some(tz);
        self
    }

    /// Another end (`None`: never).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use state_store::{CronPatch, NewCron, Store};
    /// let store = Store::memory();
    /// store.create_cron(NewCron::new("c1", "a1", "@hourly")).await?;
    /// let changed = store.update_cron("c1", CronPatch::default().end_time(Some(9)), None).await?;
    /// assert_eq!(changed.unwrap().end_time, Some(9));
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn end_time(mut self, micros: Option<i64>) -> Self {
        self.end_time = Some(micros);
        self
    }

    /// Another payload, replacing the cron's (a JSON object).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use serde_json::json;
    /// use state_store::{CronPatch, NewCron, Store};
    /// let store = Store::memory();
    /// store.create_cron(NewCron::new("c1", "a1", "@hourly").payload(json!({"a": 1}))).await?;
    /// let changed = store.update_cron("c1", CronPatch::default().payload(json!({"b": 2})), None).await?;
    /// assert_eq!(changed.unwrap().payload, json!({"b": 2}));
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn payload(mut self, payload: Value) -> Self {
        self.payload = Some(payload);
        self
    }

    /// Other metadata, replacing the cron's (a JSON object).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use serde_json::json;
    /// use state_store::{CronPatch, NewCron, Store};
    /// let store = Store::memory();
    /// store.create_cron(NewCron::new("c1", "a1", "@hourly").metadata(json!({"a": 1}))).await?;
    /// let changed = store.update_cron("c1", CronPatch::default().metadata(json!({"b": 2})), None).await?;
    /// assert_eq!(changed.unwrap().metadata, json!({"b": 2}));
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn metadata(mut self, metadata: Value) -> Self {
        self.metadata = Some(metadata);
        self
    }

    /// Enabled or not.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use state_store::{CronPatch, NewCron, Store};
    /// let store = Store::memory();
    /// store.create_cron(NewCron::new("c1", "a1", "@hourly")).await?;
    /// let changed = store.update_cron("c1", CronPatch::default().enabled(false), None).await?;
    /// assert!(!changed.unwrap().enabled);
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn enabled(mut self, enabled: bool) -> Self {
        self.enabled = Some(enabled);
        self
    }

    /// What becomes of a stateless run's thread (`None`: unset).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use state_store::{CronPatch, NewCron, Store};
    /// let store = Store::memory();
    /// store.create_cron(NewCron::new("c1", "a1", "@hourly")).await?;
    /// let patch = CronPatch::default().on_run_completed(Some("delete".into()));
    /// let changed = store.update_cron("c1", patch, None).await?;
    /// assert_eq!(changed.unwrap().on_run_completed.as_deref(), Some("delete"));
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn on_run_completed(mut self, what: Option<String>) -> Self {
        self.on_run_completed = Some(what);
        self
    }

    /// When it fires next (`None`: no more runs).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use state_store::{CronPatch, NewCron, Store};
    /// let store = Store::memory();
    /// store.create_cron(NewCron::new("c1", "a1", "@hourly").next_run_at(5)).await?;
    /// store.update_cron("c1", CronPatch::default().next_run_at(None), None).await?;
    /// assert_eq!(store.next_cron_due().await?, None);
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn next_run_at(mut self, micros: Option<i64>) -> Self {
        self.next_run_at = Some(micros);
        self
    }

    /// The cron's new row from its current one (its update time is the
    /// backend's to set).
    fn apply(&self, current: &CronRow) -> CronRow {
        let mut row = current.clone();
        if let Some(schedule) = &self.schedule {
            row.schedule.clone_from(schedule);
        }
        if let Some(timezone) = &self.timezone {
            row.timezone.clone_from(timezone);
        }
        if let Some(end_time) = self.end_time {
            row.end_time = end_time;
        }
        if let Some(payload) = &self.payload {
            row.payload = payload.to_string();
        }
        if let Some(metadata) = &self.metadata {
            row.metadata = metadata.to_string();
        }
        if let Some(enabled) = self.enabled {
            row.enabled = i64::from(enabled);
        }
        if let Some(what) = &self.on_run_completed {
            row.on_run_completed.clone_from(what);
        }
        if let Some(next_run_at) = self.next_run_at {
            row.next_run_at = next_run_at;
        }
        row
    }
}

/// The order of [`Store::search_crons`]: by one field, then by id (ids
/// compared bytewise), so pages are stable. A cron without the field (no
/// thread, no next run, no end) comes after every other ascending, first
/// descending, as LangGraph's PostgreSQL orders them.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), state_store::StoreError> {
/// use state_store::{CronSearch, CronSort, NewCron, Store};
/// let store = Store::memory();
/// store.create_cron(NewCron::new("c1", "a1", "@hourly").next_run_at(20)).await?;
/// store.create_cron(NewCron::new("c2", "a1", "@hourly").next_run_at(10)).await?;
/// let soonest = store.search_crons(&CronSearch::default().sort(CronSort::NextRunDate, false)).await?;
/// assert_eq!(soonest[0].cron_id, "c2");
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CronSort {
    /// By id.
    CronId,
    /// By assistant.
    AssistantId,
    /// By thread.
    ThreadId,
    /// By next run.
    NextRunDate,
    /// By end.
    EndTime,
    /// By creation time (the default).
    #[default]
    CreatedAt,
    /// By last change.
    UpdatedAt,
}

impl CronSort {
    /// Its column in the table.
    #[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
    pub(crate) fn column(self) -> &'static str {
        match self {
            CronSort::CronId => "cron_id",
            CronSort::AssistantId => "assistant_id",
            CronSort::ThreadId => "thread_id",
            CronSort::NextRunDate => "next_run_at",
            CronSort::EndTime => "end_time",
            CronSort::CreatedAt => "created_at",
            CronSort::UpdatedAt => "updated_at",
        }
    }
}

/// Which crons [`Store::search_crons`] and [`Store::count_crons`]
/// select: by assistant, thread, `enabled`, metadata (every top-level key
/// of the filter equal in the cron's metadata) and owner; a page (`limit`
/// 10, `offset` 0) in an order (newest first by default).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), state_store::StoreError> {
/// use serde_json::json;
/// use state_store::{CronSearch, NewCron, Store};
/// let store = Store::memory();
/// store.create_cron(NewCron::new("c1", "a1", "@hourly").metadata(json!({"team": "x"}))).await?;
/// store.create_cron(NewCron::new("c2", "a2", "@hourly")).await?;
/// let found = store.search_crons(&CronSearch::default().metadata(json!({"team": "x"}))).await?;
/// assert_eq!(found.len(), 1);
/// assert_eq!(store.count_crons(&CronSearch::default()).await?, 2);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct CronSearch {
    assistant_id: Option<String>,
    thread_id: Option<String>,
    enabled: Option<bool>,
    metadata: Option<Value>,
    owner: Option<String>,
    limit: usize,
    offset: usize,
    sort: CronSort,
    descending: bool,
}

impl Default for CronSearch {
    /// Every cron, a page of 10 from the first, newest first.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use state_store::{CronSearch, NewCron, Store};
    /// let store = Store::memory();
    /// for n in 0..12 {
    ///     store.create_cron(NewCron::new(format!("c{n:02}"), "a1", "@hourly")).await?;
    /// }
    /// let page = store.search_crons(&CronSearch::default()).await?;
    /// assert_eq!((page.len(), page[0].cron_id.as_str()), (10, "c11"));
    /// # Ok(())
    /// # }
    /// ```
    fn default() -> Self {
        CronSearch {
            assistant_id: None,
            thread_id: None,
            enabled: None,
            metadata: None,
            owner: None,
            limit: 10,
            offset: 0,
            sort: CronSort::CreatedAt,
            descending: true,
        }
    }
}

impl CronSearch {
    /// Only the crons of assistant `id`.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use state_store::{CronSearch, NewCron, Store};
    /// let store = Store::memory();
    /// store.create_cron(NewCron::new("c1", "a1", "@hourly")).await?;
    /// store.create_cron(NewCron::new("c2", "a2", "@hourly")).await?;
    /// assert_eq!(store.count_crons(&CronSearch::default().assistant_id("a2")).await?, 1);
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn assistant_id(mut self, id: impl Into<String>) -> Self {
        self.assistant_id = Some(id.into());
        self
    }

    /// Only the crons on thread `id`.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use state_store::{CronSearch, NewCron, Store};
    /// let store = Store::memory();
    /// store.create_cron(NewCron::new("c1", "a1", "@hourly").thread("t1")).await?;
    /// store.create_cron(NewCron::new("c2", "a1", "@hourly")).await?;
    /// assert_eq!(store.count_crons(&CronSearch::default().thread_id("t1")).await?, 1);
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn thread_id(mut self, id: impl Into<String>) -> Self {
        self.thread_id = Some(id.into());
        self
    }

    /// Only the enabled crons, or only the disabled ones.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use state_store::{CronSearch, NewCron, Store};
    /// let store = Store::memory();
    /// store.create_cron(NewCron::new("c1", "a1", "@hourly").enabled(false)).await?;
    /// assert_eq!(store.count_crons(&CronSearch::default().enabled(true)).await?, 0);
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn enabled(mut self, enabled: bool) -> Self {
        self.enabled = Some(enabled);
        self
    }

    /// Only the crons whose metadata contains `filter` (a JSON object:
    /// each of its top-level keys equal in the cron's metadata).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use serde_json::json;
    /// use state_store::{CronSearch, NewCron, Store};
    /// let store = Store::memory();
    /// store.create_cron(NewCron::new("c1", "a1", "@hourly").metadata(json!({"a": 1, "b": 2}))).await?;
    /// assert_eq!(store.count_crons(&CronSearch::default().metadata(json!({"b": 2}))).await?, 1);
    /// assert_eq!(store.count_crons(&CronSearch::default().metadata(json!({"b": 3}))).await?, 0);
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn metadata(mut self, filter: Value) -> Self {
        self.metadata = Some(filter);
        self
    }

    /// Only the crons of `owner`.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use state_store::{CronSearch, NewCron, Store};
    /// let store = Store::memory();
    /// store.create_cron(NewCron::new("c1", "a1", "@hourly").owner("ada")).await?;
    /// assert_eq!(store.count_crons(&CronSearch::default().owner("bo")).await?, 0);
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn owner(mut self, owner: impl Into<String>) -> Self {
        self.owner = Some(owner.into());
        self
    }

    /// At most `limit`.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use state_store::{CronSearch, NewCron, Store};
    /// let store = Store::memory();
    /// store.create_cron(NewCron::new("c1", "a1", "@hourly")).await?;
    /// store.create_cron(NewCron::new("c2", "a1", "@hourly")).await?;
    /// assert_eq!(store.search_crons(&CronSearch::default().limit(1)).await?.len(), 1);
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }

    /// Skipping the first `offset`.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use state_store::{CronSearch, NewCron, Store};
    /// let store = Store::memory();
    /// store.create_cron(NewCron::new("c1", "a1", "@hourly")).await?;
    /// store.create_cron(NewCron::new("c2", "a1", "@hourly")).await?;
    /// let rest = store.search_crons(&CronSearch::default().offset(1)).await?;
    /// assert_eq!(rest[0].cron_id, "c1");
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn offset(mut self, offset: usize) -> Self {
        self.offset = offset;
        self
    }

    /// In the order of `by`, ascending or `descending` (then by id, in
    /// the same direction).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use state_store::{CronSearch, CronSort, NewCron, Store};
    /// let store = Store::memory();
    /// store.create_cron(NewCron::new("c2", "a1", "@hourly")).await?;
    /// store.create_cron(NewCron::new("c1", "a1", "@hourly")).await?;
    /// let by_id = store.search_crons(&CronSearch::default().sort(CronSort::CronId, false)).await?;
    /// assert_eq!(by_id[0].cron_id, "c1");
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn sort(mut self, by: CronSort, descending: bool) -> Self {
        self.sort = by;
        self.descending = descending;
        self
    }

    fn matches(&self, cron: &CronRecord) -> bool {
        match &self.metadata {
            Some(Value::Object(filter)) => filter
                .iter()
                .all(|(key, value)| cron.metadata.get(key) == Some(value)),
            _ => true,
        }
    }
}

/// `value` if a JSON object, else [`StoreError::InvalidRun`] naming `what`
/// and `field`.
fn object(what: &str, field: &str, value: &Value) -> Result<(), StoreError> {
    match value.is_object() {
        true => Ok(()),
        false => Err(StoreError::InvalidRun {
            what: what.to_owned(),
            reason: format!("{field} must be a JSON object"),
        }),
    }
}

impl Store {
    /// Creates a cron, created and updated now. Its payload and metadata
    /// must be JSON objects; one with its id exists:
    /// [`StoreError::CronExists`]. Nothing is written on an error.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use serde_json::json;
    /// use state_store::{NewCron, Store, StoreError};
    /// let store = Store::memory();
    /// let made = store.create_cron(NewCron::new("c1", "a1", "@hourly").metadata(json!({"a": 1}))).await?;
    /// assert_eq!((made.cron_id.as_str(), &made.metadata), ("c1", &json!({"a": 1})));
    /// let again = store.create_cron(NewCron::new("c1", "a1", "@daily")).await;
    /// assert!(matches!(again, Err(StoreError::CronExists { .. })));
    /// # Ok(())
    /// # }
    /// ```
    pub async fn create_cron(&self, new: NewCron) -> Result<CronRecord, StoreError> {
        let id = &new.cron_id;
        check_id(id)?;
        check_id(&new.assistant_id)?;
        if let Some(thread) = &new.thread_id {
            check_id(thread)?;
        }
        let what = format!("cron \"{id}\"");
        object(&what, "payload", &new.payload)?;
        object(&what, "metadata", &new.metadata)?;
        let now = now_micros();
        let row = CronRow {
            cron_id: id.clone(),
            assistant_id: new.assistant_id,
            thread_id: new.thread_id,
            schedule: new.schedule,
            timezone: new.timezone,
            end_time: new.end_time,
            payload: new.payload.to_string(),
            metadata: new.metadata.to_string(),
            enabled: i64::from(new.enabled),
            on_run_completed: new.on_run_completed,
            next_run_at: new.next_run_at,
            created_at: now,
            updated_at: now,
            owner: new.owner,
        };
        match self.backend.insert_cron(&row).await? {
            true => CronRecord::from_row(row),
            false => Err(StoreError::CronExists { cron: row.cron_id }),
        }
    }

    /// Cron `id`, if visible to `owner` (`None`: any owner).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use state_store::{NewCron, Store};
    /// let store = Store::memory();
    /// store.create_cron(NewCron::new("c1", "a1", "@hourly").owner("ada")).await?;
    /// assert!(store.cron("c1", None).await?.is_some());
    /// assert!(store.cron("c1", Some("bo")).await?.is_none());
    /// assert!(store.cron("c2", None).await?.is_none());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn cron(
        &self,
        id: &str,
        owner: Option<&str>,
    ) -> Result<Option<CronRecord>, StoreError> {
        check_id(id)?;
        match self.backend.cron(id).await? {
            Some(row) if owner.is_none() || row.owner.as_deref() == owner => {
                CronRecord::from_row(row).map(Some)
            }
            _ => Ok(None),
        }
    }

    /// Changes cron `id` as `patch` says, updated now, in one
    /// transaction. `None`: no cron visible to `owner`. A payload or
    /// metadata that is not a JSON object is refused, nothing written.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use state_store::{CronPatch, NewCron, Store};
    /// let store = Store::memory();
    /// let made = store.create_cron(NewCron::new("c1", "a1", "@hourly").owner("ada")).await?;
    /// let patch = CronPatch::default().schedule("@daily");
    /// assert!(store.update_cron("c1", patch.clone(), Some("bo")).await?.is_none());
    /// let changed = store.update_cron("c1", patch, Some("ada")).await?.unwrap();
    /// assert!(changed.updated_at > made.updated_at);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn update_cron(
        &self,
        id: &str,
        patch: CronPatch,
        owner: Option<&str>,
    ) -> Result<Option<CronRecord>, StoreError> {
        check_id(id)?;
        let what = format!("cron \"{id}\"");
        for (field, value) in [("payload", &patch.payload), ("metadata", &patch.metadata)] {
            if let Some(value) = value {
                object(&what, field, value)?;
            }
        }
        let change = |row: &CronRow| patch.apply(row);
        self.backend
            .update_cron(id, owner, &change, now_micros())
            .await?
            .map(CronRecord::from_row)
            .transpose()
    }

    /// Deletes cron `id` (the runs it made stay). False: no cron visible
    /// to `owner`.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use state_store::{NewCron, Store};
    /// let store = Store::memory();
    /// store.create_cron(NewCron::new("c1", "a1", "@hourly")).await?;
    /// assert!(store.delete_cron("c1", None).await?);
    /// assert!(!store.delete_cron("c1", None).await?);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn delete_cron(&self, id: &str, owner: Option<&str>) -> Result<bool, StoreError> {
        check_id(id)?;
        self.backend.delete_cron(id, owner).await
    }

    /// The crons `search` selects, a page in its order. Assistant,
    /// thread, `enabled` and owner are selected by the database; the
    /// metadata filter is applied as the rows are read (as thread records'
    /// are). A metadata filter that is not a JSON object is refused.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use state_store::{CronSearch, NewCron, Store};
    /// let store = Store::memory();
    /// store.create_cron(NewCron::new("c1", "a1", "@hourly").thread("t1")).await?;
    /// store.create_cron(NewCron::new("c2", "a1", "@hourly")).await?;
    /// let found = store.search_crons(&CronSearch::default().thread_id("t1")).await?;
    /// assert_eq!(found.len(), 1);
    /// assert_eq!(found[0].cron_id, "c1");
    /// # Ok(())
    /// # }
    /// ```
    pub async fn search_crons(&self, search: &CronSearch) -> Result<Vec<CronRecord>, StoreError> {
        let mut found = Vec::new();
        let mut skipped = 0;
        for row in self.scan_crons(search).await? {
            if found.len() >= search.limit {
                break;
            }
            let cron = CronRecord::from_row(row)?;
            if !search.matches(&cron) {
                continue;
            }
            if skipped < search.offset {
                skipped += 1;
                continue;
            }
            found.push(cron);
        }
        Ok(found)
    }

    /// How many crons `search` selects (its limit and offset aside).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use state_store::{CronSearch, NewCron, Store};
    /// let store = Store::memory();
    /// for n in 0..3 {
    ///     store.create_cron(NewCron::new(format!("c{n}"), "a1", "@hourly")).await?;
    /// }
    /// assert_eq!(store.count_crons(&CronSearch::default().limit(1).offset(1)).await?, 3);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn count_crons(&self, search: &CronSearch) -> Result<u64, StoreError> {
        let mut count = 0;
        for row in self.scan_crons(search).await? {
            if search.matches(&CronRecord::from_row(row)?) {
                count += 1;
            }
        }
        Ok(count)
    }

    async fn scan_crons(&self, search: &CronSearch) -> Result<Vec<CronRow>, StoreError> {
        if let Some(metadata) = &search.metadata {
            object("a cron search", "metadata", metadata)?;
        }
        self.backend
            .crons(CronScan {
                assistant_id: search.assistant_id.as_deref(),
                thread_id: search.thread_id.as_deref(),
                enabled: search.enabled,
                owner: search.owner.as_deref(),
                order_by: search.sort,
                descending: search.descending,
            })
            .await
    }

    /// The enabled crons whose next run is at or before `now`
    /// (microseconds since the epoch), soonest first (then by id), at
    /// most `limit`, whoever owns them: what a scheduler fires.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use state_store::{NewCron, Store};
    /// let store = Store::memory();
    /// store.create_cron(NewCron::new("c1", "a1", "@hourly").next_run_at(20)).await?;
    /// store.create_cron(NewCron::new("c2", "a1", "@hourly").next_run_at(10)).await?;
    /// store.create_cron(NewCron::new("c3", "a1", "@hourly").next_run_at(30)).await?;
    /// store.create_cron(NewCron::new("c4", "a1", "@hourly").next_run_at(5).enabled(false)).await?;
    /// let due = store.due_crons(25, 10).await?;
    /// assert_eq!(due.iter().map(|c| c.cron_id.as_str()).collect::<Vec<_>>(), ["c2", "c1"]);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn due_crons(&self, now: i64, limit: usize) -> Result<Vec<CronRecord>, StoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        self.backend
            .due_crons(now, limit)
            .await?
            .into_iter()
            .map(CronRecord::from_row)
            .collect()
    }

    /// The soonest next run of the enabled crons (`None`: none has one):
    /// when a scheduler should look again.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use state_store::{NewCron, Store};
    /// let store = Store::memory();
    /// assert_eq!(store.next_cron_due().await?, None);
    /// store.create_cron(NewCron::new("c1", "a1", "@hourly").next_run_at(20)).await?;
    /// store.create_cron(NewCron::new("c2", "a1", "@hourly").next_run_at(10).enabled(false)).await?;
    /// assert_eq!(store.next_cron_due().await?, Some(20));
    /// # Ok(())
    /// # }
    /// ```
    pub async fn next_cron_due(&self) -> Result<Option<i64>, StoreError> {
        self.backend.next_cron_due().await
    }

    /// Compare-and-set of cron `id`'s next run: sets it to `to` (`None`:
    /// no more runs), updated now, only if it is `from`; whether it did.
    /// Two schedulers (in two processes) firing the same tick: only the
    /// first advances it, the other is told `false` and does not fire.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use state_store::{NewCron, Store};
    /// let store = Store::memory();
    /// store.create_cron(NewCron::new("c1", "a1", "@hourly").next_run_at(10)).await?;
    /// assert!(store.advance_cron("c1", 10, Some(20)).await?);
    /// assert!(!store.advance_cron("c1", 10, Some(20)).await?, "moved on already");
    /// assert_eq!(store.cron("c1", None).await?.unwrap().next_run_at, Some(20));
    /// # Ok(())
    /// # }
    /// ```
    pub async fn advance_cron(
        &self,
        id: &str,
        from: i64,
        to: Option<i64>,
    ) -> Result<bool, StoreError> {
        check_id(id)?;
        self.backend.advance_cron(id, from, to, now_micros()).await
    }
}
