//! The crons' routes, as the Agent Server answers them: create a cron on a
//! thread (`POST /threads/{id}/runs/crons`) or one whose every run has a
//! thread of its own (`POST /runs/crons`), get, patch, delete, search and
//! count (`/runs/crons/...`). A cron is a row of the store: its schedule
//! and the run it starts (its `payload`, a run's request); the
//! schedulers of every serving process start its runs
//! (`cron_scheduler.rs`).

use super::body::{Body, SortOrder, page_limit, paged, parse, selected};
use super::cron_schedule::{Schedule, parse_time};
use super::run_routes::Create;
use crate::auth::Owner;
use crate::error::ApiError;
use crate::extract::Path;
use crate::routes::App;
use axum::Json;
use axum::extract::State as Shared;
use axum::http::StatusCode;
use axum::response::Response;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use state_store::{CronPatch, CronRecord, CronSearch, CronSort, NewCron};
use std::time::{Duration, UNIX_EPOCH};

/// The fields a search may select (the Agent Server's `CronSelectField`).
const FIELDS: [&str; 14] = [
    "cron_id",
    "assistant_id",
    "thread_id",
    "on_run_completed",
    "end_time",
    "schedule",
    "timezone",
    "created_at",
    "updated_at",
    "user_id",
    "payload",
    "next_run_date",
    "metadata",
    "enabled",
];

/// A cron's request (`CronCreate`, `ThreadCronCreate`, `CronPatch`): its
/// own fields, and its run's (`metadata` is both).
#[derive(Deserialize)]
pub(crate) struct CronBody {
    #[serde(default)]
    schedule: Option<String>,
    /// Given as `null`: UTC.
    #[serde(default, deserialize_with = "present")]
    timezone: Option<Option<String>>,
    /// Given as `null`: none (a patch clears it).
    #[serde(default, deserialize_with = "present")]
    end_time: Option<Option<String>>,
    #[serde(default)]
    enabled: Option<bool>,
    #[serde(default)]
    on_run_completed: Option<OnRunCompleted>,
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
    /// The run's request.
    #[serde(flatten)]
    run: Map<String, Value>,
}

/// What becomes of a run's own thread when a cron without a thread ends
/// it (LangGraph's `on_run_completed`).
#[derive(Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum OnRunCompleted {
    Delete,
    Keep,
}

impl OnRunCompleted {
    fn as_str(self) -> &'static str {
        match self {
            OnRunCompleted::Delete => "delete",
            OnRunCompleted::Keep => "keep",
        }
    }
}

/// A field given, `null` or not (`Some(None)` for `null`); absent, the
/// field's default (`None`).
fn present<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Some)
}

impl CronBody {
    /// Whether it names no field at all.
    fn is_empty(&self) -> bool {
        self.schedule.is_none()
            && self.timezone.is_none()
            && self.end_time.is_none()
            && self.enabled.is_none()
            && self.on_run_completed.is_none()
            && self.metadata.is_none()
            && self.run.is_empty()
    }

    /// Its run's request, with the metadata given.
    fn payload(&self) -> Map<String, Value> {
        let mut payload = self.run.clone();
        if let Some(metadata) = &self.metadata {
            payload.insert("metadata".to_owned(), Value::Object(metadata.clone()));
        }
        payload
    }

    /// Its end, read as a time.
    fn end_time(&self) -> Result<Option<Option<i64>>, ApiError> {
        match &self.end_time {
            None => Ok(None),
            Some(None) => Ok(Some(None)),
            Some(Some(end)) => parse_time("end_time", end)
                .map(|end| Some(Some(end)))
                .map_err(ApiError::invalid_body),
        }
    }
}

/// `POST /runs/crons`: a cron whose every run has a thread of its own,
/// deleted when the run ends unless `on_run_completed` is `"keep"`.
pub(crate) async fn create(
    Shared(app): Shared<App>,
    owner: Owner,
    Body(body): Body<CronBody>,
) -> Result<Json<Value>, ApiError> {
    let on_run_completed = body.on_run_completed.unwrap_or(OnRunCompleted::Delete);
    let new = made(&app, None, &body, owner.as_deref()).await?;
    let cron = app
        .store
        .create_cron(new.on_run_completed(on_run_completed.as_str()))
        .await?;
    app.workers.start(&app);
    Ok(Json(wire(&cron)))
}

