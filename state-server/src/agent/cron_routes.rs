//! The crons' routes, as the Agent Server answers them: create a cron on a
//! thread (`POST /threads/{id}/runs/crons`) or one whose every run has a
//! thread of its own (`POST /runs/crons`), get, patch, delete, search and
//! count (`/runs/crons/...`). A cron is a row of the store: its schedule
//! and the run it starts (its `payload`, a run's request); the
//! schedulers of every serving process start its runs
//! (`cron_scheduler.rs`).

use super::body::{Body, page_limit, paged, parse, selected};
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
use std::time::{Duration, SystemTime, UNIX_EPOCH};

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

/// The keys of a cron's request that are the cron's, not its runs'.
const CRON_KEYS: [&str; 5] = [
    "schedule",
    "timezone",
    "end_time",
    "enabled",
    "on_run_completed",
];

/// `POST /runs/crons`: a cron whose every run has a thread of its own,
/// deleted when the run ends unless `on_run_completed` is `"keep"`.
pub(crate) async fn create(
    Shared(app): Shared<App>,
    owner: Owner,
    Body(body): Body<Map<String, Value>>,
) -> Result<Json<Value>, ApiError> {
    let on_run_completed = match body.get("on_run_completed") {
        None | Some(Value::Null) => "delete".to_owned(),
        Some(Value::String(s)) if s == "delete" || s == "keep" => s.clone(),
        Some(other) => {
            return Err(ApiError::invalid_body(format!(
                "on_run_completed: expected \"delete\" or \"keep\", got {other}"
            )));
        }
    };
    let new = made(&app, None, &body, owner.as_deref()).await?;
    let cron = app
        .store
        .create_cron(new.on_run_completed(on_run_completed))
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
    Body(body): Body<Map<String, Value>>,
) -> Result<Json<Value>, ApiError> {
    if body.contains_key("on_run_completed") {
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
    body: &Map<String, Value>,
    owner: Option<&str>,
) -> Result<NewCron, ApiError> {
    let schedule = match body.get("schedule") {
        Some(Value::String(s)) => s.as_str(),
        Some(other) => {
            return Err(ApiError::invalid_body(format!(
                "schedule: expected a cron schedule as a string, got {other}"
            )));
        }
        None => return Err(ApiError::invalid_body("schedule: required")),
    };
    let timezone = text_field(body, "timezone")?;
    let end_time = match text_field(body, "end_time")? {
        Some(end) => Some(parse_time("end_time", &end).map_err(ApiError::invalid_body)?),
        None => None,
    };
    let enabled = match body.get("enabled") {
        None | Some(Value::Null) => true,
        Some(Value::Bool(enabled)) => *enabled,
        Some(other) => {
            return Err(ApiError::invalid_body(format!(
                "enabled: expected true or false, got {other}"
            )));
        }
    };
    let parsed = Schedule::parse(schedule, timezone.as_deref()).map_err(ApiError::invalid_body)?;
    let mut payload = run_payload(body);
    // A thread's cron queues its runs behind the thread's (LangGraph's
    // `ThreadCronCreate` default), where a run's request is refused.
    if thread.is_some() && !payload.contains_key("multitask_strategy") {
        payload.insert("multitask_strategy".to_owned(), json!("enqueue"));
    }
    let assistant_id = run_request(&payload)?.check(app, owner).await?;
    let metadata = match body.get("metadata") {
        None | Some(Value::Null) => json!({}),
        Some(Value::Object(metadata)) => Value::Object(metadata.clone()),
        Some(other) => {
            return Err(ApiError::invalid_body(format!(
                "metadata: expected an object, got {other}"
            )));
        }
    };
    let mut new = NewCron::new(uuid::Uuid::now_v7().to_string(), assistant_id, schedule)
        .payload(Value::Object(payload))
        .metadata(metadata)
        .enabled(enabled);
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

/// The run's part of a cron's request: all but the cron's own keys.
fn run_payload(body: &Map<String, Value>) -> Map<String, Value> {
    body.iter()
        .filter(|(key, _)| !CRON_KEYS.contains(&key.as_str()))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect()
}

/// A cron's run request read as a run's is, a 422 naming the field at
/// fault.
fn run_request(payload: &Map<String, Value>) -> Result<Create, ApiError> {
    let text = serde_json::to_vec(payload).map_err(|e| ApiError::invalid_body(e.to_string()))?;
    parse(&text)
}

/// An optional string field, naming it when it is of another type.
fn text_field(body: &Map<String, Value>, field: &str) -> Result<Option<String>, ApiError> {
    match body.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(ApiError::invalid_body(format!(
            "{field}: expected a string, got {other}"
        ))),
    }
}

/// When `schedule` fires next after `now`, unless that is past `end`.
pub(crate) fn next_run(schedule: &Schedule, now: i64, end: Option<i64>) -> Option<i64> {
    schedule
        .next_after(now)
        .filter(|next| end.is_none_or(|end| *next <= end))
}

/// Microseconds since the Unix epoch, now.
pub(crate) fn now_micros() -> i64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since.as_micros()).unwrap_or(i64::MAX)
}

