//! The routes that create and change assistants, as the Agent Server
//! answers them: `POST /assistants`, `PATCH /assistants/{id}`, `DELETE
//! /assistants/{id}`, `POST /assistants/{id}/versions`, `POST
//! /assistants/{id}/latest`. Created assistants live in the store (every
//! process on one database sees them), carry their owner (another's is a
//! 404) and are versioned; the ones given in code are read-only.

use super::assistants::Assistant;
use super::assistants_found::{
    BOTH_FORMS, Found, configurable, created_json, find, no_context, version_json,
};
use super::body::{Body, page_limit};
use crate::auth::Owner;
use crate::error::ApiError;
use crate::extract::{Path, Query};
use crate::routes::App;
use axum::Json;
use axum::extract::State as Shared;
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::{Map, Value};
use state_store::{AssistantPatch, CancelAction, IfExists, NewAssistant, StoreError, ThreadSearch};

/// `POST /assistants`'s body (`AssistantCreate`).
#[derive(Deserialize)]
pub(crate) struct Create {
    graph_id: String,
    #[serde(default)]
    assistant_id: Option<String>,
    #[serde(default)]
    config: Option<Map<String, Value>>,
    #[serde(default)]
    context: Option<Map<String, Value>>,
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
    #[serde(default)]
    if_exists: Option<IfExists>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
}

/// `PATCH /assistants/{id}`'s body (`AssistantPatch`).
#[derive(Deserialize)]
pub(crate) struct Patch {
    #[serde(default)]
    graph_id: Option<String>,
    #[serde(default)]
    config: Option<Map<String, Value>>,
    #[serde(default)]
    context: Option<Map<String, Value>>,
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
}

/// `POST /assistants/{id}/versions`'s body.
#[derive(Deserialize)]
pub(crate) struct Versions {
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
    #[serde(default)]
    limit: Option<u64>,
    #[serde(default)]
    offset: Option<u64>,
}

/// `POST /assistants/{id}/latest`'s body.
#[derive(Deserialize)]
pub(crate) struct Latest {
    version: u64,
}

/// The graph `graph_id` names, or the Agent Server's 404.
fn graph<'a>(app: &'a App, graph_id: &str) -> Result<&'a Assistant, ApiError> {
    app.assistants.by_graph(graph_id).ok_or_else(|| {
        ApiError::missing(format!(
            "Graph '{graph_id}' not found. Expected one of: {:?}",
            app.assistants.graph_ids()
        ))
    })
}

/// A JSON object.
type Object = Map<String, Value>;

/// Config and context kept in step, as LangGraph keeps them: a config's
/// `configurable` is the context, or else the context is its
/// `configurable`. Both given is a 400; an explicit context for a graph
/// that takes none from a request is a 422.
fn in_step(
    graph: &Assistant,
    config: Option<Map<String, Value>>,
    context: Option<Map<String, Value>>,
) -> Result<(Object, Option<Object>), ApiError> {
    let mut config = config.unwrap_or_default();
    let configurable = configurable(Some(&config))?.cloned();
    let context = context.filter(|c| !c.is_empty());
    match (configurable, context) {
        (Some(_), Some(_)) => Err(ApiError::bad_request(BOTH_FORMS)),
        (_, Some(_)) if !graph.takes_context => Err(no_context(&graph.graph_id)),
        (Some(configurable), None) => Ok((config, Some(configurable))),
        (None, Some(context)) => {
            config.insert("configurable".into(), Value::Object(context.clone()));
            Ok((config, Some(context)))
        }
        (None, None) => Ok((config, None)),
    }
}

/// The refusal to change an assistant given in code.
fn read_only(id: &str, graph_id: &str, what: &str) -> ApiError {
    ApiError::conflict(format!(
        "Assistant {id} is graph \"{graph_id}\"'s own (created_by: system, given in code with \
         Server::assistant): it cannot be {what}; create an assistant on the graph \
         (POST /assistants) to have one you can change"
    ))
}

