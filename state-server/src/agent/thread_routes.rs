//! The threads' routes, as the Agent Server answers them: `POST /threads`,
//! `GET`, `PATCH` and `DELETE /threads/{id}`, `POST /threads/search` and
//! `POST /threads/count`. A thread is a record in the store (metadata,
//! status, owner) beside its log; its values are its graph's state (the
//! graph its metadata's `graph_id` names, which a run sets).

use super::assistants::Assistants;
use super::body::{Body, SortOrder, page_limit, paged};
use crate::auth::Owner;
use crate::error::ApiError;
use crate::extract::Path;
use crate::json::rfc3339_micros;
use crate::routes::App;
use axum::Json;
use axum::extract::State as Shared;
use axum::http::StatusCode;
use axum::response::Response;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use state_store::{
    IfExists, Store, StoreError, ThreadRecord, ThreadSearch, ThreadSortBy, ThreadStatus,
};

/// `POST /threads`' body (`ThreadCreate`).
#[derive(Deserialize)]
pub(crate) struct Create {
    #[serde(default)]
    thread_id: Option<String>,
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
    #[serde(default)]
    if_exists: Option<IfExists>,
}

/// `PATCH /threads/{id}`'s body.
#[derive(Deserialize)]
pub(crate) struct Patch {
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
}

/// `POST /threads/search`'s body (`ThreadSearchRequest`).
#[derive(Deserialize)]
pub(crate) struct Search {
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
    #[serde(default)]
    values: Option<Map<String, Value>>,
    #[serde(default)]
    status: Option<ThreadStatus>,
    #[serde(default)]
    limit: Option<u64>,
    #[serde(default)]
    offset: Option<u64>,
    #[serde(default)]
    sort_by: Option<ThreadSortBy>,
    #[serde(default)]
    sort_order: Option<SortOrder>,
}

/// `POST /threads/count`'s body.
#[derive(Deserialize)]
pub(crate) struct Count {
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
    #[serde(default)]
    values: Option<Map<String, Value>>,
    #[serde(default)]
    status: Option<ThreadStatus>,
}

fn not_found(id: &str) -> ApiError {
    ApiError::missing(format!("Thread with ID {id} not found"))
}

/// The record as the Agent Server writes a thread; with its values and
/// pending interrupts (by task id) when they were read.
fn thread_json(record: &ThreadRecord, state: Option<&Value>) -> Value {
    let mut json = json!({
        "thread_id": record.thread_id,
        "created_at": rfc3339_micros(record.created_at),
        "updated_at": rfc3339_micros(record.updated_at),
        "state_updated_at": rfc3339_micros(record.updated_at),
        "metadata": record.metadata,
        "status": record.status,
        "config": {},
        "values": null,
    });
    if let Some(state) = state {
        // A thread no step has written has no values yet (LangGraph's
        // `null`), though its graph's state has defaults.
        if state["metadata"]["step"] != json!(0) {
            json["values"] = state["values"].clone();
        }
        let mut interrupts = Map::new();
        for task in state["tasks"].as_array().into_iter().flatten() {
            if let Some(list) = task["interrupts"].as_array().filter(|l| !l.is_empty()) {
                let id = task["id"].as_str().unwrap_or_default().to_owned();
                interrupts.insert(id, Value::Array(list.clone()));
            }
        }
        json["config"] = json!({"configurable": {}});
        json["error"] = Value::Null;
        json["interrupts"] = Value::Object(interrupts);
    }
    json
}

/// The state of `record`'s thread through the graph its metadata names
/// (`None` when it names none this server serves).
#[cfg(feature = "graph")]
pub(crate) async fn state_of(
    assistants: &Assistants,
    record: &ThreadRecord,
) -> Result<Option<Value>, ApiError> {
    match assistants.of_thread(record) {
        Some(assistant) => Ok(Some(
            assistant
                .served
                .state(record.thread_id.clone(), None)
                .await?,
        )),
        None => Ok(None),
    }
}

#[cfg(not(feature = "graph"))]
pub(crate) async fn state_of(_: &Assistants, _: &ThreadRecord) -> Result<Option<Value>, ApiError> {
    Ok(None)
}

/// `POST /threads`: a new thread (its id a UUID v7 unless given), or with
/// `if_exists: "do_nothing"` the existing one; 409 otherwise.
pub(crate) async fn create(
    Shared(app): Shared<App>,
    owner: Owner,
    Body(create): Body<Create>,
) -> Result<Json<Value>, ApiError> {
    let id = create
        .thread_id
        .unwrap_or_else(|| uuid::Uuid::now_v7().to_string());
    let metadata = Value::Object(create.metadata.unwrap_or_default());
    let if_exists = create.if_exists.unwrap_or_default();
    let record = app
        .store
        .create_thread_record(&id, metadata, owner.as_deref(), if_exists)
        .await
        .map_err(|error| match error {
            StoreError::ThreadExists { .. } => {
                ApiError::conflict(format!("Thread with ID {id} already exists"))
            }
            // The id came in the body: name its field.
            StoreError::InvalidThreadId { .. } => ApiError::from(error).in_field("thread_id"),
            other => ApiError::from(other),
        })?;
    Ok(Json(thread_json(&record, None)))
}

/// The record of thread `id`, or the Agent Server's 404.
async fn record(store: &Store, id: &str) -> Result<ThreadRecord, ApiError> {
    store
        .thread_record(id, None)
        .await?
        .ok_or_else(|| not_found(id))
}