/// `GET /runs/crons/{id}`.
pub(crate) async fn get(
    Shared(app): Shared<App>,
    owner: Owner,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    check_uuid(&id)?;
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
    Body(body): Body<Map<String, Value>>,
) -> Result<Json<Value>, ApiError> {
    check_uuid(&id)?;
    if body.is_empty() {
        return Err(ApiError::bad_request("Request body cannot be empty"));
    }
    let Some(cron) = app.store.cron(&id, owner.as_deref()).await? else {
        return Err(missing(&id));
    };
    let mut change = CronPatch::default();
    let schedule = match body.get("schedule") {
        None => cron.schedule.clone(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => {
            return Err(ApiError::invalid_body(format!(
                "schedule: expected a cron schedule as a string, got {other}"
            )));
        }
    };
    let timezone = match body.contains_key("timezone") {
        true => text_field(&body, "timezone")?,
        false => cron.timezone.clone(),
    };
    // An explicit `null` clears the end; an absent key keeps it.
    let end_time = match body.get("end_time") {
        None => cron.end_time,
        Some(Value::Null) => None,
        Some(Value::String(end)) => {
            Some(parse_time("end_time", end).map_err(ApiError::invalid_body)?)
        }
        Some(other) => {
            return Err(ApiError::invalid_body(format!(
                "end_time: expected an RFC 3339 time or null, got {other}"
            )));
        }
    };
    let enabled = match body.get("enabled") {
        None => cron.enabled,
        Some(Value::Bool(enabled)) => *enabled,
        Some(other) => {
            return Err(ApiError::invalid_body(format!(
                "enabled: expected true or false, got {other}"
            )));
        }
    };
    match body.get("on_run_completed") {
        None => {}
        Some(Value::String(s)) if cron.thread_id.is_none() && (s == "delete" || s == "keep") => {
            change = change.on_run_completed(Some(s.clone()));
        }
        Some(other) => {
            return Err(ApiError::invalid_body(format!(
                "on_run_completed: expected \"delete\" or \"keep\" on a cron without a thread, \
                 got {other}"
            )));
        }
    }
    let parsed = Schedule::parse(&schedule, timezone.as_deref()).map_err(ApiError::invalid_body)?;
    let mut payload = match &cron.payload {
        Value::Object(payload) => payload.clone(),
        _ => Map::new(),
    };
    for (key, value) in run_payload(&body) {
        payload.insert(key, value);
    }
    if run_request(&payload)?.check(&app, owner.as_deref()).await? != cron.assistant_id {
        return Err(ApiError::invalid_body(
            "assistant_id: a cron's assistant cannot change (create another cron)",
        ));
    }
    if let Some(metadata) = body.get("metadata") {
        match metadata {
            Value::Object(_) => change = change.metadata(metadata.clone()),
            other => {
                return Err(ApiError::invalid_body(format!(
                    "metadata: expected an object, got {other}"
                )));
            }
        }
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
    check_uuid(&id)?;
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
    sort_by: Option<String>,
    #[serde(default)]
    sort_order: Option<String>,
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
    let by = match search.sort_by.as_deref() {
        None | Some("created_at") => CronSort::CreatedAt,
        Some("cron_id") => CronSort::CronId,
        Some("assistant_id") => CronSort::AssistantId,
        Some("thread_id") => CronSort::ThreadId,
        Some("next_run_date") => CronSort::NextRunDate,
        Some("end_time") => CronSort::EndTime,
        Some("updated_at") => CronSort::UpdatedAt,
        Some(other) => {
            return Err(ApiError::invalid_body(format!(
                "sort_by: \"{other}\" is not one of cron_id, assistant_id, thread_id, \
                 next_run_date, end_time, created_at, updated_at"
            )));
        }
    };
    let descending = match search.sort_order.as_deref() {
        None | Some("desc") => true,
        Some("asc") => false,
        Some(other) => {
            return Err(ApiError::invalid_body(format!(
                "sort_order: \"{other}\" is not \"asc\" or \"desc\""
            )));
        }
    };
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
                .sort(by, descending),
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
        if uuid::Uuid::parse_str(&id).is_err() {
            return Err(ApiError::invalid_body(
                "Invalid assistant ID: must be a UUID",
            ));
        }
        filter = filter.assistant_id(id);
    }
    if let Some(id) = thread_id {
        if uuid::Uuid::parse_str(&id).is_err() {
            return Err(ApiError::invalid_body("Invalid thread ID: must be a UUID"));
        }
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

fn check_uuid(id: &str) -> Result<(), ApiError> {
    match uuid::Uuid::parse_str(id) {
        Ok(_) => Ok(()),
        Err(_) => Err(ApiError::invalid_body("Invalid cron ID: must be a UUID")),
    }
}

fn missing(id: &str) -> ApiError {
    ApiError::missing(format!("Cron with ID {id} not found"))
}
