//! The assistants' read routes, as the Agent Server answers them:
//! `POST /assistants/search`, `POST /assistants/count`,
//! `GET /assistants/{id}`, `GET /assistants/{id}/graph`,
//! `GET /assistants/{id}/schemas`; over the assistants given in code and
//! those created (`assistant_writes.rs`).

use super::assistants::Assistants;
use super::assistants_found::{Found, created_json, find};
use super::body::{Body, page_limit, paged, selected};
use crate::auth::Owner;
use crate::error::ApiError;
use crate::extract::Path;
use crate::extract::Query;
use crate::routes::App;
use axum::Json;
use axum::extract::State as Shared;
use axum::response::Response;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use std::time::SystemTime;

/// The fields a search may sort by and select (the Agent Server's).
const FIELDS: [&str; 10] = [
    "assistant_id",
    "graph_id",
    "name",
    "description",
    "config",
    "context",
    "created_at",
    "updated_at",
    "metadata",
    "version",
];

/// `POST /assistants/search`'s body (`AssistantSearchRequest`).
#[derive(Deserialize)]
pub(crate) struct Search {
    #[serde(default)]
    graph_id: Option<String>,
    #[serde(default)]
    name: Option<String>,
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

/// `POST /assistants/count`'s body (`AssistantCountRequest`).
#[derive(Deserialize)]
pub(crate) struct Count {
    #[serde(default)]
    graph_id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
}

/// The filters both share.
struct Filter<'a> {
    graph_id: Option<&'a str>,
    name: Option<&'a str>,
    metadata: Option<&'a Map<String, Value>>,
}

impl Filter<'_> {
    /// The matching assistants as JSON, newest first: those given in code
    /// and those created (visible to `owner`, on a graph served here); a
    /// graph that is not served is a 404, as the Agent Server's
    /// `assert_graph_exists`.
    async fn apply(&self, app: &App, owner: Option<&str>) -> Result<Vec<Value>, ApiError> {
        let assistants = &app.assistants;
        if let Some(graph_id) = self.graph_id
            && assistants.by_graph(graph_id).is_none()
        {
            return Err(no_graph(graph_id, assistants));
        }
        let name = self.name.map(str::to_lowercase);
        Ok(listed(app, owner)
            .await?
            .into_iter()
            .filter(|a| self.graph_id.is_none_or(|g| a["graph_id"] == g))
            .filter(|a| {
                name.as_deref().is_none_or(|n| {
                    a["name"]
                        .as_str()
                        .is_some_and(|name| name.to_lowercase().contains(n))
                })
            })
            .filter(|a| {
                self.metadata
                    .is_none_or(|m| m.iter().all(|(k, v)| a["metadata"].get(k) == Some(v)))
            })
            .collect())
    }
}

/// Every assistant `owner` sees, newest first: the ones given in code
/// (seen by all) and the created ones whose graph is served here (as
/// LangGraph hides those of graphs it does not serve).
async fn listed(app: &App, owner: Option<&str>) -> Result<Vec<Value>, ApiError> {
    let mut all: Vec<(SystemTime, Value)> = app
        .assistants
        .newest_first()
        .map(|a| (a.created_at, a.to_json()))
        .collect();
    for record in app.store.assistants(owner).await? {
        if app.assistants.by_graph(&record.graph_id).is_some() {
            all.push((record.created_at, created_json(&record)));
        }
    }
    // Stable: the ones given in code keep their order among themselves.
    all.sort_by_key(|(created_at, _)| std::cmp::Reverse(*created_at));
    Ok(all.into_iter().map(|(_, json)| json).collect())
}

fn no_graph(graph_id: &str, assistants: &Assistants) -> ApiError {
    ApiError::missing(format!(
        "Graph '{graph_id}' not found. Expected one of: {:?}",
        assistants.graph_ids()
    ))
}