/// `GET /threads/{id}`: the record, its values and pending interrupts.
pub(crate) async fn get(
    Shared(app): Shared<App>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let record = record(&app.store, &id).await?;
    let state = state_of(&app.assistants, &record).await?;
    Ok(Json(thread_json(&record, state.as_ref())))
}

/// `PATCH /threads/{id}`: merges `metadata` into the thread's.
pub(crate) async fn patch(
    Shared(app): Shared<App>,
    Path(id): Path<String>,
    Body(patch): Body<Patch>,
) -> Result<Json<Value>, ApiError> {
    let metadata = Value::Object(patch.metadata.unwrap_or_default());
    let record = app
        .store
        .update_thread_record(&id, metadata, None)
        .await?
        .ok_or_else(|| not_found(&id))?;
    let state = state_of(&app.assistants, &record).await?;
    Ok(Json(thread_json(&record, state.as_ref())))
}

/// `DELETE /threads/{id}`: the thread, its record, runs and log; 204.
pub(crate) async fn delete(
    Shared(app): Shared<App>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    record(&app.store, &id).await?;
    app.store.delete_thread(&id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `POST /threads/{id}/copy`: a new thread (a UUID v7) with the same
/// metadata and a copy of the log (LangGraph's copy; our fork at the
/// thread's last step).
pub(crate) async fn copy(
    Shared(app): Shared<App>,
    owner: Owner,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let source = record(&app.store, &id).await?;
    let to = uuid::Uuid::now_v7().to_string();
    let seq = match app.store.thread_info(&id).await {
        Ok(info) => Some(info.seq),
        Err(StoreError::ThreadNotFound { .. }) => None,
        Err(other) => return Err(other.into()),
    };
    if let Some(seq) = seq.filter(|&seq| seq > 0) {
        app.store.fork_log(&id, seq, &to).await?;
    }
    let record = app
        .store
        .create_thread_record(
            &to,
            source.metadata.clone(),
            owner.as_deref(),
            IfExists::Raise,
        )
        .await?;
    Ok(Json(thread_json(&record, None)))
}

/// The search the filters of a search or a count make.
fn search_of(
    metadata: Option<Map<String, Value>>,
    status: Option<ThreadStatus>,
    owner: &Owner,
) -> ThreadSearch {
    let mut search = ThreadSearch::default();
    if let Some(owner) = owner.as_deref() {
        search = search.owner(owner);
    }
    if let Some(metadata) = metadata {
        search = search.metadata(Value::Object(metadata));
    }
    if let Some(status) = status {
        search = search.status(status);
    }
    search
}

/// Whether `values` (a `values` filter) are all in the thread's values.
fn has_values(state: Option<&Value>, values: &Map<String, Value>) -> bool {
    state.is_some_and(|state| {
        values
            .iter()
            .all(|(key, value)| state["values"].get(key) == Some(value))
    })
}

/// The records that match; with a `values` filter, each with its state
/// read (every match of the other filters is read, then paged).
async fn matching(
    app: &App,
    search: ThreadSearch,
    values: Option<&Map<String, Value>>,
) -> Result<Vec<(ThreadRecord, Option<Value>)>, ApiError> {
    let (limit, offset) = (search.limit, search.offset);
    let Some(values) = values else {
        let records = app.store.search_thread_records(&search).await?;
        let mut found = Vec::with_capacity(records.len());
        for record in records {
            let state = state_of(&app.assistants, &record).await?;
            found.push((record, state));
        }
        return Ok(found);
    };
    let all = app
        .store
        .search_thread_records(&search.limit(usize::MAX).offset(0))
        .await?;
    let mut found = Vec::new();
    for record in all {
        let state = state_of(&app.assistants, &record).await?;
        if has_values(state.as_ref(), values) {
            found.push((record, state));
        }
    }
    Ok(found.into_iter().skip(offset).take(limit).collect())
}

/// `POST /threads/search`: a page of threads (10 by default, at most
/// 1,000), newest first unless `sort_by`/`sort_order` say otherwise,
/// filtered by metadata, status and values; `X-Pagination-Total` (and
/// `X-Pagination-Next` when more follow) as the Agent Server sends them.
pub(crate) async fn search(
    Shared(app): Shared<App>,
    owner: Owner,
    Body(body): Body<Search>,
) -> Result<Response, ApiError> {
    let limit = page_limit(body.limit, 10)?;
    let offset = usize::try_from(body.offset.unwrap_or(0)).unwrap_or(usize::MAX);
    let descending = !matches!(body.sort_order, Some(SortOrder::Asc));
    // One more than the page: whether another page follows.
    let search = search_of(body.metadata, body.status, &owner)
        .limit(limit + 1)
        .offset(offset)
        .sort_by(body.sort_by.unwrap_or_default(), descending);
    let found = matching(&app, search, body.values.as_ref()).await?;
    let more = found.len() > limit;
    let page: Vec<Value> = found
        .iter()
        .take(limit)
        .map(|(record, state)| thread_json(record, state.as_ref()))
        .collect();
    let end = offset.saturating_add(page.len());
    Ok(paged(page, end, more))
}

/// `POST /threads/count`: how many threads match.
pub(crate) async fn count(
    Shared(app): Shared<App>,
    owner: Owner,
    Body(body): Body<Count>,
) -> Result<Json<u64>, ApiError> {
    let search = search_of(body.metadata, body.status, &owner);
    match body.values {
        None => Ok(Json(app.store.count_thread_records(&search).await?)),
        Some(values) => {
            let found = matching(&app, search.limit(usize::MAX), Some(&values)).await?;
            Ok(Json(found.len() as u64))
        }
    }
}