/// `POST /assistants`: a new assistant at version 1 (its id a random UUID
/// unless given; named "Untitled" unless named). An id taken is a 409
/// (`if_exists` "raise", the default) or the assistant there
/// (`"do_nothing"`).
pub(crate) async fn create(
    Shared(app): Shared<App>,
    owner: Owner,
    Body(create): Body<Create>,
) -> Result<Json<Value>, ApiError> {
    let id = match create.assistant_id {
        Some(id) => uuid::Uuid::parse_str(&id)
            .map(|_| id)
            .map_err(|_| ApiError::invalid_body("Invalid assistant ID: must be a UUID"))?,
        None => uuid::Uuid::new_v4().to_string(),
    };
    let graph = graph(&app, &create.graph_id)?;
    let (config, context) = in_step(graph, create.config, create.context)?;
    let if_exists = create.if_exists.unwrap_or_default();
    let exists = || ApiError::conflict(format!("Assistant {id} already exists"));
    if let Some(system) = app.assistants.find(&id) {
        return match if_exists {
            IfExists::DoNothing => Ok(Json(system.to_json())),
            IfExists::Raise => Err(exists()),
        };
    }
    let mut new = NewAssistant::new(&id, &create.graph_id)
        .config(Value::Object(config))
        .context(Value::Object(context.unwrap_or_default()))
        .metadata(Value::Object(create.metadata.unwrap_or_default()))
        .name(create.name.unwrap_or_else(|| "Untitled".into()));
    if let Some(description) = create.description {
        new = new.description(description);
    }
    if let Some(owner) = owner.as_deref() {
        new = new.owner(owner);
    }
    match app.store.create_assistant(new, if_exists).await {
        Ok(record) => Ok(Json(created_json(&record))),
        Err(StoreError::AssistantExists { .. }) => Err(exists()),
        Err(other) => Err(other.into()),
    }
}

/// `PATCH /assistants/{id}`: a new version, made current: the fields given
/// replace the current version's (`metadata` is merged into it).
pub(crate) async fn patch(
    Shared(app): Shared<App>,
    owner: Owner,
    Path(id): Path<String>,
    Body(patch): Body<Patch>,
) -> Result<Json<Value>, ApiError> {
    let missing = || ApiError::missing(format!("Assistant {id} not found"));
    let current = match find(&app, &id, owner.as_deref()).await? {
        None => return Err(missing()),
        Some(Found::System(system)) => {
            return Err(read_only(&id, &system.graph_id, "changed"));
        }
        Some(Found::Created(record, _)) => record,
    };
    let graph_id = patch.graph_id.as_deref().unwrap_or(&current.graph_id);
    let target = graph(&app, graph_id)?;
    let (config, context) = in_step(target, patch.config, patch.context)?;
    let mut change = AssistantPatch::default();
    if let Some(graph_id) = patch.graph_id {
        change = change.graph_id(graph_id);
    }
    // An empty config keeps the current one (LangGraph's `config or
    // assistant.config`).
    if !config.is_empty() {
        change = change.config(Value::Object(config));
    }
    if let Some(context) = context {
        change = change.context(Value::Object(context));
    }
    if let Some(metadata) = patch.metadata {
        change = change.metadata(Value::Object(metadata));
    }
    if let Some(name) = patch.name {
        change = change.name(name);
    }
    if let Some(description) = patch.description {
        change = change.description(description);
    }
    let record = app
        .store
        .update_assistant(&id, change, owner.as_deref())
        .await?
        .ok_or_else(missing)?;
    Ok(Json(created_json(&record)))
}

/// `DELETE /assistants/{id}`'s query.
#[derive(Deserialize)]
pub(crate) struct DeleteQuery {
    /// `"true"` (any case) deletes the assistant's threads too; anything
    /// else does not, as the Agent Server reads it.
    #[serde(default)]
    delete_threads: Option<String>,
}

