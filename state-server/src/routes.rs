//! The handlers, plain async fns over the store: `GET /threads`,
//! `GET /threads/{id}/history`, `GET /threads/{id}/state` (the stream is
//! in `stream.rs`).

use crate::error::ApiError;
use crate::extract::{Query, ThreadId};
use crate::json::{StateJson, StepJson, ThreadJson, percent_encode};
use crate::listing;
use axum::Json;
use axum::extract::State as Shared;
use axum::http::{HeaderValue, Method, Uri, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use state_core::State;
use state_store::Store;

/// What every handler shares: the store and the page sizes.
#[derive(Clone)]
pub(crate) struct App {
    pub store: Store,
    /// The page size when a request names none.
    pub default_page: usize,
    /// The largest page a request may ask for.
    pub max_page: usize,
    /// How long an event stream may be silent before a keep-alive comment.
    pub keep_alive: std::time::Duration,
    /// The open event streams, and how many may be.
    pub streams: crate::stream_cap::Streams,
    /// The state type, for the typed router.
    pub typed: Option<crate::typed::Typed>,
    /// Whether the inspector may change the store (fork, answer).
    pub allow_writes: bool,
    /// How the inspector answers a pending interrupt, if it can.
    pub answer: Option<crate::answer::AnswerFn>,
    /// The Agent Server API's assistants.
    pub assistants: std::sync::Arc<crate::agent::Assistants>,
    /// The run workers of this server, started by its first run.
    #[cfg(feature = "graph")]
    pub workers: std::sync::Arc<crate::agent::WorkerPool>,
}

impl App {
    /// The page size asked for (`limit`), checked against the bounds.
    pub(crate) fn page(&self, limit: Option<u64>) -> Result<usize, ApiError> {
        match limit {
            None => Ok(self.default_page),
            Some(n) => match usize::try_from(n) {
                Ok(n) if (1..=self.max_page).contains(&n) => Ok(n),
                _ => Err(ApiError::bad_query(format!(
                    "limit must be between 1 and {}, got {n}",
                    self.max_page
                ))),
            },
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ThreadsQuery {
    before: Option<String>,
    limit: Option<u64>,
}

/// `GET /threads`: newest first (by `updated_at`, then id, both
/// descending), `limit` per page; `before=<updated_at millis>:<id>` (the
/// last thread of the previous page, as the `Link` header gives it)
/// starts after that thread.
pub(crate) async fn threads(
    Shared(app): Shared<App>,
    Query(query): Query<ThreadsQuery>,
) -> Result<Response, ApiError> {
    let limit = app.page(query.limit)?;
    let listed = listing::page(&app.store, query.before.as_deref(), limit, None).await?;
    let next = listed
        .next
        .map(|cursor| format!("before={}&limit={limit}", percent_encode(&cursor)));
    let page: Vec<ThreadJson<'_>> = listed
        .threads
        .iter()
        .map(|(_, info)| ThreadJson::new(info))
        .collect();
    Ok(with_next(page, next))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct HistoryQuery {
    after: Option<u64>,
    limit: Option<u64>,
}

/// `GET /threads/{id}/history`: the steps numbered `after + 1 ..= after +
/// limit` (fewer where compaction removed some); the `Link` header names
/// the next page while the thread has steps past this one.
pub(crate) async fn history(
    Shared(app): Shared<App>,
    ThreadId(id): ThreadId,
    uri: Uri,
) -> Result<Response, ApiError> {
    #[cfg(feature = "graph")]
    if crate::agent::is_agent_thread(&app, &id).await? {
        return crate::agent::history_get(app, id, &uri).await;
    }
    let Query(query) = Query::<HistoryQuery>::of(&uri)?;
    let limit = app.page(query.limit)?;
    let after = query.after.unwrap_or(0);
    let head = app.store.thread_info(&id).await?.seq;
    let last = after.saturating_add(limit as u64);
    let steps = app
        .store
        .history(&id, after.saturating_add(1)..=last)
        .await?;
    let next = (last < head).then(|| format!("after={last}&limit={limit}"));
    let page: Vec<StepJson<'_>> = steps.iter().map(StepJson::new).collect();
    Ok(with_next(page, next))
}

/// A JSON list, and a `Link: <?query>; rel="next"` header when there is a
/// next page. The reference is relative (a query only), so it holds
/// wherever the router is mounted.
fn with_next<T: Serialize>(page: Vec<T>, next: Option<String>) -> Response {
    let mut response = Json(page).into_response();
    if let Some(query) = next {
        // Percent-encoded ASCII only: always a valid header value.
        if let Ok(value) = HeaderValue::try_from(format!("<?{query}>; rel=\"next\"")) {
            response.headers_mut().insert(header::LINK, value);
        }
    }
    response
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StateQuery {
    seq: Option<u64>,
    /// The Agent Server's (`?subgraphs=false`); its state says which
    /// subgraphs are paused either way.
    #[allow(dead_code)]
    subgraphs: Option<bool>,
}

/// `GET /threads/{id}/state`: `{"seq": N, "values": state}`, the state
/// after the thread's last step, or after step `seq`, rebuilt through
/// `S`'s reducers. Never creates the thread. A thread of the Agent Server
/// API (its record names a served graph) answers its `ThreadState`
/// instead, as LangGraph's clients read it.
pub(crate) async fn state<S>(
    Shared(app): Shared<App>,
    ThreadId(id): ThreadId,
    Query(query): Query<StateQuery>,
) -> Result<Response, ApiError>
where
    S: State + Serialize + Send + 'static,
    S::Delta: Serialize + Send,
{
    if query.seq.is_none()
        && let Some(state) = crate::agent::agent_state(&app, &id).await?
    {
        return Ok(Json(state).into_response());
    }
    let seq = match query.seq {
        Some(seq) => seq,
        None => app.store.thread_info(&id).await?.seq,
    };
    let values = crate::typed::state_json::<S>(&app.store, &id, seq).await?;
    Ok(Json(StateJson { seq, values }).into_response())
}

/// `GET /threads/{id}/state` without a state type: 501, saying how to get
/// one (an Agent Server thread answers its `ThreadState`, as above).
pub(crate) async fn no_state(
    Shared(app): Shared<App>,
    ThreadId(id): ThreadId,
) -> Result<Response, ApiError> {
    match crate::agent::agent_state(&app, &id).await? {
        Some(state) => Ok(Json(state).into_response()),
        None => Err(ApiError::no_state_type()),
    }
}

/// A method other than `GET` (or `HEAD`) on one of these paths.
pub(crate) async fn method_not_allowed(method: Method) -> ApiError {
    ApiError::method_not_allowed(&method)
}