/// `POST /threads/{id}/runs/crons`: a cron whose runs run on thread `id`
/// (which must be one of the owner's).
pub(crate) async fn create_for_thread(
    Shared(app): Shared<App>,
    owner: Owner,
    Path(thread): Path<String>,
    Body(body): Body<CronBody>,
) -> Result<Json<Value>, ApiError> {
    if body.on_run_completed.is_some() {
        return Err(ApiError::invalid_body(
            "on_run_completed: a thread's cron runs on its thread, which is kept; the field is \
             for POST /runs/crons",
        ));
    }
    if app
        .store
        .thread_record(&thread, owner.as_deref())
        .await?
        .is_none()
    {
        return Err(ApiError::missing(format!(
            "Thread with ID {thread} not found"
        )));
    }
    let new = made(&app, Some(&thread), &body, owner.as_deref()).await?;
    let cron = app.store.create_cron(new).await?;
    app.workers.start(&app);
    Ok(Json(wire(&cron)))
}

/// The cron a create request asks for, checked: its schedule, time zone
/// and end, and its run's request as a run's would be (its assistant
/// there, its fields of the right types).
async fn made(
    app: &App,
    thread: Option<&str>,
    body: &CronBody,
    owner: Option<&str>,
) -> Result<NewCron, ApiError> {
    let Some(schedule) = &body.schedule else {
        return Err(ApiError::invalid_body("schedule: required"));
    };
    let timezone = body.timezone.clone().flatten();
    let end_time = body.end_time()?.flatten();
    let parsed = Schedule::parse(schedule, timezone.as_deref()).map_err(ApiError::invalid_body)?;
    let mut payload = body.payload();
    // A thread's cron queues its runs behind the thread's (LangGraph's
    // `ThreadCronCreate` default), where a run's request is refused.
    if thread.is_some() && !payload.contains_key("multitask_strategy") {
        payload.insert("multitask_strategy".to_owned(), json!("enqueue"));
    }
    let request = run_request(&payload)?;
    let assistant_id = request.checked(app, owner).await?.found.id().to_owned();
    let metadata = body.metadata.clone().unwrap_or_default();
    let mut new = NewCron::new(uuid::Uuid::now_v7().to_string(), assistant_id, schedule)
        .payload(Value::Object(payload))
        .metadata(Value::Object(metadata))
        .enabled(body.enabled.unwrap_or(true));
    if let Some(next) = next_run(&parsed, now_micros(), end_time) {
        new = new.next_run_at(next);
    }
    if let Some(thread) = thread {
        new = new.thread(thread);
    }
    if let Some(timezone) = timezone {
        new = new.timezone(timezone);
    }
    if let Some(end_time) = end_time {
        new = new.end_time(end_time);
    }
    if let Some(owner) = owner {
        new = new.owner(owner);
    }
    Ok(new)
}

/// A cron's run request read as a run's is, a 422 naming the field at
/// fault.
fn run_request(payload: &Map<String, Value>) -> Result<Create, ApiError> {
    let text = serde_json::to_vec(payload).map_err(|e| ApiError::invalid_body(e.to_string()))?;
    parse(&text)
}

/// When `schedule` fires next after `now`, unless that is past `end`.
pub(crate) fn next_run(schedule: &Schedule, now: i64, end: Option<i64>) -> Option<i64> {
    schedule
        .next_after(now)
        .filter(|next| end.is_none_or(|end| *next <= end))
}

/// Microseconds since the Unix epoch, now.
pub(crate) fn now_micros() -> i64 {
    jiff::Timestamp::now().as_microsecond()
}

/// `GET /runs/crons/{id}`.
pub(crate) async fn get(
    Shared(app): Shared<App>,
    owner: Owner,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    check_uuid(&id, "cron")?;
    match app.store.cron(&id, owner.as_deref()).await? {
        Some(cron) => Ok(Json(wire(&cron))),
        None => Err(missing(&id)),
    }
}