/// `POST /assistants/search`: a page of the assistants (10 by default, at
/// most 1,000), newest first unless `sort_by` says otherwise, each with
/// only the `select`ed fields if given; `X-Pagination-Total` (and
/// `X-Pagination-Next` when more follow) as the Agent Server sends them.
pub(crate) async fn search(
    Shared(app): Shared<App>,
    owner: Owner,
    Body(search): Body<Search>,
) -> Result<Response, ApiError> {
    let limit = page_limit(search.limit, 10)?;
    let offset = search.offset.unwrap_or(0);
    if let Some(select) = &search.select
        && let Some(bad) = select.iter().find(|f| !FIELDS.contains(&f.as_str()))
    {
        return Err(ApiError::invalid_body(format!(
            "select: unknown field \"{bad}\", expected one of {FIELDS:?}"
        )));
    }
    let mut found = Filter {
        graph_id: search.graph_id.as_deref(),
        name: search.name.as_deref(),
        metadata: search.metadata.as_ref(),
    }
    .apply(&app, owner.as_deref())
    .await?;
    let ascending = match search
        .sort_order
        .as_deref()
        .map(str::to_lowercase)
        .as_deref()
    {
        None | Some("desc") => false,
        Some("asc") => true,
        Some(other) => {
            return Err(ApiError::invalid_body(format!(
                "sort_order: \"{other}\" is not \"asc\" or \"desc\""
            )));
        }
    };
    if let Some(by) = search.sort_by.as_deref() {
        sort(&mut found, by, ascending)?;
    }
    let total = found.len();
    let start = usize::try_from(offset).unwrap_or(usize::MAX).min(total);
    let end = start.saturating_add(limit).min(total);
    let page: Vec<Value> = found[start..end]
        .iter()
        .map(|a| selected(a.clone(), search.select.as_deref()))
        .collect();
    Ok(paged(page, end, end < total))
}

/// Sorts by one of the fields a search may sort by (names and graph ids
/// ignoring case, as LangGraph).
fn sort(found: &mut [Value], by: &str, ascending: bool) -> Result<(), ApiError> {
    const SORTABLE: [&str; 5] = [
        "assistant_id",
        "created_at",
        "updated_at",
        "name",
        "graph_id",
    ];
    let by = by.to_lowercase();
    if !SORTABLE.contains(&by.as_str()) {
        return Err(ApiError::invalid_body(format!(
            "sort_by: unknown field \"{by}\", expected one of {SORTABLE:?}"
        )));
    }
    let key = |a: &Value| a[&by].as_str().unwrap_or_default().to_lowercase();
    found.sort_by_key(key);
    if !ascending {
        found.reverse();
    }
    Ok(())
}

/// `POST /assistants/count`: how many assistants match.
pub(crate) async fn count(
    Shared(app): Shared<App>,
    owner: Owner,
    Body(count): Body<Count>,
) -> Result<Json<usize>, ApiError> {
    let found = Filter {
        graph_id: count.graph_id.as_deref(),
        name: count.name.as_deref(),
        metadata: count.metadata.as_ref(),
    }
    .apply(&app, owner.as_deref())
    .await?;
    Ok(Json(found.len()))
}

/// The assistant the path names (its id, or its graph's), or a 404.
async fn named<'a>(app: &'a App, id: &str, owner: Option<&str>) -> Result<Found<'a>, ApiError> {
    find(app, id, owner)
        .await?
        .ok_or_else(|| ApiError::missing(format!("Assistant {id} not found")))
}

/// `GET /assistants/{id}`.
pub(crate) async fn get(
    Shared(app): Shared<App>,
    owner: Owner,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    Ok(Json(named(&app, &id, owner.as_deref()).await?.to_json()))
}

/// `GET /assistants/{id}/graph`'s query: `xray` (true, false or a depth).
#[derive(Deserialize)]
pub(crate) struct GraphQuery {
    #[serde(default)]
    xray: Option<String>,
}

/// `GET /assistants/{id}/graph`: the graph's nodes and edges, as
/// LangGraph's `get_graph().to_json()`. `xray` is checked as the Agent
/// Server checks it; subgraphs are drawn as one node either way (their
/// insides are not expanded yet).
pub(crate) async fn graph(
    Shared(app): Shared<App>,
    owner: Owner,
    Path(id): Path<String>,
    Query(query): Query<GraphQuery>,
) -> Result<Json<Value>, ApiError> {
    if let Some(xray) = query.xray.as_deref()
        && !matches!(xray, "true" | "True" | "false" | "False")
        && !xray.parse::<u32>().is_ok_and(|depth| depth > 0)
    {
        return Err(ApiError::invalid_body("Invalid xray value"));
    }
    let found = named(&app, &id, owner.as_deref()).await?;
    Ok(Json(found.graph().graph.clone()))
}

/// `GET /assistants/{id}/schemas`: the graph's state schema (input and
/// output are the state's: `null`, as LangGraph sends when they are; no
/// configurable fields) and its context's JSON Schema when it was served
/// with one (`ServedGraph::context_schema`), else `null`.
pub(crate) async fn schemas(
    Shared(app): Shared<App>,
    owner: Owner,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let found = named(&app, &id, owner.as_deref()).await?;
    let assistant = found.graph();
    Ok(Json(json!({
        "graph_id": assistant.graph_id,
        "input_schema": null,
        "output_schema": null,
        "state_schema": assistant.state_schema,
        "config_schema": {},
        "context_schema": assistant.context_schema,
    })))
}