/// `DELETE /assistants/{id}`: the assistant and its versions (204, as the
/// Agent Server answers); its runs still in flight are cancelled
/// (interrupted: a pending one never starts, a running one stops at its
/// next step), and with `?delete_threads=true` the threads whose
/// metadata names it (`assistant_id`, set by its runs) go too, with their
/// runs, as LangGraph's `Assistants.delete`. One given in code is a 409.
///
/// The threads go first (a failure leaves the assistant, for the delete
/// to be asked again), then the assistant, then its runs are cancelled:
/// LangGraph cancels before it deletes the assistant, but a run created
/// in between would be missed. Here a run created meanwhile either is
/// listed by the cancel or sees the assistant gone and takes itself back
/// (`run_routes.rs`).
pub(crate) async fn delete(
    Shared(app): Shared<App>,
    owner: Owner,
    Path(id): Path<String>,
    Query(query): Query<DeleteQuery>,
) -> Result<StatusCode, ApiError> {
    let missing = || ApiError::missing(format!("Assistant with ID {id} not found"));
    match find(&app, &id, owner.as_deref()).await? {
        None => return Err(missing()),
        Some(Found::System(system)) => {
            return Err(read_only(&id, &system.graph_id, "deleted"));
        }
        Some(Found::Created(..)) => {}
    }
    let delete_threads = query
        .delete_threads
        .is_some_and(|flag| flag.eq_ignore_ascii_case("true"));
    if delete_threads {
        delete_its_threads(&app, &id, owner.as_deref()).await?;
    }
    if !app.store.delete_assistant(&id, owner.as_deref()).await? {
        return Err(missing());
    }
    app.store
        .cancel_assistant_runs(&id, CancelAction::Interrupt)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Deletes the threads whose metadata's `assistant_id` is `id` and that
/// `owner` may see (another's are left, as LangGraph skips the threads
/// its user may not delete), with their runs and logs.
async fn delete_its_threads(app: &App, id: &str, owner: Option<&str>) -> Result<(), ApiError> {
    let mut search = ThreadSearch::default()
        .metadata(serde_json::json!({"assistant_id": id}))
        .limit(100);
    if let Some(owner) = owner {
        search = search.owner(owner);
    }
    // Each page is deleted before the next is read: always the first
    // (a page of which nothing could be deleted ends it, never a loop).
    loop {
        let mut deleted = false;
        for record in app.store.search_thread_records(&search).await? {
            deleted |= app.store.delete_thread(&record.thread_id).await?;
        }
        if !deleted {
            return Ok(());
        }
    }
}

/// `POST /assistants/{id}/versions`: its versions, newest first, those
/// whose metadata has the keys of `metadata`; a page (`limit` 10,
/// `offset`). One given in code has one version.
pub(crate) async fn versions(
    Shared(app): Shared<App>,
    owner: Owner,
    Path(id): Path<String>,
    Body(search): Body<Versions>,
) -> Result<Json<Vec<Value>>, ApiError> {
    let limit = page_limit(search.limit, 10)?;
    let offset = usize::try_from(search.offset.unwrap_or(0)).unwrap_or(usize::MAX);
    let missing = || ApiError::missing(format!("Assistant {id} not found"));
    let all: Vec<Value> = match find(&app, &id, owner.as_deref()).await? {
        None => return Err(missing()),
        Some(Found::System(system)) => {
            let mut json = system.to_json();
            if let Value::Object(map) = &mut json {
                map.remove("updated_at");
            }
            vec![json]
        }
        Some(Found::Created(..)) => app
            .store
            .assistant_versions(&id, owner.as_deref())
            .await?
            .ok_or_else(missing)?
            .iter()
            .map(version_json)
            .collect(),
    };
    let found: Vec<Value> = all
        .into_iter()
        .filter(|v| {
            search
                .metadata
                .as_ref()
                .is_none_or(|m| m.iter().all(|(k, val)| v["metadata"].get(k) == Some(val)))
        })
        .skip(offset)
        .take(limit)
        .collect();
    if found.is_empty() {
        return Err(missing());
    }
    Ok(Json(found))
}

/// `POST /assistants/{id}/latest`: makes `version` the current one.
pub(crate) async fn latest(
    Shared(app): Shared<App>,
    owner: Owner,
    Path(id): Path<String>,
    Body(latest): Body<Latest>,
) -> Result<Json<Value>, ApiError> {
    let missing = || ApiError::missing(format!("Assistant {id} not found"));
    let no_version = || {
        ApiError::missing(format!(
            "Version {} not found for assistant {id}",
            latest.version
        ))
    };
    match find(&app, &id, owner.as_deref()).await? {
        None => Err(missing()),
        Some(Found::System(system)) if latest.version == 1 => Ok(Json(system.to_json())),
        Some(Found::System(_)) => Err(no_version()),
        Some(Found::Created(..)) => match app
            .store
            .set_assistant_version(&id, latest.version, owner.as_deref())
            .await
        {
            Ok(Some(record)) => Ok(Json(created_json(&record))),
            Ok(None) => Err(missing()),
            Err(StoreError::NoSuchAssistantVersion { .. }) => Err(no_version()),
            Err(other) => Err(other.into()),
        },
    }
}