/// `PATCH /runs/crons/{id}`: its schedule, time zone, end, `enabled`,
/// `on_run_completed`; its run's fields are merged into its payload
/// (`metadata` is also the cron's). A new schedule, zone or end, or
/// enabling it, sets when it fires next.
pub(crate) async fn patch(
    Shared(app): Shared<App>,
    owner: Owner,
    Path(id): Path<String>,
    Body(body): Body<CronBody>,
) -> Result<Json<Value>, ApiError> {
    check_uuid(&id, "cron")?;
    if body.is_empty() {
        return Err(ApiError::bad_request("Request body cannot be empty"));
    }
    let Some(cron) = app.store.cron(&id, owner.as_deref()).await? else {
        return Err(missing(&id));
    };
    let mut change = CronPatch::default();
    let schedule = body
        .schedule
        .clone()
        .unwrap_or_else(|| cron.schedule.clone());
    let timezone = body
        .timezone
        .clone()
        .unwrap_or_else(|| cron.timezone.clone());
    // An explicit `null` clears the end; an absent key keeps it.
    let end_time = body.end_time()?.unwrap_or(cron.end_time);
    let enabled = body.enabled.unwrap_or(cron.enabled);
    if let Some(what) = body.on_run_completed {
        if cron.thread_id.is_some() {
            return Err(ApiError::invalid_body(
                "on_run_completed: a thread's cron runs on its thread, which is kept; the field \
                 is for crons without a thread",
            ));
        }
        change = change.on_run_completed(Some(what.as_str().to_owned()));
    }
    let parsed = Schedule::parse(&schedule, timezone.as_deref()).map_err(ApiError::invalid_body)?;
    let mut payload = match &cron.payload {
        Value::Object(payload) => payload.clone(),
        _ => Map::new(),
    };
    payload.extend(body.payload());
    let request = run_request(&payload)?;
    if request.checked(&app, owner.as_deref()).await?.found.id() != cron.assistant_id {
        return Err(ApiError::invalid_body(
            "assistant_id: a cron's assistant cannot change (create another cron)",
        ));
    }
    if let Some(metadata) = &body.metadata {
        change = change.metadata(Value::Object(metadata.clone()));
    }
    let retimed = schedule != cron.schedule
        || timezone != cron.timezone
        || end_time != cron.end_time
        || (enabled && !cron.enabled);
    if retimed {
        change = change.next_run_at(next_run(&parsed, now_micros(), end_time));
    }
    change = change
        .schedule(schedule)
        .timezone(timezone)
        .end_time(end_time)
        .enabled(enabled)
        .payload(Value::Object(payload));
    match app.store.update_cron(&id, change, owner.as_deref()).await? {
        Some(cron) => {
            app.workers.start(&app);
            Ok(Json(wire(&cron)))
        }
        None => Err(missing(&id)),
    }
}

/// `DELETE /runs/crons/{id}`: 204; its runs already made are left.
pub(crate) async fn delete(
    Shared(app): Shared<App>,
    owner: Owner,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    check_uuid(&id, "cron")?;
    match app.store.delete_cron(&id, owner.as_deref()).await? {
        true => Ok(StatusCode::NO_CONTENT),
        false => Err(missing(&id)),
    }
}

/// `POST /runs/crons/search`'s body (`CronSearch`).
#[derive(Deserialize)]
pub(crate) struct Search {
    #[serde(default)]
    assistant_id: Option<String>,
    #[serde(default)]
    thread_id: Option<String>,
    #[serde(default)]
    enabled: Option<bool>,
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
    #[serde(default)]
    limit: Option<u64>,
    #[serde(default)]
    offset: Option<u64>,
    #[serde(default)]
    sort_by: Option<CronSort>,
    #[serde(default)]
    sort_order: Option<SortOrder>,
    #[serde(default)]
    select: Option<Vec<String>>,
}

/// `POST /runs/crons/search`: a page of the owner's crons (10 by
/// default), newest first unless `sort_by` and `sort_order` say
/// otherwise, with `X-Pagination-Total` as the Agent Server sends it.
pub(crate) async fn search(
    Shared(app): Shared<App>,
    owner: Owner,
    Body(search): Body<Search>,
) -> Result<Response, ApiError> {
    let limit = page_limit(search.limit, 10)?;
    let offset = usize::try_from(search.offset.unwrap_or(0)).unwrap_or(usize::MAX);
    if let Some(bad) = search
        .select
        .iter()
        .flatten()
        .find(|f| !FIELDS.contains(&f.as_str()))
    {
        return Err(ApiError::invalid_body(format!(
            "select: unknown field \"{bad}\", expected one of {FIELDS:?}"
        )));
    }
    let descending = !matches!(search.sort_order, Some(SortOrder::Asc));
    let filter = filter(
        search.assistant_id,
        search.thread_id,
        search.enabled,
        search.metadata,
        owner.as_deref(),
    )?;
    // One more than the page: whether more follow.
    let found = app
        .store
        .search_crons(
            &filter
                .limit(limit.saturating_add(1))
                .offset(offset)
                .sort(search.sort_by.unwrap_or_default(), descending),
        )
        .await?;
    let more = found.len() > limit;
    let page: Vec<Value> = found
        .iter()
        .take(limit)
        .map(|cron| selected(wire(cron), search.select.as_deref()))
        .collect();
    let end = offset.saturating_add(page.len());
    Ok(paged(page, end, more))
}

/// `POST /runs/crons/count`'s body (`CronCountRequest`).
#[derive(Deserialize)]
pub(crate) struct Count {
    #[serde(default)]
    assistant_id: Option<String>,
    #[serde(default)]
    thread_id: Option<String>,
}

/// `POST /runs/crons/count`: how many of the owner's crons match.
pub(crate) async fn count(
    Shared(app): Shared<App>,
    owner: Owner,
    Body(count): Body<Count>,
) -> Result<Json<u64>, ApiError> {
    let filter = filter(
        count.assistant_id,
        count.thread_id,
        None,
        None,
        owner.as_deref(),
    )?;
    Ok(Json(app.store.count_crons(&filter).await?))
}

/// A search's filter; the ids must be UUIDs, as the Agent Server checks.
fn filter(
    assistant_id: Option<String>,
    thread_id: Option<String>,
    enabled: Option<bool>,
    metadata: Option<Map<String, Value>>,
    owner: Option<&str>,
) -> Result<CronSearch, ApiError> {
    let mut filter = CronSearch::default();
    if let Some(id) = assistant_id {
        check_uuid(&id, "assistant")?;
        filter = filter.assistant_id(id);
    }
    if let Some(id) = thread_id {
        check_uuid(&id, "thread")?;
        filter = filter.thread_id(id);
    }
    if let Some(enabled) = enabled {
        filter = filter.enabled(enabled);
    }
    if let Some(metadata) = metadata {
        filter = filter.metadata(Value::Object(metadata));
    }
    if let Some(owner) = owner {
        filter = filter.owner(owner);
    }
    Ok(filter)
}

/// A cron as the Agent Server writes it (`Cron`).
pub(crate) fn wire(cron: &CronRecord) -> Value {
    json!({
        "cron_id": cron.cron_id,
        "assistant_id": cron.assistant_id,
        "thread_id": cron.thread_id,
        "on_run_completed": cron.on_run_completed,
        "end_time": cron.end_time.map(time),
        "schedule": cron.schedule,
        "timezone": cron.timezone,
        "created_at": time(cron.created_at),
        "updated_at": time(cron.updated_at),
        "user_id": cron.owner,
        "payload": cron.payload,
        "next_run_date": cron.next_run_at.map(time),
        "metadata": cron.metadata,
        "enabled": cron.enabled,
    })
}

/// Microseconds since the epoch as the Agent Server writes its times.
fn time(micros: i64) -> String {
    let micros = u64::try_from(micros).unwrap_or_default();
    crate::json::rfc3339_micros(UNIX_EPOCH + Duration::from_micros(micros))
}

/// The Agent Server's 422 for a `what` id that is not a UUID.
fn check_uuid(id: &str, what: &str) -> Result<(), ApiError> {
    match uuid::Uuid::parse_str(id) {
        Ok(_) => Ok(()),
        Err(_) => Err(ApiError::invalid_body(format!(
            "Invalid {what} ID: must be a UUID"
        ))),
    }
}

fn missing(id: &str) -> ApiError {
    ApiError::missing(format!("Cron with ID {id} not found"))
}
